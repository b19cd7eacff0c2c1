"""Mix: the batches of several Loaders in one stream, drawn by weight (mt_mix_*, doc/loader.md)."""
import ctypes
import math

from . import _abi, _lib
from .errors import InvalidArgument
from .loader import Loader


class Mix:
    """Batches drawn from several loaders by weight.

    Mix([loader_a, loader_b], weights=[3, 1], seed=0, resume=None): each batch comes whole
    from one loader, drawn with probability proportional to its weight among the loaders
    with batches left this epoch (from seed, the epoch and the batch number: the same on
    every run).  The epoch ends when every loader's has, each of their rows delivered
    once.  A batch is its loader's batch dict with "_source", the loader's index, added.

    The loaders stay the caller's (close them after the mix) and are used only through the
    mix while it is open.  To resume: state() gives {"mix": token, "loaders": [token, ...]};
    open each loader with resume=its token, then Mix(..., resume=state["mix"]).
    """

    def __init__(self, loaders, weights=None, seed=0, resume=None):
        self._h = None
        self.loaders = list(loaders)
        if not self.loaders or not all(isinstance(x, Loader) for x in self.loaders):
            raise InvalidArgument("Mix: loaders is a non-empty list of matorage.Loader")
        if len(set(map(id, self.loaders))) != len(self.loaders):
            raise InvalidArgument("Mix: a loader is given twice")
        weights = [1.0] * len(self.loaders) if weights is None else list(weights)
        if len(weights) != len(self.loaders):
            raise InvalidArgument(f"Mix: {len(weights)} weights for {len(self.loaders)} loaders")
        for w in weights:
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) \
                    or w <= 0:
                raise InvalidArgument(f"Mix: a weight is a finite number > 0, not {w!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidArgument(f"Mix: seed is an integer >= 0, not {seed!r}")
        n = len(self.loaders)
        hs = (ctypes.c_void_p * n)(*[x._handle().value for x in self.loaders])
        ws = (ctypes.c_double * n)(*[float(w) for w in weights])
        h = ctypes.c_void_p()
        _lib.call("mt_mix_open", hs, ws, n, seed, ctypes.byref(h))
        self._h = h
        if resume is not None:
            if not isinstance(resume, str):
                self.close()
                raise InvalidArgument(f"Mix: resume is the \"mix\" token of state(), not "
                                      f"{type(resume).__name__}")
            try:
                _lib.call("mt_mix_resume", h, resume.encode())
            except Exception:
                self.close()
                raise

    def _handle(self):
        if not self._h:
            raise _lib.error_from(-13, "the mix is closed")
        return self._h

    def __iter__(self):
        """The rest of this epoch's batches."""
        lib, bp, err = _lib.lib(), ctypes.POINTER(_abi._Batch)(), _abi._Error()
        src = ctypes.c_size_t()
        while True:
            rc = lib.mt_mix_next(self._handle(), ctypes.byref(bp), ctypes.byref(src),
                                 ctypes.byref(err))
            _lib.check(rc, err)
            if not bp:
                return
            batch = self.loaders[src.value].convert(bp)
            batch["_source"] = src.value
            yield batch

    def __len__(self):
        """Batches of the current epoch, all loaders together."""
        return sum(len(x) for x in self.loaders)

    def set_epoch(self, epoch):
        """Every loader, and the draws, to epoch `epoch`."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise InvalidArgument(f"Mix: epoch is an integer >= 0, not {epoch!r}")
        _lib.call("mt_mix_set_epoch", self._handle(), epoch)

    def state(self):
        """{"mix": where the draws are, "loaders": each loader's resume token}."""
        lib, h = _lib.lib(), self._handle()
        n = lib.mt_mix_state(h, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.mt_mix_state(h, buf, n + 1)
        return {"mix": buf.value.decode(), "loaders": [x.state() for x in self.loaders]}

    def close(self):
        """Free the mix (the loaders stay open: they are the caller's)."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.lib().mt_mix_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
