"""`lazyt.compile`: replayed results equal plain calls (bit for bit: the same kernels run),
for inference and for training steps in both flows; every refusal raises `CaptureError`."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.nn import functional as F


@pytest.fixture
def fused(device):
    """A device whose stack records (fusion=False devices make plain calls)."""
    if not device.fusion:
        pytest.skip("fusion=False: a compiled function is a plain call there")
    return device


def chain(a, b):
    x = a
    for _ in range(4):
        x = ((x * b + 1.0) - a).relu()
    return x


def _data(device, n=6, shape=(8, 16), seed=0):
    rng = np.random.default_rng(seed)
    return [lazyt.tensor(rng.standard_normal(shape).astype(np.float32), device=device)
            for _ in range(n)]


# ---------------------------------------------------------------------------- inference
def test_replay_equals_plain_calls_on_new_inputs(fused):
    device = fused
    c = lazyt.compile(chain)
    xs = _data(device, 5)
    b = _data(device, 1, seed=1)[0]
    for x in xs:
        np.testing.assert_array_equal(c(x, b).numpy(), chain(x, b).numpy())
    info = c.cache_info()
    assert (info.hits, info.misses, info.recordings, info.currsize) == (3, 2, 2, 1)


def test_decorator_forms_and_structures(fused):
    device = fused
    @lazyt.compile
    def f(pair, scale, *, extra=None):
        x, y = pair
        return {"sum": x + y * scale, "list": [x.exp(), None, 3]}

    @lazyt.compile(cache_size=2)
    def g(x):
        return x * 2

    x, y = _data(device, 2)
    for _ in range(4):
        out = f((x, y), 2.0, extra="k")
        np.testing.assert_array_equal(out["sum"].numpy(), (x + y * 2.0).numpy())
        np.testing.assert_array_equal(out["list"][0].numpy(), x.exp().numpy())
        assert out["list"][1:] == [None, 3]
        np.testing.assert_array_equal(g(x).numpy(), x.numpy() * 2)
    assert f.cache_info().hits == 2 and g.cache_info().maxsize == 2


def test_a_new_signature_records_again_and_the_cache_is_bounded(fused):
    device = fused
    g = lazyt.compile(lambda x, s: x * s, cache_size=2)
    x = _data(device, 1)[0]
    for s in (1.0, 2.0, 3.0):            # a Python scalar is part of the signature
        for _ in range(3):
            np.testing.assert_array_equal(g(x, s).numpy(), x.numpy() * s)
    for shape in ((4,), (2, 3)):         # and shapes are
        z = lazyt.ones(*shape, device=device)
        np.testing.assert_array_equal(g(z, 2.0).numpy(), np.full(shape, 2.0))
    assert g.cache_info().currsize == 2
    g.reset()
    assert g.cache_info().currsize == 0


def test_outputs_are_fresh_tensors_and_inputs_are_never_overwritten(device):
    c = lazyt.compile(lambda x: (x * 3).relu() + 1)
    x = _data(device, 1)[0]
    keep = x.numpy().copy()
    outs = [c(x) for _ in range(5)]
    assert len({id(o) for o in outs}) == 5
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), np.maximum(keep * 3, 0) + 1)
    np.testing.assert_array_equal(x.numpy(), keep)


def test_weights_read_from_a_closure_are_read_at_each_call(fused):
    device = fused
    lin = nn.Linear(16, 4, device=device)
    c = lazyt.compile(lambda x: lin(x))
    x = _data(device, 1)[0]
    with lazyt.no_grad():
        for _ in range(3):
            c(x)
        lin.weight.mul_(0.5)             # updated outside the compiled function
        np.testing.assert_array_equal(c(x).numpy(), lin(x).numpy())
    assert c.cache_info().hits == 2


def test_outputs_are_detached(fused):
    device = fused
    lin = nn.Linear(16, 4, device=device)
    c = lazyt.compile(lambda x: lin(x).sum())
    x = _data(device, 1)[0]
    for _ in range(3):
        out = c(x)
        assert not out.requires_grad


def test_model_compiled_under_no_grad(device):
    lazyt.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32, device=device), nn.GELU(),
                      nn.LayerNorm(32, device=device), nn.Linear(32, 4, device=device))
    cm = lazyt.compile(m)
    with lazyt.no_grad():
        for x in _data(device, 4):
            np.testing.assert_array_equal(cm(x).numpy(), m(x).numpy())


# ---------------------------------------------------------------------------- training
def _train(device, opt_name, compiled, flow="torch", steps=10):
    lazyt.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32, device=device), nn.ReLU(),
                      nn.Linear(32, 4, device=device))
    if opt_name == "sgd":
        opt = lazyt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    elif opt_name == "adam":
        opt = lazyt.optim.Adam(m.parameters(), lr=1e-2)
    else:
        opt = lazyt.optim.AdamW(m.parameters(), lr=1e-2, amsgrad=True)
    xs = _data(device, 6)
    rng = np.random.default_rng(5)
    ys = [lazyt.tensor(rng.integers(0, 4, 8), device=device) for _ in range(6)]

    def step(x, y):
        if flow == "torch":
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
        else:
            loss = F.cross_entropy(m(x), y)
            opt.step(loss.backward())
        return loss

    f = lazyt.compile(step) if compiled else step
    losses = [float(f(xs[i % 6], ys[i % 6])) for i in range(steps)]
    return losses, [p.numpy().copy() for p in m.parameters()], m, f


@pytest.mark.parametrize("flow", ["torch", "burn"])
def test_sgd_training_steps_replay_bit_for_bit(fused, flow):
    device = fused
    plain, p_plain, _, _ = _train(device, "sgd", False, flow)
    comp, p_comp, m, f = _train(device, "sgd", True, flow)
    assert plain == comp
    for a, b in zip(p_plain, p_comp):
        np.testing.assert_array_equal(a, b)
    assert f.cache_info().hits >= 6
    if flow == "torch":                   # .grad holds the last step's gradient, as plain
        assert all(p.grad is not None for p in m.parameters())


@pytest.mark.parametrize("opt_name", ["adam", "adamw"])
def test_adam_training_steps_match(fused, opt_name):
    """Under lazyt.compile Adam's step count lives on the device (its bias corrections are
    float32 there): the same curve within float32 rounding."""
    device = fused
    plain, p_plain, _, _ = _train(device, opt_name, False)
    comp, p_comp, _, f = _train(device, opt_name, True)
    np.testing.assert_allclose(comp, plain, rtol=2e-5, atol=2e-6)
    for a, b in zip(p_plain, p_comp):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert f.cache_info().hits >= 6


def test_a_changed_learning_rate_records_again(fused):
    device = fused
    lazyt.manual_seed(0)
    lin = nn.Linear(4, 1, device=device)
    opt = lazyt.optim.SGD(lin.parameters(), lr=0.1)
    x = lazyt.ones(2, 4, device=device)

    @lazyt.compile
    def step():
        opt.zero_grad()
        loss = lin(x).sum()
        loss.backward()
        opt.step()
        return loss

    for _ in range(3):
        step()
    before = lin.bias.numpy().copy()
    opt.param_groups[0]["lr"] = 0.5       # a scheduler's change is seen, not baked in
    step()
    np.testing.assert_allclose(lin.bias.numpy(), before - 0.5 * 2, rtol=1e-6)
    assert step.cache_info().recordings == 3


def test_in_place_state_updates_are_replayed(device):
    acc = lazyt.zeros(3, device=device)
    c = lazyt.compile(lambda x: acc.add_(x))
    x = lazyt.ones(3, device=device)
    for _ in range(5):
        c(x)
    np.testing.assert_array_equal(acc.numpy(), [5.0, 5.0, 5.0])
    assert acc._version == 5


# ---------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("body, match", [
    (lambda x: x.sum().item(), "reading a tensor's values"),
    (lambda x: float(x.mean()), "reading a tensor's values"),
    (lambda x: print(x), "reading a tensor's values"),
    (lambda x: x.numpy(), "reading a tensor's values"),
    (lambda x: x[x > 0], "reading a tensor's values"),
    (lambda x: x * lazyt.randn(8, 16, device=x.device), "random numbers"),
    (lambda x: nn.Dropout(0.5)(x), "random numbers"),
    (lambda x: lazyt.sync(), "lazyt.sync"),
    (lambda x: x.to("cpu") if x.device.base != "cpu" else x.numpy(), "reading"),
])
def test_what_cannot_be_replayed_raises(fused, body, match):
    device = fused
    x = _data(device, 1)[0]
    c = lazyt.compile(body)
    with pytest.raises(lazyt.CaptureError, match=match):
        c(x)
    np.testing.assert_array_equal((x * 2).numpy(), x.numpy() * 2)   # the runtime still works


def test_recording_pauses_the_cyclic_collector_and_restores_it(fused):
    """The collector's full passes walk every op a recording keeps alive (superlinear record
    cost): none runs during a recording call, and its state comes back as it was, also when
    the function raises."""
    import gc
    device = fused
    x = _data(device, 1)[0]
    passes, seen, inside = [], [], [False]

    def counting(phase, info):
        if phase == "start" and inside[0]:
            passes.append(info["generation"])

    def f(t):
        seen.append(gc.isenabled())
        inside[0] = True
        for _ in range(300):
            t = (t * 1.0001 + 0.5).relu()
            [[] for _ in range(20)]          # gc-tracked garbage: would trigger passes
        inside[0] = False
        return t

    c = lazyt.compile(f)
    gc.callbacks.append(counting)
    try:
        c(x)
        c(x)
    finally:
        gc.callbacks.remove(counting)
    assert seen == [False, False] and passes == [] and gc.isenabled()
    np.testing.assert_array_equal(c(x).numpy(), f(x).numpy())

    bad = lazyt.compile(lambda t: (t * 2).sum().item())
    with pytest.raises(lazyt.CaptureError):
        bad(x)
    assert gc.isenabled()
    gc.disable()                             # a user's own setting is kept
    try:
        lazyt.compile(lambda t: t + 1)(x)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_value_dependent_control_flow_is_detected(fused):
    device = fused
    calls = [0]

    def f(x):
        calls[0] += 1
        return x * 2 if calls[0] % 2 else x + 1

    c = lazyt.compile(f)
    x = _data(device, 1)[0]
    c(x)
    with pytest.raises(lazyt.CaptureError, match="different ops"):
        c(x)


def test_state_replaced_by_new_tensors_is_refused(fused):
    device = fused
    box = {}

    def f(x):
        box["v"] = x * 2 if "v" not in box else box["v"] + x
        return box["v"].sum()

    c = lazyt.compile(f)
    x = _data(device, 1)[0]
    with pytest.raises(lazyt.CaptureError, match="in place"):
        for _ in range(3):
            c(x)


def test_bad_arguments():
    with pytest.raises(lazyt.CaptureError, match="callable"):
        lazyt.compile(3)
    with pytest.raises(lazyt.CaptureError, match="cache_size"):
        lazyt.compile(chain, cache_size=0)
    c = lazyt.compile(lambda x, opts: x)
    with pytest.raises(lazyt.CaptureError, match="signature"):
        c(lazyt.ones(2), [{1, 2}][0] if False else {"a": [1, {2}]})


def test_lazyt_compile_0_makes_plain_calls(device, monkeypatch):
    monkeypatch.setenv("LAZYT_COMPILE", "0")
    c = lazyt.compile(lambda x: x.sum().item())     # reading is fine in a plain call
    x = lazyt.ones(3, device=device)
    assert c(x) == 3.0 and c(x) == 3.0
    assert c.cache_info().recordings == 0


def test_extension_ops_replay(device):
    from lazyt.extension import backend_extension  # noqa: F401
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    from custom_kernel.lib import matmul_add_relu_custom
    a, = _data(device, 1, (8, 16))
    w, = _data(device, 1, (16, 4), seed=2)
    b, = _data(device, 1, (8, 4), seed=3)
    c = lazyt.compile(lambda x: matmul_add_relu_custom(x, w, b) * 2)
    for _ in range(4):
        np.testing.assert_array_equal(c(a).numpy(), (matmul_add_relu_custom(a, w, b) * 2).numpy())


def _graph_of(compiled):
    entry = next(iter(compiled._cache.values()))
    return entry.ready.graph if entry.ready is not None else None


def test_device_graph_replays_equal_plain_calls(fused):
    device = fused
    if not getattr(device.base_backend, "graphs", False):
        pytest.skip(f"{device} has no device graphs (cuda and wgpu have)")
    c = lazyt.compile(chain)
    xs = _data(device, 6)
    b = _data(device, 1, seed=1)[0]
    outs = [c(x, b) for x in xs]                       # later calls run one device graph
    assert _graph_of(c) is not None
    for x, o in zip(xs, outs):                         # results held across launches survive
        np.testing.assert_array_equal(o.numpy(), chain(x, b).numpy())
    plain, p_plain, _, _ = _train(device, "sgd", False, steps=12)
    comp, p_comp, _, f = _train(device, "sgd", True, steps=12)
    assert _graph_of(f) is not None
    assert plain == comp
    for a, p in zip(p_plain, p_comp):
        np.testing.assert_array_equal(a, p)


def _handout_device(device):
    if not getattr(device.base_backend, "graph_handout", False):
        pytest.skip(f"{device}'s graphs copy their results out (cuda hands them out)")
    return device


def two_outputs(a, b):
    y = chain(a, b)
    return y, (y * 2.0).sum(axis=1)


def test_graph_results_are_handed_out_without_a_copy_when_nobody_holds_the_last(fused,
                                                                            monkeypatch):
    """A call whose last results are gone reuses their buffers (no copy); held results,
    views of them and pending ops on them are never overwritten."""
    device = _handout_device(fused)
    backend = device.base_backend
    clones = []
    real_clone = backend.graph_clone
    monkeypatch.setattr(backend, "graph_clone", lambda x: clones.append(1) or real_clone(x))
    c = lazyt.compile(two_outputs)
    xs = _data(device, 12)
    b = _data(device, 1, seed=1)[0]
    want = [tuple(t.numpy() for t in two_outputs(x, b)) for x in xs]
    for x in xs[:6]:
        c(x, b)                                    # record, compare, replay, capture
    run = _graph_of(c)
    assert run is not None and run.fresh is not None
    clones.clear()
    for i in range(4, 12):                         # `out = c(x)` in a loop: two sets alternate
        out = c(xs[i], b)
        np.testing.assert_array_equal(out[0].numpy(), want[i][0])
        np.testing.assert_array_equal(out[1].numpy(), want[i][1])
    assert run.handout_error is None
    assert clones == [] and len(run.sets) == 2
    held = [c(x, b) for x in xs]                   # every set held: copies, never overwrites
    assert clones
    for h, w in zip(held, want):
        np.testing.assert_array_equal(h[0].numpy(), w[0])
        np.testing.assert_array_equal(h[1].numpy(), w[1])
    del held
    out = c(xs[0], b)
    view = out[0][2:5]                             # a view keeps the buffer held
    pending = out[1] * 3.0                         # so does an op not run yet
    del out
    for x in xs[1:6]:
        c(x, b)
    np.testing.assert_array_equal(view.numpy(), want[0][0][2:5])
    np.testing.assert_array_equal(pending.numpy(), want[0][1] * np.float32(3.0))


def test_held_results_run_step_by_step_when_copying_them_costs_more(fused, monkeypatch):
    """When every result set is held and the recording updates no state, a call whose
    copy-out would cost more than its steps runs the steps on new buffers: no copy, no
    overwrite, the same values; a training step (state updated in place) never does."""
    device = fused
    if not getattr(device.base_backend, "graphs", False):
        pytest.skip(f"{device} has no device graphs (cuda and wgpu have)")
    from lazyt import capture
    monkeypatch.setattr(capture, "STEP_HOST_US", 0.0)   # any copy costs more than a step
    backend = device.base_backend
    clones = []
    real_clone = backend.graph_clone
    monkeypatch.setattr(backend, "graph_clone", lambda x: clones.append(1) or real_clone(x))
    c = lazyt.compile(two_outputs)
    xs = _data(device, 10)
    b = _data(device, 1, seed=1)[0]
    want = [tuple(t.numpy() for t in two_outputs(x, b)) for x in xs]
    held = [c(x, b) for x in xs]                   # every set held after the first two
    run = _graph_of(c)
    assert run is not None and run.direct
    assert clones == []
    for h, w in zip(held, want):
        np.testing.assert_array_equal(h[0].numpy(), w[0])
        np.testing.assert_array_equal(h[1].numpy(), w[1])
    assert _graph_of(c) is run                     # the graph is kept for later calls
    del held
    for x, w in zip(xs, want):                     # nothing held: the graph runs again
        out = c(x, b)
        np.testing.assert_array_equal(out[0].numpy(), w[0])
    assert clones == []
    plain, p_plain, _, _ = _train(device, "sgd", False, steps=8)
    comp, p_comp, _, f = _train(device, "sgd", True, steps=8)
    assert _graph_of(f) is not None and not _graph_of(f).direct
    assert plain == comp
    for a, p in zip(p_plain, p_comp):
        np.testing.assert_array_equal(a, p)


def test_large_held_results_are_not_copied_by_default(fused):
    """The default costs: a 64 MB result of a one-step recording runs step by step when held
    (a copy would cost the device more than the step costs the host); a small one is copied."""
    device = fused
    if not getattr(device.base_backend, "graphs", False):
        pytest.skip(f"{device} has no device graphs (cuda and wgpu have)")
    for n, direct in ((1 << 24, True), (1 << 10, False)):
        c = lazyt.compile(lambda x: (x * 2.0 + 1.0).relu())
        x = lazyt.ones(n, device=device)
        held = [c(x) for _ in range(5)]
        assert _graph_of(c).direct is direct
        assert float(held[-1][-1].item()) == 3.0
        del held


def test_a_loop_feeding_each_result_back_matches_plain_calls(fused):
    device = fused
    f = lambda x: (x * 0.5 + 1.0).relu()  # noqa: E731
    c = lazyt.compile(f)
    x = p = _data(device, 1)[0]
    for _ in range(10):
        x, p = c(x), f(p)
    np.testing.assert_array_equal(x.numpy(), p.numpy())


def test_gradients_accumulate_across_calls_as_plain(fused):
    device = fused

    def run(compiled):
        lazyt.manual_seed(0)
        lin = nn.Linear(4, 2, device=device)
        x = lazyt.ones(3, 4, device=device)

        def acc():                         # no zero_grad: .grad accumulates, as in torch
            lin(x).sum().backward()
            return lin.weight.grad * 1.0

        f = lazyt.compile(acc) if compiled else acc
        return [f().numpy().copy() for _ in range(5)], lin.weight.grad.numpy().copy()

    plain, g_plain = run(False)
    comp, g_comp = run(True)
    for a, b in zip(plain, comp):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(g_plain, g_comp)


def test_inputs_returned_and_closures_without_arguments(fused):
    device = fused
    w = lazyt.arange(4, device=device).float()
    ident = lazyt.compile(lambda x, y: (x, y * 2, 7))
    no_args = lazyt.compile(lambda: w.exp().sum())
    x = lazyt.ones(4, device=device)
    for _ in range(4):
        a, b, k = ident(x, w)
        assert k == 7 and a is not x
        np.testing.assert_array_equal(a.numpy(), x.numpy())
        np.testing.assert_array_equal(b.numpy(), w.numpy() * 2)
        np.testing.assert_allclose(no_args().numpy(), np.exp(np.arange(4.0)).sum(), rtol=1e-6)


@pytest.mark.parametrize("checkpointing", ["balanced", "none"])
def test_training_under_each_checkpointing_strategy(checkpointing):
    device = lazyt.device("cpu", checkpointing=checkpointing)
    plain, p_plain, _, _ = _train(device, "sgd", False, steps=6)
    comp, p_comp, _, f = _train(device, "sgd", True, steps=6)
    assert plain == comp and f.cache_info().hits >= 3
    for a, b in zip(p_plain, p_comp):
        np.testing.assert_array_equal(a, b)


def test_aliased_arguments_and_in_place_updates_of_arguments(fused):
    device = fused
    c = lazyt.compile(lambda a, b: a * 2 + b)
    x, y = _data(device, 2)
    for _ in range(3):
        np.testing.assert_array_equal(c(x, x).numpy(), x.numpy() * 3)
    np.testing.assert_array_equal(c(x, y).numpy(), (x * 2 + y).numpy())   # not the x, x recording
    bump = lazyt.compile(lambda t: t.add_(1.0))
    ts = [lazyt.zeros(3, device=device) for _ in range(4)]
    for t in ts:
        bump(t)
        bump(t)
    for t in ts:                                   # each call updates the tensor passed to it
        np.testing.assert_array_equal(t.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.filterwarnings("ignore:kernelize")   # (no wgpu kernel in that repo: falls back)
def test_a_bert_forward_and_its_kernelized_form_replay_bit_for_bit(fused):
    """A small random BERT (attention, layer norm, gelu, embedding gathers) and the same model
    with the kernel hub's layer norm swapped in: replays (device graphs where the device has
    them) equal plain calls."""
    from pathlib import Path

    from lazyt.kernels import KernelConfig
    from lazyt.models import random_bert
    from lazyt.models.bert import l2_normalize, mean_pooling
    device = fused
    config = {"model_type": "bert", "vocab_size": 50, "hidden_size": 16,
              "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,
              "max_position_embeddings": 16, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
              "hidden_act": "gelu", "pad_token_id": 0}
    kernels = Path(__file__).resolve().parents[1] / "examples" / "kernels"
    rng = np.random.default_rng(0)
    for hub in (False, True):
        model = random_bert(config, device=device)
        if hub:
            KernelConfig({"LayerNorm": "lazyt/minilm-kernels:FusedLayerNorm"}).apply(
                model, kernel_paths=[kernels])

        def embed(ids, mask):
            return l2_normalize(mean_pooling(model(ids, mask), mask))

        c = lazyt.compile(embed)
        with lazyt.no_grad():
            for _ in range(5):
                ids = lazyt.tensor(rng.integers(1, 50, (2, 6)), device=device)
                mask = lazyt.tensor((rng.random((2, 6)) > 0.2).astype(np.int64), device=device)
                np.testing.assert_array_equal(c(ids, mask).numpy(), embed(ids, mask).numpy())
        assert c.cache_info().hits == 3


def test_torch_compile_keywords_are_accepted():
    x = lazyt.ones(3)
    for kw in ({"mode": "reduce-overhead"}, {"mode": "max-autotune", "fullgraph": True},
               {"dynamic": False, "backend": "inductor"}, {"fullgraph": False}):
        c = lazyt.compile(lambda t: t * 2, **kw)
        for _ in range(3):
            np.testing.assert_array_equal(c(x).numpy(), [2.0, 2.0, 2.0])
    plain = lambda t: t + 1   # noqa: E731
    assert lazyt.compile(plain, disable=True) is plain
    with pytest.raises(lazyt.CaptureError, match="mode"):
        lazyt.compile(plain, mode="fast")
    with pytest.raises(lazyt.CaptureError, match="dynamic"):
        lazyt.compile(plain, dynamic=True)
    with pytest.raises(lazyt.CaptureError, match="unexpected"):
        lazyt.compile(plain, nonsense=1)
    deco = lazyt.compile(mode="reduce-overhead")(plain)
    for _ in range(3):
        np.testing.assert_array_equal(deco(x).numpy(), [2.0, 2.0, 2.0])


def test_a_compiled_module_keeps_its_attributes():
    lin = nn.Linear(3, 2)
    c = lazyt.compile(lin)
    assert list(c.parameters()) == list(lin.parameters()) and c.out_features == 2
    c.eval()
    assert not lin.training
    with pytest.raises(AttributeError):
        c.no_such_attribute

