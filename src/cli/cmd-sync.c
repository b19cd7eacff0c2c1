/* cmd-sync.c — `matorage sync`: refresh the catalog from the stores, or copy versions between two stores (the copy push and pull run too). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const struct cli_option cli_copy_options[] = {
	{ "threads", 'j', "N", "shards copied at once (default 8)" },
	{ "parity", 0, "K+M", "protect the copied versions in the destination with K+M parity "
	  "(push: default the remote's, if it has one)" },
	{ NULL, 0, NULL, NULL },
};

static const struct cli_option sync_options[] = {
	{ "threads", 'j', "N", "copying: shards copied at once (default 8)" },
	{ "full", 0, NULL, "refreshing: read every manifest again, changed or not" },
	{ NULL, 0, NULL, NULL },
};

static int copy_protect_all(struct cli_ctx *ctx, mt_store *dst, const char *dataset, int k,
			    int m)
{
	char **vs = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (mt_store_versions(dst, dataset, &vs, &n, &err))
		return cli_fail(&err);
	int rc = CLI_OK;
	for (size_t i = 0; i < n && rc == CLI_OK; i++)
		rc = cli_protect(ctx, dst, dataset, vs[i], k, m, 0, 1);
	mt_strv_free(vs, n);
	return rc;
}

/* Protect what a copy covered in dst: the version named, else every version of
 * the dataset, else of every dataset. */
static int copy_protect(struct cli_ctx *ctx, mt_store *dst, const struct cli_ref *ref, int k,
			int m)
{
	char **ds = NULL;
	size_t nds = 0;
	mt_error err = { 0 };
	if (ref->dataset)
		return ref->version ? cli_protect(ctx, dst, ref->dataset, ref->version, k, m, 0, 1)
				    : copy_protect_all(ctx, dst, ref->dataset, k, m);
	if (mt_store_datasets(dst, &ds, &nds, &err))
		return cli_fail(&err);
	int rc = CLI_OK;
	for (size_t i = 0; i < nds && rc == CLI_OK; i++)
		rc = copy_protect_all(ctx, dst, ds[i], k, m);
	mt_strv_free(ds, nds);
	return rc;
}

int cli_copy_run(struct cli_ctx *ctx, const struct cli_args *a, mt_store *src, mt_store *dst,
		 const char *dst_name, const char *spec)
{
	struct cli_ref ref = { 0 };
	int threads = 0, k = 0, m = 0;
	int rc = cli_opt_int(a, "threads", 1, 256, &threads);
	if (!rc && spec && cli_model_spec(spec)) {
		if (cli_has(a, "parity"))
			return cli_usage_error(a->cmd, "--parity protects datasets, not models");
		return cli_model_copy(ctx, src, dst, cli_model_spec(spec));
	}
	/* sync has no --parity: only push and pull protect what they copy. */
	if (!rc && a->cmd != &cli_cmd_sync)
		rc = cli_parity_opt(a, dst_name, &k, &m);
	if (!rc && spec)
		rc = cli_ref_parse(a->cmd, spec, &ref);
	if (rc)
		return rc;
	cli_catch_interrupt();
	char label[64];
	snprintf(label, sizeof label, "%s", ref.dataset ? ref.dataset : "copying");
	struct cli_progress *p = cli_progress_begin(ctx, label, 0);
	mt_copy_stats st;
	mt_error err = { 0 };
	int crc = mt_copy(src, dst, ref.dataset, ref.version, threads, cli_progress_fn, p, &st,
			  &err);
	cli_progress_end(p);
	if (crc) {
		char sent[32];
		rc = cli_fail(&err);
		if (st.shards)
			fprintf(stderr, "matorage: %llu object(s) (%s) were sent before the failure; "
					"a re-run sends only what is still missing\n",
				(unsigned long long)st.shards,
				app_human_bytes(st.bytes, sent, sizeof sent));
	} else {
		char summary[256];
		printf("%llu version(s) copied to %s, %llu already there; %s\n",
		       (unsigned long long)st.versions, mt_store_url(dst),
		       (unsigned long long)st.versions_present,
		       app_copy_summary(&st, summary, sizeof summary));
	}
	/* Even a failed copy may have committed some versions. */
	if (st.versions && ref.dataset && ref.version)
		cli_catalog_note_version(dst_name, dst, ref.dataset, ref.version);
	else if (st.versions)
		cli_catalog_note(dst_name, dst, ref.dataset);
	if (!rc && k)
		rc = copy_protect(ctx, dst, &ref, k, m);
	/* A copy of everything takes the models along. */
	if (!rc && !spec)
		rc = cli_model_copy(ctx, src, dst, NULL);
	cli_ref_free(&ref);
	return rc;
}

/* Refresh what the catalog knows of one store; a store that cannot be opened
 * or read is marked offline there. */
static int sync_refresh_one(struct cli_ctx *ctx, mt_catalog *c, const char *name,
			    const char *url, int flags)
{
	mt_error err = { 0 };
	mt_store *s = NULL;
	if (mt_store_open_opts(url, &ctx->app.store_opts, &s, &err)) {
		mt_error e2;
		mt_catalog_set_offline(c, name, url ? url : name, err.message, &e2);
		return cli_fail(&err);
	}
	cli_catch_interrupt();
	struct cli_progress *p = cli_progress_begin(ctx, name, 0);
	mt_catalog_sync_stats st;
	int rc = mt_catalog_sync(c, name, s, NULL, flags, cli_progress_fn, p, &st, &err);
	cli_progress_end(p);
	if (rc)
		rc = cli_fail(&err);
	else if (!ctx->quiet)
		printf("%s: %" PRIu64 " dataset(s), %" PRIu64 " version(s): %" PRIu64 " read, %" PRIu64
		       " unchanged, %" PRIu64 " dropped\n", name, st.datasets, st.versions,
		       st.versions_read, st.versions - st.versions_read, st.versions_removed);
	/* Models only where there are some: the line above stays as it was for
	 * stores of datasets alone. */
	if (!rc && !ctx->quiet && st.models)
		printf("%s: %" PRIu64 " model(s), %" PRIu64 " checkpoint(s): %" PRIu64 " read, %"
		       PRIu64 " unchanged\n", name, st.models, st.checkpoints, st.checkpoints_read,
		       st.checkpoints - st.checkpoints_read);
	mt_store_close(s);
	return rc;
}

/* sync_refresh_one, once more on a new catalog when this one turns out
 * damaged (the errors said meanwhile were the old one's). */
static int sync_refresh_healing(struct cli_ctx *ctx, mt_catalog **c, const char *name,
				const char *url, int flags)
{
	int rc = sync_refresh_one(ctx, *c, name, url, flags);
	if (rc != CLI_OK && cli_catalog_heal(c))
		rc = sync_refresh_one(ctx, *c, name, url, flags);
	return *c ? rc : CLI_FAIL;
}

/* `sync [REMOTE]`: the default store and every remote, or the one named. */
static int sync_refresh(struct cli_ctx *ctx, const struct cli_args *a)
{
	mt_catalog *c;
	mt_error err = { 0 };
	int flags = cli_has(a, "full") ? MT_CATALOG_FULL : 0;
	if (cli_catalog_open(1, &c, &err))
		return cli_fail(&err);
	int rc = CLI_OK;
	if (a->argc == 1) {
		const char *name = a->argv[0];
		rc = sync_refresh_healing(ctx, &c, name, strcmp(name, APP_LOCAL) ? name : NULL, flags);
	} else {
		mt_remote *r = NULL;
		size_t n = 0;
		/* Entries of remotes since removed, or of a URL a remote names, go first:
		 * the catalog lists each store once. */
		if (app_catalog_prune(c, &err))
			rc = cli_fail(&err);
		const char *name = app_store_name(&ctx->app);
		if (sync_refresh_healing(ctx, &c, name, ctx->app.store_url, flags) != CLI_OK)
			rc = CLI_FAIL;
		if (mt_remotes_list(&r, &n, &err))
			rc = cli_fail(&err);
		/* One unreachable remote does not keep the others stale. */
		for (size_t i = 0; c && i < n && !cli_interrupted; i++)
			if (strcmp(r[i].name, name) &&
			    sync_refresh_healing(ctx, &c, r[i].name, r[i].name, flags) != CLI_OK)
				rc = CLI_FAIL;
		mt_remotes_free(r, n);
	}
	mt_catalog_close(c);
	return rc;
}

static int sync_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	if (a->argc < 2) {
		if (cli_has(a, "threads"))
			return cli_usage_error(a->cmd, "--threads is for copying (SRC DST)");
		return sync_refresh(ctx, a);
	}
	if (cli_has(a, "full"))
		return cli_usage_error(a->cmd, "--full is for refreshing the catalog");
	mt_store *src = cli_store_open(ctx, a->argv[0], 0);
	mt_store *dst = src ? cli_store_open(ctx, a->argv[1], 1) : NULL;
	int rc = src && dst ? cli_copy_run(ctx, a, src, dst, a->argv[1],
					   a->argc > 2 ? a->argv[2] : NULL)
			    : CLI_FAIL;
	mt_store_close(dst);
	mt_store_close(src);
	return rc;
}

const struct cli_cmd cli_cmd_sync = {
	"sync", "[REMOTE] | SRC DST [DATASET[@VERSION] | model:NAME[@VERSION]]", sync_options, sync_exec,
	"Refresh the catalog from every store (or REMOTE; 'local': the default one); with "
	"SRC DST, copy versions between two stores",
	0, 3,
};
