"""The fused RMSNorm + gated MLP kernel of the local repo is a real backend extension:
`Dispatch.rms_norm_mlp` with metadata, a numpy impl and a handwritten backward, recorded by
Fusion as one opaque op inside the kernelized Llama."""
import warnings

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch
from lazyt.errors import ShapeError
from lazyt.kernels import KernelConfig, KernelFallbackWarning, Mode, binding_of, kernelize
from lazyt.kernels.hub import load_repo
from lazyt.testing import check_extension
from tiny_llama import LlamaForCausalLM

from conftest import REPOS

REPO = load_repo("local/llama-kernels", kernel_paths=[REPOS])
FUSED = {(("RMSNorm", "model.layers.*.post_attention_layernorm"), ("MLP", "model.layers.*.mlp")):
         "local/llama-kernels:RMSNormMLP"}
IDS = [[3, 17, 5, 0, 39, 8, 8, 21], [1, 2, 3, 4, 5, 6, 7, 9]]
STACKS = [lazyt.device("cpu"), lazyt.device("cpu", fusion=False),
          lazyt.device("cpu", checkpointing="none")]


def _inputs(rng, lead=(2, 3), hidden=8, inter=6, dtype=np.float32):
    return [rng.standard_normal(lead + (hidden,)).astype(dtype),
            (rng.random(hidden) + 0.5).astype(dtype),
            (rng.standard_normal((2 * inter, hidden)) / 3).astype(dtype),
            (rng.standard_normal((hidden, inter)) / 3).astype(dtype)]


def _numpy_reference(x, scale, w_gu, w_down, eps):
    x, scale, w_gu, w_down = (a.astype(np.float64) for a in (x, scale, w_gu, w_down))
    h = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * scale
    gate, up = np.split(h @ w_gu.T, 2, axis=-1)
    return (gate / (1 + np.exp(-gate)) * up) @ w_down.T


def test_passes_check_extension():
    rng = np.random.default_rng(0)
    report = check_extension(Dispatch.rms_norm_mlp, [*_inputs(rng, lead=(2, 3)), 1e-6],
                             reference=REPO.rms_norm_mlp_reference, devices=["cpu"])
    assert set(report) == {("cpu", c) for c in ("metadata", "values", "gradcheck",
                                                 "fused vs fusion=False")}
    assert all(v == "ok" for v in report.values())


@pytest.mark.parametrize("dev", STACKS, ids=str)
def test_values_and_gradients_match_ordinary_ops(dev):
    rng = np.random.default_rng(1)
    arrays = _inputs(rng, lead=(2, 5), hidden=16, inter=24)
    weight = rng.standard_normal((2, 5, 16)).astype(np.float32)

    def run(fn):
        ts = [lazyt.tensor(a, device=dev).require_grad() for a in arrays]
        out = fn(*ts, 1e-6)
        grads = (out * lazyt.tensor(weight, device=dev)).sum().backward()
        return out.numpy(), [grads.get(t).numpy() for t in ts]

    out, grads = run(REPO.rms_norm_mlp_op)
    ref, ref_grads = run(REPO.rms_norm_mlp_reference)
    np.testing.assert_allclose(out, _numpy_reference(*arrays, 1e-6), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    for name, g, r in zip(("x", "scale", "gate_up", "down"), grads, ref_grads):
        assert g.shape == r.shape, name
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("tracked", [(0,), (1, 2), (3,)], ids=["x", "scale+gate_up", "down"])
def test_only_tracked_inputs_get_gradients(tracked):
    rng = np.random.default_rng(2)
    arrays = _inputs(rng)

    def run(fn):
        ts = [lazyt.tensor(a) for a in arrays]
        for i in tracked:
            ts[i].require_grad()
        grads = (fn(*ts, 1e-5) ** 2).sum().backward()
        return [grads.get(t) for t in ts]

    got, want = run(REPO.rms_norm_mlp_op), run(REPO.rms_norm_mlp_reference)
    for i, (g, w) in enumerate(zip(got, want)):
        if i in tracked:
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)
        else:
            assert g is None and w is None


def test_float16_computes_the_norm_in_float32_and_returns_float16():
    rng = np.random.default_rng(3)
    arrays = _inputs(rng, dtype=np.float16)
    arrays[0] *= 300  # x * x overflows float16: the norm must run in float32
    ts = [lazyt.tensor(a).require_grad() for a in arrays]
    out = REPO.rms_norm_mlp_op(*ts, 1e-6)
    assert out.dtype is lazyt.float16
    np.testing.assert_allclose(out.numpy().astype(np.float64), _numpy_reference(*arrays, 1e-6),
                               rtol=2e-2, atol=2e-2)
    grads = out.float().sum().backward()
    ref = [lazyt.tensor(a).require_grad() for a in arrays]
    ref_grads = REPO.rms_norm_mlp_reference(*ref, 1e-6).float().sum().backward()
    for t, r in zip(ts, ref):
        g = grads.get(t)
        assert g.dtype is lazyt.float16 and np.isfinite(g.numpy()).all()
        want = ref_grads.get(r).numpy().astype(np.float64)
        np.testing.assert_allclose(g.numpy().astype(np.float64), want, rtol=5e-2,
                                   atol=5e-2 * np.abs(want).max())


@pytest.mark.parametrize("shapes, fragment", [
    (((2, 8), (7,), (12, 8), (8, 6)), "scale must have shape"),
    (((2, 8), (8,), (11, 8), (8, 6)), "gate_up_weight must be"),
    (((2, 8), (8,), (12, 7), (8, 6)), "gate_up_weight must be"),
    (((2, 8), (8,), (12, 8), (6, 8)), "down_weight must be"),
])
def test_bad_shapes_raise_at_record_time(shapes, fragment):
    ts = [lazyt.zeros(s) for s in shapes]
    with lazyt.fusion.inspect() as report:
        with pytest.raises(ShapeError, match=fragment) as e:
            REPO.rms_norm_mlp_op(*ts, 1e-6)
    assert "rms_norm_mlp" in str(e.value)
    assert report.kernels == 0


def _load(path, config=None, device=None):
    if config is None:
        return LlamaForCausalLM.from_pretrained(path, device=device)
    return LlamaForCausalLM.from_pretrained(path, device=device, use_kernels=True,
                                            kernel_config=KernelConfig(config),
                                            kernel_paths=[REPOS])


@pytest.mark.parametrize("mode", [Mode.INFERENCE, Mode.TRAINING], ids=str)
def test_inspector_shows_one_opaque_op_per_fused_layer(llama_dir, mode):
    plain = _load(llama_dir)
    model = _load(llama_dir, FUSED)
    kernelize(model, mode=mode)
    if mode is Mode.TRAINING:
        model.train()
    ids = lazyt.tensor(IDS)
    with lazyt.fusion.inspect() as report:
        out = model(ids).numpy()
    assert report.opaque_ops.count("rms_norm_mlp") == 2  # one per decoder layer
    fused_names = {op for b in report.blocks for op in b.ops}
    assert "sigmoid" not in fused_names and "silu" not in fused_names  # the MLP is inside
    with lazyt.fusion.inspect() as plain_report:
        ref = plain(ids).numpy()
    assert "rms_norm_mlp" not in plain_report.opaque_ops
    assert float(np.abs(out - ref).max()) <= 1e-5


def test_other_devices_fall_back_to_the_original_modules(llama_dir):
    model = _load(llama_dir, FUSED)
    assert all(binding_of(m).active for _, m in model.named_modules()
               if binding_of(m) is not None)
    with pytest.warns(KernelFallbackWarning, match="RMSNormMLP has no implementation for device "
                                                   "wgpu"):
        kernelize(model, device=lazyt.device("wgpu"))
    layouts = [m for _, m in model.named_modules() if binding_of(m) is not None]
    assert len(layouts) == 2 and not any(binding_of(m).active for m in layouts)
    ids = lazyt.tensor(IDS)
    with lazyt.fusion.inspect() as report:
        out = model(ids).numpy()
    assert "rms_norm_mlp" not in report.opaque_ops
    assert float(np.abs(out - _load(llama_dir)(ids).numpy()).max()) <= 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernelize(model)  # back on cpu: the fused op again
    assert all(binding_of(m).active for m in layouts)
