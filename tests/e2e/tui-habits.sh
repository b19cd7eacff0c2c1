#!/bin/bash
# tui-habits.sh — the browser at 40x10 and 250x70: a key that does nothing here says so, status news stays on its view, a finished job's result waits in the jobs list, the breadcrumb stays the path from the root, job numbers are :history's, g/G/$/0 and U move, a prompt's default is replaced by typing, and the matrix viewer keeps half the screen for values.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np
np.save('$WORK/img.npy', (np.arange(3000 * 12 * 30) % 251).astype(np.uint8).reshape(3000, 12, 30))
np.save('$WORK/n.npy', np.arange(10000, dtype=np.int64))"
check "pictures of 12x30" $M put pic img="$WORK/img.npy"
check "a dataset of 10000 rows" $M put big n="$WORK/n.npy" --shard-rows 2500
check "appended to" $M put big n="$WORK/n.npy" --shard-rows 2500 --append
# cut_cells: lines of the view (below the title, above the status line) holding a value cut short.
cut_cells() { screen | sed -n "2,$(($1 - 2))p" | grep -F "…"; }

tui_start 40 10
expect "the browser opens at 40x10" "sync local:"
keys Enter Enter / big Enter Enter
expect "big's versions" "v2"
ok $([ -z "$(cut_cells 10)" ]; echo $?) "no value or header cut in the versions list: $(cut_cells 10)"
ok $(screen | grep -q "ROWS" && screen | grep -qE "^v1 .* 10000$" || ! screen | grep -q "ROWS"; echo $?) \
	"ROWS shows 10000 whole or not at all"
keys G U
expect_not "U from v2 goes to its parent's row (no message)" "no parent"
keys Enter
expect "v1's details" "› big › v1"
ok $([ "$(screen | grep -c "^remote")" = 1 ] && [ "$(screen | grep -c "local  file://")" = 1 ]; echo $?) \
	"the remote shows once, under its field when it does not fit beside it"
ok $([ -z "$(cut_cells 10)" ]; echo $?) "no field value cut: $(cut_cells 10)"
keys U
expect "v1 has no parent" "this version has no parent"
keys BSpace BSpace / pic Enter Enter Enter A Enter
expect "the matrix viewer on a 12x30 row" "row 0 of 3000"
ok $(screen | grep -qE "^ +4 " && ! screen | grep -q "^min"; echo $?) \
	"at 40x10 the values keep the screen: rows 0-4 shown, no statistics footer"
keys F
expect "F in the matrix viewer says it does nothing here" "F (find) does nothing here"
keys '$'
expect "\$ shows the last column" "29"
keys 0
expect "0 the first" " 0 "
keys BSpace
expect_gone "the message stays with its view" "does nothing here"
keys q
ok $(tui_exited; echo $?) "q quits"

tui_start 250 70
expect "the browser opens at 250x70" "sync local:"
keys Enter Enter / pic Enter Enter Enter A Enter
expect "the matrix viewer" "row 0 of 3000"
expect "with room, the column statistics show" "mean"
expect "and what they cover" "below: each column over this row"
keys x
expect "x asks for rows, the one on screen by default" "rows (FIRST:END, empty: all): 0:1"
keys 2:4
expect "typing replaces the default" "rows (FIRST:END, empty: all): 2:4"
expect_not "rather than add to it" "0:12:4"
keys Escape
keys s BSpace
expect "a stats job finishing after the user left waits in the jobs list" "waits in the jobs list"
expect_not "its view did not jump in" "histogram"
keys J
expect "the jobs list offers the result" "done, Enter: result"
keys J
expect_not "J in the jobs list does not stack another" "jobs › jobs"
jobno=$(screen | grep -m1 " stats " | awk '{print $1}')
keys Enter
expect "Enter opens the waiting statistics" "histogram"
keys : history Enter
expect "the job history" "job history"
ok $(screen | grep -qE "^ *$jobno +stats "; echo $?) "the stats job has the same number in J and :history ($jobno)"
keys g
expect_not "g goes to the top: no message" "does nothing"

# ':' reaches the CLI's commands on DATASET[@VERSION].
keys : 'diff big@v2 v1' Enter
expect ":diff runs the diff" "big@v2 against big@v1"
expect "counting references" "shared        4 shards"
keys : 'export pic img' Enter
expect ":export asks for the rows of the attribute" "rows (FIRST:END, empty: all): 0:1"
keys Escape : 'verify big@v1' Enter
expect ":verify starts the verify job" "verify local:big@v1"
keys : 'tags big@v1' Enter
expect ":tags asks for the tags" "tags of big@v1"
keys 'dup dup x dup' Enter
expect "the tags are written" "tags written"
out=$($M info big@v1)
ok $(grep -qE "^tags: *dup, x$" <<< "$out"; echo $?) "tags are a set: dup once: $(grep '^tags' <<< "$out")"
keys : 'gc big --grace x' Enter
expect "a bad grace is refused" "--grace takes seconds"
keys : 'rm pic@v1' Enter
expect ":rm asks for the typed name" "pic@v1"
keys pic@v1 Enter
expect "the version is deleted, and gc offered without the grace period" "'delete now' skips the grace period"
keys : 'gc pic' Enter
expect "gc's preview right after a delete offers to delete the young shards now" "'delete now' to delete the"
keys 'delete now' Enter
expect "delete now deletes them" "gc result"
ok $([ -z "$(ls "$WORK/store/datasets/pic/shards" 2> /dev/null)" ]; echo $?) "pic's shards are gone"
keys q
ok $(tui_exited; echo $?) "q quits"

# Read-only: the gc preview writes nothing, so it is allowed; nothing is deleted.
check "a version to leave garbage" $M put junk n="$WORK/n.npy" --shard-rows 5000
check "removed" $M rm junk@v1
tui_start 120 30 --read-only
expect "read-only" "read-only"
keys : 'gc junk --grace 0' Enter
expect "the preview runs read-only" "would be deleted"
expect "and says nothing is deleted" "read-only: nothing is deleted"
ok $([ -n "$(ls "$WORK/store/datasets/junk/shards" 2> /dev/null)" ]; echo $?) "the shards are still there"
keys : 'rm big@v1' Enter
expect ":rm is refused read-only" "read-only: rm writes"
keys q
ok $(tui_exited; echo $?) "q quits"

# :gc without a dataset on the bucket row: the whole bucket's gc (its preview, read-only).
tui_start 120 30 --read-only
expect "read-only again" "sync local:"
keys Enter
expect "the bucket list" "DATASETS"
keys : 'gc --grace 0' Enter
expect "junk's leftovers are found from the bucket" "would be deleted"
# The job's start status can be replaced by its result before a look: its row in the jobs list stays.
keys J
expect_re ":gc on the bucket row previews the bucket's gc" "^ *[0-9]+ +gc-preview +done .* gc preview local *\$"
keys Escape
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
