/* chunk-cache.h — decoded chunks kept in memory within a byte budget, the least recently used evicted first.
 *
 * What it promises the reader above it: a chunk found here is the decoded
 * form of exactly the chunk its key names (the shard's sha256, the dataset
 * inside the shard, the chunk's index and its compressed checksum), because
 * only chunks that were read, checked against their checksum and decoded
 * without error are put in.  A failed read leaves nothing behind.
 *
 * Threading: every function may be called from any thread at once.  A
 * chunk handed out by mti_ccache_get stays valid until mti_ccache_release,
 * even when it is evicted meanwhile (its memory then goes at the release).
 */
#ifndef MT_CHUNK_CACHE_H
#define MT_CHUNK_CACHE_H

#include "util.h"

typedef struct mti_ccache mti_ccache;
typedef struct mti_centry mti_centry;

typedef struct mti_ckey {
	const char *shard; /* the shard's sha256, 64 hex digits */
	const char *entry; /* the dataset inside it: "image", "text/values" */
	uint64_t chunk;    /* the chunk's index in that dataset */
	uint64_t xxh3;     /* the compressed chunk's checksum, from the shard's index */
} mti_ckey;

/* A cache of at most budget bytes (0: holds nothing); NULL when out of memory. */
MT_LOCAL mti_ccache *mti_ccache_new(uint64_t budget);
MT_LOCAL void mti_ccache_free(mti_ccache *c);
/* The process's cache, shared by every reader that has no cache of its own:
 * made on first use with the budget $MATORAGE_CHUNK_CACHE (bytes, or with a
 * K, M or G suffix; 0 turns it off), 256 MiB when that is unset or not a
 * size.  NULL when out of memory.  Safe across fork(). */
MT_LOCAL mti_ccache *mti_ccache_global(void);
/* Keep at most budget bytes from now on, evicting what is over it. */
MT_LOCAL void mti_ccache_set_budget(mti_ccache *c, uint64_t budget);
/* The chunk under k, pinned until mti_ccache_release (counted as a hit),
 * or NULL (a miss).  *data and *len receive its bytes. */
MT_LOCAL mti_centry *mti_ccache_get(mti_ccache *c, const mti_ckey *k, const void **data,
					  size_t *len);
MT_LOCAL void mti_ccache_release(mti_ccache *c, mti_centry *e);
/* Whether k is held now (not counted, nothing pinned). */
MT_LOCAL int mti_ccache_has(mti_ccache *c, const mti_ckey *k);
/* Keep a copy of data[0..len) under k, the least recently used chunks
 * evicted to make room.  Nothing happens when k is held already, when the
 * chunk alone is over the budget, or when memory runs out: a cache may
 * always forget. */
MT_LOCAL void mti_ccache_put(mti_ccache *c, const mti_ckey *k, const void *data, size_t len);
/* Forget every chunk (pinned ones go at their release). */
MT_LOCAL void mti_ccache_clear(mti_ccache *c);
/* Its counts, as many fields as out->size covers (zeros for a NULL cache). */
MT_LOCAL void mti_ccache_stats(mti_ccache *c, mt_cache_stats *out);

#endif
