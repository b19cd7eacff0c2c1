/* fuzz-records.c — libFuzzer target: ingest's record parsers on any bytes, and the JSON fast path against jansson's tree (ragged attributes too). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The parsers' own file, so the fast path and the tree can be called apart. */
#include "app-records.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const mt_attr attrs[] = {
	{ .name = "x", .dtype = MT_FLOAT32, .rank = 2, .shape = { 2, 3 } },
	{ .name = "y", .dtype = MT_INT64 },
	{ .name = "c", .dtype = MT_BOOL },
	{ .name = "h", .dtype = MT_FLOAT16, .rank = 1, .shape = { 2 } },
	{ .name = "u", .dtype = MT_UINT8 },
};
#define NATTRS (sizeof attrs / sizeof attrs[0])

/* With the first byte's bit 1 set: ragged attributes (a plain sequence, items
 * of (2,)) beside a fixed one. */
static const mt_attr rattrs[] = {
	{ .name = "t", .dtype = MT_INT32, .ragged = 1 },
	{ .name = "y", .dtype = MT_INT64 },
	{ .name = "p", .dtype = MT_FLOAT16, .rank = 1, .shape = { 2 }, .ragged = 1 },
};
#define NRATTRS (sizeof rattrs / sizeof rattrs[0])
_Static_assert(NRATTRS <= NATTRS, "json_line sizes its arrays for NATTRS");

/* The ragged rows the last parse left, copied (the next parse reuses r's buffers). */
static uint8_t *ragged_copy(const struct app_records *r, size_t i, size_t *bytes)
{
	uint64_t items;
	const void *p = app_records_ragged(r, i, &items);
	*bytes = (size_t)items * app_records_row_bytes(r, i);
	uint8_t *c = malloc(*bytes + 1);
	if (c && *bytes)
		memcpy(c, p, *bytes);
	return c;
}

/* Whatever the fast path accepts, the tree accepts too, with the same bytes:
 * the same row of each fixed attribute, the same items of each ragged one.
 * at: the attributes r was made with (n of them, at most NATTRS). */
static void json_line(struct app_records *r, const mt_attr *at, size_t n, const char *line,
		      size_t len)
{
	uint8_t a[NATTRS][64], b[NATTRS][64];
	void *ra[NATTRS], *rb[NATTRS];
	char why[256];
	for (size_t i = 0; i < n; i++) {
		memset(a[i], 0, 64);
		memset(b[i], 0xff, 64);
		ra[i] = a[i];
		rb[i] = b[i];
	}
	if (rec_json_fast(r, line, len, ra) != 0) {
		app_records_json(r, line, len, rb, why, sizeof why);
		return;
	}
	uint8_t *got[NATTRS];
	size_t bytes[NATTRS];
	for (size_t i = 0; i < n; i++)
		got[i] = at[i].ragged ? ragged_copy(r, i, &bytes[i]) : NULL;
	if (rec_json_tree(r, line, len, rb, why, sizeof why) != 0)
		abort();
	for (size_t i = 0; i < n; i++) {
		uint64_t items;
		const void *p = at[i].ragged ? app_records_ragged(r, i, &items) : NULL;
		if (at[i].ragged ? items * app_records_row_bytes(r, i) != bytes[i] ||
					   (bytes[i] && memcmp(p, got[i], bytes[i]))
				 : memcmp(a[i], b[i], app_records_row_bytes(r, i)) != 0)
			abort();
		free(got[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	int csv = data[0] & 1, header = 0, ragged = data[0] & 2;
	struct app_records *r = ragged ? app_records_new(rattrs, NRATTRS)
				       : app_records_new(attrs, NATTRS);
	uint8_t a[NATTRS][64];
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char why[256];
		void *rows[NATTRS];
		for (size_t i = 0; i < NATTRS; i++)
			rows[i] = a[i];
		if (!csv)
			json_line(r, ragged ? rattrs : attrs, ragged ? NRATTRS : NATTRS, p, len);
		else if (!header)
			header = app_records_csv_header(r, p, len, why, sizeof why) == 0;
		else
			app_records_csv(r, p, len, rows, why, sizeof why);
		p += len + 1;
	}
	app_records_free(r);
	return 0;
}
