/* cmd-upgrade.c — `matorage upgrade`: rewrite a version's manifest in format 2 (a root and fragments), same rows, shards and name. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_option upgrade_options[] = {
	{ NULL, 0, NULL, NULL },
};

static int upgrade_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	mt_store *s = cli_store(ctx);
	mt_error err = { 0 };
	int changed = 0;
	char **vers = NULL;
	size_t nvers = 0;
	const char *version = ref.version;
	/* The summary names the version by its name, as protect does. */
	if (s && (!version || !*version || !strcmp(version, "latest")) &&
	    !mt_store_versions(s, ref.dataset, &vers, &nvers, &err) && nvers)
		version = vers[nvers - 1];
	if (!s)
		rc = CLI_FAIL;
	else if (err.code || mt_store_upgrade(s, ref.dataset, version, &changed, &err))
		rc = cli_fail(&err);
	else {
		printf("%s@%s: %s\n", ref.dataset, version ? version : "latest",
		       changed ? "upgraded to manifest format 2" : "already manifest format 2");
		if (changed)
			cli_catalog_note(app_store_name(&ctx->app), s, ref.dataset);
	}
	mt_strv_free(vers, nvers);
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_upgrade = {
	"upgrade", "DATASET[@VERSION]", upgrade_options, upgrade_exec,
	"Rewrite a version's manifest in format 2 (a root and shared fragments): the same rows, "
	"shards and name", 1, 1,
};
