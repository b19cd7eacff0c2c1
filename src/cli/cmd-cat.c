/* cmd-cat.c — `matorage cat`: print rows of one attribute as text, one row per line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option cat_options[] = {
	{ "rows", 0, "A:B", "only rows A to B-1; also A:, :B, or N for row N alone" },
	{ NULL, 0, NULL, NULL },
};

/* IEEE binary16 to binary32 by moving the fields: exact for every value,
 * subnormals, infinities and NaN payloads included. */
static float cat_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31;
	uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	float f;
	if (exp == 0) {
		/* Subnormal (or zero): mant * 2^-24, exact in binary32. */
		f = (float)mant * (1.0f / 16777216.0f);
		return sign ? -f : f;
	}
	uint32_t bits = sign | (exp == 31 ? 0xffu << 23 : (exp - 15 + 127) << 23) | mant << 13;
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* Print the element at p; values may be unaligned in the batch, hence memcpy. */
static void cat_value(FILE *f, mt_dtype t, const uint8_t *p)
{
	union {
		int8_t i8;
		int16_t i16;
		int32_t i32;
		int64_t i64;
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		float f32;
		double f64;
	} v;
	memcpy(&v, p, mt_dtype_size(t));
	switch (t) {
	case MT_BOOL: fputs(v.u8 ? "1" : "0", f); break;
	case MT_INT8: fprintf(f, "%d", v.i8); break;
	case MT_INT16: fprintf(f, "%d", v.i16); break;
	case MT_INT32: fprintf(f, "%" PRId32, v.i32); break;
	case MT_INT64: fprintf(f, "%" PRId64, v.i64); break;
	case MT_UINT8: fprintf(f, "%u", v.u8); break;
	case MT_UINT16: fprintf(f, "%u", v.u16); break;
	case MT_UINT32: fprintf(f, "%" PRIu32, v.u32); break;
	case MT_UINT64: fprintf(f, "%" PRIu64, v.u64); break;
	case MT_FLOAT16: fprintf(f, "%.9g", (double)cat_half(v.u16)); break;
	case MT_FLOAT32: fprintf(f, "%.9g", (double)v.f32); break;
	case MT_FLOAT64: fprintf(f, "%.17g", v.f64); break;
	default: fputs("?", f); break;
	}
}

/* An array of dims[0..ndims): elements space-separated, each level after the
 * outermost in brackets; `bracket` puts the outermost in brackets too. */
static const uint8_t *cat_array(FILE *f, mt_dtype t, const uint8_t *p, const uint64_t *dims,
				int ndims, int bracket)
{
	if (ndims == 0) {
		cat_value(f, t, p);
		return p + mt_dtype_size(t);
	}
	if (bracket)
		fputc('[', f);
	for (uint64_t i = 0; i < dims[0]; i++) {
		if (i)
			fputc(' ', f);
		p = cat_array(f, t, p, dims + 1, ndims - 1, 1);
	}
	if (bracket)
		fputc(']', f);
	return p;
}

/* A str row as one line: its text, with the backslash and control
 * characters escaped as JSON escapes them (\n, \t, \\, \u001b), so a
 * row never spans lines and the escapes read back unambiguously. */
static void cat_text(FILE *f, const uint8_t *p, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++) {
		unsigned c = p[i];
		if (c == '\\')
			fputs("\\\\", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc((int)c, f);
	}
}

struct cat_job {
	const mt_attr *at;
	uint64_t dims[MT_MAX_RANK + 1];
};

/* A row of rank 0 is one value, rank 1 its values space-separated, higher ranks
 * nested brackets: a 2x3 row prints "[[1 2 3] [4 5 6]]".  A ragged row is an
 * array of (items, *shape) printed by the same rule. */
static int cat_batch(void *ud, uint64_t first, uint64_t n, const void *values, size_t bytes,
		     const uint64_t *lengths)
{
	struct cat_job *j = ud;
	const uint8_t *p = values;
	int lead = j->at->ragged ? 1 : 0;
	int ndims = j->at->rank + lead;
	for (uint64_t i = 0; i < n && j->at->dtype == MT_STR; p += lengths[i++]) {
		cat_text(stdout, p, lengths[i]);
		putchar('\n');
	}
	for (uint64_t i = 0; i < n && j->at->dtype != MT_STR; i++) {
		if (lengths)
			j->dims[0] = lengths[i];
		p = cat_array(stdout, j->at->dtype, p, j->dims, ndims, ndims >= 2);
		putchar('\n');
	}
	return ferror(stdout) ? cli_error("writing standard output failed") : 0;
}

static int cat_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	struct cli_rows rows;
	mt_reader *r;
	int rc = cli_opt_rows(a, "rows", &rows);
	if (rc || (rc = cli_ref_open(ctx, a, &ref, &r)))
		return rc;
	int idx = cli_attr_index(r, a->argv[1]);
	if (idx < 0) {
		rc = CLI_FAIL;
		goto out;
	}
	const mt_version_info *vi = mt_reader_info(r);
	char *what = app_xasprintf("%s@%s", vi->dataset, vi->version);
	uint64_t first, end;
	struct cat_job j = { .at = mt_reader_attr(r, (size_t)idx) };
	int lead = j.at->ragged ? 1 : 0;
	memcpy(j.dims + lead, j.at->shape, (size_t)j.at->rank * sizeof *j.dims);
	if (!(rc = cli_rows_resolve(&rows, vi->rows, what, &first, &end)))
		rc = cli_read_rows(r, (size_t)idx, first, end, 0, cat_batch, &j);
	free(what);
out:
	cli_ref_close(&ref, r);
	return rc;
}

const struct cli_cmd cli_cmd_cat = {
	"cat", "DATASET[@VERSION] NAME", cat_options, cat_exec,
	"Print rows of attribute NAME as text, one row per line (str rows: their text, "
	"control characters and \\ escaped as in JSON)", 2, 2,
};
