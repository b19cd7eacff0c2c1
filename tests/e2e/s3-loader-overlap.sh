#!/bin/bash
# s3-loader-overlap.sh — over S3 the loader's requests that need nothing of each other go out together: opening the latest requests the listing of versions and the dataset's head at once (and a named version's manifest alone), a shard a window reads all through comes whole with its chunk index, otherwise the chunk indexes of the next window come with the current window's, and the second window's requests are in flight with the first's; epochs moved on with set_epoch still give every row as put.  Checked on the proxy's timed log, with 200 ms added to every request: the longest chain of requests each sent after the one before it answered.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
MT_TEST_STORE=s3 use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"

# 4000 rows of x (float32[256], 1 KiB a row) in 4 shards of 1000: with a 4,096,000-byte budget
# a window holds 2000 rows, so the epoch is 2 windows of 2 shards each.
$T make "$WORK/x.npy" float32 4000x256 1
$T make "$WORK/y.npy" int64 4000 2
check "put a" $M put a x="$WORK/x.npy" --shard-rows 1000
check "put b, with y too" $M put b x="$WORK/x.npy" y="$WORK/y.npy" --shard-rows 1000

out=$(pymt - "$MATORAGE_STORE" "$WORK/x.npy" <<'PYEOF'
import sys
import numpy as np
import matorage
url, x = sys.argv[1], np.load(sys.argv[2])
rows, same = [], True
for b in matorage.Loader(matorage.Store(url), "a", batch_rows=100, shuffle=True, seed=7,
                         prefetch_bytes=4096000):
    ids = np.asarray(b["_rows"], dtype=np.int64)
    rows += ids.tolist()
    same = same and np.array_equal(np.asarray(b["x"]).reshape(len(ids), 256), x[ids])
print(sorted(rows) == list(range(len(x))), same)
PYEOF
)
ok $([ "$out" = "True True" ]; echo $?) "a shuffled epoch of 2 windows over S3 delivers every row, x as put"

# A training loop's epochs, moved on with set_epoch from right after the open: the loader reads
# the next window's shards whole while a slot is handed out (doc/loader.md, "Across epochs").
out=$(pymt - "$MATORAGE_STORE" "$WORK/x.npy" <<'PYEOF'
import sys
import numpy as np
import matorage
url, x = sys.argv[1], np.load(sys.argv[2])
ld = matorage.Loader(matorage.Store(url), "a", batch_rows=100, shuffle=True, seed=7,
                     prefetch_bytes=4096000)
good, orders = True, set()
for e in range(4):
    ld.set_epoch(e)
    rows = []
    for b in ld:
        ids = np.asarray(b["_rows"], dtype=np.int64)
        rows += ids.tolist()
        good = good and np.array_equal(np.asarray(b["x"]).reshape(len(ids), 256), x[ids])
    good = good and sorted(rows) == list(range(len(x)))
    orders.add(tuple(rows))
ld.close()
print(good, len(orders))
PYEOF
)
ok $([ "$out" = "True 4" ]; echo $?) "four epochs moved on with set_epoch: every row each epoch, x as put, four orders ($out)"

# chain LOG: the longest run of requests in LOG each sent after the one before it was answered.
chain() {
	$PY - "$1" <<'PYEOF'
import sys
reqs = sorted((float(a), float(b)) for a, b, *_ in (l.split() for l in open(sys.argv[1])))
depth = []
for i, (s, e) in enumerate(reqs):
    depth.append(1 + max([depth[j] for j, (_, f) in enumerate(reqs[:i]) if f <= s], default=0))
print(max(depth, default=0))
PYEOF
}
# overlap LOG A B: whether the requests whose paths hold A and B were in flight together.
overlap() {
	$PY - "$1" "$2" "$3" <<'PYEOF'
import sys
span = {}
for l in open(sys.argv[1]):
    a, b, _, path, *_ = l.split()
    for k in sys.argv[2:]:
        if k in path:
            span[k] = (float(a), float(b))
(a0, a1), (b0, b1) = span[sys.argv[2]], span[sys.argv[3]]
sys.exit(0 if a0 < b1 and b0 < a1 else 1)
PYEOF
}
# epoch DATASET ATTRS LOG BUDGET: the same epoch from C (the Python binding opens the version once
# more for its columns), 200 ms added to every request; the proxy's timed log into LOG.
epoch() {
	s3_faults '{"rules": [{"match": "^[A-Z]+ /", "action": "delay", "count": -1, "delay_ms": 200}]}'
	s3_log_clear
	out=$("$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" "$1" "$2" 100 1 "$4")
	s3_faults clear
	ok $([ "${out%% *}" = 4000 ]; echo $?) "$1: the epoch with 200 ms a request delivers 4000 rows"
	curl -s -f "$S3_ENDPOINT/__log?times=1" | grep " /mt-test/" > "$3"
	sed 's/^/# /; s/[0-9a-f]\{64\}/SHA/' "$3"
}

# Every attribute: each window reads its 2 shards all through, so each shard object comes
# whole with its chunk index: the list of versions with the head (the newest manifest); the
# 4 shard objects.
epoch a x "$WORK/log-a" 4096000
n=$(chain "$WORK/log-a")
echo "# longest chain of requests one after the other: $n"
ok $([ "$n" -le 2 ]; echo $?) "a: the epoch is at most 2 round trips deep (got $n)"
n=$(grep -c "/shards/" "$WORK/log-a" || true)
ok $([ "$n" -eq 4 ]; echo $?) "a: one GET per shard object (got $n)"
ok $(overlap "$WORK/log-a" "datasets%2Fa%2Fversions" /a/head.json; echo $?) \
	"a: the listing of versions and the head are requested at once"
n=$(grep -c -E "/versions/v1.json|/meta/" "$WORK/log-a" || true)
ok $([ "$n" -eq 0 ]; echo $?) "a: neither the manifest nor the metadata object is read (got $n)"

# Some of the attributes (x of x and y; the window is sized from whole rows, 1032 bytes, so
# the budget is 2 windows of 2000 of them): chunk indexes first, all 4 at once, then the runs of
# both windows at once.  One request at a time would take 7: the listing, the manifest, and
# each window's indexes and runs in turn.
epoch b x "$WORK/log-b" 4128000
n=$(chain "$WORK/log-b")
echo "# longest chain of requests one after the other: $n"
ok $([ "$n" -le 3 ]; echo $?) "b: the epoch is at most 3 round trips deep (got $n)"
# The same epoch in a new process: the chunk indexes come from the loader's metadata cache
# on local disk (doc/loader.md), so the runs go out as soon as the listing is answered.
epoch b x "$WORK/log-b2" 4128000
n=$(chain "$WORK/log-b2")
ok $([ "$n" -le 2 ]; echo $?) "b again: its chunk indexes kept by the first process, at most 2 round trips deep (got $n)"

# A version named: its manifest alone (no listing, no metadata object), then the shards.
s3_faults '{"rules": [{"match": "^[A-Z]+ /", "action": "delay", "count": -1, "delay_ms": 200}]}'
s3_log_clear
out=$("$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" a@v1 x 100 1 4096000)
s3_faults clear
curl -s -f "$S3_ENDPOINT/__log?times=1" | grep " /mt-test/" > "$WORK/log-v"
sed 's/^/# /; s/[0-9a-f]\{64\}/SHA/' "$WORK/log-v"
n=$(chain "$WORK/log-v")
ok $([ "${out%% *}" = 4000 ] && [ "$n" -le 2 ]; echo $?) "a@v1: 4000 rows, at most 2 round trips deep (got $n)"

# The bytes in flight follow the latency: one shard of 62 MB (256 rows of 64k random float32)
# is read in runs of 8 MiB after its chunk index; 32 MiB would hold four of them at a time, and
# with 200 ms a request the loader allows 128 MiB, so more go out together.
"$PY" -c 'import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(3).standard_normal((256, 65536)).astype(np.float32))' "$WORK/big.npy"
check "put big (one shard of 62 MB)" $M put big x="$WORK/big.npy"
s3_faults '{"rules": [{"match": "^[A-Z]+ /", "action": "delay", "count": -1, "delay_ms": 200}]}'
s3_log_clear
out=$("$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" big x 16 1 268435456)
s3_faults clear
curl -s -f "$S3_ENDPOINT/__log?times=1" | grep " /mt-test/.*/shards/" > "$WORK/log-big"
n=$($PY - "$WORK/log-big" <<'PYEOF'
import sys
spans = [(float(a), float(b)) for a, b, *_ in (l.split() for l in open(sys.argv[1]))]
print(max((sum(1 for s, e in spans if s <= t < e) for t, _ in spans), default=0))
PYEOF
)
echo "# shard requests in flight at once, at most: $n ($(wc -l < "$WORK/log-big") in all)"
ok $([ "${out%% *}" = 256 ] && [ "$n" -ge 6 ]; echo $?) \
	"big: 256 rows, and with 200 ms a request more runs in flight than 32 MiB holds (got $n)"
done_testing
