/* loader-plan.c — the loader's order: units, their shuffled order, windows, the rows earlier shares left and this rank's share. */
#include <stdlib.h>
#include <string.h>

#include "loader-plan.h"

/* ---- deterministic randomness ------------------------------------------ */

uint64_t mti_plan_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t mti_plan_stream(uint64_t seed, uint64_t epoch, uint64_t stream)
{
	uint64_t s = seed;
	uint64_t a = mti_plan_splitmix(&s) ^ epoch;
	uint64_t b = mti_plan_splitmix(&a) ^ stream;
	return mti_plan_splitmix(&b);
}

/* Uniform in [0, n) without modulo bias (Lemire). */
static uint64_t draw_below(uint64_t *state, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)mti_plan_splitmix(state) * n;
	uint64_t lo = (uint64_t)m;
	if (lo < n) {
		uint64_t t = -n % n;
		while (lo < t) {
			m = (unsigned __int128)mti_plan_splitmix(state) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

static void shuffle_u64(uint64_t *a, uint64_t n, uint64_t state)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = draw_below(&state, i);
		uint64_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static void shuffle_size(size_t *a, size_t n, uint64_t state)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)draw_below(&state, i);
		size_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* ---- units and windows -------------------------------------------------- */

void mti_plan_init(mt_plan *p, uint64_t rows, uint64_t window_rows, uint64_t unit_rows,
		  int shuffle, uint64_t seed)
{
	memset(p, 0, sizeof *p);
	p->rows = rows;
	p->window_rows = window_rows;
	p->unit_rows = unit_rows;
	p->shuffle = shuffle;
	p->seed = seed;
}

int mti_plan_add_shard(mt_plan *p, uint64_t first_row, uint64_t rows, mt_error *err)
{
	for (uint64_t a = 0; a < rows; a += p->unit_rows) {
		if (p->nunits == p->units_cap) {
			size_t cap = p->units_cap ? 2 * p->units_cap : 64;
			mt_plan_unit *g = realloc(p->units, cap * sizeof *g);
			if (!g)
				return mti_err(err, MT_ENOMEM, "out of memory");
			p->units = g;
			p->units_cap = cap;
		}
		uint64_t n = rows - a < p->unit_rows ? rows - a : p->unit_rows;
		p->units[p->nunits++] = (mt_plan_unit){first_row + a, n};
	}
	return 0;
}

/* The arrays an epoch fills, sized for the units once they are all added. */
int mti_plan_copy_layout(mt_plan *dst, const mt_plan *src, mt_error *err)
{
	mti_plan_init(dst, src->rows, src->window_rows, src->unit_rows, src->shuffle, src->seed);
	dst->epoch = src->epoch;
	dst->units = malloc((src->nunits ? src->nunits : 1) * sizeof *dst->units);
	if (!dst->units)
		return mti_err(err, MT_ENOMEM, "loader: out of memory");
	if (src->nunits)
		memcpy(dst->units, src->units, src->nunits * sizeof *dst->units);
	dst->nunits = dst->units_cap = src->nunits;
	return 0;
}

static int plan_alloc(mt_plan *p, mt_error *err)
{
	if (p->unit_order)
		return 0;
	size_t nu = p->nunits ? p->nunits : 1;
	p->unit_order = malloc(nu * sizeof *p->unit_order);
	p->window_unit = malloc((nu + 1) * sizeof *p->window_unit);
	p->window_start = malloc((nu + 1) * sizeof *p->window_start);
	p->rank_windows = malloc(nu * sizeof *p->rank_windows);
	if (!p->unit_order || !p->window_unit || !p->window_start || !p->rank_windows)
		return mti_err(err, MT_ENOMEM, "out of memory");
	return 0;
}

/* The units in the epoch's order, cut into windows of at most window_rows
 * (a unit never straddles two). */
static void plan_windows(mt_plan *p)
{
	for (size_t i = 0; i < p->nunits; i++)
		p->unit_order[i] = i;
	if (p->shuffle)
		shuffle_size(p->unit_order, p->nunits, mti_plan_stream(p->seed, p->epoch, 0));
	size_t w = 0;
	uint64_t pos = 0, in_window = 0;
	for (size_t i = 0; i < p->nunits; i++) {
		uint64_t n = p->units[p->unit_order[i]].rows;
		if (i == 0 || in_window + n > p->window_rows) {
			p->window_unit[w] = i;
			p->window_start[w] = pos;
			w++;
			in_window = 0;
		}
		in_window += n;
		pos += n;
	}
	p->nwindows = w;
	p->window_unit[w] = p->nunits;
	p->window_start[w] = pos;
}

size_t mti_plan_window_of(const mt_plan *p, uint64_t pos)
{
	return mti_bisect_u64(p->window_start, p->nwindows, sizeof *p->window_start, pos);
}

uint64_t mti_plan_window_rows(const mt_plan *p, size_t w)
{
	return p->window_start[w + 1] - p->window_start[w];
}

void mti_plan_window_rowids(const mt_plan *p, size_t w, uint64_t *rowid)
{
	uint64_t j = 0;
	for (size_t u = p->window_unit[w]; u < p->window_unit[w + 1]; u++) {
		const mt_plan_unit *un = &p->units[p->unit_order[u]];
		for (uint64_t i = 0; i < un->rows; i++)
			rowid[j++] = un->first_row + i;
	}
}

void mti_plan_window_perm(const mt_plan *p, size_t w, uint64_t *perm, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		perm[i] = i;
	if (p->shuffle)
		shuffle_u64(perm, n, mti_plan_stream(p->seed, p->epoch, (uint64_t)w + 1));
}

/* ---- the live positions and the shares ---------------------------------- */

/* Rows each rank gets and batches each takes, for live rows shared out. */
static void share_split(uint64_t live_rows, const mt_plan_share *s, uint64_t *share_rows,
			uint64_t *batches)
{
	if (s->drop_last) {
		*batches = live_rows / ((uint64_t)s->world * s->batch_rows);
		*share_rows = *batches * s->batch_rows;
	} else {
		*share_rows = (live_rows + s->world - 1) / s->world;
		*batches = (*share_rows + s->batch_rows - 1) / s->batch_rows;
	}
}

uint64_t mti_plan_position(const mt_plan *p, uint64_t i)
{
	if (i >= p->live_rows)
		i = (i - p->live_rows) % p->live_rows;
	size_t lo = mti_bisect_u64(p->live_before, p->nlive, sizeof *p->live_before, i);
	return p->live[lo].begin + (i - p->live_before[lo]);
}

/* Make spans[0..n) (taken over) the live positions. */
static int live_set(mt_plan *p, mt_plan_span *spans, size_t n)
{
	uint64_t *before = malloc((n ? n : 1) * sizeof *before);
	if (!before)
		return MT_ENOMEM;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		before[i] = sum;
		sum += spans[i].end - spans[i].begin;
	}
	free(p->live);
	free(p->live_before);
	p->live = spans;
	p->nlive = n;
	p->live_before = before;
	p->live_rows = sum;
	return 0;
}

/* A growing list of spans. */
typedef struct span_list {
	mt_plan_span *v;
	size_t n, cap;
} span_list;

/* Append the positions of live indices [ia, ib) to out. */
static int live_map(const mt_plan *p, uint64_t ia, uint64_t ib, span_list *out)
{
	while (ia < ib) {
		uint64_t pos = mti_plan_position(p, ia);
		size_t k = 0;
		while (k + 1 < p->nlive && p->live_before[k + 1] <= ia)
			k++;
		uint64_t run = p->live[k].end - pos;
		if (run > ib - ia)
			run = ib - ia;
		if (out->n == out->cap) {
			size_t c = out->cap ? 2 * out->cap : 16;
			mt_plan_span *g = realloc(out->v, c * sizeof *g);
			if (!g)
				return MT_ENOMEM;
			out->v = g;
			out->cap = c;
		}
		out->v[out->n++] = (mt_plan_span){pos, pos + run};
		ia += run;
	}
	return 0;
}

/* Drop from the live positions what one earlier share handed out. */
static int live_after(mt_plan *p, const mt_plan_share *st)
{
	uint64_t per, nb;
	share_split(p->live_rows, st, &per, &nb);
	span_list next = {0};
	uint64_t done = st->batches_taken * st->batch_rows < per ? st->batches_taken * st->batch_rows
								 : per;
	for (unsigned r = 0; r < st->world; r++) {
		uint64_t a = (uint64_t)r * per + done, b = (uint64_t)(r + 1) * per;
		if (b > p->live_rows)
			b = p->live_rows;
		if (a < b && live_map(p, a, b, &next)) {
			free(next.v);
			return MT_ENOMEM;
		}
	}
	if (live_set(p, next.v, next.n)) {
		free(next.v);
		return MT_ENOMEM;
	}
	return 0;
}

/* The windows this rank's share lies in, in the order it meets them. */
static int rank_windows(mt_plan *p)
{
	p->nrank_windows = 0;
	uint64_t a = (uint64_t)p->rank * p->share_rows, b = a + p->share_rows;
	if (b > p->live_rows)
		b = p->live_rows;
	span_list mine = {0};
	if (a < b && live_map(p, a, b, &mine)) {
		free(mine.v);
		return MT_ENOMEM;
	}
	for (size_t i = 0; i < mine.n; i++) {
		size_t last = mti_plan_window_of(p, mine.v[i].end - 1);
		for (size_t v = mti_plan_window_of(p, mine.v[i].begin); v <= last; v++)
			if (!p->nrank_windows || p->rank_windows[p->nrank_windows - 1] != v)
				p->rank_windows[p->nrank_windows++] = v;
	}
	free(p->mine);
	p->mine = mine.v;
	p->nmine = mine.n;
	return 0;
}

void mti_plan_window_need(const mt_plan *p, size_t w, const uint64_t *perm, char *need)
{
	size_t u0 = p->window_unit[w], nu = p->window_unit[w + 1] - u0;
	uint64_t ws = p->window_start[w], we = p->window_start[w + 1];
	memset(need, 0, nu ? nu : 1);
	/* The units' first rows in unit order, for a bisection per row. */
	uint64_t *at = malloc((nu ? nu : 1) * sizeof *at), sum = 0;
	for (size_t u = 0; at && u < nu; u++) {
		at[u] = sum;
		sum += p->units[p->unit_order[u0 + u]].rows;
	}
	for (size_t k = 0; k < p->nmine; k++) {
		uint64_t a = p->mine[k].begin > ws ? p->mine[k].begin : ws;
		uint64_t b = p->mine[k].end < we ? p->mine[k].end : we;
		for (uint64_t i = a; i < b; i++) {
			if (!at) { /* out of memory: read them all, as before */
				memset(need, 1, nu);
				return;
			}
			need[mti_bisect_u64(at, nu, sizeof *at, perm[i - ws])] = 1;
		}
	}
	free(at);
}

int mti_plan_epoch(mt_plan *p, uint64_t epoch, const mt_plan_share *stages, size_t nstages,
		  unsigned rank, const mt_plan_share *share, mt_error *err)
{
	int rc = plan_alloc(p, err);
	if (rc)
		return rc;
	p->epoch = epoch;
	plan_windows(p);
	mt_plan_span *all = malloc(sizeof *all);
	if (all)
		all[0] = (mt_plan_span){0, p->rows};
	if (!all || live_set(p, all, 1)) {
		free(all);
		return mti_err(err, MT_ENOMEM, "loader: out of memory");
	}
	for (size_t s = 0; s < nstages; s++)
		if (live_after(p, &stages[s]))
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
	p->rank = rank;
	p->share = *share;
	share_split(p->live_rows, share, &p->share_rows, &p->batches);
	if (rank_windows(p))
		return mti_err(err, MT_ENOMEM, "loader: out of memory");
	static uint64_t makings;
	p->made = __atomic_add_fetch(&makings, 1, __ATOMIC_RELAXED);
	return 0;
}

void mti_plan_batch(const mt_plan *p, uint64_t k, uint64_t *first, uint64_t *n)
{
	uint64_t b = p->share.batch_rows;
	uint64_t i0 = (uint64_t)p->rank * p->share_rows + k * b;
	uint64_t end = (uint64_t)(p->rank + 1) * p->share_rows;
	*first = i0;
	*n = end - i0 < b ? end - i0 : b;
}

int mti_plan_row_at(const mt_plan *p, uint64_t pos, uint64_t *row, mt_error *err)
{
	size_t w = mti_plan_window_of(p, pos);
	uint64_t off = pos - p->window_start[w];
	if (p->shuffle) {
		uint64_t n = mti_plan_window_rows(p, w);
		uint64_t *perm = malloc(n * sizeof *perm);
		if (!perm)
			return mti_err(err, MT_ENOMEM, "loader: out of memory");
		mti_plan_window_perm(p, w, perm, n);
		off = perm[off];
		free(perm);
	}
	*row = 0;
	for (size_t u = p->window_unit[w]; u < p->window_unit[w + 1]; u++) {
		const mt_plan_unit *un = &p->units[p->unit_order[u]];
		if (off < un->rows) {
			*row = un->first_row + off;
			break;
		}
		off -= un->rows;
	}
	return 0;
}

void mti_plan_free(mt_plan *p)
{
	free(p->units);
	free(p->unit_order);
	free(p->window_unit);
	free(p->window_start);
	free(p->rank_windows);
	free(p->live);
	free(p->live_before);
	free(p->mine);
	memset(p, 0, sizeof *p);
}
