/* app-records.c — records as text (JSON lines, CSV) checked against a dataset's attributes and packed into rows. */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "app.h"

/* A ragged attribute's row as parsed: its items back to back. */
struct rec_rag {
	uint8_t *data;
	size_t len, cap; /* bytes */
	uint64_t items;
};

/* Where each CSV column goes: an attribute and an element of its row. */
struct rec_col {
	size_t attr;
	uint64_t item;
};

struct app_records {
	const mt_attr *attrs;
	size_t nattrs;
	uint64_t *items;   /* elements per row (fixed) or item (ragged), per attribute */
	struct rec_rag *rag; /* per attribute; used by ragged ones */
	size_t *name_len;  /* strlen of each attribute's name, for the JSON keys */
	struct rec_col *cols;
	size_t ncols;
	size_t *fields;    /* a CSV line split: start and length of each field */
	size_t fcap;
	char *text;        /* one field, unquoted and NUL-terminated */
	size_t tcap;
};

/* One value as found in the text, before it meets a dtype. */
enum { V_INT, V_UINT, V_REAL, V_BOOL };
struct rec_value {
	int kind;
	int64_t i;
	uint64_t u;
	double d;
};

/* why = the message; returns -1, what every parser returns for a bad record. */
static int rec_fail(char *why, size_t cap, const char *fmt, ...) APP_PRINTF(3, 4);
static int rec_fail(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return -1;
}

/* NAME=str: text is one string a row, ragged bytes by definition, so no shape
 * (":*" is allowed, as a ragged attribute is spelled). */
static int rec_text_spec(const char *spec, const char *eq, const char *colon, mt_attr *out,
			 char **name, char *why, size_t cap)
{
	if (colon && strcmp(colon, ":*"))
		return rec_fail(why, cap, "'%s': str takes no shape (one text a row)", spec);
	out->ragged = 1;
	*name = app_xasprintf("%.*s", (int)(eq - spec), spec);
	out->name = *name;
	return 0;
}

int app_attr_spec(const char *spec, mt_attr *out, char **name, char *why, size_t cap)
{
	memset(out, 0, sizeof *out);
	*name = NULL;
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || !eq[1])
		return rec_fail(why, cap, "'%s' is not NAME=DTYPE[:SHAPE] (ragged: NAME=DTYPE:*)",
				spec);
	const char *colon = strchr(eq + 1, ':');
	size_t dlen = colon ? (size_t)(colon - eq - 1) : strlen(eq + 1);
	char dtype[32];
	if (dlen >= sizeof dtype)
		dlen = sizeof dtype - 1;
	memcpy(dtype, eq + 1, dlen);
	dtype[dlen] = 0;
	out->dtype = mt_dtype_parse(dtype);
	if (out->dtype == MT_BFLOAT16)
		return rec_fail(why, cap, "'%s': bfloat16 is for model checkpoints only; store "
				"float32", spec);
	if (out->dtype == MT_DTYPE_INVALID)
		return rec_fail(why, cap, "'%s': unknown dtype '%s' (bool, int8..int64, uint8..uint64, "
				"float16, float32, float64, str)", spec, dtype);
	if (out->dtype == MT_STR)
		return rec_text_spec(spec, eq, colon, out, name, why, cap);
	/* SHAPE is "3" or "28x28" (a comma works too, as in NumPy's tuples); a
	 * leading "*" is a ragged row's item count, as app_shape_str writes it. */
	const char *p = colon ? colon + 1 : NULL;
	if (p && *p == '*' && (!p[1] || p[1] == 'x' || p[1] == ',')) {
		out->ragged = 1;
		p = p[1] ? p + 2 : NULL;
		if (p && !*p)
			return rec_fail(why, cap, "'%s': an item shape must follow '*x'", spec);
	}
	while (p) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (end == p || *p == '-' || errno || v == 0 || out->rank == MT_MAX_RANK ||
		    (*end && *end != 'x' && *end != ','))
			return rec_fail(why, cap, "'%s': the shape must be positive sizes like 3 or "
					"28x28 (ragged: *, *x3), at most %d of them", spec, MT_MAX_RANK);
		out->shape[out->rank++] = v;
		p = *end ? end + 1 : NULL;
	}
	*name = app_xasprintf("%.*s", (int)(eq - spec), spec);
	out->name = *name;
	return 0;
}

struct app_records *app_records_new(const mt_attr *attrs, size_t n)
{
	struct app_records *r = app_xcalloc(1, sizeof *r);
	r->attrs = attrs;
	r->nattrs = n;
	r->items = app_xcalloc(n ? n : 1, sizeof *r->items);
	r->name_len = app_xcalloc(n ? n : 1, sizeof *r->name_len);
	r->rag = app_xcalloc(n ? n : 1, sizeof *r->rag);
	for (size_t i = 0; i < n; i++) {
		r->items[i] = mt_attr_items(&attrs[i]);
		r->name_len[i] = strlen(attrs[i].name);
	}
	return r;
}

void app_records_free(struct app_records *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nattrs; i++)
		free(r->rag[i].data);
	free(r->rag);
	free(r->items);
	free(r->name_len);
	free(r->cols);
	free(r->fields);
	free(r->text);
	free(r);
}

size_t app_records_row_bytes(const struct app_records *r, size_t i)
{
	return (size_t)r->items[i] * mt_dtype_size(r->attrs[i].dtype);
}

const void *app_records_ragged(const struct app_records *r, size_t i, uint64_t *items)
{
	*items = r->rag[i].items;
	return r->rag[i].data;
}

/* Room for `bytes` more of ragged attribute i's row: where they go. */
static uint8_t *rag_room(struct app_records *r, size_t i, size_t bytes)
{
	struct rec_rag *g = &r->rag[i];
	g->data = app_xgrow(g->data, &g->cap, g->len + bytes, 256);
	return g->data + g->len;
}

static void rag_reset(struct app_records *r)
{
	for (size_t i = 0; i < r->nattrs; i++)
		r->rag[i].len = r->rag[i].items = 0;
}

/* IEEE binary16 from a double, rounding to nearest even (through float, whose
 * wider mantissa makes the double rounding harmless for values a half can hold). */
static uint16_t rec_half(double d)
{
	float f = (float)d;
	uint32_t x;
	memcpy(&x, &f, sizeof x);
	uint32_t sign = (x >> 16) & 0x8000u, man = x & 0x7fffffu;
	int fexp = (int)((x >> 23) & 0xff), exp = fexp - 127 + 15;
	if (fexp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (exp <= 0) {
		if (exp < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		unsigned shift = (unsigned)(14 - exp);
		uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)exp << 10) | (man >> 13), rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++; /* a carry into the exponent is the right answer, up to infinity */
	return (uint16_t)(sign | h);
}

static int rec_store_float(mt_dtype t, double d, void *dst, char *why, size_t cap)
{
	int finite = d == d && d - d == 0.0;
	if (t == MT_FLOAT64) {
		memcpy(dst, &d, 8);
		return 0;
	}
	if (t == MT_FLOAT32) {
		if (finite && (d > (double)FLT_MAX || d < -(double)FLT_MAX))
			return rec_fail(why, cap, "%g is out of range for float32", d);
		float f = (float)d;
		memcpy(dst, &f, 4);
		return 0;
	}
	uint16_t h = rec_half(d);
	if (finite && (h & 0x7c00u) == 0x7c00u)
		return rec_fail(why, cap, "%g is out of range for float16", d);
	memcpy(dst, &h, 2);
	return 0;
}

/* The range of an integer dtype, as the signed or unsigned extremes. */
static void rec_int_range(mt_dtype t, int *is_signed, int64_t *lo, uint64_t *hi)
{
	unsigned bits = 8u * (unsigned)mt_dtype_size(t);
	*is_signed = t == MT_INT8 || t == MT_INT16 || t == MT_INT32 || t == MT_INT64;
	*hi = *is_signed ? (UINT64_MAX >> (65 - bits)) : (UINT64_MAX >> (64 - bits));
	*lo = *is_signed ? -(int64_t)(*hi) - 1 : 0;
}

static int rec_store_int(mt_dtype t, const struct rec_value *v, void *dst, char *why, size_t cap)
{
	int is_signed;
	int64_t lo;
	uint64_t hi;
	rec_int_range(t, &is_signed, &lo, &hi);
	if (v->kind == V_REAL)
		return rec_fail(why, cap, "%g is not an integer (%s)", v->d, mt_dtype_name(t));
	if (v->kind == V_BOOL)
		return rec_fail(why, cap, "a boolean is not a number (%s)", mt_dtype_name(t));
	int ok = v->kind == V_UINT ? v->u <= hi : v->i >= lo && (v->i < 0 || (uint64_t)v->i <= hi);
	if (!ok) {
		if (v->kind == V_UINT)
			return rec_fail(why, cap, "%" PRIu64 " is out of range for %s", v->u,
					mt_dtype_name(t));
		return rec_fail(why, cap, "%" PRId64 " is out of range for %s", v->i,
				mt_dtype_name(t));
	}
	/* Little-endian hosts only (as the whole library): the low bytes are the value. */
	uint64_t bits = v->kind == V_UINT ? v->u : (uint64_t)v->i;
	memcpy(dst, &bits, mt_dtype_size(t));
	return 0;
}

/* Put one value into one element of dtype t; -1 with why when it does not fit. */
static int rec_store(mt_dtype t, const struct rec_value *v, void *dst, char *why, size_t cap)
{
	if (t == MT_BOOL) {
		int b = v->kind == V_BOOL ? (v->i != 0) : v->kind == V_INT && (v->i == 0 || v->i == 1)
			? (int)v->i : -1;
		if (b < 0)
			return rec_fail(why, cap, "a bool must be true, false, 0 or 1");
		*(uint8_t *)dst = (uint8_t)b;
		return 0;
	}
	if (t == MT_FLOAT16 || t == MT_FLOAT32 || t == MT_FLOAT64) {
		if (v->kind == V_BOOL)
			return rec_fail(why, cap, "a boolean is not a number (%s)", mt_dtype_name(t));
		double d = v->kind == V_INT ? (double)v->i : v->kind == V_UINT ? (double)v->u : v->d;
		return rec_store_float(t, d, dst, why, cap);
	}
	return rec_store_int(t, v, dst, why, cap);
}

/* ---- JSON lines ---- */

static int rec_json_value(const json_t *j, struct rec_value *v)
{
	switch (json_typeof(j)) {
	case JSON_INTEGER: v->kind = V_INT; v->i = (int64_t)json_integer_value(j); return 0;
	case JSON_REAL: v->kind = V_REAL; v->d = json_real_value(j); return 0;
	case JSON_TRUE: v->kind = V_BOOL; v->i = 1; return 0;
	case JSON_FALSE: v->kind = V_BOOL; v->i = 0; return 0;
	default: return -1;
	}
}

/* "x[1][2]": where in the attribute the walk is. */
static void rec_json_path(const mt_attr *a, const uint64_t *idx, int depth, char *buf,
			  size_t cap)
{
	size_t len = (size_t)snprintf(buf, cap, "%s", a->name);
	for (int d = 0; d < depth && len < cap; d++)
		len += (size_t)snprintf(buf + len, cap - len, "[%" PRIu64 "]", idx[d]);
}

/* Walk nested arrays of the attribute's shape, storing the scalars in C order. */
static int rec_json_fill(const mt_attr *a, const json_t *j, int depth, uint64_t *idx,
			 uint8_t **dst, char *why, size_t cap)
{
	char path[128];
	if (depth == a->rank) {
		struct rec_value v;
		char what[160];
		if (rec_json_value(j, &v) == 0 && rec_store(a->dtype, &v, *dst, what, sizeof what) == 0) {
			*dst += mt_dtype_size(a->dtype);
			return 0;
		}
		rec_json_path(a, idx, depth, path, sizeof path);
		if (json_is_array(j) || json_is_object(j) || json_is_string(j) || json_is_null(j))
			snprintf(what, sizeof what, "expected a number, found %s",
				 json_is_array(j) ? "an array" : json_is_object(j) ? "an object" :
				 json_is_string(j) ? "a string" : "null");
		snprintf(why, cap, "field %s: %s", path, what);
		return -1;
	}
	if (!json_is_array(j) || json_array_size(j) != a->shape[depth]) {
		rec_json_path(a, idx, depth, path, sizeof path);
		char shape[96];
		if (json_is_array(j))
			snprintf(why, cap, "field %s: expected %" PRIu64 " values (shape %s), found %zu",
				 path, a->shape[depth], app_shape_str(a, shape, sizeof shape),
				 json_array_size(j));
		else
			snprintf(why, cap, "field %s: expected an array of %" PRIu64 " (shape %s)",
				 path, a->shape[depth], app_shape_str(a, shape, sizeof shape));
		return -1;
	}
	for (uint64_t i = 0; i < a->shape[depth]; i++) {
		idx[depth] = i;
		if (rec_json_fill(a, json_array_get(j, (size_t)i), depth + 1, idx, dst, why, cap))
			return -1;
	}
	return 0;
}

/* ---- JSON lines: the fast path ---- */

/* Most records are plain: one object of numbers and arrays of numbers, keys
 * without escapes.  This scan reads those straight into the rows, about four
 * times faster than building jansson's tree; anything else (an error to
 * report, an escape, null, a duplicate key) returns -1 and the record goes
 * through jansson, which decides and names what is wrong.  It accepts only
 * text jansson accepts and reads each number as jansson would (strtoll for
 * integers, strtod for the rest), so both paths give the same rows. */
struct rec_scan {
	const char *p, *end;
};

static void scan_ws(struct rec_scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int scan_digits(struct rec_scan *s, const char **q)
{
	const char *d = *q;
	while (*q < s->end && **q >= '0' && **q <= '9')
		(*q)++;
	return *q > d ? 0 : -1;
}

/* Powers of ten a double holds exactly. */
static const double scan_pow10[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* The number in [p, q) (already checked to be JSON's grammar) without
 * strtod, when that gives exactly strtod's answer: an integer of at most 18
 * digits, or a real whose digits make an integer below 2^53 scaled by a power
 * of ten up to 1e22.  Both factors are then exact doubles, and one IEEE
 * multiplication or division rounds their exact product once, to nearest, as
 * strtod does (Clinger's fast path).  -1: leave it to strtod/strtoll. */
static int scan_number_exact(const char *p, const char *q, int real, struct rec_value *v)
{
	int neg = *p == '-';
	p += neg;
	uint64_t m = 0;
	int digits = 0, exp10 = 0;
	for (; p < q && *p >= '0' && *p <= '9'; p++, digits++)
		m = m * 10 + (uint64_t)(*p - '0');
	if (p < q && *p == '.')
		for (p++; p < q && *p >= '0' && *p <= '9'; p++, digits++, exp10--)
			m = m * 10 + (uint64_t)(*p - '0');
	if (digits > 18)
		return -1; /* m may have wrapped */
	if (!real) {
		v->kind = V_INT;
		v->i = neg ? -(int64_t)m : (int64_t)m;
		return 0;
	}
	if (p < q) { /* an exponent */
		int eneg = p[1] == '-', e = 0;
		for (p += 1 + (p[1] == '-' || p[1] == '+'); p < q; p++)
			if ((e = e * 10 + (*p - '0')) > 1000)
				return -1;
		exp10 += eneg ? -e : e;
	}
	if (m > (1ull << 53) || exp10 < -22 || exp10 > 22)
		return -1;
	double d = (double)m;
	d = exp10 < 0 ? d / scan_pow10[-exp10] : d * scan_pow10[exp10];
	v->kind = V_REAL;
	v->d = neg ? -d : d;
	return 0;
}

static int scan_number(struct rec_scan *s, struct rec_value *v)
{
	const char *q = s->p;
	int real = 0;
	if (q < s->end && *q == '-')
		q++;
	if (q < s->end && *q == '0' && q + 1 < s->end && q[1] >= '0' && q[1] <= '9')
		return -1; /* a leading zero: not JSON */
	if (scan_digits(s, &q))
		return -1;
	if (q < s->end && *q == '.') {
		real = 1;
		q++;
		if (scan_digits(s, &q))
			return -1;
	}
	if (q < s->end && (*q == 'e' || *q == 'E')) {
		real = 1;
		q++;
		if (q < s->end && (*q == '+' || *q == '-'))
			q++;
		if (scan_digits(s, &q))
			return -1;
	}
	if (scan_number_exact(s->p, q, real, v) == 0) {
		s->p = q;
		return 0;
	}
	char buf[64];
	size_t n = (size_t)(q - s->p);
	if (n >= sizeof buf)
		return -1;
	memcpy(buf, s->p, n);
	buf[n] = 0;
	errno = 0;
	v->kind = real ? V_REAL : V_INT;
	if (real)
		v->d = strtod(buf, NULL);
	else
		v->i = strtoll(buf, NULL, 10);
	/* Integers out of range and reals that overflow are jansson's errors. */
	if (errno == ERANGE && (!real || v->d > 1.0 || v->d < -1.0))
		return -1;
	s->p = q;
	return 0;
}

static int scan_scalar(struct rec_scan *s, struct rec_value *v)
{
	size_t left = (size_t)(s->end - s->p);
	if (left && *s->p != 't' && *s->p != 'f')
		return scan_number(s, v); /* the common case, without the two compares */
	if (left >= 4 && !memcmp(s->p, "true", 4)) {
		s->p += 4;
		*v = (struct rec_value){ .kind = V_BOOL, .i = 1 };
		return 0;
	}
	if (left >= 5 && !memcmp(s->p, "false", 5)) {
		s->p += 5;
		*v = (struct rec_value){ .kind = V_BOOL, .i = 0 };
		return 0;
	}
	return scan_number(s, v);
}

static int scan_fill(struct rec_scan *s, const mt_attr *a, int depth, uint8_t **dst)
{
	char why[8];
	if (depth == a->rank) {
		struct rec_value v;
		if (scan_scalar(s, &v) || rec_store(a->dtype, &v, *dst, why, sizeof why))
			return -1;
		*dst += mt_dtype_size(a->dtype);
		return 0;
	}
	if (s->p >= s->end || *s->p != '[')
		return -1;
	s->p++;
	for (uint64_t i = 0; i < a->shape[depth]; i++) {
		scan_ws(s);
		if (scan_fill(s, a, depth + 1, dst))
			return -1;
		scan_ws(s);
		if (s->p >= s->end || *s->p != (i + 1 < a->shape[depth] ? ',' : ']'))
			return -1;
		s->p++;
	}
	return 0;
}

/* A ragged attribute's row: an array of any number of items, each one as
 * scan_fill reads a fixed row of the item's shape. */
static int scan_ragged(struct rec_scan *s, struct app_records *r, size_t i)
{
	const mt_attr *a = &r->attrs[i];
	size_t ib = app_records_row_bytes(r, i);
	if (s->p >= s->end || *s->p != '[')
		return -1;
	s->p++;
	scan_ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return 0;
	}
	for (;;) {
		uint8_t *dst = rag_room(r, i, ib);
		scan_ws(s);
		if (scan_fill(s, a, 0, &dst))
			return -1;
		r->rag[i].len += ib;
		r->rag[i].items++;
		scan_ws(s);
		if (s->p >= s->end)
			return -1;
		if (*s->p == ']') {
			s->p++;
			return 0;
		}
		if (*s->p++ != ',')
			return -1;
	}
}

/* "key": the attribute it names, or -1. */
static long scan_key(struct rec_scan *s, const struct app_records *r)
{
	if (s->p >= s->end || *s->p != '"')
		return -1;
	const char *k = ++s->p;
	while (s->p < s->end && *s->p != '"' && *s->p != '\\' && (unsigned char)*s->p >= 0x20)
		s->p++;
	if (s->p >= s->end || *s->p != '"')
		return -1;
	size_t len = (size_t)(s->p++ - k);
	for (size_t i = 0; i < r->nattrs; i++)
		if (r->name_len[i] == len && !memcmp(r->attrs[i].name, k, len))
			return (long)i;
	return -1;
}

static int rec_json_fast(struct app_records *r, const char *line, size_t len, void *const *row)
{
	struct rec_scan s = { line, line + len };
	size_t seen = 0;
	scan_ws(&s);
	if (s.p >= s.end || *s.p++ != '{' || r->nattrs > 64)
		return -1;
	uint64_t mask = 0;
	rag_reset(r);
	for (;;) {
		scan_ws(&s);
		long i = scan_key(&s, r);
		if (i < 0 || (mask >> i) & 1)
			return -1;
		mask |= 1ull << i;
		seen++;
		scan_ws(&s);
		if (s.p >= s.end || *s.p++ != ':')
			return -1;
		scan_ws(&s);
		uint8_t *dst = row[i];
		if (r->attrs[i].ragged ? scan_ragged(&s, r, (size_t)i)
				       : scan_fill(&s, &r->attrs[i], 0, &dst))
			return -1;
		scan_ws(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			continue;
		}
		if (s.p >= s.end || *s.p++ != '}')
			return -1;
		break;
	}
	scan_ws(&s);
	return s.p == s.end && seen == r->nattrs ? 0 : -1;
}

/* A str attribute's row: the text's bytes (NULL: the value was no string). */
static int rec_text(struct app_records *r, size_t i, const char *text, size_t len, char *why,
		    size_t cap)
{
	size_t bad;
	if (!text)
		return rec_fail(why, cap, "field %s: expected a string (str)", r->attrs[i].name);
	if (mt_utf8_check(text, len, &bad))
		return rec_fail(why, cap, "field %s: not UTF-8 text (byte %zu%s)", r->attrs[i].name,
				bad, text[bad] ? "" : " is a NUL");
	memcpy(rag_room(r, i, len), text, len);
	r->rag[i].len += len;
	r->rag[i].items += len;
	return 0;
}

/* A ragged attribute's row through jansson: an array of items, item k checked
 * as a fixed row named NAME[k], so errors say which item. */
static int rec_json_ragged(struct app_records *r, size_t i, const json_t *j, char *why,
			   size_t cap)
{
	const mt_attr *a = &r->attrs[i];
	size_t ib = app_records_row_bytes(r, i);
	char shape[96];
	if (a->dtype == MT_STR)
		return rec_text(r, i, json_is_string(j) ? json_string_value(j) : NULL,
				json_is_string(j) ? json_string_length(j) : 0, why, cap);
	if (!json_is_array(j))
		return rec_fail(why, cap, "field %s: expected an array of items (shape %s)", a->name,
				app_shape_str(a, shape, sizeof shape));
	for (size_t k = 0; k < json_array_size(j); k++) {
		char name[160];
		snprintf(name, sizeof name, "%s[%zu]", a->name, k);
		mt_attr item = *a;
		item.name = name;
		item.ragged = 0;
		uint64_t idx[MT_MAX_RANK];
		uint8_t *dst = rag_room(r, i, ib);
		if (rec_json_fill(&item, json_array_get(j, k), 0, idx, &dst, why, cap))
			return -1;
		r->rag[i].len += ib;
		r->rag[i].items++;
	}
	return 0;
}

/* The whole check, through jansson's tree: what decides, and names, every error. */
static int rec_json_tree(struct app_records *r, const char *line, size_t len, void *const *row,
			 char *why, size_t cap)
{
	json_error_t je;
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	/* A key given twice would silently keep its last value. */
	static const char dup[] = "duplicate object key near '\"";
	size_t klen = strlen(je.text) - (sizeof dup - 1);
	if (!o && !strncmp(je.text, dup, sizeof dup - 1) && klen >= 2)
		return rec_fail(why, cap, "field %.*s: given twice in one record (column %d)",
				(int)(klen - 2), je.text + sizeof dup - 1, je.column);
	if (!o)
		return rec_fail(why, cap, "not JSON: %s (column %d)", je.text, je.column);
	int rc = 0;
	rag_reset(r);
	if (!json_is_object(o))
		rc = rec_fail(why, cap, "expected a JSON object, one record a line");
	for (size_t i = 0; !rc && i < r->nattrs; i++) {
		const json_t *v = json_object_get(o, r->attrs[i].name);
		uint64_t idx[MT_MAX_RANK];
		uint8_t *dst = row[i];
		if (!v)
			rc = rec_fail(why, cap, "field %s: missing", r->attrs[i].name);
		else if (r->attrs[i].ragged)
			rc = rec_json_ragged(r, i, v, why, cap);
		else
			rc = rec_json_fill(&r->attrs[i], v, 0, idx, &dst, why, cap);
	}
	/* A key that is no attribute is a typo or a changed producer: say so, not drop it. */
	const char *key;
	json_t *val;
	json_object_foreach(o, key, val) {
		if (rc)
			break;
		size_t i = 0;
		while (i < r->nattrs && strcmp(key, r->attrs[i].name))
			i++;
		if (i == r->nattrs)
			rc = rec_fail(why, cap, "field %s: not an attribute of the dataset", key);
	}
	json_decref(o);
	return rc;
}

int app_records_json(struct app_records *r, const char *line, size_t len, void *const *row,
		     char *why, size_t cap)
{
	return rec_json_fast(r, line, len, row) == 0 ? 0 : rec_json_tree(r, line, len, row, why, cap);
}

/* ---- CSV ---- */

/* Split a line into fields (commas; a field may be in double quotes, "" inside them
 * being one quote).  Offsets into line go to r->fields, two per field. */
static int rec_csv_split(struct app_records *r, const char *line, size_t len, size_t *n,
			 char *why, size_t cap)
{
	*n = 0;
	size_t i = 0;
	for (;;) {
		if (2 * (*n + 1) > r->fcap) {
			r->fcap = r->fcap ? 2 * r->fcap : 64;
			r->fields = app_xreallocarray(r->fields, r->fcap, sizeof *r->fields);
		}
		size_t start = i;
		int quoted = 0;
		while (i < len && (quoted || line[i] != ',')) {
			if (line[i] == '"')
				quoted = !quoted;
			i++;
		}
		if (quoted)
			return rec_fail(why, cap, "field %zu: a quote is not closed", *n + 1);
		r->fields[2 * *n] = start;
		r->fields[2 * *n + 1] = i - start;
		(*n)++;
		if (i >= len)
			return 0;
		i++;
	}
}

/* Field k as a NUL-terminated string without its quotes and surrounding blanks. */
static const char *rec_csv_text(struct app_records *r, const char *line, size_t k)
{
	const char *s = line + r->fields[2 * k];
	size_t len = r->fields[2 * k + 1];
	while (len && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len + 1 > r->tcap) {
		r->tcap = len + 64;
		r->text = app_xreallocarray(r->text, r->tcap, 1);
	}
	int quoted = len >= 2 && s[0] == '"' && s[len - 1] == '"';
	if (quoted)
		s++, len -= 2;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		r->text[o++] = s[i];
		if (quoted && s[i] == '"' && i + 1 < len && s[i + 1] == '"')
			i++; /* "" inside quotes is one quote */
	}
	r->text[o] = 0;
	return r->text;
}

/* The attribute (nattrs: none) and element a header's column names: NAME for a
 * scalar attribute, NAME.I for element I of a shaped one. */
static size_t rec_csv_column(const struct app_records *r, const char *name, uint64_t *item)
{
	const char *dot = strrchr(name, '.');
	size_t a = 0;
	for (; a < r->nattrs; a++) {
		const mt_attr *at = &r->attrs[a];
		size_t nl = strlen(at->name);
		if ((at->rank == 0 || at->ragged) && !strcmp(name, at->name))
			return a;
		if (at->rank > 0 && !at->ragged && dot && (size_t)(dot - name) == nl && !strncmp(name, at->name, nl))
			break;
	}
	if (a == r->nattrs)
		return a;
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(dot + 1, &end, 10);
	if (end == dot + 1 || *end || errno || dot[1] == '-' || v >= r->items[a])
		return r->nattrs;
	*item = v;
	return a;
}

int app_records_csv_header(struct app_records *r, const char *line, size_t len, char *why,
			   size_t cap)
{
	size_t n;
	if (rec_csv_split(r, line, len, &n, why, cap))
		return -1;
	uint64_t want = 0;
	for (size_t i = 0; i < r->nattrs; i++)
		want += r->attrs[i].ragged ? 1 : r->items[i];
	free(r->cols);
	r->cols = app_xcalloc(n, sizeof *r->cols);
	r->ncols = n;
	/* Every element of every attribute must have exactly one column. */
	uint8_t **seen = app_xcalloc(r->nattrs ? r->nattrs : 1, sizeof *seen);
	for (size_t i = 0; i < r->nattrs; i++)
		seen[i] = app_xcalloc((size_t)r->items[i], 1);
	int rc = 0;
	for (size_t k = 0; !rc && k < n; k++) {
		const char *name = rec_csv_text(r, line, k);
		uint64_t item = 0;
		size_t a = rec_csv_column(r, name, &item);
		if (a == r->nattrs)
			rc = rec_fail(why, cap, "column %zu '%s': not an attribute, nor NAME.I with I an "
				      "element of a shaped one", k + 1, name);
		else if (seen[a][item]++)
			rc = rec_fail(why, cap, "column %zu '%s': given twice", k + 1, name);
		else
			r->cols[k] = (struct rec_col){ a, item };
	}
	for (size_t a = 0; !rc && a < r->nattrs; a++)
		for (uint64_t i = 0; !rc && i < (r->attrs[a].ragged ? 1 : r->items[a]); i++)
			if (!seen[a][i] && r->attrs[a].rank && !r->attrs[a].ragged)
				rc = rec_fail(why, cap, "column %s.%" PRIu64 " is missing (%" PRIu64
					      " columns wanted)", r->attrs[a].name, i, want);
			else if (!seen[a][i])
				rc = rec_fail(why, cap, "column %s is missing", r->attrs[a].name);
	for (size_t i = 0; i < r->nattrs; i++)
		free(seen[i]);
	free(seen);
	return rc;
}

/* A field's text as a value: true/false, an integer, else a real number. */
static int rec_text_value(const char *s, struct rec_value *v)
{
	char *end;
	if (!strcmp(s, "true") || !strcmp(s, "false")) {
		v->kind = V_BOOL;
		v->i = s[0] == 't';
		return 0;
	}
	if (!*s)
		return -1;
	errno = 0;
	v->i = strtoll(s, &end, 10);
	if (!*end && !errno) {
		v->kind = V_INT;
		return 0;
	}
	if (!*end && s[0] != '-') {
		errno = 0;
		v->u = strtoull(s, &end, 10);
		if (!*end && !errno) {
			v->kind = V_UINT;
			return 0;
		}
	}
	errno = 0;
	v->d = strtod(s, &end);
	v->kind = V_REAL;
	return *end || end == s ? -1 : 0;
}

/* A ragged attribute's field: its items' values separated by blanks, C order,
 * none for an empty row; value I that fails is named NAME.I. */
static int rec_csv_ragged(struct app_records *r, size_t i, const char *s, char *why, size_t cap)
{
	const mt_attr *a = &r->attrs[i];
	size_t es = mt_dtype_size(a->dtype);
	uint64_t n = 0;
	if (a->dtype == MT_STR)
		return rec_text(r, i, s, strlen(s), why, cap);
	for (;;) {
		s += strspn(s, " \t");
		if (!*s)
			break;
		size_t l = strcspn(s, " \t");
		char tok[64], what[160];
		struct rec_value v;
		snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok ? l : sizeof tok - 1), s);
		int bad = l >= sizeof tok || rec_text_value(tok, &v);
		if (bad)
			snprintf(what, sizeof what, "'%.40s' is not a number", tok);
		if (bad || rec_store(a->dtype, &v, rag_room(r, i, es), what, sizeof what))
			return rec_fail(why, cap, "field %s.%" PRIu64 ": %s", a->name, n, what);
		r->rag[i].len += es;
		n++;
		s += l;
	}
	char shape[96];
	if (n % r->items[i])
		return rec_fail(why, cap, "field %s: %" PRIu64 " values are not whole items of %" PRIu64
				" (shape %s)", a->name, n, r->items[i],
				app_shape_str(a, shape, sizeof shape));
	r->rag[i].items = n / r->items[i];
	return 0;
}

int app_records_csv(struct app_records *r, const char *line, size_t len, void *const *row,
		    char *why, size_t cap)
{
	size_t n;
	if (rec_csv_split(r, line, len, &n, why, cap))
		return -1;
	if (n != r->ncols)
		return rec_fail(why, cap, "expected %zu fields, found %zu", r->ncols, n);
	rag_reset(r);
	for (size_t k = 0; k < n; k++) {
		const struct rec_col *c = &r->cols[k];
		const mt_attr *at = &r->attrs[c->attr];
		size_t es = mt_dtype_size(at->dtype);
		const char *s = rec_csv_text(r, line, k);
		if (at->ragged) {
			if (rec_csv_ragged(r, c->attr, s, why, cap))
				return -1;
			continue;
		}
		struct rec_value v;
		char what[160];
		int bad = rec_text_value(s, &v);
		if (bad)
			snprintf(what, sizeof what, "'%.40s' is not a number", s);
		if (bad || rec_store(at->dtype, &v, (uint8_t *)row[c->attr] + c->item * es, what,
				     sizeof what)) {
			if (at->rank)
				snprintf(why, cap, "field %s.%" PRIu64 ": %s", at->name, c->item, what);
			else
				snprintf(why, cap, "field %s: %s", at->name, what);
			return -1;
		}
	}
	return 0;
}
