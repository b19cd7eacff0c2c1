#!/bin/bash
# catalog-concurrency.sh — search during a sync sees the last committed state: a dataset in the catalog before a sync is found by every search while other processes sync the store (full and plain syncs, 13 datasets, one of 66 versions: more than a batch), and a catalog that cannot be read is an error (exit 1), never "nothing matches".
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
cd "$WORK" || exit 1

# The store: zebra with 66 versions (two sync batches of 64), 12 other datasets.
# One recipe run writes them all: a put per version would take minutes under ASan.
cat > fill.lua <<'LUA'
local m = require("matorage")
local spec = { attributes = { { name = "x", dtype = "float32", shape = { 2 } } } }
for i = 1, 66 do
  local w = m.create("zebra", spec)
  w:append({ x = m.zeros({ 3, 2 }) })
  w:commit()
end
for i = 1, 12 do
  local w = m.create(string.format("d%02d", i), spec)
  w:append({ x = m.zeros({ 3, 2 }) })
  w:commit()
end
LUA
check "a recipe writes zebra@v1..v66 and d01..d12" $M run fill.lua
check "sync" $M sync
ok $([ "$($M search zebra | grep -c "^local	zebra@v")" -eq 66 ]; echo $?) "search finds the 66 versions of zebra before any concurrent sync"

# Rounds of a full sync and a plain one in the background (each full sync
# rewrites every version's rows and search entries); searches run meanwhile,
# at most QMAX of them, each looking for zebra: every committed state has
# all 66 of its versions.  A search that exits 0 with fewer is a miss; one
# that fails is an error.
QMAX=30
miss=0 errs=0 total=0 during=0
for round in 1 2 3; do
	( $M sync --full && $M sync ) > sync-$round.out 2>&1 &
	sp=$!
	n=0
	while [ $n -lt $((QMAX / 3)) ]; do
		running=0
		kill -0 $sp 2> /dev/null && running=1
		out=$($M search zebra 2>&1)
		rc=$?
		n=$((n + 1)) total=$((total + 1)) during=$((during + running))
		if [ "$(grep -c "^local	zebra@v" <<< "$out")" -ne 66 ]; then
			if [ $rc -eq 0 ]; then
				miss=$((miss + 1))
			else
				errs=$((errs + 1))
			fi
			echo "# round $round, query $n (rc $rc): $(head -2 <<< "$out" | tr '\n' '|')"
		fi
		[ $running -eq 1 ] || break
	done
	wait $sp || echo "# sync failed: $(tr '\n' '|' < sync-$round.out)"
done
echo "# $total searches, $during of them while a sync ran: $miss missed versions of zebra, $errs failed"
ok $([ $during -gt 0 ]; echo $?) "searches ran while syncs did ($during of $total)"
ok $([ $miss -eq 0 ]; echo $?) "no search during a sync missed a version of zebra ($miss of $total)"
ok $([ $errs -eq 0 ]; echo $?) "no search during a sync failed ($errs of $total)"
ok $($M search zebra | grep -c "^local	zebra@" | grep -qx 66; echo $?) "after the syncs, all 66 versions of zebra are found"

# A catalog that cannot be opened (a directory where the file should be) is
# an error naming it, never an empty result.
mkdir -p bad/catalog.db
out=$(MATORAGE_CATALOG="$WORK/bad/catalog.db" $M search zebra 2>&1)
rc=$?
ok $([ $rc -eq 1 ] && ! grep -q "nothing matches" <<< "$out" && grep -q "catalog" <<< "$out"; echo $?) \
	"a catalog that cannot be read is an error (exit $rc), not 'nothing matches': $(tr '\n' '|' <<< "$out")"

done_testing
