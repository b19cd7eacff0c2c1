-- derive_augment.lua — a new version keeping some classes of an existing one, each image randomly flipped and noised with a per-row seed.
--
--   matorage run lua/examples/derive_augment.lua [from=fashion-mnist-train[@VERSION]]
--                [to=fashion-mnist-tops] [classes=0,2,4,6] [seed=1] [noise=0.02]
--
-- The source is streamed batch by batch, so memory stays at one batch.  The
-- random numbers of a row depend only on (seed, source row), so running it
-- again (matorage rerun) writes identical bytes.
local m = require("matorage")

local seed = math.tointeger(tonumber(arg.seed or "1")) or error("seed= must be an integer")
local noise = tonumber(arg.noise or "0.02") or error("noise= must be a number")
local classes = {}
for c in (arg.classes or "0,2,4,6"):gmatch("[^,]+") do
	classes[#classes + 1] = math.tointeger(tonumber(c)) or error("classes: '" .. c .. "' is not an integer")
end

m.derive({
	from = arg.from or "fashion-mnist-train",
	to = arg.to or "fashion-mnist-tops",
	tags = { "augmented" },
	filter = function(batch)
		return batch.label:isin(classes)
	end,
	map = function(batch, rows)
		local images = batch.image
		for i = 1, #rows do
			local r = m.rng(seed, rows[i])
			local img = images[i]
			if r:uniform() < 0.5 then
				img = img:flip(-1)
			end
			images[i] = (img + r:normal_tensor(img:shape(), 0, noise)):clamp(0, 1)
		end
		return batch
	end,
})
