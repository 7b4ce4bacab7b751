"""A fused matmul + bias + ReLU op as a lazyt backend extension.

`Backend` declares the op; `forward.py` registers its numpy and Cube (wgpu/CUDA) impls and
`backward.py` its handwritten Autodiff impl. Fusion records the op lazily from `output_shape`.
"""
from __future__ import annotations

import lazyt
from lazyt import Dispatch, Tensor
from lazyt.backends import Autodiff, Cube, Fusion, Numpy
from lazyt.extension import backend_extension, fusion


def output_shape(lhs: tuple, rhs: tuple, bias: tuple) -> tuple:
    """The output shape of `relu(lhs @ rhs + bias)`; raises on inputs the kernel cannot take."""
    rank = len(lhs)
    if rank < 2:
        raise ValueError(f"matmul needs at least two dims, got lhs {lhs}")
    if len(rhs) != rank:
        raise ValueError(f"lhs and rhs ranks differ: {lhs} vs {rhs}")
    if lhs[-1] != rhs[-2]:
        raise ValueError(f"contraction dims differ: lhs {lhs} @ rhs {rhs}")
    out = []
    for a, b in zip(lhs[:-2], rhs[:-2]):
        if a != b and a != 1 and b != 1:
            raise ValueError(f"batch dims do not broadcast: lhs {lhs}, rhs {rhs}")
        out.append(b if a == 1 else a)
    out += [lhs[-2], rhs[-1]]
    out = tuple(out)
    if tuple(bias) != out:
        raise ValueError(f"bias must have the output's shape {out}, got {tuple(bias)}")
    return out


@backend_extension(Autodiff, Cube, Numpy, Fusion)
class Backend(lazyt.Backend):
    """The extension's op declarations (impls live in forward.py and backward.py)."""

    @fusion(dtype="lhs", shape=output_shape)
    def fused_matmul_add_relu(lhs, rhs, bias):
        """relu(lhs @ rhs + bias) in one kernel."""


def matmul_add_relu_custom(lhs: Tensor, rhs: Tensor, bias: Tensor) -> Tensor:
    out = Dispatch.fused_matmul_add_relu(lhs.into_dispatch(), rhs.into_dispatch(),
                                         bias.into_dispatch())
    return Tensor.from_dispatch(out)


def matmul_add_relu_reference(lhs: Tensor, rhs: Tensor, bias: Tensor) -> Tensor:
    return lazyt.relu(lhs.matmul(rhs) + bias)


# Registering the impls is part of importing the extension.
from . import backward, forward  # noqa: E402,F401
