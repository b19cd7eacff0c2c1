/* command.c — ':' commands that do what the CLI's do, on DATASET[@VERSION] of the default store: diff, copy, verify, rm, gc [--grace SECONDS], describe, tags and export, each through the same prompt or job as its key. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* The catalog row of a version named (NULL: the latest) while listing. */
struct find_version {
	const char *name;
	int64_t id;
};

static int find_version_fn(void *ud, const mt_catalog_row *row)
{
	struct find_version *f = ud;
	/* Versions list oldest first: without a name the last one wins. */
	if (!f->name || !strcmp(row->cols[0], f->name))
		f->id = row->id;
	return f->name && f->id ? 1 : 0;
}

/* The next word of *p (advancing it past the word and the blanks after). */
static void next_word(const char **p, char *buf, size_t cap)
{
	size_t n = strcspn(*p, " ");
	snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), *p);
	*p += n;
	while (**p == ' ')
		(*p)++;
}

/* DATASET[@VERSION] (latest when no version) in the default store's catalog;
 * 0 after saying why on the status line. */
static int64_t spec_version(struct tui *t, const char *spec)
{
	char ds[256], ver[256] = "";
	const char *at = strchr(spec, '@');
	snprintf(ds, sizeof ds, "%.*s", (int)(at ? (size_t)(at - spec) : strlen(spec)), spec);
	if (at)
		snprintf(ver, sizeof ver, "%s", at + 1);
	int64_t d = tui_find_dataset(t, ds);
	struct find_version f = { ver[0] && strcmp(ver, "latest") ? ver : NULL, 0 };
	mt_error err = { 0 };
	if (d)
		mt_catalog_list(t->cat, MT_CAT_VERSIONS, d, NULL, find_version_fn, &f, &err);
	if (!f.id)
		tui_status(t, 1, "%s: no %s%s%s in the catalog of %s (r to sync)", spec, ds,
			   ver[0] ? "@" : "", ver, app_store_name(t->app));
	return f.id;
}

/* :gc [DATASET] [--grace SECONDS]: the dataset's gc, or the bucket's. */
static void gc_command(struct tui *t, const char *rest)
{
	char w[256], ds[256] = "";
	long long grace = -1;
	while (*rest) {
		next_word(&rest, w, sizeof w);
		if (!strcmp(w, "--grace")) {
			char num[32], *end;
			next_word(&rest, num, sizeof num);
			grace = strtoll(num, &end, 10);
			if (!num[0] || *end || grace < 0) {
				tui_status(t, 1, "gc: --grace takes seconds, not '%s'", num);
				return;
			}
		} else {
			snprintf(ds, sizeof ds, "%s", w);
		}
	}
	int64_t id = ds[0] ? tui_find_dataset(t, ds) : 0;
	if (ds[0] && !id) {
		tui_status(t, 1, "gc: no dataset %s in the catalog of %s (r to sync)", ds,
			   app_store_name(t->app));
		return;
	}
	if (id) {
		tui_gc_start(t, MT_CAT_DATASETS, id, grace);
		return;
	}
	/* No dataset named: the dataset or bucket under the cursor. */
	int level;
	if (tui_list_cursor(tui_top(t), &level, &id) &&
	    (level == MT_CAT_DATASETS || level == MT_CAT_BUCKETS)) {
		tui_gc_start(t, level, id, grace);
		return;
	}
	tui_status(t, 1, "usage: :gc DATASET [--grace SECONDS] (or on a dataset or bucket row)");
}

/* :export DATASET[@VERSION] ATTR: the export prompts for that attribute. */
static void export_command(struct tui *t, int64_t id, const char *attr)
{
	mt_catalog_ref ref;
	mt_error err = { 0 };
	if (!attr[0]) {
		tui_status(t, 1, "usage: :export DATASET[@VERSION] ATTRIBUTE");
		return;
	}
	if (mt_catalog_locate(t->cat, MT_CAT_VERSIONS, id, &ref, &err)) {
		tui_status(t, 1, "export: %s", err.message);
		return;
	}
	tui_export_action(t, &ref, attr, 0);
	mt_catalog_ref_free(&ref);
}

static const struct {
	const char *word;
	enum tui_action action; /* ACT_NONE: handled apart */
	int writes;
} cli_commands[] = {
	{ "diff", ACT_DIFF, 0 },	 { "verify", ACT_VERIFY, 0 }, { "copy", ACT_COPY, 1 },
	{ "rm", ACT_DELETE, 1 },	 { "describe", ACT_DESCRIBE, 1 }, { "tags", ACT_TAGS, 1 },
	{ "export", ACT_EXPORT, 0 }, { "gc", ACT_GC, 0 },
};

int tui_cli_command(struct tui *t, const char *word, const char *rest)
{
	size_t i = 0, n = sizeof cli_commands / sizeof cli_commands[0];
	while (i < n && strcmp(cli_commands[i].word, word))
		i++;
	if (i == n)
		return 0;
	if (t->read_only && cli_commands[i].writes) {
		tui_status(t, 1, "read-only: %s writes to a store (started with --read-only)", word);
		return 1;
	}
	if (cli_commands[i].action == ACT_GC) {
		gc_command(t, rest);
		return 1;
	}
	char spec[512], arg[256];
	next_word(&rest, spec, sizeof spec);
	next_word(&rest, arg, sizeof arg);
	/* :verify alone: the dataset or bucket under the cursor, as v there. */
	int level;
	int64_t row;
	if (!spec[0] && cli_commands[i].action == ACT_VERIFY &&
	    tui_list_cursor(tui_top(t), &level, &row) &&
	    (level == MT_CAT_DATASETS || level == MT_CAT_BUCKETS)) {
		tui_verify_all(t, level, row);
		return 1;
	}
	if (!spec[0]) {
		tui_status(t, 1, "usage: :%s DATASET[@VERSION]%s", word,
			   !strcmp(word, "export") ? " ATTRIBUTE" : !strcmp(word, "diff") ? " [VERSION]"
			   : !strcmp(word, "verify") ? " (or on a dataset or bucket row)" : "");
		return 1;
	}
	int64_t id = spec_version(t, spec);
	if (!id)
		return 1;
	if (cli_commands[i].action == ACT_EXPORT)
		export_command(t, id, arg);
	else if (cli_commands[i].action == ACT_DIFF)
		tui_diff_start(t, id, arg[0] ? arg : NULL);
	else
		tui_version_action(t, cli_commands[i].action, id);
	return 1;
}
