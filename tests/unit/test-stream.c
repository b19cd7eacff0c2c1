/* test-stream.c — mt_stream: commits by rows, by time (poll), on demand; rows kept across a failed commit; two streams into one dataset lose nothing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"

static mt_store *store;
static const mt_attr attrs[] = {
	{ "x", MT_FLOAT32, 1, { 2 }, 0 },
	{ "y", MT_INT64, 0, { 0 }, 0 },
};

/* Rows first..first+n-1: y = i, x = (i, -i). */
static int push(mt_stream *st, int64_t first, uint64_t n, mt_error *err)
{
	float *x = malloc(n * 2 * sizeof *x + 8);
	int64_t *y = malloc(n * sizeof *y + 8);
	for (uint64_t i = 0; i < n; i++) {
		y[i] = first + (int64_t)i;
		x[2 * i] = (float)y[i];
		x[2 * i + 1] = -(float)y[i];
	}
	const void *data[2] = { x, y };
	int rc = mt_stream_append(st, n, data, err);
	free(x);
	free(y);
	return rc;
}

static int versions(const char *dataset)
{
	char **v;
	size_t n;
	mt_error err = { 0 };
	if (mt_store_versions(store, dataset, &v, &n, &err))
		return 0;
	mt_strv_free(v, n);
	return (int)n;
}

/* The latest version's y column, malloc'ed; *n rows. */
static int64_t *latest_y(const char *dataset, uint64_t *n)
{
	mt_reader *r;
	mt_error err = { 0 };
	*n = 0;
	if (mt_reader_open(store, dataset, NULL, &r, &err))
		return NULL;
	*n = mt_reader_info(r)->rows;
	int64_t *y = malloc(*n * sizeof *y + 8);
	if (mt_reader_read(r, 1, 0, *n, y, *n * sizeof *y, &err)) {
		free(y);
		y = NULL;
	}
	mt_reader_close(r);
	return y;
}

static int counted;
static void on_commit(void *ud, const char *version, uint64_t rows)
{
	counted += (int)rows;
}

static void test_rows_and_time(void)
{
	mt_error err = { 0 };
	mt_stream_opts o;
	mt_stream_opts_init(&o);
	o.commit_rows = 100;
	o.commit_ms = 1500;
	o.committed = on_commit;
	mt_stream *st;
	TAP_CALL(mt_stream_open(store, "s", attrs, 2, &o, &st, &err), &err, "open a stream");
	for (int i = 0; i < 25; i++)
		push(st, i * 10, 10, &err);
	tap_ok(versions("s") == 2 && mt_stream_pending(st) == 50,
	       "250 rows by 100: two versions, 50 waiting (%d versions)", versions("s"));
	uint64_t wait = 0;
	TAP_CALL(mt_stream_poll(st, &wait, &err), &err, "poll before the time is up");
	tap_ok(wait > 0 && wait <= 1500 && versions("s") == 2, "nothing due yet, %llu ms to wait",
	       (unsigned long long)wait);
	usleep(1600 * 1000);
	TAP_CALL(mt_stream_poll(st, &wait, &err), &err, "poll after commit_ms");
	tap_ok(versions("s") == 3 && !mt_stream_pending(st) && wait == UINT64_MAX,
	       "the waiting rows are committed by time");
	push(st, 250, 5, &err);
	char v[64];
	TAP_CALL(mt_stream_commit(st, v, sizeof v, &err), &err, "commit on demand");
	tap_ok(!strcmp(v, "v4") && counted == 255, "v4, 255 rows reported (%s, %d)", v, counted);
	TAP_CALL(mt_stream_commit(st, v, sizeof v, &err), &err, "commit with nothing waiting");
	tap_ok(!v[0] && versions("s") == 4, "makes no version");
	push(st, 255, 3, &err);
	mt_stream_close(st); /* the 3 rows are dropped */
	uint64_t n;
	int64_t *y = latest_y("s", &n);
	int inorder = y && n == 255;
	for (uint64_t i = 0; inorder && i < n; i++)
		inorder = y[i] == (int64_t)i;
	tap_ok(inorder, "the latest holds rows 0..254 in order, nothing of the closed stream's rest");
	free(y);
}

static void test_refusals(void)
{
	mt_error err = { 0 };
	mt_stream *st = NULL;
	const mt_attr ragged[] = { { "t", MT_INT32, 0, { 0 }, 1 } };
	tap_ok(mt_stream_open(store, "r", ragged, 1, NULL, &st, &err) == MT_EUNSUPPORTED,
	       "a ragged attribute is refused: %s", err.message);
	const mt_attr other[] = { { "y", MT_INT32, 0, { 0 }, 0 } };
	TAP_CALL(mt_stream_open(store, "s", other, 1, NULL, &st, &err), &err, "open with other attributes");
	int32_t y = 1;
	const void *data[1] = { &y };
	mt_stream_append(st, 1, data, &err);
	tap_ok(mt_stream_commit(st, NULL, 0, &err) != 0 && mt_stream_pending(st) == 1,
	       "committing onto a dataset of other attributes fails, the row still waits: %s",
	       err.message);
	mt_stream_close(st);
}

static void *feeder(void *arg)
{
	int64_t first = (int64_t)(intptr_t)arg;
	mt_error err = { 0 };
	mt_stream_opts o;
	mt_stream_opts_init(&o);
	o.commit_rows = 40;
	mt_stream *st;
	if (mt_stream_open(store, "both", attrs, 2, &o, &st, &err))
		return (void *)1;
	int rc = 0;
	for (int i = 0; !rc && i < 30; i++)
		rc = push(st, first + i * 10, 10, &err);
	if (!rc)
		rc = mt_stream_commit(st, NULL, 0, &err);
	if (rc)
		fprintf(stderr, "# feeder %lld: %s\n", (long long)first, err.message);
	mt_stream_close(st);
	return (void *)(intptr_t)(rc != 0);
}

static void test_two_streams(void)
{
	pthread_t t[2];
	pthread_create(&t[0], NULL, feeder, (void *)(intptr_t)0);
	pthread_create(&t[1], NULL, feeder, (void *)(intptr_t)100000);
	void *r0, *r1;
	pthread_join(t[0], &r0);
	pthread_join(t[1], &r1);
	tap_ok(!r0 && !r1, "two streams into one empty dataset at once both finish");
	uint64_t n;
	int64_t *y = latest_y("both", &n);
	int64_t next[2] = { 0, 100000 };
	int ok = y && n == 600;
	for (uint64_t i = 0; ok && i < n; i++) {
		int k = y[i] >= 100000;
		ok = y[i] == next[k]++;
	}
	tap_ok(ok, "the latest holds all 600 rows, each stream's in order (%llu rows)",
	       (unsigned long long)n);
	free(y);
}

int main(void)
{
	char root[] = "/tmp/mt-test-stream.XXXXXX";
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
	test_rows_and_time();
	test_refusals();
	test_two_streams();
	mt_store_close(store);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd))
		tap_diag("could not remove %s", root);
	return tap_done();
}
