#!/bin/bash
# s3-latency.sh — a shuffled loader epoch straight from S3 (no shard cache) with and without 30 ms
# added to every request (the proxy delays each one), for small rows and large rows: seconds, GET requests per epoch, and the
# ratio; five runs of each, alternating, medians.  s3rver behind tests/e2e/s3proxy.py, whose
# "delay" rule adds the latency, so only the delay differs between the two.  Each dataset twice:
# the first epoch of a fresh process (the open included), and the third epoch of one loader
# (mt_loader_set_epoch; a training run's steady state, as bench/loader.sh's third epoch).
# Usage: [THREADS=N] bench/s3-latency.sh [BUILD_DIR] [RUNS] [DELAY_MS]   (defaults: build/bench, 5, 30;
# THREADS: the loader's decode_threads, by default one per core;
# build with CFLAGS="-O2 -g" and no sanitizers;
# BASE=DIR: another build's bench/loader-epoch too, run by run alternating with this one's, a table each;
# VERSION=v1: open that version by name rather than the latest, which saves listing the versions;
# META=compare: the loader's metadata cache off and on, alternating;
# CACHE=1: every loader reads through one shard cache directory (cache_dir), warmed by an
# untimed epoch of each dataset first: the store is then asked for the listing and the head
# alone, and "first batch" shows when data flows; with META=compare, "nometa" is the open
# without the metadata cache's guess of the latest (the listing first, then the data))
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
RUNS=${2:-5}
DELAY=${3:-30}
export MATORAGE=$BUILD/src/cli/matorage top_srcdir=$here/..
EPOCH=$BUILD/bench/loader-epoch
BUDGET=$((256 << 20))
. "$here/../tests/e2e/lib.sh"
# The cleanup runs without -e: a server already gone (kill fails) must not stop it before
# the rest are stopped and the scratch directory removed, nor make the run exit 1.
trap 'set +e; mt_cleanup' EXIT
export HOME=$WORK MATORAGE_CATALOG=$WORK/catalog.db
s3_start || { echo "s3-latency.sh: cannot start s3rver and the proxy" >&2; exit 1; }
echo "# machine: $(nproc) cores; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# small: 180,000 rows of a 784-byte uint8 image and an int64 label (bench/python-overhead.sh);
# large: 600 rows of 65,536 float32 (256 KiB a row).
"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
img = (rng.random((180000, 28, 28)) < 0.3).astype(np.uint8) * rng.integers(0, 255, (180000, 1, 1), dtype=np.uint8)
np.save(f"{d}/image.npy", img)
np.save(f"{d}/label.npy", rng.integers(0, 10, 180000).astype(np.int64))
np.save(f"{d}/big.npy", rng.standard_normal((600, 65536)).astype(np.float32))
np.save(f"{d}/id.npy", np.arange(600, dtype=np.int64))
PYEOF
S=s3://bench/lat
"$MATORAGE" -q --store $S put small image="$WORK/image.npy" label="$WORK/label.npy" > /dev/null
"$MATORAGE" -q --store $S put large x="$WORK/big.npy" id="$WORK/id.npy" > /dev/null
rm -f "$WORK"/*.npy

# epoch DATASET ATTRS BATCH DELAY_MS: one shuffled epoch; prints "seconds gets wait first": wait,
# from the proxy's timed log, the ms from the process's first request to its first shard
# request (the round trips before data flows, which the load on the machine barely moves;
# none with a warm shard cache), first the ms from the start of the open to the first batch
# in hand (the process's own clock).  With
# EPOCHS=3, the third epoch of one loader (its open and the epochs before not timed; gets
# counts all three).
epoch() {
	local bin=${BIN:-$EPOCH}
	s3_faults clear
	[ "$4" = 0 ] || s3_faults "{\"rules\": [{\"match\": \"^[A-Z]+ /bench/\", \"action\": \"delay\", \"count\": -1, \"delay_ms\": $4}]}"
	s3_log_clear
	local out
	out=$(LOADER_FIRST=1 LOADER_EPOCHS=${EPOCHS:-1} "$bin" $S "$1${VERSION:+@$VERSION}" "$2" "$3" 1 "$BUDGET" ${THREADS:-})
	printf '%s %s %s %s\n' "$(echo "$out" | awk -v e="${EPOCHS:-1}" '{ printf "%.3f", (e > 1 ? $3 : $3 + $5) }')" \
		"$(s3_log | grep -c '^GET ')" \
		"$(curl -s -f "$S3_ENDPOINT/__log?times=1" | awk '$4 ~ /^\/bench\// { if (t0 == "" || $1 < t0) t0 = $1
			if ($4 ~ /\/shards\// && (f == "" || $1 < f)) f = $1 } END { if (f == "") printf "-"; else printf "%.0f", f - t0 }')" \
		"$(echo "$out" | awk '{ printf "%.0f", $NF * 1000 }')"
}
if [ -n "${CACHE:-}" ]; then
	export LOADER_CACHE_DIR=$WORK/shard-cache
	epoch small image,label 256 0 > /dev/null
	epoch large x,id 16 0 > /dev/null
fi
builds="this"
[ -z "${BASE:-}" ] || builds="base this"
# META=compare: this build with the loader's metadata cache off ("nometa": every process
# reads fragments and chunk indexes from the store) and on (warm after the first run),
# alternating.
[ "${META:-}" != compare ] || builds="nometa this"
for r in $(seq "$RUNS"); do
	for b in $builds; do
		BIN=$EPOCH
		[ "$b" != base ] || BIN=$(cd "$BASE" && pwd)/bench/loader-epoch
		unset MATORAGE_META_CACHE
		[ "$b" != nometa ] || export MATORAGE_META_CACHE=off
		for d in 0 "$DELAY"; do
			echo "$b small $d $(BIN=$BIN epoch small image,label 256 "$d")" >> "$WORK/times"
			echo "$b large $d $(BIN=$BIN epoch large x,id 16 "$d")" >> "$WORK/times"
			echo "$b small3 $d $(EPOCHS=3 BIN=$BIN epoch small image,label 256 "$d")" >> "$WORK/times"
			echo "$b large3 $d $(EPOCHS=3 BIN=$BIN epoch large x,id 16 "$d")" >> "$WORK/times"
		done
	done
done
s3_faults clear
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
col() { awk -v b="$1" -v s="$2" -v d="$3" -v c="$4" '$1 == b && $2 == s && $3 == d { print $c }' "$WORK/times"; }
for b in $builds; do
	[ "$builds" = this ] || echo "# $b"
	# The latency's cost (delay median minus no-delay median) moves less from session to
	# session than the ratio, whose no-delay epoch alone spans a third of its value.
	printf '| dataset (epoch) | s, no delay | s, +%d ms | ratio (no delay / delay) | latency'"'"'s cost, ms | GETs (all epochs) | first shard request after, ms (+%d ms) | first batch after, ms (no delay; +%d ms) |\n|---|---|---|---|---|---|---|---|\n' "$DELAY" "$DELAY" "$DELAY"
	for s in small large small3 large3; do
		x=$(col $b $s 0 4 | med)
		y=$(col $b $s "$DELAY" 4 | med)
		name=$s
		case $s in *3) name="${s%3} (3rd of one loader)" ;; *) name="$s (first, open included)" ;; esac
		printf '| %s | %.3f (%s) | %.3f (%s) | %.2fx | %.0f | %s | %s | %s; %s |\n' "$name" "$x" "$(col $b $s 0 4 | sort -n | tr '\n' ' ' | sed 's/ $//')" \
			"$y" "$(col $b $s "$DELAY" 4 | sort -n | tr '\n' ' ' | sed 's/ $//')" "$(echo "$x / $y" | bc -l)" \
			"$(echo "($y - $x) * 1000" | bc -l)" "$(col $b $s "$DELAY" 5 | med)" "$(col $b $s "$DELAY" 6 | med)" \
			"$(col $b $s 0 7 | med)" "$(col $b $s "$DELAY" 7 | med)"
	done
done
