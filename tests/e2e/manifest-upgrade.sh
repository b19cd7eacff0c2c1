#!/bin/bash
# manifest-upgrade.sh — `matorage upgrade` rewrites a format-1 version in format 2 with byte-identical reads; twice changes nothing; safe beside gc.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
S=$WORK/store
F=$S/datasets/u/fragments
# 8 shards a fragment, so 41 one-row shards make 6 fragments.
export MATORAGE_FRAGMENT_SHARDS=8
$PY -c "
import numpy as n
n.save('$WORK/x.npy', (n.arange(41 * 3, dtype='int32') * 7).reshape(41, 3))
n.save('$WORK/y.npy', n.full((1, 3), -5, dtype='int32'))"

check "put u in format 1 (41 one-row shards)" env MATORAGE_MANIFEST_FORMAT=1 $M put u x="$WORK/x.npy" --shard-rows 1
check "append one row in format 1" env MATORAGE_MANIFEST_FORMAT=1 $M put u x="$WORK/y.npy" --append
check "a third version in format 1" env MATORAGE_MANIFEST_FORMAT=1 $M put u x="$WORK/y.npy" --append

# What every reader says before the upgrade.
snap() {
	local out=$1
	mkdir -p "$out"
	for v in v1 v2 v3; do
		$M get u@$v x -o "$out/$v.npy" > /dev/null 2>&1 || echo "get $v failed" >> "$out/errors"
		$M get u@$v x --rows 7:19 -o "$out/$v-rows.npy" > /dev/null 2>&1 || echo "get --rows $v failed" >> "$out/errors"
		$M cat u@$v x > "$out/$v.cat" 2>&1 || echo "cat $v failed" >> "$out/errors"
		$M verify u@$v > "$out/$v.verify" 2>&1 || echo "verify $v failed" >> "$out/errors"
		$M info u@$v --shards > "$out/$v.info" 2>&1 || echo "info $v failed" >> "$out/errors"
	done
	$M diff u@v1 u@v2 > "$out/diff" 2>&1 || echo "diff failed" >> "$out/errors"
	$M diff u@v1 u@v3 --shards > "$out/diff-shards" 2>&1 || echo "diff --shards failed" >> "$out/errors"
}
snap "$WORK/before"
ok $([ ! -e "$WORK/before/errors" ]; echo $?) "every read of the format-1 versions works"

out=$($M upgrade u@v1 2>&1)
ok $?  "upgrade u@v1 ($out)"
ok $(echo "$out" | grep -q 'u@v1: upgraded to manifest format 2'; echo $?) "upgrade says what it did"
ok $(grep -q '"format":2' "$S/datasets/u/versions/v1.json" && ! grep -q '"shards":' "$S/datasets/u/versions/v1.json"; echo $?) "v1 is a format-2 root"
n=$(ls "$F" | wc -l)
ok $([ "$n" -eq 6 ]; echo $?) "6 fragments of at most 8 shards written (got $n)"
cp "$S/datasets/u/versions/v1.json" "$WORK/v1-root.json"
out=$($M upgrade u@v1 2>&1)
ok $? "upgrade u@v1 again"
ok $(echo "$out" | grep -q 'u@v1: already manifest format 2'; echo $?) "the second upgrade says it changed nothing ($out)"
check "the root is unchanged by the second upgrade" cmp "$WORK/v1-root.json" "$S/datasets/u/versions/v1.json"
ok $([ "$(ls "$F" | wc -l)" -eq 6 ]; echo $?) "no fragment added by the second upgrade"
check "upgrade of latest (v3)" bash -c "$M upgrade u | grep -q 'u@v3: upgraded'"
ok $(grep -q '"format":2' "$S/datasets/u/versions/v3.json" && grep -q '"format":1' "$S/datasets/u/versions/v2.json"; echo $?) "latest is v3: v3 upgraded, v2 not"
v1f=$(grep -o '"sha256":"[0-9a-f]*"' "$S/datasets/u/versions/v1.json" | head -5)
v3f=$(grep -o '"sha256":"[0-9a-f]*"' "$S/datasets/u/versions/v3.json" | head -5)
ok $([ "$v1f" = "$v3f" ]; echo $?) "v3 shares v1's five full fragments"

# Upgrades beside a gc that deletes with no grace: nothing named is collected.
(for i in 1 2 3 4 5 6; do $M gc u --delete --grace 0 > /dev/null 2>&1; done) &
gcpid=$!
check "upgrade u@v2 while gc runs" $M upgrade u@v2
wait $gcpid
check "gc --delete --grace 0 after the upgrades" $M gc u --delete --grace 0
snap "$WORK/after"
ok $([ ! -e "$WORK/after/errors" ]; echo $?) "every read of the upgraded versions works"
for f in v1.npy v2.npy v3.npy v1-rows.npy v2-rows.npy v3-rows.npy v1.cat v2.cat v3.cat v1.verify v2.verify v3.verify diff diff-shards; do
	check "$f byte-identical after the upgrade" cmp "$WORK/before/$f" "$WORK/after/$f"
done
for v in v1 v2 v3; do
	check "info $v --shards lists the same shards" bash -c "diff <(grep -v 'manifest\\|bytes' $WORK/before/$v.info) <(grep -v 'manifest\\|bytes' $WORK/after/$v.info)"
done
check "an append to an upgraded version is format 2" bash -c "$M put u x=$WORK/y.npy --append && grep -q '\"format\":2' $S/datasets/u/versions/v4.json && $M verify u@v4"

check "protect a format-1 version" bash -c "MATORAGE_MANIFEST_FORMAT=1 $M put p x=$WORK/x.npy --shard-rows 4 && $M protect p --parity 4+2"
check "upgrade of a protected version carries its protection" bash -c "$M upgrade p@v1 | grep -q 'p@v1: upgraded to manifest format 2'"
ok $(grep -q '"format":2' "$S/datasets/p/versions/v1.json" && grep -q '^{"format":2,' "$S/datasets/p/protect/v1.json"; echo $?) "its root and its record are format 2"
check "the upgraded protected version verifies" $M verify p@v1
fails "upgrade of a missing version" 1 "u@v9" $M upgrade u@v9
fails "upgrade with no dataset" 2 "upgrade" $M upgrade
done_testing
