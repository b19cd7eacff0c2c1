#!/bin/bash
# tui-actions.sh — browser actions go where they say: the copy destination is a remote picked with Tab (a typo creates nothing, a new store needs a URL and a yes), job titles name both ends, a delete on a bucket its remote no longer points to acts on that bucket, sync drops such buckets, one store is one catalog entry, q asks while a job runs.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(12).reshape(4, 3))"
check "a dataset in the default store" $M put tiny x="$WORK/x.npy"
check "a remote with the same dataset" $M --store "file://$WORK/far" put tiny x="$WORK/x.npy"
check "a second store with it too" $M --store "file://$WORK/other" put tiny x="$WORK/x.npy"
check "remote far" $M remote add far "file://$WORK/far"
check "remote other" $M remote add other "file://$WORK/other"
check "a remote to remove later" $M remote add gone "file://$WORK/far"

# One store, one entry: a store first used by URL, later named by a remote.
check "a store used by its URL" $M --store "file://$WORK/dup" put dupdata x="$WORK/x.npy" --tag dupword
check "later named by a remote" $M remote add dup "file://$WORK/dup"
check "sync" $M sync
out=$($M search dupword 2> /dev/null)
ok $([ "$(wc -l <<< "$out")" -eq 1 ] && grep -q "^dup" <<< "$out"; echo $?) \
	"search lists the store once, by its remote's name: $out"
"$PY" -c "import numpy as np; np.save('$WORK/x2.npy', np.arange(6).reshape(2, 3))"
check "a put by URL into a remote's store" $M --store "file://$WORK/dup" put dupdata x="$WORK/x2.npy" --tag dupword
out=$($M search dupword 2> /dev/null)
ok $([ "$(wc -l <<< "$out")" -eq 2 ] && ! grep -q "^file:" <<< "$out"; echo $?) \
	"is noted under the remote's name, not the URL: $out"

# A remote that accepts connections and never answers: its sync runs until canceled.
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True); time.sleep(120)' > "$WORK/mute.port" &
TUI_PIDS+=($!)
for _ in $(seq 50); do [ -s "$WORK/mute.port" ] && break; sleep 0.1; done
check "a remote that never answers" $M remote add mute s3://silent --endpoint "http://127.0.0.1:$(cat "$WORK/mute.port")"

tui_start 100 30
expect "the browser opens" "matorage › remotes"
expect "remotes listed" "other"
ok $(! screen | grep -q "^file:"; echo $?) "the URL the remote dup names is no entry of its own"
keys Enter Enter
expect "the default store's datasets" "tiny"
keys / tiny Enter Enter
expect "tiny's versions" "VERSION  CREATED"

keys p
expect "p asks for a destination" "copy tiny@v1 from local to (Tab: remotes)"
keys o Tab
expect "Tab completes a remote's name" "to (Tab: remotes): other"
keys C-u Tab
expect "Tab with nothing typed lists the remotes" "local  dup  far  gone  mute  other"
keys nosuch Enter
expect "a name that is no remote copies nothing" "no remote 'nosuch'"
ok $([ ! -e "$WORK/nosuch" ]; echo $?) "and creates no directory ./nosuch"

keys p "file://$WORK/newstore" Enter
expect "a URL asks before making a store" "is no remote: copy there"
keys no Enter
expect "anything but yes copies nothing" "copy: nothing copied"
ok $([ ! -e "$WORK/newstore" ]; echo $?) "and makes no store"
keys p "file://$WORK/newstore" Enter yes Enter
expect "yes copies" "1 shard(s) sent"
expect "the job's title names both ends" "copy local:tiny@v1 to file://$WORK/newstore"
check "the version is in the new store" $M --store "file://$WORK/newstore" info tiny@v1

# The bucket on screen is far's old place once far points elsewhere.
keys Escape Escape Escape Escape
expect "back at the remotes" "REMOTE"
keys / far Enter Enter Enter
expect "far's bucket" "tiny"
keys / tiny Enter Enter
expect "far's tiny versions" "VERSION  CREATED"
check "far now points at another store" $M remote add far "file://$WORK/other" --replace
keys D tiny@v1 Enter
expect "the delete runs on the bucket shown" "deleted from file://$WORK/far"
fails "the version is gone from the bucket shown" 1 "." $M --store "file://$WORK/far" info tiny@v1
check "and still in the store far points to now" $M --store "file://$WORK/other" info tiny@v1
keys Escape Escape Escape Escape
expect "back at the remotes" "REMOTE"
keys / far Enter Enter r
expect "after a sync, far lists the store it points to" "file://$WORK/other"
expect_gone "and not the bucket it no longer points to" "file://$WORK/far"

check "a remote removed from the command line" $M remote rm gone
keys Escape Escape
expect "back at the remotes, gone listed" "gone"
keys r
expect_gone "a sync drops the entry of a removed remote" "gone "

keys q
expect "q with a job running asks" "y or q quits and cancels"
keys x
# The answer goes to the status line, where a job that ends meanwhile may put its own
# news at once: what must hold is that the browser is still there, not which line won.
wait_for "not quitting" 3 || true
sleep 0.5
ok $([ ! -s "$WORK/exit" ] && screen | grep -qF "REMOTE"; echo $?) "any other key stays"
keys q y
ok $(tui_exited; echo $?) "y quits, exit status 0"
[ -s "$WORK/stderr" ] && sed 's/^/# stderr: /' "$WORK/stderr"
cat "$WORK/exit" | sed 's/^/# /' 
done_testing
