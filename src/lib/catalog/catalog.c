/* catalog.c — libmatorage-catalog: opening, closing and healing the local SQLite index of remotes, buckets, datasets, versions, shards, tags, jobs and statistics, the statement helpers its files share, and remotes and buckets. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "catalog.h"

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

/* ---- statements ------------------------------------------------------------ */

int mti_cat_sqlerr(mt_catalog *c, mt_error *err, const char *what)
{
	int code = sqlite3_errcode(c->db);
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		c->corrupt = 1;
	int rc = code == SQLITE_NOMEM ? MT_ENOMEM
		 : code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? MT_ECORRUPT
								   : MT_EIO;
	return mt_error_set(err, rc, "catalog %s: %s: %s", c->path, what, sqlite3_errmsg(c->db));
}

int mti_cat_exec(mt_catalog *c, const char *sql, const char *what, mt_error *err)
{
	return sqlite3_exec(c->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0
								       : mti_cat_sqlerr(c, err, what);
}

/* How long a statement waits for another process's write lock, and how many
 * times a statement that still finds the catalog busy is tried: every one of
 * many concurrent puts notes its version, and each must land. */
#define CAT_BUSY_MS 30000
#define CAT_BUSY_TRIES 5

/* sql, tried again while SQLite says the catalog is busy: the busy timeout
 * waits out a lock, and a busy that comes back at once (WAL recovery by
 * another process) gets a short pause. */
int mti_cat_exec_retry(mt_catalog *c, const char *sql, const char *what, mt_error *err)
{
	int r = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	for (int i = 1; i < CAT_BUSY_TRIES && (r == SQLITE_BUSY || r == SQLITE_LOCKED); i++) {
		sqlite3_sleep(20 << i);
		r = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	}
	return r == SQLITE_OK ? 0 : mti_cat_sqlerr(c, err, what);
}

/* Start a write.  At the top level, BEGIN IMMEDIATE takes the write lock
 * before anything is read: a deferred transaction that has read cannot wait
 * for the lock when it comes to write (SQLite answers "database is locked"
 * at once), which is how concurrent puts lost their catalog updates.  Inside
 * a caller's transaction, a savepoint.  *top says which, for mti_cat_end. */
int mti_cat_begin(mt_catalog *c, const char *name, int *top, mt_error *err)
{
	*top = sqlite3_get_autocommit(c->db);
	if (*top)
		return mti_cat_exec_retry(c, "BEGIN IMMEDIATE", "starting a write", err);
	char sql[64];
	snprintf(sql, sizeof sql, "SAVEPOINT %s", name);
	return mti_cat_exec(c, sql, "starting a write", err);
}

/* Commit a write that went well (rc 0), else roll it back.  A commit that
 * fails rolls back and is the error: a write is reported done only when all
 * of it is. */
int mti_cat_end(mt_catalog *c, const char *name, int top, int rc, mt_error *err)
{
	char sql[96];
	if (!rc && top) {
		rc = mti_cat_exec_retry(c, "COMMIT", "committing a write", err);
	} else if (!rc) {
		snprintf(sql, sizeof sql, "RELEASE %s", name);
		rc = mti_cat_exec(c, sql, "committing a write", err);
	}
	if (rc && top) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	} else if (rc) {
		snprintf(sql, sizeof sql, "ROLLBACK TO %s; RELEASE %s", name, name);
		sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	}
	return rc;
}

int mti_cat_prepare(mt_catalog *c, const char *sql, sqlite3_stmt **st, mt_error *err)
{
	if (sqlite3_prepare_v2(c->db, sql, -1, st, NULL) != SQLITE_OK)
		return mti_cat_sqlerr(c, err, "preparing a query");
	return 0;
}

void mti_cat_bind_texts(sqlite3_stmt *st, int first, const char *const *v, int n)
{
	for (int i = 0; i < n; i++)
		sqlite3_bind_text(st, first + i, v[i], -1, SQLITE_STATIC);
}

/* Run a statement that returns no rows. */
int mti_cat_step_done(mt_catalog *c, sqlite3_stmt *st, const char *what, mt_error *err)
{
	int r = sqlite3_step(st);
	int rc = r == SQLITE_DONE || r == SQLITE_ROW ? 0 : mti_cat_sqlerr(c, err, what);
	sqlite3_reset(st);
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
		rc = c->db ? mti_cat_sqlerr(c, err, "opening")
			   : mt_error_set(err, MT_ENOMEM, "catalog %s: out of memory", c->path);
	*ino = stat(c->path, &sb) == 0 ? sb.st_ino : 0;
	/* Another matorage (a CLI write while the TUI runs) may hold the write
	 * lock for a moment; WAL lets readers go on meanwhile. */
	if (!rc)
		sqlite3_busy_timeout(c->db, CAT_BUSY_MS);
	if (!rc)
		rc = mti_cat_exec_retry(c, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
					"PRAGMA foreign_keys = ON; PRAGMA cache_size = -32768;"
					"PRAGMA temp_store = MEMORY;",
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
	if (rc == MT_ECORRUPT && ino && !(rc = mti_cat_move_aside(again, ino, &moved, err))) {
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
	int rc = path ? mti_cat_move_aside(path, ino, &moved, err)
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

void mti_cat_now(char *buf, size_t cap)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The id of a row found by an integer key ?1 and a text key ?2 (a query
 * may use only ?2), 0 when none. */
int mti_cat_lookup(mt_catalog *c, const char *sql, int64_t key, const char *text,
		   int64_t *id, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, sql, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	int r = sqlite3_step(st);
	*id = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	if (r != SQLITE_ROW && r != SQLITE_DONE)
		rc = mti_cat_sqlerr(c, err, "looking up");
	sqlite3_finalize(st);
	return rc;
}

/* The bucket row of (remote, url), created with its remote when new; the
 * remote's state changes unless it is REMOTE_KEEP: offline or troubled
 * (reachable, but something in it could not be read) with message `why`. */
int mti_cat_bucket(mt_catalog *c, const char *remote, const char *url, int state,
		   const char *why, int64_t *bucket, mt_error *err)
{
	char now[32];
	mti_cat_now(now, sizeof now);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT INTO remotes(name, url) VALUES(?1, ?2) ON CONFLICT(name) "
				 "DO UPDATE SET url = ?2", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, remote, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, url, -1, SQLITE_STATIC);
	rc = mti_cat_step_done(c, st, "recording a remote", err);
	sqlite3_finalize(st);
	int64_t rid = 0;
	if (!rc)
		rc = mti_cat_lookup(c, "SELECT id FROM remotes WHERE name = ?2", 0, remote,
				    &rid, err);
	static const char *const state_sql[] = {
		[REMOTE_OFFLINE] = "UPDATE remotes SET online = 0, error = ?3 WHERE id = ?1",
		[REMOTE_SYNCED] = "UPDATE remotes SET online = 1, error = '', synced = ?2 "
				  "WHERE id = ?1",
		[REMOTE_TROUBLED] = "UPDATE remotes SET online = 1, error = ?3 WHERE id = ?1",
	};
	if (!rc && state != REMOTE_KEEP && !(rc = mti_cat_prepare(c, state_sql[state], &st, err))) {
		sqlite3_bind_int64(st, 1, rid);
		sqlite3_bind_text(st, 2, now, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, why ? why : "", -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "recording a remote", err);
		sqlite3_finalize(st);
	}
	if (!rc && !(rc = mti_cat_prepare(c, "INSERT OR IGNORE INTO buckets(remote_id, url) "
					  "VALUES(?1, ?2)", &st, err))) {
		sqlite3_bind_int64(st, 1, rid);
		sqlite3_bind_text(st, 2, url, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "recording a bucket", err);
		sqlite3_finalize(st);
	}
	if (!rc)
		rc = mti_cat_lookup(c, "SELECT id FROM buckets WHERE remote_id = ?1 AND url = ?2", rid,
				    url, bucket, err);
	return rc;
}

int mt_catalog_forget(mt_catalog *c, const char *remote, mt_error *err)
{
	sqlite3_stmt *st;
	pthread_mutex_lock(&c->lock);
	int rc = mti_cat_prepare(c, "DELETE FROM remotes WHERE name = ?1", &st, err);
	if (!rc) {
		sqlite3_bind_text(st, 1, remote, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, "forgetting a remote", err);
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
	int rc = mti_cat_bucket(c, remote, url, REMOTE_OFFLINE, why ? why : "unreachable", &b, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Run a statement whose only parameter is ?1 = id and that returns no rows. */
int mti_cat_exec_id(mt_catalog *c, const char *sql, int64_t id, const char *what,
		    mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, sql, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = mti_cat_step_done(c, st, what, err);
	sqlite3_finalize(st);
	return rc;
}
