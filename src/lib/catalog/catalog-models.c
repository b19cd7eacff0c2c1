/* catalog-models.c — the catalog's models: a bucket's models, their checkpoints and tensors, synced from the store beside its datasets. */
#define _GNU_SOURCE /* asprintf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

/* A checkpoint's row, with what its manifest's meta says (SQLite's JSON
 * functions read it, so the catalog needs no JSON library). */
#define CKPT_INSERT                                                                        \
	"INSERT INTO checkpoints(model_id, name, num, parent, created, step, author,"      \
	" description, tags, metrics, ntensors, bytes, stored_bytes, manifest_size,"       \
	" manifest_mtime) VALUES(?1, ?2, ?3, ?4, ?5, json_extract(?6, '$.step'),"          \
	" coalesce(json_extract(?6, '$.author'), ''),"                                     \
	" coalesce(json_extract(?6, '$.description'), ''),"                                \
	" coalesce((SELECT group_concat(value, ' ') FROM json_each(?6, '$.tags')), ''),"   \
	" coalesce((SELECT group_concat(key || '=' || value, ' ') FROM"                    \
	"  json_each(?6, '$.metrics')), ''), 0, 0, 0, ?7, ?8) RETURNING id"

/* Counted once per object: tensors with the same bytes share one. */
#define FIRST_OF_SHA(t, where)                                                             \
	t ".rowid = (SELECT min(t2.rowid) FROM ckpt_tensors t2 " where " AND t2.sha256 = " \
	t ".sha256)"

#define CKPT_TOTALS                                                                        \
	"UPDATE checkpoints SET ntensors = (SELECT count(*) FROM ckpt_tensors WHERE"       \
	" checkpoint_id = ?1), bytes = (SELECT coalesce(sum(bytes), 0) FROM ckpt_tensors"  \
	" WHERE checkpoint_id = ?1), stored_bytes = (SELECT coalesce(sum(t.stored), 0) FROM" \
	" ckpt_tensors t WHERE t.checkpoint_id = ?1 AND "                                  \
	FIRST_OF_SHA("t", "WHERE t2.checkpoint_id = ?1") ") WHERE id = ?1"

#define CKPT_SEARCH_INSERT                                                                 \
	"INSERT INTO ckpt_search(rowid, model, version, description, tags, tensors)"       \
	" SELECT k.id, m.name, k.name, k.description, k.tags, coalesce((SELECT"            \
	" group_concat(key, ' ') FROM ckpt_tensors WHERE checkpoint_id = k.id), '')"       \
	" FROM checkpoints k JOIN models m ON m.id = k.model_id WHERE k.id = ?1"

/* Bytes a checkpoint added: its objects its parent does not name (all of
 * them without a parent; unknown when the parent is not in the catalog). */
#define CKPT_NEW_BYTES                                                                     \
	"UPDATE checkpoints AS k SET new_bytes = CASE WHEN k.parent = '' THEN"             \
	" k.stored_bytes WHEN NOT EXISTS (SELECT 1 FROM checkpoints p WHERE p.model_id ="  \
	" k.model_id AND p.name = k.parent) THEN NULL ELSE (SELECT coalesce(sum(t.stored),"  \
	" 0) FROM ckpt_tensors t WHERE t.checkpoint_id = k.id AND "                        \
	FIRST_OF_SHA("t", "WHERE t2.checkpoint_id = k.id")                                 \
	" AND t.sha256 NOT IN (SELECT pt.sha256 FROM ckpt_tensors pt JOIN checkpoints p ON" \
	" p.id = pt.checkpoint_id WHERE p.model_id = k.model_id AND p.name = k.parent))"    \
	" END WHERE k.model_id = ?1"

/* The model's row as the lists show it: its newest checkpoint's summary
 * (a model left without checkpoints is dropped instead). */
#define MODEL_SUMMARY                                                                      \
	"UPDATE models SET ncheckpoints = (SELECT count(*) FROM checkpoints k WHERE"       \
	" k.model_id = models.id), (latest, step, description, tags) = (SELECT k.name,"    \
	" k.step, k.description, k.tags FROM checkpoints k WHERE k.model_id = models.id"   \
	" ORDER BY k.num DESC LIMIT 1), stored_bytes = (SELECT coalesce(sum(t.stored), 0)" \
	" FROM ckpt_tensors t JOIN checkpoints k ON k.id = t.checkpoint_id WHERE"          \
	" k.model_id = models.id AND "                                                     \
	FIRST_OF_SHA("t", "JOIN checkpoints k2 ON k2.id = t2.checkpoint_id WHERE"          \
		     " k2.model_id = models.id") ") WHERE id = ?1 AND EXISTS (SELECT 1 FROM"  \
	" checkpoints WHERE model_id = ?1)"

/* What the catalog has of a checkpoint, to compare with the listing. */
struct ck_known {
	char *name;
	int64_t size, mtime;
};

/* One model being synced. */
struct model_sync {
	mt_catalog *c;
	mt_store *s;
	const char *name;
	int flags;
	mt_catalog_sync_stats *st;
	struct listing man;      /* its manifests */
	struct ck_known *known;  /* what the catalog had, in name order */
	size_t nknown;
	int64_t id;              /* its row, 0: none */
	mt_ckpt **read;          /* checkpoints read: new or changed */
	const struct listed **readl;
	size_t nread;
	mt_error bad;            /* the first damaged manifest, reported at the end */
};

/* "v" and a number: other names under versions/ are not checkpoints. */
static int ck_name(const char *s)
{
	if (s[0] != 'v' || s[1] < '1' || s[1] > '9')
		return 0;
	for (s += 2; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int ck_known_load(struct model_sync *m, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(m->c, "SELECT name, manifest_size, manifest_mtime FROM"
				 " checkpoints WHERE model_id = ?1 ORDER BY name", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, m->id);
	size_t cap = 0;
	int r;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		if (m->nknown == cap) {
			cap = cap ? 2 * cap : 16;
			struct ck_known *k = realloc(m->known, cap * sizeof *k);
			if (!k) {
				rc = mt_error_set(err, MT_ENOMEM, "out of memory");
				break;
			}
			m->known = k;
		}
		struct ck_known *k = &m->known[m->nknown];
		if (!(k->name = strdup((const char *)sqlite3_column_text(st, 0)))) {
			rc = mt_error_set(err, MT_ENOMEM, "out of memory");
			break;
		}
		k->size = sqlite3_column_int64(st, 1);
		k->mtime = sqlite3_column_int64(st, 2);
		m->nknown++;
	}
	if (!rc && r != SQLITE_DONE)
		rc = mti_cat_sqlerr(m->c, err, "reading checkpoints");
	sqlite3_finalize(st);
	return rc;
}

static const struct ck_known *ck_known_find(const struct model_sync *m, const char *name)
{
	size_t lo = 0, hi = m->nknown;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->known[mid].name, name);
		if (!c)
			return &m->known[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* List the model's manifests (without the lock), then find its row (made
 * only when it has some) and the checkpoints the catalog knows. */
static int ms_start(struct model_sync *m, int64_t bucket, mt_error *err)
{
	char *prefix = NULL;
	if (asprintf(&prefix, "models/%s/versions/", m->name) < 0)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	m->man.prefix_len = strlen(prefix);
	int rc = mt_store_list(m->s, prefix, mti_listing_add, &m->man, err);
	free(prefix);
	if (rc == MT_ENOMEM)
		rc = mt_error_set(err, rc, "model %s: listing: out of memory", m->name);
	if (rc)
		return rc;
	mti_listing_sort(&m->man);
	pthread_mutex_lock(&m->c->lock);
	sqlite3_stmt *st;
	if (m->man.n && !(rc = mti_cat_prepare(m->c, "INSERT OR IGNORE INTO models(bucket_id,"
					       " name) VALUES(?1, ?2)", &st, err))) {
		sqlite3_bind_int64(st, 1, bucket);
		sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(m->c, st, "recording a model", err);
		sqlite3_finalize(st);
	}
	if (!rc)
		rc = mti_cat_lookup(m->c, "SELECT id FROM models WHERE bucket_id = ?1 AND name = ?2",
				    bucket, m->name, &m->id, err);
	if (!rc && m->id)
		rc = ck_known_load(m, err);
	pthread_mutex_unlock(&m->c->lock);
	return rc;
}

/* Manifests opened at once: on S3 each is a GET, and a model saved every
 * few minutes has hundreds of checkpoints. */
#define MS_READ_THREADS 8

/* The checkpoints to open, each job's result by index. */
struct ms_jobs {
	struct model_sync *m;
	const struct listed **want;
	mt_ckpt **got;
	int *rc;
	mt_error *errs;
};

/* Every one is tried: a damaged one does not stop the others. */
static void ms_open_one(void *ud, size_t i)
{
	struct ms_jobs *j = ud;
	char spec[600];
	snprintf(spec, sizeof spec, "%s@%s", j->m->name, j->want[i]->name);
	j->rc[i] = mt_ckpt_open(j->m->s, spec, &j->got[i], &j->errs[i]);
}

/* The results in listing order: one removed since the listing is left for
 * the next sync; a damaged one is noted and the others still kept. */
static int ms_take(struct model_sync *m, struct ms_jobs *j, size_t n, mt_error *err)
{
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		int r = j->rc[i];
		if (!r) {
			m->read[m->nread] = j->got[i];
			m->readl[m->nread++] = j->want[i];
		} else if ((r == MT_EFORMAT || r == MT_ECORRUPT) && !m->bad.code) {
			m->bad = j->errs[i];
			m->bad.code = r;
		} else if (!rc && r != MT_ENOTFOUND && r != MT_EFORMAT && r != MT_ECORRUPT) {
			if (err)
				*err = j->errs[i];
			rc = r;
		}
	}
	return rc;
}

/* Open each checkpoint that is new or changed (without the lock), several
 * at once. */
static int ms_read(struct model_sync *m, mt_error *err)
{
	size_t cap = m->man.n ? m->man.n : 1, n = 0;
	m->read = calloc(cap, sizeof *m->read);
	m->readl = calloc(cap, sizeof *m->readl);
	struct ms_jobs j = {m, calloc(cap, sizeof *j.want), calloc(cap, sizeof *j.got),
			    calloc(cap, sizeof *j.rc), calloc(cap, sizeof *j.errs)};
	int rc = m->read && m->readl && j.want && j.got && j.rc && j.errs
			 ? 0
			 : mt_error_set(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < m->man.n; i++) {
		const struct listed *lm = &m->man.v[i];
		if (!ck_name(lm->name))
			continue;
		m->st->checkpoints++;
		const struct ck_known *k = ck_known_find(m, lm->name);
		if (!(m->flags & MT_CATALOG_FULL) && k && k->size == (int64_t)lm->size &&
		    k->mtime == lm->mtime)
			continue;
		j.want[n++] = lm;
	}
	if (!rc && n) {
		mti_cat_parallel(n, MS_READ_THREADS, ms_open_one, &j);
		rc = ms_take(m, &j, n, err);
	}
	/* Every checkpoint opened is in m->read, closed with m (ms_free). */
	free(j.want);
	free(j.got);
	free(j.rc);
	free(j.errs);
	return rc;
}

/* A tensor's shape as the attributes' is written: "(10, 784)", "(10,)", "()". */
static void ck_shape(const mt_ckpt_tensor_info *t, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "(");
	for (int i = 0; i < t->ndim && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", i ? ", " : "",
				      (unsigned long long)t->shape[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "%s)", t->ndim == 1 ? "," : "");
}

static int ck_put_tensors(struct model_sync *m, int64_t kid, mt_ckpt *ck, mt_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc = mti_cat_prepare(m->c, "INSERT INTO ckpt_tensors(checkpoint_id, idx, key, dtype,"
				 " shape, bytes, stored, sha256) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7,"
				 " ?8)", &st, err);
	for (size_t i = 0; !rc && i < mt_ckpt_ntensors(ck); i++) {
		mt_ckpt_tensor_info t;
		char shape[MT_MAX_RANK * 24 + 8];
		if ((rc = mt_ckpt_tensor(ck, i, &t, err)))
			break;
		ck_shape(&t, shape, sizeof shape);
		sqlite3_bind_int64(st, 1, kid);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_text(st, 3, t.key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, mt_dtype_name(t.dtype), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, shape, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)t.bytes);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)t.stored);
		sqlite3_bind_text(st, 8, t.sha256, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(m->c, st, "recording a tensor", err);
	}
	if (st)
		sqlite3_finalize(st);
	return rc;
}

/* Replace checkpoint ck's rows: the checkpoint, its tensors, its search entry. */
static int ck_put(struct model_sync *m, mt_ckpt *ck, const struct listed *lm, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(m->c, "DELETE FROM checkpoints WHERE model_id = ?1 AND name = ?2",
				 &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, m->id);
		sqlite3_bind_text(st, 2, lm->name, -1, SQLITE_STATIC);
		rc = mti_cat_step_done(m->c, st, "replacing a checkpoint", err);
		sqlite3_finalize(st);
	}
	int64_t kid = 0;
	if (!rc && !(rc = mti_cat_prepare(m->c, CKPT_INSERT, &st, err))) {
		sqlite3_bind_int64(st, 1, m->id);
		sqlite3_bind_text(st, 2, lm->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, strtoll(lm->name + 1, NULL, 10));
		sqlite3_bind_text(st, 4, mt_ckpt_parent(ck), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, mt_ckpt_created(ck), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, mt_ckpt_meta(ck), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)lm->size);
		sqlite3_bind_int64(st, 8, lm->mtime);
		if (sqlite3_step(st) == SQLITE_ROW)
			kid = sqlite3_column_int64(st, 0);
		else
			rc = mti_cat_sqlerr(m->c, err, "recording a checkpoint");
		sqlite3_finalize(st);
	}
	if (!rc)
		rc = ck_put_tensors(m, kid, ck, err);
	if (!rc)
		rc = mti_cat_exec_id(m->c, CKPT_TOTALS, kid, "summing a checkpoint", err);
	if (!rc)
		rc = mti_cat_exec_id(m->c, CKPT_SEARCH_INSERT, kid, "indexing a checkpoint", err);
	if (!rc)
		m->st->checkpoints_read++;
	return rc;
}

/* Drop the checkpoints the store no longer lists. */
static int ms_drop_gone(struct model_sync *m, mt_error *err)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < m->nknown; i++) {
		if (mti_listing_find(&m->man, m->known[i].name))
			continue;
		sqlite3_stmt *st;
		if (!(rc = mti_cat_prepare(m->c, "DELETE FROM checkpoints WHERE model_id = ?1 AND"
					   " name = ?2", &st, err))) {
			sqlite3_bind_int64(st, 1, m->id);
			sqlite3_bind_text(st, 2, m->known[i].name, -1, SQLITE_STATIC);
			rc = mti_cat_step_done(m->c, st, "dropping a checkpoint", err);
			sqlite3_finalize(st);
		}
	}
	return rc;
}

/* Write what was read, drop what is gone, then the summaries; one savepoint
 * (under the lock). */
static int ms_write(struct model_sync *m, mt_error *err)
{
	int top;
	int rc = mti_cat_begin(m->c, "sync_model", &top, err);
	if (rc)
		return rc;
	for (size_t i = 0; !rc && i < m->nread; i++)
		rc = ck_put(m, m->read[i], m->readl[i], err);
	if (!rc)
		rc = ms_drop_gone(m, err);
	if (!rc)
		rc = mti_cat_exec_id(m->c, CKPT_NEW_BYTES, m->id, "comparing checkpoints", err);
	if (!rc)
		rc = mti_cat_exec_id(m->c, MODEL_SUMMARY, m->id, "summarising a model", err);
	if (!rc)
		rc = mti_cat_exec_id(m->c, "DELETE FROM models WHERE id = ?1 AND NOT EXISTS (SELECT"
				     " 1 FROM checkpoints WHERE model_id = ?1)", m->id,
				     "dropping a model", err);
	return mti_cat_end(m->c, "sync_model", top, rc, err);
}

static void ms_free(struct model_sync *m)
{
	for (size_t i = 0; i < m->nread; i++)
		mt_ckpt_close(m->read[i]);
	free(m->read);
	free(m->readl);
	for (size_t i = 0; i < m->nknown; i++)
		free(m->known[i].name);
	free(m->known);
	mti_listing_free(&m->man);
}

/* Whether the catalog must change: a checkpoint read, one it has gone, or
 * a model row just made (summarised, or dropped when none could be read). */
static int ms_changed(const struct model_sync *m)
{
	if (m->nread || !m->nknown)
		return 1;
	for (size_t i = 0; i < m->nknown; i++)
		if (!mti_listing_find(&m->man, m->known[i].name))
			return 1;
	return 0;
}

static int ms_sync_one(mt_catalog *c, int64_t bucket, mt_store *s, const char *name, int flags,
		       mt_catalog_sync_stats *st, mt_error *err)
{
	struct model_sync m = {.c = c, .s = s, .name = name, .flags = flags, .st = st};
	int rc = ms_start(&m, bucket, err);
	if (!rc && m.id)
		rc = ms_read(&m, err);
	/* An unchanged model is not written: its summaries stand. */
	if (!rc && m.id && ms_changed(&m)) {
		pthread_mutex_lock(&c->lock);
		rc = ms_write(&m, err);
		pthread_mutex_unlock(&c->lock);
	}
	ms_free(&m);
	if (!rc && m.bad.code && err)
		*err = m.bad;
	return rc ? rc : m.bad.code;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Drop the models of bucket that the store no longer has (found first,
 * then deleted: not while the query runs over them). */
static int ms_drop_missing(mt_catalog *c, int64_t bucket, char **names, size_t n, mt_error *err)
{
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, "SELECT id, name FROM models WHERE bucket_id = ?1", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, bucket);
	int64_t *gone = NULL;
	size_t ngone = 0, cap = 0;
	int r;
	while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);
		if (n && bsearch(&name, names, n, sizeof *names, name_cmp))
			continue;
		if (ngone == cap) {
			int64_t *g = realloc(gone, (cap = cap ? 2 * cap : 16) * sizeof *g);
			if (!g) {
				rc = mt_error_set(err, MT_ENOMEM, "out of memory");
				break;
			}
			gone = g;
		}
		gone[ngone++] = sqlite3_column_int64(st, 0);
	}
	if (!rc && r != SQLITE_DONE)
		rc = mti_cat_sqlerr(c, err, "reading models");
	sqlite3_finalize(st);
	for (size_t i = 0; !rc && i < ngone; i++)
		rc = mti_cat_exec_id(c, "DELETE FROM models WHERE id = ?1", gone[i],
				     "dropping a model", err);
	free(gone);
	return rc;
}

int mti_catalog_sync_models(mt_catalog *c, int64_t bucket, mt_store *s, int flags,
			    mt_progress_fn progress, void *ud, uint64_t done,
			    mt_catalog_sync_stats *st, mt_error *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc = mt_models_list(s, &names, &n, err);
	/* The first damaged checkpoint is reported once the others are in. */
	mt_error bad = {0};
	for (size_t i = 0; !rc && i < n; i++) {
		/* Between models the caller may cancel (progress stays where the
		 * datasets left it). */
		if (progress && progress(ud, done, done)) {
			rc = mt_error_set(err, MT_ECANCELED, "sync of the models canceled");
			break;
		}
		mt_error e = {0};
		int r = ms_sync_one(c, bucket, s, names[i], flags, st, &e);
		st->models++;
		if (r == MT_EFORMAT || r == MT_ECORRUPT) {
			if (!bad.code)
				bad = e;
		} else if (r) {
			rc = r;
			if (err)
				*err = e;
		}
	}
	if (!rc) {
		if (n)
			qsort(names, n, sizeof *names, name_cmp);
		pthread_mutex_lock(&c->lock);
		rc = ms_drop_missing(c, bucket, names, n, err);
		pthread_mutex_unlock(&c->lock);
	}
	mt_strv_free(names, n);
	if (!rc && bad.code) {
		if (err)
			*err = bad;
		rc = bad.code;
	}
	return rc;
}
