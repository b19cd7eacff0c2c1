/* complete.c — what Tab offers in the browser's prompts: ':' commands, paths, remotes and the catalog's dataset names. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tui.h"

/* ':' commands, in the order the help lists them. */
static const char *const commands[] = {
	"sync", "search", "filter", "run", "jobs", "history", "error", "help", "quit", "repair",
	"protect", "diff", "copy", "verify", "rm", "gc", "describe", "tags", "export", NULL,
};

const char *const *tui_command_names(void)
{
	return commands;
}

/* The entries of the directory part of `word` ("dir/pre" lists dir), as
 * "dir/entry", directories with a '/' after them. */
static void complete_path(const char *word, struct tui_words *out)
{
	const char *slash = strrchr(word, '/');
	char dir[1024];
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - word + 1) : 0, word);
	DIR *d = opendir(dir[0] ? dir : ".");
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* Hidden files only when asked for with a dot. */
		if (e->d_name[0] == '.' && (slash ? slash[1] : word[0]) != '.')
			continue;
		char path[2048];
		struct stat st;
		snprintf(path, sizeof path, "%s%s", dir, e->d_name);
		int isdir = !stat(path, &st) && S_ISDIR(st.st_mode);
		if (isdir)
			strcat(path, "/");
		tui_words_add(out, path);
	}
	closedir(d);
}

void tui_complete_path(struct tui *t, const char *before, struct tui_words *out, void *arg)
{
	const char *sp = strrchr(before, ' ');
	complete_path(sp ? sp + 1 : before, out);
}

void tui_complete_remotes(struct tui *t, const char *before, struct tui_words *out, void *arg)
{
	tui_words_add(out, APP_LOCAL);
	mt_remote *r = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (!mt_remotes_list(&r, &n, &err))
		for (size_t i = 0; i < n; i++)
			tui_words_add(out, r[i].name);
	mt_remotes_free(r, n);
}

/* ---- dataset names: remotes > buckets > datasets, a level at a time (a
 * listing's callback may not call the catalog) ---- */

struct ids {
	int64_t v[256];
	size_t n;
};

static int id_row(void *ud, const mt_catalog_row *row)
{
	struct ids *ids = ud;
	if (ids->n < sizeof ids->v / sizeof ids->v[0])
		ids->v[ids->n++] = row->id;
	return 0;
}

static int name_row(void *ud, const mt_catalog_row *row)
{
	tui_words_add(ud, row->cols[0]);
	return 0;
}

void tui_complete_datasets(struct tui *t, const char *before, struct tui_words *out, void *arg)
{
	struct ids remotes = { .n = 0 }, buckets = { .n = 0 };
	mt_error err = { 0 };
	mt_catalog_list(t->cat, MT_CAT_REMOTES, 0, NULL, id_row, &remotes, &err);
	for (size_t i = 0; i < remotes.n; i++)
		mt_catalog_list(t->cat, MT_CAT_BUCKETS, remotes.v[i], NULL, id_row, &buckets, &err);
	for (size_t i = 0; i < buckets.n; i++)
		mt_catalog_list(t->cat, MT_CAT_DATASETS, buckets.v[i], NULL, name_row, out, &err);
}

void tui_complete_command(struct tui *t, const char *before, struct tui_words *out, void *arg)
{
	while (*before == ' ')
		before++;
	size_t n = strcspn(before, " ");
	if (!before[n]) {
		for (size_t i = 0; commands[i]; i++)
			if (strcmp(commands[i], "run") || t->recipe)
				tui_words_add(out, commands[i]);
		return;
	}
	const char *word = strrchr(before, ' ') + 1;
	if (!strncmp(before, "run ", 4)) {
		tui_words_add(out, "--allow");
		complete_path(word, out);
	} else if (strncmp(before, "sync ", 5) && strncmp(before, "jobs ", 5)) {
		/* search, filter and the commands on DATASET[@VERSION] */
		tui_complete_datasets(t, before, out, arg);
	}
}
