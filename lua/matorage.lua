-- matorage.lua — the parts of the matorage Lua module written in Lua; loaded into every script's state.
local M = ...

-- Options of derive that are not options of create.
local derive_only = { from = true, to = true, filter = true, map = true, batch = true, store = true }

-- matorage.derive{from = "DATASET[@VERSION]", to = NAME, filter = f, map = g, batch = N,
--                 store = S, ...create options}
-- Streams the source version batch by batch (memory stays at one batch):
-- filter(batch, rows) returns a mask with one value per row (rows kept where
-- nonzero); map(batch, rows) returns the batch to write.  `rows` holds the
-- source row numbers (int64, 1-based) of the batch's rows, for per-row seeds.
-- Attributes default to the source's; give `attributes` when map changes them.
-- Into the same dataset, the source version becomes the new version's parent.
function M.derive(opts)
	assert(type(opts) == "table", "derive: expected a table of options")
	assert(type(opts.from) == "string", "derive: from: expected \"DATASET[@VERSION]\"")
	local st = opts.store or M.store()
	local src = st:open(opts.from)
	local info = src:info()
	local to = opts.to or info.dataset
	local create = {}
	for k, v in pairs(opts) do
		if not derive_only[k] then
			create[k] = v
		end
	end
	create.attributes = create.attributes or info.attributes
	if to == info.dataset and create.parent == nil then
		create.parent = info.version
	end
	if create.description == nil then
		create.description = "derived from " .. info.dataset .. "@" .. info.version
	end
	local w = st:create(to, create)
	local done = 0
	for b, first, n in src:batches(opts.batch or 8192) do
		local rows = M.arange(first, first + n - 1)
		if opts.filter then
			local mask = opts.filter(b, rows)
			for k, t in pairs(b) do
				b[k] = t:filter(mask)
			end
			rows = rows:filter(mask)
		end
		if opts.map and #rows > 0 then
			b = opts.map(b, rows)
		end
		if #rows > 0 then
			w:append(b)
		end
		done = done + n
		M.progress(done, info.rows)
	end
	w:commit()
	return w
end
