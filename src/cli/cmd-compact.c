/* cmd-compact.c — `matorage compact`: a version's rows repacked into fewer, full-size shards as a new version. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const struct cli_option compact_options[] = {
	{ "shard-rows", 0, "N", "rows per shard of the new version" },
	{ "target-mb", 0, "M", "uncompressed MiB per shard of the new version (default 64)" },
	{ "level", 0, "N", "zstd level of the shards written again, 1 to 22 (default: the "
	  "version's)" },
	CLI_OPT_THREADS,
	{ "author", 0, "NAME", "who made the new version (default: $USER)" },
	{ "description", 0, "TEXT", "what the new version holds (default: the version's)" },
	CLI_OPT_PARITY_NEW,
	{ NULL, 0, NULL, NULL },
};

int cli_compact(struct cli_ctx *ctx, mt_store *s, const char *dataset, const char *version,
		const mt_writer_opts *o, char *out, size_t cap)
{
	mt_compact_stats st;
	mt_error err = { 0 };
	if (mt_compact(s, dataset, version, o, &st, out, cap, &err))
		return cli_error("compact %s@%s: %s", dataset, version ? version : "latest",
				 err.message);
	if (st.unchanged) {
		if (!ctx->quiet)
			fprintf(stderr, "matorage: compact %s@%s: compact already (%" PRIu64 " shard(s), "
				"all full size but the last); no version written\n", dataset, out,
				st.shards_before);
		out[0] = 0;
		return CLI_OK;
	}
	printf("%s@%s\n", dataset, out);
	fflush(stdout);
	if (!ctx->quiet) {
		fprintf(stderr, "matorage: compact %s@%s: %" PRIu64 " shard(s) became %" PRIu64
			" in %s@%s (%" PRIu64 " reused as they were), %" PRIu64 " row(s)", dataset,
			st.base, st.shards_before, st.shards_after, dataset,
			out, st.shards_reused, st.rows);
		if (st.tail_rows)
			fprintf(stderr, ", the last %" PRIu64 " of them appended after %s and carried "
				"over", st.tail_rows, st.base);
		fputc('\n', stderr);
	}
	return CLI_OK;
}

static int compact_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	uint64_t mb = 0;
	int k = 0, m = 0;
	if ((rc = cli_opt_u64(a, "shard-rows", 1, &o.shard_rows)) ||
	    (rc = cli_opt_u64(a, "target-mb", 1, &mb)) ||
	    (rc = cli_opt_int(a, "level", 1, 22, &o.level)) ||
	    (rc = cli_opt_int(a, "threads", 1, 4096, &o.threads)))
		goto out;
	if (o.shard_rows && mb) {
		rc = cli_usage_error(a->cmd, "give --shard-rows or --target-mb, not both");
		goto out;
	}
	if (mb > (UINT64_MAX >> 21)) {
		rc = cli_usage_error(a->cmd, "--target-mb %" PRIu64 ": too large", mb);
		goto out;
	}
	o.shard_bytes = mb << 20;
	o.author = cli_get(a, "author");
	if (!o.author)
		o.author = getenv("USER");
	o.description = cli_get(a, "description");
	if ((rc = cli_parity_opt(a, ctx->app.store_url, &k, &m)))
		goto out;
	mt_store *s = cli_store(ctx);
	if (!s) {
		rc = CLI_FAIL;
		goto out;
	}
	char version[256];
	rc = cli_compact(ctx, s, ref.dataset, ref.version, &o, version, sizeof version);
	if (!rc && k && version[0])
		rc = cli_protect(ctx, s, ref.dataset, version, k, m, o.threads, 0);
	if (!rc && version[0])
		cli_catalog_note_version(app_store_name(&ctx->app), s, ref.dataset, version);
out:
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_compact = {
	"compact", "DATASET[@VERSION] [--shard-rows N | --target-mb M]", compact_options,
	compact_exec,
	"Write a new version holding the rows of DATASET@VERSION (default: the latest) in the "
	"same order, repacked into fewer, full-size shards", 1, 1,
};
