/* test-compact.c — mt_compact: a ragged and a fixed attribute come back row for row, full shards are reused, later appends are carried over, a compact version is left alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"

static mt_store *store;
/* y int64; t: a ragged row of int16 tokens, row i holding i % 5 of them. */
static const mt_attr attrs[] = {
	{ "y", MT_INT64, 0, { 0 }, 0 },
	{ "t", MT_INT16, 0, { 0 }, 1 },
};

/* One version appended with rows first..first+n-1, shards of shard_rows rows. */
static int append(const char *ds, int64_t first, uint64_t n, uint64_t shard_rows)
{
	int64_t *y = malloc(n * sizeof *y + 8);
	uint64_t *len = malloc(n * sizeof *len + 8), items = 0;
	int16_t *t = malloc(n * 4 * sizeof *t + 8);
	for (uint64_t i = 0; i < n; i++) {
		y[i] = first + (int64_t)i;
		len[i] = (uint64_t)y[i] % 5;
		for (uint64_t j = 0; j < len[i]; j++)
			t[items++] = (int16_t)(y[i] * 7 + (int64_t)j);
	}
	const void *data[2] = { y, t };
	const uint64_t *lengths[2] = { NULL, len };
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.append = 1;
	o.shard_rows = shard_rows;
	mt_writer *w = NULL;
	mt_error err = { 0 };
	int rc = mt_writer_open(store, ds, attrs, 2, &o, &w, &err);
	if (rc == MT_ENOTFOUND) { /* the first version */
		o.append = 0;
		rc = mt_writer_open(store, ds, attrs, 2, &o, &w, &err);
	}
	if (!rc)
		rc = mt_writer_append(w, n, data, lengths, &err);
	if (!rc)
		rc = mt_writer_commit(w, NULL, 0, &err);
	if (rc)
		tap_diag("append %s: %s", ds, err.message);
	mt_writer_close(w);
	free(y);
	free(len);
	free(t);
	return rc;
}

/* Every row of ds@version is row i of the generator, i = 0..rows-1; *nshards. */
static int holds(const char *ds, const char *version, uint64_t rows, uint64_t *nshards)
{
	mt_reader *r;
	mt_error err = { 0 };
	if (mt_reader_open(store, ds, version, &r, &err))
		return 0;
	const mt_version_info *vi = mt_reader_info(r);
	*nshards = vi->nshards;
	int ok = vi->rows == rows;
	int64_t *y = malloc(rows * sizeof *y + 8);
	uint64_t *len = malloc(rows * sizeof *len + 8), total = 0;
	ok = ok && !mt_reader_read(r, 0, 0, rows, y, rows * sizeof *y, &err) &&
	     !mt_reader_ragged_lengths(r, 1, 0, rows, len, &total, &err);
	int16_t *t = malloc(total * sizeof *t + 8);
	ok = ok && !mt_reader_read(r, 1, 0, rows, t, total * sizeof *t, &err);
	for (uint64_t i = 0, k = 0; ok && i < rows; i++) {
		ok = y[i] == (int64_t)i && len[i] == i % 5;
		for (uint64_t j = 0; ok && j < len[i]; j++)
			ok = t[k++] == (int16_t)(i * 7 + j);
	}
	if (!ok && err.message[0])
		tap_diag("%s@%s: %s", ds, version ? version : "latest", err.message);
	free(y);
	free(len);
	free(t);
	mt_reader_close(r);
	return ok;
}

static void test_repack(void)
{
	int ok = 1;
	for (int v = 0; v < 6 && ok; v++)
		ok = append("rp", v * 50, 50, 0) == 0;
	tap_ok(ok, "six versions of 50 rows, one shard each");
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 120;
	mt_compact_stats st;
	char v[64];
	mt_error err = { 0 };
	int rc = mt_compact(store, "rp", NULL, &o, &st, v, sizeof v, &err);
	uint64_t n = 0;
	tap_ok(rc == 0 && !strcmp(v, "v7") && !strcmp(st.base, "v6") && st.shards_before == 6 &&
	       st.shards_after == 3 && st.shards_reused == 0 && st.rows == 300 && !st.unchanged,
	       "compact rp@v6 into rp@v7: 6 shards became 3 of 120 rows (%s)", err.message);
	tap_ok(holds("rp", "v7", 300, &n) && n == 3, "every ragged and fixed row as it was, in order");
	ok = append("rp", 300, 30, 0) == 0;
	rc = mt_compact(store, "rp", NULL, &o, &st, v, sizeof v, &err);
	tap_ok(ok && rc == 0 && st.shards_reused == 2 && st.shards_after == 3 &&
	       holds("rp", v, 330, &n), "compacted again: its two full shards reused, 90 rows repacked");
	rc = mt_compact(store, "rp", NULL, &o, &st, v, sizeof v, &err);
	tap_ok(rc == 0 && st.unchanged && !strcmp(v, "v9"), "a compact version is left alone (%s)", v);
	mt_reader *r = NULL;
	rc = mt_reader_open(store, "rp", "v9", &r, &err);
	tap_ok(rc == 0 && mt_reader_nsources(r) == 1 && !strcmp(mt_reader_source(r, 0)->version, "v8") &&
	       !strcmp(mt_reader_info(r)->parent, "v8"), "lineage: parent and source are v8");
	mt_reader_close(r);
}

static void test_tail(void)
{
	int ok = 1;
	for (int v = 0; v < 5 && ok; v++)
		ok = append("tl", v * 40, 40, 0) == 0;
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 1000;
	mt_compact_stats st;
	char v[64];
	mt_error err = { 0 };
	int rc = mt_compact(store, "tl", "v2", &o, &st, v, sizeof v, &err);
	uint64_t n = 0;
	tap_ok(ok && rc == 0 && st.tail_rows == 120 && st.rows == 200 && st.shards_after == 4,
	       "compact tl@v2 while v5 is the latest: v3..v5's 120 rows carried over (%s)",
	       err.message);
	tap_ok(holds("tl", v, 200, &n) && n == 4, "the new version holds v5's rows: one shard of "
	       "v2's 80, then v3..v5's three");
	rc = mt_compact(store, "tl", "v4", &o, &st, v, sizeof v, &err);
	tap_ok(rc == MT_ESTATE && strstr(err.message, "does not continue"),
	       "compacting v4, which the latest no longer continues, is refused: %s", err.message);
	rc = mt_compact(store, "nope", NULL, NULL, NULL, v, sizeof v, &err);
	tap_ok(rc == MT_ENOTFOUND, "a missing dataset is MT_ENOTFOUND");
}

int main(void)
{
	char root[] = "/tmp/mt-test-compact.XXXXXX";
	if (!mkdtemp(root))
		return 1;
	char url[300];
	snprintf(url, sizeof url, "file://%s/store", root);
	mt_store_opts so;
	mt_store_opts_init(&so);
	so.create = 1;
	mt_error err = { 0 };
	if (mt_store_open_opts(url, &so, &store, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	test_repack();
	test_tail();
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
