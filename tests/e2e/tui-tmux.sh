#!/bin/bash
# tui-tmux.sh — the browser on a real terminal (tmux): navigate to a shard, matrix values, a tag edit that reaches the bucket, typed-name delete, an offline remote, resizes, canceling a job (S3).
# With MT_TEST_STORE=s3 the store is an S3 prefix behind the signing proxy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
. "$(dirname "$0")/tui-lib.sh"
use_store
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/config.json"
"$PY" - "$WORK" << 'EOF'
import sys
import numpy as np
w = sys.argv[1]
np.save(f"{w}/image.npy", (np.arange(3 * 4 * 5) * 4).astype(np.uint8).reshape(3, 4, 5))
np.save(f"{w}/label.npy", np.array([7, 8, 9], dtype=np.int64))
np.save(f"{w}/big.npy", np.arange(64 * 1024, dtype=np.float32).reshape(64, 1024))
EOF
check "a small dataset" $M put tiny image="$WORK/image.npy" label="$WORK/label.npy" --tag digits
check "a dataset of 16 shards" $M put big x="$WORK/big.npy" --shard-rows 4
# A remote nobody answers at: the browser must mark it offline, not hang.
check "an unreachable remote" $M remote add far s3://nowhere --endpoint http://127.0.0.1:9

# And one that accepts connections and never answers: quitting must not wait for it.
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True); time.sleep(120)' > "$WORK/mute.port" &
MUTE_PID=$!
for _ in $(seq 50); do [ -s "$WORK/mute.port" ] && break; sleep 0.1; done
check "a remote that never answers" $M remote add mute s3://silent --endpoint "http://127.0.0.1:$(cat "$WORK/mute.port")"

TUI_PIDS+=("$MUTE_PID")

tui_start 80 24
expect "matorage with no arguments on a terminal opens the browser" "matorage › remotes"
ok $(tmx capture-pane -e -p -t mt | grep -q $'\e\\[[0-9;]*3[0-7]m'; echo $?) "colours on a colour terminal"
expect "the store is synced into the catalog" "sync local:"
expect "the unreachable remote is marked offline" "offline"
keys Enter
expect "remote > bucket" "BUCKET"
keys Enter
expect "bucket > datasets" "digits"
keys / tiny Enter Enter
expect "dataset > versions" "VERSION  CREATED"
keys Enter
expect "version details" "lineage"
keys S Enter
expect "a shard's details: its key" "datasets/tiny/shards/"
expect "and its verify status" "verified   never"

keys BSpace BSpace A Enter ']'
expect "the matrix viewer on row 1" "row 1 of 3"
expect "shows row 1's values (80..156)" "156"
keys BSpace BSpace

keys t C-u 'golden curated' Enter
expect "a tag edit finishes" "tags written to"
out=$(obj_ls datasets/tiny/meta)
ok $([ "$out" = datasets/tiny/meta/v1.json ]; echo $?) "the edit is an object in the bucket: $out"
obj_get datasets/tiny/meta/v1.json "$WORK/meta.json"
ok $(grep -q '"golden"' "$WORK/meta.json"; echo $?) "holding the new tag"
out=$($M info tiny@v1)
ok $(grep -q 'tags: *golden, curated' <<< "$out"; echo $?) "matorage info shows it"

keys D 'tiny@v9' Enter
expect "delete refuses a wrong typed name" "not deleted: 'tiny@v9' is not 'tiny@v1'"
check "and the version is still there" $M info tiny@v1

tmx resize-window -t mt -x 200 -y 60
expect "redrawn at 200x60" "zstd level"
# The text may show before the redraw at the new size: wait (bounded) for a wide line.
for _ in $(seq 200); do [ "$(screen | wc -L)" -gt 80 ] && break; sleep 0.1; done
width=$(screen | wc -L)
ok $([ "$width" -le 200 ] && [ "$width" -gt 80 ]; echo $?) "lines use the width, none wider than 200: $width"
tmx resize-window -t mt -x 80 -y 24
keys C-l
expect "redrawn at 80x24" "lineage"
ok $([ "$(screen | wc -l)" -le 24 ]; echo $?) "24 lines"

if [ "$OBJ_MODE" = s3 ]; then
	# Every shard read takes 2 s: a verify of 16 shards runs long enough to cancel.
	s3_faults '{"rules": [{"match": "GET .*/big/shards/", "action": "delay", "delay_ms": 2000, "count": -1}]}'
	keys BSpace BSpace / big Enter Enter v
	expect "a verify job starts" "started: verify local:big@v1"
	keys J
	expect "the jobs list shows it running" "running"
	keys c
	expect "c cancels it" "canceled"
	s3_faults clear
fi

keys J
expect "the sync of the silent remote is still running" "sync mute"
keys q
expect "q asks while the job runs" "y or q quits and cancels"
keys y
tui_exited
ok $? \
	"q quits with status 0 within 10 s, a job stuck on the network or not"
ok $([ ! -s "$WORK/stderr" ]; echo $?) "nothing was printed over the screen"
[ -s "$WORK/stderr" ] && sed 's/^/# stderr: /' "$WORK/stderr"

# Straight to a dataset's versions, as the demo does.
tmx new-session -d -s open -x 80 -y 24 \
	"env NO_COLOR=1 MATORAGE_STORE='$MATORAGE_STORE' XDG_DATA_HOME='$XDG_DATA_HOME' MATORAGE_CONFIG='$MATORAGE_CONFIG' $M tui --open tiny --read-only"
for _ in $(seq 100); do tmx capture-pane -p -t open | grep -q "VERSION  CREATED" && break; sleep 0.1; done
out=$(tmx capture-pane -p -t open)
ok $(grep -q "› tiny" <<< "$out" && grep -q "read-only" <<< "$out"; echo $?) "tui --open DATASET starts on its versions"
out=$(tmx capture-pane -e -p -t open)
ok $(! grep -q $'\e\\[[0-9;]*[34][0-7]m' <<< "$out" && grep -q $'\e\\[[0-9;]*7m' <<< "$out"; echo $?) \
	"NO_COLOR: no colours, the selection in reverse video"
tmx send-keys -t open q
# On a terminal (script's), before the screen opens.
out=$(script -qec "$M tui --open nosuch" /dev/null < /dev/null 2>&1)
ok $([ $? -eq 1 ] && grep -q "no such dataset" <<< "$out"; echo $?) \
	"tui --open of a dataset the catalog lacks ($out)"

# Not a terminal: the usage, as before, never a browser waiting for keys.
fails "without a terminal, no arguments is a usage error" 2 "usage" $M < /dev/null
done_testing
