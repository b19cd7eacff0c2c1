/* meta-cache.h — a local directory of small immutable objects of far stores (meta-cache.c). */
#ifndef MT_META_CACHE_H
#define MT_META_CACHE_H

#include <stddef.h>

#include "util.h"

typedef struct mti_meta_cache mti_meta_cache;

/* The cache at $MATORAGE_META_CACHE (an absolute path; "off" or "0" turn it
 * off), else $XDG_CACHE_HOME/matorage/meta or ~/.cache/matorage/meta, at
 * most $MATORAGE_META_CACHE_BYTES (default 256 MiB); NULL when it is off or
 * its directory cannot be made. */
MT_LOCAL mti_meta_cache *mti_meta_cache_open(void);
MT_LOCAL void mti_meta_cache_close(mti_meta_cache *c);
/* Entry `name` (no '/'), malloc'ed, or NULL when there is none (or c is
 * NULL).  The bytes are unchecked: the caller checks them against what
 * their name promises. */
MT_LOCAL void *mti_meta_cache_get(mti_meta_cache *c, const char *name, size_t *len);
/* Whether entry `name` exists with `len` bytes: a caller that has the
 * bytes from elsewhere (a shard read whole) skips rewriting it.  A damaged
 * entry of the right size stays until a reader that takes it finds it
 * wrong and puts the store's bytes. */
MT_LOCAL int mti_meta_cache_has(mti_meta_cache *c, const char *name, size_t len);
/* Keep `len` bytes as entry `name`; best effort, silent. */
MT_LOCAL void mti_meta_cache_put(mti_meta_cache *c, const char *name, const void *data,
				 size_t len);

#endif
