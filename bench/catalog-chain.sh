#!/bin/bash
# catalog-chain.sh — what an append chain costs the catalog: for each build given, the
# first sync of an N-append chain (bench/growth's dataset) into an empty catalog (time and
# catalog file size), and `put --append` to that dataset with the catalog warm (the
# command records its version in the catalog). Builds run alternately, run by run, and
# each number is the median of RUNS (default 5). Every build reads the same store.
# Usage: bench/catalog-chain.sh N BUILD_DIR...   (e.g. 500 /tmp/base/build/bench build/bench)
set -euo pipefail
N=$1
shift
RUNS=${RUNS:-5}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-catalog-chain}
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export HOME=$DIR
builds=()
for b in "$@"; do builds+=("$(cd "$b" && pwd)"); done
echo "# machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
"${builds[0]}/bench/growth" "$DIR/s" "$N" > /dev/null
$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
t() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
# The store as the chain left it: each put --append run starts from it.
cp -a "$DIR/s" "$DIR/pristine"
declare -A sync_t size put_t
for r in $(seq 1 "$RUNS"); do
	for i in "${!builds[@]}"; do
		M=${builds[$i]}/src/cli/matorage
		rm -f "$DIR/cat$i.db"*
		sync_t[$i]+="$(t env MATORAGE_CATALOG="$DIR/cat$i.db" "$M" --store "$DIR/s" sync) "
		sqlite3_size=$(stat -c %s "$DIR/cat$i.db")
		size[$i]=$sqlite3_size
		put_t[$i]+="$(t env MATORAGE_CATALOG="$DIR/cat$i.db" "$M" --store "$DIR/s" put g \
			x="$DIR/one.npy" --append) "
		rm -rf "$DIR/s"
		cp -a "$DIR/pristine" "$DIR/s"
	done
done
printf '| build | appends | first sync s | catalog bytes | put --append s (warm catalog) |\n'
printf '|---|---|---|---|---|\n'
for i in "${!builds[@]}"; do
	printf '| %s | %d | %.3f | %d | %.3f |\n' "${builds[$i]}" "$N" \
		"$(echo "${sync_t[$i]}" | tr ' ' '\n' | grep . | med)" "${size[$i]}" \
		"$(echo "${put_t[$i]}" | tr ' ' '\n' | grep . | med)"
done
echo "# load after: $(cut -d' ' -f1 /proc/loadavg)"
