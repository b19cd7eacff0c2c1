#!/bin/bash
# repair-shared.sh — health is per object: shards a version shares with a protected child verify as repairable from the child's parity, repair of the parent rebuilds them from it, and after a repair of the child the parent no longer shows its damage in the browser, without a check of its own.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
S="$WORK/store"
export MATORAGE_STORE="$S" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(400 * 16, dtype=np.float32).reshape(400, 16))"
check "c@v1: 4 shards, unprotected" $M put c x="$WORK/x.npy" --shard-rows 100
check "c@v2 appends 4 more, sharing v1's" $M put c x="$WORK/x.npy" --append --shard-rows 100
check "protect c@v2 only" $M protect c@v2 --parity 4+2
sha() { $M info "c@v1" --json | $PY -c "import json,sys; print(json.load(sys.stdin)['shards'][$1]['sha256'])"; }
s0=$(sha 0) s2=$(sha 2)
# damage: shard 0 gone, shard 2 with a byte flipped (same size)
damage() {
	rm -f "$S/datasets/c/shards/$s0.h5"
	flip_byte "$S/datasets/c/shards/$s2.h5"
}
cp "$S/datasets/c/shards/$s2.h5" s2.orig
damage
out=$($M verify c@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^c@v1: damaged, repairable from parity of v2"; echo $?) \
	"verify of the unprotected parent: repairable from its child's parity"
echo "$out" | sed 's/^/# /'
out=$($M repair c@v1 --dry-run --no-remotes 2>&1)
ok $(echo "$out" | grep -q "^repairable c@v1 shard 0 (rows 0..99) .*missing; from parity of v2" &&
	echo "$out" | grep -q "^repairable c@v1 shard 2 (rows 200..299) .*from parity of v2"; echo $?) \
	"repair --dry-run names the sibling's parity for each shard"
out=$($M repair c@v1 --no-remotes 2>&1)
ok $([ $? -eq 0 ] && echo "$out" | grep -q "^rebuilt c@v1 shard 0 .*from parity of v2"; echo $?) \
	"repair of the parent rebuilds its shards from the child's parity"
echo "$out" | sed 's/^/# /'
ok $(cmp -s s2.orig "$S/datasets/c/shards/$s2.h5"; echo $?) "byte for byte"
check "both verify" bash -c "$M verify c@v1 && $M verify c@v2"

# Without the child's record, what the parent lost is lost.
mv "$S/datasets/c/protect/v2.json" v2.rec
damage
out=$($M verify c@v1 2>&1)
ok $(echo "$out" | grep -q "^c@v1: damaged, unrepairable: lost shard 0"; echo $?) \
	"without the child's protection, the parent's damage is unrepairable"
mv v2.rec "$S/datasets/c/protect/v2.json"

# The browser: v1 checked lost, then R on v2 rebuilds the shared objects, and v1 sees it.
tui_start 200 30 tui --open c
expect "the browser opens on c" "v2"
keys v
for i in $(seq 300); do
	screen | grep -qE '\bv1\b.*repairable' && break
	sleep 0.1
done
keys Enter
expect "verify of v1 (the first row) found it repairable from v2's parity" "repairable from parity of v2"
keys Escape
expect "back at the versions" "PROTECT"
keys j R
expect "R on v2 starts its repair" "repair local:c@v2"
for i in $(seq 300); do
	screen | grep -qE '\bv1\b.*rebuilt' && break
	sleep 0.1
done
out=$(screen | grep -E '\bv1\b')
ok $(echo "$out" | grep -q rebuilt && ! echo "$out" | grep -q repairable; echo $?) \
	"v1 shows its shared shards rebuilt by v2's repair, with no check of its own: $out"
keys k Enter
expect "its detail says so" "damaged shards were rebuilt since"
keys q
tui_exited
check "v1 verifies" $M verify c@v1
done_testing
