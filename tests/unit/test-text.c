/* test-text.c — str attributes: UTF-8 text round trips through the C API, and a row that is not UTF-8 is refused naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"
#include "tap-store.h"

static void utf8_cases(void)
{
	static const struct {
		const char *s;
		size_t len, bad; /* bad: (size_t)-1 when valid */
		const char *what;
	} c[] = {
		{ "", 0, (size_t)-1, "empty" },
		{ "plain ascii", 11, (size_t)-1, "ASCII" },
		{ "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89", 18, (size_t)-1,
		  "2-, 3- and 4-byte characters" },
		{ "ab\x80", 3, 2, "a lone continuation byte" },
		{ "\xc0\x80", 2, 0, "an overlong NUL" },
		{ "x\xe0\x80\xaf", 4, 1, "an overlong 3-byte form" },
		{ "\xed\xa0\x80", 3, 0, "a surrogate" },
		{ "\xf4\x90\x80\x80", 4, 0, "past U+10FFFF" },
		{ "ok\xe6\x97", 4, 2, "a character cut at the end" },
		{ "a\0b", 3, 1, "a NUL byte" },
		{ "\xff", 1, 0, "0xff" },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		size_t bad = (size_t)-1;
		int rc = mt_utf8_check(c[i].s, c[i].len, &bad);
		tap_ok(c[i].bad == (size_t)-1 ? rc == 0 : rc == MT_EINVAL && bad == c[i].bad,
		       "mt_utf8_check: %s %s (rc %d, bad at %zu)", c[i].what,
		       c[i].bad == (size_t)-1 ? "passes" : "fails at its first bad byte", rc, bad);
	}
}

static void attr_cases(mt_store *s)
{
	mt_error err = { 0 };
	mt_writer *w = NULL;
	mt_attr fixed = { "t", MT_STR, 0, { 0 }, 0 };
	int rc = mt_writer_open(s, "badattr", &fixed, 1, NULL, &w, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "attribute t") && strstr(err.message, "ragged"),
	       "a str attribute that is not ragged is refused: %s", err.message);
	mt_writer_close(w);
	w = NULL;
	mt_attr shaped = { "t", MT_STR, 1, { 4 }, 1 };
	rc = mt_writer_open(s, "badattr", &shaped, 1, NULL, &w, &err);
	tap_ok(rc == MT_EINVAL, "a str attribute with an item shape is refused: %s", err.message);
	mt_writer_close(w);
	tap_ok(!strcmp(mt_dtype_name(MT_STR), "str") && mt_dtype_parse("str") == MT_STR &&
	       mt_dtype_size(MT_STR) == 1, "dtype str: its name, parsed back, 1 byte an item");
}

#define NROWS 7
#define LONG_BYTES 300000

/* Rows with empty strings, multibyte characters and one far longer than a chunk. */
static char *make_rows(uint64_t *lens, const char **rows, char *longrow)
{
	for (size_t i = 0; i < LONG_BYTES; i += 3)
		memcpy(longrow + i, i % 6 ? "\xe6\x97\xa5" : "ab\n", 3); /* 日 and ASCII with newlines */
	longrow[LONG_BYTES] = 0;
	static const char *fixed[NROWS] = { "hello", "", "h\xc3\xa9llo w\xc3\xb6rld",
					    NULL, "\xf0\x9f\x8e\x89 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
					    "", "tab\tand \"quotes\" \\ back" };
	size_t total = 0;
	for (int i = 0; i < NROWS; i++) {
		rows[i] = fixed[i] ? fixed[i] : longrow;
		lens[i] = strlen(rows[i]);
		total += lens[i];
	}
	char *buf = malloc(total + 1), *p = buf;
	for (int i = 0; i < NROWS; i++) {
		memcpy(p, rows[i], lens[i]);
		p += lens[i];
	}
	return buf;
}

static void check_read(mt_store *s, const char **rows, const uint64_t *lens)
{
	mt_error err = { 0 };
	mt_reader *r = NULL;
	if (!TAP_CALL(mt_reader_open(s, "text", NULL, &r, &err), &err, "open the text version"))
		return;
	const mt_attr *a = mt_reader_attr(r, 1);
	tap_ok(a->dtype == MT_STR && a->ragged && a->rank == 0, "the attribute reads back as str");
	tap_ok(strstr(mt_reader_manifest(r), "\"dtype\":\"str\"") != NULL,
	       "the manifest names the dtype str");
	char **got = NULL;
	int same = 1;
	if (TAP_CALL(mt_reader_read_str(r, 1, 0, NROWS, &got, &err), &err, "read all rows as C strings")) {
		for (int i = 0; i < NROWS; i++)
			same &= strlen(got[i]) == lens[i] && !memcmp(got[i], rows[i], lens[i]);
		tap_ok(same, "every row's text is back, empty, multibyte and %d-byte rows included",
		       LONG_BYTES);
		mt_strv_free(got, NROWS);
	}
	if (TAP_CALL(mt_reader_read_str(r, 1, 3, 5, &got, &err), &err, "read rows 3..4")) {
		tap_ok(!strcmp(got[0], rows[3]) && !strcmp(got[1], rows[4]),
		       "a range starting at the long row reads back");
		mt_strv_free(got, 2);
	}
	uint64_t l[NROWS], total = 0;
	int rc = mt_reader_ragged_lengths(r, 1, 0, NROWS, l, &total, &err);
	same = rc == 0;
	for (int i = 0; same && i < NROWS; i++)
		same &= l[i] == lens[i];
	tap_ok(same, "ragged lengths are the rows' bytes");
	char *bytes = malloc(total + 1);
	rc = mt_reader_read(r, 1, 0, NROWS, bytes, total, &err);
	size_t off = 0;
	for (int i = 0; !rc && i < NROWS; off += lens[i++])
		rc = memcmp(bytes + off, rows[i], lens[i]) != 0;
	tap_ok(rc == 0, "mt_reader_read gives the text back to back");
	free(bytes);
	rc = mt_reader_read_str(r, 0, 0, 1, &got, &err);
	tap_ok(rc == MT_EINVAL && got == NULL, "mt_reader_read_str of an int32 attribute: %s",
	       err.message);
	mt_reader_close(r);
}

static void round_trip(mt_store *s)
{
	mt_error err = { 0 };
	mt_attr attrs[2] = { { "id", MT_INT32, 0, { 0 }, 0 }, { "text", MT_STR, 0, { 0 }, 1 } };
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.chunk_bytes = 4096; /* the long row spans many chunks */
	o.shard_rows = 3;
	mt_writer *w = NULL;
	if (!TAP_CALL(mt_writer_open(s, "text", attrs, 2, &o, &w, &err), &err, "open a writer"))
		return;
	uint64_t lens[NROWS];
	const char *rows[NROWS];
	char *longrow = malloc(LONG_BYTES + 1);
	char *buf = make_rows(lens, rows, longrow);
	int32_t ids[NROWS] = { 0, 1, 2, 3, 4, 5, 6 };
	const void *data[2] = { ids, buf };
	const uint64_t *lp[2] = { NULL, lens };
	TAP_CALL(mt_writer_append(w, NROWS, data, lp, &err), &err, "append %d rows of text", NROWS);
	/* A batch whose row 1 is not UTF-8 adds nothing, and says which row. */
	uint64_t blens[3] = { 1, 2, 1 };
	const void *bdata[2] = { ids, "a\xc3(b" };
	const uint64_t *blp[2] = { NULL, blens };
	int rc = mt_writer_append(w, 3, bdata, blp, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "attribute text") &&
	       strstr(err.message, "row 1 "), "invalid UTF-8 in row 1 is refused: %s", err.message);
	char version[64];
	TAP_CALL(mt_writer_commit(w, version, sizeof version, &err), &err, "commit");
	mt_writer_close(w);
	check_read(s, rows, lens);
	free(buf);
	free(longrow);
}

/* A writer whose only append was refused commits nothing; a stream refuses the same row. */
static void refused(mt_store *s)
{
	mt_error err = { 0 };
	mt_attr a = { "line", MT_STR, 0, { 0 }, 1 };
	mt_writer *w = NULL;
	uint64_t lens[2] = { 2, 1 };
	const void *data[1] = { "ok\xfe" };
	const uint64_t *lp[1] = { lens };
	if (!TAP_CALL(mt_writer_open(s, "refused", &a, 1, NULL, &w, &err), &err, "open a writer"))
		return;
	int rc = mt_writer_append(w, 2, data, lp, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "row 1 "), "row 1 is named: %s", err.message);
	mt_writer_close(w);
	mt_reader *r = NULL;
	rc = mt_reader_open(s, "refused", NULL, &r, &err);
	tap_ok(rc == MT_ENOTFOUND, "nothing was committed (rc %d)", rc);
	mt_reader_close(r);
	mt_stream *st = NULL;
	if (!TAP_CALL(mt_stream_open(s, "refused", &a, 1, NULL, &st, &err), &err, "open a stream"))
		return;
	rc = mt_stream_append_ragged(st, 2, data, lp, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "attribute line") && mt_stream_pending(st) == 0,
	       "a stream refuses it too, keeping no row: %s", err.message);
	mt_stream_close(st);
}

int main(void)
{
	char root[256];
	mt_store *s;
	if (tap_scratch_store("text", root, sizeof root, &s))
		return 1;
	utf8_cases();
	attr_cases(s);
	round_trip(s);
	refused(s);
	mt_store_close(s);
	tap_rm_tree(root);
	return tap_done();
}
