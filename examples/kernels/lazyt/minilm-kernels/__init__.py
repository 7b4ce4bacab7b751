"""Kernel repo `lazyt/minilm-kernels`: a fused QKV self-attention and a fused LayerNorm for
`lazyt.models.BertModel`, loaded by the kernel hub from `examples/kernels/` (see
`examples/minilm.py --kernels`):

    KernelConfig({"BertSelfAttention": "lazyt/minilm-kernels:FusedQKVSelfAttention",
                  "LayerNorm": "lazyt/minilm-kernels:FusedLayerNorm"})

`FusedQKVSelfAttentionLayout` holds one `qkv` projection [3 * hidden, hidden]; its
`conversion_mapping` concatenates the checkpoint's `query`, `key` and `value` weights and biases
(and splits them again on save). The three projections read the same input, so this is a
class-name key on the self-attention module, not a tuple (sibling) fusion key.

`FusedLayerNorm.forward` is one call of the `layer_norm(x, weight, bias, eps)` backend extension
(numpy impl: mean, variance, scale and shift per row in one pass; a handwritten Autodiff
backward; Fusion records it as one opaque op). It declares `devices = ("cpu",)`: elsewhere the
hub falls back to `nn.LayerNorm`. `FusedQKVSelfAttention` is written with ordinary lazyt ops; an
`attention(q, k, v, bias)` extension (scores, mask, softmax and the product with v in one
kernel, flash-attention style) would plug in after its single [hidden, 3 * hidden] matmul.
"""
import math

import numpy as np

import lazyt
from lazyt import Dispatch, Tensor, nn
from lazyt.autodiff import Backward, Tracked, UnTracked
from lazyt.backends import Autodiff, Fusion, Numpy
from lazyt.extension import backend_extension, fusion
from lazyt.kernels import Concatenate, WeightConverter
from lazyt.models.bert import merge_heads, scaled_dot_product_attention
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp


# ---------------------------------------------------------------------- the layer_norm op
def layer_norm_shape(x: tuple, weight: tuple, bias: tuple, eps) -> tuple:
    """The output shape (x's); raises unless weight and bias are (x.shape[-1],)."""
    if len(x) < 1:
        raise ValueError(f"x needs a feature dim, got shape {x}")
    for name, s in (("weight", weight), ("bias", bias)):
        if tuple(s) != (x[-1],):
            raise ValueError(f"{name} must have shape ({x[-1]},), got {tuple(s)}")
    return tuple(x)


@backend_extension(Autodiff, Numpy, Fusion)
class LayerNormBackend(lazyt.Backend):
    """LayerNorm over the last dim as one op."""

    @fusion(dtype="x", shape=layer_norm_shape)
    def layer_norm(x, weight, bias, eps):
        """`(x - mean) / sqrt(var + eps) * weight + bias` per row (float32 math for float16)."""


@LayerNormBackend.implement(Numpy)
def layer_norm(x, weight, bias, eps):
    compute = np.float32 if x.dtype == np.float16 else x.dtype
    h = x.astype(compute, copy=False)
    centered = h - h.mean(-1, keepdims=True)
    inv_std = 1 / np.sqrt((centered * centered).mean(-1, keepdims=True)
                          + np.asarray(eps, compute))
    out = centered * inv_std * weight.astype(compute, copy=False) + bias.astype(compute,
                                                                               copy=False)
    return out.astype(x.dtype, copy=False)


class LayerNormBackward(Backward, n_parents=3):
    """dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = dy weight;
    dweight = sum(dy xhat); dbias = sum(dy). Row statistics are recomputed from x."""

    def backward(self, ops, grads, checkpointer):
        node_x, node_w, node_b = ops.parents
        grad = grads.consume(ops.node)
        x_state, w_state, eps, dtype_b = ops.state
        B = ops.backend
        x = checkpointer.retrieve_node_output(x_state)
        weight = checkpointer.retrieve_node_output(w_state)
        dtype_x, dtype_w = B.dtype_of(x), B.dtype_of(weight)
        compute = lazyt.float32 if dtype_x is lazyt.float16 else dtype_x

        def c(t):
            return t if B.dtype_of(t) is compute else B.cast(t, compute)

        def back(t, dtype):
            return t if dtype is compute else B.cast(t, dtype)

        def mul(a, b):
            return B.binary(BinaryOp.MUL, a, b)

        def sub(a, b):
            return B.binary(BinaryOp.SUB, a, b)

        def row_mean(t):
            return B.reduce(ReduceOp.MEAN, t, (1,), True)

        shape_x = B.shape_of(x)
        rows, hidden = math.prod(shape_x[:-1]), shape_x[-1]
        h = c(B.reshape(x, (rows, hidden)))
        dy = c(B.reshape(grad, (rows, hidden)))
        centered = sub(h, row_mean(h))
        rstd = B.unary(UnaryOp.RSQRT, B.binary(BinaryOp.ADD, row_mean(mul(centered, centered)),
                                                eps))
        xhat = mul(centered, rstd)
        if node_w is not None:
            grads.register(node_w, back(B.reduce(ReduceOp.SUM, mul(dy, xhat), (0,), False),
                                        dtype_w))
        if node_b is not None:
            grads.register(node_b, back(B.reduce(ReduceOp.SUM, dy, (0,), False), dtype_b))
        if node_x is not None:
            d_xhat = mul(dy, c(weight))
            d_x = mul(rstd, sub(sub(d_xhat, row_mean(d_xhat)),
                                mul(xhat, row_mean(mul(d_xhat, xhat)))))
            grads.register(node_x, back(B.reshape(d_x, shape_x), dtype_x))


@LayerNormBackend.implement(Autodiff, name="layer_norm")
def layer_norm_autodiff(B, ckpt, x, weight, bias, eps):
    prep = LayerNormBackward().prepare(ckpt, [x.node, weight.node, bias.node])
    prims = (x.primitive, weight.primitive, bias.primitive)
    match prep.compute_bound().stateful():
        case Tracked(prep):
            state = (prep.checkpoint(x), prep.checkpoint(weight), eps, B.dtype_of(bias.primitive))
            return prep.finish(state, B.layer_norm(*prims, eps))
        case UnTracked(prep):
            return prep.finish(B.layer_norm(*prims, eps))


def layer_norm_op(x: Tensor, weight: Tensor, bias: Tensor, eps: float) -> Tensor:
    """Tensor-level entry of the `layer_norm` extension op."""
    return Tensor.from_dispatch(Dispatch.layer_norm(x.into_dispatch(), weight.into_dispatch(),
                                                    bias.into_dispatch(), float(eps)))


def layer_norm_reference(x, weight, bias, eps):
    """The same computation from ordinary ops."""
    h = x.float()
    centered = h - h.mean(-1, keepdim=True)
    inv_std = ((centered * centered).mean(-1, keepdim=True) + eps).rsqrt()
    return (centered * inv_std * weight.float() + bias.float()).to(x.dtype)


class FusedQKVSelfAttentionLayout(nn.Module):
    """`BertSelfAttention`'s parameters with query, key and value in one `qkv` Linear."""

    conversion_mapping = [
        WeightConverter(["query.weight", "key.weight", "value.weight"], "qkv.weight",
                        operations=[Concatenate(dim=0)]),
        WeightConverter(["query.bias", "key.bias", "value.bias"], "qkv.bias",
                        operations=[Concatenate(dim=0)]),
    ]

    def __init__(self, hidden_size, num_attention_heads, attention_probs_dropout_prob=0.0):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.dropout = nn.Dropout(attention_probs_dropout_prob)


class FusedQKVSelfAttention(nn.Module):
    """One projection for q, k and v, split by a view: [b, t, 3h] -> 3 x [b, heads, t, d]."""

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        qkv = self.qkv(hidden_states).reshape(b, t, 3, self.num_attention_heads,
                                              self.attention_head_size)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        return merge_heads(scaled_dot_product_attention(q, k, v, attention_mask, self.dropout))


class FusedLayerNormLayout(nn.Module):
    """The parameters of `nn.LayerNorm` (same names: no conversion needed)."""

    conversion_mapping = []

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        if len(shape) != 1 or not elementwise_affine or not bias:
            raise lazyt.LazytError(f"FusedLayerNorm: supports an affine norm over the last dim "
                                   f"with bias, got normalized_shape={normalized_shape}, "
                                   f"elementwise_affine={elementwise_affine}, bias={bias}")
        self.eps = eps
        self.weight = nn.Parameter(lazyt.ones(shape, dtype=dtype, device=device))
        self.bias = nn.Parameter(lazyt.zeros(shape, dtype=dtype, device=device))


class FusedLayerNorm(nn.Module):
    """LayerNorm over the last dim as one `layer_norm` extension op (numpy impl; elsewhere the
    hub falls back to the original `nn.LayerNorm`)."""

    devices = ("cpu",)

    def forward(self, x):
        return layer_norm_op(x, self.weight, self.bias, self.eps)


class layers:
    FusedQKVSelfAttention = FusedQKVSelfAttention
    FusedLayerNorm = FusedLayerNorm
