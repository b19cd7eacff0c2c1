/* heal.h — self-healing reads: a reader's damaged or missing chunks rebuilt from the version's parity (doc/FORMAT.md, "Protection"). */
#ifndef MT_HEAL_H
#define MT_HEAL_H

#include "format.h"
#include "protect.h"
#include "store.h"

/* One per reader; thread-safe.  It looks for the version's protection
 * record once, on the first damage, and keeps what it found. */
typedef struct mti_heal mti_heal;

/* s and m stay the caller's and must outlive h. */
MT_LOCAL int mti_heal_new(mt_store *s, const mt_manifest *m, mti_heal **out, mt_error *err);
MT_LOCAL void mti_heal_free(mti_heal *h);

/* Whether the version has a protection record (loaded on the first call).
 * A record that exists but cannot be read counts as protected: healing
 * then fails naming why, rather than hiding the record's damage. */
MT_LOCAL int mti_heal_protected(mti_heal *h);

/* Shards whose object the store cannot give (missing, or refused whole by
 * a cache that checks sha256): their chunks go straight to parity.  `why`
 * (nonzero, the caller's code for the damage) is what lost returns; 0 for
 * a shard not marked. */
MT_LOCAL void mti_heal_mark_lost(mti_heal *h, size_t shard, int why);
MT_LOCAL int mti_heal_lost(mti_heal *h, size_t shard);

/* What rebuild_span rebuilt, for the statistics. */
enum { MTI_HEAL_CHUNK, MTI_HEAL_INDEX };

/* Rebuild bytes [off, off + len) of shard `shard` into out from the rest of
 * its group, by ranged reads of the same span, `check` deciding whether the
 * result is right.  err says why it could not (no record, a record that
 * does not cover the shard, too many members lost). */
MT_LOCAL int mti_heal_span(mti_heal *h, size_t shard, uint64_t off, size_t len, int what,
			   mti_rebuild_check check, void *check_ud, void *out, mt_error *err);

/* Healed so far: chunks, chunk indexes, and the bytes read to rebuild them. */
MT_LOCAL void mti_heal_counts(mti_heal *h, uint64_t *chunks, uint64_t *indexes,
			      uint64_t *bytes_read);

#endif
