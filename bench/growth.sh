#!/bin/bash
# growth.sh — how costs grow with size: (1) commits and "latest" as versions pile up
# (bench/growth: N one-row appends in one process; latest with and without order markers);
# (2) opening a version and planning/running a loader epoch over versions of 1k, 10k and
# 100k shards (synthetic manifests naming one real shard many times: the per-shard costs of
# the manifest, the reader and the loader's plan, not I/O).
# (3) the first catalog sync of the append chain of (1) and of many one-version datasets.
# Usage: bench/growth.sh [BUILD_DIR] [N_VERSIONS]   (defaults: build/bench, 1000;
# GROWTH_DATASETS=D datasets for (3), default 500)
BENCH_NAME=growth
. "$(dirname "$0")/lib.sh"
NV=${2:-1000}
bench_machine

"$BUILD/bench/growth" "$DIR/versions" "$NV"

# A one-row version whose manifest is then rewritten to name its shard S times.
$PY -c 'import numpy as np; np.save("'"$DIR"'/one.npy", np.arange(1, dtype=np.int64))'
"$M" --store "$DIR/s" put g x="$DIR/one.npy" > /dev/null
printf '| shards | manifest bytes | info (open the version) s | loader epoch (plan + 1 row per shard) s | epoch rows/s |\n|---|---|---|---|---|\n'
for S in 1000 10000 100000; do
	bench_synth "$DIR/s/datasets/g/versions/v1.json" "$S" "$DIR/s/datasets/g/versions/big$S.json" "big$S" ""
	bytes=$(stat -c %s "$DIR/s/datasets/g/versions/big$S.json")
	info=$(for i in 1 2 3 4 5; do secs "$M" --store "$DIR/s" info "g@big$S"; done | med)
	ep=$(for i in 1 2 3; do "$BUILD/bench/loader-epoch" "$DIR/s" "g@big$S" x 256 1 $((256 << 20)) | awk '{ print $3 }'; done | med)
	printf '| %d | %d | %.3f | %.3f | %.0f |\n' "$S" "$bytes" "$info" "$ep" "$(echo "$S / $ep" | bc -l)"
done

# (3) The first catalog sync (an empty catalog): of the N-version append chain of part 1
# (version k names k shards: N(N+1)/2 shard rows), and of D datasets of one version each.
ND=${GROWTH_DATASETS:-500}
for i in $(seq 1 "$ND"); do "$M" --store "$DIR/many" put "d$i" x="$DIR/one.npy" > /dev/null; done
sync_s() {
	rm -f "$DIR/fresh.db"*
	secs env MATORAGE_CATALOG="$DIR/fresh.db" "$M" --store "$1" sync
}
printf '\n| first catalog sync | s (median of 3) |\n|---|---|\n'
printf '| %d appends of one dataset | %.3f |\n' "$NV" "$(for i in 1 2 3; do sync_s "$DIR/versions"; done | med)"
printf '| %d datasets of one version | %.3f |\n' "$ND" "$(for i in 1 2 3; do sync_s "$DIR/many"; done | med)"
