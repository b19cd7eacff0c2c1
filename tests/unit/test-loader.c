/* test-loader.c — the loader's promises: every row once per epoch, deterministic order, equal rank shares, exact and elastic resume. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"
#include "matorage.h"
#include "tap.h"

#define ROWS 1000

static mt_store *store;
static char root[] = "/tmp/mt-loader.XXXXXX";

/* Dataset `name`: x (int64) = base + row number; r (ragged uint8) = row % 5
 * items of row & 0xff. */
static int make_named(const char *name, int64_t base)
{
	mt_attr attrs[2] = {{.name = "x", .dtype = MT_INT64, .rank = 0},
			    {.name = "r", .dtype = MT_UINT8, .rank = 0, .ragged = 1}};
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.shard_rows = 37;
	o.chunk_bytes = 64;
	mt_writer *w;
	mt_error err = {0};
	if (mt_writer_open(store, name, attrs, 2, &o, &w, &err))
		return tap_diag("writer: %s", err.message), -1;
	int64_t x[ROWS];
	uint8_t r[ROWS * 4];
	uint64_t len[ROWS];
	size_t k = 0;
	for (int i = 0; i < ROWS; i++) {
		x[i] = base + i;
		len[i] = (uint64_t)(i % 5);
		for (uint64_t j = 0; j < len[i]; j++)
			r[k++] = (uint8_t)(i & 0xff);
	}
	const void *data[2] = {x, r};
	const uint64_t *lens[2] = {NULL, len};
	int rc = mt_writer_append(w, ROWS, data, lens, &err) || mt_writer_commit(w, NULL, 0, &err);
	if (rc)
		tap_diag("writer: %s", err.message);
	mt_writer_close(w);
	return rc ? -1 : 0;
}

/* Dataset "ld", what most tests read. */
static int make_dataset(void)
{
	return make_named("ld", 0);
}

/* Rows a loader delivers in one epoch, checking each batch's values. */
typedef struct run {
	uint64_t *rows;
	size_t n, batches;
	int bad_values, bad_sizes;
	size_t sizes[64];
} run;

static int collect(mt_loader *l, run *out, size_t max_batches)
{
	memset(out, 0, sizeof *out);
	out->rows = malloc(4 * ROWS * sizeof *out->rows);
	const mt_batch *b;
	mt_error err = {0};
	while (out->batches < max_batches) {
		if (mt_loader_next(l, &b, &err))
			return tap_diag("next: %s", err.message), -1;
		if (!b)
			break;
		if (out->batches < 64)
			out->sizes[out->batches] = b->rows;
		out->batches++;
		const int64_t *x = b->cols[0].data;
		for (size_t i = 0; i < b->rows; i++) {
			uint64_t id = b->row_ids[i];
			out->rows[out->n++] = id;
			if (x[i] != (int64_t)id)
				out->bad_values++;
			if (b->ncols > 1) {
				const uint64_t *off = b->cols[1].offsets;
				const uint8_t *v = b->cols[1].data;
				if (off[i + 1] - off[i] != id % 5)
					out->bad_sizes++;
				for (uint64_t j = off[i]; j < off[i + 1]; j++)
					if (v[j] != (uint8_t)(id & 0xff))
						out->bad_values++;
			}
		}
	}
	return 0;
}

/* How many times each row appears in a set of runs. */
static void count_rows(const run *runs, size_t nruns, int *count)
{
	memset(count, 0, ROWS * sizeof *count);
	for (size_t r = 0; r < nruns; r++)
		for (size_t i = 0; i < runs[r].n; i++)
			count[runs[r].rows[i]]++;
}

/* A shuffled loader's options: batches of `batch` rows, `seed`, windows of
 * `window` rows (0: as the budget gives). */
static mt_loader_opts shuffled(size_t batch, uint64_t seed, uint64_t window)
{
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.batch_rows = batch;
	o.shuffle = 1;
	o.seed = seed;
	o.shuffle_rows = window;
	return o;
}

static mt_loader *open_loader(mt_loader_opts *o, const char *what)
{
	mt_loader *l = NULL;
	mt_error err = {0};
	if (mt_loader_open(store, "ld", NULL, o, &l, &err))
		tap_ok(0, "%s: open: %s", what, err.message);
	return l;
}

static void test_plain(void)
{
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.batch_rows = 64;
	mt_loader *l = open_loader(&o, "plain");
	if (!l)
		return;
	run r;
	collect(l, &r, 1000);
	int in_order = r.n == ROWS;
	for (size_t i = 0; in_order && i < r.n; i++)
		in_order = r.rows[i] == i;
	tap_ok(in_order, "without shuffle: rows 0..999 in order (%zu rows)", r.n);
	tap_ok(r.batches == 16 && mt_loader_batches(l) == 16 && r.sizes[15] == 40,
	       "16 batches, the last of 40 rows");
	tap_ok(!r.bad_values && !r.bad_sizes, "values and ragged rows are the rows named");
	const mt_batch *b;
	mt_error err = {0};
	tap_ok(mt_loader_next(l, &b, &err) == 0 && b == NULL, "after the end: no batch, no error");
	free(r.rows);
	TAP_CALL(mt_loader_set_epoch(l, 1, &err), &err, "set_epoch");
	collect(l, &r, 1000);
	tap_ok(r.n == ROWS, "the next epoch starts over (%zu rows)", r.n);
	free(r.rows);
	mt_loader_close(l);
}

static void test_shuffle(void)
{
	mt_loader_opts o = shuffled(50, 7, 200);
	mt_loader *l = open_loader(&o, "shuffle");
	if (!l)
		return;
	run a, b, c, d;
	collect(l, &a, 1000);
	int count[ROWS];
	count_rows(&a, 1, count);
	int once = 1, moved = 0;
	for (int i = 0; i < ROWS; i++)
		once &= count[i] == 1;
	for (size_t i = 0; i < a.n; i++)
		moved += a.rows[i] != i;
	tap_ok(once && a.n == ROWS, "shuffled: every row exactly once");
	tap_ok(moved > ROWS / 2, "and out of order (%d of %d rows moved)", moved, ROWS);
	tap_ok(!a.bad_values && !a.bad_sizes, "values follow their rows");
	mt_error err = {0};
	mt_loader_set_epoch(l, 1, &err);
	collect(l, &b, 1000);
	tap_ok(b.n == ROWS && memcmp(a.rows, b.rows, ROWS * sizeof *a.rows) != 0,
	       "epoch 1's order differs from epoch 0's");
	mt_loader_close(l);

	o.fetch_threads = 1;
	o.decode_threads = 1;
	o.prefetch_bytes = 1 << 12; /* a different budget: the order must not move */
	l = open_loader(&o, "shuffle again");
	if (l) {
		collect(l, &c, 1000);
		tap_ok(c.n == ROWS && memcmp(a.rows, c.rows, ROWS * sizeof *a.rows) == 0,
		       "the same seed and epoch give the same order with other threads and budget");
		free(c.rows);
		mt_loader_close(l);
	}
	o.seed = 8;
	l = open_loader(&o, "other seed");
	if (l) {
		collect(l, &d, 1000);
		tap_ok(d.n == ROWS && memcmp(a.rows, d.rows, ROWS * sizeof *a.rows) != 0,
		       "another seed gives another order");
		free(d.rows);
		mt_loader_close(l);
	}
	free(a.rows);
	free(b.rows);
}

static void test_ranks(int drop)
{
	run r[3];
	size_t total = 0;
	int same_batches = 1;
	for (unsigned k = 0; k < 3; k++) {
		mt_loader_opts o = shuffled(32, 3, 128);
		o.world = 3;
		o.rank = k;
		o.drop_last = drop;
		mt_loader *l = open_loader(&o, "ranks");
		if (!l)
			return;
		collect(l, &r[k], 1000);
		total += r[k].n;
		same_batches &= r[k].batches == r[0].batches &&
				r[k].batches == mt_loader_batches(l);
		mt_loader_close(l);
	}
	int count[ROWS];
	count_rows(r, 3, count);
	int missing = 0, twice = 0;
	for (int i = 0; i < ROWS; i++) {
		missing += count[i] == 0;
		twice += count[i] > 1;
	}
	if (!drop) {
		tap_ok(same_batches && r[0].batches == 11, "3 ranks: 11 batches each (%zu)",
		       r[0].batches);
		tap_ok(missing == 0 && total == 1002 && twice == 2,
		       "together every row, 2 repeated to even the shares (%zu rows, %d twice)",
		       total, twice);
	} else {
		tap_ok(same_batches && r[0].batches == 10 && total == 960,
		       "drop_last: 10 full batches each (%zu rows)", total);
		tap_ok(twice == 0 && missing == 40, "no row twice, the 40 left over are dropped");
	}
	for (int k = 0; k < 3; k++)
		free(r[k].rows);
}

/* Wait (up to 10 s) for a window of the next epoch to be read ahead. */
static int ahead_within(mt_loader *l, int ms)
{
	for (int i = 0; i < ms && !mti_loader_ahead_ready(l); i++)
		usleep(1000);
	return mti_loader_ahead_ready(l);
}

/* Epoch e of a fresh loader opened at it: what set_epoch(e) must give. */
static int fresh_epoch(mt_loader_opts o, uint64_t e, run *out)
{
	o.epoch = e;
	mt_loader *l = open_loader(&o, "fresh");
	int rc = l ? collect(l, out, 1000) : -1;
	mt_loader_close(l);
	return rc;
}

/* A loader moved from epoch to epoch reads the next epoch's first windows
 * while the last ones of this epoch are handed out; the rows, their order
 * and values are still those of a loader opened at that epoch, however
 * the epochs are moved (in turn, skipped, restarted, left midway). */
static void test_epoch_ahead(unsigned world, int drop)
{
	/* 7 windows: the next epoch's first lands in the other slot */
	mt_loader_opts o = shuffled(48, 11, 150);
	o.world = world;
	o.rank = world - 1;
	o.drop_last = drop;
	mt_loader *l = open_loader(&o, "ahead");
	if (!l)
		return;
	mt_error err = {0};
	/* (epoch to set, batches to take of it: 0 = all) */
	static const uint64_t steps[][2] = {{0, 0}, {1, 0}, {2, 3}, {3, 0}, {5, 0}, {5, 2},
					    {5, 0}, {6, 0}, {7, 0}};
	int same = 1, ahead = 1, bad = 0;
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		if (mt_loader_set_epoch(l, steps[i][0], &err)) {
			tap_ok(0, "ahead: set_epoch %llu: %s", (unsigned long long)steps[i][0],
			       err.message);
			break;
		}
		run got, want;
		collect(l, &got, steps[i][1] ? steps[i][1] : 1000);
		fresh_epoch(o, steps[i][0], &want);
		size_t n = got.n < want.n ? got.n : want.n;
		same &= (steps[i][1] || got.n == want.n) &&
			!memcmp(got.rows, want.rows, n * sizeof *got.rows);
		bad += got.bad_values + got.bad_sizes;
		/* A whole epoch taken: the next one's first window comes without asking. */
		if (!steps[i][1] && i + 1 < sizeof steps / sizeof *steps)
			ahead &= ahead_within(l, 10000) > 0;
		free(got.rows);
		free(want.rows);
	}
	tap_ok(same && !bad, "world %u%s: epochs moved in turn, skipped, restarted and left midway "
	       "give a fresh loader's rows, order and values", world, drop ? ", drop_last" : "");
	tap_ok(ahead, "world %u%s: after each whole epoch the next one's first window is read "
	       "ahead", world, drop ? ", drop_last" : "");
	mt_loader_close(l);

	/* A loader never moved on reads nothing past its epoch. */
	l = open_loader(&o, "no ahead");
	if (l) {
		run r;
		collect(l, &r, 1000);
		tap_ok(!ahead_within(l, 100), "world %u%s: a loader never moved by set_epoch reads "
		       "nothing of the next epoch", world, drop ? ", drop_last" : "");
		free(r.rows);
		mt_loader_close(l);
	}
}

static void test_resume(void)
{
	mt_loader_opts o = shuffled(40, 11, 300);
	o.epoch = 4;
	mt_loader *l = open_loader(&o, "resume: full");
	if (!l)
		return;
	run full, head, tail;
	collect(l, &full, 1000);
	mt_loader_close(l);

	l = open_loader(&o, "resume: head");
	if (!l)
		return;
	collect(l, &head, 7);
	char tok[512];
	size_t n = mt_loader_state(l, tok, sizeof tok);
	tap_ok(n < sizeof tok && !strncmp(tok, "mtl1 ld v1 1000 11 4 1 ", 23), "token: %s", tok);
	mt_loader_close(l);

	mt_loader_opts r;
	mt_loader_opts_init(&r);
	r.batch_rows = 40;
	r.resume = tok;
	l = open_loader(&r, "resume: tail");
	if (!l)
		return;
	collect(l, &tail, 1000);
	tap_ok(head.n + tail.n == ROWS && !memcmp(full.rows, head.rows, head.n * sizeof *head.rows) &&
		       !memcmp(full.rows + head.n, tail.rows, tail.n * sizeof *tail.rows),
	       "resuming after 7 batches delivers exactly the rest, in the same order");
	mt_loader_close(l);
	free(full.rows);
	free(head.rows);
	free(tail.rows);

	/* Elastic: 2 ranks take 3 batches each, then 3 ranks of another batch size finish. */
	run before[2], after[3];
	char tok2[512] = "";
	for (unsigned k = 0; k < 2; k++) {
		o.world = 2;
		o.rank = k;
		o.batch_rows = 16;
		l = open_loader(&o, "elastic: before");
		if (!l)
			return;
		collect(l, &before[k], 3);
		char t[512];
		mt_loader_state(l, t, sizeof t);
		if (k == 0)
			snprintf(tok2, sizeof tok2, "%s", t);
		else
			tap_ok(!strcmp(t, tok2), "both ranks' tokens are the same");
		mt_loader_close(l);
	}
	size_t extra = 0;
	for (unsigned k = 0; k < 3; k++) {
		mt_loader_opts e;
		mt_loader_opts_init(&e);
		e.world = 3;
		e.rank = k;
		e.batch_rows = 20;
		e.resume = tok2;
		l = open_loader(&e, "elastic: after");
		if (!l)
			return;
		collect(l, &after[k], 1000);
		mt_loader_close(l);
	}
	run all[5] = {before[0], before[1], after[0], after[1], after[2]};
	int count[ROWS];
	count_rows(all, 5, count);
	int missing = 0;
	for (int i = 0; i < ROWS; i++) {
		missing += count[i] == 0;
		extra += count[i] > 1 ? (size_t)count[i] - 1 : 0;
	}
	tap_ok(missing == 0 && extra <= 2 && after[0].batches == after[2].batches,
	       "2 ranks then 3: every row of the epoch, repeats only to even the shares (%zu)",
	       extra);
	for (int k = 0; k < 5; k++)
		free(all[k].rows);
}

static size_t allocs, frees;
static void *my_alloc(void *ud, size_t n)
{
	allocs++;
	return malloc(n);
}
static void my_free(void *ud, void *p, size_t n)
{
	frees++;
	free(p);
}

/* No rows asked of a fresh loader: an empty batch, its ragged offsets a lone 0, even
 * before any batch has sized the buffers. */
static void test_read_no_rows(void)
{
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	mt_loader *l = open_loader(&o, "no rows");
	if (!l)
		return;
	const mt_batch *b;
	mt_error err = {0};
	if (TAP_CALL(mt_loader_read_rows(l, NULL, 0, &b, &err), &err, "read_rows of no rows"))
		tap_ok(b->rows == 0 && b->ncols == 2 && b->cols[1].offsets &&
		       b->cols[1].offsets[0] == 0 && b->cols[1].bytes == 0,
		       "no rows: an empty batch, the ragged offsets [0]");
	mt_loader_close(l);
}

/* mt_loader_next_into: x gathered into the caller's buffer of each batch, which keeps
 * its values after later batches; r (ragged) in the loader's; too small a buffer refused. */
static void test_next_into(void)
{
	mt_loader_opts o = shuffled(64, 9, 0);
	mt_loader *l = open_loader(&o, "next_into");
	if (!l)
		return;
	int64_t *bufs[16] = {0};
	uint64_t *ids = malloc(ROWS * sizeof *ids);
	size_t nb = 0, n = 0, bad = 0, elsewhere = 0;
	const mt_batch *b;
	mt_error err = {0};
	int rc;
	while (nb < 16 && (bufs[nb] = malloc(64 * sizeof **bufs))) {
		void *into[2] = {bufs[nb], NULL};
		if ((rc = mt_loader_next_into(l, into, 64, &b, &err)) || !b)
			break;
		elsewhere += b->cols[0].data != bufs[nb] || b->cols[1].data == NULL;
		for (size_t i = 0; i < b->rows; i++) {
			ids[n + i] = b->row_ids[i];
			const uint64_t *off = b->cols[1].offsets;
			bad += off[i + 1] - off[i] != b->row_ids[i] % 5;
		}
		n += b->rows;
		nb++;
	}
	tap_ok(!rc && n == ROWS && nb == 16 && !elsewhere && !bad,
	       "next_into: 16 batches, x in the caller's buffers, r in the loader's (%s)",
	       rc ? err.message : "ok");
	for (size_t k = 0, i = 0; k < nb && i < n; k++)
		for (size_t j = 0; j < 64 && i < n; j++, i++)
			bad += bufs[k][j] != (int64_t)ids[i];
	tap_ok(!bad, "every batch's buffer still holds its rows after the epoch (%zu wrong)", bad);
	for (size_t k = 0; k < 16; k++)
		free(bufs[k]);
	free(ids);
	int64_t small[8];
	void *into[2] = {small, NULL};
	mt_loader_set_epoch(l, 1, &err);
	tap_ok(mt_loader_next_into(l, into, 8, &b, &err) == MT_EINVAL && strstr(err.message, "8 rows"),
	       "a buffer smaller than the batch is refused: %s", err.message);
	mt_loader_close(l);
}

/* One epoch of 1000 rows in batches of 10 and windows of about 150 rows,
 * taken with mt_loader_next_held: keep != 0 keeps every batch held to the
 * end (the fillers then take new buffers, and the held ones stay as they
 * were), else each is released as the next is taken, as a training loop
 * drops its batch (nothing let go: the fillers wait for that release).
 * *orphans: the most buffers let go at once. */
typedef struct held_run {
	size_t batches, held, bad, orphans;
	uint64_t holds[128];
	const int64_t *x[128];
	uint64_t *ids[128]; /* copies: row_ids are not held */
	size_t rows[128];
	uint64_t id_copies[ROWS];
} held_run;

static int held_epoch(mt_loader *l, int keep, held_run *r)
{
	memset(r, 0, sizeof *r);
	const mt_batch *b;
	mt_error err = {0};
	uint64_t prev = 0, holds[2], hold;
	while (r->batches < 128) {
		if (mt_loader_next_held(l, &b, holds, 0, &err))
			return tap_diag("next_held: %s", err.message), -1;
		if (!b)
			break;
		/* r, ragged, is never held. */
		r->bad += holds[1] != 0;
		hold = holds[0];
		const int64_t *x = b->cols[0].data;
		for (size_t i = 0; i < b->rows; i++)
			r->bad += x[i] != (int64_t)b->row_ids[i];
		r->held += hold != 0;
		r->holds[r->batches] = hold;
		r->x[r->batches] = x;
		r->ids[r->batches] = r->id_copies + (r->batches ? r->ids[r->batches - 1] -
							     r->id_copies + r->rows[r->batches - 1] : 0);
		memcpy(r->ids[r->batches], b->row_ids, b->rows * sizeof *b->row_ids);
		r->rows[r->batches++] = b->rows;
		if (!keep) {
			mt_loader_release(l, prev);
			prev = hold;
		}
		size_t o = (size_t)mti_loader_orphans(l);
		r->orphans = o > r->orphans ? o : r->orphans;
	}
	mt_loader_release(l, prev);
	return 0;
}

/* mt_loader_next_held: batches lying in one window are held, their values
 * unchanged for as long as they are (later windows filled meanwhile), and
 * freed at release or close (the sanitizers see a leak or a use after free). */
static void test_next_held(void)
{
	mt_loader_opts o = shuffled(10, 4, 150);
	const char *only_x[] = {"x", "r"};
	o.attrs = only_x;
	o.nattrs = 2;
	mt_loader *l = open_loader(&o, "next_held");
	if (!l)
		return;
	held_run *r = calloc(1, sizeof *r);
	uint64_t seen[ROWS] = {0};
	mt_error err = {0};
	int rc = held_epoch(l, 1, r);
	size_t bad = 0, rows = 0;
	for (size_t k = 0; !rc && k < r->batches; k++) {
		rows += r->rows[k];
		for (size_t i = 0; r->holds[k] && i < r->rows[k]; i++) {
			bad += r->x[k][i] != (int64_t)r->ids[k][i];
			seen[r->ids[k][i] % ROWS]++;
		}
	}
	size_t twice = 0;
	for (size_t i = 0; i < ROWS; i++)
		twice += seen[i] > 1;
	tap_ok(!rc && rows == ROWS && r->held > 50 && r->held < r->batches && !r->bad,
	       "next_held: %zu of %zu batches held (those straddling two windows not)", r->held,
	       r->batches);
	tap_ok(!rc && !bad && !twice && r->orphans >= 2,
	       "kept to the end, every held batch still holds its rows (%zu wrong, %zu rows twice), "
	       "the windows' new buffers taken meanwhile (%zu let go)", bad, twice, r->orphans);
	for (size_t k = 0; k < r->batches; k++)
		mt_loader_release(l, r->holds[k]);
	tap_ok(mti_loader_orphans(l) == 0, "released, every buffer let go is freed (%d left)",
	       mti_loader_orphans(l));
	rc = mt_loader_set_epoch(l, 1, &err) || held_epoch(l, 0, r);
	tap_ok(!rc && !r->bad && r->held > 50 && r->orphans == 0,
	       "each released as the next is taken: %zu held, none let go (%zu)", r->held,
	       r->orphans);
	/* Closed with batches held: they stay as they were until released, and
	 * the last release frees the rest (the sanitizers see a leak or a use
	 * after free). */
	rc = mt_loader_set_epoch(l, 2, &err) || held_epoch(l, 1, r);
	mt_loader_close(l);
	bad = 0;
	for (size_t k = 0; !rc && k < r->batches; k++)
		for (size_t i = 0; r->holds[k] && i < r->rows[k]; i++)
			bad += r->x[k][i] != (int64_t)r->ids[k][i];
	tap_ok(!rc && r->orphans >= 2 && !bad,
	       "closed with %zu batches held: each still holds its rows (%zu wrong)", r->held, bad);
	for (size_t k = 0; k < r->batches; k++)
		mt_loader_release(l, r->holds[k]);
	free(r);
}

/* Held batches handed to another thread, which checks each one's rows and
 * releases it a little later (a seeded delay), while the loader fills its
 * windows again, moves through epochs and is closed with some still held:
 * every batch is intact when released, and the sanitizers see no race's
 * use after free nor leak.  Timing varies run to run; what is checked holds
 * whatever it is. */
#define HQ 64
typedef struct held_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct {
		uint64_t hold, ids[10];
		const int64_t *x;
		size_t rows;
	} q[HQ];
	size_t head, tail;
	int done;
	mt_loader *l;
	unsigned seed;
	size_t released, bad;
} held_queue;

static void *held_releaser(void *arg)
{
	held_queue *h = arg;
	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (h->head == h->tail && !h->done)
			pthread_cond_wait(&h->cond, &h->lock);
		if (h->head == h->tail)
			break;
		size_t k = h->head % HQ;
		pthread_mutex_unlock(&h->lock);
		usleep((useconds_t)(rand_r(&h->seed) % 200));
		for (size_t i = 0; i < h->q[k].rows; i++)
			h->bad += h->q[k].x[i] != (int64_t)h->q[k].ids[i];
		mt_loader_release(h->l, h->q[k].hold);
		h->released++;
		pthread_mutex_lock(&h->lock);
		h->head++;
		pthread_cond_broadcast(&h->cond);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* One epoch's held batches to the releaser (the queue full: wait for room). */
static int held_feed(held_queue *h, size_t *fed)
{
	const mt_batch *b;
	mt_error err = {0};
	uint64_t holds[2];
	while (!mt_loader_next_held(h->l, &b, holds, 0, &err) && b) {
		if (!holds[0])
			continue;
		pthread_mutex_lock(&h->lock);
		while (h->tail - h->head == HQ)
			pthread_cond_wait(&h->cond, &h->lock);
		size_t k = h->tail % HQ;
		h->q[k].hold = holds[0];
		h->q[k].x = b->cols[0].data;
		h->q[k].rows = b->rows;
		memcpy(h->q[k].ids, b->row_ids, b->rows * sizeof *b->row_ids);
		h->tail++;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
		(*fed)++;
	}
	return err.code ? tap_diag("next_held: %s", err.message), -1 : 0;
}

static void test_held_threads(void)
{
	mt_loader_opts o = shuffled(10, 5, 150);
	held_queue *h = calloc(1, sizeof *h);
	if (!(h->l = open_loader(&o, "held_threads")))
		return free(h);
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	h->seed = 1234;
	tap_diag("held_threads: releaser delay seed %u", h->seed);
	pthread_t t;
	pthread_create(&t, NULL, held_releaser, h);
	size_t fed = 0;
	mt_error err = {0};
	int rc = 0;
	for (uint64_t e = 0; !rc && e < 3; e++)
		rc = (e && mt_loader_set_epoch(h->l, e, &err)) || held_feed(h, &fed);
	/* Closed with batches still queued: their releases come after. */
	mt_loader_close(h->l);
	pthread_mutex_lock(&h->lock);
	h->done = 1;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	pthread_join(t, NULL);
	tap_ok(!rc && fed > 250 && h->released == fed && !h->bad,
	       "3 epochs held, released by another thread (and after the close): %zu of %zu "
	       "released, %zu rows changed while held", h->released, fed, h->bad);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->cond);
	free(h);
}

static void test_misc(void)
{
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	const char *only_x[] = {"x"};
	o.attrs = only_x;
	o.nattrs = 1;
	o.alloc = my_alloc;
	o.dealloc = my_free;
	o.prefetch_bytes = 256; /* tiny windows */
	mt_loader *l = open_loader(&o, "misc");
	if (!l)
		return;
	run r;
	collect(l, &r, 1000);
	tap_ok(r.n == ROWS && !r.bad_values, "one attribute, a tiny budget: all rows right");
	const mt_batch *b;
	mt_error err = {0};
	uint64_t ids[3] = {5, 999, 0};
	if (TAP_CALL(mt_loader_read_rows(l, ids, 3, &b, &err), &err, "read_rows")) {
		const int64_t *x = b->cols[0].data;
		tap_ok(b->rows == 3 && b->ncols == 1 && x[0] == 5 && x[1] == 999 && x[2] == 0,
		       "read_rows returns the rows asked for, in order");
	}
	uint64_t past = ROWS;
	tap_ok(mt_loader_read_rows(l, &past, 1, &b, &err) == MT_ERANGE, "a row past the end: %s",
	       err.message);
	mt_loader_close(l);
	tap_ok(allocs > 0 && allocs == frees, "batch buffers come from the caller's allocator (%zu)",
	       allocs);
	free(r.rows);

	const char *nope[] = {"nope"};
	o.attrs = nope;
	l = NULL;
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == MT_ENOTFOUND && !l,
	       "an unknown attribute: %s", err.message);
	mt_loader_opts_init(&o);
	o.world = 2;
	o.rank = 2;
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == MT_EINVAL, "rank >= world: %s",
	       err.message);
	mt_loader_opts_init(&o);
	o.resume = "hello";
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == MT_EINVAL, "not a token: %s",
	       err.message);
	o.resume = "mtl1 ld v1 999 1 0 1 100 50 1:32:0:2";
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == MT_EINVAL &&
		       strstr(err.message, "999"),
	       "a token for other rows: %s", err.message);
	mt_loader_opts_init(&o);
	o.in_memory = 1;
	o.cache_dir = "/tmp";
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == MT_EINVAL,
	       "a cache directory and in-memory together: %s", err.message);
	mt_loader_opts_init(&o);
	o.in_memory = 1;
	o.batch_rows = 100;
	if ((l = open_loader(&o, "in memory"))) {
		run m1, m2;
		collect(l, &m1, 1000);
		mt_loader_set_epoch(l, 1, &err);
		collect(l, &m2, 1000);
		tap_ok(m1.n == ROWS && m2.n == ROWS && !m1.bad_values && !m2.bad_values,
		       "in memory: two epochs, every row right");
		free(m1.rows);
		free(m2.rows);
		mt_loader_close(l);
	}
	o.resume = "mtl1 other v1 1000 1 0 1 100 50 1:32:0:2";
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == MT_EINVAL, "a token for another "
	       "dataset: %s", err.message);
}

/* Two loaders on the same rows, mixed 70/30. */
static void test_mix(void)
{
	mt_loader *a, *b;
	mt_loader_opts o = shuffled(10, 1, 200);
	a = open_loader(&o, "mix a");
	o.seed = 2;
	b = open_loader(&o, "mix b");
	if (!a || !b)
		return;
	mt_loader *ls[2] = {a, b};
	double w[2] = {0.7, 0.3};
	mt_mix *m;
	mt_error err = {0};
	if (!TAP_CALL(mt_mix_open(ls, w, 2, 9, &m, &err), &err, "mix_open"))
		return;
	char seq[2][201];
	int count[2][ROWS];
	for (int epoch = 0; epoch < 2; epoch++) {
		memset(count, 0, sizeof count);
		size_t n = 0, from_a_first100 = 0, src;
		const mt_batch *bt;
		if (epoch)
			mt_mix_set_epoch(m, 1, &err);
		while (!mt_mix_next(m, &bt, &src, &err) && bt && n < 200) {
			seq[epoch][n] = (char)('a' + src);
			if (n < 100 && src == 0)
				from_a_first100++;
			n++;
			for (size_t i = 0; i < bt->rows; i++)
				count[src][bt->row_ids[i]]++;
		}
		seq[epoch][n] = '\0';
		int once = 1;
		for (int i = 0; i < ROWS; i++)
			once &= count[0][i] == 1 && count[1][i] == 1;
		if (epoch == 0) {
			tap_ok(n == 200 && once, "mixed epoch: all 200 batches, every row of both once");
			tap_ok(from_a_first100 >= 55 && from_a_first100 <= 85,
			       "the first 100 batches follow the 70/30 weights (%zu from a)",
			       from_a_first100);
		}
	}
	tap_ok(strcmp(seq[0], seq[1]) != 0, "another epoch draws another sequence");
	mt_mix_close(m);
	mt_loader_set_epoch(a, 0, &err);
	mt_loader_set_epoch(b, 0, &err);
	mt_mix_open(ls, w, 2, 9, &m, &err);
	char again[201];
	size_t n = 0, src;
	const mt_batch *bt;
	while (!mt_mix_next(m, &bt, &src, &err) && bt && n < 200)
		again[n++] = (char)('a' + src);
	again[n] = '\0';
	tap_ok(strcmp(seq[0], again) == 0, "the same seed and epoch draw the same sequence");
	mt_mix_close(m);
	/* Stop after 60 batches, resume every part from its token: the same 140 follow. */
	mt_loader_set_epoch(a, 0, &err);
	mt_loader_set_epoch(b, 0, &err);
	mt_mix_open(ls, w, 2, 9, &m, &err);
	for (int i = 0; i < 60; i++)
		mt_mix_next(m, &bt, &src, &err);
	char ta[512], tb[512], tm[128];
	mt_loader_state(a, ta, sizeof ta);
	mt_loader_state(b, tb, sizeof tb);
	mt_mix_state(m, tm, sizeof tm);
	mt_mix_close(m);
	mt_loader_opts r;
	mt_loader_opts_init(&r);
	r.batch_rows = 10;
	r.resume = ta;
	mt_loader *ra = open_loader(&r, "mix resume a");
	r.resume = tb;
	mt_loader *rb = open_loader(&r, "mix resume b");
	if (ra && rb) {
		mt_loader *rls[2] = {ra, rb};
		mt_mix_open(rls, w, 2, 9, &m, &err);
		TAP_CALL(mt_mix_resume(m, tm, &err), &err, "mix_resume (%s)", tm);
		n = 60;
		while (!mt_mix_next(m, &bt, &src, &err) && bt && n < 200)
			again[n++] = (char)('a' + src);
		again[n] = '\0';
		tap_ok(n == 200 && strcmp(seq[0] + 60, again + 60) == 0,
		       "a resumed mix draws the rest of the same sequence (%zu batches)", n);
		tap_ok(mt_mix_resume(m, "mtm1 1 0 0 2", &err) == MT_EINVAL, "a token of another "
		       "seed: %s", err.message);
		mt_mix_close(m);
	}
	mt_loader_close(ra);
	mt_loader_close(rb);
	double bad[2] = {1, 0};
	tap_ok(mt_mix_open(ls, bad, 2, 9, &m, &err) == MT_EINVAL, "a zero weight: %s", err.message);
	mt_loader_close(a);
	mt_loader_close(b);
}

/* ---- a store changed behind the loader's back ---------------------------- */

static int file_read(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*data = malloc((size_t)n + 1);
	*len = fread(*data, 1, (size_t)n, f);
	(*data)[*len] = 0;
	fclose(f);
	return *len == (size_t)n ? 0 : -1;
}

static int file_write(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(data, 1, len, f);
	return fclose(f) == 0 && n == len ? 0 : -1;
}

static char *shard_path(const char *dataset, size_t i)
{
	mt_reader *r = NULL;
	mt_shard_info si;
	mt_error err = {0};
	char *path = NULL;
	if (!mt_reader_open(store, dataset, NULL, &r, &err) && !mt_reader_shard(r, i, &si)) {
		path = malloc(strlen(root) + strlen(si.key) + 2);
		sprintf(path, "%s/%s", root, si.key);
	}
	mt_reader_close(r);
	return path;
}

/* One epoch of "bind" in order; 0, or the first error with its message. */
static int read_all(mt_error *err)
{
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.batch_rows = 50;
	mt_loader *l = NULL;
	int rc = mt_loader_open(store, "bind", NULL, &o, &l, err);
	const mt_batch *b = NULL;
	while (!rc && !(rc = mt_loader_next(l, &b, err)) && b)
		;
	mt_loader_close(l);
	return rc;
}

/* Option structs carry their size: a struct from a newer header, or one no
 * *_opts_init set, is refused naming it; init writes only the caller's bytes. */
static void test_opts_size(void)
{
	mt_error err = {0};
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	tap_ok(o.size == sizeof o, "mt_loader_opts_init sets size to sizeof (%zu)", o.size);
	mt_loader *l = NULL;
	o.size = 0;
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == MT_EINVAL && !l &&
		       strstr(err.message, "mt_loader_opts") && strstr(err.message, "mt_loader_opts_init"),
	       "a loader struct of size 0 is refused: %s", err.message);
	/* A newer header: a struct with a field this library does not know. */
	struct {
		mt_loader_opts o;
		uint64_t newer;
	} big;
	mt_loader_opts_init_size(&big.o, sizeof big);
	tap_ok(big.o.size == sizeof big && big.newer == 0,
	       "init for a larger struct sets its size and zeroes what it does not know");
	tap_ok(mt_loader_open(store, "ld", NULL, &big.o, &l, &err) == MT_EINVAL && !l &&
		       strstr(err.message, "newer matorage.h"),
	       "and open refuses it: %s", err.message);
	mt_loader_opts_init(&o);
	o.batch_rows = 100;
	err = (mt_error){0};
	tap_ok(mt_loader_open(store, "ld", NULL, &o, &l, &err) == 0 && mt_loader_batches(l) == 10,
	       "a struct of this header's size opens%s%s", err.code ? ": " : "", err.message);
	mt_loader_close(l);

	unsigned char buf[sizeof(mt_writer_opts) + 8];
	memset(buf, 0xaa, sizeof buf);
	mt_writer_opts_init_size((mt_writer_opts *)(void *)buf, 16);
	size_t got;
	memcpy(&got, buf, sizeof got);
	int untouched = 1;
	for (size_t i = 16; i < sizeof buf; i++)
		untouched &= buf[i] == 0xaa;
	tap_ok(got == 16 && untouched, "init of an older, smaller struct writes only its bytes");

	mt_writer_opts wo;
	mt_writer_opts_init(&wo);
	wo.size = sizeof wo + 8;
	mt_attr a = {.name = "x", .dtype = MT_INT64};
	mt_writer *w = NULL;
	tap_ok(mt_writer_open(store, "sized", &a, 1, &wo, &w, &err) == MT_EINVAL && !w &&
		       strstr(err.message, "mt_writer_opts"),
	       "a writer struct from a newer header is refused: %s", err.message);
	mt_store_opts so;
	mt_store_opts_init(&so);
	so.size = 1;
	mt_store *s = NULL;
	tap_ok(mt_store_open_opts(root, &so, &s, &err) == MT_EINVAL && !s &&
		       strstr(err.message, "mt_store_opts"),
	       "a store struct of an unknown size is refused: %s", err.message);
	mt_store_opts_init(&so);
	tap_ok(mt_store_open_opts(root, &so, &s, &err) == 0, "a store struct set up by init opens");
	mt_store_close(s);
}

static void test_tampered(void)
{
	mt_error err = {0};
	if (make_named("bind", 0) || make_named("bind2", 1 << 20))
		return (void)tap_ok(0, "two datasets of the same layout");
	TAP_CALL(read_all(&err), &err, "tampered: the untouched dataset reads");

	/* Shard 2 of "bind" replaced by shard 2 of "bind2": the same layout and
	 * rows, other values. */
	char *mine = shard_path("bind", 2), *theirs = shard_path("bind2", 2), *keep = NULL,
	     *other = NULL;
	size_t keep_len = 0, other_len = 0;
	if (!mine || !theirs || file_read(mine, &keep, &keep_len) ||
	    file_read(theirs, &other, &other_len) || file_write(mine, other, other_len)) {
		tap_ok(0, "tampered: swap a shard");
	} else {
		int rc = read_all(&err);
		tap_ok(rc == MT_ECORRUPT && strstr(err.message, "bind@v1: shard 2") &&
			       strstr(err.message, "not the one the manifest names"),
		       "a shard object replaced by another fails the epoch, naming it: %s",
		       err.message);
		file_write(mine, keep, keep_len);
	}
	free(mine);
	free(theirs);
	free(keep);
	free(other);

	/* The manifest edited to another dtype of the same size. */
	char path[300];
	snprintf(path, sizeof path, "%s/datasets/bind/versions/v1.json", root);
	char *json = NULL;
	size_t len = 0;
	if (file_read(path, &json, &len))
		return (void)tap_ok(0, "tampered: read the manifest");
	char *dt = strstr(json, "\"int64\""), *edit = malloc(len + 2);
	if (dt)
		sprintf(edit, "%.*s\"uint64%s", (int)(dt - json), json, dt + 6);
	else
		strcpy(edit, json);
	file_write(path, edit, strlen(edit));
	int rc = read_all(&err);
	tap_ok(dt && rc == MT_ECORRUPT && strstr(err.message, "v1.json: checksum"),
	       "a manifest edited to another dtype fails at open: %s", err.message);
	/* Without its checksum it reads as an old manifest: the shard's
	 * chunk index still tells. */
	char *sum = strstr(edit, ",\"checksum\":");
	if (sum)
		strcpy(sum, "}");
	file_write(path, edit, strlen(edit));
	rc = read_all(&err);
	tap_ok(sum && rc == MT_ECORRUPT && strstr(err.message, "bind@v1: shard 0") &&
		       strstr(err.message, "the manifest says uint64, the shard's chunk index says "
				       "int64"),
	       "and without its checksum, at the first shard: %s", err.message);
	file_write(path, json, len);
	TAP_CALL(read_all(&err), &err, "tampered: the restored dataset reads again");
	free(edit);
	free(json);
}

int main(void)
{
	char *dir = root;
	if (!mkdtemp(dir))
		return tap_ok(0, "mkdtemp"), tap_done();
	mt_error err = {0};
	if (mt_store_open(dir, &store, &err) || make_dataset())
		return tap_ok(0, "setup: %s", err.message), tap_done();
	test_plain();
	test_shuffle();
	test_ranks(0);
	test_ranks(1);
	test_epoch_ahead(1, 0);
	test_epoch_ahead(3, 1);
	test_resume();
	test_read_no_rows();
	test_next_into();
	test_next_held();
	test_held_threads();
	test_misc();
	test_mix();
	test_opts_size();
	test_tampered();
	mt_store_close(store);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		tap_diag("cleanup failed");
	return tap_done();
}
