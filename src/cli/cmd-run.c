/* cmd-run.c — `matorage run`: run a Lua recipe that builds dataset versions, sandboxed, with a progress bar. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "script.h"

const struct cli_option cli_script_options[] = {
	{ "allow", 0, "DIR", "let the script read and write files under DIR; may be repeated" },
	{ "allow-store", 0, "URL", "let the script open the store at URL (a path, file://, s3:// "
	  "or a remote's name) besides the one it runs against; may be repeated; never taken "
	  "from a stored recipe" },
	{ "unsafe", 0, NULL, "lift the sandbox: every Lua library, any file, any store, C modules" },
	{ "max-instructions", 0, "N", "stop the script after N Lua instructions (default: no limit)" },
	{ "max-memory", 0, "BYTES", "stop the script when it holds more than BYTES (default: a "
	  "quarter of the memory, or of the cgroup's limit; 0: no limit)" },
	{ "max-time", 0, "SECONDS", "stop the script after SECONDS of wall-clock time (default: "
	  "3600; 0: no limit)" },
	{ "parity", 0, "K+M", "protect the versions it commits with K+M Reed–Solomon parity "
	  "(default: the remote's, if it has one)" },
	{ "part", 0, "K/N", "run part K of N: matorage.part() returns K, N and every writer stages "
	  "its part instead of committing ('matorage commit DATASET --staged' merges them)" },
	{ "stage-id", 0, "ID", "the staging the parts share (default: one derived from the script "
	  "and its arguments, the same for every part)" },
	{ NULL, 0, NULL, NULL },
};

/* print() output goes to stderr: stdout carries only the committed versions. */
static void run_log(void *ud, const char *line)
{
	cli_progress_hide();
	fprintf(stderr, "%s\n", line);
}

/* The message on one line, as every error is; then the traceback as it came. */
static int run_report(const char *name, const char *text, int code)
{
	if (code == MT_ECANCELED && cli_interrupted)
		return cli_error("run %s: interrupted; nothing was committed", name);
	size_t first = strcspn(text, "\n");
	cli_error("%.*s (nothing was committed)", (int)first, text);
	if (text[first])
		fprintf(stderr, "%s\n", text + first + 1);
	return CLI_FAIL;
}

/* A version the script wrote to another store (opened by URL) is not in this
 * one: it is left unprotected, and said so. */
static int run_protect(struct cli_ctx *ctx, mt_store *s, const char *dataset, const char *version,
		       int k, int m)
{
	mt_error err = { 0 };
	mt_reader *r = NULL;
	if (mt_reader_open(s, dataset, version, &r, &err) == MT_ENOTFOUND) {
		fprintf(stderr, "matorage: %s@%s is in another store: not protected\n", dataset,
			version);
		return CLI_OK;
	}
	mt_reader_close(r);
	return cli_protect(ctx, s, dataset, version, k, m, 0, 0);
}

/* --part K/N and --stage-id: the parts of one run share an id, by default a
 * hash of the script and its arguments (FNV-1a), so N runs started the same
 * way stage into the same place. */
static int run_part(const struct cli_args *a, const void *code, size_t len,
		    const char *const *args, size_t nargs, mt_script_opts *o, char *id, size_t cap)
{
	const char *part = cli_get(a, "part"), *given = cli_get(a, "stage-id");
	if (given && !part)
		return cli_usage_error(a->cmd, "--stage-id needs --part");
	if (!part)
		return 0;
	unsigned long long k, n;
	char end;
	if (sscanf(part, "%llu/%llu%c", &k, &n, &end) != 2 || k < 1 || k > n)
		return cli_usage_error(a->cmd, "--part %s: expected K/N with 1 <= K <= N", part);
	mt_error err = { 0 };
	if (given && mt_name_check(given, "staging id", &err))
		return cli_usage_error(a->cmd, "--stage-id: %s", err.message);
	uint64_t h = 0xcbf29ce484222325ull;
	const unsigned char *p = code;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	for (size_t i = 0; i < nargs; i++) /* each with its NUL, so "ab","c" is not "a","bc" */
		for (size_t j = 0; j <= strlen(args[i]); j++)
			h = (h ^ (unsigned char)args[i][j]) * 0x100000001b3ull;
	if (given)
		snprintf(id, cap, "%s", given);
	else
		snprintf(id, cap, "run-%016llx", (unsigned long long)h);
	o->stage_id = id;
	o->part = k;
	o->parts = n;
	return 0;
}

int cli_script_run(struct cli_ctx *ctx, const struct cli_args *a, const char *name,
		   const void *code, size_t len, const char *const *args, size_t nargs)
{
	mt_script_opts o;
	mt_script_opts_init(&o);
	char stage_id[160];
	int rc = run_part(a, code, len, args, nargs, &o, stage_id, sizeof stage_id);
	if (rc)
		return rc;
	/* A limit not given keeps its default (mt_script_opts_init); 0 lifts
	 * memory and time, and leaving --max-instructions out says the same. */
	if ((rc = cli_opt_u64(a, "max-instructions", 1, &o.max_instructions)) ||
	    (rc = cli_opt_bytes(a, "max-memory", 0, &o.max_memory)) ||
	    (rc = cli_opt_u64(a, "max-time", 0, &o.max_seconds)))
		return rc;
	int k, m;
	if ((rc = cli_parity_opt(a, ctx->app.store_url, &k, &m)))
		return rc;
	o.unsafe = cli_has(a, "unsafe");
	size_t nallow = 0;
	const char *const *allow = cli_get_all(a, "allow", &nallow);
	/* The working directory is always allowed: a recipe's relative paths start there. */
	const char **paths = app_xcalloc(nallow + 1, sizeof *paths);
	paths[0] = ".";
	for (size_t i = 0; i < nallow; i++)
		paths[i + 1] = allow[i];
	o.allowed_paths = paths;
	o.nallowed = nallow + 1;
	/* Only from this command line: `rerun` reads none from the recipe. */
	o.allowed_stores = cli_get_all(a, "allow-store", &o.nallowed_stores);
	/* A recipe writes new versions: its stores are made when missing. */
	ctx->app.store_opts.create = 1;
	if (!(o.store = cli_store(ctx))) {
		free(paths);
		return CLI_FAIL;
	}
	o.store_opts = &ctx->app.store_opts;
	o.log = run_log;
	cli_catch_interrupt();
	struct cli_progress *p = cli_progress_begin(ctx, name, 0);
	cli_progress_unit(p, "rows");
	o.progress = cli_progress_fn;
	o.progress_ud = p;
	mt_script *s = NULL;
	mt_error err = { 0 };
	if (mt_script_open(&o, &s, &err)) {
		cli_progress_end(p);
		free(paths);
		return cli_fail(&err);
	}
	int r = mt_script_run(s, name, code, len, args, nargs, &err);
	cli_progress_end(p);
	if (r) {
		const char *text = mt_script_error(s);
		rc = run_report(name, *text ? text : err.message, r);
	} else {
		for (size_t i = 0; i < mt_script_nversions(s); i++) {
			const char *v = mt_script_version(s, i);
			printf("%s\n", v);
			fflush(stdout);
			/* Versions written to stores the script opened by URL reach the
			 * catalog with the next sync. */
			char *dataset = app_xasprintf("%.*s", (int)strcspn(v, "@"), v);
			/* A staged part is no version yet: its commit records and
			 * protects it. */
			if (!o.parts)
				cli_catalog_note_version(app_store_name(&ctx->app), o.store,
							 dataset, v + strlen(dataset) + 1);
			if (k && !o.parts && run_protect(ctx, o.store, dataset, v + strlen(dataset) + 1, k, m))
				rc = CLI_FAIL;
			free(dataset);
		}
	}
	mt_script_close(s);
	free(paths);
	return rc;
}

static int run_exec(struct cli_ctx *ctx, const struct cli_args *a)
{
	const char *path = a->argv[0];
	for (int i = 1; i < a->argc; i++) {
		const char *eq = strchr(a->argv[i], '=');
		if (!eq || eq == a->argv[i])
			return cli_usage_error(a->cmd, "'%s' is not KEY=VALUE", a->argv[i]);
	}
	size_t len = 0;
	char *code = app_read_file(path, &len);
	if (!code)
		return cli_error("%s: %s", path, strerror(errno));
	int rc = cli_script_run(ctx, a, path, code, len, (const char *const *)a->argv + 1,
				(size_t)a->argc - 1);
	free(code);
	return rc;
}

const struct cli_cmd cli_cmd_run = {
	"run", "SCRIPT.lua [KEY=VALUE ...]", cli_script_options, run_exec,
	"Run a Lua recipe that builds dataset versions; they keep it to explain and rebuild them",
	1, -1,
};
