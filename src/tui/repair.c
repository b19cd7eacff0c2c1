/* repair.c — repair and protection in the browser: R and :repair rebuild a version's damaged objects as a job with a log, P and :protect add parity, verify says whether damage is repairable; each records what it found in the catalog. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* What a repair or protect job works on. */
struct heal_job {
	mt_catalog_ref ref;
	int k, m; /* protect: the parity */
	int stale;
	struct app_health health;
	struct tui_words datasets; /* a bucket's repair: every dataset (ref.dataset NULL) */
};

static void heal_free(void *arg)
{
	struct heal_job *h = arg;
	if (!h)
		return;
	mt_catalog_ref_free(&h->ref);
	app_health_free(&h->health);
	tui_words_free(&h->datasets);
	free(h);
}

static struct heal_job *heal_new(struct tui *t, int64_t version_id, const char *kind)
{
	struct heal_job *h = app_xcalloc(1, sizeof *h);
	mt_error err = { 0 };
	if (mt_catalog_locate(t->cat, MT_CAT_VERSIONS, version_id, &h->ref, &err)) {
		tui_status(t, 1, "%s", err.message);
		free(h);
		return NULL;
	}
	app_health_init(&h->health, kind, 0);
	return h;
}

/* The catalog learns the version again (its protection), then what was
 * found.  An old bucket is not synced under its remote's name. */
static void heal_record_dataset(struct tui_job *j, mt_store *s, const char *dataset,
				struct app_health *health)
{
	struct heal_job *h = j->arg;
	mt_error err = { 0 };
	if (!h->stale)
		mt_catalog_sync(j->t->cat, h->ref.remote, s, dataset, 0, NULL, NULL, NULL, &err);
	app_health_record(health, j->t->cat, h->ref.url, dataset);
}

static void heal_record(struct tui_job *j, mt_store *s)
{
	struct heal_job *h = j->arg;
	heal_record_dataset(j, s, h->ref.dataset, &h->health);
}

/* ---- repair ---- */

static void repair_log(void *ud, const mt_repair_report *r)
{
	static const char *const kinds[] = { "shard", "parity object", "manifest",
					     "protection record", "tensor", "fragment" };
	struct tui_job *j = ud;
	struct heal_job *h = j->arg;
	if (r->state == MT_REPAIR_SOUND)
		return;
	char what[64] = "", read[32];
	if (r->kind == MT_REPAIR_SHARD || r->kind == MT_REPAIR_FRAGMENT)
		snprintf(what, sizeof what, " %zu (rows %llu..%llu)", r->number,
			 (unsigned long long)r->first_row,
			 (unsigned long long)(r->first_row + r->rows - (r->rows > 0)));
	app_human_bytes(r->bytes_read, read, sizeof read);
	/* A whole dataset's repair names the version of each; a bucket's, the
	 * dataset too. */
	char ver[300] = "";
	if (h->datasets.n)
		snprintf(ver, sizeof ver, "%s@%s: ", r->dataset, r->version);
	else if (!h->ref.version)
		snprintf(ver, sizeof ver, "%s: ", r->version);
	if (r->state == MT_REPAIR_UNREPAIRABLE)
		tui_job_log(j, "%sLOST %s%s: %s", ver, kinds[r->kind <= MT_REPAIR_FRAGMENT ? r->kind : 0], what,
			    r->problem ? r->problem : "damaged");
	else
		tui_job_log(j, "%s%s %s%s from %s, %s read: %s", ver,
			    r->state == MT_REPAIR_REBUILT ? "rebuilt" : "repairable",
			    kinds[r->kind <= MT_REPAIR_FRAGMENT ? r->kind : 0], what, r->source ? r->source : "?", read,
			    r->problem ? r->problem : "damaged");
}

/* What a version lost, for the job's result: "; lost v2 shard 1 (...)". */
static void repair_lost(const struct heal_job *h, const struct app_health *health,
			const char *dataset, char *lost, size_t cap)
{
	for (size_t i = 0; i < health->nv; i++) {
		const struct app_health_version *v = &health->v[i];
		size_t len = strlen(lost);
		if (v->lost[0] && len < cap - 1)
			snprintf(lost + len, cap - len, "; lost %s%s%s%s%s",
				 h->datasets.n ? dataset : "", h->datasets.n ? "@" : "",
				 h->ref.version ? "" : v->version, h->ref.version ? "" : " ",
				 v->lost);
	}
}

/* A bucket's repair: progress is in datasets, each repair only asked
 * whether to stop. */
static int repair_cancel_only(void *ud, uint64_t done, uint64_t total)
{
	struct tui_job *j = ud;
	return atomic_load(&j->cancel);
}

/* Repair dataset (every version, or h's) in s, adding to *sum and lost. */
static int repair_dataset(struct tui_job *j, mt_store *s, const char *dataset,
			  mt_repair_stats *sum, char *lost, size_t cap, mt_error *err)
{
	struct heal_job *h = j->arg;
	struct app_health health;
	app_health_init(&health, "repair", 0);
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.use_remotes = 1;
	o.progress = h->datasets.n ? repair_cancel_only : tui_job_progress;
	o.progress_ud = j;
	o.report = repair_log;
	o.report_ud = j;
	mt_repair_stats st = { 0 };
	int rc = app_repair(s, dataset, h->ref.version, &o, &health, &st, err);
	if (!rc || rc == MT_ECORRUPT) {
		heal_record_dataset(j, s, dataset, &health);
		repair_lost(h, &health, dataset, lost, cap);
	}
	app_health_free(&health);
	sum->objects += st.objects;
	sum->damaged += st.damaged;
	sum->rebuilt += st.rebuilt;
	sum->unrepairable += st.unrepairable;
	sum->bytes_read += st.bytes_read;
	return rc;
}

static int repair_run(struct tui_job *j)
{
	struct heal_job *h = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &h->ref, &h->stale, &err);
	if (!s)
		return tui_job_fail(j, &err);
	mt_repair_stats st = { 0 };
	char line[256], lost[300] = "";
	int rc = 0, failed = 0;
	if (!h->datasets.n)
		rc = repair_dataset(j, s, h->ref.dataset, &st, lost, sizeof lost, &err);
	for (size_t i = 0; i < h->datasets.n && rc != MT_ECANCELED; i++) {
		mt_error e = { 0 };
		int drc = repair_dataset(j, s, h->datasets.v[i], &st, lost, sizeof lost, &e);
		tui_job_progress(j, i + 1, h->datasets.n);
		if (drc && drc != MT_ECORRUPT && drc != MT_ECANCELED) {
			tui_job_log(j, "%s: not repaired: %s", h->datasets.v[i], e.message);
			failed++;
		}
		if (drc && (!rc || rc == MT_ECORRUPT))
			rc = drc == MT_ECANCELED ? drc : MT_ECORRUPT;
		if (drc && !err.code)
			err = e;
	}
	mt_store_close(s);
	if (rc && rc != MT_ECORRUPT)
		return tui_job_fail(j, &err);
	char fails[64] = "";
	if (failed)
		snprintf(fails, sizeof fails, "; %d datasets not repaired (see the log)", failed);
	snprintf(j->result, sizeof j->result, "%s: %s%s%.300s", rc ? "lost" : "sound",
		 app_repair_summary(&st, 0, line, sizeof line), fails, lost);
	return rc;
}

/* ---- protect ---- */

static int protect_run(struct tui_job *j)
{
	struct heal_job *h = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &h->ref, &h->stale, &err);
	if (!s)
		return tui_job_fail(j, &err);
	mt_protect_stats st = { 0 };
	mt_protect_opts o;
	mt_protect_opts_init(&o);
	o.k = h->k;
	o.m = h->m;
	o.progress = tui_job_progress;
	o.progress_ud = j;
	o.stats = &st;
	int rc = mt_protect(s, h->ref.dataset, h->ref.version, &o, &err);
	mt_protection pi = { 0 };
	if (!rc) {
		/* Every shard was read against its sha256 to be coded. */
		struct app_health_version *v = app_health_version(&h->health, h->ref.version);
		v->state = MT_HEALTH_SOUND;
		v->state_set = 1;
		heal_record(j, s);
		mt_protect_info(s, h->ref.dataset, h->ref.version, &pi, &err);
	}
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	char sent[32];
	double overhead = pi.data_bytes ? 100.0 * (double)(pi.parity_bytes + pi.record_bytes) /
						  (double)pi.data_bytes
					: 0.0;
	snprintf(j->result, sizeof j->result,
		 "%s %d+%d: %llu groups, %llu parity objects sent (%s); overhead %.1f%%",
		 st.already ? "already protected with" : "protected with", h->k, h->m,
		 (unsigned long long)st.groups, (unsigned long long)st.parity_written,
		 app_human_bytes(st.bytes_written, sent, sizeof sent), overhead);
	return 0;
}

/* ---- starting them ---- */

static void heal_title(char *buf, size_t cap, const char *verb, const struct heal_job *h)
{
	if (!h->ref.dataset)
		snprintf(buf, cap, "%s %s: every dataset (%zu)", verb, h->ref.remote,
			 h->datasets.n);
	else
		snprintf(buf, cap, "%s %s:%s%s%s", verb, h->ref.remote, h->ref.dataset,
			 h->ref.version ? "@" : "", h->ref.version ? h->ref.version : "");
}

static void repair_begin(struct tui *t, struct heal_job *h)
{
	char title[160];
	heal_title(title, sizeof title, "repair", h);
	tui_job_start(t, "repair", title, h->datasets.n ? "datasets" : "bytes", repair_run, NULL,
		      h, heal_free);
}

/* The datasets of a bucket that still have versions. */
static int live_dataset_fn(void *ud, const mt_catalog_row *row)
{
	if (row->cols[0] && row->cols[1] && strcmp(row->cols[1], "0"))
		tui_words_add(ud, row->cols[0]);
	return 0;
}

void tui_repair_all(struct tui *t, int level, int64_t id)
{
	if (t->read_only) {
		tui_status(t, 1, "read-only: repair writes rebuilt objects to the store");
		return;
	}
	struct heal_job *h = app_xcalloc(1, sizeof *h);
	mt_error err = { 0 };
	app_health_init(&h->health, "repair", 0);
	if (mt_catalog_locate(t->cat, level, id, &h->ref, &err)) {
		tui_status(t, 1, "%s", err.message);
		heal_free(h);
		return;
	}
	if (level == MT_CAT_BUCKETS &&
	    (mt_catalog_list(t->cat, MT_CAT_DATASETS, id, NULL, live_dataset_fn, &h->datasets,
			     &err) || !h->datasets.n)) {
		tui_status(t, 1, "nothing to repair: the catalog lists no dataset in %s (r to sync)",
			   h->ref.url);
		heal_free(h);
		return;
	}
	repair_begin(t, h);
}

void tui_repair_start(struct tui *t, int64_t version_id)
{
	if (t->read_only) {
		tui_status(t, 1, "read-only: repair writes rebuilt objects to the store");
		return;
	}
	struct heal_job *h = heal_new(t, version_id, "repair");
	if (h)
		repair_begin(t, h);
}

static void protect_begin(struct tui *t, struct heal_job *h, const char *parity)
{
	mt_error err = { 0 };
	if (mt_parity_parse(parity, &h->k, &h->m, &err)) {
		tui_status(t, 1, "%s", err.message);
		heal_free(h);
		return;
	}
	char title[160];
	heal_title(title, sizeof title, "protect", h);
	tui_job_start(t, "protect", title, "bytes", protect_run, NULL, h, heal_free);
}

static void protect_submit(struct tui *t, const char *text, void *arg)
{
	protect_begin(t, arg, text);
}

void tui_protect_start(struct tui *t, int64_t version_id, const char *parity)
{
	if (t->read_only) {
		tui_status(t, 1, "read-only: protect writes parity objects to the store");
		return;
	}
	struct heal_job *h = heal_new(t, version_id, "protect");
	if (!h)
		return;
	if (parity) {
		protect_begin(t, h, parity);
		return;
	}
	char label[400];
	snprintf(label, sizeof label, "protect %s@%s with parity K+M (e.g. 8+2): ",
		 h->ref.dataset, h->ref.version);
	tui_ask(t, label, "", protect_submit, h, heal_free);
}

/* ---- the command line ---- */

struct version_find {
	const char *name; /* NULL: the newest */
	int64_t id;
};

static int version_find_fn(void *ud, const mt_catalog_row *row)
{
	struct version_find *f = ud;
	if (!f->name || (row->cols[0] && !strcmp(row->cols[0], f->name)))
		f->id = row->id;
	return f->name && f->id ? 1 : 0;
}

/* DATASET[@VERSION] of the default store, as the catalog lists it; 0 after
 * saying why on the status line. */
static int64_t command_version(struct tui *t, const char *spec)
{
	char ds[256];
	const char *at = strchr(spec, '@');
	size_t n = at ? (size_t)(at - spec) : strcspn(spec, " ");
	snprintf(ds, sizeof ds, "%.*s", (int)(n < sizeof ds ? n : sizeof ds - 1), spec);
	char ver[256] = "";
	if (at)
		snprintf(ver, sizeof ver, "%.*s", (int)strcspn(at + 1, " "), at + 1);
	int64_t d = tui_find_dataset(t, ds);
	struct version_find f = { ver[0] && strcmp(ver, "latest") ? ver : NULL, 0 };
	mt_error err = { 0 };
	if (d)
		mt_catalog_list(t->cat, MT_CAT_VERSIONS, d, NULL, version_find_fn, &f, &err);
	if (!f.id)
		tui_status(t, 1, "%s: no %s%s%s in the catalog of %s (r to sync)", spec, ds,
			   ver[0] ? "@" : "", ver, app_store_name(t->app));
	return f.id;
}

/* :repair DATASET[@VERSION] is `matorage repair` on the default store: the
 * store, not the catalog's list, says what there is, so a version whose
 * manifest is lost (and the catalog may not list) is repaired too. */
static void repair_command(struct tui *t, const char *spec)
{
	const char *at = strchr(spec, '@');
	char ds[256];
	snprintf(ds, sizeof ds, "%.*s", (int)(at ? (size_t)(at - spec) : strlen(spec)), spec);
	int64_t b = tui_find_bucket(t);
	struct heal_job *h = app_xcalloc(1, sizeof *h);
	mt_error err = { 0 };
	if (!b || mt_catalog_locate(t->cat, MT_CAT_BUCKETS, b, &h->ref, &err)) {
		tui_status(t, 1, "%s: no store %s in the catalog (r to sync)", spec,
			   app_store_name(t->app));
		free(h);
		return;
	}
	h->ref.dataset = app_xstrdup(ds);
	/* No version: every version, as the command has it. */
	h->ref.version = at && at[1] ? app_xstrdup(at + 1) : NULL;
	app_health_init(&h->health, "repair", 0);
	repair_begin(t, h);
}

void tui_heal_command(struct tui *t, const char *word, const char *rest)
{
	int protect = !strcmp(word, "protect");
	if (t->read_only) {
		tui_status(t, 1, "read-only: %s writes to the store", word);
		return;
	}
	char spec[512], parity[32] = "";
	size_t n = strcspn(rest, " ");
	snprintf(spec, sizeof spec, "%.*s", (int)(n < sizeof spec ? n : sizeof spec - 1), rest);
	const char *p = rest + n;
	while (*p == ' ')
		p++;
	snprintf(parity, sizeof parity, "%.*s", (int)strcspn(p, " "), p);
	/* :repair alone: the dataset or bucket under the cursor, as R there. */
	int level;
	int64_t id;
	if (!spec[0] && !protect && tui_list_cursor(tui_top(t), &level, &id) &&
	    (level == MT_CAT_DATASETS || level == MT_CAT_BUCKETS)) {
		tui_repair_all(t, level, id);
		return;
	}
	if (!spec[0] || (protect && !parity[0])) {
		tui_status(t, 1, "usage: :%s DATASET[@VERSION]%s%s", word, protect ? " K+M" : "",
			   protect ? "" : " (or on a dataset or bucket row)");
		return;
	}
	if (!protect) {
		repair_command(t, spec);
		return;
	}
	id = command_version(t, spec);
	if (id)
		tui_protect_start(t, id, parity);
}

/* ---- verify's health ---- */

/* What the repair check h read of the shards, into dry: the shards of a
 * fragment it found lost are named nowhere else, so no check reached them. */
static void verify_dry_count(const struct app_health *h, const struct app_health_version *v,
			     struct tui_dry_count *dry)
{
	dry->sound = v->shards_sound;
	dry->bad = v->shards_bad;
	dry->unchecked = 0;
	size_t nf = dry->r ? mt_reader_nfragments(dry->r) : 0;
	for (size_t k = 0; k < h->nf; k++) {
		if (h->f[k].state != MT_HEALTH_UNREPAIRABLE)
			continue;
		mt_fragment_info fi;
		for (size_t i = 0; i < nf; i++)
			if (!mt_reader_fragment(dry->r, i, &fi) && !strcmp(fi.sha256, h->f[k].sha256)) {
				dry->unchecked += fi.nshards;
				break;
			}
	}
}

void tui_verify_health(struct tui_job *j, mt_store *s, const mt_catalog_ref *ref, int verify_rc,
		       uint64_t shards, mt_verify_memo *memo, struct tui_dry_count *dry,
		       char *state, size_t cap)
{
	struct app_health h;
	app_health_init(&h, "verify", 1);
	struct app_health_version *v = app_health_version(&h, ref->version);
	state[0] = '\0';
	if (!verify_rc) {
		v->objects = shards;
		v->state = MT_HEALTH_SOUND;
		v->state_set = 1;
		snprintf(state, cap, "sound");
	} else {
		/* A repair that writes nothing says whether the damage can be
		 * rebuilt, and from what. */
		mt_repair_opts o;
		mt_repair_opts_init(&o);
		o.dry_run = 1;
		o.use_remotes = 1;
		o.report = app_health_report_fn;
		o.report_ud = &h;
		o.memo = memo; /* what the verify found sound is not read again */
		mt_error err = { 0 };
		int rc = mt_repair(s, ref->dataset, ref->version, &o, NULL, &err);
		v = app_health_version(&h, ref->version);
		if (rc && rc != MT_ECORRUPT) {
			v->state = MT_HEALTH_DAMAGED;
			v->state_set = 1;
			snprintf(v->message, sizeof v->message, "%.255s", err.message);
		}
		int st = app_health_state(&h, v);
		snprintf(state, cap, "%s%s%s%s%s",
			 st == MT_HEALTH_UNREPAIRABLE ? "lost " : mt_catalog_health_name(st),
			 st == MT_HEALTH_UNREPAIRABLE ? v->lost : "",
			 st == MT_HEALTH_REPAIRABLE ? " from " : "",
			 st == MT_HEALTH_REPAIRABLE ? v->sources : "",
			 st == MT_HEALTH_REPAIRABLE ? " (R repairs)" : "");
		tui_job_log(j, "%s@%s: %s", ref->dataset, ref->version, state);
		if (dry)
			verify_dry_count(&h, v, dry);
	}
	app_health_record(&h, j->t->cat, ref->url, ref->dataset);
	app_health_free(&h);
}
