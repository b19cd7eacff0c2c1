#!/bin/bash
# put-get.sh — put and full get of a float32 dataset through matorage vs h5py+hdf5plugin writing/reading the same HDF5 layout, same zstd level, same run.
# Usage: bench/put-get.sh [BUILD_DIR] [GIB]   (defaults: build/bench, 1)
# h5py needs a zstd filter plugin and Debian 12 ships none, so it uses the one
# built here (plugins/.libs): the same filter id and level, plain zstd frames.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
export HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
GIB=${2:-1}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench}
LEVEL=3
COLS=1024
ROWS=$((GIB * 1024 * 1024 * 1024 / (COLS * 4)))
CHUNK_ROWS=$(((1024 * 1024) / (COLS * 4)))
rm -rf "$DIR"
mkdir -p "$DIR"
export MATORAGE_STORE="file://$DIR/store"

echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m)"
echo "# data: $ROWS x $COLS float32 ($GIB GiB), zstd level $LEVEL, chunks of $CHUNK_ROWS rows (1 MiB)"
$PY "$here/make-data.py" "$DIR/x.npy" "$ROWS" "$COLS"
sync # the input's own writeback must not land on the first contender
cat "$DIR/x.npy" > /dev/null # warm the page cache for both contenders

t() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
mb() { echo "scale=1; $GIB * 1024 / $1" | bc; }

put=$(t "$M" put bench x="$DIR/x.npy" --level $LEVEL)
h5put=$(t $PY - "$DIR/x.npy" "$DIR/h5py.h5" $LEVEL $CHUNK_ROWS <<'PYEOF'
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
)
sync
get=$(t "$M" get bench x -o "$DIR/out.npy")
h5get=$(t $PY - "$DIR/h5py.h5" "$DIR/h5out.npy" <<'PYEOF'
import sys
import h5py, hdf5plugin, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    np.save(sys.argv[2], f["x"][...])
PYEOF
)
cmp "$DIR/x.npy" "$DIR/out.npy" >/dev/null 2>&1 || $PY -c "
import numpy as np, sys
a, b = np.load('$DIR/x.npy', mmap_mode='r'), np.load('$DIR/out.npy', mmap_mode='r')
sys.exit(0 if np.array_equal(a, b) else 'matorage get returned different values')"
# The compression floor: the zstd command on the whole file, every core, no HDF5, no hashing.
zc=$(t zstd -q -$LEVEL -T0 -f "$DIR/x.npy" -o "$DIR/x.npy.zst")
zd=$(t zstd -q -d -T0 -f "$DIR/x.npy.zst" -o "$DIR/x.zstd-out")
stored=$(du -sb "$DIR/store" | cut -f1)
h5size=$(stat -c %s "$DIR/h5py.h5")

printf '| step | matorage s | MB/s | h5py s | MB/s | ratio (h5py time / matorage time) |\n|---|---|---|---|---|---|\n'
printf '| put | %.2f | %s | %.2f | %s | %.2fx |\n' "$put" "$(mb $put)" "$h5put" "$(mb $h5put)" "$(echo "$h5put / $put" | bc -l)"
printf '| get | %.2f | %s | %.2f | %s | %.2fx |\n' "$get" "$(mb $get)" "$h5get" "$(mb $h5get)" "$(echo "$h5get / $get" | bc -l)"
printf '| (zstd -%s -T0 / zstd -d, whole file) | %.2f / %.2f | %s / %s | | | |\n' "$LEVEL" "$zc" "$zd" "$(mb $zc)" "$(mb $zd)"
echo "# stored: matorage $stored bytes, h5py $h5size bytes"
rm -rf "$DIR"
