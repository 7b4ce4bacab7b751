"""torch's parameter vectors: all parameters flattened into one vector and back."""
from __future__ import annotations

from typing import Iterable

from ...autodiff import no_grad
from ...errors import ShapeError
from ...functional import cat
from ...tensor import Tensor
from .clip_grad import _tensors

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened into one vector, in order."""
    ts = _tensors("parameters_to_vector", parameters)
    return cat([t.reshape(-1) for t in ts], 0)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of `vec` into the parameters (in place, their shapes kept)."""
    ts = _tensors("vector_to_parameters", parameters)
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise ShapeError(f"vector_to_parameters: expected a 1-D tensor, got "
                         f"{getattr(vec, 'shape', type(vec).__name__)}")
    total = sum(t.numel() for t in ts)
    if vec.shape[0] != total:
        raise ShapeError(f"vector_to_parameters: the vector has {vec.shape[0]} elements, the "
                         f"parameters {total}")
    at = 0
    with no_grad():
        for t in ts:
            n = t.numel()
            t.copy_(vec[at:at + n].reshape(t.shape))
            at += n
