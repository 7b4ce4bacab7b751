"""Module: registration, traversal, state_dict / load_state_dict, modes, devices, config."""
import numpy as np
import pytest

import lazyt
from lazyt import nn


class Block(nn.Module):
    def __init__(self, width: int, depth: int = 2, scale: float = 1.0):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.gain = nn.Parameter(lazyt.ones(width))
        self.register_buffer("steps", lazyt.zeros(1, dtype=lazyt.int64))
        self.register_buffer("cache", lazyt.zeros(width), persistent=False)
        self.scale = scale

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x) * self.gain * self.scale


def test_registration_and_names():
    b = Block(4, depth=2)
    names = [n for n, _ in b.named_parameters()]
    assert names == ["gain", "layers.0.weight", "layers.0.bias", "layers.1.weight",
                     "layers.1.bias", "norm.weight", "norm.bias"]
    assert [n for n, _ in b.named_children()] == ["layers", "norm"]
    assert [p for p, _ in b.named_modules()] == ["", "layers", "layers.0", "layers.1", "norm"]
    assert [n for n, _ in b.named_buffers()] == ["steps", "cache"]
    assert isinstance(b.gain, nn.Parameter) and b.scale == 1.0
    assert b.get_submodule("layers.1") is b.layers[1]
    with pytest.raises(nn.ModuleError, match="no submodule 'mlp'"):
        b.get_submodule("layers.mlp")


def test_state_dict_holds_params_and_persistent_buffers():
    b = Block(3, depth=1)
    sd = b.state_dict()
    assert sorted(sd) == ["gain", "layers.0.bias", "layers.0.weight", "norm.bias",
                          "norm.weight", "steps"]
    assert all(type(v) is lazyt.Tensor for v in sd.values())
    np.testing.assert_array_equal(sd["layers.0.weight"].numpy(), b.layers[0].weight.numpy())


def test_shared_parameter_listed_once():
    a = nn.Linear(3, 3)
    s = nn.Sequential(a, a)
    assert len(list(s.parameters())) == 2
    assert sorted(s.state_dict()) == ["0.bias", "0.weight", "1.bias", "1.weight"]


def test_assigning_a_tensor_to_a_parameter_name_is_an_error():
    lin = nn.Linear(2, 2)
    with pytest.raises(nn.ModuleError, match="is a Parameter"):
        lin.weight = lazyt.zeros(2, 2)
    with pytest.raises(nn.ModuleError, match="is a submodule"):
        Block(2).norm = 3


def test_load_state_dict_keeps_parameter_objects_and_casts():
    src, dst = Block(4), Block(4)
    w = dst.layers[0].weight
    state = {k: v.numpy().astype(np.float64) if v.dtype.is_float else v.numpy()
             for k, v in src.state_dict().items()}
    result = dst.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.layers[0].weight is w and w.dtype == lazyt.float32
    np.testing.assert_allclose(w.numpy(), src.layers[0].weight.numpy())
    x = lazyt.randn(2, 4)
    np.testing.assert_allclose(dst(x).numpy(), src(x).numpy(), rtol=1e-6)


def test_load_state_dict_strict_error_lists_every_problem():
    b = Block(4)
    state = b.state_dict()
    del state["norm.bias"]
    state["norm.extra"] = lazyt.zeros(4)
    state["gain"] = lazyt.zeros(5)
    before = b.gain.numpy().copy()
    with pytest.raises(nn.StateDictError) as e:
        b.load_state_dict(state)
    msg = str(e.value)
    assert "missing keys (1): norm.bias" in msg
    assert "unexpected keys (1): norm.extra" in msg
    assert "mis-shaped: gain: checkpoint (5,), model (4,)" in msg
    np.testing.assert_array_equal(b.gain.numpy(), before)  # nothing was loaded


def test_load_state_dict_non_strict_reports_and_loads_the_rest():
    b = Block(2)
    state = {"gain": np.full(2, 3.0, np.float32), "other": np.zeros(1)}
    res = b.load_state_dict(state, strict=False)
    assert res.unexpected_keys == ["other"] and "norm.weight" in res.missing_keys
    np.testing.assert_array_equal(b.gain.numpy(), [3.0, 3.0])
    with pytest.raises(nn.StateDictError, match="mis-shaped"):
        b.load_state_dict({"gain": np.zeros(3)}, strict=False)


def test_train_eval_recurse():
    b = Block(2)
    assert b.training and b.layers[0].training
    b.eval()
    assert not any(m.training for m in b.modules())
    b.train()
    assert all(m.training for m in b.modules())


def test_to_moves_and_casts_in_place():
    b = Block(3)
    w = b.layers[0].weight
    before = w.numpy().copy()
    dev = lazyt.device("cpu", fusion=False)
    b.to(dev)
    assert b.layers[0].weight is w and w.device == dev and b.steps.device == dev
    assert b.get_device() == dev
    np.testing.assert_array_equal(w.numpy(), before)
    b.to(lazyt.float16)
    assert w.dtype == lazyt.float16 and b.steps.dtype == lazyt.int64
    np.testing.assert_allclose(w.numpy(), before, atol=1e-3)
    with pytest.raises(nn.ModuleError):
        b.to(dtype=lazyt.int32)


def test_parameters_are_tracked_leaves():
    lin = nn.Linear(2, 3)
    assert lin.weight.trainable and lin.weight.is_tracked
    lin.weight.require_grad(False)
    assert not lin.weight.is_tracked and not lin.weight.trainable
    assert type(lin.weight * 2) is lazyt.Tensor
    inference_only = lazyt.device("cpu", autodiff=False)
    p = nn.Parameter(lazyt.ones(2, device=inference_only))
    assert p.trainable and not p.is_tracked  # no autodiff layer: usable, not tracked


def test_constructor_arguments_are_remembered():
    b = Block(5, scale=0.5)
    assert b.init_arguments == ((5,), {"scale": 0.5})
    assert b.get_config() == {"width": 5, "depth": 2, "scale": 0.5}
    c = Block.from_config(b.get_config())
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in b.named_parameters()]
    assert nn.Linear(2, 3, bias=False).get_config()["bias"] is False
    with pytest.raises(nn.ModuleError, match=r"\*modules"):
        nn.Sequential(nn.Identity()).get_config()


def test_call_runs_forward_and_base_forward_is_abstract():
    class Twice(nn.Module):
        def forward(self, x):
            return x * 2

    np.testing.assert_array_equal(Twice()(lazyt.ones(2)).numpy(), [2, 2])
    with pytest.raises(NotImplementedError, match="Module has no forward"):
        nn.Module()(1)


def test_functional_call_substitutes_and_restores():
    lin = nn.Linear(2, 2)
    w = lazyt.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = lazyt.tensor([0.5, -0.5])
    out = nn.functional_call(lin, {"weight": w, "bias": b}, lazyt.tensor([[1.0, 1.0]]))
    np.testing.assert_allclose(out.numpy(), [[3.5, 6.5]])
    assert isinstance(lin.weight, nn.Parameter)
    with pytest.raises(nn.StateDictError, match="no parameter or buffer 'scale'"):
        nn.functional_call(lin, {"scale": w}, w)


def test_repr_is_a_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.GELU(approximate="tanh")))
    assert text == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                    "  (1): GELU(approximate='tanh')\n)")
