/* test-tui.c — the browser drawn headless into a buffer: navigation to a shard, help and footer from the key table, filter and search, the matrix viewer, edits, typed-name delete, read-only mode, resizes. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "config.h"

#include <ncursesw/curses.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "tap.h"
#include "tui.h"

static char root[256];

static void write_dataset(const char *url)
{
	mt_store *s;
	mt_error err = { 0 };
	if (mt_store_open(url, &s, &err)) {
		tap_diag("%s", err.message);
		exit(1);
	}
	static const mt_attr attrs[] = {
		{ "image", MT_UINT8, 2, { 4, 5 }, 0 },
		{ "label", MT_INT64, 0, { 0 }, 0 },
	};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	const char *tag = "digits";
	o.tags = &tag;
	o.ntags = 1;
	o.description = "four by five";
	mt_writer *w;
	uint8_t img[3 * 20];
	int64_t lab[3] = { 7, 8, 9 };
	for (int i = 0; i < 60; i++)
		img[i] = (uint8_t)(i * 4);
	const void *data[2] = { img, lab };
	if (mt_writer_open(s, "tiny", attrs, 2, &o, &w, &err) ||
	    mt_writer_append(w, 3, data, NULL, &err) || mt_writer_commit(w, NULL, 0, &err)) {
		tap_diag("%s", err.message);
		exit(1);
	}
	mt_writer_close(w);
	mt_store_close(s);
}

/* "seq": ragged int32 token rows (row i: i+1 tokens 100*i+k) and float16 scores. */
static void write_ragged(const char *url)
{
	mt_store *s;
	mt_error err = { 0 };
	static const mt_attr attrs[] = {
		{ "tokens", MT_INT32, 0, { 0 }, 1 },
		{ "score", MT_FLOAT16, 0, { 0 }, 0 },
		{ "note", MT_STR, 0, { 0 }, 1 },
	};
	int32_t tok[6] = { 0, 100, 101, 200, 201, 202 };
	uint64_t lens[3] = { 1, 2, 3 };
	uint16_t score[3] = { 0x3c00, 0xc000, 0x3800 }; /* 1, -2, 0.5 */
	/* Text: two lines, empty, and a line far wider than the screen. */
	char note[400];
	int n0 = snprintf(note, sizeof note, "first line\nsecond line");
	int n2 = snprintf(note + n0, sizeof note - (size_t)n0, "\xe6\x97\xa5\xe6\x9c\xac "
			  "%0300d", 7);
	uint64_t note_lens[3] = { (uint64_t)n0, 0, (uint64_t)n2 };
	const void *data[3] = { tok, score, note };
	const uint64_t *lengths[3] = { lens, NULL, note_lens };
	mt_writer *w;
	if (mt_store_open(url, &s, &err) || mt_writer_open(s, "seq", attrs, 3, NULL, &w, &err) ||
	    mt_writer_append(w, 3, data, lengths, &err) || mt_writer_commit(w, NULL, 0, &err)) {
		tap_diag("%s", err.message);
		exit(1);
	}
	mt_writer_close(w);
	mt_store_close(s);
}

/* Let jobs finish (at most 20 s), as the loop would between keys. */
static void settle(struct tui *t)
{
	for (int i = 0; i < 2000; i++) {
		tui_jobs_poll(t);
		int running = 0;
		for (size_t k = 0; k < t->njobs; k++)
			running += atomic_load(&t->jobs[k]->state) == JOB_RUNNING ||
				   !t->jobs[k]->joined;
		if (!running)
			return;
		usleep(10000);
	}
	tap_diag("jobs still running after 20 s");
}

static char *screen(struct tui *t)
{
	settle(t);
	tui_draw(t);
	return disp_dump();
}

static int has(struct tui *t, const char *text)
{
	char *s = screen(t);
	int ok = strstr(s, text) != NULL;
	free(s);
	return ok;
}

static int shows(struct tui *t, const char *text)
{
	char *s = screen(t);
	int ok = strstr(s, text) != NULL;
	if (!ok)
		tap_diag("screen lacks '%s':\n%s", text, s);
	free(s);
	return ok;
}

static void keys(struct tui *t, const char *s)
{
	for (; *s; s++)
		tui_key(t, *s == '\n' ? (DISP_FN | KEY_ENTER) : *s == 27 ? 27 : (unsigned char)*s);
	settle(t);
}

/* A job that runs until canceled (at most 10 s), as a long copy would. */
static int endless_run(struct tui_job *j)
{
	for (int i = 0; i < 1000; i++) {
		if (tui_job_progress(j, (uint64_t)i, 1000))
			return MT_ECANCELED;
		usleep(10000);
	}
	return 0;
}

static int max_line_width(struct tui *t)
{
	char *s = screen(t);
	int max = 0;
	for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
		int w = disp_columns(line);
		max = w > max ? w : max;
	}
	free(s);
	return max;
}

/* The prompt's line editor, driven key by key: cursor keys, kill keys, history, Tab. */
static void test_editor(struct tui *t)
{
	tui_key(t, ':');
	keys(t, "hlp");
	tui_key(t, DISP_FN | KEY_LEFT);
	tui_key(t, DISP_FN | KEY_LEFT);
	keys(t, "e");
	tap_ok(!strcmp(t->prompt.text, "help") && t->prompt.cur == 2,
	       "Left moves the cursor; typing inserts there");
	tui_key(t, DISP_CTRL('e'));
	keys(t, " me now");
	tui_key(t, DISP_CTRL('w'));
	tap_ok(!strcmp(t->prompt.text, "help me "), "^W deletes the word before the cursor");
	tui_key(t, DISP_CTRL('a'));
	tui_key(t, DISP_FN | KEY_DC);
	tap_ok(!strcmp(t->prompt.text, "elp me ") && t->prompt.cur == 0,
	       "^A goes to the start, Delete takes the character under the cursor");
	tui_key(t, DISP_FN | KEY_END);
	tui_key(t, DISP_CTRL('u'));
	tap_ok(!t->prompt.text[0], "End and ^U empty the line");
	keys(t, "he\t");
	tap_ok(!strcmp(t->prompt.text, "help "), "Tab completes a command");
	keys(t, "\n\x1b");
	tui_key(t, ':');
	tui_key(t, DISP_FN | KEY_UP);
	tap_ok(!strcmp(t->prompt.text, "help "), "Up brings back the last command");
	tui_key(t, DISP_FN | KEY_DOWN);
	tap_ok(!t->prompt.text[0], "Down returns to the line being typed");
	keys(t, "\x1b");
	tap_ok(!t->prompt.active, "Esc closes the prompt");
}

/* Text views: tabs as blanks, long lines wrapped whole. */
static void test_text(struct tui *t)
{
	char *x = tui_expand_tabs("a\tb\t\tc");
	tap_ok(!strcmp(x, "a       b               c"), "tabs expand to 8-column stops: '%s'", x);
	free(x);
	char **lines = app_xcalloc(2, sizeof *lines);
	lines[0] = app_xstrdup("\tstack traceback: the first half of a long message that a status "
			       "line cuts, and the useful end: row 6346 fails its checksum");
	tui_push(t, tui_text_view("wrapped", lines, 1));
	tap_ok(shows(t, "fails its checksum") && !has(t, "?stack"),
	       "a long line wraps, its tab a blank");
	keys(t, "\x1b");
}

/* The orders a list sorts in: which levels have which, how values compare,
 * and o cycling through them on the datasets' list (t shows it). */
static void test_sort(struct tui *t)
{
	tap_ok(tui_sort_next(MT_CAT_VERSIONS, TUI_SORT_NONE) == TUI_SORT_NAME &&
	       tui_sort_next(MT_CAT_VERSIONS, TUI_SORT_DATE) == TUI_SORT_HEALTH &&
	       tui_sort_next(MT_CAT_VERSIONS, TUI_SORT_HEALTH) == TUI_SORT_NONE,
	       "versions sort by name, size, date and health, then back");
	tap_ok(tui_sort_next(MT_CAT_DATASETS, TUI_SORT_SIZE) == TUI_SORT_HEALTH &&
	       tui_sort_next(MT_CAT_DATASETS, TUI_SORT_HEALTH) == TUI_SORT_NONE &&
	       tui_sort_next(MT_CAT_REMOTES, TUI_SORT_NONE) == TUI_SORT_NONE,
	       "datasets have no date order, a health one; remotes none at all");
	tap_ok(tui_sort_cmp(TUI_SORT_NAME, "v2", "v10") < 0, "names in version order: v2 < v10");
	tap_ok(tui_sort_cmp(TUI_SORT_SIZE, "900", "1000") > 0, "the largest first");
	tap_ok(tui_sort_cmp(TUI_SORT_DATE, "2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z") < 0,
	       "the newest first");
	tap_ok(tui_sort_cmp(TUI_SORT_HEALTH, "unrepairable", "sound") < 0 &&
	       tui_sort_cmp(TUI_SORT_HEALTH, "sound", NULL) < 0,
	       "the worst health first, never checked last");
	tap_ok(!has(t, "o sort"), "no sort key on the remotes");
	keys(t, "\n\n");
	keys(t, "o");
	char *s = screen(t);
	char *seq = strstr(s, "seq "), *tiny = strstr(s, "tiny ");
	tap_ok(strstr(s, "(by name)") && seq && tiny && seq < tiny,
	       "o sorts the datasets by name and the title says so");
	free(s);
	keys(t, "o");
	tap_ok(shows(t, "(by size)") && shows(t, "sorted by size"), "then by size");
	keys(t, "o");
	tap_ok(shows(t, "(by health)"), "then by health, the worst first");
	keys(t, "o");
	tap_ok(!has(t, "(by ") && shows(t, "sorted by catalog order"), "then as the catalog lists them");
	keys(t, "\x1b\x1b");
}

/* The export's row ranges as typed. */
static void test_export_range(void)
{
	int all;
	uint64_t a, b;
	tap_ok(!tui_export_range("", &all, &a, &b) && all, "an empty range is every row");
	tap_ok(!tui_export_range("7", &all, &a, &b) && !all && a == 7 && b == 8, "a row number is that row");
	tap_ok(!tui_export_range("2:5", &all, &a, &b) && a == 2 && b == 5, "FIRST:END");
	tap_ok(!tui_export_range("2:", &all, &a, &b) && a == 2 && b == UINT64_MAX, "FIRST: to the last row");
	tap_ok(!tui_export_range(":4", &all, &a, &b) && a == 0 && b == 4, ":END from the first");
	tap_ok(tui_export_range("5:2", &all, &a, &b) && tui_export_range("x", &all, &a, &b) &&
	       tui_export_range("-1:3", &all, &a, &b) && tui_export_range("1:2:3", &all, &a, &b),
	       "empty, reversed, negative and malformed ranges are refused");
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/mt-tui-XXXXXX");
	if (!mkdtemp(root))
		return 1;
	char url[300], cat[300], meta[400];
	snprintf(url, sizeof url, "file://%s/store", root);
	snprintf(cat, sizeof cat, "%s/catalog.db", root);
	snprintf(meta, sizeof meta, "%s/store/datasets/tiny/meta/v1.json", root);
	/* No remotes from the user's configuration. */
	char cfg[300];
	snprintf(cfg, sizeof cfg, "%s/config.json", root);
	setenv("MATORAGE_CONFIG", cfg, 1);
	write_dataset(url);
	write_ragged(url);

	struct app_ctx ctx = { 0 };
	mt_store_opts_init(&ctx.store_opts);
	ctx.store_url = url;
	struct tui t;
	mt_error err = { 0 };
	disp_open_headless(80, 24);
	TAP_CALL(tui_init(&t, &ctx, cat, 0, &err), &err, "the browser starts on an empty catalog");
	tap_ok(shows(&t, "(empty catalog: r syncs it from the stores)"),
	       "an empty catalog says how to fill it");
	tui_sync_all(&t);
	tap_ok(shows(&t, "online") && shows(&t, url), "after the sync the store is listed, online");
	tap_ok(shows(&t, "? help") && shows(&t, "Enter open") && shows(&t, "q quit"),
	       "the footer comes from the key table");
	tap_ok(!has(&t, "v verify") && !has(&t, "p copy"), "no version keys on the remotes");
	test_editor(&t);
	test_text(&t);
	test_sort(&t);
	test_export_range();

	keys(&t, "\n\n");
	tap_ok(shows(&t, "tiny") && shows(&t, "digits") && shows(&t, "four by five"),
	       "bucket > datasets: name, tags, description");
	keys(&t, "f");
	keys(&t, "zzz\n");
	tap_ok(shows(&t, "(nothing matches the filter"), "a filter that matches nothing says so");
	keys(&t, "f");
	tui_key(&t, DISP_CTRL('u'));
	keys(&t, "DIG\n");
	tap_ok(shows(&t, "tiny"), "a filter on tags ignores case");
	keys(&t, "\n");
	tap_ok(shows(&t, "v1"), "dataset > versions");
	keys(&t, "\n");
	tap_ok(shows(&t, "rows          3") && shows(&t, "lineage") && shows(&t, "ratio"),
	       "version details: rows, lineage, ratio");
	tap_ok(shows(&t, "parent        -") && shows(&t, "recipe        -") &&
		       shows(&t, "verified      never"),
	       "what the catalog has no value for reads '-', a version never checked 'never'");
	char *scr1 = screen(&t), *ratio = strstr(scr1, "ratio ");
	double rv;
	int rn = 0;
	tap_ok(ratio && sscanf(ratio, "ratio %lf%n", &rv, &rn) == 1 && ratio[rn - 3] == '.' &&
		       !isdigit((unsigned char)ratio[rn]),
	       "the ratio reads with two decimals: %.30s", ratio ? ratio : scr1);
	free(scr1);
	/* A click on the "attributes" line, then opening it, as a double click does. */
	char *scr0 = screen(&t);
	int line = 0;
	for (char *p = scr0; p && strncmp(p, "attributes ", 11); p = strchr(p, '\n'), p = p ? p + 1 : p)
		line++;
	free(scr0);
	tui_top(&t)->ops->click(&t, tui_top(&t), line);
	tui_top(&t)->ops->key(&t, tui_top(&t), ACT_OPEN, 0);
	tap_ok(shows(&t, "ATTRIBUTE") && shows(&t, "uint8"), "clicking a row selects it (mouse)");
	keys(&t, "\x1b");
	keys(&t, "S\n");
	tap_ok(shows(&t, "sha256") && shows(&t, "datasets/tiny/shards/") && shows(&t, "never"),
	       "shard details: sha256, key, verify status");
	keys(&t, "\n");
	tap_ok(shows(&t, "chunks of shard 0") && shows(&t, "image") && shows(&t, "uint8") &&
		       shows(&t, "0..3 (3 x 20 B)"),
	       "Enter on a shard shows its chunk layout");
	keys(&t, "\x1b");
	keys(&t, "\x1b\x1b");
	keys(&t, "v");
	keys(&t, "S\n");
	tap_ok(shows(&t, "ok at "), "after a verify job the shard shows it verified");
	keys(&t, "\x1b\x1b");
	tap_ok(shows(&t, "1 of 1 shards sound, 0 damaged"), "and the version too");
	keys(&t, "\x1b");
	tap_ok(shows(&t, "HEALTH") && shows(&t, "sound") && !shows(&t, "never checked"),
	       "the versions list shows the version's health after the verify, at 80 columns");
	disp_resize(160, 24);
	tap_ok(shows(&t, "PROTECT") && shows(&t, "none"),
	       "and, where there is room, its protection (none)");
	disp_resize(80, 24);
	keys(&t, "\n");

	/* Matrix viewer on row 1 of the 4x5 uint8 images: 80..156 step 4. */
	keys(&t, "A\n");
	keys(&t, "]");
	tap_ok(shows(&t, "row 1 of 3") && shows(&t, " 80") && shows(&t, "156"),
	       "the matrix viewer shows row 1's values");
	tap_ok(shows(&t, "mean"), "with per-column statistics");
	tap_ok(shows(&t, "label: 8") && shows(&t, "│ row 1"),
	       "and the row's label in a panel beside the grid");
	disp_resize(50, 24);
	tap_ok(!has(&t, "label: 8") && shows(&t, "156"), "a narrow screen leaves the panel out");
	disp_resize(80, 24);
	keys(&t, "i");
	/* 80..156 of 255: the middle shades, two columns a pixel. */
	tap_ok(!has(&t, "156") && shows(&t, "++") && shows(&t, "--"),
	       "i switches to the grey-scale preview");
	keys(&t, "#");
	keys(&t, "99\n");
	tap_ok(shows(&t, "the version has 3 rows"), "going to a row past the end is refused");
	keys(&t, "\x1b\x1b");

	/* Edits go to the bucket. */
	keys(&t, "t");
	tui_key(&t, DISP_CTRL('u'));
	keys(&t, "golden curated\n");
	tap_ok(access(meta, F_OK) == 0, "editing tags writes the metadata object");
	FILE *fp = fopen(meta, "r");
	char buf[512] = "";
	if (fp) {
		size_t n = fread(buf, 1, sizeof buf - 1, fp);
		buf[n] = '\0';
		fclose(fp);
	}
	tap_ok(strstr(buf, "\"golden\"") && strstr(buf, "\"curated\""), "with the new tags");
	tap_ok(shows(&t, "curated, golden"), "and the details show them");
	tap_ok(shows(&t, "1 of 1 shards sound"), "the edit kept the verification");

	keys(&t, "D");
	keys(&t, "tiny@v2\n");
	tap_ok(shows(&t, "not deleted: 'tiny@v2' is not 'tiny@v1'"),
	       "delete refuses a wrong typed name");
	tap_ok(shows(&t, "lineage"), "and the version stays");
	keys(&t, "D");
	keys(&t, "\x1b");
	tap_ok(shows(&t, "lineage"), "Esc drops the delete prompt");

	/* The matrix viewer on a ragged attribute and on float16 scalars. */
	keys(&t, ":");
	keys(&t, "search seq\n\n");
	keys(&t, "A\n");
	keys(&t, "]]");
	tap_ok(shows(&t, "tokens  int32") && shows(&t, "row 2 of 3") && shows(&t, "202"),
	       "a ragged row shows its items (row 2: 200, 201, 202)");
	tap_ok(shows(&t, "note: \xe6\x97\xa5\xe6\x9c\xac 000") && shows(&t, "0…"),
	       "the row's text beside it, cut with an ellipsis");
	keys(&t, "\x1b");
	keys(&t, "j\n");
	tap_ok(shows(&t, "score  float16") && shows(&t, "rows 0-2 of 3") && shows(&t, "-2") &&
		       shows(&t, "0.5"),
	       "float16 scalars show as numbers, a page of rows at once");
	keys(&t, "\x1b\x1b\x1b\x1b");

	/* Help and the command line. */
	keys(&t, "?");
	tap_ok(shows(&t, "this help, generated from the key table"), "? shows the key table");
	keys(&t, "/");
	keys(&t, "redraw\n");
	tap_ok(shows(&t, "^L       redraw the screen"), "/ in the help finds a binding further down");
	keys(&t, "\x1b");
	keys(&t, ":");
	keys(&t, "search gold\n");
	tap_ok(shows(&t, "search: gold") && shows(&t, "tiny"), ":search finds the edited tag");
	keys(&t, ":");
	keys(&t, "history\n");
	tap_ok(shows(&t, "job history") && shows(&t, "verify") && shows(&t, "tags"),
	       ":history lists the jobs recorded in the catalog");
	keys(&t, "/verify\n\n");
	tap_ok(shows(&t, "tiny@v1") && shows(&t, "ok"),
	       "with the version's result (a line per damaged shard, none here)");
	keys(&t, "\x1b\x1b");
	keys(&t, ":");
	keys(&t, "frobnicate\n");
	tap_ok(shows(&t, "unknown command 'frobnicate'"), "an unknown command is reported");

	/* A str attribute in the matrix viewer: the row's text, each line cut at the width. */
	keys(&t, ":");
	keys(&t, "search seq\n\n");
	keys(&t, "A\n");
	keys(&t, "\x1b");
	keys(&t, "jj\n");
	tap_ok(shows(&t, "note  str (UTF-8 text)  row 0 of 3") && shows(&t, "first line") &&
		       shows(&t, "second line"), "a str row shows its text, a line per line");
	keys(&t, "]");
	keys(&t, "]");
	tap_ok(shows(&t, "row 2 of 3") && shows(&t, "\xe6\x97\xa5\xe6\x9c\xac 000") &&
		       shows(&t, "0…"), "a line wider than the screen is cut with an ellipsis");
	keys(&t, "\x1b\x1b\x1b\x1b");

	/* Copy to another store: the version and its edited metadata arrive. */
	keys(&t, "\x1b");
	tap_ok(shows(&t, "lineage"), "back on the version");
	char dst[400], copied[500];
	snprintf(dst, sizeof dst, "file://%s/copy", root);
	snprintf(copied, sizeof copied, "%s/copy/datasets/tiny/meta/v1.json", root);
	keys(&t, "p");
	keys(&t, dst);
	keys(&t, "\n");
	tap_ok(shows(&t, "is no remote: copy there"), "p to a URL asks first");
	keys(&t, "yes\n");
	/* Wide enough for the whole result line, URLs and all. */
	disp_resize(240, 24);
	tap_ok(shows(&t, "1 shard(s) sent"), "p copies the version to another store");
	disp_resize(80, 24);
	tap_ok(access(copied, F_OK) == 0, "with its metadata object");

	/* gc: an old orphan shard is previewed, then deleted once confirmed. */
	char orphan[500];
	snprintf(orphan, sizeof orphan, "%s/store/datasets/tiny/shards/%064d.h5", root, 7);
	FILE *of = fopen(orphan, "w");
	if (of) {
		fputs("orphan", of);
		fclose(of);
	}
	struct utimbuf old = { time(NULL) - 7200, time(NULL) - 7200 };
	utime(orphan, &old);
	keys(&t, "\x1b\x1b");
	/* The tag the filter matched is gone since the edit: clear it. */
	keys(&t, "f");
	tui_key(&t, DISP_CTRL('u'));
	keys(&t, "\n");
	keys(&t, "/tiny\n");
	keys(&t, "X");
	tap_ok(shows(&t, "gc preview: 1 objects, 6 B would be deleted") &&
		       shows(&t, "datasets/tiny/shards/00000000") &&
		       shows(&t, "type 'delete'"),
	       "X previews what gc would delete and asks");
	keys(&t, "no\n");
	tap_ok(access(orphan, F_OK) == 0, "anything but 'delete' keeps it");
	keys(&t, "\x1b");
	keys(&t, "X");
	keys(&t, "delete\n");
	tap_ok(access(orphan, F_OK) != 0, "'delete' deletes it");
	keys(&t, "\x1b");

	/* Cancel: c in the jobs list stops the job under the cursor. */
	struct tui_job *j = tui_job_start(&t, "test", "endless", "bytes", endless_run, NULL, NULL,
					  NULL);
	tui_key(&t, 'J');
	tui_draw(&t);
	char *scr = disp_dump();
	tap_ok(strstr(scr, "running") && strstr(scr, "endless"), "J lists the running job");
	free(scr);
	tui_key(&t, 'c');
	keys(&t, "");
	tap_ok(j && atomic_load(&j->state) == JOB_CANCELED && shows(&t, "canceled"),
	       "c cancels it and the list says so");
	keys(&t, "\x1b");

	/* Sizes. */
	disp_resize(200, 60);
	tap_ok(max_line_width(&t) <= 200 && shows(&t, "q quit"), "drawn at 200x60");
	disp_resize(80, 24);
	tap_ok(max_line_width(&t) <= 80 && shows(&t, "q quit"), "drawn at 80x24 again");
	disp_resize(20, 5);
	tap_ok(max_line_width(&t) <= 20, "a tiny terminal does not overflow");
	disp_resize(80, 24);

	keys(&t, "q");
	tap_ok(t.quit, "q quits");
	tui_free(&t);

	/* Read-only: the keys that write are gone from footer and table. */
	TAP_CALL(tui_init(&t, &ctx, cat, 1, &err), &err, "read-only mode starts");
	keys(&t, "\n\n\n\n");
	tap_ok(shows(&t, "read-only") && !has(&t, "t tags"), "no write keys in read-only mode");
	keys(&t, "D");
	tap_ok(!t.prompt.active && shows(&t, "read-only: D (delete) would change a store"),
	       "D in read-only mode says why it does nothing");
	tui_free(&t);
	disp_close();

	tap_rm_tree(root);
	return tap_done();
}
