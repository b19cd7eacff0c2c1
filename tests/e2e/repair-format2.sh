#!/bin/bash
# repair-format2.sh — protection and repair of format-2 versions: the record covers the root and every fragment; a fragment missing, truncated, swapped or edited is named by verify and rebuilt byte-exact (from parity, from another store), a lost root comes back from the record, too much damage is refused and changes nothing, and upgrade carries the protection.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
S=$WORK/store
B=$WORK/b
F=$S/datasets/d/fragments
export MATORAGE_CONFIG="$WORK/conf/matorage.json" # no remotes: only --from is another store
# 4 shards a fragment: 48 rows in 24 two-row shards make 6 fragments, fragment j rows 8j..8j+7.
export MATORAGE_FRAGMENT_SHARDS=4
$PY -c "
import numpy as n
n.save('$WORK/x.npy', (n.arange(48 * 3, dtype='int32') * 7 - 5).reshape(48, 3))
n.save('$WORK/y.npy', n.full((2, 3), 9, dtype='int32'))"

check "put d: 24 shards in format 2" $M put d x="$WORK/x.npy" --shard-rows 2
ok $(grep -q '"format":2' "$S/datasets/d/versions/v1.json"; echo $?) "d@v1 is a format-2 root"
n=$(ls "$F" | wc -l)
ok $([ "$n" -eq 6 ]; echo $?) "6 fragments (got $n)"
check "protect d@v1 with 2+1 parity" $M protect d@v1 --parity 2+1
R=$S/datasets/d/protect/v1.json
ok $(grep -q '^{"format":2,' "$R" && grep -q '"fragment_groups":\[' "$R"; echo $?) "the record is format 2 with fragment groups"
nfg=$($PY -c "import json; r = json.load(open('$R')); print(len(r['fragment_groups']), sum(len(g['members']) for g in r['fragment_groups']), len(r['groups']))")
ok $([ "$nfg" = "3 6 12" ]; echo $?) "3 fragment groups cover the 6 fragments, 12 shard groups the shards (got $nfg)"
ok $($PY -c "import json; r = json.load(open('$R')); m = open('$S/datasets/d/versions/v1.json').read(); exit(r['manifest'] != m)"; echo $?) "the record embeds the root byte for byte"
check "protect again: nothing to do" bash -c "$M protect d@v1 --parity 2+1 | grep -q 'already'"
check "info reads the protected version" $M info d@v1

# What every reader says of the sound version.
$M get d@v1 x -o "$WORK/good.npy" > /dev/null 2>&1
(cd "$F" && sha256sum -- * > "$WORK/frag.sums")
cp "$S/datasets/d/versions/v1.json" "$WORK/root.json"
readers_ok() { # NAME: get equals the original, info and verify pass, every fragment holds its bytes
	check "$1: get d@v1 reads the original rows" bash -c "$M get d@v1 x -o $WORK/o.npy && cmp $WORK/good.npy $WORK/o.npy"
	check "$1: get --rows 9:13 reads them" bash -c "$M get d@v1 x --rows 9:13 -o $WORK/o.npy && $PY -c \"import numpy as n; a = n.load('$WORK/o.npy'); b = n.load('$WORK/good.npy'); exit(not (a == b[9:13]).all())\""
	check "$1: info --shards lists 24 shards" bash -c "[ \$($M info d@v1 --shards | grep -c '[0-9a-f]\{64\}') = 24 ]"
	check "$1: verify passes" $M verify d@v1
	check "$1: every fragment is byte for byte the original" bash -c "cd $F && sha256sum -c --quiet $WORK/frag.sums"
	check "$1: the root is byte for byte the original" cmp "$WORK/root.json" "$S/datasets/d/versions/v1.json"
}
readers_ok "sound"

frag_of() { # ROW: the sha256 of the fragment starting at ROW
	grep -o "\"first_row\":$1,\"rows\":8,\"nshards\":4,\"shard_bytes\":[0-9]*,\"sha256\":\"[0-9a-f]*\"" \
		"$WORK/root.json" | grep -o '[0-9a-f]\{64\}'
}
f1=$(frag_of 8)
f0=$(frag_of 0)
f3=$(frag_of 24)
echo "# fragment 1 (rows 8..15) $f1, its group's other member fragment 0 $f0"

# damage_case NAME HOW: damage fragment 1, see verify name it, repair it from parity.
damage_case() {
	local name=$1
	case $2 in
	rm) rm "$F/$f1.json" ;;
	truncate) head -c 150 "$WORK/f1.json" > "$F/$f1.json" ;;
	swap) cp "$F/$f3.json" "$F/$f1.json" ;;
	edit) sed -i '0,/"rows":2,/s//"rows":3,/' "$F/$f1.json" ;;
	esac
	fails "$name: verify fails naming version, fragment and rows" 1 \
		"d@v1: fragment datasets/d/fragments/$f1.json \(rows 8 to 15, shards 4 to 7\)" $M verify d@v1
	out=$($M verify d@v1 2>&1)
	ok $(echo "$out" | grep -q 'd@v1: damaged, repairable from parity'; echo $?) "$name: verify says it is repairable from parity"
	out=$($M repair d@v1 --dry-run 2>&1)
	ok $(echo "$out" | grep -q "repairable d@v1 fragment 1 (rows 8..15) datasets/d/fragments/$f1.json"; echo $?) "$name: repair --dry-run names the fragment"
	ok $(cmp -s "$WORK/f1.json" "$F/$f1.json"; [ $? -ne 0 ]; echo $?) "$name: the dry run wrote nothing"
	out=$($M repair d@v1 2>&1)
	rc=$?
	ok $rc "$name: repair d@v1"
	ok $(echo "$out" | grep -q "rebuilt d@v1 fragment 1 (rows 8..15) datasets/d/fragments/$f1.json: .*; from parity"; echo $?) "$name: repair says it rebuilt fragment 1 from parity"
	[ $rc -eq 0 ] || echo "$out" | sed 's/^/# /'
	readers_ok "$name"
}
cp "$F/$f1.json" "$WORK/f1.json"
damage_case "fragment deleted" rm
damage_case "fragment truncated" truncate
damage_case "fragment swapped" swap
damage_case "fragment edited" edit

# A lost fragment-group parity object is rebuilt too.
p0=$($PY -c "import json; print(json.load(open('$R'))['fragment_groups'][0]['parity'][0]['sha256'])")
rm "$S/datasets/d/parity/$p0"
out=$($M verify d@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "BAD parity of group 0 datasets/d/parity/$p0: missing"; echo $?) "a lost parity object of a fragment group fails verify, named"
check "repair rebuilds it" bash -c "$M repair d@v1 | grep -q 'rebuilt d@v1 parity of group 0 datasets/d/parity/$p0'"
check "it holds its bytes again" bash -c "[ \$(sha256sum < $S/datasets/d/parity/$p0 | cut -c1-64) = $p0 ]"

# The root lost: from the record, as a format-1 manifest is.
rm "$S/datasets/d/versions/v1.json"
out=$($M verify d@v1 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q 'd@v1: damaged, repairable from protection record'; echo $?) "verify of the lost root says the record brings it back"
out=$($M repair d@v1 2>&1)
ok $? "repair d@v1 with its root lost"
ok $(echo "$out" | grep -q 'rebuilt d@v1 manifest datasets/d/versions/v1.json: missing; from protection record'; echo $?) "the root came from the protection record"
readers_ok "root deleted"

# The root and a fragment lost at once: both come back.
rm "$S/datasets/d/versions/v1.json" "$F/$f1.json"
check "repair d@v1 with its root and fragment 1 lost" $M repair d@v1
readers_ok "root and fragment deleted"

# gc keeps the fragments' parity; a copy carries it.
npar=$(ls "$S/datasets/d/parity" | wc -l)
check "gc --delete --grace 0" $M gc d --delete --grace 0
ok $([ "$(ls "$S/datasets/d/parity" | wc -l)" -eq "$npar" ]; echo $?) "gc kept every parity object, the fragments' included ($npar)"
# From a second file store: with both fragments of a group gone parity cannot, --from can.
check "push d to a second store" $M push d "file://$B"
ok $(cmp -s "$R" "$B/datasets/d/protect/v1.json" && [ "$(ls "$B/datasets/d/parity" | wc -l)" -eq "$npar" ]; echo $?) "the copy has the record and every parity object"
rm "$F/$f1.json" "$F/$f0.json"
snap() { (cd "$S" && find datasets -type f ! -path '*/locks/*' | sort | xargs sha256sum); }
snap > "$WORK/before.sums"
fails "repair with 2 of a 2+1 group lost fails, naming the fragment" 1 \
	"d@v1: fragment 0 \(rows 0..7\): datasets/d/fragments/$f0.json: missing; no store holds it and its parity cannot rebuild it" \
	$M repair d@v1
snap > "$WORK/after.sums"
check "the refused repair changed nothing" cmp "$WORK/before.sums" "$WORK/after.sums"
out=$($M repair d@v1 2>&1)
ok $(echo "$out" | grep -q 'UNREPAIRABLE d@v1 fragment 0 (rows 0..7)' && echo "$out" | grep -q 'UNREPAIRABLE d@v1 fragment 1 (rows 8..15)'; echo $?) "both fragments are reported unrepairable"
out=$($M repair d@v1 --from "file://$B" 2>&1)
ok $? "repair d@v1 --from the second store"
ok $(echo "$out" | grep -q "rebuilt d@v1 fragment 0 (rows 0..7) .*; from file://$B" && echo "$out" | grep -q "rebuilt d@v1 fragment 1 (rows 8..15) .*; from file://$B"; echo $?) "both fragments came from the second store"
readers_ok "two fragments deleted, --from"

# An unprotected format-2 version mends a lost fragment from another store only.
check "put u: format 2, unprotected" bash -c "$M put u x=$WORK/x.npy --shard-rows 2 && $M push u file://$B"
uf=$(ls "$S/datasets/u/fragments" | head -1)
rm "$S/datasets/u/fragments/$uf"
fails "repair u@v1 without a source: the fragment is lost" 1 "u@v1: fragment [0-9]+ \(rows [0-9]+\.\.[0-9]+\): datasets/u/fragments/$uf: missing" $M repair u@v1
check "repair u@v1 --from the second store" $M repair u@v1 --from "file://$B"
check "u@v1 verifies" $M verify u@v1

# An append to a protected version reuses its full groups, of shards and of fragments.
check "append two rows to d" $M put d x="$WORK/y.npy" --append
out=$($M protect d@v2 --parity 2+1 2>&1)
ok $? "protect d@v2 ($out)"
r2=$($PY -c "
import json
a = json.load(open('$R')); b = json.load(open('$S/datasets/d/protect/v2.json'))
print(a['fragment_groups'][0] == b['fragment_groups'][0], a['fragment_groups'][1] == b['fragment_groups'][1], a['groups'][:12] == b['groups'][:12])")
ok $([ "$r2" = "True True True" ]; echo $?) "d@v2's record reuses d@v1's full fragment and shard groups ($r2)"
f5=$($PY -c "import json; r = json.load(open('$S/datasets/d/versions/v2.json')); print(r['fragments'][6]['sha256'])")
rm "$F/$f5.json"
check "d@v2's new last fragment rebuilt from parity" bash -c "$M repair d@v2 | grep -q 'rebuilt d@v2 fragment 6 (rows 48..49)'"
check "d@v2 verifies" $M verify d@v2

# upgrade of a protected format-1 version carries its protection.
check "put p in format 1 and protect it 4+2" bash -c "MATORAGE_MANIFEST_FORMAT=1 $M put p x=$WORK/x.npy --shard-rows 2 && $M protect p --parity 4+2"
$M get p@v1 x -o "$WORK/p.npy" > /dev/null 2>&1
npar=$(ls "$S/datasets/p/parity" | wc -l)
out=$($M upgrade p@v1 2>&1)
ok $? "upgrade the protected p@v1 ($out)"
ok $(grep -q '"format":2' "$S/datasets/p/versions/v1.json" && grep -q '^{"format":2,' "$S/datasets/p/protect/v1.json"; echo $?) "p@v1 is a format-2 root with a format-2 record"
npar2=$(ls "$S/datasets/p/parity" | wc -l)
ok $([ "$npar2" -eq $((npar + 4)) ]; echo $?) "only the fragments' parity was added: 2 groups of 2 ($npar -> $npar2)"
check "p@v1 verifies, its protection sound" bash -c "$M verify p@v1 | grep -q 'p@v1: sound'"
pf=$(ls "$S/datasets/p/fragments" | head -1)
rm "$S/datasets/p/fragments/$pf"
check "a fragment of the upgraded version rebuilt from parity" $M repair p@v1
check "p@v1 reads the same rows" bash -c "$M get p@v1 x -o $WORK/o.npy && cmp $WORK/p.npy $WORK/o.npy"
check "a second upgrade changes nothing" bash -c "$M upgrade p@v1 | grep -q 'already manifest format 2'"
check "put q in format 1, protect it, damage its record" bash -c "MATORAGE_MANIFEST_FORMAT=1 $M put q x=$WORK/x.npy --shard-rows 2 && $M protect q --parity 2+1 && sed -i 's/\"k\":2/\"k\":3/' $S/datasets/q/protect/v1.json"
fails "upgrade of a version whose record is damaged is refused" 1 "q@v1 is protected, but .*nothing was upgraded \(matorage repair q@v1" $M upgrade q@v1
ok $(grep -q '"format":1' "$S/datasets/q/versions/v1.json"; echo $?) "the refused version is still format 1"
done_testing
