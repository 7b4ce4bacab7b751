"""Optimizer state dicts in torch's layout, `save_state` / `load_state` through safetensors, and
resuming: 3 steps, save, load into a fresh optimizer, 2 steps == 5 steps straight."""
import json
import sys

import numpy as np
import pytest

import lazyt
from lazyt import nn, optim
from lazyt.optim import lr_scheduler


def _model(device, seed=0):
    lazyt.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8, device=device), nn.Tanh(),
                         nn.Linear(8, 2, device=device))


def _data(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 2)).astype(np.float32)
    return lazyt.tensor(x, device=device), lazyt.tensor(y, device=device)


def _train(model, opt, data, steps, sched=None):
    x, y = data
    for _ in range(steps):
        opt.step(((model(x) - y) ** 2).mean().backward())
        if sched is not None:
            sched.step()


def _groups(model):
    """Two param groups: the first layer, and the second with its own learning rate."""
    first, _, second = model
    return [{"params": first.parameters()}, {"params": second.parameters(), "lr": 0.02}]


OPTIMIZERS = {
    "sgd_momentum": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    "adam": lambda ps: optim.Adam(ps, lr=0.01, betas=(0.8, 0.95)),
    "adamw_amsgrad": lambda ps: optim.AdamW(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
}


def _save_load_dict(opt, new, tmp_path):
    new.load_state_dict(opt.state_dict())


def _save_load_file(opt, new, tmp_path):
    path = tmp_path / "optimizer.safetensors"
    optim.save_state(opt, path)
    optim.load_state(new, path)


@pytest.mark.parametrize("transfer", [_save_load_dict, _save_load_file], ids=["dict", "file"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_resume_equals_training_straight(name, transfer, device, tmp_path):
    make = OPTIMIZERS[name]
    data = _data(device)
    straight = _model(device)
    _train(straight, make(_groups(straight)), data, 5)

    model = _model(device)
    opt = make(_groups(model))
    _train(model, opt, data, 3)
    fresh = make(_groups(model))
    transfer(opt, fresh, tmp_path)
    _train(model, fresh, data, 2)
    for (key, a), (_, b) in zip(straight.named_parameters(), model.named_parameters()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-6, err_msg=key)


def test_resume_with_a_scheduler(tmp_path):
    data = _data("cpu")

    def make(model):
        opt = optim.Adam(_groups(model), lr=0.05)
        return opt, lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.001)

    straight = _model("cpu")
    opt, sched = make(straight)
    _train(straight, opt, data, 5, sched)

    model = _model("cpu")
    opt, sched = make(model)
    _train(model, opt, data, 3, sched)
    optim.save_state(opt, tmp_path / "opt.safetensors")
    sched_state = json.loads(json.dumps(sched.state_dict()))  # plain Python values
    opt2, sched2 = make(model)
    optim.load_state(opt2, tmp_path / "opt.safetensors")
    sched2.load_state_dict(sched_state)
    assert [g["lr"] for g in opt2.param_groups] == [g["lr"] for g in opt.param_groups]
    _train(model, opt2, data, 2, sched2)
    for a, b in zip(straight.parameters(), model.parameters()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-6)


def test_layout_is_torchs():
    model = _model("cpu")
    opt = optim.Adam(_groups(model), lr=0.01)
    _train(model, opt, _data("cpu"), 2)
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2, 3]]
    assert sd["param_groups"][1] == {"lr": 0.02, "betas": (0.9, 0.999), "eps": 1e-8,
                                     "weight_decay": 0.0, "amsgrad": False, "maximize": False,
                                     "foreach": None, "capturable": False,
                                     "differentiable": False, "fused": None,
                                     "decoupled_weight_decay": False, "params": [2, 3]}
    params = list(model.parameters())
    assert sorted(sd["state"]) == [0, 1, 2, 3]
    for i, p in enumerate(params):
        s = sd["state"][i]
        assert list(s) == ["step", "exp_avg", "exp_avg_sq"]
        assert isinstance(s["step"], lazyt.Tensor) and s["step"].shape == ()
        assert s["step"].dtype == lazyt.float32 and s["step"].item() == 2.0
        for key in ("exp_avg", "exp_avg_sq"):
            assert isinstance(s[key], lazyt.Tensor) and s[key].shape == p.shape
    sgd = optim.SGD(params, lr=0.1, momentum=0.9)
    sgd.step({params[0]: lazyt.ones_like(params[0])})
    sd = sgd.state_dict()
    assert list(sd["state"]) == [0]  # only parameters that have state, as torch
    np.testing.assert_array_equal(sd["state"][0]["momentum_buffer"].numpy(),
                                  np.ones(params[0].shape, np.float32))


def test_hyper_parameters_come_from_the_state(tmp_path):
    p = nn.Parameter(lazyt.ones(3))
    opt = optim.Adam([p], lr=0.125, betas=(0.5, 0.75))
    lr_scheduler.StepLR(opt, step_size=2)  # adds initial_lr to the group
    for load in ("dict", "file"):
        other = optim.Adam([p], lr=1.0)
        if load == "dict":
            other.load_state_dict(opt.state_dict())
        else:
            optim.save_state(opt, tmp_path / "s.safetensors")
            optim.load_state(other, tmp_path / "s.safetensors")
        g = other.param_groups[0]
        assert g["lr"] == 0.125 and g["betas"] == (0.5, 0.75) and g["initial_lr"] == 0.125
        assert g["params"][0] is p


def test_state_moves_to_the_parameters_device_and_dtype():
    p = nn.Parameter(lazyt.ones(3, dtype=lazyt.float64))
    opt = optim.SGD([p], lr=0.1, momentum=0.5)
    sd = {"state": {0: {"momentum_buffer": lazyt.ones(3)}},  # float32
          "param_groups": [{"lr": 0.1, "params": [0]}]}
    opt.load_state_dict(sd)
    buf = opt.state_dict()["state"][0]["momentum_buffer"]
    assert buf.dtype == lazyt.float64 and buf.device == p.device


def _two_group_opt(shapes=((2, 3), (3,))):
    ps = [nn.Parameter(lazyt.ones(*s)) for s in shapes]
    opt = optim.Adam([{"params": ps[:1]}, {"params": ps[1:]}])
    opt.step({p: lazyt.ones(*p.shape) for p in ps})
    return opt


def test_mismatches_raise_naming_what_differs():
    sd = _two_group_opt().state_dict()
    err = optim.OptimizerError
    one_group = optim.Adam([nn.Parameter(lazyt.ones(2, 3)), nn.Parameter(lazyt.ones(3))])
    with pytest.raises(err, match="Adam.load_state_dict: the state dict has 2 parameter "
                                  "groups, this optimizer has 1"):
        one_group.load_state_dict(sd)
    ps = [nn.Parameter(lazyt.ones(2, 3)), nn.Parameter(lazyt.ones(3)), nn.Parameter(lazyt.ones(1))]
    more = optim.Adam([{"params": ps[:1]}, {"params": ps[1:]}])
    with pytest.raises(err, match="group 1 has 1 parameters in the state dict, 2 in this "
                                  "optimizer"):
        more.load_state_dict(sd)
    shapes = _two_group_opt(((3, 2), (3,)))
    with pytest.raises(err, match=r"state 'exp_avg' of parameter 0 has shape \(2, 3\), the "
                                  r"parameter has shape \(3, 2\)"):
        shapes.load_state_dict(sd)
    with pytest.raises(err, match="expected a dict with 'state' and 'param_groups', got list"):
        shapes.load_state_dict([])
    stray = {"state": {7: {}}, "param_groups": sd["param_groups"]}
    with pytest.raises(err, match="state for parameter 7, which no group"):
        _two_group_opt().load_state_dict(stray)
    # a failed load changes nothing
    before = shapes.state_dict()
    assert before["state"][0]["exp_avg"].shape == (3, 2)
    assert shapes.param_groups[0]["lr"] == 1e-3


def test_load_state_checks_the_file(tmp_path):
    import safetensors.numpy

    opt = _two_group_opt()
    optim.save_state(opt, tmp_path / "adam.safetensors")
    sgd = optim.SGD(list(opt.param_groups[0]["params"]) + list(opt.param_groups[1]["params"]))
    with pytest.raises(optim.OptimizerError, match="holds the state of a Adam, the optimizer "
                                                   "is a SGD"):
        optim.load_state(sgd, tmp_path / "adam.safetensors")
    safetensors.numpy.save_file({"w": np.ones(2, np.float32)}, str(tmp_path / "model.st"))
    with pytest.raises(optim.OptimizerError, match="not an optimizer state"):
        optim.load_state(opt, tmp_path / "model.st")
    with pytest.raises(optim.OptimizerError, match="no file"):
        optim.load_state(opt, tmp_path / "missing.safetensors")
    with pytest.raises(optim.OptimizerError, match="save_state: expected a lazyt.optim"):
        optim.save_state({}, tmp_path / "x.safetensors")


def test_file_holds_float_arrays_and_json_metadata(tmp_path):
    from safetensors import safe_open

    opt = _two_group_opt()
    optim.save_state(opt, tmp_path / "s.safetensors")
    with safe_open(str(tmp_path / "s.safetensors"), framework="np") as f:
        meta = f.metadata()
        keys = sorted(f.keys())
        arrays = {k: f.get_tensor(k) for k in keys}
    assert meta["format"] == "lazyt.optim" and meta["optimizer"] == "Adam"
    groups = json.loads(meta["param_groups"])
    assert [g["params"] for g in groups] == [[0], [1]] and groups[0]["betas"] == [0.9, 0.999]
    assert keys == [f"state.{i}.{k}" for i in (0, 1) for k in ("exp_avg", "exp_avg_sq", "step")]
    assert all(a.dtype == np.float32 for a in arrays.values())
    assert arrays["state.0.exp_avg"].shape == (2, 3) and arrays["state.1.step"] == 1.0


def test_missing_safetensors_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)  # import raises ImportError
    with pytest.raises(optim.OptimizerError, match=r'save_state: needs the safetensors package; '
                                                   r'install it with pip install -e "\.\[models\]"'):
        optim.save_state(_two_group_opt(), tmp_path / "s.safetensors")
