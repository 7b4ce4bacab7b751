"""The MiniLM repo's fused LayerNorm is a backend extension (`Dispatch.layer_norm`: numpy impl,
handwritten backward), checked on its own and inside a small random BERT (no checkpoint
needed)."""
import warnings
from pathlib import Path

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch
from lazyt.errors import ShapeError
from lazyt.kernels import KernelConfig, KernelFallbackWarning, binding_of, kernelize
from lazyt.kernels.hub import load_repo
from lazyt.models import random_bert
from lazyt.testing import check_extension

KERNEL_PATHS = [Path(__file__).resolve().parents[2] / "examples" / "kernels"]
REPO = load_repo("lazyt/minilm-kernels", kernel_paths=KERNEL_PATHS)
CONFIG = {"model_type": "bert", "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 16,
          "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
          "pad_token_id": 0}
IDS = [[1, 7, 9, 4, 2, 0], [3, 8, 11, 5, 6, 2]]
STACKS = [lazyt.device("cpu"), lazyt.device("cpu", fusion=False),
          lazyt.device("cpu", checkpointing="none")]


def _inputs(rng, lead=(2, 3), hidden=8, dtype=np.float32):
    return [(rng.standard_normal(lead + (hidden,)) * 2 + 1).astype(dtype),
            (rng.random(hidden) + 0.5).astype(dtype),
            rng.standard_normal(hidden).astype(dtype)]


def test_passes_check_extension():
    report = check_extension(Dispatch.layer_norm, [*_inputs(np.random.default_rng(0)), 1e-5],
                             reference=REPO.layer_norm_reference, devices=["cpu"])
    assert len(report) == 4 and all(v == "ok" for v in report.values())


@pytest.mark.parametrize("dev", STACKS, ids=str)
def test_values_and_gradients_match_nn_layernorm(dev):
    rng = np.random.default_rng(1)
    x, w, b = _inputs(rng, lead=(3, 5), hidden=12)
    weights = lazyt.tensor(rng.standard_normal((3, 5, 12)), dtype=lazyt.float32, device=dev)
    ts = [lazyt.tensor(a, device=dev).require_grad() for a in (x, w, b)]
    out = REPO.layer_norm_op(*ts, 1e-5)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), (x - mean) / np.sqrt(var + 1e-5) * w + b,
                               rtol=1e-5, atol=1e-5)
    grads = (out * weights).sum().backward()
    ln = lazyt.nn.LayerNorm(12, eps=1e-5).to(dev)
    ln.weight.assign(lazyt.tensor(w, device=dev))
    ln.bias.assign(lazyt.tensor(b, device=dev))
    xr = lazyt.tensor(x, device=dev).require_grad()
    ref_grads = (ln(xr) * weights).sum().backward()
    for t, r in zip(ts, (xr, ln.weight, ln.bias)):
        np.testing.assert_allclose(grads.get(t).numpy(), ref_grads.get(r).numpy(),
                                   rtol=1e-4, atol=1e-5)


def test_only_tracked_inputs_get_gradients():
    x, w, b = (lazyt.tensor(a) for a in _inputs(np.random.default_rng(2)))
    w.require_grad()
    grads = (REPO.layer_norm_op(x, w, b, 1e-5) ** 2).sum().backward()
    assert grads.get(x) is None and grads.get(b) is None
    wr = lazyt.tensor(w.numpy()).require_grad()
    ref = (REPO.layer_norm_reference(x, wr, b, 1e-5) ** 2).sum().backward()
    np.testing.assert_allclose(grads.get(w).numpy(), ref.get(wr).numpy(), rtol=1e-4,
                               atol=1e-5)


def test_float16_in_float16_out():
    x, w, b = _inputs(np.random.default_rng(3), dtype=np.float16)
    x *= 300  # squares overflow float16: the statistics must be float32
    out = REPO.layer_norm_op(*(lazyt.tensor(a) for a in (x, w, b)), 1e-5)
    assert out.dtype is lazyt.float16
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) \
        * w + b
    np.testing.assert_allclose(out.numpy().astype(np.float64), want, rtol=1e-2, atol=1e-2)


def test_bad_shapes_raise_at_record_time():
    with pytest.raises(ShapeError, match="layer_norm.*bias must have shape"):
        REPO.layer_norm_op(lazyt.zeros(2, 8), lazyt.ones(8), lazyt.zeros(7), 1e-5)


def test_kernelized_bert_runs_one_opaque_op_per_layernorm_and_matches():
    lazyt.manual_seed(5)
    plain = random_bert(CONFIG)
    model = random_bert(CONFIG)
    model.load_state_dict(plain.state_dict())
    KernelConfig({"LayerNorm": "lazyt/minilm-kernels:FusedLayerNorm"}).apply(
        model, kernel_paths=KERNEL_PATHS)
    layouts = [m for m in model.modules() if binding_of(m) is not None]
    assert len(layouts) == 1 + 2 * 2 and all(binding_of(m).active for m in layouts)
    ids = lazyt.tensor(IDS)
    with lazyt.fusion.inspect() as report:
        out = model(ids).numpy()
    assert report.opaque_ops.count("layer_norm") == 5
    np.testing.assert_allclose(out, plain(ids).numpy(), atol=1e-5, rtol=0)
    weights = lazyt.randn(*out.shape)
    got = (model(ids) * weights).sum().backward()
    want = (plain(ids) * weights).sum().backward()
    compared = 0
    for (name, p), (_, q) in zip(model.named_parameters(), plain.named_parameters()):
        g, w = got.get(p), want.get(q)
        assert (g is None) == (w is None), name  # e.g. the pooler: unused by the output
        if w is not None:
            compared += 1
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5, rtol=1e-5,
                                       err_msg=name)
    assert compared == len(list(plain.named_parameters())) - 2  # all but the pooler
    with pytest.warns(KernelFallbackWarning, match="FusedLayerNorm has no implementation"):
        kernelize(model, device=lazyt.device("wgpu"))
    with lazyt.fusion.inspect() as report:
        np.testing.assert_allclose(model(ids).numpy(), out, atol=1e-5, rtol=0)
    assert "layer_norm" not in report.opaque_ops
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernelize(model)
