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
same(u:add_(10), { 255, 13 }, "add_ keeps the dtype, saturating")
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
