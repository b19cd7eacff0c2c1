/* tui.c — the browser's loop: the view stack, title, status and footer lines, the prompt and ':' commands, one paint per iteration. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "config.h"

#include <ncursesw/curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tui.h"

int tui_init(struct tui *t, const struct app_ctx *app, const char *cat_path, int read_only,
	     mt_error *err)
{
	memset(t, 0, sizeof *t);
	t->app = app;
	t->read_only = read_only;
	int rc = mt_catalog_open(cat_path, &t->cat, err);
	if (rc)
		return rc;
	tui_push(t, tui_list_view(t, MT_CAT_REMOTES, 0, "remotes"));
	tui_status(t, 0, "? for help, q to quit%s", read_only ? " (read-only)" : "");
	return 0;
}

void tui_free(struct tui *t)
{
	tui_jobs_stop(t);
	while (t->depth)
		tui_pop(t);
	free(t->stack);
	if (t->prompt.free_arg)
		t->prompt.free_arg(t->prompt.arg);
	tui_history_free(t);
	mt_catalog_close(t->cat);
}

void tui_push(struct tui *t, struct view *v)
{
	if (t->depth == t->cap)
		t->stack = app_xreallocarray(t->stack, t->cap = t->cap ? 2 * t->cap : 8,
					     sizeof *t->stack);
	v->serial = ++t->next_serial;
	t->stack[t->depth++] = v;
	t->dirty = 1;
}

void tui_pop(struct tui *t)
{
	if (!t->depth)
		return;
	struct view *v = t->stack[--t->depth];
	if (t->status_view && t->status_view == v->serial) {
		t->status[0] = '\0';
		t->status_error = 0;
		t->status_view = 0;
	}
	v->ops->free(v);
	t->dirty = 1;
}

struct view *tui_top(struct tui *t)
{
	return t->depth ? t->stack[t->depth - 1] : NULL;
}

struct view *tui_find_view(struct tui *t, unsigned serial)
{
	for (size_t i = 0; serial && i < t->depth; i++)
		if (t->stack[i]->serial == serial)
			return t->stack[i];
	return NULL;
}

void tui_reload_all(struct tui *t)
{
	for (size_t i = 0; i < t->depth; i++)
		if (t->stack[i]->ops->reload)
			t->stack[i]->ops->reload(t, t->stack[i]);
	t->dirty = 1;
}

void tui_status(struct tui *t, int error, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->status, sizeof t->status, fmt, ap);
	va_end(ap);
	if (error) {
		va_start(ap, fmt);
		vsnprintf(t->last_error, sizeof t->last_error, fmt, ap);
		va_end(ap);
		t->last_error_job = 0;
	}
	/* One line: a multi-line message would garble the screen. */
	for (char *p = t->status; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	t->status_error = error;
	t->status_view = tui_top(t) ? tui_top(t)->serial : 0;
	t->dirty = 1;
}

int tui_text_cut(int y, int x, int w, int role, const char *s)
{
	if (w <= 0)
		return 0;
	if (disp_columns(s) <= w)
		return disp_text(y, x, w, role, s);
	int used = disp_text(y, x, w - 1, role, s);
	return used + disp_text(y, x + used, 1, role, "…");
}

/* ---- ':' commands ---- */

static void find_submit(struct tui *t, const char *text, void *arg)
{
	if (*text)
		tui_push(t, tui_list_view(t, MT_CAT_SEARCH, 0, text));
}

static void find_ask(struct tui *t)
{
	tui_ask(t, "search the catalog: ", "", find_submit, NULL, NULL);
	t->prompt.hist = TUI_HIST_SEARCH;
	t->prompt.complete = tui_complete_datasets;
}

static void command_submit(struct tui *t, const char *text, void *arg)
{
	tui_command(t, text);
}

void tui_command(struct tui *t, const char *line)
{
	while (*line == ' ')
		line++;
	char word[32];
	size_t n = strcspn(line, " ");
	snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : sizeof word - 1), line);
	const char *rest = line + n;
	while (*rest == ' ')
		rest++;
	struct view *top = tui_top(t);
	if (!*word) {
		return;
	} else if (!strcmp(word, "q") || !strcmp(word, "quit")) {
		tui_quit(t);
	} else if (!strcmp(word, "sync")) {
		tui_sync_all(t);
	} else if (!strcmp(word, "jobs")) {
		tui_jobs_open(t);
	} else if (!strcmp(word, "history")) {
		tui_push(t, tui_list_view(t, MT_CAT_JOBS, 0, "job history"));
	} else if (!strcmp(word, "error")) {
		tui_show_error(t);
	} else if (!strcmp(word, "help")) {
		tui_push(t, tui_help_view(t));
	} else if (!strcmp(word, "search") && *rest) {
		tui_push(t, tui_list_view(t, MT_CAT_SEARCH, 0, rest));
	} else if (!strcmp(word, "search")) {
		find_ask(t);
	} else if (!strcmp(word, "filter") && top && top->ops->filter) {
		top->ops->filter(t, top, rest);
	} else if (tui_cli_command(t, word, rest)) {
		/* diff, copy, verify, rm, gc, describe, tags, export */
	} else if (!strcmp(word, "repair") || !strcmp(word, "protect")) {
		tui_heal_command(t, word, rest);
	} else if (!strcmp(word, "run") && t->recipe) {
		if (t->read_only)
			tui_status(t, 1, "read-only: recipes write new versions");
		else
			t->recipe(t, rest);
	} else {
		tui_status(t, 1, "unknown command '%s' (try: sync, search TEXT, filter TEXT, %sjobs, "
				 "diff, copy, verify, rm, describe, tags DATASET[@VERSION], export "
				 "DATASET[@VERSION] ATTR, gc DATASET [--grace S], "
				 "repair DATASET[@VERSION], protect DATASET[@VERSION] K+M, "
				 "history, error, help, quit)", line,
			   t->recipe ? "run [--allow DIR] [--allow-store URL] SCRIPT.lua [KEY=VALUE ...], " : "");
	}
}

/* ---- keys ---- */

void tui_show_error(struct tui *t)
{
	if (t->last_error_job && t->last_error_job <= t->njobs) {
		tui_push(t, tui_job_log_view(t, t->last_error_job - 1));
		return;
	}
	if (!t->last_error[0]) {
		tui_status(t, 0, "no error so far");
		return;
	}
	size_t n = 0;
	for (const char *p = t->last_error; *p; p++)
		n += *p == '\n';
	char **lines = app_xcalloc(n + 2, sizeof *lines);
	n = 0;
	for (const char *p = t->last_error; *p;) {
		size_t k = strcspn(p, "\n");
		lines[n++] = app_xasprintf("%.*s", (int)k, p);
		p += k + (p[k] == '\n');
	}
	tui_push(t, tui_text_view("last error", lines, n));
}

void tui_quit(struct tui *t)
{
	const struct tui_job *newest = NULL;
	int running = 0;
	for (size_t i = 0; i < t->njobs; i++)
		if (!t->jobs[i]->quiet && atomic_load(&t->jobs[i]->state) == JOB_RUNNING) {
			running++;
			newest = t->jobs[i];
		}
	if (!running) {
		t->quit = 1;
		return;
	}
	/* Quitting cancels them: a copy half done is work lost, so ask. */
	t->confirm_quit = 1;
	snprintf(t->question, sizeof t->question,
		 "%d job%s running (%s%s): y or q quits and cancels %s, any other key stays",
		 running, running == 1 ? "" : "s", newest->title, running > 1 ? ", ..." : "",
		 running == 1 ? "it" : "them");
	t->dirty = 1;
}

static int view_scope(const struct view *v)
{
	return !v ? K_LIST : v->scope ? v->scope : v->ops->scope;
}

static void mouse_key(struct tui *t, struct view *v)
{
	int my, mx, what;
	if (!v || disp_mouse(&my, &mx, &what))
		return;
	if (what == MOUSE_WHEEL_UP || what == MOUSE_WHEEL_DOWN) {
		for (int i = 0; i < 3; i++)
			v->ops->key(t, v, what == MOUSE_WHEEL_UP ? ACT_UP : ACT_DOWN, 0);
	} else if (v->ops->click) {
		v->ops->click(t, v, my);
		if (what == MOUSE_DOUBLE)
			v->ops->key(t, v, ACT_OPEN, 0);
	}
	t->dirty = 1;
}

static void global_action(struct tui *t, enum tui_action a);

/* A key that does nothing in this view says so: typed blind, the keys after
 * it would otherwise act unseen. */
static void key_unbound(struct tui *t, int k)
{
	const struct tui_key *e = tui_key_entry(k);
	if (e)
		tui_status(t, 0, "%s (%s) does nothing here (? for keys)", e->label,
			   e->name ? e->name : e->help);
	else if (k > 0x20 && k < 0x7f)
		tui_status(t, 0, "'%c' does nothing here (? for keys)", k);
	else
		tui_status(t, 0, "that key does nothing here (? for keys)");
}

void tui_key(struct tui *t, int k)
{
	if (k == (DISP_FN | KEY_RESIZE)) {
		disp_resize(0, 0);
		t->dirty = 1;
		return;
	}
	if (t->prompt.active) {
		tui_prompt_key(t, k);
		return;
	}
	struct view *v = tui_top(t);
	if (k == (DISP_FN | KEY_MOUSE)) {
		mouse_key(t, v);
		return;
	}
	if (t->confirm_quit) {
		/* The question on the status line takes this key, whatever it is. */
		t->confirm_quit = 0;
		if (k == 'y' || k == 'q' || k == DISP_CTRL('c'))
			t->quit = 1;
		else
			tui_status(t, 0, "not quitting; the jobs go on (J lists them)");
		return;
	}
	enum tui_action a = tui_key_action(t, k, view_scope(v));
	const struct tui_key *refused = a == ACT_NONE ? tui_key_refused(t, k, view_scope(v)) : NULL;
	if (refused) {
		tui_status(t, 1, "read-only: %s (%s) would change a store (started with --read-only)",
			   refused->label, refused->name);
		return;
	}
	if (a == ACT_NONE) {
		key_unbound(t, k);
		return;
	}
	int r = v ? v->ops->key(t, v, a, k) : V_IGNORED;
	if (r == V_CLOSE) {
		if (t->depth > 1)
			tui_pop(t);
		return;
	}
	if (r == V_HANDLED) {
		t->dirty = 1;
		return;
	}
	global_action(t, a);
}

/* What a key does where the view on top did not take it. */
static void global_action(struct tui *t, enum tui_action a)
{
	switch (a) {
	case ACT_QUIT:
		tui_quit(t);
		break;
	case ACT_BACK:
	case ACT_ESC:
	case ACT_LEFT:
		if (t->depth > 1)
			tui_pop(t);
		break;
	case ACT_HELP:
		tui_push(t, tui_help_view(t));
		break;
	case ACT_JOBS:
		tui_jobs_open(t);
		break;
	case ACT_COMMAND:
		tui_ask(t, ":", "", command_submit, NULL, NULL);
		t->prompt.hist = TUI_HIST_COMMAND;
		t->prompt.complete = tui_complete_command;
		break;
	case ACT_SYNC:
		tui_sync_all(t);
		break;
	case ACT_REDRAW:
		t->full_redraw = 1;
		t->dirty = 1;
		break;
	case ACT_CANCEL:
		/* Quiet jobs (the live refresh, a viewer's reads) are the browser's own. */
		for (size_t i = t->njobs; i-- > 0;)
			if (!t->jobs[i]->quiet && atomic_load(&t->jobs[i]->state) == JOB_RUNNING) {
				tui_job_cancel(t->jobs[i]);
				tui_status(t, 0, "canceling %s", t->jobs[i]->title);
				return;
			}
		tui_status(t, 0, "no job is running");
		break;
	case ACT_ERROR:
		tui_show_error(t);
		break;
	case ACT_FIND:
		find_ask(t);
		break;
	case ACT_NONE:
		break;
	default:
		tui_status(t, 0, "not here (? for help)");
		break;
	}
}

/* ---- drawing ---- */

static void draw_title(struct tui *t)
{
	int w = disp_width();
	disp_fill(0, 0, w, R_TITLE);
	char crumb[1024] = "matorage";
	size_t len = strlen(crumb);
	for (size_t i = 0; i < t->depth && len < sizeof crumb; i++)
		len += (size_t)snprintf(crumb + len, sizeof crumb - len, " › %s", t->stack[i]->title);
	int running = 0;
	for (size_t i = 0; i < t->njobs; i++)
		running += !t->jobs[i]->quiet && atomic_load(&t->jobs[i]->state) == JOB_RUNNING;
	char right[64] = "";
	if (running)
		snprintf(right, sizeof right, "%s%d job%s running ",
			 t->read_only ? "read-only  " : "", running, running == 1 ? "" : "s");
	else if (t->read_only)
		snprintf(right, sizeof right, "read-only ");
	int rw = disp_columns(right);
	/* Two blanks keep the breadcrumb off the flags, whatever the width. */
	int room = w - rw - (rw ? 2 : 0);
	/* Where one is matters more than where one started: cut the front. */
	const char *shown = crumb;
	while (disp_columns(shown) > room && *shown) {
		shown++;
		while (((unsigned char)*shown & 0xc0) == 0x80)
			shown++;
	}
	if (shown != crumb) {
		/* The ellipsis takes the first column of what is shown. */
		int x = disp_text(0, 0, 1, R_TITLE, "…");
		const char *rest = shown;
		rest++;
		while (((unsigned char)*rest & 0xc0) == 0x80)
			rest++;
		disp_text(0, x, room - x, R_TITLE, rest);
	} else {
		disp_text(0, 0, room, R_TITLE, crumb);
	}
	disp_text(0, w - rw, rw, R_TITLE, right);
}

static void draw_status(struct tui *t, int y)
{
	int w = disp_width();
	if (t->prompt.active) {
		tui_prompt_draw(t, y);
		return;
	}
	if (t->confirm_quit) {
		/* Jobs ending meanwhile must not hide the question. */
		disp_fill(y, 0, w, R_ERROR);
		tui_text_cut(y, 0, w, R_ERROR, t->question);
		return;
	}
	/* What was said on another view is not news here. */
	const struct view *top = tui_top(t);
	if (t->status_view && (!top || top->serial != t->status_view)) {
		t->status[0] = '\0';
		t->status_error = 0;
		t->status_view = 0;
	}
	disp_fill(y, 0, w, t->status_error ? R_ERROR : R_STATUS);
	/* The newest running job's progress stays in view at the right. */
	char prog[256] = "";
	for (size_t i = t->njobs; i-- > 0 && !t->status_error;) {
		const struct tui_job *j = t->jobs[i];
		if (j->quiet || atomic_load(&j->state) != JOB_RUNNING)
			continue;
		char p[128];
		tui_job_progress_text(j, p, sizeof p);
		snprintf(prog, sizeof prog, " %s: %s ", j->kind, p);
		break;
	}
	int pw = disp_columns(prog) < w / 2 ? disp_columns(prog) : 0;
	/* An error cut at the edge says where the rest of it is. */
	const char *more = " E: all of it";
	int mw = t->status_error && disp_columns(t->status) > w - pw ? disp_columns(more) : 0;
	tui_text_cut(y, 0, w - pw - mw, t->status_error ? R_ERROR : R_STATUS, t->status);
	if (mw)
		disp_text(y, w - pw - mw, mw, R_KEY, more);
	if (pw)
		disp_text(y, w - pw, pw, R_KEY, prog);
}

void tui_draw(struct tui *t)
{
	disp_clear();
	int h = disp_height();
	struct view *v = tui_top(t);
	draw_title(t);
	if (v && h > 3)
		v->ops->draw(t, v, 1, h - 2);
	draw_status(t, h - 2);
	if (t->prompt.active)
		tui_prompt_footer(t, h - 1);
	else
		tui_footer(t, h - 1, view_scope(v));
}

/* Returns 0 after q, 1 when the terminal closed under it. */
static int tui_loop(struct tui *t)
{
	t->dirty = 1;
	while (!t->quit) {
		if (tui_jobs_poll(t))
			t->dirty = 1;
		tui_watch_catalog(t);
		if (t->dirty) {
			tui_draw(t);
			disp_flush(t->full_redraw);
			t->dirty = t->full_redraw = 0;
		}
		/* A short wait keeps progress moving without a busy loop. */
		int k = disp_key(200);
		if (k == DISP_EOF)
			return 1;
		if (k >= 0)
			tui_key(t, k);
	}
	return 0;
}

/* The id of the row of `level` under parent whose first column is name. */
struct find_row {
	const char *name;
	int64_t id;
};

static int find_row_fn(void *ud, const mt_catalog_row *row)
{
	struct find_row *f = ud;
	if (f->name && strcmp(row->cols[0], f->name))
		return 0;
	f->id = row->id;
	return 1;
}

static int64_t find_row(struct tui *t, int level, int64_t parent, const char *name)
{
	struct find_row f = { name, 0 };
	mt_error err;
	mt_catalog_list(t->cat, level, parent, NULL, find_row_fn, &f, &err);
	return f.id;
}

int64_t tui_find_bucket(struct tui *t)
{
	int64_t r = find_row(t, MT_CAT_REMOTES, 0, app_store_name(t->app));
	return r ? find_row(t, MT_CAT_BUCKETS, r, NULL) : 0;
}

int64_t tui_find_dataset(struct tui *t, const char *dataset)
{
	int64_t b = tui_find_bucket(t);
	return b ? find_row(t, MT_CAT_DATASETS, b, dataset) : 0;
}

int tui_goto_dataset(struct tui *t, const char *dataset)
{
	const char *remote = app_store_name(t->app);
	int64_t r = find_row(t, MT_CAT_REMOTES, 0, remote);
	int64_t b = r ? find_row(t, MT_CAT_BUCKETS, r, NULL) : 0;
	int64_t d = b ? find_row(t, MT_CAT_DATASETS, b, dataset) : 0;
	if (!d) {
		tui_status(t, 1, "%s: no dataset %s in the catalog (r to sync)", remote, dataset);
		return MT_ENOTFOUND;
	}
	char url[256] = "";
	mt_catalog_ref ref;
	mt_error err;
	if (!mt_catalog_locate(t->cat, MT_CAT_BUCKETS, b, &ref, &err)) {
		snprintf(url, sizeof url, "%s", ref.url);
		mt_catalog_ref_free(&ref);
	}
	tui_push(t, tui_list_view(t, MT_CAT_BUCKETS, r, remote));
	tui_push(t, tui_list_view(t, MT_CAT_DATASETS, b, url));
	tui_push(t, tui_list_view(t, MT_CAT_VERSIONS, d, dataset));
	return 0;
}

int tui_main(const struct app_ctx *app, int read_only, const char *open, tui_recipe_fn recipe,
	     mt_error *err)
{
	/* Static: when a stuck job is left running at exit, what it uses stays
	 * reachable rather than leaked. */
	static struct tui t;
	int rc = tui_init(&t, app, NULL, read_only, err);
	if (rc)
		return rc;
	t.recipe = recipe;
	if (open && tui_goto_dataset(&t, open)) {
		tui_free(&t);
		return mt_error_set(err, MT_ENOTFOUND,
				    "%s: no such dataset in the catalog (run 'matorage sync')", open);
	}
	const char *nc = getenv("NO_COLOR");
	if (disp_open_tty(nc && *nc)) {
		tui_free(&t);
		return mt_error_set(err, MT_EIO, "cannot open the terminal");
	}
	tui_sync_all(&t);
	tui_watch_start(&t);
	if (tui_loop(&t))
		rc = mt_error_set(err, MT_EIO, "tui: the terminal closed (end of input); leaving");
	disp_close();
	/* A job stuck on an unanswering server must not hold the terminal: when
	 * one has not seen its cancel in time, the process exits around it (its
	 * catalog writes are transactions, so nothing is left half done). */
	if (tui_jobs_wait(&t, 3000))
		tui_free(&t);
	return rc;
}
