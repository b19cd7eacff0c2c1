#!/bin/bash
# manifest-v2.sh — what manifest format 2 costs at size: a synthetic version of N one-row
# shards (a format-1 manifest naming one real shard N times, as growth.sh makes them), then
# a format-2 append to it, then: bytes added to the store by a one-row append, bytes read
# (strace: read/pread64 of files under the store) and seconds of `info` and of `get --rows`
# of 10 middle rows, for the format-2 version and for the format-1 one beside it.
# Usage: bench/manifest-v2.sh [BUILD_DIR] [N_SHARDS]   (defaults: build/bench, 200000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
N=${2:-200000}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-manifest-v2}
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
S=$DIR/s
export MATORAGE_STORE=file://$S HOME=$DIR
echo "# machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); $N shards"

$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
"$M" put g x="$DIR/one.npy" > /dev/null
# v2: v1's shard named N times (format 1), created after v1.
$PY - "$S/datasets/g/versions/v1.json" "$N" "$S/datasets/g/versions/v2.json" <<'PYEOF'
import hashlib, json, sys
src, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
m = json.loads(open(src).read())
sh = m["shards"][0]
m["version"], m["parent"] = "v2", "v1"
m["created"] = m["created"][:-5] + "999Z"
m["rows"] = n
m["raw_bytes"] = 8 * n
m["shards"] = [dict(sh, first_row=i) for i in range(n)]
del m["checksum"]
t = json.dumps(m, separators=(",", ":"))[:-1]
open(dst, "w").write(t + ',"checksum":"sha256:' + hashlib.sha256((t + "}").encode()).hexdigest() + '"}')
PYEOF

stored() { find "$S" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
# read_bytes CMD...: bytes the command reads from files under the store.
read_bytes() {
	strace -f -qq -e trace=read,pread64 -y -o "$DIR/trace" "$@" > /dev/null
	grep -F "<$S/" "$DIR/trace" | sed -n 's/.*) *= *\([0-9][0-9]*\)$/\1/p' | awk '{ s += $1 } END { print s + 0 }'
}
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
secs() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }

t0=$(date +%s.%N)
MATORAGE_MANIFEST_FORMAT=2 "$M" put g x="$DIR/one.npy" --append > /dev/null
echo "# v3: format-2 append to the format-1 v2 ($((N + 1)) shards): $(echo "$(date +%s.%N) - $t0" | bc) s"
before=$(stored)
t0=$(date +%s.%N)
"$M" put g x="$DIR/one.npy" --append > /dev/null
t1=$(date +%s.%N)
after=$(stored)
nf=$(ls "$S/datasets/g/fragments" | wc -l)
printf '| measure (%d shards) | format 1 (g@v2) | format 2 (g@v4) |\n|---|---|---|\n' "$N"
printf '| manifest (root) bytes | %d | %d (+ %d fragments) |\n' \
	"$(stat -c %s "$S/datasets/g/versions/v2.json")" "$(stat -c %s "$S/datasets/g/versions/v4.json")" "$nf"
printf '| append of one row: bytes added to the store | %d (the manifest again) | %d (%.2f s) |\n' \
	"$(stat -c %s "$S/datasets/g/versions/v2.json")" "$((after - before))" "$(echo "$t1 - $t0" | bc)"
mid=$((N / 2))
for what in info get; do
	for v in v2 v4; do
		if [ $what = info ]; then
			cmd=("$M" info "g@$v")
		else
			cmd=("$M" get "g@$v" x --rows "$mid:$((mid + 10))" -o "$DIR/o.npy")
		fi
		eval "b_$v=\$(read_bytes \"\${cmd[@]}\")"
		eval "s_$v=\$(for i in 1 2 3 4 5; do secs \"\${cmd[@]}\"; done | med)"
	done
	label=$([ $what = info ] && echo "info" || echo "get --rows $mid:$((mid + 10))")
	printf '| %s: bytes read, s (median of 5) | %d, %.3f | %d, %.3f |\n' "$label" "$b_v2" "$s_v2" "$b_v4" "$s_v4"
done
