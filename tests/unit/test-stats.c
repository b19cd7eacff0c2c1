/* test-stats.c — statistics of whole attributes against known values: constant data, NaN and Inf, ragged items, integer labels, windows smaller than the data, a cancel mid-way, the JSON round trip. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"

static char root[256];
static mt_store *store;

/* Commit one version of dataset ds with the given attributes and rows,
 * several shards and small chunks, so the windows cross both. */
static int put(const char *ds, const mt_attr *attrs, size_t n, uint64_t rows,
	       const void *const *data, const uint64_t *const *lens, mt_error *err)
{
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = rows / 3 + 1;
	o.chunk_bytes = 4096;
	mt_writer *w;
	int rc = mt_writer_open(store, ds, attrs, n, &o, &w, err);
	if (rc)
		return rc;
	rc = mt_writer_append(w, rows, data, lens, err);
	if (!rc)
		rc = mt_writer_commit(w, NULL, 0, err);
	mt_writer_close(w);
	return rc;
}

static mt_stats *stats_of(const char *ds, const char *attr, uint64_t window, mt_error *err)
{
	mt_reader *r;
	mt_stats *s = NULL;
	if (mt_reader_open(store, ds, NULL, &r, err))
		return NULL;
	mt_stats_opts o;
	mt_stats_opts_init(&o);
	o.window_bytes = window;
	int i = mt_reader_attr_index(r, attr);
	if (i >= 0)
		mt_stats_compute(r, (size_t)i, &o, &s, err);
	mt_reader_close(r);
	return s;
}

static uint64_t hist_sum(const mt_stats *s)
{
	uint64_t n = 0;
	for (int i = 0; i < s->bins; i++)
		n += s->hist[i];
	return n;
}

static void test_constant(void)
{
	static const mt_attr a[] = { { "c", MT_FLOAT32, 1, { 4 }, 0 } };
	float v[400];
	for (int i = 0; i < 400; i++)
		v[i] = 2.5f;
	const void *d[] = { v };
	mt_error err = { 0 };
	TAP_CALL(put("constant", a, 1, 100, d, NULL, &err), &err, "a constant attribute is stored");
	mt_stats *s = stats_of("constant", "c", 256, &err);
	tap_ok(s != NULL, "its statistics are computed over windows of 256 bytes (%s)", err.message);
	if (!s)
		return;
	tap_ok(s->rows == 100 && s->count == 400 && s->finite == 400, "400 elements in 100 rows");
	tap_ok(s->min == 2.5 && s->max == 2.5 && s->mean == 2.5 && s->std == 0,
	       "min = max = mean = 2.5, std 0 (got std %g)", s->std);
	tap_ok(s->edges[0] == 2.0 && s->edges[s->bins] == 3.0 && s->hist[s->bins / 2] == 400 &&
		       hist_sum(s) == 400,
	       "the histogram spans 2.0..3.0 as NumPy's does and holds all 400 in its middle bin");
	tap_ok(s->nclasses == -1, "a float attribute has no class balance");
	mt_stats_free(s);
}

static void test_nonfinite(void)
{
	static const mt_attr a[] = { { "f", MT_FLOAT64, 0, { 0 }, 0 } };
	double v[1000];
	for (int i = 0; i < 1000; i++)
		v[i] = i % 100 == 7 ? (double)NAN : i % 250 == 3 ? (double)INFINITY
			: i % 500 == 11 ? -(double)INFINITY : 1e9 + (double)i;
	const void *d[] = { v };
	mt_error err = { 0 };
	TAP_CALL(put("nonfinite", a, 1, 1000, d, NULL, &err), &err, "values with NaN and Inf are stored");
	mt_stats *s = stats_of("nonfinite", "f", 1000, &err);
	tap_ok(s != NULL, "their statistics are computed (%s)", err.message);
	if (!s)
		return;
	/* The expected values, summed here the plain way in long double. */
	long double sum = 0, sq = 0;
	uint64_t n = 0;
	double lo = INFINITY, hi = -INFINITY;
	for (int i = 0; i < 1000; i++)
		if (isfinite(v[i])) {
			sum += v[i];
			n++;
			lo = v[i] < lo ? v[i] : lo;
			hi = v[i] > hi ? v[i] : hi;
		}
	long double mean = sum / n;
	for (int i = 0; i < 1000; i++)
		if (isfinite(v[i]))
			sq += (v[i] - mean) * (v[i] - mean);
	double sd = (double)sqrtl(sq / n);
	tap_ok(s->nan == 10 && s->posinf == 4 && s->neginf == 2 && s->finite == 984 &&
		       s->count == 1000,
	       "10 NaN, 4 +Inf, 2 -Inf counted apart (got %llu %llu %llu)",
	       (unsigned long long)s->nan, (unsigned long long)s->posinf,
	       (unsigned long long)s->neginf);
	tap_ok(s->min == lo && s->max == hi, "min and max of the finite values");
	tap_ok(fabs(s->mean - (double)mean) <= 1e-12 * (double)mean,
	       "the mean of values near 1e9 is exact to 1e-12 (%.17g vs %.17g)", s->mean,
	       (double)mean);
	tap_ok(fabs(s->std - sd) <= 1e-9 * sd, "the std does not cancel (%.17g vs %.17g)", s->std, sd);
	tap_ok(hist_sum(s) == 984, "the histogram holds the finite values only");
	mt_stats_free(s);
}

static void test_ragged(void)
{
	static const mt_attr a[] = { { "tok", MT_INT32, 0, { 0 }, 1 } };
	uint64_t lens[300], items = 0;
	for (int i = 0; i < 300; i++)
		items += lens[i] = (uint64_t)(i % 7);
	int32_t *v = malloc(items * sizeof *v);
	double sum = 0;
	for (uint64_t i = 0; i < items; i++)
		sum += v[i] = (int32_t)(i % 11) - 5;
	const void *d[] = { v };
	const uint64_t *l[] = { lens };
	mt_error err = { 0 };
	TAP_CALL(put("ragged", a, 1, 300, d, l, &err), &err, "a ragged attribute is stored");
	mt_stats *s = stats_of("ragged", "tok", 64, &err);
	tap_ok(s != NULL, "its statistics are computed over windows of 64 bytes (%s)", err.message);
	if (s) {
		tap_ok(s->ragged && s->rows == 300 && s->items == items && s->count == items,
		       "%llu items over 300 rows", (unsigned long long)items);
		tap_ok(s->min == -5 && s->max == 5 && fabs(s->mean - sum / (double)items) < 1e-12,
		       "min -5, max 5, mean over every item");
		tap_ok(hist_sum(s) == items && s->nclasses == -1,
		       "the histogram holds every item; ragged rows have no class balance");
	}
	mt_stats_free(s);
	free(v);
}

static void test_labels(void)
{
	static const mt_attr a[] = { { "label", MT_INT64, 0, { 0 }, 0 },
				     { "id", MT_UINT16, 0, { 0 }, 0 } };
	int64_t lab[2000];
	uint16_t id[2000];
	for (int i = 0; i < 2000; i++) {
		lab[i] = i % 10 == 9 ? -1 : (i * 7) % 3;
		id[i] = (uint16_t)i;
	}
	const void *d[] = { lab, id };
	mt_error err = { 0 };
	TAP_CALL(put("labels", a, 2, 2000, d, NULL, &err), &err, "labels are stored");
	mt_stats *s = stats_of("labels", "label", 1000, &err);
	tap_ok(s != NULL, "their statistics are computed (%s)", err.message);
	if (s) {
		uint64_t want[4] = { 0 };
		for (int i = 0; i < 2000; i++)
			want[lab[i] + 1]++;
		int good = s->nclasses == 4;
		for (int k = 0; good && k < 4; k++)
			good = s->classes[k].value == k - 1 && s->classes[k].count == want[k];
		tap_ok(good, "the class balance counts -1, 0, 1 and 2 in value order");
	}
	mt_stats_free(s);
	s = stats_of("labels", "id", 0, &err);
	tap_ok(s && s->nclasses == -1 && s->min == 0 && s->max == 1999,
	       "2000 distinct values are too many for a class balance");
	mt_stats_free(s);
}

static int cancel_at;
static int cancel_progress(void *ud, uint64_t done, uint64_t total)
{
	int *calls = ud;
	return ++*calls >= cancel_at;
}

static void test_cancel_and_json(void)
{
	mt_reader *r;
	mt_error err = { 0 };
	TAP_CALL(mt_reader_open(store, "nonfinite", NULL, &r, &err), &err, "the version opens");
	mt_stats_opts o;
	mt_stats_opts_init(&o);
	o.window_bytes = 800;
	int calls = 0;
	cancel_at = 3;
	o.progress = cancel_progress;
	o.progress_ud = &calls;
	mt_stats *s = (mt_stats *)&calls;
	int rc = mt_stats_compute(r, 0, &o, &s, &err);
	tap_ok(rc == MT_ECANCELED && s == NULL && calls == 3,
	       "a progress callback answering nonzero cancels mid-way: MT_ECANCELED, no result (%s)",
	       err.message);
	o.progress = NULL;
	o.bins = 7;
	TAP_CALL(mt_stats_compute(r, 0, &o, &s, &err), &err, "without it the same call completes");
	char *json = NULL;
	mt_stats *back = NULL;
	TAP_CALL(mt_stats_to_json(s, &json, &err), &err, "the result is written as JSON");
	TAP_CALL(mt_stats_from_json(json, &back, &err), &err, "and read back");
	int same = back && back->bins == 7 && back->mean == s->mean && back->std == s->std &&
		   back->nan == s->nan && back->count == s->count &&
		   !memcmp(back->hist, s->hist, 7 * sizeof *s->hist) &&
		   !memcmp(back->edges, s->edges, 8 * sizeof *s->edges) &&
		   !strcmp(back->attr, "f") && back->nclasses == -1;
	tap_ok(same, "every number reads back bit for bit");
	mt_stats_free(back);
	tap_ok(mt_stats_from_json("{\"format\":99}", &back, &err) == MT_EFORMAT,
	       "another format number is refused: %s", err.message);
	o.bins = MT_STATS_MAX_BINS + 1;
	tap_ok(mt_stats_compute(r, 0, &o, &back, &err) == MT_EINVAL, "too many bins: %s",
	       err.message);
	free(json);
	mt_stats_free(s);
	mt_reader_close(r);
}

int main(void)
{
	snprintf(root, sizeof root, "%s/mt-stats.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	mt_error err = { 0 };
	char url[300];
	snprintf(url, sizeof url, "file://%s", root);
	TAP_CALL(mt_store_open(url, &store, &err), &err, "a store in %s", root);
	test_constant();
	test_nonfinite();
	test_ragged();
	test_labels();
	test_cancel_and_json();
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
