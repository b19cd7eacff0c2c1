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

static void verify_shard(void *ud, size_t shard, const mt_shard_info *info, int code,
			 const char *message)
{
	struct tui_job *j = ud;
	struct target *tg = j->arg;
	mt_error err;
	char item[32];
	snprintf(item, sizeof item, "shard %zu", shard);
	tui_job_log(j, "shard %zu %.12s…: %s", shard, info->sha256, code ? message : "ok");
	if (code)
		tg->shards_bad++;
	else
		tg->shards_ok++;
	if (j->catalog_id)
		mt_catalog_job_result(j->t->cat, j->catalog_id, item, code, message, &err);
	mt_catalog_shard_verified(j->t->cat, tg->ref.url, tg->ref.dataset, info->sha256, code,
				  message, &err);
}

static int verify_reader(struct tui_job *j, mt_store *s, mt_reader *r, mt_error *err)
{
	struct target *tg = j->arg;
	int rc = mt_reader_verify(r, verify_shard, j, tui_job_progress, j, err);
	if (!rc || rc == MT_ECORRUPT)
		tui_verify_health(j, s, &tg->ref, rc, tg->shards_ok + tg->shards_bad, tg->health,
				  sizeof tg->health);
	return rc;
}

static int verify_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	int rc = target_with_reader(j, verify_reader, &err);
	if (rc && rc != MT_ECORRUPT)
		return tui_job_fail(j, &err);
	snprintf(j->result, sizeof j->result, "%llu shards sound, %llu damaged%s%.300s%s%.150s",
		 (unsigned long long)tg->shards_ok, (unsigned long long)tg->shards_bad,
		 rc ? ": " : "", rc ? err.message : "", tg->health[0] ? "; " : "", tg->health);
	return rc;
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
