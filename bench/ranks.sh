#!/bin/bash
# ranks.sh — a job of many ranks reading one version of many shards (doc/BENCHMARKS.md, "A job
# of a thousand ranks"): WORLD rank processes (bench/loader-rank, shuffled, seed 1) each open
# the latest version, make their plan and take their whole epoch; two at a time per core.
# Reported: each rank's bytes read through system calls (/proc/self/io rchar: the store's
# root, fragments and shards, plus the few KB the process reads starting up), its open and
# epoch seconds, the job's wall time, and a check that the ranks together took every row of
# the version once (rows, and the sums of row numbers and of their squares).  The version is
# synthetic, as in growth-v2.sh: a format-2 one-row append to a format-1 manifest naming one
# shard N times (bench_synth), N + 1 rows.  SAMPLE_V1 ranks of the same job are also run on
# that format-1 parent, which every rank must read whole (the before).
# Usage: bench/ranks.sh [BUILD_DIR] [N] [WORLD]   (defaults: build/bench, 1000000, 1000;
# SAMPLE_V1=3, SHUFFLE=1 (0: row order); N is lowered so that N + 1 is a multiple of WORLD)
BENCH_NAME=ranks
. "$(dirname "$0")/lib.sh"
WORLD=${3:-1000}
# N + 1 rows, a multiple of WORLD: every rank's share is then whole, no row is repeated
# (doc/loader.md, "Ranks"), and the sums below must come out exactly.
N=${2:-1000000}
N=$((N - (N + 1) % WORLD))
SAMPLE_V1=${SAMPLE_V1:-3}
SHUFFLE=${SHUFFLE:-1}
R=$BUILD/bench/loader-rank
echo "# command: bench/ranks.sh ${1:-build/bench} $N $WORLD   (SAMPLE_V1=$SAMPLE_V1 SHUFFLE=$SHUFFLE)"
bench_machine
S=$DIR/s
export MATORAGE_STORE=file://$S
V=$S/datasets/g/versions
$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
"$M" put g x="$DIR/one.npy" > /dev/null
bench_synth "$V/v1.json" "$N" "$V/v2.json" v2 v1
MATORAGE_MANIFEST_FORMAT=2 "$M" put g x="$DIR/one.npy" --append --parent v2 > /dev/null
echo "# g@v3: $((N + 1)) rows, root $(stat -c %s "$V/v3.json") B, $(ls "$S/datasets/g/fragments" | wc -l) fragments; g@v2 (format 1) $(stat -c %s "$V/v2.json") B"
sync
t0=$(date +%s.%N)
seq 0 $((WORLD - 1)) | xargs -P $((2 * $(nproc))) -I{} sh -c \
	'echo "{} $("$0" "$1" g@v3 x {} "$2" "$3" 1)"' "$R" "$S" "$WORLD" "$SHUFFLE" > "$DIR/ranks"
job=$(echo "$(date +%s.%N) - $t0" | bc)
for r in $(seq 0 $((SAMPLE_V1 - 1))); do
	echo "$((r * WORLD / SAMPLE_V1)) $("$R" "$S" g@v2 x $((r * WORLD / SAMPLE_V1)) "$WORLD" "$SHUFFLE" 1)"
done > "$DIR/ranks-v1"
$PY - "$DIR/ranks" "$DIR/ranks-v1" "$((N + 1))" "$WORLD" "$job" <<'PYEOF'
import statistics, sys
rows_file, v1_file, n, world, job = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
def load(path):
    out = []
    for line in open(path):
        f = line.split()
        if len(f) != 9:
            sys.exit(f"a rank failed or printed no result: {line.strip()!r}")
        out.append(dict(rank=int(f[0]), open=float(f[1]), epoch=float(f[2]) + float(f[4]),
                        rows=int(f[5]), s1=int(f[6]), s2=int(f[7]), read=int(f[8])))
    return out
ranks, v1 = load(rows_file), load(v1_file)
M64 = (1 << 64) - 1
want = (n, (n * (n - 1) // 2) & M64, ((n - 1) * n * (2 * n - 1) // 6) & M64)
got = (sum(r["rows"] for r in ranks), sum(r["s1"] for r in ranks) & M64, sum(r["s2"] for r in ranks) & M64)
ok = len(ranks) == world and got == want
def mib(b): return f"{b / 1048576:.2f} MiB"
def stat(key, fmt):
    v = sorted(r[key] for r in ranks)
    return f"{fmt(statistics.median(v))} (min {fmt(v[0])}, max {fmt(v[-1])})"
print(f"| ranks | {len(ranks)} of {world}, every row once: {'yes' if ok else 'NO'} ({got[0]} rows of {n}) |")
print(f"| bytes read by a rank (format 2) | {stat('read', mib)} |")
print(f"| bytes read by the whole job | {mib(sum(r['read'] for r in ranks))} |")
print(f"| a rank's open and plan | {stat('open', lambda x: f'{x:.3f} s')} |")
print(f"| a rank's first batch and epoch | {stat('epoch', lambda x: f'{x:.3f} s')} |")
print(f"| the job, {world} ranks, two per core | {job:.1f} s |")
if v1:
    r = sorted(x["read"] for x in v1)
    o = sorted(x["open"] for x in v1)
    print(f"| the same ranks on the format-1 parent ({len(v1)} of them) | {mib(statistics.median(r))} read, open and plan {statistics.median(o):.3f} s each; {world} ranks would read {mib(statistics.median(r) * world)} |")
sys.exit(0 if ok else 1)
PYEOF
