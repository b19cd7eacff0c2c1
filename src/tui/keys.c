/* keys.c — the key table, and the footer and help screen generated from it so they cannot drift. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "config.h"

#include <ncursesw/curses.h>
#include <stdio.h>
#include <string.h>

#include "tui.h"

#define FN(k) (DISP_FN | (k))
#define ESC 27

/* Order is the help screen's and the footer's. */
const struct tui_key tui_keys[] = {
	{ '?', FN(KEY_F(1)), "?", "help", "this help, generated from the key table", ACT_HELP, K_ALL, 1 },
	{ 'q', DISP_CTRL('c'), "q", "quit", "quit, also Ctrl-C (running jobs are canceled)", ACT_QUIT, K_ALL, 1 },
	{ FN(KEY_ENTER), '\n', "Enter", "open", "open the row: remote > bucket > dataset > version > shard > its chunk layout; model > checkpoint > tensor > its values", ACT_OPEN, K_LIST | K_VERSION | K_JOBS, 2 },
	{ FN(KEY_BACKSPACE), 127, "Bksp", "back", "back to the view this one was opened from", ACT_BACK, K_ALL, 0 },
	{ ESC, 0, "Esc", "back", "close the prompt, else go back", ACT_ESC, K_ALL, 0 },
	{ FN(KEY_UP), 'k', "Up/k", NULL, "cursor up", ACT_UP, K_ALL, 0 },
	{ FN(KEY_DOWN), 'j', "Down/j", NULL, "cursor down", ACT_DOWN, K_ALL, 0 },
	{ FN(KEY_LEFT), 'h', "Left/h", NULL, "back (lists); scroll left (matrix)", ACT_LEFT, K_ALL, 0 },
	{ FN(KEY_RIGHT), 'l', "Right/l", NULL, "open (lists); scroll right (matrix)", ACT_RIGHT, K_ALL, 0 },
	{ FN(KEY_PPAGE), DISP_CTRL('b'), "PgUp", NULL, "a page up", ACT_PGUP, K_ALL, 0 },
	{ FN(KEY_NPAGE), DISP_CTRL('f'), "PgDn", NULL, "a page down", ACT_PGDN, K_ALL, 0 },
	{ FN(KEY_HOME), 'g', "Home/g", NULL, "first row (top)", ACT_HOME, K_ALL, 0 },
	{ FN(KEY_END), 'G', "End/G", NULL, "last row (bottom)", ACT_END, K_ALL, 0 },
	{ '/', 0, "/", "search", "search the rows on screen; n and N go to the next and previous match", ACT_SEARCH, K_LIST | K_VERSION | K_JOBS | K_TEXT, 2 },
	{ 'n', 0, "n", NULL, "next match", ACT_NEXT, K_LIST | K_VERSION | K_JOBS | K_TEXT, 0 },
	{ 'N', 0, "N", NULL, "previous match", ACT_PREV, K_LIST | K_VERSION | K_JOBS | K_TEXT, 0 },
	{ 'f', 0, "f", "filter", "keep only rows whose name, description or tags contain a text (empty: all)", ACT_FILTER, K_LIST | K_JOBS, 2 },
	{ 'o', 0, "o", "sort", "sort the list: by name, size, date or health in turn, then as the catalog lists it (the title says which)", ACT_SORT, K_SORT, 2 },
	{ 'F', 0, "F", "find", "full-text search of the whole catalog (names, descriptions, tags, attributes; M: model checkpoints)", ACT_FIND, K_LIST | K_VERSION, 0 },
	{ 'M', 0, "M", "models", "switch a bucket's list between its datasets and its models (checkpoints beside the data); search results between versions and checkpoints", ACT_MODELS, K_BUCKET, 1 },
	{ 'S', 0, "S", "shards", "the version's shards", ACT_SHARDS, K_VERSION, 1 },
	{ 'H', 0, "H", "frags", "a format-2 version's fragments with their row ranges, shards and health (sound, missing, damaged, never checked); Enter on one shows its whole note (the store that rebuilt it); R rebuilds a bad one", ACT_FRAGMENTS, K_VERSION | K_ACT, 2 },
	{ 'A', 0, "A", "attrs", "the version's attributes; Enter on one opens the matrix viewer", ACT_ATTRS, K_VERSION, 2 },
	{ 'm', 0, "m", "matrix", "matrix viewer on the first attribute (or the one under the cursor)", ACT_MATRIX, K_VERSION | K_ACT, 0 },
	{ 'd', 0, "d", "diff", "compare the version with another of its dataset (its parent unless told): shards shared, new and removed, bytes and rows (a job)", ACT_DIFF, K_ACT | K_VERSION, 2 },
	{ 'u', 0, "u", "source", "go to a version this one was built from (the source under the cursor, else the first; Enter on a source row too)", ACT_SOURCE, K_VERSION, 2 },
	{ 'U', 0, "U", "parent", "go to the version's parent (in the versions list, or its details from a version's)", ACT_PARENT, K_ACT | K_VERSION, 0 },
	{ 'v', 'V', "v/V", "verify", "verify the version: every shard's size, sha256 and chunk checksums; on a dataset or bucket row, every version of it as one job; or a checkpoint: every tensor against its sha256 (a job)", ACT_VERIFY, K_ACT | K_VERSION | K_CKPT | K_GC, 1 },
	{ 'p', 0, "p", "copy", "push/pull: copy the version to another remote (a job; only missing shards travel)", ACT_COPY, K_ACT | K_VERSION | K_WRITE, 1 },
	{ 't', 0, "t", "tags", "edit the version's tags (written to its bucket)", ACT_TAGS, K_ACT | K_VERSION | K_WRITE, 1 },
	{ 'e', 0, "e", "describe", "edit the version's description (written to its bucket)", ACT_DESCRIBE, K_ACT | K_VERSION | K_WRITE, 0 },
	{ 'D', 0, "D", "delete", "delete the version or checkpoint (type its name to confirm)", ACT_DELETE, K_ACT | K_VERSION | K_CKPT | K_WRITE, 1 },
	{ 'R', 0, "R", "repair", "repair the version: rebuild damaged or lost shards, parity and manifest from other stores or parity; on a dataset or bucket row, every version of it as one job; or a checkpoint's tensors from another store or its parity (a job with a log)", ACT_REPAIR, K_ACT | K_VERSION | K_CKPT | K_GC | K_WRITE, 1 },
	{ 'P', 0, "P", "protect", "protect the version with Reed–Solomon parity K+M (asked for; a job)", ACT_PROTECT, K_ACT | K_VERSION | K_WRITE, 2 },
	{ 'X', 0, "X", "gc", "garbage-collect the dataset or bucket: preview (read-only too), then 'delete', or 'delete now' for no grace period", ACT_GC, K_GC, 1 },
	{ 'E', 0, "E", "error", "the last error in full, with the log of the job it came from", ACT_ERROR, K_ALL, 0 },
	{ 'r', 0, "r", "sync", "refresh the catalog from every store (in the background)", ACT_SYNC, K_ALL, 0 },
	{ 'J', 0, "J", "jobs", "running and finished jobs with progress", ACT_JOBS, K_ALL, 1 },
	{ 'c', 0, "c", "cancel", "cancel the job under the cursor (elsewhere: the newest running job)", ACT_CANCEL, K_ALL, 0 },
	{ 's', 0, "s", "stats", "statistics of the whole attribute (the one under the cursor, or the matrix viewer's): range, mean, std, NaN/Inf, histogram, class balance; a job with progress, then kept in the catalog", ACT_STATS, K_ATTRS | K_MATRIX, 1 },
	{ 'b', 0, "b", "freq", "frequency of an integer attribute of one value a row (labels): class balance first, then each value by count, largest first, with its share and a bar (from the statistics: a job when not kept yet)", ACT_FREQ, K_ATTRS | K_MATRIX, 2 },
	{ ']', 0, "]", "row+", "next row of the attribute", ACT_ROW_NEXT, K_MATRIX, 1 },
	{ '[', 0, "[", "row-", "previous row of the attribute", ACT_ROW_PREV, K_MATRIX, 1 },
	{ '#', 0, "#", "goto", "go to a row by number", ACT_ROW_GOTO, K_MATRIX, 1 },
	{ 'x', 0, "x", "export", "export a row range of the attribute to a local .npy file (a job; asks before replacing a file; allowed read-only)", ACT_EXPORT, K_MATRIX, 1 },
	{ '0', 0, "0", NULL, "first column", ACT_FIRST_COL, K_MATRIX | K_TENSOR, 0 },
	{ '$', 0, "$", NULL, "last column", ACT_LAST_COL, K_MATRIX | K_TENSOR, 0 },
	{ 'i', 0, "i", "image", "grey-scale preview of a 2-D row (uint8 or float) instead of numbers", ACT_IMAGE, K_MATRIX | K_TENSOR, 1 },
	{ ':', 0, ":", "cmd", "command line (Tab completes): sync, search TEXT, filter TEXT, run SCRIPT.lua, repair [DATASET[@VERSION]], protect DATASET[@VERSION] K+M, diff DATASET[@VERSION] [VERSION], copy, verify [DATASET[@VERSION]] (none: the dataset or bucket under the cursor, as repair), rm, describe, tags DATASET[@VERSION], export DATASET[@VERSION] ATTR, gc [DATASET] [--grace SECONDS], jobs, history (past jobs), error, help, quit", ACT_COMMAND, K_ALL, 1 },
	{ DISP_CTRL('l'), 0, "^L", NULL, "redraw the screen", ACT_REDRAW, K_ALL, 0 },
	{ 0, 0, NULL, NULL, NULL, ACT_NONE, 0, 0 },
};

static int key_allowed(const struct tui *t, const struct tui_key *e, int scope)
{
	return (e->scope & scope) && !(t->read_only && (e->scope & K_WRITE));
}

enum tui_action tui_key_action(const struct tui *t, int k, int scope)
{
	/* Terminals send Enter and Backspace in several spellings. */
	if (k == '\r')
		k = '\n';
	if (k == 8 || k == FN(KEY_DC))
		k = 127;
	for (const struct tui_key *e = tui_keys; e->label; e++)
		if ((e->key == k || (e->alt && e->alt == k)) && key_allowed(t, e, scope))
			return e->action;
	return ACT_NONE;
}

const struct tui_key *tui_key_entry(int k)
{
	for (const struct tui_key *e = tui_keys; e->label; e++)
		if (e->key == k || (e->alt && e->alt == k))
			return e;
	return NULL;
}

const struct tui_key *tui_key_refused(const struct tui *t, int k, int scope)
{
	if (!t->read_only)
		return NULL;
	for (const struct tui_key *e = tui_keys; e->label; e++)
		if ((e->key == k || (e->alt && e->alt == k)) && (e->scope & scope) &&
		    (e->scope & K_WRITE))
			return e;
	return NULL;
}

/* The footer's width with keys of priority up to `most` and `sep` blanks between. */
static int footer_width(const struct tui *t, int scope, int most, int sep)
{
	int w = 0;
	for (const struct tui_key *e = tui_keys; e->label; e++)
		if (e->footer && e->footer <= most && key_allowed(t, e, scope))
			w += disp_columns(e->label) + 1 + disp_columns(e->name) + sep;
	return w - sep;
}

void tui_footer(const struct tui *t, int y, int scope)
{
	int w = disp_width(), x = 0;
	disp_fill(y, 0, w, R_FOOTER);
	/* Every key of the view when they fit; else the view's own keys first
	 * (Enter, / and f work as everywhere), closer together if need be. */
	int most = 2, sep = 2;
	if (footer_width(t, scope, 2, 2) > w) {
		most = 1;
		sep = footer_width(t, scope, 1, 2) > w ? 1 : 2;
	}
	for (const struct tui_key *e = tui_keys; e->label && x < w; e++) {
		if (!e->footer || e->footer > most || !key_allowed(t, e, scope))
			continue;
		int need = disp_columns(e->label) + disp_columns(e->name) + 1;
		if (x + need > w)
			break;
		x += disp_text(y, x, w - x, R_KEY, e->label);
		x += disp_text(y, x, w - x, R_FOOTER, " ");
		x += disp_text(y, x, w - x, R_FOOTER, e->name);
		x += disp_text(y, x, w - x, R_FOOTER, sep == 2 ? "  " : " ");
	}
}

struct view *tui_help_view(struct tui *t)
{
	size_t n = 0, cap = 64;
	char **lines = app_xcalloc(cap, sizeof *lines);
	lines[n++] = app_xstrdup("Keys (the footer shows the most used; this list is the key table).");
	if (t->read_only)
		lines[n++] = app_xstrdup("Read-only mode: keys that change a store are off.");
	lines[n++] = app_xstrdup("");
	for (const struct tui_key *e = tui_keys; e->label; e++) {
		if (t->read_only && (e->scope & K_WRITE))
			continue;
		if (n + 2 >= cap)
			lines = app_xreallocarray(lines, cap *= 2, sizeof *lines);
		char where[160] = "";
		if ((e->scope & K_ALL) != K_ALL)
			snprintf(where, sizeof where, " [%s%s%s%s%s%s%s%s%s%s%s]",
				 e->scope & K_LIST ? "lists " : "",
				 e->scope & K_SORT ? "buckets datasets versions shards " : "",
				 e->scope & K_ACT ? "versions " : "",
				 e->scope & K_ATTRS ? "attributes " : "",
				 e->scope & K_GC ? "datasets " : "",
				 e->scope & K_BUCKET ? "datasets models search " : "",
				 e->scope & K_CKPT ? "checkpoints " : "",
				 e->scope & K_VERSION ? "version " : "",
				 e->scope & (K_MATRIX | K_TENSOR) ? "matrix " : "", e->scope & K_JOBS ? "jobs " : "",
				 e->scope & K_TEXT ? "text " : "");
		char *p = strstr(where, " ]");
		if (p)
			memmove(p, p + 1, strlen(p));
		lines[n++] = app_xasprintf("  %-8s %s%s", e->label, e->help, where);
	}
	return tui_text_view("help", lines, n);
}
