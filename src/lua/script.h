/* script.h — run a Lua preprocessing script (a recipe) in a sandbox with limits; what the CLI and TUI embed. */
#ifndef MT_SCRIPT_H
#define MT_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "matorage.h"

/*
 * A script runs in its own Lua 5.4 state with the `matorage` module loaded
 * (tensors, file readers, datasets).  Every dataset version it creates is
 * committed only when the whole script has run without error, each with the
 * script and its arguments as recipe; an error, a limit or a cancel commits
 * nothing.
 *
 * Threading: one thread opens, runs and closes a script (a TUI job's worker
 * thread); mt_script_cancel may be called from any other thread.
 */
typedef struct mt_script mt_script;

typedef struct mt_script_opts {
	/* The store the script's datasets live in when it names none
	 * (borrowed; must outlive the script).  NULL: the default store. */
	mt_store *store;
	/* Options for the stores a script opens by URL (NULL: defaults). */
	const mt_store_opts *store_opts;
	/* Without unsafe, the script may read and write files only under
	 * these directories, and has no os.execute, io.popen, package.loadlib,
	 * C modules or environment. */
	const char *const *allowed_paths;
	size_t nallowed;
	/* Without unsafe, matorage.store(URL) opens only the store the script
	 * runs against and these (URLs, paths or remote names; compared as
	 * mt_script_store_key forms them).  Copied by mt_script_open. */
	const char *const *allowed_stores;
	size_t nallowed_stores;
	int unsafe;
	/* Limits; 0: none.  mt_script_opts_init sets the defaults.  A limit
	 * that is reached stops the script for good: no pcall catches it, and
	 * nothing it wrote is committed. */
	uint64_t max_instructions; /* Lua VM instructions (default: none) */
	uint64_t max_memory;       /* bytes held by the state and its tensors
				    * (default: mt_script_default_memory) */
	uint64_t max_seconds;      /* wall-clock seconds (default: MT_SCRIPT_DEFAULT_SECONDS) */
	/* Rows done of total (0: unknown) while the script writes; return
	 * nonzero to cancel.  Called on the running thread. */
	mt_progress_fn progress;
	void *progress_ud;
	/* A line of the script's output (print, matorage.log), without the
	 * newline.  NULL: dropped. */
	void (*log)(void *ud, const char *line);
	void *log_ud;
	/* Part `part` of `parts` (1 <= part <= parts) of a run split in parts:
	 * every writer stages its part under `stage_id` (mt_writer_opts) instead
	 * of committing, and matorage.part() tells the script which part it is.
	 * parts 0: a whole run. */
	const char *stage_id;
	uint64_t part, parts;
} mt_script_opts;

/* The default time limit: an hour of wall-clock time. */
#define MT_SCRIPT_DEFAULT_SECONDS 3600

/* Zero options with the default limits. */
void mt_script_opts_init(mt_script_opts *o);
/* The default memory limit: a quarter of the physical memory, or of the
 * cgroup's memory limit when that is lower.  cgroup_file: the cgroup v2
 * memory.max to read (NULL: /sys/fs/cgroup/memory.max; absent or "max":
 * no cgroup limit). */
uint64_t mt_script_default_memory(const char *cgroup_file);
/* The form in which stores are compared (malloc'd; NULL when out of
 * memory): a remote's name becomes its URL; a path or file:// URL becomes
 * "file://" and the absolute path with "." and ".." applied, symbolic links
 * resolved as far as the path exists; an s3:// URL loses doubled and
 * trailing slashes.  Two names reach the same store when their keys are
 * equal; a store below another is another store. */
char *mt_script_store_key(const char *url);
int mt_script_open(const mt_script_opts *o, mt_script **out, mt_error *err);

/* Run `code` (len bytes; `name` is the file named in errors) with its
 * arguments ("KEY=VALUE" each, in the script as the table `arg`).  On a Lua
 * error err->message holds "FILE:LINE: message" and the traceback after a
 * newline (it may be cut at sizeof err->message); the code is MT_EINVAL for
 * a script error, MT_ECANCELED, MT_ERANGE for a limit.  Run once per handle. */
int mt_script_run(mt_script *s, const char *name, const void *code, size_t len,
		  const char *const *args, size_t nargs, mt_error *err);

/* The failed run's whole message with its traceback (borrowed; "" when
 * the run succeeded). */
const char *mt_script_error(const mt_script *s);

/* The versions the run committed, "DATASET@VERSION" each (borrowed). */
size_t mt_script_nversions(const mt_script *s);
const char *mt_script_version(const mt_script *s, size_t i);

/* Ask the running script to stop (from any thread): it fails with
 * MT_ECANCELED at its next instruction-count check or progress report. */
void mt_script_cancel(mt_script *s);
void mt_script_close(mt_script *s);

#endif
