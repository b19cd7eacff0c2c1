# lib.sh — shared helpers for the end-to-end tests: TAP output, a private store, python with Debian's numpy/h5py.
# Sourced by every tests/e2e/*.sh; MATORAGE (the binary) and top_srcdir come from make check.
set -u
: "${MATORAGE:=$(cd "$(dirname "$0")/../.." && pwd)/src/cli/matorage}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
# Debian's python3 has numpy/h5py/hdf5plugin; a pyenv python on PATH may not.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# pymt ARGS...: python with the python/matorage package importable over the built library.  An
# instrumented library needs its sanitizer runtime preloaded, into python alone: other
# programs a test runs (curl) can deadlock in their start-up with it preloaded.
pymt() {
	local env=(MATORAGE_LIB="$top_builddir/src/lib/.libs/libmatorage.so"
		PYTHONPATH="$top_srcdir/python")
	case "${MT_CFLAGS:-}" in *fsanitize=address*)
		env+=(LD_PRELOAD="$($MT_CC -print-file-name=libasan.so) $($MT_CC -print-file-name=libubsan.so)"
			ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0) ;;
	esac
	env "${env[@]}" "$PY" "$@"
}

# free_port: a loopback port nobody listens on now, chosen at random below the kernel's
# ephemeral range, so that no outgoing connection (of this test or another running beside
# it) can take it before the server that is told it binds it.  A server that still finds it
# taken is started again on another (s3_start).
free_port() {
	"$PY" - <<'PYEOF'
import random, socket
with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
    low = int(f.read().split()[0])
ports = random.sample(range(10000, low), 200) if low > 12000 else []
for port in ports + [0]:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(s.getsockname()[1])
    break
PYEOF
}

T_N=0
T_FAILED=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mt-e2e.XXXXXX")
export MATORAGE_STORE="file://$WORK/store"
export XDG_DATA_HOME="$WORK/xdg"
export XDG_CACHE_HOME="$WORK/xdg-cache"
mt_cleanup() {
	s3_stop
	rm -rf "$WORK"
}
trap mt_cleanup EXIT

# ok COND_EXIT_STATUS NAME: record one TAP case.
ok() {
	local rc=$1
	shift
	T_N=$((T_N + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $T_N - ${T_PREFIX:-}$*"
	else
		echo "not ok $T_N - ${T_PREFIX:-}$*"
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
	# The run time goes into the log, so scripts/test.sh can list the tests nearest their limit.
	echo "# elapsed ${SECONDS} s"
	echo "1..$T_N"
	[ "$T_FAILED" -eq 0 ]
}

# flip_byte FILE: the byte in the middle of FILE changed, the size kept (damage a
# checksum must catch: nothing else about the object tells).
flip_byte() {
	chmod u+w "$1"
	"$PY" - "$1" <<'PYEOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x10
open(sys.argv[1], "wb").write(b)
PYEOF
}

# ---- S3: s3rver or Ceph RADOS Gateway behind the signature-checking, fault-injecting proxy (s3proxy.py) ----

S3_PIDS=()
S3RVER_JS="$top_srcdir/tests/s3/node_modules/s3rver/bin/s3rver.js"
. "$top_srcdir/tests/e2e/rgw.sh"
# S3_TARGET: the server behind the proxy, s3rver or rgw (the rgw-*.sh suites set it).
: "${S3_TARGET:=s3rver}"
[ "$S3_TARGET" = rgw ] && T_PREFIX="rgw: "

# s3_available: the server S3_TARGET names (scripts/install-deps.sh) and Debian's botocore are there.
s3_available() {
	"$PY" -c 'import botocore' 2> /dev/null || return 1
	if [ "$S3_TARGET" = rgw ]; then
		rgw_available
	else
		command -v node > /dev/null && [ -f "$S3RVER_JS" ]
	fi
}

# s3_require: skip the whole test unless MT_TEST_S3 (rgw, s3rver or both; by default both
# where Ceph is installed, else s3rver) asks for S3_TARGET and its server is installed; then
# start it and the proxy, once for the whole script.
s3_require() {
	local want=${MT_TEST_S3:-both}
	if [ "$want" != both ] && [ "$want" != "$S3_TARGET" ]; then
		echo "1..0 # SKIP MT_TEST_S3=$want leaves out $S3_TARGET"
		exit 0
	fi
	if ! s3_available; then
		if [ "$S3_TARGET" = rgw ]; then
			echo "1..0 # SKIP ceph-mon, ceph-osd or radosgw not installed (scripts/install-deps.sh)"
		else
			echo "1..0 # SKIP s3rver or node not installed (scripts/install-deps.sh)"
		fi
		exit 0
	fi
	s3_start || { echo "Bail out! cannot start $S3_TARGET and the signing proxy"; exit 1; }
}

# s3_wait URL [CURL OPTIONS...]: until something answers there (at most 15 s) while every
# server started is still running: one that could not bind its port has exited, and what
# answers there is somebody else's.
s3_wait() {
	local url=$1 p
	shift
	for _ in $(seq 150); do
		for p in "${S3_PIDS[@]}"; do kill -0 "$p" 2> /dev/null || return 1; done
		curl -s -o /dev/null --max-time 1 "$@" "$url" && return 0
		sleep 0.1
	done
	return 1
}

# s3_launch: start s3rver on $S3_PORT and the proxy on $S3_PROXY_PORT (0: any free port);
# with S3_ANONYMOUS=1 the proxy forwards unsigned requests instead of refusing them.
s3_launch() {
	if [ "$S3_TARGET" = rgw ]; then
		rgw_launch || return 1
	else
		mkdir -p "$WORK/s3data"
		node --openssl-legacy-provider "$S3RVER_JS" --address 127.0.0.1 --port "$S3_PORT" \
			--directory "$WORK/s3data" --service-endpoint localhost --silent > "$WORK/s3rver.log" 2>&1 &
		S3_PIDS+=($!)
	fi
	rm -f "$WORK/proxy.port"
	# In front of RGW the proxy only checks signatures and injects faults: RGW is S3 enough.
	S3PROXY_PASSTHROUGH=$([ "$S3_TARGET" = rgw ] && echo 1) S3PROXY_ACCESS_KEY=$AWS_ACCESS_KEY_ID S3PROXY_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
		S3PROXY_REGION=$AWS_REGION "$PY" "$top_srcdir/tests/e2e/s3proxy.py" "$S3_PROXY_PORT" \
		"$S3_PORT" "$WORK/proxy.port" ${S3_ANONYMOUS:+--allow-anonymous} > "$WORK/s3proxy.log" 2>&1 &
	S3_PIDS+=($!)
	for _ in $(seq 150); do
		[ -s "$WORK/proxy.port" ] && break
		sleep 0.1
	done
	if [ -s "$WORK/proxy.port" ]; then
		S3_PROXY_PORT=$(cat "$WORK/proxy.port")
		s3_wait "http://127.0.0.1:$S3_PORT/" && s3_wait "http://127.0.0.1:$S3_PROXY_PORT/__log" && return 0
	fi
	# Why not, on stderr (TAP readers show it): the last lines each server printed.
	for f in s3rver s3proxy; do
		tail -n 5 "$WORK/$f.log" 2> /dev/null | sed "s/^/# $f: /" >&2
	done
	return 1
}

# s3_start: start both, and point every S3 client (matorage, aws, botocore) at the proxy
# with the test's key pair; the real ~/.aws is never read.
s3_start() {
	local try
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_CA_BUNDLE AWS_DEFAULT_REGION AWS_ENDPOINT_URL_S3
	# s3rver knows this one key id (and checks no V4 signature); the proxy checks them with the
	# secret, and so does RGW, whose user is made with this pair.
	export AWS_ACCESS_KEY_ID=S3RVER
	export AWS_SECRET_ACCESS_KEY=matorage-test-secret-4f1c9a
	export AWS_REGION=us-east-1
	mkdir -p "$WORK/aws"
	: > "$WORK/aws/config"
	: > "$WORK/aws/credentials"
	export AWS_CONFIG_FILE="$WORK/aws/config" AWS_SHARED_CREDENTIALS_FILE="$WORK/aws/credentials"
	export AWS_PAGER="" AWS_EC2_METADATA_DISABLED=true
	# A port taken between its choice and the server's bind (RGW binds it some seconds
	# later) fails the launch: the servers are stopped and started on other ports.
	for try in 1 2 3; do
		S3_PORT=$(free_port)
		S3_PROXY_PORT=0
		s3_launch && break
		s3_kill
		[ "$try" -lt 3 ] || return 1
		echo "# $S3_TARGET did not start on port $S3_PORT; trying another" >&2
	done
	export S3_ENDPOINT="http://127.0.0.1:$S3_PROXY_PORT" S3_DIRECT="http://127.0.0.1:$S3_PORT"
	export AWS_ENDPOINT_URL=$S3_ENDPOINT
}

# s3_kill: the server dies (both processes, at once); s3_restart brings it back on the same ports and data.
s3_kill() {
	for p in "${S3_PIDS[@]}"; do kill -9 "$p" 2> /dev/null; done
	for p in "${S3_PIDS[@]}"; do wait "$p" 2> /dev/null; done
	S3_PIDS=()
}
s3_restart() {
	s3_launch
}

s3_stop() {
	for p in "${S3_PIDS[@]}"; do kill "$p" 2> /dev/null; done
	for p in "${S3_PIDS[@]}"; do rgw_reap "$p"; done
	S3_PIDS=()
	rgw_stop
}

# s3_faults JSON | s3_faults clear: add fault rules to the proxy (see s3proxy.py), or drop them all.
s3_faults() {
	if [ "$1" = clear ]; then
		curl -s -f -X DELETE "$S3_ENDPOINT/__faults" > /dev/null
	else
		curl -s -f -X POST --data-binary "$1" "$S3_ENDPOINT/__faults" > /dev/null
	fi
}

# s3_log: the proxy's request log, "METHOD /path?query STATUS" a line; s3_log_clear empties it.
s3_log() { curl -s -f "$S3_ENDPOINT/__log"; }
s3_log_clear() { curl -s -f -X DELETE "$S3_ENDPOINT/__log" > /dev/null; }

# aws_cli ARGS...: Debian's awscli (another aws may shadow it on PATH) against the proxy.
aws_cli() { /usr/bin/aws --endpoint-url "$S3_ENDPOINT" "$@"; }
export -f aws_cli
