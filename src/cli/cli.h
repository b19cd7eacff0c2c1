/* cli.h — declarations shared by the matorage command: command entries, parsed options, helpers. */
#ifndef MT_CLI_H
#define MT_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "matorage.h"
#include "matorage-catalog.h"

/* Exit statuses: the operation failed, or the command line was wrong. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };
/* What the parser answers when --help was asked for: no exit status (the caller
 * prints the help, then exits CLI_OK). */
enum { CLI_HELP = -1 };

/* Reads and writes move data in batches of about this many bytes, so memory stays
 * flat whatever the size of the file or version. */
#define CLI_BATCH_BYTES (8u << 20)

/* One option a command accepts; a table ends with an entry whose name is NULL. */
struct cli_option {
	const char *name;  /* long spelling, without "--" */
	char short_name;   /* one-letter spelling, or 0 */
	const char *arg;   /* placeholder for its value ("FILE"); NULL for a flag */
	const char *help;  /* one line for --help */
};

/* Options that several writing commands take with the same meaning. */
#define CLI_OPT_LEVEL { "level", 0, "N", "zstd compression level, 1 to 22 (default 3)" }
#define CLI_OPT_THREADS { "threads", 0, "N", "compression threads (default: one per CPU)" }
#define CLI_OPT_PARITY_NEW                                                                   \
	{ "parity", 0, "K+M", "protect the new version with K+M Reed–Solomon parity (default: " \
	  "the remote's, if it has one)" }

/* What the parser found: positional arguments in order, and every value given
 * for each option of the command's table (an option may repeat). */
struct cli_args {
	const struct cli_cmd *cmd;
	int argc;
	char **argv;
	struct cli_optval {
		int n;
		const char **v;
	} *opts; /* parallel to cmd->options */
};

/* State every command shares: the global options and the store, opened lazily. */
struct cli_ctx {
	struct app_ctx app; /* --store, --endpoint, --profile, ...: what the browser gets too */
	int quiet;
	int read_only; /* --read-only: the browser changes no store */
	mt_store *store;
};

/* One subcommand.  Usage and help text are generated from these fields, so what
 * `matorage help CMD` says is what the parser accepts. */
struct cli_cmd {
	const char *name;
	const char *usage; /* positional arguments, as shown after the name */
	const struct cli_option *options;
	int (*exec)(struct cli_ctx *ctx, const struct cli_args *args);
	const char *summary;
	int min_args; /* positional arguments accepted; max_args -1: no limit */
	int max_args;
};

extern const struct cli_cmd cli_cmd_put, cli_cmd_get, cli_cmd_cat, cli_cmd_ls, cli_cmd_info,
	cli_cmd_verify, cli_cmd_repair, cli_cmd_rm, cli_cmd_gc, cli_cmd_push, cli_cmd_pull, cli_cmd_sync,
	cli_cmd_remote, cli_cmd_search, cli_cmd_describe, cli_cmd_tui, cli_cmd_run, cli_cmd_rerun,
	cli_cmd_protect, cli_cmd_stats, cli_cmd_diff, cli_cmd_model, cli_cmd_ingest, cli_cmd_commit,
	cli_cmd_compact, cli_cmd_upgrade, cli_cmd_attach;

/* ---- cli-error.c ---- */

/* "matorage: MESSAGE" on stderr, one line; cli_fail reports a library error.
 * Both return CLI_FAIL. */
int cli_error(const char *fmt, ...) APP_PRINTF(1, 2);
int cli_fail(const mt_error *err);
/* "matorage: CMD: MESSAGE (see 'matorage help CMD')" on stderr; returns CLI_USAGE. */
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...) APP_PRINTF(2, 3);
/* An mt_log_fn for --debug: "matorage: debug: LINE", one line at a time from any thread. */
void cli_debug_line(void *ud, const char *line);

/* ---- cli-args.c ---- */

/* The global options (a table ending in a NULL name), the index of one by its long
 * name (-1: none), and recording one into ctx (CLI_USAGE after printing why). */
extern const struct cli_option cli_global_options[];
int cli_global_find(const char *name, size_t len);
int cli_global_set(struct cli_ctx *ctx, int index, const char *val);

/* Parse argv (after the command name) against cmd's options.  Options may come
 * before, between or after positional arguments; "--" ends them.  Returns CLI_OK,
 * CLI_USAGE after printing why, or CLI_HELP when --help was asked for (the caller
 * prints the help).  The global options also work here and go to ctx. */
int cli_args_parse(const struct cli_cmd *cmd, int argc, char **argv, struct cli_ctx *ctx,
		   struct cli_args *out);
void cli_args_free(struct cli_args *a);
/* Whether option `name` was given, the last value given, or all of them. */
int cli_has(const struct cli_args *a, const char *name);
const char *cli_get(const struct cli_args *a, const char *name);
const char *const *cli_get_all(const struct cli_args *a, const char *name, size_t *n);

/* ---- cli-values.c ---- */

/* Strict number options: absent leaves *out alone; a bad value, or one below `lo`,
 * is a usage error naming the option (a 0 that the library would take as "the
 * default" never passes silently).  Byte counts accept K, M, G, T suffixes
 * (powers of 1024). */
int cli_opt_u64(const struct cli_args *a, const char *name, uint64_t lo, uint64_t *out);
int cli_opt_bytes(const struct cli_args *a, const char *name, uint64_t lo, uint64_t *out);
int cli_opt_int(const struct cli_args *a, const char *name, int lo, int hi, int *out);

/* A row range as written: "A:B", "A:", ":B" or "N" (meaning N:N+1). */
struct cli_rows {
	uint64_t a, b;
	int has_a, has_b;
	const char *text;
};
int cli_opt_rows(const struct cli_args *a, const char *name, struct cli_rows *out);
/* The range within a version of `nrows` rows, or an error (CLI_FAIL) naming `what`. */
int cli_rows_resolve(const struct cli_rows *r, uint64_t nrows, const char *what, uint64_t *a,
		     uint64_t *b);

/* DATASET[@VERSION]; version NULL when not given.  An empty part is a usage error. */
struct cli_ref {
	char *dataset;
	char *version;
	int lazy; /* cli_reader opens it with mt_reader_open_lazy */
};
int cli_ref_parse(const struct cli_cmd *cmd, const char *arg, struct cli_ref *out);
void cli_ref_free(struct cli_ref *r);

/* ---- cli-store.c ---- */

/* The store named by --store (or the default), opened on first use; NULL after
 * printing the error.  Readers find a missing directory store an error and create
 * nothing; a command that writes new versions sets ctx->store_opts.create first. */
mt_store *cli_store(struct cli_ctx *ctx);
/* Another store (URL or remote name) with the global options, created when missing
 * only with `create` (a copy's destination); the caller closes it.  NULL after
 * printing the error. */
mt_store *cli_store_open(const struct cli_ctx *ctx, const char *url, int create);
/* Open dataset@version for reading; NULL after printing the error. */
mt_reader *cli_reader(struct cli_ctx *ctx, const struct cli_ref *ref);
/* The version the command's first argument names (DATASET[@VERSION]), open for
 * reading: 0, or the exit code (a usage error, or CLI_FAIL after printing the
 * error) with nothing left to free.  cli_ref_close closes r and frees ref. */
int cli_ref_open(struct cli_ctx *ctx, const struct cli_args *a, struct cli_ref *ref,
		 mt_reader **r);
/* The same with mt_reader_open_lazy: for a command that reads a few rows or
 * only what the root of a format-2 manifest says. */
int cli_ref_open_lazy(struct cli_ctx *ctx, const struct cli_args *a, struct cli_ref *ref,
		      mt_reader **r);
void cli_ref_close(struct cli_ref *ref, mt_reader *r);
/* Index of attribute `name` of r, or -1 after printing an error listing the attributes. */
int cli_attr_index(mt_reader *r, const char *name);

/* Every output file a command writes goes through here: mt_npy_create's rules (a
 * regular file replaced whole by a rename, a symbolic link written through, a
 * device or FIFO written as it is), and "-" for standard output. */
int cli_npy_create(const char *path, mt_dtype dtype, int rank, const uint64_t *shape,
		   mt_npy_writer **out, mt_error *err);

/* ---- cli-readahead.c ---- */

/* One batch of rows [first, first + n) of an attribute: their values back to back
 * (bytes of them) and, for a ragged attribute, the n row lengths in items (else
 * NULL).  A nonzero return stops the reading and is returned by cli_read_rows. */
typedef int (*cli_rows_fn)(void *ud, uint64_t first, uint64_t n, const void *values,
			   size_t bytes, const uint64_t *lengths);
/* Read rows [a, b) of attribute attr in batches of about 32 MiB (at least
 * one row, however long), so memory stays flat; library errors are printed.
 * Fixed-size rows come at an address congruent modulo 4096 to offset, the
 * file offset a writer puts the first row at (mt_npy_writer_offset), in
 * batches of whole 4 KiB blocks where rows allow, so that writer takes them
 * without a copy. */
int cli_read_rows(mt_reader *r, size_t attr, uint64_t a, uint64_t b, uint64_t offset,
		  cli_rows_fn fn, void *ud);

/* ---- cmd-sync.c ---- */

/* Options of push, pull and sync, and the copy they all run: spec is
 * DATASET[@VERSION] or NULL (everything); prints a summary line.  dst_name
 * names dst in the catalog, which learns what was copied. */
extern const struct cli_option cli_copy_options[];
int cli_copy_run(struct cli_ctx *ctx, const struct cli_args *a, mt_store *src, mt_store *dst,
		 const char *dst_name, const char *spec);

/* ---- cmd-model.c ---- */

/* NAME[@VERSION] when arg is "model:NAME[@VERSION]" (how rm, verify, gc and the
 * copies name a model), else NULL. */
const char *cli_model_spec(const char *arg);
/* The model forms of rm (NAME@VERSION), verify (NAME[@VERSION]: every checkpoint
 * when no version), gc (name NULL: every model; totals added to *nobjects and
 * *nbytes) and the copies (spec NULL: every model); each prints its result. */
int cli_model_rm(mt_store *s, const char *spec);
int cli_model_verify(const char *remote, mt_store *s, const char *spec, int threads);
/* What a verify or repair of models found goes to the catalog (bucket of
 * store s, listed as remote `remote`), its models synced first (a manifest
 * brought back is a checkpoint it may not list): a warning when it cannot.
 * create: make the catalog when there is none (a repair); a verify records
 * only into one that exists, as for datasets. */
void cli_model_record(const char *remote, mt_store *s, struct app_model_health *h, int create);
int cli_model_gc(mt_store *s, const char *name, int dry_run, uint64_t grace, uint64_t *nobjects,
		 uint64_t *nbytes);
int cli_model_copy(struct cli_ctx *ctx, mt_store *src, mt_store *dst, const char *spec);

/* ---- cli-safetensors.c ---- */

/* Write checkpoint spec (NAME[@VERSION]) of s to path as .safetensors; read
 * path as .safetensors into a new checkpoint of model `name` (keep: as
 * mt_ckpt_opts.keep).  Both print their result, or the error naming the file. */
int cli_safetensors_export(mt_store *s, const char *spec, const char *path);
int cli_safetensors_import(mt_store *s, const char *name, const char *path, int keep);

/* ---- cli-catalog.c ---- */

/* After a write: bring the catalog's view of `dataset` (NULL: every dataset) of store s,
 * called `name`, up to date; a failure is a warning on stderr, never an error. */
/* Open the catalog (create: make it when missing), saying once on stderr
 * when a damaged one was moved aside for a new one. */
int cli_catalog_open(int create, mt_catalog **c, mt_error *err);
/* After a call on *c failed: 1 when SQLite found the catalog malformed and a
 * new one is open in its place (said once), for the call to be tried again. */
int cli_catalog_heal(mt_catalog **c);
void cli_catalog_note(const char *name, mt_store *s, const char *dataset);
/* After writing versions of `dataset`: the catalog learns those versions alone (the
 * cost does not grow with the dataset's other versions); a failure is a warning. */
void cli_catalog_note_versions(const char *name, mt_store *s, const char *dataset,
			       const char *const *versions, size_t n);
void cli_catalog_note_version(const char *name, mt_store *s, const char *dataset,
			      const char *version);
/* After a check (verify, repair, protect): the catalog learns `dataset` of
 * store s (as cli_catalog_note), then what h found of its versions and
 * shards.  Quiet when there is no catalog yet and `create` is 0 (a verify
 * makes none); other failures are warnings. */
void cli_catalog_health(const char *name, mt_store *s, const char *dataset,
			struct app_health *h, int create);

/* ---- cmd-tui.c ---- */

/* The browser (src/tui) on the terminal, on dataset `open`'s versions when not
 * NULL; returns an exit status, CLI_FAIL after printing why it could not start or
 * why it ended (the terminal closed under it).  Callers check first that standard
 * input and output are a terminal. */
int cli_tui_open(struct cli_ctx *ctx, int read_only, const char *open);

/* ---- cmd-run.c ---- */

/* Options of run and rerun, and the run they share: `name` is shown in errors,
 * args are "KEY=VALUE"; prints the committed versions. */
extern const struct cli_option cli_script_options[];
int cli_script_run(struct cli_ctx *ctx, const struct cli_args *a, const char *name,
		   const void *code, size_t len, const char *const *args, size_t nargs);

/* ---- cmd-protect.c ---- */

/* The protection a command that writes versions asks for: its --parity K+M (a
 * usage error when malformed), else the default of the remote called `store`
 * (NULL, a URL or a remote's name); *k and *m are 0 when neither asks. */
int cli_parity_opt(const struct cli_args *a, const char *store, int *k, int *m);
/* Protect dataset@version (NULL: the newest) of s with k+m parity, with a progress
 * bar; prints one line saying what was done.  threads 0: one per CPU.  With `keep`,
 * a version protected with another K+M (one a copy brought) keeps it and that is
 * no error. */
int cli_protect(struct cli_ctx *ctx, mt_store *s, const char *dataset, const char *version,
		int k, int m, int threads, int keep);

/* ---- cmd-compact.c ---- */

/* mt_compact of dataset@version (NULL: the latest): the new version's name
 * to `out` (cap bytes) and on standard output, what was done on standard
 * error unless quiet; out is "" when it was compact already (no version).
 * CLI_OK, or CLI_FAIL reported. */
int cli_compact(struct cli_ctx *ctx, mt_store *s, const char *dataset, const char *version,
		const mt_writer_opts *o, char *out, size_t cap);

/* ---- progress.c ---- */

/* Set by SIGINT while a long operation runs; progress callbacks return it so the
 * library cancels, and loops in the commands check it between batches. */
extern volatile sig_atomic_t cli_interrupted;
/* Catch the first SIGINT (a second one kills as usual). */
void cli_catch_interrupt(void);
/* Catch the first `sig` with fn, without SA_RESTART (a second one kills as usual). */
void cli_catch_signal(int sig, void (*fn)(int));

/* A progress bar on stderr, drawn only when stderr is a terminal and not --quiet,
 * redrawn at most ten times a second.  Safe to update from several threads. */
struct cli_progress;
struct cli_progress *cli_progress_begin(const struct cli_ctx *ctx, const char *label,
					uint64_t total);
/* Record that `done` bytes (of `total`, 0: unchanged) are done and maybe redraw;
 * returns nonzero once interrupted. */
int cli_progress_update(struct cli_progress *p, uint64_t done, uint64_t total);
/* Count `unit` ("rows") instead of bytes. */
void cli_progress_unit(struct cli_progress *p, const char *unit);
/* Change the label ("committing") and redraw. */
void cli_progress_label(struct cli_progress *p, const char *label);
/* Erase the bar on screen, if any, before printing a line to stderr. */
void cli_progress_hide(void);
/* Clear the bar and free it; accepts NULL. */
void cli_progress_end(struct cli_progress *p);
/* An mt_progress_fn whose ud is a struct cli_progress (which may be NULL). */
int cli_progress_fn(void *ud, uint64_t done, uint64_t total);

#endif
