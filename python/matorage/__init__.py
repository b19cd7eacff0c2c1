"""matorage: versioned datasets of numeric arrays in object storage, from Python.

    import matorage
    with matorage.Writer("file:///data/store", "mnist") as w:    # a Store or its URL
        w.append(image=images, label=labels)                       # numpy arrays of rows
    print(w.version)                                               # "v1"
    with matorage.Reader("file:///data/store", "mnist@v1") as r:
        r.attributes, r.rows, r.read("label", 0, 10)
    for batch in matorage.Loader("file:///data/store", "mnist@v1", batch_rows=256,
                                 shuffle=True, seed=1):
        batch["image"]                     # numpy (rows, 28, 28); batch["_rows"]: row numbers
    ds = matorage.TorchDataset("s3://ml-data/team", "mnist", batch_rows=256, shuffle=True)
    for batch in ds.dataloader(num_workers=2): ...
    v = matorage.save_checkpoint(store, "resnet", {"model": model.state_dict()}, step=100)
    state = matorage.load_checkpoint(store, "resnet")             # the newest, or "resnet@v3"

The library (libmatorage) is found through $MATORAGE_LIB, else where `make install` put
it, else on the usual library paths (matorage._lib).  Errors are matorage.Error
subclasses with .code and .message.  TorchDataset and TorchMapDataset (torch) are
imported on first use, so `import matorage` does not import torch.
"""
from ._dtypes import Attr, SUPPORTED as DTYPES
from .errors import (Error, OutOfMemory, InvalidArgument, IOFailure, NotFound, AlreadyExists,
                     Corrupt, FormatError, Unsupported, OutOfRange, StateError, AccessDenied,
                     NetworkError, LibraryNotFound)
from .loader import Loader, parse_token
from .mix import Mix
from .reader import Reader, chunk_cache_stats, clear_chunk_cache, set_chunk_cache
from .store import Store, datasets, versions
from .writer import Ragged, Writer
from .attach import attach, detach
from .stream import Stream
from .checkpoint import (save_checkpoint, load_checkpoint, checkpoint_info, list_checkpoints,
                         models, SaveHandle)

# The name this binding had before it raised subclasses.
MatorageError = Error


def library_version():
    """The version of the loaded libmatorage ("MAJOR.MINOR.PATCH")."""
    from . import _lib
    return _lib.lib().mt_version().decode()


def __getattr__(name):
    if name in ("TorchDataset", "TorchMapDataset"):
        from . import torch_dataset
        return getattr(torch_dataset, name)
    raise AttributeError(f"module 'matorage' has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = ["Attr", "DTYPES", "Error", "OutOfMemory", "InvalidArgument", "IOFailure", "NotFound",
           "AlreadyExists", "Corrupt", "FormatError", "Unsupported", "OutOfRange",
           "StateError", "AccessDenied", "NetworkError", "LibraryNotFound", "MatorageError",
           "Loader", "Mix", "parse_token", "Reader", "Store", "datasets", "versions", "Ragged",
           "Writer", "TorchDataset", "TorchMapDataset", "library_version", "Stream",
           "save_checkpoint", "load_checkpoint", "checkpoint_info", "list_checkpoints", "models",
           "SaveHandle", "attach", "detach", "chunk_cache_stats", "clear_chunk_cache", "set_chunk_cache"]
