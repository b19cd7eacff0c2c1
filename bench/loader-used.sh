#!/bin/bash
# loader-used.sh — the first shuffled epoch of matorage.Loader in a fresh Python process and in
# one that has just used memory, as a training script has (a 320 MB numpy array made, worked on
# and dropped; torch tensors of 4-32 MB, a model's parameters, made and dropped), against the
# 2-core decode limit (bench/loader-baselines.py limit: zstd decode of the same frames into a
# buffer faulted in beforehand).  Small rows (bench/make-images.py: 180,000 rows of a 784-byte
# image and an int64 label), a fresh store in the page cache, 256-row batches as numpy arrays of
# their own (the default: the images held in the loader's window, the labels copied), shuffle seed 1, a 256 MiB budget; the time runs from Loader() (open
# included) to the last batch, as in bench/python-overhead.sh.  Besides the wall time: the CPU
# time of all the process's threads, its system part and the minor page faults over the same
# span.  RUNS runs of each mode, alternating (with BASE, another build's library too, run by run).
# Usage: [BASE=DIR] bench/loader-used.sh [BUILD_DIR] [RUNS]   (defaults: build/bench, 7;
# build with CFLAGS="-O2 -g" and no sanitizers)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
RUNS=${2:-7}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-used}
BUDGET=$((256 << 20))
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export HOME=$DIR MATORAGE_CATALOG=$DIR/catalog.db HDF5_PLUGIN_PATH=$BUILD/plugins/.libs
echo "# command: ${BASE:+BASE=$BASE }bench/loader-used.sh $*"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$here/make-images.py" "$DIR"
"$BUILD/src/cli/matorage" -q --store "$DIR/store" put small image="$DIR/image.npy" label="$DIR/label.npy" > /dev/null
rm -f "$DIR"/*.npy
cat "$DIR"/store/datasets/*/shards/* > /dev/null
cat > "$DIR/epoch.py" <<'PYEOF'
import gc, resource, sys, time
import numpy as np
import matorage
url, budget, used = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "used"
matorage._lib.lib()
if used:
    import torch
    x = np.random.default_rng(0).random(40_000_000)  # 320 MB, every page written
    y = (x * 2 - 1).astype(np.float32)
    s = float(y.sum())
    params = [torch.randn(1024, 1024 * k) for k in (1, 2, 4, 8) for _ in range(3)]
    grads = [p * 0.5 for p in params]
    del x, y, params, grads
    gc.collect()
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0, c0 = time.monotonic(), time.process_time()
n = 0
loader = matorage.Loader(url, "small", attrs=["image", "label"], batch_rows=256, shuffle=True,
                         seed=1, prefetch_bytes=budget)
for b in loader:
    n += len(b["label"])
t1, c1 = time.monotonic(), time.process_time()
r1 = resource.getrusage(resource.RUSAGE_SELF)
loader.close()
assert n == 180000, n
print(f"{t1 - t0:.4f} {c1 - c0:.4f} {r1.ru_stime - r0.ru_stime:.4f} {r1.ru_minflt - r0.ru_minflt}")
PYEOF
builds="this"
[ -z "${BASE:-}" ] || builds="base this"
WINDOW=$((BUDGET / 2 / 792))
for r in $(seq "$RUNS"); do
	echo "limit $("$PY" "$here/loader-baselines.py" limit "$DIR/store" small image,label 256 $WINDOW 1 2 |
		awk '{ print $3 }')" >> "$DIR/times"
	for b in $builds; do
		lib=$BUILD/src/lib/.libs/libmatorage.so
		[ "$b" = this ] || lib=$(cd "$BASE" && pwd)/src/lib/.libs/libmatorage.so
		for m in fresh used; do
			echo "$b-$m $(MATORAGE_LIB=$lib PYTHONPATH=$here/../python "$PY" "$DIR/epoch.py" \
				"$DIR/store" $BUDGET $m)" >> "$DIR/times"
		done
	done
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
stats() { sort -n | awk '{ a[NR] = $1 } END { printf "%.3f (%.3f-%.3f)", a[int((NR + 1) / 2)], a[1], a[NR] }'; }
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$DIR/times"; }
lim=$(col limit 2 | med)
printf '| first epoch, 180,000 small rows | wall s | CPU s | of it system s | minor faults | limit / wall |\n|---|---|---|---|---|---|\n'
printf '| decode limit (2 threads, buffer faulted in before) | %s | - | - | - | 1.00x |\n' "$(col limit 2 | stats)"
for b in $builds; do
	for m in fresh used; do
		printf '| %s, %s process | %s | %s | %s | %s | %.2fx |\n' $b $m "$(col $b-$m 2 | stats)" \
			"$(col $b-$m 3 | stats)" "$(col $b-$m 4 | stats)" "$(col $b-$m 5 | med)" \
			"$(echo "$lim / $(col $b-$m 2 | med)" | bc -l)"
	done
done
