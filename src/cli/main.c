/* main.c — the matorage command: global options, the subcommand table, help generated from it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* In the order `matorage --help` lists them: looking before changing. */
static const struct cli_cmd *const main_cmds[] = {
	&cli_cmd_ls, &cli_cmd_info, &cli_cmd_stats, &cli_cmd_diff, &cli_cmd_model, &cli_cmd_search, &cli_cmd_cat,
	&cli_cmd_get, &cli_cmd_put, &cli_cmd_attach, &cli_cmd_ingest, &cli_cmd_commit, &cli_cmd_compact, &cli_cmd_run, &cli_cmd_rerun,
	&cli_cmd_describe, &cli_cmd_verify, &cli_cmd_upgrade,
	&cli_cmd_protect,
	&cli_cmd_repair, &cli_cmd_rm, &cli_cmd_gc, &cli_cmd_push, &cli_cmd_pull, &cli_cmd_sync,
	&cli_cmd_remote, &cli_cmd_tui,
	NULL,
};

/* Global options (cli_global_options) come before the command and are also accepted
 * after it; --version and --help only here. */
static const struct cli_option main_options[] = {
	{ "version", 0, NULL, "print the program's and the library's version, then exit" },
	{ "help", 'h', NULL, "print this help (or 'matorage help COMMAND'), then exit" },
	{ NULL, 0, NULL, NULL },
};

static const struct cli_cmd *main_find(const char *name)
{
	for (size_t i = 0; main_cmds[i]; i++)
		if (!strcmp(main_cmds[i]->name, name))
			return main_cmds[i];
	return NULL;
}

static void main_print_options(FILE *f, const struct cli_option *opts)
{
	int width = 0;
	for (size_t i = 0; opts[i].name; i++) {
		int w = (int)strlen(opts[i].name);
		if (opts[i].arg)
			w += (int)strlen(opts[i].arg) + 1;
		width = w > width ? w : width;
	}
	for (size_t i = 0; opts[i].name; i++) {
		char spelling[128];
		snprintf(spelling, sizeof spelling, "%s%s%s", opts[i].name, opts[i].arg ? " " : "",
			 opts[i].arg ? opts[i].arg : "");
		if (opts[i].short_name)
			fprintf(f, "  -%c, --%-*s  %s\n", opts[i].short_name, width, spelling,
				opts[i].help);
		else
			fprintf(f, "      --%-*s  %s\n", width, spelling, opts[i].help);
	}
}

static void main_usage(FILE *f)
{
	fputs("usage: matorage [GLOBAL OPTIONS] COMMAND [ARGUMENTS] [OPTIONS]\n"
	      "       matorage help COMMAND | --help | --version\n",
	      f);
}

static void main_help(void)
{
	main_usage(stdout);
	fputs("\nVersioned, sharded numeric datasets in an object store.\n\nCommands:\n", stdout);
	for (size_t i = 0; main_cmds[i]; i++)
		printf("  %-9s %s\n", main_cmds[i]->name, main_cmds[i]->summary);
	fputs("\nGlobal options:\n", stdout);
	main_print_options(stdout, cli_global_options);
	main_print_options(stdout, main_options);
	fputs("\nRun 'matorage help COMMAND' for a command's arguments and options.\n"
	      "Exit status: 0 success, 1 the operation failed, 2 usage error.\n",
	      stdout);
}

static void main_cmd_help(const struct cli_cmd *cmd)
{
	printf("usage: matorage %s %s%s\n\n%s.\n", cmd->name, cmd->usage,
	       cmd->options[0].name ? " [OPTIONS]" : "", cmd->summary);
	if (cmd->options[0].name) {
		fputs("\nOptions:\n", stdout);
		main_print_options(stdout, cmd->options);
	}
	fputs("\nThe global options (matorage --help) may also follow the command.\n", stdout);
}

/* `matorage help [COMMAND]` */
static int main_help_cmd(int argc, char **argv)
{
	if (argc == 0) {
		main_help();
		return CLI_OK;
	}
	const struct cli_cmd *cmd = main_find(argv[0]);
	if (argc > 1)
		return cli_usage_error(NULL, "help takes one command name");
	if (!cmd)
		return cli_usage_error(NULL, "help: unknown command '%s'", argv[0]);
	main_cmd_help(cmd);
	return CLI_OK;
}

/* Parse the global options; returns the index of the command, or -1 with *rc set
 * when there is nothing more to do. */
static int main_globals(int argc, char **argv, struct cli_ctx *ctx, int *rc)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (a[1] == '-' && cli_global_find(a + 2, strcspn(a + 2, "=")) >= 0) {
			size_t len = strcspn(a + 2, "=");
			int g = cli_global_find(a + 2, len);
			const char *val = NULL;
			if (cli_global_options[g].arg) {
				if (a[2 + len] == '=')
					val = a + 3 + len;
				else if (i + 1 < argc)
					val = argv[++i];
				else {
					*rc = cli_usage_error(NULL, "option %s needs a value", a);
					return -1;
				}
			} else if (a[2 + len] == '=') {
				*rc = cli_usage_error(NULL, "option --%.*s takes no value", (int)len,
						      a + 2);
				return -1;
			}
			if ((*rc = cli_global_set(ctx, g, val)) != CLI_OK)
				return -1;
		} else if (!strcmp(a, "-q")) {
			ctx->quiet = 1;
		} else if (!strcmp(a, "--version")) {
			printf("matorage %s (libmatorage %s, format %d)\n", PACKAGE_VERSION,
			       mt_version(), MT_FORMAT_VERSION);
			*rc = CLI_OK;
			return -1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			main_help();
			*rc = CLI_OK;
			return -1;
		} else {
			*rc = cli_usage_error(NULL, "unknown option %s", a);
			return -1;
		}
	}
	if (i == argc) {
		/* On a terminal, no command means the browser; in a pipe or a script
		 * it stays a usage error, so nothing waits for keys that never come. */
		if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
			app_store_name_resolve(&ctx->app);
			*rc = cli_tui_open(ctx, ctx->read_only, NULL);
			return -1;
		}
		main_usage(stderr);
		*rc = CLI_USAGE;
		return -1;
	}
	return i;
}

int main(int argc, char **argv)
{
	struct cli_ctx ctx = { 0 };
	mt_store_opts_init(&ctx.app.store_opts);
	int rc = CLI_OK;
	int i = main_globals(argc, argv, &ctx, &rc);
	if (i < 0)
		goto out;
	if (!strcmp(argv[i], "help")) {
		rc = main_help_cmd(argc - i - 1, argv + i + 1);
		goto out;
	}
	const struct cli_cmd *cmd = main_find(argv[i]);
	if (!cmd) {
		rc = cli_usage_error(NULL, "unknown command '%s'", argv[i]);
		goto out;
	}
	struct cli_args args;
	rc = cli_args_parse(cmd, argc - i - 1, argv + i + 1, &ctx, &args);
	if (rc == CLI_HELP) {
		main_cmd_help(cmd);
		rc = CLI_OK;
	} else if (rc == CLI_OK) {
		app_store_name_resolve(&ctx.app);
		rc = cmd->exec(&ctx, &args);
	}
	cli_args_free(&args);
	mt_store_close(ctx.store);
out:
	/* A full disk or closed pipe must not pass for success. */
	if (fflush(stdout) || ferror(stdout)) {
		int e = errno;
		if (rc == CLI_OK)
			rc = cli_error("writing standard output: %s", strerror(e));
	}
	return rc;
}
