#!/bin/bash
# catalog-write.sh — a command that writes a version records that version alone in the catalog: the dataset's other manifests are not read again, whatever changed of them.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
$T make "$WORK/x.npy" float32 6x2 1

check "put d@v1" $M put d x="$WORK/x.npy"
check "append v2" $M put d x="$WORK/x.npy" --append
check "append v3" $M put d x="$WORK/x.npy" --append
out=$($M sync)
ok $(grep -q "1 dataset(s), 3 version(s): 0 read, 3 unchanged" <<< "$out"; echo $?) \
	"each write was recorded as listed: $out"
# v1's manifest listed as changed (a new time): a sync of the dataset would read it.
touch -d '2001-01-01' "$WORK/store/datasets/d/versions/v1.json"
$M put d x="$WORK/x.npy" --append > "$WORK/out" 2> "$WORK/err"
ok $([ $? -eq 0 ] && grep -q "^d@v4$" "$WORK/out" && [ ! -s "$WORK/err" ]; echo $?) \
	"append v4, quietly: $(cat "$WORK/err")"
out=$($M search d)
ok $(grep -q "d@v4" <<< "$out"; echo $?) "v4 is in the catalog at once"
out=$($M sync)
ok $(grep -q "1 dataset(s), 4 version(s): 1 read, 3 unchanged" <<< "$out"; echo $?) \
	"the next sync reads v1 alone: the write read neither v1 nor any other ($out)"
# A damaged older manifest does not trouble a write either.
echo garbage >> "$WORK/store/datasets/d/versions/v2.json"
$M put d x="$WORK/x.npy" --append > "$WORK/out" 2> "$WORK/err"
ok $([ $? -eq 0 ] && grep -q "^d@v5$" "$WORK/out" && [ ! -s "$WORK/err" ]; echo $?) \
	"append v5 beside a damaged v2: no catalog warning ($(cat "$WORK/err"))"
done_testing
