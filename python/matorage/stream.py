"""Stream: rows appended a few at a time, committed as versions on top of the latest."""
import ctypes

import numpy as np

from . import _abi, _lib
from ._dtypes import code_of, encode_text
from .errors import InvalidArgument
from .store import _Borrowed
from .writer import Ragged


class Stream:
    """Rows appended a few at a time to a dataset, committed as versions on top of the latest.

        s = matorage.Stream(store, "events", {"x": ("float32", (3,)), "y": ("int64", ())},
                            commit_rows=10000, commit_secs=30)
        s.append(x=np.zeros((2, 3), np.float32), y=np.array([1, 2]))   # commits when due
        s.poll()      # commits by time while no rows come; returns seconds until due (or None)
        s.commit()    # now: the new version's name ("" when nothing waited)
        s.close()     # rows not committed are dropped

    store: a Store or its URL.  An attribute given as (dtype, item shape, True) is ragged:
    each row a variable number of items, appended as a list of per-row arrays (as Writer
    takes them) or a Ragged:
        s = matorage.Stream(store, "text", {"tokens": ("int32", (), True), "label": ("int64", ())})
        s.append(tokens=[[5, 17, 3], [], [8]], label=[2, 0, 1])
    An attribute given as ("str", ()) holds text (UTF-8, one string a row), appended as a
    list or array of str:
        s = matorage.Stream(store, "notes", {"text": ("str", ()), "id": ("int64", ())})
        s.append(text=["hello", "", "h\u00e9llo"], id=[1, 2, 3])
    Values are converted to each attribute's dtype.  As a context manager it commits what
    waits on a clean exit.
    """

    def __init__(self, store, dataset, attrs, commit_rows=100000, commit_secs=0):
        self._h = ctypes.c_void_p()
        if not isinstance(attrs, dict) or not attrs:
            raise InvalidArgument("Stream: attrs is a dict {name: (dtype, shape[, ragged])}")
        self._spec, self._text = [], set()
        for n, spec in attrs.items():
            if not isinstance(spec, (tuple, list)) or len(spec) not in (2, 3):
                raise InvalidArgument(f"Stream: {n}: (dtype, shape) or (dtype, item shape, "
                                      "True) for a ragged attribute")
            d, shape, ragged = spec[0], spec[1], bool(spec[2]) if len(spec) == 3 else False
            shape = tuple(int(x) for x in shape)
            if len(shape) > _abi.MAX_RANK:
                raise InvalidArgument(f"Stream: {n}: more than {_abi.MAX_RANK} dimensions")
            text = np.dtype(d).kind == "U"
            if text and shape:
                raise InvalidArgument(f"Stream: {n}: str takes no shape (one string a row)")
            self._spec.append((n, np.dtype(d), shape,
                               code_of(d, f"Stream: {n}", text=True), ragged or text))
            if text:
                self._text.add(n)
        self._ragged = any(r for *_, r in self._spec)
        self._names = [n.encode() for n, *_ in self._spec]
        arr = (_abi._Attr * len(self._spec))()
        for i, (n, d, shape, code, ragged) in enumerate(self._spec):
            arr[i].name, arr[i].dtype, arr[i].rank = self._names[i], code, len(shape)
            arr[i].ragged = int(ragged)
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
        """Rows of every attribute (a dict, or keyword arguments), the same count in each; a
        ragged attribute's rows as a list of per-row arrays or a Ragged."""
        cols = dict(cols or {}, **kw)
        arrays, lens, n = [], [], None
        for name, d, shape, _, ragged in self._spec:
            if name not in cols:
                raise InvalidArgument(f"Stream.append: no rows for attribute {name!r}")
            if name in self._text:
                a, l = self._text_col(name, cols[name])
            elif ragged:
                a, l = self._ragged_col(name, cols[name], d, shape)
            else:
                a, l = np.ascontiguousarray(np.asarray(cols[name], dtype=d)), None
            rows = len(l) if ragged else a.shape[0] if a.ndim else None
            if (not ragged and a.shape[1:] != shape) or rows is None or \
                    (n is not None and rows != n):
                raise InvalidArgument(f"Stream.append: {name}: shape {a.shape}, rows of "
                                      f"{shape} wanted" + (f", {n} of them" if n else ""))
            n = rows
            arrays.append(a)
            lens.append(l)
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        if not self._ragged:
            _lib.call("mt_stream_append", self._handle(), n, ptrs)
            return
        pu64 = ctypes.POINTER(ctypes.c_uint64)
        lp = (pu64 * len(lens))(*[l.ctypes.data_as(pu64) if l is not None else None
                                  for l in lens])
        _lib.call("mt_stream_append_ragged", self._handle(), n, ptrs, lp)

    @staticmethod
    def _text_col(name, value):
        """A str attribute's rows (a list or 1-D array of str) as (UTF-8 bytes, lengths)."""
        if isinstance(value, str) or (isinstance(value, np.ndarray) and value.ndim != 1):
            raise InvalidArgument(f"Stream.append: {name}: text is one string a row: a list "
                                  "or 1-D array of str")
        vals, lens = encode_text(list(value), f"Stream.append: {name}")
        return np.ascontiguousarray(vals), np.ascontiguousarray(lens, dtype=np.uint64)

    @staticmethod
    def _ragged_col(name, value, d, shape):
        """A ragged attribute's rows as (items back to back, uint64 lengths)."""
        if isinstance(value, Ragged):
            vals, lens = np.asarray(value.values, dtype=d), value.lengths
        else:
            rows = [np.asarray(r, dtype=d) for r in value]
            for i, r in enumerate(rows):
                if r.ndim == 1 and not len(r) and shape:
                    rows[i] = r = r.reshape((0,) + shape)
                if r.ndim < 1 or r.shape[1:] != shape:
                    raise InvalidArgument(f"Stream.append: {name}: row {i} has shape {r.shape}; "
                                          f"items of shape {shape} wanted")
            vals = np.concatenate(rows) if rows else np.zeros((0,) + shape, d)
            lens = np.array([len(r) for r in rows], dtype=np.uint64)
        if vals.shape[1:] != shape:
            raise InvalidArgument(f"Stream.append: {name}: items of shape {vals.shape[1:]}; "
                                  f"{shape} wanted")
        return np.ascontiguousarray(vals), np.ascontiguousarray(lens, dtype=np.uint64)

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
