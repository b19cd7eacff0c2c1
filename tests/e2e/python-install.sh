#!/bin/bash
# python-install.sh — what a plain `make install` gives, run with a clean environment: Debian's python3 imports the package and the matorage command runs, both finding the installed libmatorage with no ldconfig and no variable (in a private mount over the prefix); pip into an offline virtualenv (MATORAGE_LIB, the loader path, or a clear error).
. "$(dirname "$0")/lib.sh"
BUILT=$top_builddir/src/lib/.libs

# pyenv ARGS...: python with no MATORAGE_LIB and nothing of the source tree on its path
# (the sanitizer runtime preloaded, as pymt does, when the library is instrumented).
pyenv() {
	local env=()
	case "${MT_CFLAGS:-}" in *fsanitize=address*)
		env+=(LD_PRELOAD="$($MT_CC -print-file-name=libasan.so) $($MT_CC -print-file-name=libubsan.so)"
			ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0) ;;
	esac
	env -u MATORAGE_LIB -u PYTHONPATH "${env[@]}" "$@"
}

if ! grep -q '^PYTHON = .*[^:]$' "$top_builddir/Makefile"; then
	echo "1..0 # SKIP configure found no Python: the package is not installed"
	exit 0
fi
PREFIX=$(sed -n 's/^prefix = //p' "$top_builddir/Makefile")
CONF_PY=$(sed -n 's/^PYTHON = //p' "$top_builddir/Makefile")
ROOT=$WORK/root
mkdir -p "$ROOT"
# inns CMD...: CMD in a private mount namespace where the configured prefix is the empty
# directory $ROOT, so that a plain `make install` (no DESTDIR, no prefix= override: the
# paths recorded are the real ones) leaves the machine as it was.
inns() {
	unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
		inns "$ROOT" "$PREFIX" "$@"
}
# CLEAN: nothing in the environment but PATH (and, in a sanitizer build, the sanitizer
# runtime python needs preloaded to load the instrumented library).
CLEAN=(PATH=/usr/bin:/bin)
case "${MT_CFLAGS:-}" in *fsanitize=address*)
	CLEAN+=(LD_PRELOAD="$($MT_CC -print-file-name=libasan.so) $($MT_CC -print-file-name=libubsan.so)"
		ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0) ;;
esac
if ! [ -d "$PREFIX" ] || ! inns true 2>"$WORK/unshare.err"; then
	ok 0 "# SKIP no private mount namespace over $PREFIX here ($(head -c 200 "$WORK/unshare.err")): make install is not tried"
else
	check "make install, as configured (prefix $PREFIX), into a private mount of an empty directory" \
		inns make -s -C "$top_builddir" install
	SITE=$(dirname "$(dirname "$(find "$ROOT" -path '*/matorage/__init__.py' | head -n 1)")")
	SITE=$PREFIX${SITE#"$ROOT"}
	check "the installed package records its libdir" grep -q "LIBDIR = '$PREFIX/lib'" "$ROOT${SITE#"$PREFIX"}/matorage/_config.py"
	readelf -d "$ROOT/bin/matorage" > "$WORK/dyn" 2>&1
	ok "$(grep -q "RUNPATH.*\[$PREFIX/lib\]" "$WORK/dyn"; echo $?)" "the installed matorage has RUNPATH $PREFIX/lib"
	check "the installed matorage runs with a clean environment: no ldconfig, no LD_LIBRARY_PATH" \
		inns env -i PATH=/usr/bin:/bin "$PREFIX/bin/matorage" --version
	if [ "$(readlink -f "$CONF_PY")" != "$(readlink -f /usr/bin/python3)" ]; then
		ok 0 "# SKIP configured with PYTHON=$CONF_PY, not Debian's /usr/bin/python3: its import is not tried"
	else
		check "Debian's /usr/bin/python3 imports the installed package with a clean environment, from $SITE" \
			inns env -i "${CLEAN[@]}" sh -c 'cd / && exec /usr/bin/python3 - "$@"' py \
			"$PREFIX" "$SITE" "$WORK/store" <<'PYEOF'
import sys
import numpy as np
import matorage
from matorage import _lib
prefix, site, store = sys.argv[1:4]
assert matorage.__file__ == f"{site}/matorage/__init__.py", matorage.__file__
assert _lib.lib()._name == f"{prefix}/lib/libmatorage.so.0", _lib.lib()._name
with matorage.Writer("file://" + store, "d") as w:
    w.append(x=np.arange(10))
assert (matorage.Reader("file://" + store, "d@v1").read("x") == np.arange(10)).all()
PYEOF
		check "the installed matorage reads what the installed package wrote, with a clean environment" \
			inns env -i PATH=/usr/bin:/bin "$PREFIX/bin/matorage" --store "$WORK/store" cat d@v1 x
	fi
	check "make uninstall takes the package away, _config.py too" \
		inns make -s -C "$top_builddir" uninstall
	check "nothing of the package or the command is left" \
		test ! -e "$ROOT${SITE#"$PREFIX"}/matorage/_config.py" -a ! -e "$ROOT${SITE#"$PREFIX"}/matorage/__init__.py" -a ! -e "$ROOT/bin/matorage"
fi
# pip, offline, into a virtualenv that sees Debian's numpy; from a copy, as pip builds in place.
cp -r "$top_srcdir/python" "$WORK/pysrc"
rm -rf "$WORK/pysrc/build" "$WORK/pysrc"/*.egg-info
if ! "$PY" -m venv --system-site-packages "$WORK/venv" > "$WORK/venv.log" 2>&1; then
	ok 0 "# SKIP python3 -m venv does not work here (python3-venv not installed)"
	done_testing
	exit
fi
check "pip install --no-build-isolation --no-index ./python" \
	"$WORK/venv/bin/pip" install -q --no-build-isolation --no-index "$WORK/pysrc"
VPY=$WORK/venv/bin/python
check "the pip-installed package, the library through MATORAGE_LIB" \
	pyenv env MATORAGE_LIB="$BUILT/libmatorage.so.0" "$VPY" - "$WORK" <<'PYEOF'
import sys
import matorage
assert matorage.__file__.startswith(sys.argv[1] + "/venv/"), matorage.__file__
assert matorage.library_version().count(".") == 2
PYEOF
check "the pip-installed package, the library on the loader path" \
	pyenv env LD_LIBRARY_PATH="$BUILT" "$VPY" -c 'import matorage; print(matorage.library_version())'
# Where no library is installed system-wide: a clear error that says how to point at one.
out=$(pyenv "$VPY" -c 'import matorage; matorage.Store()' 2>&1)
if [ $? -eq 0 ]; then
	ok 0 "# SKIP a libmatorage is installed system-wide"
else
	printf '%s' "$out" | grep -q 'LibraryNotFound: libmatorage not found (tried .*set MATORAGE_LIB'
	ok $? "no library: matorage.LibraryNotFound saying to set MATORAGE_LIB"
	printf '%s\n' "$out" | tail -n 1 | sed 's/^/# /'
fi
done_testing
