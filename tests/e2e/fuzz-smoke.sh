#!/bin/bash
# fuzz-smoke.sh — run each libFuzzer target briefly from its seed corpus; a crash, leak or hang fails it.
# The targets come from $MT_FUZZ_DIR when set (scripts/test.sh builds them apart), else this build's fuzz/.
. "$(dirname "$0")/lib.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
DIR=${MT_FUZZ_DIR:-$top_builddir/fuzz}
SECONDS_EACH=${MT_FUZZ_SECONDS:-15}
TARGETS="npy manifest index s3-xml readers"

built=0
for t in $TARGETS; do
	[ -x "$DIR/fuzz-$t" ] && built=$((built + 1))
done
if [ $built -eq 0 ]; then
	echo "ok 1 # SKIP fuzzers not built (configure --enable-fuzzers CC=clang)"
	echo "1..1"
	exit 0
fi

for t in $TARGETS; do
	bin=$DIR/fuzz-$t
	if [ ! -x "$bin" ]; then
		T_N=$((T_N + 1))
		echo "ok $T_N # SKIP fuzz-$t not built in $DIR"
		continue
	fi
	# libFuzzer adds what it finds to the corpus directory: work on a copy.
	corpus=$WORK/corpus-$t
	mkdir -p "$corpus"
	[ -d "$top_srcdir/fuzz/corpus/$t" ] && cp -R "$top_srcdir/fuzz/corpus/$t/." "$corpus/"
	seeds=$(find "$corpus" -type f | wc -l)
	out=$WORK/fuzz-$t.out
	(cd "$WORK" && "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 \
		-artifact_prefix="$WORK/crash-$t-" "$corpus") > "$out" 2>&1
	rc=$?
	# "Done N runs" proves the target really ran rather than exiting early with 0.
	grep -Eq '^Done [0-9]+ runs' "$out"
	ran=$?
	ok "$([ $rc -eq 0 ] && [ $ran -eq 0 ]; echo $?)" \
		"fuzz-$t runs ${SECONDS_EACH}s from its $seeds seeds without a crash, leak or hang"
	if [ $rc -ne 0 ] || [ $ran -ne 0 ]; then
		echo "# fuzz-$t exited $rc; last lines of its output:"
		tail -n 40 "$out" | sed 's/^/# /'
		for a in "$WORK"/crash-"$t"-*; do
			[ -f "$a" ] || continue
			echo "# input that failed ($(basename "$a"), base64):"
			base64 -w 76 "$a" | head -n 20 | sed 's/^/#   /'
		done
	else
		grep -E '^Done [0-9]+ runs' "$out" | sed 's/^/# /'
	fi
done

done_testing
