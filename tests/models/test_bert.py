"""`lazyt.models.bert` on a tiny random BERT against a float64 numpy reference, on every device
stack present (no checkpoint needed): names, masks, pooling, config handling, errors."""
import math

import numpy as np
import pytest

import lazyt
from lazyt.autodiff import no_grad
from lazyt.models import BertModel, l2_normalize, mean_pooling, random_bert
from lazyt.nn import CheckpointError, StateDictError

TINY = {"model_type": "bert", "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 24, "max_position_embeddings": 12,
        "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "pad_token_id": 0,
        "architectures": ["BertModel"], "transformers_version": "4.8.2"}
IDS = np.array([[101, 7, 8, 9, 10, 11, 102, 0, 0],
                [101, 20, 21, 102, 0, 0, 0, 0, 0],
                [101, 30, 31, 32, 33, 34, 35, 36, 102]]) % 50
MASK = (np.array([[1] * 7 + [0] * 2, [1] * 4 + [0] * 5, [1] * 9]))


def _erf(x):
    return np.vectorize(math.erf)(x)


def _layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def numpy_bert(s, cfg, ids, mask, token_type_ids=None):
    """The Hugging Face BERT encoder in float64 numpy, from a state dict of checkpoint names."""
    s = {k: v.astype(np.float64) for k, v in s.items()}
    b, t = ids.shape
    heads, eps = cfg["num_attention_heads"], cfg["layer_norm_eps"]
    d = cfg["hidden_size"] // heads
    tt = np.zeros_like(ids) if token_type_ids is None else token_type_ids
    h = (s["embeddings.word_embeddings.weight"][ids] + s["embeddings.position_embeddings.weight"]
         [np.arange(t)] + s["embeddings.token_type_embeddings.weight"][tt])
    h = _layer_norm(h, s["embeddings.LayerNorm.weight"], s["embeddings.LayerNorm.bias"], eps)
    bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e30)

    def lin(x, name):
        return x @ s[name + ".weight"].T + s[name + ".bias"]

    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(h, p + "attention.self." + n).reshape(b, t, heads, d).transpose(0, 2, 1, 3)
                   for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, -1)
        h = _layer_norm(lin(ctx, p + "attention.output.dense") + h,
                        s[p + "attention.output.LayerNorm.weight"],
                        s[p + "attention.output.LayerNorm.bias"], eps)
        ff = lin(h, p + "intermediate.dense")
        ff = 0.5 * ff * (1 + _erf(ff / math.sqrt(2)))
        h = _layer_norm(lin(ff, p + "output.dense") + h, s[p + "output.LayerNorm.weight"],
                        s[p + "output.LayerNorm.bias"], eps)
    return h


def _state(model):
    return {k: v.numpy() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def tiny():
    model = random_bert(TINY, seed=3)
    # non-trivial norms and biases, so that a kernel or a load ignoring them is caught
    rng = np.random.default_rng(4)
    state = {k: (v + rng.standard_normal(v.shape).astype(np.float32) * 0.1
                 if "LayerNorm" in k or k.endswith("bias") else v)
             for k, v in _state(model).items()}
    model.load_state_dict(state)
    return model


def test_parameter_names_are_the_checkpoint_layout(tiny):
    names = set(tiny.state_dict())
    for i in range(2):
        p = f"encoder.layer.{i}."
        for n in ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
                  "output.dense", "output.LayerNorm"):
            assert {p + n + ".weight", p + n + ".bias"} <= names
    assert {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
            "embeddings.LayerNorm.bias", "pooler.dense.weight", "pooler.dense.bias"} <= names
    assert len(names) == 5 + 2 * 16 + 2
    assert not tiny.training


def test_forward_matches_numpy_with_padding(tiny, device):
    model = random_bert(TINY, device=device)
    model.load_state_dict(_state(tiny))
    expected = numpy_bert(_state(tiny), TINY, IDS, MASK)
    with no_grad():
        h = model(lazyt.tensor(IDS, device=device), lazyt.tensor(MASK, device=device))
        got = h.numpy()
        valid = MASK.astype(bool)
        np.testing.assert_allclose(got[valid], expected[valid], rtol=1e-4, atol=1e-4)
        pooled = l2_normalize(mean_pooling(h, MASK)).numpy()
    m = MASK[..., None]
    ref = (expected * m).sum(1) / m.sum(1)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(pooled, ref, rtol=1e-4, atol=1e-5)


def test_token_types_and_no_mask(tiny):
    tt = (np.arange(IDS.shape[1])[None] >= 4).astype(np.int64).repeat(3, 0)
    full = np.ones_like(MASK)
    expected = numpy_bert(_state(tiny), TINY, IDS, full, tt)
    np.testing.assert_allclose(tiny(IDS, token_type_ids=tt).numpy(), expected, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(tiny(IDS).numpy(), numpy_bert(_state(tiny), TINY, IDS, full),
                               rtol=1e-4, atol=1e-4)


def test_pooler_is_tanh_of_the_first_token(tiny):
    h = tiny(IDS, MASK)
    s = _state(tiny)
    first = h.numpy()[:, 0]
    expected = np.tanh(first @ s["pooler.dense.weight"].T + s["pooler.dense.bias"])
    np.testing.assert_allclose(tiny.pooler(h).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_position_ids_entry_and_missing_pooler(tiny):
    state = _state(tiny)
    state["embeddings.position_ids"] = np.arange(12, dtype=np.int64)[None]
    model = BertModel.from_config(TINY).eval()  # eval: no dropout
    model.load_state_dict(state)  # strict: the old position_ids entry is accepted
    np.testing.assert_array_equal(model(IDS, MASK).numpy(), tiny(IDS, MASK).numpy())
    state["embeddings.position_ids"] = np.arange(5)[None]
    with pytest.raises(StateDictError, match="position_ids"):
        model.load_state_dict(state)
    bare = BertModel.from_config({**TINY, "add_pooling_layer": False})
    assert bare.pooler is None
    bare.load_state_dict(_state(tiny))  # pooler.* entries are not needed
    assert not any(k.startswith("pooler.") for k in bare.state_dict())


def test_config_handling():
    model = BertModel.from_config(TINY)
    assert model.get_config()["hidden_size"] == 16
    assert model.encoder.layer[0].attention.self.num_attention_heads == 2
    tanh = BertModel.from_config({**TINY, "hidden_act": "gelu_new"})
    assert tanh.encoder.layer[1].intermediate.intermediate_act_fn.approximate == "tanh"
    with pytest.raises(CheckpointError, match="hidden_act 'mish'"):
        BertModel.from_config({**TINY, "hidden_act": "mish"})
    with pytest.raises(CheckpointError, match="position_embedding_type"):
        BertModel.from_config({**TINY, "position_embedding_type": "relative_key"})
    with pytest.raises(CheckpointError, match="model_type 'gpt2'"):
        BertModel.from_config({**TINY, "model_type": "gpt2"})
    with pytest.raises(CheckpointError, match="multiple of num_attention_heads"):
        BertModel.from_config({**TINY, "num_attention_heads": 3})


def test_input_errors(tiny):
    with pytest.raises(lazyt.DTypeError, match="integer"):
        tiny(IDS.astype(np.float32))
    with pytest.raises(lazyt.ShapeError, match=r"\[batch, seq\]"):
        tiny(IDS[0])
    with pytest.raises(lazyt.ShapeError, match="max_position_embeddings 12"):
        tiny(np.ones((1, 13), np.int64))
    with pytest.raises(lazyt.ShapeError, match="attention_mask"):
        tiny(IDS, MASK[:, :4])


def test_ids_on_another_device_are_refused(tiny):
    other = lazyt.device("cpu", fusion=False)
    with pytest.raises(lazyt.DeviceError, match="move them"):
        tiny(lazyt.tensor(IDS, device=other))
