/* view-list.c — every list on screen: catalog levels (remotes to shards, details, search results), the jobs list and plain text, with cursor, search and filter. */
#define _GNU_SOURCE 1
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

enum { SRC_CATALOG, SRC_TEXT, SRC_JOBS, SRC_JOBLOG };

struct row {
	int64_t id;
	char **cols;
	int role;
	char *key;  /* the catalog's value of the sort column (NULL: not sorted) */
	size_t seq; /* its place in the catalog's order, to keep ties in it */
};

struct list {
	struct view base;
	int src;
	int level;
	int64_t parent;
	const struct tui_col *cols;
	size_t ncols;
	struct row *rows;
	size_t n, cap;
	size_t cur, top;
	int first_y; /* screen line of row `top`, for clicks */
	int *widths;
	unsigned char *shown; /* the columns on screen (list_layout) */
	size_t last;          /* the last of them: it takes the rest of the line */
	char filter[256];
	char search[256];
	char error[512];
	int wrap;      /* the last column wraps (text, logs, a version's or shard's fields) */
	int sort;      /* TUI_SORT_* */
	char name[256]; /* the title without the order */
	size_t job;    /* SRC_JOBLOG: the job's index in t->jobs */
	struct tui_remotes remotes; /* fragments: a store that rebuilt one is named by these */
};

static const struct tui_col job_cols[] = {
	{ "JOB", COL_COUNT }, { "KIND", COL_TEXT }, { "STATE", COL_TEXT },
	{ "PROGRESS", COL_TEXT }, { "WHAT", COL_TEXT },
};
static const struct tui_col text_cols[] = { { "", COL_TEXT } };

static void list_clear(struct list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		for (size_t c = 0; c < l->ncols; c++)
			free(l->rows[i].cols[c]);
		free(l->rows[i].cols);
		free(l->rows[i].key);
	}
	l->n = 0;
}

static void list_add(struct list *l, int64_t id, const char *const *cols, int role)
{
	if (l->n == l->cap)
		l->rows = app_xreallocarray(l->rows, l->cap = l->cap ? 2 * l->cap : 64,
					    sizeof *l->rows);
	struct row *r = &l->rows[l->n++];
	r->id = id;
	r->role = role;
	r->key = NULL;
	r->seq = l->n - 1;
	r->cols = app_xcalloc(l->ncols, sizeof *r->cols);
	for (size_t c = 0; c < l->ncols; c++) {
		if (l->cols[c].kind == COL_BYTES && cols[c][0]) {
			char buf[32];
			r->cols[c] = app_xstrdup(app_human_bytes(strtoull(cols[c], NULL, 10), buf,
								 sizeof buf));
		} else {
			/* Tracebacks indent with tabs, which the screen cannot show. */
			r->cols[c] = strchr(cols[c], '\t') ? tui_expand_tabs(cols[c])
							   : app_xstrdup(cols[c]);
		}
	}
}

static int list_catalog_row(void *ud, const mt_catalog_row *row)
{
	struct list *l = ud;
	/* The headers are the browser's (columns.c): rows that do not match
	 * them are not shown half. */
	if (row->ncols != tui_catalog_ncols(l->level)) {
		snprintf(l->error, sizeof l->error,
			 "catalog list %d: rows of %zu columns, %zu expected", l->level,
			 row->ncols, tui_catalog_ncols(l->level));
		return MT_EFORMAT;
	}
	int role = tui_row_role(l->level, row->cols);
	const char *text[16];
	char bufs[16][96];
	for (size_t c = 0; c < l->ncols && c < 16; c++)
		text[c] = tui_cell(l->level, row->cols, c, &l->remotes, bufs[c], sizeof bufs[c]);
	list_add(l, row->id, text, role);
	int sc = tui_sort_column(l->level, l->sort);
	if (sc >= 0 && (size_t)sc < row->ncols)
		l->rows[l->n - 1].key = app_xstrdup(row->cols[sc] ? row->cols[sc] : "");
	return 0;
}

static int row_cmp(const void *x, const void *y, void *ud)
{
	const struct row *a = x, *b = y;
	int c = tui_sort_cmp(*(const int *)ud, a->key, b->key);
	return c ? c : a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The rows in the list's order, and the title saying which it is. */
static void list_sort(struct list *l)
{
	if (l->sort)
		qsort_r(l->rows, l->n, sizeof *l->rows, row_cmp, &l->sort);
	if (!l->name[0])
		snprintf(l->name, sizeof l->name, "%s", l->base.title);
	if (l->sort)
		snprintf(l->base.title, sizeof l->base.title, "%.200s (by %s)", l->name,
			 tui_sort_name(l->sort));
	else
		snprintf(l->base.title, sizeof l->base.title, "%s", l->name);
}

static void list_widths(struct list *l)
{
	free(l->widths);
	free(l->shown);
	l->widths = app_xcalloc(l->ncols, sizeof *l->widths);
	l->shown = app_xcalloc(l->ncols, 1);
	memset(l->shown, 1, l->ncols);
	l->last = l->ncols ? l->ncols - 1 : 0;
	for (size_t c = 0; c < l->ncols; c++) {
		int w = disp_columns(l->cols[c].name);
		for (size_t i = 0; i < l->n && i < 5000; i++) {
			int k = disp_columns(l->rows[i].cols[c]);
			w = k > w ? k : w;
		}
		/* Long text (descriptions, hashes) must not push the rest away. */
		l->widths[c] = w > 40 ? 40 : w;
	}
}

static void jobs_fill(struct tui *t, struct list *l)
{
	static const char *const states[] = { "running", "done", "failed", "canceled" };
	for (size_t i = t->njobs; i-- > 0;) {
		struct tui_job *j = t->jobs[i];
		if (j->quiet)
			continue;
		char id[16], prog[128];
		snprintf(id, sizeof id, "%u", j->id);
		tui_job_progress_text(j, prog, sizeof prog);
		int st = atomic_load(&j->state);
		const char *cols[] = { id, j->kind, j->view ? "done, Enter: result" : states[st],
				       prog, j->title };
		list_add(l, (int64_t)i, cols, st == JOB_FAILED ? R_OFFLINE : R_NORMAL);
	}
}

/* A job's log as it is now: it grows while the job runs. */
static void joblog_fill(struct tui *t, struct list *l)
{
	struct tui_job *j = t->jobs[l->job];
	static const char *const states[] = { "running", "done", "failed", "canceled" };
	int st = atomic_load(&j->state);
	char head[700];
	snprintf(head, sizeof head, "%s%s%s", states[st], st == JOB_RUNNING ? "" : ": ",
		 st == JOB_RUNNING ? "" : j->result);
	const char *title[] = { j->title }, *state[] = { head };
	list_add(l, -1, title, R_HEADER);
	list_add(l, -1, state, st == JOB_FAILED ? R_ERROR : R_NORMAL);
	pthread_mutex_lock(&j->lock);
	for (size_t i = 0; i < j->nlog; i++) {
		const char *line[] = { j->log[i] };
		list_add(l, (int64_t)i, line, R_NORMAL);
	}
	pthread_mutex_unlock(&j->lock);
}

static int count_row(void *ud, const mt_catalog_row *row)
{
	(*(size_t *)ud)++;
	return 0;
}

/* A bucket's datasets, or a search's versions, say in the title when there
 * are models, or checkpoints that match, too (M lists them). */
static void list_models_hint(struct tui *t, struct list *l)
{
	size_t n = 0;
	mt_error err = { 0 };
	int search = l->level == MT_CAT_SEARCH;
	if (mt_catalog_list(t->cat, search ? MT_CAT_SEARCH_MODELS : MT_CAT_MODELS, l->parent,
			    search ? l->filter : NULL, count_row, &n, &err) || !n)
		return;
	size_t len = strlen(l->base.title);
	snprintf(l->base.title + len, sizeof l->base.title - len, " (+%zu %s%s: M)", n,
		 search ? "checkpoint" : "model", n == 1 ? "" : "s");
}

static void list_load(struct tui *t, struct list *l)
{
	size_t keep = l->cur;
	int64_t keep_id = l->cur < l->n ? l->rows[l->cur].id : -1;
	list_clear(l);
	l->error[0] = '\0';
	if (l->src == SRC_CATALOG) {
		mt_error err = { 0 };
		mt_remotes_free(l->remotes.v, l->remotes.n);
		l->remotes = (struct tui_remotes){ NULL, 0 };
		/* The remotes as configured now (none readable: stores go unnamed). */
		mt_error e2 = { 0 };
		if (l->level == MT_CAT_FRAGMENTS &&
		    mt_remotes_list(&l->remotes.v, &l->remotes.n, &e2))
			l->remotes = (struct tui_remotes){ NULL, 0 };
		if (mt_catalog_list(t->cat, l->level, l->parent, l->filter[0] ? l->filter : NULL,
				    list_catalog_row, l, &err) && !l->error[0])
			snprintf(l->error, sizeof l->error, "%s", err.message);
		list_sort(l);
		if (l->level == MT_CAT_DATASETS || l->level == MT_CAT_SEARCH)
			list_models_hint(t, l);
	} else if (l->src == SRC_JOBS) {
		jobs_fill(t, l);
	} else if (l->src == SRC_JOBLOG) {
		joblog_fill(t, l);
	}
	/* The cursor stays on its row when the rows around it change. */
	l->cur = keep < l->n ? keep : l->n ? l->n - 1 : 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->rows[i].id == keep_id && l->src == SRC_CATALOG) {
			l->cur = i;
			break;
		}
	list_widths(l);
}

/* ---- drawing ---- */

static int list_has_header(const struct list *l)
{
	return l->src != SRC_TEXT && l->src != SRC_JOBLOG;
}

/* Which columns fit in w screen columns whole.  A value cut short misleads
 * ("810.1" of "810.1 KiB", "1" of 10000), so a column that does not fit is
 * left out, in the order of importance the headers have (the first, the
 * row's name, always shows); only free text at the end of the line may show
 * cut, with a mark. */
static void list_layout(struct list *l, int w)
{
	if (l->wrap || l->ncols < 2)
		return;
	memset(l->shown, 0, l->ncols);
	int used = l->widths[0];
	l->shown[0] = 1;
	l->last = 0;
	for (size_t c = 1; c < l->ncols; c++) {
		int need = l->widths[c] + 2;
		int head = disp_columns(l->cols[c].name);
		int text_end = c + 1 == l->ncols && l->cols[c].kind == COL_TEXT;
		if (used + need <= w || (text_end && w - used - 2 >= (head > 8 ? head : 8))) {
			l->shown[c] = 1;
			l->last = c;
			used += need;
		}
	}
}

/* Where the last column starts, and its width (the rest of the line). */
static int list_last_x(const struct list *l)
{
	int x = 0;
	for (size_t c = 0; c + 1 < l->ncols; c++)
		x += l->widths[c] + 2;
	return x;
}

/* A wrapped last column narrower than this goes under its row, full width. */
#define WRAP_MIN 30
#define WRAP_INDENT 4

/* Whether row i's last column is laid out under the row: wrapping, too
 * narrow to read beside the others, and longer than its cell. */
static int wraps_below(const struct list *l, size_t i)
{
	int w = disp_width() - list_last_x(l);
	return l->wrap && l->ncols > 1 && w < WRAP_MIN &&
	       disp_columns(l->rows[i].cols[l->ncols - 1]) > w;
}

/* Screen lines row i takes: one, or as many as its wrapped last column. */
static int row_height(const struct list *l, size_t i)
{
	if (!l->wrap)
		return 1;
	const char *last = l->rows[i].cols[l->ncols - 1];
	if (wraps_below(l, i))
		return 1 + tui_wrap_lines(last, disp_width() - WRAP_INDENT);
	int w = disp_width() - list_last_x(l);
	return w > 8 ? tui_wrap_lines(last, w) : 1;
}

/* Scroll so the cursor's row shows whole in `rows` lines. */
static void list_scroll(struct list *l, int rows)
{
	if (l->cur < l->top)
		l->top = l->cur;
	for (;;) {
		int used = 0;
		for (size_t i = l->top; i <= l->cur; i++)
			used += row_height(l, i);
		if (used <= rows || l->top == l->cur)
			break;
		l->top++;
	}
}

static void draw_header(const struct list *l, int y)
{
	int w = disp_width(), x = 0;
	disp_fill(y, 0, w, R_HEADER);
	for (size_t c = 0; c < l->ncols && x < w; c++) {
		if (!l->shown[c])
			continue;
		int cw = c == l->last ? w - x : l->widths[c];
		tui_text_cut(y, x, cw, R_HEADER, l->cols[c].name);
		x += cw + 2;
	}
}

/* Row i from line y; returns the lines it took. */
static int draw_row(const struct list *l, size_t i, int y, int bottom)
{
	const struct row *r = &l->rows[i];
	int w = disp_width(), h = row_height(l, i);
	int role = i == l->cur ? R_SELECTED : r->role;
	for (int k = 0; k < h && y + k < bottom; k++)
		disp_fill(y + k, 0, w, role);
	int x = 0;
	for (size_t c = 0; c < l->ncols && x < w; c++) {
		if (!l->shown[c])
			continue;
		int cw = c == l->last ? w - x : l->widths[c];
		int num = (l->cols[c].kind == COL_COUNT || l->cols[c].kind == COL_BYTES) &&
			  c != l->last;
		int tw = disp_columns(r->cols[c]);
		int pad = num && tw < cw ? cw - tw : 0;
		if (c + 1 == l->ncols && l->wrap && wraps_below(l, i))
			break; /* the value goes under the row, whole */
		if (c + 1 == l->ncols && l->wrap)
			tui_text_wrap(y, x, cw, bottom - y, role, r->cols[c]);
		else
			tui_text_cut(y, x + pad, cw - pad, role, r->cols[c]);
		x += cw + 2;
	}
	if (wraps_below(l, i))
		tui_text_wrap(y + 1, WRAP_INDENT, w - WRAP_INDENT, bottom - y - 1, role,
			      r->cols[l->ncols - 1]);
	return h;
}

static const char *empty_text(const struct list *l)
{
	if (l->src == SRC_CATALOG && l->level == MT_CAT_SEARCH)
		return "(no version matches; M: the checkpoints, F to search again, r to sync)";
	if (l->src == SRC_CATALOG && l->level == MT_CAT_SEARCH_MODELS)
		return "(no checkpoint matches; M: the versions, F to search again, r to sync)";
	if (l->filter[0])
		return "(nothing matches the filter; f to change it)";
	if (l->src == SRC_CATALOG && l->level == MT_CAT_REMOTES)
		return "(empty catalog: r syncs it from the stores)";
	if (l->src == SRC_CATALOG && l->level == MT_CAT_DATASETS)
		return "(no datasets; M: the bucket's models)";
	if (l->src == SRC_CATALOG && l->level == MT_CAT_MODELS)
		return "(no models; M: the bucket's datasets)";
	return "(empty)";
}

static void list_draw(struct tui *t, struct view *v, int top, int bottom)
{
	struct list *l = (struct list *)v;
	if (l->src == SRC_JOBS || l->src == SRC_JOBLOG)
		list_load(t, l);
	int w = disp_width(), y = top;
	/* The place in a long list shows on the header line's right end. */
	char pos[48];
	snprintf(pos, sizeof pos, " %zu/%zu ", l->cur + 1, l->n);
	int npos = l->n > (size_t)(bottom - y - list_has_header(l)) ? disp_columns(pos) : 0;
	list_layout(l, w - npos);
	if (list_has_header(l))
		draw_header(l, y++);
	int rows = bottom - y;
	if (rows <= 0)
		return;
	if (l->error[0]) {
		tui_text_wrap(y, 0, w, rows, R_ERROR, l->error);
		return;
	}
	if (!l->n) {
		disp_text(y, 1, w - 1, R_DIM, empty_text(l));
		return;
	}
	list_scroll(l, rows);
	l->first_y = y;
	for (size_t i = l->top; i < l->n && y < bottom; i++)
		y += draw_row(l, i, y, bottom);
	/* Where the cursor is in a long list. */
	if (npos)
		disp_text(top, w - npos, npos, R_HEADER, pos);
}

/* ---- keys ---- */

static int row_matches(const struct list *l, size_t i, const char *s)
{
	for (size_t c = 0; c < l->ncols; c++)
		if (strcasestr(l->rows[i].cols[c], s))
			return 1;
	return 0;
}

static void list_find(struct tui *t, struct list *l, int dir, int from_next)
{
	if (!l->search[0] || !l->n) {
		tui_status(t, 0, "no search (/ to search)");
		return;
	}
	size_t i = l->cur;
	for (size_t k = 0; k < l->n; k++) {
		if (k || from_next)
			i = (i + l->n + (size_t)dir) % l->n;
		if (row_matches(l, i, l->search)) {
			l->cur = i;
			tui_status(t, 0, "/%s", l->search);
			return;
		}
	}
	tui_status(t, 1, "not found: %s", l->search);
}

static void search_submit(struct tui *t, const char *text, void *arg)
{
	struct list *l = (struct list *)tui_find_view(t, (unsigned)(uintptr_t)arg);
	if (!l)
		return;
	/* An empty search repeats the last one, as in vi. */
	if (*text)
		snprintf(l->search, sizeof l->search, "%s", text);
	list_find(t, l, 1, 0);
}

static void list_filter(struct tui *t, struct view *v, const char *text)
{
	struct list *l = (struct list *)v;
	snprintf(l->filter, sizeof l->filter, "%s", text);
	l->cur = l->top = 0;
	list_load(t, l);
	if (l->filter[0])
		tui_status(t, 0, "filter: %s (%zu rows)", l->filter, l->n);
	else
		tui_status(t, 0, "no filter (%zu rows)", l->n);
	/* It speaks of this view: leaving it clears it. */
	t->status_view = v->serial;
}

/* A filter being typed: it applies at each key; Esc puts the old one back. */
struct filter_edit {
	unsigned serial;
	char old[256];
};

static void filter_change(struct tui *t, const char *text, void *arg)
{
	struct filter_edit *f = arg;
	struct view *v = tui_find_view(t, f->serial);
	if (v)
		list_filter(t, v, text ? text : f->old);
}

static void filter_submit(struct tui *t, const char *text, void *arg)
{
	filter_change(t, text, arg);
	free(arg);
}

static void filter_ask(struct tui *t, struct list *l)
{
	struct filter_edit *f = app_xcalloc(1, sizeof *f);
	f->serial = l->base.serial;
	snprintf(f->old, sizeof f->old, "%s", l->filter);
	tui_ask(t, "filter: ", l->filter, filter_submit, f, free);
	t->prompt.hist = TUI_HIST_FILTER;
	t->prompt.change = filter_change;
	if (l->src == SRC_CATALOG)
		t->prompt.complete = tui_complete_datasets;
}

/* Statistics (or the frequency view) of the attribute under the cursor. */
static void list_stats(struct tui *t, struct list *l, enum tui_action a)
{
	mt_catalog_ref ref;
	mt_error err = { 0 };
	if (mt_catalog_locate(t->cat, MT_CAT_VERSIONS, l->parent, &ref, &err)) {
		tui_status(t, 1, "%s", err.message);
		return;
	}
	if (a == ACT_FREQ)
		tui_freq_start(t, &ref, l->rows[l->cur].cols[0]);
	else
		tui_stats_start(t, &ref, l->rows[l->cur].cols[0]);
	mt_catalog_ref_free(&ref);
}

/* Go to the version a "source" row of a version's details names, when the
 * catalog knows it (its row id). */
static void source_open(struct tui *t, const struct row *r)
{
	if (r->id > 0) {
		char title[300];
		snprintf(title, sizeof title, "%.*s", (int)strcspn(r->cols[1], " "), r->cols[1]);
		tui_push(t, tui_list_view(t, MT_CAT_VERSION, r->id, title));
	} else {
		tui_status(t, 1, "source %s is not in the catalog (sync its store, or add it as a "
			   "remote)", r->cols[1]);
	}
}

/* u: the source under the cursor, else the first one. */
static int list_source(struct tui *t, struct list *l)
{
	if (l->src != SRC_CATALOG || l->level != MT_CAT_VERSION)
		return V_IGNORED;
	const struct row *first = NULL;
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->rows[i].cols[0], "source")) {
			if (!first || i == l->cur)
				first = &l->rows[i];
		}
	if (first)
		source_open(t, first);
	else
		tui_status(t, 0, "the version names no source: it was not built from other versions");
	return V_HANDLED;
}

/* A fragment's catalog row, whole, for its view. */
struct frag_row {
	int64_t id;
	struct tui_words lines;
	const struct tui_remotes *rm;
};

/* "missing, rebuilt from URL": the URL without its user and password, and
 * the remote's name the health column shows. */
static void frag_note_line(struct frag_row *f, const char *note)
{
	int store;
	const char *url = tui_note_source(note, 0, &store);
	char line[1200];
	if (!store) {
		snprintf(line, sizeof line, "  note      %.1000s", note);
		tui_words_add(&f->lines, line);
		return;
	}
	char *shown = mt_url_redact(url);
	const char *name = f->rm ? app_remote_of_url(f->rm->v, f->rm->n, url) : NULL;
	/* The note up to " from ", then the store as shown. */
	snprintf(line, sizeof line, "  note      %.*s from %.900s%s%.200s%s", (int)(url - 6 - note), note,
		 shown ? shown : "a store", name ? " (remote " : "", name ? name : "",
		 name ? ")" : "");
	mt_free(shown);
	tui_words_add(&f->lines, line);
}

static int frag_row_fn(void *ud, const mt_catalog_row *row)
{
	struct frag_row *f = ud;
	if (row->id != f->id || row->ncols < 9)
		return 0;
	const char *const *c = row->cols;
	char line[400], health[128], size[32];
	unsigned long long first = strtoull(c[1] ? c[1] : "0", NULL, 10);
	unsigned long long rows = strtoull(c[2] ? c[2] : "0", NULL, 10);
	unsigned long long shard = strtoull(c[3] ? c[3] : "0", NULL, 10);
	unsigned long long nshards = strtoull(c[4] ? c[4] : "0", NULL, 10);
	snprintf(line, sizeof line, "  rows      %llu..%llu", first, first + rows - (rows > 0));
	tui_words_add(&f->lines, line);
	snprintf(line, sizeof line, "  shards    %llu..%llu", shard, shard + nshards - (nshards > 0));
	tui_words_add(&f->lines, line);
	snprintf(line, sizeof line, "  bytes     %s",
		 app_human_bytes(strtoull(c[5] ? c[5] : "0", NULL, 10), size, sizeof size));
	tui_words_add(&f->lines, line);
	snprintf(line, sizeof line, "  sha256    %.100s", c[6] ? c[6] : "");
	tui_words_add(&f->lines, line);
	snprintf(line, sizeof line, "  health    %s",
		 tui_cell(MT_CAT_FRAGMENTS, c, 2, f->rm, health, sizeof health));
	tui_words_add(&f->lines, line);
	if (c[8])
		frag_note_line(f, c[8]);
	return 1;
}

/* Enter on a fragment: its rows, shards, object and health with the whole
 * note (what was wrong, the store that rebuilt it), which the column has
 * no room for. */
static void fragment_open(struct tui *t, struct list *l, const struct row *r)
{
	struct frag_row f = { r->id, { 0 }, &l->remotes };
	mt_error err = { 0 };
	mt_catalog_list(t->cat, MT_CAT_FRAGMENTS, l->parent, NULL, frag_row_fn, &f, &err);
	if (!f.lines.n) {
		tui_status(t, 1, "fragment %s: %s", r->cols[0],
			   err.message[0] ? err.message : "no longer in the catalog (r to sync)");
		tui_words_free(&f.lines);
		return;
	}
	char title[300];
	mt_catalog_ref ref;
	if (!mt_catalog_locate(t->cat, MT_CAT_VERSIONS, l->parent, &ref, &err)) {
		snprintf(title, sizeof title, "fragment %s of %.100s@%.100s", r->cols[0], ref.dataset,
			 ref.version);
		mt_catalog_ref_free(&ref);
	} else {
		snprintf(title, sizeof title, "fragment %s", r->cols[0]);
	}
	tui_push(t, tui_text_view(title, f.lines.v, f.lines.n));
}

static void list_open(struct tui *t, struct list *l);

/* The row of the versions list l named `name` (the first word of its
 * first column); 0 when none. */
static int list_find_version(struct list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->rows[i].cols[0], name)) {
			l->cur = i;
			return 1;
		}
	return 0;
}

/* U: to the version's parent, in the versions list (the cursor), or from a
 * version's details to the parent's, through the versions list below. */
static int list_parent(struct tui *t, struct list *l)
{
	char name[256] = "";
	int details = l->src == SRC_CATALOG && l->level == MT_CAT_VERSION;
	if (details) {
		for (size_t i = 0; i < l->n; i++)
			if (!strcmp(l->rows[i].cols[0], "parent") && strcmp(l->rows[i].cols[1], "-"))
				snprintf(name, sizeof name, "%s", l->rows[i].cols[1]);
	} else if (l->src == SRC_CATALOG && l->level == MT_CAT_VERSIONS && l->cur < l->n) {
		snprintf(name, sizeof name, "%.*s", (int)strcspn(l->rows[l->cur].cols[8], " "),
			 l->rows[l->cur].cols[8]);
	} else {
		return V_IGNORED;
	}
	if (!name[0]) {
		tui_status(t, 0, "this version has no parent");
		return V_HANDLED;
	}
	struct view *under = details && t->depth > 1 ? t->stack[t->depth - 2] : &l->base;
	/* Every list has the same key handler: that says it is one. */
	struct list *below = under->ops->key == l->base.ops->key ? (struct list *)under : NULL;
	if (!below || below->src != SRC_CATALOG || below->level != MT_CAT_VERSIONS) {
		tui_status(t, 0, "the parent is %s: back in the versions list, U goes there", name);
		return V_HANDLED;
	}
	if (!list_find_version(below, name)) {
		tui_status(t, 0, "the parent %s is not listed: it was removed (or f filters it out)",
			   name);
		return V_HANDLED;
	}
	if (details) {
		tui_pop(t);
		list_open(t, below);
	}
	return V_HANDLED;
}

/* A tensor's values in the matrix viewer. */
static void tensor_open(struct tui *t, const struct list *l, const struct row *r)
{
	mt_catalog_ref ref;
	mt_error err = { 0 };
	if (mt_catalog_locate(t->cat, MT_CAT_CHECKPOINTS, l->parent, &ref, &err)) {
		tui_status(t, 1, "%s", err.message);
		return;
	}
	tui_push(t, tui_tensor_view(t, &ref, r->cols[0]));
	mt_catalog_ref_free(&ref);
}

/* M on search results: the checkpoints that match, or the versions, in turn. */
static int search_models_key(struct tui *t, struct list *l)
{
	int to = l->level == MT_CAT_SEARCH ? MT_CAT_SEARCH_MODELS : MT_CAT_SEARCH;
	char text[sizeof l->filter];
	snprintf(text, sizeof text, "%s", l->filter);
	tui_pop(t); /* frees l */
	tui_push(t, tui_list_view(t, to, 0, text));
	tui_status(t, 0, "%s that match (M: the %s)",
		   to == MT_CAT_SEARCH_MODELS ? "model checkpoints" : "dataset versions",
		   to == MT_CAT_SEARCH_MODELS ? "dataset versions" : "model checkpoints");
	return V_HANDLED;
}

/* M: a bucket's datasets and its models in turn, in the same place of the
 * view stack (a switch, not one level deeper); the same for search results. */
static int list_models_key(struct tui *t, struct list *l)
{
	if (l->src == SRC_CATALOG && (l->level == MT_CAT_SEARCH || l->level == MT_CAT_SEARCH_MODELS))
		return search_models_key(t, l);
	if (l->src != SRC_CATALOG || (l->level != MT_CAT_DATASETS && l->level != MT_CAT_MODELS))
		return V_IGNORED;
	mt_catalog_ref ref;
	mt_error err = { 0 };
	if (mt_catalog_locate(t->cat, MT_CAT_BUCKETS, l->parent, &ref, &err)) {
		tui_status(t, 1, "%s", err.message);
		return V_HANDLED;
	}
	int to = l->level == MT_CAT_DATASETS ? MT_CAT_MODELS : MT_CAT_DATASETS;
	char title[300];
	snprintf(title, sizeof title, "%s%s", ref.url, to == MT_CAT_MODELS ? " models" : "");
	int64_t bucket = l->parent;
	mt_catalog_ref_free(&ref);
	tui_pop(t); /* frees l */
	tui_push(t, tui_list_view(t, to, bucket, title));
	tui_status(t, 0, "the bucket's %s (M: its %s)", to == MT_CAT_MODELS ? "models" : "datasets",
		   to == MT_CAT_MODELS ? "datasets" : "models");
	return V_HANDLED;
}

/* A format-2 version's bad fragments, as the status line names them:
 * "1 (rows 8..15) missing, 4 (rows 32..39) damaged". */
struct frag_bad {
	size_t n;
	char text[200];
};

static int frag_bad_fn(void *ud, const mt_catalog_row *row)
{
	struct frag_bad *b = ud;
	const char *state = row->cols[7], *note = row->cols[8];
	if (!state || !strcmp(state, "sound") || !strcmp(state, "rebuilt"))
		return 0;
	int missing = !strcmp(state, "missing") || (note && !strncmp(note, "missing", 7));
	unsigned long long first = strtoull(row->cols[1], NULL, 10);
	unsigned long long rows = strtoull(row->cols[2], NULL, 10);
	size_t len = strlen(b->text);
	if (len + 48 < sizeof b->text)
		snprintf(b->text + len, sizeof b->text - len, "%s%s (rows %llu..%llu) %s",
			 b->n ? ", " : "", row->cols[0], first, first + rows - (rows > 0),
			 missing ? "missing" : "damaged");
	b->n++;
	return 0;
}

/* The version's shards; of a format-2 version with a fragment missing or
 * damaged, the status line says which rows (the shards of a fragment a
 * sync could not read are not listed). */
static void shards_push(struct tui *t, int64_t version)
{
	tui_push(t, tui_list_view(t, MT_CAT_SHARDS, version, "shards"));
	struct frag_bad b = { 0, "" };
	mt_error err = { 0 };
	if (!mt_catalog_list(t->cat, MT_CAT_FRAGMENTS, version, NULL, frag_bad_fn, &b, &err) &&
	    b.n)
		tui_status(t, 1, "fragment%s %s: H lists the fragments, R repairs",
			   b.n == 1 ? "" : "s", b.text);
}

static void list_open(struct tui *t, struct list *l)
{
	if (l->cur >= l->n)
		return;
	const struct row *r = &l->rows[l->cur];
	char title[300];
	switch (l->src == SRC_CATALOG ? l->level : -1) {
	case MT_CAT_REMOTES:
		tui_push(t, tui_list_view(t, MT_CAT_BUCKETS, r->id, r->cols[0]));
		break;
	case MT_CAT_BUCKETS:
		tui_push(t, tui_list_view(t, MT_CAT_DATASETS, r->id, r->cols[0]));
		break;
	case MT_CAT_DATASETS:
		tui_push(t, tui_list_view(t, MT_CAT_VERSIONS, r->id, r->cols[0]));
		break;
	case MT_CAT_VERSIONS:
		tui_push(t, tui_list_view(t, MT_CAT_VERSION, r->id, r->cols[0]));
		break;
	case MT_CAT_SEARCH:
		snprintf(title, sizeof title, "%s@%s", r->cols[1], r->cols[2]);
		tui_push(t, tui_list_view(t, MT_CAT_VERSION, r->id, title));
		break;
	case MT_CAT_SHARDS:
		snprintf(title, sizeof title, "shard %s", r->cols[0]);
		tui_push(t, tui_list_view(t, MT_CAT_SHARD, r->id, title));
		break;
	case MT_CAT_ATTRS: {
		mt_catalog_ref ref;
		mt_error err = { 0 };
		if (mt_catalog_locate(t->cat, MT_CAT_VERSIONS, l->parent, &ref, &err)) {
			tui_status(t, 1, "%s", err.message);
			break;
		}
		tui_push(t, tui_matrix_view(t, &ref, r->cols[0]));
		mt_catalog_ref_free(&ref);
		break;
	}
	case MT_CAT_SHARD:
		tui_chunks_action(t, l->parent);
		break;
	case MT_CAT_MODELS:
		tui_push(t, tui_list_view(t, MT_CAT_CHECKPOINTS, r->id, r->cols[0]));
		break;
	case MT_CAT_CHECKPOINTS:
		tui_push(t, tui_list_view(t, MT_CAT_TENSORS, r->id, r->cols[0]));
		break;
	case MT_CAT_SEARCH_MODELS:
		snprintf(title, sizeof title, "%s@%s", r->cols[1], r->cols[2]);
		tui_push(t, tui_list_view(t, MT_CAT_TENSORS, r->id, title));
		break;
	case MT_CAT_TENSORS:
		tensor_open(t, l, r);
		break;
	case MT_CAT_FRAGMENTS:
		fragment_open(t, l, r);
		break;
	case MT_CAT_JOBS:
		snprintf(title, sizeof title, "job %s", r->cols[0]);
		tui_push(t, tui_list_view(t, MT_CAT_JOB, r->id, title));
		break;
	case MT_CAT_VERSION:
		if (!strcmp(r->cols[0], "source"))
			source_open(t, r);
		else if (!strcmp(r->cols[0], "attributes"))
			tui_push(t, tui_list_view(t, MT_CAT_ATTRS, l->parent, "attributes"));
		else if (!strcmp(r->cols[0], "shards"))
			shards_push(t, l->parent);
		else if (!strcmp(r->cols[0], "fragments"))
			tui_push(t, tui_list_view(t, MT_CAT_FRAGMENTS, l->parent, "fragments"));
		break;
	default:
		if (l->src == SRC_JOBS && r->id < (int64_t)t->njobs && t->jobs[r->id]->view) {
			/* A finished job's result that waited for the user. */
			struct view *res = t->jobs[r->id]->view;
			t->jobs[r->id]->view = NULL;
			tui_push(t, res);
		} else if (l->src == SRC_JOBS && r->id < (int64_t)t->njobs) {
			tui_push(t, tui_job_log_view(t, (size_t)r->id));
		}
		break;
	}
}

/* The version a version-level key means here, or 0. */
static int64_t list_version(const struct list *l)
{
	if (l->src != SRC_CATALOG)
		return 0;
	if (l->level == MT_CAT_VERSION || l->level == MT_CAT_SHARDS || l->level == MT_CAT_ATTRS ||
	    l->level == MT_CAT_FRAGMENTS)
		return l->parent;
	if ((l->level == MT_CAT_VERSIONS || l->level == MT_CAT_SEARCH) && l->cur < l->n)
		return l->rows[l->cur].id;
	return 0;
}

/* H: the fragments of the version meant here (a format-2 version's; a
 * format-1 version has none, and says so). */
static int list_fragments_key(struct tui *t, struct list *l)
{
	int64_t v = list_version(l);
	if (!v || l->level == MT_CAT_FRAGMENTS)
		return V_IGNORED;
	tui_push(t, tui_list_view(t, MT_CAT_FRAGMENTS, v, "fragments"));
	if (!((struct list *)tui_top(t))->n)
		tui_status(t, 0, "no fragments: the version's manifest is format 1 (one object)");
	return V_HANDLED;
}

/* X: gc of the dataset or bucket under the cursor, or of the versions' dataset. */
static int list_gc_key(struct tui *t, struct list *l)
{
	if (l->src == SRC_CATALOG && (l->level == MT_CAT_DATASETS ||
				      l->level == MT_CAT_BUCKETS) && l->cur < l->n)
		return tui_gc_action(t, l->level, l->rows[l->cur].id), V_HANDLED;
	if (l->src == SRC_CATALOG && l->level == MT_CAT_VERSIONS)
		return tui_gc_action(t, MT_CAT_DATASETS, l->parent), V_HANDLED;
	return V_IGNORED;
}

/* o: the next order the list's level has, then the catalog's again. */
static int list_sort_key(struct tui *t, struct list *l)
{
	if (l->src != SRC_CATALOG || tui_sort_next(l->level, TUI_SORT_NONE) == TUI_SORT_NONE)
		return V_IGNORED;
	l->sort = tui_sort_next(l->level, l->sort);
	list_load(t, l);
	tui_status(t, 0, "sorted by %s (o: next order)", tui_sort_name(l->sort));
	return V_HANDLED;
}

/* c in the jobs list or a job's log: the job under the cursor, or the one
 * whose log this is. */
static int list_cancel_key(struct tui *t, struct list *l)
{
	if (!((l->src == SRC_JOBS && l->cur < l->n) || l->src == SRC_JOBLOG))
		return V_IGNORED;
	struct tui_job *j = t->jobs[l->src == SRC_JOBLOG ? l->job : (size_t)l->rows[l->cur].id];
	if (atomic_load(&j->state) == JOB_RUNNING) {
		tui_job_cancel(j);
		tui_status(t, 0, "canceling job %u: %s", j->id, j->title);
	} else {
		tui_status(t, 0, "job %u is not running", j->id);
	}
	return V_HANDLED;
}

/* v and D on a checkpoint, or on the checkpoint whose tensors these are;
 * 0 where the rows are not a model's. */
static int list_ckpt_key(struct tui *t, struct list *l, enum tui_action a)
{
	if (l->src != SRC_CATALOG || (l->level != MT_CAT_CHECKPOINTS && l->level != MT_CAT_TENSORS))
		return 0;
	if (l->level == MT_CAT_TENSORS)
		tui_ckpt_action(t, a, l->parent);
	else if (l->cur < l->n)
		tui_ckpt_action(t, a, l->rows[l->cur].id);
	return 1;
}

/* v and R on a dataset or bucket row: every version of it, as one job;
 * 0 where the rows are neither. */
static int list_all_key(struct tui *t, struct list *l, enum tui_action a)
{
	if (l->src != SRC_CATALOG || (l->level != MT_CAT_DATASETS && l->level != MT_CAT_BUCKETS) ||
	    l->cur >= l->n || (a != ACT_VERIFY && a != ACT_REPAIR))
		return 0;
	if (a == ACT_VERIFY)
		tui_verify_all(t, l->level, l->rows[l->cur].id);
	else
		tui_repair_all(t, l->level, l->rows[l->cur].id);
	return 1;
}

static int list_key(struct tui *t, struct view *v, enum tui_action a, int k)
{
	struct list *l = (struct list *)v;
	int page = disp_height() - 5;
	switch (a) {
	case ACT_UP:
		l->cur -= l->cur > 0;
		return V_HANDLED;
	case ACT_DOWN:
		l->cur += l->cur + 1 < l->n;
		return V_HANDLED;
	case ACT_PGUP:
		l->cur = l->cur > (size_t)page ? l->cur - (size_t)page : 0;
		return V_HANDLED;
	case ACT_PGDN:
		l->cur = l->n && l->cur + (size_t)page < l->n ? l->cur + (size_t)page
			 : l->n				? l->n - 1
							: 0;
		return V_HANDLED;
	case ACT_HOME:
		l->cur = 0;
		return V_HANDLED;
	case ACT_END:
		l->cur = l->n ? l->n - 1 : 0;
		return V_HANDLED;
	case ACT_OPEN:
	case ACT_RIGHT:
		list_open(t, l);
		return V_HANDLED;
	case ACT_SEARCH:
		tui_ask(t, "/", "", search_submit, (void *)(uintptr_t)v->serial, NULL);
		t->prompt.hist = TUI_HIST_SEARCH;
		return V_HANDLED;
	case ACT_NEXT:
		list_find(t, l, 1, 1);
		return V_HANDLED;
	case ACT_PREV:
		list_find(t, l, -1, 1);
		return V_HANDLED;
	case ACT_FILTER:
		if (l->src == SRC_TEXT)
			return V_IGNORED;
		filter_ask(t, l);
		return V_HANDLED;
	case ACT_CANCEL:
		return list_cancel_key(t, l);
	case ACT_SHARDS:
	case ACT_ATTRS:
		if (l->src != SRC_CATALOG || l->level != MT_CAT_VERSION)
			return V_IGNORED;
		if (a == ACT_SHARDS)
			shards_push(t, l->parent);
		else
			tui_push(t, tui_list_view(t, MT_CAT_ATTRS, l->parent, "attributes"));
		return V_HANDLED;
	case ACT_STATS:
	case ACT_FREQ:
		if (l->src == SRC_CATALOG && l->level == MT_CAT_ATTRS && l->cur < l->n) {
			list_stats(t, l, a);
			return V_HANDLED;
		}
		return V_IGNORED;
	case ACT_MATRIX:
		if (l->src == SRC_CATALOG && l->level == MT_CAT_ATTRS) {
			list_open(t, l);
			return V_HANDLED;
		}
		/* The version's first attribute. */
		__attribute__((fallthrough));
	case ACT_VERIFY:
	case ACT_DELETE:
	case ACT_REPAIR:
		if (list_ckpt_key(t, l, a) || list_all_key(t, l, a))
			return V_HANDLED;
		__attribute__((fallthrough));
	case ACT_COPY:
	case ACT_TAGS:
	case ACT_DESCRIBE:
	case ACT_PROTECT:
	case ACT_DIFF: {
		int64_t id = list_version(l);
		if (!id)
			return V_IGNORED;
		tui_version_action(t, a, id);
		return V_HANDLED;
	}
	case ACT_SOURCE:
		return list_source(t, l);
	case ACT_PARENT:
		return list_parent(t, l);
	case ACT_SORT:
		return list_sort_key(t, l);
	case ACT_MODELS:
		return list_models_key(t, l);
	case ACT_GC:
		return list_gc_key(t, l);
	default:
		return a == ACT_FRAGMENTS ? list_fragments_key(t, l) : V_IGNORED;
	}
}

static void list_click(struct tui *t, struct view *v, int y)
{
	struct list *l = (struct list *)v;
	int at = l->first_y;
	for (size_t i = l->top; i < l->n && at <= y; i++) {
		int h = row_height(l, i);
		if (y < at + h) {
			l->cur = i;
			return;
		}
		at += h;
	}
}

static void list_reload(struct tui *t, struct view *v)
{
	struct list *l = (struct list *)v;
	if (l->src == SRC_CATALOG)
		list_load(t, l);
}

static void list_free(struct view *v)
{
	struct list *l = (struct list *)v;
	list_clear(l);
	free(l->rows);
	free(l->widths);
	free(l->shown);
	mt_remotes_free(l->remotes.v, l->remotes.n);
	free(l);
}

static const struct view_ops catalog_ops = {
	"list", K_LIST, list_draw, list_key, list_reload, list_filter, list_click, list_free,
};
static const struct view_ops version_ops = {
	"version", K_VERSION, list_draw, list_key, list_reload, NULL, list_click, list_free,
};
static const struct view_ops jobs_ops = {
	"jobs", K_JOBS, list_draw, list_key, NULL, NULL, list_click, list_free,
};
static const struct view_ops text_ops = {
	"text", K_TEXT, list_draw, list_key, NULL, NULL, list_click, list_free,
};

int tui_list_cursor(struct view *v, int *level, int64_t *id)
{
	if (!v || v->ops != &catalog_ops)
		return 0;
	struct list *l = (struct list *)v;
	if (l->src != SRC_CATALOG || l->cur >= l->n)
		return 0;
	*level = l->level;
	*id = l->rows[l->cur].id;
	return 1;
}

struct view *tui_list_view(struct tui *t, int level, int64_t parent, const char *title)
{
	struct list *l = app_xcalloc(1, sizeof *l);
	l->base.ops = level == MT_CAT_VERSION ? &version_ops : &catalog_ops;
	l->src = SRC_CATALOG;
	l->level = level;
	l->parent = parent;
	l->cols = tui_columns(level, &l->ncols);
	/* Version keys where rows are versions (or a version's parts), gc where
	 * there is something to sweep: the footer lists only what works here. */
	static const int scopes[MT_CAT_NLEVELS] = {
		[MT_CAT_BUCKETS] = K_GC | K_SORT, [MT_CAT_DATASETS] = K_GC | K_SORT | K_BUCKET,
		[MT_CAT_MODELS] = K_BUCKET | K_SORT, [MT_CAT_CHECKPOINTS] = K_CKPT | K_SORT,
		[MT_CAT_TENSORS] = K_CKPT | K_SORT,
		[MT_CAT_VERSIONS] = K_ACT | K_GC | K_SORT, [MT_CAT_SEARCH] = K_ACT | K_BUCKET,
		[MT_CAT_SEARCH_MODELS] = K_BUCKET,
		[MT_CAT_SHARDS] = K_ACT | K_SORT, [MT_CAT_ATTRS] = K_ACT | K_ATTRS,
		[MT_CAT_FRAGMENTS] = K_ACT,
	};
	if (level != MT_CAT_VERSION && level >= 0 && level < MT_CAT_NLEVELS)
		l->base.scope = K_LIST | scopes[level];
	/* A field's value, and the last column where errors land (a remote's, a
	 * shard's verification, a job's result), are read whole. */
	l->wrap = level == MT_CAT_VERSION || level == MT_CAT_SHARD || level == MT_CAT_JOB ||
		  level == MT_CAT_SHARDS || level == MT_CAT_REMOTES || level == MT_CAT_JOBS;
	int search = level == MT_CAT_SEARCH || level == MT_CAT_SEARCH_MODELS;
	if (search)
		snprintf(l->filter, sizeof l->filter, "%s", title);
	snprintf(l->base.title, sizeof l->base.title, "%s%s",
		 level == MT_CAT_SEARCH ? "search: " : search ? "search models: " : "", title);
	list_load(t, l);
	return &l->base;
}

void tui_jobs_open(struct tui *t)
{
	for (size_t i = t->depth; i-- > 0;)
		if (t->stack[i]->ops == &jobs_ops) {
			while (t->depth > i + 1)
				tui_pop(t);
			return;
		}
	tui_push(t, tui_jobs_view(t));
}

struct view *tui_jobs_view(struct tui *t)
{
	struct list *l = app_xcalloc(1, sizeof *l);
	l->base.ops = &jobs_ops;
	l->src = SRC_JOBS;
	l->cols = job_cols;
	l->ncols = sizeof job_cols / sizeof job_cols[0];
	snprintf(l->base.title, sizeof l->base.title, "jobs");
	list_load(t, l);
	return &l->base;
}

struct view *tui_job_log_view(struct tui *t, size_t job)
{
	struct list *l = app_xcalloc(1, sizeof *l);
	l->base.ops = &text_ops;
	l->src = SRC_JOBLOG;
	l->job = job;
	l->cols = text_cols;
	l->ncols = 1;
	l->wrap = 1;
	snprintf(l->base.title, sizeof l->base.title, "job %u", t->jobs[job]->id);
	list_load(t, l);
	return &l->base;
}

static void text_fill(struct list *l, char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *cols[] = { lines[i] };
		list_add(l, (int64_t)i, cols, R_NORMAL);
		free(lines[i]);
	}
	free(lines);
	list_widths(l);
}

void tui_text_view_set(struct view *v, const char *title, char **lines, size_t n)
{
	struct list *l = (struct list *)v;
	list_clear(l);
	l->cur = l->top = 0;
	snprintf(l->base.title, sizeof l->base.title, "%s", title);
	text_fill(l, lines, n);
}

struct view *tui_text_view(const char *title, char **lines, size_t n)
{
	struct list *l = app_xcalloc(1, sizeof *l);
	l->base.ops = &text_ops;
	l->src = SRC_TEXT;
	l->cols = text_cols;
	l->ncols = 1;
	l->wrap = 1;
	snprintf(l->base.title, sizeof l->base.title, "%s", title);
	text_fill(l, lines, n);
	return &l->base;
}
