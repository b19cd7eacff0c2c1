#!/bin/bash
# lua-fashion.sh — the Fashion-MNIST recipe (lua/examples/fashion_mnist.lua) vs a numpy + h5py + hdf5plugin script writing the same arrays, same zstd level, same run.
# Usage: bench/lua-fashion.sh [BUILD_DIR] [RUNS]   (defaults: build/bench, 5)
# Each contender decodes both splits from Debian's gzip IDX files, scales the images to
# float32 in [0, 1], widens the labels to int64 and writes them zstd-compressed in 1 MiB
# chunks. The numpy script allocates what the recipe allocates and no more: the pixels
# are divided straight into one float32 array (np.divide with out=), as the recipe's
# cast + div_ does. Runs alternate; each is reported as the median and min–max of RUNS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
RUNS=${2:-5}
M=$BUILD/src/cli/matorage
# Debian ships no zstd filter for h5py: the one built here (same id, plain zstd frames).
export HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
PY=/usr/bin/python3
FM=/usr/share/datasets/fashion-mnist
DIR=${BENCH_DIR:-/tmp/mt-bench-lua}
LEVEL=3
CHUNK_ROWS=$(((1024 * 1024) / (28 * 28 * 4)))
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export MATORAGE_CATALOG=$DIR/catalog.db # the user's catalog is left alone
export MATORAGE_STORE="file://$DIR/store"

echo "# command: bench/lua-fashion.sh $*"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m)"
echo "# data: Fashion-MNIST train + test (70000 x 28 x 28 float32 + int64 labels, 219 MB raw), zstd level $LEVEL, 1 MiB chunks"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$FM"/*.gz > /dev/null # warm the page cache for both contenders

cat > "$DIR/baseline.py" <<'PYEOF'
import gzip, os, sys
import h5py, hdf5plugin, numpy as np
src, dst, level, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def idx(name):
    with gzip.open(f"{src}/{name}-ubyte.gz", "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)
for split, pre in (("train", "train"), ("test", "t10k")):
    raw = idx(f"{pre}-images-idx3")
    # One float32 array, written once: no float32 temporary before the division.
    image = np.empty(raw.shape, np.float32)
    np.divide(raw, np.float32(255), out=image)
    label = idx(f"{pre}-labels-idx1").astype(np.int64)
    with h5py.File(f"{dst}-{split}.h5", "w") as f:
        f.create_dataset("image", data=image, chunks=(chunk, 28, 28),
                         **hdf5plugin.Zstd(clevel=level))
        f.create_dataset("label", data=label, chunks=(min(len(label), 131072),),
                         **hdf5plugin.Zstd(clevel=level))
    # The recipe's shards are durable when it returns: make these files as durable.
    fd = os.open(f"{dst}-{split}.h5", os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
PYEOF

t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
lua=() h5=()
for i in $(seq "$RUNS"); do
	rm -rf "$DIR/store" "$DIR"/h5py-*.h5
	sync
	lua+=("$(t "$M" run "$here/../lua/examples/fashion_mnist.lua" --allow "$FM" level=$LEVEL)")
	sync
	h5+=("$(t $PY "$DIR/baseline.py" "$FM" "$DIR/h5py" $LEVEL $CHUNK_ROWS)")
	echo "# run $i: recipe ${lua[-1]} s, numpy + h5py ${h5[-1]} s"
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
stored=$(du -sb "$DIR/store/datasets" | cut -f1)
h5size=$(cat "$DIR"/h5py-*.h5 | wc -c)
$PY - "$RUNS" "$stored" "$h5size" "${lua[*]}" "${h5[*]}" <<'PYEOF'
import statistics, sys
runs, stored, h5size = sys.argv[1:4]
lua, h5 = ([float(x) for x in a.split()] for a in sys.argv[4:6])
print(f"| contender | s, median (min–max) of {runs} | stored bytes |")
print("|---|---|---|")
print(f"| matorage run fashion_mnist.lua | {statistics.median(lua):.2f} ({min(lua):.2f}–{max(lua):.2f}) | {stored} |")
print(f"| numpy (in place) + h5py + hdf5plugin | {statistics.median(h5):.2f} ({min(h5):.2f}–{max(h5):.2f}) | {h5size} |")
print(f"ratio of medians (recipe time / numpy+h5py time): {statistics.median(lua) / statistics.median(h5):.2f}x")
PYEOF
