/* dataset.h — internal glue between dataset listing, the writer and the reader: manifests by name, version order. */
#ifndef MT_DATASET_H
#define MT_DATASET_H

#include "chunk-cache.h"
#include "meta-cache.h"
#include "format.h"
#include "lock.h"
#include "store.h"

/* Load and decode dataset@version's manifest; version NULL, "" or
 * "latest" picks the newest.  *json (when not NULL) gets the text. */
MT_LOCAL int mti_dataset_load(mt_store *s, const char *dataset, const char *version,
			     mt_manifest **m, char **json, mt_error *err);

/* mti_dataset_load, then with with_meta m's description and tags replaced
 * with those of its version's metadata object, when there is one
 * (doc/FORMAT.md, "Curated metadata").  The manifest and that object are
 * requested at once. */
MT_LOCAL int mti_dataset_open(mt_store *s, const char *dataset, const char *version,
			     int with_meta, mt_manifest **m, char **json, mt_error *err);
/* Bits of mti_dataset_open's with_meta: MTI_OPEN_META reads the metadata
 * object; MTI_OPEN_LAZY leaves a format-2 manifest's fragments unloaded
 * (the caller loads those it needs with mti_manifest_load_frags). */
#define MTI_OPEN_META 1
#define MTI_OPEN_LAZY 2

/* The latest version on a guess (latest.c): on a far store, the manifest
 * cache c kept as dataset's latest into *m and *json (the caller's), and
 * the listing that confirms it started in the background as *out: 0.  1:
 * no guess (not far, none kept, or one that does not decode), nothing
 * started.  The guess must not reach a caller before mti_latest_wait
 * confirms it; c must outlive *out. */
typedef struct mti_latest mti_latest;
MT_LOCAL int mti_latest_guess(mt_store *s, mti_meta_cache *c, const char *dataset,
			     mt_manifest **m, char **json, mti_latest **out);
/* Wait for the listing and free l: 0 when the guess is the latest (the
 * listing's newest manifest has its very bytes); 1 when another manifest
 * is: that one into *m and *json (the caller's), and kept as the guess of
 * the next open; or the open's error. */
MT_LOCAL int mti_latest_wait(mti_latest *l, mt_manifest **m, char **json, mt_error *err);
/* Keep json, the manifest an open of dataset's latest in s found, as the
 * next open's guess; silent. */
MT_LOCAL void mti_latest_keep(mt_store *s, mti_meta_cache *c, const char *dataset,
			     const char *json);

/* After dataset's newest version was created with manifest text json: keep
 * a copy as the dataset's head (doc/FORMAT.md, "Head"), on a store far away
 * and for a manifest of at most 1 MiB.  Never fails: the head is a hint. */
MT_LOCAL void mti_dataset_put_head(mt_store *s, const char *dataset, const char *json,
				  size_t len);

/* The next free automatic version name ("v<N+1>" for the largest vN of
 * every manifest and tombstone: a removed version's name is not reused). */
MT_LOCAL int mti_dataset_next_version(mt_store *s, const char *dataset, char **out,
				     mt_error *err);

/* Mark the version w writes as a salvage of `from` that lost these rows
 * of it ({first, count} each), recorded in its manifest. */
/* Add a staged part's shards and rows after what the writer holds (it must
 * have nothing of its own buffered): pinned against gc, each checked to be
 * there at its recorded size. */
MT_LOCAL int mti_writer_adopt(mt_writer *w, const mt_manifest *part, mt_error *err);
/* Make w a compaction of `base` (taken: freed with the writer): at commit,
 * what later versions appended to base follows w's own rows, and the
 * parent is the latest then (see mt_compact).  MT_ESTATE for an append or
 * a staged part. */
MT_LOCAL int mti_writer_set_compact(mt_writer *w, mt_manifest *base);
/* Rows appended and not yet sealed into a shard. */
MT_LOCAL uint64_t mti_writer_buffered(mt_writer *w);
/* Add an existing shard of this dataset (of a version the writer's parent
 * pins) after what the writer holds, with its uncompressed bytes; only
 * when no rows are buffered (MT_ESTATE). */
MT_LOCAL int mti_writer_reuse(mt_writer *w, const mt_mshard *sh, uint64_t raw, mt_error *err);
/* After a commit: shards and rows of the version, and the rows carried
 * over from versions after a compaction's base. */
MT_LOCAL void mti_writer_counts(const mt_writer *w, size_t *nshards, uint64_t *rows,
			       uint64_t *tail_rows);
MT_LOCAL int mti_writer_set_salvage(mt_writer *w, const char *from, const uint64_t (*lost)[2],
				   size_t n, mt_error *err);

/* upgrade.c: write the fragments of m (cut by mti_manifest_cut), before
 * its root: every key the root will name pinned under l (one pin object),
 * then, once no gc that may have missed the pins runs, the fresh ones put
 * and made durable.  The others are fragments of the version built on.
 * m->shards[i] is the version's shard base + i: the fresh fragments lie
 * after the first base shards (an append names its parent's unread). */
MT_LOCAL int mti_put_fragments(mt_store *s, mt_dlock *l, const char *dataset, mt_manifest *m,
			       size_t base, mt_error *err);
/* upgrade.c: dataset@version (a version's own name) rewritten in format 2
 * under a writer's lock, as mt_store_upgrade says; *changed 0 when it was
 * format 2 already.  Its protection record is the caller's to carry. */
MT_LOCAL int mti_dataset_upgrade(mt_store *s, const char *dataset, const char *version,
				 int *changed, mt_error *err);

/* Threads each read of r fetches and decodes chunks on (default: CPUs). */
MT_LOCAL void mti_reader_set_threads(mt_reader *r, int threads);
/* The chunk cache r's reads use (the caller's, outliving r; NULL: none)
 * instead of the process's; with keep_all every chunk r decodes goes into
 * it, not only those a read uses in part. */
MT_LOCAL void mti_reader_set_cache(mt_reader *r, mti_ccache *cache, int keep_all);
/* Keep and take fragments and chunk indexes in c (the reader owns it from
 * now on; NULL: none), checked as if read from the store. */
MT_LOCAL void mti_reader_set_meta_cache(mt_reader *r, mti_meta_cache *c);
/* The counts of the chunk cache r's reads use. */
MT_LOCAL void mti_reader_cache_stats(const mt_reader *r, mt_cache_stats *out);
/* mt_reader_open; with with_meta 0 the version's metadata object is not
 * read (the info's description and tags are as committed): for readers of
 * the data alone, one request less. */
MT_LOCAL int mti_reader_open_as(mt_store *s, const char *dataset, const char *version,
			       int with_meta, mt_reader **out, mt_error *err);
/* A lazy reader of manifest m with text json, both taken (freed on
 * failure too): a version the caller already has (mti_latest_guess). */
MT_LOCAL int mti_reader_open_manifest(mt_store *s, mt_manifest *m, char *json, mt_reader **out,
				     mt_error *err);
/* The manifest text r reads (r's). */
MT_LOCAL const char *mti_reader_json(const mt_reader *r);
/* Rows [a, b) of fixed-size attribute attr, each chunk's rows handed to fn
 * as soon as they are decoded (on the reader's threads, in no order): n
 * rows, the first the read's row number `at` (0 is row a).  The rows go
 * wherever fn puts them, so a caller that scatters them pays no copy on
 * top of its own. */
typedef void (*mti_rows_fn)(void *ud, uint64_t at, uint64_t n, const void *rows);
MT_LOCAL int mti_reader_read_each(mt_reader *r, size_t attr, uint64_t a, uint64_t b,
				  mti_rows_fn fn, void *ud, mt_error *err);
/* Read the chunk indexes of shards[0..n) not read yet, all at once, and
 * keep them: a caller about to read those shards pays one round trip for
 * all of them, ahead of time.  A failure leaves that index unread; the
 * read that needs it tries again and reports it.  whole (may be NULL):
 * whole[i] says the caller will read all of shards[i]; far away such a
 * shard's object is read whole at once with its index (within the 32 MiB
 * a reader holds of run buffers), so its chunks cost no second round trip, and held until
 * mti_reader_drop_whole. */
MT_LOCAL void mti_reader_load_indexes(mt_reader *r, const size_t *shards, const char *whole,
				     size_t n);
/* Far away, the objects of shards[0..n) with whole[i] set read whole now
 * (their indexes loaded or not, read whole before or not), each when it
 * fits the 32 MiB beside the run buffers in flight, and held until
 * mti_reader_drop_whole: a caller that knows which shards it reads next
 * and has nothing to decode meanwhile pays their round trips then. */
MT_LOCAL void mti_reader_fetch_whole(mt_reader *r, const size_t *shards, const char *whole,
				    size_t n);
/* Free the whole objects of shards[0..n) (once the reads slicing them are done). */
MT_LOCAL void mti_reader_drop_whole(mt_reader *r, const size_t *shards, size_t n);
/* Whether the reader's store is far away (each request costs a round trip). */
MT_LOCAL int mti_reader_far(const mt_reader *r);
/* fn(ud, first_row, rows, err) for each shard of r's version in order,
 * stopping at the first nonzero return, which is returned.  A format-2
 * fragment whose layout the root gives is not read (a lazy reader loads
 * it when its rows are read, and checks it against that layout then);
 * one without is loaded first, a failure naming it. */
typedef int (*mti_shard_rows_fn)(void *ud, uint64_t first_row, uint64_t rows, mt_error *err);
MT_LOCAL int mti_reader_each_shard(mt_reader *r, mti_shard_rows_fn fn, void *ud, mt_error *err);
/* The shard holding row `row`. */
MT_LOCAL size_t mti_reader_shard_of(const mt_reader *r, uint64_t row);

/* Current UTC time as RFC 3339 with milliseconds (malloc'ed). */
MT_LOCAL char *mti_now_rfc3339(void);
/* The creation time of a version made from one created at `prev`: now, or
 * one millisecond after prev when the clock has not passed it. */
MT_LOCAL char *mti_created_after(const char *prev);

/* 0 when every shard of dataset@version passes mt_reader_verify's checks;
 * MT_ECORRUPT naming the first that does not, and saying that `what`
 * (the operation) refuses it; another code when the check could not run. */
MT_LOCAL int mti_version_sound(mt_store *s, const char *dataset, const char *version,
			       const char *what, mt_error *err);
/* reader-verify.c: 1 when a verify through m found key's object sound, so
 * a check of its sha256 need not read it again. */
MT_LOCAL int mti_verify_memo_sound(mt_verify_memo *m, const char *key);

/* MT_EEXIST (err says so) when dataset@version was removed: its tombstone
 * keeps the name from being used again.  0 when it was not. */
MT_LOCAL int mti_dataset_removed(mt_store *s, const char *dataset, const char *version,
				mt_error *err);

/* The order marker of dataset@version created at `created` (doc/FORMAT.md,
 * "Order markers"), written before the manifest's create; unmark removes
 * it again, as far as it can, when the create did not land. */
MT_LOCAL int mti_dataset_mark(mt_store *s, const char *dataset, const char *version,
			     const char *created, mt_error *err);
MT_LOCAL void mti_dataset_unmark(mt_store *s, const char *dataset, const char *version,
				const char *created);

/* ---- attachments (attach.c; doc/FORMAT.md, "Attachments") ---------------
 * The files a writer attaches itself: entries (name, sha256, bytes) in
 * name order, with each file's bytes (owned) in data[]; and the names of
 * the parent's attachments it removes (drop[], owned). */
typedef struct mti_attach_set {
	mt_mattach *a;
	void **data;
	size_t n;
	char **drop;
	size_t ndrop;
} mti_attach_set;
/* Add a copy of len bytes as `name` (checked against the name rules and
 * the caps, naming it and the dataset in errors); a name already in s is
 * replaced. */
MT_LOCAL int mti_attach_add(mti_attach_set *s, const char *dataset, const char *name,
			    const void *data, size_t len, mt_error *err);
MT_LOCAL void mti_attach_free(mti_attach_set *s);
/* Remove `name` from what the version being written holds: one s attached,
 * else one of base (the parent's, sorted), remembered in s->drop.
 * MT_ENOTFOUND naming it, the version (dataset@version) and what it holds,
 * when neither has it. */
MT_LOCAL int mti_attach_drop(mti_attach_set *s, const mt_mattach *base, size_t nbase,
			     const char *dataset, const char *version, const char *name,
			     mt_error *err);
/* base's entries (sorted) less own's drop[], with own's over them, in name order, into *out
 * (malloc'ed; NULL when there are none).  MT_EINVAL over the count cap. */
MT_LOCAL int mti_attach_merge(const mt_mattach *base, size_t nbase, const mti_attach_set *own,
			      const char *dataset, mt_mattach **out, size_t *n, mt_error *err);

#endif
