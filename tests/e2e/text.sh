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
done_testing
