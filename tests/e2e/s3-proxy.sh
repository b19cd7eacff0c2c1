#!/bin/bash
# s3-proxy.sh — the signature oracle itself: awscli and botocore requests pass, any wrong, tampered or missing signature is refused.
. "$(dirname "$0")/lib.sh"
s3_require
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
method = "PUT"
if how == "body":
    body = b"other body!"
elif how == "path":
    url = ep + "/oracle/elsewhere"
elif how == "header":
    headers["Content-Type"] = "application/json"
elif how in ("lowercase-hex", "region", "old", "if-none-match", "if-none-match-new"):
    # Signed by botocore as it is sent, but not as S3 computes it.
    url = ep + {"lowercase-hex": "/oracle/a%2bb", "if-none-match-new": "/oracle/fresh"}.get(
        how, "/oracle/tampered")
    req = AWSRequest(method="PUT", url=url, data=body, headers={"Content-Type": "text/plain"})
    if how.startswith("if-none-match"):
        req.headers["If-None-Match"] = "*"
    auth = S3SigV4Auth(Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]),
                       "s3", "eu-west-1" if how == "region" else "us-east-1")
    if how == "old":
        # botocore reads the clock as datetime.datetime.utcnow(): an hour slow for this one.
        import datetime
        import botocore.auth
        class Slow(datetime.datetime):
            @classmethod
            def utcnow(cls):
                return datetime.datetime.utcnow() - datetime.timedelta(hours=1)
        botocore.auth.datetime = type("m", (), {"datetime": Slow})
    auth.add_auth(req)
    headers = dict(req.headers.items())
elif how.startswith("presigned"):
    from botocore.auth import S3SigV4QueryAuth
    method, body = "GET", None
    req = AWSRequest(method="GET", url=ep + "/oracle/tampered")
    S3SigV4QueryAuth(Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]),
                     "s3", "us-east-1", expires=1 if how.endswith("expired") else 60).add_auth(req)
    url, headers = req.url, {}
    if how.endswith("expired"):
        import time; time.sleep(2)
try:
    r = urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers, method=method),
                               timeout=30)
    print(r.status, r.read().decode()) if method == "GET" else print(r.status)
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

# What AWS checks and s3rver does not: the proxy answers as S3 would.
out=$(tamper lowercase-hex)
ok $(echo "$out" | grep -q '^403 .*SignatureDoesNotMatch.*CanonicalRequest'; echo $?) \
	"a path sent in a non-canonical spelling and signed as sent is refused, with the canonical request"
out=$(tamper region)
ok $(echo "$out" | grep -q '^400 .*AuthorizationHeaderMalformed'; echo $?) "a request signed for another region is refused"
out=$(tamper old)
ok $(echo "$out" | grep -q '^403 .*RequestTimeTooSkewed'; echo $?) "a request signed an hour ago is refused"
out=$(tamper presigned)
ok $([ "$out" = "200 signed body" ]; echo $?) "a presigned GET passes ($out)"
out=$(tamper presigned-expired)
ok $(echo "$out" | grep -q '^403 .*AccessDenied'; echo $?) "an expired presigned GET is refused"
err=$(aws_cli s3api put-object --bucket oracle --key md5 --body "$WORK/small" --content-md5 AAAAAAAAAAAAAAAAAAAAAA== 2>&1)
ok $(echo "$err" | grep -q BadDigest; echo $?) "a wrong Content-MD5 is BadDigest"
out=$(tamper if-none-match)
ok $(echo "$out" | grep -q '^412 .*PreconditionFailed'; echo $?) "PUT If-None-Match: * over an existing key is 412"
out=$(tamper if-none-match-new)
ok $([ "$out" = 200 ]; echo $?) "and 200 for a new key"

# Multipart: S3's rules on upload ids and part sizes, kept across a proxy restart.
mp() { aws_cli s3api "$@" --bucket oracle --key mp --output text 2>&1; }
uid=$(mp create-multipart-upload --query UploadId)
head -c 1000 /dev/urandom > "$WORK/tiny"
check "a small part uploads" mp upload-part --upload-id "$uid" --part-number 1 --body "$WORK/tiny"
check "a second one" mp upload-part --upload-id "$uid" --part-number 2 --body "$WORK/tiny"
out=$(mp list-multipart-uploads --query 'Uploads[].UploadId')
ok $([ "$out" = "$uid" ]; echo $?) "ListMultipartUploads names the upload"
s3_kill
s3_restart
out=$(mp list-parts --upload-id "$uid" --query 'Parts[].[PartNumber,Size]' | tr '\n\t' '  ')
ok $([ "$out" = "1 1000 2 1000 " ]; echo $?) "ListParts after a restart: both parts ($out)"
e1=$(mp list-parts --upload-id "$uid" --query 'Parts[0].ETag')
e2=$(mp list-parts --upload-id "$uid" --query 'Parts[1].ETag')
out=$(mp complete-multipart-upload --upload-id "$uid" \
	--multipart-upload "Parts=[{ETag=$e1,PartNumber=1},{ETag=$e2,PartNumber=2}]")
ok $(echo "$out" | grep -q EntityTooSmall; echo $?) "completing with a part under 5 MiB before the last is EntityTooSmall"
out=$(mp complete-multipart-upload --upload-id "$uid" --multipart-upload "Parts=[{ETag=\"x\",PartNumber=1}]")
ok $(echo "$out" | grep -q InvalidPart; echo $?) "completing with a wrong ETag is InvalidPart"
check "AbortMultipartUpload" mp abort-multipart-upload --upload-id "$uid"
out=$(mp upload-part --upload-id "$uid" --part-number 3 --body "$WORK/tiny")
ok $(echo "$out" | grep -q NoSuchUpload; echo $?) "a part for the aborted upload is NoSuchUpload"
out=$(mp list-multipart-uploads --query 'Uploads[].UploadId')
ok $([ "$out" = None ]; echo $?) "and no upload is listed ($out)"

# s3cmd, another signer, passes too.
if command -v s3cmd > /dev/null; then
	hp=${S3_ENDPOINT#http://}
	s3c() { timeout 60 s3cmd --no-ssl --host="$hp" --host-bucket="$hp" --access_key="$AWS_ACCESS_KEY_ID" \
		--secret_key="$AWS_SECRET_ACCESS_KEY" --region=us-east-1 -c /dev/null "$@"; }
	SK="s3://oracle/s3cmd dir/a+b=c%d é(1)!*'.bin"
	s3cmd_round() {
		s3c put "$WORK/small" "$SK" > /dev/null && s3c ls "s3://oracle/s3cmd dir/" | grep -qF "$SK" &&
			s3c get "$SK" "$WORK/s3cmd.out" > /dev/null && cmp "$WORK/small" "$WORK/s3cmd.out" &&
			s3c del "$SK" > /dev/null && [ -z "$(s3c ls "s3://oracle/s3cmd dir/")" ]
	}
	check "s3cmd put, ls, get and del of an odd key" s3cmd_round
	err=$(s3c --secret_key=not-the-secret put "$WORK/small" s3://oracle/s3cmd-wrong 2>&1)
	ok $(echo "$err" | grep -q SignatureDoesNotMatch; echo $?) "s3cmd with a wrong secret: SignatureDoesNotMatch"
else
	ok 1 "s3cmd is installed (scripts/install-deps.sh)"
fi

# Faults: aws retries a 503 and succeeds; the log records it.
s3_log_clear
s3_faults '{"rules":[{"match":"^GET /oracle/dir/small","action":"503","count":1}]}'
check "aws s3 cp succeeds after one injected 503" aws_cli s3 cp --quiet s3://oracle/dir/small "$WORK/s.out"
ok $(s3_log | grep -q '^GET /oracle/dir/small 503'; echo $?) "the log shows the 503"
s3_log_clear
s3_faults '{"rules":[{"match":"^GET /oracle/dir/small","action":"drop"},{"match":"^GET /oracle/dir/small","action":"truncate"},{"match":"^GET /oracle/dir/small","action":"500"},{"match":"^GET /oracle/dir/small","action":"429"}]}'
check "aws s3 cp succeeds through a dropped connection, a truncated body, a 500 and a 429" bash -c \
	"AWS_MAX_ATTEMPTS=6 aws_cli s3 cp --quiet s3://oracle/dir/small $WORK/s2.out && cmp $WORK/small $WORK/s2.out"
out=$(s3_log | grep '^GET /oracle/dir/small' | awk '{ print $NF }' | tr '\n' ' ')
ok $([ "$out" = "drop truncated 500 429 200 " ]; echo $?) "the log shows each fault in turn ($out)"
s3_faults '{"rules":[{"match":"^HEAD /oracle/dir/small","action":"delay","delay_ms":1500}]}'
t0=$(date +%s%N)
aws_cli s3api head-object --bucket oracle --key dir/small > /dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
ok $([ $ms -ge 1400 ]; echo $?) "a delay rule holds the request back ($ms ms)"
check "aws s3 rm" aws_cli s3 rm --quiet s3://oracle/dir/small
ok $([ -z "$(aws_cli s3 ls s3://oracle/dir/small)" ]; echo $?) "and it is gone"
s3_faults '{"rules":[{"match":"^GET /oracle/dir/small","action":"503","count":-1}]}'
ok $([ "$(curl -s "$S3_ENDPOINT/__faults" | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ]; echo $?) \
	"the rule is listed"
s3_faults clear
ok $([ "$(curl -s "$S3_ENDPOINT/__faults")" = "[]" ]; echo $?) "and cleared"

# --allow-anonymous (S3_ANONYMOUS=1 before s3_start or s3_restart): unsigned requests pass.
s3_kill
S3_ANONYMOUS=1 s3_restart
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$S3_ENDPOINT/oracle/dir/big")
ok $([ "$code" = 200 ]; echo $?) "with --allow-anonymous an unsigned GET passes ($code)"
err=$(AWS_SECRET_ACCESS_KEY=not-the-secret aws_cli s3 ls s3://oracle 2>&1)
ok $(echo "$err" | grep -q SignatureDoesNotMatch; echo $?) "and a wrong signature is still refused"
ok $(! grep -rqF -e "$AWS_SECRET_ACCESS_KEY" -e not-the-secret "$WORK"/*.log "$WORK"/s3proxy-uploads.json; echo $?) \
	"no secret in the servers' output"

done_testing
