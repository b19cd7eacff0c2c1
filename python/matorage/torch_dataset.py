"""TorchDataset (an IterableDataset of batches) and TorchMapDataset (rows by index) for torch.

How the rows are shared.  The rank and world size are settled in the process that builds
the dataset (see _rank_world), never in a DataLoader worker.  With K workers, worker j of
rank r opens the loader as rank r*K + sub of world*K, where sub is j rotated by the resume
position (below): the ranks and workers together take every row of an epoch once (plus at
most world*K - 1 repeats when the rows do not divide evenly, doc/loader.md "Ranks").  All
of them get the same number of batches, and DataLoader takes batches from its workers in
turn, so the rank's stream is the round robin of its K sub-ranks: after N batches,
sub-rank s has delivered N // K batches, plus one when s < N % K.

State.  The epoch, the resume position and the resume token live in shared memory made at
construction, so set_epoch and load_state_dict reach persistent workers: each worker reads
them when an epoch's iteration starts.  state_dict() is the token at the start of the
epoch's current stage plus N, the batches this rank has consumed: counted by the
DataLoader from dataloader(), by __iter__ without workers, or given as state_dict(N).
"""
import ctypes
import inspect
import multiprocessing
import os

import numpy as np
import torch
import torch.utils.data as tud

from . import loader as _loader
from .errors import InvalidArgument
from .loader import Loader
from .reader import Reader
from .store import Store

TOKEN_BYTES = 4096

# Unsigned types torch lacks, widened to a signed type that holds every value; uint64
# (row numbers, below 2**63 in practice) is taken as int64, the same bits, no copy.
_WIDEN = {"uint16": np.int32, "uint32": np.int64}


def _env_int(name):
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise InvalidArgument(f"${name}={v!r} is not an integer") from None


def _no_views(cls, opts):
    """Refuse Loader's copy option: a torch batch (or row) outlives the loader's next call
    (DataLoader collates rows, and sends a worker's batches to the main process later, from
    another thread), so it must be a copy of its own, never a view of the loader's buffer."""
    if "copy" in opts:
        raise InvalidArgument(f"{cls}: copy is not an option here: its tensors are always "
                              "copies, as they outlive the loader's next batch")


def _rank_world(rank, world):
    """This process's (rank, world): explicit arguments, else torch.distributed when it is
    initialised, else $RANK and $WORLD_SIZE, else (0, 1).  Half a setup is refused."""
    if (rank is None) != (world is None):
        raise InvalidArgument("give both rank and world, or neither")
    if rank is None:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
        else:
            rank, world = _env_int("RANK"), _env_int("WORLD_SIZE")
            if rank is None and world not in (None, 1):
                raise InvalidArgument(f"$WORLD_SIZE is {world} but $RANK is not set (and "
                                      "torch.distributed is not initialised): which rank is "
                                      "this? pass rank= and world=")
            if world is None and rank not in (None, 0):
                raise InvalidArgument(f"$RANK is {rank} but $WORLD_SIZE is not set")
            rank, world = rank or 0, world or 1
    world = _loader._check_int("world", world, 1)
    rank = _loader._check_int("rank", rank, 0)
    if rank >= world:
        raise InvalidArgument(f"rank {rank} is not below the world size {world}")
    return rank, world


def _tensors(x):
    """A batch's numpy arrays as tensors sharing their memory (types torch lacks widened)."""
    if isinstance(x, tuple):
        return tuple(_tensors(v) for v in x)
    if isinstance(x, np.ndarray):
        if x.dtype == np.uint64:
            return torch.from_numpy(x.view(np.int64))
        return torch.from_numpy(x.astype(_WIDEN.get(x.dtype.name, x.dtype), copy=False))
    return x


class _Shared:
    """What the parent sets and workers read at each epoch's start (shared memory)."""

    def __init__(self, epoch):
        self.epoch = multiprocessing.RawValue(ctypes.c_int64, epoch)
        self.resume_batches = multiprocessing.RawValue(ctypes.c_int64, -1)
        self.resume_workers = multiprocessing.RawValue(ctypes.c_int64, 0)
        self.resume_token = multiprocessing.RawArray(ctypes.c_char, TOKEN_BYTES)
        self.base_token = multiprocessing.RawArray(ctypes.c_char, TOKEN_BYTES)
        self.workers = multiprocessing.RawValue(ctypes.c_int64, 0)


class TorchDataset(tud.IterableDataset):
    """Batches of a dataset version as dicts of torch tensors, for a DataLoader.

    TorchDataset(store, "dataset[@version]", rank=None, world=None, transform=None,
    as_tuple=None, **loader_opts): store is a Store or a URL (workers open their own from its URL);
    loader_opts are Loader's (attrs, batch_rows, shuffle, seed, epoch, drop_last,
    shuffle_rows, prefetch_bytes, cache_dir, ...).  The version is pinned when the
    dataset is made.  rank/world: see _rank_world.  transform(batch) -> batch runs in
    the workers.  as_tuple (e.g. ("image", "label")): each batch is a tuple of those values,
    in that order, rather than a dict (after transform, so it may name keys transform
    makes; "_rows" is the rows' numbers).  num_workers: the DataLoader's, for len() before
    the first epoch when the DataLoader is not made by dataloader().

    Batches are made by the loader (batch_rows rows each): use dataloader(**kw), or
    DataLoader(ds, batch_size=None, ...).  A DataLoader batch_size would stack batch_size
    whole batches into one, which is rarely meant; dataloader() refuses it.

    set_epoch(e) before each epoch (it reaches persistent workers); state_dict() and
    load_state_dict() resume mid-epoch (see load_state_dict for which setups may); len()
    is the rank's batches in an epoch.  Each value is copied once from the loader, into an array
    the tensor shares (in a worker, DataLoader then moves it to shared memory).
    """

    def __init__(self, store, dataset, version=None, rank=None, world=None, transform=None,
                 num_workers=None, as_tuple=None, **opts):
        super().__init__()
        self.store_url = store.url if isinstance(store, Store) else store
        self.store_options = store.options if isinstance(store, Store) else {}
        if self.store_url is not None and not isinstance(self.store_url, str):
            raise InvalidArgument(f"store is a Store or a URL, not {type(store).__name__}")
        name, version = _loader._lib.split_name(dataset, version)
        _no_views("TorchDataset", opts)
        known = set(inspect.signature(Loader.__init__).parameters) - {
            "self", "store", "dataset", "version", "rank", "world"}
        bad = sorted(set(opts) - known)
        if bad:
            raise InvalidArgument(f"TorchDataset: unknown option(s) {', '.join(bad)}")
        self.rank, self.world = _rank_world(rank, world)
        self.batch_rows = _loader._check_int("batch_rows", opts.get("batch_rows", 32), 1)
        if isinstance(opts.get("attrs"), (str, bytes)):
            raise InvalidArgument(f"attrs is a list of attribute names; for one, "
                                  f"[{opts['attrs']!r}]")
        epoch = _loader._check_int("epoch", opts.pop("epoch", 0), 0)
        resume = opts.pop("resume", None)
        with Reader(store, name, version) as r:
            self.dataset, self.version, self.rows = name, r.version, r.rows
            for a in opts.get("attrs") or ():
                if a not in r.attributes:
                    raise _loader._lib.error_from(-4, f"{name}@{r.version}: no attribute {a!r}")
            names = list(opts.get("attrs") or r.attributes) + ["_rows"]
        self.as_tuple = _check_tuple("TorchDataset", as_tuple, names, transform)
        if resume is not None:
            _loader._check_resume(resume, opts.get("shuffle"), opts.get("seed"),
                                  opts.get("shuffle_rows"))
        self.opts, self.transform, self.resume = opts, transform, resume
        self.num_workers = num_workers
        self._shared = _Shared(epoch)
        self._consumed = 0
        self._resumed = 0
        self._left_rows = None  # rows left in the epoch after a resumed state, for len()
        self._loaded = None     # the state loaded for this epoch
        self._kept = None       # (key, store, loader) an iteration left for the next epoch

    # ---- the parent's side ----------------------------------------------------------

    @property
    def epoch(self):
        return int(self._shared.epoch.value)

    def set_epoch(self, epoch):
        """Start epoch `epoch` at the next iteration (workers, persistent or not, read it
        then); forgets a state loaded for the previous one."""
        self._shared.epoch.value = _loader._check_int("epoch", epoch, 0)
        self._shared.resume_batches.value = -1
        self._shared.base_token.value = b""
        self._consumed = self._resumed = 0
        self._left_rows = self._loaded = None

    def _workers(self):
        k = self.num_workers or self._shared.workers.value
        return max(int(k), 1)

    def __len__(self):
        """Batches this rank gets in an epoch (less those before a loaded state)."""
        rows = self.rows if self._left_rows is None else self._left_rows
        subs = self.world * self._workers()
        if self.opts.get("drop_last"):
            per_sub = rows // (subs * self.batch_rows)
        else:
            per_sub = -(-(-(-rows // subs)) // self.batch_rows)
        return per_sub * self._workers() - self._resumed

    def state_dict(self, batches=None):
        """Where this rank is in the epoch: pass it to load_state_dict to carry on there.

        batches: the batches consumed this epoch, when the DataLoader is not one from
        dataloader() (which counts them)."""
        n = self._resumed + self._consumed if batches is None else int(batches)
        rotated = self._shared.resume_batches.value > 0
        token = (self._shared.resume_token.value if rotated
                 else self._shared.base_token.value).decode()
        if not token and self._loaded is not None and batches is None:
            return dict(self._loaded)  # loaded, not started yet: still there
        return {"format": 1, "dataset": self.dataset, "version": self.version,
                "epoch": self.epoch, "batches": n if token else 0, "token": token or None,
                "world": self.world, "workers": self._workers()}

    def load_state_dict(self, state):
        """Carry on from state_dict()'s position at the next iteration: the batches not yet
        consumed.  When every worker had delivered as many batches (consumed batches a
        multiple of the workers), any world and number of workers may resume (the loader
        shares the rest among them); otherwise the same world and workers must, and get
        the rest in the same order."""
        if not isinstance(state, dict) or state.get("format") != 1:
            raise InvalidArgument("not a TorchDataset state_dict")
        if (state["dataset"], state["version"]) != (self.dataset, self.version):
            raise InvalidArgument(f"the state is for {state['dataset']}@{state['version']}, "
                                  f"this dataset is {self.dataset}@{self.version}")
        n, k = state["batches"], state["workers"]
        if n % k and state["world"] != self.world:
            raise InvalidArgument(f"the state was taken with world {state['world']} between "
                                  f"two workers' batches; this run has world {self.world}")
        self.set_epoch(state["epoch"])
        if not state["token"] or not n:
            return
        tok = state["token"]
        if len(tok) >= TOKEN_BYTES:
            raise InvalidArgument("the state's token is too long")
        t = _loader.parse_token(tok)
        t["stages"][-1] = t["stages"][-1][:3] + (-(-n // k),)
        _loader.check_token_progress(t)
        self._loaded = dict(state)
        if n % k == 0:
            # Every sub-rank at the same step: a plain token, which the loader shares
            # among any world; its own start is the base of later states.
            self._shared.resume_token.value = _loader.token_with_taken(tok, n // k).encode()
            self._shared.resume_workers.value = -1
            self._shared.resume_batches.value = 0
            w, b, d, _ = t["stages"][-1]
            per = -(-_left_before(t) // w) if not d else (_left_before(t) // (w * b)) * b
            self._left_rows = max(0, _left_before(t) - w * min(per, (n // k) * b))
            return
        self._shared.resume_token.value = tok.encode()
        self._shared.resume_workers.value = k
        self._shared.resume_batches.value = n
        self._resumed, self._consumed = n, 0

    def dataloader(self, batch_size=None, **kw):
        """A torch DataLoader over this dataset that counts the batches consumed (for
        state_dict).  batch_size must stay None: batch_rows sizes the batches."""
        if batch_size is not None:
            raise InvalidArgument("batch_size: batches are made by the loader (batch_rows="
                                  f"{self.batch_rows}); leave DataLoader's batch_size None")
        self.num_workers = kw.get("num_workers", 0)
        return _CountingLoader(self, batch_size=None, **kw)

    # ---- the workers' side ----------------------------------------------------------

    def _plan(self):
        """(loader rank, loader world, resume token, batches to skip, resuming a state)."""
        w = tud.get_worker_info()
        k, j = (w.num_workers, w.id) if w is not None else (1, 0)
        sh = self._shared
        sh.workers.value = k
        n = sh.resume_batches.value
        if n < 0:
            return self.rank * k + j, self.world * k, self.resume, 0, False
        if sh.resume_workers.value < 0:
            return self.rank * k + j, self.world * k, sh.resume_token.value.decode(), 0, False
        if sh.resume_workers.value != k:
            raise InvalidArgument(f"the state was taken with {sh.resume_workers.value} "
                                  f"DataLoader workers; this DataLoader has {k}")
        off = n % k
        sub = (j + off) % k
        token = _loader.token_with_taken(sh.resume_token.value.decode(), n // k)
        return self.rank * k + sub, self.world * k, token, int(sub < off), True

    def _open(self, rank, world, token, resuming):
        """The store and loader for this epoch: the ones the last epoch in this process left
        (moved on with set_epoch, so the loader has read ahead into this epoch, as a
        persistent worker's does from its third epoch), else new ones."""
        key = (rank, world, os.getpid())
        kept, self._kept = self._kept, None
        if kept is not None and (kept[0] != key or token is not None or resuming):
            _close_kept(kept)
            kept = None
        if kept is not None:
            try:
                kept[2].set_epoch(self.epoch)
            except BaseException:
                _close_kept(kept)
                raise
            return key, kept[1], kept[2]
        opts = dict(self.opts)
        if resuming:
            for k in ("shuffle", "seed", "shuffle_rows"):
                opts.pop(k, None)
        store = Store(self.store_url, create=False, **self.store_options)
        try:
            loader = Loader(store, self.dataset, self.version, rank=rank, world=world,
                            epoch=self.epoch, resume=token, **opts)
        except BaseException:
            store.close()
            raise
        return key, store, loader

    def __iter__(self):
        rank, world, token, skip, resuming = self._plan()
        in_worker = tud.get_worker_info() is not None
        key, store, loader = self._open(rank, world, token, resuming)
        keep = False
        try:
            if not resuming:
                # The same on every worker and rank: the epoch's stage, nothing taken yet.
                self._shared.base_token.value = loader.state().encode()
            for i, batch in enumerate(loader.batches()):
                if i < skip:
                    continue
                batch = {k: _tensors(v) for k, v in batch.items()}
                if self.transform is not None:
                    batch = self.transform(batch)
                if self.as_tuple is not None:
                    batch = tuple(batch[k] for k in self.as_tuple)
                if not in_worker:
                    self._consumed += 1
                yield batch
            keep = True
        except GeneratorExit:
            keep = True  # left midway: set_epoch starts the next iteration over
            raise
        finally:
            if keep and self._kept is None:
                self._kept = (key, store, loader)
            else:
                _close_kept((key, store, loader))

    def close(self):
        """Close the loader an iteration left open for the next epoch (also done when the
        dataset is collected)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            _close_kept(kept)

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_kept"] = None  # a worker opens its own
        return d


def _close_kept(kept):
    """Close a kept (key, store, loader); in a forked child both only let go."""
    kept[2].close()
    kept[1].close()


def _left_before(t):
    """Rows still to deliver when token t's last stage began."""
    live = t["rows"]
    for world, brows, drop, taken in t["stages"][:-1]:
        if drop:
            per = (live // (world * brows)) * brows
        else:
            per = -(-live // world)
        done = min(taken * brows, per)
        live = sum(max(0, min((r + 1) * per, live) - (r * per + done)) for r in range(world))
    return live


class _CountingLoader(tud.DataLoader):
    """A DataLoader that tells its TorchDataset how many batches were consumed."""

    def __iter__(self):
        ds = self.dataset
        ds._consumed = 0  # each pass starts at the epoch's start, or at the loaded state
        counting = self.num_workers > 0
        for batch in super().__iter__():
            if counting:
                ds._consumed += 1
            yield batch


def _check_tuple(cls, as_tuple, names, transform):
    """as_tuple as a tuple of names; InvalidArgument when it is not one, or (without a
    transform, which may make keys of its own) names something a row or batch lacks."""
    if as_tuple is None:
        return None
    if isinstance(as_tuple, (str, bytes)) or not all(isinstance(k, str) for k in as_tuple):
        raise InvalidArgument(f"{cls}: as_tuple is a sequence of attribute names, such as "
                              f"('image', 'label'), not {as_tuple!r}")
    as_tuple = tuple(as_tuple)
    if not as_tuple:
        raise InvalidArgument(f"{cls}: as_tuple names no attribute")
    missing = [k for k in as_tuple if k not in names]
    if missing and transform is None:
        raise InvalidArgument(f"{cls}: as_tuple names {', '.join(missing)}, which the rows do "
                              f"not have (they have {', '.join(names)})")
    return as_tuple


def _attr_bytes(r, attrs):
    """The bytes attrs take decoded in memory (ragged ones: the version's own count of its
    uncompressed bytes, an upper bound)."""
    total = 0
    for a in attrs:
        at = r.attributes[a]
        if at.ragged:
            return int(r.info["raw_bytes"])
        total += r.rows * at.item_bytes
    return total


class TorchMapDataset(tud.Dataset):
    """Rows by index, as dicts of tensors (or tuples, with as_tuple): a map-style Dataset for
    samplers that pick rows (DataLoader(ds, batch_size=B, sampler=...)).

    TorchMapDataset(store, "dataset[@version]", attrs=None, transform=None, as_tuple=None,
    in_memory=False, cache_bytes=0, **loader_opts).  A row maps each attribute to a tensor
    of its row shape (a ragged one: its items) and "_rows" to its row number; as_tuple
    (e.g. ("image", "label")) makes it a tuple of those, in that order, so a batch is too.
    transform(row) -> row runs before as_tuple picks the values.

    Rows are read through Loader.read_rows: a DataLoader batch is one call (torch's
    __getitems__), its rows gathered chunk by chunk, and the decoded chunks are kept in the
    process's chunk cache (matorage.set_chunk_cache; 256 MiB by default, each DataLoader
    worker its own), so once a chunk has been used its rows cost a copy, not a decode.
    in_memory=True reads the attributes whole into tensors when they are opened, when their
    decoded bytes fit in cache_bytes (0: 10 GiB): rows are then indexed as from in-memory
    tensors (workers forked later share them).  When they do not fit, the rows are read as
    above through a loader opened with in_memory=True (the compressed shards held, as many
    as fit in cache_bytes: see doc/loader.md).  Each worker opens its own loader on first
    use."""

    def __init__(self, store, dataset, version=None, attrs=None, transform=None, as_tuple=None,
                 in_memory=False, cache_bytes=0, **opts):
        self.store_url = store.url if isinstance(store, Store) else store
        name, version = _loader._lib.split_name(dataset, version)
        _no_views("TorchMapDataset", opts)
        if isinstance(attrs, (str, bytes)):
            raise InvalidArgument(f"attrs is a list of attribute names; for one, [{attrs!r}]")
        self.attrs, self.transform, self.opts = attrs, transform, opts
        self._loader, self._pid, self._cols = None, None, None
        with Reader(store, name, version) as r:
            self.dataset, self.version, self.rows = name, r.version, r.rows
            names = list(attrs) if attrs is not None else list(r.attributes)
            for a in names:
                if a not in r.attributes:
                    raise _loader._lib.error_from(-4, f"{name}@{r.version}: no attribute {a!r}")
            self.as_tuple = _check_tuple("TorchMapDataset", as_tuple, names + ["_rows"],
                                         transform)
            cap = _loader._check_int("cache_bytes", cache_bytes, 0) or 10 << 30
            if in_memory and _attr_bytes(r, names) <= cap:
                self._cols = self._read_whole(r, names)
            elif in_memory:
                self.opts = dict(opts, in_memory=True, cache_bytes=cache_bytes)

    @staticmethod
    def _read_whole(r, names):
        """Each attribute read whole, as tensors: (tensor, None) or for a ragged one
        (values tensor, offsets array); "_rows" the row numbers."""
        cols = {}
        for a in names:
            v = r.read(a)
            cols[a] = (_tensors(v[0]), v[1]) if isinstance(v, tuple) else (_tensors(v), None)
            # text stays a list of str (_tensors leaves lists as they are)
        cols["_rows"] = (torch.arange(r.rows, dtype=torch.int64), None)
        return cols

    def __len__(self):
        return self.rows

    def _finish(self, row):
        if self.transform is not None:
            row = self.transform(row)
        return row if self.as_tuple is None else tuple(row[k] for k in self.as_tuple)

    def _rows_of(self, cols, n):
        """The n rows of a batch, cols mapping each name to a tensor of n rows or, ragged,
        to (values tensor, offsets array): each fixed-size column split into its rows at once
        (unbind), rather than indexed row by row."""
        if self.as_tuple is not None and self.transform is None and all(
                not isinstance(cols[k], (tuple, list)) for k in self.as_tuple):
            return list(zip(*[cols[k].unbind(0) for k in self.as_tuple]))
        keys, per = list(cols), []
        for k in keys:
            v = cols[k]
            if isinstance(v, tuple):
                vals, offs = v
                per.append([vals[int(offs[j]):int(offs[j + 1])] for j in range(n)])
            elif isinstance(v, list):  # text: a str per row
                per.append(v)
            else:
                per.append(v.unbind(0))
        return [self._finish(dict(zip(keys, row))) for row in zip(*per)]

    def _held(self, indices):
        """Rows of the tensors held (in_memory): each column gathered with one index."""
        idx = torch.as_tensor(indices, dtype=torch.int64).reshape(-1)
        want = self._cols
        if self.as_tuple is not None and self.transform is None:
            want = {k: self._cols[k] for k in self.as_tuple}
        cols = {}
        for k, (t, offs) in want.items():
            if isinstance(t, list):  # text: a str per row
                cols[k] = [t[int(j)] for j in idx]  # IndexError past the end, as for tensors
                continue
            if offs is None:
                cols[k] = t[idx]  # IndexError past the end; negative indexes count from it
                continue
            j = np.asarray(idx)
            if len(j) and (j.max() >= self.rows or j.min() < -self.rows):
                raise IndexError(f"row {int(j.max() if j.max() >= self.rows else j.min())} "
                                 f"of {self.rows}")
            j = np.where(j < 0, j + self.rows, j)
            lo, hi = offs[j].astype(np.int64), offs[j + 1].astype(np.int64)
            sub = np.zeros(len(j) + 1, dtype=np.int64)
            np.cumsum(hi - lo, out=sub[1:])
            take = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)] or [[]]).astype(
                np.int64)
            cols[k] = (t[torch.from_numpy(take)], sub)
        return self._rows_of(cols, len(idx))

    def __getitem__(self, i):
        return self.__getitems__([i])[0]

    def __getitems__(self, indices):
        """The rows of a DataLoader batch, in one read (torch calls it with the sampler's
        indices for the batch): a list of rows, as many __getitem__ calls would give."""
        if self._cols is not None:
            return self._held(indices)
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        if len(rows) and (rows.max() >= self.rows or rows.min() < -self.rows):
            bad = int(rows.max()) if rows.max() >= self.rows else int(rows.min())
            raise IndexError(f"row {bad} of {self.rows}")
        rows = np.where(rows < 0, rows + self.rows, rows)
        if self._loader is None or self._pid != os.getpid():
            self._loader = Loader(self.store_url, self.dataset, self.version, attrs=self.attrs,
                                  batch_rows=1, prefetch_bytes=1 << 20, defer_windows=True,
                                  **self.opts)
            self._pid = os.getpid()
        b = self._loader.read_rows(rows)
        cols = {k: _tensors(v) if not isinstance(v, tuple) else (_tensors(v[0]), v[1])
                for k, v in b.items()}
        return self._rows_of(cols, len(rows))

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_loader"], d["_pid"] = None, None
        return d
