/* cmd-rm.c — `matorage rm`: delete one version's manifest; its shards wait for gc. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_option rm_options[] = {
	{ NULL, 0, NULL, NULL },
};

static int rm_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	const char *model = cli_model_spec(a->argv[0]);
	if (model) {
		mt_store *ms = cli_store(ctx);
		return ms ? cli_model_rm(ms, model) : CLI_FAIL;
	}
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	/* Deleting is never done by default or by alias: the version must be
	 * named.  "latest" reaches the library only to remove a stray manifest
	 * of that name, which an older matorage could write. */
	if (!ref.version) {
		rc = cli_usage_error(a->cmd, "'%s': name the version to remove, as DATASET@VERSION",
				     a->argv[0]);
		goto out;
	}
	mt_store *s = cli_store(ctx);
	mt_error err = { 0 };
	if (!s)
		rc = CLI_FAIL;
	else if (mt_store_delete_version(s, ref.dataset, ref.version, &err))
		rc = cli_fail(&err);
	else {
		printf("removed %s@%s\n", ref.dataset, ref.version);
		cli_catalog_note(app_store_name(&ctx->app), s, ref.dataset);
	}
out:
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_rm = {
	"rm", "DATASET@VERSION | model:NAME@VERSION", rm_options, rm_exec,
	"Remove a version or a model's checkpoint (its shards or tensors stay until gc finds "
	"them unreferenced)", 1, 1,
};
