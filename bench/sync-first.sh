#!/bin/bash
# sync-first.sh — a first catalog sync of a very large version, build against build
# (doc/BENCHMARKS.md, "The first sync of a very large version"): the store growth-v2.sh
# makes of N one-row shards (v1, a format-1 v2 of N entries by bench_synth, v3 a one-row
# format-2 append of N+1, v2 removed), then `matorage sync` into a fresh catalog, RUNS
# times per build given, the builds taking turns; the medians of wall, user and system
# seconds (/usr/bin/time), and whether every build's catalog holds the same rows (a dump
# of the tables a sync writes, the time a fragment was read left out).  Each build's own
# binary is timed, not its libtool wrapper: src/cli/.libs/matorage with src/lib/.libs.
# Usage: bench/sync-first.sh BUILD_DIR [BUILD_DIR...]   (SYNC_SIZES="100000 1000000",
# SYNC_RUNS=3; SYNC_DISTINCT=1: every shard entry names an object of its own, as a real
# version's do, so the index of shards by sha256 grows at random places (the sync reads
# no shard object); a build may be its two .libs alone: the store is made by the first
# build that has its libtool wrapper)
BENCH_NAME=sync-first
. "$(dirname "$0")/lib.sh"
SIZES=${SYNC_SIZES:-100000}
RUNS=${SYNC_RUNS:-3}
for b in "$@"; do
	[ ! -x "$b/src/cli/matorage" ] || { M=$(cd "$b" && pwd)/src/cli/matorage; break; }
done
echo "# command: bench/sync-first.sh $*   (sizes: $SIZES; runs: $RUNS; distinct: ${SYNC_DISTINCT:-0})"
bench_machine
$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
# distinct MANIFEST: its shard entries each named by a sha256 of its own (its checksum
# made again as bench_synth makes it).
distinct() {
	$PY - "$1" <<'PYEOF'
import hashlib, json, sys
m = json.loads(open(sys.argv[1]).read())
for i, sh in enumerate(m["shards"]):
    sh["sha256"] = hashlib.sha256(str(i).encode()).hexdigest()
del m["checksum"]
t = json.dumps(m, separators=(",", ":"))[:-1]
open(sys.argv[1], "w").write(t + ',"checksum":"sha256:' + hashlib.sha256((t + "}").encode()).hexdigest() + '"}')
PYEOF
}
# dump DB: the rows a sync writes, in a form to compare.
dump() {
	sqlite3 "$1" ".dump shards" ".dump shard_lists" ".dump versions" ".dump datasets" \
		".dump attrs" ".dump tags" ".dump search" \
		"SELECT version_id, idx, sha256, bytes, first_row, rows, first_shard, nshards,
		 health, health_note, health_at <> '' FROM fragments ORDER BY 1, 2" | md5sum
}
echo "| shards | build | wall (s) | user (s) | system (s) | peak RSS | rows as the first build's |"
echo "|---|---|---|---|---|---|---|"
for N in $SIZES; do
	S=$DIR/s$N
	hook=
	[ "${SYNC_DISTINCT:-0}" = 0 ] || hook=distinct
	bench_frag_store "$M" "$DIR/one.npy" "$S" "$N" $hook
	rm -f "$DIR/times"
	for _ in $(seq "$RUNS"); do
		i=0
		for b in "$@"; do
			i=$((i + 1))
			B=$(cd "$b" && pwd)
			rm -f "$DIR/fresh$i.db"*
			MATORAGE_CATALOG=$DIR/fresh$i.db LD_LIBRARY_PATH=$B/src/lib/.libs \
				/usr/bin/time -f "$i %e %U %S %M" "$B/src/cli/.libs/matorage" sync \
				2>> "$DIR/times" > /dev/null
		done
	done
	i=0
	for b in "$@"; do
		i=$((i + 1))
		same=$([ "$(dump "$DIR/fresh$i.db")" = "$(dump "$DIR/fresh1.db")" ] && echo yes || echo NO)
		cols=""
		for c in 2 3 4 5; do
			cols="$cols $(awk -v i=$i -v c=$c '$1 == i { print $c }' "$DIR/times" | med)"
		done
		read -r wall user sys rss <<< "$cols"
		printf '| %s | %s | %s | %s | %s | %s MB | %s |\n' "$N" "$b" "$wall" "$user" "$sys" \
			"$((rss / 1024))" "$same"
	done
	rm -rf "$S"
done
