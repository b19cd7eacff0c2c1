/* cmd-ls.c — `matorage ls`: the datasets of a store, or the versions of one dataset. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const struct cli_option ls_options[] = {
	{ "long", 'l', NULL,
	  "datasets: versions, latest version, its rows; versions: created, rows, shards, "
	  "stored size, parent" },
	{ NULL, 0, NULL, NULL },
};

/* `ls -l`: one dataset per line; a dataset whose latest manifest cannot be read is
 * reported and skipped, and makes the exit status 1. */
static int ls_datasets_long(mt_store *s, char **names, size_t n)
{
	int rc = CLI_OK;
	printf("%-24s %8s %-12s %14s\n", "DATASET", "VERSIONS", "LATEST", "ROWS");
	for (size_t i = 0; i < n; i++) {
		char **v;
		size_t nv;
		mt_reader *r;
		mt_error err = { 0 };
		if (mt_store_versions(s, names[i], &v, &nv, &err)) {
			rc = cli_fail(&err);
			continue;
		}
		if (nv == 0) {
			printf("%-24s %8zu %-12s %14s\n", names[i], nv, "-", "-");
		} else if (mt_reader_open(s, names[i], v[nv - 1], &r, &err)) {
			rc = cli_fail(&err);
		} else {
			printf("%-24s %8zu %-12s %14" PRIu64 "\n", names[i], nv, v[nv - 1],
			       mt_reader_info(r)->rows);
			mt_reader_close(r);
		}
		mt_strv_free(v, nv);
	}
	return rc;
}

static int ls_versions_long(mt_store *s, const char *dataset, char **v, size_t n)
{
	int rc = CLI_OK;
	printf("%-12s %-24s %14s %7s %10s  %s\n", "VERSION", "CREATED", "ROWS", "SHARDS", "STORED",
	       "PARENT");
	for (size_t i = 0; i < n; i++) {
		mt_reader *r;
		mt_error err = { 0 };
		if (mt_reader_open(s, dataset, v[i], &r, &err)) {
			rc = cli_fail(&err);
			continue;
		}
		const mt_version_info *vi = mt_reader_info(r);
		char stored[32];
		printf("%-12s %-24s %14" PRIu64 " %7" PRIu64 " %10s  %s\n", vi->version,
		       vi->created, vi->rows, vi->nshards,
		       app_human_bytes(vi->stored_bytes, stored, sizeof stored),
		       vi->parent && vi->parent[0] ? vi->parent : "-");
		mt_reader_close(r);
	}
	return rc;
}

static int ls_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	mt_store *s = cli_store(ctx);
	if (!s)
		return CLI_FAIL;
	int lng = cli_has(a, "long");
	char **names;
	size_t n;
	mt_error err = { 0 };
	int rc = CLI_OK;
	if (a->argc == 0) {
		if (mt_store_datasets(s, &names, &n, &err))
			return cli_fail(&err);
		if (lng)
			rc = ls_datasets_long(s, names, n);
		else
			for (size_t i = 0; i < n; i++)
				puts(names[i]);
	} else {
		if (mt_store_versions(s, a->argv[0], &names, &n, &err))
			return cli_fail(&err);
		if (lng)
			rc = ls_versions_long(s, a->argv[0], names, n);
		else
			for (size_t i = 0; i < n; i++)
				puts(names[i]);
	}
	mt_strv_free(names, n);
	return rc;
}

const struct cli_cmd cli_cmd_ls = {
	"ls", "[DATASET]", ls_options, ls_exec,
	"List the datasets of the store, or the versions of DATASET oldest first", 0, 1,
};
