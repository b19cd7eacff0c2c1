/* gc.c — the browser's garbage collection of a dataset or bucket: a dry run shown first, the deletion once 'delete' is typed, what is kept for the grace period said. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"

static void gc_found(void *ud, const char *key, uint64_t bytes)
{
	struct tui_job *j = ud;
	char human[32];
	tui_job_log(j, "%10s  %s", app_human_bytes(bytes, human, sizeof human), key);
}

#define GC_GRACE 3600

/* What gc leaves for the grace period: unreferenced objects younger than it
 * (a put may still be writing them), counted by a dry run without grace. */
static void gc_kept(char *buf, size_t cap, uint64_t n, uint64_t bytes, uint64_t grace)
{
	char human[32], period[32];
	if (!n) {
		buf[0] = '\0';
		return;
	}
	if (grace % 3600 == 0)
		snprintf(period, sizeof period, "%llu h", (unsigned long long)(grace / 3600));
	else
		snprintf(period, sizeof period, "%llu s", (unsigned long long)grace);
	snprintf(buf, cap, "; %llu object%s (%s) kept for the %s grace period",
		 (unsigned long long)n, n == 1 ? "" : "s",
		 app_human_bytes(bytes, human, sizeof human), period);
}

static uint64_t gc_grace(const struct target *tg)
{
	return tg->grace < 0 ? GC_GRACE : (uint64_t)tg->grace;
}

static int gc_run(struct tui_job *j)
{
	struct target *tg = j->arg;
	int dry = !strcmp(j->kind, "gc-preview");
	mt_error err = { 0 };
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	uint64_t n = 0, bytes = 0, all = 0, all_bytes = 0;
	int rc = s ? mt_store_gc(s, tg->ref.dataset, dry, gc_grace(tg), gc_found, j, &n, &bytes,
				 &err)
		   : err.code;
	if (!rc)
		rc = mt_store_gc(s, tg->ref.dataset, 1, 0, NULL, NULL, &all, &all_bytes, &err);
	/* A dataset with no version left goes from the lists with its last shards. */
	if (!rc && !dry && n && !tg->stale) {
		mt_error e2 = { 0 };
		mt_catalog_sync(j->t->cat, tg->ref.remote, s, tg->ref.dataset, 0, NULL, NULL, NULL,
				&e2);
	}
	mt_store_close(s);
	if (rc)
		return tui_job_fail(j, &err);
	/* After a deletion everything still unreferenced is young. */
	uint64_t kept = dry ? all - n : all, kept_bytes = dry ? all_bytes - bytes : all_bytes;
	char human[32], keep[200];
	tg->found = n;
	tg->bytes = bytes;
	tg->kept = kept;
	gc_kept(keep, sizeof keep, kept, kept_bytes, gc_grace(tg));
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
	/* 'delete now' takes the young objects too: right after a delete its
	 * shards are young, and waiting an hour is not what was asked. */
	if (!strcmp(text, "delete now")) {
		tg->grace = 0;
	} else if (strcmp(text, "delete")) {
		tui_status(t, 0, "gc: nothing deleted");
		tui_target_free(tg);
		return;
	}
	char title[160];
	snprintf(title, sizeof title, "gc %s%s%s", tg->ref.remote, tg->ref.dataset ? ":" : "",
		 tg->ref.dataset ? tg->ref.dataset : "");
	tui_job_start(t, "gc", title, NULL, gc_run, gc_done, tg, tui_target_free);
}

/* The preview ended: show what it found, and ask. */
static void gc_previewed(struct tui *t, struct tui_job *j)
{
	struct target *tg = j->arg;
	if (atomic_load(&j->state) != JOB_OK)
		return;
	if (!tg->found && !tg->kept) {
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
	/* The preview writes nothing: read-only shows it and stops there. */
	if (t->read_only) {
		tui_status(t, 0, "gc preview: %s (read-only: nothing is deleted)", j->result);
		return;
	}
	/* A second target for the deleting job: the preview's stays with it. */
	struct target *del = app_xcalloc(1, sizeof *del);
	del->ref.remote = app_xstrdup(tg->ref.remote);
	del->ref.url = app_xstrdup(tg->ref.url);
	del->ref.dataset = tg->ref.dataset ? app_xstrdup(tg->ref.dataset) : NULL;
	del->ref.shard = -1;
	del->view = preview->serial;
	del->grace = tg->grace;
	char label[900], now[160] = "";
	if (tg->kept)
		snprintf(now, sizeof now, ", 'delete now' to delete the %llu kept for the grace too",
			 (unsigned long long)tg->kept);
	snprintf(label, sizeof label, "%s: type 'delete' to delete %s%s, Esc to keep them: ",
		 j->result, tg->found ? "them" : "nothing", now);
	tui_ask(t, label, "", gc_confirm, del, tui_target_free);
}

void tui_gc_action(struct tui *t, int level, int64_t id)
{
	tui_gc_start(t, level, id, -1);
}

void tui_gc_start(struct tui *t, int level, int64_t id, int64_t grace)
{
	struct target *tg = tui_target_new(t, level, id);
	if (!tg)
		return;
	tg->grace = grace;
	char title[160];
	snprintf(title, sizeof title, "gc preview %s%s%s", tg->ref.remote,
		 tg->ref.dataset ? ":" : "", tg->ref.dataset ? tg->ref.dataset : "");
	tui_job_start(t, "gc-preview", title, NULL, gc_run, gc_previewed, tg, tui_target_free);
}
