#!/bin/bash
# loader-doc.sh — the complete program in doc/loader.md compiles against the built library and does what the text says.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
sed -n '/^```c$/,/^```$/p' "$top_srcdir/doc/loader.md" | sed '1d;$d' > "$WORK/loader-example.c"
check "doc/loader.md has a C program" test -s "$WORK/loader-example.c"
check "it compiles and links against libmatorage" bash -c "cd '$WORK' &&
	$MT_CC $MT_CFLAGS -I'$top_srcdir/src/lib' -c loader-example.c -o loader-example.o &&
	'$top_builddir/libtool' --mode=link --quiet $MT_CC $MT_CFLAGS $MT_LDFLAGS -o loader-example \
		loader-example.o '$top_builddir/src/lib/libmatorage.la'"
$T make "$WORK/img.npy" uint8 3000x28x28 1
$T make "$WORK/lab.npy" int64 3000 2
$M put fm image="$WORK/img.npy" label="$WORK/lab.npy" --shard-rows 700 > /dev/null
out=$("$WORK/loader-example" "$MATORAGE_STORE" fm 1 2 2>&1)
ok $? "it runs as rank 1 of 2"
echo "$out" | sed 's/^/# /'
# 3000 rows / 2 ranks = 1500 each = 6 batches of 256 (the last of 220); resumed after 3 of epoch 1.
ok $([ "$(echo "$out" | tr '\n' '|')" = "epoch 0: 6 batches|epoch 1: 6 batches|resumed: 3 batches left|" ]; echo $?) \
	"two epochs of 6 batches, then 3 left after resuming halfway"
$M put fm image="$WORK/img.npy" label="$WORK/lab.npy" --shard-rows 1000 --append > /dev/null
out=$("$WORK/loader-example" "$MATORAGE_STORE" fm@v1 1 2 2>&1)
ok $([ "$(echo "$out" | head -n 1)" = "epoch 0: 6 batches" ]; echo $?) \
	"DATASET@VERSION as its usage says: fm@v1 is read, not refused ($(echo "$out" | head -n 1))"
out=$("$WORK/loader-example" "$MATORAGE_STORE" fm 1 2 2>&1)
ok $([ "$(echo "$out" | head -n 1)" = "epoch 0: 12 batches" ]; echo $?) \
	"and no @ is the newest version, v2 ($(echo "$out" | head -n 1))"
done_testing
