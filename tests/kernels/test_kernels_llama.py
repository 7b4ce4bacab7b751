"""The issue's end-to-end check: a tiny Llama saved once and loaded three ways (plain, with a
renaming RMSNorm kernel, with a fused RMSNorm + MLP kernel) gives the same outputs and, in
TRAINING mode, the same gradients; saving a kernelized model restores the original keys."""
import warnings

import numpy as np
import pytest
from safetensors.numpy import load_file

import lazyt
from lazyt import nn, optim
from lazyt.kernels import (KernelConfig, KernelFallbackWarning, KernelHubError, Mode, binding_of,
                           kernelize)
from tiny_llama import LlamaForCausalLM

RMS = {"RMSNorm": "local/llama-kernels:CustomRMSNorm"}
FUSED = {(("RMSNorm", "model.layers.*.post_attention_layernorm"), ("MLP", "model.layers.*.mlp")):
         "local/llama-kernels:RMSNormMLP"}
IDS = [[3, 17, 5, 0, 39, 8, 8, 21], [1, 2, 3, 4, 5, 6, 7, 9]]


def _load(path, config=None, kernel_paths=None, device=None):
    if config is None:
        return LlamaForCausalLM.from_pretrained(path, device=device)
    return LlamaForCausalLM.from_pretrained(path, device=device, use_kernels=True,
                                            kernel_config=KernelConfig(config),
                                            kernel_paths=kernel_paths)


def _max_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def _layouts(model):
    return {path: m for path, m in model.named_modules() if binding_of(m) is not None}


def _grads(model, ids, weights):
    loss = (model(ids) * weights).sum()
    grads = loss.backward()
    return {name: grads.get(p) for name, p in model.named_parameters()}


@pytest.fixture(params=["cpu", "cpu-nofusion"])
def dev(request):
    return lazyt.device("cpu", fusion=request.param == "cpu")


def test_plain_load_reproduces_the_saved_model(llama_dir, dev):
    a = _load(llama_dir, device=dev)
    b = _load(llama_dir, device=dev)
    ids = lazyt.tensor(IDS, device=dev)
    assert _max_diff(a(ids).numpy(), b(ids).numpy()) == 0
    assert sorted(a.state_dict()) == sorted(load_file(str(llama_dir / "model.safetensors")))


@pytest.mark.parametrize("config,n_layouts", [(RMS, 5), (FUSED, 2)], ids=["rmsnorm", "fused"])
def test_kernelized_outputs_match_and_save_restores_keys(llama_dir, config, n_layouts, dev,
                                                         kernel_paths, tmp_path):
    plain = _load(llama_dir, device=dev)
    model = _load(llama_dir, config, kernel_paths, device=dev)
    layouts = _layouts(model)
    assert len(layouts) == n_layouts
    for layout in layouts.values():
        binding = binding_of(layout)
        assert binding.active and layout.forward.__func__ is binding.kernel.forward
    ids = lazyt.tensor(IDS, device=dev)
    ref = plain(ids).numpy()
    assert _max_diff(model(ids).numpy(), ref) <= 1e-5

    model.save_pretrained(tmp_path)
    original = load_file(str(llama_dir / "model.safetensors"))
    saved = load_file(str(tmp_path / "model.safetensors"))
    assert sorted(saved) == sorted(original)
    for k in original:
        np.testing.assert_array_equal(saved[k], original[k], err_msg=k)
    assert (tmp_path / "config.json").read_text() == (llama_dir / "config.json").read_text()


def test_layout_parameters_hold_converted_weights(llama_dir, kernel_paths):
    original = load_file(str(llama_dir / "model.safetensors"))
    renamed = _load(llama_dir, RMS, kernel_paths)
    layer = renamed.model.layers[1]
    assert type(layer.input_layernorm).__name__ == "CustomRMSNormLayout"
    assert [n for n, _ in layer.input_layernorm.named_parameters()] == ["scale"]
    np.testing.assert_array_equal(layer.input_layernorm.scale.numpy(),
                                  original["model.layers.1.input_layernorm.weight"])
    fused = _load(llama_dir, FUSED, kernel_paths)
    layer = fused.model.layers[1]
    assert type(layer.mlp) is nn.Identity
    assert type(layer.input_layernorm) is nn.RMSNorm
    fl = layer.post_attention_layernorm
    assert sorted(n for n, _ in fl.named_parameters()) == ["down_proj.weight",
                                                          "gate_up_proj.weight", "scale"]
    np.testing.assert_array_equal(fl.gate_up_proj.weight.numpy(), np.concatenate(
        [original["model.layers.1.mlp.gate_proj.weight"],
         original["model.layers.1.mlp.up_proj.weight"]]))
    np.testing.assert_array_equal(fl.scale.numpy(),
                                  original["model.layers.1.post_attention_layernorm.weight"])


@pytest.mark.parametrize("config", [RMS, FUSED], ids=["rmsnorm", "fused"])
def test_training_gradients_match(llama_dir, config, dev, kernel_paths):
    plain = _load(llama_dir, device=dev).train()
    model = _load(llama_dir, config, kernel_paths, device=dev).train()
    kernelize(model, mode=Mode.TRAINING, device=dev)
    ids = lazyt.tensor(IDS, device=dev)
    weights = lazyt.tensor(np.random.default_rng(2).standard_normal((2, 8, 40)),
                           dtype=lazyt.float32, device=dev)
    expected = _grads(plain, ids, weights)
    got = nn.to_checkpoint_state(model, _grads(model, ids, weights))
    assert sorted(got) == sorted(expected)
    for k in expected:
        assert _max_diff(got[k].numpy(), expected[k].numpy()) <= 1e-5, k


def test_a_trained_kernelized_model_saves_the_original_layout(llama_dir, kernel_paths, tmp_path):
    model = _load(llama_dir, FUSED, kernel_paths).train()
    kernelize(model, mode=Mode.TRAINING)
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    ids = lazyt.tensor(IDS)
    for _ in range(2):
        opt.step((model(ids) ** 2).mean().backward())
    model.eval()
    model.save_pretrained(tmp_path)
    reloaded = LlamaForCausalLM.from_pretrained(tmp_path)
    assert _max_diff(reloaded(ids).numpy(), model(ids).numpy()) <= 1e-5
    before = _load(llama_dir)
    assert _max_diff(reloaded(ids).numpy(), before(ids).numpy()) > 1e-3  # it did train


def test_apply_to_a_model_in_memory(llama_dir, kernel_paths):
    plain = _load(llama_dir)
    model = _load(llama_dir)
    KernelConfig({**FUSED, **RMS}).apply(model, kernel_paths=kernel_paths)
    assert len(_layouts(model)) == 2 + 3
    ids = lazyt.tensor(IDS)
    assert _max_diff(model(ids).numpy(), plain(ids).numpy()) <= 1e-5


FALLBACKS = [
    ({"RMSNorm": "local/broken-kernels:CudaOnly"}, "CudaOnly", "model.layers.0.input_layernorm"),
    ({list(FUSED)[0]: "local/llama-kernels:RMSNormMLPCuda"}, "RMSNormMLPCuda",
     "model.layers.0.post_attention_layernorm"),
]


@pytest.mark.parametrize("config,name,where", FALLBACKS, ids=["rmsnorm", "fused"])
def test_kernel_without_device_impl_falls_back_with_a_warning(llama_dir, kernel_paths, config,
                                                              name, where):
    """The original forward runs on the Layout's own parameters (converted back), with
    gradients; for fusion the replaced modules run one after the other."""
    plain = _load(llama_dir).train()
    with pytest.warns(KernelFallbackWarning, match=f"{name} has no implementation for device "
                                                   f"cpu.*{where}"):
        model = _load(llama_dir, config, kernel_paths).train()
    assert not any(binding_of(m).active for m in _layouts(model).values())
    ids = lazyt.tensor(IDS)
    assert _max_diff(model(ids).numpy(), plain(ids).numpy()) <= 1e-5
    weights = lazyt.randn(2, 8, 40)
    expected = _grads(plain, ids, weights)
    got = nn.to_checkpoint_state(model, _grads(model, ids, weights))
    for k in expected:
        assert _max_diff(got[k].numpy(), expected[k].numpy()) <= 1e-5, k
    with pytest.raises(KernelHubError, match=f"{name} at '{where}' has no implementation for "
                                             "device cpu"):
        kernelize(model, use_fallback=False)


def test_fallback_prefers_the_layouts_own_forward(llama_dir, kernel_paths):
    plain = _load(llama_dir)
    with pytest.warns(KernelFallbackWarning, match="CudaOnlyReference"):
        model = _load(llama_dir, {"RMSNorm": "local/broken-kernels:CudaOnlyReference"},
                      kernel_paths)
    layout_cls = type(model.model.norm)
    calls = layout_cls.calls
    ids = lazyt.tensor(IDS)
    assert _max_diff(model(ids).numpy(), plain(ids).numpy()) <= 1e-5
    assert layout_cls.calls == calls + 5  # 2 layers x 2 norms + the final norm


def test_training_mode_needs_a_backward(llama_dir, kernel_paths):
    model = _load(llama_dir, {"RMSNorm": "local/broken-kernels:NoBackward"}, kernel_paths)
    assert all(binding_of(m).active for m in _layouts(model).values())
    with pytest.warns(KernelFallbackWarning, match="NoBackward has no backward"):
        kernelize(model, mode=Mode.TRAINING)
    assert not any(binding_of(m).active for m in _layouts(model).values())
    with pytest.raises(KernelHubError, match="has_backward"):
        kernelize(model, mode=Mode.TRAINING, use_fallback=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernelize(model, mode=Mode.INFERENCE)  # back to the kernel, silently
    assert all(binding_of(m).active for m in _layouts(model).values())
    with pytest.raises(KernelHubError, match="mode must be"):
        kernelize(model, mode="training")


def test_fused_kernel_is_a_backend_extension_with_its_own_backward(llama_dir, kernel_paths):
    """RMSNormMLP runs one `rms_norm_mlp` extension op (numpy impl + handwritten Autodiff
    impl), not a composition of ordinary ops."""
    from lazyt.backends import Autodiff, Numpy
    from lazyt.extension import op_of
    model = _load(llama_dir, FUSED, kernel_paths).train()
    kernelize(model, mode=Mode.TRAINING)
    op = op_of(lazyt.Dispatch.rms_norm_mlp)
    assert Autodiff in op.impls and Numpy in op.impls
    ids = lazyt.tensor(IDS)
    with lazyt.fusion.inspect() as report:
        out = model(ids)
        grads = out.sum().backward()
        grads.get(model.lm_head.weight).numpy()
    assert report.opaque_ops.count("rms_norm_mlp") == 2
