#!/bin/bash
# fuzz-smoke.sh — each libFuzzer target replays its corpus (every input that ever crashed is kept there), then makes a fixed number of runs from a fixed seed: the same inputs every time, so a pass or a failure repeats.
# The targets come from $MT_FUZZ_DIR when set (scripts/test.sh builds them apart), else this build's fuzz/.
# Longer, random exploration is scripts/fuzz-explore.sh, run on purpose.
. "$(dirname "$0")/lib.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
DIR=${MT_FUZZ_DIR:-$top_builddir/fuzz}
SEED=1
# TARGET:RUNS — a few seconds each here; the readers start a Lua state per input, and a
# shard input opens a reader and decodes its chunks (the check, then the reads).
TARGETS="npy:50000 manifest:50000 index:50000 s3-xml:50000 readers:2000 records:50000 shard:5000"

built=0
for tr in $TARGETS; do
	[ -x "$DIR/fuzz-${tr%%:*}" ] && built=$((built + 1))
done
if [ $built -eq 0 ]; then
	echo "ok 1 # SKIP fuzzers not built (configure --enable-fuzzers CC=clang)"
	echo "1..1"
	exit 0
fi

# libFuzzer's mutations take in values it sees compared, addresses among them: only
# without address randomization does a seed give the same runs every time.
NORAND=(setarch "$(uname -m)" -R)
"${NORAND[@]}" true 2> /dev/null || NORAND=()

# report T NAME RC OUT: one TAP case for a libFuzzer run; on failure its output's tail
# and every input it saved, in base64 (to add under fuzz/corpus/T/ once fixed).
report() {
	local t=$1 name=$2 rc=$3 out=$4 ran
	# "Done N runs" / "Executed" prove the target really ran rather than exiting early with 0.
	grep -Eq '^Done [0-9]+ runs|^Executed ' "$out"
	ran=$?
	ok "$([ "$rc" -eq 0 ] && [ $ran -eq 0 ]; echo $?)" "$name"
	if [ "$rc" -ne 0 ] || [ $ran -ne 0 ]; then
		echo "# fuzz-$t exited $rc; last lines of its output:"
		tail -n 40 "$out" | sed 's/^/# /'
		for a in "$WORK"/crash-"$t"-*; do
			[ -f "$a" ] || continue
			echo "# input that failed ($(basename "$a"), base64):"
			base64 -w 76 "$a" | head -n 20 | sed 's/^/#   /'
		done
	fi
}

for tr in $TARGETS; do
	t=${tr%%:*}
	runs=${tr#*:}
	bin=$DIR/fuzz-$t
	if [ ! -x "$bin" ]; then
		T_N=$((T_N + 1))
		echo "ok $T_N # SKIP fuzz-$t not built in $DIR"
		continue
	fi
	corpus=$top_srcdir/fuzz/corpus/$t
	mapfile -t inputs < <(find "$corpus" -type f | LC_ALL=C sort)
	# Each target in a directory of its own (fuzz-readers writes its input file there).
	mkdir -p "$WORK/run-$t" "$WORK/new-$t"
	cd "$WORK/run-$t" || exit 1

	out=$WORK/replay-$t.out
	"$bin" -timeout=10 -artifact_prefix="$WORK/crash-$t-" "${inputs[@]}" > "$out" 2>&1
	report "$t" "fuzz-$t replays its ${#inputs[@]} corpus inputs without a crash, leak or hang" \
		$? "$out"

	if [ ${#NORAND[@]} -eq 0 ]; then
		T_N=$((T_N + 1))
		echo "ok $T_N # SKIP fuzz-$t: address randomization cannot be turned off here" \
			"(setarch -R), so a seeded run would not repeat"
		continue
	fi
	# The Lua interpreter in fuzz-readers is not instrumented, yet its memcmp calls reach
	# libFuzzer's compare hooks, and which strings it compares follows a string hash it
	# seeds from the clock: the readers' mutations do without what compares teach.
	extra=()
	[ "$t" = readers ] && extra=(-use_cmp=0 -use_memmem=0)
	# New inputs go to new-$t, listed first; the corpus in the source tree is only read.
	out=$WORK/fuzz-$t.out
	"${NORAND[@]}" "$bin" -seed=$SEED -runs="$runs" -reload=0 -timeout=10 "${extra[@]}" \
		-artifact_prefix="$WORK/crash-$t-" "$WORK/new-$t" "$corpus" > "$out" 2>&1
	rc=$?
	report "$t" "fuzz-$t makes $runs runs from seed $SEED over its corpus without a crash, leak or hang" \
		$rc "$out"
	# What the run reached, and a digest of the inputs it kept: equal from run to run.
	[ $rc -eq 0 ] && echo "# $(grep -E '^#[0-9]+.*DONE' "$out" | tail -n 1 |
		sed 's/ *exec\/s:.*//') kept: $(find "$WORK/new-$t" -type f -printf '%f\n' |
		LC_ALL=C sort | md5sum | cut -c1-12)"
done

done_testing
