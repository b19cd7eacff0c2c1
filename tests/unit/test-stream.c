/* test-stream.c — mt_stream: commits by rows, by time (poll), on demand; rows kept across a failed commit; ragged rows (lengths and items) likewise; two streams into one dataset lose nothing; commits in the background; a spool's rows outlive the stream. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "tap.h"

static mt_store *store;
static char store_dir[300]; /* the store's directory */
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

static const mt_attr rattrs[] = {
	{ "tok", MT_INT32, 0, { 0 }, 1 },
	{ "label", MT_INT64, 0, { 0 }, 0 },
};

/* Ragged rows: row k of this call has (first + k) % 4 tokens, token j being
 * 100 * (first + k) + j, label first + k. */
static int push_ragged(mt_stream *st, int64_t first, uint64_t n, mt_error *err)
{
	uint64_t *len = malloc(n * sizeof *len + 8), items = 0;
	int64_t *label = malloc(n * sizeof *label + 8);
	int32_t *tok = malloc(n * 4 * sizeof *tok + 8);
	for (uint64_t k = 0; k < n; k++) {
		int64_t row = first + (int64_t)k;
		label[k] = row;
		len[k] = (uint64_t)(row % 4);
		for (uint64_t j = 0; j < len[k]; j++)
			tok[items++] = (int32_t)(100 * row + (int64_t)j);
	}
	const void *data[2] = { tok, label };
	const uint64_t *lengths[2] = { len, NULL };
	int rc = mt_stream_append_ragged(st, n, data, lengths, err);
	free(len);
	free(label);
	free(tok);
	return rc;
}

/* The latest version of `dataset` holds rows 0..n-1 of push_ragged. */
static int ragged_ok(const char *dataset, uint64_t want)
{
	mt_reader *r;
	mt_error err = { 0 };
	if (mt_reader_open(store, dataset, NULL, &r, &err))
		return 0;
	uint64_t n = mt_reader_info(r)->rows, total = 0;
	uint64_t *len = malloc(n * sizeof *len + 8);
	int ok = n == want && !mt_reader_ragged_lengths(r, 0, 0, n, len, &total, &err);
	int32_t *tok = malloc(total * sizeof *tok + 8);
	ok = ok && !mt_reader_read(r, 0, 0, n, tok, total * sizeof *tok, &err);
	uint64_t at = 0;
	for (uint64_t k = 0; ok && k < n; k++) {
		ok = len[k] == k % 4;
		for (uint64_t j = 0; ok && j < len[k]; j++)
			ok = tok[at++] == (int32_t)(100 * k + j);
	}
	if (!ok)
		tap_diag("%s: %llu rows, %s", dataset, (unsigned long long)n, err.message);
	free(len);
	free(tok);
	mt_reader_close(r);
	return ok;
}

static void test_ragged(void)
{
	mt_error err = { 0 };
	mt_stream_opts o;
	mt_stream_opts_init(&o);
	o.commit_rows = 10;
	mt_stream *st;
	TAP_CALL(mt_stream_open(store, "rag", rattrs, 2, &o, &st, &err), &err,
		 "open a stream with a ragged attribute");
	int32_t one = 7;
	int64_t lab = 0;
	const void *data[2] = { &one, &lab };
	tap_ok(mt_stream_append(st, 1, data, &err) == MT_EINVAL && !mt_stream_pending(st),
	       "mt_stream_append without lengths is refused, no row added: %s", err.message);
	push_ragged(st, 0, 7, &err);
	tap_ok(!versions("rag") && mt_stream_pending(st) == 7, "7 ragged rows wait");
	push_ragged(st, 7, 6, &err);
	tap_ok(versions("rag") == 1 && !mt_stream_pending(st),
	       "6 more: 13 rows by 10 make one version (%d versions)", versions("rag"));
	push_ragged(st, 13, 0, &err);
	push_ragged(st, 13, 4, &err);
	TAP_CALL(mt_stream_commit(st, NULL, 0, &err), &err, "commit the ragged rows");
	tap_ok(ragged_ok("rag", 17), "the latest holds the 17 ragged rows, lengths and tokens");
	mt_stream_close(st);
	TAP_CALL(mt_stream_open(store, "rag0", rattrs, 2, &o, &st, &err), &err, "open rag0");
	push_ragged(st, 0, 1, &err);
	TAP_CALL(mt_stream_commit(st, NULL, 0, &err), &err, "commit a row without tokens");
	tap_ok(ragged_ok("rag0", 1), "a commit whose ragged rows are all empty holds them");
	mt_stream_close(st);

	/* A commit fails (the store's directory is away), then succeeds once it is
	 * back, with the rows that waited through the failure first. */
	char away[400];
	snprintf(away, sizeof away, "%s.away", store_dir);
	mt_store *s2;
	char url[320];
	snprintf(url, sizeof url, "file://%s", store_dir);
	TAP_CALL(mt_store_open(url, &s2, &err), &err, "open the store again");
	TAP_CALL(mt_stream_open(s2, "ragf", rattrs, 2, NULL, &st, &err), &err,
		 "a ragged stream onto ragf");
	push_ragged(st, 0, 5, &err);
	int moved = !rename(store_dir, away);
	FILE *f = fopen(store_dir, "w");
	if (f)
		fclose(f);
	tap_ok(moved && f && mt_stream_commit(st, NULL, 0, &err) != 0 && mt_stream_pending(st) == 5,
	       "its commit fails, the 5 ragged rows still wait: %s", err.message);
	push_ragged(st, 5, 3, &err);
	unlink(store_dir);
	rename(away, store_dir);
	char v[64];
	TAP_CALL(mt_stream_commit(st, v, sizeof v, &err), &err, "the next commit");
	tap_ok(ragged_ok("ragf", 8), "%s holds the 8 rows, the 5 kept across the failure first", v);
	mt_stream_close(st);
	mt_store_close(s2);
}

/* The latest version of `dataset` holds y = 0..want-1 in order. */
static int latest_in_order(const char *dataset, uint64_t want)
{
	uint64_t n;
	int64_t *y = latest_y(dataset, &n);
	int ok = y && n == want;
	for (uint64_t i = 0; ok && i < n; i++)
		ok = y[i] == (int64_t)i;
	free(y);
	return ok;
}

/* Commits on their own thread: in order, and a failed one's rows wait again
 * in front of the newer ones. */
static void test_background(void)
{
	mt_error err = { 0 };
	mt_stream_opts o;
	mt_stream_opts_init(&o);
	o.commit_rows = 100;
	o.background = 1;
	o.committed = on_commit;
	counted = 0;
	mt_stream *st;
	TAP_CALL(mt_stream_open(store, "bg", attrs, 2, &o, &st, &err), &err,
		 "open a stream committing in the background");
	int rc = 0;
	for (int i = 0; !rc && i < 50; i++)
		rc = push(st, i * 10, 10, &err);
	TAP_CALL(rc || mt_stream_commit(st, NULL, 0, &err), &err, "500 rows, then commit");
	tap_ok(versions("bg") == 5 && counted == 500 && latest_in_order("bg", 500),
	       "five versions of 100 rows, all 500 in order (%d versions, %d reported)",
	       versions("bg"), counted);

	mt_stream_close(st);

	/* A first commit that fails (the store's directory is away, as in test_ragged). */
	mt_store *s2;
	char url[320], away[400];
	snprintf(url, sizeof url, "file://%s", store_dir);
	snprintf(away, sizeof away, "%s.away", store_dir);
	TAP_CALL(mt_store_open(url, &s2, &err), &err, "open the store again");
	TAP_CALL(mt_stream_open(s2, "bgf", attrs, 2, &o, &st, &err), &err, "a stream onto bgf");
	int moved = !rename(store_dir, away);
	FILE *f = fopen(store_dir, "w");
	if (f)
		fclose(f);
	rc = 0;
	for (int i = 0; !rc && i < 15; i++)
		rc = push(st, i * 10, 10, &err); /* the 100th row hands them to a commit */
	uint64_t wait;
	for (int tries = 0; !rc && tries < 250; tries++) {
		rc = mt_stream_poll(st, &wait, &err);
		if (!rc)
			usleep(20 * 1000);
	}
	tap_ok(moved && f && rc != 0 && mt_stream_pending(st) == 150,
	       "the failed commit's error comes back from poll, its 100 rows and the 50 after "
	       "them wait: %s (%llu waiting)", err.message,
	       (unsigned long long)mt_stream_pending(st));
	unlink(store_dir);
	rename(away, store_dir);
	TAP_CALL(mt_stream_commit(st, NULL, 0, &err), &err, "commit once the store is back");
	tap_ok(latest_in_order("bgf", 150), "the latest holds all 150 rows in order");
	mt_stream_close(st);
	mt_store_close(s2);
}

static char notices[2048];
static void on_notice(void *ud, int retry, const char *message)
{
	size_t len = strlen(notices);
	snprintf(notices + len, sizeof notices - len, "%s|", message);
}

/* Rows in a spool outlive the stream: the next one on the directory commits
 * them once. */
static void test_spool(const char *root)
{
	mt_error err = { 0 };
	char dir[400];
	snprintf(dir, sizeof dir, "%s/spool", root);
	mt_stream_opts o;
	mt_stream_opts_init(&o);
	o.commit_rows = 1000;
	o.spool_dir = dir;
	o.notice = on_notice;
	mt_stream *st, *st2 = NULL;
	TAP_CALL(mt_stream_open(store, "sp", attrs, 2, &o, &st, &err), &err, "open a spooled stream");
	tap_ok(mt_stream_open(store, "sp", attrs, 2, &o, &st2, &err) == MT_ESTATE && !st2,
	       "a second stream on the same spool is refused: %s", err.message);
	o.background = 1;
	tap_ok(mt_stream_open(store, "sp", attrs, 2, &o, &st2, &err) == MT_EINVAL,
	       "a spool and background commits together are refused: %s", err.message);
	o.background = 0;
	int rc = push(st, 0, 20, &err);
	if (!rc)
		rc = mt_stream_sync(st, &err);
	if (!rc)
		rc = push(st, 20, 10, &err); /* never synced: lost with the stream */
	TAP_CALL(rc, &err, "30 rows, 20 of them synced");
	mt_stream_close(st);
	tap_ok(!versions("sp"), "no version yet");
	TAP_CALL(mt_stream_open(store, "sp", attrs, 2, &o, &st, &err), &err, "open it again");
	tap_ok(mt_stream_pending(st) == 20 && strstr(notices, "replaying 20 spooled row(s)"),
	       "the 20 synced rows are back (%s)", notices);
	uint64_t wait;
	TAP_CALL(mt_stream_poll(st, &wait, &err), &err, "poll");
	tap_ok(versions("sp") == 1 && !mt_stream_pending(st) && latest_in_order("sp", 20),
	       "they are committed at once, whatever the thresholds");
	mt_stream_close(st);
	TAP_CALL(mt_stream_open(store, "sp", attrs, 2, &o, &st, &err), &err, "and again");
	tap_ok(!mt_stream_pending(st), "nothing is replayed twice");
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
	char url[320];
	snprintf(store_dir, sizeof store_dir, "%s/store", root);
	snprintf(url, sizeof url, "file://%s", store_dir);
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
	test_ragged();
	test_two_streams();
	test_background();
	test_spool(root);
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
