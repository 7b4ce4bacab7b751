"""What shape rules return: the output description of an op from its inputs' descriptions."""
from __future__ import annotations

from dataclasses import dataclass

from ..dtype import DType
from ..errors import DTypeError


@dataclass(frozen=True)
class TensorMeta:
    """A tensor described by shape and dtype (an op's input or output, before any kernel ran)."""

    shape: tuple
    dtype: DType


@dataclass(frozen=True, slots=True)
class Out:
    """A rule's answer when it also normalizes the arguments: the output `shape` and `dtype`,
    the arguments to record (`args`, in parameter order: -1 resolved, axes made non-negative),
    and `same` when the op returns its (first) tensor input unchanged. Rules that need none of
    this return a plain `(shape, dtype)` tuple."""

    shape: tuple
    dtype: DType
    args: tuple | None = None
    same: bool = False

    def __iter__(self):  # unpacks as the `(shape, dtype)` of rules that do not normalize
        return iter((self.shape, self.dtype))


def same_dtype(op: str, a, b) -> None:
    """`DTypeError` naming `op` unless the two operands share a dtype."""
    if a.dtype is not b.dtype:
        raise DTypeError(f"{op}: operands must have one dtype, got {a.dtype.name} "
                         f"{tuple(a.shape)} and {b.dtype.name} {tuple(b.shape)}")
