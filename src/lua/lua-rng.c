/* lua-rng.c — matorage.rng(seed [, row]): random numbers that depend only on (seed, row), so augmentation re-runs give identical bytes. */
#include <math.h>
#include <string.h>

#include "lua-int.h"

typedef struct lt_rng {
	uint64_t s[4]; /* xoshiro256** */
} lt_rng;

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t next64(lt_rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* [0, 1) with 53 random bits. */
static double next_double(lt_rng *r)
{
	return (double)(next64(r) >> 11) * 0x1.0p-53;
}

static double next_normal(lt_rng *r)
{
	/* Box-Muller; 1 - u keeps log away from 0. */
	double u = 1.0 - next_double(r), v = next_double(r);
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* [0, n) without modulo bias (Lemire's method). */
static uint64_t next_below(lt_rng *r, uint64_t n)
{
	__uint128_t m = (__uint128_t)next64(r) * n;
	uint64_t lo = (uint64_t)m;
	if (lo < n) {
		uint64_t t = -n % n;
		while (lo < t) {
			m = (__uint128_t)next64(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

static lt_rng *check_rng(lua_State *L)
{
	return luaL_checkudata(L, 1, LT_RNG);
}

/* matorage.rng(seed [, row]) — streams for different rows are unrelated. */
static int l_rng(lua_State *L)
{
	uint64_t seed = (uint64_t)luaL_checkinteger(L, 1);
	uint64_t row = (uint64_t)luaL_optinteger(L, 2, 0);
	lt_rng *r = lua_newuserdatauv(L, sizeof *r, 0);
	luaL_setmetatable(L, LT_RNG);
	uint64_t x = seed;
	uint64_t h = splitmix(&x) ^ row * 0xd1342543de82ef95ull;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&h);
	return 1;
}

/* r:uniform([a, b]) — a number in [a, b), default [0, 1). */
static int l_uniform(lua_State *L)
{
	lt_rng *r = check_rng(L);
	double a = luaL_optnumber(L, 2, 0), b = luaL_optnumber(L, 3, 1);
	lua_pushnumber(L, a + (b - a) * next_double(r));
	return 1;
}

static int l_normal(lua_State *L)
{
	lt_rng *r = check_rng(L);
	double m = luaL_optnumber(L, 2, 0), sd = luaL_optnumber(L, 3, 1);
	lua_pushnumber(L, m + sd * next_normal(r));
	return 1;
}

/* r:int(a, b) — an integer in [a, b]. */
static int l_int(lua_State *L)
{
	lt_rng *r = check_rng(L);
	lua_Integer a = luaL_checkinteger(L, 2), b = luaL_checkinteger(L, 3);
	if (b < a)
		return lt_error(L, "int: empty range %lld..%lld", (long long)a, (long long)b);
	/* In unsigned arithmetic: b - a overflows an int64 for wide ranges. */
	uint64_t width = (uint64_t)b - (uint64_t)a;
	uint64_t k = width == UINT64_MAX ? next64(r) : next_below(r, width + 1);
	lua_pushinteger(L, (lua_Integer)((uint64_t)a + k));
	return 1;
}

/* A float32 tensor of `shape` (argument 2) filled by f. */
static int fill_tensor(lua_State *L, int normal)
{
	lt_rng *r = check_rng(L);
	int64_t shape[LT_MAX_DIMS];
	int rank = lt_check_shape(L, 2, normal ? "normal_tensor: shape" : "uniform_tensor: shape",
				  shape);
	double a = luaL_optnumber(L, 3, 0), b = luaL_optnumber(L, 4, 1);
	lt_tensor *t = lt_new(L, normal ? "normal_tensor" : "uniform_tensor", MT_FLOAT32, rank,
			      shape);
	float *p = lt_data(t);
	for (int64_t i = 0, n = lt_numel(t); i < n; i++)
		p[i] = (float)(normal ? a + b * next_normal(r) : a + (b - a) * next_double(r));
	return 1;
}

static int l_uniform_tensor(lua_State *L) { return fill_tensor(L, 0); }
static int l_normal_tensor(lua_State *L) { return fill_tensor(L, 1); }

/* r:permutation(n) — 1..n shuffled (int64 tensor; Fisher-Yates). */
static int l_permutation(lua_State *L)
{
	lt_rng *r = check_rng(L);
	int64_t n = luaL_checkinteger(L, 2);
	luaL_argcheck(L, n >= 0, 2, "n must be >= 0");
	lt_tensor *t = lt_new(L, "permutation", MT_INT64, 1, &n);
	int64_t *p = lt_data(t);
	for (int64_t i = 0; i < n; i++)
		p[i] = i + 1;
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)next_below(r, (uint64_t)i + 1), t2 = p[i];
		p[i] = p[j];
		p[j] = t2;
	}
	return 1;
}

static int l_tostring(lua_State *L)
{
	luaL_checkudata(L, 1, LT_RNG);
	lua_pushliteral(L, "rng");
	return 1;
}

void lt_rng_register(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"uniform", l_uniform}, {"normal", l_normal}, {"int", l_int},
		{"uniform_tensor", l_uniform_tensor}, {"normal_tensor", l_normal_tensor},
		{"permutation", l_permutation}, {NULL, NULL},
	};
	static const luaL_Reg meta[] = {{"__tostring", l_tostring}, {NULL, NULL}};
	static const luaL_Reg funcs[] = {{"rng", l_rng}, {NULL, NULL}};
	lt_new_class(L, LT_RNG, methods, meta);
	luaL_setfuncs(L, funcs, 0);
}
