/* cmd-push.c — `matorage push`: copy versions from the current store to another. */
#include "cli.h"

static int push_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	mt_store *src = cli_store(ctx);
	mt_store *dst = src ? cli_store_open(ctx, a->argv[1], 1) : NULL;
	int rc = dst ? cli_copy_run(ctx, a, src, dst, a->argv[1], a->argv[0]) : CLI_FAIL;
	mt_store_close(dst);
	return rc;
}

const struct cli_cmd cli_cmd_push = {
	"push", "DATASET[@VERSION] DST | model:NAME[@VERSION] DST", cli_copy_options, push_exec,
	"Copy a dataset's versions (or one) from the store to DST (a URL or remote), "
	"sending only missing shards, manifest last",
	2, 2,
};
