#!/bin/bash
# python-overhead.sh — what the Python binding costs per batch: one shuffled epoch of the
# same dataset, same options, through the C loader (bench/loader-epoch) and through
# matorage.Loader (the default: each batch's own arrays, big columns held in the loader's
# window with no copy; and copy=False views), five runs each,
# alternating; medians and ranges.  Each Python run loads libmatorage before its clock
# starts, as the C program has it loaded by the dynamic linker before main, and stops it
# before closing the loader, as the C program does (a close joins the loader's threads
# and frees its windows: 10-30 ms, no part of an epoch).  Besides the
# wall time, the CPU time of all the process's threads over the same span: on a shared
# machine it is the steadier of the two.
# Usage: bench/python-overhead.sh [BUILD_DIR] [BATCH] [RUNS]   (default build/bench, 256, 5;
# build with CFLAGS="-O2 -g" and no sanitizers)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
BATCH=${2:-256}
RUNS=${3:-5}
M=$BUILD/src/cli/matorage
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-pyover}
BUDGET=$((256 << 20))
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export HOME=$DIR MATORAGE_CATALOG=$DIR/catalog.db
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# 180,000 rows of a 784-byte uint8 image and an int64 label, as bench/loader.sh's small rows.
"$PY" "$here/make-images.py" "$DIR"
"$M" -q --store "$DIR/store" put small image="$DIR/image.npy" label="$DIR/label.npy" > /dev/null
cat "$DIR"/store/datasets/*/shards/* > /dev/null
for r in $(seq "$RUNS"); do
	"$BUILD/bench/loader-epoch" "$DIR/store" small image,label "$BATCH" 1 "$BUDGET" |
		awk '{ printf "c %.4f\ncpu-c %.4f\n", $3 + $5, $6 }' >> "$DIR/times"
	# The C loader holding each batch's big columns until the next is in hand, as the
	# binding's default does.
	LOADER_HELD=1 "$BUILD/bench/loader-epoch" "$DIR/store" small image,label "$BATCH" 1 "$BUDGET" |
		awk '{ printf "cheld %.4f\ncpu-cheld %.4f\n", $3 + $5, $6 }' >> "$DIR/times"
	# The C loader gathering every batch into fresh buffers of its own, as the binding's
	# default did before it held batches in the window (for reference).
	LOADER_INTO=1 "$BUILD/bench/loader-epoch" "$DIR/store" small image,label "$BATCH" 1 "$BUDGET" |
		awk '{ printf "cinto %.4f\ncpu-cinto %.4f\n", $3 + $5, $6 }' >> "$DIR/times"
	for copy in 1 0; do
		MATORAGE_LIB=$BUILD/src/lib/.libs/libmatorage.so PYTHONPATH=$here/../python "$PY" - "$DIR/store" "$BATCH" "$BUDGET" "$copy" >> "$DIR/times" <<'PYEOF'
import sys, time
import matorage
url, batch, budget, copy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
matorage._lib.lib()
t0, c0 = time.monotonic(), time.process_time()
n = 0
loader = matorage.Loader(url, "small", attrs=["image", "label"], batch_rows=batch, shuffle=True,
                         seed=1, prefetch_bytes=budget, copy=copy)
for b in loader:
    n += len(b["label"])
t1, c1 = time.monotonic(), time.process_time()
loader.close()
assert n == 180000, n
name = "py" if copy else "pyview"
print(f"{name} {t1 - t0:.4f}\ncpu-{name} {c1 - c0:.4f}")
PYEOF
	done
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
stats() { sort -n | awk '{ a[NR] = $1 } END { printf "%.3f (%.3f-%.3f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
c=$(awk '$1 == "c" { print $2 }' "$DIR/times" | med)
ch=$(awk '$1 == "cheld" { print $2 }' "$DIR/times" | med)
cch=$(awk '$1 == "cpu-cheld" { print $2 }' "$DIR/times" | med)
p=$(awk '$1 == "py" { print $2 }' "$DIR/times" | med)
v=$(awk '$1 == "pyview" { print $2 }' "$DIR/times" | med)
cc=$(awk '$1 == "cpu-c" { print $2 }' "$DIR/times" | med)
cp=$(awk '$1 == "cpu-py" { print $2 }' "$DIR/times" | med)
cv=$(awk '$1 == "cpu-pyview" { print $2 }' "$DIR/times" | med)
printf '| epoch of 180,000 rows, batches of %d | s, median (min-max) of %d |\n|---|---|\n' "$BATCH" "$RUNS"
printf '| C loader (bench/loader-epoch, open included) | %s |\n' "$(awk '$1 == "c" { print $2 }' "$DIR/times" | stats)"
printf '| C loader, big columns held until the next batch (mt_loader_next_held) | %s |\n' "$(awk '$1 == "cheld" { print $2 }' "$DIR/times" | stats)"
printf '| C loader, each batch into fresh buffers (mt_loader_next_into) | %s |\n' "$(awk '$1 == "cinto" { print $2 }' "$DIR/times" | stats)"
printf '| matorage.Loader, each batch its own (held; open included) | %s |\n' "$(awk '$1 == "py" { print $2 }' "$DIR/times" | stats)"
printf '| matorage.Loader(copy=False), views (open included) | %s |\n' "$(awk '$1 == "pyview" { print $2 }' "$DIR/times" | stats)"
printf '| Python overhead, default: (py - cheld) / cheld | %.1f%% |\n' "$(echo "($p - $ch) * 100 / $ch" | bc -l)"
printf '| Python overhead, views: (view - c) / c | %.1f%% |\n' "$(echo "($v - $c) * 100 / $c" | bc -l)"
printf '\n| CPU time of the process over the same span | s, median (min-max) of %d |\n|---|---|\n' "$RUNS"
for k in c cheld cinto py pyview; do
	printf '| %s | %s |\n' "$k" "$(awk -v k="cpu-$k" '$1 == k { print $2 }' "$DIR/times" | stats)"
done
printf '| CPU overhead, default (vs cheld) / views (vs c) | %.1f%% / %.1f%% |\n' "$(echo "($cp - $cch) * 100 / $cch" | bc -l)" \
	"$(echo "($cv - $cc) * 100 / $cc" | bc -l)"
