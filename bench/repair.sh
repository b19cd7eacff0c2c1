#!/bin/bash
# repair.sh — `matorage repair` of one lost shard of about 64 MiB in a K+M group, against the floor: reading (and hashing) the K surviving objects it needs.
# Usage: bench/repair.sh [BUILD_DIR] [K+M] [RUNS]   (defaults: build/bench, 8+2, 5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
KM=${2:-8+2}
RUNS=${3:-5}
THREADS=${THREADS:-2}
K=${KM%+*}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-repair}
COLS=1024
# The put benchmark's data stores at about 0.76 of its raw size: 84 MiB raw per shard
# gives shards of about 64 MiB, K of them make one full group.
SHARD_RAW=$((84 * 1024 * 1024))
ROWS=$((K * SHARD_RAW / (COLS * 4)))
rm -rf "$DIR"
mkdir -p "$DIR"
export MATORAGE_STORE="file://$DIR/store"
export XDG_DATA_HOME="$DIR/xdg" # the user's catalog is left alone
DS="$DIR/store/datasets/bench"

echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m)"
$PY "$here/make-data.py" "$DIR/x.npy" "$ROWS" "$COLS"
"$M" put bench x="$DIR/x.npy" --level 3 --shard-size "$SHARD_RAW" --parity "$KM" > /dev/null
rm "$DIR/x.npy"
mapfile -t shards < <($PY -c "import json; [print('$DS/shards/%s.h5' % s['sha256']) for s in json.load(open('$DS/versions/v1.json'))['shards']]")
lost=${shards[0]}
cp "$lost" "$DIR/lost.h5"
lost_mib=$(echo "scale=1; $(stat -c %s "$lost") / 1048576" | bc)
# What a rebuild of member 0 needs: the other members and the first parity object.
mapfile -t parity < <($PY -c "import json; [print('$DS/parity/%s' % p['sha256']) for p in json.load(open('$DS/protect/v1.json'))['groups'][0]['parity']]")
need=("${shards[@]:1}" "${parity[0]}")
need_mib=$(echo "scale=1; $(cat "${need[@]}" | wc -c) / 1048576" | bc)
echo "# data: ${#shards[@]} shards, parity $KM; the lost shard is $lost_mib MiB; a rebuild reads $need_mib MiB; $THREADS threads, $RUNS runs, objects in the page cache"

stats() { sort -n | awk '{a[NR]=$1} END {printf "%.3f %.3f %.3f\n", a[int((NR+1)/2)], a[1], a[NR]}'; }

trepair=()
tread=()
thash=()
for r in $(seq "$RUNS"); do
	rm -f "$lost"
	cat "${need[@]}" > /dev/null
	s=$(date +%s.%N)
	out=$("$M" repair bench@v1 --no-remotes --threads "$THREADS")
	trepair+=("$(echo "$(date +%s.%N) - $s" | bc)")
	cmp -s "$lost" "$DIR/lost.h5" || { echo "repair.sh: the rebuilt shard differs" >&2; exit 1; }
	s=$(date +%s.%N)
	cat "${need[@]}" > /dev/null
	tread+=("$(echo "$(date +%s.%N) - $s" | bc)")
	s=$(date +%s.%N)
	printf '%s\n' "${need[@]}" | xargs -P "$THREADS" -n 1 sha256sum > /dev/null
	thash+=("$(echo "$(date +%s.%N) - $s" | bc)")
done
read -r med lo hi < <(printf '%s\n' "${trepair[@]}" | stats)
echo "matorage repair (one lost shard): median $med s, min $lo max $hi"
echo "$out" | sed 's/^/  /'
read -r med lo hi < <(printf '%s\n' "${tread[@]}" | stats)
echo "reading the $K objects a rebuild needs (cat): median $med s, min $lo max $hi"
read -r med lo hi < <(printf '%s\n' "${thash[@]}" | stats)
echo "sha256sum of them, $THREADS processes: median $med s, min $lo max $hi"
