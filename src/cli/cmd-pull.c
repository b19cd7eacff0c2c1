/* cmd-pull.c — `matorage pull`: copy versions from another store into the current one. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The source answers for the dataset (its key, its endpoint, the dataset itself) before the
 * destination is created: a pull that cannot read anything leaves no empty store behind. */
static int pull_probe(const struct cli_args *a, mt_store *src)
{
	struct cli_ref ref = { 0 };
	if (cli_model_spec(a->argv[1])) {
		char **v = NULL;
		size_t n = 0;
		mt_error e = { 0 };
		const char *spec = cli_model_spec(a->argv[1]);
		char *name = app_xasprintf("%.*s", (int)strcspn(spec, "@"), spec);
		int mrc = mt_ckpt_list(src, name, &v, &n, &e) ? cli_fail(&e) : CLI_OK;
		mt_strv_free(v, n);
		free(name);
		return mrc;
	}
	int rc = cli_ref_parse(a->cmd, a->argv[1], &ref);
	if (rc)
		return rc;
	/* Opening a reader reads the manifest alone (no listing when the version is named, which
	 * a server answering plain GETs, such as nginx, allows). */
	mt_reader *r = NULL;
	mt_error err = { 0 };
	if (mt_reader_open(src, ref.dataset, ref.version, &r, &err))
		rc = cli_fail(&err);
	mt_reader_close(r);
	cli_ref_free(&ref);
	return rc;
}

static int pull_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	mt_store *src = cli_store_open(ctx, a->argv[0], 0);
	if (src && pull_probe(a, src)) {
		mt_store_close(src);
		return CLI_FAIL;
	}
	ctx->app.store_opts.create = 1; /* the store receives the copy */
	mt_store *dst = src ? cli_store(ctx) : NULL;
	int rc = dst ? cli_copy_run(ctx, a, src, dst, app_store_name(&ctx->app), a->argv[1]) : CLI_FAIL;
	mt_store_close(src);
	return rc;
}

const struct cli_cmd cli_cmd_pull = {
	"pull", "SRC DATASET[@VERSION] | SRC model:NAME[@VERSION]", cli_copy_options, pull_exec,
	"Copy a dataset's versions (or one) from SRC (a URL or remote) into the store, "
	"fetching only missing shards, manifest last",
	2, 2,
};
