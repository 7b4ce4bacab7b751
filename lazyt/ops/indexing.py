"""Indexing: the primitives `gather` and `scatter_add` (torch's semantics), and the composites
`index_select` (an embedding lookup) and `index_add` written with them, which numpy and wgpu
give direct kernels. Index tensors are int64 and never differentiated; each op keeps its index
for backward. Compute-bound. Indices out of range raise when the op runs (`checks_data`)."""
from __future__ import annotations

from .. import dtype as dt
from .. import shape as sh
from ..errors import DTypeError, ShapeError
from .declare import Grad, OpDef, declare, index, static, tensor
from .meta import same_dtype
from .reduce import check_dims


def _check_index(op: str, idx, rank: int | None = None) -> None:
    if idx.dtype is not dt.int64:
        raise DTypeError(f"{op}: index must be int64, got {idx.dtype.name} "
                         f"{tuple(idx.shape)}")
    if rank is not None and len(idx.shape) != rank:
        raise ShapeError(f"{op}: index must be {rank}-D, got shape {tuple(idx.shape)}")



def _pad_to(B, grad, shape: tuple):
    """Zero-pad `grad` at the end of each dim up to `shape` (scatter_add reads only the part
    of `src` its index covers; the rest gets a zero gradient)."""
    dtype = B.dtype_of(grad)
    for d, n in enumerate(shape):
        cur = B.shape_of(grad)
        if cur[d] < n:
            grad = B.cat([grad, B.zeros(cur[:d] + (n - cur[d],) + cur[d + 1:], dtype)], d)
    return grad


# ---------------------------------------------------------------------------- gather
def _gather_meta(x, dim, index):
    _check_index("gather", index)
    check_dims("gather", x.shape, (dim,))
    return sh.gather("gather", tuple(x.shape), dim, tuple(index.shape)), x.dtype


def _gather_grad(B, g, ctx):
    zeros = B.zeros(ctx.shape("x"), B.dtype_of(g))
    return {"x": B.scatter_add(zeros, ctx.args.dim, ctx.saved("index"), g)}


gather = declare(OpDef(
    "gather", (tensor("x"), static("dim"), index("index")), _gather_meta, checks_data=True,
    grad=Grad(_gather_grad, reads=("index",)),
    doc="torch.gather: `out[i][j][k] = x[i][index[i][j][k]][k]` for dim 1."))


# ---------------------------------------------------------------------------- scatter_add
def _scatter_add_meta(x, dim, index, src):
    _check_index("scatter_add", index)
    check_dims("scatter_add", x.shape, (dim,))
    same_dtype("scatter_add", x, src)
    sh.gather("scatter_add", tuple(x.shape), dim, tuple(index.shape))
    if len(src.shape) != len(index.shape) or any(
            a > b for a, b in zip(index.shape, src.shape)):
        raise ShapeError(f"scatter_add: index shape {tuple(index.shape)} must fit inside src "
                         f"shape {tuple(src.shape)}")
    return tuple(x.shape), x.dtype


def _scatter_add_grad(B, g, ctx):
    out = {"x": g}
    if ctx.needs("src"):
        picked = B.gather(g, ctx.args.dim, ctx.saved("index"))
        out["src"] = _pad_to(B, picked, ctx.shape("src"))
    return out


scatter_add = declare(OpDef(
    "scatter_add", (tensor("x"), static("dim"), index("index"), tensor("src")),
    _scatter_add_meta, checks_data=True,
    grad=Grad(_scatter_add_grad, reads=lambda ctx: ("index",) if ctx.needs("src") else ()),
    doc="A copy of `x` with `src` added at `index` along `dim` (torch.scatter_add)."))


# ---------------------------------------------------------------------------- index_select
def _line_index(B, index, dim: int, shape: tuple):
    """The 1-D `index` viewed along `dim` of `shape` (broadcast elsewhere)."""
    view = [1] * len(shape)
    view[dim] = B.shape_of(index)[0]
    return B.expand(B.reshape(index, tuple(view)), shape)


def _index_select_meta(x, dim, index):
    _check_index("index_select", index, 1)
    check_dims("index_select", x.shape, (dim,))
    return tuple(x.shape[:dim]) + tuple(index.shape) + tuple(x.shape[dim + 1:]), x.dtype


def _index_select(B, x, dim, index):
    shape = B.shape_of(x)
    out_shape = shape[:dim] + (B.shape_of(index)[0],) + shape[dim + 1:]
    return B.gather(x, dim, _line_index(B, index, dim, out_shape))


def _index_select_grad(B, g, ctx):
    zeros = B.zeros(ctx.shape("x"), B.dtype_of(g))
    return {"x": B.index_add(zeros, ctx.args.dim, ctx.saved("index"), g)}


index_select = declare(OpDef(
    "index_select", (tensor("x"), static("dim"), index("index")), _index_select_meta,
    decompose=_index_select, checks_data=True, grad=Grad(_index_select_grad, reads=("index",)),
    doc="The slices of `x` along `dim` picked by the 1-D int64 `index`."))


# ---------------------------------------------------------------------------- index_add
def _index_add_meta(x, dim, index, src):
    _check_index("index_add", index, 1)
    check_dims("index_add", x.shape, (dim,))
    same_dtype("index_add", x, src)
    want = tuple(x.shape[:dim]) + tuple(index.shape) + tuple(x.shape[dim + 1:])
    if tuple(src.shape) != want:
        raise ShapeError(f"index_add: source shape {tuple(src.shape)} must be {want} for input "
                         f"{tuple(x.shape)}, dim {dim} and {index.shape[0]} indices")
    return tuple(x.shape), x.dtype


def _index_add(B, x, dim, index, src):
    return B.scatter_add(x, dim, _line_index(B, index, dim, B.shape_of(src)), src)


def _index_add_grad(B, g, ctx):
    out = {"x": g}
    if ctx.needs("src"):
        out["src"] = B.index_select(g, ctx.args.dim, ctx.saved("index"))
    return out


index_add = declare(OpDef(
    "index_add", (tensor("x"), static("dim"), index("index"), tensor("src")), _index_add_meta,
    decompose=_index_add, checks_data=True,
    grad=Grad(_index_add_grad, reads=lambda ctx: ("index",) if ctx.needs("src") else ()),
    doc="A copy of `x` with the slices of `src` along `dim` added at rows `index` (1-D)."))
