#!/bin/bash
# s3-faults.sh — push, pull and get through injected faults (503 SlowDown, 500, dropped connections, truncated bodies, delays,
# a server that dies mid-push): they complete, or past the retry budget fail with one clear line and commit nothing.
. "$(dirname "$0")/lib.sh"
s3_require
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
L="$WORK/local"
S=s3://faults/team
$T make "$WORK/x.npy" float32 2000x64 1
$M --store "$L" put ds x="$WORK/x.npy" --shard-rows 200 > /dev/null # 10 shards

# count_log REGEX: requests in the proxy's log matching REGEX.
count_log() { s3_log | grep -Ec -- "$1"; }
same_as_x() { $T same "$WORK/x.npy" "$1"; }

s3_log_clear
s3_faults '{"rules":[{"match":"^PUT .*/shards/","action":"503","count":3}]}'
check "push completes through three 503 SlowDown answers" $M --store "$L" push ds $S
ok $([ "$(count_log '^PUT .*/shards/.* 503')" -eq 3 ]; echo $?) "the proxy answered 503 three times"
check "what was pushed verifies" $M --store $S verify ds

s3_faults '{"rules":[{"match":"^GET .*/shards/","action":"drop","count":3}]}'
check "get completes through dropped connections" bash -c \
	"$M --store $S get ds x -o $WORK/o1.npy && $T same $WORK/x.npy $WORK/o1.npy"
s3_faults '{"rules":[{"match":"^GET .*/shards/","action":"truncate","count":3}]}'
check "get completes through truncated bodies" bash -c \
	"$M --store $S get ds x -o $WORK/o2.npy && $T same $WORK/x.npy $WORK/o2.npy"
s3_faults '{"rules":[{"match":"^GET .*/shards/","action":"corrupt","count":1},{"match":"^GET .*/shards/","action":"corrupt","after":12,"count":1}]}'
check "get completes through bodies corrupted in transit (index and chunk read again)" bash -c \
	"$M --store $S get ds x -o $WORK/o5.npy && $T same $WORK/x.npy $WORK/o5.npy"
s3_faults clear
s3_faults '{"rules":[{"match":"^GET .*/shards/","action":"corrupt","count":-1}]}'
fails "a chunk index corrupted on every read: the error names the shard" 1 \
	"ds@v1: shard [0-9]+: datasets/ds/shards/[0-9a-f]{64}\.h5: chunk index: checksum mismatch" \
	$M --store $S get ds x -o "$WORK/o6.npy"
s3_faults clear
s3_faults '{"rules":[{"match":"^GET .*/shards/","action":"corrupt","after":10,"count":-1}]}'
fails "a chunk corrupted on every read is never delivered: the error names shard and rows" 1 \
	"ds@v1: shard [0-9]+ \(datasets/ds/shards/[0-9a-f]{64}\.h5\): x chunk [0-9]+ \(rows [0-9]+\.\.[0-9]+\) fails its checksum, read twice" \
	$M --store $S get ds x -o "$WORK/o6.npy"
ok $([ ! -e "$WORK/o6.npy" ]; echo $?) "and no output file is left"
s3_faults clear
s3_faults '{"rules":[{"match":"^GET ","action":"500","count":2},{"match":"^GET ","action":"delay","delay_ms":300,"count":4}]}'
check "pull completes through 500s and delays" bash -c \
	"$M --store $WORK/pulled pull $S ds && $M --store $WORK/pulled verify ds"
s3_faults clear

# Past the retry budget: one clear line naming key, status and S3 code; no manifest is written.
s3_log_clear
s3_faults '{"rules":[{"match":"^PUT .*/shards/","action":"503","count":-1}]}'
err=$($M --store "$L" push ds s3://faults/other 2>&1 >/dev/null)
rc=$?
ok $([ $rc -eq 1 ] && [ "$(echo "$err" | wc -l)" -le 2 ] &&
	echo "$err" | head -1 | grep -Eq 'PUT .*datasets/ds/shards/[0-9a-f]{64}\.h5: HTTP 503 SlowDown.*gave up after [0-9]+ attempts'; echo $?) \
	"an endless 503 fails naming the key, HTTP 503, SlowDown and the attempts"
echo "# $err" | head -1
ok $([ "$(count_log '^PUT .*/versions/')" -eq 0 ]; echo $?) "no manifest PUT was attempted"
s3_faults clear
ok $([ -z "$($M --store s3://faults/other ls 2>/dev/null)" ]; echo $?) "the destination shows no dataset"

# A multipart upload whose part keeps failing is aborted.
$T make "$WORK/big.npy" float64 2600000 4 # about 20 MB: one shard, several parts
$M --store "$L" put big x="$WORK/big.npy" > /dev/null
s3_log_clear
s3_faults '{"rules":[{"match":"^PUT .*partNumber=2","action":"503","count":-1}]}'
fails "a part that never goes up fails the push" 1 "partNumber|part 2|HTTP 503" \
	$M --store "$L" push big s3://faults/mp
ok $([ "$(count_log '^DELETE .*uploadId=')" -ge 1 ]; echo $?) "the multipart upload was aborted (DELETE ?uploadId)"
s3_faults clear
s3_faults '{"rules":[{"match":"^PUT .*partNumber=2","action":"503","count":2}]}'
check "with two 503s on a part the multipart push completes" $M --store "$L" push big s3://faults/mp
check "and reads back" bash -c "$M --store s3://faults/mp get big x -o $WORK/o3.npy && $T same $WORK/big.npy $WORK/o3.npy"
s3_faults clear

# The server dies mid-push: error, nothing committed; the re-run sends only what is missing.
s3_faults '{"rules":[{"match":"^PUT .*/shards/","action":"delay","delay_ms":400,"count":-1}]}'
$M --store "$L" push ds s3://faults/killed --threads 2 > /dev/null 2> "$WORK/killed.err" &
pid=$!
for _ in $(seq 100); do
	[ "$(count_log '^PUT .*killed/datasets/ds/shards/.* 200')" -ge 3 ] && break
	sleep 0.1
done
s3_kill
wait $pid
rc=$?
ok $([ $rc -eq 1 ]; echo $?) "push fails when the server goes away (exit $rc)"
echo "# $(head -1 "$WORK/killed.err")"
s3_restart || echo "Bail out! cannot restart s3rver and the proxy"
s3_faults clear
ok $([ -z "$($M --store s3://faults/killed ls 2>/dev/null)" ]; echo $?) "nothing was committed"
# Only whole objects count: a PUT cut off by the kill may have left a short one, which the
# re-run must send again (same name, other size).
have=$(aws_cli s3 ls --recursive s3://faults/killed/datasets/ds/shards/ | while read -r _ _ size key; do
	f="$L/${key#*/}"
	[ -f "$f" ] && [ "$(stat -c %s "$f")" = "$size" ] && echo
done | wc -l)
s3_log_clear
out=$($M --store "$L" push ds s3://faults/killed 2>&1)
ok $? "the re-run finishes"
sent=$(count_log '^PUT .*killed/datasets/ds/shards/.* 200')
ok $([ "$have" -ge 1 ] && [ "$sent" -eq $((10 - have)) ]; echo $?) \
	"it uploads only the $((10 - have)) missing shards ($sent sent, $have were there)"
check "the version is complete" $M --store s3://faults/killed verify ds

done_testing
