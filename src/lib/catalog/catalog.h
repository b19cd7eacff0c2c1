/* catalog.h — internal entry points of the catalog library: for tests (opening at an older schema, upgrading) and for its files (the handle, statements, shared SQL, store listings). */
#ifndef MT_CATALOG_H
#define MT_CATALOG_H

#include <pthread.h>
#include <sqlite3.h>
#include <sys/types.h>

#include "matorage-catalog.h"

#define MT_CATALOG_LOCAL __attribute__((visibility("hidden")))

/* mt_catalog_open, but creating or upgrading only up to schema `schema`
 * (tests build old catalogs this way and then open them normally). */
MT_CATALOG_LOCAL int mti_catalog_open_schema(const char *path, int schema, mt_catalog **out,
					    mt_error *err);
/* Upgrade c to schema `target`, one transaction per step. */
MT_CATALOG_LOCAL int mti_catalog_migrate(mt_catalog *c, int target, mt_error *err);


/* How many of version v's shard references match one reference of its
 * parent's each (a shard listed twice counts twice), NULL when the parent
 * is not in the catalog.  Along a chain (one list) the parent's references
 * are a prefix of v's, so all of them match and none more; else each of v's
 * references to an object matches while its rank among v's references to it
 * is below the parent's count of them (lookups by sha256; the unary + keeps
 * SQLite on the sha256 index). */
#define CAT_NSHARED_LIVE                                                                    \
	"(SELECT CASE WHEN pv.shard_list = v.shard_list AND pv.nshards <= v.nshards THEN"   \
	" pv.nshards ELSE (SELECT count(*) FROM shards s WHERE s.list_id = v.shard_list AND" \
	" s.idx < v.nshards AND (SELECT count(*) FROM shards y WHERE y.sha256 = s.sha256 AND" \
	" +y.list_id = v.shard_list AND +y.idx < s.idx) < (SELECT count(*) FROM shards ps"   \
	" WHERE ps.sha256 = s.sha256 AND +ps.list_id = pv.shard_list AND +ps.idx <"          \
	" pv.nshards)) END FROM versions pv WHERE pv.dataset_id = v.dataset_id AND"          \
	" pv.name = v.parent)"

/* A shard row recorded damaged (p: the table's prefix): the condition of
 * the partial index shards_bad, which a query must repeat to use it. */
#define MTI_CAT_SHARD_BAD(p) p "health IN ('damaged', 'unrepairable', 'repairable')"

/* A fragment row recorded bad (p: the table's prefix): a sync found its
 * object missing or damaged, or a check did; the condition of the partial
 * index fragments_bad. */
#define MTI_CAT_FRAG_BAD(p) p "health IN ('missing', 'damaged', 'unrepairable', 'repairable')"

struct mt_catalog {
	sqlite3 *db;
	char *path;
	pthread_mutex_t lock;
	int corrupt;  /* SQLite said the file is malformed (mt_catalog_heal) */
	char *moved;  /* a damaged file moved aside when this handle opened */
};

/* Statements, as catalog.c runs them (errors name the catalog and `what`);
 * callers hold c->lock. */
/* sql run once; mti_cat_exec_retry tries again while the catalog is busy. */
MT_CATALOG_LOCAL int mti_cat_exec(mt_catalog *c, const char *sql, const char *what, mt_error *err);
MT_CATALOG_LOCAL int mti_cat_exec_retry(mt_catalog *c, const char *sql, const char *what,
					mt_error *err);
/* fn(ud, i) for every i in [0, n) on up to `threads` threads (at most 8, the
 * caller's among them), returning when all are done: reads of the store
 * for a sync, which wait on the network, not the CPU. */
MT_CATALOG_LOCAL void mti_cat_parallel(size_t n, size_t threads, void (*fn)(void *ud, size_t i),
				       void *ud);
MT_CATALOG_LOCAL int mti_cat_sqlerr(mt_catalog *c, mt_error *err, const char *what);
MT_CATALOG_LOCAL int mti_cat_prepare(mt_catalog *c, const char *sql, sqlite3_stmt **st,
				     mt_error *err);
/* Step a statement that returns no rows (or whose rows are not wanted), then reset it. */
MT_CATALOG_LOCAL int mti_cat_step_done(mt_catalog *c, sqlite3_stmt *st, const char *what,
				       mt_error *err);
/* Bind n strings (NULL binds NULL) to ?first, ?first+1, ...; the strings
 * must outlive the statement's next step. */
MT_CATALOG_LOCAL void mti_cat_bind_texts(sqlite3_stmt *st, int first, const char *const *v,
					 int n);
/* A statement whose one parameter is ?1 = id. */
MT_CATALOG_LOCAL int mti_cat_exec_id(mt_catalog *c, const char *sql, int64_t id,
				     const char *what, mt_error *err);
/* A write: BEGIN IMMEDIATE at the top level, else a savepoint; ended by
 * mti_cat_end, which commits when rc is 0 and rolls back otherwise. */
MT_CATALOG_LOCAL int mti_cat_begin(mt_catalog *c, const char *name, int *top, mt_error *err);
MT_CATALOG_LOCAL int mti_cat_end(mt_catalog *c, const char *name, int top, int rc,
				 mt_error *err);
/* The id of the row a query finds by ?1 key and ?2 text; 0 when none. */
MT_CATALOG_LOCAL int mti_cat_lookup(mt_catalog *c, const char *sql, int64_t key,
				    const char *text, int64_t *id, mt_error *err);

/* The current time, UTC, as text (2006-01-02T15:04:05Z). */
MT_CATALOG_LOCAL void mti_cat_now(char *buf, size_t cap);

/* How a sync left a remote. */
enum { REMOTE_KEEP = -1, REMOTE_OFFLINE, REMOTE_SYNCED, REMOTE_TROUBLED };

/* The bucket row of (remote, url), created with its remote when new; the
 * remote's state changes unless it is REMOTE_KEEP (catalog.c). */
MT_CATALOG_LOCAL int mti_cat_bucket(mt_catalog *c, const char *remote, const char *url, int state,
				    const char *why, int64_t *bucket, mt_error *err);

/* Move the damaged catalog file at path aside, when it is still the file
 * `ino` (catalog-schema.c); *moved: its new name, NULL when another process
 * moved it first. */
MT_CATALOG_LOCAL int mti_cat_move_aside(const char *path, ino_t ino, char **moved, mt_error *err);

/* SQL that both the schema's migrations and the sync run. */
/* The dataset summary the lists show, kept in the dataset's row so that
 * listing 10k datasets reads 10k rows, not their versions. */
#define SUMMARY_UPDATE                                                                     \
	"UPDATE datasets SET "                                                             \
	"nversions = (SELECT count(*) FROM versions v WHERE v.dataset_id = datasets.id), " \
	"(latest, rows, stored_bytes, description, latest_id) = (SELECT v.name, v.rows, "  \
	" v.stored_bytes, v.description, v.id FROM versions v WHERE v.dataset_id = "       \
	" datasets.id ORDER BY v.created DESC, v.id DESC LIMIT 1), "                       \
	"tags = coalesce((SELECT group_concat(t.tag, ' ') FROM tags t WHERE t.version_id = " \
	" (SELECT v.id FROM versions v WHERE v.dataset_id = datasets.id ORDER BY v.created "  \
	" DESC, v.id DESC LIMIT 1)), '')"

/* One version's row of the full-text index (rowid = version id). */
#define SEARCH_INSERT                                                                      \
	"INSERT INTO search(rowid, dataset, version, description, tags, attrs) "          \
	"SELECT v.id, d.name, v.name, v.description, "                                     \
	" coalesce((SELECT group_concat(tag, ' ') FROM tags WHERE version_id = v.id), ''), " \
	" coalesce((SELECT group_concat(name, ' ') FROM attrs WHERE version_id = v.id), '') " \
	"FROM versions v JOIN datasets d ON d.id = v.dataset_id"

/* A listed manifest or metadata object. */
struct listed {
	char *name; /* the version: the key after the prefix, less ".json" */
	uint64_t size;
	int64_t mtime;
};

/* The .json objects straight under a prefix (set prefix_len first). */
struct listing {
	struct listed *v;
	size_t n, cap;
	size_t prefix_len;
	/* When set, the names of tombstones (<name>.removed) listed go there. */
	struct listing *removed;
};
/* An mt_store_list callback collecting into a struct listing. */
MT_CATALOG_LOCAL int mti_listing_add(void *ud, const mt_object_info *o);
MT_CATALOG_LOCAL void mti_listing_free(struct listing *l);
/* Into name order, which mti_listing_find needs. */
MT_CATALOG_LOCAL void mti_listing_sort(struct listing *l);
MT_CATALOG_LOCAL const struct listed *mti_listing_find(const struct listing *l, const char *name);

/* Bring the models of bucket (store s) up to date (catalog-models.c):
 * checkpoints whose manifest is new or changed (or all: MT_CATALOG_FULL)
 * are read, those gone and models gone are dropped.  The store is read
 * without c->lock; writes take it.  progress (may be NULL) is called as
 * (ud, done, done) before each model, and a nonzero return cancels. */
MT_CATALOG_LOCAL int mti_catalog_sync_models(mt_catalog *c, int64_t bucket, mt_store *s,
					     int flags, mt_progress_fn progress, void *ud,
					     uint64_t done, mt_catalog_sync_stats *st,
					     mt_error *err);

#endif
