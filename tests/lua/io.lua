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

-- .npy in, .npy out
local n = m.read_npy(dir .. "/in.npy")
eq(n:dtype(), "float64", "npy dtype")
eq(n:get(3, 2), 3.5, "npy value")
m.write_npy(dir .. "/out.npy", n:transpose():cast("float32"))

-- raw binary, with an inferred dimension and big-endian values
local r = m.read_raw(dir .. "/raw.bin", "uint16", { -1, 2 }, { big_endian = true })
eq(table.concat(r:shape(), "x"), "3x2", "raw shape inferred")
eq(r:get(3, 2), 6, "raw big-endian")

-- CSV: header, missing values filled
local t, cols = m.read_csv(dir .. "/table.csv", { fill = -1 })
eq(table.concat(cols, ","), "a,b,label", "CSV header")
eq(t:get(2, 2), -1.0, "CSV missing value filled")
eq(t:get(3, 1), 2.5, "CSV value")

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
local ok, msg = pcall(w.append_row, w, { v = m.tensor({ 1, 2 }) })
assert(not ok and msg:find("row.k is missing", 1, true), msg)
w:commit()
