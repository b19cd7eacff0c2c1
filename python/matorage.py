"""matorage — the loader of libmatorage for Python: batches as numpy arrays, or a torch IterableDataset.

    import matorage
    store = matorage.Store("s3://ml-data/team")          # or a directory, or a remote's name
    for batch in matorage.Loader(store, "mnist", attrs=["image", "label"],
                                 batch_rows=256, shuffle=True, seed=1):
        batch["image"]   # numpy array (rows, 28, 28); batch["_rows"]: the row numbers

    ds = matorage.TorchDataset("s3://ml-data/team", "mnist", batch_rows=256, shuffle=True)
    for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2): ...

    with matorage.Stream(store, "events", {"x": ("float32", (3,)), "y": ("int64", ())},
                         commit_rows=10000, commit_secs=30) as s:
        s.append(x=xs, y=ys)        # versions appended to the latest as rows come

The library is found through $MATORAGE_LIB, else as "libmatorage.so.0" on the loader path.
The ctypes declarations below mirror src/lib/matorage.h; python/check_abi.py (run by make
check) compiles them against the header and fails on any difference.
A ragged attribute comes as a pair (values, offsets): row i is values[offsets[i]:offsets[i+1]].
The semantics (order, rank shares, resume tokens) are those of doc/loader.md.
"""
import ctypes
import ctypes.util
import os

import numpy as np

MAX_RANK = 8
_DTYPES = {1: np.bool_, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint8,
           7: np.uint16, 8: np.uint32, 9: np.uint64, 10: np.float16, 11: np.float32,
           12: np.float64}


class _Error(ctypes.Structure):
    _c_name = "mt_error"
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 512)]


class _Attr(ctypes.Structure):
    _c_name = "mt_attr"
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_uint), ("rank", ctypes.c_int),
                ("shape", ctypes.c_uint64 * MAX_RANK), ("ragged", ctypes.c_int)]


class _Col(ctypes.Structure):
    _c_name = "mt_batch_col"
    _fields_ = [("data", ctypes.c_void_p), ("bytes", ctypes.c_size_t),
                ("offsets", ctypes.POINTER(ctypes.c_uint64))]


class _Batch(ctypes.Structure):
    _c_name = "mt_batch"
    _fields_ = [("rows", ctypes.c_size_t), ("row_ids", ctypes.POINTER(ctypes.c_uint64)),
                ("cols", ctypes.POINTER(_Col)), ("ncols", ctypes.c_size_t)]


class _Opts(ctypes.Structure):
    _c_name = "mt_loader_opts"
    _fields_ = [("size", ctypes.c_size_t), ("batch_rows", ctypes.c_size_t),
                ("attrs", ctypes.POINTER(ctypes.c_char_p)),
                ("nattrs", ctypes.c_size_t), ("shuffle", ctypes.c_int),
                ("seed", ctypes.c_uint64), ("epoch", ctypes.c_uint64),
                ("rank", ctypes.c_uint), ("world", ctypes.c_uint), ("drop_last", ctypes.c_int),
                ("shuffle_rows", ctypes.c_uint64), ("prefetch_bytes", ctypes.c_uint64),
                ("fetch_threads", ctypes.c_int), ("decode_threads", ctypes.c_int),
                ("resume", ctypes.c_char_p),
                ("cache_dir", ctypes.c_char_p), ("cache_bytes", ctypes.c_uint64),
                ("in_memory", ctypes.c_int),
                ("alloc", ctypes.c_void_p), ("dealloc", ctypes.c_void_p),
                ("alloc_ud", ctypes.c_void_p)]


class _ReadStats(ctypes.Structure):
    _c_name = "mt_read_stats"
    _fields_ = [("size", ctypes.c_size_t), ("healed_chunks", ctypes.c_uint64),
                ("healed_indexes", ctypes.c_uint64), ("heal_bytes", ctypes.c_uint64)]


class _StreamOpts(ctypes.Structure):
    _c_name = "mt_stream_opts"
    _fields_ = [("size", ctypes.c_size_t), ("commit_rows", ctypes.c_uint64),
                ("commit_ms", ctypes.c_uint64), ("writer", ctypes.c_void_p),
                ("committed", ctypes.c_void_p), ("committed_ud", ctypes.c_void_p)]


_STRUCTS = (_Error, _Attr, _Col, _Batch, _Opts, _ReadStats, _StreamOpts)


def _signatures():
    """Each function used: (restype, argtypes), as matorage.h declares it."""
    vp, err = ctypes.c_void_p, ctypes.POINTER(_Error)
    return {
        "mt_store_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(vp), err]),
        "mt_store_close": (None, [vp]),
        "mt_reader_open": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.POINTER(vp), err]),
        "mt_reader_close": (None, [vp]),
        "mt_reader_nattrs": (ctypes.c_size_t, [vp]),
        "mt_reader_attr": (ctypes.POINTER(_Attr), [vp, ctypes.c_size_t]),
        "mt_loader_opts_init_size": (None, [ctypes.POINTER(_Opts), ctypes.c_size_t]),
        "mt_loader_open": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.POINTER(_Opts), ctypes.POINTER(vp), err]),
        "mt_loader_next": (ctypes.c_int, [vp, ctypes.POINTER(ctypes.POINTER(_Batch)), err]),
        "mt_loader_batches": (ctypes.c_uint64, [vp]),
        "mt_loader_set_epoch": (ctypes.c_int, [vp, ctypes.c_uint64, err]),
        "mt_loader_state": (ctypes.c_size_t, [vp, ctypes.c_char_p, ctypes.c_size_t]),
        "mt_loader_read_rows": (ctypes.c_int, [vp, ctypes.POINTER(ctypes.c_uint64),
                                               ctypes.c_size_t,
                                               ctypes.POINTER(ctypes.POINTER(_Batch)), err]),
        "mt_loader_stats": (None, [vp, ctypes.POINTER(_ReadStats)]),
        "mt_loader_close": (None, [vp]),
        "mt_stream_opts_init_size": (None, [ctypes.POINTER(_StreamOpts), ctypes.c_size_t]),
        "mt_stream_open": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.POINTER(_Attr),
                                          ctypes.c_size_t, ctypes.POINTER(_StreamOpts),
                                          ctypes.POINTER(vp), err]),
        "mt_stream_append": (ctypes.c_int, [vp, ctypes.c_uint64, ctypes.POINTER(vp), err]),
        "mt_stream_poll": (ctypes.c_int, [vp, ctypes.POINTER(ctypes.c_uint64), err]),
        "mt_stream_commit": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_size_t, err]),
        "mt_stream_pending": (ctypes.c_uint64, [vp]),
        "mt_stream_close": (None, [vp]),
    }


def _library():
    path = os.environ.get("MATORAGE_LIB") or ctypes.util.find_library("matorage") \
        or "libmatorage.so.0"
    lib = ctypes.CDLL(path)
    for name, (res, args) in _signatures().items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


_lib = None


def _lib_get():
    global _lib
    if _lib is None:
        _lib = _library()
    return _lib


class MatorageError(Exception):
    """A libmatorage error: .code is the negative status, the text names what failed."""

    def __init__(self, err):
        super().__init__(err.message.decode(errors="replace"))
        self.code = err.code


def _check(rc, err):
    if rc:
        raise MatorageError(err)


def _b(s):
    return s.encode() if isinstance(s, str) else s


class Store:
    """A store by URL: a directory, file://, s3://BUCKET[/PREFIX], or a remote's name."""

    def __init__(self, url=None):
        self._h = ctypes.c_void_p()
        err = _Error()
        _check(_lib_get().mt_store_open(_b(url), ctypes.byref(self._h), ctypes.byref(err)), err)
        self.url = url

    def close(self):
        if self._h:
            _lib_get().mt_store_close(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        self.close()


def _attrs_of(store, dataset, version):
    lib, r, err = _lib_get(), ctypes.c_void_p(), _Error()
    _check(lib.mt_reader_open(store._h, _b(dataset), _b(version), ctypes.byref(r),
                              ctypes.byref(err)), err)
    try:
        out = {}
        for i in range(lib.mt_reader_nattrs(r)):
            a = lib.mt_reader_attr(r, i).contents
            out[a.name.decode()] = (_DTYPES[a.dtype], tuple(a.shape[:a.rank]), bool(a.ragged))
        return out
    finally:
        lib.mt_reader_close(r)


class Loader:
    """Batches of dataset@version as dicts of numpy arrays (copies, owned by Python)."""

    def __init__(self, store, dataset, version=None, attrs=None, batch_rows=32, shuffle=False,
                 seed=0, epoch=0, rank=0, world=1, drop_last=False, shuffle_rows=0,
                 prefetch_bytes=0, fetch_threads=0, decode_threads=0, resume=None, cache_dir=None, cache_bytes=0,
                 in_memory=False):
        lib = _lib_get()
        self._store = store
        info = _attrs_of(store, dataset, version)
        self.attrs = list(attrs) if attrs else list(info)
        for name in self.attrs:
            if name not in info:
                raise MatorageError(_Error(-4, f"{dataset}: no attribute {name}".encode()))
        self._info = [info[n] for n in self.attrs]
        o = _Opts()
        lib.mt_loader_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
        self._names = (ctypes.c_char_p * len(self.attrs))(*[_b(n) for n in self.attrs])
        o.attrs, o.nattrs = self._names, len(self.attrs)
        o.batch_rows, o.shuffle, o.seed, o.epoch = batch_rows, int(shuffle), seed, epoch
        o.rank, o.world, o.drop_last = rank, world, int(drop_last)
        o.shuffle_rows, o.prefetch_bytes = shuffle_rows, prefetch_bytes
        o.fetch_threads, o.decode_threads = fetch_threads, decode_threads
        self._resume, self._cache = _b(resume), _b(cache_dir)
        o.resume, o.cache_dir, o.cache_bytes = self._resume, self._cache, cache_bytes
        o.in_memory = int(in_memory)
        self._h = ctypes.c_void_p()
        err = _Error()
        _check(lib.mt_loader_open(store._h, _b(dataset), _b(version), ctypes.byref(o),
                                  ctypes.byref(self._h), ctypes.byref(err)), err)

    def _convert(self, bp):
        b = bp.contents
        n = b.rows
        out = {"_rows": np.ctypeslib.as_array(b.row_ids, (n,)).copy() if n else
               np.zeros(0, np.uint64)}
        for i, name in enumerate(self.attrs):
            dtype, shape, ragged = self._info[i]
            col = b.cols[i]
            raw = ctypes.string_at(col.data, col.bytes) if col.bytes else b""
            vals = np.frombuffer(raw, dtype=dtype).copy()
            if ragged:
                offs = np.ctypeslib.as_array(col.offsets, (n + 1,)).copy()
                out[name] = (vals.reshape((-1,) + shape), offs)
            else:
                out[name] = vals.reshape((n,) + shape)
        return out

    def __iter__(self):
        lib, bp, err = _lib_get(), ctypes.POINTER(_Batch)(), _Error()
        while True:
            _check(lib.mt_loader_next(self._h, ctypes.byref(bp), ctypes.byref(err)), err)
            if not bp:
                return
            yield self._convert(bp)

    def __len__(self):
        return int(_lib_get().mt_loader_batches(self._h))

    def set_epoch(self, epoch):
        err = _Error()
        _check(_lib_get().mt_loader_set_epoch(self._h, epoch, ctypes.byref(err)), err)

    def state(self):
        lib = _lib_get()
        n = lib.mt_loader_state(self._h, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.mt_loader_state(self._h, buf, n + 1)
        return buf.value.decode()

    def read_rows(self, rows):
        ids = (ctypes.c_uint64 * len(rows))(*rows)
        bp, err = ctypes.POINTER(_Batch)(), _Error()
        _check(_lib_get().mt_loader_read_rows(self._h, ids, len(rows), ctypes.byref(bp),
                                              ctypes.byref(err)), err)
        return self._convert(bp)

    def stats(self):
        """Chunks (and chunk indexes) rebuilt from parity so far, and the bytes read for
        them: a protected version's damaged shards heal with the batches unchanged."""
        st = _ReadStats()
        st.size = ctypes.sizeof(st)
        _lib_get().mt_loader_stats(self._h, ctypes.byref(st))
        return {name: int(getattr(st, name)) for name, _ in _ReadStats._fields_[1:]}

    def close(self):
        if self._h:
            _lib_get().mt_loader_close(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        self.close()


try:
    import torch.utils.data as _tud

    class TorchDataset(_tud.IterableDataset):
        """Batches as dicts of torch tensors; use with DataLoader(ds, batch_size=None).

        rank and world default to torch.distributed's when it is initialised. Each
        DataLoader worker takes its own share: rank * workers + worker_id of
        world * workers, so workers and ranks together still see every row once.
        """

        def __init__(self, store_url, dataset, version=None, rank=None, world=None, **opts):
            super().__init__()
            self.store_url, self.dataset, self.version = store_url, dataset, version
            self.rank, self.world, self.opts, self.epoch = rank, world, opts, opts.pop("epoch", 0)

        def set_epoch(self, epoch):
            self.epoch = epoch

        def __iter__(self):
            import torch
            import torch.distributed as dist
            rank, world = self.rank, self.world
            if rank is None or world is None:
                on = dist.is_available() and dist.is_initialized()
                rank = dist.get_rank() if on else 0
                world = dist.get_world_size() if on else 1
            w = _tud.get_worker_info()
            if w is not None:
                rank, world = rank * w.num_workers + w.id, world * w.num_workers
            store = Store(self.store_url)
            loader = Loader(store, self.dataset, self.version, rank=rank, world=world,
                            epoch=self.epoch, **self.opts)
            try:
                for batch in loader:
                    yield {k: (tuple(torch.from_numpy(x) for x in v) if isinstance(v, tuple)
                               else torch.from_numpy(v.astype(np.int64) if v.dtype == np.uint64
                                                     else v))
                           for k, v in batch.items()}
            finally:
                loader.close()
                store.close()
except ImportError:
    pass


_DTYPE_IDS = {np.dtype(t): i for i, t in _DTYPES.items()}


class Stream:
    """Rows appended a few at a time to a dataset, committed as versions on top of the latest.

        s = matorage.Stream(store, "events", {"x": ("float32", (3,)), "y": ("int64", ())},
                            commit_rows=10000, commit_secs=30)
        s.append(x=np.zeros((2, 3), np.float32), y=np.array([1, 2]))   # commits when due
        s.poll()      # commits by time while no rows come; returns seconds until due (or None)
        s.commit()    # now: the new version's name ("" when nothing waited)
        s.close()     # rows not committed are dropped

    Fixed-shape attributes only; values are converted to each attribute's dtype.
    """

    def __init__(self, store, dataset, attrs, commit_rows=100000, commit_secs=0):
        lib = _lib_get()
        self._store = store
        self._spec = [(n, np.dtype(d), tuple(shape)) for n, (d, shape) in attrs.items()]
        self._names = [_b(n) for n, _, _ in self._spec]
        arr = (_Attr * len(self._spec))()
        for i, (n, d, shape) in enumerate(self._spec):
            if d not in _DTYPE_IDS or len(shape) > MAX_RANK:
                raise MatorageError(_Error(-2, f"{n}: dtype {d} or shape {shape}".encode()))
            arr[i].name, arr[i].dtype, arr[i].rank = self._names[i], _DTYPE_IDS[d], len(shape)
            for k, v in enumerate(shape):
                arr[i].shape[k] = v
        o = _StreamOpts()
        lib.mt_stream_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
        o.commit_rows, o.commit_ms = commit_rows, int(commit_secs * 1000)
        self._h, err = ctypes.c_void_p(), _Error()
        _check(lib.mt_stream_open(store._h, _b(dataset), arr, len(self._spec), ctypes.byref(o),
                                  ctypes.byref(self._h), ctypes.byref(err)), err)

    def append(self, cols=None, **kw):
        """Rows of every attribute (a dict, or keyword arguments), the same count in each."""
        cols = dict(cols or {}, **kw)
        arrays, n = [], None
        for name, d, shape in self._spec:
            a = np.ascontiguousarray(np.asarray(cols[name], dtype=d))
            if a.shape[1:] != shape or (n is not None and a.shape[0] != n):
                raise MatorageError(_Error(-2, f"{name}: shape {a.shape}, rows of {shape} "
                                               f"wanted, {n} of them".encode()))
            n = a.shape[0]
            arrays.append(a)
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        err = _Error()
        _check(_lib_get().mt_stream_append(self._h, n, ptrs, ctypes.byref(err)), err)

    def poll(self):
        wait, err = ctypes.c_uint64(), _Error()
        _check(_lib_get().mt_stream_poll(self._h, ctypes.byref(wait), ctypes.byref(err)), err)
        return None if wait.value == 2 ** 64 - 1 else wait.value / 1000

    def commit(self):
        buf, err = ctypes.create_string_buffer(256), _Error()
        _check(_lib_get().mt_stream_commit(self._h, buf, 256, ctypes.byref(err)), err)
        return buf.value.decode()

    @property
    def pending(self):
        return int(_lib_get().mt_stream_pending(self._h))

    def close(self):
        if self._h:
            _lib_get().mt_stream_close(self._h)
            self._h = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.commit()
        self.close()

    def __del__(self):
        self.close()

