/* cmd-info.c — `matorage info`: what a version holds, as text or as its stored JSON manifest. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct cli_option info_options[] = {
	{ "json", 0, NULL, "print the manifest exactly as stored (JSON, shards included)" },
	{ "shards", 0, NULL, "also list every shard: sha256, rows, first row, bytes" },
	{ NULL, 0, NULL, NULL },
};

static void info_attrs(mt_reader *r)
{
	size_t n = mt_reader_nattrs(r);
	int width = 4, swidth = 2;
	char shape[MT_MAX_RANK * 24 + 16];
	for (size_t i = 0; i < n; i++) {
		const mt_attr *at = mt_reader_attr(r, i);
		int w = (int)strlen(at->name);
		width = w > width ? w : width;
		w = (int)strlen(app_shape_str(at, shape, sizeof shape));
		swidth = w > swidth ? w : swidth;
	}
	printf("attributes:  %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		const mt_attr *at = mt_reader_attr(r, i);
		printf("  %-*s  %-8s %-*s%s\n", width, at->name, mt_dtype_name(at->dtype),
		       at->ragged ? swidth : 0, app_shape_str(at, shape, sizeof shape),
		       at->dtype == MT_STR ? "  ragged: UTF-8 text, one string a row" :
		       at->ragged ? "  ragged" : "");
	}
}

/* A shard whose fragment cannot be read fails the listing: skipping it
 * would show a version with rows missing. */
static int info_shards(mt_reader *r, uint64_t n)
{
	printf("  %5s  %-64s %12s %12s %12s\n", "SHARD", "SHA256", "FIRST_ROW", "ROWS", "BYTES");
	for (uint64_t i = 0; i < n; i++) {
		mt_shard_info si;
		mt_error err = { 0 };
		if (mt_reader_shard_err(r, (size_t)i, &si, &err)) {
			fflush(stdout);
			return cli_fail(&err);
		}
		printf("  %5" PRIu64 "  %-64s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", i,
		       si.sha256, si.first_row, si.rows, si.bytes);
	}
	return 0;
}

/* Shown only when there are some, so the text of other versions stays as it was. */
static void info_attachments(mt_reader *r)
{
	size_t n = mt_reader_nattachments(r);
	int width = 4;
	mt_attachment_info ai;
	for (size_t i = 0; i < n; i++)
		if (!mt_reader_attachment_info(r, i, &ai) && (int)strlen(ai.name) > width)
			width = (int)strlen(ai.name);
	if (n)
		printf("attachments: %zu\n", n);
	for (size_t i = 0; i < n; i++)
		if (!mt_reader_attachment_info(r, i, &ai))
			printf("  %-*s  %12" PRIu64 "  %s\n", width, ai.name, ai.bytes, ai.sha256);
}

/* Optional manifest fields are "" when absent; show "-" so columns stay visible. */
static const char *info_or_dash(const char *s)
{
	return s && s[0] ? s : "-";
}

static int info_text(mt_reader *r, int shards)
{
	const mt_version_info *vi = mt_reader_info(r);
	char stored[32], raw[32];
	printf("dataset:     %s\n", vi->dataset);
	printf("version:     %s\n", vi->version);
	printf("parent:      %s\n", info_or_dash(vi->parent));
	printf("created:     %s\n", vi->created);
	printf("author:      %s\n", info_or_dash(vi->author));
	printf("description: %s\n", info_or_dash(vi->description));
	printf("tags:        ");
	for (size_t i = 0; i < vi->ntags; i++)
		printf("%s%s", i ? ", " : "", vi->tags[i]);
	printf("%s\n", vi->ntags ? "" : "-");
	printf("rows:        %" PRIu64 "\n", vi->rows);
	printf("shards:      %" PRIu64 "\n", vi->nshards);
	printf("stored:      %s (%" PRIu64 " bytes)\n",
	       app_human_bytes(vi->stored_bytes, stored, sizeof stored), vi->stored_bytes);
	printf("raw:         %s (%" PRIu64 " bytes)\n",
	       app_human_bytes(vi->raw_bytes, raw, sizeof raw), vi->raw_bytes);
	if (vi->stored_bytes)
		printf("ratio:       %.2f\n", (double)vi->raw_bytes / (double)vi->stored_bytes);
	else
		printf("ratio:       -\n");
	printf("level:       %d\n", vi->level);
	printf("recipe:      %s\n", info_or_dash(vi->recipe));
	for (size_t i = 0; i < vi->nrecipe_args; i++)
		printf("  %s\n", vi->recipe_args[i]);
	size_t ns = mt_reader_nsources(r);
	printf("sources:%s\n", ns ? "" : "     -");
	for (size_t i = 0; i < ns; i++) {
		const mt_source *src = mt_reader_source(r, i);
		printf("  %s@%s%s%s\n", src->dataset, src->version, src->store[0] ? "  " : "",
		       src->store);
	}
	info_attachments(r);
	info_attrs(r);
	if (!shards)
		return 0;
	putchar('\n');
	return info_shards(r, vi->nshards);
}

static int info_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	mt_reader *r;
	int rc = cli_ref_open_lazy(ctx, a, &ref, &r);
	if (rc)
		return rc;
	if (cli_has(a, "json")) {
		const char *json = mt_reader_manifest(r);
		size_t len = strlen(json);
		fputs(json, stdout);
		if (!len || json[len - 1] != '\n')
			putchar('\n');
	} else {
		rc = info_text(r, cli_has(a, "shards"));
	}
	cli_ref_close(&ref, r);
	return rc;
}

const struct cli_cmd cli_cmd_info = {
	"info", "DATASET[@VERSION]", info_options, info_exec,
	"Describe a version: attributes, rows, shards, sizes, compression, lineage", 1, 1,
};
