#!/bin/bash
# loader-size.sh — one shuffled loader epoch over versions of 1, 4 and 16 GiB of large rows
# (150 KB of float32 each): rows/s and the process's peak RSS as the version grows, at one
# prefetch budget.  Targets (doc/BENCHMARKS.md): flat rows/s, RSS within the budget plus
# 32 MiB.
# Usage: bench/loader-size.sh [BUILD_DIR] [SIZES_GIB] [RUNS]   (defaults: build/bench,
# "1 4 16", 3; build with CFLAGS="-O2 -g").  Needs about 2.3x the largest size free on disk
# while that version is made (its .npy, then the store), and the store's size in page cache
# for a warm epoch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
SIZES=${2:-1 4 16}
RUNS=${3:-3}
M=$BUILD/src/cli/matorage
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-size}
BUDGET=$((256 << 20))
COLS=38400 # 150 KB of float32 a row
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export HOME=$DIR MATORAGE_CATALOG=$DIR/catalog.db
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# rows of $COLS float32 (normal values rounded to 3 decimals, seed 1), zstd 3, budget $((BUDGET >> 20)) MiB, $RUNS epochs each"
printf '| version | rows | stored bytes | epoch s, median (min-max) | rows/s | MB/s (decoded) | peak RSS MiB, max |\n|---|---|---|---|---|---|---|\n'
for G in $SIZES; do
	ROWS=$((G * 1024 * 1024 * 1024 / (COLS * 4)))
	# Written in slices, so making 16 GiB never holds more than one slice in memory.
	$PY - "$DIR/x.npy" "$ROWS" "$COLS" <<'PYEOF'
import sys
import numpy as np
path, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
rng = np.random.default_rng(1)
step = max(1, (64 << 20) // (cols * 4))
for a in range(0, rows, step):
    b = min(rows, a + step)
    out[a:b] = np.round(rng.standard_normal((b - a, cols), dtype=np.float32), 3)
out.flush()
PYEOF
	"$M" -q --store "$DIR/store" put "g$G" x="$DIR/x.npy" > /dev/null
	rm -f "$DIR/x.npy"
	stored=$(du -sb "$DIR/store/datasets/g$G" | cut -f1)
	cat "$DIR/store/datasets/g$G/shards/"* > /dev/null # warm, as in bench/loader.sh
	: > "$DIR/t"
	for r in $(seq "$RUNS"); do
		"$BUILD/bench/loader-epoch" "$DIR/store" "g$G" x 64 1 "$BUDGET" >> "$DIR/t"
	done
	awk -v g="$G" -v stored="$stored" '{ s[NR] = $3; rows = $1; bytes = $2; if ($4 > rss) rss = $4 }
		END { n = asort_(s); printf "| %d GiB | %d | %.0f | %.2f (%.2f-%.2f) | %.0f | %.0f | %d |\n",
		      g, rows, stored, s[int((n + 1) / 2)], s[1], s[n], rows / s[int((n + 1) / 2)],
		      bytes / s[int((n + 1) / 2)] / 1e6, rss / 1024 }
		function asort_(a,   i, j, t, n) { n = 0; for (i in a) n++
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n }' "$DIR/t"
	rm -rf "$DIR/store/datasets/g$G"
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
