/* app-stats.c — an attribute's statistics as lines of text (numbers, histogram bars, class balance), and their cache in the catalog. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

/* Integers exactly, other numbers with 6 significant digits. */
static const char *stats_num(double v, char *buf, size_t cap)
{
	if (!isfinite(v))
		snprintf(buf, cap, "-");
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, cap, "%.0f", v);
	else
		snprintf(buf, cap, "%.6g", v);
	return buf;
}

static void lines_add(char ***v, size_t *n, char *line)
{
	*v = app_xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = line;
}

/* A str attribute: lengths of its rows, not values. */
static void stats_text(const mt_stats *s, char ***v, size_t *n)
{
	char a[32], b[32], c[32], d[32];
	if (s->distinct >= 0)
		snprintf(d, sizeof d, "%lld", (long long)s->distinct);
	else
		snprintf(d, sizeof d, "over %d", MT_STATS_TEXT_DISTINCT);
	lines_add(v, n, app_xasprintf("  rows %llu   distinct %s   bytes %llu",
				      (unsigned long long)s->count, d,
				      (unsigned long long)s->items));
	if (!s->finite)
		return;
	lines_add(v, n, app_xasprintf("  length in characters: min %s   max %s   mean %s",
				      stats_num(s->min, a, sizeof a), stats_num(s->max, b, sizeof b),
				      stats_num(s->mean, c, sizeof c)));
	lines_add(v, n, app_xasprintf("  length in bytes:      min %s   max %s   mean %s",
				      stats_num(s->bytes_min, a, sizeof a),
				      stats_num(s->bytes_max, b, sizeof b),
				      stats_num(s->bytes_mean, c, sizeof c)));
}

static void stats_head(const mt_stats *s, char ***v, size_t *n)
{
	char a[32], b[32], c[32], d[32];
	lines_add(v, n, app_xasprintf("%s@%s %s  %s%s  %llu rows%s", s->dataset, s->version,
				      s->attr, mt_dtype_name(s->dtype), s->ragged ? " ragged" : "",
				      (unsigned long long)s->rows, ""));
	if (s->dtype == MT_STR) {
		stats_text(s, v, n);
		return;
	}
	if (s->ragged)
		lines_add(v, n, app_xasprintf("  items     %llu (over all rows)",
					      (unsigned long long)s->items));
	lines_add(v, n, app_xasprintf("  elements  %llu   finite %llu   nan %llu   +inf %llu   -inf %llu",
				      (unsigned long long)s->count, (unsigned long long)s->finite,
				      (unsigned long long)s->nan, (unsigned long long)s->posinf,
				      (unsigned long long)s->neginf));
	if (!s->finite) {
		lines_add(v, n, app_xstrdup("  no finite values"));
		return;
	}
	lines_add(v, n, app_xasprintf("  min %s   max %s   mean %s   std %s",
				      stats_num(s->min, a, sizeof a), stats_num(s->max, b, sizeof b),
				      stats_num(s->mean, c, sizeof c), stats_num(s->std, d, sizeof d)));
}

/* A bar per bin, the longest `width` columns wide. */
static void stats_hist(const mt_stats *s, int width, char ***v, size_t *n)
{
	uint64_t most = 0;
	for (int i = 0; i < s->bins; i++)
		most = s->hist[i] > most ? s->hist[i] : most;
	char lo[32], hi[32];
	lines_add(v, n, app_xasprintf("  histogram, %d bins over [%s, %s]:", s->bins,
				      stats_num(s->edges[0], lo, sizeof lo),
				      stats_num(s->edges[s->bins], hi, sizeof hi)));
	/* What the numbers take: "  %12s .. %-12s %12llu ", and a margin. */
	int bar = width > 60 ? width - 48 : 12;
	char *hashes = app_xmalloc((size_t)bar + 1);
	for (int i = 0; i < s->bins; i++) {
		int len = most ? (int)((double)s->hist[i] / (double)most * bar + 0.5) : 0;
		if (s->hist[i] && !len)
			len = 1;
		memset(hashes, '#', (size_t)len);
		hashes[len] = '\0';
		lines_add(v, n, app_xasprintf("  %12s .. %-12s %12llu %s",
					      stats_num(s->edges[i], lo, sizeof lo),
					      stats_num(s->edges[i + 1], hi, sizeof hi),
					      (unsigned long long)s->hist[i], hashes));
	}
	free(hashes);
}

static void stats_classes(const mt_stats *s, int width, char ***v, size_t *n)
{
	if (s->nclasses < 0)
		return;
	uint64_t most = 0;
	for (int i = 0; i < s->nclasses; i++)
		most = s->classes[i].count > most ? s->classes[i].count : most;
	lines_add(v, n, app_xasprintf("  classes: %d distinct values", s->nclasses));
	/* What the numbers take: "  %12lld %12llu %6.2f%% ", and a margin. */
	int bar = width > 60 ? width - 40 : 20;
	char *hashes = app_xmalloc((size_t)bar + 1);
	for (int i = 0; i < s->nclasses; i++) {
		const mt_stats_class *c = &s->classes[i];
		int len = most ? (int)((double)c->count / (double)most * bar + 0.5) : 0;
		memset(hashes, '#', (size_t)len);
		hashes[len] = '\0';
		lines_add(v, n, app_xasprintf("  %12lld %12llu %6.2f%% %s", (long long)c->value,
					      (unsigned long long)c->count,
					      s->items ? 100.0 * (double)c->count / (double)s->items : 0,
					      hashes));
	}
	free(hashes);
}

char **app_stats_lines(const mt_stats *s, int width, size_t *n)
{
	char **v = NULL;
	*n = 0;
	stats_head(s, &v, n);
	if (s->finite)
		stats_hist(s, width, &v, n);
	stats_classes(s, width, &v, n);
	return v;
}

int app_stats_cached(mt_catalog *c, const char *url, const char *dataset, const char *version,
		     const char *attr, mt_stats **out, char **computed)
{
	char *json = NULL;
	mt_error err;
	*out = NULL;
	int rc = c ? mt_catalog_stats_get(c, url, dataset, version, attr, &json, computed, &err)
		   : MT_ENOTFOUND;
	/* A result this matorage cannot read is computed again. */
	if (!rc && (rc = mt_stats_from_json(json, out, &err)) != 0 && computed) {
		free(*computed);
		*computed = NULL;
	}
	free(json);
	return rc;
}

int app_stats_record(mt_catalog *c, const char *url, const mt_stats *s, mt_error *err)
{
	char *json = NULL;
	int rc = mt_stats_to_json(s, &json, err);
	if (!rc)
		rc = mt_catalog_stats_put(c, url, s->dataset, s->version, s->attr, json, err);
	free(json);
	return rc;
}
