#!/bin/bash
# catalog-heal.sh — the catalog is a cache: a truncated or garbage catalog.db is moved aside (one warning naming where), a new one is made and sync fills it; at most two such files are kept; search finds a dataset at every moment of a sync.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
CAT="$XDG_DATA_HOME/matorage/catalog.db"
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
cd "$WORK" || exit 1
$T make x.npy float32 20x4 1

check "put zebra" $M put zebra x=x.npy --description "striped findme"
for i in 1 2 3 4 5 6 7 8; do $M put d$i x=x.npy > /dev/null || echo "# put d$i failed"; done
check "sync" $M sync
ok $($M search striped | grep -q "zebra@v1"; echo $?) "search finds zebra"

# damage HOW: a truncated (half) or garbage (random bytes, seed 7) catalog, no WAL beside it.
damage() {
	rm -f "$CAT-wal" "$CAT-shm"
	if [ "$1" = truncated ]; then
		truncate -s $(( $(stat -c %s "$CAT") / 2 )) "$CAT"
	else
		$PY -c "import random,sys; random.seed(7); sys.stdout.buffer.write(bytes(random.randrange(256) for _ in range(65536)))" > "$CAT"
	fi
}

for how in truncated garbage; do
	damage $how
	out=$($M put w-$how x=x.npy 2>&1)
	rc=$?
	nwarn=$(grep -c "warning" <<< "$out")
	ok $([ $rc -eq 0 ] && [ "$nwarn" -eq 1 ] &&
		grep -q "warning: the catalog was damaged; .* moved aside to $CAT\.corrupt-" <<< "$out"; echo $?) \
		"$how catalog.db: a put warns once, naming the file moved aside: $(tr '\n' '|' <<< "$out")"
	out=$($M sync 2>&1)
	ok $([ $? -eq 0 ] && ! grep -q "warning\|malformed\|not a database" <<< "$out"; echo $?) \
		"$how: sync then rebuilds it with no error: $(tr '\n' '|' <<< "$out")"
	out=$($M search striped 2>&1)
	ok $(grep -q "zebra@v1" <<< "$out"; echo $?) "$how: search finds zebra again"
	out=$($M put w2-$how x=x.npy 2>&1)
	ok $([ $? -eq 0 ] && ! grep -q warning <<< "$out"; echo $?) "$how: the next write is quiet"
done

damage garbage
out=$($M sync 2>&1)
ok $([ $? -eq 0 ] && [ "$(grep -c warning <<< "$out")" -eq 1 ]; echo $?) \
	"sync itself on a garbage catalog: one warning, exit 0: $(tr '\n' '|' <<< "$out")"
damage truncated
out=$($M search striped 2>&1)
ok $(grep -q "warning: the catalog was damaged" <<< "$out"; echo $?) "search on a damaged catalog says so"
n=$(ls "$CAT".corrupt-* 2>/dev/null | wc -l)
ok $([ "$n" -eq 2 ]; echo $?) "four files moved aside, the newest two kept: $n"

# ---- search while a sync runs ----
check "sync" $M sync
for i in $(seq 9 40); do $M put d$i x=x.npy > /dev/null || echo "# put d$i failed"; done
miss=0
for round in 1 2 3; do
	$M sync --full > sync.out 2>&1 &
	sp=$!
	for q in 1 2 3 4 5 6 7 8 9 10; do
		$M search striped 2> /dev/null | grep -q "zebra@v1" || miss=$((miss + 1))
	done
	wait $sp || echo "# sync failed: $(cat sync.out)"
done
ok $([ $miss -eq 0 ]; echo $?) "30 searches during 3 full syncs of 41 datasets all find zebra: $miss missed"

done_testing
