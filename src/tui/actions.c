/* actions.c — what the browser does to stores, each as a job: sync, verify, edit tags and description, delete with a typed name, a shard's chunk layout (copy.c and gc.c hold the other two). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"


void tui_target_free(void *arg)
{
	struct target *tg = arg;
	if (!tg)
		return;
	mt_catalog_ref_free(&tg->ref);
	free(tg->text);
	free(tg);
}

struct target *tui_target_new(struct tui *t, int level, int64_t id)
{
	struct target *tg = app_xcalloc(1, sizeof *tg);
	mt_error err = { 0 };
	if (mt_catalog_locate(t->cat, level, id, &tg->ref, &err)) {
		tui_status(t, 1, "%s", err.message);
		free(tg);
		return NULL;
	}
	return tg;
}

/* A step of a job on its target's version, open in its store. */
typedef int target_fn(struct tui_job *j, mt_store *s, mt_reader *r, mt_error *err);

/* Run fn on the job target's version, open in its store for the call. */
static int target_with_reader(struct tui_job *j, target_fn *fn, mt_error *err)
{
	struct target *tg = j->arg;
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, err);
	mt_reader *r = NULL;
	int rc = s ? mt_reader_open(s, tg->ref.dataset, tg->ref.version, &r, err) : err->code;
	if (!rc)
		rc = fn(j, s, r, err);
	mt_reader_close(r);
	mt_store_close(s);
	return rc;
}

int tui_job_fail(struct tui_job *j, const mt_error *err)
{
	snprintf(j->result, sizeof j->result, "%s", err->message[0] ? err->message
							    : mt_strerror(err->code));
	return err->code ? err->code : MT_EIO;
}

/* ---- sync ---- */

static int sync_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_store(j, tg->ref.remote, &err);
	if (!s) {
		mt_error e2;
		mt_catalog_set_offline(j->t->cat, tg->ref.remote, tg->ref.url, err.message, &e2);
		return tui_job_fail(j, &err);
	}
	mt_catalog_sync_stats st;
	int rc = mt_catalog_sync(j->t->cat, tg->ref.remote, s, tg->ref.dataset, 0,
				 tui_job_progress, j, &st, &err);
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	snprintf(j->result, sizeof j->result, "%llu datasets, %llu versions (%llu read, %llu dropped)",
		 (unsigned long long)st.datasets, (unsigned long long)st.versions,
		 (unsigned long long)st.versions_read, (unsigned long long)st.versions_removed);
	return 0;
}

static void sync_one(struct tui *t, const char *remote, const char *url, const char *dataset)
{
	struct target *tg = app_xcalloc(1, sizeof *tg);
	tg->ref.remote = app_xstrdup(remote);
	tg->ref.url = app_xstrdup(url ? url : remote);
	tg->ref.dataset = dataset ? app_xstrdup(dataset) : NULL;
	tg->ref.shard = -1;
	char title[160];
	snprintf(title, sizeof title, "sync %s%s%s", remote, dataset ? ":" : "", dataset ? dataset : "");
	tui_job_start(t, "sync", title, "datasets", sync_run, NULL, tg, tui_target_free);
}

void tui_sync_all(struct tui *t)
{
	mt_remote *r = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	/* Removed remotes, and URLs a remote already lists, leave the catalog. */
	if (app_catalog_prune(t->cat, &err))
		tui_status(t, 1, "%s", err.message);
	/* One job per store: an unreachable remote keeps no other one stale. */
	sync_one(t, app_store_name(t->app), NULL, NULL);
	if (mt_remotes_list(&r, &n, &err))
		tui_status(t, 1, "%s", err.message);
	for (size_t i = 0; i < n; i++)
		if (strcmp(r[i].name, app_store_name(t->app)))
			sync_one(t, r[i].name, r[i].url, NULL);
	mt_remotes_free(r, n);
}

/* ---- verify ---- */

/* A version's verification in a verify job.  The shards' results are
 * gathered and written to the catalog in one transaction at the end: one
 * commit per shard made the catalog, not the reading, the cost of a verify
 * of thousands of shards. */
struct verify_pass {
	struct tui_job *j;
	const mt_catalog_ref *ref;
	int named;	/* the log names the version (a dataset's or bucket's verify) */
	uint64_t base;	/* bytes of the versions verified before this one */
	uint64_t ok, bad;
	struct app_health h;
};

static void verify_shard(void *ud, size_t shard, const mt_shard_info *info, int code,
			 const char *message)
{
	struct verify_pass *p = ud;
	app_health_verified(&p->h, info->sha256, code, message);
	if (!code) {
		p->ok++;
		return;
	}
	p->bad++;
	/* The damage, not the sound shards, is worth a line and a result. */
	char item[300];
	snprintf(item, sizeof item, "%s%s%s%sshard %zu", p->named ? p->ref->dataset : "",
		 p->named ? "@" : "", p->named ? p->ref->version : "", p->named ? " " : "", shard);
	tui_job_log(p->j, "%s %.12s…: %s", item, info->sha256, message);
	mt_error err;
	if (p->j->catalog_id)
		mt_catalog_job_result(p->j->t->cat, p->j->catalog_id, item, code, message, &err);
}

static int verify_progress(void *ud, uint64_t done, uint64_t total)
{
	struct verify_pass *p = ud;
	/* A version alone sets the total; a whole dataset's was set first. */
	return tui_job_progress(p->j, p->base + done, p->named ? 0 : total);
}

/* The library's "d@v1: fragment KEY (rows 8 to 15, shards 4 to 7):
 * missing" as a result leads with it: the fragment's number, rows and what
 * is wrong before the long key, "d@v1: fragment 1 (rows 8..15, shards
 * 4..7) missing: KEY", so a narrow status line still says it. */
static void verify_fragment_lead(const mt_reader *r, mt_error *err)
{
	const char *problem = strstr(err->message, "): ");
	mt_fragment_info fi;
	size_t i = 0, n = mt_reader_nfragments(r);
	while (i < n && (mt_reader_fragment(r, i, &fi) || !strstr(err->message, fi.sha256)))
		i++;
	const char *key = strstr(err->message, ": fragment ");
	const char *key_end = key ? strstr(key + 11, " (rows ") : NULL;
	if (i == n || !problem || !key_end)
		return;
	char lead[sizeof err->message];
	int missing = !strcmp(problem + 3, "missing");
	snprintf(lead, sizeof lead, "%.*s: fragment %zu (rows %llu..%llu, shards %llu..%llu) %s: %.*s%s%.300s",
		 (int)(key - err->message), err->message, i, (unsigned long long)fi.first_row,
		 (unsigned long long)(fi.first_row + fi.rows - (fi.rows > 0)),
		 (unsigned long long)fi.first_shard,
		 (unsigned long long)(fi.first_shard + fi.nshards - (fi.nshards > 0)),
		 missing ? "missing" : "damaged", (int)(key_end - key - 11), key + 11,
		 missing ? "" : ": ", missing ? "" : problem + 3);
	snprintf(err->message, sizeof err->message, "%s", lead);
}

int tui_verify_version(struct tui_job *j, mt_store *s, const mt_catalog_ref *ref, int named,
		       uint64_t base, struct tui_verify_count *n, char *health, size_t cap,
		       mt_error *err)
{
	struct verify_pass p = { .j = j, .ref = ref, .named = named, .base = base };
	app_health_init(&p.h, "verify", 0);
	mt_reader *r = NULL;
	int rc = mt_reader_open(s, ref->dataset, ref->version, &r, err);
	if (!rc)
		rc = mt_reader_verify_memo(r, n->memo, verify_shard, &p, verify_progress, &p, err);
	/* A fragment that cannot be loaded stops the open (or the verify)
	 * before the first shard: the counts are then the repair check's,
	 * which rebuilds what it can of the fragments to read their shards.
	 * The root alone says which shards each fragment holds. */
	mt_error e = { 0 };
	if (rc == MT_ECORRUPT && !r && mt_reader_open_lazy(s, ref->dataset, ref->version, &r, &e))
		r = NULL;
	int stopped = rc == MT_ECORRUPT && r && !p.ok && !p.bad && mt_reader_nfragments(r);
	struct tui_dry_count dry = { .r = r };
	if (stopped) {
		tui_job_log(j, "%s", err->message);
		verify_fragment_lead(r, err);
	}
	/* Every shard's result in one transaction; then whether the damage is
	 * repairable, for the version. */
	app_health_record(&p.h, j->t->cat, ref->url, ref->dataset);
	app_health_free(&p.h);
	health[0] = '\0';
	if (!rc || rc == MT_ECORRUPT)
		tui_verify_health(j, s, ref, rc, p.ok + p.bad, n->memo, stopped ? &dry : NULL, health,
				  cap);
	mt_reader_close(r);
	n->ok += stopped ? dry.sound : p.ok;
	n->bad += stopped ? dry.bad : p.bad;
	n->unchecked += dry.unchecked;
	n->stopped += stopped;
	return rc;
}

/* ", 8 not checked (their fragment is lost)" when n has such shards. */
static const char *verify_unchecked(const struct tui_verify_count *n, char *buf, size_t cap)
{
	buf[0] = '\0';
	if (n->unchecked)
		snprintf(buf, cap, ", %llu not checked (their fragment is lost)",
			 (unsigned long long)n->unchecked);
	return buf;
}

/* The result of a verify a fragment stopped: what is wrong with the
 * fragment first (the title names the version), then the shards the
 * repair check could read, and the version's health. */
static void verify_stopped_result(struct tui_job *j, const struct tui_verify_count *n,
				  const char *message)
{
	struct target *tg = j->arg;
	size_t dl = strlen(tg->ref.dataset), vl = strlen(tg->ref.version);
	if (!strncmp(message, tg->ref.dataset, dl) && message[dl] == '@' &&
	    !strncmp(message + dl + 1, tg->ref.version, vl) && !strncmp(message + dl + 1 + vl, ": ", 2))
		message += dl + vl + 3;
	char unchecked[80];
	snprintf(j->result, sizeof j->result, "%.300s; %llu shards sound, %llu damaged%s%s%.150s",
		 message, (unsigned long long)n->ok, (unsigned long long)n->bad,
		 verify_unchecked(n, unchecked, sizeof unchecked), tg->health[0] ? "; " : "",
		 tg->health);
}

static int verify_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	struct tui_verify_count n = { 0 };
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	int rc = s ? tui_verify_version(j, s, &tg->ref, 0, 0, &n, tg->health, sizeof tg->health,
					&err)
		   : err.code;
	mt_store_close(s);
	if (rc && rc != MT_ECORRUPT)
		return tui_job_fail(j, &err);
	tg->shards_ok = n.ok;
	tg->shards_bad = n.bad;
	char item[300];
	mt_error e;
	snprintf(item, sizeof item, "%s@%s", tg->ref.dataset, tg->ref.version);
	if (j->catalog_id)
		mt_catalog_job_result(j->t->cat, j->catalog_id, item, rc, tg->health, &e);
	if (n.stopped)
		verify_stopped_result(j, &n, err.message);
	else
		snprintf(j->result, sizeof j->result, "%llu shards sound, %llu damaged%s%.300s%s%.150s",
			 (unsigned long long)tg->shards_ok, (unsigned long long)tg->shards_bad,
			 rc ? ": " : "", rc ? err.message : "", tg->health[0] ? "; " : "",
			 tg->health);
	return rc;
}

/* ---- verify of a whole dataset or bucket ---- */

struct verify_item {
	char *dataset, *version;
	uint64_t bytes;
	int lost; /* its manifest is lost: nothing to read, repair brings it back */
};

/* What a dataset's or bucket's verify works on: its versions, listed from
 * the catalog when the key was pressed. */
struct verify_all {
	mt_catalog_ref ref; /* the bucket's, or the dataset's */
	int stale;
	struct verify_item *v;
	size_t n, cap;
	const char *listing; /* the dataset whose versions are being listed */
	size_t ndatasets;
	size_t sound, repairable, lost, failed;
};

static void verify_all_free(void *arg)
{
	struct verify_all *a = arg;
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].dataset);
		free(a->v[i].version);
	}
	free(a->v);
	mt_catalog_ref_free(&a->ref);
	free(a);
}

static int verify_item_fn(void *ud, const mt_catalog_row *row)
{
	struct verify_all *a = ud;
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 16;
		a->v = app_xreallocarray(a->v, a->cap, sizeof *a->v);
	}
	struct verify_item *it = &a->v[a->n++];
	it->dataset = app_xstrdup(a->listing);
	it->version = app_xstrdup(row->cols[0] ? row->cols[0] : "");
	it->bytes = row->cols[4] ? strtoull(row->cols[4], NULL, 10) : 0;
	it->lost = row->cols[10] && !strcmp(row->cols[10], "lost");
	return 0;
}

/* A bucket's datasets, to list each one's versions after. */
struct dataset_rows {
	int64_t *id;
	struct tui_words names;
};

static int dataset_row_fn(void *ud, const mt_catalog_row *row)
{
	struct dataset_rows *d = ud;
	d->id = app_xreallocarray(d->id, d->names.n + 1, sizeof *d->id);
	d->id[d->names.n] = row->id;
	tui_words_add(&d->names, row->cols[0] ? row->cols[0] : "");
	return 0;
}

/* The versions of dataset `id` (named `name`) into a's list. */
static int verify_list_dataset(struct tui *t, struct verify_all *a, int64_t id, const char *name,
			       mt_error *err)
{
	size_t before = a->n;
	a->listing = name;
	int rc = mt_catalog_list(t->cat, MT_CAT_VERSIONS, id, NULL, verify_item_fn, a, err);
	a->listing = NULL;
	a->ndatasets += a->n > before;
	return rc;
}

/* One version's outcome, counted and, unless sound, logged and kept. */
static void verify_all_note(struct tui_job *j, struct verify_all *a, const struct verify_item *it,
			    int rc, const char *health, const mt_error *err)
{
	const char *what = health;
	if (rc && rc != MT_ECORRUPT) {
		a->failed++;
		what = err->message;
		tui_job_log(j, "%s@%s: not verified: %s", it->dataset, it->version, what);
	} else if (!rc) {
		a->sound++;
		return;
	} else if (!strncmp(health, "repairable", 10)) {
		a->repairable++;
	} else {
		a->lost++;
	}
	char item[300];
	snprintf(item, sizeof item, "%s@%s", it->dataset, it->version);
	mt_error e;
	if (j->catalog_id)
		mt_catalog_job_result(j->t->cat, j->catalog_id, item, rc ? rc : MT_ECORRUPT, what, &e);
}

static int verify_all_run(struct tui_job *j)
{
	struct verify_all *a = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &a->ref, &a->stale, &err);
	if (!s)
		return tui_job_fail(j, &err);
	uint64_t total = 0, base = 0;
	for (size_t i = 0; i < a->n; i++)
		total += a->v[i].bytes;
	tui_job_progress(j, 0, total);
	/* Versions of a chain list the same shard objects: each is read once,
	 * and its result holds for every version listing it. */
	struct tui_verify_count n = { 0 };
	int rc = mt_verify_memo_new(&n.memo, &err);
	for (size_t i = 0; i < a->n && !rc; i++) {
		const struct verify_item *it = &a->v[i];
		mt_catalog_ref ref = { .remote = a->ref.remote, .url = a->ref.url,
				       .dataset = it->dataset, .version = it->version, .shard = -1 };
		char health[400] = "";
		mt_error e = { 0 };
		int vrc = it->lost ? MT_ECORRUPT
			  : tui_verify_version(j, s, &ref, 1, base, &n, health, sizeof health, &e);
		if (it->lost) {
			snprintf(health, sizeof health, "lost: its manifest (R repairs it from its "
				 "protection record or another store)");
			tui_job_log(j, "%s@%s: %s", it->dataset, it->version, health);
		}
		base += it->bytes;
		if (vrc == MT_ECANCELED || tui_job_progress(j, base, 0))
			rc = MT_ECANCELED;
		else
			verify_all_note(j, a, it, vrc, health, &e);
	}
	mt_store_close(s);
	uint64_t objects = 0, bytes = 0;
	if (n.memo)
		mt_verify_memo_reads(n.memo, &objects, &bytes);
	mt_verify_memo_free(n.memo);
	if (rc)
		return tui_job_fail(j, err.code ? &err : &(mt_error){ .code = rc });
	char read[32], unchecked[80];
	snprintf(j->result, sizeof j->result,
		 "%zu version%s: %zu sound, %zu repairable, %zu lost or damaged, %zu not verified; "
		 "%llu shards sound, %llu damaged%s%s; %llu shard objects read (%s)", a->n,
		 a->n == 1 ? "" : "s", a->sound, a->repairable, a->lost, a->failed,
		 (unsigned long long)n.ok, (unsigned long long)n.bad,
		 a->repairable ? " (R repairs)" : "", verify_unchecked(&n, unchecked, sizeof unchecked),
		 (unsigned long long)objects,
		 app_human_bytes(bytes, read, sizeof read));
	return a->sound == a->n ? 0 : MT_ECORRUPT;
}

void tui_verify_all(struct tui *t, int level, int64_t id)
{
	struct verify_all *a = app_xcalloc(1, sizeof *a);
	mt_error err = { 0 };
	int rc = mt_catalog_locate(t->cat, level, id, &a->ref, &err);
	if (!rc && level == MT_CAT_DATASETS) {
		rc = verify_list_dataset(t, a, id, a->ref.dataset, &err);
	} else if (!rc) {
		struct dataset_rows d = { 0 };
		rc = mt_catalog_list(t->cat, MT_CAT_DATASETS, id, NULL, dataset_row_fn, &d, &err);
		for (size_t i = 0; !rc && i < d.names.n; i++)
			rc = verify_list_dataset(t, a, d.id[i], d.names.v[i], &err);
		free(d.id);
		tui_words_free(&d.names);
	}
	if (rc || !a->n) {
		tui_status(t, 1, "%s", rc ? err.message : "nothing to verify: no version here (r to sync)");
		verify_all_free(a);
		return;
	}
	char title[160];
	if (level == MT_CAT_DATASETS)
		snprintf(title, sizeof title, "verify %.40s:%.80s (%zu version%s)", a->ref.remote,
			 a->ref.dataset, a->n, a->n == 1 ? "" : "s");
	else
		snprintf(title, sizeof title, "verify %.40s: every dataset (%zu, %zu versions)",
			 a->ref.remote, a->ndatasets, a->n);
	tui_job_start(t, "verify", title, "bytes", verify_all_run, NULL, a, verify_all_free);
}

#define OLD_BUCKET "; its remote points elsewhere now, so r drops the bucket from the catalog"

/* The catalog learns what a job changed in the bucket it acted on.  An old
 * bucket is not synced under its remote's name: that would point the remote
 * back at it. */
static void catalog_note(struct tui_job *j, mt_store *s)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	if (!tg->stale)
		mt_catalog_sync(j->t->cat, tg->ref.remote, s, tg->ref.dataset, 0, NULL, NULL, NULL,
				&err);
}

/* ---- metadata ---- */

/* Tags as typed: separated by spaces or commas. */
static size_t split_tags(char *text, const char **tags, size_t cap)
{
	size_t n = 0;
	for (char *tok = strtok(text, " ,"); tok && n < cap; tok = strtok(NULL, " ,"))
		tags[n++] = tok;
	return n;
}

/* The new tags or description beside the version; the catalog learns them. */
static int meta_write(struct tui_job *j, mt_store *s, mt_reader *r, mt_error *err)
{
	struct target *tg = j->arg;
	int tags_edit = !strcmp(j->kind, "tags");
	const mt_version_info *vi = mt_reader_info(r);
	char *copy = app_xstrdup(tg->text);
	const char *tags[256];
	size_t n = tags_edit ? split_tags(copy, tags, 256) : vi->ntags;
	if (!tags_edit)
		memcpy(tags, vi->tags, (n < 256 ? n : 256) * sizeof *tags);
	int rc = mt_store_set_metadata(s, tg->ref.dataset, tg->ref.version,
				       tags_edit ? vi->description : tg->text, tags,
				       n < 256 ? n : 256, err);
	free(copy);
	if (!rc)
		catalog_note(j, s);
	return rc;
}

static int meta_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	int tags_edit = !strcmp(j->kind, "tags");
	mt_error err = { 0 };
	int rc = target_with_reader(j, meta_write, &err);
	if (rc)
		return tui_job_fail(j, &err);
	snprintf(j->result, sizeof j->result, "%s written to %s%s", tags_edit ? "tags" : "description",
		 tg->ref.url, tg->stale ? OLD_BUCKET : "");
	return 0;
}

/* ---- delete ---- */

static int delete_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	int rc = s ? mt_store_delete_version(s, tg->ref.dataset, tg->ref.version, &err) : err.code;
	if (!rc)
		catalog_note(j, s);
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	snprintf(j->result, sizeof j->result,
		 "deleted from %s (its shards stay until gc: X previews it, 'delete now' skips "
		 "the grace period)%s", tg->ref.url, tg->stale ? OLD_BUCKET : "");
	return 0;
}

/* ---- prompts that start jobs ---- */

static void job_title(char *buf, size_t cap, const char *verb, const struct target *tg)
{
	snprintf(buf, cap, "%s %s:%s@%s", verb, tg->ref.remote, tg->ref.dataset, tg->ref.version);
}

static void text_submit(struct tui *t, const char *text, void *arg, const char *kind,
			int (*run)(struct tui_job *j), const char *unit)
{
	struct target *tg = arg;
	char title[160];
	tg->text = app_xstrdup(text);
	job_title(title, sizeof title, kind, tg);
	tui_job_start(t, kind, title, unit, run, NULL, tg, tui_target_free);
}

static void tags_submit(struct tui *t, const char *text, void *arg)
{
	text_submit(t, text, arg, "tags", meta_run, NULL);
}

static void describe_submit(struct tui *t, const char *text, void *arg)
{
	text_submit(t, text, arg, "describe", meta_run, NULL);
}

static void delete_submit(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	char name[300];
	snprintf(name, sizeof name, "%s@%s", tg->ref.dataset, tg->ref.version);
	if (strcmp(text, name)) {
		tui_status(t, 1, "not deleted: '%s' is not '%s'", text, name);
		tui_target_free(tg);
		return;
	}
	text_submit(t, text, arg, "delete", delete_run, NULL);
}

struct field_find {
	const char *field;
	char *buf;
	size_t cap;
};

static int field_row(void *ud, const mt_catalog_row *row)
{
	struct field_find *f = ud;
	if (strcmp(row->cols[0], f->field))
		return 0;
	snprintf(f->buf, f->cap, "%s", row->cols[1] ? row->cols[1] : "");
	return 1;
}

/* A field of a version's details as the catalog has it ("" for none). */
static void current_field(struct tui *t, int64_t id, const char *field, char *buf, size_t cap)
{
	struct field_find f = { field, buf, cap };
	mt_error err;
	buf[0] = '\0';
	mt_catalog_list(t->cat, MT_CAT_VERSION, id, NULL, field_row, &f, &err);
}

static int first_attr(void *ud, const mt_catalog_row *row)
{
	snprintf(ud, 256, "%s", row->cols[0]);
	return 1;
}

void tui_version_action(struct tui *t, enum tui_action a, int64_t version_id)
{
	struct target *tg = tui_target_new(t, MT_CAT_VERSIONS, version_id);
	if (!tg)
		return;
	char label[400], title[160], cur[512];
	switch (a) {
	case ACT_REPAIR:
	case ACT_PROTECT:
		tui_target_free(tg);
		if (a == ACT_REPAIR)
			tui_repair_start(t, version_id);
		else
			tui_protect_start(t, version_id, NULL);
		return;
	case ACT_DIFF:
		tui_target_free(tg);
		tui_diff_action(t, version_id);
		return;
	case ACT_VERIFY:
		job_title(title, sizeof title, "verify", tg);
		tui_job_start(t, "verify", title, "bytes", verify_run, NULL, tg, tui_target_free);
		return;
	case ACT_COPY:
		tui_copy_ask(t, tg);
		return;
	case ACT_TAGS:
		current_field(t, version_id, "tags", cur, sizeof cur);
		for (char *p = cur; *p; p++)
			if (*p == ',')
				*p = ' ';
		snprintf(label, sizeof label, "tags of %s@%s (space-separated): ", tg->ref.dataset,
			 tg->ref.version);
		tui_ask(t, label, cur, tags_submit, tg, tui_target_free);
		return;
	case ACT_DESCRIBE:
		current_field(t, version_id, "description", cur, sizeof cur);
		snprintf(label, sizeof label, "description of %s@%s: ", tg->ref.dataset,
			 tg->ref.version);
		tui_ask(t, label, cur, describe_submit, tg, tui_target_free);
		return;
	case ACT_DELETE:
		snprintf(label, sizeof label, "delete %s@%s from %s? type its name to confirm: ",
			 tg->ref.dataset, tg->ref.version, tg->ref.remote);
		tui_ask(t, label, "", delete_submit, tg, tui_target_free);
		return;
	case ACT_MATRIX: {
		char attr[256] = "";
		mt_error err;
		mt_catalog_list(t->cat, MT_CAT_ATTRS, version_id, NULL, first_attr, attr, &err);
		if (attr[0])
			tui_push(t, tui_matrix_view(t, &tg->ref, attr));
		else
			tui_status(t, 1, "the version has no attributes");
		tui_target_free(tg);
		return;
	}
	default:
		tui_target_free(tg);
		break;
	}
}

/* ---- a shard's chunk layout: read its chunk index, show it ---- */

static void chunk_line(void *ud, const mt_chunk_info *c)
{
	struct tui_job *j = ud;
	char human[32];
	tui_job_log(j, "%-20s %-8s %12llu %10s  %llu..%llu (%llu x %llu B)", c->attr, c->dtype,
		    (unsigned long long)c->offset, app_human_bytes(c->bytes, human, sizeof human),
		    (unsigned long long)c->first, (unsigned long long)(c->first + c->count),
		    (unsigned long long)c->count, (unsigned long long)c->unit_bytes);
}

static int chunks_reader(struct tui_job *j, mt_store *s, mt_reader *r, mt_error *err)
{
	struct target *tg = j->arg;
	return mt_reader_chunks(r, (size_t)tg->ref.shard, chunk_line, j, err);
}

static int chunks_run(struct tui_job *j)
{
	mt_error err = { 0 };
	int rc = target_with_reader(j, chunks_reader, &err);
	if (rc)
		return tui_job_fail(j, &err);
	snprintf(j->result, sizeof j->result, "%zu chunks", j->nlog);
	return 0;
}

static void chunks_read(struct tui *t, struct tui_job *j)
{
	struct target *tg = j->arg;
	if (atomic_load(&j->state) != JOB_OK)
		return;
	pthread_mutex_lock(&j->lock);
	char **lines = app_xcalloc(j->nlog + 2, sizeof *lines);
	size_t n = 0;
	lines[n++] = app_xasprintf("%-20s %-8s %12s %10s  %s", "ATTRIBUTE", "DTYPE", "OFFSET",
				   "BYTES", "UNITS");
	for (size_t i = 0; i < j->nlog; i++)
		lines[n++] = app_xstrdup(j->log[i]);
	pthread_mutex_unlock(&j->lock);
	char title[64];
	snprintf(title, sizeof title, "chunks of shard %lld", (long long)tg->ref.shard);
	tui_job_show(t, j, tui_text_view(title, lines, n));
}

void tui_chunks_action(struct tui *t, int64_t shard_id)
{
	struct target *tg = tui_target_new(t, MT_CAT_SHARDS, shard_id);
	if (!tg)
		return;
	char title[200];
	snprintf(title, sizeof title, "chunks %s:%s@%s shard %lld", tg->ref.remote, tg->ref.dataset,
		 tg->ref.version, (long long)tg->ref.shard);
	tui_job_start(t, "chunks", title, NULL, chunks_run, chunks_read, tg, tui_target_free);
}
