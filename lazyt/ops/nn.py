"""Composites of neural-network models, each written once over primitives: `softmax`,
`log_softmax`, `gelu`, `silu`, `layer_norm`, `rms_norm`, `linear`, `attention`.

A base backend with a faster kernel for one of them defines a method of its name (numpy and
wgpu do for softmax, layer_norm, linear and attention); the Fusion layer then records an
untracked call as that one kernel. Tracked inputs are differentiated through the primitives
below.
"""
from __future__ import annotations

from .. import dtype as dt
from .. import shape as sh
from ..errors import InvalidArgumentError, ShapeError
from .codes import BinaryOp, ReduceOp, UnaryOp
from .declare import Grad, OpDef, declare, optional, static, tensor, value
from .matmul import cross_reads
from .meta import same_dtype
from .reduce import check_dims

Bi, R, U = BinaryOp, ReduceOp, UnaryOp



def _floating(x):
    return x if x.dtype.is_float else x.to(dt.DEFAULT_FLOAT)


def _along_frontend(op: str, doc: str):
    """The user form of a composite along one dim: integers in the default float, negative
    dims, a 0-d tensor as one element along the dim, an empty tensor returned as it is."""
    def frontend(entry, x, dim: int = -1):
        x = _floating(x)
        d = sh.normalize_dim(op, dim, x.ndim)
        if sh.numel(x.shape) == 0:
            return x
        if x.ndim == 0:
            return entry(x.reshape(1), 0).reshape(())
        return entry(x, d)
    frontend.__doc__ = doc
    return frontend


def _along_meta(op: str):
    def meta(x, dim):
        check_dims(op, x.shape, (dim,))
        return tuple(x.shape), x.dtype
    return meta


# ---------------------------------------------------------------------------- softmax
def _softmax(B, x, dim):
    if B.dtype_of(x) is dt.float16:  # a float16 sum of many terms overflows
        return B.cast(B.softmax(B.cast(x, dt.float32), dim), dt.float16)
    shifted = B.binary(Bi.SUB, x, B.reduce(R.MAX, x, (dim,), True))
    e = B.unary(U.EXP, shifted)
    return B.binary(Bi.DIV, e, B.reduce(R.SUM, e, (dim,), True))


softmax = declare(OpDef(
    "softmax", (tensor("x"), static("dim")), _along_meta("softmax"), decompose=_softmax,
    method="softmax", function="softmax", frontend=_along_frontend(
        "softmax", "`exp(x) / sum(exp(x))` along `dim` (float16 computed in float32, rounded "
        "once)."),
    doc="`exp(x - max) / sum(exp(x - max))` along `dim` (float16 computed in float32)."))


def _log_softmax(B, x, dim):
    if B.dtype_of(x) is dt.float16:
        return B.cast(B.log_softmax(B.cast(x, dt.float32), dim), dt.float16)
    shifted = B.binary(Bi.SUB, x, B.reduce(R.MAX, x, (dim,), True))
    lse = B.unary(U.LOG, B.reduce(R.SUM, B.unary(U.EXP, shifted), (dim,), True))
    return B.binary(Bi.SUB, shifted, lse)


log_softmax = declare(OpDef(
    "log_softmax", (tensor("x"), static("dim")), _along_meta("log_softmax"),
    decompose=_log_softmax, method="log_softmax", function="log_softmax",
    frontend=_along_frontend("log_softmax", "`log(softmax(x))` along `dim`, computed stably."), doc="`x - max - log(sum(exp(x - max)))` along `dim`."))


# ---------------------------------------------------------------------------- activations
def _gelu(B, x, approximate="none"):
    if approximate == "tanh":
        inner = B.binary(Bi.MUL, B.binary(Bi.MUL, B.binary(Bi.MUL, x, x), x), 0.044715)
        inner = B.binary(Bi.MUL, B.binary(Bi.ADD, x, inner), 0.7978845608028654)  # sqrt(2/pi)
        t = B.binary(Bi.ADD, B.unary(U.TANH, inner), 1)
    else:
        t = B.binary(Bi.ADD, B.unary(U.ERF, B.binary(Bi.MUL, x, 0.7071067811865476)), 1)
    return B.binary(Bi.MUL, B.binary(Bi.MUL, x, t), 0.5)


def _gelu_frontend(entry, x, approximate: str = "none"):
    """Exact gelu `x * (1 + erf(x / sqrt 2)) / 2`, or `approximate="tanh"`."""
    if approximate not in ("none", "tanh"):
        raise InvalidArgumentError(f"gelu: approximate must be 'none' or 'tanh', got "
                                   f"{approximate!r}")
    return entry(_floating(x), approximate)


gelu = declare(OpDef(
    "gelu", (tensor("x"), static("approximate", "none")), lambda x, approximate="none":
    (tuple(x.shape), x.dtype), decompose=_gelu, method="gelu", function="gelu",
    frontend=_gelu_frontend,
    doc="Exact gelu `x * (1 + erf(x / sqrt 2)) / 2`, or the tanh approximation."))

def _silu_frontend(entry, x):
    """`x * sigmoid(x)`."""
    return entry(_floating(x))


silu = declare(OpDef(
    "silu", (tensor("x"),), lambda x: (tuple(x.shape), x.dtype),
    decompose=lambda B, x: B.binary(Bi.MUL, x, B.unary(U.SIGMOID, x)), method="silu",
    function="silu", frontend=_silu_frontend,
    doc="`x * sigmoid(x)`."))


# ---------------------------------------------------------------------------- layer_norm
def _layer_norm_meta(x, n_dims, eps, weight=None, bias=None):
    nd = len(x.shape)
    if not 0 <= n_dims <= nd:
        raise ShapeError(f"layer_norm: cannot normalize {n_dims} trailing dims of shape "
                         f"{tuple(x.shape)}")
    inner = tuple(x.shape[nd - n_dims:])
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            if tuple(t.shape) != inner:
                raise ShapeError(f"layer_norm: {name} of shape {tuple(t.shape)} should be "
                                 f"{inner} for input {tuple(x.shape)}")
            same_dtype("layer_norm", x, t)
    return tuple(x.shape), x.dtype


def _layer_norm(B, x, n_dims, eps, weight=None, bias=None):
    _layer_norm_meta(_Meta(B, x), n_dims, eps)  # the one rule checks n_dims on every path
    nd = len(B.shape_of(x))
    dims = tuple(range(nd - n_dims, nd))
    centered = B.binary(Bi.SUB, x, B.reduce(R.MEAN, x, dims, True))
    var = B.reduce(R.MEAN, B.binary(Bi.MUL, centered, centered), dims, True)
    y = B.binary(Bi.MUL, centered, B.unary(U.RSQRT, B.binary(Bi.ADD, var, eps)))
    if weight is not None:
        y = B.binary(Bi.MUL, y, weight)
    if bias is not None:
        y = B.binary(Bi.ADD, y, bias)
    return y


layer_norm = declare(OpDef(
    "layer_norm", (tensor("x"), static("n_dims"), value("eps"), optional("weight"),
                   optional("bias")), _layer_norm_meta, decompose=_layer_norm,
    doc="`(x - mean) / sqrt(var + eps) * weight + bias` over the trailing `n_dims` dims "
        "(biased variance, as torch); `weight`/`bias` have those dims' shape and x's dtype."))


# ---------------------------------------------------------------------------- rms_norm
def _rms_norm_meta(x, n_dims, eps, weight=None):
    nd = len(x.shape)
    if not 0 <= n_dims <= nd:
        raise ShapeError(f"rms_norm: cannot normalize {n_dims} trailing dims of shape "
                         f"{tuple(x.shape)}")
    inner = tuple(x.shape[nd - n_dims:])
    if weight is not None:
        if tuple(weight.shape) != inner:
            raise ShapeError(f"rms_norm: weight of shape {tuple(weight.shape)} should be "
                             f"{inner} for input {tuple(x.shape)}")
        same_dtype("rms_norm", x, weight)
    return tuple(x.shape), x.dtype


def _rms_norm(B, x, n_dims, eps, weight=None):
    _rms_norm_meta(_Meta(B, x), n_dims, eps)
    nd = len(B.shape_of(x))
    dims = tuple(range(nd - n_dims, nd))
    mean_sq = B.reduce(R.MEAN, B.binary(Bi.MUL, x, x), dims, True)
    y = B.binary(Bi.MUL, x, B.unary(U.RSQRT, B.binary(Bi.ADD, mean_sq, eps)))
    if weight is not None:
        y = B.binary(Bi.MUL, y, weight)
    return y


rms_norm = declare(OpDef(
    "rms_norm", (tensor("x"), static("n_dims"), value("eps"), optional("weight")),
    _rms_norm_meta, decompose=_rms_norm,
    doc="`x / sqrt(mean(x^2) + eps) * weight` over the trailing `n_dims` dims (the Llama "
        "norm: no centering, no bias); `weight` has those dims' shape and x's dtype."))


class _Meta:
    """A backend primitive seen through `.shape` and `.dtype` (for rules called on a path that
    holds primitives)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, B, x):
        self.shape = tuple(B.shape_of(x))
        self.dtype = B.dtype_of(x)


# ---------------------------------------------------------------------------- linear
def _linear_meta(x, weight, bias=None):
    if not x.shape or len(weight.shape) != 2 or x.shape[-1] != weight.shape[1]:
        raise ShapeError(f"linear: input {tuple(x.shape)} does not end with the weight's "
                         f"in_features ({tuple(weight.shape)} is [out, in])")
    same_dtype("linear", x, weight)
    if bias is not None:
        if tuple(bias.shape) != tuple(weight.shape[:1]):
            raise ShapeError(f"linear: bias of shape {tuple(bias.shape)} should be "
                             f"{tuple(weight.shape[:1])} for the weight {tuple(weight.shape)}")
        same_dtype("linear", x, bias)
    return tuple(x.shape[:-1]) + tuple(weight.shape[:1]), x.dtype


def _linear(B, x, weight, bias=None):
    if bias is not None:  # an add of its own: it fuses with what follows
        return B.binary(Bi.ADD, B.linear(x, weight), bias)
    shape = B.shape_of(x)
    wt = B.permute(weight, (1, 0))
    if len(shape) == 1:
        y = B.matmul(B.reshape(x, (1,) + shape), wt)
        return B.reshape(y, B.shape_of(y)[1:])
    if len(shape) > 2:
        wt = B.reshape(wt, (1,) * (len(shape) - 2) + B.shape_of(wt))
    return B.matmul(x, wt)


def _linear_grad(B, g, ctx):
    """x: g @ weight; weight: g^T @ x over the rows folded into one product, so the gradient
    comes out in the weight's own [out, in] layout (as the decomposed form's matmul gradient,
    it would be the transpose of an [in, out] product: a strided view every optimizer step
    reads); bias: g, summed back to [out] by the layer."""
    out = {}
    gshape = B.shape_of(g)           # x's batch dims + (out,)
    n_out = gshape[-1]
    if ctx.needs("x"):
        w = ctx.saved("weight")
        if len(gshape) == 1:
            out["x"] = B.reshape(B.matmul(B.reshape(g, (1, n_out)), w), (B.shape_of(w)[1],))
        else:
            out["x"] = B.matmul(g, B.reshape(w, (1,) * (len(gshape) - 2) + B.shape_of(w)))
    if ctx.needs("weight"):
        x = ctx.saved("x")
        xshape = B.shape_of(x)
        rows = sh.numel(xshape[:-1])
        g2 = B.reshape(g, (rows, n_out))
        out["weight"] = B.matmul(B.permute(g2, (1, 0)), B.reshape(x, (rows, xshape[-1])))
    if ctx.needs("bias"):
        out["bias"] = g
    return out


linear = declare(OpDef(
    "linear", (tensor("x"), tensor("weight"), optional("bias")), _linear_meta,
    decompose=_linear, grad=Grad(_linear_grad, reads=cross_reads("x", "weight")),
    doc="`x @ weight^T (+ bias)`: x [..., in], weight [out, in], bias [out] (nn.Linear)."))


# ---------------------------------------------------------------------------- attention
def _attention_meta(q, k, v, mask=None, scale=1.0):
    scores = sh.matmul(tuple(q.shape), tuple(k.shape[:-2]) + tuple(k.shape[:-3:-1]))
    shape = sh.matmul(scores, tuple(v.shape))
    if mask is not None and sh.broadcast("attention", scores, tuple(mask.shape)) != scores:
        raise ShapeError(f"attention: mask of shape {tuple(mask.shape)} does not broadcast "
                         f"to the scores {scores}")
    for t in (k, v) if mask is None else (k, v, mask):
        same_dtype("attention", q, t)
    return shape, q.dtype


def _attention(B, q, k, v, mask=None, scale=1.0):
    if B.dtype_of(q) is dt.float16:
        up = [None if t is None else B.cast(t, dt.float32) for t in (q, k, v, mask)]
        return B.cast(B.attention(*up, scale), dt.float16)
    nd = len(B.shape_of(k))
    scores = B.matmul(q, B.swap_dims(k, nd - 2, nd - 1))
    if scale != 1.0:
        scores = B.binary(Bi.MUL, scores, scale)
    if mask is None:
        return B.matmul(B.softmax(scores, nd - 1), v)
    scores = B.binary(Bi.ADD, scores, mask)
    # queries that see no key: softmax over zeros (finite, so no NaN reaches a gradient),
    # then weights of zero
    dead = B.binary(Bi.EQ, B.reduce(R.MAX, scores, (nd - 1,), True), float("-inf"))
    probs = B.softmax(B.where(dead, 0, scores), nd - 1)
    return B.matmul(B.where(dead, 0, probs), v)


attention = declare(OpDef(
    "attention", (tensor("q"), tensor("k"), tensor("v"), optional("mask"),
                  value("scale", 1.0)), _attention_meta, decompose=_attention,
    doc="`softmax(q @ k^T * scale + mask) @ v` for q [..., L, E], k [..., S, E], v "
        "[..., S, Ev] of one float dtype and rank; `mask` is an additive bias broadcasting "
        "to the scores. A query whose scores are all -inf gives zeros, not NaN."))
