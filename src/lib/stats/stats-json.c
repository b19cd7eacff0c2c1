/* stats-json.c — an attribute's statistics as JSON and back, for the catalog's cache and `matorage stats --json`. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"

/* Bumped when a field changes meaning; readers refuse other numbers, and
 * the catalog then computes the statistics again. */
#define STATS_JSON_FORMAT 1

/* A finite double, or null (a mean past the range of a double). */
static json_t *sj_real(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *sj_arrays(const mt_stats *s, json_t **hist)
{
	json_t *edges = json_array();
	*hist = json_array();
	for (int i = 0; edges && *hist && i <= s->bins; i++) {
		json_array_append_new(edges, sj_real(s->edges[i]));
		if (i < s->bins)
			json_array_append_new(*hist, json_integer((json_int_t)s->hist[i]));
	}
	return edges;
}

static json_t *sj_classes(const mt_stats *s)
{
	if (s->nclasses < 0)
		return json_null();
	json_t *a = json_array();
	for (int i = 0; a && i < s->nclasses; i++)
		json_array_append_new(a, json_pack("[I,I]", (json_int_t)s->classes[i].value,
						   (json_int_t)s->classes[i].count));
	return a;
}

/* The per-column numbers as {"min": [...], "max": [...], "mean": [...],
 * "std": [...]}, or null (a column with no finite value: null in each). */
static json_t *sj_columns(const mt_stats *s)
{
	if (!s->columns)
		return json_null();
	const double *src[4] = { s->col_min, s->col_max, s->col_mean, s->col_std };
	static const char *const names[4] = { "min", "max", "mean", "std" };
	json_t *o = json_object();
	for (int k = 0; o && k < 4; k++) {
		json_t *a = json_array();
		for (uint64_t c = 0; a && c < s->columns; c++)
			json_array_append_new(a, sj_real(src[k][c]));
		json_object_set_new(o, names[k], a ? a : json_null());
	}
	return o ? o : json_null();
}

int mt_stats_to_json(const mt_stats *s, char **json, mt_error *err)
{
	*json = NULL;
	json_t *hist = NULL, *edges = sj_arrays(s, &hist);
	json_t *root = json_pack(
		"{s:i, s:s, s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o,"
		" s:o, s:i, s:o, s:o, s:o, s:I, s:o}",
		"format", STATS_JSON_FORMAT, "dataset", s->dataset, "version", s->version, "attr",
		s->attr, "dtype", mt_dtype_name(s->dtype), "ragged", s->ragged, "rows",
		(json_int_t)s->rows, "items", (json_int_t)s->items, "count", (json_int_t)s->count,
		"finite", (json_int_t)s->finite, "nan", (json_int_t)s->nan, "posinf",
		(json_int_t)s->posinf, "neginf", (json_int_t)s->neginf, "min", sj_real(s->min),
		"max", sj_real(s->max), "mean", sj_real(s->mean), "std", sj_real(s->std), "bins",
		s->bins, "edges", edges, "hist", hist, "classes", sj_classes(s), "bytes_read",
		(json_int_t)s->bytes_read, "columns", sj_columns(s));
	/* A str attribute's lengths in bytes and distinct rows. */
	if (root && s->dtype == MT_STR)
		json_object_set_new(root, "text",
				    json_pack("{s:o, s:o, s:o, s:I}", "bytes_min",
					      sj_real(s->bytes_min), "bytes_max",
					      sj_real(s->bytes_max), "bytes_mean",
					      sj_real(s->bytes_mean), "distinct",
					      (json_int_t)s->distinct));
	if (root)
		*json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	json_decref(root);
	return *json ? 0 : mti_err(err, MT_ENOMEM, "statistics of %s: out of memory", s->attr);
}

/* ---- reading back ---------------------------------------------------------------- */

static double sj_get_real(const json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : (double)NAN;
}

static int sj_counts(mt_stats *s, const json_t *root, mt_error *err)
{
	static const char *const names[] = { "rows", "items", "count", "finite", "nan", "posinf",
					     "neginf", "bytes_read" };
	uint64_t *dst[] = { &s->rows, &s->items, &s->count, &s->finite, &s->nan, &s->posinf,
			    &s->neginf, &s->bytes_read };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const json_t *v = json_object_get(root, names[i]);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return mti_err(err, MT_EFORMAT, "statistics: '%s' is not a count", names[i]);
		*dst[i] = (uint64_t)json_integer_value(v);
	}
	s->min = sj_get_real(json_object_get(root, "min"));
	s->max = sj_get_real(json_object_get(root, "max"));
	s->mean = sj_get_real(json_object_get(root, "mean"));
	s->std = sj_get_real(json_object_get(root, "std"));
	return 0;
}

static int sj_hist(mt_stats *s, const json_t *root, mt_error *err)
{
	const json_t *edges = json_object_get(root, "edges"), *hist = json_object_get(root, "hist");
	json_int_t bins = json_integer_value(json_object_get(root, "bins"));
	if (bins < 1 || bins > MT_STATS_MAX_BINS || json_array_size(edges) != (size_t)bins + 1 ||
	    json_array_size(hist) != (size_t)bins)
		return mti_err(err, MT_EFORMAT, "statistics: 'bins', 'edges' and 'hist' disagree");
	s->bins = (int)bins;
	s->edges = calloc((size_t)bins + 1, sizeof *s->edges);
	s->hist = calloc((size_t)bins, sizeof *s->hist);
	if (!s->edges || !s->hist)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i <= (size_t)bins; i++) {
		s->edges[i] = sj_get_real(json_array_get(edges, i));
		if (i < (size_t)bins)
			s->hist[i] = (uint64_t)json_integer_value(json_array_get(hist, i));
	}
	return 0;
}

static int sj_classes_read(mt_stats *s, const json_t *root, mt_error *err)
{
	const json_t *c = json_object_get(root, "classes");
	s->nclasses = -1;
	if (!c || json_is_null(c))
		return 0;
	if (!json_is_array(c) || json_array_size(c) > MT_STATS_CLASSES * 256)
		return mti_err(err, MT_EFORMAT, "statistics: 'classes' is not a list");
	size_t n = json_array_size(c);
	s->classes = calloc(n ? n : 1, sizeof *s->classes);
	if (!s->classes)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *p = json_array_get(c, i);
		if (!json_is_integer(json_array_get(p, 0)) || !json_is_integer(json_array_get(p, 1)))
			return mti_err(err, MT_EFORMAT, "statistics: class %zu is not [value, count]",
				      i);
		s->classes[i].value = json_integer_value(json_array_get(p, 0));
		s->classes[i].count = (uint64_t)json_integer_value(json_array_get(p, 1));
	}
	s->nclasses = (int)n;
	return 0;
}

/* The per-column numbers, when there are (an older result has none). */
static int sj_columns_read(mt_stats *s, const json_t *root, mt_error *err)
{
	const json_t *c = json_object_get(root, "columns");
	if (!c || json_is_null(c))
		return 0;
	static const char *const names[4] = { "min", "max", "mean", "std" };
	double **dst[4] = { &s->col_min, &s->col_max, &s->col_mean, &s->col_std };
	size_t n = json_array_size(json_object_get(c, "min"));
	if (!n || n > MT_STATS_MAX_COLUMNS)
		return mti_err(err, MT_EFORMAT, "statistics: 'columns' has no columns");
	for (int k = 0; k < 4; k++) {
		const json_t *a = json_object_get(c, names[k]);
		if (json_array_size(a) != n)
			return mti_err(err, MT_EFORMAT, "statistics: 'columns' '%s' is not %zu "
				      "numbers", names[k], n);
		if (!(*dst[k] = malloc(n * sizeof **dst[k])))
			return mti_err(err, MT_ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			(*dst[k])[i] = sj_get_real(json_array_get(a, i));
	}
	s->columns = n;
	return 0;
}

/* Text statistics; without them (kept before str had its own) they are
 * not these numbers, so the caller computes them again. */
static int sj_text_read(mt_stats *s, const json_t *t, mt_error *err)
{
	if (!json_is_object(t))
		return mti_err(err, MT_EFORMAT, "statistics of str %s: no 'text' object", s->attr);
	s->bytes_min = sj_get_real(json_object_get(t, "bytes_min"));
	s->bytes_max = sj_get_real(json_object_get(t, "bytes_max"));
	s->bytes_mean = sj_get_real(json_object_get(t, "bytes_mean"));
	s->distinct = (int64_t)json_integer_value(json_object_get(t, "distinct"));
	return 0;
}

static int sj_read(mt_stats *s, const json_t *root, mt_error *err)
{
	if (json_integer_value(json_object_get(root, "format")) != STATS_JSON_FORMAT)
		return mti_err(err, MT_EFORMAT, "statistics: format is not %d", STATS_JSON_FORMAT);
	const char *ds = json_string_value(json_object_get(root, "dataset"));
	const char *ver = json_string_value(json_object_get(root, "version"));
	const char *attr = json_string_value(json_object_get(root, "attr"));
	const char *dt = json_string_value(json_object_get(root, "dtype"));
	if (!ds || !ver || !attr || !dt || !(s->dtype = mt_dtype_parse(dt)))
		return mti_err(err, MT_EFORMAT, "statistics: no dataset, version, attr or dtype");
	s->ragged = json_is_true(json_object_get(root, "ragged"));
	if (!(s->dataset = mti_strdup(ds)) || !(s->version = mti_strdup(ver)) ||
	    !(s->attr = mti_strdup(attr)))
		return mti_err(err, MT_ENOMEM, "out of memory");
	int rc = sj_counts(s, root, err);
	if (!rc)
		rc = sj_hist(s, root, err);
	if (!rc)
		rc = sj_classes_read(s, root, err);
	if (!rc)
		rc = sj_columns_read(s, root, err);
	if (!rc && s->dtype == MT_STR)
		rc = sj_text_read(s, json_object_get(root, "text"), err);
	return rc;
}

int mt_stats_from_json(const char *json, mt_stats **out, mt_error *err)
{
	*out = NULL;
	json_error_t je;
	json_t *root = json_loads(json, 0, &je);
	if (!json_is_object(root)) {
		json_decref(root);
		return mti_err(err, MT_EFORMAT, "statistics: not a JSON object (%s, line %d)",
			      je.text, je.line);
	}
	mt_stats *s = calloc(1, sizeof *s);
	int rc = s ? sj_read(s, root, err) : mti_err(err, MT_ENOMEM, "out of memory");
	json_decref(root);
	if (rc) {
		mt_stats_free(s);
		return rc;
	}
	*out = s;
	return 0;
}
