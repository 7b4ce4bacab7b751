"""Rprop, ASGD, Adafactor and LBFGS: the same parameters as torch.optim after several steps
from the same start (every option), the same state names and shapes, state dict round trips,
a compiled step, and the errors for bad arguments."""
import math

import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.optim import OptimizerError
from lazyt.optim import more
from lazyt.optim import LBFGS

try:
    import torch
except ImportError:  # the torch comparisons skip; the rest still runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((8, 5))
K = RNG.standard_normal((2, 3, 4))
#: A matrix, a vector, a 3-D tensor and a scalar: Adafactor factors the first and third.
INIT = {"w": RNG.standard_normal((5, 3)), "b": RNG.standard_normal(3),
        "c": RNG.standard_normal((2, 3, 4)), "s": np.array(0.3)}
STEPS = 15


def loss_of(ps: dict, x, k):
    """sum(tanh(x w + b)^2) + 0.1 |w|^2 + sum(sin(c) k) + 3 (s - 0.5)^2 + s^4, for either
    library's tensors."""
    w, b, c, s = ps["w"], ps["b"], ps["c"], ps["s"]
    return (((x @ w + b).tanh() ** 2).sum() + (w * w).sum() * 0.1 + (c.sin() * k).sum()
            + (s - 0.5) ** 2 * 3 + s ** 4)


def torch_run(cls: str, kw: dict, steps: int = STEPS, dtype=None):
    dtype = dtype or torch.float64
    ps = {n: torch.tensor(v, dtype=dtype, requires_grad=True) for n, v in INIT.items()}
    opt = getattr(torch.optim, cls)(list(ps.values()), **kw)
    x, k = torch.tensor(X, dtype=dtype), torch.tensor(K, dtype=dtype)
    for _ in range(steps):
        opt.zero_grad()
        loss_of(ps, x, k).backward()
        opt.step()
    return {n: p.detach().numpy() for n, p in ps.items()}, opt


def lazyt_run(cls: str, kw: dict, steps: int = STEPS, dtype=lazyt.float64, compiled=False,
              opt=None, ps=None):
    ps = ps or {n: nn.Parameter(lazyt.tensor(v, dtype=dtype)) for n, v in INIT.items()}
    opt = opt or getattr(more, cls)(list(ps.values()), **kw)
    x, k = lazyt.tensor(X, dtype=dtype), lazyt.tensor(K, dtype=dtype)

    def step():
        opt.zero_grad()
        loss = loss_of(ps, x, k)
        loss.backward()
        opt.step()
        return loss
    fn = lazyt.compile(step) if compiled else step
    for _ in range(steps):
        fn()
    return {n: p.numpy() for n, p in ps.items()}, opt


def assert_same(got: dict, want: dict, rtol: float, atol: float) -> None:
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=rtol, atol=atol, err_msg=n)


CASES = [
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.02, maximize=True, foreach=False)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=5, weight_decay=0.1)),   # averaging
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-4, 1e-2), d=1.5,
                       weight_decay=0.1)),
    ("Adafactor", dict(lr=0.5, d=1.0, maximize=True)),   # the update's RMS clipped
]
IDS = [f"{c}-{i % 3}" for i, (c, _) in enumerate(CASES)]


@needs_torch
@pytest.mark.parametrize("cls,kw", CASES, ids=IDS)
def test_same_parameters_as_torch_float64(cls, kw):
    want, topt = torch_run(cls, kw)
    got, opt = lazyt_run(cls, kw)
    assert_same(got, want, rtol=1e-9, atol=1e-12)
    assert all(v.any() for v in got.values())
    # the state too: names, shapes and values
    tsd, sd = topt.state_dict(), opt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    for i, tstate in tsd["state"].items():
        assert set(sd["state"][i]) == set(tstate)
        for key, tv in tstate.items():
            v = sd["state"][i][key]
            assert tuple(v.shape) == tuple(tv.shape), key
            np.testing.assert_allclose(v.numpy(), tv.numpy(), rtol=1e-7, atol=1e-12,
                                       err_msg=key)


@needs_torch
@pytest.mark.parametrize("cls,kw", [CASES[1], CASES[4], CASES[7], ("Adafactor", dict())],
                         ids=["Rprop", "ASGD", "Adafactor", "Adafactor-eps1-float32"])
def test_same_parameters_as_torch_float32(cls, kw):
    want, _ = torch_run(cls, kw, dtype=torch.float32)
    got, _ = lazyt_run(cls, kw, dtype=lazyt.float32)
    assert_same(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls,kw", CASES, ids=IDS)
def test_a_compiled_step_gives_the_same_parameters(cls, kw):
    plain, _ = lazyt_run(cls, kw, steps=8, dtype=lazyt.float32)
    compiled, _ = lazyt_run(cls, kw, steps=8, dtype=lazyt.float32, compiled=True)
    assert_same(compiled, plain, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,kw", [CASES[1], CASES[4], CASES[7]],
                         ids=["Rprop", "ASGD", "Adafactor"])
def test_state_dict_round_trip_continues_the_run(cls, kw):
    """Five steps, saved, loaded into a fresh optimizer over copies, five more steps: the same
    as ten uninterrupted steps."""
    want, _ = lazyt_run(cls, kw, steps=10)
    half, opt = lazyt_run(cls, kw, steps=5)
    sd = opt.state_dict()
    ps = {n: nn.Parameter(lazyt.tensor(v)) for n, v in half.items()}
    again = getattr(more, cls)(list(ps.values()), lr=123.0)
    again.load_state_dict(sd)
    assert again.param_groups[0]["lr"] == kw["lr"]
    got, _ = lazyt_run(cls, kw, steps=5, opt=again, ps=ps)
    assert_same(got, want, rtol=1e-12, atol=1e-14)


def test_adafactor_state_has_factored_shapes_and_load_checks_them():
    _, opt = lazyt_run("Adafactor", {}, steps=2)
    sd = opt.state_dict()
    shapes = {k: tuple(v.shape) for k, v in sd["state"][2].items()}    # c: (2, 3, 4)
    assert shapes == {"step": (), "row_var": (2, 3, 1), "col_var": (2, 1, 4)}
    assert set(sd["state"][3]) == {"step", "variance"}                   # the scalar
    assert float(sd["state"][0]["step"].item()) == 2.0
    sd["state"][2]["row_var"] = lazyt.zeros((2, 1, 4), dtype=lazyt.float64)
    fresh = more.Adafactor([nn.Parameter(lazyt.tensor(v)) for v in INIT.values()])
    with pytest.raises(OptimizerError, match="row_var.*expected \\(2, 3, 1\\)"):
        fresh.load_state_dict(sd)


def test_asgd_keeps_eta_and_mu_as_torch_does():
    _, opt = lazyt_run("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=5), steps=8)
    st = opt.state[next(iter(opt.state))]
    t = 8
    assert st["step"] == t
    assert st["eta"] == float(np.float32(0.05 / (1 + 1e-2 * 0.05 * t) ** 0.5))
    assert st["mu"] == float(np.float32(1 / max(1, t - 5)))


def test_rprop_burn_flow_and_closure():
    """`opt.step(loss.backward())` and `opt.step(closure)` as for the other optimizers."""
    w = nn.Parameter(lazyt.tensor([1.0, -2.0, 3.0]))
    opt = more.Rprop([w], lr=0.1)
    opt.step(((w - 1) ** 2).sum().backward())
    np.testing.assert_allclose(w.numpy(), [1.0, -1.9, 2.9], rtol=1e-6)

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() > 0
    np.testing.assert_allclose(w.numpy(), [1.0, -1.78, 2.78], rtol=1e-6)   # steps grew by 1.2


ERRORS = [
    (lambda p: more.Rprop([p], lr=-0.1), "Rprop: learning rate.*-0.1"),
    (lambda p: more.Rprop([p], etas=(1.2, 0.5)), r"Rprop: etas.*\(1.2, 0.5\)"),
    (lambda p: more.Rprop([p], etas=(0.0, 1.2)), r"Rprop: etas.*\(0.0, 1.2\)"),
    (lambda p: more.Rprop([p], step_sizes=(1.0, 0.1)), r"Rprop: step_sizes.*\(1.0, 0.1\)"),
    (lambda p: more.ASGD([p], lr=-1), "ASGD: learning rate.*-1"),
    (lambda p: more.ASGD([p], weight_decay=-0.5), "ASGD: weight_decay.*-0.5"),
    (lambda p: more.Adafactor([p], lr=-1e-3), "Adafactor: learning rate.*-0.001"),
    (lambda p: more.Adafactor([p], beta2_decay=0.5), "Adafactor: beta2_decay.*0.5"),
    (lambda p: more.Adafactor([p], eps=(-1.0, 1e-3)), r"Adafactor: eps\[0\].*-1.0"),
    (lambda p: more.Adafactor([p], eps=(None, -1.0)), r"Adafactor: eps\[1\].*-1.0"),
    (lambda p: more.Adafactor([p], d=0.5), "Adafactor: the clipping threshold d.*0.5"),
    (lambda p: more.Adafactor([p], weight_decay=-1), "Adafactor: weight_decay.*-1"),
    (lambda p: more.Rprop([{"params": [p], "etas": (0.5, 0.9)}]), "Rprop: etas"),
    (lambda p: more.Rprop([p], differentiable=True), "Rprop: differentiable"),
    (lambda p: more.ASGD([p], differentiable=True), "ASGD: differentiable"),
    (lambda p: LBFGS([p], lr=-1), "LBFGS: learning rate.*-1"),
    (lambda p: LBFGS([p], line_search_fn="armijo"), "LBFGS: line_search_fn.*'armijo'"),
    (lambda p: LBFGS([p], history_size=0), "LBFGS: history_size.*0"),
    (lambda p: LBFGS([{"params": [p]}, {"params": [nn.Parameter(lazyt.ones(1))]}]),
     r"LBFGS doesn't support per-parameter options \(parameter groups\)"),
]


@pytest.mark.parametrize("make,match", ERRORS, ids=[m.split(".*")[0] for _, m in ERRORS])
def test_bad_arguments_raise_optimizer_error(make, match):
    p = nn.Parameter(lazyt.ones(2))
    with pytest.raises(OptimizerError, match=match):
        make(p)


def test_bad_group_added_later_and_unknown_flags():
    p, q = nn.Parameter(lazyt.ones(2)), nn.Parameter(lazyt.ones(2))
    opt = more.Rprop([p])
    with pytest.raises(OptimizerError, match="Rprop: etas"):
        opt.add_param_group({"params": [q], "etas": (2.0, 3.0)})
    with pytest.raises(OptimizerError, match="Adafactor: beta2_decay"):
        more.Adafactor([p]).add_param_group({"params": [q], "beta2_decay": 1.0})
    with pytest.raises(TypeError, match="capturable"):
        more.Adafactor([p], capturable=True)     # torch's Adafactor has no such switch
    with pytest.raises(OptimizerError, match="LBFGS doesn't support"):
        LBFGS([p]).add_param_group({"params": [q]})
    assert more.ASGD([p], 0.1, 1e-4, 0.75, 1e6, 0, None, True).defaults["maximize"] is True


# ---------------------------------------------------------------------- LBFGS
XR = RNG.standard_normal((20, 4))
YR = RNG.standard_normal((20, 2))
WR, BR = RNG.standard_normal((4, 2)), RNG.standard_normal(2)


def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def regression(w, b, x, y):
    """Least squares with a quartic penalty: not quadratic, so the line search has work."""
    return (((x @ w + b) - y) ** 2).mean() + (w ** 4).sum() * 0.05


def lbfgs_torch(problem: str, kw: dict, steps: int):
    if problem == "rosenbrock":
        ps = [torch.tensor([-1.5, 2.0], dtype=torch.float64, requires_grad=True)]
        f = (lambda: rosenbrock(ps[0]))
    else:
        ps = [torch.tensor(WR, requires_grad=True), torch.tensor(BR, requires_grad=True)]
        x, y = torch.tensor(XR), torch.tensor(YR)
        f = (lambda: regression(ps[0], ps[1], x, y))
    sign = -1 if kw.get("maximize") else 1
    opt = torch.optim.LBFGS(ps, **kw)

    def closure():
        opt.zero_grad()
        loss = sign * f()
        loss.backward()
        return loss
    losses = [opt.step(closure).item() for _ in range(steps)]
    return [p.detach().numpy() for p in ps], losses, opt


def lbfgs_lazyt(problem: str, kw: dict, steps: int, opt=None, ps=None):
    if problem == "rosenbrock":
        ps = ps or [nn.Parameter(lazyt.tensor([-1.5, 2.0], dtype=lazyt.float64))]
        f = (lambda: rosenbrock(ps[0]))
    else:
        ps = ps or [nn.Parameter(lazyt.tensor(WR)), nn.Parameter(lazyt.tensor(BR))]
        x, y = lazyt.tensor(XR), lazyt.tensor(YR)
        f = (lambda: regression(ps[0], ps[1], x, y))
    sign = -1 if kw.get("maximize") else 1
    opt = opt or LBFGS(ps, **kw)

    def closure():
        opt.zero_grad()
        loss = sign * f()
        loss.backward()
        return loss
    losses = [opt.step(closure).item() for _ in range(steps)]
    return [p.numpy() for p in ps], losses, opt


LBFGS_CASES = [
    ("rosenbrock", dict(lr=1e-3), 4),                        # fixed steps, 20 iterations each
    ("rosenbrock", dict(lr=1e-3, history_size=2, max_iter=7), 5),
    ("rosenbrock", dict(line_search_fn="strong_wolfe"), 3),  # converges within 3 steps
    ("rosenbrock", dict(line_search_fn="strong_wolfe", history_size=2, max_iter=5), 4),
    ("rosenbrock", dict(line_search_fn="strong_wolfe", max_iter=8, max_eval=9), 3),
    ("rosenbrock", dict(lr=0.5, line_search_fn="strong_wolfe", maximize=True, max_iter=6), 3),
    ("regression", dict(lr=0.2, max_iter=5), 4),
    ("regression", dict(line_search_fn="strong_wolfe", history_size=3, max_iter=4), 3),
    ("regression", dict(lr=0.1, maximize=True, tolerance_change=1e-5, max_iter=6), 3),
]
LBFGS_IDS = [f"{p}-{i}" for i, (p, _, _) in enumerate(LBFGS_CASES)]


@needs_torch
@pytest.mark.parametrize("problem,kw,steps", LBFGS_CASES, ids=LBFGS_IDS)
def test_lbfgs_same_parameters_as_torch(problem, kw, steps):
    want, want_losses, topt = lbfgs_torch(problem, kw, steps)
    got, losses, opt = lbfgs_lazyt(problem, kw, steps)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-7, atol=1e-12)
    tstate = topt.state[topt.param_groups[0]["params"][0]]
    state = opt.state[opt.param_groups[0]["params"][0]]
    assert set(state) == set(tstate)
    assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert len(state["old_dirs"]) == len(tstate["old_dirs"]) <= kw.get("history_size", 100)
    assert float(state["t"]) == pytest.approx(float(tstate["t"]), rel=1e-7)
    np.testing.assert_allclose(state["d"].numpy(), tstate["d"].numpy(), rtol=1e-6,
                               atol=1e-9)


def test_lbfgs_strong_wolfe_minimizes_rosenbrock():
    (x,), losses, opt = lbfgs_lazyt("rosenbrock", dict(line_search_fn="strong_wolfe"), 3)
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-5)
    assert losses[0] == pytest.approx(rosenbrock(np.array([-1.5, 2.0])))
    assert losses[0] > losses[1] > losses[2] and rosenbrock(x) < 1e-9   # a step's loss: its start
    (y,), _, _ = lbfgs_lazyt("rosenbrock", dict(lr=1e-3), 3)
    assert rosenbrock(y) > 1.0   # fixed small steps get nowhere near it


@needs_torch
def test_lbfgs_float32_close_to_torch():
    ps_t = [torch.tensor(WR, dtype=torch.float32, requires_grad=True),
            torch.tensor(BR, dtype=torch.float32, requires_grad=True)]
    ps_l = [nn.Parameter(lazyt.tensor(WR, dtype=lazyt.float32)),
            nn.Parameter(lazyt.tensor(BR, dtype=lazyt.float32))]
    for lib, ps in ((torch, ps_t), (lazyt, ps_l)):
        opt = (torch.optim.LBFGS if lib is torch else LBFGS)(
            ps, line_search_fn="strong_wolfe", max_iter=3)
        x = lib.tensor(XR.astype(np.float32))
        y = lib.tensor(YR.astype(np.float32))

        def closure(opt=opt, ps=ps, x=x, y=y):
            opt.zero_grad()
            loss = regression(ps[0], ps[1], x, y)
            loss.backward()
            return loss
        for _ in range(2):
            opt.step(closure)
    for a, b in zip(ps_l, ps_t):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_lbfgs_stops_at_once_when_the_gradient_is_tiny():
    p = nn.Parameter(lazyt.tensor([1.0, 1.0], dtype=lazyt.float64))
    opt = LBFGS([p], line_search_fn="strong_wolfe")
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        return loss
    assert opt.step(closure).item() == 0.0
    assert len(calls) == 1 and opt.state[p] == {"func_evals": 1, "n_iter": 0}
    np.testing.assert_array_equal(p.numpy(), [1.0, 1.0])


def test_lbfgs_state_dict_round_trip_continues_the_run():
    kw = dict(line_search_fn="strong_wolfe", history_size=2, max_iter=4)
    want, want_losses, full = lbfgs_lazyt("regression", kw, 3)
    half, losses, opt = lbfgs_lazyt("regression", kw, 1)
    sd = opt.state_dict()
    assert set(sd["state"]) == {0} and sd["param_groups"][0]["params"] == [0, 1]
    assert (sd["state"][0]["n_iter"], sd["state"][0]["func_evals"]) == (4, 5)   # as torch
    assert len(sd["state"][0]["old_dirs"]) == 2
    ps = [nn.Parameter(lazyt.tensor(v)) for v in half]
    again = LBFGS(ps)
    again.load_state_dict(sd)
    assert again.param_groups[0]["history_size"] == 2
    got, more_losses, _ = lbfgs_lazyt("regression", kw, 2, opt=again, ps=ps)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(losses + more_losses, want_losses, rtol=1e-12)
    assert again.state[ps[0]]["func_evals"] == full.state[full._params[0]]["func_evals"]
    sd["state"][0]["d"] = lazyt.zeros(3, dtype=lazyt.float64)
    with pytest.raises(OptimizerError, match="'d' has shape \\(3,\\), expected \\(10,\\)"):
        LBFGS([nn.Parameter(lazyt.tensor(v)) for v in half]).load_state_dict(sd)


def test_lbfgs_step_needs_a_closure():
    p = nn.Parameter(lazyt.ones(2))
    opt = LBFGS([p])
    (p * p).sum().backward()
    with pytest.raises(OptimizerError, match="LBFGS.step: needs a closure"):
        opt.step()
    with pytest.raises(OptimizerError, match="LBFGS.step: needs a closure"):
        opt.step({p: p.grad})


def test_lbfgs_parameter_without_gradient_stays():
    a = nn.Parameter(lazyt.tensor([3.0, -1.0], dtype=lazyt.float64))
    frozen = nn.Parameter(lazyt.tensor([5.0], dtype=lazyt.float64))
    opt = LBFGS([a, frozen], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((a - 2) ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    np.testing.assert_allclose(a.numpy(), [2.0, 2.0], atol=1e-6)
    assert frozen.numpy().tolist() == [5.0]
    assert math.isfinite(opt.state[a]["prev_loss"])


def test_lbfgs_refuses_a_compiled_step():
    p = nn.Parameter(lazyt.ones(2))
    opt = LBFGS([p])

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    with pytest.raises(lazyt.CaptureError, match="LBFGS.step"):
        lazyt.compile(lambda: opt.step(closure))()
