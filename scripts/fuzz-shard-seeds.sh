#!/bin/bash
# fuzz-shard-seeds.sh — write fuzz/corpus/shard/: small shards from the writer (several dtypes, a ragged one) and hostile ones from tests/e2e/craft-shard.
# Usage: scripts/fuzz-shard-seeds.sh MATORAGE CRAFT-SHARD [OUT]  (the binaries of a build; OUT defaults to fuzz/corpus/shard)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
M=$1 CRAFT=$2 OUT=${3:-$ROOT/fuzz/corpus/shard}
T="/usr/bin/python3 $ROOT/tests/e2e/npy_tool.py"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT"

# ver STORE DATASET: the dataset's one version.
ver() { ls "$W/$1/datasets/$2/versions" | sed -n 's/\.json$//p' | head -1; }
# NAME ATTR=DTYPE:SHAPE...: one version of small arrays (seed 1), shard 0 as an input.
put() {
	local name=$1 args=() a v
	shift
	for a in "$@"; do
		v=${a#*=}
		$T make "$W/${a%%=*}.npy" "${v%%:*}" "${v#*:}" 1
		args+=("${a%%=*}=$W/${a%%=*}.npy")
	done
	$M --store "$W/s" put "$name" "${args[@]}" --chunk-size 256 > /dev/null
	$CRAFT --fuzz-input "$W/s" "$name" "$(ver s "$name")" "$OUT/$name"
}
put int64-2chunks x=int64:100
put float32-3 x=float32:40x3
put uint8-bool-2 a=uint8:64 b=bool:64x2
put float16-int16 h=float16:30x2x2 i=int16:30

# A ragged attribute beside a fixed one, as crafted.sh makes it.
/usr/bin/python3 -c '
import json
for i in range(40):
    print(json.dumps({"t": [(i * 7 + k) % 1000 for k in range(1 + i % 5)], "y": i}))' > "$W/r.jsonl"
$M --store "$W/s" ingest ragged --attr t=int32:* --attr y=int64 < "$W/r.jsonl" > /dev/null

# Hostile but self-consistent: each case of craft-shard on a fresh copy.
for c in wrap rows-2p62 frame-1g frame-size frame-short count-over chunks-overlap offsets-start-50 offsets-decrease; do
	rm -rf "$W/c"
	cp -r "$W/s" "$W/c"
	d=int64-2chunks
	case $c in offsets-*) d=ragged ;; esac
	$CRAFT "$W/c" $d "$(ver c $d)" $c > /dev/null
	# A manifest that cannot hold the case (rows past what the bytes can hold) is no input.
	$CRAFT --fuzz-input "$W/c" $d "$(ver c $d)" "$OUT/crafted-$c" || echo "skipped $c"
done
$CRAFT --fuzz-input "$W/s" ragged "$(ver s ragged)" "$OUT/ragged-int32"
ls -l "$OUT"
