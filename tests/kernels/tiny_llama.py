"""A tiny Llama-style decoder built from lazyt.nn, with the Hugging Face parameter names
(`model.embed_tokens`, `model.layers.N.self_attn.q_proj`, `...mlp.gate_proj`, `lm_head`)."""
from __future__ import annotations

import math

import lazyt
from lazyt import nn


def rotate_half(x):
    half = x.shape[-1] // 2
    return lazyt.cat([-x[..., half:], x[..., :half]], dim=-1)


class MLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Attention(nn.Module):
    def __init__(self, hidden_size: int, num_heads: int, max_positions: int = 32,
                 rope_theta: float = 10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        d = self.head_dim
        inv_freq = 1.0 / rope_theta ** (lazyt.arange(0, d, 2, dtype=lazyt.float32) / d)
        freqs = lazyt.arange(max_positions, dtype=lazyt.float32).unsqueeze(1) * inv_freq
        angles = lazyt.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def _heads(self, x, b, t):
        return x.reshape(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, t, _ = x.shape
        q = self._heads(self.q_proj(x), b, t)
        k = self._heads(self.k_proj(x), b, t)
        v = self._heads(self.v_proj(x), b, t)
        cos, sin = self.cos[:t], self.sin[:t]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = q.matmul(k.mT) * (1.0 / math.sqrt(self.head_dim))
        pos = lazyt.arange(t, device=x.device)
        causal = pos.unsqueeze(1) >= pos.unsqueeze(0)
        scores = lazyt.where(causal, scores, -1e9)
        out = scores.softmax(-1).matmul(v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out)


class DecoderLayer(nn.Module):
    def __init__(self, hidden_size: int, num_heads: int, intermediate_size: int, eps: float):
        super().__init__()
        self.input_layernorm = nn.RMSNorm(hidden_size, eps=eps)
        self.self_attn = Attention(hidden_size, num_heads)
        self.post_attention_layernorm = nn.RMSNorm(hidden_size, eps=eps)
        self.mlp = MLP(hidden_size, intermediate_size)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaModel(nn.Module):
    def __init__(self, vocab_size: int, hidden_size: int, num_heads: int,
                 intermediate_size: int, num_layers: int, eps: float):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList(
            DecoderLayer(hidden_size, num_heads, intermediate_size, eps)
            for _ in range(num_layers))
        self.norm = nn.RMSNorm(hidden_size, eps=eps)

    def forward(self, ids):
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h)
        return self.norm(h)


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab_size: int = 40, hidden_size: int = 16, num_heads: int = 2,
                 intermediate_size: int = 24, num_layers: int = 2, eps: float = 1e-6):
        super().__init__()
        self.model = LlamaModel(vocab_size, hidden_size, num_heads, intermediate_size,
                                num_layers, eps)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))
