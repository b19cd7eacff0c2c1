#!/bin/bash
# text.sh — str attributes from the command line: JSON lines of text ingested, info, cat (escaped, one line a row), get to NumPy '<U' read back by np.load, bad UTF-8 refused naming the line with nothing committed.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE

# Empty strings, 2-, 3- and 4-byte characters, escapes, and one row far longer than a chunk.
"$PY" - "$WORK" <<'PYEOF'
import json, sys
work = sys.argv[1]
rows = ["hello", "", "h\u00e9llo w\u00f6rld", "\u65e5\u672c\u8a9e \U0001F389", "tab\there\nnew line",
        "quote \" and back \\ slash", "\u00e9" * 5 + "x" * 200000, ""]
with open(f"{work}/in.jsonl", "w") as f:
    for i, t in enumerate(rows):
        f.write(json.dumps({"id": i, "text": t}, ensure_ascii=i % 2 == 0) + "\n")
json.dump(rows, open(f"{work}/rows.json", "w"))
PYEOF

check "ingest: JSON lines with a text field, declared text=str" bash -c \
	"$M ingest notes --attr id=int32 --attr text=str < $WORK/in.jsonl > $WORK/out"
ok $(grep -qx "notes@v1" "$WORK/out"; echo $?) "one version, named"
$M info notes > "$WORK/info"
ok $(grep -Eq '^ +text +str +\(\*,\) +ragged: UTF-8 text' "$WORK/info"; echo $?) "info shows the dtype str"
ok $($M info notes --json | grep -q '"name":"text","dtype":"str","shape":\[\],"ragged":true'; echo $?) \
	"the manifest declares it str, ragged, of shape []"

$M cat notes text > "$WORK/cat"
ok $([ "$(wc -l < "$WORK/cat")" -eq 8 ]; echo $?) "cat: one line a row, even for text holding a newline"
ok $(sed -n 3p "$WORK/cat" | grep -qx 'héllo wörld'; echo $?) "cat prints multibyte text as it is"
ok $(sed -n 5p "$WORK/cat" | grep -qxF 'tab\there\nnew line'; echo $?) "cat escapes tab and newline as JSON does"
ok $(sed -n 6p "$WORK/cat" | grep -qxF 'quote " and back \\ slash'; echo $?) "cat escapes the backslash"
ok $([ -z "$(sed -n 2p "$WORK/cat")" ] && [ -z "$(sed -n 8p "$WORK/cat")" ]; echo $?) "empty strings are empty lines"
ok $([ "$($M cat notes text --rows 3)" = "日本語 🎉" ]; echo $?) "cat --rows 3 prints that row alone"

check "get: text to .npy" $M get notes text -o "$WORK/text.npy"
check "np.load reads it without pickle as '<U', equal to what was ingested" pymt - "$WORK" <<'PYEOF'
import json, sys
import numpy as np
work = sys.argv[1]
a = np.load(f"{work}/text.npy", allow_pickle=False)
rows = json.load(open(f"{work}/rows.json"))
assert a.dtype == np.dtype(f"<U{max(len(r) for r in rows)}"), a.dtype
assert a.shape == (len(rows),), a.shape
assert a.tolist() == rows, [x[:20] for x in a.tolist()]
PYEOF
check "get --rows 1:4" $M get notes text --rows 1:4 -o "$WORK/part.npy"
check "a range is as wide as its own longest row" pymt -c "
import numpy as np
a = np.load('$WORK/part.npy')
assert a.dtype == np.dtype('<U11') and a.tolist() == ['', 'héllo wörld', '日本語 🎉'], (a.dtype, a)"
check "get of rows that are all empty writes '<U1'" bash -c \
	"$M get notes text --rows 1 -o $WORK/empty.npy && $PY -c \"import numpy as np; a = np.load('$WORK/empty.npy'); assert a.dtype == np.dtype('<U1') and a.tolist() == [''], a\""
fails "get --lengths of text is refused" 2 "text, one string a row" \
	$M get notes text -o "$WORK/x.npy" --lengths "$WORK/l.npy"

# ---- bad input: named, nothing committed ----
printf '{"id": 1, "text": "fine"}\n{"id": 2, "text": "bad \xff byte"}\n' > "$WORK/bad.jsonl"
fails "ingest: a line that is not UTF-8 is refused naming the line" 1 "line 2: .*(UTF-8|decode)" \
	bash -c "$M ingest badtext --attr id=int32 --attr text=str < $WORK/bad.jsonl"
fails "... and nothing was committed" 1 "badtext" $M info badtext
fails "ingest: a number where text goes names the field" 1 "line 1: field text: expected a string" \
	bash -c "echo '{\"text\": 5}' | $M ingest badtext --attr text=str"
fails "ingest: str takes no shape" 2 "str takes no shape" \
	bash -c "echo '{\"text\": \"a\"}' | $M ingest badtext --attr text=str:3"
printf 'id,text\n1,plain\n2,"with, comma"\n3,bad \xc3(\n' > "$WORK/bad.csv"
fails "csv: text that is not UTF-8 names the line and field" 1 "line 4: field text: not UTF-8" \
	bash -c "$M ingest badcsv --format csv --attr id=int32 --attr text=str < $WORK/bad.csv"
check "csv: quoted text with a comma" bash -c \
	"head -3 $WORK/bad.csv | $M ingest goodcsv --format csv --attr id=int32 --attr text=str > /dev/null"
ok $([ "$($M cat goodcsv text --rows 1)" = "with, comma" ]; echo $?) "csv: the quoted field is the text"
# ---- put of NumPy text: '<U' in, the same '<U' out ----
"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
work = sys.argv[1]
rows = ["alpha", "", "h\u00e9llo", "\u65e5\u672c\u8a9e \U0001F389", "tab\tnew\nline", "x" * 3000, "z"]
np.save(f"{work}/u.npy", np.array(rows))                       # '<U3000'
np.save(f"{work}/ubig.npy", np.array(rows).astype('>U3000'))  # big-endian
np.save(f"{work}/ids.npy", np.arange(len(rows), dtype=np.int64))
np.save(f"{work}/uobj.npy", np.array(rows, dtype=object), allow_pickle=True)
np.save(f"{work}/u2d.npy", np.array([["a", "b"], ["c", "d"]]))
np.save(f"{work}/unul.npy", np.array(["ok", "a\x00b"]))
np.save(f"{work}/usur.npy", np.frombuffer(np.array([0x61, 0xd800], dtype='<u4').tobytes(), dtype='<U2'))
PYEOF
check "put: a '<U' file with another attribute" bash -c "$M put utext id=$WORK/ids.npy text=$WORK/u.npy > $WORK/out"
ok $($M info utext --json | grep -q '"name":"text","dtype":"str","shape":\[\],"ragged":true'; echo $?) \
	"put of '<U' makes a str attribute"
ok $([ "$($M cat utext text --rows 2)" = "héllo" ]; echo $?) "cat shows the put text"
check "get of the put text" $M get utext text -o "$WORK/uback.npy"
check "the round trip is byte-identical: same dtype, shape and bytes" "$PY" -c "
import numpy as np
a, b = np.load('$WORK/u.npy'), np.load('$WORK/uback.npy')
assert a.dtype == b.dtype == np.dtype('<U3000') and np.array_equal(a, b), (a.dtype, b.dtype)
assert open('$WORK/u.npy', 'rb').read() == open('$WORK/uback.npy', 'rb').read()"
check "put: big-endian '>U' is read as text too" bash -c "$M put ubig text=$WORK/ubig.npy > /dev/null"
check "... and comes back equal" bash -c "$M get ubig text -o $WORK/ubigback.npy && $PY -c \"
import numpy as np
assert np.array_equal(np.load('$WORK/ubig.npy'), np.load('$WORK/ubigback.npy'))\""
fails "put: an object array is refused naming the file, with the way out" 1 "uobj.npy.*object.*astype\(str\)" \
	$M put uobj text=$WORK/uobj.npy
fails "put: 2-d text is refused" 1 "u2d.npy: text of 2 dimensions" $M put u2d text=$WORK/u2d.npy
fails "put: a NUL inside a row names the row" 1 "unul.npy: row 1, character 1: U\+0000" \
	$M put unul text=$WORK/unul.npy
fails "put: a lone surrogate names the row" 1 "usur.npy: row 0, character 1: U\+D800 .*not a Unicode" \
	$M put usur text=$WORK/usur.npy
fails "... and nothing was committed" 1 "unul" $M info unul
"$PY" -c "import numpy as np; np.save('$WORK/ustats.npy', np.array(['ab', 'h\u00e9llo', 'ab', '']))"
check "stats of a str attribute" bash -c "$M put ustats text=$WORK/ustats.npy > /dev/null && $M stats ustats text > $WORK/st.txt"
ok "$(grep -q 'rows 4   distinct 3' $WORK/st.txt && grep -q 'length in characters: min 0   max 5   mean 2.25' $WORK/st.txt && grep -q 'length in bytes:      min 0   max 6   mean 2.5' $WORK/st.txt; echo $?)" \
	"rows, distinct rows and lengths in characters and bytes: $(head -4 $WORK/st.txt | tr '\n' ' ')"
check "stats --json of it" bash -c "$M stats ustats text --json > $WORK/st.json"
ok "$("$PY" -c "import json,sys; d=json.load(open('$WORK/st.json')); t=d['text']; sys.exit(not (d['dtype']=='str' and d['rows']==4 and d['min']==0 and d['max']==5))"; echo $?)" \
	"the JSON has the text object and the character lengths"
check "stats again comes from the catalog" bash -c "$M stats ustats text | grep -q 'from the catalog'"
done_testing
