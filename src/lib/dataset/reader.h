/* reader.h — the reader's state, for the files of reader.c's room that work on it (reader-verify.c). */
#ifndef MT_READER_H
#define MT_READER_H

#include <pthread.h>

#include "chunk-cache.h"
#include "dataset.h"
#include "heal.h"

/* A shard object read whole, for reads that want all of it (far away, the
 * chunk index then costs no round trip of its own): want says a caller
 * asked for it; refs counts the runs slicing data; dropped frees it when
 * the last of them is done. */
struct whole {
	uint8_t *data;
	int want, refs, dropped;
	int fetching; /* being read whole, by one thread */
	int keep;     /* wanted by a window to come: the next drop leaves it */
};

struct mt_reader {
	mt_store *store;
	mt_manifest *m;
	char *json;
	char **keys;          /* shard object keys */
	const char **tags;
	mt_version_info info;
	pthread_mutex_t frag_lock; /* format 2: one caller loads fragments at a time */
	int lazy;             /* format 2: fragments loaded as they are wanted */
	pthread_mutex_t lock; /* guards ix, ix_busy, run_bytes and whole */
	pthread_cond_t ix_done;
	mt_index **ix;        /* chunk index per shard, loaded on first use */
	char *ix_busy;        /* a thread is reading that shard's index */
	char *offs_ok;        /* that shard's ragged offsets were found sound (guarded by lock) */
	int threads;
	mti_heal *heal;       /* damaged chunks rebuilt from parity */
	pthread_cond_t room_freed; /* run buffers were freed, or the room changed */
	uint64_t run_bytes;   /* of run buffers held now, by every read of r (guarded by lock) */
	struct whole *whole;  /* per shard: its object read whole ahead */
	uint64_t whole_bytes; /* held in whole[] */
	uint64_t room;        /* what run buffers and whole objects may hold together (run_room) */
	double latency;       /* seconds, the quickest chunk index read so far (0: none yet) */
	mti_ccache *cache;    /* decoded chunks: the process's, or the one mti_reader_set_cache gave */
	int keep_all;         /* every chunk decoded goes into the cache, not only those used in part */
	mti_meta_cache *meta; /* fragments and chunk indexes kept on local disk (a far store's loader) */
};

/* Load the fragments of shards [s0, s1) of a format-2 version read lazily. */
MT_LOCAL int mti_reader_need_shards(mt_reader *r, size_t s0, size_t s1, mt_error *err);
/* What a chunk index entry counts: "rows", "items" or "offsets". */
MT_LOCAL const char *mti_reader_unit_word(const mt_index_entry *e);

#endif
