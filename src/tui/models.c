/* models.c — what the browser does to a model's checkpoints, each as a job: verify its tensors and parity, repair them (as `matorage repair model:NAME@V`), each recording every object's health in the catalog, delete it with its name typed to confirm. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"

/* The catalog's models of the bucket again, after a change to them. */
static void ckpt_catalog_note(struct tui_job *j, mt_store *s)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	if (!tg->stale)
		mt_catalog_sync(j->t->cat, tg->ref.remote, s, NULL, MT_CATALOG_MODELS, NULL, NULL,
				NULL, &err);
}

static void ckpt_bad(void *ud, const char *version, const char *key, const char *object,
		     const char *message)
{
	struct tui_job *j = ud;
	struct target *tg = j->arg;
	tg->shards_bad++;
	tui_job_log(j, "damaged: tensor %s (%s): %s", key, object, message);
}

static void ckpt_bad_parity(void *ud, const mt_repair_report *r)
{
	struct tui_job *j = ud;
	tui_job_log(j, "damaged: %s of group %zu %s: %s",
		    r->kind == MT_REPAIR_RECORD ? "protection record" : "parity object", r->number,
		    r->key, r->problem ? r->problem : "damaged");
}

/* What a check found of each object goes to the catalog: a tensor object's
 * health shows on every checkpoint naming it. */
static void ckpt_record(struct tui_job *j, struct app_model_health *h)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	if (!tg->stale)
		app_model_health_record(h, j->t->cat, tg->ref.url, &err);
}

static int ckpt_verify_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	uint64_t checked = 0;
	struct app_model_health h;
	app_model_health_init(&h, tg->ref.model);
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	int rc = s ? app_model_verify(s, tg->ref.version, 0, ckpt_bad, ckpt_bad_parity, j, &h,
				      &checked, &err)
		   : err.code;
	mt_store_close(s);
	if (!rc || rc == MT_ECORRUPT)
		ckpt_record(j, &h);
	app_model_health_free(&h);
	if (rc && rc != MT_ECORRUPT)
		return tui_job_fail(j, &err);
	if (rc)
		snprintf(j->result, sizeof j->result, "%llu tensor objects checked, %llu damaged or "
			 "missing (first: %.300s)", (unsigned long long)checked,
			 (unsigned long long)tg->shards_bad, err.message);
	else
		snprintf(j->result, sizeof j->result, "%llu tensor objects checked: all sound",
			 (unsigned long long)checked);
	return rc;
}

struct ckpt_tee {
	struct tui_job *j;
	struct app_model_health *h;
};

static void ckpt_repair_log(void *ud, const mt_repair_report *r)
{
	struct ckpt_tee *t = ud;
	app_model_health_report(t->h, r);
	if (r->state == MT_REPAIR_SOUND)
		return;
	const char *what = r->kind == MT_REPAIR_TENSOR ? "tensor"
			   : r->kind == MT_REPAIR_PARITY ? "parity of group"
							 : "manifest";
	if (r->state == MT_REPAIR_UNREPAIRABLE)
		tui_job_log(t->j, "LOST %s %zu %s: %s", what, r->number, r->key,
			    r->problem ? r->problem : "damaged");
	else
		tui_job_log(t->j, "rebuilt %s %zu %s from %s: %s", what, r->number, r->key,
			    r->source ? r->source : "?", r->problem ? r->problem : "damaged");
}

static int ckpt_repair_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	if (!s)
		return tui_job_fail(j, &err);
	struct app_model_health h;
	app_model_health_init(&h, tg->ref.model);
	struct ckpt_tee t = { j, &h };
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.use_remotes = 1;
	o.report = ckpt_repair_log;
	o.report_ud = &t;
	mt_repair_stats st = { 0 };
	int rc = mt_ckpt_repair(s, tg->ref.model, tg->ref.version, &o, &st, &err);
	if (!rc || rc == MT_ECORRUPT) {
		ckpt_catalog_note(j, s);
		ckpt_record(j, &h);
	}
	app_model_health_free(&h);
	mt_store_close(s);
	if (rc && rc != MT_ECORRUPT)
		return tui_job_fail(j, &err);
	char line[256];
	snprintf(j->result, sizeof j->result, "%s: %s", rc ? "lost" : "sound",
		 app_repair_summary(&st, 0, line, sizeof line));
	return rc;
}

static int ckpt_delete_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	int rc = s ? mt_ckpt_delete(s, tg->ref.model, tg->ref.version, &err) : err.code;
	if (!rc)
		ckpt_catalog_note(j, s);
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	snprintf(j->result, sizeof j->result, "deleted from %s (its tensors stay until gc)",
		 tg->ref.url);
	return 0;
}

static void ckpt_delete_submit(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	char name[300], title[160];
	snprintf(name, sizeof name, "%s@%s", tg->ref.model, tg->ref.version);
	if (strcmp(text, name)) {
		tui_status(t, 1, "not deleted: '%s' is not '%s'", text, name);
		tui_target_free(tg);
		return;
	}
	snprintf(title, sizeof title, "delete %.40s:%.100s", tg->ref.remote, name);
	tui_job_start(t, "delete", title, NULL, ckpt_delete_run, NULL, tg, tui_target_free);
}

void tui_ckpt_action(struct tui *t, enum tui_action a, int64_t ckpt_id)
{
	struct target *tg = tui_target_new(t, MT_CAT_CHECKPOINTS, ckpt_id);
	if (!tg)
		return;
	char label[400], title[160];
	switch (a) {
	case ACT_VERIFY:
		snprintf(title, sizeof title, "verify %.40s:%.80s@%.20s", tg->ref.remote,
			 tg->ref.model, tg->ref.version);
		tui_job_start(t, "verify", title, NULL, ckpt_verify_run, NULL, tg, tui_target_free);
		return;
	case ACT_REPAIR:
		if (t->read_only) {
			tui_status(t, 1, "read-only: repair writes rebuilt tensors to the store");
			tui_target_free(tg);
			return;
		}
		snprintf(title, sizeof title, "repair %.40s:model:%.80s@%.20s", tg->ref.remote,
			 tg->ref.model, tg->ref.version);
		tui_job_start(t, "repair", title, NULL, ckpt_repair_run, NULL, tg, tui_target_free);
		return;
	case ACT_DELETE:
		snprintf(label, sizeof label, "delete %s@%s from %s? type its name to confirm: ",
			 tg->ref.model, tg->ref.version, tg->ref.remote);
		tui_ask(t, label, "", ckpt_delete_submit, tg, tui_target_free);
		return;
	default:
		tui_target_free(tg);
		return;
	}
}
