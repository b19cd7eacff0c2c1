/* loader.c — batches for training: deterministic shuffled order, rank shares, resume tokens, a prefetch thread within a budget. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "pool.h"

#define DEFAULT_BATCH 32
#define DEFAULT_BUDGET (256ull << 20)
#define TOKEN_MAGIC "mtl1"
#define DEFAULT_CACHE (10ull << 30)
#define DEFAULT_FETCH 4

typedef struct ld_unit {
	uint64_t first, rows;
} ld_unit;

/* A run of sequence positions. */
typedef struct ld_range {
	uint64_t a, b;
} ld_range;

/* One partition of an epoch's rows: world ranks, batch rows, drop_last,
 * and how many batches each rank had taken when the token was made. */
typedef struct ld_stage {
	unsigned world;
	uint64_t batch;
	int drop;
	uint64_t taken;
} ld_stage;

typedef struct ld_col {
	size_t attr;
	int ragged;
	size_t unit_bytes; /* bytes per row (fixed) or per item (ragged) */
} ld_col;

enum { SLOT_EMPTY, SLOT_LOADING, SLOT_READY, SLOT_FAILED };

/* A window's rows, decoded: rowid[j] for the j-th row in unit order,
 * perm[i] the unit-order index of the i-th row of the window's sequence.
 * Buffers outlive the window they hold: the next one reuses them, since
 * fresh multi-MiB allocations fault every page in again. */
typedef struct ld_slot {
	int state;
	size_t k; /* index into the rank's window list */
	uint64_t n;
	uint64_t *rowid, *perm;
	uint64_t rows_cap;
	uint8_t **vals;
	size_t *vals_cap;
	uint64_t **offs; /* ragged columns: n+1 offsets in items */
	mt_error err;
	int rc;
} ld_slot;

/* A batch being handed out: buffers per column. */
typedef struct ld_out {
	mt_batch batch;
	mt_batch_col *cols;
	uint64_t *row_ids;
	size_t rows_cap;
	uint8_t **data;
	size_t *data_cap;
	uint64_t **offs;
} ld_out;

struct mt_loader {
	mt_store *cache; /* the store seen through the shard cache, when one is used */
	mt_reader *r;
	mt_loader_opts o;
	ld_col *cols;
	size_t ncols;
	uint64_t rows;
	uint64_t wrows, urows; /* window and unit sizes in rows */
	uint64_t epoch;
	ld_unit *units;
	size_t nunits;
	size_t *order;
	size_t nwin;
	size_t *win_u0;      /* window w: order[win_u0[w] .. win_u0[w + 1]) */
	uint64_t *win_start; /* window w: positions [win_start[w], win_start[w + 1]) */

	ld_stage *stages; /* earlier partitions of this epoch (from a token) */
	size_t nstages;
	ld_range *live; /* the positions they left, ascending */
	size_t nlive;
	uint64_t *live_pre; /* index of live[i].a among them */
	uint64_t R;         /* how many */
	uint64_t per, nb, taken;

	size_t *mywin; /* windows this rank visits, in order */
	size_t nmywin;
	size_t cur; /* the first of them still needed */

	pthread_t thread;
	int running, stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	ld_slot slot[2];

	ld_out out, rr;
};

/* ---- deterministic randomness ------------------------------------------ */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A generator for (seed, epoch, stream): streams never share a sequence. */
static uint64_t rng_seed(uint64_t seed, uint64_t epoch, uint64_t stream)
{
	uint64_t s = seed;
	uint64_t a = splitmix(&s) ^ epoch;
	uint64_t b = splitmix(&a) ^ stream;
	return splitmix(&b);
}

/* Uniform in [0, n) without modulo bias (Lemire). */
static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)splitmix(s) * n;
	uint64_t lo = (uint64_t)m;
	if (lo < n) {
		uint64_t t = -n % n;
		while (lo < t) {
			m = (unsigned __int128)splitmix(s) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

static void shuffle_u64(uint64_t *a, uint64_t n, uint64_t state)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = rng_below(&state, i);
		uint64_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static void shuffle_size(size_t *a, size_t n, uint64_t state)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)rng_below(&state, i);
		size_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* ---- the epoch's sequence and this rank's share ------------------------ */

static void split(uint64_t R, unsigned world, uint64_t batch, int drop, uint64_t *per,
		  uint64_t *nb)
{
	if (drop) {
		*nb = R / ((uint64_t)world * batch);
		*per = *nb * batch;
	} else {
		*per = (R + world - 1) / world;
		*nb = (*per + batch - 1) / batch;
	}
}

/* Position of the i-th live row. */
static uint64_t live_pos(const mt_loader *l, uint64_t i)
{
	size_t lo = 0, hi = l->nlive;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (l->live_pre[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	return l->live[lo].a + (i - l->live_pre[lo]);
}

static size_t window_of(const mt_loader *l, uint64_t pos)
{
	size_t lo = 0, hi = l->nwin;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (l->win_start[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static int live_set(mt_loader *l, ld_range *ranges, size_t n)
{
	uint64_t *pre = malloc((n ? n : 1) * sizeof *pre);
	if (!pre)
		return MT_ENOMEM;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		pre[i] = sum;
		sum += ranges[i].b - ranges[i].a;
	}
	free(l->live);
	free(l->live_pre);
	l->live = ranges;
	l->nlive = n;
	l->live_pre = pre;
	l->R = sum;
	return 0;
}

/* Append the positions of live indices [ia, ib) to *out. */
static int live_map(const mt_loader *l, uint64_t ia, uint64_t ib, ld_range **out, size_t *n,
		    size_t *cap)
{
	while (ia < ib) {
		uint64_t pos = live_pos(l, ia);
		size_t k = 0;
		while (k + 1 < l->nlive && l->live_pre[k + 1] <= ia)
			k++;
		uint64_t run = l->live[k].b - pos;
		if (run > ib - ia)
			run = ib - ia;
		if (*n == *cap) {
			size_t c = *cap ? 2 * *cap : 16;
			ld_range *g = realloc(*out, c * sizeof *g);
			if (!g)
				return MT_ENOMEM;
			*out = g;
			*cap = c;
		}
		(*out)[(*n)++] = (ld_range){pos, pos + run};
		ia += run;
	}
	return 0;
}

/* The units, their order and the windows of the current epoch; the live
 * positions after the token's stages; this rank's share and windows. */
static int plan(mt_loader *l, mt_error *err)
{
	const mt_loader_opts *o = &l->o;
	for (size_t i = 0; i < l->nunits; i++)
		l->order[i] = i;
	if (o->shuffle)
		shuffle_size(l->order, l->nunits, rng_seed(o->seed, l->epoch, 0));
	size_t w = 0;
	uint64_t pos = 0, inwin = 0;
	for (size_t i = 0; i < l->nunits; i++) {
		uint64_t n = l->units[l->order[i]].rows;
		if (i == 0 || inwin + n > l->wrows) {
			l->win_u0[w] = i;
			l->win_start[w] = pos;
			w++;
			inwin = 0;
		}
		inwin += n;
		pos += n;
	}
	l->nwin = w;
	l->win_u0[w] = l->nunits;
	l->win_start[w] = pos;

	ld_range *all = malloc(sizeof *all);
	if (all)
		all[0] = (ld_range){0, l->rows};
	if (!all || live_set(l, all, 1)) {
		free(all);
		return mt_err(err, MT_ENOMEM, "loader: out of memory");
	}
	for (size_t s = 0; s < l->nstages; s++) {
		const ld_stage *st = &l->stages[s];
		uint64_t per, nb;
		split(l->R, st->world, st->batch, st->drop, &per, &nb);
		ld_range *next = NULL;
		size_t n = 0, cap = 0;
		uint64_t done = st->taken * st->batch < per ? st->taken * st->batch : per;
		for (unsigned r = 0; r < st->world; r++) {
			uint64_t a = (uint64_t)r * per + done, b = (uint64_t)(r + 1) * per;
			if (b > l->R)
				b = l->R;
			if (a < b && live_map(l, a, b, &next, &n, &cap)) {
				free(next);
				return mt_err(err, MT_ENOMEM, "loader: out of memory");
			}
		}
		if (live_set(l, next, n)) {
			free(next);
			return mt_err(err, MT_ENOMEM, "loader: out of memory");
		}
	}
	split(l->R, o->world, o->batch_rows, o->drop_last, &l->per, &l->nb);
	l->taken = 0;

	/* The windows this rank's rows lie in, in the order it meets them. */
	l->nmywin = 0;
	uint64_t a = (uint64_t)o->rank * l->per, b = a + l->per;
	if (b > l->R)
		b = l->R;
	ld_range *mine = NULL;
	size_t n = 0, cap = 0;
	if (a < b && live_map(l, a, b, &mine, &n, &cap)) {
		free(mine);
		return mt_err(err, MT_ENOMEM, "loader: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t v = window_of(l, mine[i].a); v <= window_of(l, mine[i].b - 1); v++)
			if (!l->nmywin || l->mywin[l->nmywin - 1] != v)
				l->mywin[l->nmywin++] = v;
	}
	free(mine);
	l->cur = 0;
	return 0;
}

/* ---- the prefetch thread ----------------------------------------------- */

static void slot_free(mt_loader *l, ld_slot *s)
{
	free(s->rowid);
	free(s->perm);
	for (size_t c = 0; c < l->ncols; c++) {
		if (s->vals)
			free(s->vals[c]);
		if (s->offs)
			free(s->offs[c]);
	}
	free(s->vals);
	free(s->vals_cap);
	free(s->offs);
	*s = (ld_slot){.state = SLOT_EMPTY};
}

/* Grow *p to hold n bytes (contents not kept). */
static int grow(void **p, size_t *cap, size_t n)
{
	if (n <= *cap && *p)
		return 0;
	free(*p);
	*p = malloc(n ? n : 1);
	*cap = *p ? n : 0;
	return *p ? 0 : -1;
}

/* Reading one unit of a window: pass 0 the ragged columns' row lengths,
 * pass 1 every column's values. */
typedef struct unit_jobs {
	mt_loader *l;
	ld_slot *s;
	size_t u0;
	const uint64_t *at; /* each unit's first row in the window */
	int pass;
	mt_error *errs;
} unit_jobs;

static int unit_job(void *ud, size_t i)
{
	unit_jobs *j = ud;
	mt_loader *l = j->l;
	ld_slot *s = j->s;
	const ld_unit *un = &l->units[l->order[j->u0 + i]];
	uint64_t at = j->at[i];
	for (size_t c = 0; c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		int rc = 0;
		if (j->pass == 0 && col->ragged) {
			uint64_t sum;
			rc = mt_reader_ragged_lengths(l->r, col->attr, un->first, un->first + un->rows,
						      s->offs[c] + at + 1, &sum, &j->errs[i]);
		} else if (j->pass == 1) {
			uint64_t from = col->ragged ? s->offs[c][at] : at;
			uint64_t to = col->ragged ? s->offs[c][at + un->rows] : at + un->rows;
			rc = mt_reader_read(l->r, col->attr, un->first, un->first + un->rows,
					    s->vals[c] + from * col->unit_bytes,
					    (size_t)((to - from) * col->unit_bytes), &j->errs[i]);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Decode window mywin[k] into s. */
static int slot_load(mt_loader *l, ld_slot *s, size_t k)
{
	size_t w = l->mywin[k];
	uint64_t n = l->win_start[w + 1] - l->win_start[w];
	mt_error *err = &s->err;
	s->k = k;
	s->n = n;
	if (!s->vals) {
		s->vals = calloc(l->ncols ? l->ncols : 1, sizeof *s->vals);
		s->vals_cap = calloc(l->ncols ? l->ncols : 1, sizeof *s->vals_cap);
		s->offs = calloc(l->ncols ? l->ncols : 1, sizeof *s->offs);
		if (!s->vals || !s->vals_cap || !s->offs)
			return mt_err(err, MT_ENOMEM, "loader: out of memory");
	}
	if (n > s->rows_cap) {
		free(s->rowid);
		free(s->perm);
		for (size_t c = 0; c < l->ncols; c++) {
			free(s->offs[c]);
			s->offs[c] = NULL;
		}
		s->rowid = malloc(n * sizeof *s->rowid);
		s->perm = malloc(n * sizeof *s->perm);
		s->rows_cap = s->rowid && s->perm ? n : 0;
		if (!s->rows_cap)
			return mt_err(err, MT_ENOMEM, "loader: out of memory");
	}
	uint64_t j = 0;
	for (size_t u = l->win_u0[w]; u < l->win_u0[w + 1]; u++) {
		const ld_unit *un = &l->units[l->order[u]];
		for (uint64_t i = 0; i < un->rows; i++)
			s->rowid[j++] = un->first + i;
	}
	for (uint64_t i = 0; i < n; i++)
		s->perm[i] = i;
	if (l->o.shuffle)
		shuffle_u64(s->perm, n, rng_seed(l->o.seed, l->epoch, (uint64_t)w + 1));
	/* Units are read fetch_threads at a time, each decoded on the reader's
	 * threads: a store far away keeps several requests in flight. */
	size_t u0 = l->win_u0[w], nu = l->win_u0[w + 1] - u0;
	uint64_t *at = malloc((nu ? nu : 1) * sizeof *at);
	mt_error *errs = calloc(nu ? nu : 1, sizeof *errs);
	int rc = at && errs ? 0 : mt_err(err, MT_ENOMEM, "loader: out of memory");
	uint64_t sum = 0;
	for (size_t i = 0; !rc && i < nu; i++) {
		at[i] = sum;
		sum += l->units[l->order[u0 + i]].rows;
	}
	unit_jobs uj = {l, s, u0, at, 0, errs};
	int ragged = 0;
	for (size_t c = 0; c < l->ncols; c++)
		ragged |= l->cols[c].ragged;
	for (size_t c = 0; !rc && c < l->ncols; c++)
		if (l->cols[c].ragged && !s->offs[c] &&
		    !(s->offs[c] = malloc((s->rows_cap + 1) * sizeof **s->offs)))
			rc = mt_err(err, MT_ENOMEM, "loader: out of memory");
	/* Ragged columns: every unit's row lengths first, then where each row goes. */
	if (!rc && ragged)
		rc = mt_parallel_for(l->o.fetch_threads, nu, unit_job, &uj);
	for (size_t c = 0; !rc && c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		uint64_t total = n;
		if (col->ragged) {
			uint64_t *offs = s->offs[c];
			offs[0] = 0;
			for (uint64_t i = 0; i < n; i++)
				offs[i + 1] += offs[i];
			total = offs[n];
		}
		size_t bytes = (size_t)(total * col->unit_bytes);
		if (grow((void **)&s->vals[c], &s->vals_cap[c], bytes))
			rc = mt_err(err, MT_ENOMEM, "loader: out of memory for a window of %zu bytes",
				    bytes);
	}
	uj.pass = 1;
	if (!rc)
		rc = mt_parallel_for(l->o.fetch_threads, nu, unit_job, &uj);
	for (size_t i = 0; rc && i < nu && errs; i++)
		if (errs[i].code) {
			mt_err_copy(err, &errs[i]);
			break;
		}
	free(at);
	free(errs);
	return rc;
}

static void *prefetch(void *arg)
{
	mt_loader *l = arg;
	pthread_mutex_lock(&l->lock);
	for (size_t k = 0; k < l->nmywin && !l->stop; k++) {
		ld_slot *s = &l->slot[k % 2];
		while (s->state != SLOT_EMPTY && !l->stop)
			pthread_cond_wait(&l->cond, &l->lock);
		if (l->stop)
			break;
		/* Only this thread touches a slot while it is loading. */
		s->state = SLOT_LOADING;
		pthread_mutex_unlock(&l->lock);
		int rc = slot_load(l, s, k);
		pthread_mutex_lock(&l->lock);
		s->k = k;
		s->rc = rc;
		s->state = rc ? SLOT_FAILED : SLOT_READY;
		pthread_cond_broadcast(&l->cond);
		if (rc)
			break;
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static void prefetch_stop(mt_loader *l)
{
	if (l->running) {
		pthread_mutex_lock(&l->lock);
		l->stop = 1;
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
		l->running = 0;
	}
	for (int i = 0; i < 2; i++)
		l->slot[i].state = SLOT_EMPTY;
	l->stop = 0;
}

static int prefetch_start(mt_loader *l, mt_error *err)
{
	if (!l->nmywin)
		return 0;
	if (pthread_create(&l->thread, NULL, prefetch, l) != 0)
		return mt_err(err, MT_ENOMEM, "loader: cannot start the prefetch thread");
	l->running = 1;
	return 0;
}

/* The slot holding window w, waiting for it; windows before it are dropped. */
static int window_get(mt_loader *l, size_t w, ld_slot **out, mt_error *err)
{
	pthread_mutex_lock(&l->lock);
	int rc = 0;
	for (;;) {
		if (l->cur >= l->nmywin) {
			rc = mt_err(err, MT_ESTATE, "loader: window %zu is not in this rank's share", w);
			break;
		}
		ld_slot *s = &l->slot[l->cur % 2];
		if (s->state == SLOT_FAILED && s->k == l->cur) {
			rc = mt_err_copy(err, &s->err);
			break;
		}
		if (s->state != SLOT_READY || s->k != l->cur) {
			pthread_cond_wait(&l->cond, &l->lock);
			continue;
		}
		if (l->mywin[l->cur] == w) {
			*out = s;
			break;
		}
		/* Positions only grow: this window is done with. */
		s->state = SLOT_EMPTY;
		l->cur++;
		pthread_cond_broadcast(&l->cond);
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
}

/* ---- batches ------------------------------------------------------------ */

static void *buf_alloc(mt_loader *l, size_t bytes)
{
	if (l->o.alloc)
		return l->o.alloc(l->o.alloc_ud, bytes ? bytes : 1);
	return malloc(bytes ? bytes : 1);
}

static void buf_free(mt_loader *l, void *p, size_t bytes)
{
	if (!p)
		return;
	if (l->o.dealloc)
		l->o.dealloc(l->o.alloc_ud, p, bytes ? bytes : 1);
	else if (!l->o.alloc)
		free(p);
}

static void out_free(mt_loader *l, ld_out *b)
{
	for (size_t c = 0; b->data && c < l->ncols; c++) {
		buf_free(l, b->data[c], b->data_cap[c]);
		free(b->offs[c]);
	}
	free(b->data);
	free(b->data_cap);
	free(b->offs);
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
		b->offs = calloc(l->ncols ? l->ncols : 1, sizeof *b->offs);
		if (!b->cols || !b->data || !b->data_cap || !b->offs)
			return mt_err(err, MT_ENOMEM, "loader: out of memory");
	}
	if (n > b->rows_cap) {
		uint64_t *ids = realloc(b->row_ids, n * sizeof *ids);
		if (!ids)
			return mt_err(err, MT_ENOMEM, "loader: out of memory");
		b->row_ids = ids;
		for (size_t c = 0; c < l->ncols; c++) {
			if (!l->cols[c].ragged)
				continue;
			uint64_t *o = realloc(b->offs[c], (n + 1) * sizeof *o);
			if (!o)
				return mt_err(err, MT_ENOMEM, "loader: out of memory");
			b->offs[c] = o;
		}
		b->rows_cap = n;
	}
	for (size_t c = 0; c < l->ncols; c++) {
		if (bytes[c] <= b->data_cap[c] && b->data[c])
			continue;
		size_t cap = bytes[c] > 2 * b->data_cap[c] ? bytes[c] : 2 * b->data_cap[c];
		void *p = buf_alloc(l, cap);
		if (!p)
			return mt_err(err, MT_ENOMEM, "loader: cannot allocate %zu bytes for a batch",
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
		memcpy(b->data[c] + i * col->unit_bytes, src, col->unit_bytes);
		return 0;
	}
	uint64_t from = b->offs[c][i];
	size_t need = (size_t)((from + items) * col->unit_bytes);
	if (need > b->data_cap[c]) {
		size_t cap = need > 2 * b->data_cap[c] ? need : 2 * b->data_cap[c];
		uint8_t *p = buf_alloc(l, cap);
		if (!p)
			return mt_err(err, MT_ENOMEM, "loader: cannot allocate %zu bytes for a batch",
				      cap);
		memcpy(p, b->data[c], (size_t)(from * col->unit_bytes));
		buf_free(l, b->data[c], b->data_cap[c]);
		b->data[c] = p;
		b->data_cap[c] = cap;
	}
	memcpy(b->data[c] + from * col->unit_bytes, src, (size_t)(items * col->unit_bytes));
	b->offs[c][i + 1] = from + items;
	return 0;
}

/* Row `row` read straight from the reader (rows outside the windows). */
static int out_put_direct(mt_loader *l, ld_out *b, size_t i, uint64_t row, mt_error *err)
{
	for (size_t c = 0; c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		uint64_t items = 1;
		if (col->ragged) {
			int rc = mt_reader_ragged_lengths(l->r, col->attr, row, row + 1, NULL, &items,
							  err);
			if (rc)
				return rc;
		}
		size_t bytes = (size_t)(items * col->unit_bytes);
		void *tmp = malloc(bytes ? bytes : 1);
		if (!tmp)
			return mt_err(err, MT_ENOMEM, "loader: out of memory");
		int rc = mt_reader_read(l->r, col->attr, row, row + 1, tmp, bytes, err);
		if (!rc)
			rc = out_put(l, b, c, i, tmp, items, err);
		free(tmp);
		if (rc)
			return rc;
	}
	return 0;
}

static int out_begin(mt_loader *l, ld_out *b, size_t n, mt_error *err)
{
	size_t *bytes = calloc(l->ncols ? l->ncols : 1, sizeof *bytes);
	if (!bytes)
		return mt_err(err, MT_ENOMEM, "loader: out of memory");
	for (size_t c = 0; c < l->ncols; c++)
		bytes[c] = l->cols[c].ragged ? 0 : n * l->cols[c].unit_bytes;
	int rc = out_reserve(l, b, n, bytes, err);
	free(bytes);
	for (size_t c = 0; !rc && c < l->ncols; c++)
		if (l->cols[c].ragged)
			b->offs[c][0] = 0;
	return rc;
}

static void out_end(mt_loader *l, ld_out *b, size_t n)
{
	for (size_t c = 0; c < l->ncols; c++) {
		const ld_col *col = &l->cols[c];
		b->cols[c] = (mt_batch_col){
			.data = b->data[c],
			.bytes = col->ragged ? (size_t)(b->offs[c][n] * col->unit_bytes)
					     : n * col->unit_bytes,
			.offsets = col->ragged ? b->offs[c] : NULL,
		};
	}
	b->batch.rows = n;
}

int mt_loader_next(mt_loader *l, const mt_batch **out, mt_error *err)
{
	*out = NULL;
	if (l->taken >= l->nb)
		return 0;
	uint64_t B = l->o.batch_rows;
	uint64_t i0 = (uint64_t)l->o.rank * l->per + l->taken * B;
	uint64_t end = (uint64_t)(l->o.rank + 1) * l->per;
	size_t n = (size_t)(end - i0 < B ? end - i0 : B);
	ld_out *b = &l->out;
	int rc = out_begin(l, b, n, err);
	for (size_t i = 0; !rc && i < n; i++) {
		uint64_t idx = i0 + i;
		if (idx >= l->R) {
			/* Padding: a row from the start of the sequence again. */
			uint64_t pos = live_pos(l, (idx - l->R) % l->R);
			size_t w = window_of(l, pos);
			const ld_unit *un = NULL;
			uint64_t off = pos - l->win_start[w], row = 0;
			/* Without the window at hand: find the row from its unit order. */
			uint64_t perm_i = off;
			if (l->o.shuffle) {
				uint64_t nwin = l->win_start[w + 1] - l->win_start[w];
				uint64_t *p = malloc(nwin * sizeof *p);
				if (!p) {
					rc = mt_err(err, MT_ENOMEM, "loader: out of memory");
					break;
				}
				for (uint64_t k = 0; k < nwin; k++)
					p[k] = k;
				shuffle_u64(p, nwin, rng_seed(l->o.seed, l->epoch, (uint64_t)w + 1));
				perm_i = p[off];
				free(p);
			}
			for (size_t u = l->win_u0[w]; u < l->win_u0[w + 1]; u++) {
				un = &l->units[l->order[u]];
				if (perm_i < un->rows) {
					row = un->first + perm_i;
					break;
				}
				perm_i -= un->rows;
			}
			b->row_ids[i] = row;
			rc = out_put_direct(l, b, i, row, err);
			continue;
		}
		uint64_t pos = live_pos(l, idx);
		size_t w = window_of(l, pos);
		ld_slot *s = NULL;
		if ((rc = window_get(l, w, &s, err)))
			break;
		uint64_t j = s->perm[pos - l->win_start[w]];
		b->row_ids[i] = s->rowid[j];
		for (size_t c = 0; !rc && c < l->ncols; c++) {
			const ld_col *col = &l->cols[c];
			uint64_t from = col->ragged ? s->offs[c][j] : j;
			uint64_t items = col->ragged ? s->offs[c][j + 1] - from : 1;
			rc = out_put(l, b, c, i, s->vals[c] + from * col->unit_bytes, items, err);
		}
	}
	if (rc)
		return rc;
	out_end(l, b, n);
	l->taken++;
	*out = &b->batch;
	return 0;
}

int mt_loader_read_rows(mt_loader *l, const uint64_t *rows, size_t n, const mt_batch **out,
			mt_error *err)
{
	*out = NULL;
	ld_out *b = &l->rr;
	for (size_t i = 0; i < n; i++)
		if (rows[i] >= l->rows)
			return mt_err(err, MT_ERANGE, "loader: row %" PRIu64 " is past the %" PRIu64
				      " rows of the version", rows[i], l->rows);
	int rc = out_begin(l, b, n, err);
	for (size_t i = 0; !rc && i < n; i++) {
		b->row_ids[i] = rows[i];
		rc = out_put_direct(l, b, i, rows[i], err);
	}
	if (rc)
		return rc;
	out_end(l, b, n);
	*out = &b->batch;
	return 0;
}

uint64_t mt_loader_batches(const mt_loader *l)
{
	return l->nb;
}

int mt_loader_set_epoch(mt_loader *l, uint64_t epoch, mt_error *err)
{
	prefetch_stop(l);
	l->epoch = epoch;
	free(l->stages);
	l->stages = NULL;
	l->nstages = 0;
	int rc = plan(l, err);
	return rc ? rc : prefetch_start(l, err);
}

/* ---- tokens ------------------------------------------------------------- */

size_t mt_loader_state(const mt_loader *l, char *buf, size_t cap)
{
	const mt_version_info *vi = mt_reader_info(l->r);
	char head[512];
	int n = snprintf(head, sizeof head,
			 TOKEN_MAGIC " %s %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %" PRIu64
				     " %" PRIu64,
			 vi->dataset, vi->version, l->rows, l->o.seed, l->epoch, l->o.shuffle ? 1 : 0,
			 l->wrows, l->urows);
	size_t len = n > 0 ? (size_t)n : 0;
	if (buf && cap)
		snprintf(buf, cap, "%s", head);
	for (size_t s = 0; s <= l->nstages; s++) {
		ld_stage st = s < l->nstages ? l->stages[s]
					     : (ld_stage){l->o.world, l->o.batch_rows, l->o.drop_last,
							  l->taken};
		char part[96];
		int k = snprintf(part, sizeof part, " %u:%" PRIu64 ":%d:%" PRIu64, st.world,
				 st.batch, st.drop, st.taken);
		if (buf && len < cap)
			snprintf(buf + len, cap - len, "%s", part);
		len += k > 0 ? (size_t)k : 0;
	}
	return len;
}

/* Parse a token: version and order fields into the loader; stages kept. */
static int token_parse(mt_loader *l, const char *tok, char **version, mt_error *err)
{
	char magic[8], ds[200], ver[200];
	uint64_t rows, seed, epoch, wrows, urows;
	int shuffle, used = 0;
	if (sscanf(tok, "%7s %199s %199s %" SCNu64 " %" SCNu64 " %" SCNu64 " %d %" SCNu64
			" %" SCNu64 "%n",
		   magic, ds, ver, &rows, &seed, &epoch, &shuffle, &wrows, &urows, &used) != 9 ||
	    strcmp(magic, TOKEN_MAGIC) || !wrows || !urows)
		return mt_err(err, MT_EINVAL, "loader: not a resume token: '%.60s'", tok);
	size_t cap = 4;
	l->stages = malloc(cap * sizeof *l->stages);
	if (!l->stages)
		return mt_err(err, MT_ENOMEM, "out of memory");
	const char *p = tok + used;
	for (;;) {
		ld_stage st;
		int k = 0;
		if (sscanf(p, " %u:%" SCNu64 ":%d:%" SCNu64 "%n", &st.world, &st.batch, &st.drop,
			   &st.taken, &k) != 4)
			break;
		if (!st.world || !st.batch)
			return mt_err(err, MT_EINVAL, "loader: resume token has a stage with no ranks "
				      "or batch rows");
		if (l->nstages == cap) {
			ld_stage *g = realloc(l->stages, 2 * cap * sizeof *g);
			if (!g)
				return mt_err(err, MT_ENOMEM, "out of memory");
			l->stages = g;
			cap *= 2;
		}
		l->stages[l->nstages++] = st;
		p += k;
	}
	while (*p == ' ' || *p == '\n')
		p++;
	if (*p || !l->nstages)
		return mt_err(err, MT_EINVAL, "loader: resume token is damaged near '%.20s'", p);
	l->o.seed = seed;
	l->o.shuffle = shuffle;
	l->epoch = epoch;
	l->wrows = wrows;
	l->urows = urows;
	l->rows = rows;
	*version = mt_asprintf("%s %s", ds, ver);
	return *version ? 0 : mt_err(err, MT_ENOMEM, "out of memory");
}

/* ---- open and close ----------------------------------------------------- */

void mt_loader_opts_init(mt_loader_opts *o)
{
	memset(o, 0, sizeof *o);
}

int mt_loader_open(mt_store *s, const char *dataset, const char *version,
		   const mt_loader_opts *opts, mt_loader **out, mt_error *err)
{
	*out = NULL;
	mt_loader *l = calloc(1, sizeof *l);
	if (!l)
		return mt_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	if (opts)
		l->o = *opts;
	mt_loader_opts *o = &l->o;
	if (!o->batch_rows)
		o->batch_rows = DEFAULT_BATCH;
	if (!o->world)
		o->world = 1;
	if (!o->prefetch_bytes)
		o->prefetch_bytes = DEFAULT_BUDGET;
	if (o->fetch_threads <= 0)
		o->fetch_threads = DEFAULT_FETCH;
	l->epoch = o->epoch;
	int rc = 0;
	char *tokver = NULL;
	if (o->cache_dir && o->in_memory)
		rc = mt_err(err, MT_EINVAL, "loader: a cache directory or in-memory, not both");
	else if (o->cache_dir || o->in_memory) {
		rc = mt_store_cache_open(s, o->in_memory ? NULL : o->cache_dir,
					 o->cache_bytes ? o->cache_bytes : DEFAULT_CACHE, &l->cache, err);
		s = l->cache;
	}
	if (o->rank >= o->world)
		rc = mt_err(err, MT_EINVAL, "loader: rank %u is not below the world size %u", o->rank,
			    o->world);
	if (!rc && o->resume)
		rc = token_parse(l, o->resume, &tokver, err);
	if (!rc && tokver) {
		char *sp = strchr(tokver, ' ');
		*sp = '\0';
		if (dataset && strcmp(dataset, tokver))
			rc = mt_err(err, MT_EINVAL, "loader: the resume token is for dataset %s, not %s",
				    tokver, dataset);
		else if (version && *version && strcmp(version, "latest") && strcmp(version, sp + 1))
			rc = mt_err(err, MT_EINVAL, "loader: the resume token is for %s@%s, not @%s",
				    tokver, sp + 1, version);
		if (!rc)
			rc = mt_reader_open(s, tokver, sp + 1, &l->r, err);
		if (!rc && mt_reader_info(l->r)->rows != l->rows)
			rc = mt_err(err, MT_EINVAL, "loader: the resume token counts %" PRIu64
				    " rows, %s@%s has %" PRIu64, l->rows, tokver, sp + 1,
				    mt_reader_info(l->r)->rows);
	} else if (!rc) {
		rc = mt_reader_open(s, dataset, version, &l->r, err);
	}
	free(tokver);
	if (rc) {
		mt_loader_close(l);
		return rc;
	}
	if (o->decode_threads > 0)
		mt_reader_set_threads(l->r, o->decode_threads);
	const mt_version_info *vi = mt_reader_info(l->r);
	l->rows = vi->rows;
	size_t nattrs = mt_reader_nattrs(l->r);
	l->ncols = o->attrs ? o->nattrs : nattrs;
	l->cols = calloc(l->ncols ? l->ncols : 1, sizeof *l->cols);
	if (!l->cols)
		rc = mt_err(err, MT_ENOMEM, "out of memory");
	uint64_t row_bytes = 0;
	for (size_t c = 0; !rc && c < l->ncols; c++) {
		int a = o->attrs ? mt_reader_attr_index(l->r, o->attrs[c]) : (int)c;
		if (a < 0) {
			rc = mt_err(err, MT_ENOTFOUND, "loader: %s@%s has no attribute %s", vi->dataset,
				    vi->version, o->attrs[c]);
			break;
		}
		const mt_attr *at = mt_reader_attr(l->r, (size_t)a);
		l->cols[c] = (ld_col){(size_t)a, at->ragged,
				      (size_t)(mt_attr_items(at) * mt_dtype_size(at->dtype))};
		row_bytes += l->cols[c].unit_bytes;
	}
	/* Ragged rows: their average size, from the version's totals. */
	if (vi->rows && vi->raw_bytes / vi->rows > row_bytes)
		row_bytes = vi->raw_bytes / vi->rows;
	if (!row_bytes)
		row_bytes = 1;
	if (!rc && !tokver && !o->resume) {
		/* Two windows are resident at once: the one read, the one fetched. */
		l->wrows = o->shuffle_rows ? o->shuffle_rows : o->prefetch_bytes / 2 / row_bytes;
		if (l->wrows < 2)
			l->wrows = 2;
		l->urows = l->wrows / 2;
	}
	/* Units: runs of at most urows rows inside one shard. */
	size_t nsh = (size_t)vi->nshards, cap = 0;
	for (size_t i = 0; !rc && i < nsh; i++) {
		mt_shard_info si;
		if ((rc = mt_reader_shard(l->r, i, &si))) {
			mt_err(err, rc, "loader: shard %zu of %s@%s", i, vi->dataset, vi->version);
			break;
		}
		for (uint64_t a = 0; a < si.rows; a += l->urows) {
			if (l->nunits == cap) {
				cap = cap ? 2 * cap : 64;
				ld_unit *g = realloc(l->units, cap * sizeof *g);
				if (!g) {
					rc = mt_err(err, MT_ENOMEM, "out of memory");
					break;
				}
				l->units = g;
			}
			uint64_t n = si.rows - a < l->urows ? si.rows - a : l->urows;
			l->units[l->nunits++] = (ld_unit){si.first_row + a, n};
		}
	}
	if (!rc) {
		size_t nu = l->nunits ? l->nunits : 1;
		l->order = malloc(nu * sizeof *l->order);
		l->win_u0 = malloc((nu + 1) * sizeof *l->win_u0);
		l->win_start = malloc((nu + 1) * sizeof *l->win_start);
		l->mywin = malloc(nu * sizeof *l->mywin);
		if (!l->order || !l->win_u0 || !l->win_start || !l->mywin)
			rc = mt_err(err, MT_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = plan(l, err);
	if (!rc)
		rc = prefetch_start(l, err);
	if (rc) {
		mt_loader_close(l);
		return rc;
	}
	*out = l;
	return 0;
}

void mt_loader_close(mt_loader *l)
{
	if (!l)
		return;
	prefetch_stop(l);
	for (int i = 0; i < 2; i++)
		slot_free(l, &l->slot[i]);
	out_free(l, &l->out);
	out_free(l, &l->rr);
	mt_reader_close(l->r);
	if (l->cache)
		l->cache->ops->close(l->cache);
	free(l->cols);
	free(l->units);
	free(l->order);
	free(l->win_u0);
	free(l->win_start);
	free(l->mywin);
	free(l->stages);
	free(l->live);
	free(l->live_pre);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l);
}

/* ---- mixing loaders ----------------------------------------------------- */

struct mt_mix {
	mt_loader **l;
	double *w;
	uint64_t *left; /* batches each loader still has this epoch */
	size_t n;
	uint64_t seed, epoch, k;
};

static void mix_reset(mt_mix *m)
{
	for (size_t i = 0; i < m->n; i++)
		m->left[i] = m->l[i]->nb - m->l[i]->taken;
	m->k = 0;
}

int mt_mix_open(mt_loader *const *loaders, const double *weights, size_t n, uint64_t seed,
		mt_mix **out, mt_error *err)
{
	*out = NULL;
	if (!n)
		return mt_err(err, MT_EINVAL, "mix: no loaders");
	for (size_t i = 0; i < n; i++)
		if (!(weights[i] > 0))
			return mt_err(err, MT_EINVAL, "mix: weight %zu is not positive", i);
	mt_mix *m = calloc(1, sizeof *m);
	if (m) {
		m->l = malloc(n * sizeof *m->l);
		m->w = malloc(n * sizeof *m->w);
		m->left = malloc(n * sizeof *m->left);
	}
	if (!m || !m->l || !m->w || !m->left) {
		mt_mix_close(m);
		return mt_err(err, MT_ENOMEM, "out of memory");
	}
	memcpy(m->l, loaders, n * sizeof *m->l);
	memcpy(m->w, weights, n * sizeof *m->w);
	m->n = n;
	m->seed = seed;
	m->epoch = loaders[0]->epoch;
	mix_reset(m);
	*out = m;
	return 0;
}

int mt_mix_next(mt_mix *m, const mt_batch **out, size_t *source, mt_error *err)
{
	*out = NULL;
	double total = 0;
	for (size_t i = 0; i < m->n; i++)
		total += m->left[i] ? m->w[i] : 0;
	if (total <= 0)
		return 0;
	/* 53 random bits as a fraction of the weights still in play. */
	uint64_t st = rng_seed(m->seed, m->epoch, m->k + 1);
	double x = (double)(splitmix(&st) >> 11) / 9007199254740992.0 * total;
	size_t pick = m->n;
	for (size_t i = 0; i < m->n; i++) {
		if (!m->left[i])
			continue;
		pick = i;
		if (x < m->w[i])
			break;
		x -= m->w[i];
	}
	int rc = mt_loader_next(m->l[pick], out, err);
	if (rc)
		return rc;
	m->k++;
	m->left[pick]--;
	if (!*out) /* the loader ran out early: draw again without it */
		return mt_mix_next(m, out, source, err);
	if (source)
		*source = pick;
	return 0;
}

int mt_mix_set_epoch(mt_mix *m, uint64_t epoch, mt_error *err)
{
	for (size_t i = 0; i < m->n; i++) {
		int rc = mt_loader_set_epoch(m->l[i], epoch, err);
		if (rc)
			return rc;
	}
	m->epoch = epoch;
	mix_reset(m);
	return 0;
}

size_t mt_mix_state(const mt_mix *m, char *buf, size_t cap)
{
	char line[128];
	int n = snprintf(line, sizeof line, "mtm1 %" PRIu64 " %" PRIu64 " %" PRIu64 " %zu", m->seed,
			 m->epoch, m->k, m->n);
	if (buf && cap)
		snprintf(buf, cap, "%s", line);
	return n > 0 ? (size_t)n : 0;
}

int mt_mix_resume(mt_mix *m, const char *token, mt_error *err)
{
	uint64_t seed, epoch, k;
	size_t n;
	int used = 0;
	if (sscanf(token, "mtm1 %" SCNu64 " %" SCNu64 " %" SCNu64 " %zu%n", &seed, &epoch, &k, &n,
		   &used) != 4 || token[used + strspn(token + used, " \n")])
		return mt_err(err, MT_EINVAL, "mix: not a mix token: '%.60s'", token);
	if (seed != m->seed || n != m->n)
		return mt_err(err, MT_EINVAL, "mix: the token is for %zu loaders with seed %" PRIu64
			      ", this mix has %zu with seed %" PRIu64, n, seed, m->n, m->seed);
	/* The loaders, resumed from their own tokens, know what is left. */
	m->epoch = epoch;
	mix_reset(m);
	m->k = k;
	return 0;
}

void mt_mix_close(mt_mix *m)
{
	if (!m)
		return;
	free(m->l);
	free(m->w);
	free(m->left);
	free(m);
}
