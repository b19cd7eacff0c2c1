#!/bin/bash
# tui-numbers.sh — numbers that do not mislead: diff counts shard references (a shard listed twice is two, so "0 new" means no new rows), a removed parent shows as removed with what its child still holds of it, and a narrow screen hides columns rather than cut their values.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np
np.save('$WORK/x.npy', np.arange(40).reshape(20, 2))
np.save('$WORK/y.npy', np.arange(100, 110).reshape(5, 2))"
check "a dataset of 4 shards" $M put tab x="$WORK/x.npy" --shard-rows 5
check "the same rows appended: 4 shards listed again" $M put tab x="$WORK/x.npy" --shard-rows 5 --append
check "and again" $M put tab x="$WORK/x.npy" --shard-rows 5 --append
check "then new rows" $M put tab x="$WORK/y.npy" --shard-rows 5 --append

# CLI: repeated shards are new references with new rows, never "shared" twice.
out=$($M diff tab@v3)
ok $(grep -q "^shared *8 shards .* 40 rows$" <<< "$out" &&
	grep -q "^new *4 shards .* 20 rows (4 repeat shards already held)$" <<< "$out" &&
	grep -q "^removed *0 shards" <<< "$out"; echo $?) \
	"a second append of the same files: 8 shared (the parent's 40 rows), 4 new repeats with 20 rows: $out"
out=$($M diff tab@v1 tab@v3)
ok $(grep -q "^shared *4 shards .* 20 rows$" <<< "$out" && grep -q "^new *0 shards .* 0 rows$" <<< "$out" &&
	grep -q "^removed *8 shards .* 40 rows$" <<< "$out"; echo $?) \
	"against a longer version the repeats are removed rows, and new 0 rows means no new rows: $out"
out=$($M diff tab@v2 --shards)
ok $([ "$(grep -c '^  shared ' <<< "$out")" = 4 ] && [ "$(grep -c '^  repeat ' <<< "$out")" = 4 ]; echo $?) \
	"--shards marks each repeated reference 'repeat': $out"
out=$($M diff tab@v3 tab@v3)
ok $(grep -q "^every shard is shared, in the same order: the same rows$" <<< "$out"; echo $?) \
	"a version against itself is the same rows: $out"
rows() { "$PY" -c "import sys, json; print(json.load(open(sys.argv[1]))['rows'])" "$WORK/store/datasets/tab/versions/$1.json"; }
ok $([ "$(rows v2)" = 40 ] && [ "$(rows v3)" = 60 ]; echo $?) "the manifests hold 40 and 60 rows"

# The browser's list counts shared references the same way; a removed parent says so.
tui_start 250 70
expect "the browser opens" "sync local:"
keys Enter Enter / tab Enter Enter
expect "tab's versions" "VERSION  CREATED"
expect "v2 shares the 4 shards of v1, not all 8 of its own" "v1 (4/8 shared)"
expect "v3 shares v2's 8 of its 12" "v2 (8/12 shared)"
expect "v4 shares all of v3 and adds 1" "v3 (12/13 shared)"
keys / v3 Enter d Enter
expect "the browser's diff: 4 new repeats" "new           4 shards"
expect "saying they are repeats" "(4 repeat shards already held)"
expect_not "and never that all is shared" "every shard is shared"
expect "its shard list marks the repeats" "repeat   "
keys BSpace / v1 Enter D tab@v1 Enter
expect "v1 is deleted" "deleted"
expect "v2 shows its parent removed, with the shards it still holds of it" "v1 (removed, 4/8 shared)"
keys / v2 Enter Enter
expect "v2's details too" "4 of 8 shards with v1 (removed; it still holds them)"
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
