/* spool.h — a stream's write-ahead spool in a local directory (spool.c). */
#ifndef MT_SPOOL_H
#define MT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* `log` holds batches of rows (each numbered, checksummed and fdatasync'ed
 * before its rows count as received), `state` the rows a version already
 * holds (and that version's name), `lock` keeps a second stream out.  layout
 * names the attributes (a spool's rows only make sense with the same ones);
 * row_bytes[i] is attribute i's row size, or its item size when ragged[i]
 * (ragged may be NULL: none is). */
struct mti_spool;
MT_LOCAL int mti_spool_open(const char *dir, const char *dataset, const char *layout,
			    size_t nattrs, const size_t *row_bytes, const int *ragged,
			    struct mti_spool **out, mt_error *err);
MT_LOCAL void mti_spool_close(struct mti_spool *sp);
/* Its id (32 hex digits), the committed rows and version the state records,
 * and the number of the next row to spool. */
MT_LOCAL const char *mti_spool_id(const struct mti_spool *sp);
MT_LOCAL const char *mti_spool_version(const struct mti_spool *sp);
MT_LOCAL uint64_t mti_spool_committed(const struct mti_spool *sp);
MT_LOCAL uint64_t mti_spool_end(const struct mti_spool *sp);
/* Hand every spooled row from number `committed` on to fn, in order, batch by
 * batch (cols[i]: attribute i's rows; a ragged one's items, with lens[i] its
 * rows' lengths, NULL for a fixed one); once, right after open.  fn's error
 * ends the replay. */
typedef int (*mti_spool_fn)(void *ud, uint64_t rows, const uint8_t *const *cols,
			    const uint64_t *const *lens, mt_error *err);
MT_LOCAL int mti_spool_replay(struct mti_spool *sp, uint64_t committed, mti_spool_fn fn,
			      void *ud, mt_error *err);
/* Spool rows (durable when it returns 0); lens[i] as for replay (lens may be
 * NULL when no attribute is ragged). */
MT_LOCAL int mti_spool_append(struct mti_spool *sp, uint64_t rows, const uint8_t *const *cols,
			      const uint64_t *const *lens, mt_error *err);
/* Record that the rows before number `committed` are in `version`. */
MT_LOCAL int mti_spool_commit(struct mti_spool *sp, uint64_t committed, const char *version,
			      mt_error *err);

#endif
