#!/bin/bash
# tui-state.sh — the browser shows what happened, in full and as it is now: the last error whole (E) with its traceback's tabs as blanks, a job's log live through a cancel, datasets the command line adds without r, a filter that applies as one types and leaves with its view, gc saying what it keeps and updating its preview once it deleted.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
cat > long.lua << 'EOF2'
local function deep()
	error("the first half of a long message that a status line cuts, " ..
		"and the useful end: row 6346 fails its checksum")
end
deep()
EOF2
cat > ticking.lua << 'EOF2'
local m = require("matorage")
local i = 0
while true do
	i = i + 1
	if i % 2000000 == 0 then m.log("tick " .. i // 2000000) end
end
EOF2
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(12).reshape(4, 3)); np.save('$WORK/y.npy', np.arange(40).reshape(8, 5))"
check "a dataset" $M put tiny x="$WORK/x.npy"
check "a dataset for gc, v1" $M put gcd x="$WORK/x.npy"
check "and v2" $M put gcd x="$WORK/y.npy"

tui_start 80 24
expect "the browser opens" "sync local:"
keys : 'run long.lua' Enter
expect "the recipe fails, its message cut at the edge" "E: all of it"
keys E
expect "E shows the whole message" "row 6346 fails its checksum"
expect "and the traceback" "stack traceback:"
ok $(! screen | grep -q '^[?][^ ]'; echo $?) "tabs in the traceback show as blanks, not '?'"
keys Escape

keys : 'run ticking.lua' Enter
expect "a long recipe starts" "started: run ticking.lua"
keys J Enter
expect "its log opens while it runs" "running"
expect "and grows" "tick 2"
keys c
expect "c cancels it; the open log says so" "canceled:"
n1=$(screen | grep -c "^tick")
sleep 1.5
n2=$(screen | grep -c "^tick")
ok $([ "$n1" = "$n2" ]; echo $?) "and it gains no line after the cancel ($n1, $n2)"
keys Escape Escape

keys Enter Enter
expect "the store's datasets" "tiny"
check "a dataset added from the command line" $M put fresh x="$WORK/x.npy" --tag newcomer
expect "shows without r, in a few seconds" "fresh"
# Objects a program wrote without telling the catalog: the store is watched too.
check "a dataset written elsewhere" $M --store "file://$WORK/elsewhere" put unnoted x="$WORK/x.npy"
cp -r "$WORK/elsewhere/datasets/unnoted" "$WORK/store/datasets/"
expect "a dataset copied into the store behind the catalog's back shows too" "unnoted"

keys f fr
expect_gone "the filter applies as it is typed" "tiny"
ok $(! screen | grep -q unnoted; echo $?) "and leaves only what matches"
keys Escape
expect "Esc puts the old filter back" "tiny"
keys f tiny Enter
expect "a filter set with Enter" "filter: tiny (1 rows)"
keys Escape
expect_gone "leaving the view clears what the status line said of it" "filter: tiny"

keys Enter
keys : 'search zzzznothing' Enter
expect "an empty search says so, and how to search again" "no version matches; M: the checkpoints, F to search again"
keys Escape

# gc: v1's data goes when v1 goes, once older than the grace period.
check "v1 deleted" $M rm gcd@v1
keys / gcd Enter X
expect "a young object is kept, and gc says so" "kept for the 1 h grace period"
for f in $(find "$WORK/store/datasets/gcd/shards" -type f); do touch -d '2 hours ago' "$f"; done
# The preview offers 'delete now' for the young one: Esc keeps it, Esc leaves the preview.
keys Escape Escape X
expect "an old one would be deleted" "would be deleted"
keys -l delete
keys Enter
expect "after the deletion the preview says what was deleted" "gc: 1 objects"
expect "under its new title" "gc result"
# A damaged shard: its verification, however long, is read whole in the shards list.
f=$(find "$WORK/store/datasets/tiny/shards" -type f | head -1)
"$PY" -c "import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
for i in range(len(b) - 600, len(b) - 500): b[i] ^= 0xff
open(p, 'wb').write(b)" "$f"
keys Escape / tiny Enter Enter v
expect "verify finds the damage" "0 shards sound, 1 damaged"
want=$($M verify tiny 2>&1 | grep -o 'sha256 is [0-9a-f]*' | tail -c 7)
keys Enter S
expect "the shard's VERIFIED column wraps to its end ($want)" "$want"
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
