/* view-matrix.c — the matrix viewer: one row of an attribute, or a checkpoint's tensor, as a grid of values (dtype-aware), per-column statistics, a grey-scale preview of 2-D rows; scalars and vectors as a sheet of rows. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

/* Scalar and vector attributes show a page of rows at once (a sheet: a row
 * a line, a column per element), at most this many rows and MX_PAGE_BYTES. */
#define SCALAR_PAGE 512
#define MX_PAGE_BYTES (8u << 20)
/* The row's other attributes shown beside it: at most this many, each of at
 * most MX_SIDE_ITEMS values (a label, a few scalars; not another picture). */
#define MX_SIDE 16
#define MX_SIDE_ITEMS 8
/* The longest text a side line reads to show its start. */
#define MX_SIDE_TEXT (64u << 10)

/* What the view and its reading jobs share; freed by whoever lets go last. */
struct mx_data {
	pthread_mutex_t lock;
	atomic_int refs;
	mt_catalog_ref ref;
	char attr[128];   /* or the tensor's key */
	int tensor;       /* a checkpoint's tensor (ref->model, ref->version), not an attribute */
	mt_store *s; /* opened by the first job, used by one job at a time */
	mt_reader *r;
	int ai;
	mt_attr a;
	uint64_t rows;
	/* The last row read (under lock). */
	uint64_t row, nrows; /* rows [row, row + nrows) */
	void *buf;
	uint64_t nvals, h, w; /* the grid: h x w values */
	int ready;
	char error[512];
	/* The same row's short attributes, as "name: value" lines (under lock). */
	char side[MX_SIDE][96];
	int nside;
	atomic_int busy; /* a job is reading */
	uint64_t want;   /* the row the job is to read (set before it starts) */
};

struct matrix {
	struct view base;
	struct mx_data *d;
	uint64_t want; /* the row asked for */
	uint64_t top, left;
	int image;
	int to_end;  /* $: the next draw puts the last column at the right edge */
	int pending; /* want changed while a read ran: read again after it */
	char whole[300]; /* the whole attribute's statistics the catalog holds ("": none) */
	mt_stats *cols;  /* the same with per-column numbers (a vector's), or NULL */
	int vis;         /* value lines on screen at the last draw */
};

static void mx_unref(struct mx_data *d)
{
	if (atomic_fetch_sub(&d->refs, 1) != 1)
		return;
	mt_reader_close(d->r);
	mt_store_close(d->s);
	mt_catalog_ref_free(&d->ref);
	free(d->buf);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static void mx_unref_arg(void *arg)
{
	mx_unref(arg);
}

static uint64_t mx_items(const mt_attr *a)
{
	return mt_attr_items(a);
}

/* Scalars and vectors are read a page of rows at a time and shown as a
 * sheet; other attributes a row at a time. */
static int mx_paged(const mt_attr *a)
{
	return !a->ragged && a->rank <= 1;
}

/* The rows a page of a paged attribute holds. */
static uint64_t mx_page_rows(const mt_attr *a)
{
	uint64_t row = mx_items(a) * mt_dtype_size(a->dtype);
	uint64_t n = row ? MX_PAGE_BYTES / row : SCALAR_PAGE;
	return n < 1 ? 1 : n > SCALAR_PAGE ? SCALAR_PAGE : n;
}

static int mx_read_side(struct mx_data *d, uint64_t row, char side[MX_SIDE][96]);

/* The grid of a tensor: the last dimension across, the others down; a
 * 1-D tensor is one row. */
static void mx_tensor_grid(const mt_ckpt_tensor_info *ti, uint64_t *h, uint64_t *w)
{
	uint64_t items = 1;
	for (int i = 0; i < ti->ndim; i++)
		items *= ti->shape[i];
	*w = ti->ndim ? ti->shape[ti->ndim - 1] : 1;
	*h = *w ? items / *w : 0;
}

/* A tensor is read and shown whole: one larger than this is refused rather
 * than held in memory (model export writes it to a file). */
#define MX_TENSOR_MAX (256ull << 20)

/* Read the whole tensor on the worker: one get, checked against its sha256. */
static int mx_read_tensor(struct tui_job *j)
{
	struct mx_data *d = j->arg;
	mt_error err = { 0 };
	mt_ckpt *ck = NULL;
	mt_ckpt_tensor_info ti;
	void *buf = NULL;
	char spec[600];
	int stale;
	snprintf(spec, sizeof spec, "%s@%s", d->ref.model, d->ref.version);
	mt_store *s = tui_open_bucket(j, &d->ref, &stale, &err);
	int rc = s ? mt_ckpt_open(s, spec, &ck, &err) : err.code;
	long i = rc ? -1 : mt_ckpt_find(ck, d->attr);
	if (!rc && i < 0)
		rc = mt_error_set(&err, MT_ENOTFOUND, "%s has no tensor %s", spec, d->attr);
	if (!rc)
		rc = mt_ckpt_tensor(ck, (size_t)i, &ti, &err);
	if (!rc && ti.bytes > MX_TENSOR_MAX)
		rc = mt_error_set(&err, MT_ERANGE, "tensor %s of %s: %llu bytes, more than the "
				  "viewer holds (%llu MiB); matorage model export writes it to a file",
				  d->attr, spec, (unsigned long long)ti.bytes, MX_TENSOR_MAX >> 20);
	if (!rc && !(buf = malloc(ti.bytes ? ti.bytes : 1)))
		rc = mt_error_set(&err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = mt_ckpt_read(ck, d->attr, buf, ti.bytes ? ti.bytes : 1, &err);
	pthread_mutex_lock(&d->lock);
	if (rc) {
		snprintf(d->error, sizeof d->error, "%s", err.message);
		free(buf);
	} else {
		d->a = (mt_attr){.name = d->attr, .dtype = ti.dtype, .rank = ti.ndim};
		memcpy(d->a.shape, ti.shape, sizeof d->a.shape);
		free(d->buf);
		d->buf = buf;
		mx_tensor_grid(&ti, &d->h, &d->w);
		d->nvals = d->h * d->w;
		d->rows = 1;
		d->row = 0;
		d->nrows = 1;
		d->error[0] = '\0';
		d->ready = 1;
	}
	pthread_mutex_unlock(&d->lock);
	mt_ckpt_close(ck);
	mt_store_close(s);
	atomic_store(&d->busy, 0);
	snprintf(j->result, sizeof j->result, "%s", rc ? err.message : "read");
	return rc;
}

/* Read row `want` (a page of them for scalars) on the worker. */
static int mx_read(struct tui_job *j)
{
	struct mx_data *d = j->arg;
	if (d->tensor)
		return mx_read_tensor(j);
	mt_error err = { 0 };
	int rc = 0;
	if (!d->r) {
		int stale;
		d->s = tui_open_bucket(j, &d->ref, &stale, &err);
		rc = d->s ? mt_reader_open(d->s, d->ref.dataset, d->ref.version, &d->r, &err)
			  : err.code;
		if (!rc && (d->ai = mt_reader_attr_index(d->r, d->attr)) < 0)
			rc = mt_error_set(&err, MT_ENOTFOUND, "%s@%s has no attribute %s",
					  d->ref.dataset, d->ref.version, d->attr);
		if (!rc) {
			pthread_mutex_lock(&d->lock);
			d->a = *mt_reader_attr(d->r, (size_t)d->ai);
			d->rows = mt_reader_info(d->r)->rows;
			pthread_mutex_unlock(&d->lock);
		}
	}
	uint64_t want = d->want;
	uint64_t n = 1, h = 1, w = 1, nvals = 0;
	void *buf = NULL;
	if (!rc && want >= d->rows)
		rc = mt_error_set(&err, MT_ERANGE, "row %llu: %s@%s has %llu rows",
				  (unsigned long long)want, d->ref.dataset, d->ref.version,
				  (unsigned long long)d->rows);
	if (!rc) {
		const mt_attr *a = &d->a;
		uint64_t items = mx_items(a), lens = 0;
		if (mx_paged(a))
			n = d->rows - want < mx_page_rows(a) ? d->rows - want : mx_page_rows(a);
		if (a->ragged)
			rc = mt_reader_ragged_lengths(d->r, (size_t)d->ai, want, want + 1, NULL, &lens,
						      &err);
		nvals = a->ragged ? lens * items : n * items;
		if (!rc) {
			buf = malloc(nvals ? nvals * mt_dtype_size(a->dtype) : 1);
			rc = buf ? mt_reader_read(d->r, (size_t)d->ai, want, want + n, buf,
						  nvals * mt_dtype_size(a->dtype), &err)
				 : mt_error_set(&err, MT_ENOMEM, "out of memory");
		}
		/* The grid: rows of the last dimension. */
		if (a->ragged) {
			h = lens;
			w = items ? items : 1;
		} else if (a->rank <= 1) {
			h = n;
			w = a->rank == 0 ? 1 : a->shape[0];
		} else {
			w = a->shape[a->rank - 1];
			h = w ? items / w : 0;
		}
	}
	char side[MX_SIDE][96];
	int nside = !rc && n == 1 ? mx_read_side(d, want, side) : 0;
	pthread_mutex_lock(&d->lock);
	if (rc) {
		snprintf(d->error, sizeof d->error, "%s", err.message);
		free(buf);
	} else {
		memcpy(d->side, side, sizeof side);
		d->nside = nside;
		free(d->buf);
		d->buf = buf;
		d->row = want;
		d->nrows = n;
		d->nvals = nvals;
		d->h = h;
		d->w = w;
		d->error[0] = '\0';
		d->ready = 1;
	}
	pthread_mutex_unlock(&d->lock);
	atomic_store(&d->busy, 0);
	snprintf(j->result, sizeof j->result, "%s", rc ? err.message : "read");
	return rc;
}

static void mx_fetch(struct tui *t, struct matrix *m)
{
	if (atomic_exchange(&m->d->busy, 1)) {
		m->pending = 1;
		return;
	}
	m->pending = 0;
	atomic_fetch_add(&m->d->refs, 1);
	m->d->want = m->want;
	char title[200];
	if (m->d->tensor)
		snprintf(title, sizeof title, "read %s@%s %s", m->d->ref.model, m->d->ref.version,
			 m->d->attr);
	else
		snprintf(title, sizeof title, "read %s@%s %s row %llu", m->d->ref.dataset,
			 m->d->ref.version, m->d->attr, (unsigned long long)m->want);
	struct tui_job *j = tui_job_start(t, "read", title, NULL, mx_read, NULL, m->d, mx_unref_arg);
	if (!j) {
		atomic_store(&m->d->busy, 0);
		return;
	}
	j->quiet = 1;
}

/* ---- values ---- */

static double half_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f, f = h & 0x3ff;
	double v = e == 0 ? ldexp(f, -24) : e == 31 ? (f ? (double)NAN : (double)INFINITY)
						    : ldexp(f + 1024, e - 25);
	return h & 0x8000 ? -v : v;
}

/* The value of dtype t at p as a double. */
static double mx_value_at(mt_dtype t, const unsigned char *p)
{
	switch (t) {
	case MT_BOOL: case MT_UINT8: return *p;
	case MT_INT8: return *(const int8_t *)p;
	case MT_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
	case MT_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
	case MT_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
	case MT_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
	case MT_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	case MT_UINT64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
	case MT_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return half_to_double(v); }
	case MT_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
	case MT_FLOAT64: { double v; memcpy(&v, p, 8); return v; }
	case MT_BFLOAT16: {
		uint16_t h;
		memcpy(&h, p, 2);
		uint32_t bits = (uint32_t)h << 16;
		float v;
		memcpy(&v, &bits, 4);
		return v;
	}
	default: return 0;
	}
}

static double mx_value(const struct mx_data *d, uint64_t i)
{
	return mx_value_at(d->a.dtype,
			   (const unsigned char *)d->buf + i * mt_dtype_size(d->a.dtype));
}

static int mx_is_float(mt_dtype t)
{
	return t == MT_FLOAT16 || t == MT_FLOAT32 || t == MT_FLOAT64 || t == MT_BFLOAT16;
}

/* The value of dtype t at p as text: integers exactly (64-bit ones from
 * their bytes), floats in %.6g. */
static void mx_format_at(mt_dtype t, const unsigned char *p, char *buf, size_t cap)
{
	if (t == MT_INT64) {
		int64_t v;
		memcpy(&v, p, 8);
		snprintf(buf, cap, "%lld", (long long)v);
	} else if (t == MT_UINT64) {
		uint64_t v;
		memcpy(&v, p, 8);
		snprintf(buf, cap, "%llu", (unsigned long long)v);
	} else if (mx_is_float(t)) {
		snprintf(buf, cap, "%.6g", mx_value_at(t, p));
	} else {
		snprintf(buf, cap, "%.0f", mx_value_at(t, p));
	}
}

static void mx_format(const struct mx_data *d, uint64_t i, char *buf, size_t cap)
{
	mx_format_at(d->a.dtype, (const unsigned char *)d->buf + i * mt_dtype_size(d->a.dtype),
		     buf, cap);
}

/* ---- text (str attributes) ---- */

/* Up to cap-1 bytes of len bytes of UTF-8 text at src into dst, whole
 * characters only, a control character as a space (a newline would break
 * the screen's lines); "…" ends it when the text did not fit. */
static void mx_text_line(const unsigned char *src, size_t len, char *dst, size_t cap)
{
	size_t o = 0, i = 0;
	while (i < len && src[i] != '\n') {
		size_t n = 1;
		while (i + n < len && (src[i + n] & 0xc0) == 0x80)
			n++;
		if (o + n + sizeof "…" > cap)
			break;
		if (n == 1 && (src[i] < 0x20 || src[i] == 0x7f))
			dst[o] = ' ';
		else
			memcpy(dst + o, src + i, n);
		o += n;
		i += n;
	}
	if (i < len) {
		memcpy(dst + o, "…", sizeof "…" - 1);
		o += sizeof "…" - 1;
	}
	dst[o] = 0;
}

/* A str attribute's row beside the picture: "name: text", cut with an ellipsis. */
static int mx_side_text(struct mx_data *d, size_t i, uint64_t row, char *line, size_t cap)
{
	const mt_attr *a = mt_reader_attr(d->r, i);
	uint64_t len = 0;
	mt_error err = { 0 };
	if (mt_reader_ragged_lengths(d->r, i, row, row + 1, NULL, &len, &err))
		return -1;
	size_t used = (size_t)snprintf(line, cap, "%s: ", a->name);
	/* A row is read whole; one too long to be a note beside a picture is only sized. */
	unsigned char *text = len <= MX_SIDE_TEXT ? malloc(len ? (size_t)len : 1) : NULL;
	if (!text) {
		snprintf(line + used, cap - used, "(%llu bytes of text)", (unsigned long long)len);
		return 0;
	}
	int rc = mt_reader_read(d->r, i, row, row + 1, text, (size_t)len, &err);
	if (!rc && used < cap)
		mx_text_line(text, (size_t)len, line + used, cap - used);
	free(text);
	return rc ? -1 : 0;
}

/* One short attribute of row `row` as "name: value" (a vector in brackets);
 * 0, or -1 when it is not short or could not be read. */
static int mx_side_line(struct mx_data *d, size_t i, uint64_t row, char *line, size_t cap)
{
	const mt_attr *a = mt_reader_attr(d->r, i);
	uint64_t items = mt_attr_items(a);
	unsigned char vals[MX_SIDE_ITEMS * 8];
	mt_error err = { 0 };
	if (a->dtype == MT_STR)
		return mx_side_text(d, i, row, line, cap);
	if (a->ragged || items > MX_SIDE_ITEMS ||
	    mt_reader_read(d->r, i, row, row + 1, vals, sizeof vals, &err))
		return -1;
	size_t used = (size_t)snprintf(line, cap, "%s: %s", a->name, a->rank ? "[" : "");
	for (uint64_t k = 0; k < items && used < cap; k++) {
		char v[48];
		mx_format_at(a->dtype, vals + k * mt_dtype_size(a->dtype), v, sizeof v);
		used += (size_t)snprintf(line + used, cap - used, "%s%s", k ? " " : "", v);
	}
	if (a->rank && used < cap)
		snprintf(line + used, cap - used, "]");
	return 0;
}

/* The row's other short attributes (a label beside a picture) as lines; how many. */
static int mx_read_side(struct mx_data *d, uint64_t row, char side[MX_SIDE][96])
{
	int n = 0;
	for (size_t i = 0; i < mt_reader_nattrs(d->r) && n < MX_SIDE; i++)
		if ((int)i != d->ai && !mx_side_line(d, i, row, side[n], sizeof side[n]))
			n++;
	return n;
}

static void mx_stat_text(double v, int is_float, char *buf, size_t cap)
{
	if (is_float || v != floor(v))
		snprintf(buf, cap, "%.4g", v);
	else
		snprintf(buf, cap, "%.0f", v);
}

/* ---- drawing ---- */

static void mx_draw_image(struct mx_data *d, int top, int bottom, int w)
{
	static const char shades[] = " .:-=+*#%@";
	double lo = 0, hi = 255;
	if (d->a.dtype != MT_UINT8) {
		lo = INFINITY;
		hi = -INFINITY;
		for (uint64_t i = 0; i < d->h * d->w; i++) {
			double v = mx_value(d, i);
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
	}
	int rows = bottom - top;
	/* Two columns a pixel keeps the picture square; scale down to fit. */
	double sy = (double)d->h / rows > 1 ? (double)d->h / rows : 1;
	double sx = (double)d->w * 2 / w > 1 ? (double)d->w * 2 / w : 1;
	double s = sy > sx ? sy : sx;
	for (int y = 0; y < rows && (uint64_t)(y * s) < d->h; y++)
		for (int x = 0; 2 * x + 1 < w && (uint64_t)(x * s) < d->w; x++) {
			double v = mx_value(d, (uint64_t)(y * s) * d->w + (uint64_t)(x * s));
			double g = hi > lo ? (v - lo) / (hi - lo) : 0;
			g = g < 0 ? 0 : g > 1 ? 1 : g;
			unsigned ch = (unsigned char)shades[(int)(g * 9 + 0.5)];
			disp_cell_grey(top + y, 2 * x, ch, (int)(g * 255));
			disp_cell_grey(top + y, 2 * x + 1, ch, (int)(g * 255));
		}
}

/* The line above the grid: attribute, dtype, shape and which rows. */
static void mx_draw_head(const struct mx_data *d, int y, int w)
{
	char head[400], shape[MT_MAX_RANK * 24 + 16];
	if (d->tensor)
		snprintf(head, sizeof head, "tensor %s  %s %s  of %s@%s  grid %llux%llu", d->attr,
			 mt_dtype_name(d->a.dtype), app_shape_str(&d->a, shape, sizeof shape),
			 d->ref.model, d->ref.version, (unsigned long long)d->h,
			 (unsigned long long)d->w);
	else if (d->a.dtype == MT_STR)
		snprintf(head, sizeof head, "%s  str (UTF-8 text)  row %llu of %llu  %llu bytes",
			 d->attr, (unsigned long long)d->row, (unsigned long long)d->rows,
			 (unsigned long long)d->nvals);
	else if (d->nrows > 1)
		snprintf(head, sizeof head, "%s  %s %s  rows %llu-%llu of %llu", d->attr,
			 mt_dtype_name(d->a.dtype), app_shape_str(&d->a, shape, sizeof shape),
			 (unsigned long long)d->row, (unsigned long long)(d->row + d->nrows - 1),
			 (unsigned long long)d->rows);
	else
		snprintf(head, sizeof head, "%s  %s %s  row %llu of %llu  grid %llux%llu", d->attr,
			 mt_dtype_name(d->a.dtype), app_shape_str(&d->a, shape, sizeof shape),
			 (unsigned long long)d->row, (unsigned long long)d->rows,
			 (unsigned long long)d->h, (unsigned long long)d->w);
	disp_fill(y, 0, w, R_HEADER);
	tui_text_cut(y, 0, w, R_HEADER, head);
}

/* What the grid shows under each column: the statistics over all its values. */
enum { MX_NSTATS = 4 };
static const char *const mx_stat_names[MX_NSTATS] = { "min", "max", "mean", "std" };

/* The whole attribute's per-column numbers, when the catalog holds them
 * for the columns shown (a vector's sheet). */
static const mt_stats *mx_whole_cols(const struct matrix *m)
{
	const struct mx_data *d = m->d;
	return m->cols && !d->tensor && d->a.rank == 1 && m->cols->columns == d->w ? m->cols
										   : NULL;
}

/* Column c's minimum, maximum, mean and std as text: over every row of the
 * attribute when known, else over the grid's rows. */
static void mx_column_stats(const struct matrix *m, uint64_t c, char st[MX_NSTATS][32])
{
	const struct mx_data *d = m->d;
	const mt_stats *ws = mx_whole_cols(m);
	double v[MX_NSTATS];
	if (ws) {
		v[0] = ws->col_min[c];
		v[1] = ws->col_max[c];
		v[2] = ws->col_mean[c];
		v[3] = ws->col_std[c];
	} else {
		double lo = INFINITY, hi = -INFINITY, sum = 0, m2 = 0;
		for (uint64_t r = 0; r < d->h; r++) {
			double val = mx_value(d, r * d->w + c);
			lo = val < lo ? val : lo;
			hi = val > hi ? val : hi;
			sum += val;
		}
		double mean = d->h ? sum / (double)d->h : 0;
		for (uint64_t r = 0; r < d->h; r++)
			m2 += (mx_value(d, r * d->w + c) - mean) * (mx_value(d, r * d->w + c) - mean);
		v[0] = d->h ? lo : 0;
		v[1] = d->h ? hi : 0;
		v[2] = mean;
		v[3] = d->h ? sqrt(m2 / (double)d->h) : 0;
	}
	int is_float = mx_is_float(d->a.dtype);
	for (int k = 0; k < MX_NSTATS; k++) {
		if (isnan(v[k]))
			snprintf(st[k], sizeof st[k], "-");
		else
			mx_stat_text(v[k], is_float || k >= 2, st[k], sizeof st[k]);
	}
}

/* The width column c needs: its widest value over every row of the grid, its
 * widest statistic, or its number. */
static int mx_column_width(const struct mx_data *d, uint64_t c, char st[MX_NSTATS][32],
			   const char *num)
{
	int cw = 1;
	char cell[48];
	for (uint64_t r = 0; r < d->h; r++) {
		mx_format(d, r * d->w + c, cell, sizeof cell);
		int k = (int)strlen(cell);
		cw = k > cw ? k : cw;
	}
	for (int k = 0; k < MX_NSTATS; k++)
		cw = (int)strlen(st[k]) > cw ? (int)strlen(st[k]) : cw;
	return (int)strlen(num) > cw ? (int)strlen(num) : cw;
}

/* The first column to show so that the last ends the w columns there are. */
static uint64_t mx_left_for_end(const struct matrix *m, int w)
{
	const struct mx_data *d = m->d;
	uint64_t left = d->w ? d->w - 1 : 0;
	int used = 0;
	for (uint64_t c = d->w; c-- > 0;) {
		char st[MX_NSTATS][32], num[32];
		mx_column_stats(m, c, st);
		snprintf(num, sizeof num, "%llu", (unsigned long long)c);
		used += mx_column_width(d, c, st, num) + 1;
		if (used > w)
			break;
		left = c;
	}
	return left;
}

/* Where the grid goes on screen: rows [top, bottom) of the view, `rows` value
 * lines, and whether the columns' statistics and the lines saying what they
 * cover fit below them. */
struct mx_area {
	int top, bottom, rows;
	int stats, cover;
};

/* The lines under the values: the statistics (4) and what they cover (2)
 * while the values keep at least half the screen, or all they need; on a
 * short screen the cover goes first, then the statistics. */
static void mx_area_plan(struct mx_area *ar, uint64_t values)
{
	int avail = ar->bottom - ar->top - 1, half = disp_height() / 2;
	int need = values < (uint64_t)half ? (int)values : half;
	ar->stats = avail - MX_NSTATS >= need;
	ar->cover = avail - MX_NSTATS - 2 >= need;
	ar->rows = avail - (ar->stats ? MX_NSTATS : 0) - (ar->cover ? 2 : 0);
	if (ar->rows < 1)
		ar->rows = 1;
}

/* Column c right-aligned in [x, x + cw): its number in the header line, the
 * values of the rows on screen, its statistics at the bottom. */
static void mx_draw_column(const struct matrix *m, uint64_t c, int x, int cw,
			   const struct mx_area *ar, char st[MX_NSTATS][32], const char *num)
{
	const struct mx_data *d = m->d;
	char cell[48];
	disp_text(ar->top, x + cw - (int)strlen(num), cw, R_HEADER, num);
	for (int r = 0; r < ar->rows && m->top + (uint64_t)r < d->h; r++) {
		mx_format(d, (m->top + (uint64_t)r) * d->w + c, cell, sizeof cell);
		disp_text(ar->top + 1 + r, x + cw - (int)strlen(cell), cw, R_NORMAL, cell);
	}
	for (int k = 0; k < MX_NSTATS && ar->stats; k++)
		disp_text(ar->bottom - MX_NSTATS + k, x + cw - (int)strlen(st[k]), cw, R_DIM,
			  st[k]);
}

/* Above the columns' statistics: what they cover (the row shown, or the page of
 * rows of a scalar attribute), and the whole attribute's when the catalog has them. */
static void mx_draw_cover(const struct matrix *m, int y, int w)
{
	const struct mx_data *d = m->d;
	char line[400];
	if (d->tensor) {
		tui_text_cut(y + 1, 0, w, R_DIM, "below: each column over the whole tensor");
		return;
	}
	tui_text_cut(y, 0, w, m->whole[0] ? R_NORMAL : R_DIM,
		     m->whole[0] ? m->whole : "whole attribute: not computed yet (s computes it)");
	if (mx_whole_cols(m))
		snprintf(line, sizeof line, "below: each column over all %llu rows (the whole "
			 "attribute)", (unsigned long long)d->rows);
	else if (d->a.rank == 1 && d->nrows >= 1 && mx_paged(&d->a))
		snprintf(line, sizeof line, "below: each column over rows %llu..%llu (this page; "
			 "s: over every row)", (unsigned long long)d->row,
			 (unsigned long long)(d->row + d->nrows - 1));
	else if (d->nrows > 1)
		snprintf(line, sizeof line, "below: each column over rows %llu..%llu (this page)",
			 (unsigned long long)d->row, (unsigned long long)(d->row + d->nrows - 1));
	else
		snprintf(line, sizeof line, "below: each column over this row (row %llu)",
			 (unsigned long long)d->row);
	tui_text_cut(y + 1, 0, w, R_DIM, line);
}

/* The values as a table: a column per value of the last dimension, from m->left,
 * a line per row of the grid, from m->top, with row numbers on the left and the
 * statistics at the bottom. */
static void mx_draw_grid(struct matrix *m, int top, int bottom, int w)
{
	struct mx_data *d = m->d;
	/* Column widths from the values on screen; the row number column first. */
	struct mx_area ar = { top, bottom, 0, 0, 0 };
	mx_area_plan(&ar, d->h);
	if (m->top + (uint64_t)ar.rows > d->h)
		m->top = d->h > (uint64_t)ar.rows ? d->h - (uint64_t)ar.rows : 0;
	if (m->left >= d->w)
		m->left = d->w ? d->w - 1 : 0;
	char num[48];
	int iw = snprintf(num, sizeof num, "%llu",
			  (unsigned long long)(d->h + (d->nrows > 1 ? d->row : 0))) + 1;
	/* Room for the statistics' names too. */
	iw = iw < 5 ? 5 : iw;
	int x = iw + 1;
	if (m->to_end)
		m->left = mx_left_for_end(m, w - x - 1);
	m->to_end = 0;
	m->vis = ar.rows;
	disp_fill(top, 0, w, R_HEADER);
	uint64_t c = m->left;
	/* A column shows whole or not at all; the last screen column says
	 * when more are hidden on the right (l and $ reach them). */
	for (; c < d->w && x < w; c++) {
		char st[MX_NSTATS][32];
		mx_column_stats(m, c, st);
		snprintf(num, sizeof num, "%llu", (unsigned long long)c);
		int cw = mx_column_width(d, c, st, num);
		if (x + cw > w - (c + 1 < d->w))
			break;
		mx_draw_column(m, c, x, cw, &ar, st, num);
		x += cw + 1;
	}
	if (c < d->w)
		disp_text(top, w - 1, 1, R_HEADER, "›");
	if (m->left > 0)
		disp_text(top, 0, 1, R_HEADER, "‹");
	for (int r = 0; r < ar.rows && m->top + (uint64_t)r < d->h; r++) {
		snprintf(num, sizeof num, "%llu",
			 (unsigned long long)(m->top + (uint64_t)r + (d->nrows > 1 ? d->row : 0)));
		disp_text(top + 1 + r, iw - (int)strlen(num), iw, R_DIM, num);
	}
	for (int k = 0; k < MX_NSTATS && ar.stats; k++)
		disp_text(bottom - MX_NSTATS + k, 0, iw, R_HEADER, mx_stat_names[k]);
	if (ar.cover)
		mx_draw_cover(m, bottom - MX_NSTATS - 2, w);
}

/* A str row as its text: a screen line per line of it, each cut with an
 * ellipsis at the width, and a last "…" when more lines follow than fit. */
static void mx_draw_text(struct matrix *m, int top, int bottom, int w)
{
	const struct mx_data *d = m->d;
	const unsigned char *p = d->buf, *end = p + d->nvals;
	char line[1024];
	uint64_t lines = 1;
	for (const unsigned char *q = p; (q = memchr(q, '\n', (size_t)(end - q))); q++)
		lines++;
	if (m->top >= lines)
		m->top = lines - 1;
	uint64_t skip = m->top;
	int y = top;
	if (p == end)
		tui_text_cut(y, 0, w, R_DIM, "(empty text)");
	while (p < end && y < bottom) {
		const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		if (skip) {
			skip--;
		} else if (y == bottom - 1 && nl && nl + 1 < end) {
			tui_text_cut(y++, 0, w, R_DIM, "…");
		} else {
			mx_text_line(p, len, line, sizeof line);
			tui_text_cut(y++, 0, w, R_NORMAL, line);
		}
		p = nl ? nl + 1 : end;
	}
}

/* The row's other attributes in a panel on the right of rows [top, bottom),
 * when there are any and the screen is wide enough; the columns left for the
 * grid or picture. */
static int mx_draw_side(const struct mx_data *d, int top, int bottom, int w)
{
	if (!d->nside || w < 60)
		return w;
	int pw = w / 3 > 40 ? 40 : w / 3, x = w - pw;
	char head[64];
	snprintf(head, sizeof head, "row %llu", (unsigned long long)d->row);
	disp_text(top, x, pw, R_HEADER, "│");
	tui_text_cut(top, x + 2, pw - 2, R_HEADER, head);
	for (int i = 0; i < d->nside && top + 1 + i < bottom; i++) {
		disp_text(top + 1 + i, x, pw, R_DIM, "│");
		tui_text_cut(top + 1 + i, x + 2, pw - 2, R_NORMAL, d->side[i]);
	}
	for (int y = top + 1 + d->nside; y < bottom; y++)
		disp_text(y, x, pw, R_DIM, "│");
	return x - 1;
}

static void mx_draw(struct tui *t, struct view *v, int top, int bottom)
{
	struct matrix *m = (struct matrix *)v;
	struct mx_data *d = m->d;
	int w = disp_width();
	/* Keys pressed during a read asked for another row: read it now. */
	if (m->pending && !atomic_load(&d->busy))
		mx_fetch(t, m);
	pthread_mutex_lock(&d->lock);
	if (!d->ready && !d->error[0]) {
		char head[400];
		if (d->tensor)
			snprintf(head, sizeof head, "%s: reading the tensor…", d->attr);
		else
			snprintf(head, sizeof head, "%s: reading row %llu…", d->attr,
				 (unsigned long long)m->want);
		disp_text(top, 0, w, R_DIM, head);
	} else {
		if (d->error[0])
			tui_text_cut(top++, 0, w, R_ERROR, d->error);
		if (d->ready) {
			mx_draw_head(d, top++, w);
			int gw = mx_draw_side(d, top, bottom, w);
			if (d->a.dtype == MT_STR)
				mx_draw_text(m, top, bottom, gw);
			else if (m->image && d->h > 1 && d->w > 1)
				mx_draw_image(d, top, bottom, gw);
			else
				mx_draw_grid(m, top, bottom, gw);
		}
	}
	pthread_mutex_unlock(&d->lock);
}

/* ---- keys ---- */

static void goto_submit(struct tui *t, const char *text, void *arg)
{
	struct matrix *m = (struct matrix *)tui_find_view(t, (unsigned)(uintptr_t)arg);
	char *end;
	unsigned long long row = strtoull(text, &end, 10);
	if (!m)
		return;
	if (!*text || *end || text[0] == '-') {
		tui_status(t, 1, "row: '%s' is not a row number", text);
		return;
	}
	if (m->d->rows && row >= m->d->rows) {
		tui_status(t, 1, "row %llu: the version has %llu rows", row,
			   (unsigned long long)m->d->rows);
		return;
	}
	m->want = row;
	m->top = 0;
	mx_fetch(t, m);
}

/* Read the page of a sheet from row `want`, showing line `top` of it. */
static int mx_goto_page(struct tui *t, struct matrix *m, uint64_t want, uint64_t top)
{
	m->want = want;
	m->top = top;
	mx_fetch(t, m);
	return V_HANDLED;
}

/* A sheet's moves that leave the page it holds: down or a page down past
 * its end reads the next, up past its start the previous, g and G the
 * attribute's first and last rows; V_IGNORED for the moves within it. */
static int mx_sheet_key(struct tui *t, struct matrix *m, enum tui_action a)
{
	struct mx_data *d = m->d;
	pthread_mutex_lock(&d->lock);
	uint64_t step = mx_page_rows(&d->a), rows = d->rows;
	int at_end = d->ready && m->top + (uint64_t)m->vis >= d->h && d->row + d->nrows < rows;
	int at_start = d->ready && !m->top && d->row > 0;
	uint64_t next = d->row + d->nrows, prev = d->row > step ? d->row - step : 0;
	uint64_t first = d->row, last_page = rows > step ? rows - step : 0;
	pthread_mutex_unlock(&d->lock);
	if ((a == ACT_DOWN || a == ACT_PGDN) && at_end)
		return mx_goto_page(t, m, next, 0);
	if ((a == ACT_UP || a == ACT_PGUP) && at_start)
		return mx_goto_page(t, m, prev, UINT64_MAX / 2);
	if (a == ACT_HOME && first > 0) {
		m->left = 0;
		return mx_goto_page(t, m, 0, 0);
	}
	if (a == ACT_END && first + step < rows)
		return mx_goto_page(t, m, last_page, UINT64_MAX / 2);
	return V_IGNORED;
}

static int mx_key(struct tui *t, struct view *v, enum tui_action a, int k)
{
	struct matrix *m = (struct matrix *)v;
	struct mx_data *d = m->d;
	pthread_mutex_lock(&d->lock);
	int paged = d->rows && !d->tensor && mx_paged(&d->a);
	uint64_t step = paged ? mx_page_rows(&d->a) : 1;
	pthread_mutex_unlock(&d->lock);
	int r = paged ? mx_sheet_key(t, m, a) : V_IGNORED;
	if (r)
		return r;
	int page = disp_height() - 8;
	switch (a) {
	case ACT_UP:
		m->top -= m->top > 0;
		return V_HANDLED;
	case ACT_DOWN:
		m->top++;
		return V_HANDLED;
	case ACT_PGUP:
		m->top = m->top > (uint64_t)page ? m->top - (uint64_t)page : 0;
		return V_HANDLED;
	case ACT_PGDN:
		m->top += (uint64_t)page;
		return V_HANDLED;
	case ACT_HOME:
		m->top = m->left = 0;
		return V_HANDLED;
	case ACT_END:
		m->top = UINT64_MAX / 2;
		return V_HANDLED;
	case ACT_LEFT:
		if (!m->left)
			return V_CLOSE;
		m->left--;
		return V_HANDLED;
	case ACT_RIGHT:
		m->left++;
		return V_HANDLED;
	case ACT_FIRST_COL:
		m->left = 0;
		m->to_end = 0;
		return V_HANDLED;
	case ACT_LAST_COL:
		m->to_end = 1;
		return V_HANDLED;
	case ACT_ROW_NEXT:
		/* Before the first read the row count is unknown: the read checks. */
		if (!d->rows || m->want + step < d->rows) {
			m->want += step;
			mx_fetch(t, m);
		}
		return V_HANDLED;
	case ACT_ROW_PREV:
		if (m->want) {
			m->want = m->want > step ? m->want - step : 0;
			mx_fetch(t, m);
		}
		return V_HANDLED;
	case ACT_ROW_GOTO:
		tui_ask(t, "row: ", "", goto_submit, (void *)(uintptr_t)v->serial, NULL);
		return V_HANDLED;
	case ACT_STATS:
		if (!d->tensor && d->a.rank == 1 && mx_paged(&d->a) &&
		    d->a.shape[0] <= MT_STATS_MAX_COLUMNS)
			tui_stats_columns(t, &d->ref, d->attr);
		else
			tui_stats_start(t, &d->ref, d->attr);
		return V_HANDLED;
	case ACT_FREQ:
		tui_freq_start(t, &d->ref, d->attr);
		return V_HANDLED;
	case ACT_EXPORT:
		tui_export_action(t, &d->ref, d->attr, m->want);
		return V_HANDLED;
	case ACT_IMAGE:
		m->image = !m->image;
		if (m->image && !(d->h > 1 && d->w > 1))
			tui_status(t, 0, "a preview needs a 2-D row");
		return V_HANDLED;
	default:
		return V_IGNORED;
	}
}

static void mx_free(struct view *v)
{
	struct matrix *m = (struct matrix *)v;
	mx_unref(m->d);
	mt_stats_free(m->cols);
	free(m);
}

/* A statistics job may have finished: the whole attribute's line from the catalog. */
static void mx_reload(struct tui *t, struct view *v)
{
	struct matrix *m = (struct matrix *)v;
	if (m->d->tensor)
		return;
	tui_stats_line(t, &m->d->ref, m->d->attr, m->whole, sizeof m->whole);
	mt_stats_free(m->cols);
	m->cols = tui_stats_cached(t, &m->d->ref, m->d->attr, NULL);
	if (m->cols && !m->cols->columns) {
		mt_stats_free(m->cols);
		m->cols = NULL;
	}
}

static const struct view_ops matrix_ops = {
	"matrix", K_MATRIX, mx_draw, mx_key, mx_reload, NULL, NULL, mx_free,
};

static struct view *mx_view(struct tui *t, const mt_catalog_ref *ref, const char *attr,
			    int tensor)
{
	struct matrix *m = app_xcalloc(1, sizeof *m);
	struct mx_data *d = app_xcalloc(1, sizeof *d);
	pthread_mutex_init(&d->lock, NULL);
	atomic_init(&d->refs, 1);
	tui_ref_copy(&d->ref, ref);
	snprintf(d->attr, sizeof d->attr, "%s", attr);
	d->tensor = tensor;
	m->d = d;
	m->base.ops = &matrix_ops;
	if (tensor)
		m->base.scope = K_TENSOR;
	snprintf(m->base.title, sizeof m->base.title, "%s", attr);
	mx_reload(t, &m->base);
	mx_fetch(t, m);
	return &m->base;
}

struct view *tui_matrix_view(struct tui *t, const mt_catalog_ref *ref, const char *attr)
{
	return mx_view(t, ref, attr, 0);
}

struct view *tui_tensor_view(struct tui *t, const mt_catalog_ref *ref, const char *key)
{
	return mx_view(t, ref, key, 1);
}
