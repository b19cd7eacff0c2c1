#!/bin/bash
# ingest-ragged.sh — JSON-lines ingest of token sequences (a ragged int32 attribute and a label) through `matorage ingest` vs a Python program appending the same records to resizable h5py datasets in an offsets layout, same zstd level, same commit size; median of 5.
# Usage: bench/ingest-ragged.sh [BUILD_DIR] [ROWS]   (defaults: build/bench, 100000)
# Both sides parse every line as JSON, check it and append it; both commit every COMMIT
# rows (matorage: a version; h5py: resize the tokens, offsets and labels, write, flush)
# and make the last commit durable (matorage syncs its shards; the Python side fsyncs).
# The h5py layout is what a ragged column costs least there: the tokens of all rows back
# to back in one 1-D dataset and the rows' end offsets in another (a vlen dataset writes
# one heap object per row and is slower).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
export HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
ROWS=${2:-100000}
COMMIT=${COMMIT:-25000}
RUNS=${RUNS:-5}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-ingest-ragged}
LEVEL=3
rm -rf "$DIR"
mkdir -p "$DIR"
export MATORAGE_STORE="file://$DIR/store" XDG_DATA_HOME="$DIR/xdg"

echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m), load $(cut -d' ' -f1 /proc/loadavg)"
# Records: tokens of 0 to 256 ids below 50 000 (seeded), a label 0..9.
$PY - "$DIR/in.jsonl" "$ROWS" <<'PYEOF'
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        t = ", ".join(str(random.randrange(50000)) for _ in range(random.randint(0, 256)))
        f.write('{"tokens": [%s], "label": %d}\n' % (t, i % 10))
PYEOF
BYTES=$(stat -c %s "$DIR/in.jsonl")
echo "# data: $ROWS records of tokens int32 ragged (0 to 256 a row) and label int64, $BYTES bytes of JSON lines; zstd level $LEVEL; a commit every $COMMIT rows"
cat "$DIR/in.jsonl" > /dev/null # in the page cache for both

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

mt_run() {
	rm -rf "$DIR/store"
	"$M" ingest bench --attr tokens=int32:* --attr label=int64 --commit-rows "$COMMIT" \
		--level $LEVEL -q < "$DIR/in.jsonl" 2> /dev/null
}
h5_run() {
	rm -f "$DIR/h5py.h5"
	$PY - "$DIR/in.jsonl" "$DIR/h5py.h5" "$COMMIT" $LEVEL <<'PYEOF'
import json, os, sys
import h5py, hdf5plugin, numpy as np
src, dst, commit, level = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
z = hdf5plugin.Zstd(clevel=level)
# 1 MiB chunks, as matorage's default chunk size.
with h5py.File(dst, "w") as f:
    dt = f.create_dataset("tokens", shape=(0,), maxshape=(None,), dtype=np.int32,
                          chunks=((1 << 20) // 4,), **z)
    do = f.create_dataset("offsets", shape=(1,), maxshape=(None,), dtype=np.int64,
                          chunks=((1 << 20) // 8,), **z)
    dl = f.create_dataset("label", shape=(0,), maxshape=(None,), dtype=np.int64,
                          chunks=((1 << 20) // 8,), **z)
    toks, lens, labels = [], [], []
    def flush():
        n, r = dt.shape[0], dl.shape[0]
        t = np.fromiter((v for row in toks for v in row), dtype=np.int32)
        dt.resize(n + len(t), axis=0)
        dt[n:] = t
        do.resize(r + 1 + len(lens), axis=0)
        do[r + 1:] = n + np.cumsum(np.asarray(lens, dtype=np.int64))
        dl.resize(r + len(labels), axis=0)
        dl[r:] = np.asarray(labels, dtype=np.int64)
        f.flush()
        toks.clear(); lens.clear(); labels.clear()
    with open(src) as inp:
        for line in inp:
            rec = json.loads(line)
            t, y = rec["tokens"], rec["label"]
            if not isinstance(t, list) or not all(isinstance(v, int) for v in t) \
                    or not isinstance(y, int):
                sys.exit("bad record")
            toks.append(t); lens.append(len(t)); labels.append(y)
            if len(labels) == commit:
                flush()
    if labels:
        flush()
fd = os.open(dst, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
PYEOF
}

: > "$DIR/mt.times"
: > "$DIR/h5.times"
for _ in $(seq "$RUNS"); do
	t mt mt_run
	t h5 h5_run
done
mt=$(median < "$DIR/mt.times")
h5=$(median < "$DIR/h5.times")
# Both hold the same tokens, row boundaries and labels.
"$M" get bench tokens -o "$DIR/t.npy" --lengths "$DIR/tlen.npy" > /dev/null
"$M" get bench label -o "$DIR/l.npy" > /dev/null
$PY - "$DIR" <<'PYEOF'
import sys
import h5py, hdf5plugin, numpy as np
d = sys.argv[1]
with h5py.File(d + "/h5py.h5", "r") as f:
    ok = np.array_equal(f["tokens"][...], np.load(d + "/t.npy")) and \
        np.array_equal(np.diff(f["offsets"][...]), np.load(d + "/tlen.npy")) and \
        np.array_equal(f["label"][...], np.load(d + "/l.npy"))
sys.exit(0 if ok else "matorage and h5py hold different values")
PYEOF
versions=$("$M" ls bench | wc -l)
rate() { echo "scale=0; $ROWS / $1" | bc; }
mbs() { echo "scale=1; $BYTES / 1048576 / $1" | bc; }
printf '| ragged ingest of %s JSON lines | median s (min–max of %s) | rows/s | MB/s of input |\n|---|---|---|---|\n' "$ROWS" "$RUNS"
printf '| matorage ingest (%s versions) | %.2f (%s) | %s | %s |\n' "$versions" "$mt" "$(range < "$DIR/mt.times")" "$(rate "$mt")" "$(mbs "$mt")"
printf '| python json + h5py offsets layout | %.2f (%s) | %s | %s |\n' "$h5" "$(range < "$DIR/h5.times")" "$(rate "$h5")" "$(mbs "$h5")"
printf '| ratio (h5py time / matorage time) | %.2fx | | |\n' "$(echo "$h5 / $mt" | bc -l)"
mtc=$(median < "$DIR/mt.cpu")
h5c=$(median < "$DIR/h5.cpu")
echo "# CPU time (user + system), median: matorage $mtc s, h5py $h5c s, ratio $(printf %.2f "$(echo "$h5c / $mtc" | bc -l)")x"
echo "# stored: matorage $(du -sb "$DIR/store" | cut -f1) bytes, h5py $(stat -c %s "$DIR/h5py.h5") bytes"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$DIR"
