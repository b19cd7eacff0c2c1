"""Writer: a new version of a dataset, appended to in batches of rows and committed."""
import ctypes
import os

import numpy as np

from . import _abi, _lib, _dtypes, attach as _attach
from .errors import InvalidArgument, StateError
from .store import _Borrowed


class Ragged:
    """A ragged column given packed: row i is values[offsets[i]:offsets[i + 1]] (what
    Reader.read and Loader batches give for a ragged attribute: Ragged(*pair))."""

    def __init__(self, values, offsets):
        self.values = np.asarray(values)
        offsets = np.asarray(offsets)
        if offsets.ndim != 1 or not len(offsets) or offsets.dtype.kind not in "iu":
            raise InvalidArgument("Ragged: offsets are a 1-D integer array of rows + 1 entries")
        if offsets[0] != 0 or (np.diff(offsets.astype(np.int64)) < 0).any() \
                or int(offsets[-1]) != len(self.values):
            raise InvalidArgument("Ragged: offsets must start at 0, not decrease, and end at "
                                  f"len(values) = {len(self.values)}")
        self.lengths = np.diff(offsets.astype(np.uint64))

    @classmethod
    def from_rows(cls, rows, name):
        """The packed form of a list of per-row arrays."""
        rows = [np.asarray(r) for r in rows]
        if not rows:
            raise InvalidArgument(f"{name}: a ragged attribute needs at least one row")
        first = rows[0]
        for i, r in enumerate(rows):
            if r.ndim < 1 or r.dtype != first.dtype or r.shape[1:] != first.shape[1:]:
                raise InvalidArgument(
                    f"{name}: ragged row {i} is {r.dtype} {r.shape}, row 0 is {first.dtype} "
                    f"{first.shape} (rows differ only in their first dimension)")
        offsets = np.zeros(len(rows) + 1, dtype=np.uint64)
        np.cumsum([len(r) for r in rows], out=offsets[1:])
        return cls(np.concatenate(rows), offsets)

    def __len__(self):
        return len(self.lengths)


def _is_text(value):
    """A list, tuple or array of str: a str attribute's rows."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "U" or (value.dtype.kind == "O" and value.size > 0
                                            and isinstance(value.flat[0], str))
    return isinstance(value, (list, tuple)) and len(value) > 0 and isinstance(value[0], str)


def _column(name, value):
    """A value given to append() as (Attr, values array, lengths array or None)."""
    if _is_text(value):
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise InvalidArgument(f"{name}: text is one string a row: a 1-D array, not "
                                  f"{value.shape}")
        vals, lengths = _dtypes.encode_text(value, name)
        return _dtypes.Attr(name, _dtypes.TEXT, (), True), vals, lengths
    if isinstance(value, (list, tuple)):
        value = Ragged.from_rows(value, name)
    if isinstance(value, Ragged):
        vals = value.values
        shape, lengths = vals.shape[1:], np.ascontiguousarray(value.lengths, dtype=np.uint64)
    else:
        vals = np.asarray(value)
        if vals.ndim < 1:
            raise InvalidArgument(f"{name}: a column is an array of rows, not a scalar")
        shape, lengths = vals.shape[1:], None
    if len(shape) > _abi.MAX_RANK:
        raise InvalidArgument(f"{name}: rows of rank {len(shape)}; at most {_abi.MAX_RANK}")
    _dtypes.code_of(vals.dtype, name)
    vals = np.ascontiguousarray(vals, dtype=vals.dtype.newbyteorder("<"))
    attr = _dtypes.Attr(name, np.dtype(vals.dtype.name), tuple(shape), lengths is not None)
    return attr, vals, lengths


class Writer:
    """A new version of a dataset: Writer(store, "dataset[@version]", **opts).

    append(**columns) adds rows: each keyword an attribute, each value a numpy array of
    rows (shape (rows,) + row shape) or, for a ragged attribute, a list of per-row arrays
    or a Ragged; for a str attribute (UTF-8 text, one string a row) a list or array of
    str.  The first append sets the attributes (names, dtypes, row shapes); later
    ones must match them exactly.  commit() makes the version visible and returns
    "dataset@vN"; abort() discards it.  As a context manager it commits when the block
    ends normally and aborts when it raises.

    opts: version (or dataset@version), parent and append (start from the parent's
    rows), shard_bytes, shard_rows, chunk_bytes, level (zstd 1..22), threads, author,
    description, tags; as mt_writer_opts in matorage.h.  attachments: files to attach to
    the version ({name: bytes or path} or a list of paths; an append keeps the parent's);
    attach(name, data) adds one before the commit.
    """

    _OPTS = ("shard_bytes", "shard_rows", "chunk_bytes", "level", "threads")

    def __init__(self, store, dataset, version=None, parent=None, append=False, author=None,
                 description=None, tags=(), attachments=None, **opts):
        self.dataset, version = _lib.split_name(dataset, version)
        bad = sorted(set(opts) - set(self._OPTS))
        if bad:
            raise InvalidArgument(f"Writer: unknown option(s) {', '.join(bad)}")
        if isinstance(tags, str):
            raise InvalidArgument("Writer: tags is a list of strings, not a string")
        self._keep = [_lib.b(x) for x in (version, parent, author, description)]
        self._tags = (ctypes.c_char_p * max(len(tags), 1))(*[_lib.b(t) for t in tags])
        o = _abi._WriterOpts()
        _lib.lib().mt_writer_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
        o.version, o.parent, o.author, o.description = self._keep
        o.append, o.tags, o.ntags = int(bool(append)), self._tags, len(tags)
        for k, v in opts.items():
            setattr(o, k, int(v))
        self._opts, self._h, self.attributes, self.rows = o, ctypes.c_void_p(), None, 0
        self._state = "open"
        self._attach = dict(_attach.attachment_items(attachments)) if attachments else {}
        self._store = _Borrowed(store, create=True)

    def attach(self, name, data):
        """Attach a file (bytes, or a path to read) as `name` to the version at commit."""
        if self._state != "open":
            raise StateError(f"{self.dataset}: the writer is {self._state}")
        ((name, data),) = _attach.attachment_items({name: data})
        if self._h:
            _lib.call("mt_writer_attach", self._h, _lib.b(name), data, len(data))
        self._attach[name] = data

    def _open(self, attrs):
        arr = (_abi._Attr * len(attrs))()
        self._names = [_lib.b(a.name) for a in attrs]
        for c, a, n in zip(arr, attrs, self._names):
            c.name, c.dtype, c.rank, c.ragged = n, _dtypes.code_of(a.dtype, a.name, True), \
                len(a.shape), int(a.ragged)
            for i, d in enumerate(a.shape):
                c.shape[i] = d
        _lib.call("mt_writer_open", self._store.store.handle, _lib.b(self.dataset), arr,
                  len(attrs), ctypes.byref(self._opts), ctypes.byref(self._h))
        self._pid = os.getpid()
        self.attributes = {a.name: a for a in attrs}
        for name, data in self._attach.items():
            _lib.call("mt_writer_attach", self._h, _lib.b(name), data, len(data))

    def _check(self, cols):
        if set(cols) != set(self.attributes):
            raise InvalidArgument(
                f"{self.dataset}: append gives {', '.join(sorted(cols))}; the writer's "
                f"attributes are {', '.join(sorted(self.attributes))}")
        for name, (attr, _, _) in cols.items():
            want = self.attributes[name]
            if attr != want:
                raise InvalidArgument(
                    f"{self.dataset}: {name} is {attr.dtype} rows of shape {attr.shape}"
                    f"{' (ragged)' if attr.ragged else ''}; the first append made it "
                    f"{want.dtype} {want.shape}{' (ragged)' if want.ragged else ''}")

    def append(self, **columns):
        """Append rows: one keyword per attribute, every value with the same row count."""
        if self._state != "open":
            raise StateError(f"{self.dataset}: the writer is {self._state}")
        if not columns:
            raise InvalidArgument(f"{self.dataset}: append() needs at least one attribute")
        cols = {n: _column(n, v) for n, v in columns.items()}
        counts = {n: len(lens) if lens is not None else len(vals)
                  for n, (_, vals, lens) in cols.items()}
        if len(set(counts.values())) != 1:
            raise InvalidArgument(f"{self.dataset}: attributes have different row counts: "
                                  + ", ".join(f"{n} {c}" for n, c in counts.items()))
        if self.attributes is None:
            self._open([c[0] for c in cols.values()])
        else:
            self._check(cols)
        order = [cols[n] for n in self.attributes]
        nrows = next(iter(counts.values()))
        data = (ctypes.c_void_p * len(order))(*[v.ctypes.data for _, v, _ in order])
        lens = None
        if any(a.ragged for a, _, _ in order):
            pu64 = ctypes.POINTER(ctypes.c_uint64)
            lens = (pu64 * len(order))(*[l.ctypes.data_as(pu64) if l is not None else None
                                         for _, _, l in order])
        _lib.call("mt_writer_append", self._h, nrows, data, lens)
        self.rows += nrows

    def commit(self):
        """Write the version's manifest (the commit point); returns "dataset@version"."""
        if self._state != "open":
            raise StateError(f"{self.dataset}: the writer is {self._state}")
        if self.attributes is None:
            raise StateError(f"{self.dataset}: nothing to commit (no append)")
        buf = ctypes.create_string_buffer(256)
        try:
            _lib.call("mt_writer_commit", self._h, buf, len(buf))
        except BaseException:
            self.abort()
            raise
        self._state = "committed"
        self.version = buf.value.decode()
        self.close()
        return f"{self.dataset}@{self.version}"

    def abort(self):
        """Discard the version (nothing becomes visible); safe after a failure."""
        if self._h and self._state == "open":
            _lib.lib().mt_writer_abort(self._h)
        if self._state == "open":
            self._state = "aborted"
        self.close()

    def close(self):
        """Free the writer; one not committed is aborted.  In a process forked from the
        one that opened it, the writer is only let go (its threads are not there)."""
        h, self._h = getattr(self, "_h", None), ctypes.c_void_p()
        if getattr(self, "_pid", None) not in (None, os.getpid()):
            h, self._store = None, None
        if h:
            _lib.lib().mt_writer_close(h)
        if getattr(self, "_state", None) == "open":
            self._state = "aborted"
        if getattr(self, "_store", None) is not None:
            self._store.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def __del__(self):
        self.close()
