#!/bin/bash
# s3-transport.sh — virtual-hosted and path-style addressing, https with certificate verification, --ca-bundle, --insecure.
. "$(dirname "$0")/lib.sh"
s3_require
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
$T make "$WORK/x.npy" float32 300x8 1

# Virtual-hosted: the bucket is in the host name (vbucket.s3.localhost, which curl resolves to
# loopback); the proxy checks the signature over that Host.
VEP="http://s3.localhost:${S3_ENDPOINT##*:}"
check "put with --addressing virtual" $M --store s3://vbucket/p --endpoint "$VEP" --addressing virtual \
	put ds x="$WORK/x.npy" --shard-rows 100
dbg=$($M --debug --store s3://vbucket/p --endpoint "$VEP" --addressing virtual info ds 2>&1 >/dev/null)
ok $(echo "$dbg" | grep -q 'GET http://vbucket.s3.localhost:[0-9]*/p/datasets/ds/head.json'; echo $?) \
	"requests go to http://vbucket.s3.localhost/KEY"
check "read back path-style: the same bucket" bash -c \
	"$M --store s3://vbucket/p --addressing path get ds x -o $WORK/o.npy && $T same $WORK/x.npy $WORK/o.npy"
dbg=$($M --debug --store s3://vbucket/p info ds 2>&1 >/dev/null)
ok $(echo "$dbg" | grep -q "GET $S3_ENDPOINT/vbucket/p/datasets/ds/head.json"; echo $?) \
	"auto addressing is path-style for a non-AWS endpoint"

# https: s3rver with a self-signed certificate for 127.0.0.1 (the client's TLS, whatever the
# server: the RGW run has checked addressing against RGW and stops here).
if [ "$S3_TARGET" = rgw ]; then
	done_testing
	exit
fi
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$WORK/tls.key" -out "$WORK/tls.crt" > /dev/null 2>&1
TLS_PORT=$(free_port)
mkdir -p "$WORK/tlsdata"
node --openssl-legacy-provider "$S3RVER_JS" --address 127.0.0.1 --port "$TLS_PORT" \
	--directory "$WORK/tlsdata" --key "$WORK/tls.key" --cert "$WORK/tls.crt" --silent \
	> "$WORK/tls.log" 2>&1 &
S3_PIDS+=($!)
s3_wait "https://127.0.0.1:$TLS_PORT/" -k || { echo "Bail out! s3rver with TLS did not start"; exit 1; }
TEP="https://127.0.0.1:$TLS_PORT"
# s3rver takes the key id it knows, and checks no signature.
export AWS_ACCESS_KEY_ID=S3RVER
unset AWS_CA_BUNDLE
fails "https with an unknown certificate authority is refused" 1 "certificate" \
	$M --store s3://tls/p --endpoint "$TEP" put ds x="$WORK/x.npy"
check "--ca-bundle trusts it" $M --store s3://tls/p --endpoint "$TEP" --ca-bundle "$WORK/tls.crt" \
	put ds x="$WORK/x.npy"
check "AWS_CA_BUNDLE does too" bash -c \
	"AWS_CA_BUNDLE=$WORK/tls.crt $M --store s3://tls/p --endpoint $TEP get ds x -o $WORK/t.npy && $T same $WORK/x.npy $WORK/t.npy"
check "--insecure skips verification when asked" $M --store s3://tls/p --endpoint "$TEP" --insecure ls
fails "a missing --ca-bundle file is an error" 1 "certificate|CA|ca-bundle|nope.pem" \
	$M --store s3://tls/p --endpoint "$TEP" --ca-bundle "$WORK/nope.pem" ls

done_testing
