#!/bin/bash
# loader.sh — one shuffled epoch through the loader vs h5py + numpy, a torch DataLoader and the decode limit, all doing the same work.
# Usage: bench/loader.sh [BUILD_DIR] [RUNS]   (defaults: build/bench, 5; build with CFLAGS="-O2 -g")
# Two datasets: small rows (784-byte uint8 images + int64 labels) and large rows (150 KB float32).
# Every contender reads the same shards (same chunks, same zstd level) with a warm page cache,
# over a WHOLE epoch, with the same windowed shuffle (units of WINDOW/2 rows shuffled, rows
# shuffled within windows of WINDOW rows), and its time includes opening the shards.
# See bench/loader-baselines.py for the baselines. Runs alternate between contenders;
# each is reported as the median and the min–max of RUNS epochs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
RUNS=${2:-5}
M=$BUILD/src/cli/matorage
EPOCH=$BUILD/bench/loader-epoch
export HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-loader}
BUDGET=$((256 << 20))
THREADS=$(nproc)
rm -rf "$DIR"
mkdir -p "$DIR"
export MATORAGE_CATALOG=$DIR/catalog.db # the user's catalog is left alone
trap 'rm -rf "$DIR"' EXIT
echo "# command: bench/loader.sh $*"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m); budget $((BUDGET >> 20)) MiB, $THREADS decode threads/workers for every contender"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

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
"$M" -q --store "$DIR/store" put small image="$DIR/image.npy" label="$DIR/label.npy" > /dev/null
"$M" -q --store "$DIR/store" put large x="$DIR/big.npy" > /dev/null
rm "$DIR"/*.npy
cat "$DIR"/store/datasets/*/shards/* > /dev/null

# The window the loader's budget gives (half the budget over the row's bytes), passed to all.
declare -A ATTRS=([small]=image,label [large]=x) BATCH=([small]=256 [large]=32) WINDOW=([small]=$((BUDGET / 2 / 792)) [large]=$((BUDGET / 2 / 153600)))
for ds in small large; do
	echo "# $ds: batch ${BATCH[$ds]}, window ${WINDOW[$ds]} rows, units of $((WINDOW[$ds] / 2)) rows"
done
res=$DIR/results
for r in $(seq "$RUNS"); do
	for ds in small large; do
		a=${ATTRS[$ds]} b=${BATCH[$ds]} w=${WINDOW[$ds]}
		echo "$ds loader $("$EPOCH" "$DIR/store" $ds $a $b 1 $BUDGET "$THREADS" "$w")" >> "$res"
		# The steady state of a training run: the third epoch of one process, its window
		# buffers faulted in by the two before (as the limit's buffer is), no open.
		echo "$ds loader3 $(LOADER_EPOCHS=3 "$EPOCH" "$DIR/store" $ds $a $b 1 $BUDGET "$THREADS" "$w" | awk '{ $5 = 0; print }')" >> "$res"
		for who in h5py torch limit; do
			echo "$ds $who $("$PY" "$here/loader-baselines.py" $who "$DIR/store" $ds $a $b "$w" 1 "$THREADS")" >> "$res"
		done
	done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" - "$res" "$RUNS" <<'PYEOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    ds, who, rows, nbytes, secs, *rss = line.split()
    # loader-epoch times its open apart ("rows bytes epoch rss open"): the sum, as for the others.
    secs = float(secs) + (float(rss[1]) if len(rss) > 1 else 0)
    runs.setdefault((ds, who), []).append((int(rows), int(nbytes), secs, rss))
label = {"loader": "matorage loader (C, %s)",
         "loader3": "matorage loader, 3rd epoch of one process (window buffers warm, no open)",
         "h5py": "h5py + numpy, same windowed shuffle",
         "torch": "torch IterableDataset, same shuffle, 2 DataLoader workers",
         "limit": "limit: zstd decode of the same frames, 2 threads, no shuffle/copy/check"}
print(f"| data | contender | epoch s, median (min–max) of {sys.argv[2]} | rows/s (median) | decoded MB/s (median) | loader's time / this |")
print("|---|---|---|---|---|---|")
for ds in ("small", "large"):
    lmed = statistics.median(s for _, _, s, _ in runs[(ds, "loader")])
    for who in ("loader", "loader3", "h5py", "torch", "limit"):
        v = runs[(ds, who)]
        secs = [s for _, _, s, _ in v]
        med = statistics.median(secs)
        rows, nbytes = v[0][0], v[0][1]
        name = label[who]
        if who == "loader":
            name %= "RSS peak %d MiB" % (max(int(x[3][0]) for x in v) // 1024)
        rps = f"{rows / med:,.0f}" if rows else "-"
        print(f"| {ds} | {name} | {med:.3f} ({min(secs):.3f}–{max(secs):.3f}) | {rps} | "
              f"{nbytes / 1048576 / med:,.1f} | {lmed / med:.2f} |")
PYEOF
