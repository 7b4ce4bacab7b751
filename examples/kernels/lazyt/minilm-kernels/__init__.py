"""Kernel repo `lazyt/minilm-kernels`: a fused QKV self-attention and a fused LayerNorm for
`lazyt.models.BertModel`, loaded by the kernel hub from `examples/kernels/` (see
`examples/minilm.py --kernels`):

    KernelConfig({"BertSelfAttention": "lazyt/minilm-kernels:FusedQKVSelfAttention",
                  "LayerNorm": "lazyt/minilm-kernels:FusedLayerNorm"})

`FusedQKVSelfAttentionLayout` holds one `qkv` projection [3 * hidden, hidden]; its
`conversion_mapping` concatenates the checkpoint's `query`, `key` and `value` weights and biases
(and splits them again on save). The three projections read the same input, so this is a
class-name key on the self-attention module, not a tuple (sibling) fusion key.

Both kernels are written with ordinary lazyt ops for now. Where a backend extension would plug
in: `FusedLayerNorm.forward` becomes one call of a `layer_norm(x, weight, bias, eps)` op
registered with `@backend_extension(Autodiff, Cube, Numpy, Fusion)` (one pass over each row:
mean, variance, scale and shift in a single kernel); `FusedQKVSelfAttention.forward` keeps its
single [hidden, 3 * hidden] matmul and hands q, k, v to an `attention(q, k, v, bias)` op (one
kernel for scores, mask, softmax and the product with v, flash-attention style).
"""
import lazyt
from lazyt import nn
from lazyt.kernels import Concatenate, WeightConverter
from lazyt.models.bert import merge_heads, scaled_dot_product_attention


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
    """LayerNorm over the last dim, float32 math, weight and bias applied in one expression."""

    def forward(self, x):
        h = x.float()
        centered = h - h.mean(-1, keepdim=True)
        inv_std = ((centered * centered).mean(-1, keepdim=True) + self.eps).rsqrt()
        return (centered * inv_std * self.weight.float() + self.bias.float()).to(x.dtype)


class layers:
    FusedQKVSelfAttention = FusedQKVSelfAttention
    FusedLayerNorm = FusedLayerNorm
