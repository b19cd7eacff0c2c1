"""Stores, and what they hold: datasets and their versions."""
import ctypes
import os

from . import _abi, _lib


class Store:
    """A store by URL: a directory, file://DIR, s3://BUCKET[/PREFIX], or a remote's name.

    None (the default) is the built-in store ($MATORAGE_STORE, else
    ~/.local/share/matorage/store).  create: make a missing directory store (as writers
    need); with False a missing one is NotFound.  S3 options (endpoint, region, profile,
    ca_bundle, insecure, max_requests, max_attempts) are mt_store_opts'; unset ones come
    from the remote, the environment and the AWS configuration files.  Use it as a
    context manager, or call close(); everything else taking a store accepts its URL.
    """

    _S3 = ("endpoint", "region", "profile", "ca_bundle", "insecure", "max_requests",
           "max_attempts")

    def __init__(self, url=None, create=True, **s3):
        self._h = ctypes.c_void_p()
        if url is not None and not isinstance(url, str):
            raise _lib.error_from(-2, f"a store URL is a string, not {type(url).__name__}")
        bad = sorted(set(s3) - set(self._S3))
        if bad:
            raise _lib.error_from(-2, f"Store: unknown option(s) {', '.join(bad)}")
        o = _abi._StoreOpts()
        _lib.lib().mt_store_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
        self._keep = {k: _lib.b(v) if isinstance(v, str) else v for k, v in s3.items()}
        for k, v in self._keep.items():
            setattr(o, k, v)
        o.create = int(bool(create))
        _lib.call("mt_store_open_opts", _lib.b(url), ctypes.byref(o), ctypes.byref(self._h))
        self.url, self.options, self._pid = url, dict(s3), os.getpid()

    @property
    def handle(self):
        """The mt_store * (raises StateError once closed)."""
        if not self._h:
            raise _lib.error_from(-13, "the store is closed")
        return self._h

    def canonical_url(self):
        """The store's canonical URL, as the library resolved it."""
        return _lib.lib().mt_store_url(self.handle).decode()

    def datasets(self):
        """The names of the datasets in the store, sorted."""
        return _strv("mt_store_datasets", self.handle)

    def versions(self, dataset):
        """The versions of `dataset`, oldest first; NotFound when it has none."""
        return _strv("mt_store_versions", self.handle, _lib.b(dataset))

    def close(self):
        """Close the store (safe to call twice).  In a process forked from the one that
        opened it, the store is only let go: its connections are the parent's too."""
        h, self._h = getattr(self, "_h", None), ctypes.c_void_p()
        if h and getattr(self, "_pid", None) in (None, os.getpid()):
            _lib.lib().mt_store_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"matorage.Store({self.url!r})"


def _strv(fn, *args):
    """A char ** list a library function fills, as Python strings."""
    v, n = ctypes.POINTER(ctypes.c_char_p)(), ctypes.c_size_t()
    _lib.call(fn, *args, ctypes.byref(v), ctypes.byref(n))
    try:
        return [v[i].decode() for i in range(n.value)]
    finally:
        _lib.lib().mt_strv_free(v, n)


class _Borrowed:
    """A Store given by the caller (left open) or opened from a URL (closed with us)."""

    def __init__(self, store, create=False):
        if isinstance(store, Store):
            self.store, self.owned = store, False
        else:
            self.store, self.owned = Store(store, create=create), True

    def close(self):
        if self.owned and self.store is not None:
            self.store.close()
        self.store = None


def datasets(store=None):
    """The dataset names of a store (a Store or a URL), sorted."""
    s = _Borrowed(store)
    try:
        return s.store.datasets()
    finally:
        s.close()


def versions(store, dataset):
    """The versions of `dataset` in a store (a Store or a URL), oldest first."""
    s = _Borrowed(store)
    try:
        return s.store.versions(dataset)
    finally:
        s.close()
