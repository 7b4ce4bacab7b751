"""Module, container, optimizer and layer details that follow torch: shared submodules,
state_dict prefixes, Sequential/ModuleList/ModuleDict list and dict methods, transformer
parameter order, ParameterDict key order, multilabel_margin_loss with repeated targets,
optimizer state and groups, Embedding max_norm, norm layers' bias=False and old checkpoints."""
from collections import OrderedDict

import numpy as np
import pytest

import lazyt
from lazyt import nn, optim
from lazyt.nn import functional as F


def _shared(lib_nn):
    m = lib_nn.Module()
    m.a = lib_nn.Linear(2, 2)
    m.b = m.a
    return m


def _torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------------- 1. shared submodules
def test_shared_submodule_is_visited_once():
    m = _shared(nn)
    assert [n for n, _ in m.named_children()] == ["a"]
    assert list(m.children()) == [m.a]
    assert [n for n, _ in m.named_modules()] == ["", "a"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b"]
    assert len(list(m.modules())) == 2 and len(list(m.modules(remove_duplicate=False))) == 3
    calls = []
    m.apply(lambda x: calls.append(type(x).__name__))
    assert calls == ["Linear", "Module"]
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias"]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == \
        ["a.weight", "a.bias", "b.weight", "b.bias"]
    assert len(list(m.parameters())) == 2
    assert list(m.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]
    m.load_state_dict(m.state_dict())


def test_shared_buffers_and_parameters_once():
    m = nn.Module()
    m.c = nn.BatchNorm1d(2)
    m.d = m.c
    m.x = nn.Linear(2, 2)
    m.y = nn.Linear(2, 2)
    m.y.weight = m.x.weight
    assert [n for n, _ in m.named_buffers()] == \
        ["c.running_mean", "c.running_var", "c.num_batches_tracked"]
    assert len(list(m.named_buffers(remove_duplicate=False))) == 6
    assert [n for n, _ in m.named_parameters()] == \
        ["c.weight", "c.bias", "x.weight", "x.bias", "y.bias"]
    assert [n for n, _ in m.named_parameters(prefix="p")][0] == "p.c.weight"


def test_shared_submodule_matches_torch():
    torch = _torch()
    a, t = _shared(nn), _shared(torch.nn)
    for call in (lambda m: [n for n, _ in m.named_children()],
                 lambda m: [n for n, _ in m.named_modules()],
                 lambda m: [n for n, _ in m.named_modules(remove_duplicate=False)],
                 lambda m: [n for n, _ in m.named_parameters()],
                 lambda m: [n for n, _ in m.named_parameters(remove_duplicate=False)],
                 lambda m: list(m.state_dict())):
        assert call(a) == call(t)


# ---------------------------------------------------------------------- 2. state_dict arguments
def test_state_dict_prefix_destination_keep_vars():
    lin = nn.Linear(2, 2)
    assert list(lin.state_dict(prefix="enc.")) == ["enc.weight", "enc.bias"]
    assert list(lin.state_dict(prefix="enc")) == ["encweight", "encbias"]  # as is, as torch
    seq = nn.Sequential(nn.Linear(2, 2))
    assert list(seq.state_dict(prefix="m.")) == ["m.0.weight", "m.0.bias"]
    sd = lin.state_dict(keep_vars=True)
    assert sd["weight"] is lin.weight and isinstance(sd["bias"], nn.Parameter)
    assert not isinstance(lin.state_dict()["weight"], nn.Parameter)
    dest = {"x": 1}
    out = lin.state_dict(destination=dest, prefix="p.")
    assert out is dest and list(dest) == ["x", "p.weight", "p.bias"]


def test_state_dict_arguments_match_torch():
    torch = _torch()
    for kw in (dict(prefix="enc."), dict(prefix="enc")):
        assert list(nn.Linear(2, 2).state_dict(**kw)) == \
            list(torch.nn.Linear(2, 2).state_dict(**kw))


# ---------------------------------------------------------------------- 3. containers
def _seq_keys(lib_nn):
    s = lib_nn.Sequential(lib_nn.Linear(2, 2), lib_nn.ReLU(), lib_nn.Linear(2, 2))
    return list(s[1:].state_dict())


def test_sequential_slice_keeps_keys_and_named_modules():
    assert _seq_keys(nn) == ["2.weight", "2.bias"]
    s = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert list(s._modules) == ["fc", "act"] and s.fc is s[0]
    assert list(s.state_dict()) == ["fc.weight", "fc.bias"]
    assert list(s[1:]._modules) == ["act"]
    assert s(lazyt.ones(1, 2)).shape == (1, 3)
    assert not isinstance(nn.Sequential(), nn.ModuleList)


def test_sequential_list_methods():
    r, t, g = nn.ReLU(), nn.Tanh(), nn.GELU()
    s = nn.Sequential(r, t, g)
    assert s.pop(1) is t and list(s._modules) == ["0", "1"] and s[1] is g
    s = nn.Sequential(r, t, g)
    del s[0:2]
    assert list(s._modules) == ["0"] and s[0] is g
    both = nn.Sequential(r) + nn.Sequential(t)
    assert list(both) == [r, t]
    s = nn.Sequential(r)
    assert s.append(t) is s and s.extend([g]) is s and list(s) == [r, t, g]
    assert s.insert(0, g) is s and list(s._modules) == ["0", "1", "2", "3"] and s[0] is g
    s = nn.Sequential(r)
    s += nn.Sequential(t)
    assert list(s) == [r, t]
    assert len(nn.Sequential(r) * 3) == 3
    with pytest.raises(ValueError):
        nn.Sequential(r) + nn.ModuleList([t])
    with pytest.raises(IndexError):
        nn.Sequential(r)[3]


def test_modulelist_and_moduledict_methods():
    r, t, g = nn.ReLU(), nn.Tanh(), nn.GELU()
    ml = nn.ModuleList([r])
    ml += [t, g]
    assert list(ml) == [r, t, g]
    assert ml.pop(-1) is g and list(ml._modules) == ["0", "1"]
    assert isinstance(ml[0:1], nn.ModuleList) and isinstance(ml + [g], nn.ModuleList)
    del ml[0:1]
    assert list(ml) == [t] and list(ml._modules) == ["0"]
    md = nn.ModuleDict({"b": r, "a": t})
    assert list(md.keys()) == ["b", "a"]  # insertion order (no sorting, unlike ParameterDict)
    md.update([("c", g)])
    md.update({"d": nn.ReLU()})
    assert list(md) == ["b", "a", "c", "d"]
    assert md.pop("b") is r and list(md.values())[0] is t
    assert [k for k, _ in md.items()] == ["a", "c", "d"]


def _container_ops(lib):
    s = lib.Sequential(lib.ReLU(), lib.Tanh(), lib.GELU())
    s.pop(0)
    del s[0:1]
    ml = lib.ModuleList([lib.ReLU()])
    ml += [lib.Tanh()]
    ml.pop(0)
    md = lib.ModuleDict({"b": lib.ReLU(), "a": lib.Tanh()})
    md.update({"c": lib.ReLU()})
    md.pop("a")
    return (list(s._modules), list(ml._modules), list(md),
            isinstance(lib.Sequential(), lib.ModuleList))


def test_containers_match_torch():
    torch = _torch()
    assert _seq_keys(nn) == _seq_keys(torch.nn)
    assert _container_ops(nn) == _container_ops(torch.nn)


# ---------------------------------------------------------------------- 4. transformer order
TRANSFORMERS = [
    lambda lib: lib.TransformerEncoderLayer(8, 2, 16),
    lambda lib: lib.TransformerDecoderLayer(8, 2, 16),
    lambda lib: lib.TransformerDecoderLayer(8, 2, 16, norm_first=True, bias=False),
    lambda lib: lib.Transformer(8, 2, 1, 1, 16),
]


def test_decoder_layer_parameter_order():
    keys = list(nn.TransformerDecoderLayer(8, 2, 16).state_dict())
    assert [k.split(".")[0] for k in keys if k.endswith("weight")] == \
        ["self_attn", "self_attn", "multihead_attn", "multihead_attn", "linear1", "linear2",
         "norm1", "norm2", "norm3"]


@pytest.mark.parametrize("build", TRANSFORMERS)
def test_transformer_state_dict_order_matches_torch(build):
    torch = _torch()
    assert list(build(nn).state_dict()) == list(build(torch.nn).state_dict())


# ---------------------------------------------------------------------- 5. ParameterDict
def _pdict_keys(lib_nn, ones, make):
    p = lambda: lib_nn.Parameter(ones(1))  # noqa: E731
    return list(lib_nn.ParameterDict(make(p)).state_dict())


PDICTS = [lambda p: {"b": p(), "a": p()}, lambda p: OrderedDict(b=p(), a=p()),
          lambda p: [("b", p()), ("a", p())]]


def test_parameterdict_sorts_plain_dicts_only():
    got = [_pdict_keys(nn, lazyt.ones, make) for make in PDICTS]
    assert got == [["a", "b"], ["b", "a"], ["b", "a"]]
    d = nn.ParameterDict({"c": nn.Parameter(lazyt.ones(1))})
    d.update({"b": nn.Parameter(lazyt.ones(1)), "a": nn.Parameter(lazyt.ones(1))})
    assert list(d) == ["c", "a", "b"]


def test_parameterdict_matches_torch():
    torch = _torch()
    for make in PDICTS:
        assert _pdict_keys(nn, lazyt.ones, make) == _pdict_keys(torch.nn, torch.ones, make)


# ---------------------------------------------------------------------- 6. multilabel margin
def test_multilabel_margin_counts_repeated_targets(device):
    x = lazyt.tensor([[0.1, 0.2, 0.4, 0.8]], device=device)
    y = lazyt.tensor([[3, 3, -1, 0]], device=device)
    # target 3 listed twice: 2 * (0.3 + 0.4 + 0.6) / 4; the 0 after -1 does not count
    assert F.multilabel_margin_loss(x, y).item() == pytest.approx(0.65, abs=1e-6)
    once = lazyt.tensor([[3, -1, 3, 0]], device=device)
    assert F.multilabel_margin_loss(x, once).item() == pytest.approx(0.325, abs=1e-6)


def test_multilabel_margin_matches_torch(rng):
    torch = _torch()
    for _ in range(30):
        n, c = rng.integers(1, 4), rng.integers(1, 6)
        x = rng.standard_normal((n, c)).astype(np.float32)
        y = rng.integers(-1, c, (n, c))
        xl, xt = lazyt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        a = F.multilabel_margin_loss(xl, lazyt.tensor(y), reduction="sum")
        b = torch.nn.functional.multilabel_margin_loss(xt, torch.tensor(y), reduction="sum")
        a.backward()
        b.backward()
        np.testing.assert_allclose(a.item(), b.item(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(xl.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- 7. optimizers
def test_frozen_parameter_with_grad_is_stepped(device):
    p = nn.Parameter(lazyt.ones(2, device=device))
    p.requires_grad_(False)
    p.grad = lazyt.ones(2, device=device)
    optim.SGD([p], lr=0.5).step()
    np.testing.assert_allclose(p.numpy(), [0.5, 0.5])


def test_state_is_keyed_by_parameter():
    p = nn.Parameter(lazyt.ones(2))
    opt = optim.Adam([p])
    assert p not in opt.state
    p.grad = lazyt.ones(2)
    opt.step()
    assert p in opt.state and sorted(opt.state[p]) == ["exp_avg", "exp_avg_sq", "step"]
    assert list(opt.state) == [p]
    sd = opt.state_dict()
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    q = nn.Parameter(lazyt.ones(2))
    opt2 = optim.Adam([q])
    opt2.load_state_dict(sd)
    assert opt2.state[q]["step"] == 1
    np.testing.assert_allclose(opt2.state[q]["exp_avg"].numpy(), opt.state[p]["exp_avg"].numpy())


def test_param_groups_carry_torch_flags():
    p = [nn.Parameter(lazyt.ones(1))]
    g = optim.SGD(p, lr=0.1).param_groups[0]
    assert (g["foreach"], g["differentiable"], g["fused"], g["maximize"]) == \
        (None, False, None, False)
    g = optim.Adam(p, foreach=True).param_groups[0]
    assert (g["foreach"], g["capturable"], g["decoupled_weight_decay"]) == (True, False, False)
    assert optim.AdamW(p).param_groups[0]["decoupled_weight_decay"] is True
    with pytest.raises(TypeError, match="capturable"):
        optim.SGD(p, lr=0.1, capturable=False)


def test_adam_decoupled_weight_decay_is_adamw():
    values = []
    for make in (lambda p: optim.Adam([p], lr=0.1, weight_decay=0.1,
                                      decoupled_weight_decay=True),
                 lambda p: optim.AdamW([p], lr=0.1, weight_decay=0.1)):
        p = nn.Parameter(lazyt.tensor([1.0, -2.0]))
        opt = make(p)
        for _ in range(3):
            p.grad = lazyt.tensor([0.5, 0.25])
            opt.step()
        values.append(p.numpy())
    np.testing.assert_allclose(values[0], values[1])


def test_named_parameters_give_param_names():
    m = nn.Linear(2, 2)
    opt = optim.SGD(m.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["params"] == [m.weight, m.bias]
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    group = opt.state_dict()["param_groups"][0]
    assert group["param_names"] == ["weight", "bias"] and group["params"] == [0, 1]
    assert list(group)[0] == "param_names" and list(group)[-1] == "params"
    with pytest.raises(optim.OptimizerError, match="names"):
        opt.add_param_group({"params": [nn.Parameter(lazyt.ones(1))]})
    with pytest.raises(optim.OptimizerError, match="names"):
        optim.SGD([("w", m.weight), m.bias], lr=0.1)


def test_optimizer_groups_match_torch():
    torch = _torch()
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
                 "RAdam"):
        a = getattr(optim, name)([nn.Parameter(lazyt.ones(1))], lr=0.1).param_groups[0]
        b = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))],
                                       lr=0.1).param_groups[0]
        assert list(a) == list(b), name
        assert {k: v for k, v in a.items() if k != "params"} == \
            {k: v for k, v in b.items() if k != "params"}, name
    lg = optim.SGD(nn.Linear(2, 2).named_parameters(), lr=0.1).state_dict()["param_groups"]
    tg = torch.optim.SGD(torch.nn.Linear(2, 2).named_parameters(),
                         lr=0.1).state_dict()["param_groups"]
    assert lg == tg


def test_frozen_parameter_and_state_match_torch():
    torch = _torch()
    results = []
    for lib_nn, lib, lib_optim in ((nn, lazyt, optim), (torch.nn, torch, torch.optim)):
        p = lib_nn.Parameter(lib.ones(2))
        p.requires_grad_(False)
        p.grad = lib.ones(2)
        opt = lib_optim.Adam([p], lr=0.5)
        opt.step()
        results.append((np.asarray(p.detach().numpy()).tolist(), sorted(opt.state[p])))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    assert results[0][1] == results[1][1]


# ---------------------------------------------------------------------- 8. Embedding max_norm
def test_embedding_max_norm_renormalizes_looked_up_rows(device):
    w = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], np.float32)
    e = nn.Embedding(3, 2, max_norm=1.0, device=device)
    e.load_state_dict({"weight": w})
    out = e(lazyt.tensor([[0, 0, 1]], device=device))
    scaled = w[0] / (5.0 + 1e-7)
    np.testing.assert_allclose(out.numpy(), [[scaled, scaled, w[1]]], rtol=1e-6)
    # in place in the table, only for the rows looked up
    np.testing.assert_allclose(e.weight.numpy(), [scaled, w[1], w[2]], rtol=1e-6)
    assert e.weight.requires_grad
    e(lazyt.tensor([2], device=device)).sum().backward()
    np.testing.assert_allclose(e.weight.grad.numpy(), [[0, 0], [0, 0], [1, 1]])
    assert "max_norm=1.0" in repr(e)
    with pytest.raises(lazyt.InvalidArgumentError, match="sparse"):
        nn.Embedding(3, 2, sparse=True)


def test_embedding_max_norm_matches_torch(rng):
    torch = _torch()
    for norm_type in (2.0, 1.0, 3.0, float("inf")):
        w = (rng.standard_normal((6, 3)) * 2).astype(np.float32)
        ids = np.array([[0, 2, 2], [5, 1, 0]])
        t = torch.nn.Embedding(6, 3, max_norm=0.8, norm_type=norm_type)
        t.weight.data = torch.tensor(w)
        a = nn.Embedding(6, 3, max_norm=0.8, norm_type=norm_type)
        a.load_state_dict({"weight": w})
        ot, oa = t(torch.tensor(ids)), a(lazyt.tensor(ids))
        ot.sum().backward()
        oa.sum().backward()
        np.testing.assert_allclose(oa.numpy(), ot.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.weight.numpy(), t.weight.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(a.weight.grad.numpy(), t.weight.grad.numpy())


# ---------------------------------------------------------------------- 9. norm layers
NORMS = [
    lambda lib: lib.BatchNorm1d(3, bias=False),
    lambda lib: lib.BatchNorm2d(3, affine=False, bias=False),
    lambda lib: lib.GroupNorm(1, 3, bias=False),
    lambda lib: lib.InstanceNorm1d(3, affine=True, bias=False),
    lambda lib: lib.InstanceNorm2d(3, affine=True, track_running_stats=True, bias=False),
]


def test_norm_layers_without_bias():
    b = nn.BatchNorm1d(3, bias=False)
    assert b.bias is None and list(b.state_dict()) == \
        ["weight", "running_mean", "running_var", "num_batches_tracked"]
    assert "bias=False" in repr(b)
    x = lazyt.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    np.testing.assert_allclose(b(x).numpy().mean(0), 0.0, atol=1e-5)
    g = nn.GroupNorm(1, 3, bias=False)
    assert list(g.state_dict()) == ["weight"] and g(x).shape == (4, 3)
    i = nn.InstanceNorm1d(3, affine=True, bias=False)
    assert list(i.state_dict()) == ["weight"] and i(lazyt.ones(2, 3, 4)).shape == (2, 3, 4)


@pytest.mark.parametrize("build", NORMS)
def test_norm_layers_without_bias_match_torch(build):
    torch = _torch()
    import inspect
    if "bias" not in inspect.signature(torch.nn.BatchNorm1d).parameters:
        pytest.skip(f"torch {torch.__version__} has no bias= on its norm layers (2.14 has)")
    a, t = build(nn), build(torch.nn)
    assert list(a.state_dict()) == list(t.state_dict())
    assert repr(a) == repr(t)
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 4) if "2d" in repr(a) else
                                                 (2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(a(lazyt.tensor(x)).numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_batchnorm_loads_a_checkpoint_without_num_batches_tracked():
    src = nn.BatchNorm1d(3)
    src.running_mean = lazyt.tensor([1.0, 2.0, 3.0])
    sd = {k: v for k, v in src.state_dict().items() if k != "num_batches_tracked"}
    dst = nn.Sequential(nn.BatchNorm1d(3))
    with lazyt.no_grad():
        dst[0].num_batches_tracked.add_(5)
    result = dst.load_state_dict({f"0.{k}": v for k, v in sd.items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst[0].num_batches_tracked.item() == 5  # kept, as torch
    np.testing.assert_allclose(dst[0].running_mean.numpy(), [1.0, 2.0, 3.0])
    assert "num_batches_tracked" not in sd  # the caller's dict is not changed
    with pytest.raises(nn.StateDictError, match="num_batches_tracked"):
        nn.InstanceNorm1d(3, track_running_stats=True).load_state_dict(
            {"running_mean": np.zeros(3), "running_var": np.ones(3)})


def test_batchnorm_old_checkpoint_matches_torch():
    torch = _torch()
    sd = {k: v for k, v in torch.nn.BatchNorm1d(3).state_dict().items()
          if k != "num_batches_tracked"}  # a plain dict: no version metadata
    torch.nn.BatchNorm1d(3).load_state_dict(sd)
    nn.BatchNorm1d(3).load_state_dict({k: v.numpy() for k, v in sd.items()})
    versioned = torch.nn.BatchNorm1d(3).state_dict()  # version 2 metadata: must have it
    del versioned["num_batches_tracked"]
    with pytest.raises(RuntimeError):
        torch.nn.BatchNorm1d(3).load_state_dict(versioned)
    with pytest.raises(nn.StateDictError, match="num_batches_tracked"):
        nn.BatchNorm1d(3).load_state_dict(versioned)
