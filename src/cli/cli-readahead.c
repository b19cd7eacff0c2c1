/* cli-readahead.c — reading rows in batches of about READ_BATCH_BYTES, the next ones fetched on threads meanwhile. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "cli.h"

/* Each batch is decoded on the reader's threads while the caller writes the one
 * before: at 8 MiB (8 chunks of 1 MiB over 2 threads) the waits at each batch's
 * end and the threads' uneven shares left a 1 GiB get using 1.1 of 2 cores;
 * 32 MiB took 14% off it (doc/BENCHMARKS.md). */
#define READ_BATCH_BYTES (32u << 20)

/* Batches decoded at once beside the one the caller has: a batch's last
 * chunks leave cores idle unless the next batch is already under way (a
 * fifth of a 1 GiB get with one).  READ_AHEAD + 1 batches are held. */
#define READ_AHEAD 2

/* Batches of fixed-size rows are whole multiples of this and start at the
 * caller's file offset modulo it: the block a direct-I/O writer needs lined up
 * (mt_npy_writer_offset) to write a batch from where it lies. */
#define READ_ALIGN 4096u
#define READ_HUGE_PAGE (2u << 20)
#define READ_HUGE_MIN (8u << 20)

/* Ragged rows: lengths are fetched this many rows at a time, so a version of a
 * billion rows needs no billion-entry array. */
#define CLI_LENGTH_WINDOW 65536

/* One batch read on a thread of its own, so the next batches are fetched and
 * decompressed while the caller writes out the current one. */
struct prefetch {
	mt_reader *r;
	size_t attr;
	uint64_t first, n;
	void *buf;
	size_t bytes;
	void *mem; /* buf's allocation */
	mt_error err;
	int rc;
	int threaded; /* thread runs it: join before use */
	pthread_t thread;
};

static void *prefetch_run(void *arg)
{
	struct prefetch *p = arg;
	p->rc = mt_reader_read(p->r, p->attr, p->first, p->first + p->n, p->buf, p->bytes, &p->err);
	return NULL;
}

/* Rows per batch: about READ_BATCH_BYTES, and a whole number of READ_ALIGN
 * blocks where that is at most the batch, so every batch stays in step. */
static uint64_t fixed_batch_rows(uint64_t row_bytes, uint64_t rows)
{
	if (!row_bytes)
		return rows ? rows : 1;
	uint64_t batch = READ_BATCH_BYTES / row_bytes;
	uint64_t low = row_bytes & -row_bytes; /* the largest power of 2 dividing it */
	uint64_t step = low >= READ_ALIGN ? 1 : READ_ALIGN / low;
	if (batch >= step)
		batch -= batch % step;
	return batch ? batch : 1;
}

/* A batch buffer of cap bytes whose address is congruent to offset modulo
 * READ_ALIGN.  A large one is on transparent huge pages: a direct write pins
 * every page it sends, and 4 KiB pages made that cost a third of a 1 GiB
 * get's system time and slowed the decoders beside it (doc/BENCHMARKS.md). */
static void prefetch_alloc(struct prefetch *p, size_t cap, uint64_t offset)
{
	size_t len = cap + READ_ALIGN;
	if (cap < READ_HUGE_MIN) {
		p->mem = app_xmalloc(len);
	} else {
		len = (len + READ_HUGE_PAGE - 1) & ~(size_t)(READ_HUGE_PAGE - 1);
		if (posix_memalign(&p->mem, READ_HUGE_PAGE, len))
			p->mem = app_xmalloc(len);
		madvise(p->mem, len, MADV_HUGEPAGE); /* advice only: 4 KiB pages still work */
	}
	size_t off = (size_t)(offset % READ_ALIGN + READ_ALIGN - (uintptr_t)p->mem % READ_ALIGN) %
		     READ_ALIGN;
	p->buf = (char *)p->mem + off;
}

/* Batch p: the rows after *next, up to batch of them, read on a thread (or
 * here when no thread starts). */
static void prefetch_start(struct prefetch *p, uint64_t *next, uint64_t b, uint64_t batch,
			   uint64_t row_bytes)
{
	p->first = *next;
	p->n = b - *next < batch ? b - *next : batch;
	p->bytes = (size_t)(p->n * row_bytes);
	*next += p->n;
	p->threaded = p->n && pthread_create(&p->thread, NULL, prefetch_run, p) == 0;
	if (p->n && !p->threaded)
		prefetch_run(p);
}

static void prefetch_wait(struct prefetch *p)
{
	if (p->threaded)
		pthread_join(p->thread, NULL);
	p->threaded = 0;
}

static int cli_read_fixed(mt_reader *r, size_t attr, uint64_t a, uint64_t b, uint64_t offset,
			  cli_rows_fn fn, void *ud)
{
	const mt_attr *at = mt_reader_attr(r, attr);
	uint64_t row_bytes = mt_attr_items(at) * mt_dtype_size(at->dtype);
	uint64_t batch = fixed_batch_rows(row_bytes, b - a), next = a;
	size_t cap = (size_t)((b - a < batch ? b - a : batch) * row_bytes);
	struct prefetch p[READ_AHEAD + 1];
	for (int k = 0; k <= READ_AHEAD; k++) {
		p[k] = (struct prefetch){.r = r, .attr = attr};
		prefetch_alloc(&p[k], cap, offset);
	}
	for (int k = 0; k < READ_AHEAD; k++)
		prefetch_start(&p[k], &next, b, batch, row_bytes);
	int rc = 0;
	for (int cur = 0; !rc; cur = (cur + 1) % (READ_AHEAD + 1)) {
		struct prefetch *now = &p[cur];
		prefetch_wait(now);
		if (!now->n)
			break;
		if (now->rc) {
			rc = cli_fail(&now->err);
			break;
		}
		/* Into the buffer the caller gave back last. */
		prefetch_start(&p[(cur + READ_AHEAD) % (READ_AHEAD + 1)], &next, b, batch, row_bytes);
		rc = fn(ud, now->first, now->n, now->buf, now->bytes, NULL);
	}
	for (int k = 0; k <= READ_AHEAD; k++) {
		prefetch_wait(&p[k]);
		free(p[k].mem);
	}
	return rc;
}

/* A window of row lengths at a time, then groups of rows of about READ_BATCH_BYTES. */
static int cli_read_ragged(mt_reader *r, size_t attr, uint64_t a, uint64_t b, cli_rows_fn fn,
			   void *ud)
{
	const mt_attr *at = mt_reader_attr(r, attr);
	uint64_t item_bytes = mt_attr_items(at) * mt_dtype_size(at->dtype);
	uint64_t *lens = app_xcalloc(CLI_LENGTH_WINDOW, sizeof *lens);
	void *buf = NULL;
	size_t cap = 0;
	mt_error err = { 0 };
	int rc = 0;
	for (uint64_t s = a; !rc && s < b; s += CLI_LENGTH_WINDOW) {
		uint64_t e = b - s < CLI_LENGTH_WINDOW ? b : s + CLI_LENGTH_WINDOW;
		if (mt_reader_ragged_lengths(r, attr, s, e, lens, NULL, &err)) {
			rc = cli_fail(&err);
			break;
		}
		for (uint64_t g0 = s, g1; !rc && g0 < e; g0 = g1) {
			uint64_t bytes = 0;
			for (g1 = g0; g1 < e && (g1 == g0 || bytes < READ_BATCH_BYTES); g1++)
				bytes += lens[g1 - s] * item_bytes;
			if (bytes > cap) {
				buf = app_xreallocarray(buf, (size_t)bytes, 1);
				cap = (size_t)bytes;
			}
			if (mt_reader_read(r, attr, g0, g1, buf, (size_t)bytes, &err))
				rc = cli_fail(&err);
			else
				rc = fn(ud, g0, g1 - g0, buf, (size_t)bytes, lens + (g0 - s));
		}
	}
	free(lens);
	free(buf);
	return rc;
}

/* Rows rebuilt from parity are the right rows, but the stored shards are
 * still damaged: say so, with how much, so that someone repairs them. */
static void cli_heal_note(mt_reader *r)
{
	mt_read_stats st = MT_READ_STATS_INIT;
	mt_reader_stats(r, &st);
	if (!st.healed_chunks && !st.healed_indexes)
		return;
	const mt_version_info *vi = mt_reader_info(r);
	fprintf(stderr, "matorage: warning: %s@%s: healed %llu chunks and %llu chunk indexes from "
		"parity (%llu bytes read); the stored shards are still damaged: run 'matorage "
		"repair %s@%s'\n", vi->dataset, vi->version, (unsigned long long)st.healed_chunks,
		(unsigned long long)st.healed_indexes, (unsigned long long)st.heal_bytes,
		vi->dataset, vi->version);
}

int cli_read_rows(mt_reader *r, size_t attr, uint64_t a, uint64_t b, uint64_t offset,
		  cli_rows_fn fn, void *ud)
{
	int rc = mt_reader_attr(r, attr)->ragged ? cli_read_ragged(r, attr, a, b, fn, ud)
						 : cli_read_fixed(r, attr, a, b, offset, fn, ud);
	cli_heal_note(r);
	return rc;
}
