/* copy.c — the browser's copy (push/pull) of a version: a destination picked among the remotes with Tab, a new store only at a URL the user confirms, then the copy as a job. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"

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
		char summary[256];
		/* The counts first: a narrow status line cuts the URL, not them. */
		snprintf(j->result, sizeof j->result, "%s; to %s",
			 app_copy_summary(&st, summary, sizeof summary), mt_store_url(dst));
		/* The destination's catalog entry is part of the job. */
		mt_catalog_sync(j->t->cat, tg->text, dst, tg->ref.dataset, 0, NULL, NULL, NULL,
				&err);
	}
	mt_store_close(dst);
	mt_store_close(src);
	return rc ? tui_job_fail(j, &err) : 0;
}

/* What a job that changed an old bucket adds to its result. */

static void copy_start(struct tui *t, struct target *tg, const char *dst)
{
	char title[160];
	char *d = app_xstrdup(dst);
	free(tg->text);
	tg->text = d;
	snprintf(title, sizeof title, "copy %s:%s@%s to %s", tg->ref.remote, tg->ref.dataset,
		 tg->ref.version, d);
	tui_job_start(t, "copy", title, "bytes", copy_run, NULL, tg, tui_target_free);
}

static void copy_confirm(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	if (strcmp(text, "yes")) {
		tui_status(t, 0, "copy: nothing copied");
		tui_target_free(tg);
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
		tui_target_free(tg);
	} else if (is_remote(dst)) {
		copy_start(t, tg, dst);
	} else if (strstr(dst, "://") || dst[0] == '/' || dst[0] == '.') {
		char label[700];
		free(tg->text);
		tg->text = app_xstrdup(dst);
		snprintf(label, sizeof label, "%s is no remote: copy there, making a new store if "
			 "there is none? type 'yes': ", dst);
		tui_ask(t, label, "", copy_confirm, tg, tui_target_free);
	} else {
		tui_status(t, 1, "copy: no remote '%s' (Tab lists them; a new store needs a URL: "
			   "file:///DIR or s3://BUCKET)", dst);
		tui_target_free(tg);
	}
}

void tui_copy_ask(struct tui *t, struct target *tg)
{
	char label[400];
	snprintf(label, sizeof label, "copy %s@%s from %s to (Tab: remotes): ", tg->ref.dataset,
		 tg->ref.version, tg->ref.remote);
	tui_ask(t, label, "", copy_submit, tg, tui_target_free);
	t->prompt.hist = TUI_HIST_COPY;
	t->prompt.complete = tui_complete_remotes;
}
