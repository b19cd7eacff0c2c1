"""Checkpoints of models: nested training state saved as content-addressed tensors.

    import matorage
    v = matorage.save_checkpoint(store, "resnet", {"model": model.state_dict(),
                                                    "optim": opt.state_dict(),
                                                    "rng": torch.get_rng_state()},
                                 step=1200, metadata={"metrics": {"loss": 0.31}})
    state = matorage.load_checkpoint(store, "resnet")          # or "resnet@v3"
    model.load_state_dict(state["model"]); opt.load_state_dict(state["optim"])

A state is any nesting of dicts, lists and tuples whose leaves are tensors (torch or
numpy), numbers, strings, bytes, booleans and None.  Each tensor becomes one object of the
store named by the sha256 of its bytes, so a tensor unchanged since an earlier checkpoint
is stored once; the structure goes into the checkpoint's manifest as JSON, tensors named
there by their flattened keys ("optim.state.0.exp_avg").  A checkpoint exists once its
manifest is written, last (doc/FORMAT.md, "Models").

Each tensor comes back as the type it was saved as: numpy stays numpy, torch stays torch,
with its dtype.  The keys of the numpy arrays are listed in the checkpoint's metadata under
"numpy_tensors" (checkpoints without it, older ones and those written from C or imported,
load their tensors as torch when torch can be imported).  Where torch has no such dtype
(uint16, uint32 and uint64 in torch before 2.3) a torch tensor comes back as numpy.

save_checkpoint(..., wait=False) returns once every tensor is copied to host memory and
uploads in a background thread: the returned handle's wait() gives "name@vN" or raises.
"""
import ctypes
import json
import math
import threading

import numpy as np

from . import _abi, _lib
from ._dtypes import BFLOAT16, BY_CODE, code_of
from .errors import InvalidArgument, NotFound
from .store import _Borrowed, _strv

# JSON tags for what JSON itself cannot say; a dict whose keys are all strings and none
# starts with "__" is stored as itself.
_TENSOR, _TUPLE, _DICT, _FLOAT, _BYTES, _TORCH = ("__tensor__", "__tuple__", "__dict__",
                                                  "__float__", "__bytes__", "__torch__")
# The metadata member listing the keys of the tensors saved as numpy arrays: kept beside
# the state, not in it, so that a reader that predates it still reads the state.
NUMPY_KEYS = "numpy_tensors"


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


class _Flat:
    """A state taken apart: the JSON structure, and the tensors by flattened key."""

    def __init__(self, copy):
        self.tensors = {}          # key -> (numpy array, mt_dtype code)
        self.numpy_keys = []       # the keys of the tensors given as numpy arrays
        self.copy = copy           # copy arrays (an async save must not see later changes)
        self.torch = _torch()

    def key(self, path):
        key = ".".join(path) if path else "_"
        if key in self.tensors:
            raise InvalidArgument(f"state: two tensors flatten to the key {key!r}; "
                                  "rename one of them")
        return key

    def tensor(self, path, value, is_torch):
        where = ".".join(path) or "(the state itself)"
        code = None
        if is_torch:
            if value.is_sparse or getattr(value, "is_quantized", False):
                raise InvalidArgument(f"state: {where}: sparse and quantized tensors are not "
                                      "supported")
            value = value.detach().cpu().contiguous()
            if value.dtype == self.torch.bfloat16:
                # numpy has no bfloat16: its bits travel as int16, stored as bfloat16.
                value, code = value.view(self.torch.int16), BFLOAT16
            arr = value.numpy()
        else:
            arr = value
        code = code or code_of(arr.dtype, f"state: {where}")
        # Little-endian and C order; np.ascontiguousarray would make a 0-d array 1-d.
        arr = arr.astype(arr.dtype.newbyteorder("<"), order="C", copy=self.copy)
        key = self.key(path)
        self.tensors[key] = (arr, code)
        if not is_torch:
            self.numpy_keys.append(key)
        return {_TENSOR: key}

    def walk(self, value, path):
        t = self.torch
        if t is not None and isinstance(value, t.Tensor):
            return self.tensor(path, value, True)
        if isinstance(value, np.ndarray):
            return self.tensor(path, value, False)
        if isinstance(value, np.generic):
            value = value.item()
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {_FLOAT: repr(value)}
        if isinstance(value, (bytes, bytearray)):
            return {_BYTES: bytes(value).hex()}
        if t is not None and isinstance(value, (t.dtype, t.device)):
            return {_TORCH: str(value)}
        if isinstance(value, dict):
            return self.walk_dict(value, path)
        if isinstance(value, (list, tuple)):
            items = [self.walk(v, path + [str(i)]) for i, v in enumerate(value)]
            return {_TUPLE: items} if isinstance(value, tuple) else items
        raise InvalidArgument(f"state: {'.'.join(path) or '(the state itself)'}: "
                              f"a {type(value).__name__} cannot be saved (tensors, numbers, "
                              "strings, bytes, None, and dicts, lists and tuples of them)")

    def walk_dict(self, value, path):
        plain = all(isinstance(k, str) and not k.startswith("__") for k in value)
        if plain:
            return {k: self.walk(v, path + [k]) for k, v in value.items()}
        items = []
        for k, v in value.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise InvalidArgument(f"state: {'.'.join(path) or '(the state itself)'}: "
                                      f"a key of type {type(k).__name__} cannot be saved")
            items.append([k, self.walk(v, path + [str(k)])])
        return {_DICT: items}


def _unflatten(value, tensors):
    if isinstance(value, list):
        return [_unflatten(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, inner), = value.items()
        if tag == _TENSOR:
            return tensors(inner)
        if tag == _TUPLE:
            return tuple(_unflatten(v, tensors) for v in inner)
        if tag == _DICT:
            return {k: _unflatten(v, tensors) for k, v in inner}
        if tag == _FLOAT:
            return float(inner)
        if tag == _BYTES:
            return bytes.fromhex(inner)
        if tag == _TORCH:
            return _torch_thing(inner)
    return {k: _unflatten(v, tensors) for k, v in value.items()}


def _torch_thing(text):
    t = _torch()
    if t is None:
        return text
    if text.startswith("torch."):
        return getattr(t, text[len("torch."):])
    return t.device(text)


def _meta(step, metadata, numpy_keys):
    meta = dict(metadata or {})
    if NUMPY_KEYS in meta:
        raise InvalidArgument(f"save_checkpoint: metadata: {NUMPY_KEYS!r} is kept for the "
                              "keys of the numpy tensors; name yours otherwise")
    if numpy_keys:
        meta[NUMPY_KEYS] = numpy_keys
    if step is not None:
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise InvalidArgument(f"save_checkpoint: step is an integer >= 0, not {step!r}")
        meta["step"] = step
    try:
        return json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"save_checkpoint: metadata: {e}") from None


def _write(store, name, flat, state_json, meta_json, keep, level):
    """The C writer's calls: add each tensor, the state, the metadata, commit."""
    lib = _lib.lib()
    o = _abi._CkptOpts()
    lib.mt_ckpt_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
    o.keep, o.level = keep, level
    w = ctypes.c_void_p()
    _lib.call("mt_ckpt_writer_open", store.handle, _lib.b(name), ctypes.byref(o),
              ctypes.byref(w))
    try:
        # All tensors in one call: the library hashes and stores them on all cores.
        items = list(flat.tensors.items())
        tin = (_abi._CkptTensorIn * max(len(items), 1))()
        shapes = []
        for i, (key, (arr, code)) in enumerate(items):
            shapes.append((ctypes.c_uint64 * max(arr.ndim, 1))(*arr.shape))
            tin[i].key, tin[i].dtype, tin[i].ndim = key.encode(), code, arr.ndim
            tin[i].shape = ctypes.cast(shapes[-1], ctypes.POINTER(ctypes.c_uint64))
            tin[i].data, tin[i].nbytes = arr.ctypes.data, arr.nbytes
        _lib.call("mt_ckpt_add_many", w, tin, len(items))
        _lib.call("mt_ckpt_set_state", w, state_json.encode())
        _lib.call("mt_ckpt_set_meta", w, meta_json.encode())
        ver = ctypes.c_void_p()
        err = _abi._Error()
        rc = lib.mt_ckpt_commit(w, ctypes.byref(ver), ctypes.byref(err))
        version = ctypes.string_at(ver.value).decode() if ver.value else None
        lib.mt_free(ver)
        _lib.check(rc, err)
        return f"{name}@{version}"
    finally:
        lib.mt_ckpt_writer_close(w)


class SaveHandle:
    """An asynchronous save: wait() returns "name@vN" once the checkpoint is committed,
    or raises what the save raised."""

    def __init__(self, target):
        self._result = self._error = None
        self._thread = threading.Thread(target=self._run, args=(target,), daemon=False)
        self._thread.start()

    def _run(self, target):
        try:
            self._result = target()
        except BaseException as e:  # handed to wait()
            self._error = e

    def done(self):
        """Whether the save has ended (committed or failed)."""
        return not self._thread.is_alive()

    def wait(self, timeout=None):
        """Wait for the commit; "name@vN".  TimeoutError when timeout passes first."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the checkpoint is still being saved")
        if self._error is not None:
            raise self._error
        return self._result


def save_checkpoint(store, name, state, step=None, metadata=None, keep=0, level=3, wait=True):
    """Save `state` as the next checkpoint of model `name`; "name@vN".

    store: a Store or its URL.  step: an integer >= 0 kept in the metadata.  metadata: a
    dict (JSON); "metrics" (numbers), "author", "description" and "tags" (strings) are
    checked, other members kept.  keep: after the commit keep only the newest `keep`
    checkpoints (0: all); the bytes only the dropped ones held are deleted at once,
    unless another running saver pinned them (then a later gc takes them).  level: zstd level.  wait=False: return a SaveHandle as soon as
    the tensors are copied to host memory; the upload goes on in the background.
    Unsupported values (name their key), an unsupported dtype or two tensors flattening to
    the same key raise InvalidArgument before anything is stored.
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"save_checkpoint: a model name is a non-empty string, not {name!r}")
    flat = _Flat(copy=not wait)
    structure = flat.walk(state, [])
    state_json = json.dumps(structure, allow_nan=False)
    meta_json = _meta(step, metadata, flat.numpy_keys)
    s = _Borrowed(store, create=True)

    def run():
        try:
            return _write(s.store, name, flat, state_json, meta_json, keep, level)
        finally:
            s.close()
    if wait:
        return run()
    return SaveHandle(run)


def _dtype_name(code):
    return "bfloat16" if code == BFLOAT16 else BY_CODE[code].name


def _as_torch(arr, bf16):
    """arr as a torch tensor; arr itself where this torch has no such dtype."""
    t = _torch()
    if bf16:
        return t.from_numpy(arr.view(np.int16)).view(t.bfloat16)
    try:
        return t.from_numpy(arr)
    except TypeError:          # uint16/32/64 before torch 2.3
        return arr


def _read_tensor(ck, key, as_torch):
    lib = _lib.lib()
    i = lib.mt_ckpt_find(ck, key.encode())
    if i < 0:
        raise InvalidArgument(f"checkpoint state names tensor {key!r}, which it does not hold")
    info = _abi._CkptTensorInfo()
    _lib.call("mt_ckpt_tensor", ck, ctypes.c_size_t(i), ctypes.byref(info))
    bf16 = info.dtype == BFLOAT16
    # The library decodes straight into the array returned (torch.from_numpy shares it, no
    # copy).  NumPy allocates it, not torch.empty: NumPy asks for huge pages, and faulting
    # in fresh memory is most of a load (bench/ckpt-alloc.py: 512 MiB read in 0.2 s into
    # memory already touched, 3-4 s into fresh NumPy arrays, 7-9 s into torch.empty on a
    # loaded VM; doc/BENCHMARKS.md).
    arr = np.empty(tuple(int(x) for x in info.shape[:info.ndim]),
                   dtype=np.uint16 if bf16 else BY_CODE[info.dtype])
    _lib.call("mt_ckpt_read", ck, key.encode(), arr.ctypes.data_as(ctypes.c_void_p),
              ctypes.c_size_t(arr.nbytes))
    return _as_torch(arr, bf16) if as_torch(key) else arr


def _tensor_keys(ck):
    lib = _lib.lib()
    keys = []
    for i in range(lib.mt_ckpt_ntensors(ck)):
        t = _abi._CkptTensorInfo()
        _lib.call("mt_ckpt_tensor", ck, ctypes.c_size_t(i), ctypes.byref(t))
        keys.append(t.key.decode())
    return keys


def _open(store, spec):
    ck = ctypes.c_void_p()
    _lib.call("mt_ckpt_open", store.handle, spec.encode(), ctypes.byref(ck))
    return ck


def _spec_of_step(store, spec, step):
    """"name@vN" of the newest checkpoint of model `spec` whose metadata says `step`."""
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise InvalidArgument(f"load_checkpoint: step is an integer >= 0, not {step!r}")
    if "@" in spec:
        raise InvalidArgument(f"load_checkpoint: {spec}: give a version or a step, not both")
    lib = _lib.lib()
    seen = []
    for version in reversed(_strv("mt_ckpt_list", store.handle, _lib.b(spec))):
        ck = _open(store, f"{spec}@{version}")
        try:
            got = json.loads(lib.mt_ckpt_meta(ck).decode()).get("step")
        finally:
            lib.mt_ckpt_close(ck)
        if got == step:
            return f"{spec}@{version}"
        if got is not None:
            seen.append(f"{got} ({version})")
    have = ", ".join(reversed(seen)) if seen else "none records a step"
    raise NotFound(f"model {spec}: no checkpoint has step {step} (steps: {have})")


def load_checkpoint(store, spec, as_numpy=None, step=None):
    """The state saved as checkpoint spec ("name" for the newest, or "name@vN").

    step=N: the newest checkpoint of model `spec` saved with step=N (NotFound naming the
    steps there are when none was).  Each tensor comes back as what was saved: a numpy
    array as numpy, a torch tensor as torch with its dtype (as numpy where this torch has
    no such dtype: uint16/32/64 before torch 2.3, or without torch).  as_numpy=True: every
    tensor as numpy; as_numpy=False: every tensor as torch where it can be.  A bfloat16
    tensor comes back as torch.bfloat16, or as a numpy uint16 array of its bits.  Each is
    read once and checked against the checksum its manifest records (Corrupt when it
    differs).  A checkpoint with no state, written from C or imported from safetensors,
    comes back as its flat {key: tensor} (torch when torch can be imported)."""
    if not isinstance(spec, str) or not spec:
        raise InvalidArgument(f"load_checkpoint: a checkpoint is 'name[@version]', not {spec!r}")
    have_torch = _torch() is not None
    s = _Borrowed(store)
    ck = None
    try:
        if step is not None:
            spec = _spec_of_step(s.store, spec, step)
        ck = _open(s.store, spec)
        lib = _lib.lib()
        structure = json.loads(lib.mt_ckpt_state(ck).decode())
        numpy_keys = set(json.loads(lib.mt_ckpt_meta(ck).decode()).get(NUMPY_KEYS) or ())

        def as_torch(key):
            if as_numpy is not None:
                return have_torch and not as_numpy
            return have_torch and key not in numpy_keys
        if structure is None:
            keys = _tensor_keys(ck)
            if keys:
                return {k: _read_tensor(ck, k, as_torch) for k in keys}
        return _unflatten(structure, lambda key: _read_tensor(ck, key, as_torch))
    finally:
        if ck:
            _lib.lib().mt_ckpt_close(ck)
        s.close()


def checkpoint_info(store, spec):
    """A checkpoint's version, parent, created time, metadata and tensors (key, dtype,
    shape, bytes, stored bytes, sha256), as a dict."""
    s = _Borrowed(store)
    ck = ctypes.c_void_p()
    lib = _lib.lib()
    try:
        _lib.call("mt_ckpt_open", s.store.handle, spec.encode(), ctypes.byref(ck))
        tensors = []
        for i in range(lib.mt_ckpt_ntensors(ck)):
            t = _abi._CkptTensorInfo()
            _lib.call("mt_ckpt_tensor", ck, ctypes.c_size_t(i), ctypes.byref(t))
            tensors.append({"key": t.key.decode(), "dtype": _dtype_name(t.dtype),
                            "shape": tuple(int(x) for x in t.shape[:t.ndim]),
                            "bytes": t.bytes, "stored": t.stored, "sha256": t.sha256.decode()})
        return {"model": lib.mt_ckpt_model(ck).decode(),
                "version": lib.mt_ckpt_version(ck).decode(),
                "parent": lib.mt_ckpt_parent(ck).decode() or None,
                "created": lib.mt_ckpt_created(ck).decode(),
                "meta": json.loads(lib.mt_ckpt_meta(ck).decode()), "tensors": tensors}
    finally:
        if ck:
            lib.mt_ckpt_close(ck)
        s.close()


def list_checkpoints(store, name):
    """The checkpoints of model `name`, oldest first ("v1", "v2", ...); NotFound when none."""
    s = _Borrowed(store)
    try:
        return _strv("mt_ckpt_list", s.store.handle, _lib.b(name))
    finally:
        s.close()


def models(store=None):
    """The names of the models of a store that have a checkpoint, sorted."""
    s = _Borrowed(store)
    try:
        return _strv("mt_models_list", s.store.handle)
    finally:
        s.close()


__all__ = ["save_checkpoint", "load_checkpoint", "checkpoint_info", "list_checkpoints",
           "models", "SaveHandle"]
