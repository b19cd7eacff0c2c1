#!/bin/bash
# manifest-v2.sh — format 2 manifests (a root and fragments): put, append sharing fragments, reads equal to format 1, gc keeps fragments, copies carry them, damage named.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
S=$WORK/store
F=$S/datasets/d/fragments
# 8 shards a fragment, so 41 one-row shards make 6 fragments.
export MATORAGE_FRAGMENT_SHARDS=8
$PY -c "
import numpy as n
n.save('$WORK/x.npy', (n.arange(41 * 3, dtype='int32') * 7).reshape(41, 3))
n.save('$WORK/y.npy', n.full((1, 3), -5, dtype='int32'))"

check "put of 41 one-row shards" $M put d x="$WORK/x.npy" --shard-rows 1
check "the same as format 1 (asked for)" env MATORAGE_MANIFEST_FORMAT=1 $M put f1 x="$WORK/x.npy" --shard-rows 1
ok $(grep -q '"format":2' "$S/datasets/d/versions/v1.json" && ! grep -q '"shards":' "$S/datasets/d/versions/v1.json"; echo $?) "more shards than a fragment holds: format 2, no shard list in the root"
ok $(grep -q '"format":1' "$S/datasets/f1/versions/v1.json"; echo $?) "MATORAGE_MANIFEST_FORMAT=1 writes format 1"
n=$(ls "$F" | wc -l)
ok $([ "$n" -eq 6 ]; echo $?) "6 fragments of at most 8 shards stored (got $n)"
check "a small version stays format 1" bash -c "$M put small x=$WORK/y.npy && grep -q '\"format\":1' $S/datasets/small/versions/v1.json"

# An append of one row: one shard, one fragment (the short last one again), the root.
check "append one row" $M put d x="$WORK/y.npy" --append
check "append one row (format 1)" $M put f1 x="$WORK/y.npy" --append
ok $(grep -q '"format":2' "$S/datasets/d/versions/v2.json"; echo $?) "an append to a format-2 version is format 2"
n2=$(ls "$F" | wc -l)
ok $([ "$n2" -eq 7 ]; echo $?) "the append wrote one fragment, reused the 5 full ones (now $n2)"
v1f=$(grep -o '"sha256":"[0-9a-f]*"' "$S/datasets/d/versions/v1.json" | head -5)
v2f=$(grep -o '"sha256":"[0-9a-f]*"' "$S/datasets/d/versions/v2.json" | head -5)
ok $([ "$v1f" = "$v2f" ]; echo $?) "v2's first five fragments are v1's"
added=$(find "$S/datasets/d" -type f -newer "$S/datasets/d/versions/v1.json" -printf '%s\n' | awk '{s += $1} END {print s}')
echo "# bytes added to datasets/d by the one-row append: $added"
root=$(stat -c %s "$S/datasets/d/versions/v2.json")
ok $([ "$root" -lt 2500 ]; echo $?) "the root of 42 shards is small ($root bytes)"

# Reads equal format 1's.
for v in v1 v2; do
	check "get d@$v equals f1@$v" bash -c "$M get d@$v x -o $WORK/a.npy && $M get f1@$v x -o $WORK/b.npy && cmp $WORK/a.npy $WORK/b.npy"
done
check "get --rows 17:23 equals format 1's" bash -c "$M get d x --rows 17:23 -o $WORK/a.npy && $M get f1 x --rows 17:23 -o $WORK/b.npy && cmp $WORK/a.npy $WORK/b.npy"
check "verify d@v2" $M verify d@v2
check "diff d@v1 d@v2 equals the format-1 diff" bash -c "[ \"\$($M diff d@v1 d@v2 | sed 's/\\<d@/X@/g')\" = \"\$($M diff f1@v1 f1@v2 | sed 's/\\<f1@/X@/g')\" ]"
check "info d@v2 says 42 shards" bash -c "$M info d@v2 | grep -Eq 'shards: *42'"

# gc keeps what the roots name; a version removed leaves its own fragment to gc.
check "gc --delete --grace 0" $M gc d --delete --grace 0
n3=$(ls "$F" | wc -l)
ok $([ "$n3" -eq 7 ]; echo $?) "gc kept every named fragment ($n3)"
check "both versions verify after gc" bash -c "$M verify d@v1 && $M verify d@v2"

# Copies carry fragments; the copy reads the same.
B=$WORK/b
check "push d to another store" $M push d "file://$B"
check "the copy's v2 verifies and reads the same" bash -c "$M --store file://$B verify d@v2 && $M --store file://$B get d@v2 x -o $WORK/c.npy && $M get d@v2 x -o $WORK/a.npy && cmp $WORK/a.npy $WORK/c.npy"
ok $([ "$(ls "$B/datasets/d/fragments" | wc -l)" -eq 7 ]; echo $?) "the copy holds the 7 fragments"

# Damage names the version, the fragment and its rows; never other rows.
frag=$(grep -o '"first_row":8,"rows":8,"nshards":8,"shard_bytes":[0-9]*,"sha256":"[0-9a-f]*"' "$S/datasets/d/versions/v2.json" | grep -o '[0-9a-f]\{64\}')
cp "$F/$frag.json" "$WORK/keep.json"
other=$(ls "$F" | grep -v "$frag" | head -1)
sed -i '0,/"rows":1,/s//"rows":2,/' "$F/$frag.json"
fails "an edited fragment" 1 "d@v2: fragment datasets/d/fragments/$frag.json \(rows 8 to 15.*edited" $M get d@v2 x -o "$WORK/a.npy"
cp "$F/$other" "$F/$frag.json"
fails "a swapped fragment" 1 "d@v2: fragment datasets/d/fragments/$frag.json \(rows 8 to 15.*swapped" $M verify d@v2
head -c 100 "$WORK/keep.json" > "$F/$frag.json"
fails "a truncated fragment" 1 "d@v2: fragment .*$frag.json \(rows 8 to 15.*truncated" $M verify d@v2
rm "$F/$frag.json"
fails "a missing fragment" 1 "d@v2: fragment .*$frag.json \(rows 8 to 15.*missing" $M get d@v2 x -o "$WORK/a.npy"
# info and get --rows read only the root and the fragments of their rows.
check "info reads the root alone (the missing fragment unread)" bash -c "$M info d@v2 | grep -Eq 'shards: *42'"
check "get --rows of other fragments' rows reads the same as format 1" bash -c "$M get d@v2 x --rows 30:35 -o $WORK/a.npy && $M get f1@v2 x --rows 30:35 -o $WORK/b.npy && cmp $WORK/a.npy $WORK/b.npy"
fails "info --shards with the fragment lost fails naming it" 1 "d@v2: fragment datasets/d/fragments/$frag.json \(rows 8 to 15.*missing" $M info d@v2 --shards
fails "get --rows 10:12 needs it" 1 "d@v2: fragment .*$frag.json \(rows 8 to 15.*missing" $M get d@v2 x --rows 10:12 -o "$WORK/a.npy"
fails "gc refuses while a fragment is missing" 1 "gc refused: .*missing" $M gc d --delete --grace 0
check "the fragment back from the copy: sound again" bash -c "cp $B/datasets/d/fragments/$frag.json $F/ && $M verify d@v2"

check "rm d@v2, then gc" bash -c "$M rm d@v2 && $M gc d --delete --grace 0"
n4=$(ls "$F" | wc -l)
ok $([ "$n4" -eq 6 ]; echo $?) "gc deleted only v2's own fragment ($n4 left)"
check "d@v1 still verifies" $M verify d@v1

# An append reads the parent's root and its last fragment: the others are
# named again by their hashes, unread.  With them moved away it still
# commits (the catalog, which would read every shard, is left out).
full=$(grep -o '"nshards":8,"shard_bytes":[0-9]*,"sha256":"[0-9a-f]*"' "$S/datasets/d/versions/v1.json" | grep -o '[0-9a-f]\{64\}')
mkdir "$WORK/away"
for h in $full; do mv "$F/$h.json" "$WORK/away/"; done
ok $([ "$(ls "$WORK/away" | wc -l)" -eq 5 ]; echo $?) "d@v1's 5 full fragments moved away"
check "append one row without them" env MATORAGE_CATALOG=/dev/null/none $M put d x="$WORK/y.npy" --append
mv "$WORK/away/"*.json "$F/"
check "the append (d@v3) verifies and reads as format 1's f1@v2" bash -c "$M verify d@v3 && $M get d@v3 x -o $WORK/a.npy && $M get f1@v2 x -o $WORK/b.npy && cmp $WORK/a.npy $WORK/b.npy"
v3f=$(grep -o '"sha256":"[0-9a-f]*"' "$S/datasets/d/versions/v3.json" | head -5 | grep -o '[0-9a-f]\{64\}')
ok $([ "$v3f" = "$full" ]; echo $?) "d@v3 names d@v1's 5 full fragments again"
if command -v strace > /dev/null; then
	strace -f -qq -e trace=read,pread64 -y -o "$WORK/trace" env MATORAGE_CATALOG=/dev/null/none $M put d x="$WORK/y.npy" --append > /dev/null 2>&1
	fr=$(grep -F "<$F/" "$WORK/trace" | sed -n 's/.*) *= *\([0-9][0-9]*\)$/\1/p' | awk '{ s += $1 } END { print s + 0 }')
	last=$(grep -o '"bytes":[0-9]*\(,"layout":[][0-9,]*\)\?}\]' "$S/datasets/d/versions/v3.json" | grep -o '"bytes":[0-9]*' | grep -o '[0-9][0-9]*')
	ok $([ "$fr" -eq "$last" ]; echo $?) "the next append read $fr bytes of fragments: d@v3's last one ($last bytes)"
else
	ok 0 "# SKIP no strace: the bytes an append reads are not counted"
fi

# A version naming one shard object many times (60 equal rows, a shard
# each): push checks it and sends it once, and the copy verifies.
$PY -c "import numpy as n; n.save('$WORK/z.npy', n.zeros((60, 3), dtype='int32'))"
check "put of 60 equal one-row shards" $M put rep x="$WORK/z.npy" --shard-rows 1
ok $([ "$(ls "$S/datasets/rep/shards" | wc -l)" -eq 1 ]; echo $?) "60 shard entries, one shard object"
if command -v strace > /dev/null; then
	strace -f -qq -e trace=openat -o "$WORK/trace" $M push rep "file://$WORK/r2" > /dev/null 2>&1
	opens=$(grep -cF "$S/datasets/rep/shards/" "$WORK/trace")
	ok $([ "$opens" -le 4 ]; echo $?) "push opened the repeated shard $opens times (verify once, the copy once), not once an entry"
else
	check "push rep" $M push rep "file://$WORK/r2"
fi
check "the pushed version verifies and reads the same" bash -c "$M --store file://$WORK/r2 verify rep && $M --store file://$WORK/r2 get rep x -o $WORK/c.npy && $M get rep x -o $WORK/a.npy && cmp $WORK/a.npy $WORK/c.npy"
ok $([ "$(ls "$WORK/r2/datasets/rep/shards" | wc -l)" -eq 1 ]; echo $?) "the copy holds the one shard object"

# diff reads only the fragments two roots do not share, and prints what a
# diff of format-1 versions of the same rows prints: rep (format 2) and
# rep1 (format 1) get the same appends: a repeat of the object every shard
# names (z1), a new object (w), and w again once a fragment both share
# holds it (rep@v6 against rep@v5: its repeat is found in a shared one).
check "rep1: the same 60 rows in format 1" env MATORAGE_MANIFEST_FORMAT=1 $M put rep1 x="$WORK/z.npy" --shard-rows 1
$PY -c "import numpy as n; n.save('$WORK/z1.npy', n.zeros((1, 3), dtype='int32')); n.save('$WORK/w.npy', n.ones((1, 3), dtype='int32'))"
# diff_same ARGS...: `matorage diff ARGS` of rep, and of rep1 in its place, print the same.
diff_same() {
	local a b
	# Shard objects hold their dataset's name: their sha256s differ.
	a=$($M diff "$@" 2>&1 | sed 's/\<rep@/X@/g; s/[0-9a-f]\{64\}/SHA/')
	b=$($M diff $(sed 's/\<rep\>/rep1/g' <<< "$*") 2>&1 | sed 's/\<rep1@/X@/g; s/[0-9a-f]\{64\}/SHA/')
	[ "$a" = "$b" ] && [ -n "$a" ] || { printf '# rep:\n%s\n# rep1:\n%s\n' "$a" "$b" | head -20 | sed '2,$s/^/# /' >&2; return 1; }
}
v=1
for f in z1 w z1 w w; do
	v=$((v + 1))
	check "append $f to rep and rep1 (v$v)" bash -c "MATORAGE_CATALOG=/dev/null/none $M put rep x=$WORK/$f.npy --append 2>/dev/null && MATORAGE_CATALOG=/dev/null/none MATORAGE_MANIFEST_FORMAT=1 $M put rep1 x=$WORK/$f.npy --append 2>/dev/null"
	ok $(diff_same rep; echo $?) "diff rep@v$v (against its parent) as format 1's"
	ok $(diff_same rep@v1 rep; echo $?) "diff rep@v1 rep@v$v as format 1's"
	ok $(diff_same rep rep@v1; echo $?) "diff rep@v$v rep@v1 as format 1's"
done
ok $(grep -q '"format":2' "$S/datasets/rep/versions/v6.json" && grep -q '"format":1' "$S/datasets/rep1/versions/v6.json"; echo $?) "rep@v6 is format 2, rep1@v6 format 1"
ok $($M diff rep | grep -q "^new  *1 shard .*(1 repeats a shard already held)$"; echo $?) "rep@v6's w repeats one a shared fragment holds"
ok $(diff_same rep@v6 rep@v2 --shards; echo $?) "diff --shards as format 1's"
ok $(diff_same rep@v6 rep@v6; echo $?) "a version against itself as format 1's (the same rows)"
# With the 7 full fragments every version shares moved away, a diff that
# needs none of them still runs; one that must search them names the one
# missing.
mkdir "$WORK/away2"
for h in $(grep -o '"nshards":8,"shard_bytes":[0-9]*,"sha256":"[0-9a-f]*"' "$S/datasets/rep/versions/v1.json" | grep -o '[0-9a-f]\{64\}'); do
	mv "$S/datasets/rep/fragments/$h.json" "$WORK/away2/"
done
ok $([ "$(ls "$WORK/away2" | wc -l)" -eq 7 ]; echo $?) "rep@v1's 7 full fragments moved away"
ok $(diff_same rep@v2; echo $?) "diff rep@v2 reads only the two last fragments: as format 1's"
fails "diff rep@v3 (a new object: the shared fragments searched) names a missing one" 1 "rep@v3: fragment datasets/rep/fragments/.*missing" $M diff rep@v3
mv "$WORK/away2/"*.json "$S/datasets/rep/fragments/"
ok $(diff_same rep@v3; echo $?) "with them back, diff rep@v3 as format 1's"
done_testing
