#!/bin/bash
# cli-catalog.sh — the catalog from the command line: sync (incremental, rebuild after deletion, offline remotes), search, describe and its metadata object, sync's copy form.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
CAT="$XDG_DATA_HOME/matorage/catalog.db"
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
$T make "$WORK/x.npy" float32 50x4 1
$T make "$WORK/y.npy" int16 30 2

check "put mnist-train" $M put mnist-train pixels="$WORK/x.npy" --tag images --description "hand digits"
check "put speech" $M put speech wave="$WORK/y.npy"
ok $([ -f "$CAT" ]; echo $?) "a write creates the catalog at \$XDG_DATA_HOME/matorage/catalog.db"
out=$($M search mnist)
ok $(grep -q "^local	mnist-train@v1	images	" <<< "$out"; echo $?) "the write is searchable at once: $out"
out=$($M sync)
ok $(grep -q "^local: 2 dataset(s), 2 version(s): 0 read, 2 unchanged, 0 dropped" <<< "$out"; echo $?) \
	"sync reads no unchanged manifest: $out"
out=$($M sync local --full)
ok $(grep -q "2 read" <<< "$out"; echo $?) "sync --full reads them all: $out"
out=$($M search pix)
ok $(grep -q "mnist-train@v1" <<< "$out"; echo $?) "search matches attribute names by prefix"
out=$($M search hand digits)
ok $(grep -q "mnist-train@v1" <<< "$out"; echo $?) "several words must all match"
out=$($M search nothing-like-this 2> "$WORK/err")
ok $([ $? -eq 0 ] && [ -z "$out" ] && grep -q "nothing matches" "$WORK/err"; echo $?) \
	"no match: exit 0, nothing on stdout, a note on stderr"
fails "search needs words" 2 "usage|argument" $M search

check "describe a version" $M describe mnist-train@v1 -d "curated digits" --tag golden --untag images
out=$($M info mnist-train@v1)
ok $(grep -q "^description: curated digits$" <<< "$out" && grep -q "^tags: *golden$" <<< "$out"; echo $?) \
	"info shows the edited description and tags"
ok $([ -f "$WORK/store/datasets/mnist-train/meta/v1.json" ]; echo $?) "kept in meta/v1.json beside the manifest"
ok $(grep -q '"description":"hand digits"' "$WORK/store/datasets/mnist-train/versions/v1.json"; echo $?) \
	"the manifest is untouched"
ok $($M search golden | grep -q mnist-train@v1; echo $?) "the catalog knows the new tag"
fails "describe an unknown version" 1 "no such version" $M describe mnist-train@v9 -d x
fails "describe without a change" 2 "nothing to change" $M describe mnist-train@v1
fails "describe needs a version" 2 "DATASET@VERSION" $M describe mnist-train -d x
fails "an empty tag is refused" 1 "empty" $M describe mnist-train@v1 --tag ""

# The catalog is a cache: without it nothing is lost.
rm -f "$CAT" "$CAT-wal" "$CAT-shm"
out=$($M sync)
ok $(grep -q "2 read" <<< "$out" && $M search golden | grep -q mnist-train@v1; echo $?) \
	"a deleted catalog is rebuilt by sync, edits included"

# A remote that cannot be reached is reported, marked offline, and the others still sync.
check "an unreachable remote" $M remote add far s3://nowhere --endpoint http://127.0.0.1:9
out=$($M sync 2> "$WORK/err")
ok $([ $? -eq 1 ] && grep -q "^local: " <<< "$out" && [ "$(wc -l < "$WORK/err")" -ge 1 ]; echo $?) \
	"sync exits 1 for the unreachable remote and still syncs local"
state=$("$PY" -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("select online from remotes where name = ?", ("far",)).fetchone()[0])' "$CAT")
ok $([ "$state" = 0 ]; echo $?) "the catalog marks it offline: online=$state"
check "remove it" $M remote rm far
fails "sync of a store that cannot be opened" 1 "." $M sync file:///proc/no-store-here
fails "--threads belongs to the copy form" 2 "threads" $M sync -j 2
fails "--full belongs to the refresh form" 2 "full" $M sync "$WORK/store" "$WORK/b" --full

# The copy form still copies, and takes the edited metadata along.
out=$($M sync "$WORK/store" "$WORK/b")
ok $(grep -q "2 version(s) copied" <<< "$out"; echo $?) "sync SRC DST copies: $out"
out=$($M --store "$WORK/b" info mnist-train@v1)
ok $(grep -q "^tags: *golden$" <<< "$out"; echo $?) "with the edited tags"
ok $($M search golden | grep -q "$WORK/b	mnist-train@v1"; echo $?) "and the catalog learns the destination"

check "rm a version" $M rm speech@v1
ok $($M search wave 2> /dev/null | grep -q "^local"; [ $? -eq 1 ]; echo $?) "rm drops it from the catalog"
# Concurrent writers share one catalog: every put notes its version, none reports the
# catalog locked, and a fresh catalog made by several processes at once comes out whole.
# Each put has a dataset of its own, so no later put's note can make up for a lost one.
conc=(env XDG_DATA_HOME="$WORK/xdg-conc" MATORAGE_STORE="$WORK/conc-store")
pids=()
for round in 1 2; do
	for i in $(seq 12); do
		"${conc[@]}" $M put "c$round-$i" x="$WORK/x.npy" > "$WORK/conc.$round.$i" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	pids=()
done
ok $(! cat "$WORK"/conc.* | grep -q "warning\|locked"; echo $?) \
	"24 concurrent puts: no catalog warning ($(cat "$WORK"/conc.* | grep -c "warning\|locked"))"
stored=$(for d in $("${conc[@]}" $M ls); do "${conc[@]}" $M ls "$d" | sed "s/^/$d@/"; done | sort)
listed=$("$PY" -c 'import sqlite3, sys
for d, v in sqlite3.connect(sys.argv[1]).execute("select d.name, v.name from versions v join datasets d on d.id = v.dataset_id"):
    print(f"{d}@{v}")' "$WORK/xdg-conc/matorage/catalog.db" | sort)
ok $([ "$(wc -l <<< "$stored")" -eq 24 ] && [ "$stored" = "$listed" ]; echo $?) \
	"the catalog lists all 24 versions the store holds, without a sync ($(wc -l <<< "$listed"))"
done_testing
