#!/bin/bash
# store-escape.sh — the file store stays inside its root: gc deletes only names of its own form through no symbolic link, and a FIFO or link at an object's key is refused, never waited on.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
S="$WORK/store"
export MATORAGE_STORE="file://$S"
OUT="$WORK/outside"
mkdir -p "$OUT"

$T make "$WORK/x1.npy" float32 40x4 1
$T make "$WORK/x2.npy" float32 40x4 2
$T make "$WORK/x3.npy" float32 40x4 3
check "put a" $M put a x="$WORK/x1.npy"
check "put b" $M put b x="$WORK/x2.npy"

# (1) datasets/a/shards is a link to a shared directory holding b's shards and a foreign file.
echo precious > "$OUT/important.txt"
cp "$S"/datasets/b/shards/*.h5 "$OUT/"
bshard=$(basename "$(ls "$OUT"/*.h5)")
mv "$S/datasets/a/shards" "$WORK/a-shards"
ln -s "$OUT" "$S/datasets/a/shards"
$M gc a --delete --grace 0 > "$WORK/gc1.out" 2>&1
echo "# gc a through a linked shards dir: exit $?: $(tr '\n' ' ' < "$WORK/gc1.out")"
ok $([ -f "$OUT/important.txt" ] && [ -f "$OUT/$bshard" ]; echo $?) \
	"gc a --delete with datasets/a/shards a link out of the store deletes nothing there"
$M gc --delete --grace 0 > "$WORK/gc2.out" 2>&1
ok $([ -f "$OUT/important.txt" ] && [ -f "$OUT/$bshard" ]; echo $?) \
	"gc of every dataset deletes nothing through the link either"
rm "$S/datasets/a/shards"
mv "$WORK/a-shards" "$S/datasets/a/shards"

# (2) the dataset directory itself is a link.
mkdir -p "$WORK/elsewhere"
cp -r "$S/datasets/a" "$WORK/elsewhere/c"
ln -s "$WORK/elsewhere/c" "$S/datasets/c"
n_before=$(find "$WORK/elsewhere" -type f | wc -l)
$M gc c --delete --grace 0 > /dev/null 2>&1
$M gc --delete --grace 0 > /dev/null 2>&1
ok $([ "$(find "$WORK/elsewhere" -type f | wc -l)" -eq "$n_before" ]; echo $?) \
	"a dataset directory that is a link: nothing below it deleted ($n_before files)"
fails "reading a dataset whose directory is a link says so" 1 "symbolic link" $M cat c x
rm "$S/datasets/c"

# (3) one shard file is a link to a file outside; a foreign name sits among the shards.
echo "not a shard" > "$OUT/victim.h5"
sha_fake=$(printf '%064d' 0)
ln -s "$OUT/victim.h5" "$S/datasets/a/shards/$sha_fake.h5"
echo keep > "$S/datasets/a/shards/notes.txt"
echo keep > "$S/datasets/a/shards/ABCDEF.h5"
touch -d '2 days ago' "$S/datasets/a/shards/notes.txt" "$S/datasets/a/shards/ABCDEF.h5"
out=$($M gc a --grace 0 2>&1)
ok $(! grep -q "notes.txt\|ABCDEF\|$sha_fake" <<< "$out"; echo $?) \
	"gc lists no foreign name nor a link as a candidate: $(tr '\n' ' ' <<< "$out")"
$M gc a --delete --grace 0 > /dev/null 2>&1
ok $([ -f "$OUT/victim.h5" ] && [ -f "$S/datasets/a/shards/notes.txt" ] &&
	[ -f "$S/datasets/a/shards/ABCDEF.h5" ]; echo $?) \
	"gc --delete leaves the link's target and the foreign names"
rm -f "$S/datasets/a/shards/$sha_fake.h5"
# A linked shard is not read through either.
ashard=$(ls "$S"/datasets/a/shards/*.h5 | grep -v ABCDEF | head -1)
cp "$ashard" "$OUT/moved.h5"
mv "$ashard" "$WORK/saved.h5"
ln -s "$OUT/moved.h5" "$ashard"
fails "a shard that is a link is refused, naming the key" 1 "$(basename "$ashard").*symbolic link" \
	$M cat a x --rows 0:1
rm "$ashard"
mv "$WORK/saved.h5" "$ashard"
check "a reads again once the link is gone" $M cat a x --rows 0:1

# (4) normal gc still collects what it made: a removed version's shards.
check "put a@v2 with other rows" $M put a@v2 x="$WORK/x3.npy"
v2shard=$($M info a@v2 --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["shards"][0]["sha256"])' 2>/dev/null)
check "rm a@v2" $M rm a@v2
check "gc --delete" $M gc a --delete --grace 0
ok $([ -n "$v2shard" ] && [ ! -e "$S/datasets/a/shards/$v2shard.h5" ]; echo $?) \
	"gc still deletes the shard only a removed version used ($v2shard)"
check "a@v1 still reads" $M cat a x --rows 0:2

# (5) a FIFO at a shard's key or a manifest's key: every command gives a clear error in time.
check "put f" $M put f x="$WORK/x1.npy"
check "put f@v2 (appended)" $M put f x="$WORK/x2.npy" --append
DST="$WORK/dst"
fifo_cmds=(
	"verify f@v2"
	"get f@v2 x -o $WORK/o.npy"
	"cat f@v2 x --rows 40:42"
	"stats f@v2"
	"protect f@v2 --parity 2+1"
	"push f@v2 file://$DST"
	"repair f@v2 --dry-run"
	"diff f@v2 f@v1"
)
# run_all WHAT KEY: each command ends in time, without a signal, and fails naming KEY; a diff
# (which reads no shard) may also succeed.
run_all() {
	for c in "${fifo_cmds[@]}"; do
		# shellcheck disable=SC2086
		out=$(timeout 30 $M $c 2>&1)
		rc=$?
		good=1
		if [ $rc -eq 1 ] && grep -q "$2" <<< "$out"; then good=0; fi
		if [ $rc -eq 0 ] && [ "${c%% *}" = diff ] && [ "$2" != v2.json ]; then good=0; fi
		ok $good "$1: '$c' ends with a clear error (exit $rc): $(grep "$2" <<< "$out" | head -c 300)"
	done
}
fshard=$($M info f@v2 --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["shards"][-1]["sha256"])')
mv "$S/datasets/f/shards/$fshard.h5" "$WORK/fshard.h5"
mkfifo "$S/datasets/f/shards/$fshard.h5"
run_all "FIFO shard" "$fshard.h5"
rm "$S/datasets/f/shards/$fshard.h5"
mv "$WORK/fshard.h5" "$S/datasets/f/shards/$fshard.h5"
check "f reads again" $M verify f
mv "$S/datasets/f/versions/v2.json" "$WORK/v2.json"
mkfifo "$S/datasets/f/versions/v2.json"
run_all "FIFO manifest" "v2.json"
rm "$S/datasets/f/versions/v2.json"
mv "$WORK/v2.json" "$S/datasets/f/versions/v2.json"
check "f verifies again" $M verify f

done_testing
