"""Files attached to a version (a vocabulary, a tokenizer config): doc/FORMAT.md, "Attachments"."""
import ctypes
import os

from . import _abi, _lib
from .errors import InvalidArgument, NotFound
from .store import _Borrowed


def attachment_items(files):
    """[(name, bytes)] from {name: bytes or path} or an iterable of paths (named by their
    file name).  A path that cannot be read raises naming it, before anything is written."""
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    pairs = files.items() if isinstance(files, dict) else \
        [(os.path.basename(os.fspath(p)), p) for p in files]
    out = []
    for name, value in pairs:
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"an attachment name is a non-empty string, not {name!r}")
        if isinstance(value, (bytes, bytearray, memoryview)):
            out.append((name, bytes(value)))
            continue
        if not isinstance(value, (str, os.PathLike)):
            raise InvalidArgument(f"attachment {name}: give bytes or a file path, not "
                                  f"{type(value).__name__}")
        try:
            with open(value, "rb") as f:
                out.append((name, f.read()))
        except FileNotFoundError:
            raise NotFound(f"attachment {name}: {os.fspath(value)}: no such file") from None
        except OSError as e:
            raise InvalidArgument(f"attachment {name}: cannot read {os.fspath(value)}: "
                                  f"{e.strerror}") from None
    return out


def attach(store, dataset, files, version=None, author=None, description=None):
    """Attach files to dataset[@version] (the latest when no version) by committing a new
    version with the same rows: the parent's attachments plus these (a name already there
    is replaced).  files: {name: bytes or path} or a list of paths.  Returns
    "dataset@vN" (or "dataset@<version>").  A bad name (with '/' or '..'), an unreadable
    file or a name given twice commits nothing."""
    name, parent = _lib.split_name(dataset)
    items = attachment_items(files)
    if not items:
        raise InvalidArgument(f"{name}: nothing to attach")
    keep = [_lib.b(x) for x in (version, author, description)]
    o = _abi._WriterOpts()
    _lib.lib().mt_writer_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
    o.version, o.author, o.description = keep
    n = len(items)
    names = (ctypes.c_char_p * n)(*[_lib.b(k) for k, _ in items])
    bufs = [ctypes.create_string_buffer(v, len(v) or 1) for _, v in items]
    data = (ctypes.c_void_p * n)(*[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
    lens = (ctypes.c_size_t * n)(*[len(v) for _, v in items])
    out = ctypes.create_string_buffer(256)
    s = _Borrowed(store)
    try:
        _lib.call("mt_dataset_attach", s.store.handle, _lib.b(name), _lib.b(parent), names,
                  data, lens, n, ctypes.byref(o), out, len(out))
    finally:
        s.close()
    return f"{name}@{out.value.decode()}"


def detach(store, dataset, names, version=None, author=None, description=None):
    """Remove attachments from dataset[@version] (the latest when no version) by committing
    a new version with the same rows and the parent's other attachments.  names: one name
    or a list.  Returns "dataset@vN" (or "dataset@<version>").  A name the version does not
    have raises NotFound naming it, and nothing is committed."""
    name, parent = _lib.split_name(dataset)
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names or not all(isinstance(x, str) and x for x in names):
        raise InvalidArgument(f"{name}: detach takes attachment names (non-empty strings), "
                              f"not {names!r}")
    keep = [_lib.b(x) for x in (version, author, description)]
    o = _abi._WriterOpts()
    _lib.lib().mt_writer_opts_init_size(ctypes.byref(o), ctypes.sizeof(o))
    o.version, o.author, o.description = keep
    arr = (ctypes.c_char_p * len(names))(*[_lib.b(x) for x in names])
    out = ctypes.create_string_buffer(256)
    s = _Borrowed(store)
    try:
        _lib.call("mt_dataset_detach", s.store.handle, _lib.b(name), _lib.b(parent), arr,
                  len(names), ctypes.byref(o), out, len(out))
    finally:
        s.close()
    return f"{name}@{out.value.decode()}"


def reader_attachments(h):
    """[{"name", "sha256", "bytes"}] of an open reader handle, in name order."""
    lib = _lib.lib()
    out = []
    for i in range(lib.mt_reader_nattachments(h)):
        ai = _abi._AttachmentInfo()
        if lib.mt_reader_attachment_info(h, i, ctypes.byref(ai)) == 0:
            out.append({"name": ai.name.decode(), "sha256": ai.sha256.decode(),
                        "bytes": int(ai.bytes)})
    return out


def reader_attachment(h, name):
    """The bytes of attachment `name`, checked against its sha256 (Corrupt when not)."""
    data, n = ctypes.c_void_p(), ctypes.c_size_t()
    _lib.call("mt_reader_attachment", h, _lib.b(name), ctypes.byref(data), ctypes.byref(n))
    try:
        return ctypes.string_at(data, n.value) if n.value else b""
    finally:
        _lib.lib().mt_free(data)
