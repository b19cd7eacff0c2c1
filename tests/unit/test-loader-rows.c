/* test-loader-rows.c — a loader opened with defer_windows and used only for read_rows (a map-style dataset) reads nothing at its open and, for a few rows, the very bytes a reader's read_rows of them reads: their chunks, never a window of the epoch; the first batch still comes whole. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matorage.h"
#include "store.h"
#include "tap-store.h"
#include "tap.h"

#define ROWS 4000
#define SHARD_ROWS 500
#define VEC 32 /* floats a row of v */

static mt_store *store;
static char root[512];

/* Every byte read from the store, by any of the loader's threads, and the
 * shard objects read (their keys, each once). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t bytes_read, reads;
static char shard_keys[16][256];
static int nshard_keys;
static mt_store_ops counting_ops;
static const mt_store_ops *real_ops;

static void count(const char *key, uint64_t n)
{
	pthread_mutex_lock(&lock);
	bytes_read += n;
	reads++;
	int seen = 0;
	for (int i = 0; i < nshard_keys; i++)
		seen |= !strcmp(shard_keys[i], key);
	if (!seen && strstr(key, "/shards/") && nshard_keys < 16)
		snprintf(shard_keys[nshard_keys++], sizeof shard_keys[0], "%s", key);
	pthread_mutex_unlock(&lock);
}

static void count_reset(void)
{
	pthread_mutex_lock(&lock);
	bytes_read = reads = 0;
	nshard_keys = 0;
	pthread_mutex_unlock(&lock);
}

static int counting_get(mt_store *s, const char *key, uint64_t off, uint64_t len, void **data,
			size_t *got, mt_error *err)
{
	int rc = real_ops->get(s, key, off, len, data, got, err);
	count(key, rc ? 0 : *got);
	return rc;
}

static int counting_read(mt_store *s, const char *key, uint64_t off, void *buf, size_t len,
			 mt_error *err)
{
	int rc = real_ops->read(s, key, off, buf, len, err);
	count(key, rc ? 0 : len);
	return rc;
}

static int counting_readv(mt_store *s, const char *key, uint64_t off, const struct iovec *iov,
			  size_t n, mt_error *err)
{
	int rc = real_ops->readv(s, key, off, iov, n, err);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += iov[i].iov_len;
	count(key, rc ? 0 : total);
	return rc;
}

/* x (int64) = row number, v (float32[VEC]) = row + k / 64: shards of
 * SHARD_ROWS rows, chunks of 4 KiB, so a shard is many chunks. */
static int write_rows(void)
{
	mt_attr attrs[2] = {{.name = "x", .dtype = MT_INT64, .rank = 0},
			    {.name = "v", .dtype = MT_FLOAT32, .rank = 1, .shape = {VEC}}};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = SHARD_ROWS;
	o.chunk_bytes = 4096;
	int64_t *x = malloc(ROWS * sizeof *x);
	float *v = malloc((size_t)ROWS * VEC * sizeof *v);
	for (size_t i = 0; i < ROWS; i++) {
		x[i] = (int64_t)i;
		for (size_t k = 0; k < VEC; k++)
			v[i * VEC + k] = (float)i + (float)k / 64.0f;
	}
	const void *data[2] = {x, v};
	mt_writer *w = NULL;
	mt_error err = {0};
	int rc = mt_writer_open(store, "m", attrs, 2, &o, &w, &err) ||
		 mt_writer_append(w, ROWS, data, NULL, &err) || mt_writer_commit(w, NULL, 0, &err);
	if (rc)
		tap_diag("writer: %s", err.message);
	mt_writer_close(w);
	free(x);
	free(v);
	return rc ? -1 : 0;
}

/* Rows 7, 1203 and 1210: in shards 0 and 2 of 8. */
static const uint64_t want[3] = {7, 1203, 1210};

static int rows_right(const int64_t *x, const float *v, size_t n)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		bad += x[i] != (int64_t)want[i];
		for (size_t k = 0; k < VEC; k++)
			bad += v[i * VEC + k] != (float)want[i] + (float)k / 64.0f;
	}
	return !bad;
}

/* What a reader's read_rows of the rows reads, its open left out. */
static void reader_reads(uint64_t *bytes, int *shards)
{
	mt_chunk_cache_clear();
	mt_reader *r = NULL;
	mt_error err = {0};
	int64_t x[3];
	float v[3 * VEC];
	int rc = mt_reader_open(store, "m", NULL, &r, &err);
	count_reset();
	if (!rc)
		rc = mt_reader_read_rows(r, 0, want, 3, x, sizeof x, &err);
	if (!rc)
		rc = mt_reader_read_rows(r, 1, want, 3, v, sizeof v, &err);
	mt_reader_close(r);
	*bytes = bytes_read;
	*shards = nshard_keys;
	tap_ok(!rc && rows_right(x, v, 3) && *shards == 2,
	       "a reader's read_rows of rows 7, 1203, 1210 reads %d shards, %llu bytes%s%s",
	       *shards, (unsigned long long)*bytes, rc ? ": " : "", rc ? err.message : "");
}

static mt_loader *open_loader(int defer)
{
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.batch_rows = 1;
	o.prefetch_bytes = 1 << 20; /* windows of thousands of rows: several shards */
	o.defer_windows = defer;
	mt_loader *l = NULL;
	mt_error err = {0};
	mt_chunk_cache_clear();
	if (mt_loader_open(store, "m", NULL, &o, &l, &err))
		tap_diag("loader open: %s", err.message);
	return l;
}

/* A loader's read_rows of the rows: *at_open what it read from its open's
 * return until read_rows is called (after 100 ms, or with wait, once it
 * has read anything, for at most 10 s), *bytes and *shards what it read
 * in all by its close (which waits for a window being read). */
static int loader_reads(mt_loader *l, int wait, uint64_t *bytes, int *shards,
			uint64_t *at_open)
{
	mt_error err = {0};
	const mt_batch *b = NULL;
	count_reset();
	usleep(100 * 1000);
	for (int i = 0; wait && i < 1000 && !__atomic_load_n(&bytes_read, __ATOMIC_SEQ_CST); i++)
		usleep(10 * 1000);
	*at_open = bytes_read;
	int rc = l ? mt_loader_read_rows(l, want, 3, &b, &err) : MT_EINVAL;
	int ok = !rc && b->rows == 3 && b->ncols == 2 &&
		 rows_right(b->cols[0].data, b->cols[1].data, 3);
	if (rc)
		tap_diag("read_rows: %s", l ? err.message : "no loader");
	mt_loader_close(l);
	*bytes = bytes_read;
	*shards = nshard_keys;
	return ok;
}

int main(void)
{
	if (tap_scratch_store("loader-rows", root, sizeof root, &store) || write_rows())
		return tap_ok(0, "setup"), tap_done();
	real_ops = store->ops;
	counting_ops = *real_ops;
	counting_ops.get = counting_get;
	counting_ops.read = real_ops->read ? counting_read : NULL;
	counting_ops.readv = real_ops->readv ? counting_readv : NULL;
	store->ops = &counting_ops;

	uint64_t ref = 0, bytes = 0, at_open = 0;
	int ref_shards = 0, shards = 0;
	reader_reads(&ref, &ref_shards);

	int ok = loader_reads(open_loader(1), 0, &bytes, &shards, &at_open);
	tap_ok(ok && at_open == 0,
	       "defer_windows: the open reads nothing of the epoch (%llu bytes)",
	       (unsigned long long)at_open);
	tap_ok(ok && bytes == ref && shards == ref_shards,
	       "defer_windows: read_rows of 3 rows reads their chunks alone, as the reader does "
	       "(%llu bytes of %d shards; the reader %llu of %d)", (unsigned long long)bytes,
	       shards, (unsigned long long)ref, ref_shards);

	/* Without it the open reads the epoch's first windows, whole shards'
	 * worth, which a map-style read never uses. */
	uint64_t eager = 0, eager_open = 0;
	int eager_shards = 0;
	ok = loader_reads(open_loader(0), 1, &eager, &eager_shards, &eager_open);
	tap_ok(ok && eager_open > 0 && eager > 4 * ref && eager_shards > ref_shards,
	       "without it the open starts reading the epoch's windows: %llu bytes of %d shards "
	       "by the close", (unsigned long long)eager, eager_shards);

	/* Deferred, an epoch still runs whole: the first batch starts the windows. */
	mt_loader *l = open_loader(1);
	mt_error err = {0};
	const mt_batch *b = NULL;
	uint64_t n = 0, bad = 0;
	int rc = l ? 0 : MT_EINVAL;
	while (!rc && !(rc = mt_loader_next(l, &b, &err)) && b) {
		bad += b->rows != 1 || *(const int64_t *)b->cols[0].data != (int64_t)n;
		n += b->rows;
	}
	tap_ok(!rc && n == ROWS && !bad, "defer_windows: an epoch still gives its %llu rows in "
	       "order%s%s", (unsigned long long)n, rc ? ": " : "", rc ? err.message : "");
	/* A second epoch, after set_epoch, too. */
	rc = l ? mt_loader_set_epoch(l, 1, &err) : MT_EINVAL;
	n = 0;
	while (!rc && !(rc = mt_loader_next(l, &b, &err)) && b)
		n += b->rows;
	tap_ok(!rc && n == ROWS, "and after set_epoch(1), its next epoch%s%s", rc ? ": " : "",
	       rc ? err.message : "");
	mt_loader_close(l);

	store->ops = real_ops;
	mt_store_close(store);
	if (!getenv("KEEP"))
		tap_rm_tree(root);
	return tap_done();
}
