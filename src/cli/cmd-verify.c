/* cmd-verify.c — `matorage verify`: check every shard of a version against its manifest, and say whether damage is repairable and from what. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

#include "cli.h"

static const struct cli_option verify_options[] = {
	{ NULL, 0, NULL, NULL },
};

struct verify_state {
	pthread_mutex_t lock; /* the library may report shards from several threads */
	uint64_t checked, damaged;
	struct app_health *health;
};

static void verify_shard(void *ud, size_t shard, const mt_shard_info *info, int code,
			 const char *message)
{
	struct verify_state *v = ud;
	pthread_mutex_lock(&v->lock);
	v->checked++;
	app_health_verified(v->health, info->sha256, code, message);
	if (code) {
		v->damaged++;
		cli_progress_hide();
		printf("BAD shard %zu %s: %s\n", shard, info->sha256,
		       message ? message : mt_strerror(code));
		fflush(stdout);
	}
	pthread_mutex_unlock(&v->lock);
}

/* Count a shard's damage without saying it, for still_damaged. */
static void count_damage(void *ud, size_t shard, const mt_shard_info *info, int code,
			 const char *message)
{
	if (code)
		__atomic_add_fetch((uint64_t *)ud, 1, __ATOMIC_RELAXED);
}

/* Whether the check of r's version, run again, still finds damage. */
static int still_damaged(mt_reader *r)
{
	uint64_t damaged = 0;
	mt_error err = { 0 };
	int rc = mt_reader_verify(r, count_damage, &damaged, NULL, NULL, &err);
	return damaged || rc == MT_ECORRUPT;
}

/* The version's state, from a repair that writes nothing: sound, damaged
 * but repairable (from what), or unrepairable (what is lost); h gathers it
 * for the catalog.  It runs after the check saw damage; the repair reads
 * everything again, so when it finds none the damage was in what was read
 * (a fault in transit), not in what is stored -- unless the check, run again
 * on r (when there is one), still fails: then the stored bytes are the ones
 * the manifest names, and they are what is unsound (a crafted or miswritten
 * version), which no repair can rebuild. */
static void verify_state_line(mt_store *s, mt_reader *r, const char *dataset,
			      const char *version, struct app_health *h)
{
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.dry_run = 1;
	o.report = app_health_report_fn;
	o.report_ud = h;
	mt_error err = { 0 };
	struct app_health_version *v = app_health_version(h, version);
	int rc = mt_repair(s, dataset, version, &o, NULL, &err);
	if (rc && rc != MT_ECORRUPT) {
		/* Damage was found, but not whether it can be rebuilt. */
		v->state = MT_HEALTH_DAMAGED;
		v->state_set = 1;
		snprintf(v->message, sizeof v->message, "%.255s", err.message);
		printf("%s@%s: damaged; whether it is repairable is unknown: %s\n", dataset,
		       version, err.message);
		return;
	}
	if (!v->damaged && r && still_damaged(r)) {
		v->state = MT_HEALTH_UNREPAIRABLE;
		v->state_set = 1;
		snprintf(v->message, sizeof v->message, "%s",
			 "its shards hold the bytes their manifest names, and these fail the check");
		printf("%s@%s: damaged, unrepairable: lost the shards above: they hold the bytes "
		       "their manifest names, and these fail the check\n", dataset, version);
	} else if (!v->damaged) {
		printf("%s@%s: sound when read again: what was read was damaged, not what is "
		       "stored\n", dataset, version);
	}
	else if (!v->unrepairable)
		printf("%s@%s: damaged, repairable from %s (matorage repair)\n", dataset, version,
		       v->sources[0] ? v->sources : "?");
	else
		printf("%s@%s: damaged, unrepairable: lost %s%s%s\n", dataset, version, v->lost,
		       v->sources[0] ? "; the rest is repairable from " : "", v->sources);
}

struct protection_out {
	pthread_mutex_t lock;
	uint64_t parity, damaged; /* parity objects */
};

static void protection_report(void *ud, const mt_repair_report *r)
{
	struct protection_out *o = ud;
	pthread_mutex_lock(&o->lock);
	o->parity += r->kind == MT_REPAIR_PARITY;
	o->damaged += r->kind == MT_REPAIR_PARITY && r->state != MT_REPAIR_SOUND;
	if (r->state == MT_REPAIR_SOUND) {
		pthread_mutex_unlock(&o->lock);
		return;
	}
	cli_progress_hide();
	if (r->kind == MT_REPAIR_RECORD)
		printf("BAD protection record: %s: %s\n", r->key, r->problem ? r->problem : "damaged");
	else
		printf("BAD parity of group %zu %s: %s\n", r->number, r->key,
		       r->problem ? r->problem : "damaged");
	fflush(stdout);
	pthread_mutex_unlock(&o->lock);
}

/* The version's protection, checked as repair checks it: its record and
 * every parity object against their sha256.  Damage is said on its own
 * line, as a damaged shard is; 1 when there is some (or the check failed). */
static int protection_damaged(struct cli_ctx *ctx, const char *dataset, const char *version)
{
	struct protection_out out = { .lock = PTHREAD_MUTEX_INITIALIZER };
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.report = protection_report;
	o.report_ud = &out;
	mt_error err = { 0 };
	int rc = mt_repair_check_protection(cli_store(ctx), dataset, version, &o, NULL, &err);
	if (rc && rc != MT_ECORRUPT) {
		cli_fail(&err);
		return 1;
	}
	if (out.parity)
		printf("%" PRIu64 " parity objects verified, %" PRIu64 " damaged\n", out.parity,
		       out.damaged);
	return rc != 0;
}

/* Check the version open in r; rc: CLI_OK or CLI_FAIL. */
static int verify_version(struct cli_ctx *ctx, mt_reader *r, struct app_health *h)
{
	const mt_version_info *vi = mt_reader_info(r);
	struct verify_state v = { .lock = PTHREAD_MUTEX_INITIALIZER, .health = h };
	mt_error err = { 0 };
	cli_catch_interrupt();
	struct cli_progress *p = cli_progress_begin(ctx, vi->dataset, vi->stored_bytes);
	int vrc = mt_reader_verify(r, verify_shard, &v, cli_progress_fn, p, &err);
	cli_progress_end(p);
	/* Damage was reported shard by shard above; any other failure stopped the check. */
	if (vrc && vrc != MT_ECORRUPT)
		return cli_fail(&err);
	printf("%" PRIu64 " shards verified, %" PRIu64 " damaged\n", v.checked, v.damaged);
	/* Sound shards with damaged parity or record: their protection is damaged. */
	int bad_record = protection_damaged(ctx, vi->dataset, vi->version);
	int rc = vrc == MT_ECORRUPT || v.damaged || bad_record ? CLI_FAIL : CLI_OK;
	if (rc == CLI_FAIL) {
		verify_state_line(cli_store(ctx), r, vi->dataset, vi->version, h);
	} else {
		struct app_health_version *hv = app_health_version(h, vi->version);
		hv->objects = v.checked;
		hv->state = MT_HEALTH_SOUND;
		hv->state_set = 1;
		printf("%s@%s: sound\n", vi->dataset, vi->version);
	}
	return rc;
}

static int verify_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	const char *model = cli_model_spec(a->argv[0]);
	if (model) {
		mt_store *ms = cli_store(ctx);
		return ms ? cli_model_verify(app_store_name(&ctx->app), ms, model, 0) : CLI_FAIL;
	}
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	struct app_health h;
	app_health_init(&h, "verify", 1);
	mt_reader *r = cli_reader(ctx, &ref);
	mt_store *s = r || ref.version ? cli_store(ctx) : NULL;
	if (r) {
		rc = verify_version(ctx, r, &h);
	} else if (s && ref.version) {
		/* A damaged or lost manifest may still come back from elsewhere. */
		verify_state_line(s, NULL, ref.dataset, ref.version, &h);
		rc = CLI_FAIL;
	} else {
		rc = CLI_FAIL;
	}
	/* What was checked goes to the catalog, when there is one. */
	if (s && h.nv)
		cli_catalog_health(app_store_name(&ctx->app), s, ref.dataset, &h, 0);
	app_health_free(&h);
	if (r)
		cli_ref_close(&ref, r);
	else
		cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_verify = {
	"verify", "DATASET[@VERSION] | model:NAME[@VERSION]", verify_options, verify_exec,
	"Check every shard of a version: presence, size, sha256, chunk checksums (a model: "
	"every tensor of its checkpoints, or of one)", 1, 1,
};
