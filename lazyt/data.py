"""Host data: Python and numpy values as arrays in lazyt's dtypes (what `lazyt.tensor` and every
op taking a list or a number upload), and the process's random generator."""
from __future__ import annotations

import itertools
import operator
import reprlib

import numpy as np

from . import dtype as dt
from .dtype import DType
from .capture_state import refuse as _refuse
from .errors import DTypeError, InvalidArgumentError, ShapeError

# Unsigned integer types numpy may hand us that lazyt lacks, and where it stores them (the
# narrowest signed dtype holding every value, as torch would need).
_WIDEN = {np.dtype(np.uint16): dt.int32, np.dtype(np.uint32): dt.int64}


def host_array(data, dtype: DType | None = None) -> np.ndarray:
    """`data` (nested sequences, scalars, numpy arrays, or a tensor's `numpy()`) as a new
    C-contiguous host array in a lazyt dtype (copied: never aliases the caller's memory).
    Python floats become float32, ints int64, bools bool; numpy arrays keep their dtype, and
    numpy scalars (or arrays) in a list keep theirs, promoted with the other items, as torch."""
    from_python = not isinstance(data, (np.ndarray, np.generic))
    try:
        arr = np.array(data)
    except ValueError as e:  # ragged nested sequences
        raise ShapeError(f"tensor: data is not a rectangular nested sequence ({e})") from None
    if arr.dtype == object:
        raise DTypeError(f"tensor: cannot build a tensor from {type(data).__name__} data "
                         "holding non-numeric items")
    kind = arr.dtype.kind
    # numpy's inference agrees with torch's for integers and bools, not for floats
    listed = isinstance(data, (list, tuple)) and kind == "f"
    mixed = _numpy_items_dtype(data) if listed else None
    if mixed is not None:
        inferred = mixed
    elif kind == "f" and from_python:
        inferred = dt.DEFAULT_FLOAT
    elif kind in "biuf" and arr.dtype in _WIDEN:
        inferred = _WIDEN[arr.dtype]
    elif kind in "biuf":
        inferred = dt.from_numpy(arr.dtype)
    else:
        raise DTypeError(f"tensor: data of numpy dtype {arr.dtype} is not supported; lazyt "
                         "has " + ", ".join(d.name for d in dt.ALL))
    target = inferred if dtype is None else dt.as_dtype(dtype)
    if arr.dtype != target.np:
        arr = arr.astype(target.np)
    elif arr.base is not None or not arr.flags.owndata or arr is data:
        arr = arr.copy()
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _numpy_items_dtype(data) -> DType | None:
    """torch's dtype for a nested sequence holding numpy scalars or arrays: each item's own
    dtype (a Python float the default float, an int int64, a bool bool; a numpy value its
    dtype), promoted together. None when no item is a numpy value."""
    kinds: set = set()
    dtypes: list = []
    level = data
    while True:                          # one nesting level at a time, its types found in C
        types = set(map(type, level))
        if np.ndarray in types:
            dtypes.extend({v.dtype for v in level if isinstance(v, np.ndarray)})
        kinds.update(types - {list, tuple, np.ndarray})
        if not types & {list, tuple}:
            break
        level = list(itertools.chain.from_iterable(
            v for v in level if isinstance(v, (list, tuple))))
    if not dtypes and not any(issubclass(k, np.generic) for k in kinds):
        return None
    for k in kinds:
        if issubclass(k, np.generic):
            dtypes.append(np.dtype(k))
        elif issubclass(k, bool):
            dtypes.append(dt.bool_)
        elif issubclass(k, int):
            dtypes.append(dt.DEFAULT_INT)
        elif issubclass(k, float):
            dtypes.append(dt.DEFAULT_FLOAT)
        else:                   # anything else (a tensor): numpy's inference, as before
            return None
    out = None
    for d in dtypes:
        d = d if isinstance(d, DType) else _WIDEN.get(d) or dt.from_numpy(d)
        out = d if out is None else dt.promote(out, d)
    return out


# ---------------------------------------------------------------------- random numbers
def fresh_seed() -> int:
    """A non-deterministic 64-bit seed (from the OS's entropy), as torch's `seed()` draws."""
    return int(np.random.SeedSequence().entropy) % (1 << 64)


# The process's generator and the seed it started from (`lazyt.initial_seed`).
_initial = [fresh_seed()]
_generator = [np.random.default_rng(_initial[0])]
# The seeds torch takes: a negative one stands for its 64-bit two's complement.
SEED_MIN, SEED_MAX = -(1 << 63), (1 << 64) - 1


def manual_seed(seed: int) -> None:
    """Make `rand`, `randn`, `randint` (and dropout) reproducible. `seed` is an integer (a
    Python or numpy int, not a bool) in [-2**63, 2**64 - 1], the range torch takes; a negative
    seed means seed + 2**64, as in torch (-1 and 2**64 - 1 give the same numbers). Anything
    else raises `InvalidArgumentError`."""
    value = _seed_value(seed)
    _generator[0] = np.random.default_rng(value)
    _initial[0] = value


def _seed_value(seed) -> int:
    """`seed` as the non-negative 64-bit integer numpy's generator is seeded with."""
    expected = "manual_seed: expected an integer seed in [-2**63, 2**64 - 1]"
    if isinstance(seed, (bool, np.bool_)):
        raise InvalidArgumentError(f"{expected}, got the bool {seed!r}")
    try:
        value = operator.index(seed)
    except TypeError:
        raise InvalidArgumentError(f"{expected}, got {reprlib.repr(seed)} of type "
                                   f"{type(seed).__name__}") from None
    if not SEED_MIN <= value <= SEED_MAX:
        raise InvalidArgumentError(f"{expected}, got {reprlib.repr(value)}, out of range")
    return value % (1 << 64)


def generator(source=None, op: str = "drawing random numbers") -> np.random.Generator:
    """The numpy generator a draw uses: lazyt's (`source=None`), a `lazyt.Generator`'s, or a
    numpy `Generator` passed as `generator=`."""
    _refuse("drawing random numbers (rand, randn, randint, dropout)",
            "a replay would repeat the same numbers; draw them outside and pass them in")
    if source is None:
        return _generator[0]
    if isinstance(source, np.random.Generator):
        return source
    rng = getattr(source, "numpy_generator", None)
    if rng is not None:
        return rng()
    raise InvalidArgumentError(f"{op}: generator must be None (lazyt's generator) or a "
                               f"lazyt.Generator, got {type(source).__name__}")
