-- io.lua — the file readers and the .npy writer against files the test made with numpy (dir= names their directory).
local m = require("matorage")
local dir = assert(arg.dir, "dir= is required")

local function eq(a, b, what)
	if a ~= b then
		error(string.format("%s: got %s, want %s", what, tostring(a), tostring(b)), 2)
	end
end

-- IDX, gzip-compressed and plain, multi-byte values big-endian in the file
local g = m.read_idx(dir .. "/small.idx.gz")
local p = m.read_idx(dir .. "/small.idx")
eq(g:dtype(), "int16", "IDX dtype")
eq(table.concat(g:shape(), "x"), "2x3", "IDX shape")
eq(g:get(2, 3), -6, "IDX big-endian values")
eq(g:bytes(), p:bytes(), "gzip and plain IDX read the same")

-- a header whose dims multiply past what any tensor may span is refused, naming the
-- file: with an empty dim among them it once overflowed the strides instead
local crafted = dir .. "/overflow.idx"
local f = assert(io.open(crafted, "wb"))
f:write("\0\0\8\5\1\3\0\0\0\0\0\0\0\8\5\1\3\0\0\0\0\8\0\0\0\0\0")
f:close()
local ok, msg = pcall(m.read_idx, crafted)
assert(not ok and msg:find("read_idx: " .. crafted .. ": shape 16973824x0x525569x50331648x524288",
	1, true) and msg:find("too large", 1, true), msg)

-- .npy in, .npy out
local n = m.read_npy(dir .. "/in.npy")
eq(n:dtype(), "float64", "npy dtype")
eq(n:get(3, 2), 3.5, "npy value")
m.write_npy(dir .. "/out.npy", n:transpose():cast("float32"))
local exact = m.tensor({ (1 << 53) + 1, math.maxinteger, -1 }, "uint64")
m.write_npy(dir .. "/u64.npy", exact)
eq(m.read_npy(dir .. "/u64.npy"):bytes(), exact:bytes(), "uint64 beyond 2^53 through .npy")

-- raw binary, with an inferred dimension and big-endian values
local r = m.read_raw(dir .. "/raw.bin", "uint16", { -1, 2 }, { big_endian = true })
eq(table.concat(r:shape(), "x"), "3x2", "raw shape inferred")
eq(r:get(3, 2), 6, "raw big-endian")
ok, msg = pcall(m.read_raw, dir .. "/raw.bin", "uint16", { -1, -1 })
assert(not ok and msg:find("only one dimension may be -1", 1, true), msg)

-- CSV: header, missing values filled
local t, cols = m.read_csv(dir .. "/table.csv", { fill = -1 })
eq(table.concat(cols, ","), "a,b,label", "CSV header")
eq(t:get(2, 2), -1.0, "CSV missing value filled")
eq(t:get(3, 1), 2.5, "CSV value")

-- CSV integer columns are read as integers: exact beyond 2^53, saturating at the range
local big = dir .. "/big.csv"
f = assert(io.open(big, "w"))
f:write("id,n\n9007199254740993,18446744073709551615\n-9223372036854775808,NA\n")
f:close()
local ti = m.read_csv(big, { dtype = "int64", fill = 7 })
eq(ti:get(1, 1), (1 << 53) + 1, "CSV int64 beyond 2^53")
eq(ti:get(2, 1), math.mininteger, "CSV int64 min")
eq(ti:get(1, 2), math.maxinteger, "CSV int64 saturates")
eq(ti:get(2, 2), 7, "CSV fill into int64")
local tu = m.read_csv(big, { dtype = "uint64", fill = 0 })
eq(tu:get(1, 2), -1, "CSV uint64 max (read as the integer with its bits)")
eq(tu:get(2, 1), 0, "CSV uint64 of a negative saturates")
eq(m.read_csv(big, { dtype = "int32", fill = 0 }):get(1, 1), 2147483647, "CSV int32 saturates")
-- a field too long for a number is an error, not cut short
f = assert(io.open(dir .. "/long.csv", "w"))
f:write("a\n" .. string.rep("1", 200) .. "\n")
f:close()
ok, msg = pcall(m.read_csv, dir .. "/long.csv")
assert(not ok and msg:find("long.csv:2: column 1: a value of 200 characters is not a number", 1,
	true), msg)

-- directory walk, sorted, with a pattern
local files = m.walk(dir .. "/tree", "%.txt$")
eq(#files, 2, "walk finds the .txt files in subdirectories")
eq(files[1], dir .. "/tree/a.txt", "walk is sorted")
eq(files[2], dir .. "/tree/sub/c.txt", "walk descends")

-- datasets: write rows one at a time, read them back row by row and in batches,
-- then derive an appended version
local w = m.create("rows", {
	attributes = { { name = "v", dtype = "float32", shape = { 2 } }, { name = "k", dtype = "int64" } },
	shard_rows = 3,
})
for i = 1, 7 do
	w:append_row({ v = m.tensor({ i, -i }), k = i * 10 })
end
ok, msg = pcall(w.append_row, w, { v = m.tensor({ 1, 2 }) })
assert(not ok and msg:find("row.k is missing", 1, true), msg)
w:commit()
