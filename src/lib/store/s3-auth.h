/* s3-auth.h — S3 credentials and configuration as the AWS CLI resolves them, and AWS Signature Version 4. */
#ifndef MT_S3_AUTH_H
#define MT_S3_AUTH_H

#include <time.h>

#include "util.h"

/* Everything needed to sign requests to one endpoint.  Strings are
 * malloc'ed; NULL when absent (anonymous requests have no access_key). */
typedef struct mt_s3_config {
	char *access_key;
	char *secret_key;
	char *session_token;
	char *region;   /* never NULL after mti_s3_config_resolve: default "us-east-1" */
	char *endpoint; /* NULL: AWS's own (https://s3.REGION.amazonaws.com) */
	char *profile;  /* the profile used, for error messages */
} mt_s3_config;

/* Resolve like the AWS CLI, each field from the first place that has it:
 * the arguments (any may be NULL); then AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_DEFAULT_REGION,
 * AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL; then the profile (argument, else
 * AWS_PROFILE, else "default") in the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials: [NAME]) and the
 * config file (AWS_CONFIG_FILE, else ~/.aws/config: [profile NAME], or
 * [default]) with keys aws_access_key_id, aws_secret_access_key,
 * aws_session_token, region, endpoint_url (also inside an "s3 =" nested
 * section).  Environment credentials win over profile credentials only
 * when no profile was named for the store (the argument; AWS_PROFILE does
 * not count), as in the AWS CLI.  A profile named explicitly that exists in neither file is
 * MT_ENOTFOUND; a file that cannot be parsed is MT_EFORMAT naming file and
 * line.  Errors never contain secrets. */
MT_LOCAL int mti_s3_config_resolve(const char *profile, const char *region, const char *endpoint,
				  mt_s3_config *out, mt_error *err);
MT_LOCAL void mti_s3_config_free(mt_s3_config *c);

/* RFC 3986 percent-encoding as SigV4 wants it: unreserved characters
 * (A-Z a-z 0-9 - . _ ~) kept, every other byte %XX (upper-case hex), '/'
 * kept when keep_slash (object paths) and encoded otherwise (query).
 * Returns a malloc'ed string or NULL. */
MT_LOCAL char *mti_uri_encode(const char *s, int keep_slash);

/* One name/value pair (query parameter or header). */
typedef struct mt_kv {
	const char *name;
	const char *value;
} mt_kv;

/* A request to sign.  path is the raw (not yet encoded) absolute path,
 * "/bucket/some key" or "/some key"; query pairs are raw too and may come
 * in any order ("uploads" with value "" for ?uploads).  headers are the
 * extra headers to sign besides host, x-amz-date, x-amz-content-sha256
 * and x-amz-security-token (e.g. range, content-type, content-md5);
 * names in any case. */
typedef struct mt_sigv4_req {
	const char *method;
	const char *host; /* as sent in Host: "127.0.0.1:9000", "bucket.s3.amazonaws.com" */
	const char *path;
	const mt_kv *query;
	size_t nquery;
	const mt_kv *headers;
	size_t nheaders;
	const char *payload_sha256; /* hex sha256 of the body, or "UNSIGNED-PAYLOAD" */
	time_t when;
} mt_sigv4_req;

/* What to send: the encoded path and query exactly as signed, and the
 * headers to add ("Authorization: ...", "x-amz-date: ...",
 * "x-amz-content-sha256: ...", and "x-amz-security-token: ..." when there
 * is a session token), each a complete "Name: value" line. */
typedef struct mt_sigv4_out {
	char *path;  /* encoded, e.g. "/bucket/some%20key" */
	char *query; /* canonical: sorted, encoded, "a=1&uploads="; "" when none */
	char *headers[4];
	size_t nheaders;
} mt_sigv4_out;

/* Sign for service "s3" in c->region with c's credentials; without an
 * access key (anonymous) there is no Authorization line. */
MT_LOCAL int mti_sigv4_sign(const mt_s3_config *c, const mt_sigv4_req *r, mt_sigv4_out *out,
			   mt_error *err);
MT_LOCAL void mti_sigv4_out_free(mt_sigv4_out *o);

/* A copy of text with secrets replaced by "[REDACTED]": the values of
 * Authorization, x-amz-security-token and X-Amz-Signature/X-Amz-Credential
 * (query), and any occurrence of c's secret key or session token.  For
 * --debug logs and error messages.  malloc'ed or NULL. */
MT_LOCAL char *mti_s3_redact(const mt_s3_config *c, const char *text);

#endif
