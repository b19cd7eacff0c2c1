/* cli-args.c — the command-line parser: global options, a command's option table, looking values up by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The global options: every command accepts them too, so `matorage ls --store URL`
 * works as well as `matorage --store URL ls`. */
const struct cli_option cli_global_options[] = {
	{ "store", 0, "URL",
	  "a directory, file:// or s3://BUCKET[/PREFIX] URL, or a remote's name (default: "
	  "$MATORAGE_STORE, else the local store)" },
	{ "quiet", 'q', NULL, "draw no progress bars" },
	{ "endpoint", 0, "URL",
	  "S3 server, http(s)://HOST[:PORT] (default: $AWS_ENDPOINT_URL, the profile's, else AWS)" },
	{ "region", 0, "NAME", "S3 region (default: $AWS_REGION, the profile's, else us-east-1)" },
	{ "profile", 0, "NAME", "AWS profile for credentials and defaults (default: $AWS_PROFILE)" },
	{ "ca-bundle", 0, "FILE", "PEM file of trusted certificate authorities for https" },
	{ "insecure", 0, NULL, "do not verify the S3 server's TLS certificate" },
	{ "addressing", 0, "STYLE", "S3 URLs: auto, path (http://host/bucket) or virtual" },
	{ "debug", 0, NULL, "log each S3 request and retry on stderr (secrets redacted)" },
	{ "read-only", 0, NULL, "the browser: browse and verify only, no edits, deletes, copies "
				"or gc" },
	{ NULL, 0, NULL, NULL },
};
enum { G_STORE, G_QUIET, G_ENDPOINT, G_REGION, G_PROFILE, G_CA, G_INSECURE, G_ADDRESSING,
       G_DEBUG, G_READ_ONLY };

int cli_global_find(const char *name, size_t len)
{
	for (int i = 0; cli_global_options[i].name; i++)
		if (strlen(cli_global_options[i].name) == len &&
		    !strncmp(cli_global_options[i].name, name, len))
			return i;
	return -1;
}

int cli_global_set(struct cli_ctx *ctx, int g, const char *val)
{
	switch (g) {
	case G_STORE:
		ctx->app.store_url = val;
		break;
	case G_QUIET:
		ctx->quiet = 1;
		break;
	case G_ENDPOINT:
		ctx->app.store_opts.endpoint = val;
		break;
	case G_REGION:
		ctx->app.store_opts.region = val;
		break;
	case G_PROFILE:
		ctx->app.store_opts.profile = val;
		break;
	case G_CA:
		ctx->app.store_opts.ca_bundle = val;
		break;
	case G_INSECURE:
		ctx->app.store_opts.insecure = 1;
		break;
	case G_ADDRESSING:
		if (!strcmp(val, "auto"))
			ctx->app.store_opts.addressing = MT_S3_AUTO;
		else if (!strcmp(val, "path"))
			ctx->app.store_opts.addressing = MT_S3_PATH;
		else if (!strcmp(val, "virtual"))
			ctx->app.store_opts.addressing = MT_S3_VIRTUAL;
		else
			return cli_usage_error(NULL, "--addressing: '%s' is not auto, path or virtual",
					       val);
		break;
	case G_DEBUG:
		ctx->app.store_opts.log = cli_debug_line;
		break;
	case G_READ_ONLY:
		ctx->read_only = 1;
		break;
	default:
		break;
	}
	return CLI_OK;
}

/* Option numbers: a command's own are its table's indexes; below CLI_G_BASE are
 * the global options (CLI_G_BASE - index); CLI_G_NONE: no such option. */
enum { CLI_G_NONE = -1, CLI_G_HELP = -4, CLI_G_BASE = -10 };

static int cli_find_long(const struct cli_cmd *cmd, const char *name, size_t len)
{
	for (int i = 0; cmd->options[i].name; i++)
		if (strlen(cmd->options[i].name) == len &&
		    !strncmp(cmd->options[i].name, name, len))
			return i;
	int g = cli_global_find(name, len);
	if (g >= 0)
		return CLI_G_BASE - g;
	if (len == 4 && !strncmp(name, "help", 4))
		return CLI_G_HELP;
	return CLI_G_NONE;
}

static int cli_find_short(const struct cli_cmd *cmd, char c)
{
	for (int i = 0; cmd->options[i].name; i++)
		if (cmd->options[i].short_name == c)
			return i;
	for (int i = 0; cli_global_options[i].name; i++)
		if (cli_global_options[i].short_name == c)
			return CLI_G_BASE - i;
	if (c == 'h')
		return CLI_G_HELP;
	return CLI_G_NONE;
}

static int cli_takes_arg(const struct cli_cmd *cmd, int opt)
{
	if (opt <= CLI_G_BASE)
		return cli_global_options[CLI_G_BASE - opt].arg != NULL;
	return opt >= 0 && cmd->options[opt].arg;
}

/* Record one occurrence of option opt; returns CLI_HELP for --help. */
static int cli_store_opt(int opt, const char *val, struct cli_ctx *ctx, struct cli_args *out)
{
	if (opt == CLI_G_HELP)
		return CLI_HELP;
	if (opt <= CLI_G_BASE)
		return cli_global_set(ctx, CLI_G_BASE - opt, val);
	struct cli_optval *ov = &out->opts[opt];
	ov->v = app_xreallocarray(ov->v, (size_t)ov->n + 1, sizeof *ov->v);
	ov->v[ov->n++] = val;
	return 0;
}

/* "--name", "--name=value" or "--name value"; *i advances past a consumed value. */
static int cli_parse_long(const struct cli_cmd *cmd, int argc, char **argv, int *i,
			  struct cli_ctx *ctx, struct cli_args *out)
{
	const char *name = argv[*i] + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	int opt = cli_find_long(cmd, name, len);
	if (opt == CLI_G_NONE)
		return cli_usage_error(cmd, "unknown option --%.*s", (int)len, name);
	const char *val = NULL;
	if (cli_takes_arg(cmd, opt)) {
		if (eq)
			val = eq + 1;
		else if (*i + 1 < argc)
			val = argv[++*i];
		else
			return cli_usage_error(cmd, "option --%.*s needs a value", (int)len, name);
	} else if (eq) {
		return cli_usage_error(cmd, "option --%.*s takes no value", (int)len, name);
	}
	return cli_store_opt(opt, val, ctx, out);
}

/* "-x", "-xVALUE", "-x VALUE", or flags grouped as "-ql". */
static int cli_parse_short(const struct cli_cmd *cmd, int argc, char **argv, int *i,
			   struct cli_ctx *ctx, struct cli_args *out)
{
	for (const char *p = argv[*i] + 1; *p; p++) {
		int opt = cli_find_short(cmd, *p);
		if (opt == CLI_G_NONE)
			return cli_usage_error(cmd, "unknown option -%c", *p);
		const char *val = NULL;
		if (cli_takes_arg(cmd, opt)) {
			if (p[1])
				val = p + 1;
			else if (*i + 1 < argc)
				val = argv[++*i];
			else
				return cli_usage_error(cmd, "option -%c needs a value", *p);
		}
		int rc = cli_store_opt(opt, val, ctx, out);
		if (rc || val)
			return rc;
	}
	return 0;
}

int cli_args_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_ctx *ctx,
		   struct cli_args *out)
{
	int nopts = 0;
	while (cmd->options[nopts].name)
		nopts++;
	*out = (struct cli_args){ .cmd = cmd };
	out->opts = app_xcalloc((size_t)nopts + 1, sizeof *out->opts);
	out->argv = app_xcalloc((size_t)argc + 1, sizeof *out->argv);
	int only_args = 0;
	for (int i = 0; i < argc; i++) {
		const char *s = argv[i];
		int rc = 0;
		if (only_args || s[0] != '-' || s[1] == '\0')
			out->argv[out->argc++] = argv[i];
		else if (!strcmp(s, "--"))
			only_args = 1;
		else if (s[1] == '-')
			rc = cli_parse_long(cmd, argc, argv, &i, ctx, out);
		else
			rc = cli_parse_short(cmd, argc, argv, &i, ctx, out);
		if (rc)
			return rc;
	}
	if (out->argc < cmd->min_args || (cmd->max_args >= 0 && out->argc > cmd->max_args)) {
		fprintf(stderr, "usage: matorage %s %s%s\n", cmd->name, cmd->usage,
			nopts ? " [OPTIONS]" : "");
		return CLI_USAGE;
	}
	return 0;
}

void cli_args_free(struct cli_args *a)
{
	if (!a->opts)
		return;
	for (int i = 0; a->cmd->options[i].name; i++)
		free(a->opts[i].v);
	free(a->opts);
	free(a->argv);
	a->opts = NULL;
	a->argv = NULL;
}

/* Commands ask for their options by name; a name missing from the table is a bug
 * in the command, caught the first time it runs. */
static const struct cli_optval *cli_optval(const struct cli_args *a, const char *name)
{
	for (int i = 0; a->cmd->options[i].name; i++)
		if (!strcmp(a->cmd->options[i].name, name))
			return &a->opts[i];
	fprintf(stderr, "matorage: internal error: %s has no option --%s\n", a->cmd->name, name);
	abort();
}

int cli_has(const struct cli_args *a, const char *name)
{
	return cli_optval(a, name)->n > 0;
}

const char *cli_get(const struct cli_args *a, const char *name)
{
	const struct cli_optval *ov = cli_optval(a, name);
	return ov->n ? ov->v[ov->n - 1] : NULL;
}

const char *const *cli_get_all(const struct cli_args *a, const char *name, size_t *n)
{
	const struct cli_optval *ov = cli_optval(a, name);
	*n = (size_t)ov->n;
	return (const char *const *)ov->v;
}
