#!/bin/bash
# tui-recipe.sh — recipes run from the browser (`:run`): a new version appears, a broken script shows its error line and commits nothing, a long one is canceled; a recipe that fails or is canceled after it wrote rows of a new dataset leaves no directory of it in the file store and no catalog row.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tui-lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
cd "$WORK" || exit 1
cat > good.lua << 'EOF'
local m = require("matorage")
local n = tonumber(arg.rows)
m.log("building " .. n .. " rows")
local w = m.create(arg.dataset, {
	attributes = { { name = "x", dtype = "int64" } },
	description = "built in the browser",
	rows = n,
})
w:append({ x = m.arange(0, n - 1) })
w:commit()
EOF
cat > broken.lua << 'EOF'
local m = require("matorage")
local t = m.zeros({ 2, 2 })
-- line 4 asks for a row that is not there
local v = t:get(5, 1)
EOF
cat > endless.lua << 'EOF'
local m = require("matorage")
local w = m.create("never", { attributes = { { name = "x", dtype = "int64" } } })
w:commit()
local i = 0
while true do i = i + 1 end
EOF
cat > halfway.lua << 'EOF'
local m = require("matorage")
local w = m.create("halfway", { attributes = { { name = "x", dtype = "int64" } } })
w:append({ x = m.arange(0, 99) })
m.log("appended, not committed")
local i = 0
while true do i = i + 1 end
EOF
cat > failmid.lua << 'EOF'
local m = require("matorage")
local w = m.create("failed", { attributes = { { name = "x", dtype = "int64" } } })
w:append({ x = m.arange(0, 99) })
error("boom midway")
EOF
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(4))"
check "a dataset to start from" $M put start x="$WORK/x.npy"


tui_start 100 30
expect "the browser opens" "sync local:"
keys Enter Enter
expect "the store's datasets" "start"

keys : 'run good.lua rows=5 dataset=fromlua' Enter
expect "the recipe job ends with the version it built" "run good.lua: built fromlua@v1"
expect "and the list shows the new dataset" "built in the browser"
keys J
expect "the jobs list has it" "run good.lua"
keys Enter
expect "its log holds the script's own lines" "building 5 rows"
keys Escape Escape / fromlua Enter Enter
expect "its versions" "VERSION  CREATED"
keys Enter
expect "the version's details show the recipe's arguments" "rows=5 dataset=fromlua"
keys BSpace BSpace
out=$($M info fromlua)
ok $(grep -q "rows: *5" <<< "$out" && grep -q "recipe" <<< "$out" && grep -q "rows=5" <<< "$out"; echo $?) \
	"matorage info shows the rows, the recipe and its arguments"
ok $([ "$($M cat fromlua x | tr '\n' ' ')" = "0 1 2 3 4 " ]; echo $?) "with the values the script wrote"

keys : 'run broken.lua' Enter
expect "a broken script shows its file and line" "broken.lua:4:"
expect "and says nothing was committed" "(nothing was committed)"

keys : 'run notthere.lua' Enter
expect "a missing script is named" "notthere.lua: No such file or directory"
keys : 'run good.lua rows' Enter
expect "an argument that is not KEY=VALUE is refused" "'rows' is not KEY=VALUE"

echo 'require("matorage").store("s3://b/p")' > steal.lua
keys : 'run steal.lua' Enter
expect "a :run gets no grant to another store" "'s3://b/p' is not the store"
keys : 'run --max-time 1 endless.lua' Enter
expect "a :run past its time limit stops for good, naming the limit" "recipe stopped: time limit 1 s"
keys : 'run endless.lua' Enter
expect "an endless script runs as a job" "started: run endless.lua"
keys J
expect "listed as running" "running"
keys c
expect "c cancels it" "canceled"
fails "the canceled recipe committed nothing" 1 "never" $M info never

# left NAME: what the store and the catalog keep of dataset NAME, which no
# version has: its directory (with anything under it) and its catalog row.
left() {
	find "$WORK/store/datasets/$1" 2>/dev/null
	"$PY" -c 'import sqlite3, sys
for r in sqlite3.connect(sys.argv[1]).execute("select name, nversions from datasets where name = ?", (sys.argv[2],)):
    print("catalog:", r)' "$XDG_DATA_HOME/matorage/catalog.db" "$1"
}
# left_none CASE NAME: a case passing once nothing is left of NAME.
left_none() {
	local i out
	for i in $(seq 50); do
		out=$(left "$2")
		[ -z "$out" ] && break
		sleep 0.2
	done
	ok $([ -z "$out" ]; echo $?) "$1"
	[ -z "$out" ] || echo "$out" | sed 's/^/# left: /'
}
keys Escape : 'run failmid.lua' Enter
expect "a recipe failing after it wrote rows says so" "failmid.lua:4: boom midway"
left_none "it leaves no directory of the dataset it began, nor a catalog row" failed
keys : 'run halfway.lua' Enter
expect "a recipe that wrote rows runs on" "started: run halfway.lua"
keys J
expect "listed as running" "running"
keys c
expect "c cancels it" "canceled"
left_none "canceled after it wrote rows, it leaves no directory of the dataset, nor a catalog row" halfway

keys q
done_testing
