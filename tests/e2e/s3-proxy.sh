#!/bin/bash
# s3-proxy.sh — the signature oracle itself: awscli and botocore requests pass, any wrong, tampered or missing signature is refused.
. "$(dirname "$0")/lib.sh"
if ! s3_available; then
	echo "1..0 # SKIP s3rver or node not installed (scripts/install-deps.sh)"
	exit 0
fi
s3_start || { echo "Bail out! cannot start s3rver and the signing proxy"; exit 1; }
head -c 100000 /dev/urandom > "$WORK/small"
head -c 20000000 /dev/urandom > "$WORK/big"

check "aws s3 mb through the proxy" aws_cli s3 mb s3://oracle
check "aws s3 cp up" aws_cli s3 cp --quiet "$WORK/small" s3://oracle/dir/small
check "aws s3 cp of 20 MB (multipart upload)" aws_cli s3 cp --quiet "$WORK/big" s3://oracle/dir/big
check "aws s3 cp down, same bytes" bash -c \
	"aws_cli s3 cp --quiet s3://oracle/dir/big $WORK/big.out && cmp $WORK/big $WORK/big.out"
ODD="odd dir/a+b=c%d é~.bin"
check "a key with space + = % and unicode round-trips" bash -c \
	"aws_cli s3api put-object --bucket oracle --key '$ODD' --body $WORK/small > /dev/null &&
	 aws_cli s3api get-object --bucket oracle --key '$ODD' $WORK/odd.out > /dev/null && cmp $WORK/small $WORK/odd.out"
out=$(aws_cli s3api list-objects-v2 --bucket oracle --delimiter / --query 'CommonPrefixes[].Prefix' --output text)
ok $([ "$out" = "dir/	odd dir/" ]; echo $?) "delimiter listings name every common prefix ($out)"

err=$(AWS_SECRET_ACCESS_KEY=not-the-secret aws_cli s3 cp "$WORK/small" s3://oracle/wrong 2>&1)
ok $(echo "$err" | grep -q SignatureDoesNotMatch; echo $?) "a wrong secret is SignatureDoesNotMatch"
ok $([ -z "$(aws_cli s3 ls s3://oracle/wrong)" ]; echo $?) "and nothing was written"
err=$(AWS_ACCESS_KEY_ID=NOSUCHKEY aws_cli s3 ls s3://oracle 2>&1)
ok $(echo "$err" | grep -q InvalidAccessKeyId; echo $?) "an unknown key id is InvalidAccessKeyId"
code=$(curl -s -o "$WORK/anon" -w '%{http_code}' "$S3_ENDPOINT/oracle/dir/small")
ok $([ "$code" = 403 ] && grep -q AccessDenied "$WORK/anon"; echo $?) "an unsigned request is refused ($code)"

# Requests botocore signs correctly, then altered on the way: a body, a path, a header.
tamper() {
	"$PY" - "$S3_ENDPOINT" "$1" <<'PYEOF'
import sys, urllib.request, urllib.error
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
import os
ep, how = sys.argv[1], sys.argv[2]
req = AWSRequest(method="PUT", url=ep + "/oracle/tampered", data=b"signed body",
                 headers={"Content-Type": "text/plain"})
S3SigV4Auth(Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]),
            "s3", "us-east-1").add_auth(req)
url, body, headers = req.url, b"signed body", dict(req.headers.items())
if how == "body":
    body = b"other body!"
elif how == "path":
    url = ep + "/oracle/elsewhere"
elif how == "header":
    headers["Content-Type"] = "application/json"
try:
    r = urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers, method="PUT"))
    print(r.status)
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().replace("\n", " "))
PYEOF
}
out=$(tamper none)
ok $([ "$out" = 200 ]; echo $?) "a request botocore signed passes ($out)"
out=$(tamper body)
ok $(echo "$out" | grep -q '^400 .*XAmzContentSHA256Mismatch'; echo $?) "a changed body is refused"
out=$(tamper path)
ok $(echo "$out" | grep -q '^403 .*SignatureDoesNotMatch'; echo $?) "a changed path is refused"
out=$(tamper header)
ok $(echo "$out" | grep -q '^403 .*SignatureDoesNotMatch'; echo $?) "a changed signed header is refused"

# Faults: aws retries a 503 and succeeds; the log records it.
s3_log_clear
s3_faults '{"rules":[{"match":"^GET /oracle/dir/small","action":"503","count":1}]}'
check "aws s3 cp succeeds after one injected 503" aws_cli s3 cp --quiet s3://oracle/dir/small "$WORK/s.out"
ok $(s3_log | grep -q '^GET /oracle/dir/small 503'; echo $?) "the log shows the 503"
s3_faults '{"rules":[{"match":"^GET /oracle/dir/small","action":"503","count":-1}]}'
ok $([ "$(curl -s "$S3_ENDPOINT/__faults" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ]; echo $?) \
	"the rule is listed"
s3_faults clear
ok $([ "$(curl -s "$S3_ENDPOINT/__faults")" = "[]" ]; echo $?) "and cleared"

done_testing
