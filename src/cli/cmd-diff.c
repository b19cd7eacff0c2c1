/* cmd-diff.c — `matorage diff`: the shards two versions share, and those new or removed, in shards, bytes and rows. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_option diff_options[] = {
	{ "shards", 0, NULL, "also list every shard: change, sha256, first row, rows, bytes" },
	{ NULL, 0, NULL, NULL },
};

/* Without the shard list, the versions are opened lazily and only the
 * fragments their roots do not share are read (app_diff_totals). */
static int diff_print(const struct cli_ref *ra, const struct cli_ref *rb, mt_reader *a,
		      mt_reader *b, int shards)
{
	struct app_diff d;
	char line[160];
	mt_error err = { 0 };
	if (shards)
		app_diff_readers(a, b, &d);
	else if (app_diff_totals(a, b, &d, &err))
		return cli_fail(&err);
	printf("%s@%s against %s@%s\n", ra->dataset, mt_reader_info(a)->version, rb->dataset,
	       mt_reader_info(b)->version);
	for (int c = 0; c < APP_DIFF_N; c++)
		printf("%s\n", app_diff_line(&d, c, line, sizeof line));
	if (app_diff_verdict(&d))
		printf("%s\n", app_diff_verdict(&d));
	if (shards && d.ns) {
		printf("\n  %-8s %-64s %12s %12s %12s\n", "CHANGE", "SHA256", "FIRST_ROW", "ROWS",
		       "BYTES");
		for (size_t i = 0; i < d.ns; i++)
			printf("  %-8s %-64s %12llu %12llu %12llu\n",
			       app_diff_shard_change(&d.s[i]), d.s[i].sha256,
			       (unsigned long long)d.s[i].first_row, (unsigned long long)d.s[i].rows,
			       (unsigned long long)d.s[i].bytes);
	}
	app_diff_free(&d);
	return 0;
}

static int diff_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ra, rb = { 0 };
	mt_reader *r, *other = NULL;
	int shards = cli_has(a, "shards");
	int rc = shards ? cli_ref_open(ctx, a, &ra, &r) : cli_ref_open_lazy(ctx, a, &ra, &r);
	if (rc)
		return rc;
	rb.lazy = !shards;
	const char *parent = mt_reader_info(r)->parent;
	if (a->argc > 1) {
		rc = cli_ref_parse(a->cmd, a->argv[1], &rb);
		rb.lazy = !shards;
	} else if (parent && parent[0]) {
		rb.dataset = app_xstrdup(ra.dataset);
		rb.version = app_xstrdup(parent);
	} else {
		rc = cli_error("%s@%s has no parent version: name the version to compare it with",
			       ra.dataset, mt_reader_info(r)->version);
	}
	if (!rc && !(other = cli_reader(ctx, &rb)))
		rc = CLI_FAIL;
	if (!rc)
		rc = diff_print(&ra, &rb, r, other, shards);
	mt_reader_close(other);
	cli_ref_free(&rb);
	cli_ref_close(&ra, r);
	return rc;
}

const struct cli_cmd cli_cmd_diff = {
	"diff", "DATASET[@VERSION] [DATASET[@VERSION]]", diff_options, diff_exec,
	"Compare two versions (the second defaults to the first's parent): shards shared, new and removed, with bytes and rows",
	1, 2,
};
