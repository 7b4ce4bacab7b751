"""Scans: `cumsum(x, dim)`, the running sum along one dim (torch.cumsum).

The whole op is this declaration plus one kernel per base backend (`NumpyBackend.cumsum`,
`WgpuBackend.cumsum`): `Tensor.cumsum`, `lazyt.cumsum`, Dispatch, Autodiff and Fusion come
from here.
"""
from __future__ import annotations

from .. import dtype as dt
from .. import shape as sh
from .declare import Grad, OpDef, declare, static, tensor
from .reduce import check_dims


def _cumsum_meta(x, dim):
    check_dims("cumsum", x.shape, (dim,))
    return tuple(x.shape), x.dtype


def _cumsum_grad(B, g, ctx):
    """The gradient of a running sum is the running sum from the other end: reverse `g`
    along the dim, cumsum it, reverse back."""
    dim = ctx.args.dim
    shape = B.shape_of(g)
    n = shape[dim]
    if n <= 1:
        return {"x": g}
    flip = tuple((n - 1, -1, -1) if i == dim else (0, s, 1) for i, s in enumerate(shape))
    return {"x": B.slice(B.cumsum(B.slice(g, flip), dim), flip)}


def scan_frontend(name: str, scan, x, dim, dtype=None):
    """torch's rules for a running sum or product `scan(x, dim)`: integers and bools run in
    int64, `dtype=` casts the input first, float16 runs in float32 and is rounded once, a 0-d
    tensor is its own result."""
    d = sh.normalize_dim(name, dim, x.ndim)
    if dtype is not None:
        x = x.to(dtype)
    elif not x.dtype.is_float:
        x = x.to(dt.int64)
    if x.ndim == 0:
        return x
    if x.dtype is dt.float16:
        return scan(x.to(dt.float32), d).to(dt.float16)
    return scan(x, d)


def _cumsum_frontend(cumsum, x, dim, *, dtype=None):
    return scan_frontend("cumsum", cumsum, x, dim, dtype)


cumsum = declare(OpDef(
    "cumsum", (tensor("x"), static("dim")), _cumsum_meta, grad=Grad(_cumsum_grad),
    method="cumsum", function="cumsum", frontend=_cumsum_frontend,
    doc="`out[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...]` along `dim`."))
