/* lua-tensor.c — matorage.tensor: n-d arrays over contiguous buffers with views, broadcasting arithmetic and reductions. */
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include "lua-int.h"

/* Elements converted per step of the generic loops: enough to amortise the
 * per-step work, small enough to stay in L1. */
#define BLOCK 2048
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

static int is_float(mt_dtype dt)
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
			return -1;
		if (shape[d] == 0)
			empty = 1;
		else if (__builtin_mul_overflow(span, (uint64_t)shape[d], &span))
			return -1;
	}
	if (span > MAX_SPAN)
		return -1;
	*numel = empty ? 0 : (int64_t)(span / esize);
	return 0;
}

/* "2x0x3" into buf: a shape for an error message. */
static const char *shape_text(int rank, const int64_t *shape, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (int d = 0; d < rank && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? "x" : "", (long long)shape[d]);
	return rank ? buf : "{} (a scalar)";
}

int64_t lt_check_size(lua_State *L, const char *what, mt_dtype dt, int rank, const int64_t *shape)
{
	int64_t n;
	for (int d = 0; d < rank; d++)
		if (shape[d] < 0)
			lt_error(L, "%s: dimension %d is %lld, must be >= 0", what, d + 1,
				 (long long)shape[d]);
	if (lt_shape_size(rank, shape, mt_dtype_size(dt), &n)) {
		char text[LT_MAX_DIMS * 21];
		lt_error(L, "%s: shape %s of dtype %s is too large (its non-empty dims span "
			    "more than %llu bytes)", what, shape_text(rank, shape, text, sizeof text),
			 mt_dtype_name(dt), (unsigned long long)MAX_SPAN);
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

/* An iteration over `shape` reading (or writing) a tensor whose strides
 * may be 0 (broadcast) or negative (flipped). */
struct sv {
	char *base;
	mt_dtype dt;
	size_t esize;
	int rank;
	int64_t shape[LT_MAX_DIMS];
	int64_t strides[LT_MAX_DIMS];
};

/* t seen with shape `shape` of rank `rank` (numpy broadcasting: dims
 * aligned on the right, size-1 dims repeated). */
static void sv_of(struct sv *v, const lt_tensor *t, int rank, const int64_t *shape)
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
	const struct sv *v;
	int64_t idx[LT_MAX_DIMS];
	int64_t left;
};

static void sv_seek(struct sv_it *it, const struct sv *v, int64_t start, int64_t n)
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
	const struct sv *v = it->v;
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
static void sv_move(const struct sv *v, int64_t start, int64_t n, double *buf, int store)
{
	struct sv_it it;
	sv_seek(&it, v, start, n);
	char *p;
	int64_t k, st;
	while ((k = sv_next(&it, &p, &st)) > 0) {
		int generic = 0;
		if (store && is_float(v->dt)) {
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
 * compares such values is told which side is unsigned (cmp_int). */

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
static void sv_move_int(const struct sv *v, int64_t start, int64_t n, int64_t *buf, int store)
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
static int cmp_int(int64_t x, int xu, int64_t y, int yu)
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
static int scalar_int(lua_State *L, int idx, int64_t *v)
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
	struct sv a, o;
	sv_of(&a, src, dst->rank, dst->shape);
	sv_of(&o, dst, dst->rank, dst->shape);
	if (!is_float(src->dtype) && !is_float(dst->dtype)) {
		int64_t buf[BLOCK];
		int u = src->dtype == MT_UINT64;
		for (int64_t i = 0; i < n; i += BLOCK) {
			int64_t k = n - i < BLOCK ? n - i : BLOCK;
			sv_move_int(&a, i, k, buf, 0);
			if (src->dtype != dst->dtype)
				for (int64_t j = 0; j < k; j++)
					buf[j] = int_saturate(buf[j], u, dst->dtype);
			sv_move_int(&o, i, k, buf, 1);
		}
		return;
	}
	double buf[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t k = n - i < BLOCK ? n - i : BLOCK;
		sv_move(&a, i, k, buf, 0);
		sv_move(&o, i, k, buf, 1);
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
	struct sv one = {.base = p, .dt = dt, .esize = mt_dtype_size(dt)};
	if (!is_float(dt) && scalar_int(L, idx, &v)) {
		v = dt == MT_UINT64 ? v : int_saturate(v, 0, dt);
		sv_move_int(&one, 0, 1, &v, 1);
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
	struct sv v;
	sv_of(&v, t, 1, t->shape);
	int64_t x[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t k = n - i < BLOCK ? n - i : BLOCK;
		for (int64_t j = 0; j < k; j++)
			x[j] = int_saturate((int64_t)((uint64_t)a + (uint64_t)(i + j) * (uint64_t)step),
					    0, dt);
		sv_move_int(&v, i, k, x, 1);
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
	if (!is_float(dt) && (!ai || lua_isinteger(L, ai)) && lua_isinteger(L, bi) &&
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
static int check_dim(lua_State *L, int idx, const lt_tensor *t, int extra)
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
	int d = check_dim(L, 2, t, 0);
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
	int d = check_dim(L, 2, t, 0);
	select_view(L, t, d, check_index(L, luaL_checkinteger(L, 3), t->shape[d], "select"));
	return 1;
}

/* t:transpose([d1, d2]) — swap two dims (default the last two); a view. */
static int l_transpose(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	if (t->rank < 2)
		return lt_error(L, "transpose: needs at least 2 dimensions, has %d", t->rank);
	int a = lua_isnoneornil(L, 2) ? t->rank - 2 : check_dim(L, 2, t, 0);
	int b = lua_isnoneornil(L, 3) ? t->rank - 1 : check_dim(L, 3, t, 0);
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
	int d = check_dim(L, 2, t, 0);
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
	else if (is_float(dt))
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

static double check_value(lua_State *L, int idx, const char *what)
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
		check_value(L, t->rank + 2, "set"); /* raises, naming the value's type */
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
			check_value(L, 3, "index");
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

/* ---- arithmetic ----------------------------------------------------------- */

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_MIN, OP_MAX, OP_EQ, OP_NE, OP_LT, OP_LE,
       OP_GT, OP_GE, OP_AND, OP_OR };

static const char *const op_names[] = {"add", "sub", "mul", "div", "pow", "minimum",
				       "maximum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
				       "logical_or"};

static int is_compare(int op)
{
	return op >= OP_EQ;
}

/* Result dtype: comparisons give bool; a float operand or `/` gives float
 * (float64 only when an operand is); integers of one dtype keep it, mixed
 * ones give int64.  A Lua number adapts to the tensor (float for an
 * integer tensor only when it is not integral). */
static mt_dtype result_dtype(int op, const lt_tensor *a, const lt_tensor *b, double scalar,
			     int scalar_int)
{
	if (is_compare(op))
		return MT_BOOL;
	mt_dtype x = a->dtype, y = b ? b->dtype : MT_DTYPE_INVALID;
	int fl = is_float(x) || (b && is_float(y)) || op == OP_DIV || op == OP_POW ||
		 (!b && !scalar_int);
	if (fl) {
		if (x == MT_FLOAT64 || y == MT_FLOAT64)
			return MT_FLOAT64;
		if ((x == MT_FLOAT16 || !is_float(x)) && b && (y == MT_FLOAT16 || !is_float(y)) &&
		    x == MT_FLOAT16 && y == MT_FLOAT16)
			return MT_FLOAT16;
		return MT_FLOAT32;
	}
	if (!b || x == y)
		return x == MT_BOOL && op != OP_MUL && op != OP_MIN && op != OP_MAX ? MT_INT64 : x;
	return MT_INT64;
}

static double apply(int op, double x, double y)
{
	switch (op) {
	case OP_ADD: return x + y;
	case OP_SUB: return x - y;
	case OP_MUL: return x * y;
	case OP_DIV: return x / y;
	case OP_POW: return pow(x, y);
	case OP_MIN: return x < y ? x : y;
	case OP_MAX: return x > y ? x : y;
	case OP_EQ: return x == y;
	case OP_NE: return x != y;
	case OP_LT: return x < y;
	case OP_LE: return x <= y;
	case OP_GT: return x > y;
	case OP_GE: return x >= y;
	case OP_AND: return x != 0 && y != 0;
	default: return x != 0 || y != 0;
	}
}

static void apply_block(int op, double *x, const double *y, double ys, int64_t k)
{
#define LOOP(expr)                                   \
	for (int64_t i = 0; i < k; i++) {            \
		double yv = y ? y[i] : ys;           \
		x[i] = (expr);                       \
	}
	switch (op) {
	case OP_ADD: LOOP(x[i] + yv) break;
	case OP_SUB: LOOP(x[i] - yv) break;
	case OP_MUL: LOOP(x[i] * yv) break;
	case OP_DIV: LOOP(x[i] / yv) break;
	default: LOOP(apply(op, x[i], yv)) break;
	}
#undef LOOP
}

/* numpy's broadcast of two shapes into out; the error names the op. */
static int broadcast(lua_State *L, const lt_tensor *a, const lt_tensor *b, int64_t *out,
		     const char *what)
{
	int r = a->rank > b->rank ? a->rank : b->rank;
	for (int d = 0; d < r; d++) {
		int da = d - (r - a->rank), db = d - (r - b->rank);
		int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
		if (x != y && x != 1 && y != 1)
			lt_error(L, "%s: shapes do not broadcast: dim %d is %d in one operand "
				   "and %d in the other", what, d + 1, (int)x, (int)y);
		out[d] = x == 1 ? y : x;
	}
	return r;
}

/* The float32 fast path: contiguous operands of one shape, or a scalar. */
static int binop_f32(int op, const lt_tensor *a, const lt_tensor *b, double s, lt_tensor *o,
		     int swapped)
{
	if (op > OP_DIV || a->dtype != MT_FLOAT32 || o->dtype != MT_FLOAT32 ||
	    !lt_is_contiguous(a) || (b && (b->dtype != MT_FLOAT32 || !lt_is_contiguous(b) ||
					   lt_numel(b) != lt_numel(a))))
		return 0;
	const float *x = lt_data(a), *y = b ? lt_data(b) : NULL;
	float *z = lt_data(o), c = (float)s;
	int64_t n = lt_numel(a);
	if (swapped && !y) {
		/* c - x, c / x */
		if (op == OP_SUB)
			for (int64_t i = 0; i < n; i++) z[i] = c - x[i];
		else if (op == OP_DIV)
			for (int64_t i = 0; i < n; i++) z[i] = c / x[i];
		else
			return 0;
		return 1;
	}
	switch (op) {
	case OP_ADD: for (int64_t i = 0; i < n; i++) z[i] = x[i] + (y ? y[i] : c); break;
	case OP_SUB: for (int64_t i = 0; i < n; i++) z[i] = x[i] - (y ? y[i] : c); break;
	case OP_MUL: for (int64_t i = 0; i < n; i++) z[i] = x[i] * (y ? y[i] : c); break;
	default: for (int64_t i = 0; i < n; i++) z[i] = x[i] / (y ? y[i] : c); break;
	}
	return 1;
}

/* x OP y exactly in 64-bit integers, each unsigned when its flag says so;
 * + - * wrap around (the store keeps the result dtype's low bits). */
static int64_t apply_int(int op, int64_t x, int xu, int64_t y, int yu)
{
	switch (op) {
	case OP_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
	case OP_SUB: return (int64_t)((uint64_t)x - (uint64_t)y);
	case OP_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
	case OP_AND: return x != 0 && y != 0;
	case OP_OR: return x != 0 || y != 0;
	default: break;
	}
	int c = cmp_int(x, xu, y, yu);
	switch (op) {
	case OP_MIN: return c <= 0 ? x : y;
	case OP_MAX: return c >= 0 ? x : y;
	case OP_EQ: return c == 0;
	case OP_NE: return c != 0;
	case OP_LT: return c < 0;
	case OP_LE: return c <= 0;
	case OP_GT: return c > 0;
	default: return c >= 0;
	}
}

/* One side of an integer operation: a tensor seen with the result's shape,
 * or a scalar. */
struct int_side {
	struct sv v;
	int is_scalar, u;
	int64_t s;
};

/* o = a OP b over integer operands (b a tensor or a scalar, on the left when
 * swapped), exact: doubles would round values beyond 2^53. */
static void binop_int(int op, const lt_tensor *a, const struct int_side *b, int swapped,
		      lt_tensor *o)
{
	struct sv va, vo;
	sv_of(&va, a, o->rank, o->shape);
	sv_of(&vo, o, o->rank, o->shape);
	int au = a->dtype == MT_UINT64;
	int64_t n = lt_numel(o), x[BLOCK], y[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t k = n - i < BLOCK ? n - i : BLOCK;
		sv_move_int(&va, i, k, x, 0);
		if (!b->is_scalar)
			sv_move_int(&b->v, i, k, y, 0);
		for (int64_t j = 0; j < k; j++) {
			int64_t yv = b->is_scalar ? b->s : y[j];
			x[j] = swapped ? apply_int(op, yv, b->u, x[j], au)
				       : apply_int(op, x[j], au, yv, b->u);
		}
		sv_move_int(&vo, i, k, x, 1);
	}
}

/* The integer side b of `a OP b` when both are integers and the op stays in
 * integers (not / or ^); 0 otherwise.  A Lua integer takes a's domain: with
 * a uint64 tensor, its 64 bits (so t:eq(t:get(i)) holds for every element). */
static int int_side(lua_State *L, int op, const lt_tensor *a, const lt_tensor *b, int sidx,
		    const int64_t *shape, int rank, struct int_side *out)
{
	if (op == OP_DIV || op == OP_POW || is_float(a->dtype) || (b && is_float(b->dtype)))
		return 0;
	memset(out, 0, sizeof *out);
	if (b) {
		sv_of(&out->v, b, rank, shape);
		out->u = b->dtype == MT_UINT64;
		return 1;
	}
	out->is_scalar = 1;
	out->u = a->dtype == MT_UINT64;
	return scalar_int(L, sidx, &out->s);
}

/* a OP b where either may be a Lua number (not both). */
static int binop(lua_State *L, int op)
{
	const char *what = op_names[op];
	lt_tensor *a = lt_test(L, 1), *b = lt_test(L, 2);
	int swapped = 0, si = 0;
	double s = 0;
	int sint = 0;
	if (!a && !b)
		return lt_error(L, "%s: expected a tensor operand", what);
	if (!a || !b) {
		si = a ? 2 : 1;
		s = check_value(L, si, what);
		sint = lua_isinteger(L, si) || lua_isboolean(L, si) || s == floor(s);
		if (!a) {
			a = b;
			swapped = 1;
		}
		b = NULL;
	}
	if (!a->buf || (b && !b->buf))
		return lt_error(L, "%s: tensor was freed", what);
	int64_t shape[LT_MAX_DIMS];
	int rank = b ? broadcast(L, a, b, shape, what) : a->rank;
	if (!b)
		memcpy(shape, a->shape, sizeof shape);
	lt_tensor *o = lt_new(L, what, result_dtype(op, a, b, s, sint), rank, shape);
	struct int_side is;
	if (int_side(L, op, a, b, si, shape, rank, &is)) {
		binop_int(op, a, &is, swapped, o);
		return 1;
	}
	if (!b || lt_numel(b) == lt_numel(a))
		if (binop_f32(op, a, b, s, o, swapped))
			return 1;
	struct sv va, vb, vo;
	sv_of(&va, a, rank, shape);
	if (b)
		sv_of(&vb, b, rank, shape);
	sv_of(&vo, o, rank, shape);
	int64_t n = lt_numel(o);
	double x[BLOCK], y[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t k = n - i < BLOCK ? n - i : BLOCK;
		sv_move(&va, i, k, x, 0);
		if (b)
			sv_move(&vb, i, k, y, 0);
		if (swapped) {
			for (int64_t j = 0; j < k; j++)
				x[j] = apply(op, s, x[j]);
		} else {
			apply_block(op, x, b ? y : NULL, s, k);
		}
		sv_move(&vo, i, k, x, 1);
	}
	return 1;
}

/* t:add_(x) and friends: the result goes into t itself (in t's dtype), so a
 * pipeline over a large tensor allocates nothing more.  x must broadcast to
 * t's shape. */
static int binop_inplace(lua_State *L, int op)
{
	const char *what = op_names[op];
	lt_tensor *a = lt_check(L, 1), *b = lt_test(L, 2);
	double s = 0;
	if (!b)
		s = check_value(L, 2, what);
	else if (!b->buf)
		return lt_error(L, "%s: tensor was freed", what);
	if (b) {
		int64_t shape[LT_MAX_DIMS];
		int rank = broadcast(L, a, b, shape, what);
		int same = rank == a->rank;
		for (int d = 0; same && d < rank; d++)
			same = shape[d] == a->shape[d];
		if (!same)
			return lt_error(L, "%s: the operand's shape does not broadcast to the "
					"tensor's (an in-place result keeps its shape)", what);
		if (b->buf == a->buf) /* overlapping views: read from a copy */
			b = lt_cast(L, b, b->dtype);
	}
	lua_pushvalue(L, 1);
	struct int_side is;
	if (int_side(L, op, a, b, 2, a->shape, a->rank, &is)) {
		binop_int(op, a, &is, 0, a);
		return 1;
	}
	if ((!b || lt_numel(b) == lt_numel(a)) && binop_f32(op, a, b, s, a, 0))
		return 1;
	struct sv va, vb;
	sv_of(&va, a, a->rank, a->shape);
	if (b)
		sv_of(&vb, b, a->rank, a->shape);
	int64_t n = lt_numel(a);
	double x[BLOCK], y[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t k = n - i < BLOCK ? n - i : BLOCK;
		sv_move(&va, i, k, x, 0);
		if (b)
			sv_move(&vb, i, k, y, 0);
		apply_block(op, x, b ? y : NULL, s, k);
		sv_move(&va, i, k, x, 1);
	}
	return 1;
}

#define BINOP(name, op) static int name(lua_State *L) { return binop(L, op); }
#define BINOP_(name, op) static int name(lua_State *L) { return binop_inplace(L, op); }
BINOP_(l_add_, OP_ADD)
BINOP_(l_sub_, OP_SUB)
BINOP_(l_mul_, OP_MUL)
BINOP_(l_div_, OP_DIV)
BINOP(l_add, OP_ADD)
BINOP(l_sub, OP_SUB)
BINOP(l_mul, OP_MUL)
BINOP(l_div, OP_DIV)
BINOP(l_pow, OP_POW)
BINOP(l_minimum, OP_MIN)
BINOP(l_maximum, OP_MAX)
BINOP(l_eq, OP_EQ)
BINOP(l_ne, OP_NE)
BINOP(l_lt, OP_LT)
BINOP(l_le, OP_LE)
BINOP(l_gt, OP_GT)
BINOP(l_ge, OP_GE)
BINOP(l_and, OP_AND)
BINOP(l_or, OP_OR)

enum { U_NEG, U_ABS, U_SQRT, U_EXP, U_LOG, U_FLOOR, U_CEIL, U_ROUND, U_NOT };

/* Elementwise f(x) into a new tensor of dtype dt (float funcs give float). */
static void unop_into(const lt_tensor *t, lt_tensor *o, int op, double lo, double hi, int clamp)
{
	struct sv vt, vo;
	sv_of(&vt, t, t->rank, t->shape);
	sv_of(&vo, o, o->rank, o->shape);
	int64_t n = lt_numel(t);
	double x[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t k = n - i < BLOCK ? n - i : BLOCK;
		sv_move(&vt, i, k, x, 0);
		for (int64_t j = 0; j < k; j++) {
			double v = x[j];
			if (clamp) {
				v = v < lo ? lo : v > hi ? hi : v;
			} else {
				switch (op) {
				case U_NEG: v = -v; break;
				case U_ABS: v = fabs(v); break;
				case U_SQRT: v = sqrt(v); break;
				case U_EXP: v = exp(v); break;
				case U_LOG: v = log(v); break;
				case U_FLOOR: v = floor(v); break;
				case U_CEIL: v = ceil(v); break;
				case U_ROUND: v = round(v); break;
				default: v = v == 0; break;
				}
			}
			x[j] = v;
		}
		sv_move(&vo, i, k, x, 1);
	}
}

/* unop_into for integer tensors, exact: - and abs wrap around (-INT64_MIN is
 * INT64_MIN, as in Lua and numpy), rounding keeps the value; with clamp, the
 * bounds lo and hi are in t's domain (uint64 bits for a uint64 tensor). */
static void unop_int(const lt_tensor *t, lt_tensor *o, int op, int64_t lo, int64_t hi, int clamp)
{
	struct sv vt, vo;
	sv_of(&vt, t, t->rank, t->shape);
	sv_of(&vo, o, o->rank, o->shape);
	int u = t->dtype == MT_UINT64;
	int64_t n = lt_numel(t), x[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t k = n - i < BLOCK ? n - i : BLOCK;
		sv_move_int(&vt, i, k, x, 0);
		for (int64_t j = 0; j < k; j++) {
			int64_t v = x[j];
			if (clamp)
				v = cmp_int(v, u, lo, u) < 0 ? lo : cmp_int(v, u, hi, u) > 0 ? hi : v;
			else if (op == U_NEG || (op == U_ABS && !u && v < 0))
				v = (int64_t)(0 - (uint64_t)v);
			else if (op == U_NOT)
				v = v == 0;
			x[j] = v;
		}
		sv_move_int(&vo, i, k, x, 1);
	}
}

static int unop(lua_State *L, int op)
{
	lt_tensor *t = lt_check(L, 1);
	mt_dtype dt = t->dtype;
	if (op == U_NOT)
		dt = MT_BOOL;
	else if ((op == U_SQRT || op == U_EXP || op == U_LOG) && !is_float(dt))
		dt = MT_FLOAT32;
	else if (op == U_NEG && dt == MT_BOOL)
		dt = MT_INT64;
	lt_tensor *o = lt_new(L, "unary operation", dt, t->rank, t->shape);
	if (!is_float(t->dtype) && !is_float(dt))
		unop_int(t, o, op, 0, 0, 0);
	else
		unop_into(t, o, op, 0, 0, 0);
	return 1;
}

#define UNOP(name, op) static int name(lua_State *L) { return unop(L, op); }
UNOP(l_neg, U_NEG)
UNOP(l_abs, U_ABS)
UNOP(l_sqrt, U_SQRT)
UNOP(l_exp, U_EXP)
UNOP(l_log, U_LOG)
UNOP(l_floor_, U_FLOOR)
UNOP(l_ceil, U_CEIL)
UNOP(l_round, U_ROUND)
UNOP(l_not, U_NOT)

/* A clamp bound (argument idx, upper when hi) for an integer tensor of dtype
 * dt, in its domain: nil is the end of dt's range, a Lua integer is taken as
 * is, a float is rounded inward and saturated to dt's range. */
static int64_t int_bound(lua_State *L, int idx, mt_dtype dt, int hi)
{
	int64_t v;
	if (lua_isnoneornil(L, idx))
		return dt == MT_UINT64 ? (hi ? -1 : 0) : hi ? INT64_MAX : INT64_MIN;
	if (scalar_int(L, idx, &v))
		return v;
	double d = luaL_checknumber(L, idx);
	uint64_t e; /* the widest element */
	struct sv one = {.base = (char *)&e, .dt = dt, .esize = mt_dtype_size(dt)};
	elem_set(&e, dt, hi ? floor(d) : ceil(d));
	sv_move_int(&one, 0, 1, &v, 0);
	return v;
}

/* t:clamp(lo, hi) — either may be nil (no bound). */
static int l_clamp(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lua_settop(L, 3); /* the bounds stay at 2 and 3 under the result */
	double lo = lua_isnoneornil(L, 2) ? -HUGE_VAL : luaL_checknumber(L, 2);
	double hi = lua_isnoneornil(L, 3) ? HUGE_VAL : luaL_checknumber(L, 3);
	if (lo > hi)
		return lt_error(L, "clamp: lo (%f) is greater than hi (%f)", lo, hi);
	lt_tensor *o = lt_new(L, "clamp", t->dtype, t->rank, t->shape);
	if (is_float(t->dtype))
		unop_into(t, o, 0, lo, hi, 1);
	else
		unop_int(t, o, 0, int_bound(L, 2, t->dtype, 0), int_bound(L, 3, t->dtype, 1), 1);
	return 1;
}

/* ---- reductions ------------------------------------------------------------ */

enum { R_SUM, R_MEAN, R_STD, R_MIN, R_MAX, R_ARGMAX, R_ARGMIN };

struct acc {
	double sum, sq, best, n;
	int64_t arg;
};

static void acc_add(struct acc *a, const double *x, int64_t k, int64_t base, int kind)
{
	for (int64_t i = 0; i < k; i++) {
		double v = x[i];
		if (kind == R_MIN || kind == R_MAX || kind == R_ARGMAX || kind == R_ARGMIN) {
			int better = kind == R_MIN || kind == R_ARGMIN ? v < a->best : v > a->best;
			if (a->n == 0 || better || (v != v && a->best == a->best)) {
				a->best = v;
				a->arg = base + i;
			}
		} else {
			a->sum += v;
			a->sq += v * v;
		}
		a->n++;
	}
}

static double acc_result(const struct acc *a, int kind)
{
	switch (kind) {
	case R_SUM: return a->sum;
	case R_MEAN: return a->n ? a->sum / a->n : (double)NAN;
	case R_STD: {
		if (!a->n)
			return (double)NAN;
		double m = a->sum / a->n, var = a->sq / a->n - m * m;
		return sqrt(var > 0 ? var : 0);
	}
	case R_ARGMAX:
	case R_ARGMIN: return (double)(a->arg + 1);
	default: return a->n ? a->best : (double)NAN;
	}
}

/* t seen with dim d moved last (perm), and the shape without d (oshape):
 * each output element's inputs are then one run. */
static void dim_last(const lt_tensor *t, int d, lt_tensor *perm, int64_t *oshape)
{
	*perm = *t;
	for (int k = 0, j = 0; k < t->rank; k++)
		if (k != d) {
			perm->shape[j] = t->shape[k];
			perm->strides[j] = t->strides[k];
			oshape[j++] = t->shape[k];
		}
	perm->shape[t->rank - 1] = t->shape[d];
	perm->strides[t->rank - 1] = t->strides[d];
}

/* Integer sum, min, max, argmax and argmin, exact: a sum wraps around in
 * 64 bits (a uint64 sum keeps its bits), comparisons know uint64 (u). */
struct iacc {
	int64_t sum, best, arg, n;
};

static void iacc_add(struct iacc *a, const int64_t *x, int64_t k, int64_t base, int kind, int u)
{
	for (int64_t i = 0; i < k; i++, a->n++) {
		if (kind == R_SUM) {
			a->sum = (int64_t)((uint64_t)a->sum + (uint64_t)x[i]);
			continue;
		}
		int c = a->n ? cmp_int(x[i], u, a->best, u) : 0;
		if (!a->n || (kind == R_MIN || kind == R_ARGMIN ? c < 0 : c > 0)) {
			a->best = x[i];
			a->arg = base + i;
		}
	}
}

static int64_t iacc_result(const struct iacc *a, int kind)
{
	return kind == R_SUM ? a->sum : kind == R_ARGMAX || kind == R_ARGMIN ? a->arg + 1 : a->best;
}

/* reduce for integer tensors: an integer over everything, or a tensor (int64;
 * min and max keep the dtype) with dim removed. */
static int reduce_int(lua_State *L, lt_tensor *t, int kind, const char *what)
{
	int u = t->dtype == MT_UINT64;
	int64_t x[BLOCK];
	struct sv v, vo;
	if (lua_isnoneornil(L, 2)) {
		struct iacc a = {0};
		int64_t n = lt_numel(t);
		sv_of(&v, t, t->rank, t->shape);
		for (int64_t i = 0; i < n; i += BLOCK) {
			int64_t k = n - i < BLOCK ? n - i : BLOCK;
			sv_move_int(&v, i, k, x, 0);
			iacc_add(&a, x, k, i, kind, u);
		}
		lua_pushinteger(L, iacc_result(&a, kind));
		return 1;
	}
	int d = check_dim(L, 2, t, 0);
	if (t->shape[d] == 0 && kind != R_SUM)
		return lt_error(L, "%s: dim %d is empty", what, d + 1);
	lt_tensor perm;
	int64_t oshape[LT_MAX_DIMS];
	dim_last(t, d, &perm, oshape);
	mt_dtype odt = kind == R_MIN || kind == R_MAX ? t->dtype : MT_INT64;
	lt_tensor *o = lt_new(L, what, odt, t->rank - 1, oshape);
	sv_of(&v, &perm, perm.rank, perm.shape);
	sv_of(&vo, o, o->rank, o->shape);
	int64_t len = t->shape[d], outer = lt_numel(o);
	for (int64_t r = 0; r < outer; r++) {
		struct iacc a = {0};
		for (int64_t i = 0; i < len; i += BLOCK) {
			int64_t k = len - i < BLOCK ? len - i : BLOCK;
			sv_move_int(&v, r * len + i, k, x, 0);
			iacc_add(&a, x, k, i, kind, u);
		}
		int64_t res = iacc_result(&a, kind);
		sv_move_int(&vo, r, 1, &res, 1);
	}
	return 1;
}

/* The reduction of elements [start, start + len) of view v. */
static double reduce_run(const struct sv *v, int64_t start, int64_t len, int kind)
{
	double x[BLOCK];
	struct acc a = {0};
	for (int64_t i = 0; i < len; i += BLOCK) {
		int64_t k = len - i < BLOCK ? len - i : BLOCK;
		sv_move(v, start + i, k, x, 0);
		acc_add(&a, x, k, i, kind == R_STD ? R_SUM : kind);
	}
	if (kind != R_STD)
		return acc_result(&a, kind);
	/* A second pass about the mean: the one-pass formula loses digits. */
	double m = a.n ? a.sum / a.n : 0, ss = 0;
	for (int64_t i = 0; i < len; i += BLOCK) {
		int64_t k = len - i < BLOCK ? len - i : BLOCK;
		sv_move(v, start + i, k, x, 0);
		for (int64_t j = 0; j < k; j++)
			ss += (x[j] - m) * (x[j] - m);
	}
	return a.n ? sqrt(ss / a.n) : (double)NAN;
}

/* t:sum([dim]) and friends: a number over everything, or a tensor with dim
 * removed.  std is the population deviation (numpy's default ddof=0);
 * argmax/argmin are 1-based. */
static int reduce(lua_State *L, int kind, const char *what)
{
	lt_tensor *t = lt_check(L, 1);
	int64_t n = lt_numel(t);
	if ((kind >= R_MIN) && n == 0)
		return lt_error(L, "%s: the tensor is empty", what);
	if (!is_float(t->dtype) && kind != R_MEAN && kind != R_STD)
		return reduce_int(L, t, kind, what);
	struct sv v;
	if (lua_isnoneornil(L, 2)) {
		sv_of(&v, t, t->rank, t->shape);
		double r = reduce_run(&v, 0, n, kind);
		if (kind == R_ARGMAX || kind == R_ARGMIN)
			lua_pushinteger(L, (lua_Integer)r);
		else
			lua_pushnumber(L, r);
		return 1;
	}
	int d = check_dim(L, 2, t, 0);
	lt_tensor perm;
	int64_t oshape[LT_MAX_DIMS];
	dim_last(t, d, &perm, oshape);
	if (t->shape[d] == 0 && kind >= R_MIN)
		return lt_error(L, "%s: dim %d is empty", what, d + 1);
	mt_dtype odt = kind == R_ARGMAX || kind == R_ARGMIN ? MT_INT64
		       : kind == R_MIN || kind == R_MAX ? t->dtype
		       : t->dtype == MT_FLOAT64 ? MT_FLOAT64 : MT_FLOAT32;
	lt_tensor *o = lt_new(L, what, odt, t->rank - 1, oshape);
	sv_of(&v, &perm, perm.rank, perm.shape);
	int64_t len = t->shape[d], outer = lt_numel(o);
	char *op = lt_data(o);
	size_t es = mt_dtype_size(odt);
	for (int64_t r = 0; r < outer; r++)
		elem_set(op + r * (int64_t)es, odt, reduce_run(&v, r * len, len, kind));
	return 1;
}

static int l_sum(lua_State *L) { return reduce(L, R_SUM, "sum"); }
static int l_mean(lua_State *L) { return reduce(L, R_MEAN, "mean"); }
static int l_std(lua_State *L) { return reduce(L, R_STD, "std"); }
static int l_min(lua_State *L) { return reduce(L, R_MIN, "min"); }
static int l_max(lua_State *L) { return reduce(L, R_MAX, "max"); }
static int l_argmax(lua_State *L) { return reduce(L, R_ARGMAX, "argmax"); }
static int l_argmin(lua_State *L) { return reduce(L, R_ARGMIN, "argmin"); }

/* t:normalize(mean, std) — (t - mean) / std as float32 (float64 stays);
 * mean and std are numbers or tensors that broadcast (per channel). */
static int l_normalize(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lua_settop(L, 3);
	if (!lt_test(L, 2))
		check_value(L, 2, "normalize: mean");
	if (!lt_test(L, 3)) {
		double sd = check_value(L, 3, "normalize: std");
		if (sd == 0)
			return lt_error(L, "normalize: std is 0");
	}
	if (!is_float(t->dtype)) {
		lt_tensor *c = lt_new(L, "normalize", MT_FLOAT32, t->rank, t->shape);
		copy_into(c, t);
		lua_replace(L, 1);
	}
	lua_pushcfunction(L, l_sub);
	lua_pushvalue(L, 1);
	lua_pushvalue(L, 2);
	lua_call(L, 2, 1);
	lua_pushcfunction(L, l_div);
	lua_insert(L, -2);
	lua_pushvalue(L, 3);
	lua_call(L, 2, 1);
	return 1;
}

/* t:one_hot(n [, dtype]) — integer classes 0..n-1 to a trailing dim of n
 * (default float32); a class outside is an error naming its position. */
static int l_one_hot(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	lua_Integer n = luaL_checkinteger(L, 2);
	luaL_argcheck(L, n >= 1, 2, "number of classes must be >= 1");
	if (is_float(t->dtype))
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
	struct sv v;
	sv_of(&v, t, t->rank, t->shape);
	int64_t m = lt_numel(t);
	size_t es = mt_dtype_size(o->dtype);
	double x[BLOCK];
	for (int64_t i = 0; i < m; i += BLOCK) {
		int64_t k = m - i < BLOCK ? m - i : BLOCK;
		sv_move(&v, i, k, x, 0);
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
	int d = lua_isnoneornil(L, 2) ? 0 : check_dim(L, 2, &probe, 0);
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
			dt = is_float(t->dtype) || is_float(dt) ? MT_FLOAT64 : MT_INT64;
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
	struct sv iv;
	if (ix)
		sv_of(&iv, ix, ix->rank, ix->shape);
	if (!ix) {
		int isint;
		lua_geti(L, 2, i + 1);
		v = lua_tointegerx(L, -1, &isint);
		lua_pop(L, 1);
		if (!isint)
			lt_error(L, "take: indices[%lld] is not an integer", (long long)i + 1);
	} else if (is_float(ix->dtype)) {
		double x;
		sv_move(&iv, i, 1, &x, 0);
		if (!(x >= 1 && x < (double)rows + 1)) /* in range before converting */
			lt_error(L, "take: indices[%lld] = %g is out of range 1..%lld",
				 (long long)i + 1, x, (long long)rows);
		v = (int64_t)x;
	} else {
		sv_move_int(&iv, i, 1, &v, 0);
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
	struct sv v;
	sv_of(&v, m, m->rank, m->shape);
	double x[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t c = n - i < BLOCK ? n - i : BLOCK;
		sv_move(&v, i, c, x, 0);
		for (int64_t j = 0; j < c; j++)
			if (x[j] != 0)
				rows[k++] = i + j;
	}
	gather_rows(L, t, rows, k, "filter");
	lt_free(L, rows, (size_t)(n ? n : 1) * sizeof *rows);
	return 1;
}

/* isin for an integer tensor, exact: a value matches the elements equal to
 * it (a negative integer, a uint64 tensor's elements with its bits). */
static int isin_int(lua_State *L, const lt_tensor *t, int nv)
{
	int64_t vals[256];
	int k = 0;
	for (int i = 0; i < nv; i++) {
		lua_geti(L, 2, i + 1);
		double d = check_value(L, -1, "isin: values");
		if (scalar_int(L, -1, &vals[k]))
			k++;
		else if (t->dtype == MT_UINT64 && d == floor(d) && d >= 0x1p63 && d < 0x1p64)
			vals[k++] = (int64_t)(uint64_t)d; /* beyond int64, within uint64 */
		lua_pop(L, 1);
	}
	lt_tensor *o = lt_new(L, "isin", MT_BOOL, t->rank, t->shape);
	struct sv v;
	sv_of(&v, t, t->rank, t->shape);
	uint8_t *op = lt_data(o);
	int64_t n = lt_numel(t), x[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t c = n - i < BLOCK ? n - i : BLOCK;
		sv_move_int(&v, i, c, x, 0);
		for (int64_t j = 0; j < c; j++) {
			int hit = 0;
			for (int q = 0; q < k && !hit; q++)
				hit = x[j] == vals[q];
			op[i + j] = (uint8_t)hit;
		}
	}
	return 1;
}

/* t:isin(values) — bool mask of elements equal to one of the listed numbers. */
static int l_isin(lua_State *L)
{
	lt_tensor *t = lt_check(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	int nv = (int)luaL_len(L, 2);
	double vals[256];
	if (nv < 0 || nv > 256)
		return lt_error(L, "isin: at most 256 values");
	if (!is_float(t->dtype))
		return isin_int(L, t, nv);
	for (int i = 0; i < nv; i++) {
		lua_geti(L, 2, i + 1);
		vals[i] = check_value(L, -1, "isin: values");
		lua_pop(L, 1);
	}
	lt_tensor *o = lt_new(L, "isin", MT_BOOL, t->rank, t->shape);
	struct sv v;
	sv_of(&v, t, t->rank, t->shape);
	uint8_t *op = lt_data(o);
	int64_t n = lt_numel(t);
	double x[BLOCK];
	for (int64_t i = 0; i < n; i += BLOCK) {
		int64_t c = n - i < BLOCK ? n - i : BLOCK;
		sv_move(&v, i, c, x, 0);
		for (int64_t j = 0; j < c; j++) {
			int hit = 0;
			for (int q = 0; q < nv && !hit; q++)
				hit = x[j] == vals[q];
			op[i + j] = (uint8_t)hit;
		}
	}
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
		{"bytes", l_bytes}, {"totable", l_totable},
		{"add", l_add}, {"sub", l_sub}, {"mul", l_mul}, {"div", l_div}, {"pow", l_pow},
		{"minimum", l_minimum}, {"maximum", l_maximum}, {"eq", l_eq}, {"ne", l_ne},
		{"lt", l_lt}, {"le", l_le}, {"gt", l_gt}, {"ge", l_ge}, {"logical_and", l_and},
		{"logical_or", l_or}, {"logical_not", l_not}, {"neg", l_neg}, {"abs", l_abs},
		{"sqrt", l_sqrt}, {"exp", l_exp}, {"log", l_log}, {"floor", l_floor_},
		{"ceil", l_ceil}, {"round", l_round}, {"clamp", l_clamp},
		{"sum", l_sum}, {"mean", l_mean}, {"std", l_std}, {"min", l_min}, {"max", l_max},
		{"argmax", l_argmax}, {"argmin", l_argmin}, {"normalize", l_normalize},
		{"one_hot", l_one_hot}, {"take", l_take}, {"filter", l_filter}, {"isin", l_isin},
		{"add_", l_add_}, {"sub_", l_sub_}, {"mul_", l_mul_}, {"div_", l_div_},
		{NULL, NULL},
	};
	static const luaL_Reg meta[] = {
		{"__index", l_index}, {"__newindex", l_newindex}, {"__len", l_len},
		{"__tostring", l_tostring}, {"__gc", l_gc}, {"__close", l_gc},
		{"__add", l_add}, {"__sub", l_sub}, {"__mul", l_mul}, {"__div", l_div},
		{"__pow", l_pow}, {"__unm", l_neg}, {NULL, NULL},
	};
	static const luaL_Reg funcs[] = {
		{"tensor", l_tensor}, {"zeros", l_zeros}, {"ones", l_ones}, {"full", l_full},
		{"arange", l_arange}, {"from_bytes", l_from_bytes}, {"concat", l_concat},
		{"stack", l_stack}, {NULL, NULL},
	};
	luaL_newmetatable(L, LT_TENSOR);
	luaL_setfuncs(L, meta, 0);
	luaL_newlib(L, methods);
	lua_setfield(L, -2, "methods");
	lua_pop(L, 1);
	luaL_setfuncs(L, funcs, 0);
}
