#!/bin/bash
# crafted.sh — self-consistent hostile versions (every hash fixed up: index xxh3, sha256, manifest checksum) never crash a command, never hand memory out as rows, never allocate past a bound, and verify agrees with reads.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
CRAFT="$top_builddir/tests/e2e/craft-shard"
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
ASAN=0
case "${MT_CFLAGS:-}" in *fsanitize=address*) ASAN=1 ;; esac
# Without ASan every command runs under a 2 GiB address-space limit; with it (ulimit -v does
# not mix with its shadow memory) an oversized allocation is an ASan report, caught below.
LIMIT_KB=$((2 * 1024 * 1024))

# Two small versions to craft from, fixed seeds: f holds x int64 (200 rows, 2 chunks of
# 100), r a ragged t int32 of 1 to 5 items a row (200 rows) beside y int64.
TPL="$WORK/tpl"
$T make "$WORK/x.npy" int64 200 1
check "template f: x int64, 200 rows in chunks of 100" $M --store "$TPL" put f x="$WORK/x.npy" --chunk-size 800
"$PY" -c '
import json
for i in range(200):
    print(json.dumps({"t": [(i * 7 + k) % 1000 for k in range(1 + i % 5)], "y": i}))' > "$WORK/r.jsonl"
check "template r: ragged t int32, 200 rows" bash -c \
	"$M --store '$TPL' ingest r --attr t=int32:* --attr y=int64 < '$WORK/r.jsonl' > /dev/null"

# run NAME CMD...: run one command of a case, under the memory bound and a 20 s limit (a hang
# is a failure, not a stalled suite); sets RC and ERR (stderr), and counts a signal, a time-out
# or a sanitizer report as a crash.
run() {
	local name=$1
	shift
	local lim=(timeout 20)
	declare -F "$1" > /dev/null && lim=() # a shell function bounds itself
	if [ $ASAN = 1 ]; then
		"${lim[@]}" "$@" > "$O.out" 2> "$O.err"
	else
		(ulimit -v $LIMIT_KB; "${lim[@]}" "$@") > "$O.out" 2> "$O.err"
	fi
	RC=$?
	ERR=$(cat "$O.err")
	if [ $RC -ge 124 ] || grep -Eq "Sanitizer|runtime error|allocation-size-too-big" "$O.err"; then
		CRASH="$CRASH $name(rc $RC)"
		printf '%s\n' "$ERR" | head -20 | sed 's/^/#   /'
	fi
}

# loader S D: iterate every batch of D's latest version in store S with the python Loader;
# SIGALRM (not caught) ends it after 20 s.
loader() {
	pymt - "$1" "$2" <<'PYEOF'
import signal
import sys
import matorage
signal.alarm(20)
try:
    for b in matorage.Loader(matorage.Store(sys.argv[1]), sys.argv[2], batch_rows=64):
        pass
except matorage.MatorageError as e:
    print(e, file=sys.stderr)
    sys.exit(1)
PYEOF
}

# A command that fails must say so in one line naming the version or the object.
named_error() {
	[ "$(printf '%s\n' "$ERR" | grep -c .)" -eq 1 ] && printf '%s' "$ERR" | grep -Eq "$1@|datasets/$1/"
}

# expect NAME WANT CMD...: run CMD; a sound case wants exit 0, a hostile one exit 1 with a
# one-line error. Appends NAME=RC to ROW and what went wrong to BAD.
expect() {
	local name=$1 want=$2
	shift 2
	run "$name" "$@"
	ROW="$ROW $name=$RC"
	if [ "$want" = 0 ]; then
		[ $RC -eq 0 ] || BAD="$BAD $name:exit$RC"
	elif [ $RC -ne 1 ]; then
		BAD="$BAD $name:exit$RC"
	elif [ "$name" != verify ] && ! named_error "$DS"; then
		BAD="$BAD $name:message"
	fi
}

# The commands beyond verify, the reads, stats, protect and compact run on these cases only:
# one of each kind (manifest, frame, ragged offsets) and the two sound ones.
WIDE=" sound sound-ragged wrap frame-1g offsets-start-50 "

# one_case NAME DS ABOUT: craft and run one case; prints "R RC TEXT" for each TAP result
# and "# ..." notes, so that two cases can run at once and be reported in order.
one_case() {
	local name=$1 DS=$2 about=$3
	local S="$WORK/c/$name" O="$WORK/c/$name" attr=x want=1 sha verr vsound
	cp -r "$TPL" "$S"
	[ "$DS" = r ] && attr=t
	if ! sha=$("$CRAFT" "$S" "$DS" v1 "$name" 2>&1); then
		echo "R 1 $name: crafted ($sha)"
		return
	fi
	CRASH="" ROW="" BAD=""
	[[ $name == sound* ]] && want=0
	local MS=(env MATORAGE_STORE="$S" $M -q)
	expect verify $want "${MS[@]}" verify "$DS"
	verr=$(cat "$O.out" "$O.err" | grep -v "^BAD\|shards verified" | head -1)
	vsound=$(cat "$O.out" "$O.err" | grep -c "is sound\|sound when")
	expect cat $want "${MS[@]}" cat "$DS" $attr --rows 0:200
	rm -f "$O.npy"
	expect get $want "${MS[@]}" get "$DS" $attr -o "$O.npy"
	[ $want = 1 ] && [ -e "$O.npy" ] && BAD="$BAD get:left-a-file"
	expect stats $want "${MS[@]}" stats "$DS"
	expect protect $want "${MS[@]}" protect "$DS" --parity 2+1
	expect compact $want "${MS[@]}" compact "$DS"
	if [[ $WIDE == *" $name "* ]]; then
		[ $want = 1 ] && expect cat-far 1 "${MS[@]}" cat "$DS" $attr --rows 100000:100001
		expect loader $want loader "$S" "$DS"
		expect push $want "${MS[@]}" push "$DS@v1" "file://$S-dst"
		run diff "${MS[@]}" diff "$DS@v1" "$DS@v1"
		ROW="$ROW diff=$RC"
		[ $RC -le 1 ] || BAD="$BAD diff:exit$RC"
		run info "${MS[@]}" info "$DS"
		ROW="$ROW info=$RC"
		[ $RC -le 1 ] || BAD="$BAD info:exit$RC"
	fi
	echo "R $([ -z "$CRASH" ]; echo $?) $name: no command crashed, hung or tripped a sanitizer ($about)${CRASH:+: }$CRASH"
	if [ $want = 0 ]; then
		echo "R $([ -z "$BAD" ]; echo $?) $name: verify and every command succeed${BAD:+ -}$BAD"
	else
		echo "R $([ -z "$BAD" ]; echo $?) $name: verify and every command fail, exit 1 with a one-line error${BAD:+ -}$BAD"
		echo "R $([ "$vsound" = 0 ]; echo $?) $name: verify does not call it sound"
	fi
	echo "# $name:$ROW | $verr"
}

mkdir -p "$WORK/c"
mapfile -t CASES < <("$CRAFT" --list)
for c in "${CASES[@]}"; do
	read -r name DS about <<< "$c"
	one_case "$name" "$DS" "$about" > "$WORK/c/$name.tap" 2>&1 &
	while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
done
wait
NCASE=0
for c in "${CASES[@]}"; do
	read -r name _ <<< "$c"
	NCASE=$((NCASE + 1))
	while read -r tag rc text; do
		if [ "$tag" = R ]; then ok "$rc" "$text"; else echo "$tag $rc $text"; fi
	done < "$WORK/c/$name.tap"
done
ok $([ $NCASE -ge 20 ]; echo $?) "$NCASE cases crafted and run (20 at least)"
done_testing
