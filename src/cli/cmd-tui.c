/* cmd-tui.c — `matorage tui` (and `matorage` alone on a terminal): the interactive catalog browser and admin. */
#include <unistd.h>

#include "cli.h"
#include "tui-main.h"

/* --read-only is a global option (`matorage --read-only` opens the browser so). */
static const struct cli_option tui_options[] = {
	{ "open", 0, "DATASET", "start on DATASET's versions in the store (--store, else the default)" },
	{ NULL, 0, NULL, NULL },
};

int cli_tui_open(struct cli_ctx *ctx, int read_only, const char *open)
{
	mt_error err = { 0 };
	if (tui_main(&ctx->app, read_only, open, tui_recipe_run, &err))
		return cli_fail(&err);
	return CLI_OK;
}

static int tui_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	/* Keys come from the terminal: without one the browser would wait for keys
	 * that never come. */
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return cli_usage_error(a->cmd, "standard input and output must be a terminal "
				       "(the browser is interactive)");
	return cli_tui_open(ctx, ctx->read_only, cli_get(a, "open"));
}

const struct cli_cmd cli_cmd_tui = {
	"tui", "", tui_options, tui_exec,
	"The interactive browser and admin ('matorage' alone on a terminal opens it)",
	0, 0,
};
