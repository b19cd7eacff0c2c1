#!/bin/bash
# layers.sh — each room of src/lib includes only its own headers and those of the rooms below it (doc/ARCHITECTURE.md).
. "$(dirname "$0")/lib.sh"
LIB="$top_srcdir/src/lib"

# room: the rooms it may include from, besides itself and matorage.h.
declare -A BELOW=(
	[util]=""
	[store]="util"
	[format]="util"
	[parity]="util store format"
	[dataset]="util store format parity"
	[ingest]="util store format dataset"
	[copy]="util store format parity dataset"
	[stats]="util store format dataset"
	[repair]="util store format parity dataset"
	[model]="util store format parity dataset"
	[loader]="util store format parity dataset"
	[catalog]=""
)
ROOMS="util store format parity dataset ingest copy stats repair model loader catalog"
for room in $ROOMS; do
	allowed="$room ${BELOW[$room]}"
	bad=""
	for f in "$LIB/$room"/*.[ch]; do
		while read -r h; do
			[ "$h" = matorage.h ] && continue
			[ "$room" = catalog ] && [ "$h" = matorage-catalog.h ] && continue
			home=""
			for r in $ROOMS; do
				[ -e "$LIB/$r/$h" ] && home=$r
			done
			case " $allowed " in *" $home "*) ;; *) bad="$bad ${f#"$LIB"/}:$h(${home:-?})" ;; esac
		done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
	done
	ok $([ -z "$bad" ]; echo $?) "src/lib/$room includes only ${allowed% }${bad:+ — not:$bad}"
done
# Above the library: the browser and the command share src/app; neither reaches into the other
# except through the browser's one entry point.
APP="$top_srcdir/src"
bad=$(grep -l '#include "cli.h"' "$APP"/tui/*.[ch] "$APP"/app/*.[ch] 2> /dev/null | tr '\n' ' ')
ok $([ -z "$bad" ]; echo $?) "src/tui and src/app do not include cli.h${bad:+: $bad}"
bad=$(grep -ho '#include "[^"]*"' "$APP"/app/*.[ch] | grep -v '"app.h"\|"matorage.h"\|"matorage-catalog.h"\|"config.h"' | tr '\n' ' ')
ok $([ -z "$bad" ]; echo $?) "src/app includes only app.h and the libraries' headers${bad:+: $bad}"
bad=$(grep -l '#include "\(tui\|display\).h"' "$APP"/cli/*.c | tr '\n' ' ')
ok $([ -z "$bad" ]; echo $?) "src/cli opens the browser only through tui-main.h${bad:+: $bad}"
# Internal functions carry their own prefix, apart from the public API's mt_ (as Lua keeps
# lua_ and luaX_ apart): no hidden function is named like a public one.
bad=$(grep -rhoE '(MT_LOCAL|MT_CATALOG_LOCAL)[^;(]*\<mt_[a-z0-9_]+ *\(' "$LIB" |
	grep -oE 'mt_[a-z0-9_]+' | sort -u | tr '\n' ' ')
ok $([ -z "$bad" ]; echo $?) "internal functions are mti_, never mt_${bad:+: $bad}"
# The catalog is a library above libmatorage: the public header only.
ok $([ -z "$(ls "$LIB"/*.c 2>/dev/null)" ]; echo $?) "src/lib holds no code outside its rooms"
# Every room is in the table above, so a new room cannot escape the check.
bad=""
for d in "$LIB"/*/; do
	d=$(basename "$d")
	case " $ROOMS " in *" $d "*) ;; *) bad="$bad $d" ;; esac
done
ok $([ -z "$bad" ]; echo $?) "every room of src/lib has its arrows in layers.sh${bad:+ — not:$bad}"
done_testing
