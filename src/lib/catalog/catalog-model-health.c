/* catalog-model-health.c — the health of a model's objects (tensors shared by its checkpoints, and each checkpoint's parity, record and manifest), as verify and repair found it. */
#include <pthread.h>
#include <string.h>

#include "catalog.h"

/* Every model of that name in a bucket of that URL (one per remote listing
 * the store) gets the result; the latest result of an object is its health. */
#define OBJECT_PUT                                                                         \
	"INSERT INTO model_objects(model_id, object, checkpoint, health, note, at)"        \
	" SELECT m.id, ?3, ?4, ?5, ?6, ?7 FROM models m JOIN buckets b ON b.id ="           \
	" m.bucket_id WHERE b.url = ?1 AND m.name = ?2 ON CONFLICT(model_id, object) DO"    \
	" UPDATE SET checkpoint = excluded.checkpoint, health = excluded.health,"          \
	" note = excluded.note, at = excluded.at"

static int object_put(mt_catalog *c, sqlite3_stmt *st, const char *url, const char *model,
		      const mt_catalog_object_check *k, const char *now, mt_error *err)
{
	const char *name = mt_catalog_health_name(k->state);
	if (!name || !k->object || !*k->object)
		return mt_error_set(err, MT_EINVAL, "catalog: model %s: an object '%s' in state %d",
				    model, k->object ? k->object : "", k->state);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	const char *texts[] = {url, model, k->object, k->checkpoint ? k->checkpoint : "", name,
			       k->note ? k->note : "", now};
	mti_cat_bind_texts(st, 1, texts, 7);
	int rc = mti_cat_step_done(c, st, "recording a model object's health", err);
	if (!rc && sqlite3_changes(c->db) == 0)
		rc = mt_error_set(err, MT_ENOTFOUND, "catalog: no model %s in %s (sync?)", model,
				  url);
	return rc;
}

int mt_catalog_model_checked(mt_catalog *c, const char *url, const char *model,
			     const mt_catalog_object_check *checks, size_t n, mt_error *err)
{
	char now[32];
	mti_cat_now(now, sizeof now);
	pthread_mutex_lock(&c->lock);
	int top;
	sqlite3_stmt *st = NULL;
	int rc = mti_cat_begin(c, "model_checked", &top, err);
	if (!rc)
		rc = mti_cat_prepare(c, OBJECT_PUT, &st, err);
	for (size_t i = 0; !rc && i < n; i++)
		rc = object_put(c, st, url, model, &checks[i], now, err);
	if (st)
		sqlite3_finalize(st);
	rc = mti_cat_end(c, "model_checked", top, rc, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}
