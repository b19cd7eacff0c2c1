-- rows.lua — a recipe that runs in parts: part K of N writes its share of the rows 0..rows-1.
-- matorage run rows.lua name=DATASET rows=N [--part K/N]: y = the row number, x = (y/2, y).
local m = require("matorage")
local rows = tonumber(arg.rows or "100000")
local k, n = m.part() -- 1, 1 when run whole
local first, last = (k - 1) * rows // n, k * rows // n - 1
local w = m.create(arg.name, {
	attributes = { { name = "x", dtype = "float32", shape = { 2 } }, { name = "y", dtype = "int64" } },
	description = "rows 0.." .. (rows - 1),
})
if last >= first then
	local y = m.arange(first, last)
	w:append({ x = m.stack({ y:cast("float32"):div_(2), y:cast("float32") }, 2), y = y })
end
-- With --part this stages the part; `matorage commit NAME --staged` makes the version.
w:commit()
