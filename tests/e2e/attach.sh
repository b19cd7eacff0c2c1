#!/bin/bash
# attach.sh — files attached to a version: attach commits a new version, info lists them, get gives them back checked, push carries them, gc keeps them, attach --rm commits a version without some (gc then reclaims what no version names), bad input commits nothing.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
T="$PY $top_srcdir/tests/e2e/npy_tool.py"
S="$WORK/store"
B="$WORK/b"
mkdir -p "$WORK/tok"
$T make "$WORK/x.npy" float32 300x4 7
$T make "$WORK/y.npy" float32 20x4 8
printf 'the\nof\nand\n' > "$WORK/vocab.txt"
printf '{"model_max_length": 512, "seed": 7}\n' > "$WORK/tok/config.json"
head -c 70000 /dev/urandom > "$WORK/merges.bin"
$M put ds x="$WORK/x.npy" --shard-rows 100 > /dev/null
sha() { sha256sum "$1" | cut -d' ' -f1; }
versions() { $M ls ds | tr '\n' ' '; }

out=$($M attach ds@v1 "$WORK/vocab.txt" "$WORK/tok/config.json" "$WORK/merges.bin" 2>&1)
ok $([ "$out" = "ds@v2" ]; echo $?) "attach to ds@v1 commits ds@v2: $out"
info=$($M info ds@v2)
for f in vocab.txt config.json merges.bin; do
	p=$WORK/$f; [ -f "$p" ] || p=$WORK/tok/$f
	ok $(grep -Eq "^  $f +$(stat -c %s "$p")  $(sha "$p")\$" <<< "$info"; echo $?) \
		"info lists $f with its size and sha256"
done
ok $(grep -q '^attachments: 3$' <<< "$info"; echo $?) "info counts 3 attachments"
ok $($M info ds@v1 | grep -q '^attachments' ; [ $? -ne 0 ]; echo $?) "ds@v1 itself is unchanged (immutable): no attachments"
check "ds@v2 has ds@v1's rows" bash -c "$M get ds@v2 x -o $WORK/o.npy && $T same $WORK/x.npy $WORK/o.npy"
ok $([ "$($M info ds@v2 | grep '^parent:')" = "parent:      v1" ]; echo $?) "ds@v2's parent is v1"
ok $([ "$($M info ds@v1 --shards | grep -E '^ +[0-9]+ ')" = "$($M info ds@v2 --shards | grep -E '^ +[0-9]+ ')" ]; echo $?) \
	"ds@v2 lists ds@v1's very shards"
for f in vocab.txt merges.bin; do
	check "get --attachment $f -o is byte-identical" bash -c \
		"$M get ds@v2 --attachment $f -o $WORK/got && cmp $WORK/$f $WORK/got"
done
check "get of the latest, to standard output" bash -c \
	"$M get ds --attachment config.json -o - > $WORK/got && cmp $WORK/tok/config.json $WORK/got"
ok $([ -f "$S/datasets/ds/attachments/$(sha "$WORK/vocab.txt")" ]; echo $?) \
	"stored content-addressed as datasets/ds/attachments/<sha256>"

# Bad input: nothing committed.
before=$(versions)
fails "a name with '/' is refused" 1 "attachment name 'a/b'" $M attach ds@v2 "$WORK/vocab.txt" --name a/b
fails "a name with '..' is refused" 1 "attachment name '\.\./x'.*'\.\.'|must not start with '\.'" \
	$M attach ds@v2 "$WORK/vocab.txt" --name ../x
fails "a missing file is refused, naming it" 1 "$WORK/nope.txt" $M attach ds@v2 "$WORK/nope.txt"
printf 'labels\n' > "$WORK/labels.txt"
fails "a missing file after a good one is refused, naming it" 1 "cannot read $WORK/nope.txt.*nothing was committed" \
	$M attach ds@v2 "$WORK/labels.txt" "$WORK/nope.txt"
ok $([ ! -e "$S/datasets/ds/attachments/$(sha "$WORK/labels.txt")" ]; echo $?) \
	"and the good one was not stored either"
fails "the same name twice is refused" 1 "vocab.txt is given twice" \
	$M attach ds@v2 "$WORK/vocab.txt" "$WORK/vocab.txt"
ok $([ "$(versions)" = "$before" ]; echo $?) "no bad attach committed a version: $(versions)"
rm -f "$WORK/got"
fails "get of a missing attachment names it and what there is" 1 "no attachment 'tokenizer.json'.*vocab.txt" \
	$M get ds@v2 --attachment tokenizer.json -o "$WORK/got"
ok $([ ! -e "$WORK/got" ]; echo $?) "no file is left by a failed get"
fails "ds@v1 has none" 1 "no attachment 'vocab.txt' \(it has: none\)" $M get ds@v1 --attachment vocab.txt -o "$WORK/got"

# An append keeps them; attaching a name again replaces it in the new version only.
$M put ds x="$WORK/y.npy" --append > /dev/null
ok $([ "$($M info ds@v3 | grep -c '^  [a-z.]*  ')" -ge 3 ] && $M get ds@v3 --attachment vocab.txt -o - | cmp -s - "$WORK/vocab.txt"; echo $?) \
	"an appended version (v3) keeps its parent's attachments"
mkdir -p "$WORK/v2" && printf 'the\nof\nand\nto\n' > "$WORK/v2/vocab.txt"
out=$($M attach ds "$WORK/v2/vocab.txt" 2>&1)
ok $([ "$out" = "ds@v4" ]; echo $?) "attach to the latest commits ds@v4: $out"
check "v4 has the new vocab.txt" bash -c "$M get ds@v4 --attachment vocab.txt -o - | cmp - $WORK/v2/vocab.txt"
check "v2 keeps the old one" bash -c "$M get ds@v2 --attachment vocab.txt -o - | cmp - $WORK/vocab.txt"
check "v4 keeps merges.bin" bash -c "$M get ds@v4 --attachment merges.bin -o - | cmp - $WORK/merges.bin"

# push carries them to a second file store.
check "push ds to a second store" $M push ds "file://$B"
check "get there is byte-identical" bash -c \
	"$M --store file://$B get ds@v2 --attachment merges.bin -o $WORK/got && cmp $WORK/merges.bin $WORK/got"
ok $($M --store "file://$B" info ds@v4 | grep -q "^  vocab.txt .*$(sha "$WORK/v2/vocab.txt")\$"; echo $?) \
	"info there lists them"

# gc keeps what any version names; after rm, what none names goes only past the grace.
check "gc --grace 0" $M gc ds --delete --grace 0
n=$(ls "$S/datasets/ds/attachments" | wc -l)
ok $([ "$n" = 4 ]; echo $?) "gc keeps every attachment a version names ($n of 4)"
$M rm ds@v4 > /dev/null && $M rm ds@v3 > /dev/null
check "gc with the default grace after rm" $M gc ds --delete
ok $([ -f "$S/datasets/ds/attachments/$(sha "$WORK/v2/vocab.txt")" ]; echo $?) \
	"an attachment no version names stays within the grace"
check "gc --grace 0 after rm" $M gc ds --delete --grace 0
ok $([ ! -e "$S/datasets/ds/attachments/$(sha "$WORK/v2/vocab.txt")" ] &&
	[ -f "$S/datasets/ds/attachments/$(sha "$WORK/vocab.txt")" ]; echo $?) \
	"past the grace, only the unnamed one is deleted; v2's stay"

# Damage: a sha mismatch is caught by get and push.
obj="$B/datasets/ds/attachments/$(sha "$WORK/vocab.txt")"
chmod u+w "$obj" 2>/dev/null; printf 'THE\nof\nand\n' > "$obj"
rm -f "$WORK/got"
fails "get of a damaged attachment fails naming its key and sha256" 1 \
	"attachments/$(sha "$WORK/vocab.txt").*vocab.txt.*sha256" \
	$M --store "file://$B" get ds@v2 --attachment vocab.txt -o "$WORK/got"
ok $([ ! -e "$WORK/got" ]; echo $?) "and writes no file"
fails "push of it refuses to spread the damage" 1 "vocab.txt.*sha256" \
	$M --store "file://$B" push ds@v2 "file://$WORK/c"

# attach --rm: a new version without them, the same shards; a name it lacks commits nothing.
before=$(versions)
fails "--rm of a name the version lacks names it and what it has" 1 \
	"ds@v2 has no attachment 'tokenizer.json' to remove \(it has: config.json, merges.bin, vocab.txt\); nothing was committed" \
	$M attach ds@v2 --rm vocab.txt tokenizer.json
fails "--rm of the same name twice is refused" 1 "merges.bin is given twice" \
	$M attach ds@v2 --rm merges.bin merges.bin
fails "--rm with --name is a usage error" 2 "not with --rm" $M attach ds@v2 --rm --name x vocab.txt
fails "--rm of a name with '/' names it" 1 "no attachment 'tok/config.json'" \
	$M attach ds@v2 --rm tok/config.json
ok $([ "$(versions)" = "$before" ]; echo $?) "no bad --rm committed a version: $(versions)"
out=$($M attach ds@v2 --rm merges.bin config.json 2>&1)
ok $([[ $out =~ ^ds@v[0-9]+$ ]]; echo $?) "attach ds@v2 --rm merges.bin config.json commits a version: $out"
dv=${out#ds@}
info=$($M info "ds@$dv")
ok $(grep -q '^attachments: 1$' <<< "$info" && grep -Eq "^  vocab.txt +$(stat -c %s "$WORK/vocab.txt")  $(sha "$WORK/vocab.txt")\$" <<< "$info"; echo $?) \
	"$dv holds only vocab.txt"
ok $([ "$(grep '^parent:' <<< "$info")" = "parent:      v2" ]; echo $?) "$dv's parent is v2"
ok $([ "$($M info ds@v2 --shards | grep -E '^ +[0-9]+ ')" = "$($M info "ds@$dv" --shards | grep -E '^ +[0-9]+ ')" ]; echo $?) \
	"$dv lists ds@v2's very shards"
fails "get of a removed attachment names it" 1 "no attachment 'merges.bin' \(it has: vocab.txt\)" \
	$M get "ds@$dv" --attachment merges.bin -o -
check "v2 still has merges.bin" bash -c "$M get ds@v2 --attachment merges.bin -o - | cmp - $WORK/merges.bin"
out=$($M attach ds --rm vocab.txt 2>&1)
ok $([[ $out =~ ^ds@v[0-9]+$ ]] && ! $M info "$out" | grep -q '^attachments'; echo $?) \
	"removing the last one leaves a version with none: $out"
lv=${out#ds@}
# gc reclaims what no version names any more, once past the grace.
$M rm ds@v2 > /dev/null
check "gc --grace 0 after v2 is removed" $M gc ds --delete --grace 0
ok $([ ! -e "$S/datasets/ds/attachments/$(sha "$WORK/merges.bin")" ] &&
	[ ! -e "$S/datasets/ds/attachments/$(sha "$WORK/tok/config.json")" ] &&
	[ -f "$S/datasets/ds/attachments/$(sha "$WORK/vocab.txt")" ]; echo $?) \
	"gc deletes merges.bin and config.json (no version names them), keeps vocab.txt ($dv names it)"
$M rm "ds@$dv" > /dev/null
check "gc --grace 0 after $dv is removed" $M gc ds --delete --grace 0
ok $([ -z "$(ls "$S/datasets/ds/attachments" 2>/dev/null)" ]; echo $?) \
	"with only v1 and $lv left, no attachment object stays: $(ls "$S/datasets/ds/attachments" 2>/dev/null | tr '\n' ' ')"
check "$lv still reads v1's rows" bash -c "$M get ds@$lv x -o $WORK/o.npy && $T same $WORK/x.npy $WORK/o.npy"

# Python: Writer(attachments=...), matorage.attach, Reader.attachments / attachment(name).
cat > "$WORK/attach.py" <<'PYEOF'
import hashlib, os, sys
import numpy as np
import matorage as mt
work = sys.argv[1]
url = "file://" + work + "/py"
vocab = open(os.path.join(work, "vocab.txt"), "rb").read()
def case(name, cond):
    print(("ok " if cond else "FAIL ") + name)
def raises(name, exc, pattern, fn):
    try:
        fn()
    except exc as e:
        case(name, pattern in str(e))
        return
    case(name + " (did not raise)", False)
rows = np.arange(40, dtype=np.int32).reshape(10, 4)
with mt.Writer(url, "tok", attachments={"vocab.txt": vocab,
                                        "config.json": os.path.join(work, "tok", "config.json")}) as w:
    w.append(ids=rows)
case("Writer(attachments=...) commits v1", w.version == "v1")
with mt.Reader(url, "tok@v1") as r:
    names = [a["name"] for a in r.attachments]
    case("Reader.attachments lists them in name order", names == ["config.json", "vocab.txt"])
    a = {x["name"]: x for x in r.attachments}["vocab.txt"]
    case("with size and sha256", a["bytes"] == len(vocab) and
         a["sha256"] == hashlib.sha256(vocab).hexdigest())
    case("Reader.attachment gives the bytes back", r.attachment("vocab.txt") == vocab)
    raises("a missing attachment is NotFound naming it", mt.NotFound, "'merges.txt'",
           lambda: r.attachment("merges.txt"))
v = mt.attach(url, "tok@v1", {"merges.txt": b"a b\n"}, description="add merges")
case("matorage.attach commits v2", v == "tok@v2")
with mt.Reader(url, "tok") as r:
    case("v2 holds all three", [a["name"] for a in r.attachments] ==
         ["config.json", "merges.txt", "vocab.txt"] and r.attachment("merges.txt") == b"a b\n")
    case("and v1's rows", np.array_equal(r.read("ids"), rows))
raises("a name with '/' is InvalidArgument naming it", mt.InvalidArgument, "'a/b'",
       lambda: mt.attach(url, "tok", {"a/b": b"x"}))
raises("a name with '..' is InvalidArgument", mt.InvalidArgument, "'..'",
       lambda: mt.attach(url, "tok", {"x..y": b"x"}))
raises("a missing file is NotFound naming it", mt.NotFound, "nope.txt",
       lambda: mt.attach(url, "tok", [os.path.join(work, "nope.txt")]))
case("nothing was committed by them", mt.versions(url, "tok") == ["v1", "v2"])
raises("detach of a name it lacks is NotFound naming it", mt.NotFound, "'tokenizer.json'",
       lambda: mt.detach(url, "tok", ["merges.txt", "tokenizer.json"]))
case("and commits nothing", mt.versions(url, "tok") == ["v1", "v2"])
v = mt.detach(url, "tok@v2", "merges.txt", description="drop merges")
case("matorage.detach commits v3", v == "tok@v3")
with mt.Reader(url, "tok") as r:
    case("v3 holds the other two", [a["name"] for a in r.attachments] ==
         ["config.json", "vocab.txt"] and r.info["description"] == "drop merges")
    case("and the rows", np.array_equal(r.read("ids"), rows))
with mt.Reader(url, "tok@v2") as r:
    case("v2 keeps merges.txt", r.attachment("merges.txt") == b"a b\n")
PYEOF
out=$(pymt "$WORK/attach.py" "$WORK" 2>&1)
ok $? "the python check runs"
while IFS= read -r line; do
	case $line in
	"ok "*) ok 0 "python: ${line#ok }" ;;
	"FAIL "*) ok 1 "python: ${line#FAIL }" ;;
	*) echo "# $line" ;;
	esac
done <<< "$out"

done_testing
