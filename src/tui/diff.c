/* diff.c — a version against another of its dataset (its parent unless told): the shards they share and those new or removed, read from both manifests by a job and shown as text. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"

/* What the job leaves for the view: the diff and the other version's name. */
struct diff_arg {
	struct target *tg; /* the version; tg->text: the other one */
	struct app_diff d;
	char other[256];   /* the version compared with, as found */
};

static void diff_arg_free(void *arg)
{
	struct diff_arg *da = arg;
	tui_target_free(da->tg);
	app_diff_free(&da->d);
	free(da);
}

static int diff_run(struct tui_job *j)
{
	struct diff_arg *da = j->arg;
	struct target *tg = da->tg;
	mt_error err = { 0 };
	mt_reader *a = NULL, *b = NULL;
	mt_store *s = tui_open_bucket(j, &tg->ref, &tg->stale, &err);
	int rc = s ? mt_reader_open(s, tg->ref.dataset, tg->ref.version, &a, &err) : err.code;
	if (!rc)
		rc = mt_reader_open(s, tg->ref.dataset, tg->text, &b, &err);
	if (!rc) {
		app_diff_readers(a, b, &da->d);
		snprintf(da->other, sizeof da->other, "%s", mt_reader_info(b)->version);
		snprintf(j->result, sizeof j->result, "%llu shards shared, %llu new, %llu removed",
			 (unsigned long long)da->d.shards[APP_DIFF_SHARED],
			 (unsigned long long)da->d.shards[APP_DIFF_ADDED],
			 (unsigned long long)da->d.shards[APP_DIFF_REMOVED]);
	}
	mt_reader_close(a);
	mt_reader_close(b);
	mt_store_close(s);
	return rc ? tui_job_fail(j, &err) : 0;
}

/* The lines of the diff: totals, then a line per shard. */
static char **diff_lines(const struct diff_arg *da, size_t *n)
{
	const struct app_diff *d = &da->d;
	char **lines = app_xcalloc(d->ns + 8, sizeof *lines);
	char line[160], human[32];
	size_t k = 0;
	lines[k++] = app_xasprintf("%s@%s against %s@%s", da->tg->ref.dataset, da->tg->ref.version,
				   da->tg->ref.dataset, da->other);
	for (int c = 0; c < APP_DIFF_N; c++)
		lines[k++] = app_xstrdup(app_diff_line(d, c, line, sizeof line));
	if (app_diff_verdict(d))
		lines[k++] = app_xstrdup(app_diff_verdict(d));
	lines[k++] = app_xstrdup("");
	lines[k++] = app_xasprintf("%-8s %-16s %12s %10s %10s", "CHANGE", "SHARD", "FIRST ROW",
				   "ROWS", "BYTES");
	for (size_t i = 0; i < d->ns; i++)
		lines[k++] = app_xasprintf("%-8s %-16.16s %12llu %10llu %10s",
					   app_diff_shard_change(&d->s[i]), d->s[i].sha256,
					   (unsigned long long)d->s[i].first_row,
					   (unsigned long long)d->s[i].rows,
					   app_human_bytes(d->s[i].bytes, human, sizeof human));
	*n = k;
	return lines;
}

static void diff_show(struct tui *t, struct tui_job *j)
{
	struct diff_arg *da = j->arg;
	if (atomic_load(&j->state) != JOB_OK)
		return;
	size_t n;
	char **lines = diff_lines(da, &n);
	char title[300];
	snprintf(title, sizeof title, "diff %s against %s", da->tg->ref.version, da->other);
	tui_job_show(t, j, tui_text_view(title, lines, n));
}

static void diff_submit(struct tui *t, const char *text, void *arg)
{
	struct target *tg = arg;
	while (*text == ' ')
		text++;
	/* DATASET@VERSION of this dataset reads as VERSION. */
	const char *at = strchr(text, '@');
	if (at && !strncmp(text, tg->ref.dataset, (size_t)(at - text)) &&
	    strlen(tg->ref.dataset) == (size_t)(at - text))
		text = at + 1;
	if (!*text || strchr(text, '@')) {
		tui_status(t, 1, "diff: name a version of %s", tg->ref.dataset);
		tui_target_free(tg);
		return;
	}
	tg->text = app_xstrdup(text);
	struct diff_arg *da = app_xcalloc(1, sizeof *da);
	da->tg = tg;
	char title[300];
	snprintf(title, sizeof title, "diff %s@%s against %s", tg->ref.dataset, tg->ref.version, text);
	tui_job_start(t, "diff", title, NULL, diff_run, diff_show, da, diff_arg_free);
}

static int parent_row(void *ud, const mt_catalog_row *row)
{
	if (strcmp(row->cols[0], "parent"))
		return 0;
	snprintf(ud, 256, "%s", row->cols[1] ? row->cols[1] : "");
	return 1;
}

void tui_diff_start(struct tui *t, int64_t version_id, const char *other)
{
	if (!other || !*other) {
		tui_diff_action(t, version_id);
		return;
	}
	struct target *tg = tui_target_new(t, MT_CAT_VERSIONS, version_id);
	if (tg)
		diff_submit(t, other, tg);
}

void tui_diff_action(struct tui *t, int64_t version_id)
{
	struct target *tg = tui_target_new(t, MT_CAT_VERSIONS, version_id);
	if (!tg)
		return;
	char parent[256] = "", label[400];
	mt_error err = { 0 };
	mt_catalog_list(t->cat, MT_CAT_VERSION, version_id, NULL, parent_row, parent, &err);
	snprintf(label, sizeof label, "diff %s@%s against version%s: ", tg->ref.dataset,
		 tg->ref.version, parent[0] ? " (its parent)" : "");
	tui_ask(t, label, parent, diff_submit, tg, tui_target_free);
}
