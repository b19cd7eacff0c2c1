/* tui.h — the browser's shared types: the key table, views as vtables, the view stack, the prompt, jobs on worker threads. */
#ifndef MT_TUI_H
#define MT_TUI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "app.h"
#include "matorage-catalog.h"
#include "display.h"
#include "tui-main.h"

struct view;

/* ---- keys (keys.c) ---- */

/* What a key asks for; views act on the ones they know. */
enum tui_action {
	ACT_NONE,
	ACT_UP, ACT_DOWN, ACT_PGUP, ACT_PGDN, ACT_HOME, ACT_END, ACT_LEFT, ACT_RIGHT,
	ACT_OPEN, ACT_BACK, ACT_ESC,
	ACT_SEARCH, ACT_NEXT, ACT_PREV, ACT_FILTER, ACT_COMMAND, ACT_HELP, ACT_QUIT, ACT_REDRAW,
	ACT_SYNC, ACT_JOBS, ACT_FIND, ACT_SHARDS, ACT_ATTRS, ACT_MATRIX, ACT_VERIFY, ACT_COPY,
	ACT_TAGS, ACT_DESCRIBE, ACT_DELETE, ACT_GC, ACT_CANCEL, ACT_IMAGE, ACT_ROW_NEXT, ACT_ROW_PREV,
	ACT_ROW_GOTO, ACT_ERROR, ACT_REPAIR, ACT_PROTECT, ACT_STATS, ACT_DIFF, ACT_SORT, ACT_SOURCE,
	ACT_EXPORT, ACT_MODELS, ACT_PARENT, ACT_FIRST_COL, ACT_LAST_COL, ACT_FREQ, ACT_FRAGMENTS,
};

/* Where a binding applies (a view says which it is). */
enum {
	K_LIST = 0x01,    /* catalog lists */
	K_VERSION = 0x02, /* a version's details */
	K_MATRIX = 0x04,
	K_JOBS = 0x08,
	K_TEXT = 0x10,    /* help, logs */
	K_ACT = 0x20,     /* lists of versions, or of a version's shards or attributes */
	K_GC = 0x40,      /* lists whose rows (or parent) gc can sweep: buckets, datasets, versions */
	K_ALL = 0x107f,   /* every kind of view (K_TENSOR too) */
	K_WRITE = 0x80,   /* changes a store: not in --read-only */
	K_ATTRS = 0x100,  /* a version's attributes */
	K_SORT = 0x200,   /* lists that sort (buckets, datasets, versions, shards) */
	K_BUCKET = 0x400, /* a bucket's datasets or models */
	K_CKPT = 0x800,   /* a model's checkpoints */
	K_TENSOR = 0x1000, /* the matrix viewer on a tensor: no rows, statistics or export */
};

struct tui_key {
	int key, alt;     /* a key and an optional second one (0: none) */
	const char *label; /* how the footer and help spell the key */
	const char *name;  /* a word for the footer */
	const char *help;  /* a line for the help screen */
	enum tui_action action;
	int scope;         /* K_* bits */
	int footer;        /* in the footer of the views in scope: 1 always, 2 when there is room */
};
extern const struct tui_key tui_keys[];

/* The action of key k in a view of kind `scope` (ACT_NONE: none). */
enum tui_action tui_key_action(const struct tui *t, int k, int scope);
/* The binding of key k that --read-only turns off in a view of kind `scope`
 * (NULL: none), to say why nothing happens. */
const struct tui_key *tui_key_refused(const struct tui *t, int k, int scope);
/* The binding of key k in any view (NULL: none), to say it does nothing here. */
const struct tui_key *tui_key_entry(int k);
/* Draw the footer line for a view of kind `scope`. */
void tui_footer(const struct tui *t, int y, int scope);
/* The help text, a line per binding, generated from the table. */
struct view *tui_help_view(struct tui *t);

/* ---- views ---- */

/* What a key handler did. */
enum { V_IGNORED = 0, V_HANDLED = 1, V_CLOSE = 2 };

struct view_ops {
	const char *kind; /* for the title */
	int scope;        /* K_* bits its keys come from */
	/* Draw into rows [top, bottom) of the display. */
	void (*draw)(struct tui *t, struct view *v, int top, int bottom);
	/* React to an action (or raw key k for text entry); V_*. */
	int (*key)(struct tui *t, struct view *v, enum tui_action a, int k);
	/* Data below changed (a job finished, a sync): reload. */
	void (*reload)(struct tui *t, struct view *v);
	/* Keep only rows containing text ("": all); NULL where that makes no sense. */
	void (*filter)(struct tui *t, struct view *v, const char *text);
	/* A click on screen line y (NULL: clicks do nothing there). */
	void (*click)(struct tui *t, struct view *v, int y);
	void (*free)(struct view *v);
};

struct view {
	const struct view_ops *ops;
	int scope;         /* K_* bits of its keys when they depend on its rows (0: ops->scope) */
	char title[256];   /* breadcrumb part */
	unsigned serial;   /* identifies the view to a prompt answered later */
};

/* ---- jobs (jobs.c) ---- */

enum { JOB_RUNNING, JOB_OK, JOB_FAILED, JOB_CANCELED };

/*
 * A job is a worker thread doing store I/O: a run function, progress
 * (done of total, in `unit`s) that also carries the cancel request, and log
 * lines.  The UI thread reads these while it runs and calls `finish` on its
 * own thread once it ends.  Verify, copy, sync, gc, edits and deletes are
 * jobs; so is a Lua recipe (`:run`, recipe.c).
 */
struct tui_job {
	unsigned id;
	char kind[16];
	char title[160];
	const char *unit;      /* "bytes", "shards", "datasets" */
	atomic_uint_fast64_t done, total;
	atomic_int cancel;
	atomic_int state;      /* JOB_* */
	struct timespec started;
	double seconds;        /* when it ended */
	char result[512];      /* one line: what happened */
	pthread_mutex_t lock;  /* guards log */
	char **log;
	size_t nlog;
	int64_t catalog_id;
	pthread_t thread;
	int joined;
	struct tui *t;
	/* Runs on the worker: returns 0 or an MT_E code, fills result. */
	int (*run)(struct tui_job *j);
	/* Runs on the UI thread after the job ended (may be NULL). */
	void (*finish)(struct tui *t, struct tui_job *j);
	void *arg;
	void (*free_arg)(void *arg);
	/* Called by tui_job_cancel on the UI thread, for a run function that
	 * does not report progress often enough to see j->cancel (may be NULL). */
	void (*on_cancel)(struct tui_job *j);
	int quiet;             /* a view's own reading: no status line, not listed */
	unsigned from_view;    /* the view on top when it started (its serial) */
	struct view *view;     /* its result, waiting in the jobs list (tui_job_show) */
};

/* Start a job (takes arg); NULL when the thread could not start (status set). */
struct tui_job *tui_job_start(struct tui *t, const char *kind, const char *title,
			      const char *unit, int (*run)(struct tui_job *j),
			      void (*finish)(struct tui *t, struct tui_job *j), void *arg,
			      void (*free_arg)(void *arg));
/* Show the view a finished job made: at once while the view it was started
 * from is still on top, else it waits in the jobs list (Enter opens it), so a
 * job never pulls the user away from where they went meanwhile. */
void tui_job_show(struct tui *t, struct tui_job *j, struct view *v);
/* Open the jobs list, going back to it when it is open already (the
 * breadcrumb stays the path from the root). */
void tui_jobs_open(struct tui *t);
/* A failure as the job's one-line result; returns the code. */
int tui_job_fail(struct tui_job *j, const mt_error *err);
/* An mt_progress_fn whose ud is the job: records progress, returns cancel. */
int tui_job_progress(void *ud, uint64_t done, uint64_t total);
void tui_job_log(struct tui_job *j, const char *fmt, ...) APP_PRINTF(2, 3);
/* Ask a running job to stop. */
void tui_job_cancel(struct tui_job *j);
/* Called by the loop: ends finished jobs (their done callbacks run here);
 * returns nonzero when anything changed on screen. */
int tui_jobs_poll(struct tui *t);
/* Progress as text: "37% 120 MiB of 1 GiB, 40 MiB/s, ETA 0:21". */
void tui_job_progress_text(const struct tui_job *j, char *buf, size_t cap);
/* Cancel every job and wait for them, then free them (quitting). */
void tui_jobs_stop(struct tui *t);
/* Cancel every job; 1 once all have ended, 0 if some still run after ms. */
int tui_jobs_wait(struct tui *t, int ms);
struct view *tui_jobs_view(struct tui *t);
/* Open the store the catalog calls `remote` (stores.c; on a worker thread
 * only: this may wait on the network). */
mt_store *tui_open_store(struct tui_job *j, const char *remote, mt_error *err);
/* A version's place copied (to keep past the row it came from): remote,
 * URL, dataset and version; no shard. */
void tui_ref_copy(mt_catalog_ref *dst, const mt_catalog_ref *src);
/* Open the bucket a catalog row lives in, even when its remote points
 * elsewhere now (*stale set then): actions act on the bucket shown. */
mt_store *tui_open_bucket(struct tui_job *j, const mt_catalog_ref *ref, int *stale,
			  mt_error *err);

/* ---- the application (tui.c) ---- */

/* Words offered by Tab (completion candidates) or remembered (history). */
struct tui_words {
	char **v;
	size_t n, cap;
};
void tui_words_add(struct tui_words *w, const char *s);
void tui_words_free(struct tui_words *w);

/* Each kind of prompt keeps its own history. */
enum { TUI_HIST_OTHER, TUI_HIST_COMMAND, TUI_HIST_SEARCH, TUI_HIST_FILTER, TUI_HIST_COPY,
       TUI_HIST_N };

struct tui_prompt {
	int active;
	char label[700];
	char text[512];
	size_t cur;        /* the cursor, a byte offset into text */
	int selected;      /* the text given at the start, untouched: typing replaces it */
	int hist;          /* TUI_HIST_* */
	int hpos;          /* the history entry shown, -1: the line being typed */
	char saved[512];   /* the line being typed while browsing the history */
	char hint[512];    /* completion candidates, shown on the footer line */
	/* Called with what was typed (Enter), on the UI thread; it owns arg
	 * from then on.  Esc frees arg with free_arg instead. */
	void (*submit)(struct tui *t, const char *text, void *arg);
	void *arg;
	void (*free_arg)(void *arg);
	/* Optional: called after every edit with the text, and with NULL when
	 * the prompt is canceled (a filter applies as one types, and Esc puts
	 * the old one back). */
	void (*change)(struct tui *t, const char *text, void *arg);
	/* Optional: Tab's candidates for the last word of `before` (the text
	 * up to the cursor); the editor keeps those that start with it. */
	void (*complete)(struct tui *t, const char *before, struct tui_words *out, void *arg);
};

struct tui {
	const struct app_ctx *app; /* the stores the command line chose */
	mt_catalog *cat;
	int read_only;
	int quit;
	int confirm_quit; /* q was pressed with jobs running: the next key answers */
	char question[300];
	int dirty, full_redraw;
	struct view **stack;
	size_t depth, cap;
	unsigned next_serial;
	struct tui_prompt prompt;
	struct tui_words history[TUI_HIST_N];
	char status[512];
	int status_error;
	unsigned status_view; /* the view the status was given on: it shows only there,
			       * and leaving that view clears it */
	char last_error[1024]; /* the last error in full, lines and all (E shows it) */
	size_t last_error_job; /* 1 + the index of the job it came from, 0: none */
	struct tui_job **jobs;
	size_t njobs;
	unsigned next_job;
	tui_recipe_fn recipe; /* `:run`; NULL where no Lua runner is linked */
	long watched_at;       /* when the catalog's files were last looked at (s) */
	uint64_t catalog_sig;  /* their times and sizes then */
};

/* Open and close the application (catalog at cat_path, NULL: default); 0 or an MT_E code. */
int tui_init(struct tui *t, const struct app_ctx *app, const char *cat_path, int read_only,
	     mt_error *err);
void tui_free(struct tui *t);
/* One key (as disp_key returns it). */
void tui_key(struct tui *t, int k);
/* Draw everything into the display buffer. */
void tui_draw(struct tui *t);
/* Open the views down to dataset's versions in the command line's store;
 * MT_ENOTFOUND (status set) when the catalog does not know it. */
int tui_goto_dataset(struct tui *t, const char *dataset);
/* The live refresh (watch.c): reload the lists when the catalog's files
 * changed (called by the loop; it looks once a second), and a quiet job
 * syncing the command line's store every few seconds. */
void tui_watch_catalog(struct tui *t);
void tui_watch_start(struct tui *t);
/* Start the background refresh of every store (startup, `:sync`). */
void tui_sync_all(struct tui *t);

void tui_push(struct tui *t, struct view *v);
void tui_pop(struct tui *t);
struct view *tui_top(struct tui *t);
/* The view with this serial if it is still open. */
struct view *tui_find_view(struct tui *t, unsigned serial);
void tui_reload_all(struct tui *t);
void tui_status(struct tui *t, int error, const char *fmt, ...) APP_PRINTF(3, 4);
/* Ask for a line of text; submit gets it on Enter (Esc drops it). */
void tui_ask(struct tui *t, const char *label, const char *initial,
	     void (*submit)(struct tui *t, const char *text, void *arg), void *arg,
	     void (*free_arg)(void *arg));
/* The line editor (prompt.c): a key while the prompt is open, and its lines. */
void tui_prompt_key(struct tui *t, int k);
void tui_prompt_draw(struct tui *t, int y);
void tui_prompt_footer(struct tui *t, int y);
void tui_history_free(struct tui *t);
/* Tab's candidates (complete.c), as tui_prompt.complete functions: the ':'
 * command line, remote names, the catalog's dataset names; and the
 * commands themselves (a NULL-ended list). */
void tui_complete_command(struct tui *t, const char *before, struct tui_words *out, void *arg);
void tui_complete_remotes(struct tui *t, const char *before, struct tui_words *out, void *arg);
void tui_complete_datasets(struct tui *t, const char *before, struct tui_words *out, void *arg);
/* Local paths (the last word of before). */
void tui_complete_path(struct tui *t, const char *before, struct tui_words *out, void *arg);
const char *const *tui_command_names(void);
/* The last error in full: its job's log, or the message (E, :error). */
void tui_show_error(struct tui *t);
/* Quit, or with jobs running ask first (the next key answers). */
void tui_quit(struct tui *t);
/* Run a ':' command line. */
void tui_command(struct tui *t, const char *line);

/* ---- views (view-*.c) ---- */

/* A catalog list: remotes at the root, or a level under a parent row. */
struct view *tui_list_view(struct tui *t, int level, int64_t parent, const char *title);
/* The catalog level and row id under a catalog list's cursor: 1, or 0 when
 * `v` is no catalog list or its list is empty. */
int tui_list_cursor(struct view *v, int *level, int64_t *id);

/* A list's column header and how its text reads (columns.c). */
/* How a column reads: text, a count or byte size (right-aligned, bytes in
 * units), a flag (1|0) as online|offline or yes|no, a shard's check ('-'
 * where it was never verified), a protection (K+M, "none"), a share as a
 * percentage, a health state ("lost" for unrepairable, "never checked"), a tensor
 * its parent holds too (1|0) as shared|new ('-' where the parent is unknown). */
enum { COL_TEXT, COL_COUNT, COL_BYTES, COL_ONLINE, COL_YES, COL_CHECK, COL_PROTECT, COL_SHARE,
       COL_HEALTH, COL_SHARED };
struct tui_col {
	const char *name; /* upper case */
	int kind;
};
/* The columns of a catalog level's rows (static); NULL for an unknown level. */
const struct tui_col *tui_columns(int level, size_t *n);
/* The configured remotes (mt_remotes_list), for a cell that names a store
 * by its remote's name rather than its URL. */
struct tui_remotes {
	mt_remote *v;
	size_t n;
};
/* The source a health note ends with (app-health.c: "... rebuilt from
 * SOURCE", or with !rebuilt_only "... repairable from SOURCE"), or NULL;
 * *store: whether SOURCE is another store (a URL or a path), not "parity". */
const char *tui_note_source(const char *note, int rebuilt_only, int *store);
/* Column c of a catalog row of `level` as the browser shows it: a placeholder
 * where there is no value, a flag in words, a ratio with two decimals (byte
 * sizes are put in units by the list), a store by its remote's name (rm may
 * be NULL).  The text is static, the row's or buf's. */
const char *tui_cell(int level, const char *const *cols, size_t c, const struct tui_remotes *rm,
		     char *buf, size_t cap);
/* How many columns the catalog gives for a row of `level` (the headers may
 * show them in another order, or two in one cell). */
size_t tui_catalog_ncols(int level);
/* The colour role of a catalog row of `level`: offline remotes, the health
 * of versions and shards. */
int tui_row_role(int level, const char *const *cols);
/* The orders a catalog list sorts in (sort.c): o cycles through those its
 * level has, back to the catalog's order. */
enum { TUI_SORT_NONE, TUI_SORT_NAME, TUI_SORT_SIZE, TUI_SORT_DATE, TUI_SORT_HEALTH, TUI_SORT_N };
/* The catalog column a level's rows sort on in that order; -1: none. */
int tui_sort_column(int level, int sort);
/* The order after `sort` that the level has (TUI_SORT_NONE after the last). */
int tui_sort_next(int level, int sort);
const char *tui_sort_name(int sort);
/* How two rows' catalog values of the sort column compare: names in version
 * order (v2 < v10), sizes and dates largest and newest first, health worst first. */
int tui_sort_cmp(int sort, const char *a, const char *b);
/* Lines of text (help, an error), wrapped to the screen. */
struct view *tui_text_view(const char *title, char **lines, size_t n);
/* Replace a text view's title and lines (takes lines, as tui_text_view does). */
void tui_text_view_set(struct view *v, const char *title, char **lines, size_t n);
/* Job t->jobs[job]'s state and log, live while it runs. */
struct view *tui_job_log_view(struct tui *t, size_t job);
/* Rows of attribute attr of ref's version to a local .npy file (export.c):
 * the range (row: the one on screen) and the path asked for, an existing
 * file replaced only when 'overwrite' is typed, the writing a job.  A local
 * file changes no store, so --read-only allows it. */
void tui_export_action(struct tui *t, const mt_catalog_ref *ref, const char *attr, uint64_t row);
/* A typed row range: "" (*all), "A" (one row), "A:B", "A:" (to the last:
 * *end UINT64_MAX), ":B"; 0, or -1 when it is none of those. */
int tui_export_range(const char *text, int *all, uint64_t *first, uint64_t *end);
/* The values of attribute `attr` of a version, a row at a time. */
struct view *tui_matrix_view(struct tui *t, const mt_catalog_ref *ref, const char *attr);
/* The values of tensor `key` of the checkpoint ref names (ref->model,
 * ref->version), read whole through mt_ckpt_read: a 2-D tensor as its
 * grid, a 1-D one as one row. */
struct view *tui_tensor_view(struct tui *t, const mt_catalog_ref *ref, const char *key);

/* Checkpoint actions (models.c): D deletes the checkpoint (its name
 * typed to confirm), v verifies its tensors; each a job. */
void tui_ckpt_action(struct tui *t, enum tui_action a, int64_t ckpt_id);

/* Statistics of attribute attr of the version ref names (stats.c): from the
 * catalog when kept there, else a job with progress that keeps them there;
 * either way a view of them opens.  The text of what the catalog holds, for
 * the matrix viewer's line ("" when nothing). */
void tui_stats_start(struct tui *t, const mt_catalog_ref *ref, const char *attr);
void tui_stats_line(struct tui *t, const mt_catalog_ref *ref, const char *attr, char *buf,
		    size_t cap);
/* The statistics the catalog holds of attr (NULL: none; *computed, when
 * not NULL: when, malloc'ed); mt_stats_free them. */
mt_stats *tui_stats_cached(struct tui *t, const mt_catalog_ref *ref, const char *attr,
			   char **computed);
/* s in the sheet of a vector attribute: its per-column statistics computed
 * by a job that keeps them in the catalog and opens nothing (the sheet
 * shows them under its columns); when the catalog has them, their view. */
void tui_stats_columns(struct tui *t, const mt_catalog_ref *ref, const char *attr);
/* The frequency view of an integer attribute of one value a row: values by
 * count, largest first, with shares and bars under a line of class balance;
 * from the catalog's statistics, else a job computes them first. */
void tui_freq_start(struct tui *t, const mt_catalog_ref *ref, const char *attr);

/* Version actions shared by lists and details (actions.c).  Each starts a job,
 * a prompt or a view; what goes wrong shows on the status line, so they return
 * nothing. */
void tui_version_action(struct tui *t, enum tui_action a, int64_t version_id);
/* The version against another of its dataset (asked for; its parent by
 * default): shards shared, new and removed, read by a job (diff.c). */
void tui_diff_action(struct tui *t, int64_t version_id);
/* A shard's chunk layout, read by a job and shown when it is in. */
void tui_chunks_action(struct tui *t, int64_t shard_id);
/* Dataset/bucket-level gc with a preview (read-only: the preview alone);
 * grace in seconds (-1: the default hour).  The confirmation takes 'delete',
 * or 'delete now' for no grace at all. */
void tui_gc_action(struct tui *t, int level, int64_t id);
void tui_gc_start(struct tui *t, int level, int64_t id, int64_t grace);
/* ':' commands that act as the CLI's on DATASET[@VERSION] of the default
 * store (command.c): diff, copy, verify, rm, gc, describe, tags, export;
 * 0 when word is none of them. */
int tui_cli_command(struct tui *t, const char *word, const char *rest);
/* Diff the version with `other` of its dataset at once (NULL: ask). */
void tui_diff_start(struct tui *t, int64_t version_id, const char *other);

/* Repair and protection (repair.c).  A repair of the version as a job with
 * a log of each object rebuilt or lost; parity K+M added to it (parity
 * NULL: asked for); both refused, saying why, when read-only. */
void tui_repair_start(struct tui *t, int64_t version_id);
void tui_protect_start(struct tui *t, int64_t version_id, const char *parity);
/* ":repair DATASET[@VERSION]" and ":protect DATASET[@VERSION] K+M" (word is
 * the command, rest its arguments), in the default store. */
void tui_heal_command(struct tui *t, const char *word, const char *rest);
/* The shards a verify's repair check read where the verify could not (a
 * fragment it could not load stops it before the first shard): sound,
 * damaged, and those held by fragments nothing can rebuild, which no check
 * reaches; r is the version's reader, for the fragments' shard counts. */
struct tui_dry_count {
	const mt_reader *r;
	uint64_t sound, bad, unchecked;
};
/* After a verify job's check of ref (verify_rc: 0 or MT_ECORRUPT): whether
 * damage is repairable and from what (a repair that writes nothing), into
 * the log, the catalog and `state`; the shards that repair read into dry
 * (NULL: not wanted). */
void tui_verify_health(struct tui_job *j, mt_store *s, const mt_catalog_ref *ref, int verify_rc,
		       uint64_t shards, mt_verify_memo *memo, struct tui_dry_count *dry,
		       char *state, size_t cap);
/* Shards a verify job found sound and damaged, and those it could not
 * check (their fragment lost); `stopped`: versions whose verify a fragment
 * stopped, their counts the repair check's (struct tui_dry_count); memo
 * (NULL: none) keeps what it read, so a shard object many versions list is
 * read once. */
struct tui_verify_count {
	uint64_t ok, bad, unchecked;
	size_t stopped;
	mt_verify_memo *memo;
};
/* Verify dataset@version (ref) in s as part of job j (actions.c): a line
 * and a job result for each damaged shard (naming the version when named),
 * every shard's result written to the catalog in one transaction, then
 * tui_verify_health into health.  Progress goes to j from base bytes on.
 * Returns 0, MT_ECORRUPT (damage found) or the error that stopped it. */
int tui_verify_version(struct tui_job *j, mt_store *s, const mt_catalog_ref *ref, int named,
		       uint64_t base, struct tui_verify_count *n, char *health, size_t cap,
		       mt_error *err);
/* v, R, :verify and :repair on a dataset or bucket row (level
 * MT_CAT_DATASETS or MT_CAT_BUCKETS): every version of the dataset, or of
 * every dataset of the bucket, as one job with progress and a summary;
 * verify's log has a line per damaged shard and version, repair's one per
 * object rebuilt or lost.  A repair is refused, saying why, when read-only. */
void tui_verify_all(struct tui *t, int level, int64_t id);
void tui_repair_all(struct tui *t, int level, int64_t id);
/* The catalog's row of dataset in the default store; 0 when none. */
int64_t tui_find_dataset(struct tui *t, const char *dataset);
/* The catalog's row of the default store's bucket; 0 when not synced. */
int64_t tui_find_bucket(struct tui *t);

/* Text laid out (text.c): tabs expanded to 8-column stops (malloc'ed); the
 * next piece of s that fits in w columns (*len bytes; returns where the
 * following piece starts); the lines s takes in w columns; s drawn wrapped
 * from (y, x) on at most maxlines lines (returns the lines used). */
char *tui_expand_tabs(const char *s);
const char *tui_wrap_next(const char *s, int w, size_t *len);
int tui_wrap_lines(const char *s, int w);
int tui_text_wrap(int y, int x, int w, int maxlines, int role, const char *s);

/* Draw text with "…" when cut; returns the columns used. */
int tui_text_cut(int y, int x, int w, int role, const char *s);

#endif
