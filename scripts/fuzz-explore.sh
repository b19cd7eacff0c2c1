#!/bin/bash
# fuzz-explore.sh — fuzz one target at random for a while, to find new crashes; run on purpose, never by make check.
# Usage: scripts/fuzz-explore.sh TARGET [SECONDS] [LIBFUZZER-OPTION...]
#   TARGET is npy, manifest, index, s3-xml, readers, records or shard; SECONDS defaults to 600.
# Builds the target in build/fuzz when it is not there (clang, as scripts/test.sh does).
# Keeps its working corpus in build/fuzz-explore/TARGET/corpus, so runs build on each
# other, and what it finds in build/fuzz-explore/TARGET/crash-*.  Once a crash is fixed,
# add its input to fuzz/corpus/TARGET/ (named for the defect): from then on
# tests/e2e/fuzz-smoke.sh replays it in every make check.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGETS="npy manifest index s3-xml readers records shard"

usage() {
	echo "usage: $0 TARGET [SECONDS] [LIBFUZZER-OPTION...]  (TARGET: $TARGETS)" >&2
	exit 2
}
[ $# -ge 1 ] || usage
T=$1
shift
case " $TARGETS " in *" $T "*) ;; *) usage ;; esac
SECS=600
if [ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]]; then
	SECS=$1
	shift
fi

BUILD=$ROOT/build/fuzz
BIN=${MT_FUZZ_DIR:-$BUILD/fuzz}/fuzz-$T
if [ ! -x "$BIN" ]; then
	echo "==> building fuzz-$T in build/fuzz"
	if [ ! -f "$BUILD/Makefile" ]; then
		[ -x "$ROOT/configure" ] || (cd "$ROOT" && ./autogen.sh) || exit 1
		mkdir -p "$BUILD" && (cd "$BUILD" &&
			"$ROOT/configure" CC=clang --enable-fuzzers --enable-sanitizers > /dev/null) ||
			exit 1
	fi
	make -C "$BUILD" -j"$(nproc)" "fuzz/fuzz-$T" > /dev/null || exit 1
fi

OUT=$ROOT/build/fuzz-explore/$T
mkdir -p "$OUT/corpus" "$OUT/run"
# A seed from the clock, printed so that a run can be repeated (on one machine, with
# address randomization off: setarch "$(uname -m)" -R).
SEED=${MT_FUZZ_SEED:-$(date +%s)}
echo "==> fuzz-$T for $SECS s, seed $SEED; corpus $OUT/corpus (plus fuzz/corpus/$T)"
# failing inputs libFuzzer saved in $OUT
failures() {
	find "$OUT" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \) | wc -l
}
before=$(failures)
# In a directory of its own: fuzz-readers writes its input file where it runs.
(cd "$OUT/run" && "$BIN" -seed="$SEED" -max_total_time="$SECS" -timeout=10 \
	-artifact_prefix="$OUT/" -print_final_stats=1 "$@" "$OUT/corpus" "$ROOT/fuzz/corpus/$T")
rc=$?
found=$(failures)
echo "==> fuzz-$T exited $rc; $((found - before)) new failing input(s), $found in $OUT"
if [ "$found" -gt 0 ]; then
	echo "    reproduce one:  (cd $OUT/run && $BIN $OUT/crash-...)"
	echo "    once fixed, keep it as a regression case:  cp $OUT/crash-... $ROOT/fuzz/corpus/$T/regress-WHAT"
fi
exit $rc
