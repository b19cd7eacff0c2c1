#!/bin/bash
# torture.sh — concurrent appends, puts of identical data, rm, gc --delete --grace 0 and kill -9
# at random moments, on the file store and then on S3 behind the fault proxy; a checker then
# asserts that every version verifies, every append that succeeded kept its rows, and nothing
# crashed.  MT_TORTURE_SEED=N reproduces a run's schedule; MT_TORTURE_SECONDS=S loads each store
# longer; MT_TORTURE_WORKERS=1 runs the schedule one worker at a time (does a failure need
# concurrency?).
. "$(dirname "$0")/lib.sh"
SEED=${MT_TORTURE_SEED:-1010}
LOAD=${MT_TORTURE_SECONDS:-8}
WORKERS=${MT_TORTURE_WORKERS:-5}
# Lock objects of a writer or gc killed mid-run expire soon, so the others are not held up long.
export MATORAGE_LOCK_TTL=3
AGAIN="MT_TORTURE_SEED=$SEED MT_TORTURE_SECONDS=$LOAD MT_TORTURE_WORKERS=$WORKERS"
echo "# seed $SEED, ${LOAD}s of load per store, at most $WORKERS workers at once"
echo "# ($AGAIN reproduces the schedule)"

# phase NAME STORE [FAULTS_URL]: one run of the driver; its checks become TAP lines.
phase() {
	local name=$1 store=$2 faults=${3:-}
	local res="$WORK/$name.results"
	: > "$res"
	"$PY" "$top_srcdir/tests/e2e/torture.py" --matorage "$MATORAGE" --store "$store" \
		--phase "$name" --seed "$SEED" --seconds "$LOAD" --workers "$WORKERS" \
		--work "$WORK/$name" --results "$res" ${faults:+--faults "$faults"}
	local rc=$?
	local kind status what
	while IFS=$'\t' read -r kind status what; do
		case $kind in
		R) ok "$status" "$what" ;;
		D) echo "#   $status${what:+	$what}" ;;
		esac
	done < "$res"
	ok $rc "$name: the driver ran to its end"
}

phase file "file://$WORK/store"

if ! s3_available; then
	ok 0 "s3 # SKIP s3rver or node not installed (scripts/install-deps.sh)"
elif ! s3_start; then
	ok 1 "s3: cannot start s3rver and the signing proxy"
else
	phase s3 "s3://torture/run" "$S3_ENDPOINT"
	s3_stop
fi
[ "$T_FAILED" -eq 0 ] ||
	echo "# FAILED with seed $SEED; to run this schedule again:" \
		"$AGAIN make check TESTS=tests/e2e/torture.sh"
done_testing
