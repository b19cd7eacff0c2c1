/* lua-tensor-ops.c — tensor arithmetic and comparisons with numpy broadcasting, elementwise functions, reductions: exact in integers, in double otherwise. */
#include <math.h>
#include <string.h>

#include "lua-int.h"

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
			     int lt_scalar_int)
{
	if (is_compare(op))
		return MT_BOOL;
	mt_dtype x = a->dtype, y = b ? b->dtype : MT_DTYPE_INVALID;
	int fl = lt_is_float(x) || (b && lt_is_float(y)) || op == OP_DIV || op == OP_POW ||
		 (!b && !lt_scalar_int);
	if (fl) {
		if (x == MT_FLOAT64 || y == MT_FLOAT64)
			return MT_FLOAT64;
		if ((x == MT_FLOAT16 || !lt_is_float(x)) && b &&
		    (y == MT_FLOAT16 || !lt_is_float(y)) &&
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

/* The general path of a binary operation, a block of doubles at a time:
 * vo = va op vb (vb NULL: op s), or s op va when swapped.  vo may be va. */
static void binop_blocks(int op, const struct lt_sv *va, const struct lt_sv *vb, double s,
			 int swapped, const struct lt_sv *vo, int64_t n)
{
	double x[LT_BLOCK], y[LT_BLOCK];
	for (int64_t i = 0; i < n; i += LT_BLOCK) {
		int64_t k = n - i < LT_BLOCK ? n - i : LT_BLOCK;
		lt_sv_move(va, i, k, x, 0);
		if (vb)
			lt_sv_move(vb, i, k, y, 0);
		if (swapped) {
			for (int64_t j = 0; j < k; j++)
				x[j] = apply(op, s, x[j]);
		} else {
			apply_block(op, x, vb ? y : NULL, s, k);
		}
		lt_sv_move(vo, i, k, x, 1);
	}
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
	int c = lt_cmp_int(x, xu, y, yu);
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
	struct lt_sv v;
	int is_scalar, u;
	int64_t s;
};

/* o = a OP b over integer operands (b a tensor or a scalar, on the left when
 * swapped), exact: doubles would round values beyond 2^53. */
static void binop_int(int op, const lt_tensor *a, const struct int_side *b, int swapped,
		      lt_tensor *o)
{
	struct lt_sv va, vo;
	lt_sv_of(&va, a, o->rank, o->shape);
	lt_sv_of(&vo, o, o->rank, o->shape);
	int au = a->dtype == MT_UINT64;
	int64_t n = lt_numel(o), x[LT_BLOCK], y[LT_BLOCK];
	for (int64_t i = 0; i < n; i += LT_BLOCK) {
		int64_t k = n - i < LT_BLOCK ? n - i : LT_BLOCK;
		lt_sv_move_int(&va, i, k, x, 0);
		if (!b->is_scalar)
			lt_sv_move_int(&b->v, i, k, y, 0);
		for (int64_t j = 0; j < k; j++) {
			int64_t yv = b->is_scalar ? b->s : y[j];
			x[j] = swapped ? apply_int(op, yv, b->u, x[j], au)
				       : apply_int(op, x[j], au, yv, b->u);
		}
		lt_sv_move_int(&vo, i, k, x, 1);
	}
}

/* The integer side b of `a OP b` when both are integers and the op stays in
 * integers (not / or ^); 0 otherwise.  A Lua integer takes a's domain: with
 * a uint64 tensor, its 64 bits (so t:eq(t:get(i)) holds for every element). */
static int int_side(lua_State *L, int op, const lt_tensor *a, const lt_tensor *b, int sidx,
		    const int64_t *shape, int rank, struct int_side *out)
{
	if (op == OP_DIV || op == OP_POW || lt_is_float(a->dtype) || (b && lt_is_float(b->dtype)))
		return 0;
	memset(out, 0, sizeof *out);
	if (b) {
		lt_sv_of(&out->v, b, rank, shape);
		out->u = b->dtype == MT_UINT64;
		return 1;
	}
	out->is_scalar = 1;
	out->u = a->dtype == MT_UINT64;
	return lt_scalar_int(L, sidx, &out->s);
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
		s = lt_check_value(L, si, what);
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
	struct lt_sv va, vb, vo;
	lt_sv_of(&va, a, rank, shape);
	if (b)
		lt_sv_of(&vb, b, rank, shape);
	lt_sv_of(&vo, o, rank, shape);
	binop_blocks(op, &va, b ? &vb : NULL, s, swapped, &vo, lt_numel(o));
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
		s = lt_check_value(L, 2, what);
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
	struct lt_sv va, vb;
	lt_sv_of(&va, a, a->rank, a->shape);
	if (b)
		lt_sv_of(&vb, b, a->rank, a->shape);
	binop_blocks(op, &va, b ? &vb : NULL, s, 0, &va, lt_numel(a));
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

/* One block of an elementwise map: k values at x, doubles or (for an
 * integer map) int64s, changed in place. */
typedef void map_block_fn(void *x, int64_t k, const void *ud);

/* o = f(t), a block at a time: through doubles, or exact int64s when ints. */
static void map_blocks(const lt_tensor *t, lt_tensor *o, int ints, map_block_fn *fn,
		       const void *ud)
{
	struct lt_sv vt, vo;
	lt_sv_of(&vt, t, t->rank, t->shape);
	lt_sv_of(&vo, o, o->rank, o->shape);
	int64_t n = lt_numel(t);
	union {
		double d[LT_BLOCK];
		int64_t i[LT_BLOCK];
	} x;
	for (int64_t i = 0; i < n; i += LT_BLOCK) {
		int64_t k = n - i < LT_BLOCK ? n - i : LT_BLOCK;
		if (ints)
			lt_sv_move_int(&vt, i, k, x.i, 0);
		else
			lt_sv_move(&vt, i, k, x.d, 0);
		fn(&x, k, ud);
		if (ints)
			lt_sv_move_int(&vo, i, k, x.i, 1);
		else
			lt_sv_move(&vo, i, k, x.d, 1);
	}
}

/* A unary operation or a clamp, with its bounds as doubles and (for an
 * integer tensor) in its domain (uint64 bits for a uint64 tensor). */
struct unop_args {
	int op, clamp, u;
	double lo, hi;
	int64_t ilo, ihi;
};

static void unop_block(void *xp, int64_t k, const void *ud)
{
	const struct unop_args *a = ud;
	double *x = xp;
	for (int64_t j = 0; j < k; j++) {
		double v = x[j];
		if (a->clamp) {
			v = v < a->lo ? a->lo : v > a->hi ? a->hi : v;
		} else {
			switch (a->op) {
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
}

/* The integer form, exact: - and abs wrap around (-INT64_MIN is INT64_MIN,
 * as in Lua and numpy), rounding keeps the value. */
static void unop_int_block(void *xp, int64_t k, const void *ud)
{
	const struct unop_args *a = ud;
	int64_t *x = xp;
	int u = a->u;
	for (int64_t j = 0; j < k; j++) {
		int64_t v = x[j];
		if (a->clamp) {
			if (lt_cmp_int(v, u, a->ilo, u) < 0)
				v = a->ilo;
			else if (lt_cmp_int(v, u, a->ihi, u) > 0)
				v = a->ihi;
		} else if (a->op == U_NEG || (a->op == U_ABS && !u && v < 0))
			v = (int64_t)(0 - (uint64_t)v);
		else if (a->op == U_NOT)
			v = v == 0;
		x[j] = v;
	}
}

static int unop(lua_State *L, int op)
{
	lt_tensor *t = lt_check(L, 1);
	mt_dtype dt = t->dtype;
	if (op == U_NOT)
		dt = MT_BOOL;
	else if ((op == U_SQRT || op == U_EXP || op == U_LOG) && !lt_is_float(dt))
		dt = MT_FLOAT32;
	else if (op == U_NEG && dt == MT_BOOL)
		dt = MT_INT64;
	lt_tensor *o = lt_new(L, "unary operation", dt, t->rank, t->shape);
	struct unop_args args = {.op = op, .u = t->dtype == MT_UINT64};
	if (!lt_is_float(t->dtype) && !lt_is_float(dt))
		map_blocks(t, o, 1, unop_int_block, &args);
	else
		map_blocks(t, o, 0, unop_block, &args);
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
	if (lt_scalar_int(L, idx, &v))
		return v;
	double d = luaL_checknumber(L, idx);
	uint64_t e; /* the widest element */
	struct lt_sv one = {.base = (char *)&e, .dt = dt, .esize = mt_dtype_size(dt)};
	lt_set_double(&e, dt, hi ? floor(d) : ceil(d));
	lt_sv_move_int(&one, 0, 1, &v, 0);
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
	struct unop_args args = {.clamp = 1, .u = t->dtype == MT_UINT64, .lo = lo, .hi = hi};
	if (lt_is_float(t->dtype)) {
		map_blocks(t, o, 0, unop_block, &args);
	} else {
		args.ilo = int_bound(L, 2, t->dtype, 0);
		args.ihi = int_bound(L, 3, t->dtype, 1);
		map_blocks(t, o, 1, unop_int_block, &args);
	}
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
		int c = a->n ? lt_cmp_int(x[i], u, a->best, u) : 0;
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
	int64_t x[LT_BLOCK];
	struct lt_sv v, vo;
	if (lua_isnoneornil(L, 2)) {
		struct iacc a = {0};
		int64_t n = lt_numel(t);
		lt_sv_of(&v, t, t->rank, t->shape);
		for (int64_t i = 0; i < n; i += LT_BLOCK) {
			int64_t k = n - i < LT_BLOCK ? n - i : LT_BLOCK;
			lt_sv_move_int(&v, i, k, x, 0);
			iacc_add(&a, x, k, i, kind, u);
		}
		lua_pushinteger(L, iacc_result(&a, kind));
		return 1;
	}
	int d = lt_check_dim(L, 2, t, 0);
	if (t->shape[d] == 0 && kind != R_SUM)
		return lt_error(L, "%s: dim %d is empty", what, d + 1);
	lt_tensor perm;
	int64_t oshape[LT_MAX_DIMS];
	dim_last(t, d, &perm, oshape);
	mt_dtype odt = kind == R_MIN || kind == R_MAX ? t->dtype : MT_INT64;
	lt_tensor *o = lt_new(L, what, odt, t->rank - 1, oshape);
	lt_sv_of(&v, &perm, perm.rank, perm.shape);
	lt_sv_of(&vo, o, o->rank, o->shape);
	int64_t len = t->shape[d], outer = lt_numel(o);
	for (int64_t r = 0; r < outer; r++) {
		struct iacc a = {0};
		for (int64_t i = 0; i < len; i += LT_BLOCK) {
			int64_t k = len - i < LT_BLOCK ? len - i : LT_BLOCK;
			lt_sv_move_int(&v, r * len + i, k, x, 0);
			iacc_add(&a, x, k, i, kind, u);
		}
		int64_t res = iacc_result(&a, kind);
		lt_sv_move_int(&vo, r, 1, &res, 1);
	}
	return 1;
}

/* The reduction of elements [start, start + len) of view v. */
static double reduce_run(const struct lt_sv *v, int64_t start, int64_t len, int kind)
{
	double x[LT_BLOCK];
	struct acc a = {0};
	for (int64_t i = 0; i < len; i += LT_BLOCK) {
		int64_t k = len - i < LT_BLOCK ? len - i : LT_BLOCK;
		lt_sv_move(v, start + i, k, x, 0);
		acc_add(&a, x, k, i, kind == R_STD ? R_SUM : kind);
	}
	if (kind != R_STD)
		return acc_result(&a, kind);
	/* A second pass about the mean: the one-pass formula loses digits. */
	double m = a.n ? a.sum / a.n : 0, ss = 0;
	for (int64_t i = 0; i < len; i += LT_BLOCK) {
		int64_t k = len - i < LT_BLOCK ? len - i : LT_BLOCK;
		lt_sv_move(v, start + i, k, x, 0);
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
	if (!lt_is_float(t->dtype) && kind != R_MEAN && kind != R_STD)
		return reduce_int(L, t, kind, what);
	struct lt_sv v;
	if (lua_isnoneornil(L, 2)) {
		lt_sv_of(&v, t, t->rank, t->shape);
		double r = reduce_run(&v, 0, n, kind);
		if (kind == R_ARGMAX || kind == R_ARGMIN)
			lua_pushinteger(L, (lua_Integer)r);
		else
			lua_pushnumber(L, r);
		return 1;
	}
	int d = lt_check_dim(L, 2, t, 0);
	lt_tensor perm;
	int64_t oshape[LT_MAX_DIMS];
	dim_last(t, d, &perm, oshape);
	if (t->shape[d] == 0 && kind >= R_MIN)
		return lt_error(L, "%s: dim %d is empty", what, d + 1);
	mt_dtype odt = kind == R_ARGMAX || kind == R_ARGMIN ? MT_INT64
		       : kind == R_MIN || kind == R_MAX ? t->dtype
		       : t->dtype == MT_FLOAT64 ? MT_FLOAT64 : MT_FLOAT32;
	lt_tensor *o = lt_new(L, what, odt, t->rank - 1, oshape);
	lt_sv_of(&v, &perm, perm.rank, perm.shape);
	int64_t len = t->shape[d], outer = lt_numel(o);
	char *op = lt_data(o);
	size_t es = mt_dtype_size(odt);
	for (int64_t r = 0; r < outer; r++)
		lt_set_double(op + r * (int64_t)es, odt, reduce_run(&v, r * len, len, kind));
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
		lt_check_value(L, 2, "normalize: mean");
	if (!lt_test(L, 3)) {
		double sd = lt_check_value(L, 3, "normalize: std");
		if (sd == 0)
			return lt_error(L, "normalize: std is 0");
	}
	if (!lt_is_float(t->dtype)) {
		lt_cast(L, t, MT_FLOAT32);
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

/* ---- masks ------------------------------------------------------------------ */

/* The bool mask of t's elements equal to one of nv values: ints for an
 * integer tensor (compared exactly), else dbls. */
static int isin_mask(lua_State *L, const lt_tensor *t, const int64_t *ints, const double *dbls,
		     int nv)
{
	lt_tensor *o = lt_new(L, "isin", MT_BOOL, t->rank, t->shape);
	struct lt_sv v;
	lt_sv_of(&v, t, t->rank, t->shape);
	uint8_t *op = lt_data(o);
	int64_t n = lt_numel(t), xi[LT_BLOCK];
	double xd[LT_BLOCK];
	for (int64_t i = 0; i < n; i += LT_BLOCK) {
		int64_t c = n - i < LT_BLOCK ? n - i : LT_BLOCK;
		if (ints)
			lt_sv_move_int(&v, i, c, xi, 0);
		else
			lt_sv_move(&v, i, c, xd, 0);
		for (int64_t j = 0; j < c; j++) {
			int hit = 0;
			for (int q = 0; q < nv && !hit; q++)
				hit = ints ? xi[j] == ints[q] : xd[j] == dbls[q];
			op[i + j] = (uint8_t)hit;
		}
	}
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
		double d = lt_check_value(L, -1, "isin: values");
		if (lt_scalar_int(L, -1, &vals[k]))
			k++;
		else if (t->dtype == MT_UINT64 && d == floor(d) && d >= 0x1p63 && d < 0x1p64)
			vals[k++] = (int64_t)(uint64_t)d; /* beyond int64, within uint64 */
		lua_pop(L, 1);
	}
	return isin_mask(L, t, vals, NULL, k);
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
	if (!lt_is_float(t->dtype))
		return isin_int(L, t, nv);
	for (int i = 0; i < nv; i++) {
		lua_geti(L, 2, i + 1);
		vals[i] = lt_check_value(L, -1, "isin: values");
		lua_pop(L, 1);
	}
	return isin_mask(L, t, NULL, vals, nv);
}

/* ---- registration ----------------------------------------------------------- */

void lt_tensor_ops_register(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"add", l_add}, {"sub", l_sub}, {"mul", l_mul}, {"div", l_div}, {"pow", l_pow},
		{"minimum", l_minimum}, {"maximum", l_maximum}, {"eq", l_eq}, {"ne", l_ne},
		{"lt", l_lt}, {"le", l_le}, {"gt", l_gt}, {"ge", l_ge}, {"logical_and", l_and},
		{"logical_or", l_or}, {"logical_not", l_not}, {"neg", l_neg}, {"abs", l_abs},
		{"sqrt", l_sqrt}, {"exp", l_exp}, {"log", l_log}, {"floor", l_floor_},
		{"ceil", l_ceil}, {"round", l_round}, {"clamp", l_clamp},
		{"sum", l_sum}, {"mean", l_mean}, {"std", l_std}, {"min", l_min}, {"max", l_max},
		{"argmax", l_argmax}, {"argmin", l_argmin}, {"normalize", l_normalize},
		{"isin", l_isin}, {"add_", l_add_}, {"sub_", l_sub_}, {"mul_", l_mul_},
		{"div_", l_div_}, {NULL, NULL},
	};
	static const luaL_Reg meta[] = {
		{"__add", l_add}, {"__sub", l_sub}, {"__mul", l_mul}, {"__div", l_div},
		{"__pow", l_pow}, {"__unm", l_neg}, {NULL, NULL},
	};
	luaL_setfuncs(L, methods, 0);
	lua_pushvalue(L, -2);
	luaL_setfuncs(L, meta, 0);
	lua_pop(L, 1);
}
