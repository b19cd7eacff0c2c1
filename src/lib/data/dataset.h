/* dataset.h — internal glue between dataset listing, the writer and the reader: manifests by name, version order. */
#ifndef MT_DATASET_H
#define MT_DATASET_H

#include "format.h"
#include "store.h"

/* Load and decode dataset@version's manifest; version NULL, "" or
 * "latest" picks the newest.  *json (when not NULL) gets the text. */
MT_LOCAL int mti_dataset_load(mt_store *s, const char *dataset, const char *version,
			     mt_manifest **m, char **json, mt_error *err);

/* Replace m's description and tags with those of its version's metadata
 * object, when there is one (doc/FORMAT.md, "Curated metadata"). */
MT_LOCAL int mti_dataset_load_meta(mt_store *s, mt_manifest *m, mt_error *err);

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
MT_LOCAL int mti_writer_set_salvage(mt_writer *w, const char *from, const uint64_t (*lost)[2],
				   size_t n, mt_error *err);

/* Threads each read of r fetches and decodes chunks on (default: CPUs). */
MT_LOCAL void mti_reader_set_threads(mt_reader *r, int threads);

/* Current UTC time as RFC 3339 with milliseconds (malloc'ed). */
MT_LOCAL char *mti_now_rfc3339(void);
/* The creation time of a version made from one created at `prev`: now, or
 * one millisecond after prev when the clock has not passed it. */
MT_LOCAL char *mti_created_after(const char *prev);

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

#endif
