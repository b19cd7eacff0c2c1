#!/bin/bash
# repair-shared-fragments.sh — a fragment an unprotected format-2 version shares with its protected child (the same object, the same sha256) is named by verify as repairable from the child's parity, and repair of the parent (or of the whole dataset) rebuilds it byte for byte from the child's fragment groups; a fragment only the parent has stays unrepairable with a clear error, and nothing is written.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
S=$WORK/store
F=$S/datasets/d/fragments
export MATORAGE_STORE="$S" MATORAGE_CONFIG="$WORK/conf/matorage.json" # no remotes
# 4 shards a fragment: 44 rows in 22 two-row shards make 5 full fragments (rows 8j..8j+7)
# and a short last one (rows 40..43), which an append does not share.
export MATORAGE_FRAGMENT_SHARDS=4
$PY -c "
import numpy as n
n.save('$WORK/x.npy', (n.arange(44 * 3, dtype='int32') * 7 - 5).reshape(44, 3))
n.save('$WORK/y.npy', n.full((2, 3), 9, dtype='int32'))"

check "put d@v1: 22 shards in format 2, unprotected" $M put d x="$WORK/x.npy" --shard-rows 2
check "append d@v2: two more rows" $M put d x="$WORK/y.npy" --append
check "protect d@v2 only, 2+1" $M protect d@v2 --parity 2+1
ok $([ ! -e "$S/datasets/d/protect/v1.json" ]; echo $?) "d@v1 has no protection record"
frag() { # VERSION I: the sha256 of fragment I of VERSION's root
	$PY -c "import json; print(json.load(open('$S/datasets/d/versions/$1.json'))['fragments'][$2]['sha256'])"
}
f1=$(frag v1 1) f2=$(frag v1 2) f5=$(frag v1 5)
ok $([ "$f1" = "$(frag v2 1)" ] && [ "$f2" = "$(frag v2 2)" ] && [ "$f5" != "$(frag v2 5)" ]; echo $?) \
	"v1 and v2 share fragments 1 and 2; v1's short last fragment 5 is v1's alone"
$PY -c "
import json
r = json.load(open('$S/datasets/d/protect/v2.json'))
print('# v2 fragment groups:', [[m['sha256'][:12] for m in g['members']] for g in r['fragment_groups']])"
ok $($PY -c "
import json
r = json.load(open('$S/datasets/d/protect/v2.json'))
exit(not any(m['sha256'] == '$f1' for g in r['fragment_groups'] for m in g['members']))"; echo $?) \
	"v2's record holds the shared fragment 1 as a member of a fragment group"
$M get d@v1 x -o "$WORK/good.npy" > /dev/null 2>&1
cp "$F/$f1.json" "$WORK/f1.json"
cp "$F/$f2.json" "$WORK/f2.json"
(cd "$S" && find datasets -type f ! -path '*/locks/*' | sort | xargs sha256sum) > "$WORK/sound.sums"
sum_is_name() { [ "$(sha256sum < "$F/$1.json" | cut -c1-64)" = "$1" ]; }

# The shared fragment 1 deleted: verify names it, repair of v1 rebuilds it from v2's parity.
rm "$F/$f1.json"
out=$($M verify d@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "d@v1: fragment datasets/d/fragments/$f1.json (rows 8 to 15, shards 4 to 7)"; echo $?) \
	"verify d@v1 fails naming the fragment and its rows"
ok $(echo "$out" | grep -q "^d@v1: damaged, repairable from parity of v2"; echo $?) \
	"verify d@v1: repairable from the child's parity"
echo "$out" | sed 's/^/# /'
out=$($M repair d@v1 --dry-run 2>&1)
ok $(echo "$out" | grep -q "^repairable d@v1 fragment 1 (rows 8..15) datasets/d/fragments/$f1.json: missing; from parity of v2"; echo $?) \
	"repair --dry-run names fragment 1 and the child's parity"
ok $([ ! -e "$F/$f1.json" ]; echo $?) "the dry run wrote nothing"
out=$($M repair d@v1 2>&1)
rc=$?
ok $rc "repair d@v1 with the shared fragment 1 lost"
ok $(echo "$out" | grep -q "^rebuilt d@v1 fragment 1 (rows 8..15) datasets/d/fragments/$f1.json: missing; from parity of v2"; echo $?) \
	"it says fragment 1 was rebuilt from parity of v2"
[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
check "the rebuilt fragment hashes to its name" sum_is_name "$f1"
check "and is byte for byte the original" cmp "$WORK/f1.json" "$F/$f1.json"
check "d@v1 verifies" $M verify d@v1
check "d@v1 reads its rows" bash -c "$M get d@v1 x -o $WORK/o.npy && cmp $WORK/good.npy $WORK/o.npy"

# The shared fragment 2 edited and one of its shards lost: the fragment first, then the
# shard it names, both from v2's parity, by a repair of the whole dataset.
s9=$($PY -c "import json; print(json.load(open('$WORK/f2.json'))['shards'][1]['sha256'])")
cp "$S/datasets/d/shards/$s9.h5" "$WORK/s9.h5"
flip_byte "$F/$f2.json"
rm "$S/datasets/d/shards/$s9.h5"
out=$($M verify d@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^d@v1: damaged, repairable from parity of v2"; echo $?) \
	"fragment 2 edited, shard 9 lost: verify d@v1 says repairable from parity of v2"
out=$($M repair d --no-remotes 2>&1)
rc=$?
ok $rc "repair d (every version)"
ok $(echo "$out" | grep -q "^rebuilt d@v1 fragment 2 (rows 16..23) datasets/d/fragments/$f2.json: .*; from parity of v2" &&
	echo "$out" | grep -q "^rebuilt d@v1 shard 9 (rows 18..19) .*missing; from parity of v2"; echo $?) \
	"the repair of v1 rebuilt fragment 2, then shard 9, from v2's parity"
[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
ok $(! echo "$out" | grep -q "UNREPAIRABLE"; echo $?) "nothing left unrepairable"
check "fragment 2 is byte for byte the original" cmp "$WORK/f2.json" "$F/$f2.json"
check "shard 9 is byte for byte the original" cmp "$WORK/s9.h5" "$S/datasets/d/shards/$s9.h5"
check "both versions verify" bash -c "$M verify d@v1 && $M verify d@v2"
(cd "$S" && find datasets -type f ! -path '*/locks/*' | sort | xargs sha256sum) > "$WORK/now.sums"
check "the store holds exactly what it held before the damage" cmp "$WORK/sound.sums" "$WORK/now.sums"

# v1's own last fragment: no record holds it, so it stays lost, said clearly, nothing written.
cp "$F/$f5.json" "$WORK/f5.json"
rm "$F/$f5.json"
snap() { (cd "$S" && find datasets -type f ! -path '*/locks/*' | sort | xargs sha256sum); }
snap > "$WORK/before.sums"
out=$($M verify d@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "^d@v1: damaged, unrepairable: lost"; echo $?) \
	"fragment 5 (v1's alone) lost: verify says unrepairable"
echo "$out" | sed 's/^/# /'
fails "repair d@v1 fails naming the fragment, its rows and why" 1 \
	"^matorage: d@v1: fragment 5 \(rows 40..43\): datasets/d/fragments/$f5.json: missing; no store holds it and its parity cannot rebuild it" \
	$M repair d@v1
snap > "$WORK/after.sums"
check "the refused repair changed nothing" cmp "$WORK/before.sums" "$WORK/after.sums"
cp "$WORK/f5.json" "$F/$f5.json"

# Without the child's record, the shared fragment is v1's alone too.
mv "$S/datasets/d/protect/v2.json" "$WORK/v2.rec"
rm "$F/$f1.json"
fails "without v2's record, the shared fragment cannot be rebuilt" 1 \
	"d@v1: fragment 1 \(rows 8..15\): datasets/d/fragments/$f1.json: missing; no store holds it" \
	$M repair d@v1
mv "$WORK/v2.rec" "$S/datasets/d/protect/v2.json"
check "with it back, repair d@v2 rebuilds it for both" $M repair d@v2
check "d@v1 verifies again" $M verify d@v1
done_testing
