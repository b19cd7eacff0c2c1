#!/bin/bash
# tui-keys.sh — editing and keys in the browser: a line editor (cursor keys, Home/End, ^A ^E ^W ^U, history, Tab completion of commands, paths and datasets), a footer of the keys that work in the view at 80x24, read-only refusals that say why, `matorage --read-only`, the help's `:run`, and `matorage tui` without a terminal.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(12).reshape(4, 3))"
check "a dataset" $M put tiny x="$WORK/x.npy"
printf 'local m = require("matorage")\nm.log("hello")\n' > good.lua

# Without a terminal the browser never starts: at once, with a reason.
start=$(date +%s)
fails "matorage tui without a terminal exits with a clear message" 2 "must be a terminal" \
	timeout 10 $M tui < /dev/null
ok $(($(date +%s) - start < 5 ? 0 : 1)) "and at once"

tui_start 80 24 --read-only
expect "matorage --read-only opens the browser read-only" "read-only"
ok $(screen | head -1 | grep -q '  read-only'; echo $?) "the title keeps a gap before the read-only flag"
line=$(screen | tail -1)
ok $(! grep -q "verify\|copy\|tags" <<< "$line"; echo $?) "the remotes' footer lists no version keys: $line"
keys Enter Enter / tiny Enter Enter
expect "tiny's versions" "VERSION  CREATED"
keys p
expect "a write key says why it does nothing" "read-only: p (copy) would change a store"
keys Enter
wait_for lineage
line=$(screen | tail -1)
ok $(grep -q "S shards" <<< "$line" && grep -q ": cmd" <<< "$line" && ! grep -q "copy" <<< "$line"; echo $?) \
	"a version's footer at 80 columns: its keys, read-only ones left out: $line"
ok $([ "$(screen | head -1 | wc -L)" -le 80 ]; echo $?) "the title fits 80 columns"
keys q
ok $(tui_exited; echo $?) "q quits"

tmx kill-server 2> /dev/null
tui_start 80 24
expect "the browser opens" "sync local:"
keys Enter Enter / tiny Enter Enter Enter
expect "a version's details" "lineage"
line=$(screen | tail -1)
ok $(grep -q "p copy" <<< "$line" && grep -q "D delete" <<< "$line" && grep -q ": cmd" <<< "$line"; echo $?) \
	"at 80 columns the footer keeps the version's keys and ':': $line"

keys : hlp Left Left e
expect "Left moves the cursor back into the word" ":help"
keys Enter
expect "the edited command runs" "Keys (the footer"
keys / 'command line' Enter
expect "the help lists :run" "SCRIPT.lua"
keys Escape : ync Home s
expect "Home goes to the start" ":sync"
keys C-e ' now' C-w
expect_gone "^W deletes the word before the cursor" ":sync now"
keys C-e C-u
expect_gone "^U deletes to the start" ":sync"
keys he Tab
expect "Tab completes a command" ":help"
keys Enter Escape : Up
expect "Up brings back the last command" ":help"
keys C-u 'run go' Tab
expect "Tab completes a path" ":run good.lua"
keys Escape F ti Tab
expect "Tab completes a dataset's name" "search the catalog: tiny"
keys Enter
expect "and the search finds it" "search: tiny"
keys q
ok $(tui_exited; echo $?) "q quits"
done_testing
