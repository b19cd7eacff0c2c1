/* tap-store.h — scratch directories and file stores for unit tests (fresh, under $TMPDIR), and whole-file reads and writes. */
#ifndef MT_TAP_STORE_H
#define MT_TAP_STORE_H

#include <stdio.h>
#include <stdlib.h>

#include "matorage.h"

/* Makes TMPDIR/mt-NAME-XXXXXX into root (cap bytes): a fresh directory.
 * 0, or -1 after a "Bail out!" line that names why. */
static inline int tap_scratch_dir(const char *name, char *root, size_t cap)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, cap, "%s/mt-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
	if (!mkdtemp(root)) {
		printf("Bail out! cannot make a directory like %s\n", root);
		return -1;
	}
	return 0;
}

/* tap_scratch_dir, and a store opened there. */
static inline int tap_scratch_store(const char *name, char *root, size_t cap, mt_store **s)
{
	mt_error err = { 0 };
	if (tap_scratch_dir(name, root, cap))
		return -1;
	if (mt_store_open(root, s, &err)) {
		printf("Bail out! %s: %s\n", root, err.message);
		return -1;
	}
	return 0;
}

/* A whole file (malloc'd, NUL-terminated past *len), or NULL. */
static inline void *tap_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	if (p) {
		p[n] = 0;
		*len = (size_t)n;
	}
	return p;
}

/* path made to hold exactly data[0..len): 0, or -1. */
static inline int tap_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(data, 1, len, f);
	return fclose(f) == 0 && n == len ? 0 : -1;
}

#endif
