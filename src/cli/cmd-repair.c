/* cmd-repair.c — `matorage repair`: bring back a version's damaged or lost shards, parity objects and manifest, from other stores or parity; salvage what is left. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option repair_options[] = {
	{ "from", 0, "STORE", "another store or remote holding the same objects (repeatable)" },
	{ "no-remotes", 0, NULL, "do not look in the configured remotes" },
	{ "cache", 0, "DIR", "a loader's shard cache directory to look in as well" },
	{ "dry-run", 'n', NULL, "say what is damaged and what would rebuild it; write nothing" },
	{ "salvage", 0, NULL,
	  "when objects cannot be rebuilt, write a new version of the rows still intact" },
	{ "threads", 'j', "N", "objects checked at once (default 4)" },
	{ NULL, 0, NULL, NULL },
};

static const char *const repair_kinds[] = { "shard", "parity", "manifest", "record", "tensor",
					     "fragment" };

struct repair_out {
	pthread_mutex_t lock;
	int dry_run;
	const char *prefix; /* "model:" for a model's checkpoints, else "" */
};

static void repair_line(const mt_repair_report *r, int dry_run, const char *prefix)
{
	char read[32];
	app_human_bytes(r->bytes_read, read, sizeof read);
	const char *kind = repair_kinds[r->kind];
	char what[64] = "";
	if (r->kind == MT_REPAIR_TENSOR)
		snprintf(what, sizeof what, " %zu", r->number);
	else if (r->kind == MT_REPAIR_SHARD || r->kind == MT_REPAIR_FRAGMENT)
		snprintf(what, sizeof what, " %zu (rows %" PRIu64 "..%" PRIu64 ")", r->number,
			 r->first_row, r->first_row + r->rows - (r->rows > 0));
	else if (r->kind == MT_REPAIR_PARITY)
		snprintf(what, sizeof what, " of group %zu", r->number);
	switch (r->state) {
	case MT_REPAIR_REBUILT:
	case MT_REPAIR_REPAIRABLE:
		printf("%s %s%s@%s %s%s %s: %s; from %s, %s read\n",
		       r->state == MT_REPAIR_REBUILT ? "rebuilt" : dry_run ? "repairable" : "rebuilt",
		       prefix, r->dataset, r->version, kind, what, r->key, r->problem ? r->problem : "damaged",
		       r->source ? r->source : "?", read);
		break;
	case MT_REPAIR_UNREPAIRABLE:
		printf("UNREPAIRABLE %s%s@%s %s%s %s: %s\n", prefix, r->dataset, r->version, kind, what,
		       r->key ? r->key : "", r->problem ? r->problem : "damaged");
		break;
	default:
		break;
	}
}

static void repair_report(void *ud, const mt_repair_report *r)
{
	struct repair_out *o = ud;
	pthread_mutex_lock(&o->lock);
	cli_progress_hide();
	repair_line(r, o->dry_run, o->prefix);
	fflush(stdout);
	pthread_mutex_unlock(&o->lock);
}

static void repair_salvaged(void *ud, const mt_salvage_report *s)
{
	struct repair_out *o = ud;
	pthread_mutex_lock(&o->lock);
	cli_progress_hide();
	printf("salvaged %s@%s as %s@%s: %" PRIu64 " rows kept, %" PRIu64 " lost", s->dataset,
	       s->from, s->dataset, s->version, s->rows_kept, s->rows_lost);
	for (size_t i = 0; i < s->nlost; i++)
		printf("%s%" PRIu64 "..%" PRIu64, i ? ", " : ": rows ", s->lost[i][0],
		       s->lost[i][0] + s->lost[i][1] - 1);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&o->lock);
}

/* The --from stores, opened read-only; NULL after printing why. */
static mt_store **repair_sources(struct cli_ctx *ctx, const struct cli_args *a, size_t *n)
{
	const char *const *from = cli_get_all(a, "from", n);
	mt_store **s = calloc(*n ? *n : 1, sizeof *s);
	if (!s) {
		cli_error("out of memory");
		return NULL;
	}
	for (size_t i = 0; i < *n; i++) {
		if (!(s[i] = cli_store_open(ctx, from[i], 0))) {
			for (size_t j = 0; j < i; j++)
				mt_store_close(s[j]);
			free(s);
			return NULL;
		}
	}
	return s;
}

/* mt_ckpt_repair's reports, to the health and then to the lines. */
struct model_tee {
	struct app_model_health *h;
	struct repair_out *out;
};

static void model_report(void *ud, const mt_repair_report *r)
{
	struct model_tee *t = ud;
	app_model_health_report(t->h, r);
	repair_report(t->out, r);
}

/* model:NAME[@VERSION]: the checkpoints' tensors, parity and manifests, as
 * mt_ckpt_repair has them; the catalog's models are synced after, with
 * what was found of each object. */
static int repair_model(const char *remote, mt_store *s, const char *spec, mt_repair_opts *o)
{
	const char *at = strchr(spec, '@');
	char *name = app_xasprintf("%.*s", (int)(at ? (size_t)(at - spec) : strlen(spec)), spec);
	struct app_model_health h;
	app_model_health_init(&h, name);
	struct model_tee t = { &h, o->report_ud };
	o->report = model_report;
	o->report_ud = &t;
	mt_repair_stats st = { 0 };
	mt_error err = { 0 };
	int rrc = mt_ckpt_repair(s, name, at && at[1] ? at + 1 : NULL, o, &st, &err);
	char line[256];
	if (!rrc || rrc == MT_ECORRUPT)
		printf("%s\n", app_repair_summary(&st, o->dry_run, line, sizeof line));
	if (!rrc || rrc == MT_ECORRUPT)
		cli_model_record(remote, s, &h, 1);
	app_model_health_free(&h);
	free(name);
	return rrc ? cli_fail(&err) : CLI_OK;
}

static int repair_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref = { 0 };
	const char *model = cli_model_spec(a->argv[0]);
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	int rc = cli_opt_int(a, "threads", 1, 256, &o.threads);
	if (!rc && !model)
		rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	mt_store *s = cli_store(ctx);
	size_t nsrc = 0;
	mt_store **src = s ? repair_sources(ctx, a, &nsrc) : NULL;
	if (!src) {
		cli_ref_free(&ref);
		return CLI_FAIL;
	}
	struct repair_out out = { .lock = PTHREAD_MUTEX_INITIALIZER, .dry_run = cli_has(a, "dry-run"),
				  .prefix = model ? "model:" : "" };
	o.sources = src;
	o.nsources = nsrc;
	o.use_remotes = !cli_has(a, "no-remotes");
	o.cache_dir = cli_get(a, "cache");
	o.dry_run = out.dry_run;
	o.salvage = cli_has(a, "salvage");
	o.report = repair_report;
	o.salvaged = repair_salvaged;
	o.report_ud = &out;
	if (model) {
		rc = repair_model(app_store_name(&ctx->app), s, model, &o);
		for (size_t i = 0; i < nsrc; i++)
			mt_store_close(src[i]);
		free(src);
		return rc;
	}
	/* For the catalog: a dry run rebuilds nothing, so it is a check, not a
	 * repair (the browser's "repaired" row names the last real one). */
	struct app_health health;
	app_health_init(&health, out.dry_run ? "verify" : "repair", out.dry_run);
	cli_catch_interrupt();
	struct cli_progress *p = cli_progress_begin(ctx, ref.dataset, 0);
	o.progress = cli_progress_fn;
	o.progress_ud = p;
	mt_repair_stats st = { 0 };
	mt_error err = { 0 };
	/* No version named: every version of the dataset. */
	int rrc = app_repair(s, ref.dataset, ref.version, &o, &health, &st, &err);
	cli_progress_end(p);
	char line[256];
	if (!rrc || rrc == MT_ECORRUPT)
		printf("%s\n", app_repair_summary(&st, out.dry_run, line, sizeof line));
	rc = rrc ? cli_fail(&err) : CLI_OK;
	/* What was found and rebuilt goes to the catalog. */
	if (health.nv)
		cli_catalog_health(app_store_name(&ctx->app), s, ref.dataset, &health, 1);
	app_health_free(&health);
	for (size_t i = 0; i < nsrc; i++)
		mt_store_close(src[i]);
	free(src);
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_repair = {
	"repair", "DATASET[@VERSION] | model:NAME[@VERSION]", repair_options, repair_exec,
	"Rebuild damaged or lost shards, parity and manifests from other stores or parity", 1, 1,
};
