/* dir-lru.c — the least recently used files of a cache directory, listed and removed until the directory fits its cap: shared by the shard cache (store-cache.c) and the metadata cache (meta-cache.c), whose entries are renamed into place by many processes at once. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* A temporary file older than this was left by a process that died. */
#define LRU_STALE_TMP_SECS 3600

static int lru_cmp(const void *a, const void *b)
{
	const mti_lru_file *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

static int lru_push(mti_lru *l, const char *dir, const char *name, const struct stat *sb)
{
	if (l->n == l->cap) {
		size_t c = l->cap ? 2 * l->cap : 256;
		mti_lru_file *g = realloc(l->v, c * sizeof *g);
		if (!g)
			return -1;
		l->v = g;
		l->cap = c;
	}
	char *p = mti_asprintf("%s/%s", dir, name);
	if (!p)
		return -1;
	l->v[l->n++] = (mti_lru_file){p, (uint64_t)sb->st_size, sb->st_mtim};
	return 0;
}

int mti_lru_scan(mti_lru *l, const char *dir, int (*entry)(const char *name))
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int rc = 0;
	struct dirent *de;
	while (!rc && (de = readdir(d))) {
		int tmp = !strncmp(de->d_name, ".tmp.", 5);
		struct stat sb;
		if (!tmp && (de->d_name[0] == '.' || !entry(de->d_name)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, 0) != 0 || !S_ISREG(sb.st_mode))
			continue;
		/* A file being written takes room but is not removed, unless it
		 * is stale. */
		if (tmp && time(NULL) - sb.st_mtime > LRU_STALE_TMP_SECS)
			unlinkat(dirfd(d), de->d_name, 0);
		else if (tmp)
			l->total += (uint64_t)sb.st_size;
		else if ((rc = lru_push(l, dir, de->d_name, &sb)) == 0)
			l->total += (uint64_t)sb.st_size;
	}
	closedir(d);
	return rc;
}

void mti_lru_trim(mti_lru *l, uint64_t target)
{
	if (l->total <= target)
		return;
	qsort(l->v, l->n, sizeof *l->v, lru_cmp);
	/* A reader holding a removed file keeps it until it closes it. */
	for (size_t i = 0; i < l->n && l->total > target; i++)
		if (unlink(l->v[i].path) == 0)
			l->total -= l->v[i].size;
}

void mti_lru_free(mti_lru *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	*l = (mti_lru){0};
}
