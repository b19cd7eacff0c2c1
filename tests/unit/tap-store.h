/* tap-store.h — a scratch file store for unit tests: a fresh directory under $TMPDIR. */
#ifndef MT_TAP_STORE_H
#define MT_TAP_STORE_H

#include <stdio.h>
#include <stdlib.h>

#include "matorage.h"

/* Makes TMPDIR/mt-NAME-XXXXXX into root (cap bytes) and opens a store there.
 * 0, or -1 after a "Bail out!" line that names why. */
static inline int tap_scratch_store(const char *name, char *root, size_t cap, mt_store **s)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, cap, "%s/mt-%s-XXXXXX", tmp ? tmp : "/tmp", name);
	mt_error err = { 0 };
	if (!mkdtemp(root)) {
		printf("Bail out! cannot make a directory like %s\n", root);
		return -1;
	}
	if (mt_store_open(root, s, &err)) {
		printf("Bail out! %s: %s\n", root, err.message);
		return -1;
	}
	return 0;
}

#endif
