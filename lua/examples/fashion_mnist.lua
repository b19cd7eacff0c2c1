-- fashion_mnist.lua — Fashion-MNIST from its IDX files into datasets fashion-mnist-train and fashion-mnist-test.
--
--   matorage run lua/examples/fashion_mnist.lua --allow /usr/share/datasets [dir=...] [level=3]
--
-- In parts (each run takes its share of the rows, in order; any number at once):
--
--   matorage run lua/examples/fashion_mnist.lua --allow /usr/share/datasets --part 1/2 &
--   matorage run lua/examples/fashion_mnist.lua --allow /usr/share/datasets --part 2/2
--   matorage commit fashion-mnist-train --staged && matorage commit fashion-mnist-test --staged
--
-- image: float32 in [0, 1], 28x28; label: int64 0..9, the attributes that
-- examples/train-softmax reads.
local m = require("matorage")

local dir = arg.dir or "/usr/share/datasets/fashion-mnist"
local level = tonumber(arg.level or "3")
local prefix = arg.prefix or "fashion-mnist"

local function build(split, files)
	local images = m.read_idx(dir .. "/" .. files .. "-images-idx3-ubyte.gz")
	local labels = m.read_idx(dir .. "/" .. files .. "-labels-idx1-ubyte.gz")
	assert(#images == #labels, split .. ": images and labels differ in count")
	-- Part k of n takes rows (k-1)*N/n+1 .. k*N/n: the parts together are every row,
	-- each once, in order.
	local k, n = m.part()
	local first, last = (k - 1) * #images // n + 1, k * #images // n
	images, labels = images:slice(1, first, last), labels:slice(1, first, last)
	local w = m.create(prefix .. "-" .. split, {
		attributes = {
			{ name = "image", dtype = "float32", shape = { 28, 28 } },
			{ name = "label", dtype = "int64" },
		},
		description = "Fashion-MNIST " .. split .. " split, pixels scaled to [0, 1]",
		tags = { "fashion-mnist", split },
		level = level,
		rows = #images,
	})
	-- In place: the 188 MB of float32 pixels are allocated once.
	w:append({ image = images:cast("float32"):div_(255), label = labels:cast("int64") })
	w:commit()
end

build("train", "train")
build("test", "t10k")
