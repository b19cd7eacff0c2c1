/* app-model-health.c — what a verify or repair of a model's checkpoints found of each object (tensors, parity, manifests), gathered from the library's reports and written to the catalog. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

void app_model_health_init(struct app_model_health *h, const char *model)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->lock, NULL);
	h->model = app_xstrdup(model);
}

void app_model_health_free(struct app_model_health *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->o[i].object);
		free(h->o[i].checkpoint);
		free(h->o[i].note);
	}
	free(h->o);
	free(h->model);
	pthread_mutex_destroy(&h->lock);
}

/* The object's key under models/<model>/ ("tensors/<sha256>"); the key
 * itself when it is no key of the model's. */
static const char *object_name(const struct app_model_health *h, const char *key)
{
	size_t n = strlen(h->model);
	if (!strncmp(key, "models/", 7) && !strncmp(key + 7, h->model, n) && key[7 + n] == '/')
		return key + 8 + n;
	return key;
}

/* Add a result (callers hold h->lock); `guess`: a sound state inferred
 * from a check that reports only damage, which any other result overrides. */
static void health_add(struct app_model_health *h, const char *key, const char *checkpoint,
		       int state, const char *note, int guess)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 64;
		h->o = app_xreallocarray(h->o, h->cap, sizeof *h->o);
	}
	struct app_model_object *o = &h->o[h->n++];
	o->object = app_xstrdup(object_name(h, key));
	o->checkpoint = app_xstrdup(checkpoint ? checkpoint : "");
	o->state = state;
	o->note = note ? app_xstrdup(note) : NULL;
	o->guess = guess;
	if (!guess && state != MT_HEALTH_SOUND && state != MT_HEALTH_REBUILT)
		h->damaged++;
}

void app_model_health_bad(struct app_model_health *h, const char *object, const char *message)
{
	pthread_mutex_lock(&h->lock);
	health_add(h, object, NULL, MT_HEALTH_DAMAGED, message, 0);
	h->tensors_bad++;
	pthread_mutex_unlock(&h->lock);
}

void app_model_health_report(struct app_model_health *h, const mt_repair_report *r)
{
	static const int states[] = { [MT_REPAIR_SOUND] = MT_HEALTH_SOUND,
				      [MT_REPAIR_REBUILT] = MT_HEALTH_REBUILT,
				      [MT_REPAIR_REPAIRABLE] = MT_HEALTH_REPAIRABLE,
				      [MT_REPAIR_UNREPAIRABLE] = MT_HEALTH_UNREPAIRABLE };
	if (!r->key || r->state < 0 || r->state > MT_REPAIR_UNREPAIRABLE)
		return;
	const char *note = r->state == MT_REPAIR_UNREPAIRABLE ? (r->problem ? r->problem : "damaged")
			   : r->state == MT_REPAIR_SOUND	  ? NULL
							  : r->source;
	pthread_mutex_lock(&h->lock);
	/* A tensor object is every checkpoint's that names it; the rest are
	 * the checkpoint's own. */
	health_add(h, r->key, r->kind == MT_REPAIR_TENSOR ? NULL : r->version, states[r->state], note,
		   0);
	pthread_mutex_unlock(&h->lock);
}

void app_model_health_report_fn(void *ud, const mt_repair_report *r)
{
	app_model_health_report(ud, r);
}

/* Every tensor object of the checkpoints named, as sound guesses. */
static int health_sound(struct app_model_health *h, mt_store *s, char **versions, size_t n,
			mt_error *err)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		char *spec = app_xasprintf("%s@%s", h->model, versions[i]);
		mt_ckpt *c = NULL;
		rc = mt_ckpt_open(s, spec, &c, err);
		for (size_t j = 0; !rc && j < mt_ckpt_ntensors(c); j++) {
			mt_ckpt_tensor_info t;
			if ((rc = mt_ckpt_tensor(c, j, &t, err)))
				break;
			char *key = app_xasprintf("tensors/%s", t.sha256);
			pthread_mutex_lock(&h->lock);
			health_add(h, key, NULL, MT_HEALTH_SOUND, NULL, 1);
			pthread_mutex_unlock(&h->lock);
			free(key);
		}
		mt_ckpt_close(c);
		free(spec);
	}
	return rc;
}

int app_model_health_sound(struct app_model_health *h, mt_store *s, const char *version,
			   mt_error *err)
{
	if (version) {
		char *one = app_xstrdup(version);
		int rc = health_sound(h, s, &one, 1, err);
		free(one);
		return rc;
	}
	char **v = NULL;
	size_t n = 0;
	int rc = mt_ckpt_list(s, h->model, &v, &n, err);
	if (!rc)
		rc = health_sound(h, s, v, n, err);
	mt_strv_free(v, n);
	return rc;
}

/* Guesses first, each object once (sorted), then the results in the order
 * found: the catalog keeps an object's last. */
static int guess_cmp(const void *a, const void *b)
{
	const struct app_model_object *x = a, *y = b;
	if (x->guess != y->guess)
		return y->guess - x->guess;
	if (x->guess)
		return strcmp(x->object, y->object);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

int app_model_health_record(struct app_model_health *h, mt_catalog *c, const char *url,
			    mt_error *err)
{
	if (!h->n)
		return 0;
	/* Results keep their order: sorted by their place among them. */
	for (size_t i = 0; i < h->n; i++)
		h->o[i].seq = i;
	qsort(h->o, h->n, sizeof *h->o, guess_cmp);
	mt_catalog_object_check *k = app_xreallocarray(NULL, h->n, sizeof *k);
	size_t n = 0;
	for (size_t i = 0; i < h->n; i++) {
		const struct app_model_object *o = &h->o[i];
		if (i && o->guess && h->o[i - 1].guess && !strcmp(o->object, h->o[i - 1].object))
			continue;
		k[n++] = (mt_catalog_object_check){ o->object, o->checkpoint, o->state, o->note };
	}
	int rc = mt_catalog_model_checked(c, url, h->model, k, n, err);
	free(k);
	return rc;
}

/* mt_ckpt_verify's and the protection check's reports, to h and then to
 * the caller's functions. */
struct verify_tee {
	struct app_model_health *h;
	mt_ckpt_bad_fn bad;
	mt_repair_fn prot;
	void *ud;
};

static void tee_bad(void *ud, const char *version, const char *key, const char *object,
		    const char *message)
{
	struct verify_tee *t = ud;
	app_model_health_bad(t->h, object, message);
	if (t->bad)
		t->bad(t->ud, version, key, object, message);
}

static void tee_prot(void *ud, const mt_repair_report *r)
{
	struct verify_tee *t = ud;
	app_model_health_report(t->h, r);
	if (t->prot && r->state != MT_REPAIR_SOUND)
		t->prot(t->ud, r);
}

int app_model_verify(mt_store *s, const char *version, int threads, mt_ckpt_bad_fn bad,
		     mt_repair_fn prot, void *ud, struct app_model_health *h, uint64_t *nchecked,
		     mt_error *err)
{
	struct verify_tee t = { h, bad, prot, ud };
	int vrc = mt_ckpt_verify(s, h->model, version, threads, tee_bad, &t, nchecked, err);
	if (vrc && vrc != MT_ECORRUPT)
		return vrc;
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.report = tee_prot;
	o.report_ud = &t;
	mt_error pe = { 0 };
	int prc = mt_ckpt_check_protection(s, h->model, version, &o, NULL, &pe);
	if (prc && prc != MT_ECORRUPT && !vrc && err)
		*err = pe;
	if (prc && prc != MT_ECORRUPT)
		return vrc ? vrc : prc;
	mt_error e = { 0 };
	if (h->tensors_bad) {
		/* What a repair could rebuild, and from what: a dry run. */
		mt_repair_opts d;
		mt_repair_opts_init(&d);
		d.dry_run = 1;
		d.use_remotes = 1;
		d.report = app_model_health_report_fn;
		d.report_ud = h;
		mt_ckpt_repair(s, h->model, version, &d, NULL, &e);
	} else {
		app_model_health_sound(h, s, version, &e);
	}
	if (!vrc && prc && err)
		*err = pe;
	return vrc ? vrc : prc;
}
