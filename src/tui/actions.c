/* actions.c — what the browser does to stores, each as a job: sync, verify, copy (push/pull), edit tags and description, delete with a typed name, gc with a preview. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* What a job works on: a catalog row located when the key was pressed. */
struct target {
	mt_catalog_ref ref;
	char *text;  /* typed input: tags, description, destination remote */
	uint64_t found, bytes; /* gc: objects found and their bytes */
	uint64_t shards_ok, shards_bad;
	char health[400]; /* verify: sound, repairable from what, or what is lost */
	int stale; /* the bucket is no longer where its remote points */
	unsigned view; /* gc: the preview to update once the deletion ends */
};

static void target_free(void *arg)
{
	struct target *tg = arg;
	if (!tg)
		return;
	mt_catalog_ref_free(&tg->ref);
	free(tg->text);
	free(tg);
}

static struct target *target_new(struct tui *t, int level, int64_t id)
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
	tui_job_start(t, "sync", title, "datasets", sync_run, NULL, tg, target_free);
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

/* ---- copy ---- */

/* The destination as typed: a remote's name (or "local"), else a URL the
 * user confirmed; only then may a store be made there. */
static int copy_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	mt_error err = { 0 };
	mt_store *src = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	mt_store *dst = src ? tui_open_store(j, tg->text, &err) : NULL;
	mt_copy_stats st;
	int rc = dst ? mt_copy(src, dst, tg->ref.dataset, tg->ref.version, 0, tui_job_progress, j,
			       &st, &err)
		     : err.code;
	if (!rc) {
		char sent[32];
		snprintf(j->result, sizeof j->result,
			 "%llu shards sent (%s) to %s, %llu already there",
			 (unsigned long long)st.shards, app_human_bytes(st.bytes, sent, sizeof sent),
			 mt_store_url(dst), (unsigned long long)st.shards_present);
		/* The destination's catalog entry is part of the job. */
		mt_catalog_sync(j->t->cat, tg->text, dst, tg->ref.dataset, 0, NULL, NULL, NULL,
				&err);
	}
	mt_store_close(dst);
	mt_store_close(src);
	return rc ? tui_job_fail(j, &err) : 0;
}

/* What a job that changed an old bucket adds to its result. */
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
	snprintf(j->result, sizeof j->result, "deleted from %s (its shards stay until gc)%s",
		 tg->ref.url, tg->stale ? OLD_BUCKET : "");
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
	tui_job_start(t, kind, title, unit, run, NULL, tg, target_free);
}

static void tags_submit(struct tui *t, const char *text, void *arg)
{
	text_submit(t, text, arg, "tags", meta_run, NULL);
}

static void describe_submit(struct tui *t, const char *text, void *arg)
{
	text_submit(t, text, arg, "describe", meta_run, NULL);
}

static void copy_start(struct tui *t, struct target *tg, const char *dst)
{
	char title[160];
	char *d = app_xstrdup(dst);
	free(tg->text);
	tg->text = d;
	snprintf(title, sizeof title, "copy %s:%s@%s to %s", tg->ref.remote, tg->ref.dataset,
		 tg->ref.version, d);
	tui_job_start(t, "copy", title, "bytes", copy_run, NULL, tg, target_free);
}

static void copy_confirm(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	if (strcmp(text, "yes")) {
		tui_status(t, 0, "copy: nothing copied");
		target_free(tg);
		return;
	}
	copy_start(t, tg, tg->text);
}

static int is_remote(const char *name)
{
	struct tui_words w = { 0 };
	tui_complete_remotes(NULL, "", &w, NULL);
	int found = 0;
	for (size_t i = 0; i < w.n; i++)
		found |= !strcmp(w.v[i], name);
	tui_words_free(&w);
	return found;
}

/* A remote goes ahead; a URL (or a path) asks first, since a new store may be
 * made there; anything else is a typo and copies nothing. */
static void copy_submit(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	char dst[512];
	snprintf(dst, sizeof dst, "%s", text);
	for (size_t n = strlen(dst); n && dst[n - 1] == ' ';)
		dst[--n] = '\0';
	if (!*dst || !strcmp(dst, tg->ref.remote)) {
		tui_status(t, 1, "copy: name another remote (Tab lists them)");
		target_free(tg);
	} else if (is_remote(dst)) {
		copy_start(t, tg, dst);
	} else if (strstr(dst, "://") || dst[0] == '/' || dst[0] == '.') {
		char label[700];
		free(tg->text);
		tg->text = app_xstrdup(dst);
		snprintf(label, sizeof label, "%s is no remote: copy there, making a new store if "
			 "there is none? type 'yes': ", dst);
		tui_ask(t, label, "", copy_confirm, tg, target_free);
	} else {
		tui_status(t, 1, "copy: no remote '%s' (Tab lists them; a new store needs a URL: "
			   "file:///DIR or s3://BUCKET)", dst);
		target_free(tg);
	}
}

static void delete_submit(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	char name[300];
	snprintf(name, sizeof name, "%s@%s", tg->ref.dataset, tg->ref.version);
	if (strcmp(text, name)) {
		tui_status(t, 1, "not deleted: '%s' is not '%s'", text, name);
		target_free(tg);
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
	struct target *tg = target_new(t, MT_CAT_VERSIONS, version_id);
	if (!tg)
		return;
	char label[400], title[160], cur[512];
	switch (a) {
	case ACT_REPAIR:
	case ACT_PROTECT:
		target_free(tg);
		if (a == ACT_REPAIR)
			tui_repair_start(t, version_id);
		else
			tui_protect_start(t, version_id, NULL);
		return;
	case ACT_VERIFY:
		job_title(title, sizeof title, "verify", tg);
		tui_job_start(t, "verify", title, "bytes", verify_run, NULL, tg, target_free);
		return;
	case ACT_COPY:
		snprintf(label, sizeof label, "copy %s@%s from %s to (Tab: remotes): ",
			 tg->ref.dataset, tg->ref.version, tg->ref.remote);
		tui_ask(t, label, "", copy_submit, tg, target_free);
		t->prompt.hist = TUI_HIST_COPY;
		t->prompt.complete = tui_complete_remotes;
		return;
	case ACT_TAGS:
		current_field(t, version_id, "tags", cur, sizeof cur);
		for (char *p = cur; *p; p++)
			if (*p == ',')
				*p = ' ';
		snprintf(label, sizeof label, "tags of %s@%s (space-separated): ", tg->ref.dataset,
			 tg->ref.version);
		tui_ask(t, label, cur, tags_submit, tg, target_free);
		return;
	case ACT_DESCRIBE:
		current_field(t, version_id, "description", cur, sizeof cur);
		snprintf(label, sizeof label, "description of %s@%s: ", tg->ref.dataset,
			 tg->ref.version);
		tui_ask(t, label, cur, describe_submit, tg, target_free);
		return;
	case ACT_DELETE:
		snprintf(label, sizeof label, "delete %s@%s from %s? type its name to confirm: ",
			 tg->ref.dataset, tg->ref.version, tg->ref.remote);
		tui_ask(t, label, "", delete_submit, tg, target_free);
		return;
	case ACT_MATRIX: {
		char attr[256] = "";
		mt_error err;
		mt_catalog_list(t->cat, MT_CAT_ATTRS, version_id, NULL, first_attr, attr, &err);
		if (attr[0])
			tui_push(t, tui_matrix_view(t, &tg->ref, attr));
		else
			tui_status(t, 1, "the version has no attributes");
		target_free(tg);
		return;
	}
	default:
		target_free(tg);
		break;
	}
}

/* ---- gc: a dry run first, then the same with deletion once confirmed ---- */

static void gc_found(void *ud, const char *key, uint64_t bytes)
{
	struct tui_job *j = ud;
	char human[32];
	tui_job_log(j, "%10s  %s", app_human_bytes(bytes, human, sizeof human), key);
}

#define GC_GRACE 3600

/* What gc leaves for the grace period: unreferenced objects younger than it
 * (a put may still be writing them), counted by a dry run without grace. */
static void gc_kept(char *buf, size_t cap, uint64_t n, uint64_t bytes)
{
	char human[32];
	if (!n) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, cap, "; %llu object%s (%s) kept for the %d h grace period",
		 (unsigned long long)n, n == 1 ? "" : "s",
		 app_human_bytes(bytes, human, sizeof human), GC_GRACE / 3600);
}

static int gc_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	int dry = !strcmp(j->kind, "gc-preview");
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	uint64_t n = 0, bytes = 0, all = 0, all_bytes = 0;
	int rc = s ? mt_store_gc(s, tg->ref.dataset, dry, GC_GRACE, gc_found, j, &n, &bytes, &err)
		   : err.code;
	if (!rc)
		rc = mt_store_gc(s, tg->ref.dataset, 1, 0, NULL, NULL, &all, &all_bytes, &err);
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	/* After a deletion everything still unreferenced is young. */
	uint64_t kept = dry ? all - n : all, kept_bytes = dry ? all_bytes - bytes : all_bytes;
	char human[32], keep[200];
	tg->found = n;
	tg->bytes = bytes;
	gc_kept(keep, sizeof keep, kept, kept_bytes);
	if (!n)
		snprintf(j->result, sizeof j->result, "nothing to delete%s", keep);
	else
		snprintf(j->result, sizeof j->result, "%llu objects, %s %s%s", (unsigned long long)n,
			 app_human_bytes(bytes, human, sizeof human),
			 dry ? "would be deleted" : "deleted", keep);
	return 0;
}

/* The deletion ended: the preview still on screen now says what happened. */
static void gc_done(struct tui *t, struct tui_job *j)
{
	struct target *tg = j->arg;
	struct view *v = tui_find_view(t, tg->view);
	if (!v)
		return;
	pthread_mutex_lock(&j->lock);
	char **lines = app_xcalloc(j->nlog + 2, sizeof *lines);
	size_t n = 0;
	lines[n++] = app_xasprintf("gc: %s", j->result);
	for (size_t i = 0; i < j->nlog; i++)
		lines[n++] = app_xstrdup(j->log[i]);
	pthread_mutex_unlock(&j->lock);
	tui_text_view_set(v, "gc result", lines, n);
}

static void gc_confirm(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	if (strcmp(text, "delete")) {
		tui_status(t, 0, "gc: nothing deleted");
		target_free(tg);
		return;
	}
	char title[160];
	snprintf(title, sizeof title, "gc %s%s%s", tg->ref.remote, tg->ref.dataset ? ":" : "",
		 tg->ref.dataset ? tg->ref.dataset : "");
	tui_job_start(t, "gc", title, NULL, gc_run, gc_done, tg, target_free);
}

/* The preview ended: show what it found, and ask. */
static void gc_previewed(struct tui *t, struct tui_job *j)
{
	struct target *tg = j->arg;
	if (atomic_load(&j->state) != JOB_OK)
		return;
	if (!tg->found) {
		tui_status(t, 0, "gc: %s", j->result);
		return;
	}
	pthread_mutex_lock(&j->lock);
	char **lines = app_xcalloc(j->nlog + 2, sizeof *lines);
	size_t n = 0;
	lines[n++] = app_xasprintf("gc preview: %s", j->result);
	for (size_t i = 0; i < j->nlog; i++)
		lines[n++] = app_xstrdup(j->log[i]);
	pthread_mutex_unlock(&j->lock);
	struct view *preview = tui_text_view("gc preview", lines, n);
	tui_push(t, preview);
	/* A second target for the deleting job: the preview's stays with it. */
	struct target *del = app_xcalloc(1, sizeof *del);
	del->ref.remote = app_xstrdup(tg->ref.remote);
	del->ref.url = app_xstrdup(tg->ref.url);
	del->ref.dataset = tg->ref.dataset ? app_xstrdup(tg->ref.dataset) : NULL;
	del->ref.shard = -1;
	del->view = preview->serial;
	char label[700];
	snprintf(label, sizeof label, "%s: type 'delete' to delete them, Esc to keep them: ",
		 j->result);
	tui_ask(t, label, "", gc_confirm, del, target_free);
}

void tui_gc_action(struct tui *t, int level, int64_t id)
{
	struct target *tg = target_new(t, level, id);
	if (!tg)
		return;
	char title[160];
	snprintf(title, sizeof title, "gc preview %s%s%s", tg->ref.remote,
		 tg->ref.dataset ? ":" : "", tg->ref.dataset ? tg->ref.dataset : "");
	tui_job_start(t, "gc-preview", title, NULL, gc_run, gc_previewed, tg, target_free);
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
	tui_push(t, tui_text_view(title, lines, n));
}

void tui_chunks_action(struct tui *t, int64_t shard_id)
{
	struct target *tg = target_new(t, MT_CAT_SHARDS, shard_id);
	if (!tg)
		return;
	char title[200];
	snprintf(title, sizeof title, "chunks %s:%s@%s shard %lld", tg->ref.remote, tg->ref.dataset,
		 tg->ref.version, (long long)tg->ref.shard);
	tui_job_start(t, "chunks", title, NULL, chunks_run, chunks_read, tg, target_free);
}
