/* store.c — open a store by URL (or the default); call its backend with errors naming the key. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opts.h"
#include "store.h"

/* mt_store_opts as the first matorage.h with a size field declared it. */
#define STORE_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_store_opts, log_ud)

void mti_list_page_free(mt_list_page *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->objs[i].key);
		free(p->objs[i].etag);
	}
	free(p->objs);
	free(p->next);
	*p = (mt_list_page){0};
}

int mti_store_listed_holds(mt_store *s, const mt_obj *o, const void *data, size_t len)
{
	return s->ops->listed_holds ? s->ops->listed_holds(o, data, len) : 0;
}

/* An absolute path with "." and empty segments dropped and ".." applied,
 * without a trailing slash: two spellings of one directory give one URL. */
static char *store_clean_path(const char *path)
{
	char *out = malloc(strlen(path) + 2);
	if (!out)
		return NULL;
	size_t n = 0;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (len > 0 && !(len == 1 && p[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return out;
}

static int store_open_path(const char *url, const char *path, int create, mt_store **out,
			   mt_error *err)
{
	char *abs = NULL;
	if (path[0] == '/') {
		abs = store_clean_path(path);
	} else {
		char *cwd = getcwd(NULL, 0);
		char *joined = cwd ? mti_asprintf("%s/%s", cwd, path) : NULL;
		if (!cwd)
			return mti_err(err, MT_EIO, "store %s: cannot resolve a relative path: "
				      "the current directory is unknown", url);
		abs = joined ? store_clean_path(joined) : NULL;
		free(joined);
		free(cwd);
	}
	if (!abs)
		return mti_err(err, MT_ENOMEM, "store %s: out of memory", url);
	int rc = mti_store_fs_open(abs, create, out, err);
	free(abs);
	return rc;
}

/* The embedded default: $MATORAGE_STORE, else "store" in matorage's data
 * directory (mt_user_path). */
static int store_open_default(const mt_store_opts *o, mt_store **out, mt_error *err)
{
	const char *env = getenv("MATORAGE_STORE");
	if (env && *env)
		return mt_store_open_opts(env, o, out, err);
	char *dir = NULL;
	int rc = mt_user_path(MT_DIR_DATA, "store", &dir, err);
	if (rc) {
		if (rc != MT_ENOMEM)
			mti_err_prefix(err, "no default store (set MATORAGE_STORE): ");
		return rc;
	}
	/* Before its first write the default store reads as empty: a reader
	 * of a fresh account sees no datasets and makes no directories. */
	rc = store_open_path(dir, dir, o->create ? 1 : -1, out, err);
	free(dir);
	return rc;
}

void mt_store_opts_init_size(mt_store_opts *o, size_t size)
{
	mt_store_opts defaults;
	memset(&defaults, 0, sizeof defaults);
	mti_opts_init(o, size, &defaults, sizeof defaults);
}

/* A remote's settings under the caller's: what the caller set wins. */
static int store_open_remote(const mt_remote *r, const mt_store_opts *o, mt_store **out,
			     mt_error *err)
{
	mt_store_opts m = *o;
	m.endpoint = o->endpoint ? o->endpoint : r->endpoint;
	m.region = o->region ? o->region : r->region;
	m.profile = o->profile ? o->profile : r->profile;
	m.ca_bundle = o->ca_bundle ? o->ca_bundle : r->ca_bundle;
	m.insecure = o->insecure || r->insecure;
	m.addressing = o->addressing ? o->addressing : r->addressing;
	/* A remote's URL is never another remote's name. */
	if (strncmp(r->url, "s3://", 5) != 0 && strncmp(r->url, "file://", 7) != 0)
		return mti_err(err, MT_EINVAL, "remote %s: URL %s is not file:// or s3://",
			      r->name, r->url);
	int rc = mt_store_open_opts(r->url, &m, out, err);
	if (rc)
		mti_err_prefix(err, "remote %s: ", r->name);
	return rc;
}

int mt_store_open(const char *url, mt_store **out, mt_error *err)
{
	return mt_store_open_opts(url, NULL, out, err);
}

int mt_store_open_opts(const char *url, const mt_store_opts *opts, mt_store **out,
		       mt_error *err)
{
	*out = NULL;
	/* The caller's options, whatever matorage.h it was built with. */
	mt_store_opts own;
	mt_store_opts_init(&own);
	own.create = 1;
	if (opts) {
		int rc = mti_opts_take(&own, sizeof own, opts, STORE_OPTS_FIRST, "mt_store_opts", err);
		if (rc)
			return rc;
	}
	const mt_store_opts *o = &own;
	if (!url || !*url)
		return store_open_default(o, out, err);
	const char *sep = strstr(url, "://");
	/* A plain path may hold "://" further on; a scheme is letters first. */
	size_t slen = strspn(url, "abcdefghijklmnopqrstuvwxyz"
				  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
	if (!sep || (size_t)(sep - url) != slen || slen == 0) {
		/* A bare name is a remote when one is configured under it. */
		mt_error ignored;
		if (!strchr(url, '/') && mt_name_check(url, "remote", &ignored) == 0) {
			mt_remote r;
			int rc = mti_remote_find(url, &r, err);
			if (rc == 0) {
				rc = store_open_remote(&r, o, out, err);
				mti_remotes_free_one(&r);
				return rc;
			}
			if (rc != MT_ENOTFOUND)
				return rc;
		}
		return store_open_path(url, url, o->create, out, err);
	}
	if (slen == 4 && strncmp(url, "file", 4) == 0) {
		const char *path = sep + 3;
		if (path[0] != '/')
			return mti_err(err, MT_EINVAL, "store URL %s: file:// needs an absolute "
				      "path (file:///dir)", url);
		return store_open_path(url, path, o->create, out, err);
	}
	if (slen == 2 && strncmp(url, "s3", 2) == 0)
		return mti_store_s3_open(url, o, out, err);
	return mti_err(err, MT_EUNSUPPORTED, "unsupported store URL scheme '%.*s' in %s",
		      (int)slen, url, url);
}

void mt_store_close(mt_store *s)
{
	if (s)
		s->ops->close(s);
}

const char *mt_store_url(const mt_store *s)
{
	return s->url;
}

/* Backends usually name the key; add it when they did not. */
static int store_name_key(int rc, const char *key, mt_error *err)
{
	if (rc && err && key && !strstr(err->message, key))
		mti_err_prefix(err, "%s: ", key);
	return rc;
}

int mti_store_get(mt_store *s, const char *key, uint64_t offset, uint64_t len, void **data,
		 size_t *got, mt_error *err)
{
	return store_name_key(s->ops->get(s, key, offset, len, data, got, err), key, err);
}

static int store_too_big(mt_store *s, const char *key, uint64_t size, uint64_t max, int exact,
			 mt_error *err)
{
	return mti_err(err, MT_ECORRUPT, "store %s: %s: %s%llu bytes, over the cap of %llu bytes "
		      "for such an object (doc/FORMAT.md, \"Size caps\"): not read",
		      s->url, key, exact ? "" : "more than ", (unsigned long long)(exact ? size : max),
		      (unsigned long long)max);
}

int mti_store_get_fn(void *s, const char *key, uint64_t max, void **data, size_t *got,
		     mt_error *err)
{
	return mti_store_get_max(s, key, max, data, got, err);
}

int mti_store_get_max(mt_store *s, const char *key, uint64_t max, void **data, size_t *got,
		      mt_error *err)
{
	*data = NULL;
	*got = 0;
	uint64_t size = 0;
	int rc;
	if (s->ops->far) {
		rc = mti_store_get(s, key, 0, max + 1, data, got, err);
	} else {
		rc = mti_store_head(s, key, &size, NULL, err);
		if (!rc && size > max)
			return store_too_big(s, key, size, max, 1, err);
		if (!rc)
			rc = mti_store_get(s, key, 0, UINT64_MAX, data, got, err);
	}
	/* Grown since the HEAD, or past the cap on a far store. */
	if (!rc && *got > max) {
		free(*data);
		*data = NULL;
		*got = 0;
		return store_too_big(s, key, 0, max, 0, err);
	}
	return rc;
}

int mti_store_read(mt_store *s, const char *key, uint64_t offset, void *buf, size_t len,
		  mt_error *err)
{
	return store_name_key(s->ops->read(s, key, offset, buf, len, err), key, err);
}

int mti_store_put(mt_store *s, const char *key, const void *data, size_t len, int flags,
		 mt_error *err)
{
	return store_name_key(s->ops->put(s, key, data, len, flags, err), key, err);
}

static size_t iov_bytes(const struct iovec *iov, size_t n)
{
	size_t t = 0;
	for (size_t i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

int mti_store_readv(mt_store *s, const char *key, uint64_t offset, const struct iovec *iov,
		    size_t n, mt_error *err)
{
	if (s->ops->readv)
		return store_name_key(s->ops->readv(s, key, offset, iov, n, err), key, err);
	void *data = NULL;
	size_t got = 0, want = iov_bytes(iov, n);
	int rc = s->ops->get(s, key, offset, want, &data, &got, err);
	if (!rc && got < want)
		rc = mti_err(err, MT_ERANGE, "store %s: %s: %zu bytes at %llu, %zu wanted", s->url,
			    key, got, (unsigned long long)offset, want);
	for (size_t i = 0, at = 0; !rc && i < n; at += iov[i].iov_len, i++)
		memcpy(iov[i].iov_base, (char *)data + at, iov[i].iov_len);
	free(data);
	return store_name_key(rc, key, err);
}

int mti_store_putv(mt_store *s, const char *key, const struct iovec *iov, size_t n, int flags,
		   mt_error *err)
{
	if (s->ops->putv)
		return store_name_key(s->ops->putv(s, key, iov, n, flags, err), key, err);
	size_t len = iov_bytes(iov, n);
	char *data = malloc(len ? len : 1);
	if (!data)
		return mti_err(err, MT_ENOMEM, "store %s: %s: out of memory for %zu bytes", s->url,
			      key, len);
	for (size_t i = 0, at = 0; i < n; at += iov[i].iov_len, i++)
		memcpy(data + at, iov[i].iov_base, iov[i].iov_len);
	int rc = mti_store_put(s, key, data, len, flags, err);
	free(data);
	return rc;
}

int mti_store_head(mt_store *s, const char *key, uint64_t *size, int64_t *mtime, mt_error *err)
{
	uint64_t sz;
	int64_t mt;
	return store_name_key(s->ops->head(s, key, size ? size : &sz, mtime ? mtime : &mt, err),
			      key, err);
}

int mti_store_holds(mt_store *s, const char *key, const void *data, size_t len, mt_error *err)
{
	if (s->ops->holds)
		return s->ops->holds(s, key, data, len, err);
	void *got = NULL;
	size_t n = 0;
	int rc = s->ops->get(s, key, 0, UINT64_MAX, &got, &n, err);
	if (rc == MT_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	int same = n == len && memcmp(got, data, len) == 0;
	free(got);
	return same ? 1 : MT_EEXIST;
}

int mti_store_del(mt_store *s, const char *const *keys, size_t n, mt_error *err)
{
	int rc = s->ops->del(s, keys, n, err);
	/* Which of several keys failed only the backend knows. */
	return n == 1 ? store_name_key(rc, keys[0], err) : rc;
}

static int store_list_pages(mt_store *s, const char *prefix, int prefixes,
			    int (*fn)(void *ud, const mt_obj *o), void *ud, mt_error *err)
{
	char *token = NULL;
	int rc = 0;
	do {
		mt_list_page page = {0};
		rc = prefixes ? s->ops->list_prefixes(s, prefix, token, 0, &page, err)
			      : s->ops->list(s, prefix, token, 0, &page, err);
		free(token);
		token = NULL;
		for (size_t i = 0; !rc && i < page.n; i++)
			rc = fn(ud, &page.objs[i]);
		if (!rc) {
			token = page.next;
			page.next = NULL;
		}
		mti_list_page_free(&page);
	} while (!rc && token);
	free(token);
	return rc;
}

int mti_store_list_all(mt_store *s, const char *prefix, int (*fn)(void *ud, const mt_obj *o),
		      void *ud, mt_error *err)
{
	return store_list_pages(s, prefix, 0, fn, ud, err);
}

int mti_store_list_prefixes(mt_store *s, const char *prefix,
			   int (*fn)(void *ud, const mt_obj *o), void *ud, mt_error *err)
{
	return store_list_pages(s, prefix, 1, fn, ud, err);
}

int mti_prefix_child(const mt_obj *o, const char *root, char **name)
{
	size_t rlen = strlen(root), len = strlen(o->key);
	*name = NULL;
	if (len < rlen + 2 || strncmp(o->key, root, rlen) || o->key[len - 1] != '/')
		return 0;
	*name = strndup(o->key + rlen, len - rlen - 1);
	return *name ? 0 : MT_ENOMEM;
}

/* mt_store_list's callback and its argument, behind mti_store_list_all's. */
struct store_list_public {
	int (*fn)(void *ud, const mt_object_info *o);
	void *ud;
};

static int store_list_one(void *ud, const mt_obj *o)
{
	const struct store_list_public *p = ud;
	const mt_object_info info = {o->key, o->size, o->mtime};
	return p->fn(p->ud, &info);
}

int mt_store_list(mt_store *s, const char *prefix, int (*fn)(void *ud, const mt_object_info *o),
		  void *ud, mt_error *err)
{
	struct store_list_public p = {fn, ud};
	return mti_store_list_all(s, prefix, store_list_one, &p, err);
}
