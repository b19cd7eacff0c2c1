-- csv_table.lua — a numeric CSV table (header row) into a dataset: the feature columns as one float32 vector per row, one column as an int64 label.
--
--   matorage run lua/examples/csv_table.lua csv=FILE.csv dataset=NAME [label=COLUMN]
--                [fill=VALUE] [standardize=0|1]
--
-- A missing value (empty or NA) stops the run naming its line and column,
-- unless fill= gives a value for it.  With standardize=1 (the default) each
-- feature column is scaled to mean 0 and standard deviation 1.
local m = require("matorage")

local csv = assert(arg.csv, "csv=FILE.csv is required")
local name = assert(arg.dataset, "dataset=NAME is required")
local label_name = arg.label or "label"
local fill = arg.fill and assert(tonumber(arg.fill), "fill= must be a number")

local data, columns = m.read_csv(csv, { fill = fill, dtype = "float64" })
local label_col
local features = {}
for i, c in ipairs(columns) do
	if c == label_name then
		label_col = i
	else
		features[#features + 1] = data:select(2, i)
	end
end
assert(label_col, csv .. ": no column named '" .. label_name .. "'")
assert(#features > 0, csv .. ": no feature columns besides the label")

local x = m.stack(features, 2)
if arg.standardize ~= "0" then
	-- A constant column has deviation 0: leave it centred instead of dividing by 0.
	x = x:normalize(x:mean(1), x:std(1):maximum(1e-12))
end
local labels = data:select(2, label_col)
assert(labels:eq(labels:round()):min() == 1, csv .. ": the label column holds non-integers")

local w = m.create(name, {
	attributes = {
		{ name = "features", dtype = "float32", shape = { #features } },
		{ name = "label", dtype = "int64" },
	},
	description = "from " .. csv:match("[^/]*$"),
	rows = #data,
})
w:append({ features = x:cast("float32"), label = labels:cast("int64") })
w:commit()
