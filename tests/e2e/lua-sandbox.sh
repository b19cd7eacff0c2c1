#!/bin/bash
# lua-sandbox.sh — a recipe reaches only its own store and the --allow-store ones (rerun inherits no grant), limits no pcall can catch, and default limits.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
cd "$WORK" || exit 1
printf 'import numpy as np\nnp.save("x.npy", np.arange(4, dtype=np.int32))\n' | "$PY" -
# versions DATASET [STORE]: how many versions the dataset has
versions() { $M ${2:+--store "$2"} ls "$1" 2> /dev/null | grep -c '^v[0-9]'; }

# A recipe that writes one row into a store named by its argument (or its own).
cat > write.lua << 'LUA'
local m = require("matorage")
local s = m.store(arg.to)
local w = s:create("loot", { attributes = { { name = "x", dtype = "int32" } } })
w:append({ x = m.full({ 1 }, 7, "int32") })
w:commit()
LUA

# ---- other stores ----
fails "writing another file store is refused, naming the flag" 1 \
	"store 'file://$WORK/far' is not the store this recipe runs against .*allow it with --allow-store file://$WORK/far" \
	$M run write.lua to="file://$WORK/far"
ok $([ ! -e "$WORK/far" ]; echo $?) "and the store was not made"
check "a dataset in a private store" $M --store "file://$WORK/secret" put secret x=x.npy
echo 'local r = require("matorage").store(arg.from):open("secret"); print(r:rows())' > read.lua
fails "reading another local store is refused" 1 "allow it with --allow-store" \
	$M run read.lua from="$WORK/secret"
fails "a link to it is refused too" 1 "allow it with --allow-store" \
	bash -c "ln -s '$WORK/secret' '$WORK/link' && $M run read.lua from='file://$WORK/link/'"
port=$(free_port)
out=$($M --endpoint "http://127.0.0.1:$port" run write.lua to="s3://bucket/p" 2>&1)
rc=$?
ok $([ $rc -eq 1 ] && grep -q "allow it with --allow-store s3://bucket/p" <<< "$out" &&
	! grep -qi "connect" <<< "$out"; echo $?) "an s3:// store is refused before any connection"
[ $rc -eq 1 ] || echo "# $out"
check "the run's own store, by path, is allowed" $M run write.lua to="$WORK/store/."
check "--allow-store opens another store" $M run write.lua to="file://$WORK/far" --allow-store "$WORK/far/"
ok $([ "$(versions loot "file://$WORK/far")" = 1 ]; echo $?) "which holds the version"
fails "a store inside an allowed one is another store" 1 "allow it with --allow-store" \
	$M run write.lua to="file://$WORK/far/sub" --allow-store "file://$WORK/far"

# ---- rerun: a stored recipe gets no grant ----
# The recipe in the shared store writes a copy elsewhere; its author allowed that.
cat > evil.lua << 'LUA'
local m = require("matorage")
local w = m.create("shared", { attributes = { { name = "x", dtype = "int32" } } })
w:append({ x = m.full({ 1 }, 1, "int32") })
w:commit()
local c = m.store(arg.to):create("copy", { attributes = { { name = "x", dtype = "int32" } } })
c:append({ x = m.full({ 1 }, 1, "int32") })
c:commit()
LUA
check "the author runs it with a grant" $M run evil.lua to="file://$WORK/drop" --allow-store "file://$WORK/drop"
rm -rf "$WORK/drop"
fails "rerun of that recipe without the grant is refused" 1 "allow it with --allow-store file://$WORK/drop" \
	$M rerun shared
ok $([ ! -e "$WORK/drop" ] && [ "$(versions shared)" = 1 ]; echo $?) "nothing was written or committed"
check "rerun with --allow-store on its command line runs" $M rerun shared --allow-store "file://$WORK/drop"
ok $([ "$(versions copy "file://$WORK/drop")" = 1 ] && [ "$(versions shared)" = 2 ]; echo $?) \
	"and commits both"

# ---- limits cannot be caught ----
cat > catch-mem.lua << 'LUA'
local m = require("matorage")
for _ = 1, 2 do
  print(pcall(function() local t = {} for i = 1, 1e8 do t[i] = i end end))
end
local w = m.create("after", { attributes = { { name = "x", dtype = "int32" } } })
w:append({ x = m.full({ 1 }, 1, "int32") })
w:commit()
LUA
fails "pcall around the memory limit, then a commit: exit 1 naming the limit" 1 \
	"recipe stopped: memory limit 32.0 MiB reached \(raise with --max-memory\) \(nothing was committed\)" \
	$M run catch-mem.lua --max-memory 32M
ok $([ "$(versions after)" = 0 ]; echo $?) "and no version"
cat > catch-time.lua << 'LUA'
local m = require("matorage")
for _ = 1, 2 do
  print(pcall(function() while true do end end))
end
local w = m.create("after", { attributes = { { name = "x", dtype = "int32" } } })
w:append({ x = m.full({ 1 }, 1, "int32") })
w:commit()
LUA
fails "pcall around the time limit, then a commit: exit 1 naming the limit" 1 \
	"catch-time.lua:3: recipe stopped: time limit 1 s reached \(raise with --max-time\)" \
	timeout 60 $M run catch-time.lua --max-time 1
ok $([ "$(versions after)" = 0 ]; echo $?) "and no version"

# ---- default limits (small explicit values keep the test short; test-script checks the defaults) ----
echo 'while true do end' > spin.lua
start=$(date +%s)
fails "while true do end is stopped by the time limit" 1 "spin.lua:1: recipe stopped: time limit 2 s reached" \
	timeout 60 $M run spin.lua --max-time 2
ok $(( $(date +%s) - start < 30 ? 0 : 1 )) "within seconds"
echo 'local t = {} for i = 1, 1e9 do t[i] = i end' > table.lua
fails "a 1e9-entry table is stopped by the memory limit" 1 \
	"recipe stopped: memory limit 64.0 MiB reached \(raise with --max-memory\)" \
	timeout 60 $M run table.lua --max-memory 64M
cat > mode.lua << 'LUA'
local m = require("matorage")
local f = io.open("mode.txt")
if f and f:read("l") == "spin" then while true do end end
local w = m.create("moded", { attributes = { { name = "x", dtype = "int32" } } })
w:append({ x = m.full({ 1 }, 1, "int32") })
w:commit()
LUA
echo build > mode.txt
check "a recipe that spins only when told" $M run mode.lua
echo spin > mode.txt
fails "rerun has the same limits" 1 ":3: recipe stopped: time limit 1 s reached" \
	timeout 60 $M rerun moded --max-time 1
$M help run 2>&1 | grep -q "default: 3600; 0: no limit"
ok $? "the help names the default time limit"
echo 'print("ok")' > fine.lua
check "0 lifts the memory and time limits" $M run fine.lua --max-memory 0 --max-time 0
done_testing
