"""BERT encoder with the Hugging Face checkpoint's parameter names, plus sentence embeddings.

`BertModel.from_pretrained(dir)` reads a Hugging Face `config.json` and `model.safetensors`
(e.g. sentence-transformers/all-MiniLM-L6-v2) without torch: every parameter sits at the path
the checkpoint names it (`embeddings.word_embeddings.weight`,
`encoder.layer.0.attention.self.query.weight`, ...). `mean_pooling` + `l2_normalize` turn the
last hidden state into sentence-transformers' embeddings; `SentenceEncoder` adds the tokenizer.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .. import creation
from .. import dtype as dt
from .. import functional as F
from ..device import device as _device
from ..errors import DeviceError, DTypeError, ShapeError
from ..autodiff import no_grad
from ..tensor import Tensor
from .. import nn
from ..nn.module import LoadResult, StateDictError
from ..nn.serialization import CheckpointError, read_config

#: config.json keys that become `BertModel` constructor arguments (all Hugging Face names).
CONFIG_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
               "intermediate_size", "max_position_embeddings", "type_vocab_size",
               "layer_norm_eps", "hidden_act", "hidden_dropout_prob",
               "attention_probs_dropout_prob", "pad_token_id")

#: hidden_act (Hugging Face spelling) -> activation module factory.
ACTIVATIONS = {
    "gelu": lambda: nn.GELU(),
    "gelu_new": lambda: nn.GELU(approximate="tanh"),
    "gelu_pytorch_tanh": lambda: nn.GELU(approximate="tanh"),
    "relu": lambda: nn.ReLU(),
    "silu": lambda: nn.SiLU(),
    "swish": lambda: nn.SiLU(),
    "tanh": lambda: nn.Tanh(),
}

#: The checkpoint key older transformers versions saved (a constant `arange`); accepted on load.
POSITION_IDS_KEY = "embeddings.position_ids"


def _activation(name: str) -> nn.Module:
    factory = ACTIVATIONS.get(name)
    if factory is None:
        raise CheckpointError(f"BertModel: hidden_act {name!r} is not supported; expected one "
                              f"of {', '.join(sorted(ACTIVATIONS))}")
    return factory()


def _as_ids(op: str, value, dev, shape=None) -> Tensor:
    """An integer tensor on `dev` from a Tensor (on `dev`), numpy array or nested list."""
    t = value if isinstance(value, Tensor) else creation.tensor(np.asarray(value), device=dev)
    if t.device != dev:
        raise DeviceError(f"{op}: the ids are on {t.device}, the model on {dev}; move them "
                          f"with .to({str(dev)!r}) (or pass a numpy array)")
    if t.dtype.is_float:
        raise DTypeError(f"{op}: expected an integer tensor, got {t.dtype.name} of shape "
                         f"{t.shape}")
    if shape is not None and t.shape != shape:
        raise ShapeError(f"{op}: expected shape {shape} (as input_ids), got {t.shape}")
    return t


def extended_attention_mask(attention_mask: Tensor, dtype=dt.float32) -> Tensor:
    """[batch, seq] 1/0 mask -> additive [batch, 1, 1, seq] bias: 0 where attended, the dtype's
    most negative value where padded (as transformers' `get_extended_attention_mask`)."""
    d = dt.as_dtype(dtype)
    keep = attention_mask.to(d)
    return ((1.0 - keep) * float(np.finfo(d.np).min)).reshape(keep.shape[0], 1, 1,
                                                             keep.shape[1])


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, attention_mask=None,
                                 dropout: nn.Module | None = None) -> Tensor:
    """softmax(q k^T / sqrt(d) + mask) v on [batch, heads, seq, head_dim] tensors (shared by
    `BertSelfAttention` and kernels that compute q, k, v another way). Without an active
    dropout, and with a mask of q's dtype (or none), it is one
    `lazyt.scaled_dot_product_attention` call (one helper op: the numpy backend never holds
    the whole batch's scores); otherwise the composed form."""
    active = dropout is not None and dropout.training and dropout.p != 0.0
    if not active and (attention_mask is None or attention_mask.dtype is q.dtype):
        return F.scaled_dot_product_attention(q, k, v, attention_mask)
    # the scale multiplies the scores, as in the reference implementation; a mask of
    # another dtype is added with the usual promotion
    scores = q.matmul(k.mT) * (1.0 / math.sqrt(q.shape[-1]))
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = scores.softmax(-1)
    return (dropout(probs) if active else probs).matmul(v)


def merge_heads(context: Tensor) -> Tensor:
    """[batch, heads, seq, head_dim] -> [batch, seq, heads * head_dim]."""
    b, h, t, d = context.shape
    return context.transpose(1, 2).reshape(b, t, h * d)


class BertEmbeddings(nn.Module):
    """word + position + token type embeddings, then LayerNorm (and dropout)."""

    def __init__(self, vocab_size: int, hidden_size: int, max_position_embeddings: int,
                 type_vocab_size: int, layer_norm_eps: float, hidden_dropout_prob: float = 0.0,
                 pad_token_id: int | None = 0):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(hidden_dropout_prob)
        # Not saved (as in current transformers); older checkpoints carry it and it loads.
        self.register_buffer("position_ids", creation.arange(
            max_position_embeddings, dtype=dt.int64).reshape(1, -1), persistent=False)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        b, t = input_ids.shape
        positions = self.position_ids[:, :t]
        h = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        if token_type_ids is None:
            h = h + self.token_type_embeddings.weight[0]
        else:
            h = h + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(h))


class BertSelfAttention(nn.Module):
    """Multi-head attention projections `query`, `key`, `value` and the attention itself."""

    def __init__(self, hidden_size: int, num_attention_heads: int,
                 attention_probs_dropout_prob: float = 0.0):
        super().__init__()
        if hidden_size % num_attention_heads:
            raise CheckpointError(f"BertSelfAttention: hidden_size {hidden_size} is not a "
                                  f"multiple of num_attention_heads {num_attention_heads}")
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(attention_probs_dropout_prob)

    def _heads(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        return x.reshape(b, t, self.num_attention_heads, self.attention_head_size).transpose(1, 2)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """`attention_mask` is the additive [batch, 1, 1, seq] bias of
        `extended_attention_mask` (or None)."""
        # three GEMMs: one over stacked weights measured slower on cuda (2.893 against 2.848
        # ms compiled), wgpu (4.705 against 4.618) and 2 cpu cores (422 against 410), since
        # the stacking runs on every call
        q = self._heads(self.query(hidden_states))
        k = self._heads(self.key(hidden_states))
        v = self._heads(self.value(hidden_states))
        return merge_heads(scaled_dot_product_attention(q, k, v, attention_mask, self.dropout))


class BertSelfOutput(nn.Module):
    """Output projection of attention, dropout, residual add and LayerNorm."""

    def __init__(self, hidden_size: int, layer_norm_eps: float, hidden_dropout_prob: float = 0.0):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, input_tensor: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, hidden_size: int, num_attention_heads: int, layer_norm_eps: float,
                 hidden_dropout_prob: float = 0.0, attention_probs_dropout_prob: float = 0.0):
        super().__init__()
        self.self = BertSelfAttention(hidden_size, num_attention_heads,
                                      attention_probs_dropout_prob)
        self.output = BertSelfOutput(hidden_size, layer_norm_eps, hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    """The feed-forward up projection and activation."""

    def __init__(self, hidden_size: int, intermediate_size: int, hidden_act: str = "gelu"):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = _activation(hidden_act)

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    """The feed-forward down projection, dropout, residual add and LayerNorm."""

    def __init__(self, intermediate_size: int, hidden_size: int, layer_norm_eps: float,
                 hidden_dropout_prob: float = 0.0):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, input_tensor: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, hidden_size: int, num_attention_heads: int, intermediate_size: int,
                 layer_norm_eps: float, hidden_act: str = "gelu", hidden_dropout_prob: float = 0.0,
                 attention_probs_dropout_prob: float = 0.0):
        super().__init__()
        self.attention = BertAttention(hidden_size, num_attention_heads, layer_norm_eps,
                                       hidden_dropout_prob, attention_probs_dropout_prob)
        self.intermediate = BertIntermediate(hidden_size, intermediate_size, hidden_act)
        self.output = BertOutput(intermediate_size, hidden_size, layer_norm_eps,
                                 hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        h = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(h), h)


class BertEncoder(nn.Module):
    def __init__(self, num_hidden_layers: int, **layer_args):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(**layer_args) for _ in range(num_hidden_layers))

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Module):
    """tanh(dense(first token)): BERT's classification summary (unused by sentence embeddings)."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    """The BERT encoder. Constructor arguments are the Hugging Face config names;
    `forward(input_ids, attention_mask, token_type_ids)` returns the last hidden state
    [batch, seq, hidden] (`model.pooler(h)` gives the pooled output)."""

    def __init__(self, vocab_size: int = 30522, hidden_size: int = 768,
                 num_hidden_layers: int = 12, num_attention_heads: int = 12,
                 intermediate_size: int = 3072, max_position_embeddings: int = 512,
                 type_vocab_size: int = 2, layer_norm_eps: float = 1e-12,
                 hidden_act: str = "gelu", hidden_dropout_prob: float = 0.1,
                 attention_probs_dropout_prob: float = 0.1, pad_token_id: int | None = 0,
                 add_pooling_layer: bool = True):
        super().__init__()
        self.max_position_embeddings = max_position_embeddings
        self.embeddings = BertEmbeddings(vocab_size, hidden_size, max_position_embeddings,
                                         type_vocab_size, layer_norm_eps, hidden_dropout_prob,
                                         pad_token_id)
        self.encoder = BertEncoder(num_hidden_layers, hidden_size=hidden_size,
                                   num_attention_heads=num_attention_heads,
                                   intermediate_size=intermediate_size,
                                   layer_norm_eps=layer_norm_eps, hidden_act=hidden_act,
                                   hidden_dropout_prob=hidden_dropout_prob,
                                   attention_probs_dropout_prob=attention_probs_dropout_prob)
        if add_pooling_layer:
            self.pooler = BertPooler(hidden_size)
        else:
            self.add_module("pooler", None)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "BertModel":
        """Build from a Hugging Face BERT `config.json` (unknown keys are ignored) or from the
        `config.json` that `save_pretrained` writes."""
        model_type = config.get("model_type", "bert")
        if model_type != "bert":
            raise CheckpointError(f"BertModel.from_config: model_type {model_type!r} is not "
                                  "'bert'")
        position = config.get("position_embedding_type", "absolute")
        if position != "absolute":
            raise CheckpointError(f"BertModel.from_config: position_embedding_type {position!r}"
                                  " is not supported (only 'absolute')")
        if config.get("is_decoder") or config.get("add_cross_attention"):
            raise CheckpointError("BertModel.from_config: decoder / cross-attention configs are "
                                  "not supported (encoder only)")
        args = {k: config[k] for k in CONFIG_KEYS + ("add_pooling_layer",) if k in config}
        _activation(args.get("hidden_act", "gelu"))  # fail early, naming the activation
        return cls(**args)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> Tensor:
        dev = self.embeddings.word_embeddings.weight.device
        input_ids = _as_ids("BertModel", input_ids, dev)
        if input_ids.ndim != 2:
            raise ShapeError(f"BertModel: input_ids must be [batch, seq], got shape "
                             f"{input_ids.shape}")
        if input_ids.shape[1] > self.max_position_embeddings:
            raise ShapeError(f"BertModel: sequence length {input_ids.shape[1]} exceeds "
                             f"max_position_embeddings {self.max_position_embeddings}")
        if token_type_ids is not None:
            token_type_ids = _as_ids("BertModel token_type_ids", token_type_ids, dev,
                                     input_ids.shape)
        h = self.embeddings(input_ids, token_type_ids)
        bias = None
        if attention_mask is not None:
            mask = _as_ids("BertModel attention_mask", attention_mask, dev, input_ids.shape)
            bias = extended_attention_mask(mask, h.dtype)
        return self.encoder(h, bias)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> LoadResult:
        """As `Module.load_state_dict`, also accepting the `embeddings.position_ids` entry
        (int64 [1, max_positions]) that older transformers versions saved, and `pooler.*`
        entries when the model was built without a pooler."""
        state = dict(state_dict)
        position_ids = state.pop(POSITION_IDS_KEY, None)
        if self.pooler is None:
            for k in [k for k in state if k.startswith("pooler.")]:
                del state[k]
        if position_ids is not None:
            buf = self.embeddings.position_ids
            arr = position_ids.numpy() if isinstance(position_ids, Tensor) \
                else np.asarray(position_ids)
            if arr.shape != buf.shape or arr.dtype.kind not in "iu":
                raise StateDictError(f"load_state_dict: {POSITION_IDS_KEY} must be an integer "
                                     f"array of shape {buf.shape}, got {arr.dtype} {arr.shape}")
        result = super().load_state_dict(state, strict=strict)
        if position_ids is not None:
            self.embeddings.position_ids = creation.tensor(arr.astype(np.int64), device=buf.device)
        return result


# ---------------------------------------------------------------------- sentence embeddings
def mean_pooling(last_hidden_state: Tensor, attention_mask) -> Tensor:
    """Mean of the token vectors where `attention_mask` is 1: [batch, seq, hidden] ->
    [batch, hidden] (sentence-transformers' `pooling_mode_mean_tokens`)."""
    b, t, _ = last_hidden_state.shape
    mask = _as_ids("mean_pooling attention_mask", attention_mask, last_hidden_state.device,
                   (b, t)).to(last_hidden_state.dtype).unsqueeze(-1)
    summed = (last_hidden_state * mask).sum(1)
    return summed / mask.sum(1).clamp(min=1e-9)


def l2_normalize(x: Tensor, eps: float = 1e-12) -> Tensor:
    """`x / max(||x||_2, eps)` over the last dim (torch's `F.normalize`)."""
    return x / (x * x).sum(-1, keepdim=True).sqrt().clamp(min=eps)


class SentenceEncoder:
    """A `BertModel` and its `tokenizer.json` (the `tokenizers` package): sentences ->
    mean-pooled, L2-normalized embeddings, as sentence-transformers computes them.

    The tokenizer is set (in place) to truncate at `max_seq_length` and to pad each batch to
    its longest sentence, as sentence-transformers does whatever `tokenizer.json` says."""

    def __init__(self, model: BertModel, tokenizer, max_seq_length: int = 256):
        self.model = model
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        pad = tokenizer.padding or {}
        tokenizer.enable_truncation(max_seq_length)
        tokenizer.enable_padding(pad_id=pad.get("pad_id", 0),
                                 pad_token=pad.get("pad_token", "[PAD]"))

    @classmethod
    def from_pretrained(cls, directory, device=None, **kwargs) -> "SentenceEncoder":
        """Load `model.safetensors`, `config.json` and `tokenizer.json` from a
        sentence-transformers model directory (`max_seq_length` from
        `sentence_bert_config.json` when present). `kwargs` go to `BertModel.from_pretrained`
        (e.g. `use_kernels=True, kernel_config=...`)."""
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise CheckpointError("SentenceEncoder needs the `tokenizers` package: "
                                  "pip install -e \".[models]\" in the lazyt checkout") from None
        directory = Path(directory)
        path = directory / "tokenizer.json"
        if not path.is_file():
            raise CheckpointError(f"SentenceEncoder: no tokenizer.json in {str(directory)!r}")
        tokenizer = Tokenizer.from_file(str(path))
        max_len = 256
        st_config = directory / "sentence_bert_config.json"
        if st_config.is_file():
            max_len = int(json.loads(st_config.read_text()).get("max_seq_length", max_len))
        model = BertModel.from_pretrained(directory, device=device, **kwargs)
        max_len = min(max_len, model.max_position_embeddings)
        return cls(model, tokenizer, max_len)

    def tokenize(self, sentences: Sequence[str]) -> tuple:
        """(input_ids, attention_mask) as int64 numpy arrays [batch, longest]."""
        encodings = self.tokenizer.encode_batch(list(sentences))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    def encode(self, sentences: Sequence[str], batch_size: int = 32,
               normalize: bool = True) -> np.ndarray:
        """Embeddings [len(sentences), hidden] as a float32 numpy array."""
        if isinstance(sentences, str):
            sentences = [sentences]
        out = []
        dev = self.model.get_device()
        with no_grad():
            for i in range(0, len(sentences), batch_size):
                ids, mask = self.tokenize(sentences[i:i + batch_size])
                mask_t = creation.tensor(mask, device=dev)
                h = self.model(creation.tensor(ids, device=dev), mask_t)
                e = mean_pooling(h, mask_t)
                out.append((l2_normalize(e) if normalize else e).numpy())
        return np.concatenate(out).astype(np.float32, copy=False)


def random_bert(config, device=None, seed: int = 0) -> BertModel:
    """A `BertModel` with random weights (N(0, 0.02), as BERT initializes; LayerNorms at 1 and
    0) built from a config (a dict, a `config.json` path or its directory): serves for
    throughput measurements where the checkpoint is absent."""
    if not isinstance(config, Mapping):
        path = Path(config)
        config = read_config(path.parent if path.is_file() else path)
    model = BertModel.from_config(config)
    rng = np.random.default_rng(seed)
    state = {}
    for name, value in model.state_dict().items():
        if name.endswith("LayerNorm.weight"):
            state[name] = np.ones(value.shape, np.float32)
        elif name.endswith("bias"):
            state[name] = np.zeros(value.shape, np.float32)
        else:
            state[name] = (rng.standard_normal(value.shape) * 0.02).astype(np.float32)
    model.load_state_dict(state)
    if device is not None:
        model.to(_device(device))
    return model.eval()
