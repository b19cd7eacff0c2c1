/* lua-io.c — file readers (IDX plain or gzip, .npy, CSV, raw binary, directory walk) and the .npy writer, all sandbox-checked. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "lua-int.h"

/* ---- handles that a Lua error must not leak ---------------------------------- */

#define LT_BOX "matorage.box"

/* A C handle owned by a userdata on the stack: closed by its __gc when an
 * error unwinds past it, or early by box_close. */
struct box {
	void *p;
	void (*close)(void *p);
};

static int box_gc(lua_State *L)
{
	struct box *b = luaL_checkudata(L, 1, LT_BOX);
	if (b->p)
		b->close(b->p);
	b->p = NULL;
	return 0;
}

static struct box *box_push(lua_State *L, void (*close)(void *p))
{
	struct box *b = lua_newuserdatauv(L, sizeof *b, 0);
	b->p = NULL;
	b->close = close;
	luaL_setmetatable(L, LT_BOX);
	return b;
}

static void box_close(struct box *b)
{
	if (b->p)
		b->close(b->p);
	b->p = NULL;
}

static void close_gz(void *p) { gzclose(p); }
static void close_npy(void *p) { mt_npy_close(p); }
static void close_file(void *p) { fclose(p); }
static void close_dir(void *p) { closedir(p); }

/* ---- IDX (the MNIST format) ---------------------------------------------------- */

static mt_dtype idx_dtype(int code)
{
	switch (code) {
	case 0x08: return MT_UINT8;
	case 0x09: return MT_INT8;
	case 0x0b: return MT_INT16;
	case 0x0c: return MT_INT32;
	case 0x0d: return MT_FLOAT32;
	case 0x0e: return MT_FLOAT64;
	default: return MT_DTYPE_INVALID;
	}
}

/* Read exactly n bytes or raise naming the file; gzread also reads plain files. */
static void gz_need(lua_State *L, gzFile f, void *buf, size_t n, const char *path,
		    const char *what)
{
	char *p = buf;
	while (n) {
		unsigned chunk = n > (1u << 30) ? 1u << 30 : (unsigned)n;
		int got = gzread(f, p, chunk);
		if (got <= 0) {
			int e;
			const char *msg = gzerror(f, &e);
			lt_error(L, "read_idx: %s: %s (%s)", path,
				   got == 0 ? "file ends early" : "cannot read", got == 0 ? what : msg);
		}
		p += got;
		n -= (size_t)got;
	}
}

/* matorage.read_idx(path) — an IDX file (gzip-compressed or not) as a tensor of
 * its own dtype and shape. */
static int l_read_idx(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lt_check_path(L, path, 0, "read_idx");
	struct box *box = box_push(L, close_gz);
	gzFile f = gzopen(path, "rb");
	if (!f)
		return lt_error(L, "read_idx: %s: %s", path, strerror(errno));
	box->p = f;
	gzbuffer(f, 1 << 17);
	uint8_t head[4];
	gz_need(L, f, head, 4, path, "in the 4-byte header");
	mt_dtype dt = idx_dtype(head[2]);
	if (head[0] || head[1] || dt == MT_DTYPE_INVALID || head[3] == 0 ||
	    head[3] > LT_MAX_DIMS)
		return lt_error(L, "read_idx: %s: not an IDX file (magic %02x %02x %02x %02x)",
				  path, head[0], head[1], head[2], head[3]);
	int rank = head[3];
	int64_t shape[LT_MAX_DIMS];
	for (int d = 0; d < rank; d++) {
		uint8_t b[4];
		gz_need(L, f, b, 4, path, "in the dimensions");
		shape[d] = (int64_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
				     (uint32_t)b[2] << 8 | b[3]);
	}
	/* The header's dims may promise more than any tensor can hold. */
	lt_tensor *t = lt_new(L, lua_pushfstring(L, "read_idx: %s", path), dt, rank, shape);
	size_t bytes = (size_t)lt_numel(t) * mt_dtype_size(dt);
	gz_need(L, f, lt_data(t), bytes, path, "before all the values its dimensions promise");
	uint8_t extra;
	int more = gzread(f, &extra, 1);
	box_close(box);
	if (more != 0)
		return lt_error(L, "read_idx: %s: bytes after the %zu its dimensions hold", path,
				  bytes);
	lt_swap_bytes(lt_data(t), (size_t)lt_numel(t), mt_dtype_size(dt));
	return 1;
}

/* ---- .npy ------------------------------------------------------------------ */

static int l_read_npy(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lt_check_path(L, path, 0, "read_npy");
	mt_npy *n = NULL;
	mt_error err = {0};
	struct box *box = box_push(L, close_npy);
	if (mt_npy_open(path, &n, &err))
		return lt_fail(L, &err);
	box->p = n;
	const mt_npy_info *in = mt_npy_get_info(n);
	if (in->dtype == MT_STR)
		return lt_error(L, "read_npy: %s: NumPy text ('<U'); a tensor holds numbers only",
				path);
	if (in->rank == 0 || in->rank > LT_MAX_DIMS)
		return lt_error(L, "read_npy: %s: %d dimensions; 1 to %d are supported", path,
				in->rank, LT_MAX_DIMS);
	int64_t shape[LT_MAX_DIMS];
	for (int d = 0; d < in->rank; d++)
		shape[d] = (int64_t)in->shape[d];
	lt_tensor *t = lt_new(L, lua_pushfstring(L, "read_npy: %s", path), in->dtype, in->rank,
			      shape);
	size_t bytes = (size_t)lt_numel(t) * mt_dtype_size(t->dtype);
	int rc = mt_npy_read_rows(n, 0, in->shape[0], lt_data(t), bytes, &err);
	box_close(box);
	if (rc)
		return lt_fail(L, &err);
	return 1;
}

/* matorage.write_npy(path, tensor) */
static int l_write_npy(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lt_tensor *t = lt_check(L, 2);
	lt_check_path(L, path, 1, "write_npy");
	lt_tensor *c = lt_contiguous(L, t);
	uint64_t shape[LT_MAX_DIMS];
	for (int d = 0; d < c->rank; d++)
		shape[d] = (uint64_t)c->shape[d];
	mt_npy_writer *w = NULL;
	mt_error err = {0};
	int rc = mt_npy_create(path, c->dtype, c->rank, shape, &w, &err);
	if (!rc)
		rc = mt_npy_write(w, lt_data(c), (size_t)lt_numel(c) * mt_dtype_size(c->dtype), &err);
	if (!rc)
		rc = mt_npy_finish(w, &err);
	mt_npy_writer_close(w);
	if (rc)
		return lt_fail(L, &err);
	return 0;
}

/* ---- whole files ------------------------------------------------------------ */

/* The file's bytes as a Lua string on the stack (sandbox-checked). */
static const char *slurp(lua_State *L, const char *path, const char *what, size_t *len)
{
	lt_check_path(L, path, 0, what);
	struct box *box = box_push(L, close_file);
	FILE *f = fopen(path, "rb");
	if (!f)
		lt_error(L, "%s: %s: %s", what, path, strerror(errno));
	box->p = f;
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	size_t got;
	do {
		char *p = luaL_prepbuffsize(&b, 1 << 16);
		got = fread(p, 1, 1 << 16, f);
		luaL_addsize(&b, got);
	} while (got == 1 << 16);
	int bad = ferror(f);
	if (bad)
		lt_error(L, "%s: %s: read error", what, path);
	luaL_pushresult(&b);
	box_close(box);
	lua_remove(L, -2);
	return lua_tolstring(L, -1, len);
}

/* matorage.read_raw(path, dtype, shape [, {offset=, big_endian=}]) — one -1
 * in shape is inferred from the file's size. */
static int l_read_raw(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	mt_dtype dt = lt_check_dtype(L, 2, "read_raw: dtype");
	int64_t shape[LT_MAX_DIMS];
	int rank = lt_check_shape(L, 3, "read_raw: shape", shape);
	lua_Integer offset = 0;
	int big = 0;
	if (lua_istable(L, 4)) {
		lua_getfield(L, 4, "offset");
		offset = luaL_optinteger(L, -1, 0);
		lua_getfield(L, 4, "big_endian");
		big = lua_toboolean(L, -1);
		lua_pop(L, 2);
	}
	size_t len;
	const char *data = slurp(L, path, "read_raw", &len);
	if (offset < 0 || (size_t)offset > len)
		return lt_error(L, "read_raw: %s: offset %d is outside its %zu bytes", path,
				  (int)offset, len);
	size_t es = mt_dtype_size(dt), avail = len - (size_t)offset;
	int infer = -1;
	for (int d = 0; d < rank; d++) {
		if (shape[d] != -1)
			continue;
		if (infer >= 0)
			return lt_error(L, "read_raw: shape: only one dimension may be -1");
		infer = d;
		shape[d] = 1; /* for the size of the others */
	}
	const char *what = lua_pushfstring(L, "read_raw: %s", path);
	int64_t known = lt_check_size(L, what, dt, rank, shape);
	if (infer >= 0)
		shape[infer] = known ? (int64_t)(avail / es) / known : 0;
	int64_t n = lt_check_size(L, what, dt, rank, shape);
	if ((uint64_t)n * es != avail)
		return lt_error(L, "read_raw: %s: %zu bytes after offset %d do not hold the "
				  "shape's %lld %s elements", path, avail, (int)offset,
				  (long long)n, mt_dtype_name(dt));
	lt_tensor *t = lt_new(L, what, dt, rank, shape);
	memcpy(lt_data(t), data + offset, avail);
	if (big)
		lt_swap_bytes(lt_data(t), (size_t)n, es);
	return 1;
}

/* ---- CSV --------------------------------------------------------------------- */

struct csv_opts {
	char delim;
	int header;
	int has_fill;
	double fill;   /* for float columns */
	int64_t ifill; /* for integer columns, exactly (a uint64's bits) */
	mt_dtype dtype;
	mt_dtype parse; /* what fields are parsed into: float64, or int64 or uint64 exactly */
};

/* read_csv's options (the table at idx, or nil) into o. */
static void csv_options(lua_State *L, int idx, struct csv_opts *o)
{
	*o = (struct csv_opts){',', 1, 0, 0, 0, MT_FLOAT32, MT_FLOAT64};
	if (lua_isnoneornil(L, idx))
		return;
	if (!lua_istable(L, idx))
		lt_error(L, "read_csv: options must be a table");
	lua_getfield(L, idx, "header");
	if (!lua_isnil(L, -1))
		o->header = lua_toboolean(L, -1);
	lua_getfield(L, idx, "delimiter");
	const char *d = luaL_optstring(L, -1, ",");
	if (strlen(d) != 1)
		lt_error(L, "read_csv: delimiter must be one character");
	o->delim = d[0];
	lua_getfield(L, idx, "dtype");
	if (!lua_isnil(L, -1))
		o->dtype = lt_check_dtype(L, -1, "read_csv: dtype");
	/* Integer columns are parsed as integers: through a double, values beyond
	 * 2^53 would round. */
	if (o->dtype != MT_FLOAT16 && o->dtype != MT_FLOAT32 && o->dtype != MT_FLOAT64 &&
	    o->dtype != MT_BOOL)
		o->parse = o->dtype == MT_UINT64 ? MT_UINT64 : MT_INT64;
	lua_getfield(L, idx, "fill");
	if (!lua_isnil(L, -1)) {
		int isint;
		o->has_fill = 1;
		o->fill = luaL_checknumber(L, -1);
		o->ifill = lua_tointegerx(L, -1, &isint);
		if (!isint) /* a float fill for integer columns, converted as a cast does */
			lt_set_double(&o->ifill, o->parse == MT_UINT64 ? MT_UINT64 : MT_INT64,
				      o->fill);
	}
	lua_pop(L, 4);
}

/* The line at p (before end) ends at *lb, "\n" or "\r\n" left out; returns where
 * the next line starts. */
static const char *csv_line(const char *p, const char *end, const char **lb)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	const char *le = nl ? nl : end;
	*lb = le > p && le[-1] == '\r' ? le - 1 : le;
	return nl ? nl + 1 : end;
}

static int64_t csv_nfields(const char *p, const char *lb, char delim)
{
	int64_t n = 1;
	for (; p < lb; p++)
		n += *p == delim;
	return n;
}

/* Next field of line [p, end): returns its end; quotes around a value are dropped. */
static const char *csv_field(const char *p, const char *end, char delim, const char **fs,
			     const char **fe)
{
	const char *q = p;
	while (q < end && *q != delim)
		q++;
	const char *a = p, *b = q;
	while (a < b && (*a == ' ' || *a == '\t'))
		a++;
	while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
		b--;
	if (b - a >= 2 && *a == '"' && b[-1] == '"') {
		a++;
		b--;
	}
	*fs = a;
	*fe = b;
	return q;
}

static int csv_missing(const char *a, const char *b)
{
	size_t n = (size_t)(b - a);
	return n == 0 || (n == 2 && !strncmp(a, "NA", 2)) || (n == 3 && !strncmp(a, "N/A", 3));
}

/* The number in num into the element at e of dtype parse: an integer exactly
 * (saturating at the range of int64 or uint64), anything else through
 * strtod as a cast converts it.  0 when num is not a number. */
static int csv_number(const char *num, mt_dtype parse, void *e)
{
	char *ep;
	errno = 0;
	if (parse == MT_UINT64 && num[strspn(num, " \t")] != '-') {
		unsigned long long u = strtoull(num, &ep, 10);
		if (ep != num && !*ep) {
			*(uint64_t *)e = errno == ERANGE ? UINT64_MAX : u;
			return 1;
		}
	} else if (parse != MT_FLOAT64) {
		long long v = strtoll(num, &ep, 10); /* saturates on ERANGE */
		if (ep != num && !*ep) {
			*(int64_t *)e = parse == MT_UINT64 && v < 0 ? 0 : v;
			return 1;
		}
	}
	double d = strtod(num, &ep);
	if (*ep || ep == num)
		return 0;
	lt_set_double(e, parse, d);
	return 1;
}

/* What every line of one read_csv call needs. */
struct csv_doc {
	const char *path;
	const struct csv_opts *o;
	int64_t cols;
	char *out; /* elements of dtype o->parse, row-major */
	int names; /* stack index of the column names */
};

/* Line [p, lb), number `line` in the file: the column names when is_header,
 * else the values of row r. */
static void csv_row(lua_State *L, const struct csv_doc *d, int64_t line, const char *p,
		    const char *lb, int64_t r, int is_header)
{
	const struct csv_opts *o = d->o;
	int64_t nf = csv_nfields(p, lb, o->delim);
	if (nf != d->cols)
		lt_error(L, "read_csv: %s:%lld: %lld fields, the first line has %lld", d->path,
			 (long long)line, (long long)nf, (long long)d->cols);
	size_t es = mt_dtype_size(o->parse);
	char num[128];
	for (int64_t c = 0; c < d->cols; c++) {
		const char *fs, *fe;
		p = csv_field(p, lb, o->delim, &fs, &fe) + 1;
		if (is_header) {
			lua_pushlstring(L, fs, (size_t)(fe - fs));
			lua_seti(L, d->names, c + 1);
			continue;
		}
		char *e = d->out + (r * d->cols + c) * (int64_t)es;
		size_t fl = (size_t)(fe - fs);
		if (csv_missing(fs, fe) && !o->has_fill)
			lt_error(L, "read_csv: %s:%lld: column %lld is missing a value (give "
				    "fill= to use a default)", d->path, (long long)line,
				 (long long)c + 1);
		if (csv_missing(fs, fe)) {
			memcpy(e, o->parse == MT_FLOAT64 ? (const void *)&o->fill : &o->ifill, es);
			continue;
		}
		/* Too long to be cut short: a number's digits must all count. */
		if (fl >= sizeof num)
			lt_error(L, "read_csv: %s:%lld: column %lld: a value of %zu characters is "
				    "not a number", d->path, (long long)line, (long long)c + 1, fl);
		memcpy(num, fs, fl);
		num[fl] = 0;
		if (!csv_number(num, o->parse, e))
			lt_error(L, "read_csv: %s:%lld: column %lld: '%s' is not a number", d->path,
				 (long long)line, (long long)c + 1, num);
	}
}

/* matorage.read_csv(path [, {header=true, delimiter=",", dtype="float32",
 * fill=NUMBER}]) — numeric columns as one (rows, columns) tensor, plus the
 * column names.  A missing value (empty, NA) is an error naming the line
 * and column unless fill is given. */
static int l_read_csv(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct csv_opts o;
	csv_options(L, 2, &o);
	lua_settop(L, 2);
	size_t len;
	const char *text = slurp(L, path, "read_csv", &len), *end = text + len, *lb;
	int data_idx = lua_gettop(L);
	const char *what = lua_pushfstring(L, "read_csv: %s", path);
	/* First pass: columns (of the first line) and data lines. */
	int64_t cols = 0, rows = 0;
	for (const char *p = text, *next; p < end; p = next) {
		next = csv_line(p, end, &lb);
		if (lb > p && !cols) {
			cols = csv_nfields(p, lb, o.delim);
			rows += !o.header;
		} else if (lb > p) {
			rows++;
		}
	}
	if (cols == 0)
		return lt_error(L, "read_csv: %s: no columns (empty file)", path);
	lua_createtable(L, cols < (1 << 20) ? (int)cols : 0, 0); /* column names */
	int names_idx = lua_gettop(L);
	int64_t shape[2] = {rows, cols};
	/* Parsed as float64 or 64-bit integers, cast once at the end. */
	lt_tensor *t = lt_new(L, what, o.parse, 2, shape);
	struct csv_doc d = {path, &o, cols, lt_data(t), names_idx};
	int64_t r = 0, line = 0;
	int header = o.header;
	for (const char *p = text, *next; p < end; p = next) {
		next = csv_line(p, end, &lb);
		line++;
		if (lb == p)
			continue;
		csv_row(L, &d, line, p, lb, r, header);
		r += !header;
		header = 0;
	}
	if (!o.header)
		for (int64_t c = 0; c < cols; c++) {
			lua_pushfstring(L, "%I", (lua_Integer)c + 1);
			lua_seti(L, names_idx, c + 1);
		}
	if (o.dtype != o.parse)
		lt_cast(L, t, o.dtype);
	else
		lua_pushvalue(L, names_idx + 1);
	lua_pushvalue(L, names_idx);
	lua_remove(L, data_idx);
	return 2;
}

/* ---- directories ---------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file under dir (recursively) into the table on top, sorted. */
static void walk_dir(lua_State *L, const char *dir, int depth)
{
	if (depth > 64)
		lt_error(L, "walk: %s: directories nested deeper than 64", dir);
	DIR *d = opendir(dir);
	if (!d)
		lt_error(L, "walk: %s: %s", dir, strerror(errno));
	struct box *box = box_push(L, close_dir);
	box->p = d;
	/* Names go straight into Lua (a table, then a GC-owned array of pointers to
	 * sort), so an error at any point leaks nothing. */
	lua_newtable(L);
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		lua_pushfstring(L, "%s/%s", dir, e->d_name);
		lua_seti(L, -2, (lua_Integer)++n);
	}
	box_close(box);
	const char **v = lua_newuserdatauv(L, (n ? n : 1) * sizeof *v, 0);
	for (size_t i = 0; i < n; i++) {
		lua_geti(L, -2, (lua_Integer)i + 1);
		v[i] = lua_tostring(L, -1); /* still referenced by the table */
		lua_pop(L, 1);
	}
	if (n)
		qsort(v, n, sizeof *v, cmp_str);
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		lua_pushstring(L, v[i]);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	lua_replace(L, -4); /* the sorted list takes the box's place */
	lua_pop(L, 2);
	for (size_t i = 1; i <= n; i++) {
		lua_geti(L, -1, (lua_Integer)i);
		const char *path = lua_tostring(L, -1);
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			lua_pushvalue(L, -3);
			walk_dir(L, path, depth + 1);
			lua_pop(L, 1);
		} else if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			lua_seti(L, -3, luaL_len(L, -3) + 1);
			continue;
		}
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
}

/* matorage.walk(dir [, pattern]) — the regular files under dir, sorted by
 * path within each directory; with a Lua pattern, only paths matching it. */
static int l_walk(lua_State *L)
{
	const char *dir = luaL_checkstring(L, 1);
	const char *pat = luaL_optstring(L, 2, NULL);
	lt_check_path(L, dir, 0, "walk");
	lua_newtable(L);
	walk_dir(L, dir, 0);
	if (!pat)
		return 1;
	lua_newtable(L);
	lua_Integer n = luaL_len(L, -2), k = 0;
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, -2, i);
		lua_getglobal(L, "string");
		lua_getfield(L, -1, "find");
		lua_remove(L, -2);
		lua_pushvalue(L, -2);
		lua_pushstring(L, pat);
		lua_call(L, 2, 1);
		int hit = !lua_isnil(L, -1);
		lua_pop(L, 1);
		if (hit)
			lua_seti(L, -2, ++k);
		else
			lua_pop(L, 1);
	}
	return 1;
}

void lt_io_register(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"read_idx", l_read_idx}, {"read_npy", l_read_npy}, {"write_npy", l_write_npy},
		{"read_raw", l_read_raw}, {"read_csv", l_read_csv}, {"walk", l_walk},
		{NULL, NULL},
	};
	static const luaL_Reg box_mt[] = {{"__gc", box_gc}, {NULL, NULL}};
	luaL_setfuncs(L, funcs, 0);
	lt_new_class(L, LT_BOX, NULL, box_mt);
}
