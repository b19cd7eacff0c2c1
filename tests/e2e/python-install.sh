#!/bin/bash
# python-install.sh — the matorage Python package installed: by make install into a prefix (it finds the installed libmatorage with no environment variable), and by pip into an offline virtualenv (MATORAGE_LIB, the loader path, or a clear error).
. "$(dirname "$0")/lib.sh"
INST=$WORK/inst

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
# libmatorage alone: libtool relinks libmatorage-catalog for its final libdir, which only
# the configured prefix may be.
check "make install into a prefix: the library and the package" \
	make -s -C "$top_builddir" install-libLTLIBRARIES install-data prefix="$INST" \
	lib_LTLIBRARIES=src/lib/libmatorage.la
SITE=$(dirname "$(dirname "$(find "$INST" -path '*/matorage/__init__.py' | head -n 1)")")
check "the installed package records its libdir" grep -q "LIBDIR = '$INST/lib'" "$SITE/matorage/_config.py"
check "the installed package finds the installed library with no MATORAGE_LIB" \
	pyenv env PYTHONPATH="$SITE" "$PY" - "$INST" "$SITE" <<'PYEOF'
import sys
import numpy as np
import matorage
from matorage import _lib
inst, site = sys.argv[1], sys.argv[2]
assert matorage.__file__.startswith(site), matorage.__file__
assert _lib.lib()._name == f"{inst}/lib/libmatorage.so.0", _lib.lib()._name
with matorage.Writer("file://" + inst + "/store", "d") as w:
    w.append(x=np.arange(10))
assert (matorage.Reader("file://" + inst + "/store", "d@v1").read("x") == np.arange(10)).all()
PYEOF
check "make uninstall takes the package away, _config.py too" \
	make -s -C "$top_builddir" uninstall-matoragepyPYTHON uninstall-hook prefix="$INST"
check "nothing of the package is left" test ! -e "$SITE/matorage/_config.py" -a ! -e "$SITE/matorage/__init__.py"

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
	pyenv env MATORAGE_LIB="$INST/lib/libmatorage.so.0" "$VPY" - "$WORK" <<'PYEOF'
import sys
import matorage
assert matorage.__file__.startswith(sys.argv[1] + "/venv/"), matorage.__file__
assert matorage.library_version().count(".") == 2
PYEOF
check "the pip-installed package, the library on the loader path" \
	pyenv env LD_LIBRARY_PATH="$INST/lib" "$VPY" -c 'import matorage; print(matorage.library_version())'
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
