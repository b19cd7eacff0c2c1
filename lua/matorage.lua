-- matorage.lua — the parts of the matorage Lua module written in Lua; loaded into every script's state.
local M, Reader, Writer = ...

-- for row, i in reader:each([batch]) do ... end — every row in order (row.attr is a
-- tensor view, or a number for a scalar attribute), read a batch at a time.
function Reader.each(r, size)
	size = size or 1024
	local n, i, first, count, batch = r:rows(), 0, 1, 0, nil
	return function()
		i = i + 1
		if i > n then
			return nil
		end
		if i >= first + count then
			first, count = i, math.min(size, n - i + 1)
			batch = r:batch(first, count)
		end
		local row = {}
		for k, t in pairs(batch) do
			row[k] = t[i - first + 1]
		end
		return row, i
	end
end

-- w:append_row{attr = tensor or number, ...} — one row; a number takes the
-- attribute's dtype.
function Writer.append_row(w, row)
	local batch = {}
	for _, a in ipairs(w:attributes()) do
		local v = row[a.name]
		if type(v) == "number" or type(v) == "boolean" then
			if #a.shape > 0 then
				error("append_row: row." .. a.name .. ": a number for an attribute of shape {"
					.. table.concat(a.shape, ", ") .. "}", 2)
			end
			batch[a.name] = M.full({ 1 }, v == true and 1 or v == false and 0 or v, a.dtype)
		elseif v == nil then
			error("append_row: row." .. a.name .. " is missing", 2)
		else
			batch[a.name] = v:reshape({ 1, table.unpack(v:shape()) })
		end
	end
	w:append(batch)
end

-- Options of derive that are not options of create.
local derive_only = { from = true, to = true, filter = true, map = true, batch = true, store = true }

-- matorage.derive{from = "DATASET[@VERSION]", to = NAME, filter = f, map = g, batch = N,
--                 store = S, ...create options}
-- Streams the source version batch by batch (memory stays at one batch):
-- filter(batch, rows) returns a mask with one value per row (rows kept where
-- nonzero); map(batch, rows) returns the batch to write.  `rows` holds the
-- source row numbers (int64, 1-based) of the batch's rows, for per-row seeds.
-- Attributes default to the source's; give `attributes` when map changes them.
-- Into the same dataset, the source version becomes the new version's parent; with
-- append = true the new version also keeps the parent's rows (their shards are reused)
-- and the derived rows follow them.
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
