"""Dtypes and torch's promotion of two tensor dtypes (the op-level policy, with 0-d tensors and
Python numbers, is in `promotion`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import DTypeError


@dataclass(frozen=True)
class DType:
    """A tensor element type; `np` is the numpy dtype that stores it on the host."""

    name: str
    np: np.dtype
    is_float: bool
    itemsize: int

    def __repr__(self) -> str:
        return f"lazyt.{self.name}"

    @property
    def is_int(self) -> bool:
        return not self.is_float and self.name != "bool"

    @property
    def is_signed(self) -> bool:
        """torch's `is_signed`: floats and the signed integers (not bool, not uint8)."""
        return self.np.kind in "fi"

    @property
    def bits(self) -> int:
        """The value bits of an integer dtype (8 for uint8 and int8, ..., 64 for int64)."""
        return 8 * self.itemsize

    @property
    def category(self) -> int:
        """0 for bool, 1 for the integers, 2 for the floats: torch's order of promotion."""
        return 2 if self.is_float else 0 if self.name == "bool" else 1


float16 = DType("float16", np.dtype(np.float16), True, 2)
float32 = DType("float32", np.dtype(np.float32), True, 4)
float64 = DType("float64", np.dtype(np.float64), True, 8)
uint8 = DType("uint8", np.dtype(np.uint8), False, 1)
int8 = DType("int8", np.dtype(np.int8), False, 1)
int16 = DType("int16", np.dtype(np.int16), False, 2)
int32 = DType("int32", np.dtype(np.int32), False, 4)
int64 = DType("int64", np.dtype(np.int64), False, 8)
bool_ = DType("bool", np.dtype(np.bool_), False, 1)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
#: The integer dtypes narrower than 32 bits: kernels compute them in 32-bit registers and wrap
#: each value they produce back into the dtype's range.
SMALL_INTS = (uint8, int8, int16)
DEFAULT_FLOAT = float32
DEFAULT_INT = int64

_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bool_": bool_, "half": float16, "float": float32, "double": float64,
                 "int": int64, "long": int64, "byte": uint8, "char": int8, "short": int16})


def from_numpy(np_dtype) -> DType:
    """The lazyt dtype storing numpy dtype `np_dtype`; raises `DTypeError` when there is none."""
    d = _BY_NP.get(np_dtype)
    if d is not None:
        return d
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise DTypeError(f"numpy dtype {np.dtype(np_dtype)} is not supported; lazyt has "
                         + ", ".join(x.name for x in ALL))
    return d


def as_dtype(value) -> DType:
    """Accept a DType, a name ("float32"), a numpy dtype or a Python type (float, int, bool)."""
    if isinstance(value, DType):
        return value
    if value is float:
        return DEFAULT_FLOAT
    if value is int:
        return DEFAULT_INT
    if value is bool:
        return bool_
    if isinstance(value, str):
        d = _BY_NAME.get(value)
        if d is None:
            raise DTypeError(f"unknown dtype {value!r}; lazyt has " + ", ".join(x.name for x in ALL))
        return d
    try:
        return from_numpy(np.dtype(value))
    except TypeError:
        raise DTypeError(f"cannot interpret {value!r} as a dtype") from None


def promote(a: DType, b: DType) -> DType:
    """torch's promotion of two tensor dtypes (`torch.promote_types`): of two categories the
    higher one's dtype (int32 with float32 is float32, not numpy's float64), within one the
    wider dtype; uint8 with a signed integer is the narrowest signed integer holding both
    (int8 with uint8 is int16, int16 with uint8 int16)."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a is uint8 or b is uint8:   # the one unsigned dtype; the other is signed here
        s = b if a is uint8 else a
        return s if s.itemsize > 1 else int16
    return a if a.itemsize >= b.itemsize else b


def scalar_kind(value) -> str:
    """'bool', 'int' or 'float' for a Python/numpy scalar; raises DTypeError for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    raise DTypeError(f"expected a tensor or a real scalar, got {type(value).__name__}")


def promote_scalar(d: DType, kind: str) -> DType:
    """The result dtype of a tensor of dtype `d` with a Python scalar of `kind`, as torch: the
    scalar only counts when its category is higher (a float makes an integer or bool tensor
    the default float, float32; an int makes a bool tensor the default int, int64)."""
    if kind == "float" and not d.is_float:
        return DEFAULT_FLOAT
    if kind == "int" and d is bool_:
        return DEFAULT_INT
    return d




class finfo:
    """Machine limits of a float dtype, as `torch.finfo`: `bits eps max min tiny
    smallest_normal resolution dtype` (`lazyt.finfo()` is the default float's)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, dtype=None):
        d = DEFAULT_FLOAT if dtype is None else as_dtype(dtype)
        if not d.is_float:
            raise DTypeError(f"finfo: expected a floating-point dtype, got {d.name} (use "
                             f"lazyt.iinfo for integers)")
        info = np.finfo(d.np)
        self.bits, self.eps = int(info.bits), float(info.eps)
        self.max, self.min = float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution, self.dtype = 10.0 ** -int(info.precision), d.name  # torch: 1e-06

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.smallest_normal}, bits={self.bits}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as `torch.iinfo`: `bits max min dtype` (bool and floats
    raise `DTypeError`, as torch raises)."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, dtype):
        d = as_dtype(dtype)
        if not d.is_int:
            raise DTypeError(f"iinfo: expected an integer dtype, got {d.name}"
                             + (" (use lazyt.finfo for floats)" if d.is_float else ""))
        info = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = (int(info.bits), int(info.max),
                                                     int(info.min), d.name)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, bits={self.bits}, dtype={self.dtype})"
