/* lua-dataset.c — stores, versions read by rows and batches, and new versions written by a script. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua-int.h"

typedef struct lt_store {
	mt_store *s;
	int owned;
} lt_store;

typedef struct lt_reader {
	mt_reader *r;
} lt_reader;

enum { WS_OPEN, WS_DONE, WS_ABORTED };

struct lt_writer {
	mt_writer *w;
	char *dataset;
	mt_attr *attrs; /* names owned */
	size_t nattrs;
	uint64_t rows, expected;
	int marked; /* the script called commit() */
	int state;
};

/* ---- stores ------------------------------------------------------------------ */

static lt_store *check_store(lua_State *L, int idx)
{
	lt_store *s = luaL_checkudata(L, idx, LT_STORE);
	if (!s->s)
		luaL_argerror(L, idx, "store was closed");
	return s;
}

static lt_store *push_store(lua_State *L, mt_store *st, int owned)
{
	lt_store *s = lua_newuserdatauv(L, sizeof *s, 0);
	s->s = st;
	s->owned = owned;
	luaL_setmetatable(L, LT_STORE);
	return s;
}

/* matorage.store([url]) — the run's store without a URL; another only when allowed. */
static int l_store(lua_State *L)
{
	if (lua_isnoneornil(L, 1)) {
		push_store(L, lt_default_store(L), 0);
		return 1;
	}
	const char *url = luaL_checkstring(L, 1);
	lt_check_store(L, url);
	lt_store *s = push_store(L, NULL, 1);
	mt_error err = {0};
	mt_store *st = NULL;
	if (mt_store_open_opts(url, lt_store_opts(L), &st, &err))
		return lt_fail(L, &err);
	s->s = st;
	return 1;
}

static int l_store_gc(lua_State *L)
{
	lt_store *s = luaL_checkudata(L, 1, LT_STORE);
	if (s->owned)
		mt_store_close(s->s);
	s->s = NULL;
	return 0;
}

static void push_strv(lua_State *L, char **v, size_t n)
{
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		lua_pushstring(L, v[i]);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	mt_strv_free(v, n);
}

static int l_datasets(lua_State *L)
{
	lt_store *s = check_store(L, 1);
	char **v = NULL;
	size_t n = 0;
	mt_error err = {0};
	if (mt_store_datasets(s->s, &v, &n, &err))
		return lt_fail(L, &err);
	push_strv(L, v, n);
	return 1;
}

static int l_versions(lua_State *L)
{
	lt_store *s = check_store(L, 1);
	const char *ds = luaL_checkstring(L, 2);
	char **v = NULL;
	size_t n = 0;
	mt_error err = {0};
	if (mt_store_versions(s->s, ds, &v, &n, &err))
		return lt_fail(L, &err);
	push_strv(L, v, n);
	return 1;
}

static int l_store_tostring(lua_State *L)
{
	lt_store *s = luaL_checkudata(L, 1, LT_STORE);
	lua_pushfstring(L, "store(%s)", s->s ? mt_store_url(s->s) : "closed");
	return 1;
}

/* ---- reading ------------------------------------------------------------------ */

static lt_reader *check_reader(lua_State *L, int idx)
{
	lt_reader *r = luaL_checkudata(L, idx, LT_READER);
	if (!r->r)
		luaL_argerror(L, idx, "reader was closed");
	return r;
}

/* store:open("DATASET[@VERSION]") or store:open(DATASET, VERSION) */
static int l_open(lua_State *L)
{
	check_store(L, 1);
	const char *spec = luaL_checkstring(L, 2);
	const char *at = strchr(spec, '@');
	const char *ver = at ? at + 1 : luaL_optstring(L, 3, NULL);
	lua_pushlstring(L, spec, at ? (size_t)(at - spec) : strlen(spec));
	const char *ds = lua_tostring(L, -1);
	lt_reader *r = lua_newuserdatauv(L, sizeof *r, 1);
	r->r = NULL;
	luaL_setmetatable(L, LT_READER);
	lua_pushvalue(L, 1); /* keep the store alive while the reader is */
	lua_setiuservalue(L, -2, 1);
	mt_error err = {0};
	if (mt_reader_open(check_store(L, 1)->s, ds, ver, &r->r, &err))
		return lt_fail(L, &err);
	lt_source_note(L, check_store(L, 1)->s, ds, mt_reader_info(r->r)->version);
	return 1;
}

static int l_reader_gc(lua_State *L)
{
	lt_reader *r = luaL_checkudata(L, 1, LT_READER);
	mt_reader_close(r->r);
	r->r = NULL;
	return 0;
}

static int l_reader_tostring(lua_State *L)
{
	lt_reader *r = luaL_checkudata(L, 1, LT_READER);
	if (!r->r)
		lua_pushliteral(L, "reader(closed)");
	else
		lua_pushfstring(L, "reader(%s@%s)", mt_reader_info(r->r)->dataset,
				mt_reader_info(r->r)->version);
	return 1;
}

static void push_attr(lua_State *L, const mt_attr *a)
{
	lua_createtable(L, 0, 4);
	lua_pushstring(L, a->name);
	lua_setfield(L, -2, "name");
	lua_pushstring(L, mt_dtype_name(a->dtype));
	lua_setfield(L, -2, "dtype");
	lua_createtable(L, a->rank, 0);
	for (int d = 0; d < a->rank; d++) {
		lua_pushinteger(L, (lua_Integer)a->shape[d]);
		lua_seti(L, -2, d + 1);
	}
	lua_setfield(L, -2, "shape");
	lua_pushboolean(L, a->ragged);
	lua_setfield(L, -2, "ragged");
}

/* r:info() — the manifest's fields as a table. */
static int l_info(lua_State *L)
{
	lt_reader *r = check_reader(L, 1);
	const mt_version_info *vi = mt_reader_info(r->r);
	lua_createtable(L, 0, 12);
	const char *fields[][2] = {
		{"dataset", vi->dataset}, {"version", vi->version}, {"parent", vi->parent},
		{"author", vi->author}, {"description", vi->description},
		{"created", vi->created}, {"recipe", vi->recipe},
	};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		lua_pushstring(L, fields[i][1]);
		lua_setfield(L, -2, fields[i][0]);
	}
	lua_pushinteger(L, (lua_Integer)vi->rows);
	lua_setfield(L, -2, "rows");
	lua_createtable(L, (int)vi->ntags, 0);
	for (size_t i = 0; i < vi->ntags; i++) {
		lua_pushstring(L, vi->tags[i]);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "tags");
	size_t n = mt_reader_nattrs(r->r);
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		push_attr(L, mt_reader_attr(r->r, i));
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "attributes");
	return 1;
}

static int l_nrows(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)mt_reader_info(check_reader(L, 1)->r)->rows);
	return 1;
}

/* Rows [a, a+n) (0-based) of attribute i, as a tensor pushed on the stack. */
static void read_attr(lua_State *L, lt_reader *r, size_t i, uint64_t a, uint64_t n)
{
	const mt_attr *at = mt_reader_attr(r->r, i);
	if (at->ragged)
		lt_error(L, "read: attribute %s is ragged; ragged attributes are not yet "
			   "readable from Lua", at->name);
	int64_t shape[LT_MAX_DIMS];
	shape[0] = (int64_t)n;
	for (int d = 0; d < at->rank; d++)
		shape[d + 1] = (int64_t)at->shape[d];
	char what[300];
	snprintf(what, sizeof what, "read: attribute %s", at->name);
	lt_tensor *t = lt_new(L, what, at->dtype, at->rank + 1, shape);
	mt_error err = {0};
	if (mt_reader_read(r->r, i, a, a + n, lt_data(t),
			   (size_t)lt_numel(t) * mt_dtype_size(at->dtype), &err))
		lt_fail(L, &err);
}

/* 1-based first row and a count, checked against the version. */
static void check_rows(lua_State *L, lt_reader *r, int idx, uint64_t *a, uint64_t *n)
{
	uint64_t rows = mt_reader_info(r->r)->rows;
	lua_Integer first = luaL_optinteger(L, idx, 1);
	lua_Integer count = luaL_optinteger(L, idx + 1, (lua_Integer)rows - first + 1);
	if (first < 1 || count < 0 || (uint64_t)(first - 1) + (uint64_t)count > rows)
		lt_error(L, "read: rows %d..%d are out of range 1..%d of %s@%s", (int)first,
			   (int)(first + count - 1), (int)rows, mt_reader_info(r->r)->dataset,
			   mt_reader_info(r->r)->version);
	*a = (uint64_t)(first - 1);
	*n = (uint64_t)count;
}

/* r:read(attr [, first [, count]]) — one attribute's rows as a tensor. */
static int l_read(lua_State *L)
{
	lt_reader *r = check_reader(L, 1);
	const char *name = luaL_checkstring(L, 2);
	int i = mt_reader_attr_index(r->r, name);
	if (i < 0)
		return lt_error(L, "read: %s@%s has no attribute '%s'",
				  mt_reader_info(r->r)->dataset, mt_reader_info(r->r)->version, name);
	uint64_t a, n;
	check_rows(L, r, 3, &a, &n);
	read_attr(L, r, (size_t)i, a, n);
	return 1;
}

/* r:batch(first, count) — every attribute's rows: {name = tensor, ...}. */
static int l_batch(lua_State *L)
{
	lt_reader *r = check_reader(L, 1);
	uint64_t a, n;
	check_rows(L, r, 2, &a, &n);
	size_t na = mt_reader_nattrs(r->r);
	lua_createtable(L, 0, (int)na);
	for (size_t i = 0; i < na; i++) {
		read_attr(L, r, i, a, n);
		lua_setfield(L, -2, mt_reader_attr(r->r, i)->name);
	}
	return 1;
}

static int batches_next(lua_State *L)
{
	lt_reader *r = check_reader(L, lua_upvalueindex(1));
	lua_Integer size = lua_tointeger(L, lua_upvalueindex(2));
	lua_Integer next = lua_tointeger(L, lua_upvalueindex(3));
	lua_Integer rows = (lua_Integer)mt_reader_info(r->r)->rows;
	if (next > rows)
		return 0;
	lua_Integer n = rows - next + 1 < size ? rows - next + 1 : size;
	lua_pushinteger(L, next + n);
	lua_replace(L, lua_upvalueindex(3));
	lt_check_cancel(L);
	lua_pushcfunction(L, l_batch);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushinteger(L, next);
	lua_pushinteger(L, n);
	lua_call(L, 3, 1);
	lua_pushinteger(L, next);
	lua_pushinteger(L, n);
	return 3;
}

/* for batch, first, count in r:batches(size) do ... end — memory stays at
 * one batch whatever the version's size. */
static int l_batches(lua_State *L)
{
	check_reader(L, 1);
	lua_Integer size = luaL_optinteger(L, 2, 4096);
	luaL_argcheck(L, size >= 1, 2, "batch size must be >= 1");
	lua_pushvalue(L, 1);
	lua_pushinteger(L, size);
	lua_pushinteger(L, 1);
	lua_pushcclosure(L, batches_next, 3);
	return 1;
}

/* ---- writing ----------------------------------------------------------------- */

static struct lt_writer *check_writer(lua_State *L, int idx)
{
	struct lt_writer *w = luaL_checkudata(L, idx, LT_WRITER);
	if (w->state != WS_OPEN || w->marked)
		lt_error(L, "writer of %s is %s", w->dataset ? w->dataset : "?",
			   w->marked ? "already committed" : "closed");
	return w;
}

static void writer_free(struct lt_writer *w)
{
	mt_writer_close(w->w);
	w->w = NULL;
	for (size_t i = 0; w->attrs && i < w->nattrs; i++)
		free((char *)(uintptr_t)w->attrs[i].name);
	free(w->attrs);
	w->attrs = NULL;
	free(w->dataset);
	w->dataset = NULL;
}

static int l_writer_tostring(lua_State *L)
{
	struct lt_writer *w = luaL_checkudata(L, 1, LT_WRITER);
	lua_pushfstring(L, "writer(%s, %I rows)", w->dataset ? w->dataset : "closed",
			(lua_Integer)w->rows);
	return 1;
}

static int l_writer_gc(lua_State *L)
{
	writer_free(luaL_checkudata(L, 1, LT_WRITER));
	return 0;
}

/* opts.attributes: a list of {name=, dtype=, shape={...}}. */
static void parse_attrs(lua_State *L, int opts, struct lt_writer *w)
{
	lua_getfield(L, opts, "attributes");
	if (!lua_istable(L, -1))
		lt_error(L, "create: attributes: expected a list of {name=, dtype=, shape=}");
	lua_Integer n = luaL_len(L, -1);
	/* lt_error does not return (lua_error), but the compiler cannot know:
	 * the return keeps n's range known to it at the calloc. */
	if (n < 1) {
		lt_error(L, "create: attributes: the list is empty");
		return;
	}
	w->attrs = calloc((size_t)n, sizeof *w->attrs);
	if (!w->attrs)
		lt_error(L, "create: out of memory");
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, -1, i);
		if (!lua_istable(L, -1))
			lt_error(L, "create: attributes[%d]: expected a table", (int)i);
		mt_attr *a = &w->attrs[i - 1];
		lua_getfield(L, -1, "name");
		if (!lua_isstring(L, -1))
			lt_error(L, "create: attributes[%d].name: expected a string", (int)i);
		a->name = strdup(lua_tostring(L, -1));
		w->nattrs = (size_t)i;
		lua_getfield(L, -2, "dtype");
		char what[96];
		snprintf(what, sizeof what, "create: attributes[%d].dtype", (int)i);
		a->dtype = lt_check_dtype(L, -1, what);
		lua_getfield(L, -3, "shape");
		int64_t shape[LT_MAX_DIMS];
		snprintf(what, sizeof what, "create: attributes[%d].shape", (int)i);
		a->rank = lua_isnil(L, -1) ? 0 : lt_check_shape(L, -1, what, shape);
		if (a->rank > MT_MAX_RANK)
			lt_error(L, "%s: at most %d dimensions", what, MT_MAX_RANK);
		for (int d = 0; d < a->rank; d++) {
			if (shape[d] < 1)
				lt_error(L, "%s: dimension %d must be >= 1", what, d + 1);
			a->shape[d] = (uint64_t)shape[d];
		}
		lua_pop(L, 4);
	}
	lua_pop(L, 1);
}

static const char *opt_string(lua_State *L, int opts, const char *key)
{
	lua_getfield(L, opts, key);
	const char *s = lua_isnil(L, -1) ? NULL : lua_tostring(L, -1);
	if (!lua_isnil(L, -1) && !s)
		lt_error(L, "create: %s: expected a string", key);
	lua_pop(L, 1); /* the string stays reachable through opts */
	return s;
}

static uint64_t opt_uint(lua_State *L, int opts, const char *key, uint64_t def)
{
	lua_getfield(L, opts, key);
	int ok = 1;
	lua_Integer v = lua_isnil(L, -1) ? (lua_Integer)def : lua_tointegerx(L, -1, &ok);
	if (!ok || v < 0)
		lt_error(L, "create: %s: expected an integer >= 0", key);
	lua_pop(L, 1);
	return (uint64_t)v;
}

/* store:create(name, {attributes=..., version=, parent=, append=, description=,
 * author=, tags={}, shard_size=, shard_rows=, chunk_size=, level=, threads=,
 * rows=EXPECTED}) — a new version, committed when the script ends well. */
static int l_create(lua_State *L)
{
	lt_store *s = check_store(L, 1);
	const char *name = luaL_checkstring(L, 2);
	luaL_checktype(L, 3, LUA_TTABLE);
	struct lt_writer *w = lua_newuserdatauv(L, sizeof *w, 1);
	memset(w, 0, sizeof *w);
	luaL_setmetatable(L, LT_WRITER);
	lua_pushvalue(L, 1);
	lua_setiuservalue(L, -2, 1);
	int wi = lua_gettop(L);
	if (!(w->dataset = strdup(name)))
		return lt_error(L, "create: out of memory");
	mt_writer_opts o;
	mt_writer_opts_init(&o);
	lua_getfield(L, 3, "append");
	o.append = lua_toboolean(L, -1);
	lua_pop(L, 1);
	lua_getfield(L, 3, "attributes");
	int has_attrs = !lua_isnil(L, -1);
	lua_pop(L, 1);
	if (has_attrs || !o.append)
		parse_attrs(L, 3, w);
	o.version = opt_string(L, 3, "version");
	o.parent = opt_string(L, 3, "parent");
	o.description = opt_string(L, 3, "description");
	o.author = opt_string(L, 3, "author");
	if (!o.author)
		o.author = getenv("USER");
	o.shard_bytes = opt_uint(L, 3, "shard_size", o.shard_bytes);
	o.shard_rows = opt_uint(L, 3, "shard_rows", 0);
	o.chunk_bytes = opt_uint(L, 3, "chunk_size", o.chunk_bytes);
	o.level = (int)opt_uint(L, 3, "level", (uint64_t)o.level);
	o.threads = (int)opt_uint(L, 3, "threads", 0);
	w->expected = opt_uint(L, 3, "rows", 0);
	lua_getfield(L, 3, "tags");
	const char *tags[64];
	if (lua_istable(L, -1)) {
		lua_Integer n = luaL_len(L, -1);
		if (n > 64)
			return lt_error(L, "create: tags: at most 64");
		for (lua_Integer i = 1; i <= n; i++) {
			lua_geti(L, -1, i);
			if (!(tags[i - 1] = lua_tostring(L, -1)))
				return lt_error(L, "create: tags[%d]: expected a string", (int)i);
			lua_pop(L, 1); /* still referenced by the tags table */
		}
		o.tags = tags;
		o.ntags = (size_t)n;
	}
	lt_recipe(L, &o.recipe, &o.recipe_len, &o.recipe_args, &o.nrecipe_args);
	lt_sources(L, &o.sources, &o.nsources);
	lt_cancel_callback(L, &o.progress, &o.progress_ud);
	lt_part(L, &o.stage_id, &o.stage_part, &o.stage_parts);
	if (!o.stage_parts)
		o.stage_id = NULL;
	mt_error err = {0};
	if (mt_writer_open(s->s, name, w->attrs, w->nattrs, &o, &w->w, &err))
		return lt_fail(L, &err);
	if (!w->attrs) { /* appending with the parent's attributes */
		mt_reader *pr = NULL;
		if (mt_reader_open(s->s, name, o.parent, &pr, &err))
			return lt_fail(L, &err);
		w->nattrs = mt_reader_nattrs(pr);
		w->attrs = calloc(w->nattrs, sizeof *w->attrs);
		for (size_t i = 0; w->attrs && i < w->nattrs; i++) {
			w->attrs[i] = *mt_reader_attr(pr, i);
			w->attrs[i].name = strdup(w->attrs[i].name);
		}
		mt_reader_close(pr);
		if (!w->attrs)
			return lt_error(L, "create: out of memory");
	}
	lua_pushvalue(L, wi);
	lt_writer_track(L);
	lua_pushvalue(L, wi);
	return 1;
}

/* w:append{attr = tensor, ...} — rows for every attribute, the same number
 * each, of the attribute's dtype and row shape. */
static int l_append(lua_State *L)
{
	struct lt_writer *w = check_writer(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	const void *data[64];
	if (w->nattrs > 64)
		return lt_error(L, "append: more than 64 attributes");
	int64_t rows = -1;
	const char *first = NULL;
	for (size_t i = 0; i < w->nattrs; i++) {
		const mt_attr *a = &w->attrs[i];
		lua_getfield(L, 2, a->name);
		lt_tensor *t = lt_test(L, -1);
		if (!t)
			return lt_error(L, "append: batch.%s: expected a tensor, got %s", a->name,
					  luaL_typename(L, -1));
		if (t->dtype != a->dtype)
			return lt_error(L, "append: batch.%s: dtype %s, the attribute's is %s "
					  "(use :cast)", a->name, mt_dtype_name(t->dtype),
					  mt_dtype_name(a->dtype));
		int ok = t->rank == a->rank + 1;
		for (int d = 0; ok && d < a->rank; d++)
			ok = (uint64_t)t->shape[d + 1] == a->shape[d];
		if (!ok) {
			char want[160] = "(N";
			for (int d = 0; d < a->rank; d++)
				snprintf(want + strlen(want), sizeof want - strlen(want), ", %llu",
					 (unsigned long long)a->shape[d]);
			strcat(want, ")");
			return lt_error(L, "append: batch.%s: %s does not match the "
					  "attribute's rows %s", a->name, luaL_tolstring(L, -1, NULL),
					  want);
		}
		if (rows >= 0 && t->shape[0] != rows)
			return lt_error(L, "append: batch.%s has %d rows, batch.%s has %d",
					  a->name, (int)t->shape[0], first, (int)rows);
		rows = t->shape[0];
		first = a->name;
		data[i] = lt_data(lt_contiguous(L, t));
	}
	mt_error err = {0};
	if (rows > 0 && mt_writer_append(w->w, (uint64_t)rows, data, NULL, &err))
		return lt_fail(L, &err);
	w->rows += (uint64_t)rows;
	/* Without an expected total the script reports progress itself (derive does). */
	if (w->expected)
		lt_progress(L, w->rows, w->expected);
	else
		lt_check_cancel(L);
	return 0;
}

/* w:commit() — the version is committed when the script has finished
 * without error, with every other version the script commits. */
static int l_commit(lua_State *L)
{
	check_writer(L, 1)->marked = 1;
	return 0;
}

/* w:abort() — discard the version. */
static int l_abort(lua_State *L)
{
	struct lt_writer *w = check_writer(L, 1);
	mt_writer_abort(w->w);
	w->state = WS_ABORTED;
	return 0;
}

/* w:attributes() — {name=, dtype=, shape=, ragged=} each, in order. */
static int l_wattrs(lua_State *L)
{
	struct lt_writer *w = luaL_checkudata(L, 1, LT_WRITER);
	lua_createtable(L, (int)w->nattrs, 0);
	for (size_t i = 0; i < w->nattrs; i++) {
		push_attr(L, &w->attrs[i]);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

static int l_written(lua_State *L)
{
	struct lt_writer *w = luaL_checkudata(L, 1, LT_WRITER);
	lua_pushinteger(L, (lua_Integer)w->rows);
	return 1;
}

void lt_writer_track(lua_State *L)
{
	if (lua_getfield(L, LUA_REGISTRYINDEX, "matorage.writers") != LUA_TTABLE) {
		lua_pop(L, 1);
		lua_newtable(L);
		lua_pushvalue(L, -1);
		lua_setfield(L, LUA_REGISTRYINDEX, "matorage.writers");
	}
	lua_insert(L, -2);
	lua_seti(L, -2, luaL_len(L, -2) + 1);
	lua_pop(L, 1);
}

int lt_writer_finish(struct lt_writer *w, int phase, char *name, size_t cap, mt_error *err)
{
	if (w->state != WS_OPEN)
		return 0;
	if (phase == LT_FINISH_CHECK) {
		if (w->marked)
			return 0;
		return mt_error_set(err, MT_ESTATE, "dataset %s: created but never committed "
				    "(call :commit() on its writer)", w->dataset);
	}
	if (phase == LT_FINISH_ABORT) {
		mt_writer_abort(w->w);
		w->state = WS_ABORTED;
		return 0;
	}
	char ver[256];
	int rc = mt_writer_commit(w->w, ver, sizeof ver, err);
	w->state = rc ? WS_ABORTED : WS_DONE;
	if (!rc)
		snprintf(name, cap, "%s@%s", w->dataset, ver);
	return rc;
}

/* ---- module-level shortcuts on the run's store ---------------------------------- */

static int with_default_store(lua_State *L, lua_CFunction f)
{
	push_store(L, lt_default_store(L), 0);
	lua_insert(L, 1);
	return f(L);
}

static int l_m_open(lua_State *L) { return with_default_store(L, l_open); }
static int l_m_create(lua_State *L) { return with_default_store(L, l_create); }

/* matorage.part() -> k, n: this run is part k of n (1, 1 for a whole run), so a
 * recipe can take its share of the rows. */
static int l_part(lua_State *L)
{
	const char *id;
	uint64_t k, n;
	lt_part(L, &id, &k, &n);
	lua_pushinteger(L, n ? (lua_Integer)k : 1);
	lua_pushinteger(L, n ? (lua_Integer)n : 1);
	return 2;
}

void lt_dataset_register(lua_State *L)
{
	static const luaL_Reg store_m[] = {
		{"open", l_open}, {"create", l_create}, {"datasets", l_datasets},
		{"versions", l_versions}, {NULL, NULL},
	};
	static const luaL_Reg reader_m[] = {
		{"info", l_info}, {"rows", l_nrows}, {"read", l_read}, {"batch", l_batch},
		{"batches", l_batches}, {NULL, NULL},
	};
	static const luaL_Reg writer_m[] = {
		{"append", l_append}, {"commit", l_commit}, {"abort", l_abort},
		{"rows", l_written}, {"attributes", l_wattrs}, {NULL, NULL},
	};
	static const luaL_Reg store_mt[] = {
		{"__gc", l_store_gc}, {"__tostring", l_store_tostring}, {NULL, NULL},
	};
	static const luaL_Reg reader_mt[] = {
		{"__gc", l_reader_gc}, {"__close", l_reader_gc}, {"__tostring", l_reader_tostring},
		{NULL, NULL},
	};
	static const luaL_Reg writer_mt[] = {
		{"__gc", l_writer_gc}, {"__tostring", l_writer_tostring}, {NULL, NULL},
	};
	static const luaL_Reg funcs[] = {
		{"store", l_store}, {"open", l_m_open}, {"create", l_m_create}, {"part", l_part},
		{NULL, NULL},
	};
	lt_new_class(L, LT_STORE, store_m, store_mt);
	lt_new_class(L, LT_READER, reader_m, reader_mt);
	lt_new_class(L, LT_WRITER, writer_m, writer_mt);
	luaL_setfuncs(L, funcs, 0);
}
