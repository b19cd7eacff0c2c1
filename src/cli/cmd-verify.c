/* cmd-verify.c — `matorage verify`: check every shard of a version against its manifest, and say whether damage is repairable and from what. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_option verify_options[] = {
	{ NULL, 0, NULL, NULL },
};

struct verify_state {
	pthread_mutex_t lock; /* the library may report shards from several threads */
	uint64_t checked, damaged;
};

static void verify_shard(void *ud, size_t shard, const mt_shard_info *info, int code,
			 const char *message)
{
	struct verify_state *v = ud;
	pthread_mutex_lock(&v->lock);
	v->checked++;
	if (code) {
		v->damaged++;
		cli_progress_hide();
		printf("BAD shard %zu %s: %s\n", shard, info->sha256,
		       message ? message : mt_strerror(code));
		fflush(stdout);
	}
	pthread_mutex_unlock(&v->lock);
}

/* What a dry-run repair found: the sources that would rebuild the damage,
 * and the shards nothing can rebuild. */
struct verify_class {
	pthread_mutex_t lock;
	char sources[512];
	char lost[512];
	uint64_t damaged, unrepairable;
};

static void verify_append(char *buf, size_t cap, const char *item)
{
	size_t len = strlen(buf);
	if (strstr(buf, item) || len + strlen(item) + 3 >= cap)
		return;
	snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", item);
}

static void verify_classify(void *ud, const mt_repair_report *r)
{
	struct verify_class *v = ud;
	pthread_mutex_lock(&v->lock);
	if (r->state != MT_REPAIR_SOUND)
		v->damaged++;
	if (r->state == MT_REPAIR_REPAIRABLE && r->source)
		verify_append(v->sources, sizeof v->sources, r->source);
	if (r->state == MT_REPAIR_UNREPAIRABLE) {
		char item[96];
		static const char *const kinds[] = { "shard", "parity", "manifest", "record" };
		if (r->kind == MT_REPAIR_SHARD)
			snprintf(item, sizeof item, "shard %zu (rows %" PRIu64 "..%" PRIu64 ")",
				 r->number, r->first_row, r->first_row + r->rows - (r->rows > 0));
		else
			snprintf(item, sizeof item, "%s%s", kinds[r->kind],
				 r->kind == MT_REPAIR_PARITY ? " object" : "");
		verify_append(v->lost, sizeof v->lost, item);
		v->unrepairable++;
	}
	pthread_mutex_unlock(&v->lock);
}

/* The version's state, from a repair that writes nothing: sound, damaged
 * but repairable (from what), or unrepairable (what is lost). */
static void verify_state_line(struct cli_ctx *ctx, const struct cli_ref *ref, const char *version)
{
	mt_store *s = cli_store(ctx);
	if (!s)
		return;
	struct verify_class v = { .lock = PTHREAD_MUTEX_INITIALIZER };
	mt_repair_opts o;
	mt_repair_opts_init(&o);
	o.dry_run = 1;
	o.report = verify_classify;
	o.report_ud = &v;
	mt_error err = { 0 };
	int rc = mt_repair(s, ref->dataset, version, &o, NULL, &err);
	if (rc && rc != MT_ECORRUPT)
		return;
	if (!v.damaged)
		printf("%s@%s: sound\n", ref->dataset, version);
	else if (!v.unrepairable)
		printf("%s@%s: damaged, repairable from %s (matorage repair)\n", ref->dataset,
		       version, v.sources[0] ? v.sources : "?");
	else
		printf("%s@%s: damaged, unrepairable: lost %s%s%s\n", ref->dataset, version,
		       v.lost, v.sources[0] ? "; the rest is repairable from " : "", v.sources);
}

static int verify_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	mt_reader *r = cli_reader(ctx, &ref);
	if (!r) {
		/* A damaged or lost manifest may still come back from elsewhere. */
		if (ref.version)
			verify_state_line(ctx, &ref, ref.version);
		cli_ref_free(&ref);
		return CLI_FAIL;
	}
	const mt_version_info *vi = mt_reader_info(r);
	struct verify_state v = { .lock = PTHREAD_MUTEX_INITIALIZER };
	mt_error err = { 0 };
	cli_catch_interrupt();
	struct cli_progress *p = cli_progress_begin(ctx, vi->dataset, vi->stored_bytes);
	int vrc = mt_reader_verify(r, verify_shard, &v, cli_progress_fn, p, &err);
	cli_progress_end(p);
	/* Damage was reported shard by shard above; any other failure stopped the check. */
	if (vrc && vrc != MT_ECORRUPT)
		rc = cli_fail(&err);
	else
		printf("%" PRIu64 " shards verified, %" PRIu64 " damaged\n", v.checked, v.damaged);
	if (vrc == MT_ECORRUPT || v.damaged)
		rc = CLI_FAIL;
	if (rc == CLI_FAIL && (vrc == MT_ECORRUPT || v.damaged))
		verify_state_line(ctx, &ref, vi->version);
	else if (!rc)
		printf("%s@%s: sound\n", vi->dataset, vi->version);
	cli_ref_close(&ref, r);
	return rc;
}

const struct cli_cmd cli_cmd_verify = {
	"verify", "DATASET[@VERSION]", verify_options, verify_exec,
	"Check every shard of a version: presence, size, sha256, chunk checksums", 1, 1,
};
