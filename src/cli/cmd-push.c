/* cmd-push.c — `matorage push`: copy versions from the current store to another. */
#include <stdlib.h>

#include "cli.h"

static const struct cli_option push_options[] = {
	{ "threads", 'j', "N", "shards copied at once (default 8)" },
	{ "parity", 0, "K+M", "protect the copied versions in the destination with K+M parity "
	  "(default the remote's, if it has one)" },
	{ "force", 0, NULL, "send versions verify finds unsound as they are" },
	{ NULL, 0, NULL, NULL },
};

/* CLI_OK when dataset@version passes verify's checks; else says why. */
static int push_version_sound(mt_store *s, const char *dataset, const char *version)
{
	mt_reader *r = NULL;
	mt_error err = { 0 };
	int rc = mt_reader_open(s, dataset, version, &r, &err);
	if (!rc)
		rc = mt_reader_verify(r, NULL, NULL, NULL, NULL, &err);
	mt_reader_close(r);
	if (rc == MT_ECORRUPT)
		return cli_error("push: %s@%s is not sound, so it is not spread (matorage "
				 "verify, matorage repair; push --force sends it as it is): %s",
				 dataset, version, err.message);
	return rc ? cli_fail(&err) : CLI_OK;
}

/* Every version the push covers is sound, unless --force. */
static int push_sound(struct cli_ctx *ctx, const struct cli_args *a, mt_store *src)
{
	struct cli_ref ref = { 0 };
	if (cli_has(a, "force") || cli_model_spec(a->argv[0]))
		return CLI_OK;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	char **vs = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (ref.version)
		rc = push_version_sound(src, ref.dataset, ref.version);
	else if (mt_store_versions(src, ref.dataset, &vs, &n, &err))
		rc = cli_fail(&err);
	for (size_t i = 0; rc == CLI_OK && i < n; i++)
		rc = push_version_sound(src, ref.dataset, vs[i]);
	mt_strv_free(vs, n);
	cli_ref_free(&ref);
	return rc;
}

static int push_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	mt_store *src = cli_store(ctx);
	int rc = src ? push_sound(ctx, a, src) : CLI_FAIL;
	mt_store *dst = rc == CLI_OK ? cli_store_open(ctx, a->argv[1], 1) : NULL;
	if (rc == CLI_OK)
		rc = dst ? cli_copy_run(ctx, a, src, dst, a->argv[1], a->argv[0]) : CLI_FAIL;
	mt_store_close(dst);
	return rc;
}

const struct cli_cmd cli_cmd_push = {
	"push", "DATASET[@VERSION] DST | model:NAME[@VERSION] DST", push_options, push_exec,
	"Copy a dataset's versions (or one) from the store to DST (a URL or remote), "
	"sending only missing shards, manifest last; unsound versions need --force",
	2, 2,
};
