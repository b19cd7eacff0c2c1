#!/bin/bash
# test.sh — the whole test suite: sanitizer build with make check (fuzz smoke included) and make distcheck.
# Ends with one line "N passed, N failed, N skipped" and exits non-zero when anything failed.
# Builds live under build/ (check, fuzz, dist); each step's full output goes to build/logs/.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
JOBS=$(nproc)
LOGS=$ROOT/build/logs
# The test harness's summaries are parsed below; colour codes would get in the way.
export AM_COLOR_TESTS=no
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

PASSED=0
FAILED=0
SKIPPED=0
BROKEN=()   # steps that failed, with what they count for
TIMES=()
T_START=$(date +%s)

# run NAME CMD...: one step; output to build/logs/NAME.log, its tail on failure.
run() {
	local name=$1 t0 rc
	shift
	echo "==> $name: $*"
	t0=$(date +%s)
	"$@" > "$LOGS/$name.log" 2>&1
	rc=$?
	TIMES+=("$(printf '%-22s %4ds  %s' "$name" $(($(date +%s) - t0)) \
		"$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
	if [ $rc -ne 0 ]; then
		echo "!!! $name failed (exit $rc); its first errors and last lines (build/logs/$name.log):"
		{ grep -E 'error:|\*\*\*' "$LOGS/$name.log" | head -n 20; echo ...
			tail -n 25 "$LOGS/$name.log"; } | sed 's/^/    /'
	fi
	echo "<== $name: $(($(date +%s) - t0)) s"
	return $rc
}

# A step that failed before running tests counts as one failed test.
broken() {
	BROKEN+=("$1")
	FAILED=$((FAILED + 1))
}

# count FILE NAME: add an automake test summary ("# PASS:  n" ...: a test-suite.log header,
# or make check's own output) to the totals and set NFAIL; fails when FILE holds none.
count() {
	local name=$2 nums
	nums=$(awk '/^# (PASS|XFAIL|FAIL|XPASS|ERROR|SKIP): / && !seen[$2]++ { v[$2] = $3 }
		END { if (!("PASS:" in v)) exit 1
			print v["PASS:"] + v["XFAIL:"], v["FAIL:"] + v["XPASS:"] + v["ERROR:"], v["SKIP:"] + 0 }' "$1") ||
		return 1
	local p f s
	read -r p f s <<< "$nums"
	echo "    $name tests: $p passed, $f failed, $s skipped"
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SKIPPED=$((SKIPPED + s))
	NFAIL=$f
	[ "$f" -eq 0 ] || BROKEN+=("$name: $f failing test case(s)")
}

# show_failures DIR: what each failing test printed, less its passing cases.
show_failures() {
	local trs log
	while IFS= read -r trs; do
		log=${trs%.trs}.log
		echo "---- ${log#"$ROOT"/} (passing cases left out):"
		grep -vE '^(ok [0-9]|(PASS|SKIP|XFAIL): )' "$log" | tail -n 50 | sed 's/^/    /'
	done < <(grep -rlE '^:test-result: (FAIL|ERROR|XPASS)' "$1" --include='*.trs' 2>/dev/null | sort)
}

# slowest DIR: the ten end-to-end tests that ran longest (lib.sh logs "# elapsed N s"), so a
# test that creeps towards the per-test limit (Makefile.am's TEST_TIMEOUT) shows before it fails.
slowest() {
	local list
	list=$(grep -rsH --include='*.log' -E '^# elapsed [0-9]+ s$' "$1/tests" |
		sed -E 's|^.*/(tests/[^:]*)\.log:# elapsed ([0-9]+) s$|\2 \1|' | sort -rn | head -n 10)
	[ -n "$list" ] || return 0
	echo "    slowest tests (seconds; the limit is 600):"
	sed 's/^/        /' <<< "$list"
}

# tests_done NAME RC LOG DIR: count what a make check (or distcheck) that exited RC ran.
tests_done() {
	local name=$1 rc=$2
	if ! count "$3" "$name"; then
		broken "$name: exit $rc before any test ran"
		return
	fi
	[ "$rc" -eq 0 ] && return
	show_failures "$4"
	# It failed, yet no test did (install, dist or clean checks): still one failure.
	[ "$NFAIL" -gt 0 ] || broken "$name: exit $rc after its tests passed"
}

# configure_in DIR ARGS...: run configure in build directory DIR.
configure_in() {
	local dir=$1
	shift
	# The Python the tests use (tests/e2e/lib.sh): the package is installed for it.
	local py=()
	[ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ] && py=(PYTHON=/usr/bin/python3)
	mkdir -p "$dir" && cd "$dir" && "$ROOT/configure" "${py[@]}" "$@"
	local rc=$?
	cd "$ROOT" || return 1
	return $rc
}

# check_build NAME DIR CONFIGURE-ARGS...: configure build/DIR, build it, make check.
check_build() {
	local name=$1 dir=$ROOT/build/$2
	shift 2
	run "$name-configure" configure_in "$dir" "$@" || { broken "$name: configure"; return; }
	run "$name-build" make -C "$dir" -j"$JOBS" || { broken "$name: build"; return; }
	rm -f "$dir/test-suite.log"
	run "$name-check" env MT_FUZZ_DIR="$ROOT/build/fuzz/fuzz" make -C "$dir" -j"$JOBS" check
	tests_done "$name" $? "$dir/test-suite.log" "$dir"
	slowest "$dir"
}

rm -rf "$LOGS"
mkdir -p "$LOGS"

run install-deps "$ROOT/scripts/install-deps.sh" || broken "install-deps"
run autogen ./autogen.sh
AUTOGEN=$?
[ $AUTOGEN -eq 0 ] || broken "autogen"

# LeakSanitizer needs ptrace-like access to the process's threads, which some containers deny.
probe=$(mktemp -d)
printf '#include <stdlib.h>\nint main(void) { void *p = malloc(7); p = 0; return p != 0; }\n' \
	> "$probe/leak.c"
if gcc -fsanitize=address -g "$probe/leak.c" -o "$probe/leak" 2> /dev/null &&
	ASAN_OPTIONS=detect_leaks=1 "$probe/leak" 2>&1 | grep -q 'detected memory leaks'; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
else
	echo "NOTE: LeakSanitizer does not work here (ptrace restricted?); leak checks are off"
	export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0
fi
rm -rf "$probe"

if [ $AUTOGEN -eq 0 ]; then
	# Fuzz targets (clang, libFuzzer); the sanitizer build's make check runs them via MT_FUZZ_DIR.
	if run fuzz-configure configure_in build/fuzz CC=clang --enable-fuzzers --enable-sanitizers
	then
		# A target that no longer builds must not leave its old binary to be tested.
		FUZZ_TARGETS=(fuzz/fuzz-npy fuzz/fuzz-manifest fuzz/fuzz-index fuzz/fuzz-s3-xml
			fuzz/fuzz-readers fuzz/fuzz-records fuzz/fuzz-shard)
		(cd build/fuzz && rm -f "${FUZZ_TARGETS[@]}")
		run fuzz-build make -C build/fuzz -k -j"$JOBS" "${FUZZ_TARGETS[@]}" || broken "fuzz: build"
	else
		broken "fuzz: configure"
	fi

	check_build sanitizers check --enable-debug --enable-werror --enable-sanitizers

	# distcheck: the tarball builds, passes make check, installs and uninstalls cleanly.
	if run dist-configure configure_in build/dist; then
		run distcheck make -C build/dist -j"$JOBS" distcheck
		tests_done distcheck $? "$LOGS/distcheck.log" "$ROOT/build/dist"
	else
		broken "distcheck: configure"
	fi
fi

echo
echo "==== step times (total $(($(date +%s) - T_START)) s on $JOBS CPUs)"
printf '    %s\n' "${TIMES[@]}"
if [ ${#BROKEN[@]} -gt 0 ]; then
	echo "==== failed:"
	printf '    %s\n' "${BROKEN[@]}"
fi
echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ] && [ ${#BROKEN[@]} -eq 0 ]
