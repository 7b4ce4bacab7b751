"""Function forms of the Tensor methods: `lazyt.relu(x)`, `lazyt.softmax(x, dim)`, ..."""
from __future__ import annotations

import math

import numpy as np

from . import dtype as dt
from . import shape as sh
from .dispatch import Dispatch, common_device
from .errors import DTypeError, InvalidArgumentError, ShapeError
from .tensor import (Tensor, _binary, cat, gather, index_add, index_select, matmul,  # noqa: F401
                     scatter_add, stack, where)
from .ops import BinaryOp


def _method(name: str):
    def fn(x: Tensor, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"`lazyt.{name}(x, ...)` is `x.{name}(...)`."
    return fn


_NAMES = ("relu gelu silu sigmoid tanh exp log sqrt rsqrt sin cos erf abs neg softmax "
          "log_softmax clamp sum mean max min prod argmax argmin var std reshape permute "
          "transpose squeeze unsqueeze flatten chunk split expand").split()
for _n in _NAMES:
    globals()[_n] = _method(_n)
del _n


def maximum(a, b) -> Tensor:
    return _binary(BinaryOp.MAXIMUM, a, b)


def minimum(a, b) -> Tensor:
    return _binary(BinaryOp.MINIMUM, a, b)


def add(a, b) -> Tensor:
    return _binary(BinaryOp.ADD, a, b)


def sub(a, b) -> Tensor:
    return _binary(BinaryOp.SUB, a, b)


def mul(a, b) -> Tensor:
    return _binary(BinaryOp.MUL, a, b)


def div(a, b) -> Tensor:
    return _binary(BinaryOp.DIV, a, b)


def pow(a, b) -> Tensor:
    return _binary(BinaryOp.POW, a, b)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """`softmax(query @ key^T * scale + mask) @ value`, as torch's function of this name.

    query [..., L, E], key [..., S, E] and value [..., S, Ev] share one float dtype; their
    batch dims broadcast. `attn_mask` broadcasts to the scores [..., L, S]: a bool mask keeps
    the keys where it is True, a float mask (query's dtype) is added. `is_causal` lets query
    i see keys 0..i. `scale` defaults to 1 / sqrt(E). A query that sees no key gives zeros.
    `dropout_p` drops attention weights (always, as torch: pass 0.0 outside training).
    float16 is computed in float32 and rounded once.

    One helper call (`Backend.attention`): the numpy backend computes a few heads at a time
    in cache instead of the whole batch's scores; gradients reach all inputs and a float mask.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise DTypeError(f"scaled_dot_product_attention: {name} must be a Tensor, got "
                             f"{type(t).__name__}")
        if not t.dtype.is_float:
            raise DTypeError(f"scaled_dot_product_attention: {name} must be floating point, "
                             f"got {t.dtype.name}")
        if t.ndim < 2:
            raise ShapeError(f"scaled_dot_product_attention: {name} needs rank >= 2 "
                             f"([..., seq, features]), got shape {t.shape}")
    common_device("scaled_dot_product_attention", (query, key, value))
    if not (query.dtype is key.dtype is value.dtype):
        raise DTypeError("scaled_dot_product_attention: query, key and value must have one "
                         f"dtype, got {query.dtype.name}, {key.dtype.name}, {value.dtype.name}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError("scaled_dot_product_attention: expected query [..., L, E], key "
                         f"[..., S, E] and value [..., S, Ev], got {query.shape}, {key.shape} "
                         f"and {value.shape}")
    batch = sh.broadcast("scaled_dot_product_attention", query.shape[:-2], key.shape[:-2])
    batch = sh.broadcast("scaled_dot_product_attention", batch, value.shape[:-2])
    n_q, n_k, e = query.shape[-2], key.shape[-2], query.shape[-1]
    scores = batch + (n_q, n_k)
    nd = len(scores)
    if not 0.0 <= dropout_p <= 1.0:
        raise InvalidArgumentError(f"scaled_dot_product_attention: dropout_p must be in "
                                   f"[0, 1], got {dropout_p}")
    if scale is None:
        scale = 1.0 / math.sqrt(e) if e else 1.0
    mask = None
    if is_causal:
        if attn_mask is not None:
            raise InvalidArgumentError("scaled_dot_product_attention: pass attn_mask or "
                                       "is_causal=True, not both")
        from .creation import from_numpy
        attn_mask = from_numpy(np.tril(np.ones((n_q, n_k), bool)), device=query.device)
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            raise DTypeError("scaled_dot_product_attention: attn_mask must be a Tensor, got "
                             f"{type(attn_mask).__name__}")
        common_device("scaled_dot_product_attention", (query, attn_mask))
        if attn_mask.dtype is dt.bool_:
            mask = where(attn_mask, 0.0, float("-inf")).to(query.dtype)
        elif attn_mask.dtype is query.dtype or attn_mask.dtype is dt.float32:
            mask = attn_mask.to(query.dtype)  # as torch: float32 masks go with any query
        else:
            raise DTypeError("scaled_dot_product_attention: attn_mask must be bool, float32 "
                             f"or the query's dtype {query.dtype.name}, got "
                             f"{attn_mask.dtype.name}")
        try:
            fits = sh.broadcast("attn_mask", mask.shape, scores) == scores
        except ShapeError:
            fits = False
        if not fits:
            raise ShapeError(f"scaled_dot_product_attention: attn_mask of shape "
                             f"{attn_mask.shape} does not broadcast to the scores {scores}")
        mask = _with_rank(mask, nd)
    # one batch shape for all three (views), so every backend sees matching batch dims
    q, k, v = (_with_rank(t, nd) for t in (query, key, value))
    q, k, v = (t if t.shape[:-2] == batch else t.expand(batch + t.shape[-2:])
               for t in (q, k, v))
    if 0 in scores or 0 in value.shape[-1:]:
        # nothing to normalize: zeros, still connected to the inputs (zero gradients)
        return q.matmul(k.mT).matmul(v)
    if dropout_p == 0.0:
        return Dispatch.helper("attention", q, k, v, mask, float(scale))
    # dropout needs the weights themselves: the generic helper's steps, written out
    w = q.matmul(k.mT) * scale
    if mask is not None:
        dead = mask.max(-1, keepdim=True) == float("-inf")
        w = where(dead, 0.0, w + mask).softmax(-1)
        w = where(dead, 0.0, w)
    else:
        w = w.softmax(-1)
    from .creation import rand
    keep = rand(w.shape, device=w.device) >= dropout_p
    w = where(keep, w * (1.0 / (1.0 - dropout_p)), 0.0) if dropout_p < 1.0 else w * 0.0
    return w.matmul(v)


def _with_rank(t: Tensor, nd: int) -> Tensor:
    return t if t.ndim == nd else Dispatch.reshape(t, (1,) * (nd - t.ndim) + t.shape)


__all__ = list(_NAMES) + ["maximum", "minimum", "add", "sub", "mul", "div", "pow", "cat",
                          "stack", "where", "matmul", "gather", "index_select", "index_add",
                          "scatter_add", "scaled_dot_product_attention"]
