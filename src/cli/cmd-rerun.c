/* cmd-rerun.c — `matorage rerun`: run a version's stored recipe again with its stored arguments. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static int rerun_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	mt_reader *r;
	char *code = NULL;
	size_t len = 0;
	mt_error err = { 0 };
	int rc = cli_ref_open(ctx, a, &ref, &r);
	if (rc)
		return rc;
	if (mt_reader_recipe(r, &code, &len, &err)) {
		rc = cli_fail(&err);
	} else {
		const mt_version_info *vi = mt_reader_info(r);
		char *name = app_xasprintf("%s@%s.lua", vi->dataset, vi->version);
		rc = cli_script_run(ctx, a, name, code, len, vi->recipe_args, vi->nrecipe_args);
		free(name);
	}
	free(code);
	cli_ref_close(&ref, r);
	return rc;
}

const struct cli_cmd cli_cmd_rerun = {
	"rerun", "DATASET[@VERSION]", cli_script_options, rerun_exec,
	"Rebuild a version by running its recipe again with the arguments it was built with",
	1, 1,
};
