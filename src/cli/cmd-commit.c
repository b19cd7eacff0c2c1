/* cmd-commit.c — `matorage commit DATASET --staged`: merge staged parts into one version. */
#include <stdio.h>

#include "cli.h"

static const struct cli_option commit_options[] = {
	{ "staged", 0, NULL, "merge the staged parts (matorage run --part K/N) into one version" },
	{ "id", 0, "ID", "the staging to commit (default: the only one there is)" },
	{ "author", 0, "NAME", "who made this version (default: part 1's)" },
	{ "description", 0, "TEXT", "what this version holds (default: part 1's)" },
	{ "tag", 0, "TAG", "a tag for this version; may be given several times (default: part 1's "
	  "tags)" },
	CLI_OPT_PARITY_NEW,
	{ NULL, 0, NULL, NULL },
};

static int commit_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	if (!cli_has(a, "staged"))
		return cli_usage_error(a->cmd, "say what to commit: --staged");
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	int k, m;
	if (ref.version)
		rc = cli_usage_error(a->cmd, "the staged parts become the next version: give DATASET "
				     "without @VERSION");
	if (!rc)
		rc = cli_parity_opt(a, ctx->app.store_url, &k, &m);
	mt_store *s = rc ? NULL : cli_store(ctx);
	if (!rc && !s)
		rc = CLI_FAIL;
	if (rc) {
		cli_ref_free(&ref);
		return rc;
	}
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	o.author = cli_get(a, "author"); /* NULL: the parts' */
	o.description = cli_get(a, "description");
	o.tags = cli_get_all(a, "tag", &o.ntags);
	char version[256];
	mt_error err = { 0 };
	if (mt_staged_commit(s, ref.dataset, cli_get(a, "id"), &o, version, sizeof version, &err)) {
		rc = cli_fail(&err);
	} else {
		printf("%s@%s\n", ref.dataset, version);
		fflush(stdout);
		if (k)
			rc = cli_protect(ctx, s, ref.dataset, version, k, m, 0, 0);
		cli_catalog_note_version(app_store_name(&ctx->app), s, ref.dataset, version);
	}
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_commit = {
	"commit", "DATASET --staged [--id ID]", commit_options, commit_exec,
	"Merge the staged parts of DATASET, in part order, into one new version", 1, 1,
};
