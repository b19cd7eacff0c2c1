"""Stream: rows appended a few at a time, committed as versions on top of the latest."""
import ctypes

import numpy as np

from . import _abi, _lib
from ._dtypes import code_of
from .errors import InvalidArgument
from .store import _Borrowed


class Stream:
    """Rows appended a few at a time to a dataset, committed as versions on top of the latest.

        s = matorage.Stream(store, "events", {"x": ("float32", (3,)), "y": ("int64", ())},
                            commit_rows=10000, commit_secs=30)
        s.append(x=np.zeros((2, 3), np.float32), y=np.array([1, 2]))   # commits when due
        s.poll()      # commits by time while no rows come; returns seconds until due (or None)
        s.commit()    # now: the new version's name ("" when nothing waited)
        s.close()     # rows not committed are dropped

    store: a Store or its URL.  Fixed-shape attributes only; values are converted to each
    attribute's dtype.  As a context manager it commits what waits on a clean exit.
    """

    def __init__(self, store, dataset, attrs, commit_rows=100000, commit_secs=0):
        self._h = ctypes.c_void_p()
        if not isinstance(attrs, dict) or not attrs:
            raise InvalidArgument("Stream: attrs is a dict {name: (dtype, shape)}")
        self._spec = []
        for n, (d, shape) in attrs.items():
            shape = tuple(int(x) for x in shape)
            if len(shape) > _abi.MAX_RANK:
                raise InvalidArgument(f"Stream: {n}: more than {_abi.MAX_RANK} dimensions")
            self._spec.append((n, np.dtype(d), shape, code_of(d, f"Stream: {n}")))
        self._names = [n.encode() for n, _, _, _ in self._spec]
        arr = (_abi._Attr * len(self._spec))()
        for i, (n, d, shape, code) in enumerate(self._spec):
            arr[i].name, arr[i].dtype, arr[i].rank = self._names[i], code, len(shape)
            for k, v in enumerate(shape):
                arr[i].shape[k] = v
        o = _abi._StreamOpts()
        _lib.lib().mt_stream_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
        o.commit_rows, o.commit_ms = commit_rows, int(commit_secs * 1000)
        self._store = _Borrowed(store, create=True)
        try:
            _lib.call("mt_stream_open", self._store.store.handle, _lib.b(dataset), arr,
                      len(self._spec), ctypes.byref(o), ctypes.byref(self._h))
        except BaseException:
            self._store.close()
            raise

    def append(self, cols=None, **kw):
        """Rows of every attribute (a dict, or keyword arguments), the same count in each."""
        cols = dict(cols or {}, **kw)
        arrays, n = [], None
        for name, d, shape, _ in self._spec:
            if name not in cols:
                raise InvalidArgument(f"Stream.append: no rows for attribute {name!r}")
            a = np.ascontiguousarray(np.asarray(cols[name], dtype=d))
            if a.shape[1:] != shape or (n is not None and a.shape[0] != n):
                raise InvalidArgument(f"Stream.append: {name}: shape {a.shape}, rows of "
                                      f"{shape} wanted" + (f", {n} of them" if n else ""))
            n = a.shape[0]
            arrays.append(a)
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        _lib.call("mt_stream_append", self._handle(), n, ptrs)

    def poll(self):
        """Commit when rows have waited commit_secs; seconds until the next is due, or None."""
        wait = ctypes.c_uint64()
        _lib.call("mt_stream_poll", self._handle(), ctypes.byref(wait))
        return None if wait.value == 2 ** 64 - 1 else wait.value / 1000

    def commit(self):
        """Commit the waiting rows now; the new version's name ("" when nothing waited)."""
        buf = ctypes.create_string_buffer(256)
        _lib.call("mt_stream_commit", self._handle(), buf, 256)
        return buf.value.decode()

    @property
    def pending(self):
        """Rows appended and not yet committed."""
        return int(_lib.lib().mt_stream_pending(self._handle()))

    def _handle(self):
        if not self._h:
            raise _lib.error_from(-13, "the stream is closed")
        return self._h

    def close(self):
        """Close; rows not committed are dropped (safe to call twice)."""
        h, self._h = getattr(self, "_h", None), ctypes.c_void_p()
        if h:
            _lib.lib().mt_stream_close(h)
        if getattr(self, "_store", None) is not None:
            self._store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                self.commit()
        finally:
            self.close()

    def __del__(self):
        self.close()
