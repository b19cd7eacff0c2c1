"""Finding and loading libmatorage, and the helpers every module calls it through.

Where the library comes from, first match wins:
  1. $MATORAGE_LIB, a path to the shared library (always an override);
  2. the libdir `make install` recorded in matorage/_config.py next to this file;
  3. ctypes.util.find_library("matorage"), then the usual library directories
     (this Python's prefix, /usr/local/lib, /usr/lib and their multiarch directories);
  4. "libmatorage.so.0" on the dynamic loader's path.
A library found nowhere raises matorage.LibraryNotFound naming what was tried.
"""
import ctypes
import ctypes.util
import os
import sys
import sysconfig

from . import _abi
from .errors import Error, LibraryNotFound, error_from

SONAME = "libmatorage.so.0"

_lib = None


def _configured_libdir():
    """The libdir written by `make install` (None in a source tree or a pip install)."""
    try:
        from . import _config
    except ImportError:
        return None
    return getattr(_config, "LIBDIR", None)


def _candidates():
    """Paths to try, in order, after $MATORAGE_LIB."""
    out = []
    libdir = _configured_libdir()
    if libdir:
        out.append(os.path.join(libdir, SONAME))
    found = ctypes.util.find_library("matorage")
    if found:
        out.append(found)
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for prefix in dict.fromkeys([sys.prefix, sys.base_prefix, "/usr/local", "/usr"]):
        for sub in ("lib", "lib64", os.path.join("lib", multiarch) if multiarch else None):
            if sub:
                out.append(os.path.join(prefix, sub, SONAME))
    out.append(SONAME)
    return list(dict.fromkeys(out))


def _declare(lib):
    for name, (res, args) in _abi._signatures().items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def _load():
    path = os.environ.get("MATORAGE_LIB")
    if path:
        try:
            return _declare(ctypes.CDLL(path))
        except OSError as e:
            raise LibraryNotFound(f"MATORAGE_LIB={path}: cannot load it ({e})") from None
    tried = []
    for cand in _candidates():
        if os.sep in cand and not os.path.exists(cand):
            tried.append(cand)
            continue
        try:
            return _declare(ctypes.CDLL(cand))
        except OSError:
            tried.append(cand)
    raise LibraryNotFound(
        "libmatorage not found (tried " + ", ".join(tried) + "); install it (make install) "
        "or set MATORAGE_LIB to the path of libmatorage.so.0") from None


def lib():
    """The loaded library, loaded on first use."""
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def check(rc, err):
    """Raise the matorage.Error subclass for a failed call's mt_error record."""
    if rc:
        raise error_from(err.code or rc, err.message.decode(errors="replace"))


def call(fn, *args):
    """Call library function `fn` with an mt_error record as its last argument."""
    err = _abi._Error()
    check(getattr(lib(), fn)(*args, ctypes.byref(err)), err)


def b(s):
    """A str as the bytes a char * wants (None stays NULL)."""
    return s.encode() if isinstance(s, str) else s


def split_name(spec, version=None):
    """("dataset", "version" or None) from "dataset[@version]" and an explicit version."""
    if not isinstance(spec, str) or not spec:
        raise error_from(-2, f"a dataset name is a non-empty string, not {spec!r}")
    name, at, ver = spec.partition("@")
    if at:
        if not ver:
            raise error_from(-2, f"{spec}: nothing after '@' (dataset@version)")
        if version is not None and version != ver:
            raise error_from(-2, f"{spec}: the name says version {ver}, version= says {version}")
        version = ver
    return name, version


__all__ = ["lib", "check", "call", "b", "split_name", "Error", "SONAME"]
