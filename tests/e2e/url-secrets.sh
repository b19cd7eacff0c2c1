#!/bin/bash
# url-secrets.sh — a password in an endpoint URL (http://user:password@host) is refused by remote add, by every store open, and never appears in any output: stdout, stderr, --debug, remote ls (--json), the configuration file.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_CONFIG="$WORK/conf/matorage.json"
PW=Pw0rdXq7Secret
EP="http://alice:$PW@127.0.0.1:9"
ALL="$WORK/all-output"
: > "$ALL"

# run NAME CODE CMD...: expect exit CODE; every byte it prints goes to $ALL.
run() {
	local name=$1 code=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" >> "$ALL"
	ok $([ $rc -eq "$code" ]; echo $?) "$name (exit $rc): $(head -c 300 <<< "$out" | tr '\n' ' ' | sed "s/$PW/<PASSWORD>/g")"
}

run "remote add refuses an endpoint with user:password@" 1 \
	$M remote add bad s3://bucket/p --endpoint "$EP"
grep -q "profile" "$ALL"
ok $? "the refusal points to profiles or AWS_* variables"
run "remote add refuses it with --debug too" 1 $M --debug remote add bad2 s3://bucket/p --endpoint "$EP"
ok $([ ! -f "$MATORAGE_CONFIG" ] || ! grep -q "$PW" "$MATORAGE_CONFIG"; echo $?) \
	"nothing with the password was stored"

# A configuration written by hand, before this check existed.
mkdir -p "$(dirname "$MATORAGE_CONFIG")"
cat > "$MATORAGE_CONFIG" <<EOF
{"remotes": {"old": {"url": "s3://bucket/p", "endpoint": "$EP"}}}
EOF
run "remote ls of a hand-written remote" 0 $M remote ls
run "remote ls --json of it" 0 $M remote ls --json
grep -q '\*\*\*@127.0.0.1:9' "$ALL"
ok $? "remote ls shows the endpoint as http://***@host"
run "a store opened through that remote fails, naming the endpoint without the password" 1 \
	$M --debug --store old ls
run "--endpoint with a password fails before any request" 1 \
	$M --debug --store s3://bucket/p --endpoint "$EP" ls
run "AWS_ENDPOINT_URL with a password too" 1 \
	env AWS_ENDPOINT_URL="$EP" $M --debug --store s3://bucket/p ls
$PY "$top_srcdir/tests/e2e/npy_tool.py" make "$WORK/x.npy" float32 10x2 1
run "a local dataset" 0 $M put d x="$WORK/x.npy"
run "push of it to such an endpoint fails too" 1 \
	$M --debug --endpoint "$EP" push d s3://bucket/p
grep -q "\*\*\*@" "$ALL"
ok $? "the errors show the endpoint redacted"

n=$(grep -c "$PW" "$ALL")
ok $([ "$n" -eq 0 ]; echo $?) "the password appears in none of the output ($n lines)"
[ "$n" -eq 0 ] || grep "$PW" "$ALL" | head -5 | sed 's/^/# /'

done_testing
