#!/bin/bash
# tui-attach.sh — a version's attached files in the catalog and the browser: sync records each one (name, size, sha256), an older catalog gains them on its next sync, and a version's details list them (name, size) at 80 columns and, uncut, at 40.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
export MATORAGE_STORE="$WORK/store" MATORAGE_CONFIG="$WORK/config.json" XDG_DATA_HOME="$WORK/data"
export MATORAGE_CATALOG="$WORK/data/matorage/catalog.db"
. "$(dirname "$0")/tui-lib.sh"
cd "$WORK" || exit 1
"$PY" -c "import numpy as np; np.save('$WORK/x.npy', np.arange(12).reshape(4, 3))"
printf 'the\nof\nand\n' > vocab.txt
printf '{"pad": "<pad>", "unk": "<unk>"}\n' > special_tokens_map.json
# 70,000 bytes of a fixed pattern: a size no other field shows.
"$PY" -c "open('$WORK/merges.bin', 'wb').write(bytes(i % 251 for i in range(70000)))"
check "a dataset (v1)" $M put ds x="$WORK/x.npy"
check "three files attached (v2)" $M attach ds vocab.txt special_tokens_map.json merges.bin
check "merges.bin removed (v3)" $M attach ds --rm merges.bin
check "sync" $M sync
sha() { sha256sum "$1" | cut -d' ' -f1; }
# rows VERSION: the catalog's attachments of ds@VERSION, "name|bytes|sha256" a line.
rows() {
	"$PY" - "$MATORAGE_CATALOG" "$1" <<'PYEOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("SELECT a.name, a.bytes, a.sha256 FROM attachments a JOIN versions v"
                   " ON v.id = a.version_id WHERE v.name = ? ORDER BY a.idx", (sys.argv[2],)):
    print("|".join(map(str, r)))
PYEOF
}
want2="merges.bin|70000|$(sha merges.bin)
special_tokens_map.json|$(stat -c %s special_tokens_map.json)|$(sha special_tokens_map.json)
vocab.txt|11|$(sha vocab.txt)"
ok $([ "$(rows v2)" = "$want2" ]; echo $?) "the catalog holds v2's three attachments: name, size, sha256"
ok $([ "$(rows v3)" = "$(sed 1d <<< "$want2")" ] && [ -z "$(rows v1)" ]; echo $?) \
	"v3 the two left, v1 none: $(rows v3 | cut -d'|' -f1 | tr '\n' ' ')"

# A catalog of the schema before attachments: its next sync reads the manifests again.
"$PY" -c "
import sqlite3; c = sqlite3.connect('$MATORAGE_CATALOG')
c.executescript('DROP TABLE attachments; PRAGMA user_version = 9;')"
check "sync of a schema-9 catalog" $M sync
ok $([ "$(rows v2)" = "$want2" ]; echo $?) "it is upgraded and v2's attachments recorded"

# details N W H: open ds@v(N+1)'s details in a W x H browser.
details() {
	tui_start "$2" "$3"
	wait_for "sync local:"
	keys Enter Enter / ds Enter Enter
	wait_for "v3"
	local i
	for ((i = 0; i < $1; i++)); do keys Down; done
	keys Enter
	wait_for "lineage"
}
details 1 80 40
expect "v2's details at 80 columns" "› ds › v2"
for a in "vocab.txt  11 bytes" "special_tokens_map.json  $(stat -c %s special_tokens_map.json) bytes" \
	"merges.bin  70000 bytes"; do
	ok $(screen | grep -Eq "^attachment +${a//./\\.}\$"; echo $?) "lists the attachment $a"
done
ok $([ "$(screen | grep -c '^attachment ')" = 3 ]; echo $?) "three attachment rows"
keys q
tui_exited > /dev/null

details 1 40 45
expect "v2's details at 40 columns" "› v2"
view=$(screen | sed -n '2,43p')
ok $([ -z "$(grep -F "…" <<< "$view")" ]; echo $?) "no value cut at 40 columns: $(grep -F "…" <<< "$view")"
for a in vocab.txt special_tokens_map.json merges.bin "70000 bytes"; do
	ok $(grep -qE "(^| )${a//./\\.}( |\$)" <<< "$view"; echo $?) "$a whole at 40 columns"
done
ok $([ "$(grep -c '^attachment' <<< "$view")" = 3 ]; echo $?) "three attachment rows at 40 columns"
keys q
tui_exited > /dev/null

details 2 80 40
expect "v3's details" "› ds › v3"
ok $([ "$(screen | grep -c '^attachment ')" = 2 ] && ! screen | grep -q "merges.bin"; echo $?) \
	"v3 lists two, merges.bin removed"
keys q
tui_exited > /dev/null
details 0 80 40
expect "v1's details" "› ds › v1"
expect_not "v1 has no attachment row" "attachment"
keys q
tui_exited > /dev/null

done_testing
