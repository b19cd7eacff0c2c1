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
SUPPORTED = tuple(d.name for d in BY_CODE.values())


class Attr(namedtuple("Attr", "name dtype shape ragged")):
    """One attribute (column): numpy dtype, the shape of a row (fixed) or of one item of a
    row (ragged), and whether rows have a variable number of items."""
    __slots__ = ()

    @property
    def item_bytes(self):
        """Bytes of one row (fixed) or one item (ragged)."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def from_c(a):
    """An Attr from an mt_attr."""
    return Attr(a.name.decode(), BY_CODE[a.dtype], tuple(int(x) for x in a.shape[:a.rank]),
                bool(a.ragged))


def code_of(dtype, what):
    """The mt_dtype code of a numpy dtype; InvalidArgument for one the format lacks."""
    dt = np.dtype(dtype)
    code = _BY_NAME.get(dt.name)
    if code is None:
        raise InvalidArgument(f"{what}: dtype {dt} is not supported (one of "
                              + ", ".join(SUPPORTED) + ")")
    return code
