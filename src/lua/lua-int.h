/* lua-int.h — what the parts of the matorage Lua module share: tensors, the running script's context, helpers. */
#ifndef MT_LUA_INT_H
#define MT_LUA_INT_H

#include <lauxlib.h>
#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "matorage.h"
#include "script.h"

#define LT_TENSOR "matorage.tensor"
#define LT_STORE "matorage.store"
#define LT_READER "matorage.reader"
#define LT_WRITER "matorage.writer"
#define LT_RNG "matorage.rng"

/* Element data shared by a tensor and its views; freed with the last of them.
 * Allocated through the state's allocator so the memory limit counts it. */
struct lt_buf {
	void *data;
	size_t bytes;
	void *block; /* what was allocated: data, or a block data is aligned inside */
	size_t block_bytes;
	int refs;
};

/* A tensor: a strided view (strides in elements) of a buffer. */
typedef struct lt_tensor {
	struct lt_buf *buf;
	mt_dtype dtype;
	int rank;
	int64_t shape[MT_MAX_RANK + 1];
	int64_t strides[MT_MAX_RANK + 1];
	int64_t offset; /* in elements */
} lt_tensor;

#define LT_MAX_DIMS (MT_MAX_RANK + 1)

/* ---- lua-tensor.c ---- */
void lt_tensor_register(lua_State *L);
lt_tensor *lt_check(lua_State *L, int idx);
lt_tensor *lt_test(lua_State *L, int idx);
/* A new contiguous tensor pushed on the stack, its elements not yet written.
 * A shape too large (lt_check_size) raises an error naming `what`. */
lt_tensor *lt_new(lua_State *L, const char *what, mt_dtype dt, int rank, const int64_t *shape);
/* The element count of a shape, into *numel; MT_ERANGE when a dim is negative
 * or the non-empty dims span more bytes (at esize bytes an element) than any
 * tensor may: that bound keeps every stride, offset and size computation in range. */
int lt_shape_size(int rank, const int64_t *shape, size_t esize, int64_t *numel);
/* lt_shape_size or a Lua error naming `what` (a file, an operation) and the shape. */
int64_t lt_check_size(lua_State *L, const char *what, mt_dtype dt, int rank, const int64_t *shape);
int64_t lt_numel(const lt_tensor *t);
int lt_is_contiguous(const lt_tensor *t);
/* Pointer to the first element (valid for contiguous tensors). */
void *lt_data(const lt_tensor *t);
/* t itself when contiguous, else a contiguous copy pushed on the stack
 * (the caller notes the stack top). */
lt_tensor *lt_contiguous(lua_State *L, lt_tensor *t);
/* t converted to dtype dt, a new tensor pushed on the stack. */
lt_tensor *lt_cast(lua_State *L, lt_tensor *t, mt_dtype dt);
/* A dtype argument (a name such as "float32"); the error names `what`. */
mt_dtype lt_check_dtype(lua_State *L, int idx, const char *what);
/* A shape given as a table of integers >= 0 (or >= 1 when !zero_ok). */
int lt_check_shape(lua_State *L, int idx, const char *what, int64_t *shape);
/* v into the element at p of dtype dt, as a cast converts it: integers
 * rounded toward zero and saturating at the dtype's range, NaN as 0. */
void lt_set_double(void *p, mt_dtype dt, double v);
/* Byte-swap n elements of size sz in place. */
void lt_swap_bytes(void *p, size_t n, size_t sz);

/* What lua-tensor.c shares with lua-tensor-ops.c: strided element access. */

/* Elements converted per step of the generic loops: enough to amortise the
 * per-step work, small enough to stay in L1. */
#define LT_BLOCK 2048

/* A tensor seen with another shape, to read or write element by element in
 * flat (C) order; strides may be 0 (broadcast) or negative (flipped). */
struct lt_sv {
	char *base;
	mt_dtype dt;
	size_t esize;
	int rank;
	int64_t shape[LT_MAX_DIMS];
	int64_t strides[LT_MAX_DIMS];
};

/* t seen with shape `shape` of rank `rank` (numpy broadcasting: dims
 * aligned on the right, size-1 dims repeated). */
void lt_sv_of(struct lt_sv *v, const lt_tensor *t, int rank, const int64_t *shape);
/* Move n elements from flat position start between the view and doubles
 * (store: into the view; integers saturate, as a cast does). */
void lt_sv_move(const struct lt_sv *v, int64_t start, int64_t n, double *buf, int store);
/* The same for an integer (or bool) view and int64 values, exactly: a
 * uint64 as its bits; a store keeps each value's low bits (wraparound). */
void lt_sv_move_int(const struct lt_sv *v, int64_t start, int64_t n, int64_t *buf, int store);
/* Order (-1, 0, 1) of x and y, each unsigned (a uint64's bits) when its flag says so. */
int lt_cmp_int(int64_t x, int xu, int64_t y, int yu);
/* The Lua value at idx as an exact 64-bit integer: a boolean, or a number with
 * an integral value in int64's range; 0 when it is neither. */
int lt_scalar_int(lua_State *L, int idx, int64_t *v);
/* The number (or boolean, as 0 or 1) at idx; the error names `what`. */
double lt_check_value(lua_State *L, int idx, const char *what);
/* A 1-based dimension argument of t (negative counts from the end; extra
 * allows dims beyond t's rank), 0-based. */
int lt_check_dim(lua_State *L, int idx, const lt_tensor *t, int extra);
int lt_is_float(mt_dtype dt);
/* The arithmetic, comparison, elementwise and reduction methods and
 * metamethods, into the methods table (on top) and the metatable below it. */
void lt_tensor_ops_register(lua_State *L);

/* ---- lua-io.c ---- */
void lt_io_register(lua_State *L);

/* ---- lua-dataset.c ---- */
void lt_dataset_register(lua_State *L);

/* ---- lua-rng.c ---- */
void lt_rng_register(lua_State *L);

/* ---- script.c: the running script, as the bindings see it ---- */
struct lt_ctx;
struct lt_ctx *lt_ctx(lua_State *L);
/* Raise a Lua error unless `path` lies under an allowed directory (or the
 * script is unsafe); `what` names the argument. */
void lt_check_path(lua_State *L, const char *path, int write, const char *what);
/* Raise a Lua error unless the store `url` names is the one the script runs
 * against or an allowed one (mt_script_store_key), or the script is unsafe.
 * Called before the store is opened: a refused one is never contacted. */
void lt_check_store(lua_State *L, const char *url);
/* The store a script gets when it names none (borrowed). */
mt_store *lt_default_store(lua_State *L);
const mt_store_opts *lt_store_opts(lua_State *L);
/* The running recipe: script bytes and arguments, for the writers it opens. */
void lt_recipe(lua_State *L, const void **code, size_t *len, const char *const **args,
	       size_t *nargs);
/* The versions the recipe opened (each once), recorded as the sources of
 * the versions it writes (borrowed; valid until the next note). */
void lt_source_note(lua_State *L, mt_store *store, const char *dataset, const char *version);
void lt_sources(lua_State *L, const mt_source **out, size_t *n);
/* Report progress (rows); raises "canceled" when the host cancels. */
void lt_progress(lua_State *L, uint64_t done, uint64_t total);
/* Raise "canceled" when the host has asked. */
void lt_check_cancel(lua_State *L);
/* A progress callback for library calls on other threads (the writer's
 * uploads): it only reports whether the host has canceled. */
void lt_cancel_callback(lua_State *L, mt_progress_fn *fn, void **ud);
/* The run's part (mt_script_opts): *n 0 when it is a whole run. */
void lt_part(lua_State *L, const char **stage_id, uint64_t *k, uint64_t *n);
/* Memory through the state's allocator (counted against its limit);
 * lt_alloc raises a Lua error when the limit or the system says no. */
void *lt_alloc(lua_State *L, size_t bytes);
void lt_free(lua_State *L, void *p, size_t bytes);
/* Remember the writer userdata on top of the stack (and pop it): the runner
 * commits the script's writers when it ends well. */
struct lt_writer;
void lt_writer_track(lua_State *L);
int lt_writer_finish(struct lt_writer *w, int commit, char *name, size_t cap, mt_error *err);
/* What the runner asks of each writer when the script ends: whether the
 * script committed it (MT_ESTATE naming the dataset if not), commit it
 * ("DATASET@VERSION" into name), or abort it. */
enum { LT_FINISH_CHECK, LT_FINISH_COMMIT, LT_FINISH_ABORT };
/* luaL_error with C's printf formats (lua_pushfstring knows few of them). */
int lt_error(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raise a Lua error from a library error record. */
int lt_fail(lua_State *L, const mt_error *err);
/* Register the metatable of a userdata type: its metamethods (meta) and, when
 * methods is not NULL, a table of them as __index.  The stack is left as it was. */
void lt_new_class(lua_State *L, const char *name, const luaL_Reg *methods, const luaL_Reg *meta);

#endif
