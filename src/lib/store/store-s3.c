/* store-s3.c — the store on an S3-compatible server over libcurl: signed requests, retries, multipart uploads, paged listings. */
#define _GNU_SOURCE /* memmem, strptime, timegm */
#include <curl/curl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "codec.h"
#include "s3-auth.h"
#include "s3-classify.h"
#include "s3-xml.h"
#include "store.h"

#define DEFAULT_REQUESTS 16
#define DEFAULT_ATTEMPTS 6
/* Objects above this go up in parts, several at once. */
#define MULTIPART_THRESHOLD (16u << 20)
#define PART_BYTES (8u << 20)
#define PARTS_IN_FLIGHT 4
#define DELETE_BATCH 1000
#define ERRBODY_MAX (64u << 10)
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct s3_store {
	mt_store base;
	mt_s3_config cfg;
	char *bucket;
	char *prefix;   /* "" or "a/b/" */
	char *origin;   /* "http://host:port", the bucket's host when virtual-hosted */
	char *host;     /* Host header */
	char *path0;    /* "/bucket" (path style) or "" */
	char *ca_bundle;
	int insecure;
	int max_attempts;
	void (*log)(void *ud, const char *line);
	void *log_ud;

	pthread_mutex_t lock; /* guards the handle pool and the request count */
	pthread_cond_t cond;
	CURL **pool;
	size_t npool;
	int inflight, max_inflight;
	pthread_mutex_t bucket_lock;
	int bucket_checked; /* the bucket was created or seen to exist (under bucket_lock) */
} s3_store;

/* One request and what came back. */
typedef struct s3_req {
	const char *method;
	const char *key; /* the object's key under the store's prefix; NULL: the bucket */
	mt_kv query[6];
	size_t nquery;
	mt_kv hdrs[4]; /* further headers, signed */
	size_t nhdrs;
	const uint8_t *body;
	size_t body_len;
	const char *body_sha256; /* when the caller knows it */
	/* Where a successful answer's body goes: a growing buffer, a caller's
	 * buffer of fixed size, or nowhere. */
	mt_buf *out;
	uint8_t *dst;
	size_t dst_cap;
	int allow_404; /* a missing object is an answer, not an error */

	/* filled by s3_do */
	long status;
	size_t dst_len;
	uint64_t length; /* Content-Length */
	int have_length;
	int64_t mtime;
	char etag[130];
	char s3code[128]; /* S3's error code of a failed request */
	mt_buf errbody;
	size_t sent;
	int overflow;
	CURL *curl;
} s3_req;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- small helpers ------------------------------------------------------ */

/* The full key in the bucket. */
static char *full_key(const s3_store *s, const char *key)
{
	return mti_asprintf("%s%s", s->prefix, key);
}

/* A time S3 sends, as seconds since the epoch; 0 when it does not parse.
 * Last-Modified is RFC 7231's IMF-fixdate (HTTP_DATE), ListObjectsV2's
 * LastModified ISO 8601 (ISO_DATE: 2009-10-12T17:50:30.000Z). */
#define HTTP_DATE "%a, %d %b %Y %H:%M:%S"
#define ISO_DATE "%Y-%m-%dT%H:%M:%S"
static int64_t parse_date(const char *v, const char *fmt)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	if (!strptime(v, fmt, &tm))
		return 0;
	return (int64_t)timegm(&tm);
}

/* Full jitter over an exponential ceiling: 50 ms, 100 ms, ... 5 s. */
static void backoff(int attempt)
{
	static _Thread_local unsigned seed;
	if (!seed)
		seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed;
	uint64_t cap_ms = 50ull << (attempt < 7 ? attempt : 7);
	if (cap_ms > 5000)
		cap_ms = 5000;
	uint64_t ms = (uint64_t)rand_r(&seed) % (cap_ms + 1);
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- handles ------------------------------------------------------------ */

/* A handle with its live connection, taken from the pool, waiting while
 * max_inflight requests run. */
static CURL *handle_get(s3_store *s)
{
	pthread_mutex_lock(&s->lock);
	while (s->inflight >= s->max_inflight)
		pthread_cond_wait(&s->cond, &s->lock);
	s->inflight++;
	CURL *c = s->npool ? s->pool[--s->npool] : NULL;
	pthread_mutex_unlock(&s->lock);
	if (c)
		curl_easy_reset(c); /* options go, the connection stays */
	else
		c = curl_easy_init();
	if (!c) {
		pthread_mutex_lock(&s->lock);
		s->inflight--;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
	return c;
}

static void handle_put(s3_store *s, CURL *c, int keep)
{
	pthread_mutex_lock(&s->lock);
	s->inflight--;
	if (keep && s->npool < (size_t)s->max_inflight)
		s->pool[s->npool++] = c;
	else
		curl_easy_cleanup(c);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* ---- one request -------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	s3_req *r = ud;
	size_t len = size * n;
	long status = 0;
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 300) {
		size_t room = ERRBODY_MAX - r->errbody.len;
		mti_buf_append(&r->errbody, p, len < room ? len : room);
		return len;
	}
	if (r->dst) {
		if (len > r->dst_cap - r->dst_len) {
			r->overflow = 1;
			return 0;
		}
		memcpy(r->dst + r->dst_len, p, len);
		r->dst_len += len;
		return len;
	}
	if (r->out && mti_buf_append(r->out, p, len))
		return 0;
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	s3_req *r = ud;
	size_t len = size * n;
	char line[512];
	size_t l = len < sizeof line - 1 ? len : sizeof line - 1;
	memcpy(line, p, l);
	line[l] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	char *colon = strchr(line, ':');
	if (strncmp(line, "HTTP/", 5) == 0) {
		/* A new answer (after 100 Continue): forget the last one's. */
		r->have_length = 0;
		r->mtime = 0;
		r->etag[0] = '\0';
		return len;
	}
	if (!colon)
		return len;
	*colon = '\0';
	const char *v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (!strcasecmp(line, "content-length")) {
		r->length = strtoull(v, NULL, 10);
		r->have_length = 1;
		/* Room for the whole body at once instead of doubling into it;
		 * failing here is harmless, appending will grow it. */
		if (r->out && r->length < SIZE_MAX && r->length > r->out->cap - r->out->len)
			(void)mti_buf_reserve(r->out, (size_t)r->length);
	} else if (!strcasecmp(line, "last-modified")) {
		r->mtime = parse_date(v, HTTP_DATE);
	} else if (!strcasecmp(line, "etag")) {
		snprintf(r->etag, sizeof r->etag, "%s", v);
	}
	return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
	s3_req *r = ud;
	size_t room = size * n, left = r->body_len - r->sent;
	size_t k = left < room ? left : room;
	memcpy(buf, r->body + r->sent, k);
	r->sent += k;
	return k;
}

/* curl rewinds the body when it sends the request again by itself (a
 * reused connection found dead); without this it gives up the request. */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
	s3_req *r = ud;
	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > r->body_len)
		return CURL_SEEKFUNC_FAIL;
	r->sent = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* S3's <Code> or <Message> of an error answer, "" when it has none. */
static void error_field(const s3_req *r, const char *name, char *out, size_t n)
{
	mt_xml_span all = {(const char *)r->errbody.data, r->errbody.len};
	char *v = r->errbody.len ? mti_xml_get(all, name) : NULL;
	snprintf(out, n, "%s", v ? v : "");
	free(v);
}

/* Replace a message by its copy with secrets taken out, or by `instead`
 * when there is no memory for the copy: it never stays as it was. */
static void redact_in_place(const s3_store *s, char *text, size_t cap, const char *instead)
{
	char *clean = mti_s3_redact(&s->cfg, text);
	snprintf(text, cap, "%s", clean ? clean : instead);
	free(clean);
}

static void s3_log(s3_store *s, const char *fmt, ...) MT_PRINTF(2, 3);
static void s3_log(s3_store *s, const char *fmt, ...)
{
	if (!s->log)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	redact_in_place(s, line, sizeof line, "(log line dropped: out of memory)");
	s->log(s->log_ud, line);
}

/* What a request needs on every attempt: its path in the bucket and the
 * hash of its body. */
typedef struct s3_target {
	char *path;
	const char *payload;
	char hash[MT_SHA256_HEX];
} s3_target;

static int target_init(s3_store *s, const s3_req *r, s3_target *t, mt_error *err)
{
	char *key = r->key ? full_key(s, r->key) : NULL;
	t->path = r->key ? (key ? mti_asprintf("%s/%s", s->path0, key) : NULL)
			 : mti_asprintf("%s/", s->path0);
	free(key);
	if (!t->path)
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	t->payload = r->body_sha256;
	if (!t->payload && r->body_len) {
		int rc = mti_sha256_hex(r->body, r->body_len, t->hash, err);
		if (rc)
			return rc;
		t->payload = t->hash;
	} else if (!t->payload) {
		t->payload = EMPTY_SHA256;
	}
	return 0;
}

/* How the last sending of a request went. */
typedef struct s3_outcome {
	mt_s3_verdict v;
	int attempt;
	CURLcode cc;
	char curl_msg[CURL_ERROR_SIZE];
} s3_outcome;

/* Forget the previous attempt's answer. */
static void req_reset(s3_req *r)
{
	r->status = 0;
	r->dst_len = r->sent = 0;
	r->have_length = r->overflow = 0;
	r->etag[0] = r->s3code[0] = '\0';
	r->errbody.len = 0;
	if (r->out)
		r->out->len = 0;
}

/* The signed URL and header lines of one attempt (signatures carry the time). */
static int req_sign(s3_store *s, const s3_req *r, const s3_target *t, char **url,
		    struct curl_slist **h, mt_error *err)
{
	mt_sigv4_req sr = {r->method, s->host, t->path, r->query, r->nquery, r->hdrs, r->nhdrs,
			   t->payload, time(NULL)};
	mt_sigv4_out so = {0};
	int rc = mti_sigv4_sign(&s->cfg, &sr, &so, err);
	if (rc)
		return rc;
	*url = mti_asprintf("%s%s%s%s", s->origin, so.path, so.query[0] ? "?" : "", so.query);
	struct curl_slist *h2;
	int ok = *url != NULL;
	for (size_t i = 0; ok && i < so.nheaders; i++)
		ok = (h2 = curl_slist_append(*h, so.headers[i])) && (*h = h2);
	for (size_t i = 0; ok && i < r->nhdrs; i++) {
		char *line = mti_asprintf("%s: %s", r->hdrs[i].name, r->hdrs[i].value);
		ok = line && (h2 = curl_slist_append(*h, line)) && (*h = h2);
		free(line);
	}
	/* No "Expect: 100-continue" round trip before each body. */
	ok = ok && (h2 = curl_slist_append(*h, "Expect:")) && (*h = h2);
	mti_sigv4_out_free(&so);
	if (!ok)
		return mti_err(err, MT_ENOMEM, "store %s: %s %s: out of memory", s->base.url,
			      r->method, r->key ? r->key : "(bucket)");
	return 0;
}

static void req_setopts(const s3_store *s, s3_req *r, CURL *c, const char *url,
			struct curl_slist *h, char *curl_msg)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_msg);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	/* A stalled transfer is abandoned and retried, a slow one is not. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (s->ca_bundle)
		curl_easy_setopt(c, CURLOPT_CAINFO, s->ca_bundle);
	if (s->insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(r->method, "PUT") || !strcmp(r->method, "POST")) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, r);
		curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(c, CURLOPT_SEEKDATA, r);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
		if (!strcmp(r->method, "POST"))
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
	} else if (strcmp(r->method, "GET") != 0) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
	}
}

/* The transfer on a pooled handle; milliseconds it took. */
static double req_perform(s3_store *s, s3_req *r, CURL *c, s3_outcome *o)
{
	double t0 = mti_mono_seconds();
	r->curl = c;
	o->cc = curl_easy_perform(c);
	double ms = (mti_mono_seconds() - t0) * 1e3;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	handle_put(s, c, o->cc == CURLE_OK);
	r->curl = NULL;
	return ms;
}

/* Sign and send r once; its answer in r, how it went in o.  Fails only
 * when the request could not be sent at all (memory, signing). */
static int req_send(s3_store *s, s3_req *r, const s3_target *t, s3_outcome *o, mt_error *err)
{
	req_reset(r);
	char *url = NULL;
	struct curl_slist *h = NULL;
	int rc = req_sign(s, r, t, &url, &h, err);
	CURL *c = rc ? NULL : handle_get(s);
	if (!rc && !c)
		rc = mti_err(err, MT_ENOMEM, "store %s: %s %s: out of memory", s->base.url,
			    r->method, r->key ? r->key : "(bucket)");
	if (!rc) {
		o->curl_msg[0] = '\0';
		req_setopts(s, r, c, url, h, o->curl_msg);
		double ms = req_perform(s, r, c, o);
		error_field(r, "Code", r->s3code, sizeof r->s3code);
		char result[CURL_ERROR_SIZE + 160];
		if (o->cc != CURLE_OK)
			snprintf(result, sizeof result, "%s",
				 o->curl_msg[0] ? o->curl_msg : curl_easy_strerror(o->cc));
		else
			snprintf(result, sizeof result, "%ld%s%s", r->status,
				 r->s3code[0] ? " " : "", r->s3code);
		s3_log(s, "%s %s -> %s (attempt %d, %.1f ms)", r->method, url, result, o->attempt,
		       ms);
	}
	curl_slist_free_all(h);
	free(url);
	return rc;
}

/* Send r until it succeeds, fails for good, or has used all its
 * attempts; the verdict on the last answer in o->v. */
static int req_exchange(s3_store *s, s3_req *r, s3_outcome *o, mt_error *err)
{
	s3_target t = {0};
	int rc = target_init(s, r, &t, err);
	for (o->attempt = 1; !rc; o->attempt++) {
		if ((rc = req_send(s, r, &t, o, err)))
			break;
		mt_s3_answer a = {o->cc, r->status, r->s3code, r->overflow, r->allow_404};
		o->v = mti_s3_classify(&a);
		if (o->v.ok || !o->v.again || o->attempt >= s->max_attempts)
			break;
		backoff(o->attempt);
	}
	free(t.path);
	return rc;
}

/* A refused HEAD has no body to say why; a GET of the same resource (one
 * byte of an object, no keys of a bucket) is refused the same way and
 * does: SignatureDoesNotMatch, InvalidAccessKeyId, ... */
static void head_probe(s3_store *s, s3_req *r, const s3_outcome *o)
{
	if (strcmp(r->method, "HEAD") != 0 || o->cc != CURLE_OK || r->s3code[0] ||
	    (r->status != 400 && r->status != 403))
		return;
	mt_buf ignored = {0};
	s3_req g = {.method = "GET", .key = r->key, .allow_404 = 1, .out = &ignored};
	if (r->key)
		g.hdrs[g.nhdrs++] = (mt_kv){"range", "bytes=0-0"};
	else
		g.query[g.nquery++] = (mt_kv){"max-keys", "0"};
	s3_outcome go = {0};
	mt_error e;
	if (!req_exchange(s, &g, &go, &e) && !go.v.ok && g.status == r->status)
		snprintf(r->s3code, sizeof r->s3code, "%s", g.s3code);
	mti_buf_free(&g.errbody);
	mti_buf_free(&ignored);
}

/* The error of a request that failed for good: method, key, status, S3's
 * code and message, and the attempts when it was worth retrying. */
static int req_fail(s3_store *s, const s3_req *r, const s3_outcome *o, mt_error *err)
{
	const char *what = r->key ? r->key : "(bucket)";
	char tries[48] = "";
	if (o->v.again)
		snprintf(tries, sizeof tries, " (gave up after %d attempts)", o->attempt);
	int rc;
	if (r->overflow) {
		rc = mti_err(err, o->v.code, "store %s: %s %s: the server sent more than the %zu "
			    "bytes asked for", s->base.url, r->method, what, r->dst_cap);
	} else if (o->cc != CURLE_OK) {
		rc = mti_err(err, o->v.code, "store %s: %s %s: %s%s", s->base.url, r->method, what,
			    o->curl_msg[0] ? o->curl_msg : curl_easy_strerror(o->cc), tries);
	} else {
		const char *code = r->s3code;
		char msg[256];
		error_field(r, "Message", msg, sizeof msg);
		rc = mti_err(err, o->v.code, "store %s: %s %s: HTTP %ld%s%s%s%s%s", s->base.url,
			    r->method, what, r->status, code[0] ? " " : "", code,
			    msg[0] ? ": " : "", msg, tries);
	}
	/* Never let a server echo a secret into an error. */
	if (err)
		redact_in_place(s, err->message, sizeof err->message,
				"(message withheld: out of memory)");
	return rc;
}

/* Send r, retrying what a server or network may fix, and fail with a
 * message naming the method, the key, the status and S3's error code. */
static int s3_do(s3_store *s, s3_req *r, mt_error *err)
{
	s3_outcome o = {0};
	int rc = req_exchange(s, r, &o, err);
	if (!rc && !o.v.ok) {
		head_probe(s, r, &o);
		rc = req_fail(s, r, &o, err);
	}
	mti_buf_free(&r->errbody);
	return rc;
}

/* ---- bucket ------------------------------------------------------------- */

/* Create the bucket the first time something is written to a store whose
 * bucket does not exist yet, so "matorage --store s3://new put" works. */
static int bucket_check(s3_store *s, mt_error *err)
{
	if (s->bucket_checked)
		return 0;
	s3_req r = {.method = "HEAD", .allow_404 = 1};
	int rc = s3_do(s, &r, err);
	if (!rc && r.status == 404) {
		mt_buf body = {0};
		s3_req c = {.method = "PUT"};
		/* us-east-1 is the one region that takes no location. */
		if (strcmp(s->cfg.region, "us-east-1") != 0) {
			char *xml = mti_asprintf("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws."
						"com/doc/2006-03-01/\"><LocationConstraint>%s"
						"</LocationConstraint></CreateBucketConfiguration>",
						s->cfg.region);
			if (!xml || mti_buf_append(&body, xml, strlen(xml))) {
				free(xml);
				mti_buf_free(&body);
				return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
			}
			free(xml);
			c.body = body.data;
			c.body_len = body.len;
		}
		rc = s3_do(s, &c, err);
		mti_buf_free(&body);
		/* Another client created it meanwhile: fine when it is ours (some
		 * servers say BucketAlreadyExists then too; a HEAD tells). */
		if (rc && !strcmp(c.s3code, "BucketAlreadyOwnedByYou"))
			rc = 0;
		if (rc && !strcmp(c.s3code, "BucketAlreadyExists")) {
			s3_req h = {.method = "HEAD"};
			mt_error e;
			if (s3_do(s, &h, &e) == 0)
				rc = 0;
		}
		if (rc)
			mti_err_prefix(err, "creating bucket %s: ", s->bucket);
	}
	if (!rc)
		s->bucket_checked = 1;
	return rc;
}

static int ensure_bucket(s3_store *s, mt_error *err)
{
	/* One thread checks while the others wait: concurrent creations would
	 * fail each other. */
	pthread_mutex_lock(&s->bucket_lock);
	int rc = bucket_check(s, err);
	pthread_mutex_unlock(&s->bucket_lock);
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

static int range_header(char *buf, size_t n, uint64_t offset, uint64_t len)
{
	if (len == UINT64_MAX)
		return snprintf(buf, n, "bytes=%llu-", (unsigned long long)offset);
	return snprintf(buf, n, "bytes=%llu-%llu", (unsigned long long)offset,
			(unsigned long long)(offset + len - 1));
}

static int s3_get(mt_store *st, const char *key, uint64_t offset, uint64_t len, void **data,
		  size_t *got, mt_error *err)
{
	s3_store *s = (s3_store *)st;
	*data = NULL;
	*got = 0;
	mt_buf b = {0};
	s3_req r = {.method = "GET", .key = key, .out = &b};
	char range[64];
	if (len == 0) {
		/* An empty range cannot be asked for; check the object is there. */
		uint64_t size;
		int rc = st->ops->head(st, key, &size, NULL, err);
		if (rc)
			return rc;
		if (offset > size)
			return mti_err(err, MT_ERANGE, "store %s: %s: offset %llu is past its %llu "
				      "bytes", s->base.url, key, (unsigned long long)offset,
				      (unsigned long long)size);
		*data = malloc(1);
		return *data ? 0 : mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	}
	if (offset || len != UINT64_MAX) {
		range_header(range, sizeof range, offset, len);
		r.hdrs[r.nhdrs++] = (mt_kv){"range", range};
	}
	int rc = s3_do(s, &r, err);
	if (!rc && r.status == 200 && offset) {
		/* A server that ignored the Range sent the whole object. */
		rc = mti_err(err, MT_EIO, "store %s: GET %s: the server ignored the byte range",
			    s->base.url, key);
	}
	if (rc) {
		mti_buf_free(&b);
		return rc;
	}
	if (len != UINT64_MAX && b.len > len)
		b.len = (size_t)len;
	if (!b.data && !(b.data = malloc(1))) {
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	}
	*data = b.data;
	*got = b.len;
	return 0;
}

static int s3_read(mt_store *st, const char *key, uint64_t offset, void *buf, size_t len,
		   mt_error *err)
{
	s3_store *s = (s3_store *)st;
	if (len == 0)
		return 0;
	char range[64];
	range_header(range, sizeof range, offset, len);
	s3_req r = {.method = "GET", .key = key, .dst = buf, .dst_cap = len};
	r.hdrs[r.nhdrs++] = (mt_kv){"range", range};
	int rc = s3_do(s, &r, err);
	if (!rc && r.dst_len != len)
		rc = mti_err(err, MT_ERANGE, "store %s: GET %s: %zu bytes at %llu asked, %zu came "
			    "back", s->base.url, key, len, (unsigned long long)offset, r.dst_len);
	return rc;
}

static int s3_head(mt_store *st, const char *key, uint64_t *size, int64_t *mtime,
		   mt_error *err)
{
	s3_store *s = (s3_store *)st;
	s3_req r = {.method = "HEAD", .key = key};
	int rc = s3_do(s, &r, err);
	if (rc)
		return rc;
	if (size)
		*size = r.have_length ? r.length : 0;
	if (mtime)
		*mtime = r.mtime;
	return 0;
}

/* The ETag S3 gives an object matorage wrote with these bytes: the MD5 of
 * a single PUT, or for a multipart upload (always in parts of PART_BYTES)
 * the MD5 of the parts' MD5s, a dash and the number of parts. */
static void expected_etag(const void *data, size_t len, char out[48])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[16];
	size_t parts = len <= MULTIPART_THRESHOLD ? 0 : (len + PART_BYTES - 1) / PART_BYTES;
	if (!parts) {
		EVP_Digest(data, len, md, NULL, EVP_md5(), NULL);
	} else {
		EVP_MD_CTX *c = EVP_MD_CTX_new();
		EVP_DigestInit_ex(c, EVP_md5(), NULL);
		for (size_t i = 0; i < parts; i++) {
			size_t off = i * PART_BYTES, k = len - off < PART_BYTES ? len - off : PART_BYTES;
			unsigned char pm[16];
			EVP_Digest((const uint8_t *)data + off, k, pm, NULL, EVP_md5(), NULL);
			EVP_DigestUpdate(c, pm, sizeof pm);
		}
		EVP_DigestFinal_ex(c, md, NULL);
		EVP_MD_CTX_free(c);
	}
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[32] = '\0';
	if (parts)
		snprintf(out + 32, 16, "-%zu", parts);
}

/* An ETag as S3 sends it (in quotes) without the quotes. */
static char *unquoted_etag(const char *t)
{
	t += *t == '"';
	return strndup(t, strcspn(t, "\""));
}

/* A listed object is these bytes when its size and ETag are what they give;
 * another ETag says nothing either way (see s3_holds). */
static int s3_listed_holds(const mt_obj *o, const void *data, size_t len)
{
	char want[48];
	if (!o->etag || o->size != len)
		return 0;
	expected_etag(data, len, want);
	return !strcasecmp(o->etag, want);
}

/* Whether key holds these bytes: a HEAD, and when the ETag is the one these
 * bytes give (computed here, no download) that settles it.  Another ETag
 * may still be the same bytes (uploaded in other parts, or encrypted with
 * a key that makes ETags opaque): then the object is read and compared. */
static int s3_holds(mt_store *st, const char *key, const void *data, size_t len, mt_error *err)
{
	s3_store *s = (s3_store *)st;
	s3_req r = {.method = "HEAD", .key = key};
	mt_error e = {0};
	int rc = s3_do(s, &r, &e);
	if (rc == MT_ENOTFOUND)
		return 0;
	if (rc)
		return mti_err_copy(err, &e);
	if (r.have_length && r.length != len)
		return MT_EEXIST;
	char want[48], got[sizeof r.etag];
	expected_etag(data, len, want);
	const char *t = r.etag + (r.etag[0] == '"');
	snprintf(got, sizeof got, "%.*s", (int)strcspn(t, "\""), t);
	if (!strcasecmp(got, want))
		return 1;
	void *buf = NULL;
	size_t n = 0;
	rc = st->ops->get(st, key, 0, UINT64_MAX, &buf, &n, err);
	if (rc == MT_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	int same = n == len && memcmp(buf, data, len) == 0;
	free(buf);
	return same ? 1 : MT_EEXIST;
}

/* ---- writing ------------------------------------------------------------ */

/* Exclusive puts (manifests) ask the server to refuse an existing key
 * (If-None-Match: *); a server that ignores that header is caught by the
 * HEAD before, which leaves a window only as wide as the request. */
static int put_simple(s3_store *s, const char *key, const void *data, size_t len, int flags,
		      mt_error *err)
{
	s3_req r = {.method = "PUT", .key = key, .body = data, .body_len = len};
	r.hdrs[r.nhdrs++] = (mt_kv){"content-type", "application/octet-stream"};
	if (flags & MT_PUT_EXCLUSIVE)
		r.hdrs[r.nhdrs++] = (mt_kv){"if-none-match", "*"};
	int rc = s3_do(s, &r, err);
	if (rc == MT_EEXIST)
		rc = mti_err(err, MT_EEXIST, "store %s: %s already exists", s->base.url, key);
	return rc;
}

typedef struct s3_upload {
	s3_store *s;
	char *key;
	int flags;
	char *upload_id;
	mt_buf pending; /* bytes not yet sent as a part */
	/* parts being sent: one thread each, at most PARTS_IN_FLIGHT */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int running;
	int failed;
	mt_error failure;
	char **etags; /* by part number - 1 */
	pthread_t *threads; /* as many as parts */
	size_t nparts, nthreads, cap;
} s3_upload;

struct part_job {
	s3_upload *u;
	size_t number;
	uint8_t *data; /* owned when own */
	size_t len;
	int own;
};

static void *part_thread(void *arg)
{
	struct part_job *j = arg;
	s3_upload *u = j->u;
	char num[24];
	snprintf(num, sizeof num, "%zu", j->number);
	s3_req r = {.method = "PUT", .key = u->key, .body = j->data, .body_len = j->len};
	r.query[r.nquery++] = (mt_kv){"partNumber", num};
	r.query[r.nquery++] = (mt_kv){"uploadId", u->upload_id};
	mt_error e = {0};
	int rc = s3_do(u->s, &r, &e);
	char *etag = !rc ? mti_strdup(r.etag) : NULL;
	if (!rc && (!etag || !r.etag[0])) {
		rc = mti_err(&e, MT_EIO, "store %s: PUT %s part %zu: no ETag in the answer",
			    u->s->base.url, u->key, j->number);
	}
	pthread_mutex_lock(&u->lock);
	if (rc && !u->failed) {
		u->failed = 1;
		u->failure = e;
	}
	if (!rc)
		u->etags[j->number - 1] = etag;
	else
		free(etag);
	u->running--;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (j->own)
		free(j->data);
	free(j);
	return NULL;
}

/* Send one part on its own thread; data is taken over when own. */
static int part_start(s3_upload *u, uint8_t *data, size_t len, int own, mt_error *err)
{
	pthread_mutex_lock(&u->lock);
	while (u->running >= PARTS_IN_FLIGHT && !u->failed)
		pthread_cond_wait(&u->cond, &u->lock);
	int rc = u->failed ? mti_err_copy(err, &u->failure) : 0;
	pthread_mutex_unlock(&u->lock);
	if (!rc && u->nparts == u->cap) {
		/* Threads only write etags[] under the lock: grow it under the lock. */
		size_t cap = u->cap ? u->cap * 2 : 16;
		pthread_mutex_lock(&u->lock);
		char **e = realloc(u->etags, cap * sizeof *e);
		if (e) {
			memset(e + u->cap, 0, (cap - u->cap) * sizeof *e);
			u->etags = e;
		}
		pthread_t *t = e ? realloc(u->threads, cap * sizeof *t) : NULL;
		if (t) {
			u->threads = t;
			u->cap = cap;
		}
		pthread_mutex_unlock(&u->lock);
		if (!t)
			rc = mti_err(err, MT_ENOMEM, "store %s: out of memory", u->s->base.url);
	}
	struct part_job *j = rc ? NULL : malloc(sizeof *j);
	if (!rc && !j)
		rc = mti_err(err, MT_ENOMEM, "store %s: out of memory", u->s->base.url);
	if (!rc) {
		*j = (struct part_job){u, u->nparts + 1, data, len, own};
		pthread_mutex_lock(&u->lock);
		u->running++;
		pthread_mutex_unlock(&u->lock);
		if (pthread_create(&u->threads[u->nthreads], NULL, part_thread, j) != 0) {
			pthread_mutex_lock(&u->lock);
			u->running--;
			pthread_mutex_unlock(&u->lock);
			free(j);
			rc = mti_err(err, MT_EIO, "store %s: cannot start an upload thread",
				    u->s->base.url);
		}
	}
	if (rc) {
		if (own)
			free(data);
		return rc;
	}
	u->nthreads++;
	u->nparts++;
	return 0;
}

static void parts_join(s3_upload *u)
{
	for (size_t i = 0; i < u->nthreads; i++)
		pthread_join(u->threads[i], NULL);
	u->nthreads = 0;
}

static void upload_free(s3_upload *u)
{
	for (size_t i = 0; i < u->cap; i++)
		free(u->etags[i]);
	free(u->etags);
	free(u->threads);
	mti_buf_free(&u->pending);
	free(u->upload_id);
	free(u->key);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
}

static void s3_upload_abort(mt_upload *mu)
{
	s3_upload *u = (s3_upload *)mu;
	if (!u)
		return;
	parts_join(u);
	if (u->upload_id) {
		/* Servers without AbortMultipartUpload leave the parts to sweep. */
		s3_req r = {.method = "DELETE", .key = u->key, .allow_404 = 1};
		r.query[r.nquery++] = (mt_kv){"uploadId", u->upload_id};
		mt_error ignored;
		s3_do(u->s, &r, &ignored);
	}
	upload_free(u);
}

static int s3_upload_open(mt_store *st, const char *key, int flags, mt_upload **out,
			  mt_error *err)
{
	s3_store *s = (s3_store *)st;
	*out = NULL;
	int rc = ensure_bucket(s, err);
	if (rc)
		return rc;
	s3_upload *u = calloc(1, sizeof *u);
	if (!u || !(u->key = mti_strdup(key))) {
		free(u);
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	}
	u->s = s;
	u->flags = flags;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	*out = (mt_upload *)u;
	return 0;
}

/* The multipart upload starts with the first full part: small objects
 * written through an upload go up in one PUT at commit. */
static int upload_begin(s3_upload *u, mt_error *err)
{
	mt_buf b = {0};
	s3_req r = {.method = "POST", .key = u->key, .out = &b};
	r.query[r.nquery++] = (mt_kv){"uploads", ""};
	r.hdrs[r.nhdrs++] = (mt_kv){"content-type", "application/octet-stream"};
	int rc = s3_do(u->s, &r, err);
	if (!rc) {
		mt_xml_span all = {(const char *)b.data, b.len};
		u->upload_id = mti_xml_get(all, "UploadId");
		if (!u->upload_id || !u->upload_id[0])
			rc = mti_err(err, MT_EIO, "store %s: POST %s?uploads: no UploadId in the "
				    "answer", u->s->base.url, u->key);
	}
	mti_buf_free(&b);
	return rc;
}

static int s3_upload_write(mt_upload *mu, const void *data, size_t len, mt_error *err)
{
	s3_upload *u = (s3_upload *)mu;
	const uint8_t *p = data;
	while (len) {
		size_t room = PART_BYTES - u->pending.len;
		size_t k = len < room ? len : room;
		if (mti_buf_append(&u->pending, p, k))
			return mti_err(err, MT_ENOMEM, "store %s: out of memory", u->s->base.url);
		p += k;
		len -= k;
		if (u->pending.len < PART_BYTES)
			break;
		if (!u->upload_id) {
			int rc = upload_begin(u, err);
			if (rc)
				return rc;
		}
		uint8_t *part = u->pending.data;
		size_t plen = u->pending.len;
		u->pending = (mt_buf){0};
		int rc = part_start(u, part, plen, 1, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int upload_complete(s3_upload *u, mt_error *err)
{
	mt_buf x = {0};
	int bad = mti_buf_append(&x, "<CompleteMultipartUpload>", 25);
	for (size_t i = 0; i < u->nparts && !bad; i++) {
		char *part = mti_asprintf("<Part><PartNumber>%zu</PartNumber><ETag>", i + 1);
		bad = !part || mti_buf_append(&x, part, strlen(part)) ||
		      mti_xml_escape(&x, u->etags[i]) || mti_buf_append(&x, "</ETag></Part>", 14);
		free(part);
	}
	bad = bad || mti_buf_append(&x, "</CompleteMultipartUpload>", 26);
	if (bad) {
		mti_buf_free(&x);
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", u->s->base.url);
	}
	mt_buf b = {0};
	s3_req r = {.method = "POST", .key = u->key, .body = x.data, .body_len = x.len, .out = &b};
	r.query[r.nquery++] = (mt_kv){"uploadId", u->upload_id};
	r.hdrs[r.nhdrs++] = (mt_kv){"content-type", "application/xml"};
	int rc = s3_do(u->s, &r, err);
	/* S3 may answer 200 and put the failure in the body. */
	if (!rc && b.len && memmem(b.data, b.len, "<Error>", 7)) {
		mt_xml_span all = {(const char *)b.data, b.len};
		char *code = mti_xml_get(all, "Code");
		rc = mti_err(err, MT_EIO, "store %s: completing the upload of %s: %s",
			    u->s->base.url, u->key, code ? code : "error");
		free(code);
	}
	mti_buf_free(&b);
	mti_buf_free(&x);
	return rc;
}

static int s3_upload_commit(mt_upload *mu, mt_error *err)
{
	s3_upload *u = (s3_upload *)mu;
	s3_store *s = u->s;
	int rc = 0;
	if (u->flags & MT_PUT_EXCLUSIVE) {
		uint64_t size;
		mt_error e;
		int hrc = s->base.ops->head(&s->base, u->key, &size, NULL, &e);
		if (hrc == 0)
			rc = mti_err(err, MT_EEXIST, "store %s: %s already exists", s->base.url,
				    u->key);
		else if (hrc != MT_ENOTFOUND)
			rc = mti_err_copy(err, &e);
	}
	if (!rc && !u->upload_id) {
		rc = put_simple(s, u->key, u->pending.data, u->pending.len, u->flags, err);
	} else if (!rc) {
		if (u->pending.len) {
			uint8_t *part = u->pending.data;
			size_t plen = u->pending.len;
			u->pending = (mt_buf){0};
			rc = part_start(u, part, plen, 1, err);
		}
		parts_join(u);
		if (!rc && u->failed)
			rc = mti_err_copy(err, &u->failure);
		if (!rc)
			rc = upload_complete(u, err);
	}
	if (rc) {
		s3_upload_abort(mu);
		return rc;
	}
	upload_free(u);
	return 0;
}

static int s3_put(mt_store *st, const char *key, const void *data, size_t len, int flags,
		  mt_error *err)
{
	s3_store *s = (s3_store *)st;
	int rc = ensure_bucket(s, err);
	if (rc)
		return rc;
	if (len <= MULTIPART_THRESHOLD) {
		if (flags & MT_PUT_EXCLUSIVE) {
			uint64_t size;
			mt_error e;
			int hrc = st->ops->head(st, key, &size, NULL, &e);
			if (hrc == 0)
				return mti_err(err, MT_EEXIST, "store %s: %s already exists",
					      s->base.url, key);
			if (hrc != MT_ENOTFOUND)
				return mti_err_copy(err, &e);
		}
		return put_simple(s, key, data, len, flags, err);
	}
	/* Big objects: parts straight from the caller's memory, in parallel. */
	mt_upload *mu;
	if ((rc = s3_upload_open(st, key, flags, &mu, err)))
		return rc;
	s3_upload *u = (s3_upload *)mu;
	rc = upload_begin(u, err);
	const uint8_t *p = data;
	for (size_t off = 0; !rc && off < len; off += PART_BYTES) {
		size_t k = len - off < PART_BYTES ? len - off : PART_BYTES;
		rc = part_start(u, (uint8_t *)(uintptr_t)(p + off), k, 0, err);
	}
	if (rc) {
		s3_upload_abort(mu);
		return rc;
	}
	return s3_upload_commit(mu, err);
}

/* ---- listing ------------------------------------------------------------ */

/* One entry of a listing: its key under the store's prefix, size and time. */
static int list_entry(s3_store *s, mt_xml_span e, int delimited, const char *prefix,
		      mt_list_page *page, size_t *cap, mt_error *err)
{
	size_t plen = strlen(s->prefix);
	char *key = mti_xml_get(e, delimited ? "Prefix" : "Key");
	char *size = delimited ? NULL : mti_xml_get(e, "Size");
	char *lm = delimited ? NULL : mti_xml_get(e, "LastModified");
	char *etag = delimited ? NULL : mti_xml_get(e, "ETag");
	int rc = 0;
	if (!key || strncmp(key, s->prefix, plen) != 0) {
		rc = mti_err(err, MT_EIO, "store %s: listing %s: an entry without a key under the "
			    "prefix", s->base.url, prefix);
	} else {
		mt_obj *o = mti_grow(page->objs, page->n, cap, sizeof *o, 64);
		if (!o)
			rc = mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
		else
			page->objs = o;
	}
	if (!rc) {
		mt_obj *o = &page->objs[page->n];
		o->key = mti_strdup(key + plen);
		o->size = size ? strtoull(size, NULL, 10) : 0;
		o->mtime = lm ? parse_date(lm, ISO_DATE) : 0;
		o->etag = etag ? unquoted_etag(etag) : NULL;
		if (!o->key || (etag && !o->etag))
			rc = mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
		if (rc) {
			free(o->key);
			free(o->etag);
		} else {
			page->n++;
		}
	}
	free(key);
	free(size);
	free(lm);
	free(etag);
	return rc;
}

/* A ListObjectsV2 answer into page: its entries and, when truncated, the
 * token of the next page. */
static int list_parse(s3_store *s, const mt_buf *b, int delimited, const char *prefix,
		      mt_list_page *page, mt_error *err)
{
	const char *doc = (const char *)b->data;
	const char *elem = delimited ? "CommonPrefixes" : "Contents";
	size_t pos = 0, cap = 0;
	mt_xml_span e;
	int rc = 0, found;
	while (!rc && (found = mti_xml_next(doc, b->len, elem, &pos, &e)) == 1)
		rc = list_entry(s, e, delimited, prefix, page, &cap, err);
	if (!rc && found < 0)
		rc = mti_err(err, MT_EIO, "store %s: listing %s: malformed XML answer", s->base.url,
			    prefix);
	if (rc || !b->len)
		return rc;
	mt_xml_span all = {doc, b->len};
	char *trunc = mti_xml_get(all, "IsTruncated");
	if (trunc && !strcmp(trunc, "true")) {
		page->next = mti_xml_get(all, "NextContinuationToken");
		if (!page->next || !page->next[0])
			rc = mti_err(err, MT_EIO, "store %s: listing %s: truncated without a "
				    "continuation token", s->base.url, prefix);
	}
	free(trunc);
	return rc;
}

static int list_page(s3_store *s, const char *prefix, const char *token, size_t max,
		     int delimited, mt_list_page *page, mt_error *err)
{
	memset(page, 0, sizeof *page);
	char *full = full_key(s, prefix);
	char maxs[24];
	snprintf(maxs, sizeof maxs, "%zu", max ? (max < 1000 ? max : 1000) : 1000);
	if (!full)
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	mt_buf b = {0};
	s3_req r = {.method = "GET", .out = &b};
	r.query[r.nquery++] = (mt_kv){"list-type", "2"};
	r.query[r.nquery++] = (mt_kv){"prefix", full};
	r.query[r.nquery++] = (mt_kv){"max-keys", maxs};
	if (delimited)
		r.query[r.nquery++] = (mt_kv){"delimiter", "/"};
	if (token)
		r.query[r.nquery++] = (mt_kv){"continuation-token", token};
	int rc = s3_do(s, &r, err);
	/* A listing of a bucket that does not exist yet is empty. */
	if (rc == MT_ENOTFOUND && !strcmp(r.s3code, "NoSuchBucket"))
		rc = 0, b.len = 0;
	if (!rc)
		rc = list_parse(s, &b, delimited, prefix, page, err);
	mti_buf_free(&b);
	free(full);
	if (rc)
		mti_list_page_free(page);
	return rc;
}

static int s3_list(mt_store *st, const char *prefix, const char *token, size_t max,
		   mt_list_page *page, mt_error *err)
{
	return list_page((s3_store *)st, prefix, token, max, 0, page, err);
}

static int s3_list_prefixes(mt_store *st, const char *prefix, const char *token, size_t max,
			    mt_list_page *page, mt_error *err)
{
	return list_page((s3_store *)st, prefix, token, max, 1, page, err);
}

/* ---- deleting ----------------------------------------------------------- */

static int delete_one(s3_store *s, const char *key, mt_error *err)
{
	s3_req r = {.method = "DELETE", .key = key, .allow_404 = 1};
	return s3_do(s, &r, err);
}

/* DeleteObjects, up to 1000 keys a request; servers without it get one
 * DELETE per key. */
static int delete_batch(s3_store *s, const char *const *keys, size_t n, mt_error *err)
{
	mt_buf x = {0}, b = {0};
	int bad = mti_buf_append(&x, "<Delete><Quiet>true</Quiet>", 27);
	for (size_t i = 0; i < n && !bad; i++) {
		char *k = full_key(s, keys[i]);
		bad = !k || mti_buf_append(&x, "<Object><Key>", 13) || mti_xml_escape(&x, k) ||
		      mti_buf_append(&x, "</Key></Object>", 15);
		free(k);
	}
	bad = bad || mti_buf_append(&x, "</Delete>", 9);
	if (bad) {
		mti_buf_free(&x);
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	}
	/* DeleteObjects insists on a Content-MD5. */
	unsigned char md5[16];
	char md5b64[32];
	EVP_Digest(x.data, x.len, md5, NULL, EVP_md5(), NULL);
	EVP_EncodeBlock((unsigned char *)md5b64, md5, 16);
	s3_req r = {.method = "POST", .body = x.data, .body_len = x.len, .out = &b};
	r.query[r.nquery++] = (mt_kv){"delete", ""};
	r.hdrs[r.nhdrs++] = (mt_kv){"content-md5", md5b64};
	r.hdrs[r.nhdrs++] = (mt_kv){"content-type", "application/xml"};
	int rc = s3_do(s, &r, err);
	if (rc == MT_EUNSUPPORTED || !strcmp(r.s3code, "NotImplemented")) {
		rc = 0;
		for (size_t i = 0; i < n && !rc; i++)
			rc = delete_one(s, keys[i], err);
	} else if (!rc) {
		mt_xml_span all = {(const char *)b.data, b.len}, e;
		size_t pos = 0;
		if (mti_xml_next(all.p, all.n, "Error", &pos, &e) == 1) {
			char *key = mti_xml_get(e, "Key"), *code = mti_xml_get(e, "Code");
			if (!code || strcmp(code, "NoSuchKey") != 0)
				rc = mti_err(err, MT_EIO, "store %s: deleting %s: %s", s->base.url,
					    key ? key : "?", code ? code : "error");
			free(key);
			free(code);
		}
	}
	mti_buf_free(&b);
	mti_buf_free(&x);
	return rc;
}

static int s3_del(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	s3_store *s = (s3_store *)st;
	if (n == 1)
		return delete_one(s, keys[0], err);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i += DELETE_BATCH)
		rc = delete_batch(s, keys + i, n - i < DELETE_BATCH ? n - i : DELETE_BATCH, err);
	return rc;
}

/* ---- sync and sweep ----------------------------------------------------- */

/* A PUT S3 has answered is durable. */
static int s3_sync(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	return 0;
}

/* Abort multipart uploads under prefix that were started before `before`:
 * a crashed writer's parts cost storage until then. */
static int s3_sweep(mt_store *st, const char *prefix, int64_t before, int dry_run, uint64_t *n,
		    uint64_t *bytes, mt_error *err)
{
	s3_store *s = (s3_store *)st;
	*n = *bytes = 0;
	char *full = full_key(s, prefix);
	if (!full)
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	mt_buf b = {0};
	s3_req r = {.method = "GET", .out = &b};
	r.query[r.nquery++] = (mt_kv){"uploads", ""};
	r.query[r.nquery++] = (mt_kv){"prefix", full};
	int rc = s3_do(s, &r, err);
	free(full);
	if (rc) {
		mti_buf_free(&b);
		/* Servers without ListMultipartUploads have nothing to sweep. */
		if (rc == MT_EUNSUPPORTED || rc == MT_ENOTFOUND || !strcmp(r.s3code, "NotImplemented"))
			return 0;
		return rc;
	}
	size_t pos = 0, plen = strlen(s->prefix);
	mt_xml_span e;
	while (!rc && mti_xml_next((const char *)b.data, b.len, "Upload", &pos, &e) == 1) {
		char *key = mti_xml_get(e, "Key"), *id = mti_xml_get(e, "UploadId");
		char *when = mti_xml_get(e, "Initiated");
		if (key && id && when && parse_date(when, ISO_DATE) < before &&
		    !strncmp(key, s->prefix, plen)) {
			(*n)++;
			if (!dry_run) {
				s3_req a = {.method = "DELETE", .key = key + plen, .allow_404 = 1};
				a.query[a.nquery++] = (mt_kv){"uploadId", id};
				rc = s3_do(s, &a, err);
			}
		}
		free(key);
		free(id);
		free(when);
	}
	mti_buf_free(&b);
	return rc;
}

/* ---- open and close ----------------------------------------------------- */

static void s3_close(mt_store *st)
{
	s3_store *s = (s3_store *)st;
	if (!s)
		return;
	for (size_t i = 0; i < s->npool; i++)
		curl_easy_cleanup(s->pool[i]);
	free(s->pool);
	mti_s3_config_free(&s->cfg);
	free(s->bucket);
	free(s->prefix);
	free(s->origin);
	free(s->host);
	free(s->path0);
	free(s->ca_bundle);
	free(s->base.url);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->bucket_lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static const mt_store_ops s3_ops = {
	.scheme = "s3",
	.far = 1,
	.get = s3_get,
	.read = s3_read,
	.put = s3_put,
	.upload_open = s3_upload_open,
	.upload_write = s3_upload_write,
	.upload_commit = s3_upload_commit,
	.upload_abort = s3_upload_abort,
	.head = s3_head,
	.list = s3_list,
	.list_prefixes = s3_list_prefixes,
	.del = s3_del,
	.sync = s3_sync,
	.sweep = s3_sweep,
	.close = s3_close,
	.holds = s3_holds,
	.listed_holds = s3_listed_holds,
};

/* Bucket names as S3 allows them (and older, looser ones: upper case,
 * underscores), never anything that would change the URL's meaning. */
static int bucket_ok(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_",
			    b[i]))
			return 0;
	return 1;
}

/* Where requests go: scheme://host[:port] and whether the bucket is in
 * the path or the host name. */
static int s3_route(s3_store *s, const mt_store_opts *o, mt_error *err)
{
	const char *ep = s->cfg.endpoint;
	int aws = !ep;
	char *def = NULL;
	if (!ep)
		ep = def = mti_asprintf("https://s3.%s.amazonaws.com", s->cfg.region);
	if (!ep)
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	int rc = 0;
	size_t uoff, ulen;
	/* S3 requests are signed, never sent with a user and password: an
	 * endpoint that holds them is refused, and shown without them. */
	if (mti_url_userinfo(ep, &uoff, &ulen)) {
		char *shown = mti_url_redact(ep);
		rc = mti_err(err, MT_EINVAL, "store %s: endpoint %s holds credentials "
			    "(user:password@): give them with an AWS profile (--profile, "
			    "~/.aws/credentials) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
			    s->base.url, shown ? shown : "(out of memory)");
		free(shown);
		free(def);
		return rc;
	}
	const char *hp = NULL;
	if (!strncmp(ep, "http://", 7))
		hp = ep + 7;
	else if (!strncmp(ep, "https://", 8))
		hp = ep + 8;
	size_t hl = hp ? strcspn(hp, "/?#") : 0;
	if (!hp || hl == 0 || (hp[hl] && strcmp(hp + hl, "/") != 0)) {
		rc = mti_err(err, MT_EINVAL, "store %s: endpoint %s: expected http(s)://HOST[:PORT]",
			    s->base.url, ep);
		free(def);
		return rc;
	}
	aws = aws || (hl > 14 && !memcmp(hp + hl - 14, ".amazonaws.com", 14));
	int virt = o->addressing == MT_S3_VIRTUAL || (o->addressing == MT_S3_AUTO && aws);
	/* A dotted bucket name breaks the certificate of a virtual host. */
	if (o->addressing == MT_S3_AUTO && strchr(s->bucket, '.'))
		virt = 0;
	size_t schemelen = (size_t)(hp - ep);
	if (virt) {
		s->host = mti_asprintf("%s.%.*s", s->bucket, (int)hl, hp);
		s->origin = mti_asprintf("%.*s%s", (int)schemelen, ep, s->host ? s->host : "");
		s->path0 = mti_strdup("");
	} else {
		s->host = mti_asprintf("%.*s", (int)hl, hp);
		s->origin = mti_asprintf("%.*s", (int)(schemelen + hl), ep);
		s->path0 = mti_asprintf("/%s", s->bucket);
	}
	free(def);
	if (!s->host || !s->origin || !s->path0)
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", s->base.url);
	return 0;
}

/* The prefix as the canonical URL has it: "a/b/" for "/a//b/", "" for none. */
static char *canonical_prefix(const char *q)
{
	mt_buf p = {0};
	int bad = 0;
	while (*q && !bad) {
		q += strspn(q, "/");
		size_t sl = strcspn(q, "/");
		if (sl)
			bad = mti_buf_append(&p, q, sl) || mti_buf_append(&p, "/", 1);
		q += sl;
	}
	if (bad || mti_buf_append(&p, "", 1)) {
		mti_buf_free(&p);
		return NULL;
	}
	return (char *)p.data;
}

/* Bucket, prefix, URL and connection settings from the URL and options. */
static int s3_settings(s3_store *s, const char *url, size_t bl, const mt_store_opts *o,
		       mt_error *err)
{
	const char *b = url + 5; /* after "s3://" */
	s->bucket = mti_asprintf("%.*s", (int)bl, b);
	s->prefix = canonical_prefix(b + bl);
	size_t pl = s->prefix ? strlen(s->prefix) : 0;
	/* The canonical URL: no trailing or doubled slashes in the prefix. */
	s->base.url = s->bucket && s->prefix ? mti_asprintf("s3://%s%s%.*s", s->bucket,
							   pl ? "/" : "", (int)(pl ? pl - 1 : 0),
							   s->prefix)
					     : NULL;
	/* AWS_CA_BUNDLE is where the AWS CLI and SDKs look too. */
	const char *ca = o->ca_bundle ? o->ca_bundle : getenv("AWS_CA_BUNDLE");
	s->ca_bundle = ca && *ca ? mti_strdup(ca) : NULL;
	s->max_inflight = o->max_requests > 0 ? o->max_requests : DEFAULT_REQUESTS;
	s->pool = calloc((size_t)s->max_inflight, sizeof *s->pool);
	s->max_attempts = o->max_attempts > 0 ? o->max_attempts : DEFAULT_ATTEMPTS;
	s->insecure = o->insecure;
	s->log = o->log;
	s->log_ud = o->log_ud;
	if (!s->bucket || !s->prefix || !s->base.url || !s->pool || (ca && *ca && !s->ca_bundle))
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", url);
	return 0;
}

int mti_store_s3_open(const char *url, const mt_store_opts *o, mt_store **out, mt_error *err)
{
	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return mti_err(err, MT_ENET, "store %s: libcurl: %s", url,
			      curl_easy_strerror(curl_init_rc));
	size_t bl = strcspn(url + 5, "/"); /* after "s3://" */
	if (!bucket_ok(url + 5, bl))
		return mti_err(err, MT_EINVAL, "store %s: expected s3://BUCKET[/PREFIX] with a "
			      "bucket name of 3 to 63 letters, digits, '.', '-' or '_'", url);
	s3_store *s = calloc(1, sizeof *s);
	if (!s)
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", url);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->bucket_lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->base.ops = &s3_ops;
	int rc = s3_settings(s, url, bl, o, err);
	if (!rc && (rc = mti_s3_config_resolve(o->profile, o->region, o->endpoint, &s->cfg, err)))
		mti_err_prefix(err, "store %s: ", s->base.url);
	if (!rc)
		rc = s3_route(s, o, err);
	if (rc) {
		s3_close(&s->base);
		return rc;
	}
	s3_log(s, "store %s: endpoint %s%s, region %s, profile %s, %s", s->base.url, s->origin,
	       s->path0, s->cfg.region, s->cfg.profile ? s->cfg.profile : "(none)",
	       s->cfg.access_key ? "signed requests" : "anonymous requests");
	*out = &s->base;
	return 0;
}
