/* catalog-records.c — what commands note in the catalog: jobs and their per-item results, checks of versions and the health of shards, statistics of attributes. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

/* ---- jobs --------------------------------------------------------------------------- */

/* Run one statement with ?1 a, ?2 b, ?3 code, ?4 msg, ?5 the time; a
 * statement may leave some out (binding those fails harmlessly). */
static int cat_run(mt_catalog *c, const char *sql, int64_t a, const char *b, int code,
		   const char *msg, const char *what, mt_error *err)
{
	char now[32];
	mti_cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, sql, &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, a);
		sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, code);
		sqlite3_bind_text(st, 4, msg, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(c, st, what, err);
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
	mti_cat_now(now, sizeof now);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT INTO jobs(kind, target, started) VALUES(?1, ?2, ?3)", &st,
				 err);
	if (!rc) {
		mti_cat_bind_texts(st, 1, (const char *const[]){kind, target, now}, 3);
		rc = mti_cat_step_done(c, st, "recording a job", err);
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

/* The two updates of a shard's record, parameters 1..3 the bucket, the
 * dataset and the sha256, 4..6 the rest (shard_verified, shard_health). */
enum { SHARD_VERIFIED, SHARD_HEALTH, SHARD_NSTMTS };

static const char *const shard_sql[SHARD_NSTMTS] = {
	[SHARD_VERIFIED] = "UPDATE shards SET verified = ?4, verified_at = ?5, health = ?6, "
			   "health_note = '', health_at = ?5 WHERE sha256 = ?3 AND list_id IN "
			   "(" LISTS_OF_DATASET ")",
	/* A rebuilt shard was read back against its sha256: verified too. */
	[SHARD_HEALTH] = "UPDATE shards SET health = ?4, health_note = coalesce(?5, ''),"
			 " health_at = ?6, verified = CASE ?4 WHEN 'rebuilt' THEN 'ok' ELSE"
			 " verified END, verified_at = CASE ?4 WHEN 'rebuilt' THEN ?6 ELSE"
			 " verified_at END WHERE sha256 = ?3 AND list_id IN (" LISTS_OF_DATASET ")",
};

static const char *const shard_what[SHARD_NSTMTS] = {
	[SHARD_VERIFIED] = "recording a verification",
	[SHARD_HEALTH] = "recording a shard's health",
};

/* The statements of a batch of records, each prepared at its first use and
 * then only rebound: a prepare per record cost a verify of 1M shards 1M
 * compilations of the same SQL. */
typedef struct shard_stmts {
	sqlite3_stmt *st[SHARD_NSTMTS];
} shard_stmts;

static void shard_stmts_free(shard_stmts *ss)
{
	for (int i = 0; i < SHARD_NSTMTS; i++)
		sqlite3_finalize(ss->st[i]);
}

/* Statement `which` with its six texts, run; with c->lock held. */
static int shard_update(mt_catalog *c, shard_stmts *ss, int which, const char *const *texts,
			mt_error *err)
{
	sqlite3_stmt **st = &ss->st[which];
	if (!*st) {
		int rc = mti_cat_prepare(c, shard_sql[which], st, err);
		if (rc)
			return rc;
	} else {
		sqlite3_clear_bindings(*st);
	}
	mti_cat_bind_texts(*st, 1, texts, 6);
	return mti_cat_step_done(c, *st, shard_what[which], err); /* and reset */
}

static int shard_verified(mt_catalog *c, shard_stmts *ss, const char *url, const char *dataset,
			  const char *sha256, int code, const char *message, const char *now,
			  mt_error *err)
{
	const char *verdict = code ? (message && *message ? message : mt_strerror(code)) : "ok";
	const char *health = mt_catalog_health_name(code ? MT_HEALTH_DAMAGED : MT_HEALTH_SOUND);
	return shard_update(c, ss, SHARD_VERIFIED,
			    (const char *const[]){url, dataset, sha256, verdict, now, health}, err);
}

static int shard_health(mt_catalog *c, shard_stmts *ss, const char *url, const char *dataset,
			const char *sha256, int state, const char *note, const char *now,
			mt_error *err)
{
	const char *name = mt_catalog_health_name(state);
	if (!name)
		return mt_error_set(err, MT_EINVAL, "catalog: shard %s of %s: no state %d", sha256,
			      dataset, state);
	return shard_update(c, ss, SHARD_HEALTH,
			    (const char *const[]){url, dataset, sha256, name, note, now}, err);
}

int mt_catalog_shard_verified(mt_catalog *c, const char *url, const char *dataset,
			      const char *sha256, int code, const char *message, mt_error *err)
{
	char now[32];
	mti_cat_now(now, sizeof now);
	shard_stmts ss = {0};
	pthread_mutex_lock(&c->lock);
	int rc = shard_verified(c, &ss, url, dataset, sha256, code, message, now, err);
	shard_stmts_free(&ss);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int mt_catalog_shard_health(mt_catalog *c, const char *url, const char *dataset,
			    const char *sha256, int state, const char *note, mt_error *err)
{
	char now[32];
	mti_cat_now(now, sizeof now);
	shard_stmts ss = {0};
	pthread_mutex_lock(&c->lock);
	int rc = shard_health(c, &ss, url, dataset, sha256, state, note, now, err);
	shard_stmts_free(&ss);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* One transaction for all: a commit per shard made a verify of 100k shards
 * spend longer recording than reading.  Each statement is prepared once. */
int mt_catalog_shards_checked(mt_catalog *c, const char *url, const char *dataset,
			      const mt_catalog_shard_check *checks, size_t n, mt_error *err)
{
	char now[32];
	mti_cat_now(now, sizeof now);
	shard_stmts ss = {0};
	pthread_mutex_lock(&c->lock);
	int top;
	int rc = mti_cat_begin(c, "shards_checked", &top, err);
	for (size_t i = 0; !rc && i < n; i++) {
		const mt_catalog_shard_check *k = &checks[i];
		rc = k->verified ? shard_verified(c, &ss, url, dataset, k->sha256, k->code, k->note,
						  now, err)
				 : shard_health(c, &ss, url, dataset, k->sha256, k->state, k->note,
						now, err);
	}
	shard_stmts_free(&ss);
	rc = mti_cat_end(c, "shards_checked", top, rc, err);
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

/* The id of version ?3 of dataset ?2 in bucket ?1. */
#define VERSION_OF                                                                         \
	"SELECT v.id FROM versions v JOIN datasets d ON d.id = v.dataset_id JOIN buckets b"  \
	" ON b.id = d.bucket_id WHERE b.url = ?1 AND d.name = ?2 AND v.name = ?3"

/* Parameters 1..3 of a statement about dataset@version in bucket url. */
static void cat_bind_version(sqlite3_stmt *st, const char *url, const char *dataset,
			     const char *version)
{
	mti_cat_bind_texts(st, 1, (const char *const[]){url, dataset, version}, 3);
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
	mti_cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT INTO checks(version_id, kind, at, state, sources, message,"
				 " objects, damaged, rebuilt, unrepairable, bytes_read) SELECT v.id,"
				 " ?4, ?5, ?6, coalesce(?7, ''), coalesce(?8, ''), ?9, ?10, ?11, ?12, ?13"
				 " FROM versions v WHERE v.name = ?3 AND v.id IN (" SHARDS_OF_DATASET ")",
				 &st, err);
	if (!rc) {
		cat_bind_version(st, url, dataset, version);
		mti_cat_bind_texts(st, 4, (const char *const[]){k->kind, now, state, k->sources,
							   k->message}, 5);
		cat_bind_u64(st, 9, k->objects);
		cat_bind_u64(st, 10, k->damaged);
		cat_bind_u64(st, 11, k->rebuilt);
		cat_bind_u64(st, 12, k->unrepairable);
		cat_bind_u64(st, 13, k->bytes_read);
		rc = mti_cat_step_done(c, st, "recording a check", err);
		sqlite3_finalize(st);
	}
	rc = cat_version_written(c, rc, url, dataset, version, err);
	/* Sound as a whole: every fragment was read against its sha256 (those
	 * the check rebuilt stay rebuilt). */
	if (!rc && (k->state == MT_HEALTH_SOUND || k->state == MT_HEALTH_REBUILT) &&
	    !(rc = mti_cat_prepare(c, "UPDATE fragments SET health = 'sound', health_note = ?4,"
				   " health_at = ?5 WHERE health <> 'rebuilt' AND version_id IN"
				   " (" VERSION_OF ")", &st, err))) {
		cat_bind_version(st, url, dataset, version);
		mti_cat_bind_texts(st, 4, (const char *const[]){k->kind, now}, 2);
		rc = mti_cat_step_done(c, st, "recording a check", err);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The fragment rows of sha256 (?3) in dataset ?2 of bucket ?1 take health
 * ?4, note ?5, time ?6. */
#define FRAGMENT_HEALTH                                                                    \
	"UPDATE fragments SET health = ?4, health_note = coalesce(?5, ''), health_at = ?6"   \
	" WHERE sha256 = ?3 AND version_id IN (SELECT v.id FROM versions v JOIN datasets d"  \
	" ON d.id = v.dataset_id JOIN buckets b ON b.id = d.bucket_id WHERE b.url = ?1 AND"  \
	" d.name = ?2)"

int mt_catalog_fragments_checked(mt_catalog *c, const char *url, const char *dataset,
				 const mt_catalog_fragment_check *checks, size_t n, mt_error *err)
{
	char now[32];
	mti_cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = NULL;
	int top;
	int rc = mti_cat_begin(c, "fragments_checked", &top, err);
	if (!rc)
		rc = mti_cat_prepare(c, FRAGMENT_HEALTH, &st, err);
	for (size_t i = 0; !rc && i < n; i++) {
		const char *name = mt_catalog_health_name(checks[i].state);
		if (!name) {
			rc = mt_error_set(err, MT_EINVAL, "catalog: fragment %s of %s: no state %d",
					  checks[i].sha256, dataset, checks[i].state);
			break;
		}
		sqlite3_clear_bindings(st);
		mti_cat_bind_texts(st, 1, (const char *const[]){url, dataset, checks[i].sha256,
							   name, checks[i].note, now}, 6);
		rc = mti_cat_step_done(c, st, "recording a fragment's health", err);
	}
	sqlite3_finalize(st);
	rc = mti_cat_end(c, "fragments_checked", top, rc, err);
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
	mti_cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "INSERT OR REPLACE INTO attr_stats(version_id, attr, json, computed)"
				 " SELECT id, ?4, ?5, ?6 FROM (" VERSION_IN_BUCKET ")", &st, err);
	if (!rc) {
		cat_bind_version(st, url, dataset, version);
		mti_cat_bind_texts(st, 4, (const char *const[]){attr, json, now}, 3);
		rc = mti_cat_step_done(c, st, "recording statistics", err);
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
	int rc = mti_cat_prepare(c, "SELECT json, computed FROM attr_stats WHERE attr = ?4 AND"
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
			rc = mti_cat_sqlerr(c, err, "reading statistics");
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
