#!/bin/bash
# ingest.sh — JSON-lines ingest (rows/s, MB/s of input) through `matorage ingest` vs a Python program appending the same records to resizable h5py datasets, same zstd level, same commit size; median of 5.
# Usage: bench/ingest.sh [BUILD_DIR] [ROWS]   (defaults: build/bench, 200000)
# OLD_MATORAGE=PATH also times another matorage binary (an earlier build) in the same runs.
# Both sides parse every line as JSON, check it and append it; both commit every
# COMMIT rows (matorage: a version; h5py: resize, write, flush) and make the last commit
# durable (matorage syncs its shards; the Python side fsyncs its file).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
export HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
ROWS=${2:-200000}
COMMIT=${COMMIT:-50000}
RUNS=${RUNS:-5}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-ingest}
LEVEL=3
rm -rf "$DIR"
mkdir -p "$DIR"
export MATORAGE_STORE="file://$DIR/store" XDG_DATA_HOME="$DIR/xdg"

echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m), load $(cut -d' ' -f1 /proc/loadavg)"
# Records: x float32 (16,), y int64; the values a sensor might send (2 decimals).
$PY - "$DIR/in.jsonl" "$ROWS" <<'PYEOF'
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        x = ", ".join("%.2f" % random.uniform(-100, 100) for _ in range(16))
        f.write('{"x": [%s], "y": %d}\n' % (x, i))
PYEOF
BYTES=$(stat -c %s "$DIR/in.jsonl")
echo "# data: $ROWS records of x float32 (16,) and y int64, $BYTES bytes of JSON lines; zstd level $LEVEL; a commit every $COMMIT rows"
cat "$DIR/in.jsonl" > /dev/null # in the page cache for both

# t NAME CMD...: CMD's wall time to $DIR/NAME.times, the CPU time (user + system) of the
# processes it ran to $DIR/NAME.cpu: on a loaded machine the second says what the first hides.
# (`times` in this shell, not in a $(...) subshell, whose children are not these.)
cpu() { awk 'NR == 2 { split($0, f, /[ ms]+/); print f[1] * 60 + f[2] + f[3] * 60 + f[4] }' "$1"; }
t() {
	local name=$1 s
	shift
	times > "$DIR/.t0"
	s=$(date +%s.%N)
	"$@" > /dev/null
	echo "$(date +%s.%N) - $s" | bc >> "$DIR/$name.times"
	times > "$DIR/.t1"
	echo "$(cpu "$DIR/.t1") - $(cpu "$DIR/.t0")" | bc >> "$DIR/$name.cpu"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f–%.2f", lo, hi }'; }

OLD=${OLD_MATORAGE:-}
mt_run() {
	local m=${1:-$M}
	rm -rf "$DIR/store"
	"$m" ingest bench --attr x=float32:16 --attr y=int64 --commit-rows "$COMMIT" --level $LEVEL \
		-q < "$DIR/in.jsonl" 2> /dev/null
}
h5_run() {
	rm -f "$DIR/h5py.h5"
	$PY - "$DIR/in.jsonl" "$DIR/h5py.h5" "$COMMIT" $LEVEL <<'PYEOF'
import json, os, sys
import h5py, hdf5plugin, numpy as np
src, dst, commit, level = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# 1 MiB chunks, as matorage's default chunk size.
with h5py.File(dst, "w") as f:
    dx = f.create_dataset("x", shape=(0, 16), maxshape=(None, 16), dtype=np.float32,
                          chunks=((1 << 20) // 64, 16), **hdf5plugin.Zstd(clevel=level))
    dy = f.create_dataset("y", shape=(0,), maxshape=(None,), dtype=np.int64,
                          chunks=((1 << 20) // 8,), **hdf5plugin.Zstd(clevel=level))
    xs, ys = [], []
    def flush():
        n = dx.shape[0]
        dx.resize(n + len(xs), axis=0)
        dy.resize(n + len(ys), axis=0)
        dx[n:] = np.asarray(xs, dtype=np.float32)
        dy[n:] = np.asarray(ys, dtype=np.int64)
        f.flush()
        xs.clear(); ys.clear()
    with open(src) as inp:
        for line in inp:
            r = json.loads(line)
            x, y = r["x"], r["y"]
            if len(x) != 16 or not isinstance(y, int):
                sys.exit("bad record")
            xs.append(x); ys.append(y)
            if len(xs) == commit:
                flush()
    if xs:
        flush()
fd = os.open(dst, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
PYEOF
}

: > "$DIR/mt.times"
: > "$DIR/h5.times"
: > "$DIR/old.times"
for _ in $(seq "$RUNS"); do
	[ -z "$OLD" ] || t old mt_run "$OLD"
	t mt mt_run
	t h5 h5_run
done
mt=$(median < "$DIR/mt.times")
h5=$(median < "$DIR/h5.times")
# Both hold the same values.
"$M" get bench x -o "$DIR/x.npy" > /dev/null
"$M" get bench y -o "$DIR/y.npy" > /dev/null
$PY - "$DIR" <<'PYEOF'
import sys
import h5py, hdf5plugin, numpy as np
d = sys.argv[1]
with h5py.File(d + "/h5py.h5", "r") as f:
    ok = np.array_equal(f["x"][...], np.load(d + "/x.npy")) and np.array_equal(f["y"][...], np.load(d + "/y.npy"))
sys.exit(0 if ok else "matorage and h5py hold different values")
PYEOF
versions=$("$M" ls bench | wc -l)
rate() { echo "scale=0; $ROWS / $1" | bc; }
mbs() { echo "scale=1; $BYTES / 1048576 / $1" | bc; }
printf '| ingest of %s JSON lines | median s (min–max of %s) | rows/s | MB/s of input |\n|---|---|---|---|\n' "$ROWS" "$RUNS"
printf '| matorage ingest (%s versions) | %.2f (%s) | %s | %s |\n' "$versions" "$mt" "$(range < "$DIR/mt.times")" "$(rate "$mt")" "$(mbs "$mt")"
printf '| python json + h5py resizable datasets | %.2f (%s) | %s | %s |\n' "$h5" "$(range < "$DIR/h5.times")" "$(rate "$h5")" "$(mbs "$h5")"
printf '| ratio (h5py time / matorage time) | %.2fx | | |\n' "$(echo "$h5 / $mt" | bc -l)"
mtc=$(median < "$DIR/mt.cpu")
h5c=$(median < "$DIR/h5.cpu")
echo "# CPU time (user + system), median: matorage $mtc s, h5py $h5c s, ratio $(printf %.2f "$(echo "$h5c / $mtc" | bc -l)")x"
if [ -n "$OLD" ]; then
	old=$(median < "$DIR/old.times")
	printf '| %s | %.2f (%s) | %s | %s |\n' "$OLD" "$old" "$(range < "$DIR/old.times")" "$(rate "$old")" "$(mbs "$old")"
	printf '| ratio (h5py time / that time) | %.2fx | | |\n' "$(echo "$h5 / $old" | bc -l)"
	echo "# CPU time of $OLD, median: $(median < "$DIR/old.cpu") s"
fi
echo "# stored: matorage $(du -sb "$DIR/store" | cut -f1) bytes, h5py $(stat -c %s "$DIR/h5py.h5") bytes"
rm -rf "$DIR"
