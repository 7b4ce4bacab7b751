"""Finding repos and kernel classes, and the errors for configs and kernels that do not fit."""
import textwrap

import pytest

from lazyt import nn
from lazyt.kernels import KernelConfig, KernelHubError, load_kernel, load_repo
from tiny_llama import LlamaForCausalLM

FUSION = (("RMSNorm", "model.layers.*.post_attention_layernorm"), ("MLP", "model.layers.*.mlp"))


def test_repo_from_kernel_paths_and_environment(kernel_paths, monkeypatch):
    kernel, layout = load_kernel("local/llama-kernels:CustomRMSNorm", kernel_paths)
    assert kernel.__name__ == "CustomRMSNorm" and layout.__name__ == "CustomRMSNormLayout"
    monkeypatch.setenv("LAZYT_KERNEL_PATH", str(kernel_paths[0]))
    assert load_repo("local/llama-kernels") is load_repo("local/llama-kernels", kernel_paths)


def test_repo_as_importable_module(tmp_path, monkeypatch):
    (tmp_path / "my_norm_kernels.py").write_text(textwrap.dedent("""
        import lazyt
        from lazyt import nn

        class ScaleLayout(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.weight = nn.Parameter(lazyt.ones(n))

        class Scale(nn.Module):
            def forward(self, x):
                return x * self.weight

        class layers:
            Scale = Scale
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    kernel, layout = load_kernel("my_norm_kernels:Scale")
    assert layout.__name__ == "ScaleLayout"


def test_missing_repo_lists_where_it_looked(kernel_paths, monkeypatch):
    monkeypatch.delenv("LAZYT_KERNEL_PATH", raising=False)
    with pytest.raises(KernelHubError, match=r"'nobody/nothing' not found.*nobody/nothing"):
        load_repo("nobody/nothing", kernel_paths)
    with pytest.raises(KernelHubError, match="no importable module"):
        load_repo("no_such_kernel_module_xyz")


def test_kernel_class_rules(kernel_paths):
    with pytest.raises(KernelHubError, match="has no 'Missing'; it has BadSignature, CudaOnly"):
        load_kernel("local/broken-kernels:Missing", kernel_paths)
    with pytest.raises(KernelHubError, match="no NoLayoutLayout class"):
        load_kernel("local/broken-kernels:NoLayout", kernel_paths)
    with pytest.raises(KernelHubError, match="Stateful must be stateless, but Stateful "
                                             "defines __init__"):
        load_kernel("local/broken-kernels:Stateful", kernel_paths)


def test_config_validation():
    with pytest.raises(KernelHubError, match="must share one parent"):
        KernelConfig({(("RMSNorm", "model.layers.*.post_attention_layernorm"),
                       ("MLP", "model.mlp")): "a/b:C"})
    with pytest.raises(KernelHubError, match="expected 'repo:ClassName'"):
        KernelConfig({"RMSNorm": "local/llama-kernels"})
    with pytest.raises(KernelHubError, match="class name"):
        KernelConfig({"model.norm": "a/b:C"})
    with pytest.raises(KernelHubError, match="at least two"):
        KernelConfig({(("RMSNorm", "model.norm"),): "a/b:C"})


def _patch(config, kernel_paths):
    return KernelConfig(config).patch_model(LlamaForCausalLM(), kernel_paths=kernel_paths)


def test_patterns_and_classes_that_match_nothing(kernel_paths):
    with pytest.raises(KernelHubError, match="key 'LayerNorm' matches no module"):
        _patch({"LayerNorm": "local/llama-kernels:CustomRMSNorm"}, kernel_paths)
    wrong_class = (FUSION[0], ("GatedMLP", "model.layers.*.mlp"))
    with pytest.raises(KernelHubError, match=r"\('GatedMLP', 'model.layers.\*.mlp'\) matches no "
                                             r"module \(model.layers.0.mlp is MLP"):
        _patch({wrong_class: "local/llama-kernels:RMSNormMLP"}, kernel_paths)
    wrong_path = (("RMSNorm", "model.blocks.*.post_attention_layernorm"),
                  ("MLP", "model.blocks.*.mlp"))
    with pytest.raises(KernelHubError, match="matches no module"):
        _patch({wrong_path: "local/llama-kernels:RMSNormMLP"}, kernel_paths)


def test_forward_signature_mismatch(kernel_paths):
    with pytest.raises(KernelHubError, match=r"BadSignature.forward\(self, hidden_states, "
                                             r"residual\) does not match RMSNorm.forward"
                                             r"\(self, x.*model.layers.0.input_layernorm"):
        _patch({"RMSNorm": "local/broken-kernels:BadSignature"}, kernel_paths)


def test_conversion_mapping_that_misses_the_layout(kernel_paths):
    with pytest.raises(KernelHubError, match=r"gain: converted \(16,\), Layout None; "
                                             r"scale: converted None, Layout \(16,\)"):
        _patch({"RMSNorm": "local/broken-kernels:WrongMapping"}, kernel_paths)


def test_layouts_are_not_replaced_twice(kernel_paths):
    model = LlamaForCausalLM(num_layers=1)
    cfg = KernelConfig({FUSION: "local/llama-kernels:RMSNormMLP",
                        "RMSNorm": "local/llama-kernels:CustomRMSNorm"})
    paths = cfg.patch_model(model, kernel_paths=kernel_paths)
    assert paths == ["model.layers.0.post_attention_layernorm", "model.layers.0.input_layernorm",
                     "model.norm"]
    assert type(model.model.layers[0].mlp) is nn.Identity
    # every RMSNorm is a Layout now, and the fused Layout's own SiLU is not a candidate either
    for key in ("RMSNorm", "SiLU"):
        with pytest.raises(KernelHubError, match=f"key '{key}' matches no module"):
            KernelConfig({key: "local/broken-kernels:CudaOnly"}).patch_model(
                model, kernel_paths=kernel_paths)
