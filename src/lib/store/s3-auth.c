/* s3-auth.c — S3 credentials from the environment and AWS files; SigV4 signing. */
#include "s3-auth.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
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
	return (*slot = mti_strdup(v)) ? 0 : MT_ENOMEM;
}

/* Where a profile's setting goes; NULL for settings matorage does not use. */
static char **profile_slot(profile_vals *pv, const char *key)
{
	static const struct {
		const char *key;
		size_t off;
	} slots[] = {
		{"aws_access_key_id", offsetof(profile_vals, access_key)},
		{"aws_secret_access_key", offsetof(profile_vals, secret_key)},
		{"aws_session_token", offsetof(profile_vals, session_token)},
		{"region", offsetof(profile_vals, region)},
		{"endpoint_url", offsetof(profile_vals, endpoint)},
	};
	for (size_t i = 0; i < sizeof slots / sizeof *slots; i++)
		if (strcmp(key, slots[i].key) == 0)
			return (char **)(void *)((char *)pv + slots[i].off);
	return NULL;
}

/* Reading one INI file. */
typedef struct ini_state {
	const char *path, *want;
	profile_vals *pv;
	int in_want; /* inside section `want` */
	int lineno;
	char nested[64]; /* the block indented lines belong to ("s3"), "" when none */
} ini_state;

/* One line, trimmed, neither blank nor a comment. */
static int ini_line(ini_state *st, char *s, int indented, mt_error *err)
{
	if (*s == '[') {
		char *end = strchr(s, ']');
		if (!end)
			return mti_err(err, MT_EFORMAT, "%s:%d: section header without ']'", st->path,
				      st->lineno);
		*end = '\0';
		st->in_want = strcmp(trim(s + 1), st->want) == 0;
		st->pv->found |= st->in_want;
		st->nested[0] = '\0';
		return 0;
	}
	char *eq = strchr(s, '=');
	if (!eq)
		return mti_err(err, MT_EFORMAT, "%s:%d: expected 'key = value' or '[section]'",
			      st->path, st->lineno);
	*eq = '\0';
	char *key = trim(s), *val = trim(eq + 1);
	if (!indented)
		st->nested[0] = '\0';
	if (!st->in_want)
		return 0;
	if (!indented && !*val) {
		snprintf(st->nested, sizeof st->nested, "%s", key);
		return 0;
	}
	char **slot;
	if (st->nested[0])
		slot = strcmp(st->nested, "s3") == 0 && strcmp(key, "endpoint_url") == 0
			       ? &st->pv->s3_endpoint
			       : NULL;
	else
		slot = profile_slot(st->pv, key);
	if (slot && set_once(slot, val))
		return mti_err(err, MT_ENOMEM, "%s: out of memory", st->path);
	return 0;
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
		return mti_err(err, MT_EIO, "%s: %s", path, strerror(errno));
	}
	char line[4096];
	ini_state st = {.path = path, .want = want, .pv = pv};
	int rc = 0;
	while (!rc && fgets(line, sizeof line, f)) {
		st.lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = mti_err(err, MT_EFORMAT, "%s:%d: line too long", path, st.lineno);
			break;
		}
		int indented = line[0] == ' ' || line[0] == '\t';
		char *s = trim(line);
		if (*s && *s != '#' && *s != ';')
			rc = ini_line(&st, s, indented, err);
	}
	if (!rc && ferror(f))
		rc = mti_err(err, MT_EIO, "%s: read error", path);
	OPENSSL_cleanse(line, sizeof line);
	fclose(f);
	return rc;
}

/* $VAR if set and non-empty, else ~/.aws/NAME; *path NULL without a home
 * directory (a service with neither HOME nor a password entry): its keys
 * then come from the environment alone. */
static int aws_file(const char *var, const char *name, char **path, mt_error *err)
{
	char rel[64];
	snprintf(rel, sizeof rel, ".aws/%s", name);
	mt_error e = {0};
	int rc = mti_home_file(var, rel, path, &e);
	if (rc == MT_EINVAL)
		return 0;
	return rc ? mti_err_copy(err, &e) : 0;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static int profile_read(const char *profile, profile_vals *pv, mt_error *err)
{
	char *cred = NULL, *conf = NULL;
	char *section = strcmp(profile, "default") == 0 ? mti_strdup("default")
							: mti_asprintf("profile %s", profile);
	int rc = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", &cred, err);
	if (!rc)
		rc = aws_file("AWS_CONFIG_FILE", "config", &conf, err);
	if (!rc && !section)
		rc = mti_err(err, MT_ENOMEM, "out of memory reading AWS configuration");
	/* The credentials file comes first: its values win. */
	if (!rc && cred)
		rc = ini_read(cred, profile, pv, err);
	if (!rc && conf) {
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
		rc = mti_err(err, MT_ENOTFOUND, "AWS profile %s is in neither %s nor %s", profile,
			    cred ? cred : "~/.aws/credentials (no home directory)",
			    conf ? conf : "~/.aws/config");
	free(cred);
	free(conf);
	free(section);
	return rc;
}

/* The argument when given, else the first environment variable set, else
 * the fallback. */
static const char *arg_env(const char *arg, const char *var1, const char *var2,
			   const char *fallback)
{
	if (arg && *arg)
		return arg;
	const char *v = env_nonempty(var1);
	if (!v && var2)
		v = env_nonempty(var2);
	return v ? v : fallback;
}

/* The key pair and its session token.  As in the AWS CLI: environment
 * credentials win unless a profile was named for this store, and they
 * come as a pair; *ak NULL for anonymous requests. */
static int pick_keys(int explicit_profile, const char *prof, const profile_vals *pv,
		     const char **ak, const char **sk, const char **tok, mt_error *err)
{
	const char *eak = env_nonempty("AWS_ACCESS_KEY_ID");
	const char *esk = env_nonempty("AWS_SECRET_ACCESS_KEY");
	*ak = *sk = *tok = NULL;
	if (!explicit_profile && eak && esk) {
		*ak = eak;
		*sk = esk;
		*tok = env_nonempty("AWS_SESSION_TOKEN");
		return 0;
	}
	if (!pv->access_key != !pv->secret_key)
		return mti_err(err, MT_EINVAL,
			      "AWS profile %s has only one of aws_access_key_id and "
			      "aws_secret_access_key",
			      prof);
	if (pv->access_key) {
		*ak = pv->access_key;
		*sk = pv->secret_key;
		*tok = pv->session_token;
	}
	return 0;
}

/* Copies of what was resolved into out. */
static int config_fill(mt_s3_config *out, const char *ak, const char *sk, const char *tok,
		       const char *reg, const char *ep, const char *prof)
{
	if (ak) {
		out->access_key = mti_strdup(ak);
		out->secret_key = mti_strdup(sk);
		if (tok)
			out->session_token = mti_strdup(tok);
	}
	out->region = mti_strdup(reg);
	out->profile = mti_strdup(prof);
	if (ep)
		out->endpoint = mti_strdup(ep);
	int bad = !out->region || !out->profile || (ep && !out->endpoint) ||
		  (ak && (!out->access_key || !out->secret_key || (tok && !out->session_token)));
	return bad ? MT_ENOMEM : 0;
}

int mti_s3_config_resolve(const char *profile, const char *region, const char *endpoint,
			 mt_s3_config *out, mt_error *err)
{
	memset(out, 0, sizeof *out);
	int explicit_profile = profile && *profile;
	const char *prof = arg_env(profile, "AWS_PROFILE", NULL, "default");
	profile_vals pv = {0};
	int rc = profile_read(prof, &pv, err);
	const char *ak, *sk, *tok;
	if (!rc)
		rc = pick_keys(explicit_profile, prof, &pv, &ak, &sk, &tok, err);
	if (!rc) {
		const char *reg = arg_env(region, "AWS_REGION", "AWS_DEFAULT_REGION",
					  pv.region ? pv.region : "us-east-1");
		const char *ep = arg_env(endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",
					 pv.s3_endpoint ? pv.s3_endpoint : pv.endpoint);
		if (config_fill(out, ak, sk, tok, reg, ep, prof))
			rc = mti_err(err, MT_ENOMEM, "out of memory resolving S3 configuration");
	}
	profile_vals_free(&pv);
	if (rc)
		mti_s3_config_free(out);
	return rc;
}

void mti_s3_config_free(mt_s3_config *c)
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

char *mti_uri_encode(const char *s, int keep_slash)
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
	return mti_buf_append(b, s, strlen(s));
}

/* Append each string in turn up to the NULL that ends the list. */
static int buf_cat(mt_buf *b, ...)
{
	va_list ap;
	va_start(ap, b);
	int bad = 0;
	for (const char *s; !bad && (s = va_arg(ap, const char *));)
		bad = buf_str(b, s);
	va_end(ap);
	return bad ? MT_ENOMEM : 0;
}

/* The canonical query: encoded names and values, sorted, "a=1&b=". */
static int canonical_query(const mt_sigv4_req *r, char **out)
{
	size_t nq = r->nquery;
	pair *q = calloc(nq ? nq : 1, sizeof *q);
	mt_buf qs = {0};
	int bad = !q;
	for (size_t i = 0; !bad && i < nq; i++)
		bad = !(q[i].name = mti_uri_encode(r->query[i].name, 0)) ||
		      !(q[i].value = mti_uri_encode(r->query[i].value, 0));
	if (!bad)
		qsort(q, nq, sizeof *q, pair_cmp);
	for (size_t i = 0; !bad && i < nq; i++)
		bad = buf_cat(&qs, i ? "&" : "", q[i].name, "=", q[i].value, (char *)NULL);
	bad = bad || mti_buf_append(&qs, "", 1);
	pairs_free(q, nq);
	if (bad) {
		mti_buf_free(&qs);
		return MT_ENOMEM;
	}
	*out = (char *)qs.data;
	return 0;
}

/* The headers to sign: the caller's and ours, names lower-case, values
 * trimmed, sorted by name; *h holds r->nheaders + 4 slots. */
static int canonical_headers(const mt_sigv4_req *r, const char *amzdate, const char *token,
			     pair **h, size_t *n)
{
	*n = 0;
	if (!(*h = calloc(r->nheaders + 4, sizeof **h)))
		return MT_ENOMEM;
	pair *p = *h;
	const char *fixed[][2] = {{"host", r->host},
				  {"x-amz-date", amzdate},
				  {"x-amz-content-sha256", r->payload_sha256},
				  {"x-amz-security-token", token}};
	for (size_t i = 0; i < 4; i++) {
		if (!fixed[i][1])
			continue;
		if (!(p[*n].name = mti_strdup(fixed[i][0])) ||
		    !(p[*n].value = header_value(fixed[i][1])))
			return MT_ENOMEM;
		(*n)++;
	}
	for (size_t i = 0; i < r->nheaders; i++, (*n)++) {
		if (!(p[*n].name = mti_strdup(r->headers[i].name)) ||
		    !(p[*n].value = header_value(r->headers[i].value)))
			return MT_ENOMEM;
		for (char *c = p[*n].name; *c; c++)
			*c = (char)tolower((unsigned char)*c);
	}
	qsort(p, *n, sizeof *p, pair_cmp);
	return 0;
}

/* The signed-headers list ("host;range;...") and the canonical request,
 * both NUL-terminated. */
static int canonical_request(const mt_sigv4_req *r, const mt_sigv4_out *out, const pair *h,
			     size_t n, mt_buf *sh, mt_buf *creq)
{
	int bad = 0;
	for (size_t i = 0; !bad && i < n; i++)
		bad = buf_cat(sh, i ? ";" : "", h[i].name, (char *)NULL);
	bad = bad || mti_buf_append(sh, "", 1) ||
	      buf_cat(creq, r->method, "\n", out->path, "\n", out->query, "\n", (char *)NULL);
	for (size_t i = 0; !bad && i < n; i++)
		bad = buf_cat(creq, h[i].name, ":", h[i].value, "\n", (char *)NULL);
	bad = bad || buf_cat(creq, "\n", (const char *)sh->data, "\n", r->payload_sha256,
			     (char *)NULL);
	return bad ? MT_ENOMEM : 0;
}

/* The signature of the string to sign, in hex:
 * kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), "s3"), "aws4_request") */
static int signature(const mt_s3_config *c, const char *day, const char *sts, char sighex[65])
{
	unsigned char key[32], sig[32];
	char *seed = mti_asprintf("AWS4%s", c->secret_key ? c->secret_key : "");
	int bad = !seed || hmac(seed, strlen(seed), day, key) || hmac(key, 32, c->region, key) ||
		  hmac(key, 32, "s3", key) || hmac(key, 32, "aws4_request", key) ||
		  hmac(key, 32, sts, sig);
	if (seed)
		OPENSSL_cleanse(seed, strlen(seed));
	free(seed);
	OPENSSL_cleanse(key, sizeof key);
	if (bad)
		return MT_EIO;
	to_hex(sig, 32, sighex);
	return 0;
}

/* The header lines to send; Authorization only when sighex is set. */
static int out_headers(const mt_s3_config *c, const mt_sigv4_req *r, const char *amzdate,
		       const char *token, const char *scope, const char *signed_headers,
		       const char *sighex, mt_sigv4_out *out)
{
	size_t k = 0;
	char **hd = out->headers;
	if (!(hd[k++] = mti_asprintf("x-amz-date: %s", amzdate)) ||
	    !(hd[k++] = mti_asprintf("x-amz-content-sha256: %s", r->payload_sha256)))
		return MT_ENOMEM;
	if (token && !(hd[k++] = mti_asprintf("x-amz-security-token: %s", token)))
		return MT_ENOMEM;
	if (sighex[0] &&
	    !(hd[k++] = mti_asprintf("Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, "
				    "SignedHeaders=%s, Signature=%s",
				    c->access_key, scope, signed_headers, sighex)))
		return MT_ENOMEM;
	out->nheaders = k;
	return 0;
}

int mti_sigv4_sign(const mt_s3_config *c, const mt_sigv4_req *r, mt_sigv4_out *out,
		  mt_error *err)
{
	memset(out, 0, sizeof *out);
	struct tm tm;
	char amzdate[17], day[9];
	if (!gmtime_r(&r->when, &tm) || !strftime(amzdate, sizeof amzdate, "%Y%m%dT%H%M%SZ", &tm))
		return mti_err(err, MT_EINVAL, "sigv4: time out of range");
	memcpy(day, amzdate, 8);
	day[8] = '\0';

	const char *token = c->access_key ? c->session_token : NULL;
	mt_buf creq = {0}, sts = {0}, sh = {0};
	pair *h = NULL;
	size_t nh = 0;
	char *scope = NULL, creq_hex[MT_SHA256_HEX], sighex[65] = "";
	int rc = canonical_query(r, &out->query);
	if (!rc && !(out->path = mti_uri_encode(r->path, 1)))
		rc = MT_ENOMEM;
	if (!rc)
		rc = canonical_headers(r, amzdate, token, &h, &nh);
	if (!rc)
		rc = canonical_request(r, out, h, nh, &sh, &creq);
	if (!rc)
		rc = mti_sha256_hex(creq.data, creq.len, creq_hex, err);
	if (!rc && !(scope = mti_asprintf("%s/%s/s3/aws4_request", day, c->region)))
		rc = MT_ENOMEM;
	if (!rc && (buf_cat(&sts, "AWS4-HMAC-SHA256\n", amzdate, "\n", scope, "\n", creq_hex,
			    (char *)NULL) ||
		    mti_buf_append(&sts, "", 1)))
		rc = MT_ENOMEM;
	if (!rc && c->access_key && signature(c, day, (const char *)sts.data, sighex))
		rc = mti_err(err, MT_EIO, "sigv4: HMAC-SHA256 failed");
	if (!rc)
		rc = out_headers(c, r, amzdate, token, scope, (const char *)sh.data, sighex, out);
	if (rc == MT_ENOMEM)
		mti_err(err, MT_ENOMEM, "sigv4: out of memory");
	if (rc)
		mti_sigv4_out_free(out);
	pairs_free(h, r->nheaders + 4);
	mti_buf_free(&creq);
	mti_buf_free(&sts);
	mti_buf_free(&sh);
	free(scope);
	return rc;
}

void mti_sigv4_out_free(mt_sigv4_out *o)
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

char *mti_s3_redact(const mt_s3_config *c, const char *text)
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
				bad = mti_buf_append(&b, p, keep) || buf_str(&b, " ") || put_redacted(&b);
				skip = keep + strcspn(p + keep, "\r\n");
			}
		}
		/* A presigned URL's signature, credential or token. */
		for (size_t i = 0; !skip && i < 3; i++) {
			if (starts_ci(p, query_keys[i])) {
				size_t keep = strlen(query_keys[i]);
				bad = mti_buf_append(&b, p, keep) || put_redacted(&b);
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
			bad = bad || mti_buf_append(&b, p, 1);
			skip = 1;
		}
		at_line = p[skip - 1] == '\n';
		p += skip;
	}
	if (bad || mti_buf_append(&b, "", 1)) {
		mti_buf_free(&b);
		return NULL;
	}
	return (char *)b.data;
}
