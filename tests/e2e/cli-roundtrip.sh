#!/bin/bash
# cli-roundtrip.sh — put → get through the real binary for every dtype and shape; versions, append, ls, info, cat, rm.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"

# Every dtype, scalar / 1-D / 3-D rows, written by numpy, back bit-exact.
mkdir -p "$WORK/rt/out"
$T makeall "$WORK/rt" 7 37 37x5 37x2x3x4
for f in "$WORK"/rt/*.npy; do
	n=$(basename "$f" .npy)
	$M put "rt-$n" x="$f" --shard-rows 10 --chunk-size 64 > /dev/null 2>&1 &&
		$M get "rt-$n" x -o "$WORK/rt/out/$n.npy" > /dev/null 2>&1 || echo "$n" >> "$WORK/rt/failed"
done
$T sameall "$WORK/rt" "$WORK/rt/out" > "$WORK/rt/same"
ok $([ "$(wc -l < "$WORK/rt/same")" -eq 36 ]; echo $?) "12 dtypes x 3 shapes compared"
while read -r n verdict; do
	ok $([ "$verdict" = ok ] && ! grep -qx "$n" "$WORK/rt/failed" 2> /dev/null; echo $?) \
		"put/get ${n/-/ shape } round-trips bit-exact${verdict#ok}"
done < "$WORK/rt/same"

# Fortran order, big endian, .npy format 2.0 and 3.0 come back as C-order little endian.
$T make "$WORK/f.npy" float64 20x3 3 F
check "Fortran-order input" bash -c "$M put ford x=$WORK/f.npy && $M get ford x -o $WORK/o.npy && $T same $WORK/f.npy $WORK/o.npy"
$T make "$WORK/b.npy" int32 20x3 3 C '>'
check "big-endian input" bash -c "$M put bend x=$WORK/b.npy && $M get bend x -o $WORK/o.npy && $T same $WORK/b.npy $WORK/o.npy"
for v in 2.0 3.0; do
	$T make "$WORK/v.npy" uint16 9x2 4 C '<' $v
	check ".npy format $v input" bash -c "$M put fmt${v%.0} x=$WORK/v.npy && $M get fmt${v%.0} x -o $WORK/o.npy && $T same $WORK/v.npy $WORK/o.npy"
done

# Several attributes, row ranges, 0 and 1 rows.
$T make "$WORK/img.npy" uint8 100x4x4 1
$T make "$WORK/lab.npy" int64 100 2
check "two attributes" $M put multi image="$WORK/img.npy" label="$WORK/lab.npy" --shard-rows 32 --description "two attrs" --tag a --tag b
check "get --rows 30:70" bash -c "$M get multi image -o $WORK/o.npy --rows 30:70 && $T same $WORK/img.npy $WORK/o.npy 30:70"
check "get --rows 99:" bash -c "$M get multi label -o $WORK/o.npy --rows 99: && $T same $WORK/lab.npy $WORK/o.npy 99:"
$T make "$WORK/zero.npy" float32 0x3 1
check "0-row dataset" bash -c "$M put zero x=$WORK/zero.npy && $M get zero x -o $WORK/o.npy && $T same $WORK/zero.npy $WORK/o.npy"
$T make "$WORK/one.npy" float32 1x3 1
check "1-row dataset" bash -c "$M put one x=$WORK/one.npy && $M get one x -o $WORK/o.npy && $T same $WORK/one.npy $WORK/o.npy"

# Versions, append, listings.
out=$($M put multi image="$WORK/img.npy" label="$WORK/lab.npy")
ok $([ "$out" = "multi@v2" ]; echo $?) "second put prints multi@v2 (got '$out')"
out=$($M put multi@v2 image="$WORK/img.npy" label="$WORK/lab.npy" 2>&1)
ok $([ $? -eq 1 ] && echo "$out" | grep -q "already exists"; echo $?) "put to an existing version fails"
out=$($M put multi image="$WORK/img.npy" label="$WORK/lab.npy" --append)
check "append makes v3 with 200 rows" bash -c "$M info multi@v3 | grep -Eq 'rows:? *200'"
check "appended rows equal the parent's followed by the new" bash -c "$M get multi@v3 label -o $WORK/o.npy --rows 100:200 && $T same $WORK/lab.npy $WORK/o.npy"
check "ls lists datasets" bash -c "$M ls | grep -qx multi && $M ls | grep -qx zero"
check "ls DATASET lists versions oldest first" bash -c "[ \"\$($M ls multi | tr '\n' ' ')\" = 'v1 v2 v3 ' ]"
check "info --json is the manifest" bash -c "$M info multi@v1 --json | $PY -c 'import json,sys; m=json.load(sys.stdin); assert m[\"rows\"]==100 and m[\"tags\"]==[\"a\",\"b\"] and m[\"description\"]==\"two attrs\"'"
check "info shows attributes, shards, ratio" bash -c "$M info multi@v1 | grep -q uint8 && $M info multi@v1 | grep -qi shards && $M info multi@v1 | grep -qi ratio"
check "cat prints rows as text" bash -c "[ \"\$($M cat multi label --rows 3:5 | wc -l)\" -eq 2 ] && $M cat multi label --rows 3:4 | grep -qx -- \"\$($PY -c 'import numpy as n; print(n.load(\"$WORK/lab.npy\")[3])')\""
check "verify passes on a sound version" $M verify multi@v1
check "rm removes a version" bash -c "$M rm multi@v2 && ! $M ls multi | grep -qx v2"
check "gc dry run lists v2-only shards? none: shards shared" $M gc multi --grace 0
check "v1 still reads after rm and gc --delete" bash -c "$M gc --delete --grace 0 && $M get multi@v1 image -o $WORK/o.npy && $T same $WORK/img.npy $WORK/o.npy"

# Output files: a regular file is replaced whole, a symbolic link written through, a FIFO
# or device written as it is (never replaced), - is standard output.
$T make "$WORK/small.npy" float32 9x2 4
$M put outs x="$WORK/small.npy" > /dev/null
mkdir -p "$WORK/out"
echo old > "$WORK/out/target.npy"
ln -s target.npy "$WORK/out/link.npy"
check "get -o through a symbolic link" bash -c \
	"$M get outs x -o $WORK/out/link.npy && $T same $WORK/small.npy $WORK/out/target.npy"
ok $([ -L "$WORK/out/link.npy" ]; echo $?) "the link is still a link"
ln -s "$WORK/out/new.npy" "$WORK/out/dangling.npy"
check "a dangling link: its target is created" bash -c \
	"$M get outs x -o $WORK/out/dangling.npy && $T same $WORK/small.npy $WORK/out/new.npy"
ok $([ -L "$WORK/out/dangling.npy" ]; echo $?) "and the link stays a link"
mkfifo "$WORK/out/fifo"
timeout 30 cat "$WORK/out/fifo" > "$WORK/out/from-fifo.npy" &
reader=$!
timeout 20 $M get outs x -o "$WORK/out/fifo"
ok $? "get -o a FIFO writes into it"
wait $reader
ok $([ -p "$WORK/out/fifo" ]; echo $?) "the FIFO is still a FIFO"
check "its reader got the whole .npy" $T same "$WORK/small.npy" "$WORK/out/from-fifo.npy"
check "get -o - writes to standard output" bash -c \
	"$M get outs x -o - > $WORK/out/stdout.npy && $T same $WORK/small.npy $WORK/out/stdout.npy"
check "through a pipe too" bash -c \
	"$M get outs x -o - | cat > $WORK/out/pipe.npy && $T same $WORK/small.npy $WORK/out/pipe.npy"
fails "-o and --lengths cannot both be -" 2 "both be standard output" \
	$M get outs x -o - --lengths -
fails "a directory is refused" 1 "out: Is a directory" $M get outs x -o "$WORK/out"
# An output of 64 MiB or more goes past the page cache, in whole 4 KiB blocks: rows of
# 1000 bytes and a first row of 7 put the blocks and the rows out of step.
$T make "$WORK/big.npy" uint8 67500x1000 5
$M put big x="$WORK/big.npy" > /dev/null
check "get of a 67 MB attribute" bash -c \
	"$M get big x -o $WORK/out/big.npy && cmp $WORK/big.npy $WORK/out/big.npy"
check "get --rows 7: of it" bash -c \
	"$M get big x --rows 7: -o $WORK/out/big.npy && $T same $WORK/big.npy $WORK/out/big.npy 7:"
rm -f "$WORK/big.npy" "$WORK/out/big.npy"
# Writing to /dev/null is harmless; run as root, the old code replaced it with a file.
if [ -c /dev/null ] && [ -w /dev/null ]; then
	check "get -o /dev/null" $M get outs x -o /dev/null
	ok $([ -c /dev/null ]; echo $?) "/dev/null is still a character device"
fi
# A recipe's sandbox: a dangling link in its directory must not let it create a file outside.
mkdir -p "$WORK/box"
ln -s "$WORK/outside.npy" "$WORK/box/escape.npy"
echo 'local m = require("matorage"); m.write_npy("escape.npy", m.arange(0, 2))' > "$WORK/box/w.lua"
(cd "$WORK/box" && $M run w.lua > /dev/null 2>&1)
ok $([ $? -ne 0 ] && [ ! -e "$WORK/outside.npy" ]; echo $?) \
	"a recipe cannot write through a dangling link out of its sandbox"
ok $([ -z "$(find "$WORK/out" -name '*.tmp.*')" ]; echo $?) "no temporary file is left behind"

done_testing
