#!/bin/bash
# loader-heal.sh — a loader epoch over a protected version with one lost shard per parity group, against the same epoch over the intact version.
# Usage: bench/loader-heal.sh [BUILD_DIR] [RUNS]   (default build/bench, 5; build with CFLAGS="-O2 -g")
# The data of bench/loader.sh (small rows: Fashion-MNIST x3, 180,000 rows of 784 B + a label;
# large rows: 3,000 rows of 150 KB float32) in shards of 16 MiB, protected 4+2. Two copies of
# the store; in one the first shard of every group is deleted. Both are read with a warm page
# cache by bench/loader-epoch (one shuffled epoch, 256 MiB budget, default threads),
# alternating, RUNS times each: medians and spread of the epoch times, and their ratio.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
RUNS=${2:-5}
M=$BUILD/src/cli/matorage
EPOCH=$BUILD/bench/loader-epoch
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-heal}
BUDGET=$((256 << 20))
K=4 PAR=2
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
echo "# machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); budget $((BUDGET >> 20)) MiB; $K+$PAR; $RUNS runs"

"$PY" - "$DIR" <<'PYEOF'
import gzip, os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
fm = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
if os.path.exists(fm):
    with gzip.open(fm) as f:
        img = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(fm.replace("images-idx3", "labels-idx1")) as f:
        lab = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    img, lab = np.concatenate([img] * 3), np.concatenate([lab] * 3)
else:  # shapes on a dark background, as image data looks to a compressor
    img = (rng.random((180000, 28, 28)) < 0.3).astype(np.uint8) * rng.integers(0, 255, (180000, 1, 1), dtype=np.uint8)
    lab = rng.integers(0, 10, 180000).astype(np.int64)
np.save(f"{d}/image.npy", img)
np.save(f"{d}/label.npy", lab)
big = np.lib.format.open_memmap(f"{d}/big.npy", mode="w+", dtype=np.float32, shape=(3000, 38400))
for i in range(0, 3000, 100):
    big[i:i + 100] = np.round(rng.standard_normal((100, 38400)), 3)
big.flush()
PYEOF
S=$DIR/store
"$M" -q --store "$S" put small image="$DIR/image.npy" label="$DIR/label.npy" --shard-size 16M > /dev/null
"$M" -q --store "$S" put large x="$DIR/big.npy" --shard-size 16M > /dev/null
rm "$DIR"/*.npy
for ds in small large; do
	"$M" -q --store "$S" protect $ds --parity $K+$PAR > /dev/null
done
cp -r "$S" "$DIR/lost"
# The first shard of every group of K: one lost member per group.
for ds in small large; do
	"$M" --store "$S" info $ds --json | "$PY" -c "
import json, sys
m = json.load(sys.stdin)
for i in range(0, len(m['shards']), $K):
    print(m['shards'][i]['sha256'])" | while read -r sha; do
		rm "$DIR/lost/datasets/$ds/shards/$sha.h5"
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s–%s", lo, hi }'; }
printf '| data | shards (groups) | lost shards | epoch, intact (s) | epoch, one lost shard per group (s) | ratio of medians | healed chunks | bytes read to heal |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for spec in "small image,label 256" "large x 32"; do
	read -r ds attrs batch <<< "$spec"
	cat "$S/datasets/$ds/shards/"* "$S/datasets/$ds/parity/"* > /dev/null
	: > "$DIR/t-intact"
	: > "$DIR/t-lost"
	for _ in $(seq "$RUNS"); do
		"$EPOCH" "$S" $ds $attrs $batch 1 $BUDGET | awk '{ print $3 }' >> "$DIR/t-intact"
		"$EPOCH" "$DIR/lost" $ds $attrs $batch 1 $BUDGET 2> "$DIR/healed" |
			awk '{ print $3 }' >> "$DIR/t-lost"
	done
	n=$(ls "$S/datasets/$ds/shards" | wc -l)
	lost=$(( (n + K - 1) / K ))
	a=$(median < "$DIR/t-intact")
	b=$(median < "$DIR/t-lost")
	read -r chunks bytes < <(sed -n 's/^healed \([0-9]*\) chunks, [0-9]* indexes, \([0-9]*\) bytes read$/\1 \2/p' \
		"$DIR/healed") || true
	printf '| %s | %d (%d) | %d | %s (%s) | %s (%s) | %.2fx | %s | %s |\n' "$ds" "$n" "$lost" "$lost" \
		"$a" "$(spread < "$DIR/t-intact")" "$b" "$(spread < "$DIR/t-lost")" \
		"$(echo "$b / $a" | bc -l)" "${chunks:-0}" "${bytes:-0}"
done
