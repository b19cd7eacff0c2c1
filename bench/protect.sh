#!/bin/bash
# protect.sh — `matorage protect` throughput against its floor, ISA-L's ec_encode_data loop alone over the same shard bytes on the same threads, and the storage overhead.
# Usage: bench/protect.sh [BUILD_DIR] [GIB] [K+M] [RUNS]   (defaults: build/bench, 1, 8+2, 5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
GIB=${2:-1}
KM=${3:-8+2}
RUNS=${4:-5}
THREADS=${THREADS:-2}
K=${KM%+*}
PM=${KM#*+}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-protect}
COLS=1024
ROWS=$((GIB * 1024 * 1024 * 1024 / (COLS * 4)))
rm -rf "$DIR"
mkdir -p "$DIR"
export MATORAGE_STORE="file://$DIR/store"
DS="$DIR/store/datasets/bench"

echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m)"
$PY "$here/make-data.py" "$DIR/x.npy" "$ROWS" "$COLS"
"$M" put bench x="$DIR/x.npy" --level 3 > /dev/null
rm "$DIR/x.npy"
mapfile -t shards < <($PY -c "import json,sys; [print('$DS/shards/%s.h5' % s['sha256']) for s in json.load(open('$DS/versions/v1.json'))['shards']]")
bytes=$(cat "${shards[@]}" | wc -c)
mib=$(echo "scale=1; $bytes / 1048576" | bc)
echo "# data: ${#shards[@]} shards, $mib MiB stored ($GIB GiB of float32 at zstd 3), parity $KM, $THREADS threads, $RUNS runs"
cat "${shards[@]}" > /dev/null # both sides read the shards from the page cache

# median and spread of a list of seconds
stats() { sort -n | awk '{a[NR]=$1} END {printf "%.3f %.3f %.3f\n", a[int((NR+1)/2)], a[1], a[NR]}'; }

times=()
for r in $(seq "$RUNS"); do
	rm -rf "$DS/protect" "$DS/parity"
	sync
	s=$(date +%s.%N)
	out=$("$M" protect bench@v1 --parity "$KM" --threads "$THREADS")
	times+=("$(echo "$(date +%s.%N) - $s" | bc)")
done
read -r med lo hi < <(printf '%s\n' "${times[@]}" | stats)
echo "matorage protect: median $med s ($(echo "scale=0; $mib / $med" | bc) MiB/s), min $lo max $hi"
echo "  $out"
"$BUILD/bench/ec-limit" "$K" "$PM" "$THREADS" "$RUNS" "${shards[@]}"
# The other work protect must do, each alone: sha256 of every shard and parity byte on the
# same threads, and writing the parity bytes durably (the disk's ceiling).
tsum=()
twrite=()
for r in $(seq "$RUNS"); do
	s=$(date +%s.%N)
	printf '%s\n' "${shards[@]}" "$DS"/parity/* | xargs -P "$THREADS" -n 4 sha256sum > /dev/null
	tsum+=("$(echo "$(date +%s.%N) - $s" | bc)")
	rm -f "$DIR/floor"
	sync
	s=$(date +%s.%N)
	cat "$DS"/parity/* | dd of="$DIR/floor" bs=8M iflag=fullblock conv=fsync status=none
	twrite+=("$(echo "$(date +%s.%N) - $s" | bc)")
done
read -r med lo hi < <(printf '%s\n' "${tsum[@]}" | stats)
echo "sha256sum of shards and parity, $THREADS processes: median $med s, min $lo max $hi"
read -r med lo hi < <(printf '%s\n' "${twrite[@]}" | stats)
echo "writing the parity bytes with fsync (dd): median $med s, min $lo max $hi"
rm -f "$DIR/floor"
parity=$(cat "$DS"/parity/* | wc -c)
record=$(stat -c %s "$DS/protect/v1.json")
echo "overhead: parity $parity bytes + record $record bytes over $bytes shard bytes =" \
	"$(echo "scale=2; 100 * ($parity + $record) / $bytes" | bc)% (M/K = $(echo "scale=2; 100 * $PM / $K" | bc)%)"
