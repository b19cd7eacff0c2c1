/* cmd-protect.c — `matorage protect`: Reed–Solomon parity for a version, and the --parity K+M that put, run, push and pull share. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_option protect_options[] = {
	{ "parity", 0, "K+M", "K shards per group, M parity objects each (e.g. 8+2); required" },
	{ "threads", 0, "N", "coding threads (default: one per CPU)" },
	{ NULL, 0, NULL, NULL },
};

/* The default of the remote called `store`, when it is one and has one. */
static int parity_of_remote(const char *store, int *k, int *m)
{
	mt_remote *r = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	if (!store || mt_remotes_list(&r, &n, &err))
		return 0;
	int found = 0;
	for (size_t i = 0; i < n && !found; i++)
		found = !strcmp(r[i].name, store) && r[i].parity &&
			mt_parity_parse(r[i].parity, k, m, &err) == 0;
	mt_remotes_free(r, n);
	return found;
}

int cli_parity_opt(const struct cli_args *a, const char *store, int *k, int *m)
{
	*k = *m = 0;
	const char *v = cli_get(a, "parity");
	mt_error err = { 0 };
	if (v && mt_parity_parse(v, k, m, &err))
		return cli_usage_error(a->cmd, "--parity: %s", err.message);
	if (!v && !parity_of_remote(store, k, m))
		*k = *m = 0;
	return CLI_OK;
}

static int protect_one(struct cli_ctx *ctx, mt_store *s, const char *dataset,
		       const char *version, mt_protect_opts *o, mt_protect_stats *stp, int keep)
{
	cli_catch_interrupt();
	char label[160];
	snprintf(label, sizeof label, "protecting %s", dataset);
	struct cli_progress *p = cli_progress_begin(ctx, label, 0);
	o->progress = cli_progress_fn;
	o->progress_ud = p;
	mt_error err = { 0 };
	int rc = mt_protect(s, dataset, version, o, &err);
	cli_progress_end(p);
	if (rc == MT_ECANCELED && cli_interrupted)
		return cli_error("protect %s: interrupted; the version is not protected", dataset);
	mt_protection pi;
	mt_error ierr = { 0 };
	int info = rc == MT_EEXIST || !rc ? mt_protect_info(s, dataset, version, &pi, &ierr) : rc;
	if (rc == MT_EEXIST && keep && !info) {
		printf("%s@%s: keeps its %d+%d protection\n", dataset, version, pi.k, pi.m);
		return CLI_OK;
	}
	if (rc)
		return cli_fail(&err);
	if (info)
		return cli_fail(&ierr);
	const mt_protect_stats st = *stp;
	int k = o->k, m = o->m;
	const char *name = version;
	if (st.already) {
		printf("%s@%s: already protected with %d+%d parity\n", dataset, name, k, m);
		return CLI_OK;
	}
	char sent[32];
	app_human_bytes(st.bytes_written, sent, sizeof sent);
	double overhead = pi.data_bytes ? 100.0 * (double)(pi.parity_bytes + pi.record_bytes) /
						  (double)pi.data_bytes
					: 0.0;
	printf("%s@%s: protected with %d+%d parity: %" PRIu64 " group(s), %" PRIu64 " reused; %"
	       PRIu64 " parity object(s) sent (%s), %" PRIu64 " already there; overhead %.1f%%\n",
	       dataset, name, k, m, st.groups, st.groups_reused, st.parity_written, sent,
	       st.parity_present, overhead);
	return CLI_OK;
}

int cli_protect(struct cli_ctx *ctx, mt_store *s, const char *dataset, const char *version,
		int k, int m, int threads, int keep)
{
	mt_protect_opts o;
	mt_protect_opts_init(&o);
	mt_protect_stats st = { 0 };
	o.k = k;
	o.m = m;
	o.threads = threads;
	o.stats = &st;
	char **vers = NULL;
	size_t nvers = 0;
	mt_error err = { 0 };
	/* The newest is named in the summary by its name. */
	if (!version || !*version || !strcmp(version, "latest")) {
		if (mt_store_versions(s, dataset, &vers, &nvers, &err))
			return cli_fail(&err);
		version = vers[nvers - 1];
	}
	int rc = protect_one(ctx, s, dataset, version, &o, &st, keep);
	mt_strv_free(vers, nvers);
	return rc;
}

/* The catalog learns the version's protection, and that every shard was
 * read sound to be coded. */
static void protect_note(struct cli_ctx *ctx, mt_store *s, const struct cli_ref *ref)
{
	char **vers = NULL;
	size_t n = 0;
	mt_error err = { 0 };
	const char *version = ref->version;
	if (!version || !*version || !strcmp(version, "latest"))
		version = mt_store_versions(s, ref->dataset, &vers, &n, &err) || !n ? NULL
										     : vers[n - 1];
	struct app_health h;
	app_health_init(&h, "protect", 0);
	if (version) {
		struct app_health_version *v = app_health_version(&h, version);
		v->state = MT_HEALTH_SOUND;
		v->state_set = 1;
	}
	cli_catalog_health(app_store_name(&ctx->app), s, ref->dataset, &h, 1);
	app_health_free(&h);
	mt_strv_free(vers, n);
}

/* model:NAME[@VERSION]: parity over the checkpoint's tensors. */
static int protect_model(mt_store *s, const char *spec, int k, int m)
{
	mt_error err = { 0 };
	if (mt_ckpt_protect(s, spec, k, m, &err))
		return cli_fail(&err);
	printf("model:%s: protected with %d+%d parity\n", spec, k, m);
	return CLI_OK;
}

static int protect_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	int k, m, threads = 0;
	int rc = cli_parity_opt(a, NULL, &k, &m);
	if (!rc && !k)
		rc = cli_usage_error(a->cmd, "--parity K+M is required (e.g. --parity 8+2)");
	if (!rc)
		rc = cli_opt_int(a, "threads", 1, 1024, &threads);
	struct cli_ref ref = { 0 };
	const char *model = cli_model_spec(a->argv[0]);
	if (!rc && model) {
		mt_store *ms = cli_store(ctx);
		return ms ? protect_model(ms, model, k, m) : CLI_FAIL;
	}
	if (!rc)
		rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	mt_store *s = cli_store(ctx);
	rc = s ? cli_protect(ctx, s, ref.dataset, ref.version, k, m, threads, 0) : CLI_FAIL;
	if (!rc)
		protect_note(ctx, s, &ref);
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_protect = {
	"protect", "DATASET[@VERSION] | model:NAME[@VERSION]", protect_options, protect_exec,
	"Add Reed–Solomon parity to a version, so lost or damaged shards can be rebuilt", 1, 1,
};
