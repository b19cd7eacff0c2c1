/* cmd-describe.c — `matorage describe`: change a version's description and tags (kept beside its immutable manifest). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option describe_options[] = {
	{ "description", 'd', "TEXT", "the new description" },
	{ "tag", 't', "TAG", "add a tag (repeatable)" },
	{ "untag", 0, "TAG", "remove a tag (repeatable)" },
	{ NULL, 0, NULL, NULL },
};

static int describe_has(const char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return 1;
	return 0;
}

static int describe_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	size_t nadd = 0, ndel = 0;
	const char *const *add = cli_get_all(a, "tag", &nadd);
	const char *const *del = cli_get_all(a, "untag", &ndel);
	const char *desc = cli_get(a, "description");
	if (!ref.version || !strcmp(ref.version, "latest")) {
		rc = cli_usage_error(a->cmd, "'%s': name the version, as DATASET@VERSION",
				     a->argv[0]);
		goto out;
	}
	if (!desc && !nadd && !ndel) {
		rc = cli_usage_error(a->cmd, "nothing to change: give --description, --tag or "
				     "--untag");
		goto out;
	}
	mt_reader *r = cli_reader(ctx, &ref);
	if (!r) {
		rc = CLI_FAIL;
		goto out;
	}
	const mt_version_info *vi = mt_reader_info(r);
	const char **tags = app_xcalloc(vi->ntags + nadd + 1, sizeof *tags);
	size_t n = 0;
	for (size_t i = 0; i < vi->ntags; i++)
		if (!describe_has(del, ndel, vi->tags[i]))
			tags[n++] = vi->tags[i];
	for (size_t i = 0; i < nadd; i++)
		if (!describe_has(tags, n, add[i]))
			tags[n++] = add[i];
	mt_error err = { 0 };
	if (mt_store_set_metadata(cli_store(ctx), ref.dataset, ref.version,
				  desc ? desc : vi->description, tags, n, &err)) {
		rc = cli_fail(&err);
	} else {
		printf("described %s@%s\n", ref.dataset, ref.version);
		cli_catalog_note(app_store_name(&ctx->app), cli_store(ctx), ref.dataset);
	}
	free(tags);
	mt_reader_close(r);
out:
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_describe = {
	"describe", "DATASET@VERSION", describe_options, describe_exec,
	"Change a version's description and tags (kept beside its immutable manifest)",
	1, 1,
};
