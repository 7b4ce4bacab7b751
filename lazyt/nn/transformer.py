"""torch's attention and transformer layers: `MultiheadAttention`, `TransformerEncoderLayer`
and `TransformerEncoder`, with torch's parameter names (a torch `state_dict` loads as it is),
argument conventions and masks.

Masks follow torch: a boolean `attn_mask` or `key_padding_mask` marks with True the positions
that may NOT be attended to; a float mask is added to the scores. `attn_mask` is [L, S] or
[N * num_heads, L, S]; `key_padding_mask` is [N, S]. Without `need_weights` the heads go
through `scaled_dot_product_attention` (one fused kernel where the backend has one).
"""
from __future__ import annotations

import copy
import math

from .. import creation
from .. import dtype as dt
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import cat, scaled_dot_product_attention, where
from ..tensor import Tensor
from . import functional as F
from .container import ModuleList
from .dropout import _probability, drop
from .init import xavier_normal_, xavier_uniform_
from .linear import Linear
from .module import Module
from .normalization import LayerNorm
from .parameter import Parameter


def _additive(name: str, mask, dtype) -> Tensor | None:
    """A torch-style mask as a float tensor to add to the scores (-inf where a boolean mask
    is True)."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise DTypeError(f"MultiheadAttention: {name} must be a Tensor or None, got "
                         f"{type(mask).__name__}")
    if mask.dtype.name == "bool":
        return where(mask, -math.inf, 0.0).to(dtype)
    if not mask.dtype.is_float:
        raise DTypeError(f"MultiheadAttention: {name} must be bool or float, got "
                         f"{mask.dtype.name}")
    return mask.to(dtype)


class MultiheadAttention(Module):
    """torch's `nn.MultiheadAttention(embed_dim, num_heads)`: `in_proj_weight` [3E, E] and
    `in_proj_bias` [3E] (or `q_proj_weight`/`k_proj_weight`/`v_proj_weight` when `kdim` or
    `vdim` differ from E), `out_proj` (a Linear). `forward` returns `(output, weights)`:
    the weights averaged over the heads ([N, L, S]), per head with
    `average_attn_weights=False`, or None with `need_weights=False`. `add_bias_kv` appends
    the learned `bias_k`/`bias_v` ([1, 1, E]) as one more key and value; `add_zero_attn` one
    more zero key and value per head (the masks let both through), as torch's."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        if num_heads < 1 or embed_dim % num_heads:
            raise ShapeError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by "
                             f"num_heads {num_heads}")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.head_dim = embed_dim // num_heads
        self.dropout = _probability("MultiheadAttention", dropout)
        self.batch_first = batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        kw = dict(dtype=dtype, device=device)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(
                xavier_uniform_(creation.empty((3 * embed_dim, embed_dim), **kw)))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            for name, d in (("q_proj_weight", embed_dim), ("k_proj_weight", self.kdim),
                            ("v_proj_weight", self.vdim)):
                setattr(self, name,
                        Parameter(xavier_uniform_(creation.empty((embed_dim, d), **kw))))
        if bias:
            self.in_proj_bias = Parameter(creation.zeros((3 * embed_dim,), **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        if bias:  # torch starts both biases at zero
            self.out_proj.bias = Parameter(creation.zeros((embed_dim,), **kw))
        if add_bias_kv:
            self.bias_k = Parameter(xavier_normal_(creation.empty((1, 1, embed_dim), **kw)))
            self.bias_v = Parameter(xavier_normal_(creation.empty((1, 1, embed_dim), **kw)))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = bool(add_zero_attn)

    def _projections(self) -> tuple:
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return ws, bs

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask=None,
                need_weights: bool = True, attn_mask=None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple:
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor) or t.ndim not in (2, 3):
                raise ShapeError(f"MultiheadAttention: {name} must be a 2-D (unbatched) or 3-D "
                                 f"tensor, got {getattr(t, 'shape', type(t).__name__)}")
        batched = query.ndim == 3
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(f"MultiheadAttention: query, key and value must all be batched "
                             f"or all unbatched, got {query.shape}, {key.shape}, {value.shape}")
        if is_causal and attn_mask is None:
            raise InvalidArgumentError("MultiheadAttention: is_causal is a hint that attn_mask "
                                       "is the causal mask; pass attn_mask too (as torch)")
        if not batched:  # one sequence: a batch of one
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:  # [N, L, E] -> [L, N, E], torch's inner layout
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        ln, n, e = query.shape
        s = key.shape[0]
        if e != self.embed_dim or key.shape[-1] != self.kdim or value.shape[-1] != self.vdim \
                or key.shape[:2] != value.shape[:2] or key.shape[1] != n:
            raise ShapeError(f"MultiheadAttention: expected query [L, N, {self.embed_dim}], "
                             f"key [S, N, {self.kdim}] and value [S, N, {self.vdim}], got "
                             f"{query.shape}, {key.shape}, {value.shape}")
        h, d = self.num_heads, self.head_dim
        (wq, wk, wv), (bq, bk, bv) = self._projections()

        def heads(x, length):  # [len, N, E] -> [N, H, len, D]
            return x.reshape(length, n, h, d).permute(1, 2, 0, 3)
        mask = self._mask(attn_mask, key_padding_mask, n, ln, s, query.dtype)
        kx, vx = F.linear(key, wk, bk), F.linear(value, wv, bv)
        extra = 0
        if self.bias_k is not None:    # one more key and value, learned
            kx = cat([kx, self.bias_k.expand(1, n, e)], 0)
            vx = cat([vx, self.bias_v.expand(1, n, e)], 0)
            extra += 1
        q = heads(F.linear(query, wq, bq), ln)
        k, v = heads(kx, s + extra), heads(vx, s + extra)
        if self.add_zero_attn:         # and one more zero key and value per head
            zero = creation.zeros((n, h, 1, d), dtype=k.dtype, device=k.device)
            k, v = cat([k, zero], 2), cat([v, zero], 2)
            extra += 1
        if mask is not None and extra:  # the added keys are never masked out
            mask = F.pad(mask, (0, extra))
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q @ k.mT) * (1.0 / math.sqrt(d))
            if mask is not None:
                scores = scores + mask
            weights = scores.softmax(-1)
            if p > 0.0:
                weights = drop(weights, p)
            out = weights @ v
        else:
            out = scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            weights = None
        out = self.out_proj(out.permute(2, 0, 1, 3).reshape(ln, n, e))
        if weights is not None and average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out = out.squeeze(1)
            if weights is not None:
                weights = weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _mask(self, attn_mask, key_padding_mask, n: int, ln: int, s: int, dtype):
        """The additive mask [N or 1, H or 1, L or 1, S] from torch's two masks, or None."""
        total = None
        am = _additive("attn_mask", attn_mask, dtype)
        if am is not None:
            if am.shape == (ln, s):
                am = am.reshape(1, 1, ln, s)
            elif am.shape == (n * self.num_heads, ln, s):
                am = am.reshape(n, self.num_heads, ln, s)
            else:
                raise ShapeError(f"MultiheadAttention: attn_mask must be [{ln}, {s}] or "
                                 f"[{n * self.num_heads}, {ln}, {s}], got {am.shape}")
            total = am
        kp = _additive("key_padding_mask", key_padding_mask, dtype)
        if kp is not None:
            if kp.shape != (n, s):
                raise ShapeError(f"MultiheadAttention: key_padding_mask must be [{n}, {s}], "
                                 f"got {kp.shape}")
            kp = kp.reshape(n, 1, 1, s)
            total = kp if total is None else total + kp
        return total

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


_ACTIVATIONS = {"relu": lambda x: x.relu(), "gelu": lambda x: x.gelu()}


def _activation(owner: str, activation):
    """"relu", "gelu" or a callable, as the function to apply."""
    if isinstance(activation, str) and activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    if callable(activation) and not isinstance(activation, str):
        return activation
    raise InvalidArgumentError(f"{owner}: activation must be 'relu', 'gelu' or a callable, "
                               f"got {activation!r}")


class TransformerEncoderLayer(Module):
    """torch's `nn.TransformerEncoderLayer(d_model, nhead)`: self-attention and a two-layer
    feed-forward block, each with a residual add and a LayerNorm (after it, or before it with
    `norm_first`), dropout in training mode. `activation` is "relu", "gelu" or a callable."""

    _cross_attention = False  # the decoder layer adds `multihead_attn` and `norm3`

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        if self._cross_attention:  # second, as torch registers it (state_dict order)
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                     bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        if self._cross_attention:
            self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout_p = _probability(type(self).__name__, dropout)
        self.norm_first = norm_first
        self.activation = _activation(type(self).__name__, activation)

    def _drop(self, x: Tensor) -> Tensor:
        return drop(x, self.dropout_p) if self.training else x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                             need_weights=False, is_causal=is_causal)[0]
        return self._drop(out)

    def _ff_block(self, x):
        return self._drop(self.linear2(self._drop(self.activation(self.linear1(x)))))

    def forward(self, src: Tensor, src_mask=None, src_key_padding_mask=None,
                is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


def _stack(owner: Module, layer, num_layers: int, norm) -> None:
    """`owner.layers`: `num_layers` copies of `layer` (torch deep-copies it too), and
    `owner.norm`."""
    if not isinstance(layer, Module):
        raise InvalidArgumentError(f"{type(owner).__name__}: the layer must be a Module, got "
                                   f"{type(layer).__name__}")
    owner.layers = ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])
    owner.num_layers = num_layers
    owner.norm = norm


class TransformerEncoder(Module):
    """torch's `nn.TransformerEncoder(encoder_layer, num_layers, norm=None)`: `num_layers`
    copies of the layer (`layers`), then `norm` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        _stack(self, encoder_layer, num_layers, norm)

    def forward(self, src: Tensor, mask=None, src_key_padding_mask=None,
                is_causal: bool | None = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoderLayer(TransformerEncoderLayer):
    """torch's `nn.TransformerDecoderLayer(d_model, nhead)`: self-attention over the target,
    attention over the encoder's output (`multihead_attn`), then the feed-forward block, each
    with a residual add and a LayerNorm (`norm1`..`norm3`, before each block with
    `norm_first`)."""

    _cross_attention = True

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        out = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                  key_padding_mask=key_padding_mask, need_weights=False,
                                  is_causal=is_causal)[0]
        return self._drop(out)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask=None, memory_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerDecoder(Module):
    """torch's `nn.TransformerDecoder(decoder_layer, num_layers, norm=None)`."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm=None):
        super().__init__()
        _stack(self, decoder_layer, num_layers, norm)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask=None, memory_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """torch's `nn.Transformer`: an encoder and a decoder of `num_*_layers` layers, each stack
    ending in a LayerNorm; every weight matrix starts Glorot-uniform, as torch's."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*args, **kw), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*args, **kw), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The causal mask [sz, sz]: 0 on and below the diagonal, -inf above it."""
        above = creation.arange(sz, device=device).unsqueeze(1) < \
            creation.arange(sz, device=device).unsqueeze(0)
        return where(above, -math.inf, 0.0).to(dtype or dt.DEFAULT_FLOAT)
