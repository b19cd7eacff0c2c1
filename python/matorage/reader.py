"""Reader: one version of a dataset, its attributes and rows read by range or by number; the
process's chunk cache."""
import ctypes

import numpy as np

from . import _abi, _lib, _dtypes, attach as _attach
from .errors import InvalidArgument
from .store import _Borrowed


def _stats_dict(st):
    return {name: int(getattr(st, name)) for name, _ in _abi._CacheStats._fields_[1:]}


def chunk_cache_stats():
    """The process's chunk cache (decoded chunks shared by every Reader and Loader, see
    set_chunk_cache): {"budget", "bytes", "chunks", "hits", "misses", "evictions"}."""
    st = _abi._CacheStats()
    st.size = ctypes.sizeof(st)
    _lib.lib().mt_chunk_cache_stats(ctypes.byref(st))
    return _stats_dict(st)


def set_chunk_cache(budget):
    """Let the process's chunk cache hold at most `budget` bytes of decoded chunks (0 turns
    it off; what is over the budget is let go at once).  The default is 256 MiB, or
    $MATORAGE_CHUNK_CACHE (bytes, or with a K, M or G suffix) when set.  Each process has its
    own: DataLoader workers each keep theirs."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise InvalidArgument(f"the chunk cache's budget is a number of bytes >= 0, not "
                              f"{budget!r}")
    _lib.lib().mt_chunk_cache_set_budget(int(budget))


def clear_chunk_cache():
    """Let go of every chunk the process's chunk cache holds."""
    _lib.lib().mt_chunk_cache_clear()


class Reader:
    """One version of a dataset: Reader(store, "dataset[@version]").

    store is a Store or a URL; no version (or "latest") opens the newest.  .dataset,
    .version, .rows (also len()), .attributes (name -> Attr), .info (the manifest's
    description, author, tags, sizes), .attachments (the attached files: name, sha256,
    bytes); read(attr, a, b) gives rows [a, b) as numpy, attachment(name) a file's bytes.
    Use it as a context manager, or call close().
    """

    def __init__(self, store, dataset, version=None):
        name, version = _lib.split_name(dataset, version)
        self._store = _Borrowed(store)
        self._h = ctypes.c_void_p()
        try:
            _lib.call("mt_reader_open", self._store.store.handle, _lib.b(name),
                      _lib.b(version), ctypes.byref(self._h))
        except BaseException:
            self._store.close()
            raise
        lib = _lib.lib()
        vi = lib.mt_reader_info(self._h).contents
        self.dataset, self.version = vi.dataset.decode(), vi.version.decode()
        self.rows = int(vi.rows)
        self.info = {
            "parent": vi.parent.decode(), "author": (vi.author or b"").decode(),
            "description": (vi.description or b"").decode(),
            "created": (vi.created or b"").decode(),
            "tags": [vi.tags[i].decode() for i in range(vi.ntags)],
            "shards": int(vi.nshards), "stored_bytes": int(vi.stored_bytes),
            "raw_bytes": int(vi.raw_bytes), "level": int(vi.level)}
        attrs = [_dtypes.from_c(lib.mt_reader_attr(self._h, i).contents)
                 for i in range(lib.mt_reader_nattrs(self._h))]
        self.attributes = {a.name: a for a in attrs}
        self._index = {a.name: i for i, a in enumerate(attrs)}
        self.attachments = _attach.reader_attachments(self._h)

    def __len__(self):
        return self.rows

    def _handle(self):
        if not self._h:
            raise _lib.error_from(-13, f"{self.dataset}@{self.version}: the reader is closed")
        return self._h

    def _range(self, attr, a, b):
        if attr not in self._index:
            raise _lib.error_from(-4, f"{self.dataset}@{self.version}: no attribute {attr!r} "
                                  f"(it has {', '.join(self._index)})")
        b = self.rows if b is None else b
        if not (0 <= a <= b <= self.rows):
            raise _lib.error_from(-12, f"{self.dataset}@{self.version}: rows [{a}, {b}) are "
                                  f"not within its {self.rows} rows")
        return self._index[attr], self.attributes[attr], int(a), int(b)

    def read(self, attr, a=0, b=None):
        """Rows [a, b) of attribute `attr` (b None: to the end) as a numpy array of shape
        (b - a,) + row shape; for a ragged attribute a pair (values, offsets) where row
        a + i is values[offsets[i]:offsets[i + 1]]; for a str attribute a list of str."""
        i, at, a, b = self._range(attr, a, b)
        h = self._handle()
        if not at.ragged:
            out = np.empty((b - a,) + at.shape, dtype=at.dtype)
            _lib.call("mt_reader_read", h, i, a, b, out.ctypes.data_as(ctypes.c_void_p),
                      out.nbytes)
            return out
        lengths, total = np.empty(b - a, dtype=np.uint64), ctypes.c_uint64()
        _lib.call("mt_reader_ragged_lengths", h, i, a, b,
                  lengths.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), ctypes.byref(total))
        values = np.empty((total.value,) + at.shape, dtype=np.uint8 if at.text else at.dtype)
        if b > a:
            _lib.call("mt_reader_read", h, i, a, b, values.ctypes.data_as(ctypes.c_void_p),
                      values.nbytes)
        offsets = np.zeros(b - a + 1, dtype=np.uint64)
        np.cumsum(lengths, out=offsets[1:])
        if at.text:
            return _dtypes.decode_text(values, offsets, f"{self.dataset}@{self.version}: {attr}")
        return values, offsets

    def attachment(self, name):
        """The bytes of the file attached as `name` (see .attachments: name, sha256,
        bytes each), checked against its sha256: NotFound when the version has none of that
        name, Corrupt when the stored bytes differ."""
        return _attach.reader_attachment(self._handle(), name)

    def read_rows(self, attr, rows):
        """Rows of fixed-size attribute `attr` by number, in the given order (any order,
        repeats allowed), as one numpy array of shape (len(rows),) + row shape.  Each chunk
        holding them is decoded once, and kept in the chunk cache: reading rows at random
        costs a decode per chunk, not per row."""
        i, at, _, _ = self._range(attr, 0, None)
        if at.ragged:
            raise InvalidArgument(f"{self.dataset}@{self.version}: {attr} is ragged: read it "
                                  "by range")
        rows = np.ascontiguousarray(rows, dtype=np.uint64).reshape(-1)
        out = np.empty((len(rows),) + at.shape, dtype=at.dtype)
        _lib.call("mt_reader_read_rows", self._handle(), i,
                  rows.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), len(rows),
                  out.ctypes.data_as(ctypes.c_void_p), out.nbytes)
        return out

    def close(self):
        """Close the reader (and the store, when it was opened from a URL)."""
        h, self._h = getattr(self, "_h", None), ctypes.c_void_p()
        if h:
            _lib.lib().mt_reader_close(h)
        if getattr(self, "_store", None) is not None:
            self._store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"matorage.Reader({self.dataset}@{self.version}, {self.rows} rows)"
