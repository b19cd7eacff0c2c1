/* test-script.c — the embeddable recipe runner as the TUI will use it: callbacks, cancel from another thread, limits, commit-or-nothing, provenance. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "script.h"
#include "tap.h"
#include "tap-store.h"

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
	/* A limit is sticky: whatever the script does after catching it, the
	 * run fails as the limit and commits nothing. */
	rc = run("assert(not pcall(matorage.zeros, {1024, 1024, 16}))\n"
		 "error('a failure of its own')", &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "recipe stopped: memory limit 8.0 MiB "
					  "reached (raise with --max-memory)"),
	       "a caught memory limit still ends the run, naming the limit (%d: %s)", rc,
	       err.message);
	rc = run("pcall(matorage.zeros, {1024, 1024, 16})\nlocal x = 0\nx = x + 1", &o, &seen,
		 NULL, 0, NULL, &err);
	tap_ok(rc == MT_ERANGE, "a script that catches it and would end well fails (%d)", rc);
	size_t before = nversions("caught");
	rc = run("local m = require('matorage')\n"
		 "pcall(function() local t = {} for i = 1, 1e7 do t[i] = {} end end)\n"
		 "pcall(function() local t = {} for i = 1, 1e7 do t[i] = {} end end)\n"
		 "local w = m.create('caught', {attributes = {{name = 'x', dtype = 'int32'}}})\n"
		 "w:append({x = m.full({1}, 1, 'int32')})\nw:commit()", &o, &seen, NULL, 0, NULL,
		 &err);
	tap_ok(rc == MT_ERANGE && nversions("caught") == before,
	       "twice caught, then a commit: nothing committed (%d: %s)", rc, err.message);
	mt_script_opts_init(&o);
	o.max_instructions = 1000000;
	rc = run("while true do pcall(function() while true do end end) end", &o, &seen, NULL, 0,
		 NULL, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "instruction limit 1000000 reached"),
	       "a caught instruction limit ends the run (%s)", err.message);
	mt_script_opts_init(&o);
	o.max_seconds = 1;
	time_t t0 = time(NULL);
	rc = run("local w = 0\nwhile true do pcall(function() while true do w = w + 1 end end) end",
		 &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_ERANGE && strstr(err.message, "time limit 1 s reached (raise with "
					  "--max-time)") && time(NULL) - t0 < 10,
	       "the time limit stops a loop that catches it (%s)", err.message);
	mt_script_opts_init(&o);
	const char *bad = "/nonexistent/dir";
	o.allowed_paths = &bad;
	o.nallowed = 1;
	mt_script *s = NULL;
	rc = mt_script_open(&o, &s, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "/nonexistent/dir"),
	       "an allowed path that does not exist is refused (%s)", err.message);
}

static void test_defaults(void)
{
	mt_script_opts o;
	mt_script_opts_init(&o);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t phys = (uint64_t)pages * (uint64_t)page;
	uint64_t def = mt_script_default_memory(NULL);
	tap_ok(o.max_memory == def && def > 0 && def <= phys / 4,
	       "a run has a default memory limit, at most a quarter of RAM (%llu of %llu)",
	       (unsigned long long)def, (unsigned long long)phys);
	tap_ok(o.max_seconds == MT_SCRIPT_DEFAULT_SECONDS && o.max_seconds == 3600,
	       "and a default time limit of an hour (%llu s)", (unsigned long long)o.max_seconds);
	char path[300];
	snprintf(path, sizeof path, "%s/memory.max", root);
	FILE *f = fopen(path, "w");
	fputs("1073741824\n", f);
	fclose(f);
	uint64_t want = (phys < (1ull << 30) ? phys : 1ull << 30) / 4;
	tap_ok(mt_script_default_memory(path) == want, "a cgroup limit below RAM is what is "
	       "divided (%llu)", (unsigned long long)mt_script_default_memory(path));
	f = fopen(path, "w");
	fputs("max\n", f);
	fclose(f);
	tap_ok(mt_script_default_memory(path) == phys / 4, "a cgroup without a limit leaves RAM");
}

static void test_stores(void)
{
	char other[300], url[320], code[800];
	snprintf(other, sizeof other, "%s/other", root);
	snprintf(url, sizeof url, "file://%s", other);
	mt_script_opts o;
	mt_script_opts_init(&o);
	struct seen seen = {0};
	mt_error err = {0};
	snprintf(code, sizeof code, "local m = require('matorage')\n"
		 "local w = m.store('%s'):create('far', {attributes = {{name = 'x', dtype = "
		 "'int32'}}})\nw:append({x = m.full({1}, 1, 'int32')})\nw:commit()", url);
	int rc = run(code, &o, &seen, NULL, 0, NULL, &err);
	struct stat st;
	tap_ok(rc == MT_EINVAL && strstr(err.message, "allow it with --allow-store") &&
		       stat(other, &st) != 0,
	       "another file store is refused before it is made (%s)", err.message);
	rc = run("require('matorage').store('s3://bucket/p')", &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "--allow-store"), "an s3 store is refused "
	       "(%s)", err.message);
	snprintf(code, sizeof code, "assert(tostring(require('matorage').store('%s/./x/..')))",
		 root);
	rc = run(code, &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == 0, "the run's own store, spelled another way, is allowed (%s)", err.message);
	const char *grant = url;
	o.allowed_stores = &grant;
	o.nallowed_stores = 1;
	snprintf(code, sizeof code, "local m = require('matorage')\n"
		 "local w = m.store('%s//'):create('far', {attributes = {{name = 'x', dtype = "
		 "'int32'}}})\nw:append({x = m.full({1}, 1, 'int32')})\nw:commit()", other);
	rc = run(code, &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == 0, "an allowed store opens, by another spelling (%s)", err.message);
	snprintf(code, sizeof code, "require('matorage').store('%s/sub')", url);
	rc = run(code, &o, &seen, NULL, 0, NULL, &err);
	tap_ok(rc == MT_EINVAL, "a store inside an allowed one is another store");
	char *a = mt_script_store_key("s3://b//p/q/"), *b = mt_script_store_key("s3://b/p/q");
	tap_ok(a && b && !strcmp(a, b) && !strcmp(a, "s3://b/p/q"), "s3 keys lose doubled and "
	       "trailing slashes (%s)", a ? a : "NULL");
	free(a);
	free(b);
}

int main(void)
{
	if (tap_scratch_store("script", root, sizeof root, &store))
		return 1;
	test_commit_and_provenance();
	test_error_commits_nothing();
	test_cancel_from_another_thread();
	test_progress_cancels();
	test_limits();
	test_defaults();
	test_stores();
	mt_store_close(store);
	tap_rm_tree(root);
	return tap_done();
}
