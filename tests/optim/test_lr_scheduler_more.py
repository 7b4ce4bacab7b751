"""ConstantLR, PolynomialLR, MultiplicativeLR, CosineAnnealingWarmRestarts, ReduceLROnPlateau
and ChainedScheduler against torch's closed forms and rules (written out here), and against
torch itself where it is installed."""
import math

import pytest

import lazyt
from lazyt import nn, optim
from lazyt.optim import lr_scheduler as S

try:
    import torch
except ImportError:  # the comparisons with torch skip; the closed forms still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

BASE = (0.1, 0.02)


def _opt():
    a, b = nn.Parameter(lazyt.ones(2)), nn.Parameter(lazyt.ones(3))
    return optim.SGD([{"params": [a], "lr": BASE[0]}, {"params": [b], "lr": BASE[1]}])


def _rates(sched, epochs=14):
    out = [sched.get_last_lr()]
    for _ in range(epochs):
        sched.step()
        out.append(sched.get_last_lr())
    return out


def _close(got, want):
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=1e-12, abs=1e-15)


def test_constant_lr():
    for e, lrs in enumerate(_rates(S.ConstantLR(_opt(), factor=0.5, total_iters=4))):
        _close(lrs, [b * (0.5 if e < 4 else 1.0) for b in BASE])


def test_polynomial_lr():
    for e, lrs in enumerate(_rates(S.PolynomialLR(_opt(), total_iters=6, power=2.0))):
        _close(lrs, [b * (1 - min(e, 6) / 6) ** 2 for b in BASE])


def test_multiplicative_lr():
    for e, lrs in enumerate(_rates(S.MultiplicativeLR(_opt(), lambda ep: 0.9))):
        _close(lrs, [b * 0.9 ** e for b in BASE])


@pytest.mark.parametrize("t0,mult", [(4, 1), (3, 2)])
def test_cosine_annealing_warm_restarts(t0, mult):
    lo = 0.001
    t_i, t_cur = t0, 0
    for e, lrs in enumerate(_rates(S.CosineAnnealingWarmRestarts(_opt(), t0, mult, lo), 20)):
        if e:
            t_cur += 1
            if t_cur >= t_i:
                t_cur, t_i = t_cur - t_i, t_i * mult
        _close(lrs, [lo + (b - lo) * (1 + math.cos(math.pi * t_cur / t_i)) / 2 for b in BASE])


def test_cosine_annealing_warm_restarts_jumps_to_an_epoch():
    s = S.CosineAnnealingWarmRestarts(_opt(), 3, 2)
    s.step(5.5)  # past the first cycle (3 epochs): 2.5 into the second (6 epochs)
    _close(s.get_last_lr(), [b * (1 + math.cos(math.pi * 2.5 / 6)) / 2 for b in BASE])
    assert s.last_epoch == 5
    with pytest.raises(optim.OptimizerError, match="epoch"):
        s.step(-1)


def test_reduce_lr_on_plateau():
    opt = _opt()
    s = S.ReduceLROnPlateau(opt, patience=2, cooldown=1, factor=0.5, min_lr=[0.03, 0.0])
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    seen = []
    for m in metrics:
        s.step(lazyt.tensor(m) if m == 0.5 else m)  # a tensor metric is read
        seen.append(s.get_last_lr())
    # bad epochs after 0.9: 0.95, 0.96, 0.97 -> reduce at the third (0.05, 0.01); cooldown
    # 1 epoch (0.98), then 0.5 improves; 0.6, 0.7, 0.8 -> reduce (0.03 floor, 0.005)
    _close(seen[4], [0.05, 0.01])
    _close(seen[5], [0.05, 0.01])
    _close(seen[9], [0.03, 0.005])
    _close(seen[11], [0.03, 0.005])
    assert s.best == 0.5
    mx = S.ReduceLROnPlateau(_opt(), mode="max", patience=0, threshold_mode="abs",
                             threshold=0.1)
    mx.step(1.0)
    mx.step(1.05)  # not better by 0.1 in "abs" mode
    _close(mx.get_last_lr(), [b * 0.1 for b in BASE])


def test_chained_scheduler_composes():
    opt = _opt()
    c = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=3),
                            S.ExponentialLR(opt, gamma=0.9)])
    for e, lrs in enumerate(_rates(c, 8)):
        _close(lrs, [b * 0.9 ** e * (0.5 if e < 3 else 1.0) for b in BASE])


@pytest.mark.parametrize("call", [
    lambda o: S.ConstantLR(o, factor=1.5), lambda o: S.PolynomialLR(o, total_iters=0),
    lambda o: S.CosineAnnealingWarmRestarts(o, 0), lambda o: S.ReduceLROnPlateau(o, factor=1.0),
    lambda o: S.ReduceLROnPlateau(o, mode="up"), lambda o: S.ChainedScheduler([]),
    lambda o: S.MultiplicativeLR(o, 0.9)],
    ids=["factor", "iters", "t0", "plateau-factor", "mode", "empty", "lambda"])
def test_errors(call):
    with pytest.raises(optim.OptimizerError):
        call(_opt())


@needs_torch
@pytest.mark.filterwarnings("ignore:Detected call of")  # torch's: no optimizer.step() here
@pytest.mark.parametrize("name,kw", [
    ("ConstantLR", dict(factor=0.5, total_iters=4)),
    ("PolynomialLR", dict(total_iters=6, power=2.0)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.95)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001))])
def test_same_rates_as_torch(name, kw):
    a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    topt = torch.optim.SGD([{"params": [a], "lr": BASE[0]}, {"params": [b], "lr": BASE[1]}])
    ts = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    ls = getattr(S, name)(_opt(), **kw)
    for _ in range(15):
        _close(ls.get_last_lr(), ts.get_last_lr())
        ts.step()
        ls.step()


@needs_torch
@pytest.mark.filterwarnings("ignore:Detected call of")
def test_sequential_with_the_new_schedules_as_torch():
    a = torch.nn.Parameter(torch.ones(2))
    topt = torch.optim.SGD([a], lr=0.1)
    ts = torch.optim.lr_scheduler.SequentialLR(topt, [
        torch.optim.lr_scheduler.ConstantLR(topt, factor=0.25, total_iters=2),
        torch.optim.lr_scheduler.PolynomialLR(topt, total_iters=5)], milestones=[3])
    opt = optim.SGD([nn.Parameter(lazyt.ones(2))], lr=0.1)
    ls = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.25, total_iters=2),
                              S.PolynomialLR(opt, total_iters=5)], milestones=[3])
    for _ in range(10):
        _close(ls.get_last_lr(), ts.get_last_lr())
        ts.step()
        ls.step()
