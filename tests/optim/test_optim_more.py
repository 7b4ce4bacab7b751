"""RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam: torch's update rules written out in
numpy here (every option), the same parameters under `lazyt.compile`, state dicts, errors,
and torch itself where installed; `nn.utils` clipping and parameter vectors."""
import math

import numpy as np
import pytest

import lazyt
from lazyt import nn, optim

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

RNG = np.random.default_rng(3)
W0 = RNG.standard_normal((5, 3))
X = RNG.standard_normal((8, 5))
STEPS = 12


def grad_of(w):
    """d/dw of sum(tanh(X w)^2) + 0.1 sum(w^2)."""
    z = np.tanh(X @ w)
    return X.T @ (2 * z * (1 - z * z)) + 0.2 * w


def lazyt_run(cls, kw, compiled=False, dtype=lazyt.float64):
    w = nn.Parameter(lazyt.tensor(W0, dtype=dtype))
    opt = getattr(optim, cls)([w], **kw)
    x = lazyt.tensor(X, dtype=dtype)

    def step():
        opt.zero_grad()
        loss = ((x @ w).tanh() ** 2).sum() + (w * w).sum() * 0.1
        loss.backward()
        opt.step()
        return loss
    fn = lazyt.compile(step) if compiled else step
    for _ in range(STEPS):
        fn()
    return w.numpy(), opt


def np_run(cls, kw):
    """torch's documented update rules."""
    w = W0.copy()
    st = {}
    lr = kw.get("lr")
    wd = kw.get("weight_decay", 0.0)
    for t in range(1, STEPS + 1):
        g = grad_of(w)
        if cls in ("NAdam", "RAdam") and kw.get("decoupled_weight_decay"):
            w = w * (1 - lr * wd)
        elif wd:
            g = g + wd * w
        if cls == "RMSprop":
            a, eps, mom = kw.get("alpha", 0.99), 1e-8, kw.get("momentum", 0.0)
            st["v"] = a * st.get("v", 0) + (1 - a) * g * g
            if kw.get("centered"):
                st["m"] = a * st.get("m", 0) + (1 - a) * g
                avg = np.sqrt(st["v"] - st["m"] ** 2) + eps
            else:
                avg = np.sqrt(st["v"]) + eps
            if mom:
                st["b"] = mom * st.get("b", 0) + g / avg
                w = w - lr * st["b"]
            else:
                w = w - lr * g / avg
        elif cls == "Adagrad":
            st["s"] = st.get("s", kw.get("initial_accumulator_value", 0.0)) + g * g
            clr = lr / (1 + (t - 1) * kw.get("lr_decay", 0.0))
            w = w - clr * g / (np.sqrt(st["s"]) + 1e-10)
        elif cls == "Adadelta":
            rho, eps = kw.get("rho", 0.9), 1e-6
            st["v"] = rho * st.get("v", 0) + (1 - rho) * g * g
            d = np.sqrt(st.get("u", 0) + eps) / np.sqrt(st["v"] + eps) * g
            st["u"] = rho * st.get("u", 0) + (1 - rho) * d * d
            w = w - lr * d
        else:
            b1, b2 = 0.9, 0.999
            st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
            if cls == "Adamax":
                st["u"] = np.maximum(b2 * st.get("u", 0), np.abs(g) + 1e-8)
                w = w - lr / (1 - b1 ** t) * st["m"] / st["u"]
                continue
            st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
            if cls == "NAdam":
                mu = b1 * (1 - 0.5 * 0.96 ** (t * 4e-3))
                mu1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * 4e-3))
                st["mp"] = st.get("mp", 1.0) * mu
                den = np.sqrt(st["v"] / (1 - b2 ** t)) + 1e-8
                w = w - lr * (1 - mu) / (1 - st["mp"]) * g / den
                w = w - lr * mu1 / (1 - st["mp"] * mu1) * st["m"] / den
            else:  # RAdam
                mh = st["m"] / (1 - b1 ** t)
                rinf = 2 / (1 - b2) - 1
                rt = rinf - 2 * t * b2 ** t / (1 - b2 ** t)
                if rt > 5:
                    r = math.sqrt((rt - 4) * (rt - 2) * rinf / ((rinf - 4) * (rinf - 2) * rt))
                    w = w - lr * mh * r * math.sqrt(1 - b2 ** t) / (np.sqrt(st["v"]) + 1e-8)
                else:
                    w = w - lr * mh
    return w


CASES = [
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01, alpha=0.9)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.1, weight_decay=0.01)),
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.01)),
    ("Adamax", dict(lr=0.002)),
    ("Adamax", dict(lr=0.002, weight_decay=0.01)),
    ("NAdam", dict(lr=0.002)),
    ("NAdam", dict(lr=0.002, weight_decay=0.01, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.001)),   # 12 steps: the plain and the rectified step both run
    ("RAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)),
]
IDS = [f"{c}-{i % 2}" for i, (c, _) in enumerate(CASES)]


@pytest.mark.parametrize("cls,kw", CASES, ids=IDS)
def test_update_rules_float64(cls, kw):
    got, _ = lazyt_run(cls, kw)
    np.testing.assert_allclose(got, np_run(cls, kw), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls,kw", CASES, ids=IDS)
def test_a_compiled_step_gives_the_same_parameters(cls, kw):
    plain, _ = lazyt_run(cls, kw, dtype=lazyt.float32)
    compiled, _ = lazyt_run(cls, kw, compiled=True, dtype=lazyt.float32)
    np.testing.assert_allclose(compiled, plain, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", ["RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam"])
def test_state_dict_round_trip(cls):
    w, opt = lazyt_run(cls, dict(lr=0.01))
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"} and 0 in sd["state"]
    p = nn.Parameter(lazyt.tensor(w))
    again = getattr(optim, cls)([p], lr=0.01)
    again.load_state_dict(sd)
    for k, v in opt.state_dict()["state"][0].items():
        got = again.state_dict()["state"][0][k]
        np.testing.assert_array_equal(np.asarray(getattr(got, "numpy", lambda: got)()),
                                      np.asarray(getattr(v, "numpy", lambda: v)()))


@pytest.mark.parametrize("call", [
    lambda p: optim.RMSprop([p], lr=-1.0), lambda p: optim.Adagrad([p], lr_decay=-0.1),
    lambda p: optim.Adadelta([p], rho=1.5), lambda p: optim.Adamax([p], betas=(1.0, 0.9)),
    lambda p: optim.NAdam([p], momentum_decay=-1), lambda p: optim.RAdam([p], eps=-1e-8)],
    ids=["rmsprop-lr", "adagrad-decay", "adadelta-rho", "adamax-betas", "nadam-decay",
         "radam-eps"])
def test_bad_hyperparameters_raise(call):
    with pytest.raises(optim.OptimizerError):
        call(nn.Parameter(lazyt.ones(2)))


@needs_torch
@pytest.mark.parametrize("cls,kw", CASES, ids=IDS)
def test_same_parameters_as_torch(cls, kw):
    w = torch.tensor(W0, requires_grad=True)
    opt = getattr(torch.optim, cls)([w], **kw)
    x = torch.tensor(X)
    for _ in range(STEPS):
        opt.zero_grad()
        (((x @ w).tanh() ** 2).sum() + (w * w).sum() * 0.1).backward()
        opt.step()
    got, _ = lazyt_run(cls, kw)
    np.testing.assert_allclose(got, w.detach().numpy(), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------- nn.utils
def _grads(shapes=((4, 3), (3,))):
    ps = [nn.Parameter(lazyt.tensor(RNG.standard_normal(s))) for s in shapes]
    sum((p ** 3).sum() for p in ps).backward()
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_clip_grad_norm(norm_type):
    ps = _grads()
    before = [p.grad.numpy().copy() for p in ps]
    flat = np.concatenate([g.reshape(-1) for g in before])
    want = np.abs(flat).max() if norm_type == math.inf else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = nn.utils.clip_grad_norm_(ps, 1.5, norm_type)
    np.testing.assert_allclose(total.item(), want, rtol=1e-12)
    coef = min(1.0, 1.5 / (want + 1e-6))
    for p, g in zip(ps, before):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-12)
    big = nn.utils.clip_grad_norm_(ps, 1e9)  # under the limit: unchanged
    np.testing.assert_allclose(ps[0].grad.numpy(), before[0] * coef, rtol=1e-12)
    assert big.item() > 0


def test_clip_grad_value_and_nonfinite():
    ps = _grads()
    before = [p.grad.numpy().copy() for p in ps]
    nn.utils.clip_grad_value_(ps, 0.5)
    for p, g in zip(ps, before):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.5, 0.5))
    q = nn.Parameter(lazyt.tensor([1.0, 2.0]))
    (q * math.inf).sum().backward()
    with pytest.raises(lazyt.InvalidArgumentError, match="non-finite"):
        nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)
    nn.utils.clip_grad_norm_([q], 1.0)  # clips anyway (NaN, as torch)
    assert nn.utils.clip_grad_norm_([nn.Parameter(lazyt.ones(2))], 1.0).item() == 0.0


def test_clip_grad_norm_inside_a_compiled_step():
    data = RNG.standard_normal((6, 4)).astype(np.float32)

    def run(compiled):
        lazyt.manual_seed(0)
        model = nn.Linear(4, 2)
        opt = optim.SGD(model.parameters(), lr=0.5)
        x = lazyt.tensor(data)

        def step():
            opt.zero_grad()
            loss = (model(x) ** 2).sum() * 10
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            opt.step()
            return loss
        fn = lazyt.compile(step) if compiled else step
        return [fn().item() for _ in range(4)], model.weight.numpy()
    (a, wa), (b, wb) = run(False), run(True)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)


def test_parameter_vectors():
    ps = [nn.Parameter(lazyt.tensor(RNG.standard_normal(s))) for s in ((2, 3), (4,))]
    v = nn.utils.parameters_to_vector(ps)
    np.testing.assert_array_equal(v.numpy(), np.concatenate([p.numpy().reshape(-1)
                                                             for p in ps]))
    nn.utils.vector_to_parameters(v * 2, ps)
    np.testing.assert_array_equal(ps[1].numpy(), v.numpy()[6:] * 2)
    assert ps[0].shape == (2, 3) and ps[0].requires_grad
    with pytest.raises(lazyt.ShapeError, match="vector_to_parameters"):
        nn.utils.vector_to_parameters(v[:5], ps)


def test_clip_grad_norm_of_float16_gradients():
    p = nn.Parameter(lazyt.ones(70000, dtype=lazyt.float16))
    p.sum().backward()
    total = nn.utils.clip_grad_norm_([p], 1.0)
    np.testing.assert_allclose(total.item(), math.sqrt(70000), rtol=1e-3)
    assert np.isfinite(p.grad.numpy()).all() and p.grad.numpy().max() > 0


def test_torch_flags_and_closures():
    w = nn.Parameter(lazyt.tensor(np.ones(3)))
    opt = optim.Adam([w], lr=0.1, fused=True, foreach=False, capturable=False)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() == 3.0
    assert w.numpy().max() < 1.0
    with pytest.raises(optim.OptimizerError, match="differentiable"):
        optim.SGD([w], lr=0.1, differentiable=True)
    with pytest.raises(TypeError, match="bogus"):
        optim.RMSprop([w], bogus=1)
