/* catalog-schema.c — the catalog's schema: its migrations, one transaction per step, and a damaged catalog file moved aside so a new one can be made. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"

/* ---- a damaged catalog is moved aside -------------------------------------- */

/* Files moved aside kept beside the catalog, the newest: enough to look at
 * what went wrong, never a pile of them. */
#define CAT_ASIDE_KEEP 2
#define CAT_ASIDE_MAX 64

static int cat_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Remove the oldest <path>.corrupt-* files but CAT_ASIDE_KEEP - 1, before
 * one more is moved there (their UTC stamps sort by time). */
static void cat_aside_prune(const char *path)
{
	char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (!slash) {
		free(dir);
		return;
	}
	*slash = '\0';
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%s.corrupt-", slash + 1);
	DIR *d = opendir(*dir ? dir : "/");
	char *names[CAT_ASIDE_MAX];
	size_t n = 0;
	for (struct dirent *e; d && n < CAT_ASIDE_MAX && (e = readdir(d));)
		if (!strncmp(e->d_name, prefix, strlen(prefix)) && (names[n] = strdup(e->d_name)))
			n++;
	if (d)
		closedir(d);
	qsort(names, n, sizeof *names, cat_name_cmp);
	for (size_t i = 0; i < n; i++) {
		char full[4096];
		if (i + CAT_ASIDE_KEEP <= n &&
		    snprintf(full, sizeof full, "%s/%s", dir, names[i]) < (int)sizeof full)
			unlink(full);
		free(names[i]);
	}
	free(dir);
}

/* Move the damaged catalog at path aside (when it is still the file `ino`
 * that was found damaged: another process may have moved it and made a new
 * one meanwhile), with its write-ahead log, which must not be replayed into
 * the new one.  *moved: the new name, NULL when another process moved it. */
int mti_cat_move_aside(const char *path, ino_t ino, char **moved, mt_error *err)
{
	*moved = NULL;
	struct stat sb;
	if (stat(path, &sb) != 0 || sb.st_ino != ino)
		return 0;
	cat_aside_prune(path);
	char stamp[32];
	struct tm tm;
	time_t now = time(NULL);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
	size_t len = strlen(path) + 64;
	char *to = malloc(len);
	if (!to)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	snprintf(to, len, "%s.corrupt-%s-%ld", path, stamp, (long)getpid());
	if (rename(path, to) != 0) {
		int e = errno;
		free(to);
		return e == ENOENT ? 0 : mt_error_set(err, MT_EIO, "catalog %s is damaged and "
						   "cannot be moved aside: %s", path, strerror(e));
	}
	static const char *const sides[] = {"-wal", "-shm"};
	for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
		char side[4096];
		if (snprintf(side, sizeof side, "%s%s", path, sides[i]) < (int)sizeof side)
			unlink(side);
	}
	*moved = to;
	return 0;
}

/* ---- schema ---------------------------------------------------------------- */


/* A step of its own (so steps can be renumbered when two land together):
 * the statistics of an attribute of a version, as mt_stats_to_json wrote
 * them.  Versions are immutable, so a result stays valid while its version
 * lasts, and goes with it. */
#define MIGRATE_ATTR_STATS                                                                 \
	"CREATE TABLE attr_stats(version_id INTEGER NOT NULL REFERENCES versions(id)"      \
	" ON DELETE CASCADE, attr TEXT NOT NULL, json TEXT NOT NULL, computed TEXT NOT NULL," \
	" PRIMARY KEY(version_id, attr));"

/* A step of its own (renumbered freely among others): the versions a
 * version was built from (manifest "sources"; store "" for its own store).
 * Versions indexed before it get theirs when next read. */
#define MIGRATE_SOURCES                                                                    \
	"CREATE TABLE sources(version_id INTEGER NOT NULL REFERENCES versions(id)"         \
	" ON DELETE CASCADE, idx INTEGER NOT NULL, dataset TEXT NOT NULL,"                  \
	" version TEXT NOT NULL, store TEXT NOT NULL, PRIMARY KEY(version_id, idx));"      \
	"UPDATE versions SET manifest_size = -1;"

/* A step of its own: the shards that were ever checked, by content.  A new
 * version's shards take their latest check from any version naming the same
 * object (cat_put_shards); with only shards_sha, that looked at every row of
 * each sha256, and a chain of N appends names its first shard N times: the
 * first sync of 500 appends visited 60 million rows. */
#define MIGRATE_SHARDS_CHECKED                                                             \
	"CREATE INDEX shards_checked ON shards(sha256) WHERE verified_at <> '' OR"          \
	" health_at <> '';"

/* A step of its own: models beside datasets (a bucket's models/), their
 * checkpoints with a summary of each manifest's meta, and every tensor a
 * checkpoint names; a full-text index of checkpoints (rowid = checkpoint id)
 * apart from the versions'. */
#define MIGRATE_MODELS                                                                     \
	"CREATE TABLE models(id INTEGER PRIMARY KEY,"                                      \
	" bucket_id INTEGER NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,"            \
	" name TEXT NOT NULL, ncheckpoints INTEGER NOT NULL DEFAULT 0,"                    \
	" latest TEXT NOT NULL DEFAULT '', step INTEGER, stored_bytes INTEGER NOT NULL"    \
	" DEFAULT 0, tags TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',"  \
	" UNIQUE(bucket_id, name));"                                                       \
	"CREATE TABLE checkpoints(id INTEGER PRIMARY KEY,"                                 \
	" model_id INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,"              \
	" name TEXT NOT NULL, num INTEGER NOT NULL, parent TEXT NOT NULL,"                 \
	" created TEXT NOT NULL, step INTEGER, author TEXT NOT NULL,"                      \
	" description TEXT NOT NULL, tags TEXT NOT NULL, metrics TEXT NOT NULL,"           \
	" ntensors INTEGER NOT NULL, bytes INTEGER NOT NULL, stored_bytes INTEGER NOT NULL," \
	" new_bytes INTEGER, manifest_size INTEGER NOT NULL,"                              \
	" manifest_mtime INTEGER NOT NULL, UNIQUE(model_id, name));"                       \
	"CREATE TABLE ckpt_tensors(checkpoint_id INTEGER NOT NULL REFERENCES"              \
	" checkpoints(id) ON DELETE CASCADE, idx INTEGER NOT NULL, key TEXT NOT NULL,"     \
	" dtype TEXT NOT NULL, shape TEXT NOT NULL, bytes INTEGER NOT NULL,"               \
	" stored INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY(checkpoint_id, idx));" \
	"CREATE INDEX ckpt_tensors_sha ON ckpt_tensors(sha256);"                           \
	"CREATE VIRTUAL TABLE ckpt_search USING fts5(model, version, description, tags,"   \
	" tensors);"                                                                       \
	"CREATE TRIGGER checkpoints_unsearch AFTER DELETE ON checkpoints BEGIN"             \
	" DELETE FROM ckpt_search WHERE rowid = old.id; END;"

/* A step of its own: shard lists shared along append chains.  An appended
 * version's manifest lists its parent's shards and then its own, and one row
 * per (version, shard) made a chain of N appends N(N+1)/2 rows.  Rows now
 * belong to a list (per dataset); a version reads the first nshards rows of
 * its list, and a child whose shards begin with its parent's whole list
 * extends that list instead of copying it (cat_put_shards).  `chain` is a
 * running digest of the list up to each row, so that check costs one row.
 * Each version indexed before keeps a list of its own rows, as they were;
 * its manifest is read again at the next sync, which chains it. */
#define MIGRATE_SHARD_LISTS                                                                \
	"CREATE TABLE shard_lists(id INTEGER PRIMARY KEY,"                                 \
	" dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE);"         \
	"CREATE INDEX shard_lists_dataset ON shard_lists(dataset_id);"                     \
	"CREATE TABLE list_shards(list_id INTEGER NOT NULL REFERENCES shard_lists(id)"     \
	" ON DELETE CASCADE, idx INTEGER NOT NULL, sha256 TEXT NOT NULL,"                  \
	" bytes INTEGER NOT NULL, rows INTEGER NOT NULL, first_row INTEGER NOT NULL,"      \
	" verified TEXT NOT NULL DEFAULT '', verified_at TEXT NOT NULL DEFAULT '',"        \
	" health TEXT NOT NULL DEFAULT '', health_note TEXT NOT NULL DEFAULT '',"          \
	" health_at TEXT NOT NULL DEFAULT '', chain BLOB, PRIMARY KEY(list_id, idx));"     \
	"ALTER TABLE versions ADD COLUMN shard_list INTEGER NOT NULL DEFAULT 0;"           \
	"INSERT INTO shard_lists(id, dataset_id) SELECT id, dataset_id FROM versions;"    \
	"UPDATE versions SET shard_list = id, manifest_size = -1;"                         \
	"INSERT INTO list_shards SELECT version_id, idx, sha256, bytes, rows, first_row,"  \
	" verified, verified_at, health, health_note, health_at, NULL FROM shards;"        \
	"DROP TABLE shards;"                                                               \
	"ALTER TABLE list_shards RENAME TO shards;"                                        \
	"CREATE INDEX shards_sha ON shards(sha256);"                                       \
	"CREATE INDEX shards_checked ON shards(sha256) WHERE verified_at <> '' OR"          \
	" health_at <> '';"                                                                \
	"CREATE INDEX versions_shard_list ON versions(shard_list);"

/* A step of its own: the files attached to each version (name, size,
 * sha256), in name order.  Versions indexed before it get theirs when next
 * read: a manifest time no listing has makes the next sync read it again
 * (manifest_size is left alone: below 0 it means the manifest is lost). */
#define MIGRATE_ATTACHMENTS                                                                \
	"CREATE TABLE attachments(version_id INTEGER NOT NULL REFERENCES versions(id)"     \
	" ON DELETE CASCADE, idx INTEGER NOT NULL, name TEXT NOT NULL,"                     \
	" bytes INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY(version_id, idx));"     \
	"UPDATE versions SET manifest_mtime = -1 WHERE manifest_size >= 0;"

/* A step of its own: the shard rows recorded damaged, by shard list, so a
 * version's health can take its shards' (damage found through another
 * version sharing them) with one probe: the dataset list does it for every
 * version, and a scan of each list cost 1M rows at 10k datasets.  "IF NOT
 * EXISTS": a catalog set back to an older schema (to have its manifests
 * read again) may hold it already. */
#define MIGRATE_SHARDS_BAD                                                                 \
	"CREATE INDEX IF NOT EXISTS shards_bad ON shards(list_id, idx) WHERE "               \
	MTI_CAT_SHARD_BAD("") ";"

/* A step of its own: a format-2 version's fragments as its root describes
 * them (row range, shards, object), each with its health: found by a sync
 * that read it (sound, missing, damaged) or by a check (verify, repair).
 * Health is kept per fragment object, as for shards, and the partial index
 * fragments_bad holds the bad rows only, so a version's health takes them
 * with one probe.  Versions indexed before it get theirs when next read.
 * "IF NOT EXISTS": a catalog set back to an older schema may hold them. */
#define MIGRATE_FRAGMENTS                                                                  \
	"CREATE TABLE IF NOT EXISTS fragments(version_id INTEGER NOT NULL REFERENCES"        \
	" versions(id) ON DELETE CASCADE, idx INTEGER NOT NULL, sha256 TEXT NOT NULL,"      \
	" bytes INTEGER NOT NULL, first_row INTEGER NOT NULL, rows INTEGER NOT NULL,"       \
	" first_shard INTEGER NOT NULL, nshards INTEGER NOT NULL, health TEXT NOT NULL"     \
	" DEFAULT '', health_note TEXT NOT NULL DEFAULT '', health_at TEXT NOT NULL"        \
	" DEFAULT '', PRIMARY KEY(version_id, idx));"                                      \
	"CREATE INDEX IF NOT EXISTS fragments_sha ON fragments(sha256);"                    \
	"CREATE INDEX IF NOT EXISTS fragments_bad ON fragments(version_id) WHERE "          \
	MTI_CAT_FRAG_BAD("") ";"                                                            \
	"UPDATE versions SET manifest_mtime = -1 WHERE manifest_size >= 0;"

/* A step of its own: the health of a model's objects, by key under
 * models/<name>/ ("tensors/<sha256>", "parity/<sha256>", ...): a tensor
 * object is shared by every checkpoint naming it (checkpoint ''), so damage
 * found or repaired through one checkpoint shows on all of them; parity,
 * records and manifests belong to one checkpoint.  Kept by model, not by
 * checkpoint row: a checkpoint's row is replaced when its manifest is read
 * again.  "IF NOT EXISTS", as MIGRATE_SHARDS_BAD. */
#define MIGRATE_MODEL_OBJECTS                                                              \
	"CREATE TABLE IF NOT EXISTS model_objects(model_id INTEGER NOT NULL REFERENCES"     \
	" models(id) ON DELETE CASCADE, object TEXT NOT NULL, checkpoint TEXT NOT NULL,"    \
	" health TEXT NOT NULL, note TEXT NOT NULL, at TEXT NOT NULL,"                      \
	" PRIMARY KEY(model_id, object));"                                                  \
	"CREATE INDEX IF NOT EXISTS model_objects_ckpt ON model_objects(model_id,"          \
	" checkpoint) WHERE checkpoint <> '';"

/* Migration i takes a catalog from schema i to i + 1.  They are history:
 * never edit one, add the next. */
static const char *const migrations[] = {
	/* 0 -> 1: what the stores hold. */
	"CREATE TABLE remotes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
	" url TEXT NOT NULL, online INTEGER NOT NULL DEFAULT 1, error TEXT NOT NULL DEFAULT '',"
	" synced TEXT NOT NULL DEFAULT '');"
	"CREATE TABLE buckets(id INTEGER PRIMARY KEY,"
	" remote_id INTEGER NOT NULL REFERENCES remotes(id) ON DELETE CASCADE,"
	" url TEXT NOT NULL, UNIQUE(remote_id, url));"
	"CREATE TABLE datasets(id INTEGER PRIMARY KEY,"
	" bucket_id INTEGER NOT NULL REFERENCES buckets(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL, UNIQUE(bucket_id, name));"
	"CREATE TABLE versions(id INTEGER PRIMARY KEY,"
	" dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL, parent TEXT NOT NULL, created TEXT NOT NULL, author TEXT NOT NULL,"
	" description TEXT NOT NULL, rows INTEGER NOT NULL, nshards INTEGER NOT NULL,"
	" stored_bytes INTEGER NOT NULL, raw_bytes INTEGER NOT NULL, level INTEGER NOT NULL,"
	" manifest_size INTEGER NOT NULL, manifest_mtime INTEGER NOT NULL,"
	" meta_size INTEGER NOT NULL, meta_mtime INTEGER NOT NULL, UNIQUE(dataset_id, name));"
	"CREATE INDEX versions_created ON versions(dataset_id, created);"
	"CREATE TABLE attrs(version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,"
	" idx INTEGER NOT NULL, name TEXT NOT NULL, dtype TEXT NOT NULL, shape TEXT NOT NULL,"
	" ragged INTEGER NOT NULL, PRIMARY KEY(version_id, idx));"
	"CREATE TABLE tags(version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,"
	" tag TEXT NOT NULL, PRIMARY KEY(version_id, tag));"
	"CREATE TABLE shards(id INTEGER PRIMARY KEY,"
	" version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,"
	" idx INTEGER NOT NULL, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL,"
	" rows INTEGER NOT NULL, first_row INTEGER NOT NULL, UNIQUE(version_id, idx));",

	/* 1 -> 2: dataset summaries for fast lists, verification results,
	 * recipes, jobs, full-text search. */
	"ALTER TABLE datasets ADD COLUMN nversions INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE datasets ADD COLUMN latest TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE datasets ADD COLUMN latest_id INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE datasets ADD COLUMN rows INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE datasets ADD COLUMN stored_bytes INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE datasets ADD COLUMN description TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE datasets ADD COLUMN tags TEXT NOT NULL DEFAULT '';"
	SUMMARY_UPDATE ";"
	"ALTER TABLE shards ADD COLUMN verified TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE shards ADD COLUMN verified_at TEXT NOT NULL DEFAULT '';"
	"CREATE INDEX shards_sha ON shards(sha256);"
	"CREATE TABLE recipes(version_id INTEGER PRIMARY KEY REFERENCES versions(id)"
	" ON DELETE CASCADE, sha256 TEXT NOT NULL, args TEXT NOT NULL);"
	"CREATE TABLE jobs(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL,"
	" started TEXT NOT NULL, finished TEXT NOT NULL DEFAULT '', code INTEGER,"
	" message TEXT NOT NULL DEFAULT '');"
	"CREATE TABLE job_results(job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" item TEXT NOT NULL, code INTEGER NOT NULL, message TEXT NOT NULL);"
	"CREATE VIRTUAL TABLE search USING fts5(dataset, version, description, tags, attrs);"
	SEARCH_INSERT ";"
	"CREATE TRIGGER versions_unsearch AFTER DELETE ON versions BEGIN"
	" DELETE FROM search WHERE rowid = old.id; END;",

	/* 2 -> 3: protection of versions (with the listed size and time of the
	 * record, which changes apart from the manifest), the health of shards,
	 * every check of a version. */
	"ALTER TABLE versions ADD COLUMN protect_k INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE versions ADD COLUMN protect_m INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE versions ADD COLUMN protect_overhead REAL;"
	"ALTER TABLE versions ADD COLUMN protect_size INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE versions ADD COLUMN protect_mtime INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE shards ADD COLUMN health TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE shards ADD COLUMN health_note TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE shards ADD COLUMN health_at TEXT NOT NULL DEFAULT '';"
	"UPDATE shards SET health = CASE verified WHEN 'ok' THEN 'sound' ELSE 'damaged' END,"
	" health_at = verified_at WHERE verified_at <> '';"
	"CREATE TABLE checks(id INTEGER PRIMARY KEY,"
	" version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,"
	" kind TEXT NOT NULL, at TEXT NOT NULL, state TEXT NOT NULL, sources TEXT NOT NULL,"
	" message TEXT NOT NULL, objects INTEGER NOT NULL, damaged INTEGER NOT NULL,"
	" rebuilt INTEGER NOT NULL, unrepairable INTEGER NOT NULL,"
	" bytes_read INTEGER NOT NULL);"
	"CREATE INDEX checks_version ON checks(version_id, id);",

	/* 3 -> 4: cached statistics of attributes. */
	MIGRATE_ATTR_STATS,

	/* 4 -> 5: the versions a version was built from. */
	MIGRATE_SOURCES,

	/* 5 -> 6: shards that were checked, by content. */
	MIGRATE_SHARDS_CHECKED,

	/* 6 -> 7: models, their checkpoints and tensors. */
	MIGRATE_MODELS,

	/* 7 -> 8: shard lists shared along append chains. */
	MIGRATE_SHARD_LISTS,

	/* 8 -> 9: what a version shared with its parent, kept when the parent
	 * is removed (NULL: not known). */
	"ALTER TABLE versions ADD COLUMN parent_shared INTEGER;",

	/* 9 -> 10: the files attached to versions. */
	MIGRATE_ATTACHMENTS,

	/* 10 -> 11: the damaged shard rows, by list. */
	MIGRATE_SHARDS_BAD,

	/* 11 -> 12: format-2 versions' fragments and their health. */
	MIGRATE_FRAGMENTS,

	/* 12 -> 13: the health of models' objects. */
	MIGRATE_MODEL_OBJECTS,
};

#define NMIGRATIONS (sizeof migrations / sizeof migrations[0])
_Static_assert(NMIGRATIONS == MT_CATALOG_SCHEMA, "one migration per schema step");
static int cat_user_version(mt_catalog *c, int *v, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "PRAGMA user_version", &st, err);
	if (rc)
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		*v = sqlite3_column_int(st, 0);
	else
		rc = mti_cat_sqlerr(c, err, "reading the schema version");
	sqlite3_finalize(st);
	return rc;
}

static int cat_newer(mt_catalog *c, int v, mt_error *err)
{
	return mt_error_set(err, MT_EFORMAT,
		      "catalog %s: schema %d is newer than this matorage understands (%d); "
		      "delete the file and run 'matorage sync' to rebuild it",
		      c->path, v, MT_CATALOG_SCHEMA);
}

/* Upgrade to schema `target`, one transaction per step, so a crash leaves
 * a catalog at some schema version, never between two.  Each step reads the
 * version again under the write lock: another process opening the same new
 * catalog may have made that step meanwhile. */
int mti_catalog_migrate(mt_catalog *c, int target, mt_error *err)
{
	int v = 0;
	int rc = cat_user_version(c, &v, err);
	if (!rc && v > MT_CATALOG_SCHEMA)
		return cat_newer(c, v, err);
	while (!rc && v < target) {
		int top;
		if ((rc = mti_cat_begin(c, "upgrade", &top, err)) != 0)
			break;
		rc = cat_user_version(c, &v, err);
		if (!rc && v > MT_CATALOG_SCHEMA)
			rc = cat_newer(c, v, err);
		char pragma[48];
		snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d;", v + 1);
		if (!rc && v < target)
			rc = mti_cat_exec(c, migrations[v], "upgrading the schema", err);
		if (!rc && v < target)
			rc = mti_cat_exec(c, pragma, "upgrading the schema", err);
		rc = mti_cat_end(c, "upgrade", top, rc, err);
		v++;
	}
	return rc;
}
