#!/bin/bash
# compact.sh — `matorage compact` and `ingest --compact-every`: the rows of the new version are exactly the old ones in order, shards shrink, full ones are reused, later appends are carried over, a concurrent ingest loses nothing, and bad arguments are refused.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
I="$PY $top_srcdir/tests/e2e/ingest_tool.py"
ATTRS=(--attr x=float32:3 --attr y=int64 --attr z=float16:2x2)

# digest DATASET@VERSION: one sha256 over every attribute's rows.
digest() {
	for a in x y z; do
		$M get "$1" $a -o "$WORK/d-$a.npy" > /dev/null || return 1
		sha256sum < "$WORK/d-$a.npy"
	done | sha256sum | cut -d' ' -f1
}
field() { $M info "$1" 2>/dev/null | awk -v f="$2:" '$1 == f {print $2}'; }
latest() { $M ls "$1" | tail -1; }

# ---- a stream of small versions: 1000 rows in 10 commits of 100 ----
$I gen jsonl 1000 0 7 | $M ingest ds "${ATTRS[@]}" --commit-rows 100 > /dev/null 2>&1
before=$(digest ds@v10)
check "compact: a new version" bash -c "$M compact ds --shard-rows 300 > $WORK/out 2> $WORK/err"
ok $(grep -qx "ds@v11" "$WORK/out"; echo $?) "compact: the new version named on stdout"
ok $([ "$(digest ds@v11)" = "$before" ]; echo $?) "compact: every row identical (sha256 of all rows before and after)"
$M get ds y -o "$WORK/y.npy" > /dev/null
check "compact: the rows in their order" $I prefix "$WORK/y.npy" 1000 0
ok $([ "$(field ds@v10 shards)" = 10 ] && [ "$(field ds@v11 shards)" = 4 ]; echo $?) \
	"compact: 10 shards of 100 rows became 4 of at most 300"
ok $([ "$(field ds@v11 rows)" = 1000 ] && $M info ds@v11 | grep -q "^parent: *v10" && \
	$M info ds@v11 | grep -A1 "^sources:" | grep -q "ds@v10"; echo $?) \
	"compact: parent and lineage name the compacted version"
check "compact: the new version verifies" $M verify ds@v11
check "compact: ds@v10 is still there, unchanged" bash -c "[ \"\$($(declare -f digest); M=$M WORK=$WORK; digest ds@v10)\" = $before ]"

# ---- full-size shards are reused, a compact version is left alone ----
$I gen jsonl 150 1000 8 | $M ingest ds "${ATTRS[@]}" --commit-rows 50 > /dev/null 2>&1
check "compact again: full-size shards reused as they were" bash -c \
	"$M compact ds --shard-rows 300 2>&1 >/dev/null | grep -q '(3 reused as they were)'"
ok $([ "$(field ds shards)" = 4 ] && [ "$(field ds rows)" = 1150 ]; echo $?) \
	"compact again: 1150 rows in 4 shards (3 reused, 250 rows repacked)"
$M get ds y -o "$WORK/y.npy" > /dev/null
check "compact again: the rows in their order" $I prefix "$WORK/y.npy" 1150 0
n=$($M ls ds | wc -l)
fails "a compact version is left alone" 0 "compact already" $M compact ds --shard-rows 300
ok $([ "$($M ls ds | wc -l)" = "$n" ]; echo $?) "no version written when nothing would change"
check "--target-mb: one shard of at most 1 MiB" bash -c \
	"$M compact ds --target-mb 1 > /dev/null 2>&1 && [ \$($M info ds | awk '/^shards:/ {print \$2}') = 1 ]"

# ---- compacting an older version carries over what later appends added ----
$I gen jsonl 200 0 7 | $M ingest old "${ATTRS[@]}" --commit-rows 20 > /dev/null 2>&1
whole=$(digest old@v10)
check "compact old@v4 while v10 is the latest" bash -c "$M compact old@v4 --shard-rows 1000 2> $WORK/err"
ok $(grep -q "the last 120 of them appended after v4 and carried over" "$WORK/err"; echo $?) \
	"the 120 rows v5..v10 appended are carried over"
ok $([ "$(digest old)" = "$whole" ] && [ "$(field old shards)" = 7 ]; echo $?) \
	"the new latest holds every row of v10 in order: v4's 80 in one shard, then v5..v10's 6"
# old@v6's shards begin no longer the latest's (v4's are repacked there).
fails "a latest that does not continue the version is refused, nothing committed" 1 \
	"old@v11, now the latest, does not continue old@v6" $M compact old@v6 --shard-rows 1000

# ---- a concurrent ingest loses nothing ----
# A slow producer commits every 25 rows while compactions run one after another.
rm -f "$WORK/fifo"
mkfifo "$WORK/fifo"
$I gen jsonl 600 0 11 0.004 > "$WORK/fifo" 2> /dev/null &
gen=$!
$M ingest live "${ATTRS[@]}" --commit-rows 25 < "$WORK/fifo" > "$WORK/live.out" 2> "$WORK/live.err" &
ing=$!
runs=0
for _ in $(seq 30); do
	sleep 0.2
	$M ls live > /dev/null 2>&1 || continue
	$M compact live --shard-rows 100 >> "$WORK/live.compact" 2>&1 && runs=$((runs + 1))
	kill -0 $ing 2> /dev/null || break
done
wait $gen
wait $ing
ing_rc=$?
echo "# $runs compactions ran beside the ingest"
$M get live y -o "$WORK/y.npy" > /dev/null
ok $([ $ing_rc -eq 0 ] && $I prefix "$WORK/y.npy" 600 0 | grep -qx 600; echo $?) \
	"concurrent ingest: all 600 rows in the latest, each once, in order (ingest exit $ing_rc)"
ok $([ $runs -gt 1 ]; echo $?) "concurrent ingest: compactions did run meanwhile ($runs)"
check "concurrent ingest: the latest verifies" $M verify live

# ---- ingest --compact-every ----
$I gen jsonl 400 0 7 | $M ingest ev "${ATTRS[@]}" --commit-rows 40 --compact-every 4 > "$WORK/ev.out" 2> "$WORK/ev.err"
$M get ev y -o "$WORK/y.npy" > /dev/null
ok $($I prefix "$WORK/y.npy" 400 0 | grep -qx 400; echo $?) "--compact-every 4: all 400 rows, in order"
ok $([ "$(grep -c 'compact ev@' "$WORK/ev.err")" = 2 ] && [ "$(field ev shards)" = 3 ]; echo $?) \
	"--compact-every 4: compacted after v4 and v9; 3 shards in the end, not 10"

# ---- parity, gc ----
check "--parity protects the new version" bash -c \
	"$I gen jsonl 30 0 7 | $M ingest par ${ATTRS[*]} --commit-rows 10 > /dev/null 2>&1 && $M compact par --parity 2+1 2>&1 | grep -q 'protected with 2+1'"
for v in $($M ls ds | head -n -1); do $M rm ds@$v > /dev/null 2>&1; done
after=$(digest ds)
check "gc after removing the old versions deletes their small shards" bash -c \
	"$M gc ds --delete --grace 0 | grep -q '^deleted [1-9]'"
ok $([ "$(digest ds)" = "$after" ] && $M verify ds > /dev/null; echo $?) "gc: the compacted version reads the same and verifies"

# ---- bad arguments ----
fails "--shard-rows and --target-mb together are a usage error" 2 "not both" $M compact ds --shard-rows 5 --target-mb 1
fails "--shard-rows 0 is a usage error" 2 "shard-rows" $M compact ds --shard-rows 0
fails "no dataset is a usage error" 2 "" $M compact
fails "a missing dataset fails naming it" 1 "nope" $M compact nope
fails "a missing version fails naming it" 1 "v99" $M compact ds@v99
fails "--compact-every 0 is a usage error" 2 "compact-every" bash -c "echo '{\"y\": 1}' | $M ingest z --attr y=int64 --compact-every 0"

done_testing
