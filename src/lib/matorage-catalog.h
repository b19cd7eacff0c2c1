/* matorage-catalog.h — the public API of libmatorage-catalog: a local SQLite index of what matorage's stores hold, for browsing and search. */
#ifndef MATORAGE_CATALOG_H
#define MATORAGE_CATALOG_H

#include "matorage.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MT_BUILDING_CATALOG)
#define MT_CATALOG_API __attribute__((visibility("default")))
#else
#define MT_CATALOG_API
#endif

/*
 * A library above libmatorage (it uses only matorage.h): training code
 * links libmatorage alone and never SQLite; the command and the browser
 * link this one too (pkg-config matorage-catalog).
 *
 * The catalog is a cache of the stores, never the source of truth:
 * deleting its file loses nothing, and mt_catalog_sync rebuilds it.  It
 * knows remotes (a name and a URL: "local" is the default store), their
 * buckets, datasets, versions with their lineage, protection, attributes,
 * tags, shards and attached files, models with their checkpoints and tensors, the last verification and health of each shard, every
 * check (verify, repair, protect) of each version, the statistics of
 * attributes (mt_stats), and the jobs run on them.
 *
 * Threading: one handle may be used from several threads; calls are
 * serialised inside, and a sync holds the handle only while it writes, not
 * while it reads the store.  A list callback must not call the catalog.
 */
typedef struct mt_catalog mt_catalog;

/* The schema version this library writes; older catalogs are upgraded in
 * place when opened. */
#define MT_CATALOG_SCHEMA 13

/* Open or create the catalog at `path`; NULL: $MATORAGE_CATALOG, else
 * $XDG_DATA_HOME/matorage/catalog.db (~/.local/share/..., mt_user_path).  A catalog
 * written by a newer matorage is MT_EFORMAT (delete it; sync rebuilds it). */
MT_CATALOG_API int mt_catalog_open(const char *path, mt_catalog **out, mt_error *err);
/* The same for a reader: a catalog that does not exist yet is MT_ENOTFOUND,
 * and nothing (file or directory) is created. */
MT_CATALOG_API int mt_catalog_open_existing(const char *path, mt_catalog **out, mt_error *err);
MT_CATALOG_API void mt_catalog_close(mt_catalog *c);
/* Its file (borrowed). */
MT_CATALOG_API const char *mt_catalog_path(const mt_catalog *c);
/* The catalog is a cache, so a file SQLite finds malformed (truncated,
 * overwritten) is not an error: opening moves it aside as
 * <path>.corrupt-<UTC time> (the newest two of those are kept) and makes a
 * new, empty catalog, which a sync fills.  The file moved aside when c was
 * opened (borrowed), or NULL. */
MT_CATALOG_API const char *mt_catalog_moved_aside(const mt_catalog *c);
/* After a call on *c failed: when SQLite found the file malformed only
 * then, move it aside and open a new, empty catalog in *c's place, as
 * opening does: 1 (mt_catalog_moved_aside names the file), 0 when the
 * catalog was not found malformed, or an error (*c is then NULL). */
MT_CATALOG_API int mt_catalog_heal(mt_catalog **c, mt_error *err);

typedef struct mt_catalog_sync_stats {
	uint64_t datasets;         /* datasets seen */
	uint64_t versions;         /* versions seen */
	uint64_t versions_read;    /* manifests read: new or changed since the last sync */
	uint64_t versions_removed; /* gone from the store, dropped from the catalog */
	uint64_t models;           /* models seen (a sync of every dataset only) */
	uint64_t checkpoints;      /* checkpoints seen */
	uint64_t checkpoints_read; /* checkpoint manifests read: new or changed */
} mt_catalog_sync_stats;

/* mt_catalog_sync flags */
#define MT_CATALOG_FULL 1   /* read every manifest, changed or not, and all its fragments */
#define MT_CATALOG_MODELS 2 /* with dataset NULL: the models only, no dataset listed or dropped */

/* Bring what the catalog knows of store s, listed as remote `remote`, up to
 * date: of `dataset` only, or (NULL) of every dataset and every model,
 * dropping those the store no longer has, and the remote's buckets at other URLs (where it
 * pointed before).  Only manifests and metadata objects that are new or
 * whose listed size or time changed are read; of a format-2 version, not
 * the fragments it shares with its parent as the catalog holds it (read
 * from the parent's manifest as listed): those shards' rows are the
 * parent's.  progress counts datasets.
 * A failure marks the remote offline with its message; a success marks it
 * online.  st may be NULL. */
MT_CATALOG_API int mt_catalog_sync(mt_catalog *c, const char *remote, mt_store *s,
				   const char *dataset, int flags, mt_progress_fn progress,
				   void *ud, mt_catalog_sync_stats *st, mt_error *err);
/* After a command wrote version dataset@version to store s (remote
 * `remote`): read that version alone and record it, with its dataset's
 * summary (count, latest), without listing or reading the dataset's other
 * versions, so the cost does not grow with them.  A version the store does
 * not list is left to mt_catalog_sync of the dataset, which this then runs.
 * st may be NULL; st->versions_read counts the manifests read. */
MT_CATALOG_API int mt_catalog_sync_version(mt_catalog *c, const char *remote, mt_store *s,
					   const char *dataset, const char *version,
					   mt_catalog_sync_stats *st, mt_error *err);
/* Record that remote (at url) could not be reached. */
MT_CATALOG_API int mt_catalog_set_offline(mt_catalog *c, const char *remote, const char *url,
					  const char *why, mt_error *err);

/* Drop remote `remote` and all the catalog knows of its buckets (a remote
 * no longer configured, or a URL that is another remote's store); nothing
 * in any store changes.  No such remote is not an error. */
MT_CATALOG_API int mt_catalog_forget(mt_catalog *c, const char *remote, mt_error *err);

/* What mt_catalog_list lists.  Each level's rows have an id that is the
 * parent of the level below: remotes > buckets > datasets > versions >
 * shards and attributes; buckets > models > checkpoints > tensors.  MT_CAT_VERSION and MT_CAT_SHARD list the fields
 * of one version or shard (id: a version's or shard's) as name/value
 * rows (a version's: one "source" row per version it was built from, one
 * "attachment" row, "NAME  BYTES bytes", per attached file); MT_CAT_SEARCH
 * lists versions matching a full-text query.  A row's
 * columns are values as text, in the order given beside each level: counts
 * and byte sizes in decimal, flags 1 or 0, a ratio as a decimal number, and
 * NULL where there is no value (no parent, author, description, tags or
 * recipe; a ratio of nothing stored; a shard or version never verified).
 * How they read on screen (titles, placeholders, units) is the caller's. */
enum mt_catalog_level {
	MT_CAT_REMOTES,  /* name, url, online (1|0), datasets, synced, error */
	MT_CAT_BUCKETS,  /* url, datasets, versions, stored bytes, health (as a dataset's,
			  * over every version of the bucket) */
	MT_CAT_DATASETS, /* name, versions, latest, rows, stored bytes, tags, description,
			  * health: the worst of its versions' last checks
			  * ("unrepairable" counting a lost manifest, "damaged",
			  * "repairable", "unverified" when one was never
			  * checked, else "sound"; NULL without versions) */
	MT_CAT_VERSIONS, /* name, created, rows, shards, stored bytes, parent, tags, description,
			  * protection ("K+M"), parity overhead (ratio), health (the
			  * state of its last check: mt_catalog_health_name), shard
			  * references shared with the parent, one for one (NULL: no
			  * parent, or a removed one whose share is not known), the
			  * parent removed (1|0; NULL: no parent) */
	MT_CAT_SHARDS,   /* index, sha256, first row, rows, bytes, verified, health (a
			  * state's name), what repaired it or would, or what is wrong */
	MT_CAT_ATTRS,    /* name, dtype, shape, ragged (1|0) */
	MT_CAT_VERSION,  /* field, value */
	MT_CAT_SHARD,    /* field, value */
	MT_CAT_JOBS,     /* id, kind, target, started, finished, result */
	MT_CAT_JOB,      /* item, result */
	MT_CAT_SEARCH,   /* remote, dataset, version, tags, match */
	MT_CAT_MODELS,   /* name, checkpoints, latest, step, stored bytes, tags, description,
			  * health (the worst of its checkpoints', as a dataset's:
			  * "unverified" when an object was never checked) */
	MT_CAT_CHECKPOINTS, /* name, created, step, tensors, bytes (raw), stored bytes, bytes
			  * new (stored bytes of tensors its parent does not hold; NULL:
			  * the parent is not in the catalog), parent, metrics
			  * ("loss=0.41 acc=0.9"), tags, description, author, health
			  * (the worst recorded of its tensor objects, shared with
			  * every checkpoint naming them, and of its parity, record and
			  * manifest: mt_catalog_health_name's; "unverified" when some
			  * tensor object never was; NULL when none was) */
	MT_CAT_TENSORS,  /* key, dtype, shape, bytes (raw), stored bytes, sha256, shared with
			  * the parent (1|0; 0 without a parent; NULL: the parent is
			  * not in the catalog) */
	MT_CAT_SEARCH_MODELS, /* remote, model, checkpoint, tags, match: checkpoints matching
			  * the query in model name, version, description, tags, tensor keys */
	MT_CAT_FRAGMENTS, /* a format-2 version's fragments (none for format 1): index, first
			  * row, rows, first shard, shards, bytes, sha256, health ("sound",
			  * "missing", "damaged" as a sync that read it found, or a
			  * check's state; NULL: never checked), its note (what is wrong,
			  * or what rebuilt it or would) */
	MT_CAT_NLEVELS
};

typedef struct mt_catalog_row {
	int64_t id;
	size_t ncols;
	const char *const *cols; /* borrowed, valid during the callback; NULL: no value */
} mt_catalog_row;
/* Return nonzero to stop the listing (that value is returned). */
typedef int (*mt_catalog_fn)(void *ud, const mt_catalog_row *row);

/* Call fn for each row of `level` under `parent` (ignored for remotes and
 * jobs), in display order.  `filter` (NULL: none) keeps the rows whose
 * name, description or tags contain it, ignoring ASCII case; for
 * MT_CAT_SEARCH it is the query: words, each matching names, descriptions,
 * tags and attribute names by prefix. */
MT_CATALOG_API int mt_catalog_list(mt_catalog *c, int level, int64_t parent, const char *filter,
				   mt_catalog_fn fn, void *ud, mt_error *err);

/* Where a row of a level lives, to open it in its store. */
typedef struct mt_catalog_ref {
	char *remote, *url; /* always set */
	char *dataset;      /* datasets and below, else NULL */
	char *version;      /* versions and below, else NULL */
	char *sha256;       /* shards, else NULL */
	int64_t shard;      /* a shard's index in its version, else -1 */
	char *model;        /* models and checkpoints (dataset NULL; version: the
			     * checkpoint's), else NULL */
} mt_catalog_ref;
/* MT_ENOTFOUND when there is no such row (any more). */
MT_CATALOG_API int mt_catalog_locate(mt_catalog *c, int level, int64_t id, mt_catalog_ref *out,
				     mt_error *err);
MT_CATALOG_API void mt_catalog_ref_free(mt_catalog_ref *r);

/* Jobs (verify, copy, gc, ...) and their per-item results, for history. */
MT_CATALOG_API int mt_catalog_job_begin(mt_catalog *c, const char *kind, const char *target,
					int64_t *id, mt_error *err);
MT_CATALOG_API int mt_catalog_job_result(mt_catalog *c, int64_t job, const char *item, int code,
					 const char *message, mt_error *err);
MT_CATALOG_API int mt_catalog_job_end(mt_catalog *c, int64_t job, int code, const char *message,
				      mt_error *err);
/* Record a verification of shard sha256 of dataset in bucket url: code 0
 * (sound) or the error and its message.  Every version listing it sees it,
 * and its health becomes sound or damaged. */
MT_CATALOG_API int mt_catalog_shard_verified(mt_catalog *c, const char *url, const char *dataset,
					     const char *sha256, int code, const char *message,
					     mt_error *err);

/* What a check found of a version or an object. */
enum mt_catalog_health {
	MT_HEALTH_SOUND,        /* every object holds its bytes */
	MT_HEALTH_REPAIRABLE,   /* damaged, and a repair can rebuild all of it */
	MT_HEALTH_UNREPAIRABLE, /* damaged beyond repair: some of it is lost */
	MT_HEALTH_DAMAGED,      /* damaged; whether it can be rebuilt is not known */
	MT_HEALTH_REBUILT,      /* an object a repair rebuilt: sound again */
	MT_HEALTH_NSTATES
};
/* The state's name as the listings give it: "sound", "repairable",
 * "unrepairable", "damaged", "rebuilt"; NULL for no state. */
MT_CATALOG_API const char *mt_catalog_health_name(int state);

/* One check of a version: a verify, a repair or a protect. */
typedef struct mt_catalog_check {
	size_t size;         /* set by mt_catalog_check_init */
	const char *kind;    /* "verify", "repair", "protect" */
	int state;           /* MT_HEALTH_*: the version's state after the check */
	const char *sources; /* what rebuilt the damage, or would (repairable); NULL: none */
	const char *message; /* what is lost, or what stopped the check; NULL: none */
	uint64_t objects;    /* objects checked */
	uint64_t damaged, rebuilt, unrepairable;
	uint64_t bytes_read;
} mt_catalog_check;
MT_CATALOG_API void mt_catalog_check_init_size(mt_catalog_check *k, size_t size);
#define mt_catalog_check_init(k) mt_catalog_check_init_size((k), sizeof(mt_catalog_check))

/* Record check k of dataset@version in bucket url, stamped with the time.
 * Every check is kept; the listings show the last one.  MT_ENOTFOUND when
 * the catalog does not list the version (a sync adds it). */
MT_CATALOG_API int mt_catalog_version_checked(mt_catalog *c, const char *url,
					      const char *dataset, const char *version,
					      const mt_catalog_check *k, mt_error *err);
/* Record the health of shard sha256 of dataset in bucket url (state
 * MT_HEALTH_*), with a note: what rebuilt it or would, or what is wrong
 * (NULL: none).  Every version listing the shard sees it; a rebuilt one
 * (read back against its sha256) reads as verified sound too. */
MT_CATALOG_API int mt_catalog_shard_health(mt_catalog *c, const char *url, const char *dataset,
					   const char *sha256, int state, const char *note,
					   mt_error *err);
/* Many shards' checks of dataset in bucket url at once, in order, as
 * mt_catalog_shard_verified (verified: code, note as its message) or
 * mt_catalog_shard_health (state, note) record them: one transaction. */
typedef struct mt_catalog_shard_check {
	const char *sha256;
	int verified;     /* 1: a verification (code), 0: a health state (state) */
	int code, state;
	const char *note; /* the verification's message, or the health's note; NULL: none */
} mt_catalog_shard_check;
MT_CATALOG_API int mt_catalog_shards_checked(mt_catalog *c, const char *url, const char *dataset,
					     const mt_catalog_shard_check *checks, size_t n,
					     mt_error *err);

/* The health of fragment objects (of format-2 manifests, doc/FORMAT.md) of
 * dataset in bucket url, in one transaction: every version naming one sees
 * it.  state MT_HEALTH_*; note: what was wrong ("missing", ...) and what
 * rebuilt it or would (NULL: none).  A version checked sound (or rebuilt)
 * as a whole by mt_catalog_version_checked has its other fragments sound. */
typedef struct mt_catalog_fragment_check {
	const char *sha256;
	int state;
	const char *note;
} mt_catalog_fragment_check;
MT_CATALOG_API int mt_catalog_fragments_checked(mt_catalog *c, const char *url,
						const char *dataset,
						const mt_catalog_fragment_check *checks, size_t n,
						mt_error *err);

/* What a check found of one object of a model (its key under
 * models/<name>/: "tensors/<sha256>", "parity/<sha256>",
 * "versions/<v>.json", "protect/<v>.json").  A tensor object is shared by
 * every checkpoint naming it, so its health shows on each of them (and is
 * cleared for all by a repair or a sound check through any); the others
 * belong to `checkpoint`. */
typedef struct mt_catalog_object_check {
	const char *object;
	const char *checkpoint; /* the checkpoint it belongs to; NULL or "": a tensor object */
	int state;              /* MT_HEALTH_* */
	const char *note;       /* what rebuilt it or would, or what is wrong; NULL: none */
} mt_catalog_object_check;
/* Record n checks of objects of model `model` in bucket url (one
 * transaction), stamped with the time; the latest result of an object is
 * its health.  The checkpoint and model lists show the worst of their
 * objects' (MT_CAT_CHECKPOINTS, MT_CAT_MODELS).  MT_ENOTFOUND when the
 * catalog does not list the model (a sync adds it). */
MT_CATALOG_API int mt_catalog_model_checked(mt_catalog *c, const char *url, const char *model,
					    const mt_catalog_object_check *checks, size_t n,
					    mt_error *err);

/* The statistics of attribute attr of dataset@version in bucket url, as
 * mt_stats_to_json wrote them.  Versions never change, so a result stays
 * until its version leaves the catalog.  MT_ENOTFOUND when the catalog does
 * not list the version (a sync adds it). */
MT_CATALOG_API int mt_catalog_stats_put(mt_catalog *c, const char *url, const char *dataset,
					const char *version, const char *attr, const char *json,
					mt_error *err);
/* What mt_catalog_stats_put recorded (*json malloc'ed, free() it) and when
 * (*computed, RFC 3339 UTC, malloc'ed; computed may be NULL); MT_ENOTFOUND
 * when nothing was. */
MT_CATALOG_API int mt_catalog_stats_get(mt_catalog *c, const char *url, const char *dataset,
					const char *version, const char *attr, char **json,
					char **computed, mt_error *err);

#ifdef __cplusplus
}
#endif
#endif
