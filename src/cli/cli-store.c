/* cli-store.c — the stores, readers and output files of a command, opened with the global options; errors printed. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

mt_store *cli_store_open(const struct cli_ctx *ctx, const char *url, int create)
{
	mt_store *s = NULL;
	mt_error err = { 0 };
	mt_store_opts o = ctx->app.store_opts;
	o.create = create;
	if (mt_store_open_opts(url, &o, &s, &err)) {
		cli_fail(&err);
		return NULL;
	}
	return s;
}

mt_store *cli_store(struct cli_ctx *ctx)
{
	if (!ctx->store)
		ctx->store = cli_store_open(ctx, ctx->app.store_url, ctx->app.store_opts.create);
	return ctx->store;
}

mt_reader *cli_reader(struct cli_ctx *ctx, const struct cli_ref *ref)
{
	mt_store *s = cli_store(ctx);
	if (!s)
		return NULL;
	mt_reader *r;
	mt_error err = { 0 };
	if ((ref->lazy ? mt_reader_open_lazy : mt_reader_open)(s, ref->dataset, ref->version, &r,
							       &err)) {
		cli_fail(&err);
		return NULL;
	}
	return r;
}

int cli_ref_open(struct cli_ctx *ctx, const struct cli_args *a, struct cli_ref *ref,
		 mt_reader **r)
{
	int rc = cli_ref_parse(a->cmd, a->argv[0], ref);
	if (rc)
		return rc;
	if (!(*r = cli_reader(ctx, ref))) {
		cli_ref_free(ref);
		return CLI_FAIL;
	}
	return 0;
}

int cli_ref_open_lazy(struct cli_ctx *ctx, const struct cli_args *a, struct cli_ref *ref,
		      mt_reader **r)
{
	int rc = cli_ref_parse(a->cmd, a->argv[0], ref);
	if (rc)
		return rc;
	ref->lazy = 1;
	if (!(*r = cli_reader(ctx, ref))) {
		cli_ref_free(ref);
		return CLI_FAIL;
	}
	return 0;
}

void cli_ref_close(struct cli_ref *ref, mt_reader *r)
{
	mt_reader_close(r);
	cli_ref_free(ref);
}

int cli_attr_index(mt_reader *r, const char *name)
{
	int i = mt_reader_attr_index(r, name);
	if (i >= 0)
		return i;
	const mt_version_info *vi = mt_reader_info(r);
	char names[512] = "";
	size_t len = 0;
	for (size_t k = 0; k < mt_reader_nattrs(r) && len < sizeof names; k++) {
		int n = snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "",
				 mt_reader_attr(r, k)->name);
		len += n > 0 ? (size_t)n : 0;
	}
	cli_error("%s@%s has no attribute '%s' (it has: %s)", vi->dataset, vi->version, name,
		  names);
	return -1;
}

int cli_npy_create(const char *path, mt_dtype dtype, int rank, const uint64_t *shape,
		   mt_npy_writer **out, mt_error *err)
{
	if (!strcmp(path, "-"))
		return mt_npy_create_fd(STDOUT_FILENO, "standard output", dtype, rank, shape, out,
					err);
	return mt_npy_create(path, dtype, rank, shape, out, err);
}
