/* loader.c — batches for training: a plan's rows fetched and decoded ahead on a thread within a budget, handed out batch by batch. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "dataset.h"
#include "loader-plan.h"
#include "loader-token.h"
#include "loader.h"
#include "opts.h"
#include "pool.h"

#define DEFAULT_BATCH 32
#define DEFAULT_BUDGET (256ull << 20)
#define DEFAULT_CACHE (10ull << 30)
#define DEFAULT_FETCH 4
/* Rows of at least this many bytes are scattered with streaming stores. */
#define STREAM_MIN 256
/* mt_loader_opts as the first matorage.h with a size field declared it. */
#define LOADER_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_loader_opts, alloc_ud)

/* One column the loader delivers. */
typedef struct ld_col {
	size_t attr; /* its index in the reader */
	int ragged;
	size_t unit_bytes; /* bytes per row (fixed) or per item (ragged) */
} ld_col;

enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY, SLOT_FAILED };

/* A batch's column handed out held (mt_loader_next_held): rows at..at+n of
 * column c of a window's buffer, the caller's until released. */
typedef struct ld_hold {
	uint64_t id;
	size_t c;
	uint64_t at, n;
} ld_hold;

typedef struct ld_holds {
	ld_hold *v;
	size_t n, cap;
} ld_holds;

/* A window's rows, decoded: rowid[j] for the j-th row in unit order,
 * perm[i] the unit-order index of the i-th row of the window's sequence,
 * inv its inverse and seqid[i] = rowid[perm[i]].  Fixed-size columns hold
 * their rows in sequence order (the decoders put each row in its place),
 * so a batch is a run of them; ragged columns stay in unit order, found
 * through perm and offsets.  Buffers outlive the window they hold: the
 * next one reuses them, since fresh multi-MiB allocations fault every page
 * in again. */
typedef struct ld_slot {
	int state;
	uint64_t index; /* the window's place in the sequence that runs on into the next epoch */
	uint64_t rows;
	uint64_t *rowid, *perm, *inv, *seqid; /* in rows_mem, one after the other */
	uint64_t rows_cap;
	void *rows_mem;
	size_t rows_mem_cap;
	uint8_t **values;
	size_t *values_cap;
	uint64_t **offsets; /* ragged columns: rows + 1 offsets in items */
	mt_error err;
	int rc;
	ld_holds held; /* its batches' columns handed out held, not yet released */
} ld_slot;

/* A slot's column buffers let go while columns of batches handed out of
 * them were still held (slot_detach), the rest of their pages given back:
 * freed at the last release, or at close. */
typedef struct ld_orphan {
	struct ld_orphan *next;
	ld_holds held;
	size_t ncols;
	uint8_t **values; /* the columns held (NULL for the others) */
	size_t *values_cap;
} ld_orphan;

struct mt_loader;

/* One thread filling the windows first, first + step, first + 2 * step, ...
 * of the sequence of this rank's windows that runs on into the next epoch. */
typedef struct ld_filler {
	struct mt_loader *l;
	size_t first, step;
	pthread_t thread;
} ld_filler;

enum { AHEAD_NONE, AHEAD_BUILDING, AHEAD_READY, AHEAD_FAILED };

/* The threads decoding the windows ahead, two slots filled in turn: near,
 * one thread fills both; far away, one thread a slot, so the next window's
 * requests go out while the current one's are decoded.  Window g of the
 * sequence is slot g % 2's: the epoch's windows from `base` on, then those
 * of the next epoch (the loader's `ahead` plan), so that the next epoch's
 * first windows are read while this one's last are handed out, and a
 * training loop that moves on with mt_loader_set_epoch(epoch + 1) finds
 * them ready: no wait for a first window at each epoch's start.  Only for a
 * caller that has called mt_loader_set_epoch: one that reads a single epoch
 * and closes would pay for reads it never uses. */
typedef struct ld_prefetch {
	ld_filler filler[2];
	int nfillers;
	int running, stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	ld_slot slot[2];
	uint64_t base;      /* the sequence's place of this epoch's first window */
	size_t next_window; /* the first of the rank's windows still needed, from base */
	int ahead_state;    /* AHEAD_*: the next epoch's plan */
	int ahead_on;       /* the caller moves the epochs on (it called set_epoch) */
	int deferred;       /* no filler started yet: the first batch starts them */
	int peeking;        /* fillers reading ahead for a window of theirs (slot_whole_ahead) */
	int idle;           /* fillers waiting: for a slot, or for the loader to move on */
	int wanting;        /* the consumer waits for window `want` of the sequence */
	uint64_t want;
	uint64_t hold_ids;  /* holds made so far: the next one's id */
	int held_waits;     /* fillers waiting for a slot's held columns (slot_wait_held) */
	ld_orphan *orphans;
} ld_prefetch;

/* A window's shards, each once, and whether each is read whole
 * (window_shards): kept for the next asks (window_list). */
typedef struct ld_wlist {
	uint64_t made; /* the making of the plan it is of (mt_plan.made); 0: none */
	size_t k, n;   /* the rank window; its shards */
	size_t *shards;
	char *whole;
} ld_wlist;

/* Lists kept: a window's and the next one's, for each of two fillers. */
#define WLISTS 4

/* A batch being handed out: buffers per column. */
typedef struct ld_out {
	mt_batch batch;
	mt_batch_col *cols;
	uint64_t *row_ids;
	size_t rows_cap;
	uint8_t **data;
	size_t *data_cap;
	uint64_t **offsets;
	uint8_t **put; /* where this batch's fixed-size values go: data[c], or the caller's */
	const uint8_t **view;    /* a fixed-size column handed out in place: its rows */
	const uint64_t *view_ids; /* and their row numbers, in the window */
	ld_slot *in_place;        /* the slot they are in (at view_ids - seqid), when every one is */
} ld_out;

struct mt_loader {
	mt_loader_opts opts; /* as given, defaults filled in */
	mt_store *cache;     /* the store seen through the shard cache, when one is used */
	mti_ccache *decoded; /* in_memory: the version's decoded chunks, when they fit */
	mt_reader *reader;
	ld_col *cols;
	size_t ncols;
	mt_plan plans[2];
	mt_plan *plan;  /* this epoch's: plans[0] or plans[1] */
	mt_plan *ahead; /* the other: the next epoch's, made by a filler (fetch.ahead_state) */
	mt_plan_share *stages; /* earlier shares of this epoch (from a resume token) */
	size_t nstages;
	uint64_t batches_taken; /* this epoch, by this rank */
	ld_prefetch fetch;
	ld_out out;      /* mt_loader_next's batch */
	ld_out rows_out; /* mt_loader_read_rows' batch */
	int far;         /* the store is far away (mti_reader_far) */
	int closed;      /* closed with columns held: only they and what frees them are left */
	ld_wlist wl[WLISTS]; /* window lists kept (window_list), under wl_lock */
	unsigned wl_next;    /* the one to replace next */
	pthread_mutex_t wl_lock;
};

/* ---- the prefetch thread ----------------------------------------------- */

static void win_free(void *p, size_t cap);
static void loader_free_last(mt_loader *l);

static void slot_free(mt_loader *l, ld_slot *s)
{
	win_free(s->rows_mem, s->rows_mem_cap);
	for (size_t c = 0; c < l->ncols; c++) {
		if (s->values)
			win_free(s->values[c], s->values_cap[c]);
		if (s->offsets)
			free(s->offsets[c]);
	}
	free(s->values);
	free(s->values_cap);
	free(s->offsets);
	free(s->held.v);
	*s = (ld_slot){.state = SLOT_EMPTY};
}

/* Not through the loader: after its close, another thread's last release
 * may free it meanwhile. */
static void orphan_free(ld_orphan *o)
{
	for (size_t c = 0; c < o->ncols; c++)
		win_free(o->values[c], o->values_cap[c]);
	free(o->values);
	free(o->values_cap);
	free(o->held.v);
	free(o);
}

static int hold_at_cmp(const void *a, const void *b)
{
	uint64_t x = ((const ld_hold *)a)->at, y = ((const ld_hold *)b)->at;
	return x < y ? -1 : x > y;
}

/* Give back the pages of o's column c that no held batch lies in: a batch
 * kept for long then costs its own pages (as a copy would), not its whole
 * window.  Huge pages partly given back are split by the kernel.  o's holds
 * sorted by place. */
static void orphan_trim(mt_loader *l, ld_orphan *o, size_t c)
{
#ifdef MADV_DONTNEED
	size_t ub = l->cols[c].unit_bytes, page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = (uintptr_t)o->values[c], from = base;
	for (size_t i = 0; i <= o->held.n; i++) {
		uintptr_t to = base + o->values_cap[c];
		if (i < o->held.n && o->held.v[i].c != c)
			continue;
		if (i < o->held.n)
			to = base + (uintptr_t)(o->held.v[i].at * ub);
		uintptr_t a = (from + page - 1) & ~(uintptr_t)(page - 1), b = to & ~(uintptr_t)(page - 1);
		if (b > a)
			madvise((void *)a, b - a, MADV_DONTNEED);
		if (i < o->held.n && base + (o->held.v[i].at + o->held.v[i].n) * ub > from)
			from = base + (uintptr_t)((o->held.v[i].at + o->held.v[i].n) * ub);
	}
#else
	(void)l, (void)o, (void)c;
#endif
}

/* The column buffers of s that held batches lie in, to a new orphan, s left
 * to allocate new ones: the loader waits for the window s is to hold next,
 * and the caller still holds batches of the one before.  f->lock held.  -1
 * when out of memory. */
static int slot_detach(mt_loader *l, ld_slot *s)
{
	ld_orphan *o = calloc(1, sizeof *o);
	size_t ncols = l->ncols ? l->ncols : 1;
	if (o) {
		o->values = calloc(ncols, sizeof *o->values);
		o->values_cap = calloc(ncols, sizeof *o->values_cap);
	}
	if (!o || !o->values || !o->values_cap) {
		if (o) {
			free(o->values);
			free(o->values_cap);
		}
		free(o);
		return -1;
	}
	o->ncols = l->ncols;
	o->held = s->held;
	s->held = (ld_holds){0};
	for (size_t i = 0; i < o->held.n; i++) {
		size_t c = o->held.v[i].c;
		if (o->values[c])
			continue;
		o->values[c] = s->values[c];
		o->values_cap[c] = s->values_cap[c];
		s->values[c] = NULL;
		s->values_cap[c] = 0;
	}
	qsort(o->held.v, o->held.n, sizeof *o->held.v, hold_at_cmp);
	for (size_t c = 0; c < l->ncols; c++)
		if (o->values[c])
			orphan_trim(l, o, c);
	o->next = l->fetch.orphans;
	l->fetch.orphans = o;
	return 0;
}

/* Before filling s again: its batches' columns still held are the caller's
 * until released (mt_loader_next_held), so wait for them, unless the
 * consumer waits for window g itself (it may keep them for good: a training
 * loop keeping a few samples), when s takes new buffers instead
 * (slot_detach).  A loop that drops each batch as it takes the next releases
 * the last of a window a moment after the next window's first is handed
 * out, long before this filler is done planning.  f->lock held; -1 when out
 * of memory (s->err says so). */
static int slot_wait_held(mt_loader *l, ld_slot *s, uint64_t g)
{
	ld_prefetch *f = &l->fetch;
	f->idle++;
	f->held_waits++;
	while (s->held.n && !f->stop && !(f->wanting && f->want == g))
		pthread_cond_wait(&f->cond, &f->lock);
	f->held_waits--;
	f->idle--;
	if (!s->held.n || f->stop || !slot_detach(l, s))
		return 0;
	return mti_err(&s->err, MT_ENOMEM, "loader: out of memory");
}

/* A buffer of grow's, cap bytes. */
static void win_free(void *p, size_t cap)
{
	mti_huge_free(p, cap);
}

/* Grow *p to hold n bytes (contents not kept).  A window buffer is filled
 * once per window by the decoders, each row written to a random place: on
 * transparent huge pages it faults in 512 times less often and those
 * writes miss the TLB less (18% less CPU per epoch on small rows and 11%
 * on large, measured with rows gathered at random the other way round):
 * mti_huge_alloc. */
static int grow(void **p, size_t *cap, size_t n)
{
	if (n <= *cap && *p)
		return 0;
	win_free(*p, *cap);
	*p = mti_huge_alloc(n, cap);
	return *p ? 0 : -1;
}

/* Rows a window may hold: slots are sized for that at once, so that the
 * windows of later epochs, shuffled into other sizes, reuse their pages. */
static uint64_t window_cap(const mt_plan *p, uint64_t n)
{
	uint64_t cap = p->window_rows < p->rows ? p->window_rows : p->rows;
	return n > cap ? n : cap;
}

/* Room in s for a window of n rows: row numbers, order, ragged offsets. */
static int slot_reserve(mt_loader *l, const mt_plan *p, ld_slot *s, uint64_t n)
{
	mt_error *err = &s->err;
	n = window_cap(p, n);
	size_t ncols = l->ncols ? l->ncols : 1;
	if (!s->values) {
		s->values = calloc(ncols, sizeof *s->values);
		s->values_cap = calloc(ncols, sizeof *s->values_cap);
		s->offsets = calloc(ncols, sizeof *s->offsets);
		if (!s->values || !s->values_cap || !s->offsets)
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
	}
	if (n > s->rows_cap) {
		for (size_t c = 0; c < l->ncols; c++) {
			free(s->offsets[c]);
			s->offsets[c] = NULL;
		}
		/* One buffer for the four: written by this thread before any
		 * decoding starts, on huge pages they fault in a few times, not
		 * once per 4 KiB (a window of 169k rows: 1,300 faults). */
		uint64_t bytes;
		s->rows_cap = 0;
		if (!mti_mul_ok(n, 4 * sizeof *s->rowid, &bytes) || bytes > SIZE_MAX ||
		    grow(&s->rows_mem, &s->rows_mem_cap, (size_t)bytes))
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
		s->rowid = s->rows_mem;
		s->perm = s->rowid + n;
		s->inv = s->perm + n;
		s->seqid = s->inv + n;
		s->rows_cap = n;
	}
	for (size_t c = 0; c < l->ncols; c++)
		if (l->cols[c].ragged && !s->offsets[c] &&
		    !(s->offsets[c] = malloc((s->rows_cap + 1) * sizeof **s->offsets)))
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
	return 0;
}

/* Reading one unit of a window: pass 0 the ragged columns' row lengths,
 * pass 1 every column's values. */
typedef struct unit_jobs {
	mt_loader *l;
	const mt_plan *p;
	ld_slot *s;
	size_t first_unit;  /* of the window, in the plan's unit_order */
	const uint64_t *at; /* each unit's first row in the window */
	const char *need;   /* each unit: whether the rank's share holds a row of it */
	int pass;
	mt_error *errs;
} unit_jobs;

/* A unit's decoded rows to their places in the window's sequence: row k
 * of the unit (the window's unit-order row `at` + k) to inv[k]. */
struct scatter {
	uint8_t *base;
	size_t unit_bytes;
	const uint64_t *inv; /* from the unit's first row */
};

#ifdef __SSE2__
/* A row to a random place in a window far larger than the caches: streaming
 * stores skip reading each destination line in before overwriting it all
 * (a steady-state epoch of 784-byte rows 0.085 -> 0.077 s, 150 KB rows
 * 0.299 -> 0.290 s, medians of 7 and 5). */
static void copy_stream(uint8_t *dst, const uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i += 16)
		_mm_stream_si128((__m128i *)(void *)(dst + i),
				 _mm_loadu_si128((const __m128i *)(const void *)(src + i)));
}
#endif

static void scatter_rows(void *ud, uint64_t at, uint64_t n, const void *rows)
{
	const struct scatter *sc = ud;
	const uint8_t *src = rows;
	size_t ub = sc->unit_bytes;
#ifdef __SSE2__
	/* Whole 16-byte lines at 16-byte places (the window is 2 MiB aligned). */
	if (ub >= STREAM_MIN && ub % 16 == 0 && (uintptr_t)sc->base % 16 == 0) {
		for (uint64_t k = 0; k < n; k++)
			copy_stream(sc->base + sc->inv[at + k] * ub, src + k * ub, ub);
		_mm_sfence(); /* before the window is handed over */
		return;
	}
#endif
	for (uint64_t k = 0; k < n; k++)
		memcpy(sc->base + sc->inv[at + k] * ub, src + k * ub, ub);
}

/* Job i: column i % ncols of unit i / ncols. */
static int unit_job(void *ud, size_t i)
{
	unit_jobs *j = ud;
	mt_loader *l = j->l;
	ld_slot *s = j->s;
	size_t u = i / l->ncols, c = i % l->ncols;
	const mt_plan_unit *un = &j->p->units[j->p->unit_order[j->first_unit + u]];
	uint64_t a = un->first_row, b = un->first_row + un->rows, at = j->at[u];
	const ld_col *col = &l->cols[c];
	/* No row of it is this rank's: not read (nor its fragment loaded);
	 * its rows' lengths 0, so the window's values hold none of them. */
	if (!j->need[u]) {
		if (j->pass == 0 && col->ragged)
			memset(s->offsets[c] + at + 1, 0, un->rows * sizeof *s->offsets[c]);
		return 0;
	}
	if (j->pass == 0 && col->ragged) {
		uint64_t sum;
		return mt_reader_ragged_lengths(l->reader, col->attr, a, b, s->offsets[c] + at + 1,
						&sum, &j->errs[i]);
	}
	if (j->pass != 1)
		return 0;
	if (!col->ragged) {
		struct scatter sc = {s->values[c], col->unit_bytes, s->inv + at};
		return mti_reader_read_each(l->reader, col->attr, a, b, scatter_rows, &sc,
					    &j->errs[i]);
	}
	uint64_t from = s->offsets[c][at], to = s->offsets[c][at + un->rows];
	return mt_reader_read(l->reader, col->attr, a, b, s->values[c] + from * col->unit_bytes,
			      (size_t)((to - from) * col->unit_bytes), &j->errs[i]);
}

/* Ragged columns: row lengths into offsets; then every column's room. */
static int slot_size_values(mt_loader *l, const mt_plan *p, ld_slot *s)
{
	for (size_t c = 0; c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		uint64_t total = window_cap(p, s->rows);
		if (col->ragged) {
			uint64_t *offs = s->offsets[c];
			offs[0] = 0;
			for (uint64_t i = 0; i < s->rows; i++)
				offs[i + 1] += offs[i];
			total = offs[s->rows];
		}
		size_t bytes = (size_t)(total * col->unit_bytes);
		if (grow((void **)&s->values[c], &s->values_cap[c], bytes))
			return mti_err(&s->err, MT_ENOMEM,
				      "loader: out of memory for a window of %zu bytes", bytes);
	}
	return 0;
}

/* Read window w's units into s.  Each column of each unit is one job, and
 * fetch_threads units' worth of them run at a time, each decoded on the
 * reader's threads: a store far away keeps several requests in flight, and
 * a unit's columns do not wait for each other's round trips. */
static int slot_read(mt_loader *l, const mt_plan *p, ld_slot *s, size_t w)
{
	size_t u0 = p->window_unit[w], nu = p->window_unit[w + 1] - u0;
	size_t njobs = nu * l->ncols;
	int threads = l->opts.fetch_threads * (int)(l->ncols < 4 ? l->ncols : 4);
	uint64_t *at = malloc((nu ? nu : 1) * sizeof *at);
	mt_error *errs = calloc(njobs ? njobs : 1, sizeof *errs);
	char *need = malloc(nu ? nu : 1);
	if (!at || !errs || !need) {
		free(at);
		free(errs);
		free(need);
		return mti_err(&s->err, MT_ENOMEM, "loader: out of memory");
	}
	uint64_t sum = 0;
	for (size_t i = 0; i < nu; i++) {
		at[i] = sum;
		sum += p->units[p->unit_order[u0 + i]].rows;
	}
	mti_plan_window_need(p, w, s->perm, need);
	unit_jobs jobs = {l, p, s, u0, at, need, 0, errs};
	int ragged = 0, rc = 0;
	for (size_t c = 0; c < l->ncols; c++)
		ragged |= l->cols[c].ragged;
	/* Ragged columns: every unit's row lengths first, then where each row goes. */
	if (ragged)
		rc = mti_parallel_for(threads, njobs, unit_job, &jobs);
	if (!rc)
		rc = slot_size_values(l, p, s);
	jobs.pass = 1;
	if (!rc)
		rc = mti_parallel_for(threads, njobs, unit_job, &jobs);
	for (size_t i = 0; rc && i < njobs; i++)
		if (errs[i].code) {
			mti_err_copy(&s->err, &errs[i]);
			break;
		}
	free(at);
	free(errs);
	free(need);
	return rc;
}

/* need[] for the units of rank window k (see mti_plan_window_need); NULL
 * when out of memory. */
static char *window_need(const mt_plan *p, size_t k)
{
	size_t w = p->rank_windows[k], nu = p->window_unit[w + 1] - p->window_unit[w];
	uint64_t n = mti_plan_window_rows(p, w);
	uint64_t *perm = malloc((n ? n : 1) * sizeof *perm);
	char *need = malloc(nu ? nu : 1);
	if (perm && need) {
		mti_plan_window_perm(p, w, perm, n);
		mti_plan_window_need(p, w, perm, need);
	} else {
		free(need);
		need = NULL;
	}
	free(perm);
	return need;
}

/* A shard a window reads, and how many of its rows. */
struct shard_rows {
	size_t shard;
	uint64_t rows;
};

static int shard_rows_cmp(const void *a, const void *b)
{
	size_t x = ((const struct shard_rows *)a)->shard, y = ((const struct shard_rows *)b)->shard;
	return x < y ? -1 : x > y;
}

/* The shards of the units of rank window k, each once, into shards (room
 * for the window's units), *m of them; with whole, whether the window reads
 * (most of) all of that shard: three quarters of its rows or more, every
 * attribute.  Sorted, not searched: a window of one-row shards has as many
 * as rows.  -1 when out of memory. */
static int window_shards(mt_loader *l, const mt_plan *p, size_t k, size_t *shards, char *whole,
			 size_t *m)
{
	size_t w = p->rank_windows[k], n = 0, u0 = p->window_unit[w];
	size_t nu = p->window_unit[w + 1] - u0;
	char *need = window_need(p, k);
	struct shard_rows *sr = need ? malloc((nu ? nu : 1) * sizeof *sr) : NULL;
	*m = 0;
	if (!sr) {
		free(need);
		return -1;
	}
	for (size_t u = 0; u < nu; u++) {
		const mt_plan_unit *un = &p->units[p->unit_order[u0 + u]];
		if (need[u])
			sr[n++] = (struct shard_rows){mti_reader_shard_of(l->reader, un->first_row),
						      un->rows};
	}
	qsort(sr, n, sizeof *sr, shard_rows_cmp);
	for (size_t i = 0; i < n; i++) {
		if (*m && sr[*m - 1].shard == sr[i].shard)
			sr[*m - 1].rows += sr[i].rows;
		else
			sr[(*m)++] = sr[i];
	}
	for (size_t j = 0; j < *m; j++) {
		shards[j] = sr[j].shard;
		mt_shard_info si;
		/* Most of it is as good as all: what the window leaves of the
		 * shard, another window reads, from the whole object while held. */
		whole[j] = !mt_reader_shard(l->reader, sr[j].shard, &si) &&
			   sr[j].rows >= si.rows / 4 * 3 && l->ncols == mt_reader_nattrs(l->reader);
	}
	free(sr);
	free(need);
	return 0;
}

static void wlist_free(ld_wlist *w)
{
	free(w->shards);
	free(w->whole);
	*w = (ld_wlist){0};
}

/* *dst (arrays of its own) as src; -1 when out of memory. */
static int wlist_copy(ld_wlist *dst, const ld_wlist *src)
{
	*dst = *src;
	dst->shards = malloc((src->n ? src->n : 1) * sizeof *dst->shards);
	dst->whole = malloc(src->n ? src->n : 1);
	if (!dst->shards || !dst->whole) {
		wlist_free(dst);
		return -1;
	}
	if (src->n) {
		memcpy(dst->shards, src->shards, src->n * sizeof *dst->shards);
		memcpy(dst->whole, src->whole, src->n);
	}
	return 0;
}

/* Rank window k's shards (window_shards) into *out, arrays of its own to
 * free with wlist_free: a list kept, or worked out and kept.  Far away,
 * each window's list is asked for up to four times (its read-ahead, the
 * chunk indexes of the window before it and its own, its drop), from both
 * fillers, and it takes the window's permutation, a shard per unit and a
 * sort.  -1 when out of memory. */
static int window_list(mt_loader *l, const mt_plan *p, size_t k, ld_wlist *out)
{
	int rc = 1;
	pthread_mutex_lock(&l->wl_lock);
	for (int i = 0; rc > 0 && i < WLISTS; i++)
		if (l->wl[i].made == p->made && l->wl[i].k == k)
			rc = wlist_copy(out, &l->wl[i]);
	pthread_mutex_unlock(&l->wl_lock);
	if (rc <= 0)
		return rc;
	size_t w = p->rank_windows[k], nu = p->window_unit[w + 1] - p->window_unit[w];
	*out = (ld_wlist){p->made, k, 0, malloc((nu ? nu : 1) * sizeof *out->shards),
			  malloc(nu ? nu : 1)};
	if (!out->shards || !out->whole || window_shards(l, p, k, out->shards, out->whole, &out->n)) {
		wlist_free(out);
		return -1;
	}
	ld_wlist keep;
	if (!wlist_copy(&keep, out)) {
		pthread_mutex_lock(&l->wl_lock);
		wlist_free(&l->wl[l->wl_next]);
		l->wl[l->wl_next] = keep;
		l->wl_next = (l->wl_next + 1) % WLISTS;
		pthread_mutex_unlock(&l->wl_lock);
	}
	return 0;
}

/* Far away, the chunk indexes of the shards window k and the next one
 * read, fetched at once before window k's runs: each index otherwise costs
 * a round trip of its own, in front of the runs that need it.  Shards a
 * window reads all of come whole, index and chunks in that one round trip. */
static void slot_indexes(mt_loader *l, const mt_plan *p, size_t k)
{
	ld_wlist a = {0}, b = {0}, both = {0};
	if (window_list(l, p, k, &a) ||
	    (k + 1 < p->nrank_windows && window_list(l, p, k + 1, &b))) {
		wlist_free(&a);
		return;
	}
	both.n = a.n + b.n;
	both.shards = malloc((both.n ? both.n : 1) * sizeof *both.shards);
	both.whole = malloc(both.n ? both.n : 1);
	if (both.shards && both.whole) {
		if (a.n) {
			memcpy(both.shards, a.shards, a.n * sizeof *a.shards);
			memcpy(both.whole, a.whole, a.n);
		}
		if (b.n) {
			memcpy(both.shards + a.n, b.shards, b.n * sizeof *b.shards);
			memcpy(both.whole + a.n, b.whole, b.n);
		}
		mti_reader_load_indexes(l->reader, both.shards, both.whole, both.n);
	}
	wlist_free(&a);
	wlist_free(&b);
	wlist_free(&both);
}

/* After window k is read: the shard objects it read whole are let go (not
 * one the next window reads most of and this one only a little of). */
static void slot_drop_whole(mt_loader *l, const mt_plan *p, size_t k)
{
	ld_wlist a;
	if (window_list(l, p, k, &a))
		return;
	size_t kept = 0;
	for (size_t j = 0; j < a.n; j++)
		if (a.whole[j])
			a.shards[kept++] = a.shards[j];
	mti_reader_drop_whole(l->reader, a.shards, kept);
	wlist_free(&a);
}

/* Far away, while window k waits for its slot (the window before it in
 * that slot still being handed out): the shards it reads most of, read
 * whole now.  Past the first epoch their chunk indexes are known, so
 * nothing else would read ahead, and the window's first requests would
 * only go out once the slot is free, a round trip in front of the batches
 * of each epoch's first window. */
static void slot_whole_ahead(mt_loader *l, const mt_plan *p, size_t k)
{
	ld_wlist a;
	if (window_list(l, p, k, &a))
		return;
	mti_reader_fetch_whole(l->reader, a.shards, a.whole, a.n);
	wlist_free(&a);
}

/* Decode the rank's window number k of plan p into s. */
static int slot_load(mt_loader *l, const mt_plan *p, ld_slot *s, size_t k)
{
	size_t w = p->rank_windows[k];
	if (l->far)
		slot_indexes(l, p, k);
	uint64_t n = mti_plan_window_rows(p, w);
	s->rows = n;
	int rc = slot_reserve(l, p, s, n);
	if (rc)
		return rc;
	mti_plan_window_rowids(p, w, s->rowid);
	mti_plan_window_perm(p, w, s->perm, n);
	for (uint64_t i = 0; i < n; i++) {
		s->inv[s->perm[i]] = i;
		s->seqid[i] = s->rowid[s->perm[i]];
	}
	rc = slot_read(l, p, s, w);
	if (l->far)
		slot_drop_whole(l, p, k);
	return rc;
}

/* The next epoch's plan into l->ahead, made by a filler (f->lock not held):
 * the epoch set_epoch(epoch + 1) would start, with no stages. */
static int ahead_build(mt_loader *l)
{
	const mt_loader_opts *o = &l->opts;
	mt_plan_share share = {o->world, o->batch_rows, o->drop_last, 0};
	mt_error e = {0};
	return mti_plan_epoch(l->ahead, l->plan->epoch + 1, NULL, 0, o->rank, &share, &e);
}

/* Where window g of the sequence lies: plan *p's rank window *k.  Past this
 * epoch's windows, in the next epoch's (its plan made first, by the filler
 * that gets there first); past those, it waits for the loader to move on.
 * 0 when the filler is to stop.  Called and returns with f->lock held. */
static int window_locate(mt_loader *l, uint64_t g, const mt_plan **p, size_t *k)
{
	ld_prefetch *f = &l->fetch;
	while (!f->stop) {
		if (g < f->base + l->plan->nrank_windows) {
			*p = l->plan;
			*k = (size_t)(g - f->base);
			return 1;
		}
		uint64_t next = g - f->base - l->plan->nrank_windows;
		if (f->ahead_state == AHEAD_FAILED)
			return 0;
		/* Not while a filler reads ahead for a window of the plan
		 * that would be made again (slot_whole_ahead). */
		if (f->ahead_state == AHEAD_NONE && f->ahead_on && !f->peeking) {
			f->ahead_state = AHEAD_BUILDING;
			pthread_mutex_unlock(&f->lock);
			int rc = ahead_build(l);
			pthread_mutex_lock(&f->lock);
			f->ahead_state = rc ? AHEAD_FAILED : AHEAD_READY;
			pthread_cond_broadcast(&f->cond);
			continue;
		}
		if (f->ahead_state == AHEAD_READY && next < l->ahead->nrank_windows) {
			*p = l->ahead;
			*k = (size_t)next;
			return 1;
		}
		f->idle++;
		pthread_cond_wait(&f->cond, &f->lock);
		f->idle--;
	}
	return 0;
}

static void *prefetch(void *arg)
{
	ld_filler *me = arg;
	mt_loader *l = me->l;
	ld_prefetch *f = &l->fetch;
	const mt_plan *p;
	size_t k;
	pthread_mutex_lock(&f->lock);
	for (uint64_t g = me->first; window_locate(l, g, &p, &k); g += me->step) {
		ld_slot *s = &f->slot[g % 2];
		/* (Not in memory: the decoded chunks are kept, nothing is read twice.) */
		if (l->far && !l->decoded && s->state != SLOT_EMPTY && !f->stop) {
			f->peeking++;
			pthread_mutex_unlock(&f->lock);
			slot_whole_ahead(l, p, k);
			pthread_mutex_lock(&f->lock);
			f->peeking--;
			pthread_cond_broadcast(&f->cond);
		}
		f->idle++;
		while (s->state != SLOT_EMPTY && !f->stop)
			pthread_cond_wait(&f->cond, &f->lock);
		f->idle--;
		if (f->stop)
			break;
		/* The loader moved on to the next epoch meanwhile, past a window
		 * it never asked for (drop_last's last): not read, and p, its
		 * plan, is the next epoch's to make now. */
		if (g < f->base)
			continue;
		int rc = slot_wait_held(l, s, g);
		if (f->stop)
			break;
		/* Only this thread touches a slot while it is loading; the loader
		 * moving on to the next epoch leaves window g where it was. */
		s->state = SLOT_LOADING;
		s->index = g;
		pthread_mutex_unlock(&f->lock);
		if (!rc)
			rc = slot_load(l, p, s, k);
		pthread_mutex_lock(&f->lock);
		s->rc = rc;
		s->state = rc ? SLOT_FAILED : SLOT_READY;
		pthread_cond_broadcast(&f->cond);
		if (rc)
			break;
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void prefetch_stop(mt_loader *l)
{
	ld_prefetch *f = &l->fetch;
	if (f->running) {
		pthread_mutex_lock(&f->lock);
		f->stop = 1;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
		for (int i = 0; i < f->nfillers; i++)
			pthread_join(f->filler[i].thread, NULL);
		f->running = 0;
	}
	for (int i = 0; i < 2; i++)
		f->slot[i].state = SLOT_EMPTY;
	f->stop = 0;
}

static int prefetch_start(mt_loader *l, mt_error *err)
{
	ld_prefetch *f = &l->fetch;
	f->base = 0;
	f->next_window = 0;
	f->ahead_state = AHEAD_NONE;
	if (!l->plan->nrank_windows)
		return 0;
	int want = l->far && l->plan->nrank_windows > 1 ? 2 : 1;
	for (f->nfillers = 0; f->nfillers < want; f->nfillers++) {
		ld_filler *t = &f->filler[f->nfillers];
		*t = (ld_filler){l, (size_t)f->nfillers, (size_t)want, 0};
		if (pthread_create(&t->thread, NULL, prefetch, t) != 0)
			break;
	}
	if (f->nfillers < want) {
		/* The threads started stop at once: none has a window yet. */
		f->running = f->nfillers > 0;
		prefetch_stop(l);
		return mti_err(err, MT_ENOMEM, "loader: cannot start the prefetch thread");
	}
	f->running = 1;
	return 0;
}

/* The slot holding window w, waiting for it; windows before it are dropped. */
static int window_get(mt_loader *l, size_t w, ld_slot **out, mt_error *err)
{
	ld_prefetch *f = &l->fetch;
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	for (;;) {
		if (f->next_window >= l->plan->nrank_windows) {
			rc = mti_err(err, MT_ESTATE, "loader: window %zu is not in this rank's share", w);
			break;
		}
		uint64_t g = f->base + f->next_window;
		ld_slot *s = &f->slot[g % 2];
		if (s->state == SLOT_FAILED && s->index == g) {
			rc = mti_err_copy(err, &s->err);
			break;
		}
		if (s->state != SLOT_READY || s->index != g) {
			/* A filler waiting for batches held in this slot lets them go. */
			f->wanting = 1;
			f->want = g;
			pthread_cond_broadcast(&f->cond);
			pthread_cond_wait(&f->cond, &f->lock);
			f->wanting = 0;
			continue;
		}
		if (l->plan->rank_windows[f->next_window] == w) {
			*out = s;
			break;
		}
		/* Positions only grow: this window is done with. */
		s->state = SLOT_EMPTY;
		f->next_window++;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* ---- batches ------------------------------------------------------------ */

static void *buf_alloc(mt_loader *l, size_t bytes)
{
	if (l->opts.alloc)
		return l->opts.alloc(l->opts.alloc_ud, bytes ? bytes : 1);
	return malloc(bytes ? bytes : 1);
}

static void buf_free(mt_loader *l, void *p, size_t bytes)
{
	if (!p)
		return;
	if (l->opts.dealloc)
		l->opts.dealloc(l->opts.alloc_ud, p, bytes ? bytes : 1);
	else if (!l->opts.alloc)
		free(p);
}

static void out_free(mt_loader *l, ld_out *b)
{
	for (size_t c = 0; b->data && c < l->ncols; c++) {
		buf_free(l, b->data[c], b->data_cap[c]);
		free(b->offsets[c]);
	}
	free(b->data);
	free(b->data_cap);
	free(b->offsets);
	free(b->put);
	free(b->view);
	free(b->cols);
	free(b->row_ids);
	memset(b, 0, sizeof *b);
}

/* Room for n rows; column c's values need bytes[c]. */
static int out_reserve(mt_loader *l, ld_out *b, size_t n, const size_t *bytes, mt_error *err)
{
	if (!b->cols) {
		b->cols = calloc(l->ncols ? l->ncols : 1, sizeof *b->cols);
		b->data = calloc(l->ncols ? l->ncols : 1, sizeof *b->data);
		b->data_cap = calloc(l->ncols ? l->ncols : 1, sizeof *b->data_cap);
		b->offsets = calloc(l->ncols ? l->ncols : 1, sizeof *b->offsets);
		b->put = calloc(l->ncols ? l->ncols : 1, sizeof *b->put);
		b->view = calloc(l->ncols ? l->ncols : 1, sizeof *b->view);
		if (!b->cols || !b->data || !b->data_cap || !b->offsets || !b->put || !b->view)
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
	}
	/* At least one row: a batch of none still has offsets[0] for its ragged columns. */
	if (n > b->rows_cap || !b->row_ids) {
		n = n ? n : 1;
		uint64_t *ids = realloc(b->row_ids, n * sizeof *ids);
		if (!ids)
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
		b->row_ids = ids;
		for (size_t c = 0; c < l->ncols; c++) {
			if (!l->cols[c].ragged)
				continue;
			uint64_t *o = realloc(b->offsets[c], (n + 1) * sizeof *o);
			if (!o)
				return mti_err(err, MT_ENOMEM, "loader: out of memory");
			b->offsets[c] = o;
		}
		b->rows_cap = n;
	}
	for (size_t c = 0; c < l->ncols; c++) {
		if (bytes[c] <= b->data_cap[c] && b->data[c])
			continue;
		size_t cap = bytes[c] > 2 * b->data_cap[c] ? bytes[c] : 2 * b->data_cap[c];
		void *p = buf_alloc(l, cap);
		if (!p)
			return mti_err(err, MT_ENOMEM, "loader: cannot allocate %zu bytes for a batch",
				      cap);
		buf_free(l, b->data[c], b->data_cap[c]);
		b->data[c] = p;
		b->data_cap[c] = cap;
	}
	b->batch.cols = b->cols;
	b->batch.ncols = l->ncols;
	b->batch.row_ids = b->row_ids;
	return 0;
}

/* Append one row's values of column c at item offset *at (ragged) or row i. */
static int out_put(mt_loader *l, ld_out *b, size_t c, size_t i, const void *src, uint64_t items,
		   mt_error *err)
{
	const ld_col *col = &l->cols[c];
	if (!col->ragged) {
		memcpy(b->put[c] + i * col->unit_bytes, src, col->unit_bytes);
		return 0;
	}
	uint64_t from = b->offsets[c][i];
	size_t need = (size_t)((from + items) * col->unit_bytes);
	if (need > b->data_cap[c]) {
		size_t cap = need > 2 * b->data_cap[c] ? need : 2 * b->data_cap[c];
		uint8_t *p = buf_alloc(l, cap);
		if (!p)
			return mti_err(err, MT_ENOMEM, "loader: cannot allocate %zu bytes for a batch",
				      cap);
		memcpy(p, b->data[c], (size_t)(from * col->unit_bytes));
		buf_free(l, b->data[c], b->data_cap[c]);
		b->data[c] = p;
		b->data_cap[c] = cap;
	}
	memcpy(b->data[c] + from * col->unit_bytes, src, (size_t)(items * col->unit_bytes));
	b->offsets[c][i + 1] = from + items;
	return 0;
}

/* Column c of row `row` read straight from the reader (rows outside the windows). */
static int out_put_col(mt_loader *l, ld_out *b, size_t c, size_t i, uint64_t row, mt_error *err)
{
	const ld_col *col = &l->cols[c];
	uint64_t items = 1;
	if (col->ragged) {
		int rc = mt_reader_ragged_lengths(l->reader, col->attr, row, row + 1, NULL, &items, err);
		if (rc)
			return rc;
	}
	size_t bytes = (size_t)(items * col->unit_bytes);
	void *tmp = malloc(bytes ? bytes : 1);
	if (!tmp)
		return mti_err(err, MT_ENOMEM, "loader: out of memory");
	int rc = mt_reader_read(l->reader, col->attr, row, row + 1, tmp, bytes, err);
	if (!rc)
		rc = out_put(l, b, c, i, tmp, items, err);
	free(tmp);
	return rc;
}

static int out_put_direct(mt_loader *l, ld_out *b, size_t i, uint64_t row, mt_error *err)
{
	int rc = 0;
	for (size_t c = 0; !rc && c < l->ncols; c++)
		rc = out_put_col(l, b, c, i, row, err);
	return rc;
}

/* Room for a batch of n rows; a fixed-size column c with into[c] set is gathered there
 * (the caller's memory, room for n rows) rather than into the loader's buffer. */
static int out_begin(mt_loader *l, ld_out *b, size_t n, void *const *into, mt_error *err)
{
	size_t *bytes = calloc(l->ncols ? l->ncols : 1, sizeof *bytes);
	if (!bytes)
		return mti_err(err, MT_ENOMEM, "loader: out of memory");
	for (size_t c = 0; c < l->ncols; c++)
		bytes[c] = l->cols[c].ragged || (into && into[c]) ? 0 : n * l->cols[c].unit_bytes;
	int rc = out_reserve(l, b, n, bytes, err);
	free(bytes);
	for (size_t c = 0; !rc && c < l->ncols; c++) {
		b->put[c] = into && into[c] && !l->cols[c].ragged ? into[c] : b->data[c];
		b->view[c] = NULL;
		if (l->cols[c].ragged)
			b->offsets[c][0] = 0;
	}
	b->view_ids = NULL;
	b->in_place = NULL;
	return rc;
}

static void out_end(mt_loader *l, ld_out *b, size_t n)
{
	for (size_t c = 0; c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		b->cols[c] = (mt_batch_col){
			.data = col->ragged ? b->data[c] : b->view[c] ? b->view[c] : b->put[c],
			.bytes = col->ragged ? (size_t)(b->offsets[c][n] * col->unit_bytes)
					     : n * col->unit_bytes,
			.offsets = col->ragged ? b->offsets[c] : NULL,
		};
	}
	b->batch.rows = n;
	b->batch.row_ids = b->view_ids ? b->view_ids : b->row_ids;
}

/* Row i of the batch from share index idx past the live rows: padding, a
 * row from the start of the sequence again, read without its window. */
static int batch_put_padding(mt_loader *l, ld_out *b, size_t i, uint64_t idx, mt_error *err)
{
	uint64_t row;
	int rc = mti_plan_row_at(l->plan, mti_plan_position(l->plan, idx), &row, err);
	if (rc)
		return rc;
	b->row_ids[i] = row;
	return out_put_direct(l, b, i, row, err);
}

/* Rows i.. of the batch from share indexes idx.., as many of the next n as
 * lie at consecutive positions of one window: *done says how many.  Their
 * fixed-size values are one run in the window, copied at once, or, when
 * they are the whole batch and the loader owns its buffers (no `alloc`),
 * handed out in place. */
static int batch_put_run(mt_loader *l, ld_out *b, size_t i, uint64_t idx, size_t n,
			 size_t batch_rows, size_t *done, mt_error *err)
{
	uint64_t pos = mti_plan_position(l->plan, idx);
	size_t w = mti_plan_window_of(l->plan, pos);
	ld_slot *s = NULL;
	int rc = window_get(l, w, &s, err);
	if (rc)
		return rc;
	uint64_t start = l->plan->window_start[w], end = l->plan->window_start[w + 1];
	size_t k = 1;
	while (k < n && pos + k < end && mti_plan_position(l->plan, idx + k) == pos + k)
		k++;
	uint64_t at = pos - start;
	int in_place = i == 0 && k == batch_rows && !l->opts.alloc;
	if (in_place) {
		b->view_ids = s->seqid + at;
		b->in_place = s;
	} else
		memcpy(b->row_ids + i, s->seqid + at, k * sizeof *b->row_ids);
	for (size_t c = 0; !rc && c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		const uint8_t *src = s->values[c] + at * col->unit_bytes;
		if (!col->ragged && in_place && b->put[c] == b->data[c])
			b->view[c] = src;
		else if (!col->ragged)
			mti_copy(b->put[c] + i * col->unit_bytes, src, k * col->unit_bytes);
		for (size_t r = 0; !rc && col->ragged && r < k; r++) {
			uint64_t j = s->perm[at + r], from = s->offsets[c][j];
			rc = out_put(l, b, c, i + r, s->values[c] + from * col->unit_bytes,
				     s->offsets[c][j + 1] - from, err);
		}
	}
	*done = k;
	return rc;
}

int mt_loader_next(mt_loader *l, const mt_batch **out, mt_error *err)
{
	return mt_loader_next_into(l, NULL, 0, out, err);
}

int mt_loader_next_into(mt_loader *l, void *const *into, size_t into_rows, const mt_batch **out,
			mt_error *err)
{
	*out = NULL;
	if (l->batches_taken >= l->plan->batches)
		return 0;
	uint64_t first, rows;
	mti_plan_batch(l->plan, l->batches_taken, &first, &rows);
	size_t n = (size_t)rows;
	if (into && n > into_rows)
		return mti_err(err, MT_EINVAL, "loader: the caller's buffers hold %zu rows, the batch "
			       "has %zu", into_rows, n);
	int rc = 0;
	if (l->fetch.deferred && !(rc = prefetch_start(l, err)))
		l->fetch.deferred = 0;
	ld_out *b = &l->out;
	if (!rc)
		rc = out_begin(l, b, n, into, err);
	for (size_t i = 0, done = 1; !rc && i < n; i += done) {
		uint64_t idx = first + i;
		done = 1;
		if (idx >= l->plan->live_rows)
			rc = batch_put_padding(l, b, i, idx, err);
		else
			rc = batch_put_run(l, b, i, idx, (size_t)(l->plan->live_rows - idx < n - i
								     ? l->plan->live_rows - idx
								     : n - i), n, &done, err);
	}
	if (rc)
		return rc;
	out_end(l, b, n);
	l->batches_taken++;
	*out = &b->batch;
	return 0;
}

/* Record column c of the batch just handed out (n rows at `at` of slot s's
 * window) as held: its id, or 0 when out of memory (then not held).
 * f->lock held. */
static uint64_t hold_add(ld_prefetch *f, ld_slot *s, size_t c, uint64_t at, uint64_t n)
{
	ld_holds *h = &s->held;
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		ld_hold *v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return 0;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = (ld_hold){++f->hold_ids, c, at, n};
	return f->hold_ids;
}

int mt_loader_next_held(mt_loader *l, const mt_batch **out, uint64_t *holds, size_t min_bytes,
			mt_error *err)
{
	for (size_t c = 0; c < l->ncols; c++)
		holds[c] = 0;
	int rc = mt_loader_next_into(l, NULL, 0, out, err);
	ld_slot *s = l->out.in_place;
	if (rc || !*out || !s)
		return rc;
	ld_prefetch *f = &l->fetch;
	pthread_mutex_lock(&f->lock);
	for (size_t c = 0; c < l->ncols; c++)
		if (!l->cols[c].ragged && (*out)->cols[c].bytes && (*out)->cols[c].bytes >= min_bytes)
			holds[c] = hold_add(f, s, c, (uint64_t)(l->out.view_ids - s->seqid),
					    (*out)->rows);
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* Drop hold `id` from h: 1 when it was there. */
static int hold_drop(ld_holds *h, uint64_t id)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->v[i].id == id) {
			h->v[i] = h->v[--h->n];
			return 1;
		}
	return 0;
}

void mt_loader_release(mt_loader *l, uint64_t hold)
{
	if (!l || !hold)
		return;
	ld_prefetch *f = &l->fetch;
	ld_orphan *gone = NULL;
	pthread_mutex_lock(&f->lock);
	int found = 0;
	/* A filler is woken only when one waits: a loop releasing each batch
	 * as it takes the next would otherwise wake them every batch. */
	for (int i = 0; i < 2 && !found; i++)
		if ((found = hold_drop(&f->slot[i].held, hold)) && !f->slot[i].held.n &&
		    f->held_waits)
			pthread_cond_broadcast(&f->cond);
	for (ld_orphan **o = &f->orphans; *o && !found; o = &(*o)->next)
		if ((found = hold_drop(&(*o)->held, hold)) && !(*o)->held.n) {
			gone = *o;
			*o = gone->next;
			break;
		}
	int last = l->closed && !f->orphans && !f->slot[0].held.n && !f->slot[1].held.n;
	pthread_mutex_unlock(&f->lock);
	/* Unmapped with no lock held: a window is tens of MiB. */
	if (gone)
		orphan_free(gone);
	if (last)
		loader_free_last(l);
}

int mt_loader_read_rows(mt_loader *l, const uint64_t *rows, size_t n, const mt_batch **out,
			mt_error *err)
{
	*out = NULL;
	ld_out *b = &l->rows_out;
	for (size_t i = 0; i < n; i++)
		if (rows[i] >= l->plan->rows)
			return mti_err(err, MT_ERANGE, "loader: row %" PRIu64 " is past the %" PRIu64
				      " rows of the version", rows[i], l->plan->rows);
	int rc = out_begin(l, b, n, NULL, err);
	if (!rc && n)
		memcpy(b->row_ids, rows, n * sizeof *rows);
	/* Fixed-size columns are gathered chunk by chunk (one decode per chunk,
	 * or none when the chunk cache holds it); ragged ones row by row. */
	for (size_t c = 0; !rc && c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		if (!col->ragged)
			rc = mt_reader_read_rows(l->reader, col->attr, rows, n, b->put[c],
						 n * col->unit_bytes, err);
		for (size_t i = 0; !rc && col->ragged && i < n; i++)
			rc = out_put_col(l, b, c, i, rows[i], err);
	}
	if (rc)
		return rc;
	out_end(l, b, n);
	*out = &b->batch;
	return 0;
}

void mt_loader_cache_stats(const mt_loader *l, mt_cache_stats *out)
{
	mti_reader_cache_stats(l->reader, out);
}

void mt_loader_stats(const mt_loader *l, mt_read_stats *out)
{
	mt_reader_stats(l->reader, out);
}

const mt_reader *mt_loader_reader(const mt_loader *l)
{
	return l->reader;
}

uint64_t mt_loader_batches(const mt_loader *l)
{
	return l->plan->batches;
}

uint64_t mti_loader_batches_left(const mt_loader *l)
{
	return l->plan->batches - l->batches_taken;
}

uint64_t mti_loader_epoch(const mt_loader *l)
{
	return l->plan->epoch;
}

int mti_loader_ahead_ready(mt_loader *l)
{
	ld_prefetch *f = &l->fetch;
	int n = 0;
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < 2; i++)
		n += f->slot[i].state == SLOT_READY &&
		     f->slot[i].index >= f->base + l->plan->nrank_windows;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int mti_loader_fillers_idle(mt_loader *l)
{
	ld_prefetch *f = &l->fetch;
	pthread_mutex_lock(&f->lock);
	int n = f->idle;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int mti_loader_orphans(mt_loader *l)
{
	ld_prefetch *f = &l->fetch;
	pthread_mutex_lock(&f->lock);
	int n = 0;
	for (const ld_orphan *o = f->orphans; o; o = o->next)
		n++;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* The plan of `epoch` after the stages, and its windows fetched ahead. */
static int loader_start(mt_loader *l, uint64_t epoch, mt_error *err)
{
	const mt_loader_opts *o = &l->opts;
	mt_plan_share share = {o->world, o->batch_rows, o->drop_last, 0};
	l->batches_taken = 0;
	int rc = mti_plan_epoch(l->plan, epoch, l->stages, l->nstages, o->rank, &share, err);
	if (rc)
		return rc;
	/* Deferred, the first batch starts the fillers: read_rows never does. */
	l->fetch.deferred = o->defer_windows;
	return o->defer_windows ? 0 : prefetch_start(l, err);
}

/* set_epoch(epoch) without stopping the fillers: 1 when nothing needs
 * undoing.  The epoch already started, untouched: it stays as it is (its
 * first windows may be read already, or being read).  The next one, after
 * all of this one: its plan, made ahead, becomes the loader's, and the
 * windows read of it stay.  Not when a read failed (set_epoch is how a
 * caller tries again), nor for the next epoch while this epoch's windows
 * are still being read (drop_last leaves the last one unused). */
static int epoch_keep(mt_loader *l, uint64_t epoch)
{
	ld_prefetch *f = &l->fetch;
	int keep = 0;
	pthread_mutex_lock(&f->lock);
	f->ahead_on = 1;
	pthread_cond_broadcast(&f->cond);
	uint64_t end = f->base + l->plan->nrank_windows;
	int failed = 0, busy = 0;
	for (int i = 0; i < 2; i++) {
		failed |= f->slot[i].state == SLOT_FAILED;
		busy |= f->slot[i].state == SLOT_LOADING && f->slot[i].index < end;
	}
	/* The epoch the loader opened on, set right after the open as a
	 * training loop does: the windows being read are this epoch's. */
	if (f->running && !failed && epoch == l->plan->epoch && !l->nstages && !l->batches_taken)
		keep = 1;
	else if (f->running && !failed && !busy && epoch == l->plan->epoch + 1 &&
		 l->batches_taken >= l->plan->batches && f->ahead_state == AHEAD_READY) {
		for (int i = 0; i < 2; i++)
			if (f->slot[i].state == SLOT_READY && f->slot[i].index < end)
				f->slot[i].state = SLOT_EMPTY;
		f->base = end;
		f->next_window = 0;
		mt_plan *t = l->plan;
		l->plan = l->ahead;
		l->ahead = t;
		f->ahead_state = AHEAD_NONE;
		l->batches_taken = 0;
		free(l->stages);
		l->stages = NULL;
		l->nstages = 0;
		pthread_cond_broadcast(&f->cond);
		keep = 1;
	}
	pthread_mutex_unlock(&f->lock);
	return keep;
}

int mt_loader_set_epoch(mt_loader *l, uint64_t epoch, mt_error *err)
{
	if (epoch_keep(l, epoch))
		return 0;
	prefetch_stop(l);
	free(l->stages);
	l->stages = NULL;
	l->nstages = 0;
	return loader_start(l, epoch, err);
}

size_t mt_loader_state(const mt_loader *l, char *buf, size_t cap)
{
	const mt_version_info *vi = mt_reader_info(l->reader);
	const mt_plan *p = l->plan;
	mt_token t = {
		.dataset = vi->dataset,
		.version = vi->version,
		.rows = p->rows,
		.seed = p->seed,
		.epoch = p->epoch,
		.shuffle = p->shuffle,
		.window_rows = p->window_rows,
		.unit_rows = p->unit_rows,
		.stages = l->stages,
		.nstages = l->nstages,
	};
	mt_plan_share now = p->share;
	now.batches_taken = l->batches_taken;
	return mti_token_format(&t, &now, buf, cap);
}

/* ---- open and close ----------------------------------------------------- */

void mt_loader_opts_init_size(mt_loader_opts *o, size_t size)
{
	/* Every default is 0, resolved when the loader opens. */
	mt_loader_opts defaults;
	memset(&defaults, 0, sizeof defaults);
	mti_opts_init(o, size, &defaults, sizeof defaults);
}

static void loader_defaults(mt_loader_opts *o)
{
	if (!o->batch_rows)
		o->batch_rows = DEFAULT_BATCH;
	if (!o->world)
		o->world = 1;
	if (!o->prefetch_bytes)
		o->prefetch_bytes = DEFAULT_BUDGET;
	if (o->fetch_threads <= 0)
		o->fetch_threads = DEFAULT_FETCH;
}

/* The version a resume token names, checked against what the caller asked
 * for; its order and earlier shares go to the loader. */
static int loader_open_token(mt_loader *l, mt_store *s, const char *dataset, const char *version,
			     mt_error *err)
{
	mt_token t;
	int rc = mti_token_parse(l->opts.resume, &t, err);
	if (!rc && dataset && strcmp(dataset, t.dataset))
		rc = mti_err(err, MT_EINVAL, "loader: the resume token is for dataset %s, not %s",
			    t.dataset, dataset);
	else if (!rc && version && *version && strcmp(version, "latest") &&
		 strcmp(version, t.version))
		rc = mti_err(err, MT_EINVAL, "loader: the resume token is for %s@%s, not @%s",
			    t.dataset, t.version, version);
	if (!rc)
		rc = mti_reader_open_as(s, t.dataset, t.version, MTI_OPEN_LAZY, &l->reader, err);
	if (!rc && mt_reader_info(l->reader)->rows != t.rows)
		rc = mti_err(err, MT_EINVAL, "loader: the resume token counts %" PRIu64
			    " rows, %s@%s has %" PRIu64, t.rows, t.dataset, t.version,
			    mt_reader_info(l->reader)->rows);
	if (!rc) {
		mti_plan_init(l->plan, t.rows, t.window_rows, t.unit_rows, t.shuffle, t.seed);
		l->plan->epoch = t.epoch;
		l->stages = t.stages;
		l->nstages = t.nstages;
		t.stages = NULL;
	}
	mti_token_free(&t);
	return rc;
}

/* Whether an open of `version` can start on the metadata cache's guess of
 * the latest (dataset/latest.c) and keeps what it finds as the next
 * guess: the latest of a far store.  Through a shard cache too: its
 * entries are named by the sha256 of their bytes and checked against it,
 * so what a refuted guess's windows put there is right, only of no use to
 * this open (the entry of the guess is named by the S3 store's URL, which
 * the shard cache keeps as its own: plain and cached opens share it).  And
 * in_memory: its decoded chunks or compressed shards belong to the loader,
 * closed with it when the listing refutes the guess. */
static int loader_guesses(const mt_loader *l, mt_store *s, const char *version)
{
	const mt_loader_opts *o = &l->opts;
	return s->ops->far && !o->resume && !(o->cache_dir && o->in_memory) &&
	       (!version || !*version || !strcmp(version, "latest"));
}

/* The store to read (through a shard cache when asked) and the version:
 * manifest m (with its text json, both taken) when the caller has it. */
static int loader_open_reader(mt_loader *l, mt_store *s, const char *dataset,
			      const char *version, mt_manifest *m, char *json, mt_error *err)
{
	const mt_loader_opts *o = &l->opts;
	int rc = 0, far = s->ops->far, guesses = loader_guesses(l, s, version), listed = !m;
	mt_store *far_store = s;
	if (o->cache_dir && o->in_memory)
		rc = mti_err(err, MT_EINVAL, "loader: a cache directory or in-memory, not both");
	else if (o->cache_dir) {
		rc = mti_store_cache_open(s, o->cache_dir, o->cache_bytes ? o->cache_bytes : DEFAULT_CACHE,
					 &l->cache, err);
		s = l->cache;
	}
	if (o->rank >= o->world)
		rc = mti_err(err, MT_EINVAL, "loader: rank %u is not below the world size %u", o->rank,
			    o->world);
	if (rc) {
		mti_manifest_free(m);
		free(json);
		return rc;
	}
	/* A loader needs the data, not the edited description: no metadata
	 * object.  A format-2 version's fragments are read as windows need them.
	 * Through a shard cache the version is found in the store itself, as
	 * far away (the latest: the listing and the head at once), not through
	 * the cache, which reads as a near store. */
	if (!m && o->cache_dir && !o->resume)
		rc = mti_dataset_open(far_store, dataset, version, MTI_OPEN_LAZY, &m, &json, err);
	if (!rc && m)
		rc = mti_reader_open_manifest(s, m, json, &l->reader, err);
	else if (!rc)
		rc = o->resume ? loader_open_token(l, s, dataset, version, err)
			: mti_reader_open_as(s, dataset, version, MTI_OPEN_LAZY, &l->reader, err);
	/* Far away, what the next process opening this version would read again
	 * (fragments, chunk indexes; the latest's manifest, as a guess) is kept
	 * on local disk: its first window then waits for the data alone.  A
	 * shard cache holds whole shards, their chunk indexes with them. */
	int meta = far && !o->in_memory && !o->cache_dir;
	mti_meta_cache *mc = !rc && (meta || (guesses && listed)) ? mti_meta_cache_open() : NULL;
	if (mc && guesses && listed)
		mti_latest_keep(far_store, mc, dataset, mti_reader_json(l->reader));
	if (mc && meta)
		mti_reader_set_meta_cache(l->reader, mc);
	else
		mti_meta_cache_close(mc);
	return rc;
}

/* The error for an attribute the version lacks, naming those it has. */
static int attr_missing(const mt_loader *l, const char *name, mt_error *err)
{
	const mt_version_info *vi = mt_reader_info(l->reader);
	char has[512] = "";
	size_t n = 0;
	for (size_t i = 0; i < mt_reader_nattrs(l->reader) && n < sizeof has; i++) {
		int k = snprintf(has + n, sizeof has - n, "%s%s", i ? ", " : "",
				 mt_reader_attr(l->reader, i)->name);
		n += k > 0 ? (size_t)k : 0;
	}
	return mti_err(err, MT_ENOTFOUND, "loader: %s@%s has no attribute %s (it has %s)",
		      vi->dataset, vi->version, name, has);
}

/* The columns to deliver; *row_bytes: the bytes of one row of them. */
static int loader_columns(mt_loader *l, uint64_t *row_bytes, mt_error *err)
{
	const mt_loader_opts *o = &l->opts;
	l->ncols = o->attrs ? o->nattrs : mt_reader_nattrs(l->reader);
	l->cols = calloc(l->ncols ? l->ncols : 1, sizeof *l->cols);
	if (!l->cols)
		return mti_err(err, MT_ENOMEM, "out of memory");
	*row_bytes = 0;
	for (size_t c = 0; c < l->ncols; c++) {
		int a = o->attrs ? mt_reader_attr_index(l->reader, o->attrs[c]) : (int)c;
		if (a < 0)
			return attr_missing(l, o->attrs[c], err);
		const mt_attr *at = mt_reader_attr(l->reader, (size_t)a);
		l->cols[c] = (ld_col){(size_t)a, at->ragged,
				      (size_t)(mt_attr_items(at) * mt_dtype_size(at->dtype))};
		*row_bytes += l->cols[c].unit_bytes;
	}
	return 0;
}

/* l's reader opened again on store s, on the manifest it has: no round trip
 * for it again, and the version opened is the one l has, though a guessed
 * latest (dataset/latest.c) may be gone from the store by now. */
static int loader_reopen(mt_loader *l, mt_store *s, mt_error *err)
{
	const mt_version_info *vi = mt_reader_info(l->reader);
	char *json = mti_strdup(mti_reader_json(l->reader));
	char *what = mti_asprintf("%s@%s", vi->dataset, vi->version);
	mt_manifest *m = NULL;
	int rc = json && what ? mti_manifest_decode(json, strlen(json), what, &m, err)
			      : mti_err(err, MT_ENOMEM, "loader: out of memory");
	free(what);
	if (rc) {
		free(json);
		return rc;
	}
	mt_reader_close(l->reader);
	l->reader = NULL;
	return mti_reader_open_manifest(s, m, json, &l->reader, err);
}

/* in_memory: the version held in memory within cache_bytes.  Decoded when
 * the decoded rows of the columns fit (a private chunk cache that keeps
 * every chunk the loader decodes: from the first touch of a chunk on, its
 * rows cost a copy); else, as they are read, the compressed shards that fit
 * (the reader is opened again on the store seen through them). */
static int loader_in_memory(mt_loader *l, mt_store *s, uint64_t row_bytes, mt_error *err)
{
	const mt_loader_opts *o = &l->opts;
	if (!o->in_memory)
		return 0;
	uint64_t cap = o->cache_bytes ? o->cache_bytes : DEFAULT_CACHE;
	const mt_version_info *vi = mt_reader_info(l->reader);
	uint64_t need = 0;
	int ragged = 0;
	for (size_t c = 0; c < l->ncols; c++)
		ragged |= l->cols[c].ragged;
	/* Ragged columns: the version's own count of its uncompressed bytes, an upper bound. */
	int known = 1;
	if (ragged)
		need = vi->raw_bytes;
	else
		known = mti_mul_ok(vi->rows, row_bytes, &need);
	if (known && need <= cap) {
		/* The cache's bookkeeping (a few hundred bytes a chunk) on top. */
		if (!(l->decoded = mti_ccache_new(cap + cap / 64)))
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
		mti_reader_set_cache(l->reader, l->decoded, 1);
		return 0;
	}
	int rc = mti_store_cache_open(s, NULL, cap, &l->cache, err);
	return rc ? rc : loader_reopen(l, l->cache, err);
}

static int plan_shard(void *ud, uint64_t first_row, uint64_t rows, mt_error *err)
{
	return mti_plan_add_shard(ud, first_row, rows, err);
}

/* A plan for the version: windows from the budget (a token brings its
 * own), units cut from the shards. */
static int loader_plan(mt_loader *l, uint64_t row_bytes, mt_error *err)
{
	const mt_loader_opts *o = &l->opts;
	const mt_version_info *vi = mt_reader_info(l->reader);
	/* Ragged rows: their average size, from the version's totals. */
	if (vi->rows && vi->raw_bytes / vi->rows > row_bytes)
		row_bytes = vi->raw_bytes / vi->rows;
	if (!row_bytes)
		row_bytes = 1;
	if (!o->resume) {
		/* Two windows are resident at once: the one read, the one fetched. */
		uint64_t window = o->shuffle_rows ? o->shuffle_rows : o->prefetch_bytes / 2 / row_bytes;
		if (window < 2)
			window = 2;
		mti_plan_init(l->plan, vi->rows, window, window / 2, o->shuffle, o->seed);
		l->plan->epoch = o->epoch;
	}
	/* Units: runs of at most unit_rows rows inside one shard.  A format-2
	 * root gives the shards' rows of its fragments; those are read when a
	 * window first needs their rows, not here. */
	if (mti_reader_each_shard(l->reader, plan_shard, l->plan, err))
		return mti_err_prefix(err, "loader: ");
	/* The next epoch's plan, made ahead by the fillers, has the same units. */
	return mti_plan_copy_layout(l->ahead, l->plan, err);
}

/* A loader with the caller's options, not opened yet. */
static int loader_new(const mt_loader_opts *opts, mt_loader **out, mt_error *err)
{
	mt_loader *l = calloc(1, sizeof *l);
	*out = l;
	if (!l)
		return mti_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&l->fetch.lock, NULL);
	pthread_cond_init(&l->fetch.cond, NULL);
	pthread_mutex_init(&l->wl_lock, NULL);
	l->plan = &l->plans[0];
	l->ahead = &l->plans[1];
	mt_loader_opts_init(&l->opts);
	int rc = opts ? mti_opts_take(&l->opts, sizeof l->opts, opts, LOADER_OPTS_FIRST,
				     "mt_loader_opts", err)
		      : 0;
	loader_defaults(&l->opts);
	return rc;
}

/* Open l on the version (manifest m with its text json, both taken, when
 * the caller has it): its plan made and its first windows being read. */
static int loader_build(mt_loader *l, mt_store *s, const char *dataset, const char *version,
			mt_manifest *m, char *json, mt_error *err)
{
	uint64_t row_bytes = 0;
	int rc = loader_open_reader(l, s, dataset, version, m, json, err);
	if (!rc)
		rc = loader_columns(l, &row_bytes, err);
	if (!rc)
		rc = loader_in_memory(l, s, row_bytes, err);
	if (!rc && l->opts.decode_threads > 0)
		mti_reader_set_threads(l->reader, l->opts.decode_threads);
	if (!rc)
		l->far = mti_reader_far(l->reader);
	if (!rc)
		rc = loader_plan(l, row_bytes, err);
	if (!rc)
		rc = loader_start(l, l->plan->epoch, err);
	return rc;
}

/* The loader l (rc: its open's result) was opened on the guessed latest,
 * its first windows read while the listing ran: kept when the listing
 * confirms the guess.  Otherwise it is closed, its windows dropped before
 * anyone could take a row of them, and a loader opened on the listing's
 * latest in its place. */
static int loader_confirm(mt_loader **l, mti_latest *guess, int rc, mt_store *s,
			  const char *dataset, const mt_loader_opts *opts, mt_error *err)
{
	mt_manifest *m = NULL;
	char *json = NULL;
	mt_error e = {0};
	int v = mti_latest_wait(guess, &m, &json, &e);
	if (v == 0)
		return rc;
	mt_loader_close(*l);
	*l = NULL;
	if (v < 0)
		return mti_err_copy(err, &e);
	rc = loader_new(opts, l, err);
	if (!rc)
		return loader_build(*l, s, dataset, "latest", m, json, err);
	mti_manifest_free(m);
	free(json);
	return rc;
}

int mt_loader_open(mt_store *s, const char *dataset, const char *version,
		   const mt_loader_opts *opts, mt_loader **out, mt_error *err)
{
	*out = NULL;
	mt_loader *l = NULL;
	int rc = loader_new(opts, &l, err);
	/* Far away, the latest is opened on the metadata cache's guess while
	 * the listing that confirms it is in flight (dataset/latest.c): the
	 * first window's data is asked for a round trip sooner.  The open
	 * returns only once the listing has confirmed the guess. */
	mti_meta_cache *mc = !rc && loader_guesses(l, s, version) ? mti_meta_cache_open() : NULL;
	mt_manifest *m = NULL;
	char *json = NULL;
	mti_latest *guess = NULL;
	if (mc)
		mti_latest_guess(s, mc, dataset, &m, &json, &guess);
	if (!rc)
		rc = loader_build(l, s, dataset, version, m, json, err);
	if (guess)
		rc = loader_confirm(&l, guess, rc, s, dataset, opts, err);
	mti_meta_cache_close(mc);
	if (rc) {
		mt_loader_close(l);
		return rc;
	}
	*out = l;
	return 0;
}

/* What a loader closed with columns held still needs to release them:
 * freed at the last release (mt_loader_release). */
static void loader_free_last(mt_loader *l)
{
	free(l->cols);
	pthread_mutex_destroy(&l->fetch.lock);
	pthread_cond_destroy(&l->fetch.cond);
	free(l);
}

void mt_loader_close(mt_loader *l)
{
	if (!l)
		return;
	prefetch_stop(l);
	/* Columns still held keep their own pages, in orphans, till released;
	 * out of memory for an orphan, the slot's buffers are left, not freed
	 * under them. */
	ld_prefetch *f = &l->fetch;
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < 2; i++)
		if (!f->slot[i].held.n || !slot_detach(l, &f->slot[i]))
			slot_free(l, &f->slot[i]);
	pthread_mutex_unlock(&f->lock);
	out_free(l, &l->out);
	out_free(l, &l->rows_out);
	mt_reader_close(l->reader);
	mti_ccache_free(l->decoded);
	if (l->cache)
		l->cache->ops->close(l->cache);
	mti_plan_free(&l->plans[0]);
	mti_plan_free(&l->plans[1]);
	free(l->stages);
	for (int i = 0; i < WLISTS; i++)
		wlist_free(&l->wl[i]);
	pthread_mutex_destroy(&l->wl_lock);
	/* Only now may a release free the loader: one on another thread while
	 * the rest was freed above found it not closed yet, and left it. */
	pthread_mutex_lock(&f->lock);
	int held = f->orphans || f->slot[0].held.n || f->slot[1].held.n;
	l->closed = held;
	pthread_mutex_unlock(&f->lock);
	if (!held)
		loader_free_last(l);
}
