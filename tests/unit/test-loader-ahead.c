/* test-loader-ahead.c — far away, a loader moved on epoch by epoch reads the shards of each slot's next window whole while the window before it in that slot is still being handed out (past the first epoch nothing else reads ahead: the chunk indexes are known), and every epoch still gives each row once with its values. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "loader.h"
#include "matorage.h"
#include "store.h"
#include "tap-count.h"
#include "tap-store.h"
#include "tap.h"

#define SHARDS 4
#define SHARD_ROWS 1000
#define ROWS (SHARDS * SHARD_ROWS)

static mt_store *store;
static char root[512];
/* Reads of a shard object from its first byte (only a read of it whole
 * starts there: chunk runs and the chunk index lie past HDF5's header),
 * and the others: runs of chunks, or indexes. */
static atomic_int whole_reads, other_reads;
/* Set once the test has called set_epoch(0): until then (5 s at most) the
 * fillers' reads wait, so that the call finds the first windows being read. */
static atomic_int released;

static void on_read(const char *key, uint64_t off, uint64_t len)
{
	(void)key;
	(void)len;
	struct timespec tick = {0, 1000 * 1000};
	for (int i = 0; i < 5000 && !atomic_load(&released); i++)
		nanosleep(&tick, NULL);
	atomic_fetch_add(off == 0 ? &whole_reads : &other_reads, 1);
}

/* A get as S3 answers one: a range past the object's end gives what there
 * is (a far store's reads of manifests ask for more than they expect). */
static int far_get(mt_store *s, const char *key, uint64_t off, uint64_t len, void **data,
		   size_t *got, mt_error *err)
{
	char path[1024];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", root, key);
	if (!stat(path, &st) && off + len > (uint64_t)st.st_size)
		len = (uint64_t)st.st_size > off ? (uint64_t)st.st_size - off : 0;
	return tap_watch_get(s, key, off, len, data, got, err);
}

/* x (int64) = row number, 1000-row shards of 1 KiB chunks. */
static int write_rows(void)
{
	mt_attr attrs[1] = {{.name = "x", .dtype = MT_INT64, .rank = 0}};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = SHARD_ROWS;
	o.chunk_bytes = 1024;
	int64_t *x = malloc(ROWS * sizeof *x);
	for (uint64_t i = 0; x && i < ROWS; i++)
		x[i] = (int64_t)i;
	const void *data[1] = {x};
	mt_writer *w = NULL;
	mt_error err = {0};
	int rc = !x || mt_writer_open(store, "ah", attrs, 1, &o, &w, &err) ||
		 mt_writer_append(w, ROWS, data, NULL, &err) || mt_writer_commit(w, NULL, 0, &err);
	if (rc)
		tap_diag("writer: %s", err.message);
	mt_writer_close(w);
	free(x);
	return rc ? -1 : 0;
}

/* Wait up to 30 s for both fillers to wait (for their slots, each having
 * read ahead for the window it fills next, or for the loader to move on to
 * the epoch they would read next); whether they do. */
static int wait_fillers(mt_loader *l)
{
	struct timespec tick = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 3000 && mti_loader_fillers_idle(l) < 2; i++)
		nanosleep(&tick, NULL);
	return mti_loader_fillers_idle(l) == 2;
}

/* One epoch's batches: each row once, x equal to its row number. */
static void check_epoch(mt_loader *l, unsigned epoch)
{
	static char seen[ROWS];
	memset(seen, 0, sizeof seen);
	size_t n = 0, bad = 0;
	const mt_batch *b = NULL;
	mt_error err = {0};
	int rc;
	while (!(rc = mt_loader_next(l, &b, &err)) && b) {
		const int64_t *x = b->cols[0].data;
		for (size_t i = 0; i < b->rows; i++) {
			uint64_t id = b->row_ids[i];
			bad += id >= ROWS || seen[id]++ || x[i] != (int64_t)id;
			n++;
		}
	}
	if (rc)
		tap_diag("epoch %u: %s", epoch, err.message);
	tap_ok(!rc && n == ROWS && !bad, "epoch %u: %zu rows, each once and as written (%zu wrong)",
	       epoch, n, bad);
}

int main(void)
{
	/* The loader's metadata cache (far stores) stays out of the user's home. */
	setenv("MATORAGE_META_CACHE", "off", 1);
	if (tap_scratch_store("loader-ahead", root, sizeof root, &store) || write_rows())
		return tap_ok(0, "setup"), tap_done();
	/* The file store seen as far away, its shard reads watched. */
	tap_watch_reads(store, "/shards/", NULL);
	tap_watch.hook_at = on_read;
	tap_watch.ops.far = 1;
	tap_watch.ops.get = far_get;

	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.batch_rows = 100;
	o.shuffle = 1;
	o.seed = 3;
	o.shuffle_rows = 2 * SHARD_ROWS; /* units of a whole shard, windows of two */
	mt_loader *l = NULL;
	mt_error err = {0};
	if (!TAP_CALL(mt_loader_open(store, "ah", NULL, &o, &l, &err), &err, "open a shuffled loader"))
		return tap_done();
	TAP_CALL(mt_loader_set_epoch(l, 0, &err), &err, "set_epoch(0): the next epoch is read ahead");
	atomic_store(&released, 1);
	/* Epoch 0's two windows fill both slots, their four shards read whole
	 * with their chunk indexes; then each filler, its slot still full,
	 * reads the shards of its window of epoch 1 whole (or keeps them,
	 * when epoch 0's other window still holds them). */
	tap_ok(wait_fillers(l), "both fillers wait for their slots");
	int whole0 = atomic_load(&whole_reads), other0 = atomic_load(&other_reads);
	tap_ok(whole0 >= SHARDS, "epoch 0 read its %d shards whole (%d whole reads)", SHARDS,
	       whole0);
	/* set_epoch(0) came while the first windows were being read: kept,
	 * not read again (before, the fillers were stopped and started over,
	 * and the shards, dropped, were read again in runs of chunks). */
	tap_ok(other0 == 0, "and nothing else: set_epoch(0) right after the open kept the windows "
	       "being read (%d other reads)", other0);
	check_epoch(l, 0);
	/* Meanwhile epoch 1's windows went into the slots handed back, from
	 * what was read ahead: not a run of chunks read for them (before,
	 * every one of their chunks was). */
	tap_ok(wait_fillers(l), "epoch 0 taken, both fillers wait again");
	int other1 = atomic_load(&other_reads) - other0;
	tap_ok(other1 == 0, "epoch 1's windows read nothing but whole shards: %d other reads",
	       other1);
	TAP_CALL(mt_loader_set_epoch(l, 1, &err), &err, "set_epoch(1)");
	check_epoch(l, 1);
	for (unsigned e = 2; e < 4; e++) {
		TAP_CALL(mt_loader_set_epoch(l, e, &err), &err, "set_epoch(%u)", e);
		check_epoch(l, e);
	}
	mt_loader_close(l);
	tap_unwatch();
	mt_store_close(store);
	if (!getenv("KEEP"))
		tap_rm_tree(root);
	return tap_done();
}
