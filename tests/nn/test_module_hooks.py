"""Module hooks and torch-parity module methods: state-dict save and load hooks, extra state,
`set_submodule`, `type`, `to_empty`, `share_memory`, full backward hooks and pre-hooks (and
the deprecated `register_backward_hook`), and `Module.compile`.

Every feature has torch-free tests with hand-computed values; the torch comparisons skip
where torch is not installed."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import lazyt
import lazyt.capture
from lazyt import nn


def _linear(lib_nn=nn):
    """Linear(2, 2) with weight [[1, 2], [3, 4]] and bias [0.5, -0.5] (lazyt or torch)."""
    lin = lib_nn.Linear(2, 2)
    w = np.array([[1., 2.], [3., 4.]], np.float32)
    b = np.array([0.5, -0.5], np.float32)
    if lib_nn is nn:
        lin.load_state_dict({"weight": w, "bias": b})
    else:
        import torch
        lin.load_state_dict({"weight": torch.tensor(w), "bias": torch.tensor(b)})
    return lin


class _Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Sequential(nn.Linear(2, 1))

    def forward(self, x):
        return self.b(self.a(x))


class _Counter(nn.Module):
    """A module with non-tensor state saved through get_extra_state / set_extra_state."""

    def __init__(self, count=0):
        super().__init__()
        self.lin = nn.Linear(2, 1)
        self.register_buffer("scale", lazyt.ones(1))
        self.count = count
        self.restored = []

    def get_extra_state(self):
        return {"count": self.count}

    def set_extra_state(self, state):
        self.restored.append(state)
        self.count = state["count"]


class _Outer(nn.Module):
    def __init__(self, count=0):
        super().__init__()
        self.head = nn.Linear(1, 1)
        self.counter = _Counter(count)


# ---------------------------------------------------------------------- state_dict hooks
def test_state_dict_hooks_run_around_each_module_in_order():
    m = _Pair()
    log = []
    m.register_state_dict_pre_hook(lambda mod, prefix, kv: log.append(("pre", mod, prefix, kv)))
    m.b.register_state_dict_pre_hook(
        lambda mod, prefix, kv: log.append(("pre", mod, prefix, kv)))
    m.b.register_state_dict_post_hook(
        lambda mod, sd, prefix, md: log.append(("post", mod, prefix, sorted(sd), md)))
    m.register_state_dict_post_hook(
        lambda mod, sd, prefix, md: log.append(("post", mod, prefix, sorted(sd), md)))
    sd = m.state_dict(prefix="p.", keep_vars=True)
    keys = ["p.a.bias", "p.a.weight", "p.b.0.bias", "p.b.0.weight"]
    assert log == [("pre", m, "p.", True), ("pre", m.b, "p.b.", True),
                   ("post", m.b, "p.b.", keys, {"version": 1}),
                   ("post", m, "p.", keys, {"version": 1})]
    assert sd["p.a.weight"] is m.a.weight


def test_state_dict_hooks_change_the_module_and_the_dict_in_place():
    m = _Pair()

    def zero_bias(mod, prefix, keep_vars):  # runs before the entries are taken
        with lazyt.no_grad():
            mod.bias.zero_()

    def rename(mod, sd, prefix, md):
        sd[prefix + "renamed"] = sd.pop(prefix + "0.weight")
        sd[prefix + "note"] = 7

    m.a.register_state_dict_pre_hook(zero_bias)
    m.b.register_state_dict_post_hook(rename)
    sd = m.state_dict()
    assert list(sd) == ["a.weight", "a.bias", "b.0.bias", "b.renamed", "b.note"]
    np.testing.assert_array_equal(sd["a.bias"].numpy(), np.zeros(2, np.float32))
    np.testing.assert_array_equal(sd["b.renamed"].numpy(), m.b[0].weight.numpy())
    assert sd["b.note"] == 7
    # with destination=: the hooks change that dict, which is returned
    dest = {"other": 1}
    out = m.state_dict(destination=dest, prefix="m.")
    assert out is dest and "m.b.renamed" in dest and dest["other"] == 1


def test_state_dict_post_hook_returning_a_value_raises():
    m = _Pair()
    m.b.register_state_dict_post_hook(lambda mod, sd, prefix, md: {})
    with pytest.raises(nn.ModuleError, match="post-hook of Sequential returned a value"):
        m.state_dict()


def test_state_dict_hook_handles_remove_them():
    m = _Pair()
    calls = []
    h1 = m.register_state_dict_pre_hook(lambda *a: calls.append("pre"))
    h2 = m.register_state_dict_post_hook(lambda *a: calls.append("post"))
    m.state_dict()
    assert calls == ["pre", "post"]
    h1.remove()
    m.state_dict()
    assert calls == ["pre", "post", "post"]
    h2.remove()
    h2.remove()  # twice: nothing left to remove
    m.state_dict()
    assert calls == ["pre", "post", "post"]
    with m.register_state_dict_post_hook(lambda *a: calls.append("ctx")):
        m.state_dict()
    m.state_dict()
    assert calls == ["pre", "post", "post", "ctx"]
    with pytest.raises(nn.ModuleError, match="callable"):
        m.register_state_dict_pre_hook(3)


def test_state_dict_hooks_match_torch():
    torch = pytest.importorskip("torch")

    def run(N):
        m = N.Sequential(N.Linear(2, 2), N.Sequential(N.Linear(2, 1)))
        log = []
        for mod in (m, m[1]):
            mod.register_state_dict_pre_hook(
                lambda mod, prefix, kv: log.append(("pre", type(mod).__name__, prefix, kv)))
            mod.register_state_dict_post_hook(
                lambda mod, sd, prefix, md: log.append(
                    ("post", type(mod).__name__, prefix, list(sd), md.get("version"))))
        keys = list(m.state_dict(prefix="x."))
        return log, keys

    assert run(nn) == run(torch.nn)


# ---------------------------------------------------------------------- extra state
def test_extra_state_round_trips_through_state_dict():
    src = _Outer(count=5)
    sd = src.state_dict()
    assert list(sd) == ["head.weight", "head.bias", "counter.scale", "counter._extra_state",
                        "counter.lin.weight", "counter.lin.bias"]
    assert sd["counter._extra_state"] == {"count": 5}
    dst = _Outer(count=0)
    result = dst.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.counter.count == 5 and dst.counter.restored == [{"count": 5}]
    np.testing.assert_array_equal(dst.counter.lin.weight.numpy(), src.counter.lin.weight.numpy())
    # a module without get_extra_state saves no such key
    assert not any(k.endswith("_extra_state") for k in nn.Linear(2, 2).state_dict())
    with pytest.raises(lazyt.MissingImplError):
        nn.Linear(2, 2).get_extra_state()


def test_missing_extra_state_raises_when_strict_and_is_reported_otherwise():
    src = _Outer(count=3)
    sd = src.state_dict()
    del sd["counter._extra_state"]
    dst = _Outer(count=9)
    before = dst.head.weight.numpy().copy()
    with pytest.raises(nn.StateDictError, match="counter._extra_state"):
        dst.load_state_dict(sd)
    # nothing changed
    np.testing.assert_array_equal(dst.head.weight.numpy(), before)
    assert dst.counter.count == 9 and dst.counter.restored == []
    result = dst.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["counter._extra_state"] and result.unexpected_keys == []
    assert dst.counter.count == 9
    np.testing.assert_array_equal(dst.head.weight.numpy(), src.head.weight.numpy())


def test_unexpected_extra_state_on_a_plain_module_is_reported():
    lin = nn.Linear(2, 2)
    sd = dict(lin.state_dict())
    sd["_extra_state"] = {"anything": 1}
    with pytest.raises(nn.StateDictError, match="unexpected keys \\(1\\): _extra_state"):
        nn.Linear(2, 2).load_state_dict(sd)
    result = nn.Linear(2, 2).load_state_dict(sd, strict=False)
    assert result.unexpected_keys == ["_extra_state"] and result.missing_keys == []


def test_extra_state_matches_torch():
    torch = pytest.importorskip("torch")

    def make(N):
        class Extra(N.Module):
            def __init__(self):
                super().__init__()
                self.lin = N.Linear(2, 1)
                self.state = 4

            def get_extra_state(self):
                return {"state": self.state}

            def set_extra_state(self, s):
                self.state = s["state"]
        return N.Sequential(N.Linear(1, 2), Extra())

    lm, tm = make(nn), make(torch.nn)
    lsd, tsd = lm.state_dict(), tm.state_dict()
    assert list(lsd) == list(tsd)
    assert lsd["1._extra_state"] == tsd["1._extra_state"] == {"state": 4}
    lsd["1._extra_state"] = tsd["1._extra_state"] = {"state": 8}
    lm.load_state_dict(lsd)
    tm.load_state_dict(tsd)
    assert lm[1].state == tm[1].state == 8
    for sd in (lsd, tsd):
        del sd["1._extra_state"]
        sd["0._extra_state"] = 1
    lres = lm.load_state_dict(lsd, strict=False)
    tres = tm.load_state_dict(tsd, strict=False)
    assert lres.missing_keys == tres.missing_keys == ["1._extra_state"]
    assert lres.unexpected_keys == tres.unexpected_keys == ["0._extra_state"]


# ---------------------------------------------------------------------- load_state_dict hooks
def test_load_pre_hook_renames_keys_of_an_old_checkpoint():
    m = _Pair()
    seen = []

    def upgrade(mod, state, prefix, local_metadata, strict, missing, unexpected, errors):
        seen.append((mod, prefix, dict(local_metadata), strict, list(missing),
                     list(unexpected), list(errors)))
        for old in [k for k in state if k.startswith(prefix + "w_")]:
            state[prefix + old[len(prefix) + 2:]] = state.pop(old)

    m.a.register_load_state_dict_pre_hook(upgrade)
    src = _Pair()
    sd = src.state_dict()
    old = {("a.w_" + k[2:] if k.startswith("a.") else k): v for k, v in sd.items()}
    assert "a.w_weight" in old
    result = m.load_state_dict(old)
    assert result == nn.LoadResult([], [])
    assert seen == [(m.a, "a.", {}, True, [], [], [])]
    for k, v in sd.items():
        np.testing.assert_array_equal(m.state_dict()[k].numpy(), v.numpy())
    assert "a.w_weight" in old  # the caller's dict is not changed


def test_load_pre_hook_sees_metadata_and_assign():
    m = _Pair()
    metas = []
    m.b.register_load_state_dict_pre_hook(lambda mod, sd, prefix, md, *rest: metas.append(md))
    sd = dict(_Pair().state_dict())

    class WithMeta(dict):
        pass
    state = WithMeta(sd)
    state._metadata = {"b": {"version": 3}}
    m.load_state_dict(state, assign=True)
    assert metas == [{"version": 3, "assign_to_params_buffers": True}]


def test_load_pre_hook_error_message_raises_and_changes_nothing():
    m = _Pair()
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    m.b.register_load_state_dict_pre_hook(
        lambda mod, sd, prefix, md, strict, missing, unexpected, errors:
        errors.append("the checkpoint is too old"))
    for strict in (True, False):
        with pytest.raises(nn.StateDictError, match="the checkpoint is too old"):
            m.load_state_dict(_Pair().state_dict(), strict=strict)
        for k, v in m.state_dict().items():
            np.testing.assert_array_equal(v.numpy(), before[k])


def test_load_post_hook_can_clear_missing_keys_so_strict_passes():
    m = _Pair()
    src = _Pair()
    sd = src.state_dict()
    del sd["b.0.bias"]
    seen = []

    def forgive(mod, incompatible):
        seen.append((mod, list(incompatible.missing_keys), list(incompatible.unexpected_keys)))
        incompatible.missing_keys.remove("b.0.bias")

    m.register_load_state_dict_post_hook(forgive)
    result = m.load_state_dict(sd)  # strict: passes, the hook took the missing key away
    assert seen == [(m, ["b.0.bias"], [])]
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(m.a.weight.numpy(), src.a.weight.numpy())
    np.testing.assert_array_equal(m.b[0].weight.numpy(), src.b[0].weight.numpy())


def test_load_post_hooks_run_children_first_and_strict_checks_what_is_left():
    m = _Pair()
    src = _Pair()
    sd = src.state_dict()
    sd["b.extra"] = sd["a.bias"]
    order = []
    m.register_load_state_dict_post_hook(lambda mod, ik: order.append("root"))
    m.b.register_load_state_dict_post_hook(lambda mod, ik: order.append("b"))
    with pytest.raises(nn.StateDictError, match="unexpected keys \\(1\\): b.extra"):
        m.load_state_dict(sd)
    assert order == ["b", "root"]
    # with post-hooks the values are loaded before they run (as torch)
    np.testing.assert_array_equal(m.a.weight.numpy(), src.a.weight.numpy())
    m.b.register_load_state_dict_post_hook(lambda mod, ik: "a value")
    with pytest.raises(nn.ModuleError, match="post-hook"):
        m.load_state_dict(src.state_dict())


def test_strict_failure_without_post_hooks_changes_nothing():
    m = _Pair()
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    sd = _Pair().state_dict()
    del sd["a.bias"]
    with pytest.raises(nn.StateDictError, match="missing keys \\(1\\): a.bias"):
        m.load_state_dict(sd)
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    bad = _Pair().state_dict()
    bad["a.weight"] = np.zeros((3, 3), np.float32)
    with pytest.raises(nn.StateDictError, match="mis-shaped: a.weight"):
        m.load_state_dict(bad, strict=False)
    np.testing.assert_array_equal(m.a.bias.numpy(), before["a.bias"])


def test_load_hook_handles_remove_them():
    m = _Pair()
    calls = []
    h1 = m.register_load_state_dict_pre_hook(lambda *a: calls.append("pre"))
    h2 = m.register_load_state_dict_post_hook(lambda *a: calls.append("post"))
    sd = m.state_dict()
    m.load_state_dict(sd)
    h1.remove()
    m.load_state_dict(sd)
    h2.remove()
    m.load_state_dict(sd)
    assert calls == ["pre", "post", "post"]


def test_load_hooks_match_torch():
    torch = pytest.importorskip("torch")

    def run(N):
        lazyt.manual_seed(0)
        torch.manual_seed(0)
        m = N.Sequential(N.Linear(2, 2), N.Sequential(N.Linear(2, 1)))
        log = []
        for mod in (m, m[1]):
            mod.register_load_state_dict_pre_hook(
                lambda mod, sd, prefix, md, strict, missing, unexpected, errors: log.append(
                    ("pre", type(mod).__name__, prefix, sorted(sd), strict, list(missing),
                     list(unexpected), list(errors))))
            mod.register_load_state_dict_post_hook(
                lambda mod, ik: log.append(("post", type(mod).__name__, list(ik.missing_keys),
                                            list(ik.unexpected_keys))))
        sd = dict(m.state_dict())
        del sd["0.bias"]
        sd["zzz"] = sd["0.weight"]
        sd["1.0.zz"] = sd["0.weight"]
        result = m.load_state_dict(sd, strict=False)
        return log, list(result.missing_keys), list(result.unexpected_keys)

    assert run(nn) == run(torch.nn)


# ---------------------------------------------------------------------- set_submodule
def test_set_submodule_replaces_and_adds():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    tanh = nn.Tanh()
    m.set_submodule("1.0", tanh)
    assert m[1][0] is tanh
    x = lazyt.tensor(np.array([[-1., 2.]], np.float32))
    np.testing.assert_allclose(m(x).numpy(), np.tanh(m[0](x).numpy()), rtol=1e-6)
    extra = nn.Linear(2, 3)
    m.set_submodule("1.extra", extra)  # strict=False: a new name on an existing parent
    assert m.get_submodule("1.extra") is extra
    assert "1.extra.weight" in m.state_dict()
    m.set_submodule("1.extra", nn.Identity(), strict=True)  # exists: fine when strict
    assert isinstance(m[1].extra, nn.Identity)


def test_set_submodule_errors():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    with pytest.raises(nn.MissingMemberError, match="no attribute 'zz'"):
        m.set_submodule("1.zz", nn.Tanh(), strict=True)
    assert not hasattr(m[1], "zz")
    with pytest.raises(lazyt.InvalidArgumentError, match="without a target name"):
        m.set_submodule("", nn.Tanh())
    with pytest.raises(lazyt.InvalidArgumentError, match="not a Module, found int"):
        m.set_submodule("0", 3)
    with pytest.raises(nn.MissingMemberError, match="Linear.weight is not a Module"):
        m.set_submodule("0.weight", nn.Tanh())
    with pytest.raises(AttributeError, match="no submodule 'x'"):
        m.set_submodule("x.y", nn.Tanh())
    assert isinstance(m[0], nn.Linear) and isinstance(m[0].weight, nn.Parameter)


def test_set_submodule_errors_match_torch():
    torch = pytest.importorskip("torch")
    cases = [("1.zz", True, True), ("", True, False), ("0", False, False),
             ("0.weight", True, False), ("x.y", True, False), ("1.new", True, False)]
    for target, is_module, strict in cases:
        kinds = []
        for N in (nn, torch.nn):
            m = N.Sequential(N.Linear(2, 2), N.Sequential(N.ReLU()))
            try:
                m.set_submodule(target, N.Tanh() if is_module else 3, strict=strict)
                kinds.append(None)
            except (AttributeError, ValueError) as e:
                kinds.append(AttributeError if isinstance(e, AttributeError) else ValueError)
        assert kinds[0] == kinds[1], (target, kinds)


# ---------------------------------------------------------------------- type, to_empty, share
def test_type_casts_parameters_gradients_and_every_buffer():
    lazyt.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    m(lazyt.tensor(np.arange(8, dtype=np.float32).reshape(4, 2))).sum().backward()
    params = list(m.parameters())
    values = [p.numpy().copy() for p in params]
    grads = [p.grad.numpy().copy() for p in params]
    assert m.type(lazyt.float64) is m
    assert list(m.parameters()) == params  # the Parameter objects are kept
    for p, v, g in zip(params, values, grads):
        assert p.dtype is lazyt.float64 and p.grad.dtype is lazyt.float64 and p.requires_grad
        np.testing.assert_array_equal(p.numpy(), v.astype(np.float64))
        np.testing.assert_array_equal(p.grad.numpy(), g.astype(np.float64))
    # unlike .double(), integer buffers are cast too (torch's Module.type)
    assert {n: b.dtype for n, b in m.named_buffers()} == {
        "1.running_mean": lazyt.float64, "1.running_var": lazyt.float64,
        "1.num_batches_tracked": lazyt.float64}
    assert float(m[1].num_batches_tracked.item()) == 1.0
    m.type("torch.FloatTensor")
    assert all(t.dtype is lazyt.float32 for t in [*m.parameters(), *m.buffers()])


def test_type_to_an_integer_dtype_refuses_trainable_parameters():
    m = nn.Linear(2, 2)
    w = m.weight.numpy().copy()
    with pytest.raises(lazyt.DTypeError, match="'weight' requires grad"):
        m.type(lazyt.int32)
    assert m.weight.dtype is lazyt.float32  # nothing changed
    np.testing.assert_array_equal(m.weight.numpy(), w)
    m.requires_grad_(False)
    m.type(lazyt.int32)
    assert m.weight.dtype is lazyt.int32 and m.bias.dtype is lazyt.int32
    np.testing.assert_array_equal(m.weight.numpy(), w.astype(np.int32))


def test_type_matches_torch():
    torch = pytest.importorskip("torch")
    results = []
    for N, dtype in ((nn, lazyt.float64), (torch.nn, torch.float64)):
        m = N.Sequential(N.Linear(2, 3), N.BatchNorm1d(3)).type(dtype)
        results.append({n: str(t.dtype).split(".")[-1]
                        for n, t in [*m.named_parameters(), *m.named_buffers()]})
    assert results[0] == results[1]


def test_to_empty_keeps_parameters_shapes_and_dtypes():
    lazyt.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    params = list(m.parameters())
    before = {n: (t.shape, t.dtype) for n, t in [*m.named_parameters(), *m.named_buffers()]}
    assert m.to_empty(device="cpu") is m
    after = {n: (t.shape, t.dtype) for n, t in [*m.named_parameters(), *m.named_buffers()]}
    assert after == before
    assert list(m.parameters()) == params and all(p.requires_grad for p in params)
    assert all(t.device == lazyt.device("cpu") for t in [*m.parameters(), *m.buffers()])
    # the (uninitialized) values can be filled in and used
    m.load_state_dict({k: np.ones(v.shape, np.float32) for k, v in m.state_dict().items()
                       if v.dtype is lazyt.float32}, strict=False)
    m.eval()
    out = m(lazyt.ones((1, 2)))
    assert out.shape == (1, 3)


def test_to_empty_without_recurse_leaves_submodules():
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.own = nn.Parameter(lazyt.ones(2))
            self.child = nn.Linear(2, 2)

    h = Holder()
    child_weight = h.child.weight.numpy().copy()
    own_before = h.own.detach()
    h.to_empty(recurse=False)
    np.testing.assert_array_equal(h.child.weight.numpy(), child_weight)
    assert h.own.shape == (2,) and h.own.detach() is not own_before


def test_share_memory_returns_the_module_unchanged():
    m = nn.Linear(2, 2)
    state = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    params = list(m.parameters())
    assert m.share_memory() is m
    assert list(m.parameters()) == params
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), state[k])


# ---------------------------------------------------------------------- backward hooks
def test_full_backward_hook_sees_input_and_output_gradients():
    lin = _linear()
    seen = []
    lin.register_full_backward_hook(lambda mod, gi, go: seen.append((mod, gi, go)))
    x = lazyt.tensor(np.array([[1., 1.]], np.float32)).require_grad()
    (lin(x) * lazyt.tensor(np.array([1., 2.], np.float32))).sum().backward()
    (mod, gi, go), = seen
    assert mod is lin and len(gi) == 1 and len(go) == 1
    np.testing.assert_allclose(go[0].numpy(), [[1., 2.]])
    np.testing.assert_allclose(gi[0].numpy(), [[7., 10.]])  # go @ W
    np.testing.assert_allclose(x.grad.numpy(), [[7., 10.]])
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[1., 1.], [2., 2.]])


class _Two(nn.Module):
    def forward(self, x, y, scale=1.0):
        return x * y * scale, x + y


def test_backward_hooks_with_two_inputs_and_an_unused_output():
    m = _Two()
    pre, full = [], []
    m.register_full_backward_pre_hook(lambda mod, go: pre.append(go))
    m.register_full_backward_hook(lambda mod, gi, go: full.append((gi, go)))
    x = lazyt.tensor(np.array([1., 2.], np.float32)).require_grad()
    y = lazyt.tensor(np.array([3., 4.], np.float32))  # needs no grad
    a, b = m(x, y)
    (a.sum() + 2 * b.sum()).backward()
    np.testing.assert_allclose(pre[0][0].numpy(), [1., 1.])
    np.testing.assert_allclose(pre[0][1].numpy(), [2., 2.])
    gi, go = full[0]
    np.testing.assert_allclose(gi[0].numpy(), [5., 6.])  # y + 2
    np.testing.assert_allclose(gi[1].numpy(), [0., 0.])  # y needs no grad: zeros, as torch
    np.testing.assert_allclose(x.grad.numpy(), [5., 6.])
    assert y.grad is None
    # an output the loss does not use reaches the hooks as None
    pre.clear()
    full.clear()
    x = lazyt.tensor(np.array([1., 2.], np.float32)).require_grad()
    a, _ = m(x, y)
    a.sum().backward()
    assert pre[0][1] is None and full[0][1][1] is None
    np.testing.assert_allclose(pre[0][0].numpy(), [1., 1.])
    np.testing.assert_allclose(full[0][0][0].numpy(), [3., 4.])
    np.testing.assert_allclose(x.grad.numpy(), [3., 4.])


def test_non_tensor_arguments_are_none_in_grad_input():
    seen = []

    class Wrap(nn.Module):
        def forward(self, x, factor):
            return x * factor

    w = Wrap()
    w.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    x = lazyt.tensor(np.array([1., 2.], np.float32)).require_grad()
    w(x, 3.0).sum().backward()
    assert len(seen[0]) == 2 and seen[0][1] is None
    np.testing.assert_allclose(seen[0][0].numpy(), [3., 3.])


def test_full_backward_hook_replaces_the_input_gradient():
    lin = _linear()
    lin.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10,))
    x = lazyt.tensor(np.array([[1., 1.]], np.float32)).require_grad()
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[40., 60.]])  # (1, 1) @ W = (4, 6), times 10
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[1., 1.], [1., 1.]])  # unchanged


def test_backward_pre_hook_replaces_the_output_gradient():
    lin = _linear()
    seen = []
    lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
    lin.register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].numpy()))
    x = lazyt.tensor(np.array([[1., 1.]], np.float32)).require_grad()
    lin(x).sum().backward()
    np.testing.assert_allclose(seen[0], [[2., 2.]])  # the full hook sees the replaced one
    np.testing.assert_allclose(x.grad.numpy(), [[8., 12.]])
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[2., 2.], [2., 2.]])
    np.testing.assert_allclose(lin.bias.grad.numpy(), [2., 2.])


def test_hooks_chain_in_order_with_prepend_and_handles():
    lin = _linear()
    order = []

    def times(k, name):
        def hook(mod, gi, go):
            order.append(name)
            return (gi[0] * k,)
        return hook

    lin.register_full_backward_hook(times(2, "a"))
    h = lin.register_full_backward_hook(times(3, "b"))
    lin.register_full_backward_hook(times(1, "first"), prepend=True)
    x = lazyt.tensor(np.array([[1., 0.]], np.float32)).require_grad()
    lin(x).sum().backward()
    assert order == ["first", "a", "b"]
    np.testing.assert_allclose(x.grad.numpy(), [[24., 36.]])  # (4, 6) * 2 * 3
    h.remove()
    order.clear()
    x = lazyt.tensor(np.array([[1., 0.]], np.float32)).require_grad()
    lin(x).sum().backward()
    assert order == ["first", "a"]
    np.testing.assert_allclose(x.grad.numpy(), [[8., 12.]])
    # under no_grad nothing is wrapped and no hook runs
    order.clear()
    with lazyt.no_grad():
        out = lin(x)
    assert not out.requires_grad and order == []


def test_nested_module_hooks_run_outer_pre_first_and_outer_full_last():
    order = []
    inner = _linear()
    outer = nn.Sequential(inner, nn.ReLU())
    for name, mod in (("inner", inner), ("outer", outer)):
        mod.register_full_backward_pre_hook(lambda m, go, name=name: order.append(name + ".pre"))
        mod.register_full_backward_hook(lambda m, gi, go, name=name: order.append(name))
    x = lazyt.tensor(np.array([[1., 1.]], np.float32)).require_grad()
    outer(x).sum().backward()
    assert order == ["outer.pre", "inner.pre", "inner", "outer"]


def test_wrong_hook_results_raise_grad_error():
    cases = [
        ("register_full_backward_hook", lambda mod, gi, go: (gi[0], gi[0]),
         "invalid number of grad_input, got 2, but expected 1"),
        ("register_full_backward_hook", lambda mod, gi, go: gi[0],
         "returned Tensor; expected None or a tuple"),
        ("register_full_backward_hook", lambda mod, gi, go: (3.0,),
         "returned float in grad_input"),
        ("register_full_backward_pre_hook", lambda mod, go: (),
         "invalid number of grad_output, got 0, but expected 1"),
    ]
    for method, hook, message in cases:
        lin = _linear()
        getattr(lin, method)(hook)
        x = lazyt.tensor(np.array([[1., 1.]], np.float32)).require_grad()
        with pytest.raises(lazyt.GradError, match=message):
            lin(x).sum().backward()


def test_full_hook_of_a_module_whose_inputs_need_no_grad():
    lin = _linear()
    seen = []
    lin.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    x = lazyt.tensor(np.array([[1., 1.]], np.float32))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(x).sum().backward()
    (gi, go), = seen
    assert gi == (None,)
    np.testing.assert_allclose(go[0].numpy(), [[1., 1.]])
    np.testing.assert_allclose(lin.weight.grad.numpy(), [[1., 1.], [1., 1.]])
    # returning Nones is allowed; anything else raises
    lin2 = _linear()
    lin2.register_full_backward_hook(lambda mod, gi, go: (None,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin2(x).sum().backward()
    np.testing.assert_allclose(lin2.bias.grad.numpy(), [1., 1.])
    lin3 = _linear()
    lin3.register_full_backward_hook(lambda mod, gi, go: (lazyt.ones((1, 2)),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(lazyt.GradError, match="must return None"):
            lin3(x).sum().backward()


def test_deprecated_backward_hook_warns_runs_and_does_not_mix_with_full_ones():
    lin = _linear()
    seen = []
    with pytest.warns(FutureWarning, match="deprecated"):
        lin.register_backward_hook(lambda mod, gi, go: seen.append(gi[0].numpy()))
    x = lazyt.tensor(np.array([[1., 1.]], np.float32)).require_grad()
    lin(x).sum().backward()
    np.testing.assert_allclose(seen[0], [[4., 6.]])
    with pytest.raises(lazyt.InvalidArgumentError, match="both regular backward hooks and full"):
        lin.register_full_backward_hook(lambda *a: None)
    other = _linear()
    other.register_full_backward_hook(lambda *a: None)
    with pytest.raises(lazyt.InvalidArgumentError, match="both regular backward hooks and full"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            other.register_backward_hook(lambda *a: None)
    other.register_full_backward_pre_hook(lambda *a: None)  # pre-hooks mix with either


def test_full_backward_hooks_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib, N):
        lin = _linear(N)
        log = []
        lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
        lin.register_full_backward_hook(
            lambda mod, gi, go: log.append((gi[0].detach().numpy().copy(),
                                            go[0].detach().numpy().copy())) or (gi[0] + 1,))
        seq = N.Sequential(lin, N.Tanh())
        seq.register_full_backward_hook(
            lambda mod, gi, go: log.append((gi[0].detach().numpy().copy(),
                                            go[0].detach().numpy().copy())))
        xs = np.array([[0.5, -1.0], [0.25, 0.75]], np.float32)
        x = lib.tensor(xs, requires_grad=True)
        (seq(x) * lib.tensor(np.array([1., -2.], np.float32))).sum().backward()
        return log, x.grad.numpy(), lin.weight.grad.numpy(), lin.bias.grad.numpy()

    got, want = run(lazyt, nn), run(torch, torch.nn)
    assert len(got[0]) == len(want[0]) == 2
    for (gi, go), (tgi, tgo) in zip(got[0], want[0]):
        np.testing.assert_allclose(gi, tgi, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(go, tgo, rtol=1e-5, atol=1e-6)
    for g, t in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-6)


def test_backward_hooks_with_unused_output_and_no_grad_input_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib, N):
        class Two(N.Module):
            def forward(self, x, y):
                return x * y, x + y

        m = Two()
        pre, full = [], []
        np_ = (lambda t: None if t is None else t.detach().numpy().copy())
        m.register_full_backward_pre_hook(lambda mod, go: pre.append([np_(g) for g in go]))
        m.register_full_backward_hook(
            lambda mod, gi, go: full.append(([np_(g) for g in gi], [np_(g) for g in go])))
        x = lib.tensor(np.array([1., 2.], np.float32), requires_grad=True)
        y = lib.tensor(np.array([3., 4.], np.float32))
        a, _ = m(x, y)
        a.sum().backward()
        return pre, full, x.grad.numpy()

    def same(a, b):
        if isinstance(a, (list, tuple)):
            assert len(a) == len(b)
            for u, v in zip(a, b):
                same(u, v)
        elif a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_allclose(a, b)

    same(run(lazyt, nn), run(torch, torch.nn))


# ---------------------------------------------------------------------- compile
def _frozen_mlp():
    lazyt.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    m.requires_grad_(False)
    return m


def test_compile_goes_through_lazyt_compile_and_matches_plain_calls(monkeypatch):
    made = []
    real = lazyt.capture.compile

    def spy(fn, *args, **kwargs):
        made.append(kwargs)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(lazyt.capture, "compile", spy)
    m = _frozen_mlp()
    xs = [lazyt.tensor(np.random.RandomState(i).randn(5, 3).astype(np.float32))
          for i in range(4)]
    plain = [m(x).numpy() for x in xs]
    assert m.compile(mode="reduce-overhead") is None
    assert made == [{"mode": "reduce-overhead"}]
    compiled = m.__dict__["_compiled_call"]
    assert isinstance(compiled, lazyt.capture.Compiled)
    for x, want in zip(xs, plain):
        np.testing.assert_allclose(m(x).numpy(), want, rtol=1e-6, atol=1e-6)
    info = compiled.cache_info()
    assert info.recordings == 2 and info.hits == 2  # the third and fourth calls replayed
    # the module itself is as before
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(lazyt.CaptureError, match="dynamic=True"):
        _frozen_mlp().compile(dynamic=True)


def test_compiled_module_runs_its_hooks_and_sees_hook_changes():
    m = _frozen_mlp()
    x = lazyt.tensor(np.random.RandomState(0).randn(2, 3).astype(np.float32))
    base = m(x).numpy()
    m[0].register_forward_hook(lambda mod, args, out: out * 0)  # layer 0's output zeroed
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    hooked = m(x).numpy()
    np.testing.assert_allclose(hooked, np.broadcast_to(m[2](m[1](m[0].bias * 0)).numpy(),
                                                       (2, 2)), rtol=1e-6)
    m.compile()
    for _ in range(4):
        np.testing.assert_allclose(m(x).numpy(), hooked, rtol=1e-6, atol=1e-6)
    # a hook added or removed after the recordings is seen (a new recording)
    h = m.register_forward_hook(lambda mod, args, out: out + 100)
    for _ in range(3):
        np.testing.assert_allclose(m(x).numpy(), hooked + 100, rtol=1e-6, atol=1e-5)
    h.remove()
    np.testing.assert_allclose(m(x).numpy(), hooked, rtol=1e-6, atol=1e-6)
    m2 = _frozen_mlp()
    m2.compile()
    for _ in range(3):
        np.testing.assert_allclose(m2(x).numpy(), base, rtol=1e-6, atol=1e-6)


def test_compiled_module_follows_train_and_eval():
    lazyt.manual_seed(0)
    bn = nn.BatchNorm1d(3)
    ref = nn.BatchNorm1d(3)
    bn.requires_grad_(False)
    ref.requires_grad_(False)
    bn.compile()
    x = lazyt.tensor(np.random.RandomState(0).randn(4, 3).astype(np.float32))
    for _ in range(3):
        np.testing.assert_allclose(bn(x).numpy(), ref(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_mean.numpy(), ref.running_mean.numpy(), rtol=1e-6)
    bn.eval()
    ref.eval()
    for _ in range(3):
        np.testing.assert_allclose(bn(x).numpy(), ref(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # x needs no grad
def test_compiled_module_trains_with_the_same_gradients():
    lazyt.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    ref = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    ref.load_state_dict(m.state_dict())
    seen = []
    m[0].register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].numpy().copy()))
    m.compile()
    x = lazyt.tensor(np.random.RandomState(1).randn(2, 3).astype(np.float32))
    for step in range(3):
        m.zero_grad()
        ref.zero_grad()
        out = m(x)
        assert out.requires_grad
        out.sum().backward()
        ref(x).sum().backward()
        for p, q in zip(m.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert len(seen) == 3 and seen[0].shape == (2, 4)


def test_a_compiled_module_can_be_copied_and_pickled():
    m = _frozen_mlp()
    x = lazyt.tensor(np.random.RandomState(0).randn(2, 3).astype(np.float32))
    m.compile()
    for _ in range(3):
        want = m(x).numpy()
    twin = copy.deepcopy(m)
    assert "_compiled_call" not in twin.__dict__  # as torch: a copy is not compiled
    with lazyt.no_grad():
        for p in twin.parameters():
            p.zero_()
    np.testing.assert_array_equal(twin(x).numpy(), np.zeros((2, 2), np.float32))
    np.testing.assert_allclose(m(x).numpy(), want, rtol=1e-6)  # the original is unchanged
    back = pickle.loads(pickle.dumps(m))
    np.testing.assert_allclose(back(x).numpy(), want, rtol=1e-6)


def test_compiled_module_matches_torch_eager():
    torch = pytest.importorskip("torch")
    m = _frozen_mlp()
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    m.register_forward_hook(lambda mod, args, out: out * 3)
    t.register_forward_hook(lambda mod, args, out: out * 3)
    m.compile()
    for i in range(3):
        xs = np.random.RandomState(i).randn(4, 3).astype(np.float32)
        with torch.no_grad():
            want = t(torch.tensor(xs)).numpy()
        np.testing.assert_allclose(m(lazyt.tensor(xs)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_compiled_module_sees_a_hook_on_a_submodule_added_to_a_container():
    seq = lazyt.nn.Sequential(lazyt.nn.Linear(3, 3))
    seq.compile()
    x = lazyt.ones(2, 3)
    with lazyt.no_grad():
        for _ in range(3):
            before = seq(x).numpy()
        seq.append(lazyt.nn.ReLU())
        extra = seq[1]
        extra.register_forward_hook(lambda m, a, out: out * 0 + 7)
        for _ in range(3):
            np.testing.assert_allclose(seq(x).numpy(), np.full_like(before, 7))
