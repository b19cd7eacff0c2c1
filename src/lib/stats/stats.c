/* stats.c — statistics of a whole attribute of a version: counts, range, mean and spread, histogram, class balance, read window by window through the reader. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "opts.h"
#include "pool.h"

#define STATS_OPTS_FIRST MT_OPTS_SIZE_UPTO(mt_stats_opts, progress_ud)
#define DEFAULT_WINDOW (64u << 20)
/* Elements summed as one block: blocks are merged in order, so the sums
 * are the same whatever the number of threads. */
#define BLOCK 16384
/* Ragged row lengths are fetched this many rows at a time. */
#define LEN_ROWS 65536

void mt_stats_opts_init_size(mt_stats_opts *o, size_t size)
{
	const mt_stats_opts d = { .bins = MT_STATS_BINS, .max_classes = MT_STATS_CLASSES,
				  .window_bytes = DEFAULT_WINDOW };
	mti_opts_init(o, size, &d, sizeof d);
}

void mt_stats_free(mt_stats *s)
{
	if (!s)
		return;
	free(s->dataset);
	free(s->version);
	free(s->attr);
	free(s->edges);
	free(s->hist);
	free(s->classes);
	free(s->col_min);
	free(s->col_max);
	free(s->col_mean);
	free(s->col_std);
	free(s);
}

/* ---- values ---------------------------------------------------------------- */

static double half_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, f = h & 0x3ff;
	double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? (double)NAN : (double)INFINITY)
						    : ldexp(f + 1024, e - 25);
	return h & 0x8000 ? -v : v;
}

/* n elements of dtype t at p as doubles into out. */
static void to_double(mt_dtype t, const unsigned char *p, size_t n, double *out)
{
	size_t w = mt_dtype_size(t);
	for (size_t i = 0; i < n; i++, p += w) {
		union { int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint16_t u16;
			uint32_t u32; uint64_t u64; float f; double d; } u;
		memcpy(&u, p, w);
		switch (t) {
		case MT_BOOL: case MT_UINT8: case MT_STR: out[i] = *p; break;
		case MT_INT8: out[i] = u.i8; break;
		case MT_INT16: out[i] = u.i16; break;
		case MT_UINT16: out[i] = u.u16; break;
		case MT_INT32: out[i] = u.i32; break;
		case MT_UINT32: out[i] = u.u32; break;
		case MT_INT64: out[i] = (double)u.i64; break;
		case MT_UINT64: out[i] = (double)u.u64; break;
		case MT_FLOAT16: out[i] = half_value(u.u16); break;
		case MT_FLOAT32: out[i] = u.f; break;
		default: out[i] = u.d; break;
		}
	}
}

/* ---- first pass: counts, range, mean, spread -------------------------------- */

/* What a block (or everything so far) adds up to. */
struct part {
	uint64_t n, nan, pinf, ninf; /* n: finite elements */
	double mean, m2, min, max;
};

/* Chan et al.'s pairwise update: a's statistics joined with b's. */
static void part_merge(struct part *a, const struct part *b)
{
	a->nan += b->nan;
	a->pinf += b->pinf;
	a->ninf += b->ninf;
	if (!b->n)
		return;
	if (!a->n) {
		a->n = b->n;
		a->mean = b->mean;
		a->m2 = b->m2;
		a->min = b->min;
		a->max = b->max;
		return;
	}
	double n = (double)(a->n + b->n), d = b->mean - a->mean;
	a->mean += d * (double)b->n / n;
	a->m2 += b->m2 + d * d * (double)a->n * (double)b->n / n;
	a->min = b->min < a->min ? b->min : a->min;
	a->max = b->max > a->max ? b->max : a->max;
	a->n += b->n;
}

/* A block's statistics over n values `stride` apart: its mean first, then
 * the squares about it, which keeps the spread exact where a sum of squares
 * would cancel. */
static void part_of(const double *v, size_t n, size_t stride, struct part *p)
{
	memset(p, 0, sizeof *p);
	double sum = 0, lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		double x = v[i * stride];
		if (isnan(x)) {
			p->nan++;
		} else if (isinf(x)) {
			*(x > 0 ? &p->pinf : &p->ninf) += 1;
		} else {
			p->n++;
			sum += x;
			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
	}
	if (!p->n)
		return;
	p->mean = sum / (double)p->n;
	p->min = lo;
	p->max = hi;
	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i * stride]))
			p->m2 += (v[i * stride] - p->mean) * (v[i * stride] - p->mean);
}

/* ---- second pass: the histogram --------------------------------------------- */

/* The bin of finite x, as NumPy's np.histogram finds it: from the scaled
 * distance, then corrected against the edges themselves. */
static int bin_of(const mt_stats *s, double x)
{
	int n = s->bins;
	double first = s->edges[0], last = s->edges[n];
	if (x < first || x > last)
		return -1;
	long i = (long)((x - first) / (last - first) * n);
	if (i >= n)
		i = n - 1;
	if (i > 0 && x < s->edges[i])
		i--;
	if (i != n - 1 && x >= s->edges[i + 1])
		i++;
	return (int)i;
}

/* NumPy's np.linspace(first, last, bins + 1), the edges np.histogram uses. */
static void make_edges(mt_stats *s)
{
	double first = s->min, last = s->max;
	if (first == last) {
		first -= 0.5;
		last += 0.5;
	}
	double step = (last - first) / s->bins;
	for (int i = 0; i <= s->bins; i++)
		s->edges[i] = step == 0 ? (double)i / s->bins * (last - first) + first
					: (double)i * step + first;
	s->edges[s->bins] = last;
}

/* ---- the work of one window --------------------------------------------------- */

struct win {
	mt_stats *s;
	mt_dtype dtype; /* of buf: float64 row lengths for text */
	const unsigned char *buf;
	uint64_t nvals;
	int pass;
	struct part *parts;   /* pass 1: per block */
	pthread_mutex_t lock; /* pass 2: guards s->hist */
};

static int win_block(void *ud, size_t b)
{
	struct win *w = ud;
	uint64_t a = (uint64_t)b * BLOCK;
	size_t n = w->nvals - a < BLOCK ? (size_t)(w->nvals - a) : BLOCK;
	double *v = malloc(n * sizeof *v);
	uint64_t *h = w->pass == 2 ? calloc((size_t)w->s->bins, sizeof *h) : NULL;
	if (!v || (w->pass == 2 && !h)) {
		free(v);
		free(h);
		return MT_ENOMEM;
	}
	to_double(w->dtype, w->buf + a * mt_dtype_size(w->dtype), n, v);
	if (w->pass == 1) {
		part_of(v, n, 1, &w->parts[b]);
	} else {
		for (size_t i = 0; i < n; i++) {
			int k = isfinite(v[i]) ? bin_of(w->s, v[i]) : -1;
			if (k >= 0)
				h[k]++;
		}
		pthread_mutex_lock(&w->lock);
		for (int k = 0; k < w->s->bins; k++)
			w->s->hist[k] += h[k];
		pthread_mutex_unlock(&w->lock);
	}
	free(v);
	free(h);
	return 0;
}

/* ---- class balance ------------------------------------------------------------ */

/* Count value v; past `cap` distinct values the balance is given up. */
static int class_add(mt_stats *s, int cap, int64_t v)
{
	size_t lo = 0, hi = (size_t)s->nclasses;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->classes[mid].value < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < (size_t)s->nclasses && s->classes[lo].value == v) {
		s->classes[lo].count++;
		return 0;
	}
	if (s->nclasses >= cap)
		return -1;
	memmove(&s->classes[lo + 1], &s->classes[lo],
		((size_t)s->nclasses - lo) * sizeof *s->classes);
	s->classes[lo] = (mt_stats_class){ v, 1 };
	s->nclasses++;
	return 0;
}

static void classes_count(mt_stats *s, int cap, const unsigned char *buf, uint64_t n)
{
	size_t w = mt_dtype_size(s->dtype);
	for (uint64_t i = 0; i < n && s->nclasses >= 0; i++, buf += w) {
		union { int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint16_t u16;
			uint32_t u32; uint64_t u64; } u;
		memcpy(&u, buf, w);
		int64_t v;
		switch (s->dtype) {
		case MT_BOOL: case MT_UINT8: v = *buf; break;
		case MT_INT8: v = u.i8; break;
		case MT_INT16: v = u.i16; break;
		case MT_UINT16: v = u.u16; break;
		case MT_INT32: v = u.i32; break;
		case MT_UINT32: v = u.u32; break;
		case MT_INT64: v = u.i64; break;
		default: v = (int64_t)u.u64; break;
		}
		/* A uint64 past INT64_MAX has no int64 value to be counted under. */
		if ((s->dtype == MT_UINT64 && u.u64 > INT64_MAX) || class_add(s, cap, v)) {
			free(s->classes);
			s->classes = NULL;
			s->nclasses = -1;
		}
	}
}

/* ---- reading ------------------------------------------------------------------- */

struct run {
	mt_reader *r;
	size_t attr;
	const mt_attr *a;
	mt_stats_opts o;
	mt_stats *s;
	uint64_t unit;          /* bytes per row (fixed) or per item (ragged) */
	uint64_t total, done;   /* bytes to decode, decoded (progress) */
	uint64_t *lens;         /* ragged: lengths of rows [lens_at, lens_at + nlens) */
	uint64_t lens_at, nlens;
	unsigned char *buf;     /* the window */
	size_t cap;
	int whole;              /* the one window holds everything: no second read */
	struct part acc;
	struct part *cols;      /* per column (s->columns of them), or NULL */
	double *tlen;           /* text: the window's row lengths in characters */
	uint64_t *tbytes;       /* text: its row lengths in bytes */
	uint64_t *seen;         /* text: hashes of distinct rows, open addressing */
	size_t nseen;
	double bsum;            /* text: bytes over all rows */
};

/* The window's nvals values into the columns' sums, BLOCK values' worth of
 * rows at a time merged in order, so the sums do not depend on threads. */
static int columns_count(struct run *u, uint64_t nvals, mt_error *err)
{
	uint64_t w = u->s->columns, rows = nvals / w, per = BLOCK / w ? BLOCK / w : 1;
	size_t esize = mt_dtype_size(u->s->dtype);
	double *v = malloc((size_t)(per * w) * sizeof *v);
	if (!v)
		return mti_err(err, MT_ENOMEM, "statistics of %s: out of memory", u->s->attr);
	for (uint64_t r = 0; r < rows; r += per) {
		uint64_t n = rows - r < per ? rows - r : per;
		to_double(u->s->dtype, u->buf + r * w * esize, (size_t)(n * w), v);
		for (uint64_t c = 0; c < w; c++) {
			struct part p;
			part_of(v + c, (size_t)n, (size_t)w, &p);
			part_merge(&u->cols[c], &p);
		}
	}
	free(v);
	return 0;
}

/* Bytes of row `row` (ragged: its items'), fetching lengths as needed. */
static int row_bytes(struct run *u, uint64_t row, uint64_t *out, mt_error *err)
{
	if (!u->a->ragged) {
		*out = u->unit;
		return 0;
	}
	if (row < u->lens_at || row >= u->lens_at + u->nlens) {
		uint64_t n = u->s->rows - row < LEN_ROWS ? u->s->rows - row : LEN_ROWS;
		int rc = mt_reader_ragged_lengths(u->r, u->attr, row, row + n, u->lens, NULL, err);
		if (rc)
			return rc;
		u->lens_at = row;
		u->nlens = n;
	}
	*out = u->lens[row - u->lens_at] * u->unit;
	return 0;
}

/* The rows of the window starting at `a`: at least one, else as many as
 * fit in window_bytes; *bytes their size. */
static int window_of(struct run *u, uint64_t a, uint64_t *b, uint64_t *bytes, mt_error *err)
{
	uint64_t sum = 0, row = a;
	while (row < u->s->rows) {
		uint64_t rb;
		int rc = row_bytes(u, row, &rb, err);
		if (rc)
			return rc;
		if (row > a && sum + rb > u->o.window_bytes)
			break;
		sum += rb;
		row++;
	}
	*b = row;
	*bytes = sum;
	return 0;
}

static int run_window(struct run *u, int pass, uint64_t nvals, mt_error *err)
{
	struct win w = { .s = u->s, .dtype = u->s->dtype, .buf = u->buf, .nvals = nvals,
			 .pass = pass };
	if (u->tlen) {
		w.dtype = MT_FLOAT64;
		w.buf = (const unsigned char *)u->tlen;
	}
	size_t nb = (size_t)((nvals + BLOCK - 1) / BLOCK);
	if (pass == 1 && !(w.parts = calloc(nb ? nb : 1, sizeof *w.parts)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&w.lock, NULL);
	int rc = mti_parallel_for(mti_ncpus(), nb, win_block, &w);
	pthread_mutex_destroy(&w.lock);
	for (size_t b = 0; !rc && pass == 1 && b < nb; b++)
		part_merge(&u->acc, &w.parts[b]);
	free(w.parts);
	return rc ? mti_err(err, rc, "statistics of %s: out of memory", u->s->attr) : 0;
}

static int progress(struct run *u, mt_error *err)
{
	if (u->o.progress && u->o.progress(u->o.progress_ud, u->done, u->total))
		return mti_err(err, MT_ECANCELED, "statistics of %s@%s %s: canceled", u->s->dataset,
			      u->s->version, u->s->attr);
	return 0;
}

/* Count a row's hash among the distinct ones; past the cap, give up. */
static void text_seen(struct run *u, uint64_t h)
{
	mt_stats *s = u->s;
	if (s->distinct < 0)
		return;
	size_t cap = 2 * (size_t)MT_STATS_TEXT_DISTINCT, i = (size_t)h & (cap - 1);
	h |= 1; /* 0 marks an empty slot */
	while (u->seen[i] && u->seen[i] != h)
		i = (i + 1) & (cap - 1);
	if (u->seen[i])
		return;
	if (++s->distinct > MT_STATS_TEXT_DISTINCT) {
		s->distinct = -1;
		return;
	}
	u->seen[i] = h;
}

/* Rows [a, b) of a str attribute, read into u->buf: their lengths in
 * characters into u->tlen for the numbers; on the first pass the byte
 * lengths and the distinct rows too. */
static int text_window(struct run *u, int pass, uint64_t a, uint64_t b, mt_error *err)
{
	double *t = realloc(u->tlen, (size_t)(b - a + 1) * sizeof *t);
	uint64_t *l = t ? realloc(u->tbytes, (size_t)(b - a + 1) * sizeof *l) : NULL;
	if (t)
		u->tlen = t;
	if (l)
		u->tbytes = l;
	if (!t || !l)
		return mti_err(err, MT_ENOMEM, "statistics of %s: out of memory", u->s->attr);
	int rc = mt_reader_ragged_lengths(u->r, u->attr, a, b, l, NULL, err);
	const unsigned char *p = u->buf;
	for (uint64_t i = 0; !rc && i < b - a; p += l[i++]) {
		uint64_t chars = 0, h = 1469598103934665603ull;
		for (uint64_t k = 0; k < l[i]; k++) {
			chars += (p[k] & 0xc0) != 0x80;
			h = (h ^ p[k]) * 1099511628211ull;
		}
		t[i] = (double)chars;
		if (pass != 1)
			continue;
		double n = (double)l[i];
		mt_stats *s = u->s;
		s->bytes_min = a + i == 0 || n < s->bytes_min ? n : s->bytes_min;
		s->bytes_max = a + i == 0 || n > s->bytes_max ? n : s->bytes_max;
		u->bsum += n;
		text_seen(u, h);
	}
	return rc;
}

/* One pass over every row; the window stays in u->buf after the last. */
static int run_pass(struct run *u, int pass, mt_error *err)
{
	int rc = progress(u, err);
	size_t esize = mt_dtype_size(u->a->dtype);
	for (uint64_t a = 0, b; !rc && a < u->s->rows; a = b) {
		uint64_t bytes;
		if ((rc = window_of(u, a, &b, &bytes, err)) != 0)
			break;
		if (bytes > u->cap) {
			free(u->buf);
			u->cap = (size_t)bytes;
			if (!(u->buf = malloc(u->cap ? u->cap : 1))) {
				u->cap = 0;
				return mti_err(err, MT_ENOMEM, "statistics of %s: out of memory "
					      "for %llu bytes", u->s->attr, (unsigned long long)bytes);
			}
		}
		int read = !u->whole || pass == 1;
		if (read)
			rc = mt_reader_read(u->r, u->attr, a, b, u->buf, u->cap, err);
		if (!rc && u->tlen)
			rc = text_window(u, pass, a, b, err);
		if (!rc)
			rc = run_window(u, pass, u->tlen ? b - a : bytes / esize, err);
		if (!rc && pass == 1 && u->s->nclasses >= 0)
			classes_count(u->s, u->o.max_classes, u->buf, bytes / esize);
		if (!rc && pass == 1 && u->cols)
			rc = columns_count(u, bytes / esize, err);
		u->done += read ? bytes : 0;
		if (!rc)
			rc = progress(u, err);
	}
	return rc;
}

/* Items of the attribute (ragged: summed over every row), for the totals. */
static int count_items(struct run *u, mt_error *err)
{
	if (!u->a->ragged) {
		u->s->items = u->s->rows;
		return 0;
	}
	uint64_t sum = 0;
	for (uint64_t a = 0; a < u->s->rows; a += LEN_ROWS) {
		uint64_t n = u->s->rows - a < LEN_ROWS ? u->s->rows - a : LEN_ROWS, t;
		int rc = mt_reader_ragged_lengths(u->r, u->attr, a, a + n, NULL, &t, err);
		if (rc)
			return rc;
		sum += t;
	}
	u->s->items = sum;
	return 0;
}

static int stats_new(mt_reader *r, const mt_attr *a, const mt_stats_opts *o,
		     mt_stats **out, mt_error *err)
{
	const mt_version_info *vi = mt_reader_info(r);
	mt_stats *s = calloc(1, sizeof *s);
	if (!s)
		return mti_err(err, MT_ENOMEM, "out of memory");
	s->dataset = mti_strdup(vi->dataset);
	s->version = mti_strdup(vi->version);
	s->attr = mti_strdup(a->name);
	s->dtype = a->dtype;
	s->ragged = a->ragged;
	s->rows = vi->rows;
	s->bins = o->bins;
	s->edges = calloc((size_t)o->bins + 1, sizeof *s->edges);
	s->hist = calloc((size_t)o->bins, sizeof *s->hist);
	/* A label is one integer a row: a scalar, or a vector of one. */
	int labels = !a->ragged && a->rank <= 1 && mt_attr_items(a) == 1 &&
		     a->dtype != MT_FLOAT16 && a->dtype != MT_FLOAT32 && a->dtype != MT_FLOAT64 &&
		     o->max_classes > 0;
	s->nclasses = labels ? 0 : -1;
	if (labels)
		s->classes = calloc((size_t)o->max_classes, sizeof *s->classes);
	if (!a->ragged && a->rank == 1 && a->shape[0] >= 1 && a->shape[0] <= MT_STATS_MAX_COLUMNS) {
		size_t c = (size_t)a->shape[0];
		s->columns = c;
		s->col_min = malloc(c * sizeof *s->col_min);
		s->col_max = malloc(c * sizeof *s->col_max);
		s->col_mean = malloc(c * sizeof *s->col_mean);
		s->col_std = malloc(c * sizeof *s->col_std);
	}
	if (!s->dataset || !s->version || !s->attr || !s->edges || !s->hist ||
	    (labels && !s->classes) ||
	    (s->columns && (!s->col_min || !s->col_max || !s->col_mean || !s->col_std))) {
		mt_stats_free(s);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	*out = s;
	return 0;
}

static int check_opts(mt_reader *r, size_t attr, const mt_stats_opts *opts, mt_stats_opts *o,
		      mt_error *err)
{
	mt_stats_opts_init(o);
	int rc = opts ? mti_opts_take(o, sizeof *o, opts, STATS_OPTS_FIRST, "mt_stats_opts", err)
		      : 0;
	if (rc)
		return rc;
	if (!o->bins)
		o->bins = MT_STATS_BINS;
	if (!o->max_classes)
		o->max_classes = MT_STATS_CLASSES;
	if (!o->window_bytes)
		o->window_bytes = DEFAULT_WINDOW;
	if (o->bins < 1 || o->bins > MT_STATS_MAX_BINS)
		return mti_err(err, MT_EINVAL, "mt_stats_opts: bins %d is outside 1..%d", o->bins,
			      MT_STATS_MAX_BINS);
	if (attr >= mt_reader_nattrs(r))
		return mti_err(err, MT_EINVAL, "%s@%s: no attribute #%zu",
			      mt_reader_info(r)->dataset, mt_reader_info(r)->version, attr);
	return 0;
}

/* The numbers from the first pass's sums; the edges for the second. */
static void stats_settle(struct run *u)
{
	mt_stats *s = u->s;
	s->count = u->tlen ? s->rows : s->items * mt_attr_items(u->a);
	if (u->tlen && s->rows)
		s->bytes_mean = u->bsum / (double)s->rows;
	s->finite = u->acc.n;
	s->nan = u->acc.nan;
	s->posinf = u->acc.pinf;
	s->neginf = u->acc.ninf;
	if (u->acc.n) {
		s->min = u->acc.min;
		s->max = u->acc.max;
		s->mean = u->acc.mean;
		s->std = sqrt(u->acc.m2 / (double)u->acc.n);
	}
	for (uint64_t c = 0; c < s->columns; c++) {
		const struct part *p = &u->cols[c];
		s->col_min[c] = p->n ? p->min : (double)NAN;
		s->col_max[c] = p->n ? p->max : (double)NAN;
		s->col_mean[c] = p->n ? p->mean : (double)NAN;
		s->col_std[c] = p->n ? sqrt(p->m2 / (double)p->n) : (double)NAN;
	}
	make_edges(s);
}

int mt_stats_compute(mt_reader *r, size_t attr, const mt_stats_opts *opts, mt_stats **out,
		     mt_error *err)
{
	*out = NULL;
	struct run u = { .r = r, .attr = attr };
	int rc = check_opts(r, attr, opts, &u.o, err);
	if (rc)
		return rc;
	u.a = mt_reader_attr(r, attr);
	u.unit = mt_attr_items(u.a) * mt_dtype_size(u.a->dtype);
	rc = stats_new(r, u.a, &u.o, &u.s, err);
	if (!rc && u.a->ragged && !(u.lens = malloc(LEN_ROWS * sizeof *u.lens)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && u.a->dtype == MT_STR &&
	    (!(u.tlen = malloc(sizeof *u.tlen)) ||
	     !(u.seen = calloc(2 * (size_t)MT_STATS_TEXT_DISTINCT, sizeof *u.seen))))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc && u.s->columns && !(u.cols = calloc((size_t)u.s->columns, sizeof *u.cols)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = count_items(&u, err);
	if (!rc) {
		uint64_t bytes = u.s->items * u.unit;
		u.whole = bytes <= u.o.window_bytes;
		u.total = u.whole ? bytes : 2 * bytes;
		rc = run_pass(&u, 1, err);
	}
	if (!rc) {
		stats_settle(&u);
		if (u.s->finite)
			rc = run_pass(&u, 2, err);
	}
	u.s->bytes_read = u.done;
	free(u.buf);
	free(u.lens);
	free(u.cols);
	free(u.tlen);
	free(u.tbytes);
	free(u.seen);
	if (rc) {
		mt_stats_free(u.s);
		return rc;
	}
	*out = u.s;
	return 0;
}
