#!/bin/bash
# s3-interop.sh — what matorage writes to S3, awscli and s3cmd read; what awscli uploads, matorage reads; bad credentials, odd keys, paging, secrets.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
s3_require
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
$T make "$WORK/x.npy" float32 300x16 5
$T make "$WORK/y.npy" int64 300 6

# matorage → S3 → aws s3 cp --recursive → a file store with the same rows.
S=s3://interop/team
check "put to $S (the bucket is created on first write)" \
	$M --store $S put ds x="$WORK/x.npy" y="$WORK/y.npy" --shard-rows 64 --chunk-size 256
check "aws s3 cp --recursive fetches the store" \
	aws_cli s3 cp --recursive --quiet $S "$WORK/fromaws"
check "the copy opens as a file store with identical rows" bash -c \
	"$M --store $WORK/fromaws get ds x -o $WORK/o.npy && $T same $WORK/x.npy $WORK/o.npy"
check "verify passes on the copy (sha256 of every shard)" $M --store "$WORK/fromaws" verify ds
n_aws=$(aws_cli s3 ls --recursive $S/datasets/ds/shards/ | wc -l)
n_info=$($M --store $S info ds --json | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["shards"]))')
ok $([ "$n_aws" -eq "$n_info" ] && [ "$n_aws" -eq 5 ]; echo $?) "awscli lists the 5 shards the manifest names ($n_aws, $n_info)"

# A file store uploaded with aws s3 sync → opened through s3://.
check "a file store" $M --store "$WORK/local" put loc x="$WORK/x.npy" --shard-rows 100
check "aws s3 sync uploads it" aws_cli s3 sync --quiet "$WORK/local" s3://interop/synced
check "matorage reads it through s3:// with identical rows" bash -c \
	"$M --store s3://interop/synced get loc x -o $WORK/o2.npy && $T same $WORK/x.npy $WORK/o2.npy"
check "ls and verify through s3://" bash -c \
	"$M --store s3://interop/synced ls | grep -qx loc && $M --store s3://interop/synced verify loc"

# s3cmd, another client, sees the manifest matorage wrote, byte for byte.
if command -v s3cmd > /dev/null; then
	hp=${S3_ENDPOINT#http://}
	s3c() { s3cmd -q --no-ssl --host="$hp" --host-bucket="$hp" --access_key="$AWS_ACCESS_KEY_ID" \
		--secret_key="$AWS_SECRET_ACCESS_KEY" --region=us-east-1 -c /dev/null "$@"; }
	check "s3cmd fetches the manifest" s3c get s3://interop/team/datasets/ds/versions/v1.json "$WORK/v1.json"
	check "it is the manifest matorage shows" bash -c \
		"$M --store $S info ds@v1 --json | $PY -c 'import json,sys; a=json.load(sys.stdin); b=json.load(open(\"$WORK/v1.json\")); sys.exit(a!=b)'"
else
	ok 1 "s3cmd is installed (scripts/install-deps.sh)"
fi

# Keys with spaces, '+', '=', '%' and unicode in the prefix are signed and stored as given.
O="s3://interop/odd dir+a=b%20c/é"
check "put under a prefix with space + = % é" $M --store "$O" put odd x="$WORK/x.npy" --shard-rows 150
check "get it back" bash -c "$M --store '$O' get odd x -o $WORK/o3.npy && $T same $WORK/x.npy $WORK/o3.npy"
check "awscli sees the literal key" bash -c \
	"aws_cli s3api list-objects-v2 --bucket interop --prefix 'odd dir+a=b%20c/é/datasets/odd/versions/' --query 'Contents[].Key' --output text | grep -q 'odd dir+a=b%20c/é/datasets/odd/versions/v1.json'"

# More than 1000 keys: ListObjectsV2 pages with continuation tokens.  The junk has shard
# names (64 hex digits, here starting with 13 zeros), the only names gc takes in shards/.
$PY - "$S3_DIRECT" <<'PYEOF' || echo "# could not create the junk objects"
import sys, botocore.session
s = botocore.session.get_session()
c = s.create_client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
for i in range(1100):
    c.put_object(Bucket="interop", Key="team/datasets/ds/shards/%064x.h5" % i, Body=b"j")
PYEOF
out=$($M --store $S gc ds --grace 0 2>&1)
ok $(echo "$out" | grep -Eq '1100 (objects|shards)'; echo $?) "gc finds all 1100 unreferenced objects across pages"
echo "$out" | tail -1 | sed 's/^/# /'
s3_log_clear
check "gc --delete removes them" $M --store $S gc ds --grace 0 --delete
nbatch=$(s3_log | grep -Ec '^POST /interop/?\?delete.* 200')
ok $([ "$nbatch" -eq 2 ]; echo $?) "in two DeleteObjects batches of at most 1000 keys ($nbatch)"
left=$(aws_cli s3 ls --recursive $S/datasets/ds/shards/ | grep -c '/0000000000000[0-9a-f]*\.h5$')
ok $([ "$left" -eq 0 ]; echo $?) "no junk objects left ($left)"
check "the dataset still reads after gc" bash -c "$M --store $S get ds y -o $WORK/o4.npy && $T same $WORK/y.npy $WORK/o4.npy"

# A wrong secret is a clear auth error, exit 1, nothing written, the secret never shown.
BAD=wrong-secret-must-not-leak-42
err=$(AWS_SECRET_ACCESS_KEY=$BAD $M --store $S put nope x="$WORK/x.npy" 2>&1 >/dev/null)
rc=$?
ok $([ $rc -eq 1 ] && echo "$err" | grep -q 'SignatureDoesNotMatch' && [ "$(echo "$err" | wc -l)" -eq 1 ]; echo $?) \
	"wrong secret: exit 1 and one line naming SignatureDoesNotMatch"
echo "# $err"
ok $(! echo "$err" | grep -q -- "$BAD"; echo $?) "the wrong secret is not in the error"
ok $(! $M --store $S ls | grep -qx nope; echo $?) "nothing was committed"
err=$(AWS_ACCESS_KEY_ID=NOSUCHKEY $M --store $S ls 2>&1 >/dev/null)
ok $(echo "$err" | grep -q 'InvalidAccessKeyId'; echo $?) "unknown access key is named as such"

# S3 semantics matorage relies on, asked of the server with curl's own SigV4 signer.  RGW
# answers them itself; against s3rver the proxy answers what s3rver lacks (If-None-Match on
# PUT, ListParts, abort), so both runs hold the server to what S3 does.
sig=(--aws-sigv4 "aws:amz:$AWS_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
printf 'abcdefghij' > "$WORK/ten"
# Who answers: in the rgw run the TAP prefix names RGW; s3rver's answers come partly from the proxy.
who=$([ "$S3_TARGET" = rgw ] && echo "RGW itself" || echo "s3rver and the proxy")
scurl() { curl -s -o "$WORK/reply" -w '%{http_code}' "${sig[@]}" "$@"; }
scurl -X PUT --data-binary @"$WORK/ten" "$S3_ENDPOINT/interop/sem/ten" > /dev/null
code=$(scurl -X PUT -H 'If-None-Match: *' --data-binary @"$WORK/ten" "$S3_ENDPOINT/interop/sem/ten")
ok $([ "$code" = 412 ]; echo $?) "PUT with If-None-Match: * on an existing key is 412 ($who: $code)"
code=$(scurl -X PUT -H 'If-None-Match: *' --data-binary @"$WORK/ten" "$S3_ENDPOINT/interop/sem/new")
ok $([ "$code" = 200 ]; echo $?) "and 200 on a new key ($code)"
# A suffix range (bytes=-3: the last 3 bytes) is S3's and RGW's; s3rver 3.7 answers it from
# the start of the object.  matorage sends only bytes=FIRST-[LAST], which both serve right.
suffix=$([ "$S3_TARGET" = rgw ] && echo hij || echo abcd)
code=$(scurl -H 'Range: bytes=-3' "$S3_ENDPOINT/interop/sem/ten")
ok $([ "$code" = 206 ] && [ "$(cat "$WORK/reply")" = "$suffix" ]; echo $?) \
	"a suffix range bytes=-3 is $suffix on $S3_TARGET ($code $(cat "$WORK/reply"))"
code=$(scurl -H 'Range: bytes=7-' "$S3_ENDPOINT/interop/sem/ten")
ok $([ "$code" = 206 ] && [ "$(cat "$WORK/reply")" = hij ]; echo $?) \
	"an open range bytes=7- (the kind matorage sends) is the last 3 bytes ($code $(cat "$WORK/reply"))"
code=$(scurl "$S3_ENDPOINT/interop/sem/nosuch")
ok $([ "$code" = 404 ] && grep -q '<Code>NoSuchKey</Code>' "$WORK/reply"; echo $?) \
	"a missing key is 404 NoSuchKey ($code)"
code=$(scurl -X POST "$S3_ENDPOINT/interop/sem/mp?uploads=")
uid=$(sed -n 's/.*<UploadId>\([^<]*\)<\/UploadId>.*/\1/p' "$WORK/reply")
code2=$(scurl -X DELETE "$S3_ENDPOINT/interop/sem/mp?uploadId=$uid")
code3=$(scurl "$S3_ENDPOINT/interop/sem/mp?uploadId=$uid")
cp "$WORK/reply" "$WORK/listparts"
# AWS (and the proxy for s3rver) says NoSuchUpload; RGW 16.2 says NoSuchKey, with the same
# 404: matorage goes by the status there, so either is gone.
lp_code=$([ "$S3_TARGET" = rgw ] && echo NoSuchKey || echo NoSuchUpload)
ok $([ "$code" = 200 ] && [ -n "$uid" ] && [ "$code2" = 204 ] && [ "$code3" = 404 ] &&
	grep -q "<Code>$lp_code</Code>" "$WORK/listparts"; echo $?) \
	"an aborted multipart upload is 204, then ListParts is 404 $lp_code ($code $code2 $code3)"
code=$(scurl "$S3_ENDPOINT/interop?delimiter=%2F&list-type=2&prefix=sem%2F")
ok $([ "$code" = 200 ] && [ "$(grep -o '<Key>[^<]*</Key>' "$WORK/reply" | tr -d '\n')" = \
	"<Key>sem/new</Key><Key>sem/ten</Key>" ]; echo $?) "ListObjectsV2 lists the two keys, the aborted upload none"
[ "$T_FAILED" -eq 0 ] || { cat "$WORK/listparts" "$WORK/reply"; echo; } | sed "s/^/# /"

# --debug traces every request, and neither secret nor signature appears in it.
dbg=$($M --debug --store $S info ds 2>&1 >/dev/null)
ok $(echo "$dbg" | grep -q 'GET .*datasets/ds/head.json'; echo $?) "--debug traces requests"
ok $(! echo "$dbg" | grep -q -- "$AWS_SECRET_ACCESS_KEY" && ! echo "$dbg" | grep -q 'Signature='; echo $?) \
	"--debug shows neither the secret nor a signature"

done_testing
