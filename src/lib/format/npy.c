/* npy.c — NumPy .npy files: header parser, reader of any order and byte order, stream writer. */
#define _GNU_SOURCE /* sync_file_range, O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* np.load itself refuses headers over 10000 bytes; this bound only keeps
 * a hostile file from making mt_npy_open allocate without limit. */
#define NPY_MAX_HEADER (1u << 20)
/* A Fortran-order read gathers one run of rows per column; runs shorter
 * than this would cost a system call per few elements, so the whole
 * array is loaded once instead. */
#define NPY_MIN_RUN 4096
/* Scratch for gathering Fortran-order columns. */
#define NPY_BLOCK (8u << 20)
/* NumPy aligns the data to this many bytes (format 1.0 and later). */
#define NPY_ALIGN 64

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NPY_HOST_BIG 1
#else
#define NPY_HOST_BIG 0
#endif

/* The dtypes both directions understand, as NumPy spells them. */
static const struct npy_type {
	mt_dtype dtype;
	char kind;
	unsigned size;
} npy_types[] = {
	{MT_BOOL, 'b', 1},    {MT_INT8, 'i', 1},    {MT_INT16, 'i', 2},   {MT_INT32, 'i', 4},
	{MT_INT64, 'i', 8},   {MT_UINT8, 'u', 1},   {MT_UINT16, 'u', 2},  {MT_UINT32, 'u', 4},
	{MT_UINT64, 'u', 8},  {MT_FLOAT16, 'f', 2}, {MT_FLOAT32, 'f', 4}, {MT_FLOAT64, 'f', 8},
};

/* ---- header parser --------------------------------------------------- */

/* The header is a Python dict literal; this reads just the subset NumPy
 * writes (strings, True/False, tuples of integers), with any spacing. */
struct npy_lex {
	const char *p, *end;
	mt_error *err;
	const char *start; /* the header's first byte, for offsets in errors */
};

/* A header byte as an error shows it: 'c' when printable ASCII, else \xNN,
 * so a NUL or a control byte can neither cut nor garble the message. */
static const char *npy_show(char c, char buf[8])
{
	unsigned char u = (unsigned char)c;
	if (u >= 0x20 && u < 0x7f && u != '\\' && u != '\'')
		snprintf(buf, 8, "'%c'", c);
	else
		snprintf(buf, 8, "\\x%02x", u);
	return buf;
}

static void npy_skip_ws(struct npy_lex *l)
{
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
		l->p++;
}

/* Skip spaces, then consume c if it is next. */
static int npy_accept(struct npy_lex *l, char c)
{
	npy_skip_ws(l);
	if (l->p < l->end && *l->p == c) {
		l->p++;
		return 1;
	}
	return 0;
}

static int npy_expect(struct npy_lex *l, char c, const char *where)
{
	if (npy_accept(l, c))
		return 0;
	if (l->p == l->end)
		return mti_err(l->err, MT_EFORMAT, ".npy header: ends where '%c' %s was expected", c,
			      where);
	char shown[8];
	return mti_err(l->err, MT_EFORMAT, ".npy header: %s at byte %zu where '%c' %s was expected",
		      npy_show(*l->p, shown), (size_t)(l->p - l->start), c, where);
}

static int npy_string(struct npy_lex *l, char *out, size_t cap)
{
	npy_skip_ws(l);
	char shown[8];
	if (l->p == l->end)
		return mti_err(l->err, MT_EFORMAT, ".npy header: ends where a quoted string was "
			      "expected");
	if (*l->p != '\'' && *l->p != '"')
		return mti_err(l->err, MT_EFORMAT, ".npy header: %s at byte %zu where a quoted "
			      "string was expected", npy_show(*l->p, shown),
			      (size_t)(l->p - l->start));
	char q = *l->p++;
	size_t n = 0;
	while (l->p < l->end && *l->p != q) {
		/* No key or dtype NumPy writes needs an escape or a control
		 * character (a NUL would cut the dtype short). */
		if (*l->p == '\\' || (unsigned char)*l->p < 0x20 || n + 1 >= cap)
			return mti_err(l->err, MT_EFORMAT, ".npy header: bad string \"%.*s...\": %s "
				      "at byte %zu", (int)n, out, npy_show(*l->p, shown),
				      (size_t)(l->p - l->start));
		out[n++] = *l->p++;
	}
	if (l->p == l->end)
		return mti_err(l->err, MT_EFORMAT, ".npy header: unterminated string");
	l->p++;
	out[n] = '\0';
	return 0;
}

static int npy_word(struct npy_lex *l, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(l->end - l->p) < n || memcmp(l->p, w, n) != 0)
		return 0;
	l->p += n;
	return 1;
}

static int npy_bool(struct npy_lex *l, int *out)
{
	npy_skip_ws(l);
	if (npy_word(l, "True"))
		*out = 1;
	else if (npy_word(l, "False"))
		*out = 0;
	else
		return mti_err(l->err, MT_EFORMAT,
			      ".npy header: 'fortran_order' must be True or False");
	return 0;
}

static int npy_uint(struct npy_lex *l, uint64_t *out)
{
	npy_skip_ws(l);
	uint64_t v = 0;
	const char *start = l->p;
	while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
		if (!mti_mul_ok(v, 10, &v) || !mti_add_ok(v, (uint64_t)(*l->p - '0'), &v))
			return mti_err(l->err, MT_EFORMAT,
				      ".npy header: a dimension overflows 64 bits");
		l->p++;
	}
	if (l->p == start)
		return mti_err(l->err, MT_EFORMAT,
			      ".npy header: 'shape' must hold non-negative integers");
	/* Python 2 wrote long integers as 3L. */
	if (l->p < l->end && *l->p == 'L')
		l->p++;
	*out = v;
	return 0;
}

static int npy_shape(struct npy_lex *l, mt_npy_info *out)
{
	int rc = npy_expect(l, '(', "opening 'shape'");
	while (!rc && !npy_accept(l, ')')) {
		uint64_t d = 0;
		if ((rc = npy_uint(l, &d)))
			break;
		if (out->rank == MT_MAX_RANK + 1)
			return mti_err(l->err, MT_EFORMAT,
				      ".npy header: arrays of more than %d dimensions are not "
				      "supported", MT_MAX_RANK + 1);
		out->shape[out->rank++] = d;
		if (!npy_accept(l, ','))
			return npy_expect(l, ')', "closing 'shape'");
	}
	return rc;
}

/* Names for the NumPy kinds we recognise but cannot store. */
static const char *npy_unsupported_kind(char kind)
{
	switch (kind) {
	case 'O':
		return "object arrays (pickled Python objects)";
	case 'U':
		return "unicode strings";
	case 'S':
	case 'a':
		return "byte strings";
	case 'c':
		return "complex numbers";
	case 'M':
		return "datetimes";
	case 'm':
		return "timedeltas";
	case 'V':
		return "raw void records";
	default:
		return NULL;
	}
}

static int npy_descr(const char *s, mt_npy_info *out, mt_error *err)
{
	const char *p = s;
	char order = '=';
	if (*p && strchr("<>|=", *p))
		order = *p++;
	char kind = *p ? *p++ : '\0';
	const char *why = kind == 'U' ? NULL : npy_unsupported_kind(kind);
	if (why)
		return mti_err(err, MT_EFORMAT, ".npy header: dtype '%s' (%s) is not supported%s", s,
			      why, kind == 'O' ? "; text saved with a.astype(str) is" : "");
	unsigned size = 0;
	while (*p >= '0' && *p <= '9' && size < 1000)
		size = size * 10 + (unsigned)(*p++ - '0');
	if (kind == 'U' && !*p) {
		/* Text: fixed-width UTF-32 code units, '<U' n as NumPy writes it. */
		out->dtype = MT_STR;
		out->text_chars = size;
		out->big_endian = order == '>' || (order == '=' && NPY_HOST_BIG);
		return 0;
	}
	if (kind == 'U')
		return mti_err(err, MT_EFORMAT, ".npy header: dtype '%s' (%s) is not supported", s,
			      npy_unsupported_kind(kind));
	for (size_t i = 0; !*p && i < sizeof npy_types / sizeof npy_types[0]; i++) {
		if (npy_types[i].kind == kind && npy_types[i].size == size) {
			out->dtype = npy_types[i].dtype;
			int big = order == '>' || (order == '=' && NPY_HOST_BIG);
			out->big_endian = size > 1 && big;
			return 0;
		}
	}
	return mti_err(err, MT_EFORMAT,
		      ".npy header: dtype '%s' is not supported (bool, int8..int64, "
		      "uint8..uint64 and float16/32/64 are)", s);
}

/* Check the magic and version.  *prefix receives where the dict starts,
 * *total the byte count of the whole header, padding included. */
static int npy_prelude(const uint8_t *b, size_t len, size_t *prefix, uint64_t *total,
		       mt_error *err)
{
	if (len && memcmp(b, NPY_MAGIC, len < NPY_MAGIC_LEN ? len : NPY_MAGIC_LEN) != 0)
		return mti_err(err, MT_EFORMAT, "not a .npy file (no \\x93NUMPY magic)");
	if (len < NPY_MAGIC_LEN + 2)
		return mti_err(err, MT_ERANGE, ".npy header: cut short after %zu bytes", len);
	unsigned major = b[6], minor = b[7];
	if (major < 1 || major > 3 || minor != 0)
		return mti_err(err, MT_EFORMAT,
			      ".npy format version %u.%u is not supported (1.0, 2.0 and 3.0 are)",
			      major, minor);
	/* 1.0 has a 2-byte length; 2.0 and 3.0 (UTF-8) a 4-byte one. */
	*prefix = major == 1 ? 10 : 12;
	if (len < *prefix)
		return mti_err(err, MT_ERANGE, ".npy header: cut short after %zu bytes", len);
	*total = *prefix + (major == 1 ? (uint64_t)b[8] | (uint64_t)b[9] << 8 : mti_get_u32(b + 8));
	return 0;
}

static int npy_dict(struct npy_lex *l, mt_npy_info *out)
{
	int seen = 0; /* bit 0: descr, 1: fortran_order, 2: shape */
	int rc = npy_expect(l, '{', "opening the header dict");
	while (!rc && !npy_accept(l, '}')) {
		char key[32], descr[64];
		if ((rc = npy_string(l, key, sizeof key)) ||
		    (rc = npy_expect(l, ':', "after a key")))
			break;
		int bit = strcmp(key, "descr") == 0 ? 1 : strcmp(key, "fortran_order") == 0 ? 2
			: strcmp(key, "shape") == 0 ? 4 : 0;
		if (!bit || (seen & bit))
			return mti_err(l->err, MT_EFORMAT, ".npy header: %s key '%s'",
				      bit ? "repeated" : "unexpected", key);
		seen |= bit;
		if (bit == 1) {
			npy_skip_ws(l);
			if (l->p < l->end && *l->p == '[')
				return mti_err(l->err, MT_EFORMAT,
					      ".npy header: structured dtypes (a list 'descr') "
					      "are not supported");
			if (!(rc = npy_string(l, descr, sizeof descr)))
				rc = npy_descr(descr, out, l->err);
		} else if (bit == 2) {
			rc = npy_bool(l, &out->fortran_order);
		} else {
			rc = npy_shape(l, out);
		}
		if (!rc && !npy_accept(l, ',')) {
			rc = npy_expect(l, '}', "closing the header dict");
			break;
		}
	}
	if (rc)
		return rc;
	if (seen != 7)
		return mti_err(l->err, MT_EFORMAT, ".npy header: the dict lacks '%s'",
			      !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
	npy_skip_ws(l);
	char shown[8];
	if (l->p != l->end)
		return mti_err(l->err, MT_EFORMAT, ".npy header: stray bytes after the dict, from %s "
			      "at byte %zu", npy_show(*l->p, shown), (size_t)(l->p - l->start));
	return 0;
}

/* Bytes per element: a text element is text_chars UTF-32 code units. */
static uint64_t npy_esize(const mt_npy_info *in)
{
	return in->dtype == MT_STR ? 4 * in->text_chars : mt_dtype_size(in->dtype);
}

int mt_npy_parse_header(const void *buf, size_t len, mt_npy_info *out, mt_error *err)
{
	memset(out, 0, sizeof *out);
	size_t prefix;
	uint64_t total;
	int rc = npy_prelude(buf, len, &prefix, &total, err);
	if (rc)
		return rc;
	if (total > len)
		return mti_err(err, MT_ERANGE, ".npy header: needs %llu bytes, %zu given",
			      (unsigned long long)total, len);
	const char *b = buf;
	struct npy_lex l = {b + prefix, b + total, err, b};
	if ((rc = npy_dict(&l, out)))
		return rc;
	uint64_t n = npy_esize(out);
	for (int i = 0; i < out->rank; i++)
		if (!mti_mul_ok(n, out->shape[i], &n))
			return mti_err(err, MT_EFORMAT, ".npy header: the array's size overflows");
	uint64_t end;
	if (!mti_add_ok(total, n, &end) || end > SIZE_MAX)
		return mti_err(err, MT_EFORMAT, ".npy header: the array's size overflows");
	out->header_bytes = total;
	out->data_bytes = n;
	return 0;
}

/* ---- reader ------------------------------------------------------------ */

struct mt_npy {
	int fd;
	char *path;
	mt_npy_info info;
	size_t esize;
	uint64_t rows;      /* along the first dimension; a scalar is one row */
	uint64_t row_items; /* elements per row */
	int transpose;      /* Fortran order that differs from C order */
	uint8_t *whole;     /* the transposed array, once a read had to load it */
};

static int npy_pread(mt_npy *n, void *buf, uint64_t len, uint64_t off, mt_error *err)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t got = pread(n->fd, p, len, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return mti_err(err, MT_EIO, "%s: read at byte %llu: %s", n->path,
				      (unsigned long long)off, strerror(errno));
		if (got == 0)
			return mti_err(err, MT_EFORMAT, "%s: truncated: the file ends at byte %llu",
				      n->path, (unsigned long long)off);
		p += got;
		off += (uint64_t)got;
		len -= (uint64_t)got;
	}
	return 0;
}

/* Turn `count` elements as stored into little-endian values, and bools
 * into 0/1 whatever byte a writer used for true. */
static void npy_fix(const mt_npy_info *in, uint8_t *p, uint64_t count)
{
	size_t es = mt_dtype_size(in->dtype);
	if (in->dtype == MT_STR) {
		es = 4;
		count *= in->text_chars;
	}
	if (in->dtype == MT_BOOL) {
		for (uint64_t i = 0; i < count; i++)
			p[i] = p[i] != 0;
	} else if (in->big_endian != NPY_HOST_BIG) {
		for (uint64_t i = 0; i < count; i++, p += es) {
			if (es == 2) {
				uint16_t v;
				memcpy(&v, p, 2);
				v = __builtin_bswap16(v);
				memcpy(p, &v, 2);
			} else if (es == 4) {
				uint32_t v;
				memcpy(&v, p, 4);
				v = __builtin_bswap32(v);
				memcpy(p, &v, 4);
			} else if (es == 8) {
				uint64_t v;
				memcpy(&v, p, 8);
				v = __builtin_bswap64(v);
				memcpy(p, &v, 8);
			}
		}
	}
}

/* Copy n elements from a run into every `step`-th element of dst; the
 * fixed-size cases let the compiler turn each copy into one move. */
static void npy_scatter(uint8_t *dst, uint64_t step, const uint8_t *src, uint64_t n, size_t es)
{
	switch (es) {
	case 1:
		for (uint64_t i = 0; i < n; i++)
			dst[i * step] = src[i];
		break;
	case 2:
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * step * 2, src + i * 2, 2);
		break;
	case 4:
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * step * 4, src + i * 4, 4);
		break;
	default:
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * step * 8, src + i * 8, 8);
		break;
	}
}

/* Rows [a, b) of a Fortran-order array into dst in C order (values not
 * yet fixed).  Column j (the Fortran-order index over dimensions 1..)
 * holds those rows as one run at element j*d0 + a.  When every row is
 * wanted the columns lie back to back and one read serves many of them;
 * otherwise each run is read alone, in pieces if it is long. */
static int npy_read_fortran(mt_npy *n, uint64_t a, uint64_t b, uint8_t *dst, mt_error *err)
{
	const mt_npy_info *in = &n->info;
	size_t es = n->esize;
	uint64_t nr = b - a, run = nr * es, cols = n->row_items, d0 = in->shape[0];
	int batch = nr == d0 && run <= NPY_BLOCK;
	uint64_t per = batch ? NPY_BLOCK / run : 1;  /* columns per read */
	uint64_t piece = batch || run <= NPY_BLOCK ? nr : NPY_BLOCK / es; /* rows per read */
	per = per < cols ? per : cols;
	uint8_t *tmp = malloc((size_t)(per * piece * es));
	if (!tmp)
		return mti_err(err, MT_ENOMEM, "%s: out of memory reading rows %llu..%llu", n->path,
			      (unsigned long long)a, (unsigned long long)b);
	/* An odometer over dimensions 1.. in Fortran order (first fastest)
	 * tracks where column j lands within a C-order row: at element c. */
	uint64_t idx[MT_MAX_RANK + 1] = {0}, stride[MT_MAX_RANK + 1];
	stride[in->rank - 1] = 1;
	for (int d = in->rank - 2; d >= 1; d--)
		stride[d] = stride[d + 1] * in->shape[d + 1];
	uint64_t c = 0;
	int rc = 0;
	for (uint64_t j = 0; j < cols && !rc; j++) {
		uint64_t at = in->header_bytes + (j * d0 + a) * es;
		if (batch && j % per == 0)
			rc = npy_pread(n, tmp, (cols - j < per ? cols - j : per) * run, at, err);
		if (batch && !rc)
			npy_scatter(dst + c * es, cols, tmp + j % per * run, nr, es);
		for (uint64_t p = 0; !batch && p < nr && !rc; p += piece) {
			uint64_t m = nr - p < piece ? nr - p : piece;
			if (!(rc = npy_pread(n, tmp, m * es, at + p * es, err)))
				npy_scatter(dst + (p * cols + c) * es, cols, tmp, m, es);
		}
		for (int d = 1; d < in->rank; d++) {
			c += stride[d];
			if (++idx[d] < in->shape[d])
				break;
			c -= stride[d] * in->shape[d];
			idx[d] = 0;
		}
	}
	free(tmp);
	return rc;
}

/* Read and parse the header of a file of `size` bytes into n->info. */
static int npy_load_header(mt_npy *n, uint64_t size, mt_error *err)
{
	uint8_t pre[12];
	size_t have = size < sizeof pre ? (size_t)size : sizeof pre, prefix;
	uint64_t total;
	int rc = npy_pread(n, pre, have, 0, err);
	if (!rc && (rc = npy_prelude(pre, have, &prefix, &total, err))) {
		if (rc == MT_ERANGE)
			return mti_err(err, MT_EFORMAT, "%s: truncated: %zu bytes hold no header",
				      n->path, have);
		mti_err_prefix(err, "%s: ", n->path);
	}
	if (rc)
		return rc;
	if (total > size)
		return mti_err(err, MT_EFORMAT, "%s: truncated: a %llu-byte .npy header in a "
			      "%llu-byte file", n->path, (unsigned long long)total,
			      (unsigned long long)size);
	if (total > NPY_MAX_HEADER)
		return mti_err(err, MT_EFORMAT, "%s: .npy header of %llu bytes is implausibly large",
			      n->path, (unsigned long long)total);
	uint8_t *hdr = malloc((size_t)total);
	if (!hdr)
		return mti_err(err, MT_ENOMEM, "%s: out of memory", n->path);
	rc = npy_pread(n, hdr, total, 0, err);
	if (!rc && (rc = mt_npy_parse_header(hdr, (size_t)total, &n->info, err)))
		mti_err_prefix(err, "%s: ", n->path);
	free(hdr);
	return rc;
}

/* The file holds the array's bytes exactly: fewer is a truncated file, more
 * is something else (another array appended, a damaged header) that a reader
 * would silently drop. */
static int npy_check_size(const char *path, const mt_npy_info *in, uint64_t size,
			  mt_error *err)
{
	uint64_t have = size - in->header_bytes;
	if (have < in->data_bytes)
		return mti_err(err, MT_EFORMAT, "%s: truncated: holds %llu of %llu data bytes", path,
			      (unsigned long long)have, (unsigned long long)in->data_bytes);
	if (have > in->data_bytes)
		return mti_err(err, MT_EFORMAT, "%s: %llu extra bytes after the array's %llu data "
			      "bytes", path, (unsigned long long)(have - in->data_bytes),
			      (unsigned long long)in->data_bytes);
	return 0;
}

int mt_npy_open(const char *path, mt_npy **out, mt_error *err)
{
	*out = NULL;
	if (!path)
		return mti_err(err, MT_EINVAL, "mt_npy_open: no path");
	mt_npy *n = calloc(1, sizeof *n);
	if (!n || !(n->path = mti_strdup(path))) {
		free(n);
		return mti_err(err, MT_ENOMEM, "%s: out of memory", path);
	}
	const mt_npy_info *in = &n->info;
	struct stat st;
	int rc = 0;
	if ((n->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(n->fd, &st) < 0)
		rc = mti_err(err, errno == ENOENT ? MT_ENOTFOUND : MT_EIO, "%s: %s", path,
			    strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = mti_err(err, MT_EFORMAT, "%s: not a regular file", path);
	else if (!(rc = npy_load_header(n, (uint64_t)st.st_size, err)))
		rc = npy_check_size(path, in, (uint64_t)st.st_size, err);
	if (rc) {
		mt_npy_close(n);
		return rc;
	}
	n->esize = (size_t)npy_esize(in);
	n->rows = in->rank ? in->shape[0] : 1;
	n->row_items = 1;
	int big_dims = 0;
	for (int i = 0; i < in->rank; i++) {
		n->row_items *= i ? in->shape[i] : 1;
		big_dims += in->shape[i] > 1;
	}
	/* With at most one dimension above 1 both orders lay bytes out alike. */
	n->transpose = in->fortran_order && big_dims > 1;
	*out = n;
	return 0;
}

const mt_npy_info *mt_npy_get_info(const mt_npy *n)
{
	return &n->info;
}

int mt_npy_read_rows(mt_npy *n, uint64_t a, uint64_t b, void *buf, size_t cap, mt_error *err)
{
	if (a > b || b > n->rows)
		return mti_err(err, MT_ERANGE,
			      "%s: rows %llu..%llu are outside the array's %llu rows", n->path,
			      (unsigned long long)a, (unsigned long long)b,
			      (unsigned long long)n->rows);
	uint64_t row_bytes = n->row_items * n->esize, items = (b - a) * n->row_items;
	uint64_t len = items * n->esize;
	if (len > cap)
		return mti_err(err, MT_ERANGE,
			      "%s: rows %llu..%llu need %llu bytes, the buffer holds %zu", n->path,
			      (unsigned long long)a, (unsigned long long)b, (unsigned long long)len,
			      cap);
	if (len == 0)
		return 0;
	if (!n->transpose) {
		int rc = npy_pread(n, buf, len, n->info.header_bytes + a * row_bytes, err);
		if (!rc)
			npy_fix(&n->info, buf, items);
		return rc;
	}
	if (!n->whole && (b - a) * n->esize >= NPY_MIN_RUN) {
		int rc = npy_read_fortran(n, a, b, buf, err);
		if (!rc)
			npy_fix(&n->info, buf, items);
		return rc;
	}
	if (!n->whole) {
		uint8_t *w = malloc((size_t)n->info.data_bytes);
		if (!w)
			return mti_err(err, MT_ENOMEM,
				      "%s: out of memory loading the Fortran-order array (%llu B)",
				      n->path, (unsigned long long)n->info.data_bytes);
		int rc = npy_read_fortran(n, 0, n->rows, w, err);
		if (rc) {
			free(w);
			return rc;
		}
		npy_fix(&n->info, w, n->info.data_bytes / n->esize);
		n->whole = w;
	}
	memcpy(buf, n->whole + a * row_bytes, (size_t)len);
	return 0;
}

void mt_npy_close(mt_npy *n)
{
	if (!n)
		return;
	if (n->fd >= 0)
		close(n->fd);
	free(n->whole);
	free(n->path);
	free(n);
}

/* ---- writer ------------------------------------------------------------ */

struct mt_npy_writer {
	int fd;
	int own_fd;      /* closed by finish/close (not a caller's descriptor) */
	char *path;      /* the name errors show */
	char *target;    /* where finish renames tmp to: path, or a symbolic link's target */
	char *tmp;       /* the name written until finish renames it; NULL when written in place */
	uint64_t want;   /* data bytes the shape holds */
	uint64_t done;
	uint64_t pos;    /* bytes written to fd, the header's included */
	uint64_t kicked; /* bytes before this are on their way to the disk */
	int state;       /* 0 writing, 1 finished, -1 failed */
	int direct;      /* fd is in direct I/O (O_DIRECT): pos stays a multiple of NPY_DIRECT_ALIGN */
	uint8_t *stage;  /* NPY_DIRECT_STAGE aligned bytes for what is written after pos */
	size_t staged;
};

/* Written bytes are sent on their way to the disk in steps of this many
 * (npy_kick). */
#define NPY_KICK_BYTES (32u << 20)

/* A file finish fsyncs and of at least this many bytes is written with
 * direct I/O: the fsync waits for the disk anyway, and going past the page
 * cache saves the kernel's copy and its fresh pages (half a second of system
 * time for 1 GiB here, several seconds when the VM is slow to hand them out)
 * and leaves the cache to what was there, the shards read among them.  Small
 * files stay buffered: they gain nothing and are often read right back. */
#define NPY_DIRECT_MIN (64u << 20)
/* Offset, length and address of every direct write are multiples of this:
 * the largest logical block size file systems commonly ask for. */
#define NPY_DIRECT_ALIGN 4096u
/* What a direct writer collects before writing it, for pieces whose address
 * is not NPY_DIRECT_ALIGN-aligned where their file offset is. */
#define NPY_DIRECT_STAGE (4u << 20)

/* Symbolic links followed before a path is called a loop (Linux's own limit). */
#define NPY_MAX_LINKS 40

/* The header NumPy itself would write: version 1.0, dict padded with
 * spaces and a newline so the data starts on a 64-byte boundary.  With at
 * most MT_MAX_RANK+1 dimensions it is always far below format 1.0's 64 KiB
 * limit, so format 2.0 is never needed. */
static size_t npy_header(mt_dtype t, int rank, const uint64_t *shape, char *out, size_t cap)
{
	const struct npy_type *ty = NULL;
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
		if (npy_types[i].dtype == t)
			ty = &npy_types[i];
	size_t n = 10;
	if (t == MT_STR)
		n += (size_t)snprintf(out + n, cap - n, "{'descr': '<U%llu', 'fortran_order': "
				      "False, 'shape': (", (unsigned long long)shape[--rank]);
	else
		n += (size_t)snprintf(out + n, cap - n, "{'descr': '%c%c%u', 'fortran_order': "
				      "False, 'shape': (", ty->size == 1 ? '|' : '<', ty->kind,
				      ty->size);
	for (int i = 0; i < rank; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%llu", i ? ", " : "",
				      (unsigned long long)shape[i]);
	n += (size_t)snprintf(out + n, cap - n, "%s), }", rank == 1 ? "," : "");
	while ((n + 1) % NPY_ALIGN)
		out[n++] = ' ';
	out[n++] = '\n';
	memcpy(out, NPY_MAGIC "\x01\x00", 8);
	out[8] = (char)((n - 10) & 0xff);
	out[9] = (char)((n - 10) >> 8);
	return n;
}

static int npy_write_all(mt_npy_writer *w, const void *data, size_t len, mt_error *err)
{
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t put = write(w->fd, p, len);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0) {
			w->state = -1;
			return mti_err(err, MT_EIO, "%s: write: %s", w->path, strerror(errno));
		}
		p += put;
		len -= (size_t)put;
		w->pos += (uint64_t)put;
	}
	return 0;
}

/* A file finish fsyncs (a temporary one renamed into place) starts its
 * write-back as it is written: otherwise the disk idles until that fsync and
 * then the writer waits for all of it (a third of a second at the end of a
 * 1 GiB get).  A hint only: a failure shows at the fsync. */
static void npy_kick(mt_npy_writer *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
	if (!w->tmp || w->direct || w->pos - w->kicked < NPY_KICK_BYTES)
		return;
	(void)sync_file_range(w->fd, (off_t)w->kicked, (off_t)(w->pos - w->kicked),
			      SYNC_FILE_RANGE_WRITE);
	w->kicked = w->pos;
#else
	(void)w;
#endif
}

/* Turn direct I/O off: the fd writes through the page cache from here on. */
static int npy_buffered(mt_npy_writer *w, mt_error *err)
{
	int fl = fcntl(w->fd, F_GETFL);
	w->direct = 0;
	if (fl < 0 || fcntl(w->fd, F_SETFL, fl & ~O_DIRECT) < 0) {
		w->state = -1;
		return mti_err(err, MT_EIO, "%s: fcntl: %s", w->path, strerror(errno));
	}
	return 0;
}

/* Drop the first put bytes of the iovecs. */
static void npy_iov_advance(struct iovec **iov, int *cnt, size_t put)
{
	while (*cnt > 0 && put >= (*iov)->iov_len) {
		put -= (*iov)->iov_len;
		(*iov)++;
		(*cnt)--;
	}
	if (*cnt > 0) {
		(*iov)->iov_base = (uint8_t *)(*iov)->iov_base + put;
		(*iov)->iov_len -= put;
	}
}

/* The iovecs at pos with direct I/O, in one call (every piece aligned).
 * Where the file system refuses (EINVAL: a larger block than
 * NPY_DIRECT_ALIGN) or a write comes back short of a block, the rest goes
 * through the page cache. */
static int npy_write_direct(mt_npy_writer *w, struct iovec *iov, int cnt, mt_error *err)
{
	int rc = 0;
	while (!rc && cnt > 0 && w->direct) {
		ssize_t put = writev(w->fd, iov, cnt);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0 && errno != EINVAL) {
			w->state = -1;
			return mti_err(err, MT_EIO, "%s: write: %s", w->path, strerror(errno));
		}
		if (put > 0) {
			w->pos += (uint64_t)put;
			npy_iov_advance(&iov, &cnt, (size_t)put);
		}
		if (put <= 0 || put % NPY_DIRECT_ALIGN)
			rc = npy_buffered(w, err);
	}
	for (int k = 0; !rc && k < cnt; k++)
		rc = npy_write_all(w, iov[k].iov_base, iov[k].iov_len, err);
	return rc;
}

/* The staged bytes up to the last whole block go out; the rest moves to the front. */
static int npy_flush_stage(mt_npy_writer *w, mt_error *err)
{
	size_t n = w->staged - w->staged % NPY_DIRECT_ALIGN;
	struct iovec iov = {w->stage, n};
	int rc = npy_write_direct(w, &iov, 1, err);
	if (rc)
		return rc;
	memmove(w->stage, w->stage + n, w->staged - n);
	w->staged -= n;
	return 0;
}

/* Every byte a writer takes, the header's too.  In direct I/O a piece whose
 * address lines up with its file offset is written from where it lies; the
 * rest is collected in the stage, a block or a stage at a time. */
static int npy_put(mt_npy_writer *w, const void *data, size_t len, mt_error *err)
{
	const uint8_t *p = data;
	while (len > 0 && w->direct) {
		size_t part = w->staged % NPY_DIRECT_ALIGN;
		if (!part && (uintptr_t)p % NPY_DIRECT_ALIGN == 0 && len >= NPY_DIRECT_ALIGN) {
			/* The staged blocks and the piece in one call: a small
			 * direct write of its own waits out the big one before it. */
			size_t n = len - len % NPY_DIRECT_ALIGN;
			struct iovec iov[2] = {{w->stage, w->staged}, {(void *)(uintptr_t)p, n}};
			int rc = w->staged ? npy_write_direct(w, iov, 2, err)
					   : npy_write_direct(w, iov + 1, 1, err);
			if (rc)
				return rc;
			w->staged = 0;
			p += n;
			len -= n;
			continue;
		}
		size_t room = part ? NPY_DIRECT_ALIGN - part : NPY_DIRECT_STAGE - w->staged;
		size_t n = len < room ? len : room;
		memcpy(w->stage + w->staged, p, n);
		w->staged += n;
		p += n;
		len -= n;
		int rc = w->staged == NPY_DIRECT_STAGE ? npy_flush_stage(w, err) : 0;
		if (rc)
			return rc;
	}
	/* Direct I/O given up, or finishing: what is staged goes first. */
	if (!w->direct && w->staged) {
		size_t n = w->staged;
		w->staged = 0;
		int rc = npy_write_all(w, w->stage, n, err);
		if (rc)
			return rc;
	}
	return len ? npy_write_all(w, p, len, err) : 0;
}

/* A temporary file of a large array goes into direct I/O when its file
 * system allows it (F_SETFL refuses O_DIRECT where it does not). */
static void npy_try_direct(mt_npy_writer *w)
{
	int fl = fcntl(w->fd, F_GETFL);
	if (!w->tmp || w->want < NPY_DIRECT_MIN || fl < 0 ||
	    posix_memalign((void **)&w->stage, NPY_DIRECT_ALIGN, NPY_DIRECT_STAGE))
		return;
	if (fcntl(w->fd, F_SETFL, fl | O_DIRECT) == 0) {
		w->direct = 1;
		return;
	}
	free(w->stage);
	w->stage = NULL;
}

/* A symbolic link's target, read relative to the link's own directory. */
static char *npy_link_target(const char *link, size_t size_hint)
{
	size_t cap = size_hint + 2 > 256 ? size_hint + 2 : 256;
	char *buf = malloc(cap);
	ssize_t n = buf ? readlink(link, buf, cap) : -1;
	if (n < 0 || (size_t)n >= cap) {
		if (n >= 0)
			errno = ENAMETOOLONG;
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	const char *slash = strrchr(link, '/');
	if (buf[0] == '/' || !slash)
		return buf;
	char *joined = mti_asprintf("%.*s/%s", (int)(slash - link), link, buf);
	free(buf);
	return joined;
}

/* Where a write to path lands, following symbolic links: *target gets the
 * final name; *in_place is set when that is neither a regular file nor
 * absent (a device, a FIFO), which is written as it is and never replaced
 * by a rename. */
static int npy_resolve(const char *path, char **target, int *in_place, mt_error *err)
{
	char *p = mti_strdup(path);
	int e = p ? ELOOP : ENOMEM;
	for (int hops = 0; p && hops <= NPY_MAX_LINKS; hops++) {
		struct stat st;
		int absent = lstat(p, &st) != 0;
		if (absent && errno != ENOENT) {
			e = errno;
			break;
		}
		if (!absent && S_ISDIR(st.st_mode)) {
			e = EISDIR;
			break;
		}
		if (absent || !S_ISLNK(st.st_mode)) {
			*in_place = !absent && !S_ISREG(st.st_mode);
			*target = p;
			return 0;
		}
		char *next = npy_link_target(p, (size_t)st.st_size);
		if (!next) {
			e = errno;
			break;
		}
		free(p);
		p = next;
	}
	free(p);
	return mti_err(err, e == ENOMEM ? MT_ENOMEM : MT_EIO, "%s: %s", path, strerror(e));
}

/* Open w->target for writing: a fresh temporary file beside it, renamed over
 * it by finish; or, in place, the device or FIFO itself (no truncation). */
static int npy_open_target(mt_npy_writer *w, int in_place, mt_error *err)
{
	if (in_place) {
		w->fd = open(w->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (w->fd < 0)
			return mti_err(err, MT_EIO, "%s: cannot open: %s", w->path, strerror(errno));
		return 0;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* A fresh name per try: another writer of the same path (another
	 * thread, or a crashed run's leftover) never shares our file. */
	unsigned r = (unsigned)ts.tv_nsec ^ (unsigned)(uintptr_t)w;
	for (int tries = 0; w->fd < 0 && tries < 16; tries++) {
		free(w->tmp);
		r = r * 1103515245u + 12345u;
		if (!(w->tmp = mti_asprintf("%s.tmp.%ld.%08x", w->target, (long)getpid(), r)))
			return mti_err(err, MT_ENOMEM, "%s: out of memory", w->path);
		w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (w->fd < 0 && errno != EEXIST)
			break;
	}
	if (w->fd < 0)
		return mti_err(err, errno == ENOENT ? MT_ENOTFOUND : MT_EIO,
			      "%s: cannot create %s: %s", w->path, w->tmp, strerror(errno));
	return 0;
}

/* Check the array, allocate the writer; its fd is still to be opened. */
static int npy_writer_new(const char *name, mt_dtype dtype, int rank, const uint64_t *shape,
			  mt_npy_writer **out, mt_error *err)
{
	*out = NULL;
	if (!mt_dtype_size(dtype))
		return mti_err(err, MT_EINVAL, "%s: invalid dtype %d", name, (int)dtype);
	if (rank < 0 || rank > MT_MAX_RANK + 1)
		return mti_err(err, MT_EINVAL, "%s: rank %d is not 0..%d", name, rank,
			      MT_MAX_RANK + 1);
	if (rank > 0 && !shape)
		return mti_err(err, MT_EINVAL, "%s: rank %d but no shape", name, rank);
	if (dtype == MT_STR && (rank < 1 || shape[rank - 1] == 0))
		return mti_err(err, MT_EINVAL, "%s: text needs its width in characters as the "
			       "last dimension (at least 1)", name);
	/* Text is NumPy's '<U': each character a UTF-32 code unit. */
	uint64_t want = dtype == MT_STR ? 4 : mt_dtype_size(dtype);
	for (int i = 0; i < rank; i++)
		if (!mti_mul_ok(want, shape[i], &want))
			return mti_err(err, MT_EINVAL, "%s: the array's size overflows", name);
	mt_npy_writer *w = calloc(1, sizeof *w);
	if (!w || !(w->path = mti_strdup(name))) {
		free(w);
		return mti_err(err, MT_ENOMEM, "%s: out of memory", name);
	}
	w->fd = -1;
	w->own_fd = 1;
	w->want = want;
	*out = w;
	return 0;
}

/* The header goes out first; on failure the writer is closed. */
static int npy_writer_start(mt_npy_writer *w, mt_dtype dtype, int rank, const uint64_t *shape,
			    mt_npy_writer **out, mt_error *err)
{
	char hdr[512];
	npy_try_direct(w);
	int rc = npy_put(w, hdr, npy_header(dtype, rank, shape, hdr, sizeof hdr), err);
	if (rc) {
		mt_npy_writer_close(w);
		return rc;
	}
	*out = w;
	return 0;
}

int mt_npy_create(const char *path, mt_dtype dtype, int rank, const uint64_t *shape,
		  mt_npy_writer **out, mt_error *err)
{
	*out = NULL;
	if (!path)
		return mti_err(err, MT_EINVAL, "mt_npy_create: no path");
	mt_npy_writer *w;
	int in_place = 0;
	int rc = npy_writer_new(path, dtype, rank, shape, &w, err);
	if (!rc && (rc = npy_resolve(path, &w->target, &in_place, err)) == 0)
		rc = npy_open_target(w, in_place, err);
	if (rc) {
		mt_npy_writer_close(w);
		return rc;
	}
	return npy_writer_start(w, dtype, rank, shape, out, err);
}

int mt_npy_create_fd(int fd, const char *name, mt_dtype dtype, int rank, const uint64_t *shape,
		     mt_npy_writer **out, mt_error *err)
{
	*out = NULL;
	if (fd < 0 || !name)
		return mti_err(err, MT_EINVAL, "mt_npy_create_fd: no descriptor or name");
	mt_npy_writer *w;
	int rc = npy_writer_new(name, dtype, rank, shape, &w, err);
	if (rc)
		return rc;
	w->fd = fd;
	w->own_fd = 0;
	return npy_writer_start(w, dtype, rank, shape, out, err);
}

int mt_npy_write(mt_npy_writer *w, const void *data, size_t bytes, mt_error *err)
{
	if (w->state)
		return mti_err(err, MT_ESTATE, "%s: write after the file was %s", w->path,
			      w->state > 0 ? "finished" : "abandoned by an error");
	if (bytes > w->want - w->done)
		return mti_err(err, MT_ESTATE, "%s: writing %zu bytes at %llu overruns the %llu the "
			      "shape holds", w->path, bytes, (unsigned long long)w->done,
			      (unsigned long long)w->want);
	int rc = npy_put(w, data, bytes, err);
	if (!rc) {
		w->done += bytes;
		npy_kick(w);
	}
	return rc;
}

uint64_t mt_npy_writer_offset(const mt_npy_writer *w)
{
	return w->pos + w->staged;
}

int mt_npy_finish(mt_npy_writer *w, mt_error *err)
{
	if (w->state)
		return mti_err(err, MT_ESTATE, "%s: finish after the file was %s", w->path,
			      w->state > 0 ? "finished" : "abandoned by an error");
	int rc = 0;
	if (w->done != w->want)
		rc = mti_err(err, MT_ESTATE, "%s: wrote %llu of the %llu data bytes the shape holds",
			    w->path, (unsigned long long)w->done, (unsigned long long)w->want);
	/* The last partial block cannot go direct: it goes buffered, the staged
	 * bytes before it. */
	else if (w->direct && (rc = npy_buffered(w, err)) == 0)
		rc = npy_put(w, NULL, 0, err);
	/* The data reaches the disk before the name does, so a crash leaves
	 * no file or the whole new one, never a short one. */
	if (!rc && w->tmp && fsync(w->fd) < 0)
		rc = mti_err(err, MT_EIO, "%s: fsync: %s", w->tmp, strerror(errno));
	if (w->own_fd && close(w->fd) < 0 && !rc)
		rc = mti_err(err, MT_EIO, "%s: close: %s", w->tmp ? w->tmp : w->path,
			    strerror(errno));
	w->fd = -1;
	if (!rc && w->tmp && rename(w->tmp, w->target) < 0)
		rc = mti_err(err, MT_EIO, "%s: rename from %s: %s", w->path, w->tmp,
			    strerror(errno));
	if (rc && w->tmp)
		unlink(w->tmp);
	w->state = rc ? -1 : 1;
	return rc;
}

void mt_npy_writer_close(mt_npy_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0 && w->own_fd)
		close(w->fd);
	/* What went to a device, a FIFO or a caller's descriptor cannot be taken back. */
	if (w->fd >= 0 && w->tmp)
		unlink(w->tmp);
	free(w->tmp);
	free(w->target);
	free(w->path);
	free(w->stage);
	free(w);
}
