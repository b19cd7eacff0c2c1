-- tensor.lua — the tensor bindings: construction, views, broadcasting, reductions, rows, errors that name the argument.
local m = require("matorage")

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: got %s, want %s", what, tostring(a), tostring(b)), 2)
	end
end

local function near(a, b, what)
	if math.abs(a - b) > 1e-5 * math.max(1, math.abs(b)) then
		error(string.format("%s: got %.9g, want %.9g", what, a, b), 2)
	end
end

local function same(t, want, what)
	local got = t:totable()
	local function walk(g, w, path)
		if type(w) == "table" then
			eq(type(g), "table", path)
			eq(#g, #w, path .. " length")
			for i = 1, #w do
				walk(g[i], w[i], path .. "[" .. i .. "]")
			end
		else
			if type(g) == "boolean" then
				g = g and 1 or 0
			end
			near(g, w, path)
		end
	end
	walk(got, want, what)
end

-- An error whose message contains `want`.
local function fails(want, f, ...)
	local ok, msg = pcall(f, ...)
	if ok then
		error("expected an error mentioning '" .. want .. "'", 2)
	end
	if not tostring(msg):find(want, 1, true) then
		error("error '" .. tostring(msg) .. "' does not mention '" .. want .. "'", 2)
	end
end

-- construction
local t = m.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
eq(t:dtype(), "float32", "default dtype")
same(m.tensor(t:shape(), "int64"), { 2, 3 }, "shape")
eq(#t, 2, "#t is the first dimension")
eq(t:get(2, 3), 6.0, "get")
eq(t[2][1], 4.0, "t[i][j]")
t:set(1, 1, 10)
eq(t:get(1, 1), 10.0, "set")
t[1] = 0
same(t, { { 0, 0, 0 }, { 4, 5, 6 } }, "row assignment broadcasts a number")
t[1] = m.tensor({ 7, 8, 9 })
same(t, { { 7, 8, 9 }, { 4, 5, 6 } }, "row assignment of a tensor")
same(m.arange(4), { 1, 2, 3, 4 }, "arange(n)")
same(m.arange(0, 1, 0.25, "float64"), { 0, 0.25, 0.5, 0.75, 1 }, "arange with step")
same(m.zeros({ 2 }, "uint8"), { 0, 0 }, "zeros")
same(m.full({ 2 }, 3.5), { 3.5, 3.5 }, "full")
same(m.from_bytes(string.pack("<i4<i4", 7, -1), "int32"), { 7, -1 }, "from_bytes")
eq(m.tensor({ 1, 2 }, "int16"):bytes(), string.pack("<i2<i2", 1, 2), "bytes")
local big = m.tensor({ 9007199254740993 }, "int64")
big:set(1, 9007199254740993)
eq(big:get(1), 9007199254740993, "int64 set/get is exact beyond 2^53")

-- views share memory
local base = m.arange(0, 11, 1, "float32"):reshape({ 3, 4 })
local col = base:slice(2, 2, 3)
same(col, { { 1, 2 }, { 5, 6 }, { 9, 10 } }, "slice of dim 2")
col:set(1, 1, 100)
eq(base:get(1, 2), 100.0, "a slice is a view")
same(base:slice(1, 1, -1, 2):select(2, 1), { 0, 8 }, "slice with step and select")
same(base:transpose():slice(1, 1, 1), { { 0, 4, 8 } }, "transpose")
same(m.tensor({ { 1, 2, 3 } }):flip(2), { { 3, 2, 1 } }, "flip")
same(base:transpose():reshape({ 12 }):slice(1, 1, 3), { 0, 4, 8 }, "reshape of a non-contiguous view copies")
same(m.arange(6):reshape({ -1, 2 }):select(1, 3), { 5, 6 }, "reshape infers -1")

-- casts saturate and round toward zero
same(m.tensor({ -5, 3.7, 300 }):cast("uint8"), { 0, 3, 255 }, "cast to uint8 saturates")
same(m.tensor({ 0.5, 65504 }):cast("float16"):cast("float32"), { 0.5, 65504 }, "float16 round trip")
eq(m.tensor({ 0, 2 }):cast("bool"):get(2), true, "bool elements are booleans")

-- arithmetic with broadcasting
local a = m.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
same(a + m.tensor({ 10, 20, 30 }), { { 11, 22, 33 }, { 14, 25, 36 } }, "row broadcast")
same(a * m.tensor({ { 2 }, { 3 } }), { { 2, 4, 6 }, { 12, 15, 18 } }, "column broadcast")
same(1 - a:slice(1, 1, 1), { { 0, -1, -2 } }, "number on the left")
same(a / 2, { { 0.5, 1, 1.5 }, { 2, 2.5, 3 } }, "divide by a number")
same(-a:select(1, 1), { -1, -2, -3 }, "negate")
same(a:pow(2):select(1, 2), { 16, 25, 36 }, "pow")
same(m.tensor({ 1, 2 }, "uint8") + 1, { 2, 3 }, "integer tensor plus an integer keeps its dtype")
eq((m.tensor({ 1, 2 }, "uint8") + 1):dtype(), "uint8", "uint8 + 1 is uint8")
eq((m.tensor({ 1, 2 }, "uint8") / 2):dtype(), "float32", "division gives float")
eq((m.tensor({ 1 }, "int32") + m.tensor({ 1 }, "int8")):dtype(), "int64", "mixed integers give int64")
same(a:gt(3):select(1, 2), { 1, 1, 1 }, "comparison")
eq(a:gt(3):dtype(), "bool", "comparisons are bool")
same(a:clamp(2, 5), { { 2, 2, 3 }, { 4, 5, 5 } }, "clamp")
same(m.tensor({ 4, 9 }):sqrt(), { 2, 3 }, "sqrt")
fails("shapes do not broadcast", function() return a + m.tensor({ 1, 2 }) end)
local ip = m.tensor({ { 1, 2 }, { 3, 4 } })
assert(ip:mul_(2) == ip, "in-place ops return the tensor itself")
same(ip, { { 2, 4 }, { 6, 8 } }, "mul_")
same(ip:sub_(m.tensor({ 1, 2 })), { { 1, 2 }, { 5, 6 } }, "sub_ broadcasts")
same(ip:div_(ip:flip(1)), { { 0.2, 1 / 3 }, { 5, 3 } }, "div_ by an overlapping view reads the old values")
local u = m.tensor({ 250, 3 }, "uint8")
same(u:add_(10), { 4, 13 }, "add_ keeps the dtype; integer arithmetic wraps around")
same(m.tensor({ 250, 3 }, "uint8"):add_(10.5), { 255, 13 }, "a float result stored into integers saturates")
fails("does not broadcast to the tensor's", function() return m.zeros({ 2 }):add_(m.zeros({ 2, 2 })) end)

-- reductions
eq(a:sum(), 21.0, "sum")
near(a:mean(), 3.5, "mean")
near(a:std(), math.sqrt(35 / 12), "std is the population deviation")
eq(a:min(), 1.0, "min")
eq(a:max(), 6.0, "max")
eq(a:argmax(), 6, "argmax over everything is 1-based")
same(a:sum(1), { 5, 7, 9 }, "sum over dim 1")
same(a:mean(2), { 2, 5 }, "mean over dim 2")
same(a:argmax(2), { 3, 3 }, "argmax over dim 2")
same(m.tensor({ { 1, 5 }, { 7, 2 } }):max(1), { 7, 5 }, "max over dim 1")
eq(m.tensor({ 1, 2, 3 }, "int32"):sum(), 6, "integer sum is an integer")
same(a:normalize(a:mean(1), 2):select(1, 1), { -0.75, -0.75, -0.75 }, "normalize per column")
fails("std is 0", function() return a:normalize(0, 0) end)

-- rows
same(m.tensor({ 0, 2, 1 }, "int64"):one_hot(3), { { 1, 0, 0 }, { 0, 0, 1 }, { 0, 1, 0 } }, "one_hot")
fails("outside classes 0..2", function() return m.tensor({ 3 }, "int64"):one_hot(3) end)
same(m.concat({ m.tensor({ { 1 } }), m.tensor({ { 2 }, { 3 } }) }), { { 1 }, { 2 }, { 3 } }, "concat")
same(m.concat({ m.tensor({ { 1 } }), m.tensor({ { 2 } }) }, 2), { { 1, 2 } }, "concat along dim 2")
same(m.stack({ m.tensor({ 1, 2 }), m.tensor({ 3, 4 }) }), { { 1, 2 }, { 3, 4 } }, "stack")
same(m.stack({ m.tensor({ 1, 2 }), m.tensor({ 3, 4 }) }, 2), { { 1, 3 }, { 2, 4 } }, "stack along dim 2")
same(a:take({ 2, 1, 2 }):select(2, 1), { 4, 1, 4 }, "take")
same(a:filter(m.tensor({ 0, 1 }, "bool")), { { 4, 5, 6 } }, "filter")
same(m.tensor({ 1, 5, 3 }, "int64"):isin({ 3, 5 }), { 0, 1, 1 }, "isin")
fails("stack: element 2 has size 3 in dim 1", function()
	return m.stack({ m.tensor({ 1, 2 }), m.tensor({ 1, 2, 3 }) })
end)

-- seeded random numbers depend on (seed, row) only
local r1, r2, r3 = m.rng(7, 100), m.rng(7, 100), m.rng(7, 101)
local x1, x2, x3 = r1:uniform(), r2:uniform(), r3:uniform()
eq(x1, x2, "same (seed, row), same numbers")
assert(x1 ~= x3, "another row, other numbers")
assert(x1 >= 0 and x1 < 1, "uniform is in [0, 1)")
local n = m.rng(1):normal_tensor({ 20000 })
assert(math.abs(n:mean()) < 0.03, "normal mean")
assert(math.abs(n:std() - 1) < 0.03, "normal std")
local p = m.rng(3):permutation(10)
eq(p:sum(), 55, "a permutation holds each index once")
eq(m.rng(3):permutation(10):bytes(), p:bytes(), "permutations repeat with the seed")
local k = m.rng(5):int(1, 6)
assert(k >= 1 and k <= 6, "int is within its bounds")

-- bad arguments name what is wrong
fails("unknown dtype 'float8'", m.zeros, { 2 }, "float8")
fails("index 3 is out of range 1..2", function() return a:get(3, 1) end)
fails("index 0 is out of range", function() return a[0] end)
fails("2 indices for a tensor of 1 dimensions", function() return m.tensor({ 1 }):get(1, 1) end)
fails("reshape: shape: 6 elements cannot take this shape", a.reshape, a, { 4 })
fails("dim", a.sum, a, 3)
fails("expected a number", m.tensor, { "x" })
fails("ragged nested tables", m.tensor, { { 1, 2 }, { 3 } })
fails("filter: mask has 1 values for 2 rows", a.filter, a, m.tensor({ 1 }))
fails("take: indices[1] = 5 is out of range 1..2", a.take, a, { 5 })
fails("from_bytes: 3 bytes do not hold", m.from_bytes, "abc", "int32")

-- shapes whose dims multiply past what a tensor may span are refused, naming the call,
-- even when an empty dim leaves nothing to allocate (their strides would overflow)
local huge = 1 << 40
fails("zeros: shape 0x1099511627776x1099511627776 of dtype float32 is too large", m.zeros,
	{ 0, huge, huge })
fails("reshape: shape: shape 0x1099511627776x1099511627776", function()
	return m.zeros({ 0 }):reshape({ 0, huge, huge })
end)
fails("from_bytes: shape: shape 1099511627776x1099511627776", m.from_bytes, "", "int8", { huge, huge })
fails("add: shape 1099511627776x1099511627776x0", function()
	return m.zeros({ huge, 1, 0 }) + m.zeros({ 1, huge, 0 })
end)
fails("concat: dim 2 of the result is too large", function()
	local e = m.zeros({ 0, 1 << 61 }, "int8")
	return m.concat({ e, e, e, e, e }, 2)
end)
fails("arange: ", m.arange, 1, 1e300)
eq(m.zeros({ 0, huge }):slice(2, 1, 1, math.maxinteger):shape()[2], 1, "a step past the end takes one row")
fails("take: indices[1] = 18446744073709551615 is out of range 1..2", function()
	return m.tensor({ 5, 6 }):take(m.tensor({ -1 }, "uint64"))
end)

-- integer tensors hold 64-bit integers exactly, beyond 2^53 where doubles round;
-- uint64 values above 2^63 - 1 read as the negative Lua integer with the same bits
local p53, imax, imin = (1 << 53) + 1, math.maxinteger, math.mininteger
local umax = -1 -- uint64 max, as Lua writes 0xffffffffffffffff
local big64 = m.tensor({ p53, imax, imin }, "int64")
eq(big64[1], p53, "tensor{} of int64 keeps 2^53+1")
eq(big64[2], imax, "tensor{} of int64 keeps 2^63-1")
eq(big64[3], imin, "tensor{} of int64 keeps -2^63")
local bigu = m.tensor({ umax, p53, 0xfffffffffffffffe }, "uint64")
eq(bigu[1], umax, "uint64 max")
eq(bigu[3], -2, "uint64 max - 1")
eq(string.format("%x", bigu[2]), "20000000000001", "uint64 2^53+1")
eq(m.full({ 2 }, p53, "int64")[2], p53, "full")
eq(m.full({ 1 }, umax, "uint64")[1], umax, "full of uint64 max")
eq(m.arange(p53 - 1, p53 + 1)[2], p53, "arange beyond 2^53")
local grid = m.tensor({ { p53, 1 }, { 2, imax } }, "int64"):transpose()
eq(grid:contiguous():get(1, 1), p53, "contiguous() of a view")
eq(grid:copy():get(2, 2), imax, "copy() of a view")
eq(grid:reshape({ 4 })[4], imax, "reshape of a view")
eq(m.tensor({ p53 }, "int64"):cast("uint64")[1], p53, "cast int64 to uint64")
eq(bigu:cast("int64")[1], imax, "cast of uint64 max to int64 saturates")
eq(big64:cast("uint64")[3], 0, "cast of a negative to uint64 saturates")
eq(m.stack({ big64, big64 }):get(2, 1), p53, "stack")
local row = m.zeros({ 2, 3 }, "int64")
row[2] = big64
eq(row:get(2, 2), imax, "row assignment of a tensor")
row[1] = p53
eq(row:get(1, 3), p53, "row assignment of a number")
bigu:set(2, umax)
eq(bigu[2], umax, "set of uint64 max")
bigu:set(2, p53)

-- arithmetic between integers stays in integers; + - * wrap around like numpy and Lua
eq((big64 + 0)[1], p53, "adding 0 keeps 2^53+1")
eq((big64 + 0):dtype(), "int64", "int64 + 0 is int64")
eq((0 + big64)[2], imax, "0 + t")
eq((big64 - 1)[1], p53 - 1, "subtract 1")
eq((big64 * 1)[2], imax, "multiply by 1")
eq((big64 + 1)[2], imin, "2^63-1 + 1 wraps to -2^63")
eq((big64 * 2)[2], -2, "(2^63-1) * 2 wraps")
eq((-big64)[3], imin, "-(-2^63) wraps to itself")
eq(big64:abs()[3], imin, "abs(-2^63) wraps to itself")
eq((bigu + 1)[1], 0, "uint64 max + 1 wraps to 0")
eq((bigu - 1)[1], -2, "uint64: a negative Lua integer stands for its bits")
eq((big64 + big64)[1], 2 * p53, "tensor + tensor")
eq((big64 + m.tensor({ 1, 1, 1 }, "int8"))[1], p53 + 1, "int64 + int8 is exact")
eq((bigu + m.tensor({ 0, 0, 0 }, "uint64"))[2], p53, "uint64 + uint64")
eq((m.tensor({ 200 }, "uint8") * 2)[1], 144, "uint8 * 2 wraps at 256")
eq((m.tensor({ 127 }, "int8") + m.tensor({ 1 }, "int8"))[1], -128, "int8 wraps")
eq((big64 + 0.5):dtype(), "float32", "with a fractional number, float as before")
eq((big64 + m.tensor({ 0, 0, 0 }, "float64")):dtype(), "float64", "with a float tensor, float as before")
eq(big64:minimum(p53 - 1)[1], p53 - 1, "minimum")
eq(big64:maximum(m.tensor({ p53 - 1 }, "int64"))[1], p53, "maximum")
same(big64:eq(p53), { 1, 0, 0 }, "eq tells 2^53+1 from 2^53")
same(big64:ne(p53 - 1), { 1, 1, 1 }, "ne")
same(big64:gt(p53 - 1), { 1, 1, 0 }, "gt")
same(bigu:gt(imax), { 1, 0, 1 }, "uint64 values above 2^63-1 compare greater")
same(bigu:eq(bigu[1]), { 1, 0, 0 }, "t:eq(t[i]) holds for uint64 max")
same(bigu:gt(m.tensor({ -1, -1, -1 }, "int64")), { 1, 1, 1 }, "uint64 vs int64 compares values")
same(big64:isin({ p53 - 1, imax }), { 0, 1, 0 }, "isin is exact")
same(bigu:isin({ umax }), { 1, 0, 0 }, "isin of uint64 max")
eq(big64:clamp(0, p53)[1], p53, "clamp keeps an in-range 2^53+1")
eq(big64:clamp(0, p53 - 1)[2], p53 - 1, "clamp to 2^53")
eq(big64:clamp(-0.5)[3], 0, "clamp with a float bound")
eq(big64:round()[1], p53, "round of an integer is itself")
local add_ip = m.tensor({ p53 }, "int64")
add_ip:add_(0)
eq(add_ip[1], p53, "add_(0)")
add_ip:add_(m.tensor({ 1 }, "uint8"))
eq(add_ip[1], p53 + 1, "add_ of an integer tensor")

-- int64 arithmetic agrees with Lua's own integers, which wrap around too (seeded values)
local rng = m.rng(20240610)
local xs, ys, total = {}, {}, 0
for i = 1, 300 do
	xs[i] = rng:int(imin, imax)
	ys[i] = i % 3 == 0 and rng:int(-1000, 1000) or rng:int(imin, imax)
	total = total + xs[i]
end
local tx, ty = m.tensor(xs, "int64"), m.tensor(ys, "int64")
local sum, dif, prod = tx + ty, tx - ty, tx * ty
local lt, mn, mx = tx:lt(ty), tx:minimum(ty), tx:maximum(ty)
for i = 1, #xs do
	eq(sum[i], xs[i] + ys[i], "int64 + at " .. i)
	eq(dif[i], xs[i] - ys[i], "int64 - at " .. i)
	eq(prod[i], xs[i] * ys[i], "int64 * at " .. i)
	eq(lt[i], xs[i] < ys[i], "int64 < at " .. i)
	eq(mn[i], math.min(xs[i], ys[i]), "int64 minimum at " .. i)
	eq(mx[i], math.max(xs[i], ys[i]), "int64 maximum at " .. i)
end
eq(tx:sum(), total, "int64 sum wraps as Lua's does")

-- integer reductions are exact
eq(m.tensor({ p53, 1 }, "int64"):sum(), p53 + 1, "sum")
eq(big64:max(), imax, "max")
eq(big64:min(), imin, "min")
eq(m.tensor({ p53 - 1, p53 }, "int64"):argmax(), 2, "argmax tells 2^53 from 2^53+1")
eq(bigu:argmax(), 1, "argmax over uint64 compares unsigned")
eq(bigu:min(), p53, "min over uint64")
eq(m.tensor({ { p53, 1 } }, "int64"):max(2)[1], p53, "max over a dim")
eq(m.tensor({ { p53 }, { 1 } }, "int64"):sum(1)[1], p53 + 1, "sum over a dim")
eq(m.tensor({ imax, 1 }, "int64"):sum(), imin, "an integer sum wraps around")
