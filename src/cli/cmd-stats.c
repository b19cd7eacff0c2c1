/* cmd-stats.c — `matorage stats`: statistics of whole attributes of a version (range, mean, spread, histogram, class balance), kept in the catalog. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option stats_options[] = {
	{ "json", 0, NULL, "print each attribute's statistics as one JSON object a line" },
	{ "bins", 0, "N", "histogram bins (default 32; other counts are not kept in the catalog)" },
	{ "recompute", 0, NULL, "read the attribute even when the catalog holds its statistics" },
	{ NULL, 0, NULL, NULL },
};

struct stats_run {
	struct cli_ctx *ctx;
	mt_reader *r;
	mt_catalog *cat; /* NULL: no catalog */
	const char *url;
	int bins, json, cache;
	int synced;      /* the catalog learned the dataset during this command */
};

static void stats_print(const struct stats_run *u, const mt_stats *s, const char *computed)
{
	if (u->json) {
		char *json;
		mt_error err;
		if (!mt_stats_to_json(s, &json, &err)) {
			puts(json);
			free(json);
		}
		return;
	}
	size_t n;
	char **lines = app_stats_lines(s, 100, &n);
	for (size_t i = 0; i < n; i++) {
		puts(lines[i]);
		free(lines[i]);
	}
	free(lines);
	if (computed)
		printf("  (from the catalog, computed %s)\n", computed);
}

/* Keep s in the catalog; a version it does not list yet is synced first.
 * The catalog is a cache: failing to keep s is a warning. */
static void stats_keep(struct stats_run *u, const mt_stats *s)
{
	mt_error err = { 0 };
	int rc = app_stats_record(u->cat, u->url, s, &err);
	if (rc == MT_ENOTFOUND && !u->synced) {
		u->synced = 1;
		rc = mt_catalog_sync(u->cat, app_store_name(&u->ctx->app), cli_store(u->ctx),
				     s->dataset, 0, NULL, NULL, NULL, &err);
		if (!rc)
			rc = app_stats_record(u->cat, u->url, s, &err);
	}
	if (rc) {
		cli_progress_hide();
		fprintf(stderr, "matorage: warning: statistics not kept in the catalog: %s\n",
			err.message);
	}
}

static int stats_attr(struct stats_run *u, size_t attr)
{
	const mt_version_info *vi = mt_reader_info(u->r);
	const char *name = mt_reader_attr(u->r, attr)->name;
	mt_stats *s = NULL;
	char *computed = NULL;
	if (u->cache && !app_stats_cached(u->cat, u->url, vi->dataset, vi->version, name, &s,
					  &computed)) {
		stats_print(u, s, computed);
		mt_stats_free(s);
		free(computed);
		return CLI_OK;
	}
	mt_stats_opts o;
	mt_stats_opts_init(&o);
	o.bins = u->bins;
	char label[300];
	snprintf(label, sizeof label, "%s %s", vi->dataset, name);
	struct cli_progress *p = cli_progress_begin(u->ctx, label, 0);
	o.progress = cli_progress_fn;
	o.progress_ud = p;
	mt_error err = { 0 };
	int rc = mt_stats_compute(u->r, attr, &o, &s, &err);
	cli_progress_end(p);
	if (rc)
		return cli_fail(&err);
	if (u->cat && u->bins == MT_STATS_BINS)
		stats_keep(u, s);
	stats_print(u, s, NULL);
	mt_stats_free(s);
	return CLI_OK;
}

/* The attributes asked for (all when none), as indexes; -1 after an error. */
static int stats_attrs(const struct cli_args *a, mt_reader *r, size_t *idx, size_t *n)
{
	*n = 0;
	if (a->argc < 2) {
		for (size_t i = 0; i < mt_reader_nattrs(r); i++)
			idx[(*n)++] = i;
		return 0;
	}
	for (int i = 1; i < a->argc; i++) {
		int k = cli_attr_index(r, a->argv[i]);
		if (k < 0)
			return -1;
		idx[(*n)++] = (size_t)k;
	}
	return 0;
}

static int stats_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct stats_run u = { .ctx = ctx, .bins = MT_STATS_BINS, .json = cli_has(a, "json") };
	int rc = cli_opt_int(a, "bins", 1, MT_STATS_MAX_BINS, &u.bins);
	if (rc)
		return rc;
	struct cli_ref ref;
	if ((rc = cli_ref_open(ctx, a, &ref, &u.r)) != 0)
		return rc;
	size_t n, cap = mt_reader_nattrs(u.r) + (size_t)a->argc;
	size_t *idx = app_xcalloc(cap ? cap : 1, sizeof *idx);
	if (stats_attrs(a, u.r, idx, &n)) {
		rc = CLI_FAIL;
		goto out;
	}
	/* Statistics go to the catalog when there is one; a stats makes none. */
	mt_error err;
	if (cli_catalog_open(0, &u.cat, &err))
		u.cat = NULL;
	u.url = mt_store_url(cli_store(ctx));
	u.cache = u.cat && u.bins == MT_STATS_BINS && !cli_has(a, "recompute");
	cli_catch_interrupt();
	for (size_t i = 0; i < n && !rc; i++)
		rc = stats_attr(&u, idx[i]);
out:
	free(idx);
	mt_catalog_close(u.cat);
	cli_ref_close(&ref, u.r);
	return rc;
}

const struct cli_cmd cli_cmd_stats = {
	"stats", "DATASET[@VERSION] [ATTR]...", stats_options, stats_exec,
	"Statistics of whole attributes: range, mean, std, NaN/Inf, histogram, class balance",
	1, -1,
};
