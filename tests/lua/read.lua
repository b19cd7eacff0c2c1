-- read.lua — reading what io.lua committed: rows one by one, batches, ranges, derive with append.
local m = require("matorage")

local r = m.open("rows@v1")
assert(tostring(r) == "reader(rows@v1)", tostring(r))
assert(r:rows() == 7, "rows")
assert(r:info().attributes[1].name == "v" and r:info().attributes[2].dtype == "int64", "info")
local n = 0
for row, i in r:each(3) do
	assert(row.k == i * 10, "each: k of row " .. i)
	assert(row.v:get(2) == -i, "each: v of row " .. i)
	n = n + 1
end
assert(n == 7, "each visits every row")
local seen = {}
for b, first, count in r:batches(4) do
	seen[#seen + 1] = first .. "+" .. count
	assert(b.k:get(1) == first * 10, "batch starts at its first row")
end
assert(table.concat(seen, " ") == "1+4 5+3", table.concat(seen, " "))
assert(r:read("k", 6, 2):sum() == 130, "read a range")
local ok, msg = pcall(r.read, r, "k", 7, 2)
assert(not ok and msg:find("rows 7..8 are out of range 1..7", 1, true), msg)
ok, msg = pcall(r.read, r, "nope")
assert(not ok and msg:find("has no attribute 'nope'", 1, true), msg)

m.derive({
	from = "rows@v1",
	append = true,
	filter = function(b) return b.k:gt(40) end,
	map = function(b) return { v = b.v * 2, k = b.k + 1 } end,
})
