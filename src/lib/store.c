/* store.c — open a store by URL (or the embedded default) and call its backend with errors that name the key. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

void mt_list_page_free(mt_list_page *p)
{
	for (size_t i = 0; p && i < p->n; i++)
		free(p->objs[i].key);
	if (p) {
		free(p->objs);
		free(p->next);
		*p = (mt_list_page){0};
	}
}

/* mkdir -p */
static int make_dirs(const char *path, mt_error *err)
{
	char *p = mt_strdup(path);
	if (!p)
		return mt_err(err, MT_ENOMEM, "out of memory");
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0777) != 0 && errno != EEXIST) {
				int e = errno;
				free(p);
				return mt_err(err, MT_EIO, "cannot create %s: %s", path, strerror(e));
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return 0;
}

/* The embedded default: $MATORAGE_STORE, else $XDG_DATA_HOME/matorage/store. */
static int default_store(mt_store **out, mt_error *err)
{
	const char *env = getenv("MATORAGE_STORE");
	if (env && *env)
		return mt_store_open(env, out, err);
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	char *dir = xdg && *xdg ? mt_asprintf("%s/matorage/store", xdg)
		    : home && *home ? mt_asprintf("%s/.local/share/matorage/store", home)
				    : NULL;
	if (!dir)
		return mt_err(err, MT_EINVAL, "no default store: set MATORAGE_STORE, "
			      "XDG_DATA_HOME or HOME");
	int rc = make_dirs(dir, err);
	if (!rc)
		rc = mt_store_fs_open(dir, out, err);
	free(dir);
	return rc;
}

int mt_store_open(const char *url, mt_store **out, mt_error *err)
{
	*out = NULL;
	if (!url || !*url)
		return default_store(out, err);
	const char *colon = strstr(url, "://");
	if (!colon || strncmp(url, "file://", 7) == 0) {
		const char *path = colon ? url + 7 : url;
		if (colon && path[0] != '/')
			return mt_err(err, MT_EINVAL, "store URL %s: file:// needs an absolute path",
				      url);
		char abs[PATH_MAX];
		if (path[0] != '/') {
			if (!getcwd(abs, sizeof abs) ||
			    strlen(abs) + strlen(path) + 2 > sizeof abs)
				return mt_err(err, MT_EINVAL, "store path %s is too long", path);
			strcat(abs, "/");
			strcat(abs, path);
		} else if (strlen(path) >= sizeof abs) {
			return mt_err(err, MT_EINVAL, "store path %s is too long", path);
		} else {
			strcpy(abs, path);
		}
		size_t n = strlen(abs);
		while (n > 1 && abs[n - 1] == '/')
			abs[--n] = '\0';
		return mt_store_fs_open(abs, out, err);
	}
	return mt_err(err, MT_EUNSUPPORTED, "store URL %s: unsupported scheme '%.*s'", url,
		      (int)(colon - url), url);
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
static int name_key(int rc, const char *key, mt_error *err)
{
	if (rc && err && !strstr(err->message, key))
		mt_err_prefix(err, "%s: ", key);
	return rc;
}

int mt_store_get(mt_store *s, const char *key, uint64_t offset, uint64_t len, void **data,
		 size_t *got, mt_error *err)
{
	return name_key(s->ops->get(s, key, offset, len, data, got, err), key, err);
}

int mt_store_read(mt_store *s, const char *key, uint64_t offset, void *buf, size_t len,
		  mt_error *err)
{
	return name_key(s->ops->read(s, key, offset, buf, len, err), key, err);
}

int mt_store_put(mt_store *s, const char *key, const void *data, size_t len, int flags,
		 mt_error *err)
{
	return name_key(s->ops->put(s, key, data, len, flags, err), key, err);
}

int mt_store_head(mt_store *s, const char *key, uint64_t *size, int64_t *mtime, mt_error *err)
{
	uint64_t sz;
	int64_t mt;
	return name_key(s->ops->head(s, key, size ? size : &sz, mtime ? mtime : &mt, err), key,
			err);
}

int mt_store_del(mt_store *s, const char *const *keys, size_t n, mt_error *err)
{
	return s->ops->del(s, keys, n, err);
}

static int list_pages(mt_store *s, const char *prefix, int prefixes,
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
		mt_list_page_free(&page);
	} while (!rc && token);
	free(token);
	return rc;
}

int mt_store_list_all(mt_store *s, const char *prefix, int (*fn)(void *ud, const mt_obj *o),
		      void *ud, mt_error *err)
{
	return list_pages(s, prefix, 0, fn, ud, err);
}

int mt_store_list_prefixes(mt_store *s, const char *prefix,
			   int (*fn)(void *ud, const mt_obj *o), void *ud, mt_error *err)
{
	return list_pages(s, prefix, 1, fn, ud, err);
}
