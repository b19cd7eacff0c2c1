#!/bin/bash
# growth-v2.sh — how format-2 versions grow (doc/BENCHMARKS.md, "Growth of format-2
# versions"): for versions of 1k, 10k, 100k and 1M one-row shards, the seconds (median of
# 3 runs) and the bytes read and written under the store (strace, one more run) of: put
# (the N+1 shard entries written as format 2), open (info), the plan of one rank of 1,000
# (the loader opened and its first batch), get of 10 middle rows, an append of one row,
# diff of that append against its parent, and a first catalog sync.
# The versions are synthetic: a one-row version v1, then v2, a format-1 manifest naming
# v1's shard N times (bench_synth in lib.sh), then "put" is a one-row format-2 append to
# v2 (MATORAGE_MANIFEST_FORMAT=2), which writes every fragment of the N+1 shards; the
# other measures run on that format-2 version and the appends after it.  put and append
# run without the catalog note a put makes (the catalog sync is measured apart).
# Usage: bench/growth-v2.sh [BUILD_DIR]   (default build/bench, a build without
# sanitizers; GROWTH_SIZES="1000 10000" to run fewer sizes, GROWTH_RUNS=1 for one timed
# run, GROWTH_SYNC_MAX=N to leave out the catalog sync of versions over N shards)
BENCH_NAME=growth-v2
. "$(dirname "$0")/lib.sh"
SIZES=${GROWTH_SIZES:-1000 10000 100000 1000000}
RUNS=${GROWTH_RUNS:-3}
SYNC_MAX=${GROWTH_SYNC_MAX:-1000000}
echo "# command: bench/growth-v2.sh ${1:-build/bench}   (sizes: $SIZES; runs: $RUNS)"
bench_machine
$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
NOCAT="env MATORAGE_CATALOG=/dev/null/none"
# measure NAME CMD...: a line "N|NAME|read|written|seconds" into $DIR/results.
measure() {
	local name=$1
	shift
	local io t
	io=$(io_bytes "$S" "$@" 2>> "$DIR/stderr")
	t=$(for i in $(seq $RUNS); do secs "$@" 2>> "$DIR/stderr"; done | med)
	echo "$N|$name|${io% *}|${io#* }|$t" | tee -a "$DIR/results" >&2
}
for N in $SIZES; do
	S=$DIR/s$N
	export MATORAGE_STORE=file://$S
	V=$S/datasets/g/versions
	"$M" put g x="$DIR/one.npy" > /dev/null
	bench_synth "$V/v1.json" "$N" "$V/v2.json" v2 v1
	measure "put (N+1 entries, format 2)" $NOCAT MATORAGE_MANIFEST_FORMAT=2 "$M" put g x="$DIR/one.npy" --append --parent v2
	P=$(ls "$V" | sed -n 's/^\(v[0-9]*\)\.json$/\1/p' | sort -V | tail -1)
	for v in $(ls "$V" | sed -n 's/^\(v[0-9]*\)\.json$/\1/p' | sort -V); do
		[ "$v" = v1 ] || [ "$v" = "$P" ] || "$M" rm "g@$v" > /dev/null
	done
	measure "open (info)" "$M" info "g@$P"
	measure "plan of rank 500 of 1,000 (loader open + first batch)" "$BUILD/bench/loader-rank" "$S" "g@$P" x 500 1000
	mid=$((N / 2))
	measure "get of 10 middle rows" "$M" get "g@$P" x --rows "$mid:$((mid + 10))" -o "$DIR/o.npy"
	measure "append of one row" $NOCAT "$M" put g x="$DIR/one.npy" --append
	measure "diff against the parent" "$M" diff g
	[ "$N" -gt "$SYNC_MAX" ] || measure "catalog sync (a fresh catalog)" bash -c "rm -f $DIR/fresh.db*; MATORAGE_CATALOG=$DIR/fresh.db $M sync"
	rm -rf "$S"
done
# One table: an operation a row, a size a column; each cell "seconds s, read / written".
awk -F'|' '
function human(b) { return b >= 1048576 ? sprintf("%.1f MiB", b / 1048576) : b >= 1024 ? sprintf("%.0f KiB", b / 1024) : b " B" }
!($1 in seen) { seen[$1] = 1; sizes[++ns] = $1 }
!($2 in seenop) { seenop[$2] = 1; ops[++no] = $2 }
{ cell[$1, $2] = sprintf("%.3f s, %s / %s", $5, human($3), human($4)) }
END {
	printf "| operation (s, median of %d; read / written) |", runs
	for (i = 1; i <= ns; i++) printf " %s shards |", sizes[i]
	printf "\n|---|"
	for (i = 1; i <= ns; i++) printf "---|"
	printf "\n"
	for (j = 1; j <= no; j++) {
		printf "| %s |", ops[j]
		for (i = 1; i <= ns; i++) printf " %s |", ((sizes[i], ops[j]) in cell) ? cell[sizes[i], ops[j]] : "not run"
		printf "\n"
	}
}' runs="$RUNS" "$DIR/results"
