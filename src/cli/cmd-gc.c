/* cmd-gc.c — `matorage gc`: find (with --delete remove) shard objects no manifest references. */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"

static const struct cli_option gc_options[] = {
	{ "delete", 0, NULL, "delete the objects found (default: only list them)" },
	{ "grace", 0, "SECONDS",
	  "keep objects younger than this: a put may still be running (default 3600)" },
	{ NULL, 0, NULL, NULL },
};

static void gc_found(void *ud, const char *key, uint64_t bytes)
{
	printf("%" PRIu64 "\t%s\n", bytes, key);
}

static int gc_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	uint64_t grace = 3600, nobjects = 0, nbytes = 0;
	int rc = cli_opt_u64(a, "grace", 0, &grace);
	if (rc)
		return rc;
	int del = cli_has(a, "delete");
	mt_store *s = cli_store(ctx);
	if (!s)
		return CLI_FAIL;
	mt_error err = { 0 };
	const char *model = a->argc ? cli_model_spec(a->argv[0]) : NULL;
	if (model)
		rc = cli_model_gc(s, model, !del, grace, &nobjects, &nbytes);
	else if (mt_store_gc(s, a->argc ? a->argv[0] : NULL, !del, grace, gc_found, NULL,
			     &nobjects, &nbytes, &err))
		return cli_fail(&err);
	/* Without a name, the models' unreferenced tensors are collected too. */
	else if (!a->argc)
		rc = cli_model_gc(s, NULL, !del, grace, &nobjects, &nbytes);
	if (rc)
		return rc;
	/* A dataset with no version left leaves the catalog with its last shards. */
	if (del && nobjects && !model)
		cli_catalog_note(app_store_name(&ctx->app), s, a->argc ? a->argv[0] : NULL);
	char human[32];
	app_human_bytes(nbytes, human, sizeof human);
	if (del)
		printf("deleted %" PRIu64 " objects, %" PRIu64 " bytes (%s)\n", nobjects, nbytes,
		       human);
	else
		printf("%" PRIu64 " objects, %" PRIu64 " bytes (%s) would be deleted%s\n", nobjects,
		       nbytes, human, nobjects ? " (run with --delete)" : "");
	return CLI_OK;
}

const struct cli_cmd cli_cmd_gc = {
	"gc", "[DATASET | model:NAME]", gc_options, gc_exec,
	"List (or with --delete remove) stored objects no version or checkpoint references", 0, 1,
};
