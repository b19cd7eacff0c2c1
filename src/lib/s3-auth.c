/* s3-auth.c — S3 credentials from the environment and AWS files; SigV4 signing. */
#include "s3-auth.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "codec.h"

/* ---- AWS shared config and credentials files ------------------------- */

/* The settings one profile contributes; any may be NULL. */
typedef struct profile_vals {
	char *access_key, *secret_key, *session_token, *region, *endpoint, *s3_endpoint;
	int found; /* the section exists */
} profile_vals;

static void profile_vals_free(profile_vals *p)
{
	free(p->access_key);
	/* Secrets are wiped before their memory goes back to the allocator. */
	if (p->secret_key)
		OPENSSL_cleanse(p->secret_key, strlen(p->secret_key));
	free(p->secret_key);
	free(p->session_token);
	free(p->region);
	free(p->endpoint);
	free(p->s3_endpoint);
	memset(p, 0, sizeof *p);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

/* Keep the first value seen for a setting. */
static int set_once(char **slot, const char *v)
{
	if (*slot)
		return 0;
	return (*slot = mt_strdup(v)) ? 0 : MT_ENOMEM;
}

/* Read section `want` of an INI file in the AWS dialect: "[section]",
 * "key = value", comments from '#' or ';' at line start, and nested
 * blocks ("s3 =" followed by indented "key = value" lines).  A missing
 * file is not an error. */
static int ini_read(const char *path, const char *want, profile_vals *pv, mt_error *err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return mt_err(err, MT_EIO, "%s: %s", path, strerror(errno));
	}
	char line[4096];
	int in_want = 0, lineno = 0, rc = 0;
	char nested[64] = "";
	while (!rc && fgets(line, sizeof line, f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = mt_err(err, MT_EFORMAT, "%s:%d: line too long", path, lineno);
			break;
		}
		int indented = line[0] == ' ' || line[0] == '\t';
		char *s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');
			if (!end) {
				rc = mt_err(err, MT_EFORMAT, "%s:%d: section header without ']'", path,
					    lineno);
				break;
			}
			*end = '\0';
			in_want = strcmp(trim(s + 1), want) == 0;
			if (in_want)
				pv->found = 1;
			nested[0] = '\0';
			continue;
		}
		char *eq = strchr(s, '=');
		if (!eq) {
			rc = mt_err(err, MT_EFORMAT, "%s:%d: expected 'key = value' or '[section]'",
				    path, lineno);
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		if (!indented)
			nested[0] = '\0';
		if (!in_want)
			continue;
		if (!indented && !*val) {
			snprintf(nested, sizeof nested, "%s", key);
			continue;
		}
		if (nested[0]) {
			if (strcmp(nested, "s3") == 0 && strcmp(key, "endpoint_url") == 0)
				rc = set_once(&pv->s3_endpoint, val);
			continue;
		}
		if (strcmp(key, "aws_access_key_id") == 0)
			rc = set_once(&pv->access_key, val);
		else if (strcmp(key, "aws_secret_access_key") == 0)
			rc = set_once(&pv->secret_key, val);
		else if (strcmp(key, "aws_session_token") == 0)
			rc = set_once(&pv->session_token, val);
		else if (strcmp(key, "region") == 0)
			rc = set_once(&pv->region, val);
		else if (strcmp(key, "endpoint_url") == 0)
			rc = set_once(&pv->endpoint, val);
		if (rc == MT_ENOMEM)
			rc = mt_err(err, MT_ENOMEM, "%s: out of memory", path);
	}
	if (!rc && ferror(f))
		rc = mt_err(err, MT_EIO, "%s: read error", path);
	OPENSSL_cleanse(line, sizeof line);
	fclose(f);
	return rc;
}

/* $VAR if set and non-empty, else $HOME/.aws/NAME. */
static char *aws_file(const char *var, const char *name)
{
	const char *v = getenv(var);
	if (v && *v)
		return mt_strdup(v);
	const char *home = getenv("HOME");
	return mt_asprintf("%s/.aws/%s", home && *home ? home : ".", name);
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static int profile_read(const char *profile, profile_vals *pv, mt_error *err)
{
	char *cred = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
	char *conf = aws_file("AWS_CONFIG_FILE", "config");
	char *section = strcmp(profile, "default") == 0 ? mt_strdup("default")
							: mt_asprintf("profile %s", profile);
	int rc = 0;
	if (!cred || !conf || !section)
		rc = mt_err(err, MT_ENOMEM, "out of memory reading AWS configuration");
	/* The credentials file comes first: its values win. */
	if (!rc)
		rc = ini_read(cred, profile, pv, err);
	if (!rc) {
		profile_vals c = {0};
		rc = ini_read(conf, section, &c, err);
		if (!rc) {
			pv->found |= c.found;
			char **dst[] = {&pv->access_key, &pv->secret_key, &pv->session_token,
					&pv->region,     &pv->endpoint,   &pv->s3_endpoint};
			char **src[] = {&c.access_key, &c.secret_key, &c.session_token,
					&c.region,     &c.endpoint,   &c.s3_endpoint};
			for (size_t i = 0; i < sizeof dst / sizeof *dst; i++)
				if (!*dst[i]) {
					*dst[i] = *src[i];
					*src[i] = NULL;
				}
		}
		profile_vals_free(&c);
	}
	if (!rc && !pv->found && strcmp(profile, "default") != 0)
		rc = mt_err(err, MT_ENOTFOUND, "AWS profile %s is in neither %s nor %s", profile,
			    cred, conf);
	free(cred);
	free(conf);
	free(section);
	return rc;
}

int mt_s3_config_resolve(const char *profile, const char *region, const char *endpoint,
			 mt_s3_config *out, mt_error *err)
{
	memset(out, 0, sizeof *out);
	int explicit_profile = profile && *profile;
	const char *prof = explicit_profile ? profile : env_nonempty("AWS_PROFILE");
	if (!prof)
		prof = "default";
	profile_vals pv = {0};
	int rc = profile_read(prof, &pv, err);
	if (rc) {
		profile_vals_free(&pv);
		return rc;
	}
	const char *ak = env_nonempty("AWS_ACCESS_KEY_ID");
	const char *sk = env_nonempty("AWS_SECRET_ACCESS_KEY");
	/* As in the AWS CLI: environment credentials win unless a profile was
	 * named for this store, and they come as a pair. */
	int use_env = !explicit_profile && ak && sk;
	const char *reg = region && *region ? region : env_nonempty("AWS_REGION");
	if (!reg)
		reg = env_nonempty("AWS_DEFAULT_REGION");
	if (!reg)
		reg = pv.region ? pv.region : "us-east-1";
	const char *ep = endpoint && *endpoint ? endpoint : env_nonempty("AWS_ENDPOINT_URL_S3");
	if (!ep)
		ep = env_nonempty("AWS_ENDPOINT_URL");
	if (!ep)
		ep = pv.s3_endpoint ? pv.s3_endpoint : pv.endpoint;
	const char *tok = use_env ? env_nonempty("AWS_SESSION_TOKEN") : pv.session_token;
	if (use_env) {
		out->access_key = mt_strdup(ak);
		out->secret_key = mt_strdup(sk);
	} else if (pv.access_key && pv.secret_key) {
		out->access_key = mt_strdup(pv.access_key);
		out->secret_key = mt_strdup(pv.secret_key);
	} else if (pv.access_key || pv.secret_key) {
		rc = mt_err(err, MT_EINVAL,
			    "AWS profile %s has only one of aws_access_key_id and "
			    "aws_secret_access_key",
			    prof);
	}
	if (!rc) {
		out->region = mt_strdup(reg);
		out->profile = mt_strdup(prof);
		if (ep)
			out->endpoint = mt_strdup(ep);
		if (tok && out->access_key)
			out->session_token = mt_strdup(tok);
		if (!out->region || !out->profile || (ep && !out->endpoint) ||
		    (tok && out->access_key && !out->session_token) ||
		    ((use_env || pv.access_key) && (!out->access_key || !out->secret_key)))
			rc = mt_err(err, MT_ENOMEM, "out of memory resolving S3 configuration");
	}
	profile_vals_free(&pv);
	if (rc)
		mt_s3_config_free(out);
	return rc;
}

void mt_s3_config_free(mt_s3_config *c)
{
	if (c->secret_key)
		OPENSSL_cleanse(c->secret_key, strlen(c->secret_key));
	if (c->session_token)
		OPENSSL_cleanse(c->session_token, strlen(c->session_token));
	free(c->access_key);
	free(c->secret_key);
	free(c->session_token);
	free(c->region);
	free(c->endpoint);
	free(c->profile);
	memset(c, 0, sizeof *c);
}

/* ---- Signature Version 4 --------------------------------------------- */

char *mt_uri_encode(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *p = out;
	if (!out)
		return NULL;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (isalnum(*c) || *c == '-' || *c == '.' || *c == '_' || *c == '~' ||
		    (keep_slash && *c == '/')) {
			*p++ = (char)*c;
		} else {
			*p++ = '%';
			*p++ = hex[*c >> 4];
			*p++ = hex[*c & 15];
		}
	}
	*p = '\0';
	return out;
}

typedef struct pair {
	char *name, *value;
} pair;

static int pair_cmp(const void *a, const void *b)
{
	const pair *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

static void pairs_free(pair *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		free(p[i].name);
		free(p[i].value);
	}
	free(p);
}

/* Header value as SigV4 canonicalises it: trimmed, inner runs of spaces
 * collapsed to one. */
static char *header_value(const char *v)
{
	char *out = malloc(strlen(v) + 1), *p = out;
	if (!out)
		return NULL;
	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			while (v[1] == ' ' || v[1] == '\t')
				v++;
			if (!v[1])
				break;
			*p++ = ' ';
		} else {
			*p++ = *v;
		}
	}
	*p = '\0';
	return out;
}

static void to_hex(const unsigned char *md, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned int n = 0;
	return HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out,
		    &n) && n == 32
		       ? 0
		       : -1;
}

static int buf_str(mt_buf *b, const char *s)
{
	return mt_buf_append(b, s, strlen(s));
}

int mt_sigv4_sign(const mt_s3_config *c, const mt_sigv4_req *r, mt_sigv4_out *out,
		  mt_error *err)
{
	memset(out, 0, sizeof *out);
	struct tm tm;
	char amzdate[17], day[9];
	if (!gmtime_r(&r->when, &tm) || !strftime(amzdate, sizeof amzdate, "%Y%m%dT%H%M%SZ", &tm))
		return mt_err(err, MT_EINVAL, "sigv4: time out of range");
	memcpy(day, amzdate, 8);
	day[8] = '\0';

	int rc = MT_ENOMEM;
	mt_buf creq = {0}, sts = {0}, sh = {0}, qs = {0};
	size_t nh = r->nheaders + 4, nq = r->nquery;
	pair *h = calloc(nh, sizeof *h), *q = calloc(nq ? nq : 1, sizeof *q);
	char *scope = NULL;
	if (!h || !q)
		goto out;

	/* Canonical query: encoded names and values, sorted. */
	for (size_t i = 0; i < nq; i++)
		if (!(q[i].name = mt_uri_encode(r->query[i].name, 0)) ||
		    !(q[i].value = mt_uri_encode(r->query[i].value, 0)))
			goto out;
	qsort(q, nq, sizeof *q, pair_cmp);
	for (size_t i = 0; i < nq; i++)
		if ((i && buf_str(&qs, "&")) || buf_str(&qs, q[i].name) || buf_str(&qs, "=") ||
		    buf_str(&qs, q[i].value))
			goto out;
	if (mt_buf_append(&qs, "", 1))
		goto out;
	out->query = (char *)qs.data;
	qs = (mt_buf){0};
	if (!(out->path = mt_uri_encode(r->path, 1)))
		goto out;

	/* Canonical headers: the caller's plus ours, lower-case, sorted. */
	size_t n = 0;
	const char *token = c->access_key ? c->session_token : NULL;
	const char *fixed[][2] = {{"host", r->host},
				  {"x-amz-date", amzdate},
				  {"x-amz-content-sha256", r->payload_sha256},
				  {"x-amz-security-token", token}};
	for (size_t i = 0; i < 4; i++) {
		if (!fixed[i][1])
			continue;
		if (!(h[n].name = mt_strdup(fixed[i][0])) ||
		    !(h[n].value = header_value(fixed[i][1])))
			goto out;
		n++;
	}
	for (size_t i = 0; i < r->nheaders; i++, n++) {
		if (!(h[n].name = mt_strdup(r->headers[i].name)) ||
		    !(h[n].value = header_value(r->headers[i].value)))
			goto out;
		for (char *p = h[n].name; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	}
	qsort(h, n, sizeof *h, pair_cmp);
	for (size_t i = 0; i < n; i++)
		if ((i && buf_str(&sh, ";")) || buf_str(&sh, h[i].name))
			goto out;
	if (mt_buf_append(&sh, "", 1))
		goto out;

	if (buf_str(&creq, r->method) || buf_str(&creq, "\n") || buf_str(&creq, out->path) ||
	    buf_str(&creq, "\n") || buf_str(&creq, out->query) || buf_str(&creq, "\n"))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (buf_str(&creq, h[i].name) || buf_str(&creq, ":") || buf_str(&creq, h[i].value) ||
		    buf_str(&creq, "\n"))
			goto out;
	if (buf_str(&creq, "\n") || buf_str(&creq, (char *)sh.data) || buf_str(&creq, "\n") ||
	    buf_str(&creq, r->payload_sha256))
		goto out;

	char creq_hex[MT_SHA256_HEX];
	if ((rc = mt_sha256_hex(creq.data, creq.len, creq_hex, err)))
		goto out;
	rc = MT_ENOMEM;
	if (!(scope = mt_asprintf("%s/%s/s3/aws4_request", day, c->region)))
		goto out;
	if (buf_str(&sts, "AWS4-HMAC-SHA256\n") || buf_str(&sts, amzdate) ||
	    buf_str(&sts, "\n") || buf_str(&sts, scope) || buf_str(&sts, "\n") ||
	    buf_str(&sts, creq_hex) || mt_buf_append(&sts, "", 1))
		goto out;

	size_t k = 0;
	if (!(out->headers[k++] = mt_asprintf("x-amz-date: %s", amzdate)) ||
	    !(out->headers[k++] = mt_asprintf("x-amz-content-sha256: %s", r->payload_sha256)))
		goto out;
	if (token && !(out->headers[k++] = mt_asprintf("x-amz-security-token: %s", token)))
		goto out;
	if (c->access_key) {
		/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), "s3"), "aws4_request") */
		unsigned char key[32], sig[32];
		char sighex[65];
		char *seed = mt_asprintf("AWS4%s", c->secret_key ? c->secret_key : "");
		int bad = !seed || hmac(seed, strlen(seed), day, key) ||
			  hmac(key, 32, c->region, key) || hmac(key, 32, "s3", key) ||
			  hmac(key, 32, "aws4_request", key) ||
			  hmac(key, 32, (char *)sts.data, sig);
		if (seed)
			OPENSSL_cleanse(seed, strlen(seed));
		free(seed);
		OPENSSL_cleanse(key, sizeof key);
		if (bad) {
			rc = mt_err(err, MT_EIO, "sigv4: HMAC-SHA256 failed");
			goto out;
		}
		to_hex(sig, 32, sighex);
		if (!(out->headers[k++] = mt_asprintf(
			      "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
			      "Signature=%s",
			      c->access_key, scope, (char *)sh.data, sighex)))
			goto out;
	}
	out->nheaders = k;
	rc = 0;
out:
	if (rc == MT_ENOMEM)
		mt_err(err, MT_ENOMEM, "sigv4: out of memory");
	if (rc)
		mt_sigv4_out_free(out);
	pairs_free(h, nh);
	pairs_free(q, nq);
	mt_buf_free(&creq);
	mt_buf_free(&sts);
	mt_buf_free(&sh);
	mt_buf_free(&qs);
	free(scope);
	return rc;
}

void mt_sigv4_out_free(mt_sigv4_out *o)
{
	free(o->path);
	free(o->query);
	for (size_t i = 0; i < sizeof o->headers / sizeof *o->headers; i++)
		free(o->headers[i]);
	memset(o, 0, sizeof *o);
}

/* ---- redaction -------------------------------------------------------- */

/* Does `s` start with `prefix`, ignoring case? */
static int starts_ci(const char *s, const char *prefix)
{
	return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static int put_redacted(mt_buf *b)
{
	return buf_str(b, "[REDACTED]");
}

char *mt_s3_redact(const mt_s3_config *c, const char *text)
{
	static const char *const line_keys[] = {"authorization:", "x-amz-security-token:"};
	static const char *const query_keys[] = {"x-amz-signature=", "x-amz-credential=",
						 "x-amz-security-token="};
	const char *secrets[] = {c ? c->secret_key : NULL, c ? c->session_token : NULL};
	mt_buf b = {0};
	int bad = 0, at_line = 1;
	for (const char *p = text; *p && !bad;) {
		size_t skip = 0;
		/* A secret-bearing header: everything to the end of its line. */
		for (size_t i = 0; at_line && !skip && i < 2; i++) {
			const char *s = p;
			while (*s == ' ' || *s == '\t' || *s == '>' || *s == '<')
				s++;
			if (starts_ci(s, line_keys[i])) {
				size_t keep = (size_t)(s - p) + strlen(line_keys[i]);
				bad = mt_buf_append(&b, p, keep) || buf_str(&b, " ") || put_redacted(&b);
				skip = keep + strcspn(p + keep, "\r\n");
			}
		}
		/* A presigned URL's signature, credential or token. */
		for (size_t i = 0; !skip && i < 3; i++) {
			if (starts_ci(p, query_keys[i])) {
				size_t keep = strlen(query_keys[i]);
				bad = mt_buf_append(&b, p, keep) || put_redacted(&b);
				skip = keep + strcspn(p + keep, "& \t\r\n\"'");
			}
		}
		for (size_t i = 0; !skip && i < 2; i++) {
			size_t n = secrets[i] ? strlen(secrets[i]) : 0;
			if (n && strncmp(p, secrets[i], n) == 0) {
				bad = put_redacted(&b);
				skip = n;
			}
		}
		if (!skip) {
			bad = bad || mt_buf_append(&b, p, 1);
			skip = 1;
		}
		at_line = p[skip - 1] == '\n';
		p += skip;
	}
	if (bad || mt_buf_append(&b, "", 1)) {
		mt_buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
}
