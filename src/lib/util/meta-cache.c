/* meta-cache.c — small immutable objects of far stores (format-2 fragments, shard chunk indexes) kept in a local directory, so a process opening a version read before pays no round trip for them.
 *
 * Names are content-addressed (a fragment's sha256; a shard's sha256 and the
 * byte range of its chunk index), so an entry never goes stale; the caller
 * checks every entry it takes (a fragment against its name, a chunk index
 * against the manifest's XXH3) and reads the store when one fails.  One kind
 * is not: a dataset's latest manifest (dataset/latest.c), only ever a guess
 * that the store's listing confirms or refutes before anything read on it
 * is delivered.  A cache never fails a read: any error here is a miss.
 * Files are renamed into place, so processes share the directory; the least
 * recently used go when it holds more than its cap (checked at open, at
 * most every few minutes). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "meta-cache.h"
#include "util.h"

#define META_CAP_DEFAULT (256ull << 20)
#define META_SWEEP_SECS 300
#define META_MAX_ENTRY (64u << 20)

struct mti_meta_cache {
	char *dir;
	uint64_t cap;
};

/* Entries live in two-character subdirectories (a name's first two). */
static int meta_entry(const char *name)
{
	(void)name;
	return 1;
}

/* Least recently used entries removed until the cache holds 3/4 of its cap. */
static void meta_evict(mti_meta_cache *c)
{
	mti_lru l = {0};
	DIR *d = opendir(c->dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		char *sub = mti_asprintf("%s/%s", c->dir, de->d_name);
		if (sub)
			mti_lru_scan(&l, sub, meta_entry);
		free(sub);
	}
	if (d)
		closedir(d);
	if (l.total > c->cap)
		mti_lru_trim(&l, c->cap / 4 * 3);
	mti_lru_free(&l);
}

/* The sweep, when the last one is older than META_SWEEP_SECS: the stamp
 * file's time says when, so a thousand ranks starting at once sweep once. */
static void meta_sweep_maybe(mti_meta_cache *c)
{
	char *stamp = mti_asprintf("%s/.swept", c->dir);
	if (!stamp)
		return;
	struct stat sb;
	int due = stat(stamp, &sb) != 0 || time(NULL) - sb.st_mtime > META_SWEEP_SECS;
	if (due) {
		int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0) {
			futimens(fd, NULL);
			close(fd);
			meta_evict(c);
		}
	}
	free(stamp);
}

/* The directory: $MATORAGE_META_CACHE (an absolute path; "off" or "0":
 * none), else $XDG_CACHE_HOME/matorage/meta or ~/.cache/matorage/meta. */
static char *meta_dir(void)
{
	const char *v = getenv("MATORAGE_META_CACHE");
	if (v && (!strcmp(v, "off") || !strcmp(v, "0")))
		return NULL;
	if (v && v[0] == '/')
		return mti_strdup(v);
	char *dir = NULL;
	mt_error e = {0};
	if (mt_user_path(MT_DIR_CACHE, "meta", &dir, &e))
		return NULL;
	return dir;
}

mti_meta_cache *mti_meta_cache_open(void)
{
	char *dir = meta_dir();
	if (!dir)
		return NULL;
	char *probe = mti_asprintf("%s/.swept", dir);
	mt_error e = {0};
	mti_meta_cache *c = probe && !mti_mkdir_parent(probe, "cache", &e) && !access(dir, W_OK)
		? calloc(1, sizeof *c) : NULL;
	free(probe);
	if (!c) {
		free(dir);
		return NULL;
	}
	c->dir = dir;
	const char *cap = getenv("MATORAGE_META_CACHE_BYTES");
	char *end = NULL;
	unsigned long long b = cap ? strtoull(cap, &end, 10) : 0;
	c->cap = cap && end && !*end && b ? (uint64_t)b : META_CAP_DEFAULT;
	meta_sweep_maybe(c);
	return c;
}

void mti_meta_cache_close(mti_meta_cache *c)
{
	if (!c)
		return;
	free(c->dir);
	free(c);
}

/* The entry's path: a subdirectory per first two characters of its name
 * (a million entries stay out of one directory). */
static char *meta_path(const mti_meta_cache *c, const char *name)
{
	if (strlen(name) < 3 || strchr(name, '/') || name[0] == '.')
		return NULL;
	return mti_asprintf("%s/%.2s/%s", c->dir, name, name);
}

void *mti_meta_cache_get(mti_meta_cache *c, const char *name, size_t *len)
{
	char *path = c ? meta_path(c, name) : NULL;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	free(path);
	if (fd < 0)
		return NULL;
	struct stat sb;
	uint8_t *buf = NULL;
	if (fstat(fd, &sb) == 0 && sb.st_size > 0 && sb.st_size <= META_MAX_ENTRY &&
	    (buf = malloc((size_t)sb.st_size))) {
		size_t got = 0;
		while (got < (size_t)sb.st_size) {
			ssize_t k = pread(fd, buf + got, (size_t)sb.st_size - got, (off_t)got);
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		if (got == (size_t)sb.st_size) {
			*len = got;
			futimens(fd, NULL); /* used now: the last to go */
		} else {
			free(buf);
			buf = NULL;
		}
	}
	close(fd);
	return buf;
}

int mti_meta_cache_has(mti_meta_cache *c, const char *name, size_t len)
{
	char *path = c ? meta_path(c, name) : NULL;
	struct stat sb;
	int has = path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
		  (uint64_t)sb.st_size == (uint64_t)len;
	free(path);
	return has;
}

void mti_meta_cache_put(mti_meta_cache *c, const char *name, const void *data, size_t len)
{
	char *path = c && len <= META_MAX_ENTRY ? meta_path(c, name) : NULL;
	char *tmp = path ? mti_asprintf("%s/%.2s/.tmp.%016llx", c->dir, name,
				       (unsigned long long)mti_random_u64()) : NULL;
	mt_error e = {0};
	int fd = tmp && !mti_mkdir_parent(tmp, "cache", &e)
		? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	if (fd >= 0) {
		const uint8_t *p = data;
		size_t left = len;
		while (left) {
			ssize_t k = write(fd, p, left);
			if (k <= 0)
				break;
			p += k;
			left -= (size_t)k;
		}
		if (close(fd) != 0 || left || rename(tmp, path) != 0)
			unlink(tmp);
	}
	free(tmp);
	free(path);
}
