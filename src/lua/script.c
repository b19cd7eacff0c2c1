/* script.c — the Lua state a recipe runs in: sandboxed libraries, memory and instruction limits, cancel, commit at the end. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lualib.h>

#include "lua-int.h"

/* The count hook runs this often: rare enough to cost nothing measurable,
 * often enough that a runaway loop stops within microseconds. */
#define HOOK_EVERY 10000
/* Registry key of the last error raised with a code of its own (raise_coded). */
#define CODED_ERROR "matorage.coded_error"

struct lt_ctx {
	mt_script *s;
};

/* Why a limit stopped the run (mt_script.stop). */
enum { STOP_NONE, STOP_MEMORY, STOP_TIME, STOP_INSTRUCTIONS };

struct mt_script {
	lua_State *L;
	mt_script_opts o;
	char **allowed; /* canonical directories */
	size_t nallowed;
	char **stores; /* mt_script_store_key of each allowed store */
	size_t nstores;
	char *run_store; /* the key of the store the script runs against, once asked */
	mt_store *own_store; /* opened when o.store is NULL */
	uint64_t mem, instructions;
	int mem_exceeded; /* the last allocation refused was refused by the limit */
	/* A limit reached: sticky.  While the script runs, from then on every
	 * allocation that grows is refused and every instruction raises, so a
	 * pcall that catches the error cannot go on; the host then fails the
	 * run and aborts its writers. */
	int stop;
	int running;  /* inside the run's lua_pcall */
	int finished; /* the run is over: any Lua left (a __gc at close) stops at once */
	struct timespec started;
	char stop_where[200]; /* "FILE:LINE: " where a time or instruction limit hit */
	atomic_int cancel;
	/* Why the run fails once canceled or past its instruction limit: from
	 * then on every instruction raises, so no pcall can catch it. */
	int fail_code;
	int coded;    /* the code of the error in the registry at CODED_ERROR */
	int end_code; /* the code of the error that ended the run, 0 for a plain one */
	const void *code;
	size_t code_len;
	const char *const *args;
	size_t nargs;
	int ran;
	char **versions;
	size_t nversions;
	/* The versions the recipe opened, as lineage for those it writes:
	 * src_strs holds 3 a source (dataset, version, store URL). */
	mt_source *srcs;
	char **src_strs;
	size_t nsrcs;
	char *errtext;
	struct lt_ctx ctx;
};

static mt_script *script_of(lua_State *L)
{
	void *ud;
	lua_getallocf(L, &ud);
	return ud;
}

struct lt_ctx *lt_ctx(lua_State *L)
{
	return &script_of(L)->ctx;
}

static void script_hook(lua_State *L, lua_Debug *ar);

/* Note the first limit reached; from now on the main thread's hook runs at
 * every instruction (a coroutine's within HOOK_EVERY instructions, and it
 * cannot allocate meanwhile). */
static void stop_run(mt_script *s, int why)
{
	if (!s->stop)
		s->stop = why;
	if (s->running)
		lua_sethook(s->L, script_hook, LUA_MASKCOUNT, 1);
}

/* Counts every byte the state holds, tensors included (lt_alloc), so the
 * limit is one number the user can reason about. */
static void *script_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	mt_script *s = ud;
	size_t old = ptr ? osize : 0;
	if (nsize == 0) {
		free(ptr);
		s->mem -= old;
		return NULL;
	}
	if (nsize > old && s->stop && s->running) {
		s->mem_exceeded = s->stop == STOP_MEMORY;
		return NULL;
	}
	if (s->o.max_memory && nsize > old && s->mem + (nsize - old) > s->o.max_memory) {
		s->mem_exceeded = 1;
		stop_run(s, STOP_MEMORY);
		return NULL;
	}
	void *p = realloc(ptr, nsize);
	if (p)
		s->mem = s->mem - old + nsize;
	else
		s->mem_exceeded = 0;
	return p;
}

/* Raise msg (after the script's position) as an error that makes the run
 * fail with `code` if this very error ends it.  A script may catch it with
 * pcall and go on, and then fail, or not, for reasons of its own: the code
 * must not outlive the error. */
static int raise_coded(lua_State *L, int code, const char *msg)
{
	mt_script *s = script_of(L);
	luaL_where(L, 1);
	lua_pushstring(L, msg);
	lua_concat(L, 2);
	lua_pushvalue(L, -1);
	lua_setfield(L, LUA_REGISTRYINDEX, CODED_ERROR);
	s->coded = code;
	return lua_error(L);
}

void *lt_alloc(lua_State *L, size_t bytes)
{
	mt_script *s = script_of(L);
	void *p = script_alloc(s, NULL, 0, bytes ? bytes : 1);
	if (!p) {
		char msg[160];
		if (s->mem_exceeded)
			snprintf(msg, sizeof msg,
				 "out of memory allocating %zu bytes (memory limit %llu bytes)",
				 bytes, (unsigned long long)s->o.max_memory);
		else
			snprintf(msg, sizeof msg, "out of memory allocating %zu bytes", bytes);
		raise_coded(L, s->mem_exceeded ? MT_ERANGE : MT_ENOMEM, msg);
	}
	return p;
}

void lt_free(lua_State *L, void *p, size_t bytes)
{
	if (p)
		script_alloc(script_of(L), p, bytes ? bytes : 1, 0);
}

static int time_is_up(const mt_script *s)
{
	if (!s->o.max_seconds)
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double spent = (double)(now.tv_sec - s->started.tv_sec) +
		       (double)(now.tv_nsec - s->started.tv_nsec) / 1e9;
	return spent >= (double)s->o.max_seconds;
}

/* Errors raised here name the line the script was running (luaL_where
 * would look for a caller of the hook, and there is none). */
static void script_hook(lua_State *L, lua_Debug *ar)
{
	mt_script *s = script_of(L);
	if (s->finished) {
		lua_pushliteral(L, "the recipe has ended");
		lua_error(L);
	}
	s->instructions += HOOK_EVERY;
	int canceled = atomic_load(&s->cancel);
	if (!s->stop && s->o.max_instructions && s->instructions > s->o.max_instructions)
		stop_run(s, STOP_INSTRUCTIONS);
	else if (!s->stop && time_is_up(s))
		stop_run(s, STOP_TIME);
	if (!canceled && !s->stop)
		return;
	lua_getinfo(L, "Sl", ar);
	/* Where the loop was; a memory limit hit somewhere before. */
	if (!s->stop_where[0] && s->stop != STOP_MEMORY && ar->currentline > 0)
		snprintf(s->stop_where, sizeof s->stop_where, "%s:%d: ", ar->short_src,
			 ar->currentline);
	if (canceled && !s->stop)
		s->fail_code = MT_ECANCELED;
	/* From now on every instruction raises again: a script that catches the
	 * error with pcall cannot keep running.  After a limit nothing may
	 * allocate, so the error is the state's own memory error. */
	lua_sethook(L, script_hook, LUA_MASKCOUNT, 1);
	if (s->stop)
		luaL_error(L, "recipe stopped by a limit");
	lua_pushfstring(L, "%s:%d: canceled", ar->short_src, ar->currentline);
	lua_error(L);
}

void lt_check_cancel(lua_State *L)
{
	mt_script *s = script_of(L);
	/* Reads and writes spend long stretches in C, out of the hook's sight. */
	if (!s->stop && time_is_up(s))
		stop_run(s, STOP_TIME);
	if (s->stop)
		luaL_error(L, "recipe stopped by a limit");
	if (atomic_load(&s->cancel)) {
		s->fail_code = MT_ECANCELED;
		lt_error(L, "canceled");
	}
}

static int cancel_requested(void *ud, uint64_t done, uint64_t total)
{
	mt_script *s = ud;
	return atomic_load(&s->cancel);
}

void lt_cancel_callback(lua_State *L, mt_progress_fn *fn, void **ud)
{
	*fn = cancel_requested;
	*ud = script_of(L);
}

void lt_progress(lua_State *L, uint64_t done, uint64_t total)
{
	mt_script *s = script_of(L);
	if (s->o.progress && s->o.progress(s->o.progress_ud, done, total))
		atomic_store(&s->cancel, 1);
	lt_check_cancel(L);
}

int lt_error(lua_State *L, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	luaL_where(L, 1);
	lua_pushstring(L, msg);
	lua_concat(L, 2);
	return lua_error(L);
}

int lt_fail(lua_State *L, const mt_error *err)
{
	if (err->code == MT_ECANCELED)
		script_of(L)->fail_code = MT_ECANCELED;
	return lt_error(L, "%s", err->message);
}

void lt_new_class(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *meta)
{
	luaL_newmetatable(L, name);
	luaL_setfuncs(L, meta, 0);
	if (methods) {
		lua_newtable(L);
		luaL_setfuncs(L, methods, 0);
		lua_setfield(L, -2, "__index");
	}
	lua_pop(L, 1);
}

mt_store *lt_default_store(lua_State *L)
{
	mt_script *s = script_of(L);
	if (s->o.store)
		return s->o.store;
	if (!s->own_store) {
		mt_error err = {0};
		if (mt_store_open_opts(NULL, s->o.store_opts, &s->own_store, &err))
			lt_fail(L, &err);
	}
	return s->own_store;
}

const mt_store_opts *lt_store_opts(lua_State *L)
{
	return script_of(L)->o.store_opts;
}

void lt_recipe(lua_State *L, const void **code, size_t *len, const char *const **args,
	       size_t *nargs)
{
	mt_script *s = script_of(L);
	*code = s->code;
	*len = s->code_len;
	*args = s->args;
	*nargs = s->nargs;
}

void lt_part(lua_State *L, const char **stage_id, uint64_t *k, uint64_t *n)
{
	mt_script *s = script_of(L);
	*stage_id = s->o.stage_id;
	*k = s->o.part;
	*n = s->o.parts;
}

void lt_source_note(lua_State *L, mt_store *store, const char *dataset, const char *version)
{
	mt_script *s = script_of(L);
	const char *url = mt_store_url(store);
	for (size_t i = 0; i < s->nsrcs; i++)
		if (!strcmp(s->srcs[i].dataset, dataset) && !strcmp(s->srcs[i].version, version) &&
		    !strcmp(s->srcs[i].store, url))
			return;
	mt_source *v = realloc(s->srcs, (s->nsrcs + 1) * sizeof *v);
	if (v)
		s->srcs = v;
	char **f = v ? realloc(s->src_strs, 3 * (s->nsrcs + 1) * sizeof *f) : NULL;
	if (f)
		s->src_strs = f;
	if (!v || !f)
		lt_error(L, "out of memory");
	f += 3 * s->nsrcs;
	f[0] = strdup(dataset);
	f[1] = strdup(version);
	f[2] = strdup(url);
	if (!f[0] || !f[1] || !f[2]) {
		free(f[0]);
		free(f[1]);
		free(f[2]);
		lt_error(L, "out of memory");
	}
	s->srcs[s->nsrcs++] = (mt_source){ f[0], f[1], f[2] };
}

void lt_sources(lua_State *L, const mt_source **out, size_t *n)
{
	mt_script *s = script_of(L);
	*out = s->srcs;
	*n = s->nsrcs;
}

/* ---- paths ---------------------------------------------------------------- */

static int path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return 1;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The canonical form of path; for a file to be written, of its directory
 * (the file may not exist yet).  A dangling symbolic link is refused: a
 * write would create its target, wherever that points. */
static char *canonical(const char *path, int write)
{
	char *r = realpath(path, NULL);
	if (r || !write || errno != ENOENT)
		return r;
	struct stat st;
	if (lstat(path, &st) == 0) {
		errno = ENOENT;
		return NULL;
	}
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
	char *d = dir ? realpath(dir, NULL) : NULL;
	free(dir);
	if (!d)
		return NULL;
	const char *base = slash ? slash + 1 : path;
	char *out = malloc(strlen(d) + strlen(base) + 2);
	if (out)
		sprintf(out, "%s/%s", strcmp(d, "/") ? d : "", base);
	free(d);
	return out;
}

void lt_check_path(lua_State *L, const char *path, int write, const char *what)
{
	mt_script *s = script_of(L);
	if (s->o.unsafe)
		return;
	char *c = canonical(path, write);
	if (!c)
		lt_error(L, "%s: %s: %s", what, path, strerror(errno));
	int ok = 0;
	for (size_t i = 0; !ok && i < s->nallowed; i++)
		ok = path_under(c, s->allowed[i]);
	free(c);
	if (!ok)
		lt_error(L, "%s: '%s' is outside the paths this script may %s (allow its "
			   "directory, or run unsafe)", what, path, write ? "write" : "read");
}

/* ---- stores ---------------------------------------------------------------- */

/* in, an absolute path, into out with "." and empty segments dropped and
 * ".." applied, as the store opens it; its length. */
static size_t clean_path(const char *in, char *out)
{
	size_t n = 0;
	for (const char *p = in; *p;) {
		p += strspn(p, "/");
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			n -= n > 0;
		} else if (len > 0 && !(len == 1 && p[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	out[n] = '\0';
	return n;
}

/* The path made absolute and clean (clean_path), then the real path of its
 * longest existing part, so that a link to a store and the store are one. */
static char *path_key(const char *path)
{
	char *cwd = path[0] == '/' ? NULL : getcwd(NULL, 0);
	if (path[0] != '/' && !cwd)
		return NULL;
	size_t cap = (cwd ? strlen(cwd) : 0) + strlen(path) + 3;
	char *in = malloc(cap), *out = malloc(cap);
	if (in && out)
		snprintf(in, cap, "%s/%s", cwd ? cwd : "", path);
	free(cwd);
	if (!in || !out) {
		free(in);
		free(out);
		return NULL;
	}
	size_t n = clean_path(in, out);
	free(in);
	/* out[0..cut) exists (cut 0: the root); what follows is kept as written. */
	for (size_t cut = n;; cut--) {
		if (cut < n && out[cut] != '/')
			continue;
		char keep = out[cut];
		out[cut] = '\0';
		char *real = cut ? realpath(out, NULL) : strdup("");
		out[cut] = keep;
		if (real || cut == 0) {
			char *key = real ? malloc(strlen(real) + strlen(out + cut) + 9) : NULL;
			if (key)
				sprintf(key, "file://%s%s", strcmp(real, "/") ? real : "",
					out[cut] || *real ? out + cut : "/");
			free(real);
			free(out);
			return key;
		}
	}
}

/* "s3://BUCKET/PREFIX" without doubled or trailing slashes, as the store
 * names itself. */
static char *s3_key(const char *url)
{
	char *out = malloc(strlen(url) + 1);
	if (!out)
		return NULL;
	size_t n = 0;
	for (const char *p = url + 5; *p; p++)
		if (*p != '/' || (n > 0 && out[n - 1] != '/'))
			out[n++] = *p;
	while (n > 0 && out[n - 1] == '/')
		n--;
	out[n] = '\0';
	char *key = malloc(n + 6);
	if (key)
		sprintf(key, "s3://%s", out);
	free(out);
	return key;
}

/* A remote's URL (malloc'd), or NULL when no remote has that name. */
static char *remote_url(const char *name)
{
	mt_remote *r = NULL;
	size_t n = 0;
	mt_error err = {0};
	if (strchr(name, '/') || !*name || mt_remotes_list(&r, &n, &err))
		return NULL;
	char *url = NULL;
	for (size_t i = 0; i < n && !url; i++)
		if (!strcmp(r[i].name, name))
			url = strdup(r[i].url);
	mt_remotes_free(r, n);
	return url;
}

char *mt_script_store_key(const char *url)
{
	if (!url)
		url = "";
	char *remote = strstr(url, "://") ? NULL : remote_url(url);
	const char *u = remote ? remote : url;
	char *key;
	if (!strncmp(u, "s3://", 5))
		key = s3_key(u);
	else if (!strncmp(u, "file://", 7))
		key = path_key(u + 7);
	else if (strstr(u, "://") || !*u)
		key = strdup(u); /* no store, or one no backend opens */
	else
		key = path_key(u);
	free(remote);
	return key;
}

static const char *run_store_key(lua_State *L)
{
	mt_script *s = script_of(L);
	if (!s->run_store && !(s->run_store = mt_script_store_key(mt_store_url(lt_default_store(L)))))
		lt_error(L, "out of memory");
	return s->run_store;
}

void lt_check_store(lua_State *L, const char *url)
{
	mt_script *s = script_of(L);
	if (s->o.unsafe)
		return;
	const char *run = run_store_key(L);
	char *key = mt_script_store_key(url);
	if (!key)
		lt_error(L, "out of memory");
	int ok = !strcmp(key, run);
	for (size_t i = 0; !ok && i < s->nstores; i++)
		ok = !strcmp(key, s->stores[i]);
	free(key);
	if (!ok)
		lt_error(L, "store '%s' is not the store this recipe runs against (%s): "
			   "allow it with --allow-store %s", url, mt_store_url(lt_default_store(L)),
			   url);
}

/* ---- the sandbox ---------------------------------------------------------- */

/* print goes to the host's log callback, which the TUI shows in a pane. */
static int l_print(lua_State *L)
{
	mt_script *s = script_of(L);
	int n = lua_gettop(L); /* before buffinit, which may push a placeholder */
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (int i = 1; i <= n; i++) {
		if (i > 1)
			luaL_addchar(&b, '\t');
		luaL_tolstring(L, i, NULL);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	if (s->o.log)
		s->o.log(s->o.log_ud, lua_tostring(L, -1));
	return 0;
}

/* io.open / io.lines, checked against the allowed paths first. */
static int l_io_checked(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	const char *mode = luaL_optstring(L, 2, "r");
	int is_open = (int)lua_tointeger(L, lua_upvalueindex(2));
	lt_check_path(L, path, is_open && strpbrk(mode, "wa+") != NULL, is_open ? "io.open" :
		      "io.lines");
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
	return lua_gettop(L);
}

/* load() of text only: crafted bytecode can break the VM's memory safety. */
static int l_load_text(lua_State *L)
{
	int n = lua_gettop(L);
	lua_settop(L, n > 4 ? n : 4);
	lua_pushliteral(L, "t");
	lua_replace(L, 3);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
	return lua_gettop(L);
}

/* require() of the matorage module only: no searchers, no C loaders. */
static int l_require(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	if (lua_getfield(L, -1, name) == LUA_TNIL)
		return lt_error(L, "require: module '%s' is not available in the sandbox "
				  "(only 'matorage' is)", name);
	return 1;
}

static void remove_fields(lua_State *L, const char *lib, const char *const *names)
{
	lua_getglobal(L, lib);
	for (size_t i = 0; names[i]; i++) {
		lua_pushnil(L);
		lua_setfield(L, -2, names[i]);
	}
	lua_pop(L, 1);
}

static void wrap_io(lua_State *L, const char *name, int is_open)
{
	lua_getglobal(L, "io");
	lua_getfield(L, -1, name);
	lua_pushinteger(L, is_open);
	lua_pushcclosure(L, l_io_checked, 2);
	lua_setfield(L, -2, name);
	lua_pop(L, 1);
}

static void sandbox(lua_State *L)
{
	static const luaL_Reg libs[] = {
		{LUA_GNAME, luaopen_base}, {LUA_TABLIBNAME, luaopen_table},
		{LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
		{LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_COLIBNAME, luaopen_coroutine},
		{LUA_IOLIBNAME, luaopen_io}, {LUA_OSLIBNAME, luaopen_os}, {NULL, NULL},
	};
	for (const luaL_Reg *l = libs; l->name; l++) {
		luaL_requiref(L, l->name, l->func, 1);
		lua_pop(L, 1);
	}
	static const char *const base_out[] = {"dofile", "loadfile", NULL};
	static const char *const io_out[] = {"popen", "tmpfile", "input", "output", "read",
					     "write", "close", "stdin", "stdout", "stderr", NULL};
	static const char *const os_out[] = {"execute", "exit", "getenv", "remove", "rename",
					     "tmpname", "setlocale", NULL};
	remove_fields(L, LUA_GNAME, base_out);
	remove_fields(L, LUA_IOLIBNAME, io_out);
	remove_fields(L, LUA_OSLIBNAME, os_out);
	wrap_io(L, "open", 1);
	wrap_io(L, "lines", 0);
	lua_getglobal(L, "load");
	lua_pushcclosure(L, l_load_text, 1);
	lua_setglobal(L, "load");
	lua_pushcfunction(L, l_require);
	lua_setglobal(L, "require");
}

/* ---- the module ------------------------------------------------------------ */

static int l_log(lua_State *L)
{
	return l_print(L);
}

static int l_progress(lua_State *L)
{
	lua_Integer done = luaL_checkinteger(L, 1), total = luaL_optinteger(L, 2, 0);
	luaL_argcheck(L, done >= 0, 1, "rows done must be >= 0");
	luaL_argcheck(L, total >= 0, 2, "total rows must be >= 0");
	lt_progress(L, (uint64_t)done, (uint64_t)total);
	return 0;
}

#include "prelude.h"

static int open_matorage(lua_State *L)
{
	lua_newtable(L);
	lt_tensor_register(L);
	lt_io_register(L);
	lt_dataset_register(L);
	lt_rng_register(L);
	lua_pushcfunction(L, l_log);
	lua_setfield(L, -2, "log");
	lua_pushcfunction(L, l_progress);
	lua_setfield(L, -2, "progress");
	lua_pushstring(L, mt_version());
	lua_setfield(L, -2, "version");
	/* Helpers written in Lua (derive, ...) get the module and the reader's and
	 * writer's method tables, to add to them. */
	if (luaL_loadbufferx(L, lt_prelude, sizeof lt_prelude - 1, "=matorage.lua", "t"))
		return lua_error(L);
	lua_pushvalue(L, -2);
	luaL_getmetatable(L, LT_READER);
	lua_getfield(L, -1, "__index");
	lua_remove(L, -2);
	luaL_getmetatable(L, LT_WRITER);
	lua_getfield(L, -1, "__index");
	lua_remove(L, -2);
	lua_call(L, 3, 0);
	return 1;
}

/* ---- the handle ------------------------------------------------------------ */

void mt_script_opts_init(mt_script_opts *o)
{
	memset(o, 0, sizeof *o);
	o->max_memory = mt_script_default_memory(NULL);
	o->max_seconds = MT_SCRIPT_DEFAULT_SECONDS;
}

uint64_t mt_script_default_memory(const char *cgroup_file)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	FILE *f = fopen(cgroup_file ? cgroup_file : "/sys/fs/cgroup/memory.max", "r");
	char line[64];
	if (f && fgets(line, sizeof line, f)) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(line, &end, 10);
		/* "max" reads as no number: no cgroup limit. */
		if (end != line && !errno && v > 0 && (!total || v < total))
			total = v;
	}
	if (f)
		fclose(f);
	/* Neither known: a gigabyte, as a guess that stops a runaway script. */
	return total ? total / 4 : (uint64_t)1 << 30;
}

int mt_script_open(const mt_script_opts *o, mt_script **out, mt_error *err)
{
	*out = NULL;
	mt_script *s = calloc(1, sizeof *s);
	if (!s)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	if (o)
		s->o = *o;
	s->allowed = calloc(s->o.nallowed ? s->o.nallowed : 1, sizeof *s->allowed);
	if (!s->allowed) {
		mt_script_close(s);
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->o.nallowed; i++) {
		if (!(s->allowed[s->nallowed] = realpath(s->o.allowed_paths[i], NULL))) {
			int e = errno;
			mt_script_close(s);
			return mt_error_set(err, MT_EINVAL, "allowed path %s: %s",
					    o->allowed_paths[i], strerror(e));
		}
		s->nallowed++;
	}
	s->o.allowed_paths = NULL; /* the caller's array need not outlive open */
	s->stores = calloc(s->o.nallowed_stores ? s->o.nallowed_stores : 1, sizeof *s->stores);
	for (size_t i = 0; s->stores && i < s->o.nallowed_stores; i++) {
		if (!(s->stores[i] = mt_script_store_key(s->o.allowed_stores[i])))
			break;
		s->nstores++;
	}
	if (!s->stores || s->nstores < s->o.nallowed_stores) {
		mt_script_close(s);
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	}
	s->o.allowed_stores = NULL;
	s->ctx.s = s;
	if (!(s->L = lua_newstate(script_alloc, s))) {
		mt_script_close(s);
		return mt_error_set(err, MT_ENOMEM, "cannot create a Lua state");
	}
	lua_State *L = s->L;
	if (s->o.unsafe)
		luaL_openlibs(L);
	else
		sandbox(L);
	lua_pushcfunction(L, l_print);
	lua_setglobal(L, "print");
	/* Set now, so that the message handler's look-up allocates nothing. */
	lua_pushboolean(L, 0);
	lua_setfield(L, LUA_REGISTRYINDEX, CODED_ERROR);
	luaL_requiref(L, "matorage", open_matorage, 1);
	lua_pop(L, 1);
	lua_sethook(L, script_hook, LUA_MASKCOUNT, HOOK_EVERY);
	*out = s;
	return 0;
}

/* The message handler of the run: it sees the error that ends the run, as
 * raised, and notes the code that error carries. */
static int traceback(lua_State *L)
{
	mt_script *s = script_of(L);
	lua_getfield(L, LUA_REGISTRYINDEX, CODED_ERROR);
	s->end_code = s->fail_code ? s->fail_code : lua_rawequal(L, 1, -1) ? s->coded : 0;
	lua_pop(L, 1);
	const char *msg = lua_tostring(L, 1);
	if (!msg && !luaL_callmeta(L, 1, "__tostring"))
		lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	msg = lua_tostring(L, -1);
	luaL_traceback(L, L, msg, 1);
	return 1;
}

/* Every writer the script opened, in order: check that the script committed
 * each, then commit them all; on any failure abort what is left. */
static int finish_writers(mt_script *s, int ok, mt_error *err)
{
	lua_State *L = s->L;
	int rc = ok ? 0 : MT_EINVAL;
	lua_getfield(L, LUA_REGISTRYINDEX, "matorage.writers");
	lua_Integer n = lua_istable(L, -1) ? luaL_len(L, -1) : 0;
	for (int phase = LT_FINISH_CHECK; phase <= LT_FINISH_ABORT; phase++) {
		for (lua_Integer i = 1; i <= n; i++) {
			if (rc && phase != LT_FINISH_ABORT)
				break;
			lua_geti(L, -1, i);
			struct lt_writer *w = lua_touserdata(L, -1);
			lua_pop(L, 1);
			char name[300] = "";
			int r = lt_writer_finish(w, phase, name, sizeof name, err);
			if (r && !rc)
				rc = r;
			if (!r && name[0]) {
				char **v = realloc(s->versions, (s->nversions + 1) * sizeof *v);
				if (v && (v[s->nversions] = strdup(name))) {
					s->versions = v;
					s->nversions++;
				} else if (v) {
					s->versions = v;
				}
			}
		}
	}
	lua_pop(L, 1);
	return ok ? rc : 0;
}

static void set_errtext(mt_script *s, const char *text)
{
	free(s->errtext);
	s->errtext = strdup(text ? text : "");
}

static void format_bytes(char *buf, size_t cap, uint64_t n)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	if (n < 1024) {
		snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
		return;
	}
	double v = (double)n / 1024;
	size_t u = 0;
	for (; v >= 1024 && u + 1 < sizeof units / sizeof *units; u++)
		v /= 1024;
	snprintf(buf, cap, "%.1f %s", v, units[u]);
}

/* A limit stopped the run, whatever the script did after: nothing it wrote
 * is committed, and the message names the limit and the flag that raises it. */
static int run_stopped(mt_script *s, mt_error *err)
{
	s->finished = 1;
	char what[96];
	if (s->stop == STOP_MEMORY) {
		char size[32];
		format_bytes(size, sizeof size, s->o.max_memory);
		snprintf(what, sizeof what, "memory limit %s reached (raise with --max-memory)",
			 size);
	} else if (s->stop == STOP_TIME) {
		snprintf(what, sizeof what, "time limit %llu s reached (raise with --max-time)",
			 (unsigned long long)s->o.max_seconds);
	} else {
		snprintf(what, sizeof what, "instruction limit %llu reached (raise with "
			 "--max-instructions)", (unsigned long long)s->o.max_instructions);
	}
	char text[sizeof s->stop_where + sizeof what + 32];
	snprintf(text, sizeof text, "%srecipe stopped: %s", s->stop_where, what);
	set_errtext(s, text);
	mt_error_set(err, MT_ERANGE, "%s", text);
	finish_writers(s, 0, NULL);
	lua_settop(s->L, 0);
	return MT_ERANGE;
}

int mt_script_run(mt_script *s, const char *name, const void *code, size_t len,
		  const char *const *args, size_t nargs, mt_error *err)
{
	lua_State *L = s->L;
	if (s->ran)
		return mt_error_set(err, MT_ESTATE, "a script handle runs one script");
	s->ran = 1;
	s->code = code;
	s->code_len = len;
	s->args = args;
	s->nargs = nargs;
	lua_pushcfunction(L, traceback);
	char *chunk = malloc(strlen(name) + 2);
	if (!chunk)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	sprintf(chunk, "@%s", name);
	int st = luaL_loadbufferx(L, code, len, chunk, "t");
	free(chunk);
	if (st == LUA_OK) {
		lua_createtable(L, 0, (int)nargs);
		for (size_t i = 0; i < nargs; i++) {
			const char *eq = strchr(args[i], '=');
			if (!eq || eq == args[i]) {
				lua_settop(L, 0);
				return mt_error_set(err, MT_EINVAL,
						    "argument '%s' is not KEY=VALUE", args[i]);
			}
			lua_pushlstring(L, args[i], (size_t)(eq - args[i]));
			lua_pushstring(L, eq + 1);
			lua_settable(L, -3);
		}
		lua_setglobal(L, "arg");
		clock_gettime(CLOCK_MONOTONIC, &s->started);
		s->running = 1;
		st = lua_pcall(L, 0, 0, 1);
		s->running = 0;
	}
	/* Checked whatever the script returned: it may have caught the error. */
	if (s->stop)
		return run_stopped(s, err);
	if (st == LUA_OK && s->fail_code) { /* canceled, and the script caught it */
		lua_pushliteral(L, "canceled");
		st = LUA_ERRRUN;
	}
	int rc = 0;
	if (st != LUA_OK) {
		const char *msg = lua_tostring(L, -1);
		/* A memory error skips the message handler: the allocation that
		 * failed last says whether the limit refused it. */
		if (st == LUA_ERRMEM && s->mem_exceeded)
			msg = "memory limit exceeded";
		set_errtext(s, msg ? msg : "unknown error");
		if (s->fail_code)
			rc = s->fail_code;
		else if (st == LUA_ERRMEM)
			rc = s->mem_exceeded ? MT_ERANGE : MT_ENOMEM;
		else
			rc = st == LUA_ERRRUN && s->end_code ? s->end_code : MT_EINVAL;
		mt_error_set(err, rc, "%s", s->errtext);
		finish_writers(s, 0, NULL);
	} else {
		/* Commits run no Lua of the script's (a finalizer run by the
		 * collector meanwhile stops at once) and are not cut by a limit. */
		s->finished = 1;
		rc = finish_writers(s, 1, err);
		if (rc)
			set_errtext(s, err ? err->message : "commit failed");
	}
	lua_settop(L, 0);
	return rc;
}

const char *mt_script_error(const mt_script *s)
{
	return s->errtext ? s->errtext : "";
}

size_t mt_script_nversions(const mt_script *s)
{
	return s->nversions;
}

const char *mt_script_version(const mt_script *s, size_t i)
{
	return i < s->nversions ? s->versions[i] : NULL;
}

void mt_script_cancel(mt_script *s)
{
	atomic_store(&s->cancel, 1);
}

void mt_script_close(mt_script *s)
{
	if (!s)
		return;
	if (s->L) {
		/* A finalizer the script left runs at close: it stops at its
		 * first instruction. */
		s->finished = 1;
		lua_sethook(s->L, script_hook, LUA_MASKCOUNT, 1);
		lua_close(s->L);
	}
	mt_store_close(s->own_store);
	for (size_t i = 0; i < s->nallowed; i++)
		free(s->allowed[i]);
	free(s->allowed);
	for (size_t i = 0; i < s->nstores; i++)
		free(s->stores[i]);
	free(s->stores);
	free(s->run_store);
	for (size_t i = 0; i < s->nversions; i++)
		free(s->versions[i]);
	free(s->versions);
	for (size_t i = 0; i < 3 * s->nsrcs; i++)
		free(s->src_strs[i]);
	free(s->src_strs);
	free(s->srcs);
	free(s->errtext);
	free(s);
}
