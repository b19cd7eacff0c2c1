/* cmd-sync.c — `matorage sync`: copy versions between any two stores; the copy that push and pull run too. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const struct cli_option cli_copy_options[] = {
	{ "threads", 'j', "N", "shards copied at once (default 8)" },
	{ NULL, 0, NULL, NULL },
};

int cli_copy_run(struct cli_ctx *ctx, const struct cli_args *a, mt_store *src, mt_store *dst,
		 const char *spec)
{
	struct cli_ref ref = { 0 };
	int threads = 0;
	int rc = cli_opt_int(a, "threads", 1, 256, &threads);
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
	char sent[32], present[32];
	cli_human_bytes(st.bytes, sent, sizeof sent);
	cli_human_bytes(st.bytes_present, present, sizeof present);
	if (crc) {
		rc = cli_fail(&err);
		if (st.shards)
			fprintf(stderr, "matorage: %llu shard(s) (%s) were sent before the failure; "
					"a re-run sends only what is still missing\n",
				(unsigned long long)st.shards, sent);
	} else {
		printf("%llu version(s) copied to %s, %llu already there; %llu shard(s) sent (%s), "
		       "%llu already there (%s)\n",
		       (unsigned long long)st.versions, mt_store_url(dst),
		       (unsigned long long)st.versions_present, (unsigned long long)st.shards, sent,
		       (unsigned long long)st.shards_present, present);
	}
	cli_ref_free(&ref);
	return rc;
}

static int sync_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	mt_store *src = cli_store_open(ctx, a->argv[0]);
	mt_store *dst = src ? cli_store_open(ctx, a->argv[1]) : NULL;
	int rc = src && dst ? cli_copy_run(ctx, a, src, dst, a->argc > 2 ? a->argv[2] : NULL)
			    : CLI_FAIL;
	mt_store_close(dst);
	mt_store_close(src);
	return rc;
}

const struct cli_cmd cli_cmd_sync = {
	"sync", "SRC DST [DATASET[@VERSION]]", cli_copy_options, sync_exec,
	"Copy versions (default: every version of every dataset) from store SRC to store DST, "
	"sending only the shards DST lacks",
	2, 3,
};
