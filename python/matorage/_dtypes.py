"""The dtypes of the format (mt_dtype) and their numpy counterparts; Attr, an attribute."""
from collections import namedtuple

import numpy as np

from .errors import InvalidArgument

BY_CODE = {1: np.dtype(np.bool_), 2: np.dtype(np.int8), 3: np.dtype(np.int16),
           4: np.dtype(np.int32), 5: np.dtype(np.int64), 6: np.dtype(np.uint8),
           7: np.dtype(np.uint16), 8: np.dtype(np.uint32), 9: np.dtype(np.uint64),
           10: np.dtype(np.float16), 11: np.dtype(np.float32), 12: np.dtype(np.float64)}
_BY_NAME = {d.name: c for c, d in BY_CODE.items()}
# Checkpoint tensors only; numpy has no such type (its bits are read as uint16).
BFLOAT16 = 13
# Text (dtype "str"): stored as ragged UTF-8 bytes; in Python an attribute of numpy's str
# dtype, whose rows are Python str.
STR = 14
TEXT = np.dtype(np.str_)
SUPPORTED = tuple(d.name for d in BY_CODE.values())


class Attr(namedtuple("Attr", "name dtype shape ragged")):
    """One attribute (column): numpy dtype, the shape of a row (fixed) or of one item of a
    row (ragged), and whether rows have a variable number of items."""
    __slots__ = ()

    @property
    def text(self):
        """Whether rows are str (UTF-8 text; stored as ragged bytes)."""
        return self.dtype.kind == "U"

    @property
    def item_bytes(self):
        """Bytes of one row (fixed) or one item (ragged; text: a byte)."""
        if self.text:
            return 1
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def from_c(a):
    """An Attr from an mt_attr."""
    return Attr(a.name.decode(), TEXT if a.dtype == STR else BY_CODE[a.dtype], tuple(int(x) for x in a.shape[:a.rank]),
                bool(a.ragged))


def code_of(dtype, what, text=False):
    """The mt_dtype code of a numpy dtype; InvalidArgument for one the format lacks.  With
    text, numpy's str is the code of str (dataset attributes; checkpoints hold numbers)."""
    dt = np.dtype(dtype)
    code = STR if text and dt.kind == "U" else _BY_NAME.get(dt.name)
    if code is None:
        raise InvalidArgument(f"{what}: dtype {dt} is not supported (one of "
                              + ", ".join(SUPPORTED) + ", or str for text)")
    return code


def decode_text(values, offsets, name):
    """Rows of a str attribute as a list of str, from its bytes and row offsets."""
    raw = memoryview(np.ascontiguousarray(values, dtype=np.uint8)).tobytes()
    offs = np.asarray(offsets, dtype=np.int64).tolist()
    try:
        return [raw[offs[i]:offs[i + 1]].decode("utf-8") for i in range(len(offs) - 1)]
    except UnicodeDecodeError as e:  # the writer refuses such rows; a damaged file?
        raise InvalidArgument(f"{name}: a row is not UTF-8 text ({e})") from None


def encode_text(rows, name):
    """A list or array of str as (uint8 values, uint64 lengths): each row's UTF-8 bytes."""
    parts = []
    for i, r in enumerate(rows):
        if not isinstance(r, str):
            raise InvalidArgument(f"{name}: row {i} is {type(r).__name__}, not str (a str "
                                  "attribute takes one string a row)")
        try:
            parts.append(r.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise InvalidArgument(f"{name}: row {i} is not valid UTF-8 text ({e.reason} at "
                                  f"character {e.start})") from None
    lengths = np.fromiter((len(b) for b in parts), dtype=np.uint64, count=len(parts))
    values = np.frombuffer(b"".join(parts), dtype=np.uint8)
    return values, lengths
