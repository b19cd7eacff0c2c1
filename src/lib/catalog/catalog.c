/* catalog.c — libmatorage-catalog: the local SQLite index of remotes, buckets, datasets, versions, shards, tags, jobs and statistics of attributes: schema, migrations, sync, listings, search. */
#define _GNU_SOURCE /* vasprintf */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"

/* The catalog is built on matorage.h alone (errors go through its
 * mt_error_set), so these few helpers are its own rather than
 * libmatorage's internal ones. */
#define CAT_PRINTF(a, b) __attribute__((format(printf, a, b)))

static char *CAT_PRINTF(1, 2) cat_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* Make the directories above the catalog's file (private to the user), as
 * SQLite creates only the file. */
static int cat_make_dirs(const char *path, mt_error *err)
{
	char *dir = strdup(path);
	if (!dir)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	int rc = 0;
	for (char *slash = strchr(dir + 1, '/'); !rc && slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			rc = mt_error_set(err, MT_EIO, "catalog directory %s: %s", dir, strerror(errno));
		*slash = '/';
	}
	free(dir);
	return rc;
}

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
static int cat_move_aside(const char *path, ino_t ino, char **moved, mt_error *err)
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
};

#define NMIGRATIONS (sizeof migrations / sizeof migrations[0])

static int cat_sqlerr(mt_catalog *c, mt_error *err, const char *what)
{
	int code = sqlite3_errcode(c->db);
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		c->corrupt = 1;
	int rc = code == SQLITE_NOMEM ? MT_ENOMEM
		 : code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? MT_ECORRUPT
								   : MT_EIO;
	return mt_error_set(err, rc, "catalog %s: %s: %s", c->path, what, sqlite3_errmsg(c->db));
}

static int cat_exec(mt_catalog *c, const char *sql, const char *what, mt_error *err)
{
	return sqlite3_exec(c->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0
								       : cat_sqlerr(c, err, what);
}

/* How long a statement waits for another process's write lock, and how many
 * times a statement that still finds the catalog busy is tried: every one of
 * many concurrent puts notes its version, and each must land. */
#define CAT_BUSY_MS 30000
#define CAT_BUSY_TRIES 5

/* sql, tried again while SQLite says the catalog is busy: the busy timeout
 * waits out a lock, and a busy that comes back at once (WAL recovery by
 * another process) gets a short pause. */
static int cat_exec_retry(mt_catalog *c, const char *sql, const char *what, mt_error *err)
{
	int r = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	for (int i = 1; i < CAT_BUSY_TRIES && (r == SQLITE_BUSY || r == SQLITE_LOCKED); i++) {
		sqlite3_sleep(20 << i);
		r = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	}
	return r == SQLITE_OK ? 0 : cat_sqlerr(c, err, what);
}

/* Start a write.  At the top level, BEGIN IMMEDIATE takes the write lock
 * before anything is read: a deferred transaction that has read cannot wait
 * for the lock when it comes to write (SQLite answers "database is locked"
 * at once), which is how concurrent puts lost their catalog updates.  Inside
 * a caller's transaction, a savepoint.  *top says which, for cat_end. */
static int cat_begin(mt_catalog *c, const char *name, int *top, mt_error *err)
{
	*top = sqlite3_get_autocommit(c->db);
	if (*top)
		return cat_exec_retry(c, "BEGIN IMMEDIATE", "starting a write", err);
	char sql[64];
	snprintf(sql, sizeof sql, "SAVEPOINT %s", name);
	return cat_exec(c, sql, "starting a write", err);
}

/* Commit a write that went well (rc 0), else roll it back.  A commit that
 * fails rolls back and is the error: a write is reported done only when all
 * of it is. */
static int cat_end(mt_catalog *c, const char *name, int top, int rc, mt_error *err)
{
	char sql[96];
	if (!rc && top) {
		rc = cat_exec_retry(c, "COMMIT", "committing a write", err);
	} else if (!rc) {
		snprintf(sql, sizeof sql, "RELEASE %s", name);
		rc = cat_exec(c, sql, "committing a write", err);
	}
	if (rc && top) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	} else if (rc) {
		snprintf(sql, sizeof sql, "ROLLBACK TO %s; RELEASE %s", name, name);
		sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	}
	return rc;
}

static int cat_prepare(mt_catalog *c, const char *sql, sqlite3_stmt **st, mt_error *err)
{
	if (sqlite3_prepare_v2(c->db, sql, -1, st, NULL) != SQLITE_OK)
		return cat_sqlerr(c, err, "preparing a query");
	return 0;
}

/* Run a statement that returns no rows. */
static int cat_step_done(mt_catalog *c, sqlite3_stmt *st, const char *what, mt_error *err)
{
	int r = sqlite3_step(st);
	int rc = r == SQLITE_DONE || r == SQLITE_ROW ? 0 : cat_sqlerr(c, err, what);
	sqlite3_reset(st);
	return rc;
}

static int cat_user_version(mt_catalog *c, int *v, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "PRAGMA user_version", &st, err);
	if (rc)
		return rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		*v = sqlite3_column_int(st, 0);
	else
		rc = cat_sqlerr(c, err, "reading the schema version");
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
		if ((rc = cat_begin(c, "upgrade", &top, err)) != 0)
			break;
		rc = cat_user_version(c, &v, err);
		if (!rc && v > MT_CATALOG_SCHEMA)
			rc = cat_newer(c, v, err);
		char pragma[48];
		snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d;", v + 1);
		if (!rc && v < target)
			rc = cat_exec(c, migrations[v], "upgrading the schema", err);
		if (!rc && v < target)
			rc = cat_exec(c, pragma, "upgrading the schema", err);
		rc = cat_end(c, "upgrade", top, rc, err);
		v++;
	}
	return rc;
}

/* $MATORAGE_CATALOG, else catalog.db in matorage's data directory. */
static int cat_default_path(char **out, mt_error *err)
{
	const char *p = getenv("MATORAGE_CATALOG");
	if (p && *p) {
		*out = strdup(p);
		return *out ? 0 : mt_error_set(err, MT_ENOMEM, "out of memory");
	}
	int rc = mt_user_path(MT_DIR_DATA, "catalog.db", out, err);
	if (rc && rc != MT_ENOMEM && err) {
		char why[sizeof err->message];
		memcpy(why, err->message, sizeof why);
		mt_error_set(err, rc, "catalog (set MATORAGE_CATALOG): %s", why);
	}
	return rc;
}

/* Open the catalog at path; without `create` a missing one is MT_ENOTFOUND
 * and neither its file nor its directory is made.  *ino: the file's. */
static int cat_open_file(char *path, int schema, int create, mt_catalog **out, ino_t *ino,
			 mt_error *err)
{
	*out = NULL;
	mt_catalog *c = calloc(1, sizeof *c);
	if (!c) {
		free(path);
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	}
	c->path = path;
	pthread_mutex_init(&c->lock, NULL);
	struct stat sb;
	int rc = 0;
	if (create)
		rc = cat_make_dirs(c->path, err);
	else if (stat(c->path, &sb) != 0)
		rc = mt_error_set(err, errno == ENOENT ? MT_ENOTFOUND : MT_EIO, "catalog %s: %s",
			    c->path, strerror(errno));
	if (!rc && sqlite3_open_v2(c->path, &c->db,
				   SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) |
					   SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK)
		rc = c->db ? cat_sqlerr(c, err, "opening")
			   : mt_error_set(err, MT_ENOMEM, "catalog %s: out of memory", c->path);
	*ino = stat(c->path, &sb) == 0 ? sb.st_ino : 0;
	/* Another matorage (a CLI write while the TUI runs) may hold the write
	 * lock for a moment; WAL lets readers go on meanwhile. */
	if (!rc)
		sqlite3_busy_timeout(c->db, CAT_BUSY_MS);
	if (!rc)
		rc = cat_exec_retry(c, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
				    "PRAGMA foreign_keys = ON; PRAGMA cache_size = -32768;",
				    "setting it up", err);
	if (!rc)
		rc = mti_catalog_migrate(c, schema, err);
	if (rc) {
		mt_catalog_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Open the catalog (path NULL: the default); a malformed one is moved aside
 * and a new one made in its place. */
static int cat_open(const char *path, int schema, int create, mt_catalog **out, mt_error *err)
{
	*out = NULL;
	char *p = NULL;
	int rc = path ? ((p = strdup(path)) ? 0 : mt_error_set(err, MT_ENOMEM, "out of memory"))
		      : cat_default_path(&p, err);
	char *again = rc ? NULL : strdup(p);
	if (!rc && !again)
		rc = mt_error_set(err, MT_ENOMEM, "out of memory");
	ino_t ino = 0;
	if (rc) {
		free(p);
		return rc;
	}
	rc = cat_open_file(p, schema, create, out, &ino, err);
	char *moved = NULL;
	if (rc == MT_ECORRUPT && ino && !(rc = cat_move_aside(again, ino, &moved, err))) {
		rc = cat_open_file(again, schema, 1, out, &ino, err);
		again = NULL;
		if (!rc)
			(*out)->moved = moved;
		else
			free(moved);
	}
	free(again);
	return rc;
}

int mti_catalog_open_schema(const char *path, int schema, mt_catalog **out, mt_error *err)
{
	return cat_open(path, schema, 1, out, err);
}

int mt_catalog_open(const char *path, mt_catalog **out, mt_error *err)
{
	return cat_open(path, MT_CATALOG_SCHEMA, 1, out, err);
}

int mt_catalog_open_existing(const char *path, mt_catalog **out, mt_error *err)
{
	return cat_open(path, MT_CATALOG_SCHEMA, 0, out, err);
}

void mt_catalog_close(mt_catalog *c)
{
	if (!c)
		return;
	sqlite3_close_v2(c->db);
	pthread_mutex_destroy(&c->lock);
	free(c->path);
	free(c->moved);
	free(c);
}

const char *mt_catalog_moved_aside(const mt_catalog *c)
{
	return c ? c->moved : NULL;
}

int mt_catalog_heal(mt_catalog **c, mt_error *err)
{
	if (!*c || !(*c)->corrupt)
		return 0;
	struct stat sb;
	char *path = strdup((*c)->path);
	ino_t ino = path && stat(path, &sb) == 0 ? sb.st_ino : 0;
	mt_catalog_close(*c);
	*c = NULL;
	char *moved = NULL;
	int rc = path ? cat_move_aside(path, ino, &moved, err)
		      : mt_error_set(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = cat_open(path, MT_CATALOG_SCHEMA, 1, c, err);
	free(path);
	if (rc) {
		free(moved);
		return rc;
	}
	if (moved && !(*c)->moved)
		(*c)->moved = moved;
	else
		free(moved);
	return 1;
}

const char *mt_catalog_path(const mt_catalog *c)
{
	return c->path;
}

/* ---- remotes and buckets ------------------------------------------------------ */

static void cat_now(char *buf, size_t cap)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The id of a row found by an integer key ?1 and a text key ?2 (a query
 * may use only ?2), 0 when none. */
static int cat_lookup(mt_catalog *c, const char *sql, int64_t key, const char *text,
		      int64_t *id, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = cat_prepare(c, sql, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	int r = sqlite3_step(st);
	*id = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = cat_sqlerr(c, err, "looking up");
	sqlite3_finalize(st);
	return rc;
}

/* How a sync left a remote. */
enum { REMOTE_KEEP = -1, REMOTE_OFFLINE, REMOTE_SYNCED, REMOTE_TROUBLED };

/* The bucket row of (remote, url), created with its remote when new; the
 * remote's state changes unless it is REMOTE_KEEP: offline or troubled
 * (reachable, but something in it could not be read) with message `why`. */
static int cat_bucket(mt_catalog *c, const char *remote, const char *url, int state,
		      const char *why, int64_t *bucket, mt_error *err)
{
	char now[32];
	cat_now(now, sizeof now);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT INTO remotes(name, url) VALUES(?1, ?2) ON CONFLICT(name) "
			     "DO UPDATE SET url = ?2", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, remote, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, url, -1, SQLITE_STATIC);
	rc = cat_step_done(c, st, "recording a remote", err);
	sqlite3_finalize(st);
	int64_t rid = 0;
	if (!rc)
		rc = cat_lookup(c, "SELECT id FROM remotes WHERE name = ?2", 0, remote,
				&rid, err);
	static const char *const state_sql[] = {
		[REMOTE_OFFLINE] = "UPDATE remotes SET online = 0, error = ?3 WHERE id = ?1",
		[REMOTE_SYNCED] = "UPDATE remotes SET online = 1, error = '', synced = ?2 "
				  "WHERE id = ?1",
		[REMOTE_TROUBLED] = "UPDATE remotes SET online = 1, error = ?3 WHERE id = ?1",
	};
	if (!rc && state != REMOTE_KEEP && !(rc = cat_prepare(c, state_sql[state], &st, err))) {
		sqlite3_bind_int64(st, 1, rid);
		sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, why ? why : "", -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a remote", err);
		sqlite3_finalize(st);
	}
	if (!rc && !(rc = cat_prepare(c, "INSERT OR IGNORE INTO buckets(remote_id, url) "
				      "VALUES(?1, ?2)", &st, err))) {
		sqlite3_bind_int64(st, 1, rid);
		sqlite3_bind_text(st, 2, url, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a bucket", err);
		sqlite3_finalize(st);
	}
	if (!rc)
		rc = cat_lookup(c, "SELECT id FROM buckets WHERE remote_id = ?1 AND url = ?2", rid,
				url, bucket, err);
	return rc;
}

int mt_catalog_forget(mt_catalog *c, const char *remote, mt_error *err)
{
	sqlite3_stmt *st;
	pthread_mutex_lock(&c->lock);
	int rc = cat_prepare(c, "DELETE FROM remotes WHERE name = ?1", &st, err);
	if (!rc) {
		sqlite3_bind_text(st, 1, remote, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "forgetting a remote", err);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_set_offline(mt_catalog *c, const char *remote, const char *url, const char *why,
			   mt_error *err)
{
	int64_t b;
	pthread_mutex_lock(&c->lock);
	int rc = cat_bucket(c, remote, url, REMOTE_OFFLINE, why ? why : "unreachable", &b, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- sync ------------------------------------------------------------------------ */


static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	*l = (struct listing){0};
}

static int listing_add(void *ud, const mt_object_info *o)
{
	struct listing *l = ud;
	const char *name = o->key + l->prefix_len;
	size_t len = strlen(name);
	if (len <= 5 || strcmp(name + len - 5, ".json") || strchr(name, '/'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct listed *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return MT_ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n].name = strndup(name, len - 5)))
		return MT_ENOMEM;
	l->v[l->n].size = o->size;
	l->v[l->n].mtime = o->mtime;
	l->n++;
	return 0;
}

static int listed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->name, ((const struct listed *)b)->name);
}

static int cat_list_objects(mt_store *s, const char *dataset, const char *dir,
			    struct listing *l, mt_error *err)
{
	char *prefix = cat_printf("datasets/%s/%s/", dataset, dir);
	if (!prefix)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	l->prefix_len = strlen(prefix);
	int rc = mt_store_list(s, prefix, listing_add, l, err);
	if (rc == MT_ENOMEM)
		rc = mt_error_set(err, rc, "dataset %s: listing: out of memory", dataset);
	free(prefix);
	/* Key order is not name order ("a-b.json" < "a.json" but "a" < "a-b"). */
	if (!rc && l->n)
		qsort(l->v, l->n, sizeof *l->v, listed_cmp);
	return rc;
}

/* The one object <dir>/<name>.json of a dataset, as a listing of it or of
 * nothing: a listing by its full key, which costs the same however many
 * versions the dataset has. */
static int cat_list_one(mt_store *s, const char *dataset, const char *dir, const char *name,
			struct listing *l, mt_error *err)
{
	char *key = cat_printf("datasets/%s/%s/%s.json", dataset, dir, name);
	if (!key)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	l->prefix_len = strlen(key) - strlen(name) - 5;
	int rc = mt_store_list(s, key, listing_add, l, err);
	if (rc == MT_ENOMEM)
		rc = mt_error_set(err, rc, "dataset %s: listing: out of memory", dataset);
	free(key);
	return rc;
}

/* In name order (cat_list_objects sorts), so a binary search. */
static const struct listed *listing_find(const struct listing *l, const char *name)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->v[mid].name, name);
		if (!c)
			return &l->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cat_dataset_id(mt_catalog *c, int64_t bucket, const char *name, int create,
			  int64_t *id, mt_error *err)
{
	int rc = 0;
	if (create) {
		sqlite3_stmt *st;
		if ((rc = cat_prepare(c, "INSERT OR IGNORE INTO datasets(bucket_id, name) "
				      "VALUES(?1, ?2)", &st, err)))
			return rc;
		sqlite3_bind_int64(st, 1, bucket);
		sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a dataset", err);
		sqlite3_finalize(st);
	}
	if (!rc)
		rc = cat_lookup(c, "SELECT id FROM datasets WHERE bucket_id = ?1 AND name = ?2",
				bucket, name, id, err);
	return rc;
}

static const char *cat_shape(const mt_attr *a, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "(");
	for (int i = 0; i < a->rank && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? ", " : "",
				      (unsigned long long)a->shape[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "%s)", a->rank == 1 ? "," : "");
	return buf;
}

/* Run a statement whose only parameter is ?1 = id and that returns no rows. */
static int cat_exec_id(mt_catalog *c, const char *sql, int64_t id, const char *what,
		       mt_error *err)
{
	sqlite3_stmt *st;
	int rc = cat_prepare(c, sql, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = cat_step_done(c, st, what, err);
	sqlite3_finalize(st);
	return rc;
}

/* The version's own row, with the listed sizes and times of its manifest
 * and metadata object; *vid gets its id. */
static int cat_put_row(mt_catalog *c, int64_t ds, const mt_version_info *v,
		       const struct listed *man, const struct listed *meta, int64_t *vid,
		       mt_error *err)
{
	sqlite3_stmt *st;
	/* An upsert keeps the row's id, so views open on it stay valid. */
	int rc = cat_prepare(c, "INSERT INTO versions(dataset_id, name, parent, created, "
			     "author, description, rows, nshards, stored_bytes, raw_bytes, "
			     "level, manifest_size, manifest_mtime, meta_size, meta_mtime) "
			     "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(dataset_id, name) "
			     "DO UPDATE SET parent = excluded.parent, created = excluded.created,"
			     " author = excluded.author, description = excluded.description,"
			     " rows = excluded.rows, nshards = excluded.nshards,"
			     " stored_bytes = excluded.stored_bytes, raw_bytes = excluded.raw_bytes,"
			     " level = excluded.level, manifest_size = excluded.manifest_size,"
			     " manifest_mtime = excluded.manifest_mtime,"
			     " meta_size = excluded.meta_size, meta_mtime = excluded.meta_mtime",
			     &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	sqlite3_bind_text(st, 2, v->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, v->parent, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, v->created, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, v->author, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, v->description, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, (int64_t)v->rows);
	sqlite3_bind_int64(st, 8, (int64_t)v->nshards);
	sqlite3_bind_int64(st, 9, (int64_t)v->stored_bytes);
	sqlite3_bind_int64(st, 10, (int64_t)v->raw_bytes);
	sqlite3_bind_int(st, 11, v->level);
	sqlite3_bind_int64(st, 12, (int64_t)man->size);
	sqlite3_bind_int64(st, 13, man->mtime);
	sqlite3_bind_int64(st, 14, meta ? (int64_t)meta->size : -1);
	sqlite3_bind_int64(st, 15, meta ? meta->mtime : -1);
	rc = cat_step_done(c, st, "recording a version", err);
	sqlite3_finalize(st);
	if (!rc)
		rc = cat_lookup(c, "SELECT id FROM versions WHERE dataset_id = ?1 AND name = ?2", ds,
				v->version, vid, err);
	return rc;
}

/* What a sync found of a version's protection: its record as listed (NULL:
 * none), and k = -1 when the record is there but cannot be read. */
struct prot {
	const struct listed *rec;
	int k, m;
	double overhead;
};

static int cat_put_protection(mt_catalog *c, int64_t vid, const struct prot *p, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "UPDATE versions SET protect_k = ?2, protect_m = ?3,"
			     " protect_overhead = ?4, protect_size = ?5, protect_mtime = ?6"
			     " WHERE id = ?1", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, vid);
	sqlite3_bind_int(st, 2, p->rec ? p->k : 0);
	sqlite3_bind_int(st, 3, p->rec ? p->m : 0);
	if (p->rec && p->k > 0)
		sqlite3_bind_double(st, 4, p->overhead);
	else
		sqlite3_bind_null(st, 4);
	sqlite3_bind_int64(st, 5, p->rec ? (int64_t)p->rec->size : -1);
	sqlite3_bind_int64(st, 6, p->rec ? p->rec->mtime : -1);
	rc = cat_step_done(c, st, "recording a protection", err);
	sqlite3_finalize(st);
	return rc;
}

/* A version's attributes, tags, shards, recipe and search entry are
 * written anew each time it is read. */
static int cat_clear_parts(mt_catalog *c, int64_t vid, mt_error *err)
{
	static const char *const clear[] = {
		"DELETE FROM attrs WHERE version_id = ?1", "DELETE FROM tags WHERE version_id = ?1",
		"DELETE FROM search WHERE rowid = ?1",
		"DELETE FROM recipes WHERE version_id = ?1",
		"DELETE FROM sources WHERE version_id = ?1",
	};
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof clear / sizeof clear[0]; i++)
		rc = cat_exec_id(c, clear[i], vid, "replacing a version", err);
	return rc;
}

static int cat_put_attrs(mt_catalog *c, int64_t vid, const mt_reader *r, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT INTO attrs VALUES(?,?,?,?,?,?)", &st, err);
	for (size_t i = 0; !rc && i < mt_reader_nattrs(r); i++) {
		const mt_attr *a = mt_reader_attr(r, i);
		char shape[MT_MAX_RANK * 24 + 8];
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_int64(st, 2, (int64_t)i);
		sqlite3_bind_text(st, 3, a->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, mt_dtype_name(a->dtype), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, cat_shape(a, shape, sizeof shape), -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 6, a->ragged);
		rc = cat_step_done(c, st, "recording an attribute", err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* The recipe and its arguments as the command line gave them: KEY=VALUE ... */
static int cat_put_recipe(mt_catalog *c, int64_t vid, const mt_version_info *v, mt_error *err)
{
	if (!v->recipe[0])
		return 0;
	size_t len = 1;
	for (size_t i = 0; i < v->nrecipe_args; i++)
		len += strlen(v->recipe_args[i]) + 1;
	char *args = malloc(len), *p = args;
	if (!args)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	*p = '\0';
	for (size_t i = 0; i < v->nrecipe_args; i++)
		p += sprintf(p, "%s%s", i ? " " : "", v->recipe_args[i]);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT INTO recipes VALUES(?1, ?2, ?3)", &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_text(st, 2, v->recipe, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, args, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a recipe", err);
		sqlite3_finalize(st);
	}
	free(args);
	return rc;
}

static int cat_put_sources(mt_catalog *c, int64_t vid, const mt_reader *r, mt_error *err)
{
	size_t n = mt_reader_nsources(r);
	if (!n)
		return 0;
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT INTO sources VALUES(?1, ?2, ?3, ?4, ?5)", &st, err);
	for (size_t i = 0; !rc && i < n; i++) {
		const mt_source *src = mt_reader_source(r, i);
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_text(st, 3, src->dataset, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, src->version, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, src->store ? src->store : "", -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a source", err);
	}
	sqlite3_finalize(st);
	return rc;
}

static int cat_put_tags(mt_catalog *c, int64_t vid, const mt_version_info *v, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT OR IGNORE INTO tags VALUES(?,?)", &st, err);
	for (size_t i = 0; !rc && i < v->ntags; i++) {
		sqlite3_bind_int64(st, 1, vid);
		sqlite3_bind_text(st, 2, v->tags[i], -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a tag", err);
	}
	sqlite3_finalize(st);
	return rc;
}

/* The running digest of a shard list, one step per shard: two 64-bit
 * FNV-style hashes of the previous digest and the shard's sha256, bytes and
 * rows (first_row follows from the rows before it).  Lists are compared by
 * the digest at one row, not row by row: appending to a chain stays O(1) in
 * the length of the chain. */
#define CHAIN_BYTES 16
static void chain_add(uint64_t h[2], const mt_shard_info *sh)
{
	unsigned char buf[64 + 16];
	memcpy(buf, sh->sha256, 64);
	for (int i = 0; i < 8; i++) {
		buf[64 + i] = (unsigned char)(sh->bytes >> (8 * i));
		buf[72 + i] = (unsigned char)(sh->rows >> (8 * i));
	}
	for (size_t i = 0; i < sizeof buf; i++) {
		h[0] = (h[0] ^ buf[i]) * 0x100000001b3ULL;
		h[1] = (h[1] ^ buf[i]) * 0x9e3779b97f4a7c15ULL;
		h[1] ^= h[1] >> 29;
	}
}

static void chain_bytes(const uint64_t h[2], unsigned char *out)
{
	for (int i = 0; i < 8; i++) {
		out[i] = (unsigned char)(h[0] >> (8 * i));
		out[8 + i] = (unsigned char)(h[1] >> (8 * i));
	}
}

/* The digests of r's shard list after each shard (CHAIN_BYTES each). */
static int chain_digests(const mt_reader *r, unsigned char **out, mt_error *err)
{
	uint64_t n = mt_reader_info(r)->nshards;
	uint64_t h[2] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
	if (!(*out = malloc(n ? n * CHAIN_BYTES : 1)))
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < n; i++) {
		mt_shard_info sh;
		int rc = mt_reader_shard(r, i, &sh);
		if (rc) {
			free(*out);
			*out = NULL;
			return mt_error_set(err, rc, "catalog: shard %llu of %s: %s",
					    (unsigned long long)i, mt_reader_info(r)->version,
					    mt_strerror(rc));
		}
		chain_add(h, &sh);
		chain_bytes(h, *out + i * CHAIN_BYTES);
	}
	return 0;
}

/* Run sql with ?1 = a, ?2 = b and take its first column as an integer
 * (*out = -1 when there is no row or it is NULL); with blob, compare the
 * column with it instead (*out = 1 when equal). */
static int cat_query_int(mt_catalog *c, const char *sql, int64_t a, int64_t b,
			 const unsigned char *blob, int64_t *out, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = cat_prepare(c, sql, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	*out = -1;
	int r = sqlite3_step(st);
	if (r == SQLITE_ROW && blob)
		*out = sqlite3_column_bytes(st, 0) == CHAIN_BYTES &&
		       !memcmp(sqlite3_column_blob(st, 0), blob, CHAIN_BYTES);
	else if (r == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(st, 0);
	else if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = cat_sqlerr(c, err, "reading shard lists");
	sqlite3_finalize(st);
	return rc;
}

/* The list version v (n shards, digests d) extends: its parent's, when its
 * shards and that list agree up to the end of either (the prefix a format
 * append writes; not every manifest is one).  *list = 0: none, v gets a new
 * list.  *from: the first of v's shards the list does not hold yet. */
static int cat_chain_list(mt_catalog *c, int64_t ds, const mt_version_info *v,
			  const unsigned char *d, int64_t n, int64_t *list, int64_t *from,
			  mt_error *err)
{
	*list = 0;
	*from = 0;
	if (!v->parent[0] || !strcmp(v->parent, v->version))
		return 0;
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "SELECT shard_list FROM versions WHERE dataset_id = ?1 AND"
			     " name = ?2 AND shard_list <> 0", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	sqlite3_bind_text(st, 2, v->parent, -1, SQLITE_STATIC);
	int64_t cand = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	int64_t len, same = 1;
	if (!cand || (rc = cat_query_int(c, "SELECT max(idx) + 1 FROM shards WHERE list_id = ?1",
					 cand, 0, NULL, &len, err)))
		return rc;
	if (len < 0)
		len = 0;
	int64_t m = n < len ? n : len;
	if (m > 0 && (rc = cat_query_int(c, "SELECT chain FROM shards WHERE list_id = ?1 AND"
					 " idx = ?2", cand, m - 1, d + (m - 1) * CHAIN_BYTES, &same,
					 err)))
		return rc;
	if (same == 1) {
		*list = cand;
		*from = len;
	}
	return 0;
}

/* Record r's shard list for version vid: extend its parent's list when that
 * is a prefix of it (cat_chain_list), else a list of its own. */
static int cat_put_shards(mt_catalog *c, int64_t ds, int64_t vid, const mt_reader *r,
			  mt_error *err)
{
	int64_t n = (int64_t)mt_reader_info(r)->nshards, list, from;
	unsigned char *d;
	int rc = chain_digests(r, &d, err);
	if (rc)
		return rc;
	if (!(rc = cat_chain_list(c, ds, mt_reader_info(r), d, n, &list, &from, err)) && !list &&
	    !(rc = cat_exec_id(c, "INSERT INTO shard_lists(dataset_id) VALUES(?1)", ds,
			       "recording a shard list", err)))
		list = sqlite3_last_insert_rowid(c->db);
	/* A shard checked before (under this version or another) keeps its
	 * latest results: SQLite takes bare columns from max()'s row. */
	sqlite3_stmt *st = NULL;
	if (!rc)
		rc = cat_prepare(c, "INSERT INTO shards(list_id, idx, sha256, bytes, rows, "
				 "first_row, chain, verified, verified_at, health, health_note,"
				 " health_at) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce(verified,"
				 " ''), coalesce(verified_at, ''), coalesce(health, ''),"
				 " coalesce(health_note, ''), coalesce(health_at, '') FROM (SELECT"
				 " verified, verified_at, health, health_note, health_at,"
				 " max(max(verified_at, health_at)) FROM shards WHERE sha256 = ?3 AND"
				 " (verified_at <> '' OR health_at <> ''))", &st, err);
	for (int64_t i = from; !rc && i < n; i++) {
		mt_shard_info sh;
		if ((rc = mt_reader_shard(r, (uint64_t)i, &sh)) != 0) {
			rc = mt_error_set(err, rc, "catalog: shard %lld of %s", (long long)i,
					  mt_reader_info(r)->version);
			break;
		}
		sqlite3_bind_int64(st, 1, list);
		sqlite3_bind_int64(st, 2, i);
		sqlite3_bind_text(st, 3, sh.sha256, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, (int64_t)sh.bytes);
		sqlite3_bind_int64(st, 5, (int64_t)sh.rows);
		sqlite3_bind_int64(st, 6, (int64_t)sh.first_row);
		sqlite3_bind_blob(st, 7, d + i * CHAIN_BYTES, CHAIN_BYTES, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a shard", err);
	}
	sqlite3_finalize(st);
	free(d);
	if (!rc) {
		if (!(rc = cat_prepare(c, "UPDATE versions SET shard_list = ?2 WHERE id = ?1", &st,
				       err))) {
			sqlite3_bind_int64(st, 1, vid);
			sqlite3_bind_int64(st, 2, list);
			rc = cat_step_done(c, st, "recording a shard list", err);
			sqlite3_finalize(st);
		}
	}
	return rc;
}

/* Replace a version of dataset ds with what reader r read of it; one
 * transaction. */
static int cat_put_version(mt_catalog *c, int64_t ds, const mt_reader *r,
			   const struct listed *man, const struct listed *meta,
			   const struct prot *prot, mt_error *err)
{
	const mt_version_info *v = mt_reader_info(r);
	int top;
	int rc = cat_begin(c, "put_version", &top, err);
	if (rc)
		return rc;
	int64_t vid = 0;
	if (!(rc = cat_put_row(c, ds, v, man, meta, &vid, err)) &&
	    !(rc = cat_put_protection(c, vid, prot, err)) &&
	    !(rc = cat_clear_parts(c, vid, err)) && !(rc = cat_put_attrs(c, vid, r, err)) &&
	    !(rc = cat_put_recipe(c, vid, v, err)) && !(rc = cat_put_tags(c, vid, v, err)) &&
	    !(rc = cat_put_shards(c, ds, vid, r, err)) && !(rc = cat_put_sources(c, vid, r, err)))
		rc = cat_exec_id(c, SEARCH_INSERT " WHERE v.id = ?1", vid, "indexing a version",
				 err);
	return cat_end(c, "put_version", top, rc, err);
}

/* What the catalog has of a dataset's versions, to compare with a listing. */
struct known {
	char *name;
	int64_t man_size, man_mtime, meta_size, meta_mtime, prot_size, prot_mtime;
};

static void known_free(struct known *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(k[i].name);
	free(k);
}

static int cat_known(mt_catalog *c, int64_t ds, struct known **out, size_t *n, mt_error *err)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "SELECT name, manifest_size, manifest_mtime, meta_size, meta_mtime,"
			     " protect_size, protect_mtime FROM versions WHERE dataset_id = ?1 ORDER BY name",
			     &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, ds);
	size_t cap = 0;
	int r;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			struct known *k = realloc(*out, cap * sizeof *k);
			if (!k) {
				rc = mt_error_set(err, MT_ENOMEM, "out of memory");
				break;
			}
			*out = k;
		}
		struct known *k = &(*out)[*n];
		if (!(k->name = strdup((const char *)sqlite3_column_text(st, 0)))) {
			rc = mt_error_set(err, MT_ENOMEM, "out of memory");
			break;
		}
		k->man_size = sqlite3_column_int64(st, 1);
		k->man_mtime = sqlite3_column_int64(st, 2);
		k->meta_size = sqlite3_column_int64(st, 3);
		k->meta_mtime = sqlite3_column_int64(st, 4);
		k->prot_size = sqlite3_column_int64(st, 5);
		k->prot_mtime = sqlite3_column_int64(st, 6);
		(*n)++;
	}
	if (!rc && r != SQLITE_DONE)
		rc = cat_sqlerr(c, err, "reading versions");
	sqlite3_finalize(st);
	if (rc) {
		known_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int cat_unchanged(const struct known *k, size_t nk, const struct listed *man,
			 const struct listed *meta, const struct listed *prot)
{
	/* k is in name order (cat_known): a binary search, not a scan per version. */
	size_t lo = 0, hi = nk;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(k[mid].name, man->name);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == nk || strcmp(k[lo].name, man->name))
		return 0;
	const struct known *e = &k[lo];
	return e->man_size == (int64_t)man->size && e->man_mtime == man->mtime &&
	       e->meta_size == (meta ? (int64_t)meta->size : -1) &&
	       e->meta_mtime == (meta ? meta->mtime : -1) &&
	       e->prot_size == (prot ? (int64_t)prot->size : -1) &&
	       e->prot_mtime == (prot ? prot->mtime : -1);
}

/* One dataset being synced: what the store lists and the catalog knows. */
struct ds_sync {
	mt_catalog *c;
	mt_store *s;
	const char *dataset;
	int flags;
	mt_catalog_sync_stats *stats;
	struct listing man, meta, prot; /* manifests, metadata objects, protection records */
	struct known *known;      /* the versions the catalog had */
	size_t nknown;
	int64_t ds;               /* its row; 0 when the catalog has none */
	mt_error bad;             /* the first damaged manifest, reported at the end */
	uint64_t left, left_bytes; /* no version: the shard objects left for gc */
};

static int count_object(void *ud, const mt_object_info *o)
{
	struct ds_sync *d = ud;
	d->left++;
	d->left_bytes += o->size;
	return 0;
}

/* A dataset with no version left is still shown while shards of it remain
 * (gc collects them); count them. */
static int ds_count_leftovers(struct ds_sync *d, mt_error *err)
{
	char *prefix = cat_printf("datasets/%s/shards/", d->dataset);
	if (!prefix)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	int rc = mt_store_list(d->s, prefix, count_object, d, err);
	free(prefix);
	return rc;
}

/* List the dataset's objects (the store is read without the lock), then
 * find its row and known versions (a row is made only when it has some). */
static int ds_sync_start(struct ds_sync *d, int64_t bucket, mt_error *err)
{
	int rc = cat_list_objects(d->s, d->dataset, "versions", &d->man, err);
	if (!rc)
		rc = cat_list_objects(d->s, d->dataset, "meta", &d->meta, err);
	if (!rc)
		rc = cat_list_objects(d->s, d->dataset, "protect", &d->prot, err);
	if (!rc && !d->man.n)
		rc = ds_count_leftovers(d, err);
	pthread_mutex_lock(&d->c->lock);
	if (!rc)
		rc = cat_dataset_id(d->c, bucket, d->dataset, d->man.n > 0 || d->left > 0, &d->ds,
				    err);
	if (!rc && d->ds)
		rc = cat_known(d->c, d->ds, &d->known, &d->nknown, err);
	pthread_mutex_unlock(&d->c->lock);
	return rc;
}

/* How version `name` is protected: a record that cannot be read is k = -1
 * (the version is still listed; repair restores the record). */
static void ds_sync_protection(struct ds_sync *d, const char *name, struct prot *p)
{
	mt_protection info;
	mt_error e = { 0 };
	if (mt_protect_info(d->s, d->dataset, name, &info, &e)) {
		p->k = -1;
		return;
	}
	p->k = info.k;
	p->m = info.m;
	p->overhead = info.data_bytes ? (double)(info.parity_bytes + info.record_bytes) /
						 (double)info.data_bytes
				      : 0;
}

/* Manifests to read are read this many at a time, on up to SYNC_THREADS
 * threads (on S3 each is a round trip or two), and each batch is written in
 * one transaction: a first sync of 10,000 versions is neither 10,000
 * sequential GETs nor 10,000 commits. */
#define SYNC_BATCH 64
#define SYNC_THREADS 8

/* One version of a batch: what was listed, then what reading it gave. */
struct vread {
	const struct listed *lm, *lmeta;
	struct prot prot;
	mt_reader *r;
	int rc;
	mt_error err;
};

struct ds_batch {
	struct ds_sync *d;
	struct vread v[SYNC_BATCH];
	size_t n;
};

/* fn(ud, i) for i in [0, n) taken in turn by the threads of mti_cat_parallel. */
struct cat_jobs {
	void (*fn)(void *ud, size_t i);
	void *ud;
	size_t n, next; /* the next to run, under lock */
	pthread_mutex_t lock;
};

static void *cat_job_worker(void *arg)
{
	struct cat_jobs *j = arg;
	for (;;) {
		pthread_mutex_lock(&j->lock);
		size_t i = j->next++;
		pthread_mutex_unlock(&j->lock);
		if (i >= j->n)
			return NULL;
		j->fn(j->ud, i);
	}
}

void mti_cat_parallel(size_t n, size_t threads, void (*fn)(void *ud, size_t i), void *ud)
{
	pthread_t t[SYNC_THREADS];
	struct cat_jobs j = {fn, ud, n, 0, PTHREAD_MUTEX_INITIALIZER};
	size_t nt = n < threads ? n : threads, started = 0;
	nt = nt < SYNC_THREADS ? nt : SYNC_THREADS;
	for (size_t i = 1; i < nt; i++)
		if (pthread_create(&t[started], NULL, cat_job_worker, &j) == 0)
			started++;
	cat_job_worker(&j); /* this thread works too, and alone when none started */
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&j.lock);
}

static void ds_read_one(void *ud, size_t i)
{
	struct ds_batch *b = ud;
	struct vread *v = &b->v[i];
	v->rc = mt_reader_open(b->d->s, b->d->dataset, v->lm->name, &v->r, &v->err);
	if (!v->rc && v->prot.rec)
		ds_sync_protection(b->d, v->lm->name, &v->prot);
}

/* Read the batch's versions in parallel (the store is read without the
 * catalog's lock). */
static void ds_batch_read(struct ds_batch *b)
{
	mti_cat_parallel(b->n, SYNC_THREADS, ds_read_one, b);
}

/* Write one read version.  One deleted since the listing is left for the
 * next sync; a damaged one is noted in d->bad and the others are still
 * written. */
static int ds_batch_put(struct ds_sync *d, struct vread *v, mt_error *err)
{
	if (!v->rc) {
		d->stats->versions_read++;
		return cat_put_version(d->c, d->ds, v->r, v->lm, v->lmeta, &v->prot, err);
	}
	if (v->rc == MT_EFORMAT || v->rc == MT_ECORRUPT) {
		if (!d->bad.code) {
			d->bad = v->err;
			d->bad.code = v->rc;
		}
		return 0;
	}
	if (v->rc == MT_ENOTFOUND)
		return 0;
	if (err)
		*err = v->err;
	return v->rc;
}

/* Read the batch's versions, then write them in one transaction. */
static int ds_batch_flush(struct ds_batch *b, mt_error *err)
{
	struct ds_sync *d = b->d;
	if (!b->n)
		return 0;
	ds_batch_read(b);
	int rc = 0, top;
	pthread_mutex_lock(&d->c->lock);
	rc = cat_begin(d->c, "sync_batch", &top, err);
	for (size_t i = 0; !rc && i < b->n; i++)
		rc = ds_batch_put(d, &b->v[i], err);
	if (!rc || top)
		rc = cat_end(d->c, "sync_batch", top, rc, err);
	pthread_mutex_unlock(&d->c->lock);
	for (size_t i = 0; i < b->n; i++)
		mt_reader_close(b->v[i].r);
	b->n = 0;
	return rc;
}

/* Queue one listed version for reading when it is new or changed. */
static int ds_sync_version(struct ds_batch *b, const struct listed *lm, mt_error *err)
{
	struct ds_sync *d = b->d;
	const struct listed *lmeta = listing_find(&d->meta, lm->name);
	const struct listed *rec = listing_find(&d->prot, lm->name);
	__atomic_add_fetch(&d->stats->versions, 1, __ATOMIC_RELAXED); /* datasets run in parallel */
	if (!(d->flags & MT_CATALOG_FULL) && cat_unchanged(d->known, d->nknown, lm, lmeta, rec))
		return 0;
	b->v[b->n++] = (struct vread){.lm = lm, .lmeta = lmeta, .prot = {rec, 0, 0, 0}};
	return b->n == SYNC_BATCH ? ds_batch_flush(b, err) : 0;
}

/* A dataset with no version but shards left: no latest version, the
 * leftovers' size as its stored bytes, and a description saying so. */
static int ds_sync_leftovers(struct ds_sync *d, mt_error *err)
{
	sqlite3_stmt *st;
	char *what = cat_printf("no versions left: %llu leftover shard%s (gc collects them)",
				(unsigned long long)d->left, d->left == 1 ? "" : "s");
	int rc = what ? cat_prepare(d->c, "UPDATE datasets SET nversions = 0, latest = '',"
				   " latest_id = 0, rows = 0, stored_bytes = ?2, tags = '',"
				   " description = ?3 WHERE id = ?1", &st, err)
		      : mt_error_set(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		sqlite3_bind_int64(st, 1, d->ds);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)d->left_bytes);
		sqlite3_bind_text(st, 3, what, -1, SQLITE_STATIC);
		rc = cat_step_done(d->c, st, "summarising a dataset", err);
		sqlite3_finalize(st);
	}
	free(what);
	return rc;
}

/* Drop dataset ds's shard lists that no version reads any more, and the rows
 * past the longest version still reading each (a removed tip of a chain):
 * the rows left are exactly the shards of the versions, so a check found by
 * content (cat_put_shards) or a health update meets no forgotten one. */
static int cat_gc_lists(mt_catalog *c, int64_t ds, mt_error *err)
{
	int rc = cat_exec_id(c, "DELETE FROM shard_lists WHERE dataset_id = ?1 AND id NOT IN"
			     " (SELECT shard_list FROM versions WHERE dataset_id = ?1)", ds,
			     "dropping shard lists", err);
	if (!rc)
		rc = cat_exec_id(c, "DELETE FROM shards WHERE rowid IN (SELECT s.rowid FROM"
				 " (SELECT l.id, (SELECT max(v.nshards) FROM versions v WHERE"
				 " v.shard_list = l.id) AS keep FROM shard_lists l WHERE"
				 " l.dataset_id = ?1) k JOIN shards s ON s.list_id = k.id AND"
				 " s.idx >= k.keep)", ds, "dropping shard rows", err);
	return rc;
}

/* Drop the versions the store no longer lists, then refresh the dataset's
 * summary, or drop the dataset when no version is left; one transaction. */
static int ds_sync_finish(struct ds_sync *d, mt_error *err)
{
	mt_catalog *c = d->c;
	int top = 0;
	int rc = cat_begin(c, "sync_dataset", &top, err);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < d->nknown; i++) {
		if (listing_find(&d->man, d->known[i].name))
			continue;
		sqlite3_stmt *st;
		if (!(rc = cat_prepare(c, "DELETE FROM versions WHERE dataset_id = ?1 AND name = ?2",
				       &st, err))) {
			sqlite3_bind_int64(st, 1, d->ds);
			sqlite3_bind_text(st, 2, d->known[i].name, -1, SQLITE_STATIC);
			rc = cat_step_done(c, st, "dropping a version", err);
			sqlite3_finalize(st);
		}
		d->stats->versions_removed++;
	}
	if (!rc && d->man.n)
		rc = cat_gc_lists(c, d->ds, err);
	if (!rc && d->man.n)
		rc = cat_exec_id(c, SUMMARY_UPDATE " WHERE id = ?1", d->ds,
				 "summarising a dataset", err);
	else if (!rc && d->left)
		rc = ds_sync_leftovers(d, err);
	else if (!rc)
		rc = cat_exec_id(c, "DELETE FROM datasets WHERE id = ?1", d->ds,
				 "dropping a dataset", err);
	return cat_end(c, "sync_dataset", top, rc, err);
}

/* Names in natural order ("v9" before "v10"): versions are written in the
 * order they were made, so a parent is in the catalog before its child and
 * the child extends the parent's shard list (cat_put_shards). */
static int natural_cmp(const void *a, const void *b)
{
	const char *x = (*(const struct listed *const *)a)->name;
	const char *y = (*(const struct listed *const *)b)->name;
	while (*x && *y) {
		if (isdigit((unsigned char)*x) && isdigit((unsigned char)*y)) {
			while (*x == '0')
				x++;
			while (*y == '0')
				y++;
			size_t nx = strspn(x, "0123456789"), ny = strspn(y, "0123456789");
			int c = nx != ny ? (nx < ny ? -1 : 1) : strncmp(x, y, nx);
			if (c)
				return c;
			x += nx;
			y += ny;
		} else if (*x != *y) {
			return (unsigned char)*x < (unsigned char)*y ? -1 : 1;
		} else {
			x++;
			y++;
		}
	}
	return *x ? 1 : *y ? -1 : strcmp((*(const struct listed *const *)a)->name,
					 (*(const struct listed *const *)b)->name);
}

/* Queue every listed version, in natural order (natural_cmp). */
static int ds_sync_versions(struct ds_batch *b, mt_error *err)
{
	const struct listing *l = &b->d->man;
	const struct listed **order = malloc((l->n ? l->n : 1) * sizeof *order);
	if (!order)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i < l->n; i++)
		order[i] = &l->v[i];
	qsort(order, l->n, sizeof *order, natural_cmp);
	int rc = 0;
	for (size_t i = 0; !rc && i < l->n; i++)
		rc = ds_sync_version(b, order[i], err);
	free(order);
	return rc;
}

/* Read what changed of one dataset and write it.  The store is read without
 * the lock; versions are read and written in batches (ds_batch_flush). */
static int cat_sync_dataset(mt_catalog *c, int64_t bucket, mt_store *s, const char *dataset,
			    int flags, mt_catalog_sync_stats *stats, mt_error *err)
{
	struct ds_sync d = {.c = c, .s = s, .dataset = dataset, .flags = flags, .stats = stats};
	struct ds_batch *b = calloc(1, sizeof *b);
	if (!b)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	b->d = &d;
	int rc = ds_sync_start(&d, bucket, err);
	if (!rc)
		rc = ds_sync_versions(b, err);
	if (!rc)
		rc = ds_batch_flush(b, err);
	for (size_t i = 0; i < b->n; i++)
		mt_reader_close(b->v[i].r);
	free(b);
	if (!rc && d.ds) {
		pthread_mutex_lock(&c->lock);
		rc = ds_sync_finish(&d, err);
		pthread_mutex_unlock(&c->lock);
	}
	known_free(d.known, d.nknown);
	listing_free(&d.man);
	listing_free(&d.meta);
	listing_free(&d.prot);
	if (!rc && d.bad.code && err)
		*err = d.bad;
	return rc ? rc : d.bad.code;
}

/* Drop the datasets of bucket that the store no longer lists. */
static int cat_drop_missing(mt_catalog *c, int64_t bucket, char **names, size_t n,
			    mt_catalog_sync_stats *stats, mt_error *err)
{
	int rc = cat_exec(c, "CREATE TEMP TABLE IF NOT EXISTS listed(name TEXT PRIMARY KEY);"
			  "DELETE FROM temp.listed", "syncing", err);
	sqlite3_stmt *st;
	if (!rc && !(rc = cat_prepare(c, "INSERT OR IGNORE INTO temp.listed VALUES(?1)", &st,
				      err))) {
		for (size_t i = 0; !rc && i < n; i++) {
			sqlite3_bind_text(st, 1, names[i], -1, SQLITE_STATIC);
			rc = cat_step_done(c, st, "syncing", err);
		}
		sqlite3_finalize(st);
	}
	if (!rc && !(rc = cat_prepare(c, "DELETE FROM datasets WHERE bucket_id = ?1 AND name NOT "
				      "IN (SELECT name FROM temp.listed) RETURNING nversions", &st,
				      err))) {
		sqlite3_bind_int64(st, 1, bucket);
		int r;
		while ((r = sqlite3_step(st)) == SQLITE_ROW)
			stats->versions_removed += (uint64_t)sqlite3_column_int64(st, 0);
		if (r != SQLITE_DONE)
			rc = cat_sqlerr(c, err, "dropping datasets");
		sqlite3_finalize(st);
	}
	return rc;
}

/* Datasets are synced this many at a time (each reads its listings and
 * manifests from the store without the lock), inside one write transaction
 * committed every SYNC_COMMIT_MS: a first sync of 10,000 datasets is neither
 * 10,000 sequential listings nor 20,000 commits, and other processes' writes
 * still get in between. */
#define SYNC_DATASET_THREADS 4
#define SYNC_COMMIT_MS 250

struct cat_sync_run {
	mt_catalog *c;
	mt_store *s;
	int64_t bucket;
	int flags;
	char **names;
	size_t n;
	mt_catalog_sync_stats *st;
	pthread_mutex_t lock; /* next, done, stop, the first error; c->lock nests inside */
	pthread_cond_t moved;
	size_t next, done;
	int stop;             /* canceled, or a dataset failed */
	size_t failed;        /* the first failed dataset (index), n when none */
	int rc;
	mt_error err;
	int in_tx;            /* the run's transaction is open (under c->lock) */
	double tx_since;
};

static double cat_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Commit the run's transaction when it is old enough (or finish is set) and
 * open the next one; under c->lock. */
static int cat_sync_tx(struct cat_sync_run *r, int finish, mt_error *err)
{
	int rc = 0;
	if (r->in_tx && sqlite3_get_autocommit(r->c->db))
		r->in_tx = 0; /* rolled back by SQLite itself (a full disk) */
	if (r->in_tx && (finish || cat_now_ms() - r->tx_since >= SYNC_COMMIT_MS)) {
		r->in_tx = 0;
		rc = cat_exec_retry(r->c, "COMMIT", "committing a sync", err);
		if (rc)
			sqlite3_exec(r->c->db, "ROLLBACK", NULL, NULL, NULL);
	}
	if (!rc && !finish && !r->in_tx && sqlite3_get_autocommit(r->c->db)) {
		rc = cat_exec_retry(r->c, "BEGIN IMMEDIATE", "starting a sync", err);
		r->in_tx = !rc;
		r->tx_since = cat_now_ms();
	}
	return rc;
}

static void *cat_sync_worker(void *arg)
{
	struct cat_sync_run *r = arg;
	pthread_mutex_lock(&r->lock);
	while (!r->stop && r->next < r->n) {
		size_t i = r->next++;
		pthread_mutex_unlock(&r->lock);
		mt_error e = {0};
		int rc = cat_sync_dataset(r->c, r->bucket, r->s, r->names[i], r->flags, r->st, &e);
		pthread_mutex_lock(&r->c->lock);
		r->st->datasets++;
		if (!rc)
			rc = cat_sync_tx(r, 0, &e);
		pthread_mutex_unlock(&r->c->lock);
		pthread_mutex_lock(&r->lock);
		/* The error reported is the first dataset's in listing order, as a
		 * sync one dataset at a time would report. */
		if (rc && i < r->failed) {
			r->failed = i;
			r->rc = rc;
			r->err = e;
			r->stop = 1;
		}
		r->done++;
		pthread_cond_signal(&r->moved);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Sync r's datasets on worker threads; progress is called from this thread. */
static int cat_sync_datasets(struct cat_sync_run *r, const char *remote, mt_progress_fn progress,
			     void *ud, mt_error *err)
{
	pthread_t t[SYNC_DATASET_THREADS];
	size_t nt = 0, want = r->n < SYNC_DATASET_THREADS ? r->n : SYNC_DATASET_THREADS;
	pthread_mutex_lock(&r->c->lock);
	int rc = cat_sync_tx(r, 0, err);
	pthread_mutex_unlock(&r->c->lock);
	while (!rc && nt < want && !pthread_create(&t[nt], NULL, cat_sync_worker, r))
		nt++;
	if (!rc && want && !nt)
		rc = mt_error_set(err, MT_ENOMEM, "sync: cannot start a thread");
	pthread_mutex_lock(&r->lock);
	if (rc)
		r->stop = 1;
	while (nt && r->done < r->n && !(r->stop && r->done == r->next)) {
		if (progress && !r->stop && progress(ud, r->done, r->n)) {
			r->stop = 1;
			rc = mt_error_set(err, MT_ECANCELED, "sync of %s canceled", remote);
		}
		if (r->done < r->n && !(r->stop && r->done == r->next))
			pthread_cond_wait(&r->moved, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	if (!rc && r->rc) {
		rc = r->rc;
		if (err)
			*err = r->err;
	}
	return rc;
}

int mt_catalog_sync(mt_catalog *c, const char *remote, mt_store *s, const char *dataset,
		    int flags, mt_progress_fn progress, void *ud, mt_catalog_sync_stats *st,
		    mt_error *err)
{
	mt_catalog_sync_stats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	struct cat_sync_run r = {.c = c, .s = s, .flags = flags, .st = st};
	pthread_mutex_lock(&c->lock);
	int rc = cat_bucket(c, remote, mt_store_url(s), REMOTE_KEEP, NULL, &r.bucket, err);
	pthread_mutex_unlock(&c->lock);
	if (rc)
		return rc;
	int models_only = (flags & MT_CATALOG_MODELS) && !dataset;
	if (models_only) {
		/* No dataset listed, none dropped. */
	} else if (dataset) {
		rc = mt_name_check(dataset, "dataset", err);
		if (!rc && !(r.names = calloc(1, sizeof *r.names)))
			rc = mt_error_set(err, MT_ENOMEM, "out of memory");
		if (!rc && !(r.names[r.n++] = strdup(dataset)))
			rc = mt_error_set(err, MT_ENOMEM, "out of memory");
	} else {
		/* Also those whose versions are all gone while their shards remain. */
		rc = mt_store_dataset_dirs(s, &r.names, &r.n, err);
	}
	r.failed = r.n;
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.moved, NULL);
	if (!rc)
		rc = cat_sync_datasets(&r, remote, progress, ud, err);
	pthread_cond_destroy(&r.moved);
	pthread_mutex_destroy(&r.lock);
	/* Models beside the datasets, in the same transaction. */
	if (!rc && !dataset)
		rc = mti_catalog_sync_models(c, r.bucket, s, flags, progress, ud, r.n, st, err);
	pthread_mutex_lock(&c->lock);
	if (!rc && !dataset && !models_only)
		rc = cat_drop_missing(c, r.bucket, r.names, r.n, st, err);
	/* A remote is at one place: buckets listed under it from where it used to
	 * point would be browsed, and acted on, as if they were still its. */
	if (!rc && !dataset && !models_only)
		rc = cat_exec_id(c, "DELETE FROM buckets WHERE id <> ?1 AND remote_id ="
				 " (SELECT remote_id FROM buckets WHERE id = ?1)", r.bucket,
				 "dropping the remote's old buckets", err);
	/* What was synced before a failure or a cancel stays: each dataset's
	 * writes are whole (savepoints), and committing them is as right as
	 * committing each on its own was. */
	mt_error e1 = {0};
	int rc1 = cat_sync_tx(&r, 1, rc ? &e1 : err);
	if (!rc)
		rc = rc1;
	if (!rc && progress)
		progress(ud, r.n, r.n);
	/* An interrupted sync says nothing about the remote's health. */
	if (rc != MT_ECANCELED && rc != MT_ENOMEM) {
		mt_error e2;
		int state = !rc ? REMOTE_SYNCED
			    : rc == MT_ENET || rc == MT_EAUTH ? REMOTE_OFFLINE : REMOTE_TROUBLED;
		cat_bucket(c, remote, mt_store_url(s), state, err ? err->message : "sync failed",
			   &r.bucket, &e2);
	}
	pthread_mutex_unlock(&c->lock);
	mt_strv_free(r.names, r.n);
	return rc;
}

/* Write what was read of one version and refresh its dataset's summary and
 * shard lists; one transaction under the lock. */
static int cat_note_put(struct ds_sync *d, int64_t bucket, const mt_reader *r,
			const struct prot *prot, mt_error *err)
{
	mt_catalog *c = d->c;
	int top = 0;
	pthread_mutex_lock(&c->lock);
	int rc = cat_begin(c, "sync_version", &top, err);
	if (!rc) {
		if (!(rc = cat_dataset_id(c, bucket, d->dataset, 1, &d->ds, err)) &&
		    !(rc = cat_put_version(c, d->ds, r, &d->man.v[0], d->meta.n ? &d->meta.v[0] : NULL,
					   prot, err)) &&
		    !(rc = cat_gc_lists(c, d->ds, err)))
			rc = cat_exec_id(c, SUMMARY_UPDATE " WHERE id = ?1", d->ds,
					 "summarising a dataset", err);
		rc = cat_end(c, "sync_version", top, rc, err);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_sync_version(mt_catalog *c, const char *remote, mt_store *s, const char *dataset,
			    const char *version, mt_catalog_sync_stats *st, mt_error *err)
{
	mt_catalog_sync_stats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	struct ds_sync d = {.c = c, .s = s, .dataset = dataset, .stats = st};
	int64_t bucket;
	int rc = mt_name_check(dataset, "dataset", err);
	if (!rc)
		rc = mt_name_check(version, "version", err);
	if (!rc) {
		pthread_mutex_lock(&c->lock);
		rc = cat_bucket(c, remote, mt_store_url(s), REMOTE_KEEP, NULL, &bucket, err);
		pthread_mutex_unlock(&c->lock);
	}
	if (!rc)
		rc = cat_list_one(s, dataset, "versions", version, &d.man, err);
	if (!rc && d.man.n != 1) {
		/* Not there (any more): the dataset's sync says what is. */
		listing_free(&d.man);
		return mt_catalog_sync(c, remote, s, dataset, 0, NULL, NULL, st, err);
	}
	if (!rc)
		rc = cat_list_one(s, dataset, "meta", version, &d.meta, err);
	if (!rc)
		rc = cat_list_one(s, dataset, "protect", version, &d.prot, err);
	struct prot prot = {d.prot.n ? &d.prot.v[0] : NULL, 0, 0, 0};
	mt_reader *r = NULL;
	if (!rc)
		rc = mt_reader_open(s, dataset, version, &r, err);
	if (!rc && prot.rec)
		ds_sync_protection(&d, version, &prot);
	if (!rc) {
		st->datasets = st->versions = st->versions_read = 1;
		rc = cat_note_put(&d, bucket, r, &prot, err);
	}
	mt_reader_close(r);
	listing_free(&d.man);
	listing_free(&d.meta);
	listing_free(&d.prot);
	return rc;
}

/* ---- for the catalog's other files (catalog.h) ---- */

int mti_cat_sqlerr(mt_catalog *c, mt_error *err, const char *what)
{
	return cat_sqlerr(c, err, what);
}

int mti_cat_prepare(mt_catalog *c, const char *sql, sqlite3_stmt **st, mt_error *err)
{
	return cat_prepare(c, sql, st, err);
}

int mti_cat_step_done(mt_catalog *c, sqlite3_stmt *st, const char *what, mt_error *err)
{
	return cat_step_done(c, st, what, err);
}

int mti_cat_exec_id(mt_catalog *c, const char *sql, int64_t id, const char *what, mt_error *err)
{
	return cat_exec_id(c, sql, id, what, err);
}

int mti_cat_begin(mt_catalog *c, const char *name, int *top, mt_error *err)
{
	return cat_begin(c, name, top, err);
}

int mti_cat_end(mt_catalog *c, const char *name, int top, int rc, mt_error *err)
{
	return cat_end(c, name, top, rc, err);
}

int mti_cat_lookup(mt_catalog *c, const char *sql, int64_t key, const char *text, int64_t *id,
		   mt_error *err)
{
	return cat_lookup(c, sql, key, text, id, err);
}

int mti_listing_add(void *ud, const mt_object_info *o)
{
	return listing_add(ud, o);
}

void mti_listing_free(struct listing *l)
{
	listing_free(l);
}

void mti_listing_sort(struct listing *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, listed_cmp);
}

const struct listed *mti_listing_find(const struct listing *l, const char *name)
{
	return listing_find(l, name);
}

/* ---- listings ------------------------------------------------------------------- */

/* A level's listing: ncols text columns after the row id (matorage-catalog.h
 * names them), from one query. */
struct level {
	size_t ncols;
	const char *sql; /* ?1 parent id, ?2 the filter as a LIKE pattern (NULL: none) */
};

#define LIKE_FILTER(cols) " AND (?2 IS NULL OR " cols ")"

/* A version's protection as "K+M" (p: the table's prefix); '?' when its
 * record could not be read, NULL when it has none. */
#define PROTECTION(p) \
	"CASE WHEN " p "protect_k > 0 THEN " p "protect_k || '+' || " p "protect_m" \
	" WHEN " p "protect_k < 0 THEN '?' END"

/* A version's last check (its state, and from what or what is lost), what
 * that check was, and its last repair, as text. */
#define CHECK_FIELDS                                                                        \
	"(SELECT state || CASE WHEN sources <> '' THEN ' from ' || sources ELSE '' END ||" \
	" CASE WHEN message <> '' THEN ': ' || message ELSE '' END FROM checks WHERE"      \
	" version_id = v.id ORDER BY id DESC LIMIT 1) AS health,"                          \
	" (SELECT kind || ' at ' || at || ': ' || objects || ' objects, ' || damaged ||"   \
	" ' damaged, ' || rebuilt || ' rebuilt, ' || bytes_read || ' bytes read' FROM"     \
	" checks WHERE version_id = v.id ORDER BY id DESC LIMIT 1) AS lastcheck,"          \
	" (SELECT at || ': ' || rebuilt || ' rebuilt' || CASE WHEN sources <> '' THEN"     \
	" ' from ' || sources ELSE '' END || ', ' || unrepairable || ' unrepairable' FROM" \
	" checks WHERE version_id = v.id AND kind = 'repair' ORDER BY id DESC LIMIT 1)"    \
	" AS lastrepair"

/* Field rows of one version: (name, value) pairs in display order. */
#define FIELD(name, expr) "SELECT 0, " name ", " expr " FROM v UNION ALL "

/* How many of version v's shards its parent lists too (by sha256), NULL
 * without a parent, 0 when the parent is not in the catalog.  Along a chain
 * (one list) the parent's shards are all shared, and only v's own rows are
 * looked up, by sha256 (the unary + keeps SQLite from scanning the list's
 * prefix instead); else the two lists are compared. */
#define NSHARED                                                                             \
	"CASE v.parent WHEN '' THEN NULL ELSE coalesce((SELECT CASE WHEN pv.shard_list ="  \
	" v.shard_list AND pv.nshards <= v.nshards THEN pv.nshards + (SELECT count(*) FROM"  \
	" shards s WHERE s.list_id = v.shard_list AND s.idx >= pv.nshards AND s.idx <"      \
	" v.nshards AND EXISTS (SELECT 1 FROM shards x WHERE x.sha256 = s.sha256 AND"       \
	" +x.list_id = v.shard_list AND +x.idx < pv.nshards)) ELSE (SELECT count(*) FROM"    \
	" shards s WHERE s.list_id = v.shard_list AND s.idx < v.nshards AND s.sha256 IN"     \
	" (SELECT ps.sha256 FROM shards ps WHERE ps.list_id = pv.shard_list AND ps.idx <"    \
	" pv.nshards)) END FROM versions pv WHERE pv.dataset_id = v.dataset_id AND"          \
	" pv.name = v.parent), 0) END"

/* A shard row's id names its version and index: rows are shared by the
 * versions of a chain, and the browser opens a shard of one version. */
#define SHARD_ID "((v.id << 32) | s.idx)"

static const struct level levels[MT_CAT_NLEVELS] = {
	[MT_CAT_REMOTES] = {6,
		"SELECT r.id, r.name, r.url, r.online,"
		" (SELECT count(*) FROM datasets d JOIN buckets b ON b.id = d.bucket_id"
		"  WHERE b.remote_id = r.id), r.synced, r.error FROM remotes r WHERE 1"
		LIKE_FILTER("r.name LIKE ?2 ESCAPE '\\' OR r.url LIKE ?2 ESCAPE '\\'")
		" ORDER BY r.name = 'local' DESC, r.name"},
	[MT_CAT_BUCKETS] = {4,
		"SELECT b.id, b.url, count(d.id), coalesce(sum(d.nversions), 0),"
		" coalesce(sum(d.stored_bytes), 0) FROM buckets b LEFT JOIN datasets d"
		" ON d.bucket_id = b.id WHERE b.remote_id = ?1"
		LIKE_FILTER("b.url LIKE ?2 ESCAPE '\\'") " GROUP BY b.id ORDER BY b.url"},
	[MT_CAT_DATASETS] = {7,
		"SELECT id, name, nversions, latest, rows, stored_bytes, tags, description"
		" FROM datasets WHERE bucket_id = ?1"
		LIKE_FILTER("name LIKE ?2 ESCAPE '\\' OR description LIKE ?2 ESCAPE '\\'"
			    " OR tags LIKE ?2 ESCAPE '\\'") " ORDER BY name"},
	[MT_CAT_VERSIONS] = {12,
		"SELECT v.id, v.name, v.created, v.rows, v.nshards, v.stored_bytes, v.parent,"
		" coalesce((SELECT group_concat(tag, ' ') FROM tags WHERE version_id = v.id), ''),"
		" v.description, " PROTECTION("v.") ", v.protect_overhead,"
		" (SELECT state FROM checks WHERE version_id = v.id ORDER BY id DESC LIMIT 1),"
		" " NSHARED
		" FROM versions v WHERE v.dataset_id = ?1"
		LIKE_FILTER("v.name LIKE ?2 ESCAPE '\\' OR v.description LIKE ?2 ESCAPE '\\' OR"
			    " EXISTS (SELECT 1 FROM tags t WHERE t.version_id = v.id AND"
			    " t.tag LIKE ?2 ESCAPE '\\')") " ORDER BY v.created, v.id"},
	[MT_CAT_SHARDS] = {8,
		"SELECT " SHARD_ID ", s.idx, s.sha256, s.first_row, s.rows, s.bytes,"
		" nullif(s.verified, ''), nullif(s.health, ''), nullif(s.health_note, '')"
		" FROM versions v JOIN shards s ON s.list_id = v.shard_list AND s.idx < v.nshards"
		" WHERE v.id = ?1" LIKE_FILTER("s.sha256 LIKE ?2 ESCAPE '\\'") " ORDER BY s.idx"},
	[MT_CAT_ATTRS] = {4,
		"SELECT idx, name, dtype, shape, ragged"
		" FROM attrs WHERE version_id = ?1" LIKE_FILTER("name LIKE ?2 ESCAPE '\\'")
		" ORDER BY idx"},
	[MT_CAT_VERSION] = {2,
		"WITH v AS (SELECT v.*, d.name AS dataset, b.url AS url, r.name AS remote,"
		" (SELECT group_concat(tag, ', ') FROM tags WHERE version_id = v.id) AS tagl,"
		" (SELECT ltrim(args || '  script ' || substr(sha256, 1, 12)) FROM recipes"
		" WHERE version_id = v.id) AS recipe,"
		" (SELECT group_concat(p.name, ' < ') FROM (WITH RECURSIVE up(name, n) AS"
		"  (SELECT v.parent, 0 UNION ALL SELECT pv.parent, up.n + 1 FROM up JOIN versions pv"
		"   ON pv.dataset_id = v.dataset_id AND pv.name = up.name WHERE up.name <> ''"
		"   AND up.n < 64) SELECT name FROM up WHERE name <> '' ORDER BY n) p) AS lineage,"
		" (SELECT count(*) FROM shards WHERE list_id = v.shard_list AND idx < v.nshards"
		"  AND verified = 'ok') AS nok,"
		" coalesce(" NSHARED ", 0) AS nshared,"
		" (SELECT count(*) FROM shards WHERE list_id = v.shard_list AND idx < v.nshards"
		"  AND verified NOT IN ('', 'ok')) AS nbad, " CHECK_FIELDS
		" FROM versions v JOIN datasets d ON d.id = v.dataset_id JOIN buckets b"
		" ON b.id = d.bucket_id JOIN remotes r ON r.id = b.remote_id WHERE v.id = ?1)"
		FIELD("'dataset'", "dataset") FIELD("'version'", "name")
		FIELD("'remote'", "remote || '  ' || url")
		FIELD("'parent'", "nullif(parent, '')")
		FIELD("'lineage'", "coalesce(name || ' < ' || lineage, name)")
		FIELD("'shared'", "CASE WHEN parent = '' THEN NULL ELSE nshared || ' of ' ||"
		      " nshards || ' shards with ' || parent || CASE nshared WHEN nshards THEN"
		      " ' (all)' ELSE '' END END")
		FIELD("'created'", "created")
		FIELD("'author'", "nullif(author, '')")
		FIELD("'description'", "nullif(description, '')")
		FIELD("'tags'", "tagl") FIELD("'rows'", "rows")
		FIELD("'shards'", "nshards") FIELD("'stored bytes'", "stored_bytes")
		FIELD("'raw bytes'", "raw_bytes")
		FIELD("'ratio'", "1.0 * raw_bytes / nullif(stored_bytes, 0)")
		FIELD("'zstd level'", "level")
		FIELD("'recipe'", "recipe")
		/* A row per source, its id the source's version where the catalog
		 * knows it (0: not indexed), so the browser can go there. */
		"SELECT * FROM (SELECT coalesce((SELECT sv.id FROM versions sv JOIN datasets sd"
		" ON sd.id = sv.dataset_id JOIN buckets sb ON sb.id = sd.bucket_id WHERE"
		" sd.name = s.dataset AND sv.name = s.version AND sb.url = CASE s.store WHEN ''"
		" THEN v.url ELSE s.store END), 0), 'source', s.dataset || '@' || s.version ||"
		" CASE s.store WHEN '' THEN '' ELSE '  ' || s.store END FROM sources s, v"
		" WHERE s.version_id = v.id ORDER BY s.idx) UNION ALL "
		FIELD("'verified'", "CASE WHEN nok + nbad = 0 THEN NULL ELSE"
		      " nok || ' of ' || nshards || ' shards sound, ' || nbad || ' damaged' END")

		"SELECT 0, 'attributes', (SELECT count(*) FROM attrs WHERE version_id = ?1) FROM v"
		" UNION ALL " FIELD("'protection'", PROTECTION("") " || printf(', overhead %.1f%%',"
				    " 100 * protect_overhead)")
		FIELD("'health'", "health") FIELD("'checked'", "lastcheck")
		"SELECT 0, 'repaired', lastrepair FROM v"},
	[MT_CAT_SHARD] = {2,
		"WITH s AS (SELECT s.*, d.name AS dataset, v.name AS version FROM versions v"
		" JOIN shards s ON s.list_id = v.shard_list AND s.idx = (?1 & 4294967295) AND"
		" s.idx < v.nshards JOIN datasets d ON d.id = v.dataset_id WHERE v.id = ?1 >> 32)"
		"SELECT 0, 'shard', idx FROM s UNION ALL SELECT 0, 'version', dataset || '@' ||"
		" version FROM s UNION ALL SELECT 0, 'sha256', sha256 FROM s UNION ALL SELECT 0,"
		" 'key', 'datasets/' || dataset || '/shards/' || sha256 || '.h5' FROM s UNION ALL"
		" SELECT 0, 'rows', rows FROM s UNION ALL SELECT 0, 'first row', first_row FROM s"
		" UNION ALL SELECT 0, 'bytes', bytes FROM s UNION ALL SELECT 0, 'verified',"
		" CASE verified WHEN '' THEN NULL ELSE verified || ' at ' || verified_at END"
		" FROM s UNION ALL SELECT 0, 'health', CASE health WHEN '' THEN NULL ELSE health ||"
		" CASE health_note WHEN '' THEN '' ELSE ': ' || health_note END || ' at ' ||"
		" health_at END FROM s"},
	[MT_CAT_JOBS] = {6,
		"SELECT id, id, kind, target, started, finished, CASE WHEN code IS NULL THEN"
		" 'running' WHEN code = 0 THEN 'ok' ELSE message END FROM jobs WHERE 1"
		LIKE_FILTER("kind LIKE ?2 ESCAPE '\\' OR target LIKE ?2 ESCAPE '\\'")
		" ORDER BY id DESC"},
	[MT_CAT_JOB] = {2,
		"SELECT rowid, item, CASE code WHEN 0 THEN 'ok' ELSE message END FROM job_results"
		" WHERE job_id = ?1" LIKE_FILTER("item LIKE ?2 ESCAPE '\\'") " ORDER BY rowid"},
	[MT_CAT_SEARCH] = {5,
		"SELECT s.rowid, r.name, s.dataset, s.version, s.tags,"
		" snippet(search, -1, '[', ']', '...', 8) FROM search s"
		" JOIN versions v ON v.id = s.rowid JOIN datasets d ON d.id = v.dataset_id"
		" JOIN buckets b ON b.id = d.bucket_id JOIN remotes r ON r.id = b.remote_id"
		" WHERE search MATCH ?2 ORDER BY rank, r.name, s.dataset, v.created"},
	[MT_CAT_MODELS] = {7,
		"SELECT id, name, ncheckpoints, latest, step, stored_bytes, tags, description"
		" FROM models WHERE bucket_id = ?1"
		LIKE_FILTER("name LIKE ?2 ESCAPE '\\' OR description LIKE ?2 ESCAPE '\\'"
			    " OR tags LIKE ?2 ESCAPE '\\'") " ORDER BY name"},
	[MT_CAT_CHECKPOINTS] = {12,
		"SELECT id, name, created, step, ntensors, bytes, stored_bytes, new_bytes, parent,"
		" metrics, tags, description, author FROM checkpoints WHERE model_id = ?1"
		LIKE_FILTER("name LIKE ?2 ESCAPE '\\' OR description LIKE ?2 ESCAPE '\\'"
			    " OR tags LIKE ?2 ESCAPE '\\'") " ORDER BY num"},
	[MT_CAT_TENSORS] = {7,
		"SELECT t.idx, t.key, t.dtype, t.shape, t.bytes, t.stored, t.sha256,"
		" CASE WHEN k.parent = '' THEN 0 WHEN p.id IS NULL THEN NULL ELSE EXISTS (SELECT 1 FROM"
		"  ckpt_tensors pt WHERE pt.checkpoint_id = p.id AND pt.sha256 = t.sha256) END"
		" FROM ckpt_tensors t JOIN checkpoints k ON k.id = t.checkpoint_id LEFT JOIN"
		" checkpoints p ON p.model_id = k.model_id AND p.name = k.parent"
		" WHERE t.checkpoint_id = ?1" LIKE_FILTER("t.key LIKE ?2 ESCAPE '\\'")
		" ORDER BY t.idx"},
	[MT_CAT_SEARCH_MODELS] = {5,
		"SELECT s.rowid, r.name, s.model, s.version, s.tags,"
		" snippet(ckpt_search, -1, '[', ']', '...', 8) FROM ckpt_search s"
		" JOIN checkpoints k ON k.id = s.rowid JOIN models m ON m.id = k.model_id"
		" JOIN buckets b ON b.id = m.bucket_id JOIN remotes r ON r.id = b.remote_id"
		" WHERE ckpt_search MATCH ?2 ORDER BY rank, r.name, s.model, k.num"},
};

/* "%text%" with LIKE's wildcards escaped. */
static char *cat_like(const char *text)
{
	size_t n = strlen(text);
	char *p = malloc(2 * n + 3), *q = p;
	if (!p)
		return NULL;
	*q++ = '%';
	for (const char *s = text; *s; s++) {
		if (*s == '%' || *s == '_' || *s == '\\')
			*q++ = '\\';
		*q++ = *s;
	}
	*q++ = '%';
	*q = '\0';
	return p;
}

/* Words of free text as an FTS5 query: each a quoted prefix, all required,
 * so no user input is read as query syntax. */
static char *cat_fts_query(const char *text)
{
	size_t n = strlen(text);
	char *p = malloc(4 * n + 8), *q = p;
	if (!p)
		return NULL;
	const char *s = text;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		if (q != p)
			*q++ = ' ';
		*q++ = '"';
		for (; *s && *s != ' ' && *s != '\t'; s++) {
			if (*s == '"')
				*q++ = '"';
			*q++ = *s;
		}
		*q++ = '"';
		*q++ = '*';
	}
	*q = '\0';
	return p;
}

int mt_catalog_list(mt_catalog *c, int level, int64_t parent, const char *filter,
		    mt_catalog_fn fn, void *ud, mt_error *err)
{
	if (level < 0 || level >= MT_CAT_NLEVELS)
		return mt_error_set(err, MT_EINVAL, "catalog: no list %d", level);
	const struct level *lv = &levels[level];
	char *pattern = NULL;
	if (level == MT_CAT_SEARCH || level == MT_CAT_SEARCH_MODELS) {
		if (!filter || !*filter)
			return mt_error_set(err, MT_EINVAL, "search: empty query");
		pattern = cat_fts_query(filter);
	} else if (filter && *filter) {
		pattern = cat_like(filter);
	}
	if (filter && *filter && !pattern)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	if ((level == MT_CAT_SEARCH || level == MT_CAT_SEARCH_MODELS) && !*pattern) {
		free(pattern);
		return mt_error_set(err, MT_EINVAL, "search: empty query");
	}
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, lv->sql, &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, parent);
		if (pattern)
			sqlite3_bind_text(st, 2, pattern, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 2);
		const char *cols[16];
		mt_catalog_row row = {0, lv->ncols, cols};
		int r;
		while ((r = sqlite3_step(st)) == SQLITE_ROW) {
			row.id = sqlite3_column_int64(st, 0);
			for (size_t i = 0; i < lv->ncols; i++) {
				const unsigned char *t = sqlite3_column_text(st, (int)i + 1);
				cols[i] = (const char *)t;
			}
			if ((rc = fn(ud, &row)))
				break;
		}
		if (!rc && r != SQLITE_DONE)
			rc = cat_sqlerr(c, err, "listing");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	free(pattern);
	return rc;
}

/* ---- locating rows ----------------------------------------------------------------- */

static char *cat_col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? strdup((const char *)t) : NULL;
}

int mt_catalog_locate(mt_catalog *c, int level, int64_t id, mt_catalog_ref *out, mt_error *err)
{
	static const char *const sql[MT_CAT_NLEVELS] = {
		[MT_CAT_REMOTES] = "SELECT name, url, NULL, NULL, NULL, -1 FROM remotes WHERE id = ?1",
		[MT_CAT_BUCKETS] = "SELECT r.name, b.url, NULL, NULL, NULL, -1 FROM buckets b JOIN "
				   "remotes r ON r.id = b.remote_id WHERE b.id = ?1",
		[MT_CAT_DATASETS] = "SELECT r.name, b.url, d.name, NULL, NULL, -1 FROM datasets d "
				    "JOIN buckets b ON b.id = d.bucket_id JOIN remotes r ON r.id = "
				    "b.remote_id WHERE d.id = ?1",
		[MT_CAT_VERSIONS] = "SELECT r.name, b.url, d.name, v.name, NULL, -1 FROM versions v "
				    "JOIN datasets d ON d.id = v.dataset_id JOIN buckets b ON b.id = "
				    "d.bucket_id JOIN remotes r ON r.id = b.remote_id WHERE v.id = ?1",
		[MT_CAT_SHARDS] = "SELECT r.name, b.url, d.name, v.name, s.sha256, s.idx FROM versions "
				  "v JOIN shards s ON s.list_id = v.shard_list AND s.idx = (?1 & "
				  "4294967295) AND s.idx < v.nshards JOIN datasets d ON d.id = "
				  "v.dataset_id JOIN buckets b ON b.id = d.bucket_id JOIN remotes r "
				  "ON r.id = b.remote_id WHERE v.id = ?1 >> 32",
		[MT_CAT_MODELS] = "SELECT r.name, b.url, NULL, NULL, NULL, -1, m.name FROM models m "
				  "JOIN buckets b ON b.id = m.bucket_id JOIN remotes r ON r.id = "
				  "b.remote_id WHERE m.id = ?1",
		[MT_CAT_CHECKPOINTS] = "SELECT r.name, b.url, NULL, k.name, NULL, -1, m.name FROM "
				       "checkpoints k JOIN models m ON m.id = k.model_id JOIN buckets "
				       "b ON b.id = m.bucket_id JOIN remotes r ON r.id = b.remote_id "
				       "WHERE k.id = ?1",
	};
	memset(out, 0, sizeof *out);
	out->shard = -1;
	int lv = level == MT_CAT_VERSION || level == MT_CAT_SEARCH ? MT_CAT_VERSIONS
		 : level == MT_CAT_SHARD				 ? MT_CAT_SHARDS
		 : level == MT_CAT_SEARCH_MODELS			 ? MT_CAT_CHECKPOINTS
									 : level;
	int model = lv == MT_CAT_MODELS || lv == MT_CAT_CHECKPOINTS;
	if (lv < 0 || lv >= MT_CAT_NLEVELS || !sql[lv])
		return mt_error_set(err, MT_EINVAL, "catalog: rows of list %d have no place", level);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, sql[lv], &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, id);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			out->remote = cat_col_dup(st, 0);
			out->url = cat_col_dup(st, 1);
			out->dataset = cat_col_dup(st, 2);
			out->version = cat_col_dup(st, 3);
			out->sha256 = cat_col_dup(st, 4);
			out->shard = sqlite3_column_int64(st, 5);
			out->model = model ? cat_col_dup(st, 6) : NULL;
			if (!out->remote || !out->url || (model && !out->model) ||
			    (!model && lv >= MT_CAT_DATASETS && !out->dataset) ||
			    ((lv == MT_CAT_VERSIONS || lv == MT_CAT_SHARDS ||
			      lv == MT_CAT_CHECKPOINTS) && !out->version) ||
			    (lv == MT_CAT_SHARDS && !out->sha256))
				rc = mt_error_set(err, MT_ENOMEM, "out of memory");
		} else if (r == SQLITE_DONE) {
			rc = mt_error_set(err, MT_ENOTFOUND, "catalog: no such row any more (sync?)");
		} else {
			rc = cat_sqlerr(c, err, "locating a row");
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	if (rc)
		mt_catalog_ref_free(out);
	return rc;
}

void mt_catalog_ref_free(mt_catalog_ref *r)
{
	if (!r)
		return;
	free(r->remote);
	free(r->url);
	free(r->dataset);
	free(r->version);
	free(r->sha256);
	free(r->model);
	memset(r, 0, sizeof *r);
	r->shard = -1;
}

/* ---- jobs --------------------------------------------------------------------------- */

/* Run one statement with ?1 a, ?2 b, ?3 code, ?4 msg, ?5 the time; a
 * statement may leave some out (binding those fails harmlessly). */
static int cat_run(mt_catalog *c, const char *sql, int64_t a, const char *b, int code,
		   const char *msg, const char *what, mt_error *err)
{
	char now[32];
	cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, sql, &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, a);
		sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, code);
		sqlite3_bind_text(st, 4, msg, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, what, err);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_job_begin(mt_catalog *c, const char *kind, const char *target, int64_t *id,
			 mt_error *err)
{
	pthread_mutex_lock(&c->lock);
	char now[32];
	cat_now(now, sizeof now);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT INTO jobs(kind, target, started) VALUES(?1, ?2, ?3)", &st,
			     err);
	if (!rc) {
		sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, now, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a job", err);
		sqlite3_finalize(st);
		*id = rc ? 0 : sqlite3_last_insert_rowid(c->db);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_job_result(mt_catalog *c, int64_t job, const char *item, int code,
			  const char *message, mt_error *err)
{
	return cat_run(c, "INSERT INTO job_results VALUES(?1, ?2, ?3, coalesce(?4, ''))", job,
		       item, code, message, "recording a job result", err);
}

int mt_catalog_job_end(mt_catalog *c, int64_t job, int code, const char *message,
		       mt_error *err)
{
	return cat_run(c, "UPDATE jobs SET finished = ?5, code = ?3, message = coalesce(?4, '') "
		       "WHERE id = ?1", job, NULL, code, message,
		       "recording a job's end", err);
}

/* The versions of dataset ?2 in bucket ?1: a shard's results hold for
 * every version listing it. */
#define SHARDS_OF_DATASET                                                                  \
	"SELECT v.id FROM versions v JOIN datasets d ON d.id = v.dataset_id JOIN buckets b" \
	" ON b.id = d.bucket_id WHERE b.url = ?1 AND d.name = ?2"
/* The shard lists of a dataset: a shard object's rows there are every row of
 * it the dataset's versions list. */
#define LISTS_OF_DATASET                                                                   \
	"SELECT l.id FROM shard_lists l JOIN datasets d ON d.id = l.dataset_id JOIN buckets b" \
	" ON b.id = d.bucket_id WHERE b.url = ?1 AND d.name = ?2"

int mt_catalog_shard_verified(mt_catalog *c, const char *url, const char *dataset,
			      const char *sha256, int code, const char *message, mt_error *err)
{
	char now[32];
	cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "UPDATE shards SET verified = ?4, verified_at = ?5, health = ?6, "
			     "health_note = '', health_at = ?5 WHERE sha256 = ?3 AND list_id IN "
			     "(" LISTS_OF_DATASET ")", &st, err);
	if (!rc) {
		sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, dataset, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, sha256, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, code ? (message && *message ? message : mt_strerror(code))
					      : "ok", -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, mt_catalog_health_name(code ? MT_HEALTH_DAMAGED
								     : MT_HEALTH_SOUND), -1,
				  SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a verification", err);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- health ------------------------------------------------------------------------ */

const char *mt_catalog_health_name(int state)
{
	static const char *const names[MT_HEALTH_NSTATES] = {
		[MT_HEALTH_SOUND] = "sound",		   [MT_HEALTH_REPAIRABLE] = "repairable",
		[MT_HEALTH_UNREPAIRABLE] = "unrepairable", [MT_HEALTH_DAMAGED] = "damaged",
		[MT_HEALTH_REBUILT] = "rebuilt",
	};
	return state >= 0 && state < MT_HEALTH_NSTATES ? names[state] : NULL;
}

void mt_catalog_check_init_size(mt_catalog_check *k, size_t size)
{
	memset(k, 0, size);
	k->size = size;
}

static void cat_bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
	sqlite3_bind_int64(st, i, v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* Parameters 1..3 of a statement about dataset@version in bucket url. */
static void cat_bind_version(sqlite3_stmt *st, const char *url, const char *dataset,
			     const char *version)
{
	sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, dataset, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, version, -1, SQLITE_STATIC);
}

/* A write about a version that changed no row found no version. */
static int cat_version_written(mt_catalog *c, int rc, const char *url, const char *dataset,
			       const char *version, mt_error *err)
{
	if (!rc && sqlite3_changes(c->db) == 0)
		rc = mt_error_set(err, MT_ENOTFOUND, "catalog: no version %s@%s in %s (sync?)",
				  dataset, version, url);
	return rc;
}

int mt_catalog_version_checked(mt_catalog *c, const char *url, const char *dataset,
			       const char *version, const mt_catalog_check *k, mt_error *err)
{
	const char *state = mt_catalog_health_name(k->state);
	if (!state || !k->kind)
		return mt_error_set(err, MT_EINVAL, "catalog: a check of %s@%s without %s", dataset,
			      version, state ? "a kind" : "a known state");
	char now[32];
	cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT INTO checks(version_id, kind, at, state, sources, message,"
			     " objects, damaged, rebuilt, unrepairable, bytes_read) SELECT v.id,"
			     " ?4, ?5, ?6, coalesce(?7, ''), coalesce(?8, ''), ?9, ?10, ?11, ?12, ?13"
			     " FROM versions v WHERE v.name = ?3 AND v.id IN (" SHARDS_OF_DATASET ")",
			     &st, err);
	if (!rc) {
		cat_bind_version(st, url, dataset, version);
		sqlite3_bind_text(st, 4, k->kind, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, state, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 7, k->sources, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 8, k->message, -1, SQLITE_STATIC);
		cat_bind_u64(st, 9, k->objects);
		cat_bind_u64(st, 10, k->damaged);
		cat_bind_u64(st, 11, k->rebuilt);
		cat_bind_u64(st, 12, k->unrepairable);
		cat_bind_u64(st, 13, k->bytes_read);
		rc = cat_step_done(c, st, "recording a check", err);
		sqlite3_finalize(st);
	}
	rc = cat_version_written(c, rc, url, dataset, version, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_shard_health(mt_catalog *c, const char *url, const char *dataset,
			    const char *sha256, int state, const char *note, mt_error *err)
{
	const char *name = mt_catalog_health_name(state);
	if (!name)
		return mt_error_set(err, MT_EINVAL, "catalog: shard %s of %s: no state %d", sha256,
			      dataset, state);
	char now[32];
	cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	/* A rebuilt shard was read back against its sha256: verified too. */
	int rc = cat_prepare(c, "UPDATE shards SET health = ?4, health_note = coalesce(?5, ''),"
			     " health_at = ?6, verified = CASE ?4 WHEN 'rebuilt' THEN 'ok' ELSE"
			     " verified END, verified_at = CASE ?4 WHEN 'rebuilt' THEN ?6 ELSE"
			     " verified_at END WHERE sha256 = ?3 AND list_id IN ("
			     LISTS_OF_DATASET ")", &st, err);
	if (!rc) {
		sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, dataset, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, sha256, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, note, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, now, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording a shard's health", err);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- statistics of attributes ------------------------------------------------- */

#define VERSION_IN_BUCKET                                                                  \
	"SELECT v.id FROM versions v JOIN datasets d ON d.id = v.dataset_id JOIN buckets b"  \
	" ON b.id = d.bucket_id WHERE b.url = ?1 AND d.name = ?2 AND v.name = ?3"

int mt_catalog_stats_put(mt_catalog *c, const char *url, const char *dataset,
			 const char *version, const char *attr, const char *json, mt_error *err)
{
	char now[32];
	cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "INSERT OR REPLACE INTO attr_stats(version_id, attr, json, computed)"
			     " SELECT id, ?4, ?5, ?6 FROM (" VERSION_IN_BUCKET ")", &st, err);
	if (!rc) {
		cat_bind_version(st, url, dataset, version);
		sqlite3_bind_text(st, 4, attr, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, json, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, now, -1, SQLITE_STATIC);
		rc = cat_step_done(c, st, "recording statistics", err);
		sqlite3_finalize(st);
	}
	rc = cat_version_written(c, rc, url, dataset, version, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_stats_get(mt_catalog *c, const char *url, const char *dataset,
			 const char *version, const char *attr, char **json, char **computed,
			 mt_error *err)
{
	*json = NULL;
	if (computed)
		*computed = NULL;
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = cat_prepare(c, "SELECT json, computed FROM attr_stats WHERE attr = ?4 AND"
			     " version_id IN (" VERSION_IN_BUCKET ")", &st, err);
	if (!rc) {
		cat_bind_version(st, url, dataset, version);
		sqlite3_bind_text(st, 4, attr, -1, SQLITE_STATIC);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			*json = strdup((const char *)sqlite3_column_text(st, 0));
			if (computed)
				*computed = strdup((const char *)sqlite3_column_text(st, 1));
			if (!*json || (computed && !*computed))
				rc = mt_error_set(err, MT_ENOMEM, "out of memory");
		} else if (r == SQLITE_DONE) {
			rc = mt_error_set(err, MT_ENOTFOUND, "catalog: no statistics of %s@%s %s",
					  dataset, version, attr);
		} else {
			rc = cat_sqlerr(c, err, "reading statistics");
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	if (rc) {
		free(*json);
		*json = NULL;
		if (computed) {
			free(*computed);
			*computed = NULL;
		}
	}
	return rc;
}
