/* lua-tensor.c — matorage.tensor: n-d arrays over contiguous buffers, dtypes, views, strided access, construction, rows. */
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "lua-int.h"

/* Buffers from this size on are aligned to (transparent) huge pages. */
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((uint64_t)8 << 20)

/* ---- dtypes --------------------------------------------------------------- */

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	uint32_t bits;
	if (exp == 0) {
		if (man == 0) {
			bits = sign;
		} else { /* subnormal: renormalise */
			exp = 127 - 15 + 1;
			while (!(man & 0x400)) {
				man <<= 1;
				exp--;
			}
			bits = sign | exp << 23 | (man & 0x3ff) << 13;
		}
	} else if (exp == 31) {
		bits = sign | 0x7f800000u | man << 13;
	} else {
		bits = sign | (exp + 127 - 15) << 23 | man << 13;
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	uint32_t man = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		if (exp < -10)
			return sign;
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t half = (uint32_t)exp << 10 | man >> 13, rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
		half++; /* may carry into the exponent: still the right rounding */
	return (uint16_t)(sign | half);
}

static double elem_get(const void *p, mt_dtype dt)
{
	switch (dt) {
	case MT_BOOL: return *(const uint8_t *)p != 0;
	case MT_INT8: return *(const int8_t *)p;
	case MT_INT16: return *(const int16_t *)p;
	case MT_INT32: return *(const int32_t *)p;
	case MT_INT64: return (double)*(const int64_t *)p;
	case MT_UINT8: return *(const uint8_t *)p;
	case MT_UINT16: return *(const uint16_t *)p;
	case MT_UINT32: return *(const uint32_t *)p;
	case MT_UINT64: return (double)*(const uint64_t *)p;
	case MT_FLOAT16: return half_to_float(*(const uint16_t *)p);
	case MT_FLOAT32: return *(const float *)p;
	case MT_FLOAT64: return *(const double *)p;
	default: return 0;
	}
}

/* Integers saturate at their range and NaN becomes 0, so a cast never
 * hits C's undefined float-to-int conversion. */
#define SAT(type, lo, hi) (v != v ? (type)0 : v <= (lo) ? (type)(lo) : v >= (hi) ? (type)(hi) : (type)v)
static void elem_set(void *p, mt_dtype dt, double v)
{
	switch (dt) {
	case MT_BOOL: *(uint8_t *)p = v != 0; break;
	case MT_INT8: *(int8_t *)p = SAT(int8_t, -128.0, 127.0); break;
	case MT_INT16: *(int16_t *)p = SAT(int16_t, -32768.0, 32767.0); break;
	case MT_INT32: *(int32_t *)p = SAT(int32_t, -2147483648.0, 2147483647.0); break;
	case MT_INT64: *(int64_t *)p = v != v ? 0 : v <= -9223372036854775808.0 ? INT64_MIN
				       : v >= 9223372036854775807.0 ? INT64_MAX : (int64_t)v; break;
	case MT_UINT8: *(uint8_t *)p = SAT(uint8_t, 0.0, 255.0); break;
	case MT_UINT16: *(uint16_t *)p = SAT(uint16_t, 0.0, 65535.0); break;
	case MT_UINT32: *(uint32_t *)p = SAT(uint32_t, 0.0, 4294967295.0); break;
	case MT_UINT64: *(uint64_t *)p = v != v || v <= 0 ? 0 : v >= 18446744073709551615.0
				       ? UINT64_MAX : (uint64_t)v; break;
	case MT_FLOAT16: *(uint16_t *)p = float_to_half((float)v); break;
	case MT_FLOAT32: *(float *)p = (float)v; break;
	case MT_FLOAT64: *(double *)p = v; break;
	default: break;
	}
}

void lt_set_double(void *p, mt_dtype dt, double v)
{
	elem_set(p, dt, v);
}

int lt_is_float(mt_dtype dt)
{
	return dt == MT_FLOAT16 || dt == MT_FLOAT32 || dt == MT_FLOAT64;
}

void lt_swap_bytes(void *p, size_t n, size_t sz)
{
	uint8_t *b = p;
	for (size_t i = 0; sz > 1 && i < n; i++, b += sz)
		for (size_t k = 0; k < sz / 2; k++) {
			uint8_t t = b[k];
			b[k] = b[sz - 1 - k];
			b[sz - 1 - k] = t;
		}
}

mt_dtype lt_check_dtype(lua_State *L, int idx, const char *what)
{
	const char *name = luaL_checkstring(L, idx);
	mt_dtype dt = mt_dtype_parse(name);
	if (dt == MT_BFLOAT16)
		lt_error(L, "%s: bfloat16 is for model checkpoints only; use float32", what);
	if (dt == MT_STR)
		lt_error(L, "%s: a tensor holds numbers; str text reads as its uint8 bytes", what);
	if (dt == MT_DTYPE_INVALID)
		lt_error(L, "%s: unknown dtype '%s' (bool, int8..int64, uint8..uint64, "
			   "float16, float32, float64)", what, name);
	return dt;
}

int lt_check_shape(lua_State *L, int idx, const char *what, int64_t *shape)
{
	if (lua_isinteger(L, idx)) {
		shape[0] = lua_tointeger(L, idx);
		if (shape[0] < 0)
			lt_error(L, "%s: dimension 1 is %lld, must be >= 0", what,
				   (long long)shape[0]);
		return 1;
	}
	if (!lua_istable(L, idx))
		lt_error(L, "%s: expected a shape (a table of integers), got %s", what,
			   luaL_typename(L, idx));
	lua_Integer n = luaL_len(L, idx);
	if (n > LT_MAX_DIMS)
		lt_error(L, "%s: %d dimensions, at most %d", what, (int)n, LT_MAX_DIMS);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, idx, i);
		int isint;
		lua_Integer v = lua_tointegerx(L, -1, &isint);
		if (!isint || v < -1)
			lt_error(L, "%s: dimension %d must be an integer >= 0", what, (int)i);
		shape[i - 1] = v;
		lua_pop(L, 1);
	}
	return (int)n;
}

/* ---- tensors --------------------------------------------------------------- */

/* The most bytes a tensor's dims may span.  Every element offset and stride
 * (in elements or bytes) is bounded by it, so none of their products can
 * overflow, in int64 or in size_t. */
#define MAX_SPAN ((uint64_t)1 << 62 < SIZE_MAX / 2 ? (uint64_t)1 << 62 : (uint64_t)SIZE_MAX / 2)

int lt_shape_size(int rank, const int64_t *shape, size_t esize, int64_t *numel)
{
	/* Empty dims are left out of the span: a tensor of shape {0, 2^40, 2^40}
	 * holds nothing, yet its strides still multiply its other dims. */
	uint64_t span = esize;
	int empty = 0;
	for (int d = 0; d < rank; d++) {
		if (shape[d] < 0)
			return MT_ERANGE;
		if (shape[d] == 0)
			empty = 1;
		else if (__builtin_mul_overflow(span, (uint64_t)shape[d], &span))
			return MT_ERANGE;
	}
	if (span > MAX_SPAN)
		return MT_ERANGE;
	*numel = empty ? 0 : (int64_t)(span / esize);
	return 0;
}

/* "2x0x3" into buf: a shape for an error message. */
static const char *shape_text(int rank, const int64_t *shape, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (int d = 0; d < rank && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? "x" : "",
				      (long long)shape[d]);
	return rank ? buf : "{} (a scalar)";
}

int64_t lt_check_size(lua_State *L, const char *what, mt_dtype dt, int rank, const int64_t *shape)
{
	int64_t n = 0;
	for (int d = 0; d < rank; d++)
		if (shape[d] < 0)
			lt_error(L, "%s: dimension %d is %lld, must be >= 0", what, d + 1,
				 (long long)shape[d]);
	if (lt_shape_size(rank, shape, mt_dtype_size(dt), &n)) {
		char text[LT_MAX_DIMS * 21];
		lt_error(L, "%s: shape %s of dtype %s is too large (its non-empty dims span "
			    "more than %llu bytes)", what,
			 shape_text(rank, shape, text, sizeof text), mt_dtype_name(dt),
			 (unsigned long long)MAX_SPAN);
	}
	return n;
}

/* Within a tensor's span (lt_new and reshape check it), so no overflow. */
int64_t lt_numel(const lt_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= t->shape[d];
	return n;
}

int lt_is_contiguous(const lt_tensor *t)
{
	int64_t s = 1;
	for (int d = t->rank - 1; d >= 0; d--) {
		if (t->shape[d] != 1 && t->strides[d] != s)
			return 0;
		s *= t->shape[d];
	}
	return 1;
}

void *lt_data(const lt_tensor *t)
{
	return (char *)t->buf->data + t->offset * (int64_t)mt_dtype_size(t->dtype);
}

/* For a shape lt_check_size accepted: every partial product of its dims is
 * within the span, or 0 once an empty dim is passed. */
static void set_contiguous_strides(lt_tensor *t)
{
	int64_t s = 1;
	for (int d = t->rank - 1; d >= 0; d--) {
		t->strides[d] = s;
		s *= t->shape[d];
	}
}

static lt_tensor *push_tensor(lua_State *L)
{
	lt_tensor *t = lua_newuserdatauv(L, sizeof *t, 0);
	memset(t, 0, sizeof *t);
	luaL_setmetatable(L, LT_TENSOR);
	return t;
}

lt_tensor *lt_new(lua_State *L, const char *what, mt_dtype dt, int rank, const int64_t *shape)
{
	uint64_t bytes = (uint64_t)lt_check_size(L, what, dt, rank, shape) * mt_dtype_size(dt);
	lt_tensor *t = push_tensor(L);
	t->dtype = dt;
	t->rank = rank;
	for (int d = 0; d < rank; d++)
		t->shape[d] = shape[d];
	set_contiguous_strides(t);
	struct lt_buf *b = lt_alloc(L, sizeof *b);
	memset(b, 0, sizeof *b);
	b->refs = 1;
	t->buf = b;
	/* Not zeroed: every caller writes every element, and a pass over a
	 * fresh 200 MB buffer costs as much as the operation that fills it. */
	b->bytes = (size_t)bytes;
	b->block_bytes = bytes >= HUGE_MIN ? (size_t)bytes + HUGE_PAGE : (size_t)bytes;
	b->block = lt_alloc(L, b->block_bytes);
	b->data = b->block;
	if (bytes >= HUGE_MIN) {
		/* Huge pages: a fresh buffer is filled with 512 times fewer page
		 * faults, which otherwise cost more than the work that fills it. */
		uintptr_t p = ((uintptr_t)b->block + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
		b->data = (void *)p;
		madvise(b->data, (size_t)bytes & ~(size_t)(HUGE_PAGE - 1), MADV_HUGEPAGE);
	}
	return t;
}

/* A view sharing src's buffer (same shape and strides until changed). */
static lt_tensor *new_view(lua_State *L, const lt_tensor *src)
{
	lt_tensor *t = push_tensor(L);
	*t = *src;
	t->buf->refs++;
	return t;
}

static void tensor_release(lua_State *L, lt_tensor *t)
{
	if (!t->buf)
		return;
	if (--t->buf->refs == 0) {
		lt_free(L, t->buf->block, t->buf->block_bytes);
		lt_free(L, t->buf, sizeof *t->buf);
	}
	t->buf = NULL;
}

lt_tensor *lt_test(lua_State *L, int idx)
{
	return luaL_testudata(L, idx, LT_TENSOR);
}

lt_tensor *lt_check(lua_State *L, int idx)
{
	lt_tensor *t = luaL_checkudata(L, idx, LT_TENSOR);
	if (!t->buf)
		luaL_argerror(L, idx, "tensor was freed");
	return t;
}

/* ---- strided access --------------------------------------------------------- */

void lt_sv_of(struct lt_sv *v, const lt_tensor *t, int rank, const int64_t *shape)
{
	v->base = lt_data(t);
	v->dt = t->dtype;
	v->esize = mt_dtype_size(t->dtype);
	v->rank = rank;
	for (int d = 0; d < rank; d++) {
		int td = d - (rank - t->rank);
		v->shape[d] = shape[d];
		v->strides[d] = td < 0 || t->shape[td] == 1 ? 0 : t->strides[td];
	}
}

/* The runs of n elements of a view from flat position `start`, one call of
 * sv_next each: the run's first element, its length and stride (elements). */
struct sv_it {
	const struct lt_sv *v;
	int64_t idx[LT_MAX_DIMS];
	int64_t left;
};

static void sv_seek(struct sv_it *it, const struct lt_sv *v, int64_t start, int64_t n)
{
	it->v = v;
	it->left = n;
	int64_t rem = start;
	for (int d = v->rank - 1; d >= 0; d--) {
		it->idx[d] = v->shape[d] ? rem % v->shape[d] : 0;
		rem = v->shape[d] ? rem / v->shape[d] : 0;
	}
}

static int64_t sv_next(struct sv_it *it, char **p, int64_t *st)
{
	const struct lt_sv *v = it->v;
	int r = v->rank;
	if (it->left <= 0)
		return 0;
	int64_t off = 0;
	for (int d = 0; d < r; d++)
		off += it->idx[d] * v->strides[d];
	int64_t k = r ? v->shape[r - 1] - it->idx[r - 1] : 1;
	if (k > it->left)
		k = it->left;
	*p = v->base + off * (int64_t)v->esize;
	*st = r ? v->strides[r - 1] : 0;
	it->left = r ? it->left - k : 0;
	if (r) {
		it->idx[r - 1] += k;
		for (int d = r - 1; d > 0 && it->idx[d] >= v->shape[d]; d--) {
			it->idx[d] = 0;
			it->idx[d - 1]++;
		}
	}
	return k;
}

#define TYPED_LOOP(op)                                                               \
	switch (v->dt) {                                                             \
	case MT_BOOL: op(uint8_t); break;                                            \
	case MT_INT8: op(int8_t); break;                                             \
	case MT_INT16: op(int16_t); break;                                           \
	case MT_INT32: op(int32_t); break;                                           \
	case MT_INT64: op(int64_t); break;                                           \
	case MT_UINT8: op(uint8_t); break;                                           \
	case MT_UINT16: op(uint16_t); break;                                         \
	case MT_UINT32: op(uint32_t); break;                                         \
	case MT_UINT64: op(uint64_t); break;                                         \
	case MT_FLOAT32: op(float); break;                                           \
	case MT_FLOAT64: op(double); break;                                          \
	default: generic = 1; break;                                                 \
	}

/* Move n elements between the view (from flat position start) and dst/src
 * doubles.  Runs along the innermost dimension use typed loops; stores into
 * integers go through elem_set, which saturates. */
void lt_sv_move(const struct lt_sv *v, int64_t start, int64_t n, double *buf, int store)
{
	struct sv_it it;
	sv_seek(&it, v, start, n);
	char *p;
	int64_t k, st;
	while ((k = sv_next(&it, &p, &st)) > 0) {
		int generic = 0;
		if (store && lt_is_float(v->dt)) {
#define ST(T) for (int64_t i = 0; i < k; i++) ((T *)p)[i * st] = (T)buf[i]
			TYPED_LOOP(ST)
#undef ST
		} else if (store) {
			generic = 1;
		} else {
#define LD(T) for (int64_t i = 0; i < k; i++) buf[i] = (double)((const T *)p)[i * st]
			TYPED_LOOP(LD)
#undef LD
			if (v->dt == MT_BOOL)
				for (int64_t i = 0; i < k; i++)
					buf[i] = buf[i] != 0;
		}
		if (generic)
			for (int64_t i = 0; i < k; i++) {
				if (store)
					elem_set(p + i * st * (int64_t)v->esize, v->dt, buf[i]);
				else
					buf[i] = elem_get(p + i * st * (int64_t)v->esize, v->dt);
			}
		buf += k;
	}
}

/* ---- exact integers ------------------------------------------------------------ */

/* Integer dtypes (bool among them) move through int64 buffers instead of
 * doubles, which hold integers exactly only up to 2^53.  A uint64 element is
 * held as its 64 bits, Lua's own convention for unsigned integers
 * (0xffffffffffffffff is uint64 max, compared with math.ult); whoever
 * compares such values is told which side is unsigned (lt_cmp_int). */

#define INT_LOOP(op)                                                                 \
	switch (v->dt) {                                                             \
	case MT_INT8: op(int8_t); break;                                             \
	case MT_INT16: op(int16_t); break;                                           \
	case MT_INT32: op(int32_t); break;                                           \
	case MT_INT64: op(int64_t); break;                                           \
	case MT_UINT16: op(uint16_t); break;                                         \
	case MT_UINT32: op(uint32_t); break;                                         \
	case MT_UINT64: op(uint64_t); break;                                         \
	default: op(uint8_t); break;                                                 \
	}

/* Move n elements between an integer view and int64 values.  A store keeps
 * each value's low bits (wraparound); bool stores and loads are 0 or 1. */
void lt_sv_move_int(const struct lt_sv *v, int64_t start, int64_t n, int64_t *buf, int store)
{
	struct sv_it it;
	sv_seek(&it, v, start, n);
	char *p;
	int64_t k, st;
	while ((k = sv_next(&it, &p, &st)) > 0) {
		if (store && v->dt == MT_BOOL) {
			for (int64_t i = 0; i < k; i++)
				((uint8_t *)p)[i * st] = buf[i] != 0;
		} else if (store) {
#define ST(T) for (int64_t i = 0; i < k; i++) ((T *)p)[i * st] = (T)buf[i]
			INT_LOOP(ST)
#undef ST
		} else {
#define LD(T) for (int64_t i = 0; i < k; i++) buf[i] = (int64_t)((const T *)p)[i * st]
			INT_LOOP(LD)
#undef LD
			if (v->dt == MT_BOOL)
				for (int64_t i = 0; i < k; i++)
					buf[i] = buf[i] != 0;
		}
		buf += k;
	}
}

/* Order of x and y, each unsigned (a uint64's bits) when its flag says so. */
int lt_cmp_int(int64_t x, int xu, int64_t y, int yu)
{
	if (xu && x < 0) /* at or above 2^63 */
		return yu && y < 0 ? ((uint64_t)x > (uint64_t)y) - ((uint64_t)x < (uint64_t)y) : 1;
	if (yu && y < 0)
		return -1;
	return (x > y) - (x < y);
}

/* v (unsigned when vu) saturated to the range of dtype `to`, as a cast does;
 * bool takes v != 0. */
static int64_t int_saturate(int64_t v, int vu, mt_dtype to)
{
	static const int64_t lo[MT_FLOAT64 + 1] = {
		[MT_INT8] = INT8_MIN, [MT_INT16] = INT16_MIN, [MT_INT32] = INT32_MIN,
		[MT_INT64] = INT64_MIN,
	};
	static const int64_t hi[MT_FLOAT64 + 1] = {
		[MT_INT8] = INT8_MAX, [MT_INT16] = INT16_MAX, [MT_INT32] = INT32_MAX,
		[MT_INT64] = INT64_MAX, [MT_UINT8] = UINT8_MAX, [MT_UINT16] = UINT16_MAX,
		[MT_UINT32] = UINT32_MAX,
	};
	if (to == MT_BOOL)
		return v != 0;
	if (to == MT_UINT64)
		return !vu && v < 0 ? 0 : v;
	if (vu && v < 0)
		return hi[to];
	return v < lo[to] ? lo[to] : v > hi[to] ? hi[to] : v;
}

/* A Lua number or boolean at idx as an exact 64-bit integer: 0 when it is
 * neither a boolean nor a number with an integral value in int64's range. */
int lt_scalar_int(lua_State *L, int idx, int64_t *v)
{
	if (lua_isboolean(L, idx)) {
		*v = lua_toboolean(L, idx);
		return 1;
	}
	int isint;
	*v = lua_tointegerx(L, idx, &isint);
	return isint;
}

/* Copy src (any strides, broadcast to dst's shape) into dst, converting
 * dtypes: same dtype and both contiguous is one memcpy; between integer
 * dtypes the values stay exact and saturate where dst's range ends. */
static void copy_into(lt_tensor *dst, const lt_tensor *src)
{
	int64_t n = lt_numel(dst);
	if (dst->dtype == src->dtype && lt_is_contiguous(dst) && lt_is_contiguous(src) &&
	    lt_numel(src) == n) {
		memmove(lt_data(dst), lt_data(src), (size_t)n * mt_dtype_size(dst->dtype));
		return;
	}
	struct lt_sv a, o;
	lt_sv_of(&a, src, dst->rank, dst->shape);
	lt_sv_of(&o, dst, dst->rank, dst->shape);
	if (!lt_is_float(src->dtype) && !lt_is_float(dst->dtype)) {
		int64_t buf[LT_BLOCK];
		int u = src->dtype == MT_UINT64;
		for (int64_t i = 0; i < n; i += LT_BLOCK) {
			int64_t k = n - i < LT_BLOCK ? n - i : LT_BLOCK;
			lt_sv_move_int(&a, i, k, buf, 0);
			if (src->dtype != dst->dtype)
				for (int64_t j = 0; j < k; j++)
					buf[j] = int_saturate(buf[j], u, dst->dtype);
			lt_sv_move_int(&o, i, k, buf, 1);
		}
		return;
	}
	double buf[LT_BLOCK];
	for (int64_t i = 0; i < n; i += LT_BLOCK) {
		int64_t k = n - i < LT_BLOCK ? n - i : LT_BLOCK;
		lt_sv_move(&a, i, k, buf, 0);
		lt_sv_move(&o, i, k, buf, 1);
	}
}

lt_tensor *lt_contiguous(lua_State *L, lt_tensor *t)
{
	if (lt_is_contiguous(t))
		return t;
	lt_tensor *c = lt_new(L, "contiguous", t->dtype, t->rank, t->shape);
	copy_into(c, t);
	return c;
}

/* ---- construction ------------------------------------------------------------ */

/* The Lua number or boolean at idx into the element at p, as a cast would
 * convert it: an integer into an integer dtype exactly, saturating at the
 * dtype's range (into uint64 bit for bit: a negative integer stands for
 * 2^64 + it, as Lua's 0xffffffffffffffff does), anything else through
 * double.  0 when the value is not a number. */
static int store_value(lua_State *L, int idx, void *p, mt_dtype dt)
{
	int64_t v;
	struct lt_sv one = {.base = p, .dt = dt, .esize = mt_dtype_size(dt)};
	if (!lt_is_float(dt) && lt_scalar_int(L, idx, &v)) {
		v = dt == MT_UINT64 ? v : int_saturate(v, 0, dt);
		lt_sv_move_int(&one, 0, 1, &v, 1);
		return 1;
	}
	if (lua_isboolean(L, idx)) {
		elem_set(p, dt, lua_toboolean(L, idx));
		return 1;
	}
	int isnum;
	double d = lua_tonumberx(L, idx, &isnum);
	if (isnum)
		elem_set(p, dt, d);
	return isnum;
}

/* Shape of a nested table, from its first elements. */
static int table_shape(lua_State *L, int idx, int64_t *shape)
{
	int rank = 0;
	lua_pushvalue(L, idx);
	while (lua_istable(L, -1)) {
		if (rank == LT_MAX_DIMS)
			lt_error(L, "tensor: nested tables deeper than %d", LT_MAX_DIMS);
		shape[rank++] = (int64_t)luaL_len(L, -1);
		lua_geti(L, -1, 1);
		lua_remove(L, -2);
	}
	lua_pop(L, 1);
	return rank;
}

static void table_fill(lua_State *L, int idx, const lt_tensor *t, int d, int64_t *pos,
		       char *path, size_t plen)
{
	if ((int64_t)luaL_len(L, idx) != t->shape[d] || !lua_istable(L, idx))
		lt_error(L, "tensor: element %s has %d entries, expected %d (ragged nested "
			   "tables)", plen ? path : "(top)", (int)luaL_len(L, idx),
			   (int)t->shape[d]);
	size_t esize = mt_dtype_size(t->dtype);
	for (int64_t i = 1; i <= t->shape[d]; i++) {
		lua_geti(L, idx, i);
		size_t n = plen + (size_t)snprintf(path + plen, 256 - plen > 0 ? 256 - plen : 0,
						   "[%lld]", (long long)i);
		if (n > 250)
			n = 250;
		if (d + 1 < t->rank) {
			if (!lua_istable(L, -1))
				lt_error(L, "tensor: element %s is a %s, expected a table", path,
					   luaL_typename(L, -1));
			table_fill(L, lua_gettop(L), t, d + 1, pos, path, n);
		} else if (!store_value(L, -1, (char *)lt_data(t) + (*pos)++ * (int64_t)esize,
					t->dtype)) {
			lt_error(L, "tensor: element %s is a %s, expected a number", path,
				 luaL_typename(L, -1));
		}
		lua_pop(L, 1);
		path[plen] = 0;
	}
}

/* matorage.tensor(TABLE [, dtype]) — nested tables of numbers; default float32. */
static int l_tensor(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	mt_dtype dt = lua_isnoneornil(L, 2) ? MT_FLOAT32 : lt_check_dtype(L, 2, "tensor: dtype");
	int64_t shape[LT_MAX_DIMS];
	int rank = table_shape(L, 1, shape);
	lt_tensor *t = lt_new(L, "tensor", dt, rank, shape);
	int64_t pos = 0;
	char path[256] = "";
	if (rank)
		table_fill(L, 1, t, 0, &pos, path, 0);
	return 1;
}

/* Optional dtype at idx (default def), for constructors. */
static mt_dtype opt_dtype(lua_State *L, int idx, mt_dtype def, const char *what)
{
	return lua_isnoneornil(L, idx) ? def : lt_check_dtype(L, idx, what);
}

/* Every element of the new contiguous tensor t set to the Lua value at idx. */
static void fill(lua_State *L, lt_tensor *t, int idx, const char *what)
{
	size_t es = mt_dtype_size(t->dtype);
	int64_t n = lt_numel(t);
	uint64_t one; /* the widest element */
	if (!store_value(L, idx, &one, t->dtype))
		lt_error(L, "%s: value is a %s, expected a number", what, luaL_typename(L, idx));
	char *p = lt_data(t);
	for (int64_t i = 0; i < n; i++)
		memcpy(p + i * (int64_t)es, &one, es);
}

/* matorage.zeros(shape [, dtype]), ones, full(shape, value [, dtype]): the
 * value at vidx. */
static int l_full_common(lua_State *L, int vidx, int dtype_idx, const char *what)
{
	int64_t shape[LT_MAX_DIMS];
	int rank = lt_check_shape(L, 1, what, shape);
	for (int d = 0; d < rank; d++)
		if (shape[d] < 0)
			lt_error(L, "%s: dimension %d is -1; only reshape infers a dimension",
				   what, d + 1);
	lt_tensor *t = lt_new(L, what, opt_dtype(L, dtype_idx, MT_FLOAT32, what), rank, shape);
	fill(L, t, vidx, what);
	return 1;
}

static int l_zeros(lua_State *L)
{
	lua_settop(L, 2);
	lua_pushinteger(L, 0);
	return l_full_common(L, 3, 2, "zeros");
}

static int l_ones(lua_State *L)
{
	lua_settop(L, 2);
	lua_pushinteger(L, 1);
	return l_full_common(L, 3, 2, "ones");
}

static int l_full(lua_State *L)
{
	luaL_checkany(L, 2);
	return l_full_common(L, 2, 3, "full");
}

/* arange over Lua integers into an integer dtype: exact, where doubles would
 * round beyond 2^53.  Values saturate at the dtype's range, as a cast does. */
static void arange_int(lua_State *L, lua_Integer a, lua_Integer b, lua_Integer step, mt_dtype dt)
{
	/* Unsigned differences: b - a may not fit in an int64. */
	uint64_t span = step > 0 ? (b < a ? 0 : (uint64_t)b - (uint64_t)a)
				 : (a < b ? 0 : (uint64_t)a - (uint64_t)b);
	uint64_t mag = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
	uint64_t steps = span / mag;
	int empty = step > 0 ? b < a : a < b;
	if (!empty && steps >= (uint64_t)INT64_MAX)
		lt_error(L, "arange: %llu elements are too many", (unsigned long long)steps);
	int64_t n = empty ? 0 : (int64_t)steps + 1;
	lt_tensor *t = lt_new(L, "arange", dt, 1, &n);
	struct lt_sv v;
	lt_sv_of(&v, t, 1, t->shape);
	int64_t x[LT_BLOCK];
	for (int64_t i = 0; i < n; i += LT_BLOCK) {
		int64_t k = n - i < LT_BLOCK ? n - i : LT_BLOCK;
		for (int64_t j = 0; j < k; j++) {
			uint64_t at = (uint64_t)a + (uint64_t)(i + j) * (uint64_t)step;
			x[j] = int_saturate((int64_t)at, 0, dt);
		}
		lt_sv_move_int(&v, i, k, x, 1);
	}
}

/* matorage.arange(n) or arange(first, last [, step [, dtype]]) — inclusive like
 * a numeric for loop; default int64. */
static int l_arange(lua_State *L)
{
	int di = 2, ai = 0, bi = 1, si = 0;
	if (!lua_isnoneornil(L, 2) && lua_type(L, 2) != LUA_TSTRING) {
		ai = 1;
		bi = 2;
		di = 3;
		if (lua_type(L, 3) == LUA_TNUMBER) {
			si = 3;
			di = 4;
		}
	}
	double a = ai ? luaL_checknumber(L, ai) : 1, b = luaL_checknumber(L, bi);
	double step = si ? lua_tonumber(L, si) : 1;
	luaL_argcheck(L, step != 0, 3, "step must not be 0");
	mt_dtype dt = opt_dtype(L, di, MT_INT64, "arange");
	if (!lt_is_float(dt) && (!ai || lua_isinteger(L, ai)) && lua_isinteger(L, bi) &&
	    (!si || lua_isinteger(L, si))) {
		arange_int(L, ai ? lua_tointeger(L, ai) : 1, lua_tointeger(L, bi),
			   si ? lua_tointeger(L, si) : 1, dt);
		return 1;
	}
	double count = floor((b - a) / step) + 1;
	if (count >= (double)((uint64_t)1 << 62))
		return lt_error(L, "arange: %g elements are too many", count);
	int64_t n = count > 0 ? (int64_t)count : 0; /* NaN: none */
	lt_tensor *t = lt_new(L, "arange", dt, 1, &n);
	for (int64_t i = 0; i < n; i++)
		elem_set((char *)lt_data(t) + i * (int64_t)mt_dtype_size(t->dtype), t->dtype,
			 a + (double)i * step);
	return 1;
}

/* matorage.from_bytes(STRING, dtype, shape) — little-endian element bytes. */
static int l_from_bytes(lua_State *L)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	mt_dtype dt = lt_check_dtype(L, 2, "from_bytes: dtype");
	int64_t shape[LT_MAX_DIMS];
	int rank = lua_isnoneornil(L, 3) ? 1 : lt_check_shape(L, 3, "from_bytes: shape", shape);
	size_t es = mt_dtype_size(dt);
	if (lua_isnoneornil(L, 3))
		shape[0] = (int64_t)(len / es);
	int64_t n = lt_check_size(L, "from_bytes: shape", dt, rank, shape);
	if ((uint64_t)n * es != len)
		return lt_error(L, "from_bytes: %zu bytes do not hold %lld %s elements", len,
				  (long long)n, mt_dtype_name(dt));
	lt_tensor *t = lt_new(L, "from_bytes", dt, rank, shape);
	memcpy(lt_data(t), s, len);
	return 1;
}

/* ---- shape and views --------------------------------------------------------- */

static int l_shape(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lua_createtable(L, t->rank, 0);
	for (int d = 0; d < t->rank; d++) {
		lua_pushinteger(L, t->shape[d]);
		lua_seti(L, -2, d + 1);
	}
	return 1;
}

static int l_dtype(lua_State *L)
{
	lua_pushstring(L, mt_dtype_name(lt_check(L, 1)->dtype));
	return 1;
}

static int l_numel(lua_State *L)
{
	lua_pushinteger(L, lt_numel(lt_check(L, 1)));
	return 1;
}

static int l_rank(lua_State *L)
{
	lua_pushinteger(L, lt_check(L, 1)->rank);
	return 1;
}

/* A 1-based dimension argument (negative counts from the end). */
int lt_check_dim(lua_State *L, int idx, const lt_tensor *t, int extra)
{
	lua_Integer d = luaL_checkinteger(L, idx);
	int r = t->rank + extra;
	if (d < 0)
		d += r + 1;
	if (d < 1 || d > r)
		lt_error(L, "bad argument #%d (dim): %d is outside 1..%d", idx - 1,
			   (int)luaL_checkinteger(L, idx), r);
	return (int)d - 1;
}

/* A 1-based index along a dimension of size n (negative from the end). */
static int64_t check_index(lua_State *L, lua_Integer i, int64_t n, const char *what)
{
	if (i < 0)
		i += n + 1;
	if (i < 1 || i > n)
		lt_error(L, "%s: index %d is out of range 1..%d", what, (int)i, (int)n);
	return i - 1;
}

/* t:reshape(shape) — a view when contiguous, else a copy; one -1 is inferred. */
static int l_reshape(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	int64_t shape[LT_MAX_DIMS];
	int rank = lt_check_shape(L, 2, "reshape: shape", shape), infer = -1;
	int64_t total = lt_numel(t);
	for (int d = 0; d < rank; d++) {
		if (shape[d] == -1) {
			if (infer >= 0)
				return lt_error(L, "reshape: shape: only one dimension may be -1");
			infer = d;
			shape[d] = 1; /* for the size of the others */
		}
	}
	int64_t n = lt_check_size(L, "reshape: shape", t->dtype, rank, shape);
	if (infer >= 0)
		shape[infer] = n ? total / n : 0;
	if (infer >= 0 ? (n == 0 || total % n) : n != total)
		return lt_error(L, "reshape: shape: %lld elements cannot take this shape",
				  (long long)total);
	lt_tensor *c = lt_contiguous(L, t);
	lt_tensor *v = new_view(L, c);
	v->rank = rank;
	memcpy(v->shape, shape, sizeof shape);
	set_contiguous_strides(v);
	return 1;
}

/* t:slice(dim, first [, last [, step]]) — a view; bounds are 1-based and
 * inclusive, negative ones count from the end. */
static int l_slice(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	int d = lt_check_dim(L, 2, t, 0);
	int64_t n = t->shape[d];
	lua_Integer step = luaL_optinteger(L, 5, 1);
	luaL_argcheck(L, step > 0, 5, "step must be >= 1");
	lua_Integer a = luaL_checkinteger(L, 3), b = luaL_optinteger(L, 4, -1);
	if (a < 0)
		a += n + 1;
	if (b < 0)
		b += n + 1;
	if (a < 1 || a > n + 1 || b > n || b < a - 1)
		return lt_error(L, "slice: rows %d..%d are out of range 1..%d of dim %d",
				  (int)luaL_checkinteger(L, 3), (int)luaL_optinteger(L, 4, -1),
				  (int)n, d + 1);
	lt_tensor *v = new_view(L, t);
	v->offset += (a - 1) * t->strides[d];
	v->shape[d] = b >= a ? (b - a) / step + 1 : 0;
	/* A step past the dim's end takes one row, whose stride does not matter;
	 * any other stays within the dim, so the stride stays within the span. */
	if (v->shape[d] > 1)
		v->strides[d] *= step;
	return 1;
}

/* t:select(dim, i) — the sub-tensor at index i, one rank less (a view). */
static void select_view(lua_State *L, lt_tensor *t, int d, int64_t i)
{
	lt_tensor *v = new_view(L, t);
	v->offset += i * t->strides[d];
	for (int k = d; k < t->rank - 1; k++) {
		v->shape[k] = t->shape[k + 1];
		v->strides[k] = t->strides[k + 1];
	}
	v->rank--;
}

static int l_select(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	int d = lt_check_dim(L, 2, t, 0);
	select_view(L, t, d, check_index(L, luaL_checkinteger(L, 3), t->shape[d], "select"));
	return 1;
}

/* t:transpose([d1, d2]) — swap two dims (default the last two); a view. */
static int l_transpose(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	if (t->rank < 2)
		return lt_error(L, "transpose: needs at least 2 dimensions, has %d", t->rank);
	int a = lua_isnoneornil(L, 2) ? t->rank - 2 : lt_check_dim(L, 2, t, 0);
	int b = lua_isnoneornil(L, 3) ? t->rank - 1 : lt_check_dim(L, 3, t, 0);
	lt_tensor *v = new_view(L, t);
	v->shape[a] = t->shape[b];
	v->shape[b] = t->shape[a];
	v->strides[a] = t->strides[b];
	v->strides[b] = t->strides[a];
	return 1;
}

/* t:flip(dim) — reversed along dim (a view; e.g. a horizontal flip). */
static int l_flip(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	int d = lt_check_dim(L, 2, t, 0);
	lt_tensor *v = new_view(L, t);
	if (t->shape[d] > 0)
		v->offset += (t->shape[d] - 1) * t->strides[d];
	v->strides[d] = -t->strides[d];
	return 1;
}

static int l_copy(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lt_tensor *c = lt_new(L, "copy", t->dtype, t->rank, t->shape);
	copy_into(c, t);
	return 1;
}

static int l_contiguous_m(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	if (lt_contiguous(L, t) == t)
		lua_pushvalue(L, 1);
	return 1;
}

static int l_cast(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lt_cast(L, t, lt_check_dtype(L, 2, "cast: dtype"));
	return 1;
}

lt_tensor *lt_cast(lua_State *L, lt_tensor *t, mt_dtype dt)
{
	lt_tensor *c = lt_new(L, "cast", dt, t->rank, t->shape);
	if (t->dtype == MT_UINT8 && dt == MT_FLOAT32 && lt_is_contiguous(t)) {
		const uint8_t *s = lt_data(t);
		float *o = lt_data(c);
		for (int64_t i = 0, n = lt_numel(t); i < n; i++)
			o[i] = s[i];
	} else {
		copy_into(c, t);
	}
	return c;
}

/* Flat element offset of t[i1, i2, ...] from arguments first..first+rank-1. */
static int64_t element_at(lua_State *L, const lt_tensor *t, int first, const char *what)
{
	int64_t off = t->offset;
	for (int d = 0; d < t->rank; d++) {
		lua_Integer i = luaL_checkinteger(L, first + d);
		off += check_index(L, i, t->shape[d], what) * t->strides[d];
	}
	return off;
}

static void push_number(lua_State *L, const void *p, mt_dtype dt)
{
	double v = elem_get(p, dt);
	if (dt == MT_BOOL)
		lua_pushboolean(L, v != 0);
	else if (lt_is_float(dt))
		lua_pushnumber(L, v);
	else if (dt == MT_INT64)
		lua_pushinteger(L, *(const int64_t *)p);
	else if (dt == MT_UINT64)
		lua_pushinteger(L, (lua_Integer) * (const uint64_t *)p);
	else
		lua_pushinteger(L, (lua_Integer)v);
}

/* t:get(i, j, ...) — one element, all indices given (1-based). */
static int l_get(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	if (lua_gettop(L) - 1 != t->rank)
		return lt_error(L, "get: %d indices for a tensor of %d dimensions",
				  lua_gettop(L) - 1, t->rank);
	int64_t off = element_at(L, t, 2, "get");
	push_number(L, (char *)t->buf->data + off * (int64_t)mt_dtype_size(t->dtype), t->dtype);
	return 1;
}

double lt_check_value(lua_State *L, int idx, const char *what)
{
	if (lua_isboolean(L, idx))
		return lua_toboolean(L, idx);
	int isnum;
	double v = lua_tonumberx(L, idx, &isnum);
	if (!isnum)
		lt_error(L, "%s: value is a %s, expected a number", what, luaL_typename(L, idx));
	return v;
}

/* t:set(i, j, ..., value) */
static int l_set(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	if (lua_gettop(L) - 2 != t->rank)
		return lt_error(L, "set: %d indices for a tensor of %d dimensions",
				  lua_gettop(L) - 2, t->rank);
	int64_t off = element_at(L, t, 2, "set");
	char *p = (char *)t->buf->data + off * (int64_t)mt_dtype_size(t->dtype);
	if (!store_value(L, t->rank + 2, p, t->dtype))
		lt_check_value(L, t->rank + 2, "set"); /* raises, naming the value's type */
	return 0;
}

/* t[i]: a number (rank 1) or the i-th sub-tensor along dim 1 (a view);
 * t.name: a method. */
static int l_index(lua_State *L)
{
	if (lua_type(L, 2) == LUA_TNUMBER) {
		lt_tensor *t = lt_check(L, 1);
		if (t->rank == 0)
			return lt_error(L, "index: a 0-d tensor has no elements to index");
		int64_t i = check_index(L, luaL_checkinteger(L, 2), t->shape[0], "index");
		if (t->rank == 1)
			push_number(L, (char *)t->buf->data + (t->offset + i * t->strides[0]) *
						(int64_t)mt_dtype_size(t->dtype), t->dtype);
		else
			select_view(L, t, 0, i);
		return 1;
	}
	luaL_getmetafield(L, 1, "methods");
	lua_pushvalue(L, 2);
	lua_rawget(L, -2);
	return 1;
}

/* t[i] = number or tensor (broadcast into the i-th sub-tensor). */
static int l_newindex(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	if (t->rank == 0)
		return lt_error(L, "index: a 0-d tensor has no elements to index");
	int64_t i = check_index(L, luaL_checkinteger(L, 2), t->shape[0], "index");
	select_view(L, t, 0, i);
	lt_tensor *dst = lua_touserdata(L, -1);
	lt_tensor *src = lt_test(L, 3);
	if (src) {
		for (int d = 0; d < src->rank; d++) {
			int od = dst->rank - src->rank + d;
			if (od < 0 || (src->shape[d] != 1 && src->shape[d] != dst->shape[od]))
				return lt_error(L, "index: value of shape rank %d does not "
						  "broadcast to row %d", src->rank, (int)(i + 1));
		}
		copy_into(dst, src);
	} else {
		lt_tensor *s = lt_new(L, "index", dst->dtype, 0, NULL);
		if (!store_value(L, 3, lt_data(s), s->dtype))
			lt_check_value(L, 3, "index");
		copy_into(dst, s);
	}
	return 0;
}

static int l_len(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lua_pushinteger(L, t->rank ? t->shape[0] : 1);
	return 1;
}

/* t:bytes() — the elements as a string (C order, little-endian). */
static int l_bytes(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lt_tensor *c = lt_contiguous(L, t);
	lua_pushlstring(L, lt_data(c), (size_t)lt_numel(c) * mt_dtype_size(c->dtype));
	return 1;
}

static void push_list(lua_State *L, const lt_tensor *t, int d, int64_t off)
{
	size_t es = mt_dtype_size(t->dtype);
	if (d == t->rank) {
		push_number(L, (char *)t->buf->data + off * (int64_t)es, t->dtype);
		return;
	}
	lua_createtable(L, (int)t->shape[d], 0);
	for (int64_t i = 0; i < t->shape[d]; i++) {
		push_list(L, t, d + 1, off + i * t->strides[d]);
		lua_seti(L, -2, i + 1);
	}
}

/* t:totable() — nested Lua tables (or a number for a 0-d tensor). */
static int l_totable(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	luaL_checkstack(L, t->rank + 4, "totable");
	push_list(L, t, 0, t->offset);
	return 1;
}

static int l_tostring(lua_State *L)
{
	lt_tensor *t = luaL_checkudata(L, 1, LT_TENSOR);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	lua_pushfstring(L, "tensor(%s, ", mt_dtype_name(t->dtype));
	luaL_addvalue(&b);
	for (int d = 0; d < t->rank; d++) {
		lua_pushfstring(L, "%s%I", d ? "x" : "", (lua_Integer)t->shape[d]);
		luaL_addvalue(&b);
	}
	luaL_addstring(&b, t->rank ? ")" : "scalar)");
	luaL_pushresult(&b);
	return 1;
}

static int l_gc(lua_State *L)
{
	tensor_release(L, luaL_checkudata(L, 1, LT_TENSOR));
	return 0;
}

/* t:one_hot(n [, dtype]) — integer classes 0..n-1 to a trailing dim of n
 * (default float32); a class outside is an error naming its position. */
static int l_one_hot(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lua_Integer n = luaL_checkinteger(L, 2);
	luaL_argcheck(L, n >= 1, 2, "number of classes must be >= 1");
	if (lt_is_float(t->dtype))
		return lt_error(L, "one_hot: expected an integer tensor, got %s",
				  mt_dtype_name(t->dtype));
	if (t->rank >= LT_MAX_DIMS)
		return lt_error(L, "one_hot: too many dimensions");
	int64_t shape[LT_MAX_DIMS];
	memcpy(shape, t->shape, sizeof shape);
	shape[t->rank] = n;
	lt_tensor *o = lt_new(L, "one_hot", opt_dtype(L, 3, MT_FLOAT32, "one_hot: dtype"),
			      t->rank + 1, shape);
	memset(lt_data(o), 0, (size_t)lt_numel(o) * mt_dtype_size(o->dtype));
	struct lt_sv v;
	lt_sv_of(&v, t, t->rank, t->shape);
	int64_t m = lt_numel(t);
	size_t es = mt_dtype_size(o->dtype);
	double x[LT_BLOCK];
	for (int64_t i = 0; i < m; i += LT_BLOCK) {
		int64_t k = m - i < LT_BLOCK ? m - i : LT_BLOCK;
		lt_sv_move(&v, i, k, x, 0);
		for (int64_t j = 0; j < k; j++) {
			if (x[j] < 0 || x[j] >= (double)n)
				return lt_error(L, "one_hot: element %lld is %g, outside classes "
						  "0..%lld", (long long)(i + j + 1), x[j],
						  (long long)n - 1);
			elem_set((char *)lt_data(o) + ((i + j) * n + (int64_t)x[j]) * (int64_t)es,
				 o->dtype, 1);
		}
	}
	return 1;
}

/* ---- rows: concat, stack, take, filter ---------------------------------------- */

/* The tensors of a list argument, each checked. */
static int check_list(lua_State *L, int idx, const char *what)
{
	luaL_checktype(L, idx, LUA_TTABLE);
	int n = (int)luaL_len(L, idx);
	if (n == 0)
		lt_error(L, "%s: the list of tensors is empty", what);
	for (int i = 1; i <= n; i++) {
		lua_geti(L, idx, i);
		if (!lt_test(L, -1))
			lt_error(L, "%s: element %d of the list is a %s, expected a tensor", what,
				   i, luaL_typename(L, -1));
		lua_pop(L, 1);
	}
	return n;
}

static lt_tensor *list_at(lua_State *L, int idx, int i)
{
	lua_geti(L, idx, i);
	lt_tensor *t = lua_touserdata(L, -1);
	lua_pop(L, 1); /* still referenced by the list */
	return t;
}

/* Copy t into the slab of o starting at index `at` along dim d. */
static void copy_slab(lua_State *L, lt_tensor *o, int d, int64_t at, const lt_tensor *t)
{
	lt_tensor *v = new_view(L, o);
	v->offset += at * o->strides[d];
	v->shape[d] = t->rank == o->rank ? t->shape[d] : 1;
	lt_tensor src = *t;
	if (t->rank != o->rank) { /* stack: t gets a dim of 1 at d */
		for (int k = o->rank - 1; k > d; k--) {
			src.shape[k] = t->shape[k - 1];
			src.strides[k] = t->strides[k - 1];
		}
		src.shape[d] = 1;
		src.strides[d] = 0;
		src.rank = o->rank;
	}
	copy_into(v, &src);
	lua_pop(L, 1);
}

static int join(lua_State *L, int stack)
{
	const char *what = stack ? "stack" : "concat";
	int n = check_list(L, 1, what);
	lt_tensor *first = list_at(L, 1, 1);
	int rank = first->rank + stack;
	if (rank == 0)
		return lt_error(L, "%s: 0-d tensors cannot be concatenated (stack them)", what);
	lt_tensor probe = *first;
	probe.rank = rank;
	int d = lua_isnoneornil(L, 2) ? 0 : lt_check_dim(L, 2, &probe, 0);
	int64_t shape[LT_MAX_DIMS];
	for (int k = 0; k < rank; k++)
		shape[k] = !stack ? first->shape[k] : k == d ? n : first->shape[k < d ? k : k - 1];
	if (!stack)
		shape[d] = 0;
	mt_dtype dt = first->dtype;
	for (int i = 1; i <= n; i++) {
		lt_tensor *t = list_at(L, 1, i);
		if (t->rank != first->rank)
			return lt_error(L, "%s: element %d has %d dimensions, element 1 has %d",
					  what, i, t->rank, first->rank);
		for (int k = 0; k < t->rank; k++)
			if ((stack || k != d) && t->shape[k] != first->shape[k])
				return lt_error(L, "%s: element %d has size %d in dim %d, element 1 "
						  "has %d", what, i, (int)t->shape[k], k + 1,
						  (int)first->shape[k]);
		if (!stack && __builtin_add_overflow(shape[d], t->shape[d], &shape[d]))
			return lt_error(L, "%s: dim %d of the result is too large", what, d + 1);
		if (t->dtype != dt)
			dt = lt_is_float(t->dtype) || lt_is_float(dt) ? MT_FLOAT64 : MT_INT64;
	}
	lt_tensor *o = lt_new(L, what, dt, rank, shape);
	int64_t at = 0;
	for (int i = 1; i <= n; i++) {
		lt_tensor *t = list_at(L, 1, i);
		copy_slab(L, o, d, at, t);
		at += stack ? 1 : t->shape[d];
	}
	return 1;
}

static int l_concat(lua_State *L) { return join(L, 0); }
static int l_stack(lua_State *L) { return join(L, 1); }

/* Rows (dim 1) of t listed in rows[0..n) (0-based), gathered into a new tensor. */
static void gather_rows(lua_State *L, lt_tensor *t, const int64_t *rows, int64_t n,
			const char *what)
{
	int64_t shape[LT_MAX_DIMS];
	memcpy(shape, t->shape, sizeof shape);
	shape[0] = n;
	lt_tensor *c = lt_contiguous(L, t);
	lt_tensor *o = lt_new(L, what, t->dtype, t->rank, shape);
	size_t row = (size_t)(t->shape[0] ? lt_numel(c) / t->shape[0] : 0) *
		     mt_dtype_size(t->dtype);
	for (int64_t i = 0; i < n; i++)
		memcpy((char *)lt_data(o) + i * (int64_t)row, (char *)lt_data(c) + rows[i] * (int64_t)row,
		       row);
}

/* Index i (0-based) of take's argument 2, an index tensor ix or a table, as
 * a 0-based row of t; raises naming it when it is not a row of t. */
static int64_t take_row(lua_State *L, const lt_tensor *t, const lt_tensor *ix, int64_t i)
{
	int64_t v, rows = t->shape[0];
	struct lt_sv iv;
	if (ix)
		lt_sv_of(&iv, ix, ix->rank, ix->shape);
	if (!ix) {
		int isint;
		lua_geti(L, 2, i + 1);
		v = lua_tointegerx(L, -1, &isint);
		lua_pop(L, 1);
		if (!isint)
			lt_error(L, "take: indices[%lld] is not an integer", (long long)i + 1);
	} else if (lt_is_float(ix->dtype)) {
		double x;
		lt_sv_move(&iv, i, 1, &x, 0);
		if (!(x >= 1 && x < (double)rows + 1)) /* in range before converting */
			lt_error(L, "take: indices[%lld] = %g is out of range 1..%lld",
				 (long long)i + 1, x, (long long)rows);
		v = (int64_t)x;
	} else {
		lt_sv_move_int(&iv, i, 1, &v, 0);
		if (ix->dtype == MT_UINT64 && v < 0) /* at or above 2^63 */
			lt_error(L, "take: indices[%lld] = %llu is out of range 1..%lld",
				 (long long)i + 1, (unsigned long long)v, (long long)rows);
	}
	if (v < 1 || v > rows)
		lt_error(L, "take: indices[%lld] = %lld is out of range 1..%lld", (long long)i + 1,
			 (long long)v, (long long)rows);
	return v - 1;
}

/* t:take(indices) — rows by 1-based index (a table or an integer tensor). */
static int l_take(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	if (t->rank == 0)
		return lt_error(L, "take: a 0-d tensor has no rows");
	lt_tensor *ix = lt_test(L, 2);
	int64_t n = ix ? lt_numel(ix) : (luaL_checktype(L, 2, LUA_TTABLE), (int64_t)luaL_len(L, 2));
	n = lt_check_size(L, "take: indices", MT_INT64, 1, &n);
	/* Owned by Lua, so an error in between leaks nothing. */
	int64_t *rows = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *rows, 0);
	for (int64_t i = 0; i < n; i++)
		rows[i] = take_row(L, t, ix, i);
	gather_rows(L, t, rows, n, "take");
	return 1;
}

/* t:filter(mask) — the rows where mask (one value per row) is nonzero. */
static int l_filter(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lt_tensor *m = lt_check(L, 2);
	if (t->rank == 0)
		return lt_error(L, "filter: a 0-d tensor has no rows");
	if (lt_numel(m) != t->shape[0])
		return lt_error(L, "filter: mask has %d values for %d rows", (int)lt_numel(m),
				  (int)t->shape[0]);
	int64_t n = t->shape[0], k = 0;
	int64_t *rows = lt_alloc(L, (size_t)(n ? n : 1) * sizeof *rows);
	struct lt_sv v;
	lt_sv_of(&v, m, m->rank, m->shape);
	double x[LT_BLOCK];
	for (int64_t i = 0; i < n; i += LT_BLOCK) {
		int64_t c = n - i < LT_BLOCK ? n - i : LT_BLOCK;
		lt_sv_move(&v, i, c, x, 0);
		for (int64_t j = 0; j < c; j++)
			if (x[j] != 0)
				rows[k++] = i + j;
	}
	gather_rows(L, t, rows, k, "filter");
	lt_free(L, rows, (size_t)(n ? n : 1) * sizeof *rows);
	return 1;
}

/* ---- registration ----------------------------------------------------------- */

void lt_tensor_register(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"shape", l_shape}, {"dtype", l_dtype}, {"numel", l_numel}, {"rank", l_rank},
		{"reshape", l_reshape}, {"slice", l_slice}, {"select", l_select},
		{"transpose", l_transpose}, {"flip", l_flip}, {"copy", l_copy},
		{"contiguous", l_contiguous_m}, {"cast", l_cast}, {"get", l_get}, {"set", l_set},
		{"bytes", l_bytes}, {"totable", l_totable}, {"one_hot", l_one_hot},
		{"take", l_take}, {"filter", l_filter}, {NULL, NULL},
	};
	static const luaL_Reg meta[] = {
		{"__index", l_index}, {"__newindex", l_newindex}, {"__len", l_len},
		{"__tostring", l_tostring}, {"__gc", l_gc}, {"__close", l_gc}, {NULL, NULL},
	};
	static const luaL_Reg funcs[] = {
		{"tensor", l_tensor}, {"zeros", l_zeros}, {"ones", l_ones}, {"full", l_full},
		{"arange", l_arange}, {"from_bytes", l_from_bytes}, {"concat", l_concat},
		{"stack", l_stack}, {NULL, NULL},
	};
	luaL_newmetatable(L, LT_TENSOR);
	luaL_setfuncs(L, meta, 0);
	luaL_newlib(L, methods);
	lt_tensor_ops_register(L);
	lua_setfield(L, -2, "methods");
	lua_pop(L, 1);
	luaL_setfuncs(L, funcs, 0);
}
