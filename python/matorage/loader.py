"""Loader: the rows of a version as batches of numpy arrays (doc/loader.md), and its token."""
import ctypes
import os
import threading
import weakref

import numpy as np

from . import _abi, _lib, _dtypes
from .errors import InvalidArgument
from .store import _Borrowed


def parse_token(token):
    """The fields of a resume token (doc/loader.md, "Resuming") as a dict; stages is a
    list of (world, batch_rows, drop_last, batches_taken)."""
    if not isinstance(token, str):
        raise InvalidArgument(f"a resume token is a string, not {type(token).__name__}")
    f = token.split()
    try:
        if f[0] != "mtl1" or len(f) < 10:
            raise ValueError
        out = {"dataset": f[1], "version": f[2], "rows": int(f[3]), "seed": int(f[4]),
               "epoch": int(f[5]), "shuffle": bool(int(f[6])), "window_rows": int(f[7]),
               "unit_rows": int(f[8]),
               "stages": [tuple(int(x) for x in s.split(":")) for s in f[9:]]}
        if any(len(s) != 4 for s in out["stages"]):
            raise ValueError
    except (ValueError, IndexError):
        raise InvalidArgument(f"not a resume token: {token[:60]!r}") from None
    return out


def token_with_taken(token, taken):
    """The token with its last stage's batches_taken replaced."""
    f = token.split()
    w, b, d, _ = f[-1].split(":")
    return " ".join(f[:-1] + [f"{w}:{b}:{d}:{int(taken)}"])


def check_token_progress(t):
    """InvalidArgument when a stage of token t took more batches than it had."""
    live = t["rows"]
    for world, brows, drop, taken in t["stages"]:
        if drop:
            nb = live // (world * brows)
            per = nb * brows
        else:
            per = -(-live // world)
            nb = -(-per // brows)
        if taken > nb:
            raise InvalidArgument(
                f"resume token for {t['dataset']}@{t['version']}: {taken} batches taken of "
                f"a share of {nb} (world {world}, {brows} rows a batch): past the end")
        done = min(taken * brows, per)
        live = sum(max(0, min((r + 1) * per, live) - (r * per + done)) for r in range(world))


def _check_int(name, v, low):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise InvalidArgument(f"{name} must be an integer >= {low}, not {v!r}")
    return int(v)


def _check_resume(resume, shuffle, seed, shuffle_rows):
    """The token's fields; InvalidArgument when options given with it contradict it."""
    t = parse_token(resume)
    for name, given, has in (("shuffle", shuffle, t["shuffle"]), ("seed", seed, t["seed"]),
                             ("shuffle_rows", shuffle_rows, t["window_rows"])):
        if given is not None and (bool(given) if name == "shuffle" else int(given)) != has:
            raise InvalidArgument(f"resume token has {name} {has}, the options say {given}: "
                                  f"leave {name} out when resuming (the token keeps the order)")
    check_token_progress(t)
    return t


def numpy_column(dtype, shape):
    """An empty numpy array to copy a column into: (array, its address)."""
    a = np.empty(shape, dtype=dtype)
    return a, a.ctypes.data


# A batch is read as machine words (mt_batch, then its mt_batch_col array) in one ctypes
# read each, rather than one ctypes attribute access per field: per batch, the binding's
# own work is then a few microseconds next to the loader's.  The offsets come from the
# declarations in _abi, which check_abi.py holds to matorage.h.
_WORD = ctypes.sizeof(ctypes.c_size_t)
assert ctypes.sizeof(ctypes.c_void_p) == _WORD
_B_WORDS = ctypes.sizeof(_abi._Batch) // _WORD
_B_ROWS, _B_IDS, _B_COLS = (getattr(_abi._Batch, f).offset // _WORD
                            for f in ("rows", "row_ids", "cols"))
_C_WORDS = ctypes.sizeof(_abi._Col) // _WORD
_C_DATA, _C_BYTES, _C_OFFS = (getattr(_abi._Col, f).offset // _WORD
                              for f in ("data", "bytes", "offsets"))
_U64 = np.dtype(np.uint64)


def _words(addr, n):
    """The n machine words at addr, as ints."""
    return (ctypes.c_size_t * n).from_address(addr)[:]


def _view(addr, nbytes, dtype, shape, owner=None, writable=False):
    """An array over the loader's memory at addr, read-only unless writable; it keeps owner
    alive (the Loader, so dropping the loader frees nothing under it, or a held batch's
    _Hold, which lets the memory go when the last of its arrays goes)."""
    if not nbytes:
        return np.empty(shape, dtype)
    buf = (ctypes.c_char * nbytes).from_address(addr)
    buf.owner = owner
    a = np.frombuffer(buf, dtype).reshape(shape)
    if not writable:
        a.flags.writeable = False
    return a


# A batch's fixed-size column of at least this many bytes is handed out held in its window
# rather than copied: below it, a copy costs less than the hold and its release, and keeps
# nothing of the window (labels kept for metrics, say).
_HOLD_MIN = 16 << 10


class _Holds:
    """A loader's batch columns handed out held (mt_loader_next_held) and not yet let go:
    each is the window's memory, which the loader fills again only once it is released.
    The last array over a column going releases it, from whatever thread drops it, also
    after the loader's close (which frees all but the held columns' own pages)."""

    def __init__(self, h):
        self.h, self.pid, self.live = h, os.getpid(), 0
        self.lock = threading.Lock()
        self.release = _lib.lib().mt_loader_release

    def hold(self, token):
        with self.lock:
            self.live += 1
        return _Hold(self, token)

    def drop(self, token):
        # In a forked child the loader is not there to release to.
        if os.getpid() != self.pid:
            return
        with self.lock:
            self.live -= 1
        self.release(self.h, token)


class _Hold:
    """One held column of a batch: its arrays keep it, and it releases the column when they
    are gone."""
    __slots__ = ("holds", "token")

    def __init__(self, holds, token):
        self.holds, self.token = holds, token

    def __del__(self):
        try:
            self.holds.drop(self.token)
        except Exception:  # at interpreter exit, the library may be gone first
            pass


class _Views:
    """The arrays of a batch's buffers, made once per buffer: the loader fills the same
    buffers batch after batch (until one grows), so a view made for one batch, of the same
    address and size, is the view of the next.  Views handed out (copy=False) keep the
    Loader alive, so they are held here by weak reference: a strong one would be a cycle,
    and the loader would then close at the next garbage collection rather than when its
    last reference goes."""

    def __init__(self, copy, owner):
        self.copy, self.slots = copy, {}
        self.owner = None if copy else weakref.ref(owner)

    def take(self, slot, addr, nbytes, dtype, shape):
        """Slot's array for nbytes at addr: a copy, or the (cached) read-only view."""
        if not nbytes:
            return np.empty(shape, dtype)
        v = self.slots.get(slot)
        if self.copy:
            if v is None or v[0] != addr or v[1] != nbytes:
                v = self.slots[slot] = (addr, nbytes, _view(addr, nbytes, dtype, shape))
            return v[2].copy()
        a = v[2]() if v is not None and v[0] == addr and v[1] == nbytes else None
        if a is None:
            a = _view(addr, nbytes, dtype, shape, self.owner())
            self.slots[slot] = (addr, nbytes, weakref.ref(a))
        return a


class Loader:
    """Batches of dataset@version as dicts of numpy arrays.

    Loader(store, "dataset[@version]", attrs=[...], batch_rows=32, shuffle=False, seed=0,
    epoch=0, rank=0, world=1, drop_last=False, shuffle_rows=0, prefetch_bytes=0,
    fetch_threads=0, decode_threads=0, resume=None, cache_dir=None, cache_bytes=0,
    in_memory=False, copy=True, defer_windows=False): the options of mt_loader_opts
    (doc/loader.md).  store is a Store or a URL.  Each batch maps attribute names to arrays
    of shape (rows,) + row shape (a ragged attribute: (values, offsets); a str one: a list
    of str) and "_rows" to the rows' global numbers.  defer_windows=True: nothing is read
    ahead until the first batch is asked for, so a loader used only for read_rows reads
    just the chunks of its rows.

    copy=True (the default): each batch's arrays are its own, writable, and stay as they are
    for as long as they are kept.  In a batch lying in one window (all but the few that
    straddle two), a fixed-size column of 16 KiB or more is handed out held
    (mt_loader_next_held): the array is the window's memory itself, with no copy, and the
    loader fills that memory again only once the array (and every view of it) is gone.  A
    training loop that drops each batch as it takes the next waits for nothing; columns
    kept longer keep their own pages (the rest of the window is given back), as copies
    would.  Row numbers, smaller and ragged columns, and the other batches are copied.
    copy=False: the arrays are read-only views of the loader's buffers, with no copy, and
    they are valid only until the next call on the loader (the next batch, read_rows,
    set_epoch, state, len, close): the loader then writes the next batch over the same
    memory.  Take what must outlive the batch with .copy().  A view keeps the loader
    from being freed while it exists (close() still ends it).
    """

    def __init__(self, store, dataset, version=None, attrs=None, batch_rows=32, shuffle=None,
                 seed=None, epoch=0, rank=0, world=1, drop_last=False, shuffle_rows=None,
                 prefetch_bytes=0, fetch_threads=0, decode_threads=0, resume=None,
                 cache_dir=None, cache_bytes=0, in_memory=False, copy=True,
                 defer_windows=False):
        self._h, self._store, self._holds = None, None, None  # close() works whatever fails below
        self._views = _Views(bool(copy), self)
        name, version = _lib.split_name(dataset, version)
        batch_rows = self._batch_rows = _check_int("batch_rows", batch_rows, 1)
        world = _check_int("world", world, 1)
        rank = _check_int("rank", rank, 0)
        if rank >= world:
            raise InvalidArgument(f"rank {rank} is not below the world size {world}")
        if isinstance(attrs, (str, bytes)):
            raise InvalidArgument(f"attrs is a list of attribute names; for one, [{attrs!r}]")
        if resume is not None:
            t = _check_resume(resume, shuffle, seed, shuffle_rows)
            version = version or t["version"]
        self._store = _Borrowed(store)
        self.dataset = name
        o = _abi._Opts()
        lib = _lib.lib()
        lib.mt_loader_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
        # No attrs: the loader takes every attribute (o.attrs stays NULL).
        names = list(attrs) if attrs is not None else []
        self._names = (ctypes.c_char_p * max(len(names), 1))(*[_lib.b(n) for n in names])
        if attrs is not None:
            o.attrs, o.nattrs = self._names, len(names)
        epoch = _check_int("epoch", epoch, 0)
        o.batch_rows, o.shuffle, o.seed, o.epoch = batch_rows, int(bool(shuffle)), seed or 0, epoch
        o.rank, o.world, o.drop_last = rank, world, int(drop_last)
        o.shuffle_rows, o.prefetch_bytes = shuffle_rows or 0, prefetch_bytes
        o.fetch_threads, o.decode_threads = fetch_threads, decode_threads
        self._resume, self._cache = _lib.b(resume), _lib.b(cache_dir)
        o.resume, o.cache_dir, o.cache_bytes = self._resume, self._cache, cache_bytes
        o.in_memory, o.defer_windows = int(in_memory), int(bool(defer_windows))
        h = ctypes.c_void_p()
        _lib.call("mt_loader_open", self._store.store.handle, _lib.b(name), _lib.b(version),
                  ctypes.byref(o), ctypes.byref(h))
        self._h, self._pid, self._holds = h, os.getpid(), _Holds(h)
        # The version as the loader opened it: one open (on S3, one round trip less).
        r = lib.mt_loader_reader(h)
        vi = lib.mt_reader_info(r).contents
        self.version, self.rows = vi.version.decode(), int(vi.rows)
        info = {}
        for i in range(lib.mt_reader_nattrs(r)):
            a = _dtypes.from_c(lib.mt_reader_attr(r, i).contents)
            info[a.name] = a
        self.attrs = names if attrs is not None else list(info)
        self.attributes = {a: info[a] for a in self.attrs}
        self._cols = [info[a] for a in self.attrs]
        # What convert needs of each attribute, worked out once rather than per batch.
        # A str attribute's rows come as bytes (uint8) and leave as a list of str.
        self._layout = [(a, np.dtype(np.uint8) if at.text else at.dtype, at.shape, at.ragged,
                         at.item_bytes) for a, at in zip(self.attrs, self._cols)]
        self._text = {a for a, at in zip(self.attrs, self._cols) if at.text}

    def _handle(self):
        if not self._h:
            raise _lib.error_from(-13, f"{self.dataset}@{self.version}: the loader is closed")
        return self._h

    def _numpy_batch(self, addr, holds=None):
        """The batch (mt_batch) at addr as a dict of numpy arrays, copies or views; holds:
        the id of each column handed out held (mt_loader_next_held; 0 for one that is not),
        or None.  A held column is a writable view of the window with a _Hold."""
        take, w = self._views.take, _words(addr, _B_WORDS)
        n = w[_B_ROWS]
        cols = _words(w[_B_COLS], _C_WORDS * len(self._layout)) if self._layout else ()
        out = {"_rows": take(-1, w[_B_IDS], 8 * n, _U64, (n,))}
        k = 0
        for i, (name, dtype, shape, ragged, unit) in enumerate(self._layout):
            data, nbytes = cols[k + _C_DATA], cols[k + _C_BYTES]
            if holds is not None and holds[i]:
                out[name] = _view(data, nbytes, dtype, (n,) + shape,
                                  self._holds.hold(holds[i]), True)
            elif ragged:
                items = nbytes // unit if unit else 0
                out[name] = (take(k, data, nbytes, dtype, (items,) + shape),
                             take(k + 1, cols[k + _C_OFFS], 8 * (n + 1), _U64, (n + 1,)))
                if name in self._text:
                    out[name] = _dtypes.decode_text(*out[name], f"{self.dataset}: {name}")
            else:
                out[name] = take(k, data, nbytes, dtype, (n,) + shape)
            k += _C_WORDS
        return out

    def convert(self, bp, column=numpy_column):
        """A batch (mt_batch *) as a dict; column(dtype, shape) gives each output array and
        the address to copy into (by default numpy arrays, copies or views as the loader's
        copy option says)."""
        if column is numpy_column:
            return self._numpy_batch(ctypes.cast(bp, ctypes.c_void_p).value)
        b = bp.contents
        n = b.rows
        rows, addr = column(np.dtype(np.uint64), (n,))
        ctypes.memmove(addr, b.row_ids, 8 * n) if n else None
        out = {"_rows": rows}
        for i, (name, at) in enumerate(zip(self.attrs, self._cols)):
            col = b.cols[i]
            if at.text:
                vals = np.empty(col.bytes, dtype=np.uint8)
                offs = np.ctypeslib.as_array(col.offsets, (n + 1,)).copy()
                if col.bytes:
                    ctypes.memmove(vals.ctypes.data, col.data, col.bytes)
                out[name] = _dtypes.decode_text(vals, offs, f"{self.dataset}: {name}")
                continue
            if at.ragged:
                items = col.bytes // at.item_bytes if at.item_bytes else 0
                vals, va = column(at.dtype, (items,) + at.shape)
                offs, oa = column(np.dtype(np.uint64), (n + 1,))
                ctypes.memmove(oa, col.offsets, 8 * (n + 1))
                out[name] = (vals, offs)
            else:
                vals, va = column(at.dtype, (n,) + at.shape)
            if col.bytes:
                ctypes.memmove(va, col.data, col.bytes)
            if not at.ragged:
                out[name] = vals
        return out

    def batches(self, column=numpy_column):
        """The rest of this epoch's batches, each made with `column` (see convert)."""
        lib, bp, err = _lib.lib(), ctypes.POINTER(_abi._Batch)(), _abi._Error()
        pbp, perr = ctypes.byref(bp), ctypes.byref(err)
        addr = ctypes.c_size_t.from_address(ctypes.addressof(bp))  # bp's value as an int
        numpy = column is numpy_column
        # Own arrays with no copy: each batch held in the window it lies in, until its
        # arrays go (mt_loader_next_held).  A copy (gathered straight into new arrays)
        # read the window back from memory on the consumer's thread, which, in the last
        # window of an epoch, nothing else overlaps.
        held = numpy and self._views.copy
        ids = (ctypes.c_uint64 * max(len(self._layout), 1))()
        nxt, nxt_held = lib.mt_loader_next, lib.mt_loader_next_held
        while True:
            if held:
                rc = nxt_held(self._handle(), pbp, ids, _HOLD_MIN, perr)
            else:
                rc = nxt(self._handle(), pbp, perr)
            if rc:
                _lib.check(rc, err)
            if not bp:
                return
            if not numpy:
                yield self.convert(bp, column)
            else:
                yield self._numpy_batch(addr.value, ids[:] if held else None)

    def __iter__(self):
        return self.batches()

    def __len__(self):
        """Batches this rank gets in the current epoch."""
        return int(_lib.lib().mt_loader_batches(self._handle()))

    def set_epoch(self, epoch):
        """Start epoch `epoch` from its beginning."""
        _lib.call("mt_loader_set_epoch", self._handle(), _check_int("epoch", epoch, 0))

    def state(self):
        """The resume token: pass it as resume= to carry on from the next batch."""
        lib, h = _lib.lib(), self._handle()
        n = lib.mt_loader_state(h, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.mt_loader_state(h, buf, n + 1)
        return buf.value.decode()

    def read_rows(self, rows, column=numpy_column):
        """Rows by global number, in the given order, as one batch dict."""
        rows = np.ascontiguousarray(rows, dtype=np.uint64).reshape(-1)
        if len(rows) and int(rows.max()) >= self.rows:
            raise _lib.error_from(-12, f"{self.dataset}@{self.version}: row {int(rows.max())} "
                                  f"is past its {self.rows} rows")
        bp = ctypes.POINTER(_abi._Batch)()
        _lib.call("mt_loader_read_rows", self._handle(),
                  rows.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), len(rows),
                  ctypes.byref(bp))
        return self.convert(bp, column)

    def stats(self):
        """Chunks (and chunk indexes) rebuilt from parity so far, and the bytes read for
        them: a protected version's damaged shards heal with the batches unchanged."""
        st = _abi._ReadStats()
        st.size = ctypes.sizeof(st)
        _lib.lib().mt_loader_stats(self._handle(), ctypes.byref(st))
        return {name: int(getattr(st, name)) for name, _ in _abi._ReadStats._fields_[1:]}

    def cache_stats(self):
        """The chunk cache this loader reads through: the process's (chunk_cache_stats), or
        with in_memory=True its own decoded chunks (none held when the version's decoded rows
        did not fit in cache_bytes: the compressed shards are kept instead)."""
        st = _abi._CacheStats()
        st.size = ctypes.sizeof(st)
        _lib.lib().mt_loader_cache_stats(self._handle(), ctypes.byref(st))
        return {name: int(getattr(st, name)) for name, _ in _abi._CacheStats._fields_[1:]}

    def close(self):
        """Stop the loader's threads and free it (and the store it opened from a URL).
        In a process forked from the one that opened it, the loader is only let go:
        its threads are not there, and its locks may be as they were mid-work at the
        fork, so stopping them would hang or crash the child (its own are opened anew)."""
        h, self._h = getattr(self, "_h", None), None
        views = getattr(self, "_views", None)
        if views is not None:
            views.slots.clear()  # views of buffers about to be freed
        s, self._store = getattr(self, "_store", None), None
        if getattr(self, "_pid", None) not in (None, os.getpid()):
            return
        if h:
            _lib.lib().mt_loader_close(h)
        if s is not None:
            s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
