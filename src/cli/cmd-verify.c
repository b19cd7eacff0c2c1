/* cmd-verify.c — `matorage verify`: check every shard of a version against its manifest. */
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

static int verify_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	mt_reader *r;
	int rc = cli_ref_open(ctx, a, &ref, &r);
	if (rc)
		return rc;
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
	cli_ref_close(&ref, r);
	return rc;
}

const struct cli_cmd cli_cmd_verify = {
	"verify", "DATASET[@VERSION]", verify_options, verify_exec,
	"Check every shard of a version: presence, size, sha256, chunk checksums", 1, 1,
};
