# lib.sh — shared helpers for the end-to-end tests: TAP output, a private store, python with Debian's numpy/h5py.
# Sourced by every tests/e2e/*.sh; MATORAGE (the binary) and top_srcdir come from make check.
set -u
: "${MATORAGE:=$(cd "$(dirname "$0")/../.." && pwd)/src/cli/matorage}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
# Debian's python3 has numpy/h5py/hdf5plugin; a pyenv python on PATH may not.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

T_N=0
T_FAILED=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mt-e2e.XXXXXX")
export MATORAGE_STORE="file://$WORK/store"
export XDG_DATA_HOME="$WORK/xdg"
trap 'rm -rf "$WORK"' EXIT

# ok COND_EXIT_STATUS NAME: record one TAP case.
ok() {
	local rc=$1
	shift
	T_N=$((T_N + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $T_N - $*"
	else
		echo "not ok $T_N - $*"
		T_FAILED=$((T_FAILED + 1))
	fi
}

# check NAME CMD...: run a command, pass when it exits 0; show its output otherwise.
check() {
	local name=$1
	shift
	local out
	out=$("$@" 2>&1)
	local rc=$?
	ok $rc "$name"
	[ $rc -eq 0 ] || printf '%s\n' "$out" | sed 's/^/# /'
	return $rc
}

# fails NAME CODE PATTERN CMD...: expect exit CODE and a one-line stderr matching PATTERN.
fails() {
	local name=$1 code=$2 pat=$3
	shift 3
	local err rc
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq "$code" ] && printf '%s' "$err" | grep -Eq -- "$pat"; then
		ok 0 "$name"
	else
		ok 1 "$name"
		echo "# exit $rc (wanted $code); stderr: $err" | sed '2,$s/^/# /'
	fi
}

done_testing() {
	echo "1..$T_N"
	[ "$T_FAILED" -eq 0 ]
}
