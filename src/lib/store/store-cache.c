/* store-cache.c — another store's shard objects kept whole, checked against their names: in a local directory (renamed into place, shared between processes, least recently used evicted) or in memory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "store.h"

/* One shard held in memory; `loading` while a thread downloads it. */
typedef struct mem_entry {
	char name[68];
	uint8_t *data;
	size_t size;
	int loading;
} mem_entry;

typedef struct cache_store {
	mt_store base;
	mt_store *inner;
	char *dir; /* NULL: in memory */
	uint64_t cap;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	mem_entry **mem;
	size_t nmem, capmem;
	uint64_t used;
} cache_store;

/* Shard objects are named by the sha256 of their bytes: the cache can
 * check them and share them between datasets. */
static int is_shard_file(const char *b)
{
	if (strlen(b) != 67 || strcmp(b + 64, ".h5"))
		return 0;
	for (int i = 0; i < 64; i++)
		if (!strchr("0123456789abcdef", b[i]))
			return 0;
	return 1;
}

/* The cache's file name for key, NULL when key is not a shard. */
static const char *shard_name(const char *key)
{
	const char *b = strrchr(key, '/');
	return b && strstr(key, "/shards/") && is_shard_file(b + 1) ? b + 1 : NULL;
}

/* Delete the least recently used shards until `need` more bytes fit. */
static int evict(cache_store *c, uint64_t need, mt_error *err)
{
	mti_lru l = {0};
	int rc = 0;
	if (mti_lru_scan(&l, c->dir, is_shard_file))
		rc = mti_err(err, MT_EIO, "cache %s: %s", c->dir,
			     errno ? strerror(errno) : "cannot be listed");
	else if (l.total + need > c->cap)
		mti_lru_trim(&l, c->cap > need ? c->cap - need : 0);
	mti_lru_free(&l);
	return rc;
}

/* The whole object, checked against the sha256 its name promises. */
static int download(cache_store *c, const char *key, const char *name, void **data, size_t *got,
		    mt_error *err)
{
	int rc = mti_store_get(c->inner, key, 0, UINT64_MAX, data, got, err);
	char sha[MT_SHA256_HEX];
	if (!rc && !(rc = mti_sha256_hex(*data, *got, sha, err)) && strncmp(sha, name, 64) != 0)
		rc = mti_err(err, MT_ECORRUPT, "%s in %s: sha256 is %s, not the name's (damaged "
			    "object; run verify)", key, mt_store_url(c->inner), sha);
	if (rc) {
		free(*data);
		*data = NULL;
	}
	return rc;
}

/* In memory: the shard, downloaded by one thread while the others wait.
 * *out NULL when it does not fit under the cap (then read it from inner). */
static int mem_fetch(cache_store *c, const char *key, const char *name, const mem_entry **out,
		     mt_error *err)
{
	*out = NULL;
	pthread_mutex_lock(&c->lock);
	mem_entry *e = NULL;
	for (;;) {
		e = NULL;
		for (size_t i = 0; i < c->nmem && !e; i++)
			if (!strcmp(c->mem[i]->name, name))
				e = c->mem[i];
		if (!e || !e->loading)
			break;
		pthread_cond_wait(&c->cond, &c->lock);
	}
	if (e) {
		/* Entries are never freed before the store: data stays valid. */
		*out = e->data ? e : NULL;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	int rc = 0;
	if (c->nmem == c->capmem) {
		size_t cap = c->capmem ? 2 * c->capmem : 64;
		mem_entry **g = realloc(c->mem, cap * sizeof *g);
		if (g) {
			c->mem = g;
			c->capmem = cap;
		}
	}
	if (c->nmem < c->capmem && (e = calloc(1, sizeof *e))) {
		snprintf(e->name, sizeof e->name, "%s", name);
		e->loading = 1;
		c->mem[c->nmem++] = e;
	} else {
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&c->lock);
	if (rc)
		return rc;
	void *data = NULL;
	size_t got = 0;
	rc = download(c, key, name, &data, &got, err);
	pthread_mutex_lock(&c->lock);
	if (!rc && c->used + got <= c->cap) {
		e->data = data;
		e->size = got;
		c->used += got;
		*out = e;
	} else {
		free(data);
	}
	e->loading = 0;
	/* A failed download is forgotten, so a later read tries again. */
	if (rc) {
		for (size_t i = 0; i < c->nmem; i++)
			if (c->mem[i] == e)
				c->mem[i] = c->mem[--c->nmem];
		free(e);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* path opened and locked (flock, exclusive); -1 with errno set when not. */
static int lock_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Room for size more bytes, made and claimed under one lock for the whole
 * directory: the temporary file (*tmp, open as *fd) gets its full size at
 * once, and evict counts temporary files, so concurrent downloads cannot
 * overshoot the cap.  The caller removes *tmp and closes *fd. */
static int claim_space(cache_store *c, const char *name, uint64_t size, char **tmp, int *fd,
		       mt_error *err)
{
	char *space = mti_asprintf("%s/.locks/.space", c->dir);
	int sfd = space ? lock_file(space) : -1;
	int rc = 0;
	if (sfd < 0)
		rc = mti_err(err, MT_EIO, "cache %s: lock %s: %s", c->dir, space ? space : "",
			    strerror(errno));
	free(space);
	if (!rc)
		rc = evict(c, size, err);
	/* Written under a unique name, then renamed: nobody sees half a file. */
	*tmp = rc ? NULL : mti_asprintf("%s/.tmp.%s.XXXXXX", c->dir, name);
	*fd = *tmp ? mkstemp(*tmp) : -1;
	if (!rc && (*fd < 0 || ftruncate(*fd, (off_t)size) != 0))
		rc = mti_err(err, MT_EIO, "cache %s: %s", c->dir, strerror(errno));
	if (sfd >= 0)
		close(sfd);
	return rc;
}

static int write_all(int fd, const uint8_t *p, size_t left)
{
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		left -= (size_t)w;
	}
	return 0;
}

/* The downloaded bytes into the temporary file, made durable, then renamed
 * to path; fd is closed. */
static int install(cache_store *c, const char *name, int fd, const char *tmp, const char *path,
		   const void *data, size_t len, mt_error *err)
{
	int rc = 0;
	if (write_all(fd, data, len))
		rc = mti_err(err, MT_EIO, "cache %s: writing %s: %s", c->dir, name, strerror(errno));
	fchmod(fd, 0644);
	/* A crash must not leave a short file under the final name. */
	if (!rc && fsync(fd) != 0)
		rc = mti_err(err, MT_EIO, "cache %s: %s", c->dir, strerror(errno));
	if (close(fd) != 0 && !rc)
		rc = mti_err(err, MT_EIO, "cache %s: %s", c->dir, strerror(errno));
	if (!rc && rename(tmp, path) != 0)
		rc = mti_err(err, MT_EIO, "cache %s: %s", c->dir, strerror(errno));
	return rc;
}

/* Download key into the cache as path, the shard's lock held. */
static int fetch_locked(cache_store *c, const char *key, const char *name, const char *path,
			mt_error *err)
{
	uint64_t size = 0;
	int rc = mti_store_head(c->inner, key, &size, NULL, err);
	if (!rc && size > c->cap)
		rc = mti_err(err, MT_ERANGE,
			    "cache %s: %s is %llu bytes, more than the whole cache (%llu bytes); "
			    "raise the cache size",
			    c->dir, key, (unsigned long long)size, (unsigned long long)c->cap);
	char *tmp = NULL;
	int fd = -1;
	if (!rc)
		rc = claim_space(c, name, size, &tmp, &fd, err);
	void *data = NULL;
	size_t got = 0;
	if (!rc)
		rc = download(c, key, name, &data, &got, err);
	if (!rc && got != size)
		rc = mti_err(err, MT_EIO, "%s changed size while being cached (%zu bytes, %llu "
			    "announced)", key, got, (unsigned long long)size);
	if (!rc)
		rc = install(c, name, fd, tmp, path, data, got, err);
	else if (fd >= 0)
		close(fd);
	if (rc && tmp)
		unlink(tmp);
	free(tmp);
	free(data);
	return rc;
}

/* Download key into the cache unless it is there; its path in *path. */
static int fetch(cache_store *c, const char *key, const char *name, char **path, mt_error *err)
{
	*path = mti_asprintf("%s/%s", c->dir, name);
	char *lock = mti_asprintf("%s/.locks/%s", c->dir, name);
	if (!*path || !lock) {
		free(lock);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	/* Most reads find it there. */
	if (utimensat(AT_FDCWD, *path, NULL, 0) == 0) {
		free(lock);
		return 0;
	}
	/* One downloader per shard across threads and processes; the others
	 * wait and then find it in place. */
	int lfd = lock_file(lock);
	int rc = 0;
	if (lfd < 0)
		rc = mti_err(err, MT_EIO, "cache %s: lock %s: %s", c->dir, lock, strerror(errno));
	free(lock);
	if (!rc && utimensat(AT_FDCWD, *path, NULL, 0) != 0)
		rc = fetch_locked(c, key, name, *path, err);
	if (lfd >= 0)
		close(lfd);
	return rc;
}

/* An open descriptor of the cached shard, fetched first if need be. */
static int cached_open(cache_store *c, const char *key, const char *name, int *fd, mt_error *err)
{
	/* Another process's eviction may delete it between fetch and open. */
	for (int attempt = 0;; attempt++) {
		char *path;
		int rc = fetch(c, key, name, &path, err);
		*fd = rc ? -1 : open(path, O_RDONLY | O_CLOEXEC);
		int e = errno;
		free(path);
		if (rc)
			return rc;
		if (*fd >= 0)
			return 0;
		if (e != ENOENT || attempt == 3)
			return mti_err(err, MT_EIO, "cache %s: %s: %s", c->dir, name, strerror(e));
	}
}

static int pread_all(int fd, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(offset + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Where key is read from: *name NULL for the inner store (not a shard,
 * or too big for the memory cache), else the shard's name and, in memory,
 * its entry in *e. */
static int cache_route(cache_store *c, const char *key, const char **name, const mem_entry **e,
		       mt_error *err)
{
	*e = NULL;
	*name = shard_name(key);
	if (!*name || c->dir)
		return 0;
	int rc = mem_fetch(c, key, *name, e, err);
	if (!rc && !*e)
		*name = NULL;
	return rc;
}

static int cache_get(mt_store *st, const char *key, uint64_t offset, uint64_t len, void **data,
		     size_t *got, mt_error *err)
{
	cache_store *c = (cache_store *)st;
	const char *name;
	const mem_entry *e;
	int rc = cache_route(c, key, &name, &e, err);
	if (rc)
		return rc;
	if (!name)
		return c->inner->ops->get(c->inner, key, offset, len, data, got, err);
	if (e) {
		if (offset > e->size || (len != UINT64_MAX && len > e->size - offset))
			return mti_err(err, MT_ERANGE, "%s: range past the end of its %zu bytes", key,
				      e->size);
		size_t n = (size_t)(len == UINT64_MAX ? e->size - offset : len);
		if (!(*data = malloc(n + 1)))
			return mti_err(err, MT_ENOMEM, "out of memory");
		memcpy(*data, e->data + offset, n);
		*got = n;
		return 0;
	}
	int fd;
	if ((rc = cached_open(c, key, name, &fd, err)))
		return rc;
	struct stat sb;
	uint64_t size = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	size_t n = 0;
	void *buf = NULL;
	if (offset > size || (len != UINT64_MAX && len > size - offset))
		rc = mti_err(err, MT_ERANGE, "%s: range past the end of its %llu bytes", key,
			    (unsigned long long)size);
	else if (!(buf = malloc((n = (size_t)(len == UINT64_MAX ? size - offset : len)) + 1)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	else if (pread_all(fd, buf, n, offset))
		rc = mti_err(err, MT_EIO, "cache %s: reading %s: %s", c->dir, name, strerror(errno));
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*data = buf;
	*got = n;
	return 0;
}

static int cache_read(mt_store *st, const char *key, uint64_t offset, void *buf, size_t len,
		      mt_error *err)
{
	cache_store *c = (cache_store *)st;
	const char *name;
	const mem_entry *e;
	int rc = cache_route(c, key, &name, &e, err);
	if (rc)
		return rc;
	if (!name)
		return c->inner->ops->read(c->inner, key, offset, buf, len, err);
	if (e) {
		if (offset > e->size || len > e->size - offset)
			return mti_err(err, MT_ERANGE, "%s: %zu bytes at %llu are past its end", key, len,
				      (unsigned long long)offset);
		memcpy(buf, e->data + offset, len);
		return 0;
	}
	int fd;
	if ((rc = cached_open(c, key, name, &fd, err)))
		return rc;
	if (pread_all(fd, buf, len, offset))
		rc = mti_err(err, MT_ERANGE, "%s: %zu bytes at %llu are past its end", key, len,
			    (unsigned long long)offset);
	close(fd);
	return rc;
}

/* The loader only reads through the cache; writes go to the store itself. */
static int readonly(const cache_store *c, mt_error *err)
{
	return mti_err(err, MT_EUNSUPPORTED, "cache %s of %s is read-only", c->dir, c->base.url);
}

static int cache_put(mt_store *st, const char *key, const void *data, size_t len, int flags,
		     mt_error *err)
{
	return readonly((cache_store *)st, err);
}

static int cache_upload_open(mt_store *st, const char *key, int flags, mt_upload **out,
			     mt_error *err)
{
	return readonly((cache_store *)st, err);
}

static int cache_del(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	return readonly((cache_store *)st, err);
}

static int cache_sync(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	return readonly((cache_store *)st, err);
}

static int cache_sweep(mt_store *st, const char *prefix, int64_t before, int dry_run,
		       uint64_t *n, uint64_t *bytes, mt_error *err)
{
	return readonly((cache_store *)st, err);
}

static int cache_head(mt_store *st, const char *key, uint64_t *size, int64_t *mtime,
		      mt_error *err)
{
	mt_store *in = ((cache_store *)st)->inner;
	return in->ops->head(in, key, size, mtime, err);
}

static int cache_list(mt_store *st, const char *prefix, const char *token, size_t max,
		      mt_list_page *page, mt_error *err)
{
	mt_store *in = ((cache_store *)st)->inner;
	return in->ops->list(in, prefix, token, max, page, err);
}

static int cache_list_prefixes(mt_store *st, const char *prefix, const char *token, size_t max,
			       mt_list_page *page, mt_error *err)
{
	mt_store *in = ((cache_store *)st)->inner;
	return in->ops->list_prefixes(in, prefix, token, max, page, err);
}

static void cache_close(mt_store *st)
{
	cache_store *c = (cache_store *)st;
	for (size_t i = 0; i < c->nmem; i++) {
		free(c->mem[i]->data);
		free(c->mem[i]);
	}
	free(c->mem);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c->dir);
	free(c);
}

static const mt_store_ops cache_ops = {
	.scheme = "cache",
	.get = cache_get,
	.read = cache_read,
	.put = cache_put,
	.upload_open = cache_upload_open,
	.head = cache_head,
	.list = cache_list,
	.list_prefixes = cache_list_prefixes,
	.del = cache_del,
	.sync = cache_sync,
	.sweep = cache_sweep,
	.close = cache_close,
};

int mti_store_cache_open(mt_store *inner, const char *dir, uint64_t cap, mt_store **out,
			mt_error *err)
{
	*out = NULL;
	int rc = 0;
	if (dir) {
		char *locks = mti_asprintf("%s/.locks", dir);
		rc = locks ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
		if (!rc && mkdir(dir, 0755) != 0 && errno != EEXIST)
			rc = mti_err(err, MT_EIO, "cache directory %s: %s", dir, strerror(errno));
		if (!rc && mkdir(locks, 0755) != 0 && errno != EEXIST)
			rc = mti_err(err, MT_EIO, "cache directory %s: %s", locks, strerror(errno));
		free(locks);
	}
	cache_store *c = rc ? NULL : calloc(1, sizeof *c);
	if (!rc && (!c || (dir && !(c->dir = mti_strdup(dir))))) {
		free(c);
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (rc)
		return rc;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->base.ops = &cache_ops;
	c->base.url = inner->url;
	c->inner = inner;
	c->cap = cap;
	*out = &c->base;
	return 0;
}
