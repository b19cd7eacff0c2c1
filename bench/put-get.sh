#!/bin/bash
# put-get.sh — put and full get of a float32 dataset through matorage vs h5py writing/reading the same HDF5 layout, and vs the limits, same zstd level, same runs.
# Usage: bench/put-get.sh [BUILD_DIR] [GIB] [RUNS]   (defaults: build/bench, 1, 5)
# h5py needs a zstd filter plugin and Debian 12 ships none, so it uses the one
# built here (plugins/.libs): the same filter id and level, plain zstd frames.
# The limits: for put, `zstd -T0` of the same file then sha256 of its output and an fsync
# (matorage compresses, hashes and makes durable); for get, zstd decompression of the very
# chunk frames matorage stored, on every core, into memory (bench/loader-baselines.py limit).
# Runs alternate between contenders; each is reported as the median and min–max of RUNS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
export HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
GIB=${2:-1}
RUNS=${3:-5}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench}
LEVEL=3
COLS=1024
ROWS=$((GIB * 1024 * 1024 * 1024 / (COLS * 4)))
CHUNK_ROWS=$(((1024 * 1024) / (COLS * 4)))
rm -rf "$DIR"
mkdir -p "$DIR"
export MATORAGE_CATALOG=$DIR/catalog.db # the user's catalog is left alone
trap 'rm -rf "$DIR"' EXIT
export MATORAGE_STORE="file://$DIR/store"

echo "# command: bench/put-get.sh $*"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# data: $ROWS x $COLS float32 ($GIB GiB), zstd level $LEVEL, chunks of $CHUNK_ROWS rows (1 MiB)"
$PY "$here/make-data.py" "$DIR/x.npy" "$ROWS" "$COLS"
sync # the input's own writeback must not land on the first contender
cat "$DIR/x.npy" > /dev/null # warm the page cache for every contender

cat > "$DIR/h5put.py" <<'PYEOF'
import os, sys
import h5py, hdf5plugin, numpy as np
src, dst, level, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a = np.load(src, mmap_mode="r")
with h5py.File(dst, "w") as f:
    d = f.create_dataset("x", shape=a.shape, dtype=a.dtype, chunks=(chunk, a.shape[1]),
                         **hdf5plugin.Zstd(clevel=level))
    step = chunk * 64
    for i in range(0, a.shape[0], step):
        d[i:i + step] = a[i:i + step]
# matorage's put returns only once its shards are on disk; make h5py's
# result as durable so both pay for the same writes.
fd = os.open(dst, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
PYEOF
# The output file alone: the same 1 GiB .npy written from memory and fsynced, as every
# get must (matorage's get returns once its output is on disk).
cat > "$DIR/npwrite.py" <<'PYEOF'
import os, sys, time
import numpy as np
a = np.load(sys.argv[1])
a[...] = a  # every page resident before the timer
t = time.perf_counter()
with open(sys.argv[2], "wb") as f:
    np.save(f, a)
    f.flush()
    os.fsync(f.fileno())
print(f"{time.perf_counter() - t:.3f}")
PYEOF
cat > "$DIR/h5get.py" <<'PYEOF'
import os, sys
import h5py, hdf5plugin, numpy as np
with h5py.File(sys.argv[1], "r") as f, open(sys.argv[2], "wb") as out:
    np.save(out, f["x"][...])
    out.flush()
    os.fsync(out.fileno())  # as durable as matorage's output
PYEOF

t() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
zput() { zstd -q -$LEVEL -T0 -f "$DIR/x.npy" -o "$DIR/x.npy.zst" && sha256sum "$DIR/x.npy.zst" && sync "$DIR/x.npy.zst"; }
res=$DIR/results
for r in $(seq "$RUNS"); do
	rm -rf "$DIR/store" "$DIR"/h5py.h5 "$DIR/x.npy.zst"
	sync
	echo "put matorage $(t "$M" put bench x="$DIR/x.npy" --level $LEVEL)" >> "$res"
	echo "put h5py $(t $PY "$DIR/h5put.py" "$DIR/x.npy" "$DIR/h5py.h5" $LEVEL $CHUNK_ROWS)" >> "$res"
	echo "put limit $(t zput)" >> "$res"
done
# The gets read what the last puts stored, all puts done: a get between two rounds of
# puts competed with their write-back.  Every output is removed and synced before each get.
sync
clean() { rm -f "$DIR"/*out.npy; sync; }
for r in $(seq "$RUNS"); do
	clean
	echo "get matorage $(t "$M" get bench x -o "$DIR/out.npy")" >> "$res"
	clean
	echo "get h5py $(t $PY "$DIR/h5get.py" "$DIR/h5py.h5" "$DIR/h5out.npy")" >> "$res"
	clean
	echo "get limit $($PY "$here/loader-baselines.py" limit "$DIR/store" bench x 1 1 1 "$(nproc)" | cut -d' ' -f3)" >> "$res"
	echo "get write $($PY "$DIR/npwrite.py" "$DIR/x.npy" "$DIR/wout.npy")" >> "$res"
done
clean
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
"$M" get bench x -o "$DIR/out.npy"
cmp "$DIR/x.npy" "$DIR/out.npy" >/dev/null 2>&1 || $PY -c "
import numpy as np, sys
a, b = np.load('$DIR/x.npy', mmap_mode='r'), np.load('$DIR/out.npy', mmap_mode='r')
sys.exit(0 if np.array_equal(a, b) else 'matorage get returned different values')"
echo "# stored: matorage $(du -sb "$DIR/store" | cut -f1) bytes, h5py $(stat -c %s "$DIR/h5py.h5") bytes, zstd -T0 $(stat -c %s "$DIR/x.npy.zst") bytes"
$PY - "$res" "$GIB" "$RUNS" <<'PYEOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    step, who, secs = line.split()
    runs.setdefault((step, who), []).append(float(secs))
mib = float(sys.argv[2]) * 1024
label = {("put", "limit"): "limit: zstd -3 -T0 of the file + sha256sum + fsync",
         ("get", "limit"): "limit: zstd decode of the stored frames, all cores, in memory",
         ("get", "write"): "floor: np.save of the same array from memory + fsync (the output file alone)"}
print(f"| step | contender | s, median (min–max) of {sys.argv[3]} | MB/s (median) | matorage's time / this |")
print("|---|---|---|---|---|")
for step in ("put", "get"):
    m = statistics.median(runs[(step, "matorage")])
    for who in ("matorage", "h5py", "limit", "write"):
        if (step, who) not in runs:
            continue
        v = runs[(step, who)]
        med = statistics.median(v)
        print(f"| {step} | {label.get((step, who), who)} | {med:.2f} ({min(v):.2f}–{max(v):.2f}) | "
              f"{mib / med:,.0f} | {m / med:.2f} |")
for (step, who), v in runs.items():
    print(f"# {step} {who}, run by run: " + " ".join(f"{x:.2f}" for x in v))
PYEOF
