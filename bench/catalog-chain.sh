#!/bin/bash
# catalog-chain.sh — what an append chain costs the catalog: for each build given, the
# first sync of an N-append chain (bench/growth's dataset) into an empty catalog (time and
# catalog file size), and `put --append` to that dataset with the catalog warm (the
# command records its version in the catalog). Builds run alternately, run by run, and
# each number is the median of RUNS (default 5). Every build reads the same store.
# Part 2 (builds with bench/catalog-note): recording a written version with a warm
# catalog, on the chain and on a dataset of N one-shard versions: a sync of the dataset
# after an append (what a write did) vs mt_catalog_sync_version of the new version (what
# a write does now), median of 5 rounds. PART=2 runs part 2 alone.
# Usage: bench/catalog-chain.sh N BUILD_DIR...   (e.g. 500 /tmp/base/build/bench build/bench)
set -euo pipefail
N=$1
shift
RUNS=${RUNS:-5}
PY=/usr/bin/python3
DIR=${BENCH_DIR:-/tmp/mt-bench-catalog-chain}
rm -rf "$DIR"
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
export HOME=$DIR
builds=()
for b in "$@"; do builds+=("$(cd "$b" && pwd)"); done
echo "# machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
"${builds[0]}/bench/growth" "$DIR/s" "$N" > /dev/null
$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
t() { local s=$(date +%s.%N); "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
if [ "${PART:-}" != 2 ]; then
# The store as the chain left it: each put --append run starts from it.
cp -a "$DIR/s" "$DIR/pristine"
declare -A sync_t size put_t
for r in $(seq 1 "$RUNS"); do
	for i in "${!builds[@]}"; do
		M=${builds[$i]}/src/cli/matorage
		rm -f "$DIR/cat$i.db"*
		sync_t[$i]+="$(t env MATORAGE_CATALOG="$DIR/cat$i.db" "$M" --store "$DIR/s" sync) "
		sqlite3_size=$(stat -c %s "$DIR/cat$i.db")
		size[$i]=$sqlite3_size
		put_t[$i]+="$(t env MATORAGE_CATALOG="$DIR/cat$i.db" "$M" --store "$DIR/s" put g \
			x="$DIR/one.npy" --append) "
		rm -rf "$DIR/s"
		cp -a "$DIR/pristine" "$DIR/s"
	done
done
printf '| build | appends | first sync s | catalog bytes | put --append s (warm catalog) |\n'
printf '|---|---|---|---|---|\n'
for i in "${!builds[@]}"; do
	printf '| %s | %d | %.3f | %d | %.3f |\n' "${builds[$i]}" "$N" \
		"$(echo "${sync_t[$i]}" | tr ' ' '\n' | grep . | med)" "${size[$i]}" \
		"$(echo "${put_t[$i]}" | tr ' ' '\n' | grep . | med)"
done
fi

# (2) Dataset f: N versions of one shard each, v2.. being v1's manifest under new names
# and times (with their order markers).
"${builds[0]}/src/cli/matorage" --store "$DIR/s" put f x="$DIR/one.npy" > /dev/null
$PY - "$DIR/s/datasets/f/versions" "$N" <<'PYEOF'
import datetime, hashlib, json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
m = json.loads(open(d + "/v1.json").read())
t0 = datetime.datetime.strptime(m["created"], "%Y-%m-%dT%H:%M:%S.%fZ")
del m["checksum"]
for k in range(2, n + 1):
    c = t0 + datetime.timedelta(milliseconds=k)
    m["version"] = "v%d" % k
    m["created"] = c.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (c.microsecond // 1000)
    t = json.dumps(m, separators=(",", ":"))[:-1]
    stamp = m["created"].replace("-", "").replace(":", "").replace(".", "")
    open("%s/v%d.at.%s" % (d, k, stamp), "w").close()
    open("%s/v%d.json" % (d, k), "w").write(
        t + ',"checksum":"sha256:' + hashlib.sha256((t + "}").encode()).hexdigest() + '"}')
PYEOF
printf '\n| build | dataset | versions | sync of the dataset after a write s | the written version alone s |\n'
printf '|---|---|---|---|---|\n'
for ds in g f; do
	for i in "${!builds[@]}"; do
		N2=${builds[$i]}/bench/catalog-note
		[ -x "$N2" ] || continue
		"$N2" "$DIR/s" "$ds" "$DIR/note$i-$ds.db" 5 | awk -v b="${builds[$i]}" -v ds="$ds" \
			'{ one = $11 == "(0" ? "-" : $9 " (" substr($11, 2) " read)"
			   printf "| %s | %s | %s | %s (%s read) | %s |\n", b, ds, $2, $4,
			   substr($6, 2), one }'
	done
done
echo "# load after: $(cut -d' ' -f1 /proc/loadavg)"
