#!/bin/bash
# manifest-v2.sh — what manifest format 2 costs at size: a synthetic version of N one-row
# shards (a format-1 manifest naming one real shard N times, as growth.sh makes them), then
# a format-2 append to it, then: bytes added to the store by a one-row append, bytes read
# (strace: read/pread64 of files under the store) and seconds of `info` and of `get --rows`
# of 10 middle rows, for the format-2 version and for the format-1 one beside it.
# Usage: bench/manifest-v2.sh [BUILD_DIR] [N_SHARDS]   (defaults: build/bench, 200000)
BENCH_NAME=manifest-v2
. "$(dirname "$0")/lib.sh"
N=${2:-200000}
S=$DIR/s
export MATORAGE_STORE=file://$S
bench_machine
echo "# $N shards"

$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
"$M" put g x="$DIR/one.npy" > /dev/null
# v2: v1's shard named N times (format 1), created after v1.
bench_synth "$S/datasets/g/versions/v1.json" "$N" "$S/datasets/g/versions/v2.json" v2 v1

stored() { find "$S" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
# read_bytes CMD...: bytes the command reads from files under the store.
read_bytes() {
	local io
	io=$(io_bytes "$S" "$@")
	echo "${io% *}"
}
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
