"""Lazy modules (`lazyt/nn/lazy.py`) and uninitialized parameters (`lazyt/nn/parameter.py`):
the size inferred from the first input, the init the regular class gives (same random draws),
the switch to the regular class, the same Parameter objects materialized in place (an
optimizer built before the first call trains them, as torch's), state_dict and
load_state_dict before the first call, `to` before it, copies, repr and errors; against torch
where installed."""
import copy
import pickle

import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.nn import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d,
                      LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
                      LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d,
                      LazyInstanceNorm3d, LazyLinear, UninitializedBuffer,
                      UninitializedParameter)
from lazyt.nn.parameter import is_lazy
from lazyt.nn.module import StateDictError
from lazyt.nn.parameter import Parameter

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

# (lazy class name, constructor args, kwargs, input shape, regular class name)
CASES = [
    ("LazyLinear", (3,), {}, (2, 5), "Linear"),
    ("LazyLinear", (4,), {"bias": False}, (2, 3, 6), "Linear"),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 7), "Conv1d"),
    ("LazyConv2d", (6, 3), {"stride": 2, "groups": 2}, (2, 4, 7, 7), "Conv2d"),
    ("LazyConv2d", (4, 3), {"padding": "same", "bias": False}, (3, 6, 6), "Conv2d"),
    ("LazyConv3d", (2, 2), {}, (1, 3, 4, 4, 4), "Conv3d"),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2, "output_padding": 1, "stride": 2},
     (1, 6, 5, 5), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), {}, (4, 5), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), {"momentum": 0.3}, (2, 3, 4, 4), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), {"affine": False}, (2, 3, 2, 2, 2), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), {"track_running_stats": False}, (2, 3, 4, 4), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), {"affine": False}, (2, 3, 2, 3, 2), "InstanceNorm3d"),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]

LAZY = {c.__name__: c for c in (LazyLinear, LazyConv1d, LazyConv2d, LazyConv3d,
                                  LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d,
                                  LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
                                  LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)}


def _regular(name):
    from lazyt.nn import conv, layers, linear, normalization
    for mod in (linear, conv, normalization, layers):
        if hasattr(mod, name):
            return getattr(mod, name)
    raise KeyError(name)


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _torch_state(m):
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


# ---------------------------------------------------------------------- uninitialized tensors
def test_uninitialized_parameter_has_dtype_and_device_but_no_shape():
    p = UninitializedParameter(dtype=lazyt.float64)
    assert repr(p) == "<UninitializedParameter>" and is_lazy(p)
    assert isinstance(p, Parameter) and p.dtype is lazyt.float64 and p.requires_grad
    assert p.device == lazyt.device("cpu") and p.grad is None
    reads = [lambda: p.shape, lambda: p.ndim, lambda: p.data, lambda: p.numpy(),
             lambda: p.numel(), lambda: p + 1, lambda: lazyt.relu(p), lambda: p.sum(),
             lambda: p @ p, lambda: lazyt.ones(3) * p, lambda: np.asarray(p), lambda: p.item()]
    for read in reads:
        with pytest.raises(lazyt.ShapeError, match="uninitialized parameter or buffer"):
            read()
    with pytest.raises(RuntimeError):   # torch raises RuntimeError for the shape
        p.size()
    with pytest.raises(ValueError):     # and ValueError for an op
        p * 2


def test_materialize_keeps_the_object_and_tracks_it():
    p = UninitializedParameter()
    q = p
    p.materialize((2, 3))
    assert q is p and type(p) is Parameter and not is_lazy(p)
    assert p.shape == (2, 3) and p.dtype is lazyt.float32 and p.requires_grad and p.is_leaf
    (p * 2).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((2, 3), 2.0, np.float32))
    frozen = UninitializedParameter(requires_grad=False)
    frozen.materialize((4,), dtype=lazyt.float64)
    assert not frozen.requires_grad and frozen.dtype is lazyt.float64
    b = UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize([5])
    assert type(b) is lazyt.Tensor and b.shape == (5,)


def test_uninitialized_moves_copies_and_pickles():
    p = UninitializedParameter()
    assert p.to(lazyt.float32) is p and p.float() is p
    d = p.double()
    assert is_lazy(d) and d.dtype is lazyt.float64 and d.requires_grad
    assert is_lazy(p.detach()) and not p.detach().requires_grad
    p.requires_grad_(False)
    assert not p.requires_grad
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is UninitializedParameter and q is not p and not q.requires_grad
    b = pickle.loads(pickle.dumps(UninitializedBuffer(dtype=lazyt.float64)))
    assert type(b) is UninitializedBuffer and b.dtype is lazyt.float64


def test_uninitialized_argument_errors():
    with pytest.raises(lazyt.DTypeError, match="only float"):
        UninitializedParameter(dtype=lazyt.int64)
    assert UninitializedParameter(False, dtype=lazyt.int64).dtype is lazyt.int64
    with pytest.raises(lazyt.GradError):
        UninitializedBuffer(requires_grad=True)
    with pytest.raises(lazyt.InvalidArgumentError, match="register_buffer"):
        UninitializedBuffer(persistent=False)


# ---------------------------------------------------------------------- first call
@pytest.mark.parametrize("name,args,kwargs,shape,regular", CASES, ids=IDS)
def test_first_call_materializes_as_the_regular_class(name, args, kwargs, shape, regular):
    m = LAZY[name](*args, **kwargs)
    lazy = list(m.parameters())
    assert m.has_uninitialized_params() and all(is_lazy(p) for p in lazy)
    x = lazyt.tensor(_input(shape))
    lazyt.manual_seed(7)
    y = m(x)
    assert type(m) is _regular(regular) and not hasattr(m, "_initialize_hook")
    assert [p for p in m.parameters()] == lazy and all(type(p) is Parameter for p in lazy)
    assert not any(is_lazy(t) for t in m.state_dict().values())
    # the regular class with the inferred size, built from the same random state, is equal
    lazyt.manual_seed(7)
    ref = _regular(regular)(**m.get_config())
    sd, ref_sd = m.state_dict(), ref.state_dict()
    assert list(sd) == list(ref_sd)
    for k in ref_sd:
        if k not in ("running_mean", "running_var", "num_batches_tracked"):  # updated by y
            np.testing.assert_array_equal(sd[k].numpy(), ref_sd[k].numpy(), err_msg=k)
    np.testing.assert_allclose(ref(x).numpy(), y.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("name,args,kwargs,shape,regular", CASES, ids=IDS)
def test_matches_torch(name, args, kwargs, shape, regular):
    """Repr before and after, the inferred shapes, the class switch, and the outputs once
    torch's initial values are loaded into lazyt's module."""
    t = getattr(torch.nn, name)(*args, **kwargs)
    m = LAZY[name](*args, **kwargs)
    assert repr(m) == repr(t)
    assert list(m.state_dict()) == list(t.state_dict())
    x = _input(shape)
    with torch.no_grad():
        t(torch.from_numpy(x))
    m(lazyt.tensor(x))
    assert type(t).__name__ == type(m).__name__ == regular
    assert repr(m) == repr(t)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in t.state_dict().items()}
    m.load_state_dict(_torch_state(t))
    x2 = _input(shape, seed=1)
    with torch.no_grad():
        want = t(torch.from_numpy(x2)).numpy()
    np.testing.assert_allclose(m(lazyt.tensor(x2)).numpy(), want, rtol=1e-4, atol=1e-5)
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("name,args,shape", [("LazyLinear", (64,), (8, 50)),
                                             ("LazyConv2d", (32, 3), (2, 12, 5, 5)),
                                             ("LazyConvTranspose1d", (40, 3), (2, 12, 5))])
def test_init_distribution_matches_torch(name, args, shape):
    """torch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the bias."""
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args)
    t(torch.zeros(shape))
    m = LAZY[name](*args)
    m(lazyt.zeros(shape))
    for k, v in t.state_dict().items():
        ours, theirs = m.state_dict()[k].numpy(), v.numpy()
        bound = np.abs(theirs).max()
        assert ours.shape == theirs.shape
        assert np.abs(ours).max() <= bound * 1.05 and np.abs(ours).max() > bound * 0.8
        assert abs(ours.mean()) < 0.15 * bound


def test_on_every_device(device):
    x = lazyt.tensor(_input((3, 2, 5)), device=device)
    lazyt.manual_seed(3)
    m = LazyLinear(4, device=device)
    y = m(x)
    lazyt.manual_seed(3)
    ref = nn.Linear(5, 4, device=device)
    assert m.weight.device == device and type(m) is nn.Linear
    np.testing.assert_allclose(y.numpy(), ref(x).numpy(), rtol=1e-5, atol=1e-6)


def test_unbatched_inputs_infer_the_channel_dim():
    conv = LazyConv1d(4, 3)
    assert conv(lazyt.ones(6, 5)).shape == (4, 3) and conv.in_channels == 6
    norm = LazyInstanceNorm1d()     # torch reads dim 1 here and then rejects its own size
    assert norm(lazyt.ones(3, 7)).shape == (3, 7) and norm.num_features == 3


def test_a_module_without_lazy_tensors_still_infers_its_size():
    bn = LazyBatchNorm1d(affine=False, track_running_stats=False)
    assert not bn.has_uninitialized_params()
    bn(lazyt.tensor(_input((4, 5))))
    assert type(bn) is nn.BatchNorm1d and bn.num_features == 5


def test_get_config_after_the_switch_builds_the_regular_class():
    m = LazyConv2d(4, 3, stride=2, padding=1)
    m(lazyt.ones(1, 3, 8, 8))
    assert m.get_config()["in_channels"] == 3 and m.init_arguments[0] == ()
    again = nn.Conv2d.from_config(m.get_config())
    assert repr(again) == repr(m)


def test_forward_pre_hooks_run_after_materialization():
    m = LazyLinear(2)
    seen = []
    m.register_forward_pre_hook(lambda mod, args: seen.append(mod.weight.shape))
    m(lazyt.ones(1, 3))
    m(lazyt.ones(1, 3))
    assert seen == [(2, 3), (2, 3)]


def test_the_first_call_inside_compile_asks_for_a_dry_run():
    m = LazyLinear(2)
    step = lazyt.compile(lambda x: m(x).sum())
    with pytest.raises(lazyt.CaptureError, match="dry run"):
        step(lazyt.ones(2, 3))
    assert type(m) is LazyLinear and m.has_uninitialized_params()
    m(lazyt.ones(2, 3))
    assert step(lazyt.ones(2, 3)).shape == ()


def test_a_failed_first_call_leaves_the_module_lazy():
    m = LazyConv2d(4, 3, groups=2)
    with pytest.raises(lazyt.InvalidArgumentError, match="divisible by groups"):
        m(lazyt.ones(1, 3, 5, 5))
    with pytest.raises(lazyt.ShapeError, match="3-D .unbatched. or 4-D"):
        m(lazyt.ones(5, 5))
    assert type(m) is LazyConv2d and m.has_uninitialized_params()
    assert m(lazyt.ones(1, 4, 5, 5)).shape == (1, 4, 3, 3)


# ---------------------------------------------------------------------- optimizers
def _pair(lib):
    return lib.nn.Sequential(lib.nn.LazyConv1d(4, 3) if lib is torch else LazyConv1d(4, 3),
                             lib.nn.ReLU(), lib.nn.Flatten(),
                             lib.nn.LazyBatchNorm1d() if lib is torch else LazyBatchNorm1d(),
                             lib.nn.LazyLinear(2) if lib is torch else LazyLinear(2))


@needs_torch
def test_an_optimizer_built_before_the_first_call_trains_the_same_parameters():
    tm, m = _pair(torch), _pair(lazyt)
    topt = torch.optim.Adam(tm.parameters(), lr=0.05, weight_decay=0.01)
    opt = lazyt.optim.Adam(m.parameters(), lr=0.05, weight_decay=0.01)
    held = opt.param_groups[0]["params"]
    x, target = _input((6, 3, 8)), _input((6, 2), seed=2)
    with torch.no_grad():
        tm(torch.from_numpy(x))      # the dry run materializes
    m(lazyt.tensor(x))
    assert all(a is b for a, b in zip(held, m.parameters())) and len(held) == 6
    m.load_state_dict(_torch_state(tm))  # start from torch's values, in the same objects
    for _ in range(4):
        tl = ((tm(torch.from_numpy(x)) - torch.from_numpy(target)) ** 2).mean()
        topt.zero_grad()
        tl.backward()
        topt.step()
        loss = ((m(lazyt.tensor(x)) - lazyt.tensor(target)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-4)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=k)


def test_an_optimizer_step_before_the_first_call_changes_nothing():
    m = LazyLinear(2)
    opt = lazyt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    opt.step()
    opt.zero_grad()
    assert m.has_uninitialized_params() and not opt.state


# ---------------------------------------------------------------------- state dicts
def test_state_dict_of_a_lazy_module_holds_the_uninitialized_tensors():
    m = LazyBatchNorm2d()
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert sd["weight"] is m.weight and sd["running_mean"] is m.running_mean
    assert type(sd["running_var"]) is UninitializedBuffer
    assert sd["num_batches_tracked"].item() == 0
    seq = nn.Sequential(LazyLinear(3), nn.ReLU())
    assert all(is_lazy(v) for v in seq.state_dict().values())


def test_load_state_dict_materializes_from_the_loaded_shapes():
    src = nn.Linear(4, 3)
    m = LazyLinear(3)
    w = m.weight
    opt = lazyt.optim.SGD(m.parameters(), lr=0.1)
    m.load_state_dict(src.state_dict())
    assert type(m) is LazyLinear and not m.has_uninitialized_params()  # as torch: until a call
    assert m.weight is w and type(w) is Parameter and w.requires_grad
    np.testing.assert_array_equal(w.numpy(), src.weight.numpy())
    x = lazyt.tensor(_input((2, 4)))
    np.testing.assert_allclose(m(x).numpy(), src(x).numpy(), rtol=1e-6)
    assert type(m) is nn.Linear and m.in_features == 4
    np.testing.assert_array_equal(w.numpy(), src.weight.numpy())   # not re-initialized
    assert opt.param_groups[0]["params"][0] is m.weight


def test_load_state_dict_into_lazy_norm_and_conv():
    src = nn.BatchNorm2d(5)
    src(lazyt.tensor(_input((2, 5, 3, 3))))
    bn = LazyBatchNorm2d()
    bn.load_state_dict(src.state_dict())
    assert bn.running_mean.shape == (5,) and bn.num_batches_tracked.item() == 1
    bn.eval()
    src.eval()
    x = lazyt.tensor(_input((1, 5, 2, 2), seed=4))
    np.testing.assert_allclose(bn(x).numpy(), src(x).numpy(), rtol=1e-5, atol=1e-6)
    assert type(bn) is nn.BatchNorm2d and bn.num_features == 5
    conv = LazyConvTranspose2d(4, 3, groups=2)
    conv.load_state_dict(nn.ConvTranspose2d(6, 4, 3, groups=2).state_dict())
    conv(lazyt.ones(1, 6, 4, 4))
    assert conv.in_channels == 6 and conv.weight.shape == (6, 2, 3, 3)


def test_a_failed_strict_load_changes_nothing():
    m = LazyLinear(3)
    with pytest.raises(StateDictError, match="missing keys.*bias"):
        m.load_state_dict({"weight": np.zeros((3, 4), np.float32)})
    assert is_lazy(m.weight) and is_lazy(m.bias)


def test_a_partial_load_leaves_the_rest_to_the_first_call():
    m = LazyLinear(3)
    m.load_state_dict({"weight": np.ones((3, 4), np.float32)}, strict=False)
    assert not is_lazy(m.weight) and is_lazy(m.bias) and m.has_uninitialized_params()
    m(lazyt.ones(2, 4))
    assert type(m) is nn.Linear and m.bias.shape == (3,)
    np.testing.assert_array_equal(m.weight.numpy(), np.ones((3, 4), np.float32))


@needs_torch
def test_uninitialized_states_load_as_torch():
    """Uninitialized into uninitialized loads nothing; into an initialized module it raises."""
    a, b = LazyLinear(3), LazyLinear(3)
    b.load_state_dict(a.state_dict())
    assert is_lazy(b.weight)
    tb = torch.nn.LazyLinear(3)
    tb.load_state_dict(torch.nn.LazyLinear(3).state_dict())
    assert isinstance(tb.weight, torch.nn.parameter.UninitializedParameter)
    with pytest.raises(RuntimeError):
        torch.nn.Linear(4, 3).load_state_dict(torch.nn.LazyLinear(3).state_dict())
    with pytest.raises(StateDictError, match="weight: checkpoint uninitialized, model .3, 4."):
        nn.Linear(4, 3).load_state_dict(LazyLinear(3).state_dict())


# ---------------------------------------------------------------------- to, copies
@needs_torch
def test_to_before_the_first_call_sets_the_materialized_dtype():
    t = torch.nn.LazyConv1d(2, 3).double()
    m = LazyConv1d(2, 3).double()
    assert is_lazy(m.weight) and m.weight.dtype is lazyt.float64
    x = _input((1, 3, 5)).astype(np.float64)
    t(torch.from_numpy(x))
    y = m(lazyt.tensor(x))
    assert y.dtype is lazyt.float64 and m.bias.dtype is lazyt.float64
    assert m.weight.requires_grad and str(t.weight.dtype) == "torch.float64"


def test_copies_of_a_lazy_module_are_independent():
    m = LazyLinear(3)
    c = copy.deepcopy(m)
    p = pickle.loads(pickle.dumps(m))
    c(lazyt.ones(1, 5))
    p(lazyt.ones(1, 2))
    assert type(c) is nn.Linear and c.in_features == 5 and p.in_features == 2
    assert type(m) is LazyLinear and is_lazy(m.weight)
    m(lazyt.ones(1, 7))
    assert m.weight.shape == (3, 7) and c.weight.shape == (3, 5)


# ---------------------------------------------------------------------- errors
def test_bad_inputs_and_arguments_raise_lazyt_errors():
    with pytest.raises(lazyt.ShapeError, match="0-d"):
        LazyLinear(3)(lazyt.tensor(1.0))
    with pytest.raises(lazyt.DTypeError, match="expected a tensor"):
        LazyLinear(3)([1.0, 2.0])
    with pytest.raises(lazyt.ShapeError, match="2-D or 3-D"):
        LazyBatchNorm1d()(lazyt.ones(2, 3, 4, 5))
    with pytest.raises(lazyt.ShapeError, match="4-D or 5-D"):
        LazyInstanceNorm3d()(lazyt.ones(2, 3))
    with pytest.raises(lazyt.InvalidArgumentError, match="out_channels .5. must be divisible"):
        LazyConv2d(5, 3, groups=2)
    with pytest.raises(lazyt.InvalidArgumentError, match="out_channels must be"):
        LazyConvTranspose1d(-1, 3)
    with pytest.raises(lazyt.InvalidArgumentError, match="padding_mode"):
        LazyConv3d(2, 3, padding_mode="bogus")
    with pytest.raises(lazyt.ShapeError, match="uninitialized"):
        sum(p.numel() for p in LazyLinear(3).parameters())
    m = LazyLinear(3)
    m(lazyt.ones(2, 4))
    with pytest.raises(lazyt.ShapeError):
        m(lazyt.ones(2, 5))   # now a Linear with in_features=4
