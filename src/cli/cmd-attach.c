/* cmd-attach.c — `matorage attach`: attach files (a vocabulary, a tokenizer config) to a version, or remove some (--rm), by committing a new one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_option attach_options[] = {
	{ "name", 'n', "NAME", "the attachment's name (one FILE only); default: the file's name" },
	{ "rm", 0, NULL, "remove the attachments named (NAME... in place of FILE...) instead" },
	{ "version", 0, "NAME", "the new version's name; default: the next vN" },
	{ "description", 'd', "TEXT", "the new version's description" },
	{ "author", 0, "TEXT", "the new version's author" },
	{ NULL, 0, NULL, NULL },
};

/* The last path segment: "tok/vocab.txt" is attached as "vocab.txt". */
static const char *attach_base(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static int attach_read(const struct cli_args *a, size_t n, const char **names, char **data,
		       size_t *lens)
{
	for (size_t i = 0; i < n; i++) {
		const char *path = a->argv[1 + i];
		names[i] = cli_get(a, "name") ? cli_get(a, "name") : attach_base(path);
		if (!(data[i] = app_read_file(path, &lens[i])))
			return cli_error("attach: cannot read %s: %s; nothing was committed", path,
					 strerror(errno));
	}
	return 0;
}

static void attach_opts(const struct cli_args *a, mt_writer_opts *o)
{
	mt_writer_opts_init(o);
	o->version = cli_get(a, "version");
	o->author = cli_get(a, "author");
	o->description = cli_get(a, "description");
}

/* --rm NAME...: a new version without them. */
static int detach_exec(struct cli_ctx *ctx, const struct cli_args *a, const struct cli_ref *ref)
{
	mt_store *s = cli_store(ctx);
	if (!s)
		return CLI_FAIL;
	mt_writer_opts o;
	attach_opts(a, &o);
	char version[256];
	mt_error err = { 0 };
	if (mt_dataset_detach(s, ref->dataset, ref->version, (const char *const *)a->argv + 1,
			      (size_t)a->argc - 1, &o, version, sizeof version, &err))
		return cli_fail(&err);
	printf("%s@%s\n", ref->dataset, version);
	cli_catalog_note_version(app_store_name(&ctx->app), s, ref->dataset, version);
	return CLI_OK;
}

static int attach_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	size_t n = (size_t)a->argc - 1;
	if (cli_get(a, "name") && cli_has(a, "rm"))
		return cli_usage_error(a->cmd, "--name is for attaching, not with --rm");
	if (cli_get(a, "name") && n != 1)
		return cli_usage_error(a->cmd, "--name names one file; %zu were given", n);
	struct cli_ref ref;
	int rc = cli_ref_parse(a->cmd, a->argv[0], &ref);
	if (rc)
		return rc;
	if (cli_has(a, "rm")) {
		rc = detach_exec(ctx, a, &ref);
		cli_ref_free(&ref);
		return rc;
	}
	const char **names = app_xcalloc(n, sizeof *names);
	char **data = app_xcalloc(n, sizeof *data);
	size_t *lens = app_xcalloc(n, sizeof *lens);
	rc = attach_read(a, n, names, data, lens);
	mt_store *s = rc ? NULL : cli_store(ctx);
	if (!rc && !s)
		rc = CLI_FAIL;
	if (!rc) {
		mt_writer_opts o;
		attach_opts(a, &o);
		char version[256];
		mt_error err = { 0 };
		if (mt_dataset_attach(s, ref.dataset, ref.version, names,
				      (const void *const *)data, lens, n, &o, version,
				      sizeof version, &err)) {
			rc = cli_fail(&err);
		} else {
			printf("%s@%s\n", ref.dataset, version);
			cli_catalog_note_version(app_store_name(&ctx->app), s, ref.dataset, version);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(data[i]);
	free(data);
	free(names);
	free(lens);
	cli_ref_free(&ref);
	return rc;
}

const struct cli_cmd cli_cmd_attach = {
	"attach", "DATASET[@VERSION] FILE... | DATASET[@VERSION] --rm NAME...", attach_options,
	attach_exec,
	"Attach files to a version, or remove attachments (--rm): commits a new version with "
	"the same rows",
	2, -1,
};
