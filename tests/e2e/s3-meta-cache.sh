#!/bin/bash
# s3-meta-cache.sh — a loader over S3 keeps what a later process would read again (format-2 fragments, shard chunk indexes) in a local directory, so the second process's epoch asks the store for data alone, its first window's data requested with the listing that confirms the latest (the latest's manifest kept as a guess; one the listing refutes is dropped before any row is delivered; through a shard cache, cache_dir, or in_memory too: a warm shard cache is read before the listing is answered); entries damaged on disk are refused and read again from the store; MATORAGE_META_CACHE=off keeps nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
MT_TEST_STORE=s3 use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
CACHE=$XDG_CACHE_HOME/matorage/meta

# 8000 rows of x (float32[256]) in 8 shards of 1000, two shards a fragment (format 2).
$T make "$WORK/x.npy" float32 8000x256 3
check "put a format-2 version of 4 fragments" env MATORAGE_MANIFEST_FORMAT=2 \
	MATORAGE_FRAGMENT_SHARDS=2 $M put a x="$WORK/x.npy" --shard-rows 1000

# epoch: rank 0 of $W (default 4) of a shuffled epoch in windows of $P bytes (default 1 MiB:
# no shard is read whole and every chunk index is read alone); prints "<rows right> <gets>
# <fragment gets>".
epoch() {
	s3_log_clear
	local out
	out=$(pymt - "$MATORAGE_STORE" "$WORK/x.npy" "${W:-4}" "${P:-1048576}" <<'PYEOF'
import sys
import numpy as np
import matorage
url, x, world, window = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
n, same = 0, True
for b in matorage.Loader(matorage.Store(url), "a", batch_rows=100, shuffle=True, seed=5,
                         rank=0, world=world, prefetch_bytes=window):
    ids = np.asarray(b["_rows"], dtype=np.int64)
    n += len(ids)
    same = same and np.array_equal(np.asarray(b["x"]).reshape(len(ids), 256), x[ids])
print(n == 8000 // world and same)
PYEOF
)
	echo "$out $(s3_log | grep -c '^GET ') $(s3_log | grep -c '^GET .*/fragments/')"
}

read -r right1 gets1 frags1 <<< "$(epoch)"
echo "# cold: $gets1 GETs, $frags1 of fragments"
ok $([ "$right1" = True ]; echo $?) "the first process's rows are right"
nidx=$(find "$CACHE" -name '*-*-*' -type f | wc -l)
nfrag=$(find "$CACHE" -name '*.json' -type f | wc -l)
ok $([ "$nidx" -ge 4 ] && [ "$nfrag" = 4 ]; echo $?) "it kept $nidx chunk indexes and $nfrag of 4 fragments"

read -r right2 gets2 frags2 <<< "$(epoch)"
echo "# warm: $gets2 GETs, $frags2 of fragments"
ok $([ "$right2" = True ]; echo $?) "the second process's rows are right"
ok $([ "$frags2" = 0 ] && [ "$gets2" -le $((gets1 - nidx - 4)) ]; echo $?) \
	"the second asks for no fragment and no chunk index ($gets2 GETs, $gets1 cold)"

# Every entry damaged on disk: refused by its check, read again, kept again.
find "$CACHE" -type f ! -name '.*' -exec sh -c 'printf garbage > "$1"' _ {} \;
read -r right3 gets3 frags3 <<< "$(epoch)"
ok $([ "$right3" = True ] && [ "$frags3" = 4 ] && [ "$gets3" = "$gets1" ]; echo $?) \
	"damaged entries are read again from the store ($gets3 GETs, rows right: $right3)"
read -r right4 gets4 frags4 <<< "$(epoch)"
ok $([ "$right4" = True ] && [ "$gets4" = "$gets2" ]; echo $?) "and kept again ($gets4 GETs)"

# An entry swapped for another's bytes fails its check the same way.
f=$(find "$CACHE" -name '*.json' -type f | head -1)
g=$(find "$CACHE" -name '*.json' -type f | tail -1)
cp "$g" "$f"
read -r right5 _ frags5 <<< "$(epoch)"
ok $([ "$right5" = True ] && [ "$frags5" = 1 ]; echo $?) "a swapped fragment entry is read again ($frags5 fragment GET)"

rm -rf "$XDG_CACHE_HOME"
read -r right6 gets6 _ <<< "$(MATORAGE_META_CACHE=off epoch)"
ok $([ "$right6" = True ] && [ ! -e "$XDG_CACHE_HOME" ] && [ "$gets6" = "$gets1" ]; echo $?) \
	"MATORAGE_META_CACHE=off keeps nothing ($gets6 GETs)"
read -r right7 _ _ <<< "$(MATORAGE_META_CACHE=$WORK/own epoch)"
ok $([ "$right7" = True ] && [ "$(find "$WORK/own" -type f ! -name '.*' | wc -l)" -ge 8 ]; echo $?) \
	"MATORAGE_META_CACHE=DIR keeps them there"

# The cap: at an open after a few minutes, the least recently used entries go until the cache
# holds 3/4 of it; under the cap nothing goes.
mkdir -p "$WORK/own/zz"
head -c 5000 /dev/zero > "$WORK/own/zz/zz-old"
touch -d '1 day ago' "$WORK/own/zz/zz-old"
touch -d '1 hour ago' "$WORK/own/.swept"
MATORAGE_META_CACHE=$WORK/own epoch > /dev/null
ok $([ -e "$WORK/own/zz/zz-old" ]; echo $?) "under its cap nothing is swept"
size=$(find "$WORK/own" -type f ! -name '.*' -printf '%s\n' | awk '{ s += $1 } END { print s }')
touch -d '1 hour ago' "$WORK/own/.swept"
read -r right8 _ _ <<< "$(MATORAGE_META_CACHE=$WORK/own MATORAGE_META_CACHE_BYTES=$((size - 1000)) epoch)"
ok $([ "$right8" = True ] && [ ! -e "$WORK/own/zz/zz-old" ]; echo $?) \
	"over its cap ($size bytes held) the least recently used entry went first"
# One rank whose window holds the whole version reads each shard whole and cuts its chunk
# index out of it: the index is kept
# once, not written again by every later epoch (the entry's file stays the same file).
rm -rf "$WORK/whole"
read -r right8 _ _ <<< "$(W=1 P=$((64 << 20)) MATORAGE_META_CACHE=$WORK/whole epoch)"
idx_files() { find "$WORK/whole" -name '*-*-*' -type f ! -name '.*' -printf '%i %p\n' | sort; }
before=$(idx_files)
read -r right9 _ _ <<< "$(W=1 P=$((64 << 20)) MATORAGE_META_CACHE=$WORK/whole epoch)"
ok $([ "$right8 $right9" = "True True" ] && [ "$(echo "$before" | grep -c .)" -ge 4 ] &&
	[ "$before" = "$(idx_files)" ]; echo $?) \
	"a shard read whole keeps its chunk index once: a second epoch rewrites none of $(echo "$before" | grep -c .)"

# The latest on a guess: the cache keeps the manifest an open found latest, and the next open
# starts its first window on it while the listing that confirms it is in flight; a guess the
# listing refutes is dropped before any row is delivered.  Dataset b, its own cache.
G=$WORK/guess
$T make "$WORK/b1.npy" float32 4000x64 11
$T make "$WORK/b2.npy" float32 4000x64 12
$T make "$WORK/by.npy" int64 4000 13
check "put b@v1" $M put b x="$WORK/b1.npy" --shard-rows 1000
# bepoch: a shuffled epoch of b's x over rank 0 of 1, checked row by row against the latest as
# `matorage get` reads it now; prints "<rows right> <GETs of shards of b@v1>".  KW: more
# options of the Loader, "name=value,..." (cache_dir=DIR, in_memory=1, cache_bytes=N).
# HOLD=1: the proxy holds the listing of versions 5 s, and a third field is 1 when the loader
# was seen reading shards before the proxy answered that listing: a shard file of $CD read
# (each read sets its mtime) or a shard request answered, and only then the log looked at
# and found without the listing; the bounded poll ends at the first sign of either.
bepoch() {
	$M get b x -o "$WORK/bref.npy" > /dev/null
	s3_log_clear
	[ -z "${HOLD:-}" ] || s3_faults '{"rules": [{"match": "^GET /[^ ]*list-type", "action": "delay", "count": 1, "delay_ms": 5000}]}'
	touch "$WORK/mark"
	MATORAGE_META_CACHE=$G pymt - "$MATORAGE_STORE" "$WORK/bref.npy" "${KW:-}" > "$WORK/bout" <<'PYEOF' &
import sys
import numpy as np
import matorage
url, x = sys.argv[1], np.load(sys.argv[2])
kw = {k: int(v) if v.isdigit() else v for k, v in (a.split("=", 1) for a in sys.argv[3].split(",") if a)}
seen = []
same = True
for b in matorage.Loader(matorage.Store(url), "b", attrs=["x"], batch_rows=100, shuffle=True, seed=3,
                         prefetch_bytes=1 << 20, **kw):
    ids = np.asarray(b["_rows"], dtype=np.int64)
    seen += ids.tolist()
    same = same and np.array_equal(np.asarray(b["x"]).reshape(len(ids), 64), x[ids])
print(sorted(seen) == list(range(len(x))) and same)
PYEOF
	local pid=$! early=0 i
	for ((i = 0; ${HOLD:-0} && i < 600; i++)); do
		s3_log > "$WORK/blog"
		if [ -n "$(find "${CD:-$WORK/none}" -maxdepth 1 -name '*.h5' -newer "$WORK/mark" 2> /dev/null)" ] ||
			grep -q '/shards/' "$WORK/blog"; then
			s3_log | grep -q 'list-type' || early=1
			break
		fi
		grep -q 'list-type' "$WORK/blog" && break
		kill -0 "$pid" 2> /dev/null || break
		sleep 0.1
	done
	wait "$pid"
	[ -z "${HOLD:-}" ] || s3_faults clear
	# The first call, with v1 alone, notes v1's shard objects.
	[ -s "$WORK/v1shards" ] || s3_log | grep -o '/shards/[0-9a-f]*' | sort -u > "$WORK/v1shards"
	echo "$(cat "$WORK/bout") $(s3_log | grep -c -F -f "$WORK/v1shards" || true)${HOLD:+ $early}"
}
read -r right _ <<< "$(bepoch)"
ok $([ "$right" = True ] && [ -n "$(find "$G" -name 'latest-*' -type f)" ]; echo $?) \
	"cold cache: the rows are b@v1's, and the latest's manifest is kept as the next guess"

# depth LOG: the round trips before the first shard request, from the proxy's timed log: 1 + the
# longest chain of requests, each sent after the one before it was answered, that ended before it.
depth() {
	$PY - "$1" <<'PYEOF'
import sys
reqs = sorted((float(a), float(b), p) for a, b, _, p, *_ in (l.split() for l in open(sys.argv[1])))
depth = []
for i, (s, e, p) in enumerate(reqs):
    depth.append(1 + max([depth[j] for j, (_, f, _) in enumerate(reqs[:i]) if f <= s], default=0))
print(next((d for d, (_, _, p) in zip(depth, reqs) if "/shards/" in p), 0))
PYEOF
}
# The listing and the head held 3 s at the proxy: a shard request sent before either was
# answered can only come from the guess (the old order has to wait for the listing's answer).
s3_faults '{"rules": [{"match": "^GET /[^ ]*(list-type|/head.json)", "action": "delay", "count": -1, "delay_ms": 3000}]}'
s3_log_clear
out=$(MATORAGE_META_CACHE=$G "$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" b x 100 1 1048576)
s3_faults clear
curl -s -f "$S3_ENDPOINT/__log?times=1" | grep " /mt-test/" > "$WORK/log-guess"
sed 's/^/# /; s/[0-9a-f]\{64\}/SHA/' "$WORK/log-guess"
n=$(depth "$WORK/log-guess")
ok $([ "${out%% *}" = 4000 ] && [ "$n" = 1 ] && grep -q "list-type" "$WORK/log-guess"; echo $?) \
	"warm cache: the first shard request goes out with the listing, before any answer (round $n), 4000 rows"

# Another writer commits b@v2 after the cache was warmed: the guess (v1) is refuted by the
# listing; the loader delivers v2's rows exactly, none of v1's, though v1's first windows were
# being read.
check "another writer puts b@v2 (other rows, and y)" $M put b x="$WORK/b2.npy" y="$WORK/by.npy" --shard-rows 1000
read -r right v1gets <<< "$(bepoch)"
ok $([ "$right" = True ]; echo $?) "a new latest after the cache was warmed: the rows are exactly b@v2's"
ok $([ "$v1gets" -ge 1 ]; echo $?) "the stale guess's first window was being read ($v1gets GETs of b@v1's shards) and dropped"
read -r right v1gets <<< "$(bepoch)"
ok $([ "$right" = True ] && [ "$v1gets" = 0 ]; echo $?) "the next open guesses b@v2 and reads no shard of b@v1 ($v1gets)"
# The latest removed: the listing's newest is older than the guess.
check "rm b@v2" $M rm b@v2
read -r right _ <<< "$(bepoch)"
ok $([ "$right" = True ] && cmp -s "$WORK/bref.npy" "$WORK/b1.npy"; echo $?) \
	"the guessed latest removed: the rows are exactly b@v1's"
# A guess that is not a manifest of b is no guess.
find "$G" -name 'latest-*' -type f -exec sh -c 'printf garbage > "$1"' _ {} \;
read -r right _ <<< "$(bepoch)"
ok $([ "$right" = True ]; echo $?) "a damaged guess is ignored: the rows are b@v1's"

# Through a shard cache (cache_dir) the latest opens on the guess too: with the shards in the
# cache the data is local, so the only requests before the first windows are read are the
# listing and the head that confirm the guess, in flight meanwhile.  The old order read no
# shard before the proxy had answered the listing.
CD=$WORK/shard-cache
read -r right _ <<< "$(KW=cache_dir=$CD bepoch)"
ok $([ "$right" = True ] && [ -n "$(find "$CD" -maxdepth 1 -name '*.h5')" ]; echo $?) \
	"cache_dir, cold: the rows are b@v1's and its shards are in the cache"
touch -d '1 hour ago' "$CD"/*.h5
read -r right _ early <<< "$(HOLD=1 KW=cache_dir=$CD bepoch)"
curl -s -f "$S3_ENDPOINT/__log?times=1" | grep " /mt-test/" | sort -n > "$WORK/log-cached"
sed 's/^/# /; s/[0-9a-f]\{64\}/SHA/' "$WORK/log-cached"
ok $([ "$right" = True ] && [ "$early" = 1 ] && grep -q 'list-type' "$WORK/log-cached" &&
	! grep -v -e 'list-type' -e '/b/head.json ' -e '/b/versions/v1.json ' "$WORK/log-cached"; echo $?) \
	"cache_dir, warm: the listing and the head are all the store is asked (no shard), and the first windows were read from the cache before the listing was answered; the rows are b@v1's"

# Another writer commits b@v3: the guess (v1) is refuted; its windows, read from the cache, are
# dropped, and every row is b@v3's.  The shard cache holds only objects whose bytes are their
# name's sha256 (the refuted guess's too).
$T make "$WORK/b3.npy" float32 4000x64 14
check "another writer puts b@v3" $M put b x="$WORK/b3.npy" --shard-rows 1000
touch -d '1 hour ago' "$CD"/*.h5
read -r right _ early <<< "$(HOLD=1 KW=cache_dir=$CD bepoch)"
ok $([ "$right" = True ] && [ "$early" = 1 ] && cmp -s "$WORK/bref.npy" "$WORK/b3.npy"; echo $?) \
	"cache_dir, a new latest: b@v1's cached shards were read on the guess and dropped; the rows are exactly b@v3's"
bad=$(for f in "$CD"/*.h5; do
	[ "$(sha256sum < "$f" | cut -c1-64).h5" = "${f##*/}" ] || echo "$f"; done)
ok $([ -z "$bad" ] && [ "$(find "$CD" -maxdepth 1 -name '*.h5' | wc -l)" = 8 ]; echo $?) \
	"the shard cache holds b@v1's and b@v3's 8 shards, each named by its sha256 ${bad:+(not: $bad)}"

# in_memory: the latest opens on the guess too (b@v3 now); its first shard requests are
# answered before the listing is.
read -r right v1gets early <<< "$(HOLD=1 KW=in_memory=1 bepoch)"
ok $([ "$right" = True ] && [ "$early" = 1 ] && [ "$v1gets" = 0 ]; echo $?) \
	"in_memory: the first shards are read on the guess (b@v3) before the listing is answered; the rows are b@v3's"
# A refuted guess: its decoded chunks are dropped with its loader; every row is the new latest's.
$T make "$WORK/b4.npy" float32 4000x64 15
check "another writer puts b@v4" $M put b x="$WORK/b4.npy" --shard-rows 1000
read -r right _ early <<< "$(HOLD=1 KW=in_memory=1 bepoch)"
ok $([ "$right" = True ] && [ "$early" = 1 ] && cmp -s "$WORK/bref.npy" "$WORK/b4.npy"; echo $?) \
	"in_memory, a new latest: b@v3's first shards were read on the guess and dropped; the rows are exactly b@v4's"
# The compressed shards kept in memory when the decoded rows do not fit (1 MiB over 600 KB):
# the guessed b@v4 removed, the rows are b@v3's.
check "rm b@v4" $M rm b@v4
read -r right _ early <<< "$(HOLD=1 KW=in_memory=1,cache_bytes=600000 bepoch)"
ok $([ "$right" = True ] && [ "$early" = 1 ] && cmp -s "$WORK/bref.npy" "$WORK/b3.npy"; echo $?) \
	"in_memory, compressed: the removed guess b@v4 was read and dropped; the rows are exactly b@v3's"
# In C, under the leak checker of a sanitized build: a refuted guess's loader leaves nothing behind.
for v in 5:LOADER_IN_MEMORY=1 6:LOADER_CACHE_DIR=$CD; do
	check "another writer puts b@v${v%%:*}" $M put b x="$WORK/b1.npy" --shard-rows 1000
	out=$(env "${v#*:}" MATORAGE_META_CACHE=$G "$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" b x 100 1 1048576 2>&1)
	rc=$?
	opt=${v#*:}
	ok $([ "$rc" = 0 ] && [ "${out%% *}" = 4000 ]; echo $?) \
		"${opt%%=*}, a refuted guess: 4000 rows of b@v${v%%:*}, nothing leaked (rc $rc)"
done
# Without a guess (no metadata cache) a cache_dir open still finds the latest in the store as a
# far one: the head asked with the listing, not the listing, then a HEAD of the manifest.
s3_log_clear
out=$(MATORAGE_META_CACHE=off LOADER_CACHE_DIR=$CD "$top_builddir/bench/loader-epoch" "$MATORAGE_STORE" b x 100 1 1048576)
s3_log > "$WORK/log-noguess"
sed 's/^/# /' "$WORK/log-noguess"
ok $([ "${out%% *}" = 4000 ] && grep -q '/b/head.json' "$WORK/log-noguess" &&
	! grep -q '^HEAD ' "$WORK/log-noguess"; echo $?) \
	"cache_dir without a guess: the head is asked with the listing, no HEAD of a manifest"
done_testing
