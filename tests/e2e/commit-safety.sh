#!/bin/bash
# commit-safety.sh — concurrent appends form one chain, gc never deletes what a writer pinned, removed names stay removed, reserved names are refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE

# put_raw FILE KEY: an object written behind matorage's back (directories made on a file store).
put_raw() {
	[ "$OBJ_MODE" = s3 ] || mkdir -p "$(dirname "$OBJ_BASE/$2")"
	obj_put "$1" "$2"
}
# wait_for CMD...: poll (bounded, 60 s) until CMD succeeds.
wait_for() {
	for _ in $(seq 1 600); do "$@" && return 0; sleep 0.1; done
	return 1
}
# appends_at_once DATASET FIRST LAST TEXT: put --append of a$FIRST.npy..a$LAST.npy, all at
# once; ok when every one exits 0 (their errors shown otherwise).
appends_at_once() {
	local pids=() bad=0 i p
	for i in $(seq "$2" "$3"); do
		$M put "$1" id="$WORK/a$i.npy" --append > /dev/null 2> "$WORK/$1-app$i.err" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
	ok $bad "$4"
	[ $bad -eq 0 ] || cat "$WORK/$1"-app*.err | sed 's/^/# /'
}
# rows_are DATASET@VERSION N: the version holds ids 0..N-1, each once (attribute id).
rows_are() {
	$M get "$1" id -o "$WORK/ids.npy" > /dev/null &&
		$PY -c "import numpy as np, sys; a = np.load('$WORK/ids.npy')
sys.exit(0 if sorted(a.tolist()) == list(range($2)) else 1)"
}

$PY -c "
import numpy as np
for i in range(16):
    np.save('$WORK/a%d.npy' % i, np.arange(i * 100, (i + 1) * 100, dtype=np.int64))
np.save('$WORK/big.npy', np.random.default_rng(7).standard_normal((4000, 16)).astype(np.float32))
"

# ---- concurrent appends: none drops another's rows ----------------------------------------
$M put log id="$WORK/a0.npy" > /dev/null
appends_at_once log 1 12 "12 concurrent appends all exit 0"
ok $(rows_are log 1300; echo $?) "the latest holds every appended row once (1300 rows)"
chain=$($M ls -l log | awk 'NR > 1 { print $1, $NF }' | $PY -c "
import sys
rows = [l.split() for l in sys.stdin]
print('ok' if all(rows[i][1] == rows[i - 1][0] for i in range(1, len(rows))) and len(rows) == 13 else rows)")
ok $([ "$chain" = ok ]; echo $?) "the 13 versions form one chain, each the parent of the next ($chain)"

# ---- concurrent first appends: a dataset with no version yet ------------------------------
# Independent savers need no first version made apart: every append that finds no version
# starts empty, and whichever commits second continues the first's rows.
appends_at_once fresh 0 5 "6 concurrent appends to a dataset with no version all exit 0"
ok $(rows_are fresh 600; echo $?) "the latest holds every appended row once (600 rows)"
ok $([ "$($M ls fresh | wc -l)" -eq 6 ]; echo $?) "six versions, one per append"
fails "an append with other attributes than the first's is refused" 1 "appended attributes differ" \
	$M put fresh other="$WORK/a1.npy" --append

# ---- removed names stay removed -----------------------------------------------------------
$M rm log@v13 > /dev/null
check "after rm of the newest, the next put is v14, not v13" \
	bash -c "[ \"\$($M put log id=$WORK/a13.npy --append)\" = log@v14 ]"
fails "a removed name cannot be put again" 1 "log@v13 was removed" \
	$M put log@v13 id="$WORK/a13.npy"
ok $(obj_ls datasets/log/versions | grep -qx 'datasets/log/versions/v13.removed' ||
	obj_ls datasets/log/versions | grep -q 'v13.removed'; echo $?) "rm left a tombstone"
DST="$OBJ_BASE-dst"
$M push log@v12 "$DST" > /dev/null
$M --store "$DST" rm log@v12 > /dev/null
fails "push of a name removed in the destination is refused" 1 "log@v12 was removed from" \
	$M push log@v12 "$DST"

# ---- reserved and ambiguous names ---------------------------------------------------------
fails "put NAME@latest is refused" 1 "reserved" $M put q@latest id="$WORK/a1.npy"
fails "put NAME@LATEST is refused" 1 "reserved" $M put q@LATEST id="$WORK/a1.npy"
fails "an automatic-looking name beyond numbering is refused" 1 "not a valid automatic name" \
	$M put q@v999999999999999999 id="$WORK/a1.npy"
fails "a leading zero is refused (v07 reads as v7)" 1 "not a valid automatic name" \
	$M put q@v07 id="$WORK/a1.npy"
fails "a dataset name with '..' is refused" 1 "must not contain '..'" $M put 'A..B' id="$WORK/a1.npy"
ok $(! $M ls 2>/dev/null | grep -q '^q$'; echo $?) "nothing of q was written"

# A store that already holds such manifests (written by an older matorage) still works.
$M put old id="$WORK/a1.npy" > /dev/null
obj_get datasets/old/versions/v1.json "$WORK/v1.json"
for name in latest v1000000000000000000; do
	$PY -c "
import json
m = json.load(open('$WORK/v1.json'))
m['version'] = '$name'
m.pop('checksum', None)
json.dump(m, open('$WORK/$name.json', 'w'), separators=(',', ':'))"
	put_raw "$WORK/$name.json" "datasets/old/versions/$name.json"
done
check "ls -l of a dataset holding versions/latest.json" timeout 60 $M ls -l old
check "info of its latest" timeout 60 $M info old
check "store-wide ls -l" timeout 60 $M ls -l
check "gc dry run" timeout 60 $M gc
check "automatic numbering goes on (v2) past v1000000000000000000" \
	bash -c "[ \"\$(timeout 60 $M put old id=$WORK/a2.npy)\" = old@v2 ]"
check "rm old@latest removes the stray manifest" timeout 60 $M rm old@latest
ok $(! obj_ls datasets/old/versions | grep -q 'latest.json'; echo $?) "it is gone"
fails "rm old@latest again: no such thing" 1 "names no version" $M rm old@latest

# ---- gc against writers -------------------------------------------------------------------
# A live gc lock (of another host: only its ttl says it is alive) holds a re-put of identical
# data back until it is gone, so the shards it reuses cannot vanish under it.
$M put same x="$WORK/big.npy" --shard-size 16K > /dev/null
$M rm same@v1 > /dev/null
printf '{"format":1,"kind":"gc","dataset":"same","host":"elsewhere","ttl":600,"versions":[]}' \
	> "$WORK/gc.lock"
put_raw "$WORK/gc.lock" datasets/same/locks/00000000feedf00d.gc
$M put same x="$WORK/big.npy" --shard-size 16K > "$WORK/reput.out" 2>&1 &
reput=$!
sleep 2
ok $(kill -0 $reput 2>/dev/null; echo $?) "a writer waits while a live gc holds the dataset"
obj_rm datasets/same/locks/00000000feedf00d.gc
wait $reput
ok $? "it commits once the gc is gone: $(cat "$WORK/reput.out")"
check "and its version verifies" $M verify same@v2

# A live writer's pins keep unreferenced objects from gc --grace 0.
$M put pinned x="$WORK/big.npy" --shard-size 16K > /dev/null
shard=$(obj_ls datasets/pinned/shards | head -n 1)
$M rm pinned@v1 > /dev/null
printf '{"format":1,"kind":"write","dataset":"pinned","host":"elsewhere","ttl":600,"versions":[]}' \
	> "$WORK/w.lock"
put_raw "$WORK/w.lock" datasets/pinned/locks/00000000cafe0001.write
printf '%s\n' "$shard" > "$WORK/w.pin"
put_raw "$WORK/w.pin" datasets/pinned/locks/00000000cafe0001.0.pin
check "gc --delete --grace 0 beside a live writer" $M gc pinned --delete --grace 0
ok $(obj_ls datasets/pinned/shards | grep -qx "$shard"; echo $?) "keeps the shard the writer pinned"
ok $([ "$(obj_ls datasets/pinned/shards | wc -l)" -eq 1 ]; echo $?) "and deletes the rest"
# A writer building on a version that was removed: gc cannot tell what it named, so it refuses.
printf '{"format":1,"kind":"write","dataset":"pinned","host":"elsewhere","ttl":600,"versions":["v1"]}' \
	> "$WORK/w.lock"
put_raw "$WORK/w.lock" datasets/pinned/locks/00000000cafe0001.write
fails "gc refuses while a writer builds on a removed version" 1 "builds on pinned@v1, which was removed" \
	$M gc pinned --delete --grace 0
ok $(obj_ls datasets/pinned/shards | grep -qx "$shard"; echo $?) "nothing was deleted"
obj_rm datasets/pinned/locks/00000000cafe0001.write
check "without the lock gc goes on" $M gc pinned --delete --grace 0
ok $([ -z "$(obj_ls datasets/pinned/shards)" ] &&
	[ -z "$(obj_ls datasets/pinned/locks | grep -v '\.gc$')" ]; echo $?) \
	"and deletes the shard and the writer's leftover pin"

# An append whose parent is removed while it runs, with gc racing it: gc refuses to delete
# the parent's shards while the writer lives; the append then fails clearly, committing nothing.
$M put race id="$WORK/a0.npy" > /dev/null
$M put race id="$WORK/a1.npy" --append > /dev/null
# A recipe holds its append open until the file "go" appears (in the directory it runs in).
cat > "$WORK/slow.lua" <<'LUA'
local m = require("matorage")
local w = m.create("race", { append = true })
while not pcall(io.open, "go") do end
local ids = {}
for i = 1, 100 do ids[i] = 1000 + i end
w:append({ id = m.tensor(ids, "int64") })
w:commit()
LUA
(cd "$WORK" && exec $M run slow.lua > "$WORK/race.out" 2> "$WORK/race.err") &
appender=$!
has_write_lock() { obj_ls datasets/race/locks | grep -q '\.write$'; }
ok $(wait_for has_write_lock; echo $?) "the append holds its lock while it reads its input"
$M rm race@v2 > /dev/null
fails "gc refuses to delete while the append builds on the removed race@v2" 1 "builds on race@v2" \
	$M gc race --delete --grace 0
touch "$WORK/go"
wait $appender
ok $([ $? -eq 1 ] && grep -q "race@v2, which this append continues, was removed while it ran" \
	"$WORK/race.err"; echo $?) "the append fails naming its removed parent: $(cat "$WORK/race.err")"
check "race@v1 still verifies" $M verify race@v1
ok $([ "$($M ls race | tr '\n' ' ')" = "v1 " ]; echo $?) "no version was added"

done_testing
