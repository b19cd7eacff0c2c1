"""The ctypes declarations of matorage.h that the binding uses.

They mirror src/lib/matorage.h; python/check_abi.py (run by make check) compiles them
against the header and fails on any difference, so this module holds declarations only:
_STRUCTS (each struct with its C name) and _signatures() (each function's result and
arguments).  It imports nothing but ctypes, so the check runs without numpy.
"""
import ctypes

MAX_RANK = 8
ERROR_MESSAGE_BYTES = 512


class _Error(ctypes.Structure):
    _c_name = "mt_error"
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * ERROR_MESSAGE_BYTES)]


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
                ("alloc_ud", ctypes.c_void_p), ("defer_windows", ctypes.c_int)]


class _StoreOpts(ctypes.Structure):
    _c_name = "mt_store_opts"
    _fields_ = [("size", ctypes.c_size_t), ("endpoint", ctypes.c_char_p),
                ("region", ctypes.c_char_p), ("profile", ctypes.c_char_p),
                ("ca_bundle", ctypes.c_char_p), ("insecure", ctypes.c_int),
                ("addressing", ctypes.c_int), ("max_requests", ctypes.c_int),
                ("max_attempts", ctypes.c_int), ("create", ctypes.c_int),
                ("log", ctypes.c_void_p), ("log_ud", ctypes.c_void_p)]


class _WriterOpts(ctypes.Structure):
    _c_name = "mt_writer_opts"
    _fields_ = [("size", ctypes.c_size_t), ("version", ctypes.c_char_p),
                ("parent", ctypes.c_char_p), ("append", ctypes.c_int),
                ("shard_bytes", ctypes.c_uint64), ("shard_rows", ctypes.c_uint64),
                ("chunk_bytes", ctypes.c_uint64), ("level", ctypes.c_int),
                ("threads", ctypes.c_int), ("author", ctypes.c_char_p),
                ("description", ctypes.c_char_p), ("tags", ctypes.POINTER(ctypes.c_char_p)),
                ("ntags", ctypes.c_size_t), ("progress", ctypes.c_void_p),
                ("progress_ud", ctypes.c_void_p), ("recipe", ctypes.c_void_p),
                ("recipe_len", ctypes.c_size_t),
                ("recipe_args", ctypes.POINTER(ctypes.c_char_p)),
                ("nrecipe_args", ctypes.c_size_t), ("sources", ctypes.c_void_p),
                ("nsources", ctypes.c_size_t), ("stage_id", ctypes.c_char_p),
                ("stage_part", ctypes.c_uint64), ("stage_parts", ctypes.c_uint64)]


class _VersionInfo(ctypes.Structure):
    _c_name = "mt_version_info"
    _fields_ = [("dataset", ctypes.c_char_p), ("version", ctypes.c_char_p),
                ("parent", ctypes.c_char_p), ("author", ctypes.c_char_p),
                ("description", ctypes.c_char_p), ("created", ctypes.c_char_p),
                ("tags", ctypes.POINTER(ctypes.c_char_p)), ("ntags", ctypes.c_size_t),
                ("rows", ctypes.c_uint64), ("nshards", ctypes.c_uint64),
                ("stored_bytes", ctypes.c_uint64), ("raw_bytes", ctypes.c_uint64),
                ("level", ctypes.c_int), ("recipe", ctypes.c_char_p),
                ("recipe_args", ctypes.POINTER(ctypes.c_char_p)),
                ("nrecipe_args", ctypes.c_size_t)]


class _ReadStats(ctypes.Structure):
    _c_name = "mt_read_stats"
    _fields_ = [("size", ctypes.c_size_t), ("healed_chunks", ctypes.c_uint64),
                ("healed_indexes", ctypes.c_uint64), ("heal_bytes", ctypes.c_uint64)]


class _CacheStats(ctypes.Structure):
    _c_name = "mt_cache_stats"
    _fields_ = [("size", ctypes.c_size_t), ("budget", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64), ("chunks", ctypes.c_uint64),
                ("hits", ctypes.c_uint64), ("misses", ctypes.c_uint64),
                ("evictions", ctypes.c_uint64)]


class _StreamOpts(ctypes.Structure):
    _c_name = "mt_stream_opts"
    _fields_ = [("size", ctypes.c_size_t), ("commit_rows", ctypes.c_uint64),
                ("commit_ms", ctypes.c_uint64), ("writer", ctypes.c_void_p),
                ("committed", ctypes.c_void_p), ("committed_ud", ctypes.c_void_p),
                ("background", ctypes.c_int), ("spool_dir", ctypes.c_char_p),
                ("notice", ctypes.c_void_p), ("notice_ud", ctypes.c_void_p)]


class _CkptOpts(ctypes.Structure):
    _c_name = "mt_ckpt_opts"
    _fields_ = [("size", ctypes.c_size_t), ("keep", ctypes.c_int), ("level", ctypes.c_int),
                ("threads", ctypes.c_int)]


class _CkptTensorInfo(ctypes.Structure):
    _c_name = "mt_ckpt_tensor_info"
    _fields_ = [("key", ctypes.c_char_p), ("dtype", ctypes.c_uint), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_uint64 * MAX_RANK), ("bytes", ctypes.c_uint64),
                ("stored", ctypes.c_uint64), ("sha256", ctypes.c_char_p)]


class _CkptTensorIn(ctypes.Structure):
    _c_name = "mt_ckpt_tensor_in"
    _fields_ = [("key", ctypes.c_char_p), ("dtype", ctypes.c_uint), ("ndim", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_uint64)), ("data", ctypes.c_void_p),
                ("nbytes", ctypes.c_size_t)]


class _AttachmentInfo(ctypes.Structure):
    _c_name = "mt_attachment_info"
    _fields_ = [("name", ctypes.c_char_p), ("sha256", ctypes.c_char_p),
                ("bytes", ctypes.c_uint64)]


_STRUCTS = (_AttachmentInfo, _Error, _Attr, _Col, _Batch, _Opts, _StoreOpts, _WriterOpts, _VersionInfo, _ReadStats,
            _CacheStats, _StreamOpts, _CkptOpts, _CkptTensorInfo, _CkptTensorIn)


def _signatures():
    """Each function used: (restype, argtypes), as matorage.h declares it."""
    vp, err, u64, sz = ctypes.c_void_p, ctypes.POINTER(_Error), ctypes.c_uint64, ctypes.c_size_t
    cp, pu64 = ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)
    strv = ctypes.POINTER(ctypes.POINTER(cp))
    return {
        "mt_version": (cp, []),
        "mt_store_open": (ctypes.c_int, [cp, ctypes.POINTER(vp), err]),
        "mt_store_opts_init_size": (None, [ctypes.POINTER(_StoreOpts), sz]),
        "mt_store_open_opts": (ctypes.c_int, [cp, ctypes.POINTER(_StoreOpts),
                                              ctypes.POINTER(vp), err]),
        "mt_store_close": (None, [vp]),
        "mt_store_url": (cp, [vp]),
        "mt_store_datasets": (ctypes.c_int, [vp, strv, ctypes.POINTER(sz), err]),
        "mt_store_versions": (ctypes.c_int, [vp, cp, strv, ctypes.POINTER(sz), err]),
        "mt_strv_free": (None, [ctypes.POINTER(cp), sz]),
        "mt_dtype_parse": (ctypes.c_uint, [cp]),
        "mt_writer_opts_init_size": (None, [ctypes.POINTER(_WriterOpts), sz]),
        "mt_writer_open": (ctypes.c_int, [vp, cp, ctypes.POINTER(_Attr), sz,
                                          ctypes.POINTER(_WriterOpts), ctypes.POINTER(vp), err]),
        "mt_writer_append": (ctypes.c_int, [vp, u64, ctypes.POINTER(vp),
                                            ctypes.POINTER(pu64), err]),
        "mt_writer_commit": (ctypes.c_int, [vp, cp, sz, err]),
        "mt_writer_attach": (ctypes.c_int, [vp, cp, vp, sz, err]),
        "mt_dataset_attach": (ctypes.c_int, [vp, cp, cp, ctypes.POINTER(cp),
                                             ctypes.POINTER(vp), ctypes.POINTER(sz), sz,
                                             ctypes.POINTER(_WriterOpts), cp, sz, err]),
        "mt_dataset_detach": (ctypes.c_int, [vp, cp, cp, ctypes.POINTER(cp), sz,
                                             ctypes.POINTER(_WriterOpts), cp, sz, err]),
        "mt_reader_nattachments": (sz, [vp]),
        "mt_reader_attachment_info": (ctypes.c_int, [vp, sz, ctypes.POINTER(_AttachmentInfo)]),
        "mt_reader_attachment": (ctypes.c_int, [vp, cp, ctypes.POINTER(vp),
                                                ctypes.POINTER(sz), err]),
        "mt_writer_abort": (None, [vp]),
        "mt_writer_close": (None, [vp]),
        "mt_reader_open": (ctypes.c_int, [vp, cp, cp, ctypes.POINTER(vp), err]),
        "mt_reader_close": (None, [vp]),
        "mt_reader_info": (ctypes.POINTER(_VersionInfo), [vp]),
        "mt_reader_nattrs": (sz, [vp]),
        "mt_reader_attr": (ctypes.POINTER(_Attr), [vp, sz]),
        "mt_reader_ragged_lengths": (ctypes.c_int, [vp, sz, u64, u64, pu64, pu64, err]),
        "mt_reader_read": (ctypes.c_int, [vp, sz, u64, u64, vp, sz, err]),
        "mt_reader_read_rows": (ctypes.c_int, [vp, sz, pu64, sz, vp, sz, err]),
        "mt_chunk_cache_set_budget": (None, [u64]),
        "mt_chunk_cache_clear": (None, []),
        "mt_chunk_cache_stats": (None, [ctypes.POINTER(_CacheStats)]),
        "mt_loader_opts_init_size": (None, [ctypes.POINTER(_Opts), sz]),
        "mt_loader_open": (ctypes.c_int, [vp, cp, cp, ctypes.POINTER(_Opts),
                                          ctypes.POINTER(vp), err]),
        "mt_loader_next": (ctypes.c_int, [vp, ctypes.POINTER(ctypes.POINTER(_Batch)), err]),
        "mt_loader_next_into": (ctypes.c_int, [vp, ctypes.POINTER(vp), sz,
                                               ctypes.POINTER(ctypes.POINTER(_Batch)), err]),
        "mt_loader_next_held": (ctypes.c_int, [vp, ctypes.POINTER(ctypes.POINTER(_Batch)),
                                               pu64, sz, err]),
        "mt_loader_release": (None, [vp, u64]),
        "mt_loader_batches": (u64, [vp]),
        "mt_loader_reader": (vp, [vp]),
        "mt_loader_set_epoch": (ctypes.c_int, [vp, u64, err]),
        "mt_loader_state": (sz, [vp, cp, sz]),
        "mt_loader_read_rows": (ctypes.c_int, [vp, pu64, sz,
                                               ctypes.POINTER(ctypes.POINTER(_Batch)), err]),
        "mt_loader_stats": (None, [vp, ctypes.POINTER(_ReadStats)]),
        "mt_loader_cache_stats": (None, [vp, ctypes.POINTER(_CacheStats)]),
        "mt_loader_close": (None, [vp]),
        "mt_mix_open": (ctypes.c_int, [ctypes.POINTER(vp), ctypes.POINTER(ctypes.c_double), sz,
                                       u64, ctypes.POINTER(vp), err]),
        "mt_mix_next": (ctypes.c_int, [vp, ctypes.POINTER(ctypes.POINTER(_Batch)),
                                       ctypes.POINTER(sz), err]),
        "mt_mix_set_epoch": (ctypes.c_int, [vp, u64, err]),
        "mt_mix_state": (sz, [vp, cp, sz]),
        "mt_mix_resume": (ctypes.c_int, [vp, cp, err]),
        "mt_mix_close": (None, [vp]),
        "mt_stream_opts_init_size": (None, [ctypes.POINTER(_StreamOpts), sz]),
        "mt_stream_open": (ctypes.c_int, [vp, cp, ctypes.POINTER(_Attr), sz,
                                          ctypes.POINTER(_StreamOpts), ctypes.POINTER(vp), err]),
        "mt_stream_append": (ctypes.c_int, [vp, u64, ctypes.POINTER(vp), err]),
        "mt_stream_append_ragged": (ctypes.c_int, [vp, u64, ctypes.POINTER(vp),
                                                   ctypes.POINTER(pu64), err]),
        "mt_stream_poll": (ctypes.c_int, [vp, pu64, err]),
        "mt_stream_commit": (ctypes.c_int, [vp, cp, sz, err]),
        "mt_stream_pending": (u64, [vp]),
        "mt_stream_close": (None, [vp]),
        "mt_free": (None, [vp]),
        "mt_ckpt_opts_init_size": (None, [ctypes.POINTER(_CkptOpts), sz]),
        "mt_ckpt_writer_open": (ctypes.c_int, [vp, cp, ctypes.POINTER(_CkptOpts),
                                               ctypes.POINTER(vp), err]),
        "mt_ckpt_add": (ctypes.c_int, [vp, cp, ctypes.c_uint, ctypes.c_int, pu64, vp, sz, err]),
        "mt_ckpt_add_many": (ctypes.c_int, [vp, ctypes.POINTER(_CkptTensorIn), sz, err]),
        "mt_ckpt_set_state": (ctypes.c_int, [vp, cp, err]),
        "mt_ckpt_set_meta": (ctypes.c_int, [vp, cp, err]),
        "mt_ckpt_commit": (ctypes.c_int, [vp, ctypes.POINTER(vp), err]),
        "mt_ckpt_writer_close": (None, [vp]),
        "mt_models_list": (ctypes.c_int, [vp, strv, ctypes.POINTER(sz), err]),
        "mt_ckpt_list": (ctypes.c_int, [vp, cp, strv, ctypes.POINTER(sz), err]),
        "mt_ckpt_open": (ctypes.c_int, [vp, cp, ctypes.POINTER(vp), err]),
        "mt_ckpt_model": (cp, [vp]),
        "mt_ckpt_version": (cp, [vp]),
        "mt_ckpt_parent": (cp, [vp]),
        "mt_ckpt_created": (cp, [vp]),
        "mt_ckpt_state": (cp, [vp]),
        "mt_ckpt_meta": (cp, [vp]),
        "mt_ckpt_ntensors": (sz, [vp]),
        "mt_ckpt_tensor": (ctypes.c_int, [vp, sz, ctypes.POINTER(_CkptTensorInfo), err]),
        "mt_ckpt_find": (ctypes.c_long, [vp, cp]),
        "mt_ckpt_read": (ctypes.c_int, [vp, cp, vp, sz, err]),
        "mt_ckpt_close": (None, [vp]),
    }
