#!/bin/bash
# many-shards.sh — per-shard cost of a writer and of protect as a version grows: `put --shard-rows 1` of N one-row shards (wall time and newfstatat calls), then `protect` and `verify` of that version.
# Usage: bench/many-shards.sh MATORAGE [RUNS] [N]...   (defaults: 3 runs; 1000 2000 4000 10000)
# MATORAGE is the binary (or a wrapper) to time; NOPROTECT=1 skips protect and verify.
set -euo pipefail
M=$1
RUNS=${2:-3}
shift $(($# < 2 ? $# : 2))
SIZES=("${@:-1000 2000 4000 10000}")
read -r -a SIZES <<< "${SIZES[*]}"
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-shards}
mkdir -p "$DIR"
export MATORAGE_STORE="file://$DIR/store"

# median, min and max of a list of numbers
stats() { sort -n | awk '{a[NR]=$1} END {printf "%s %s %s", a[int((NR+1)/2)], a[1], a[NR]}'; }
secs() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }

echo "# machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); median min max of $RUNS runs"
for n in "${SIZES[@]}"; do
	$PY -c "import numpy as np; np.save('$DIR/x.npy', np.arange($n, dtype=np.int64))"
	put=() prot=() ver=()
	for r in $(seq "$RUNS"); do
		rm -rf "$DIR/store"
		put+=("$(secs "$M" put d x="$DIR/x.npy" --shard-rows 1)")
		if [ -z "${NOPROTECT:-}" ]; then
			prot+=("$(secs "$M" protect d)")
			ver+=("$(secs "$M" verify d)")
		fi
	done
	calls=-
	if command -v strace > /dev/null; then
		rm -rf "$DIR/store"
		calls=$(strace -f -c -e trace=newfstatat -o "$DIR/strace" "$M" put d x="$DIR/x.npy" \
			--shard-rows 1 > /dev/null && awk '$NF == "newfstatat" {print $4}' "$DIR/strace")
	fi
	echo "put $n shards: $(printf '%s\n' "${put[@]}" | stats) s, $calls newfstatat"
	if [ -z "${NOPROTECT:-}" ]; then
		echo "protect $n shards: $(printf '%s\n' "${prot[@]}" | stats) s"
		echo "verify $n shards: $(printf '%s\n' "${ver[@]}" | stats) s"
	fi
done
rm -rf "$DIR"
