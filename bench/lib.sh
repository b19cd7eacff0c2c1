# lib.sh — what the growth benchmarks share (sourced after setting BENCH_NAME): strict
# mode, the build (first argument, default build/bench) and a work directory of their own
# with a catalog in it, a line about the machine, medians, timing, the bytes a command
# reads and writes under a directory, and synthetic versions of many shards.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build/bench}" && pwd)
M=$BUILD/src/cli/matorage
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-$BENCH_NAME}
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export HOME=$DIR MATORAGE_CATALOG=$DIR/catalog.db

bench_machine() {
	echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1 /proc/loadavg)"
}
# med: the median of the numbers on stdin, one a line.
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# secs CMD...: the seconds CMD takes (its output dropped).
secs() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
# io_bytes UNDER CMD...: "READ WRITTEN", the bytes CMD (and its threads) reads and writes
# through read/pread64/write/pwrite64 on files under directory UNDER (strace -y; a file
# per thread, so no call is split across lines).
io_bytes() {
	local under=$1
	shift
	rm -rf "$DIR/trace"
	mkdir "$DIR/trace"
	strace -ff -qq -e trace=read,pread64,write,pwrite64 -y -o "$DIR/trace/t" "$@" > /dev/null
	cat "$DIR/trace/"* | grep -F "<$under/" | sed -n 's/^\([a-z0-9]*\)(.*) *= *\([0-9][0-9]*\)$/\1 \2/p' |
		awk '$1 ~ /read/ { r += $2 } $1 ~ /write/ { w += $2 } END { print r + 0, w + 0 }'
}
# bench_synth SRC N DST VERSION PARENT: write DST, a format-1 manifest of N one-row shards
# naming SRC's (a one-row version's) shard N times, as VERSION with PARENT, created just
# after SRC.  What it measures is the per-shard cost of manifests, readers and plans.
bench_synth() {
	$PY - "$@" <<'PYEOF'
import hashlib, json, sys
src, n, dst, version, parent = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
m = json.loads(open(src).read())
sh = m["shards"][0]
m["version"], m["parent"] = version, parent
m["created"] = m["created"][:-5] + "999Z"
m["rows"] = n
m["raw_bytes"] = 8 * n
m["shards"] = [dict(sh, first_row=i) for i in range(n)]
del m["checksum"]
t = json.dumps(m, separators=(",", ":"))[:-1]
open(dst, "w").write(t + ',"checksum":"sha256:' + hashlib.sha256((t + "}").encode()).hexdigest() + '"}')
PYEOF
}

# bench_frag_store MATORAGE ONE_NPY S N [HOOK]: store S (its own directory, no catalog) with
# g@v3, a format-2 version of N + 1 one-row shards whose parent g@v2 (N synthetic shards,
# bench_synth, after HOOK MANIFEST when given) is removed: what a first sync of a large
# version reads.  MATORAGE_STORE is left pointing at S.
bench_frag_store() {
	local m=$1 one=$2 s=$3 n=$4 hook=${5:-}
	local nocat="env MATORAGE_CATALOG=/dev/null/none" v=$s/datasets/g/versions
	export MATORAGE_STORE=file://$s
	$nocat "$m" put g x="$one" > /dev/null 2>&1
	bench_synth "$v/v1.json" "$n" "$v/v2.json" v2 v1
	[ -z "$hook" ] || "$hook" "$v/v2.json"
	$nocat MATORAGE_MANIFEST_FORMAT=2 "$m" put g x="$one" --append --parent v2 > /dev/null 2>&1
	$nocat "$m" rm g@v2 > /dev/null 2>&1
}
