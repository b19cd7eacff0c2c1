#!/bin/bash
# loader-step.sh — the loader behind a training step: the third epoch of one loader whose program
# sleeps STEP_US microseconds after each batch (the CPU left to the loader, as a step on an
# accelerator leaves it), against those sleeps alone (the epoch's floor), and with no step.
# Small rows (180,000 of a 784-byte image and an int64 label, bench/s3-latency.sh's data), 256-row
# batches, shuffled, a 256 MiB budget, a local store in the page cache; RUNS runs of each,
# alternating, medians.  Then the same through matorage.TorchDataset in the main process (no
# DataLoader workers): four epochs, time.sleep(STEP_US) after each batch, the third and fourth
# epochs' times (a TorchDataset keeps its loader from its second epoch on).
# Usage: [BASE=DIR] bench/loader-step.sh [BUILD_DIR] [RUNS] [STEP_US]   (defaults: build/bench, 7,
# 250; BASE: another build's bench/loader-epoch too, run by run alternating with this one's)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
RUNS=${2:-7}
STEP=${3:-250}
DIR=$(mktemp -d /tmp/mt-bench-step.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
echo "# machine: $(nproc) cores; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$here/make-images.py" "$DIR"
MATORAGE_CATALOG=$DIR/catalog.db "$BUILD/src/cli/matorage" -q --store "$DIR/store" put small \
	image="$DIR/image.npy" label="$DIR/label.npy" > /dev/null
rm -f "$DIR"/*.npy
builds="this"
[ -z "${BASE:-}" ] || builds="base this"
for r in $(seq "$RUNS"); do
	for b in $builds; do
		bin=$BUILD/bench/loader-epoch
		[ "$b" = this ] || bin=$(cd "$BASE" && pwd)/bench/loader-epoch
		for s in 0 "$STEP"; do
			# fields: seconds of the third epoch, and of its steps alone
			echo "$b $s $(LOADER_EPOCHS=3 LOADER_STEP_US=$s "$bin" "$DIR/store" small image,label 256 1 \
				$((256 << 20)) | awk '{ print $3, (NF > 6 ? $7 : 0) }')" >> "$DIR/times"
		done
	done
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v b="$1" -v s="$2" -v c="$3" '$1 == b && $2 == s { print $c }' "$DIR/times"; }
printf '| build | step, µs | 3rd epoch, s (runs) | the steps alone, s | epoch / steps alone |\n|---|---|---|---|---|\n'
for b in $builds; do
	for s in 0 "$STEP"; do
		e=$(col $b $s 3 | med)
		f=$(col $b $s 4 | med)
		printf '| %s | %s | %.3f (%s) | %.3f | %s |\n' $b $s "$e" "$(col $b $s 3 | sort -n | tr '\n' ' ' | sed 's/ $//')" \
			"$f" "$([ "$s" = 0 ] && echo - || printf '%.2fx' "$(echo "$e / $f" | bc -l)")"
	done
done

# TorchDataset: each build's Python package over its own library.
cat > "$DIR/td.py" <<'PYEOF'
import sys
import time
import matorage
url, step = sys.argv[1], float(sys.argv[2]) / 1e6
ds = matorage.TorchDataset(url, "small", rank=0, world=1, attrs=["image", "label"],
                           batch_rows=256, shuffle=True, seed=1)
times = []
for e in range(4):
    ds.set_epoch(e)
    t = time.perf_counter()
    for b in ds:
        time.sleep(step)
    times.append(time.perf_counter() - t)
print(" ".join(f"{x:.3f}" for x in times[2:]))
PYEOF
for r in $(seq "$RUNS"); do
	for b in $builds; do
		root=$here/..
		lib=$BUILD/src/lib/.libs/libmatorage.so
		if [ "$b" = base ]; then root=$(cd "$BASE" && pwd); lib=$root/src/lib/.libs/libmatorage.so; fi
		for t in $(MATORAGE_LIB=$lib PYTHONPATH=$root/python /usr/bin/python3 "$DIR/td.py" \
			"$DIR/store" "$STEP"); do
			echo "$b $t" >> "$DIR/torch"
		done
	done
done
printf '\n| build | TorchDataset, main process, %s µs step: epochs 3 and 4, s (runs) | median |\n|---|---|---|\n' "$STEP"
for b in $builds; do
	v=$(awk -v b=$b '$1 == b { print $2 }' "$DIR/torch")
	printf '| %s | %s | %.3f |\n' $b "$(echo "$v" | sort -n | tr '\n' ' ' | sed 's/ $//')" "$(echo "$v" | med)"
done
