#!/bin/bash
# sync-frag.sh — the catalog sync of format-2 versions (doc/BENCHMARKS.md, "Growth of
# format-2 versions"): of N one-row shards (the store growth-v2.sh makes: v1, a format-1 v2
# of N entries by bench_synth, v3 a one-row format-2 append, v2 removed), the first sync
# into a fresh catalog, then that of v4 (a one-row append) into the catalog that has v3,
# then v1, v3 and v4 into a fresh one; each once per build given, /usr/bin/time (wall,
# user, system, peak RSS) and the bytes read under the store (strace, one more run).
# Usage: bench/sync-frag.sh BUILD_DIR [BUILD_DIR...]   (SYNC_SIZES="100000 1000000")
BENCH_NAME=sync-frag
. "$(dirname "$0")/lib.sh"
SIZES=${SYNC_SIZES:-100000}
echo "# command: bench/sync-frag.sh $*   (sizes: $SIZES)"
bench_machine
$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
NOCAT="env MATORAGE_CATALOG=/dev/null/none"
# run LABEL DB CMD...: one timed run and one traced run of CMD with catalog DB (a copy of
# $DIR/base.db when it exists, else fresh), as a line of the table.
run() {
	local label=$1 db=$2 t io
	shift 2
	for pass in time io; do
		rm -f "$DIR/$db"*
		[ ! -e "$DIR/base.db" ] || cp "$DIR/base.db" "$DIR/$db"
		if [ $pass = time ]; then
			t=$(MATORAGE_CATALOG=$DIR/$db /usr/bin/time -f "%e s, %U+%S s CPU, %M KB" "$@" 2>&1 >/dev/null | tail -1)
		else
			io=$(MATORAGE_CATALOG=$DIR/$db io_bytes "$S" "$@")
		fi
	done
	echo "| $label | $N | $b | $t | $((${io% *} / 1024)) KiB |"
}
for N in $SIZES; do
	S=$DIR/s$N
	bench_frag_store "$M" "$DIR/one.npy" "$S" "$N"
	i=0
	for b in "$@"; do
		i=$((i + 1))
		B=$(cd "$b" && pwd)/src/cli/matorage
		rm -f "$DIR/base.db"*
		run "first sync (v1, v3) into a fresh catalog" fresh.db "$B" sync
		MATORAGE_CATALOG=$DIR/base$i.db "$B" sync > /dev/null
	done
	$NOCAT "$M" put g x="$DIR/one.npy" --append > /dev/null 2>&1
	i=0
	for b in "$@"; do
		i=$((i + 1))
		B=$(cd "$b" && pwd)/src/cli/matorage
		rm -f "$DIR/base.db"*
		cp "$DIR/base$i.db" "$DIR/base.db"
		run "sync of v4 (a one-row append), v3 synced" next.db "$B" sync
		rm -f "$DIR/base.db"*
		run "first sync (v1, v3, v4) into a fresh catalog" fresh.db "$B" sync
	done
	rm -rf "$S"
done
