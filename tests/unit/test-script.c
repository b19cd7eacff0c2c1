/* test-script.c — the embeddable recipe runner as the TUI will use it: callbacks, cancel from another thread, limits, commit-or-nothing, provenance. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "script.h"
#include "tap.h"

static char root[256];
static mt_store *store;

static const char *const WRITE_TWO =
	"local m = require('matorage')\n"
	"for _, name in ipairs({'a', 'b'}) do\n"
	"  local w = m.create(name, {attributes = {{name = 'x', dtype = 'int32', shape = {2}}},\n"
	"                           rows = 6})\n"
	"  for i = 1, 3 do w:append({x = m.full({2, 2}, i, 'int32')}) end\n"
	"  w:commit()\n"
	"end\n"
	"print('done', arg.k)\n";

struct seen {
	char log[256];
	uint64_t done, total;
	int calls;
	int cancel_at; /* cancel on this call (0: never) */
};

static void on_log(void *ud, const char *line)
{
	struct seen *s = ud;
	snprintf(s->log, sizeof s->log, "%s", line);
}

static int on_progress(void *ud, uint64_t done, uint64_t total)
{
	struct seen *s = ud;
	s->done = done;
	s->total = total;
	return ++s->calls == s->cancel_at;
}

/* TAP names are one line: keep the message's first (the traceback follows it). */
static void first_line(mt_error *err)
{
	err->message[strcspn(err->message, "\n")] = 0;
}

static int run(const char *code, const mt_script_opts *base, struct seen *seen,
	       const char *const *args, size_t nargs, mt_script **out, mt_error *err)
{
	mt_script_opts o = *base;
	o.store = store;
	o.log = on_log;
	o.log_ud = seen;
	o.progress = on_progress;
	o.progress_ud = seen;
	mt_script *s = NULL;
	int rc = mt_script_open(&o, &s, err);
	if (!rc)
		rc = mt_script_run(s, "test.lua", code, strlen(code), args, nargs, err);
	first_line(err);
	if (out)
		*out = s;
	else
		mt_script_close(s);
	return rc;
}

static size_t nversions(const char *ds)
{
	char **v = NULL;
	size_t n = 0;
	mt_error err;
	if (mt_store_versions(store, ds, &v, &n, &err))
		return 0;
	mt_strv_free(v, n);
	return n;
}

static void test_commit_and_provenance(void)
{
	mt_script_opts o;
	mt_script_opts_init(&o);
	struct seen seen = {0};
	mt_script *s = NULL;
	mt_error err = {0};
	const char *args[] = {"k=v1", "n=2"};
	int rc = run(WRITE_TWO, &o, &seen, args, 2, &s, &err);
	tap_ok(rc == 0, "a script that writes two datasets runs (%s)", err.message);
	tap_ok(mt_script_nversions(s) == 2 && !strcmp(mt_script_version(s, 0), "a@v1") &&
		       !strcmp(mt_script_version(s, 1), "b@v1"),
	       "it reports both committed versions");
	tap_ok(!strcmp(seen.log, "done\tv1"), "print goes to the log callback with the arguments "
	       "as arg (%s)", seen.log);
	tap_ok(seen.done == 6 && seen.total == 6, "progress counts rows of the expected total "
	       "(%llu of %llu)", (unsigned long long)seen.done, (unsigned long long)seen.total);
	mt_script_close(s);

	mt_reader *r = NULL;
	char *code = NULL;
	size_t len = 0;
	rc = mt_reader_open(store, "b", NULL, &r, &err);
	const mt_version_info *vi = rc ? NULL : mt_reader_info(r);
	tap_ok(vi && strlen(vi->recipe) == 64 && vi->nrecipe_args == 2 &&
		       !strcmp(vi->recipe_args[0], "k=v1") && !strcmp(vi->recipe_args[1], "n=2"),
	       "the version names its recipe and arguments in order");
	rc = rc ? rc : mt_reader_recipe(r, &code, &len, &err);
	tap_ok(rc == 0 && len == strlen(WRITE_TWO) && !memcmp(code, WRITE_TWO, len),
	       "the recipe reads back byte for byte");
	char sha[65] = "";
	if (vi)
		snprintf(sha, sizeof sha, "%s", vi->recipe);
	int32_t x[12];
	rc = mt_reader_read(r, 0, 0, 6, x, sizeof x, &err);
	tap_ok(rc == 0 && x[0] == 1 && x[4] == 2 && x[11] == 3, "the rows are what was appended");
	free(code);
	mt_reader_close(r);

	char path[512];
	snprintf(path, sizeof path, "%s/datasets/a/recipes/%s.lua", root, sha);
	tap_ok(access(path, F_OK) == 0, "both datasets hold the recipe object");
}

static void test_error_commits_nothing(void)
{
	mt_script_opts o;
	mt_script_opts_init(&o);
	struct seen seen = {0};
	mt_script *s = NULL;
	mt_error err = {0};
	const char *code = "local w = matorage.create('c', {attributes = {{name = 'x', dtype = 'int8'}}})\n"
			   "w:append({x = matorage.zeros({1}, 'int8')})\n"
			   "w:commit()\n"
			   "local t = nil\n"
			   "return t.field\n";
	int rc = run(code, &o, &seen, NULL, 0, &s, &err);
	tap_ok(rc == MT_EINVAL, "a script error is MT_EINVAL (%d)", rc);
	tap_ok(strstr(err.message, "test.lua:5:") != NULL, "the message names file:line (%s)",
	       err.message);
	tap_ok(strstr(mt_script_error(s), "stack traceback:") != NULL,
	       "the whole text has the traceback");
	tap_ok(mt_script_nversions(s) == 0 && nversions("c") == 0, "nothing was committed");
	rc = mt_script_run(s, "again.lua", "x = 1", 5, NULL, 0, &err);
	tap_ok(rc == MT_ESTATE, "a handle runs one script");
	mt_script_close(s);
}

struct canceler {
	mt_script *s;
	atomic_int started;
};

static void *cancel_later(void *arg)
{
	struct canceler *c = arg;
	while (!atomic_load(&c->started))
		usleep(1000);
	usleep(50000);
	mt_script_cancel(c->s);
	return NULL;
}

/* The script says when it reaches its loop, so the cancel lands there. */
static void on_loop(void *ud, const char *line)
{
	atomic_store(&((struct canceler *)ud)->started, 1);
}

static void test_cancel_from_another_thread(void)
{
	mt_script_opts o;
	mt_script_opts_init(&o);
	o.store = store;
	struct canceler c = {0};
	o.log = on_loop;
	o.log_ud = &c;
	mt_script *s = NULL;
	mt_error err = {0};
	int rc = mt_script_open(&o, &s, &err);
	c.s = s;
	pthread_t t;
	pthread_create(&t, NULL, cancel_later, &c);
	/* The pcall would swallow a cancel that raised only once. */
	const char *code = "local w = matorage.create('d', {attributes = {{name = 'x', dtype = 'int8'}}})\n"
			   "w:append({x = matorage.zeros({1}, 'int8')})\n"
			   "w:commit()\n"
			   "print('looping')\n"
			   "while true do pcall(function() while true do end end) end\n";
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = rc ? rc : mt_script_run(s, "loop.lua", code, strlen(code), NULL, 0, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	first_line(&err);
	pthread_join(t, NULL);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	tap_ok(rc == MT_ECANCELED, "mt_script_cancel from another thread stops a busy loop (%d)", rc);
	tap_ok(secs < 5, "promptly (%.2f s)", secs);
	tap_ok(strstr(err.message, "loop.lua:5") && strstr(err.message, "canceled"),
	       "naming where, though the script catches errors (%s)", err.message);
	tap_ok(nversions("d") == 0, "a canceled run commits nothing");
	mt_script_close(s);
}

static void test_progress_cancels(void)
{
	mt_script_opts o;
	mt_script_opts_init(&o);
	struct seen seen = {.cancel_at = 2};
	mt_error err = {0};
	int rc = run(WRITE_TWO, &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_ECANCELED, "a progress callback returning nonzero cancels (%d: %s)", rc,
	       err.message);
	tap_ok(nversions("a") == 1 && nversions("b") == 1, "and commits nothing");
}

static void test_limits(void)
{
	mt_script_opts o;
	mt_script_opts_init(&o);
	struct seen seen = {0};
	mt_error err = {0};
	o.max_instructions = 1000000;
	int rc = run("while true do end", &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "instruction limit"),
	       "the instruction limit stops a loop (%s)", err.message);
	mt_script_opts_init(&o);
	o.max_memory = 8 << 20;
	rc = run("local t = {} for i = 1, 1e7 do t[i] = {} end", &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_ERANGE, "the memory limit stops a hog (%d: %s)", rc, err.message);
	rc = run("matorage.zeros({1024, 1024, 16})", &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "memory limit"),
	       "tensors count against it (%s)", err.message);
	/* The code names the error that ended the run, not one the script
	 * caught before: else a later failure passes for the limit. */
	rc = run("assert(not pcall(matorage.zeros, {1024, 1024, 16}))\n"
		 "error('a failure of its own')", &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "a failure of its own"),
	       "a limit error the script caught does not decide its later failure (%d: %s)", rc,
	       err.message);
	rc = run("assert(not pcall(matorage.zeros, {1024, 1024, 16}))", &o, &seen, NULL, 0, NULL,
		 &err);
	tap_ok(rc == 0, "nor fail a script that goes on to end well (%d)", rc);
	rc = run("local ok, e = pcall(matorage.zeros, {1024, 1024, 16})\nerror(e, 0)", &o, &seen,
		 NULL, 0, NULL, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "memory limit"),
	       "the limit error raised again still ends the run as the limit (%d: %s)", rc,
	       err.message);
	rc = run("pcall(function() local t = {} for i = 1, 1e7 do t[i] = {} end end)\n"
		 "error('after')", &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "after"),
	       "nor does a caught limit hit inside Lua (%d: %s)", rc, err.message);
	mt_script_opts_init(&o);
	const char *bad = "/nonexistent/dir";
	o.allowed_paths = &bad;
	o.nallowed = 1;
	mt_script *s = NULL;
	rc = mt_script_open(&o, &s, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "/nonexistent/dir"),
	       "an allowed path that does not exist is refused (%s)", err.message);
}

int main(void)
{
	snprintf(root, sizeof root, "%s/mt-script.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	mt_error err;
	if (mt_store_open(root, &store, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	test_commit_and_provenance();
	test_error_commits_nothing();
	test_cancel_from_another_thread();
	test_progress_cancels();
	test_limits();
	mt_store_close(store);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", root);
	return tap_done();
}
