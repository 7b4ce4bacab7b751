"""Learning-rate schedulers against torch's closed forms (hard-coded here), and against torch
itself where it is installed."""
import math
from bisect import bisect_right

import pytest

import lazyt
from lazyt import nn, optim
from lazyt.optim import lr_scheduler

BASE_LRS = (0.1, 0.02)
EPOCHS = 25


def _opt(cls=optim.SGD, **kwargs):
    """An optimizer with two param groups, at the learning rates BASE_LRS."""
    a, b = nn.Parameter(lazyt.ones(2)), nn.Parameter(lazyt.ones(3))
    return cls([{"params": [a], "lr": BASE_LRS[0]}, {"params": [b], "lr": BASE_LRS[1]}],
               **kwargs)


def _one_cycle(e, base, total=20, pct=0.3, div=25.0, final_div=1e4, three_phase=False,
               anneal="cos"):
    """torch's OneCycleLR rate at step e (its docs' phases; `base` is max_lr here)."""
    def f(start, end, x):
        if anneal == "cos":
            return end + (start - end) / 2 * (math.cos(math.pi * x) + 1)
        return start + (end - start) * x
    lo = base / div
    floor = lo / final_div
    up = pct * total - 1
    if three_phase:
        phases = [(up, lo, base), (2 * up, base, lo), (total - 1, lo, floor)]
    else:
        phases = [(up, lo, base), (total - 1, base, floor)]
    start = 0.0
    for i, (end, a, b) in enumerate(phases):
        if e <= end or i == len(phases) - 1:
            return f(a, b, (e - start) / (end - start))
        start = end


# (id, scheduler factory (module, optimizer) -> scheduler, closed form (epoch, base_lr) -> lr,
#  number of epochs); the factory takes the module so the same line builds torch's.
CASES = [
    ("step", lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
     lambda e, b: b * 0.5 ** (e // 3), EPOCHS),
    ("multistep", lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
     lambda e, b: b * 0.3 ** bisect_right([2, 5, 5, 9], e), EPOCHS),
    ("exponential", lambda m, o: m.ExponentialLR(o, gamma=0.9),
     lambda e, b: b * 0.9 ** e, EPOCHS),
    ("cosine", lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
     lambda e, b: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 10)) / 2, EPOCHS),
    ("cosine_eta0", lambda m, o: m.CosineAnnealingLR(o, T_max=4),
     lambda e, b: b * (1 + math.cos(math.pi * e / 4)) / 2, EPOCHS),
    ("linear_warmup", lambda m, o: m.LinearLR(o, start_factor=0.25, total_iters=4),
     lambda e, b: b * (0.25 + 0.75 * min(e, 4) / 4), EPOCHS),
    ("linear_decay", lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.1,
                                             total_iters=5),
     lambda e, b: b * (1.0 - 0.9 * min(e, 5) / 5), EPOCHS),
    ("lambda", lambda m, o: m.LambdaLR(o, lambda e: 1 / (1 + e)),
     lambda e, b: b / (1 + e), EPOCHS),
    ("one_cycle", lambda m, o: m.OneCycleLR(o, max_lr=list(BASE_LRS), total_steps=20,
                                            cycle_momentum=False),
     lambda e, b: _one_cycle(e, b), 21),
    ("one_cycle_epochs_linear",
     lambda m, o: m.OneCycleLR(o, max_lr=list(BASE_LRS), epochs=4, steps_per_epoch=5,
                               anneal_strategy="linear", cycle_momentum=False),
     lambda e, b: _one_cycle(e, b, anneal="linear"), 21),
    ("one_cycle_three_phase",
     lambda m, o: m.OneCycleLR(o, max_lr=list(BASE_LRS), total_steps=20, pct_start=0.25,
                               div_factor=10.0, final_div_factor=100.0, three_phase=True,
                               cycle_momentum=False),
     lambda e, b: _one_cycle(e, b, pct=0.25, div=10.0, final_div=100.0, three_phase=True), 21),
    ("sequential",
     lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=3),
                                     m.ExponentialLR(o, gamma=0.9)], milestones=[3]),
     lambda e, b: b * (0.1 + 0.9 * e / 3) if e < 3 else b * 0.9 ** (e - 3), EPOCHS),
    ("sequential_three",
     lambda m, o: m.SequentialLR(o, [m.ExponentialLR(o, gamma=0.5), m.StepLR(o, 2, 0.1),
                                     m.CosineAnnealingLR(o, T_max=6)], milestones=[2, 7]),
     lambda e, b: (b * 0.5 ** e if e < 2 else b * 0.1 ** ((e - 2) // 2) if e < 7
                   else b * (1 + math.cos(math.pi * (e - 7) / 6)) / 2), EPOCHS),
]
IDS = [c[0] for c in CASES]


def _run(make, module, opt, epochs):
    """The rate of each group at epochs 0..epochs-1: get_last_lr() and group["lr"]."""
    sched = make(module, opt)
    seen = [sched.get_last_lr()]
    for _ in range(epochs - 1):
        opt.step({})  # torch's order: the optimizer steps, then the scheduler
        sched.step()
        seen.append(sched.get_last_lr())
        assert seen[-1] == [g["lr"] for g in opt.param_groups]
    return seen


@pytest.mark.parametrize("name,make,closed_form,epochs", CASES, ids=IDS)
def test_rates_follow_torch_closed_forms(name, make, closed_form, epochs):
    opt = _opt()
    seen = _run(make, lr_scheduler, opt, epochs)
    expected = [[closed_form(e, b) for b in BASE_LRS] for e in range(epochs)]
    for e, (got, want) in enumerate(zip(seen, expected)):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15), f"epoch {e}"
    if not name.startswith("one_cycle"):
        assert [g["initial_lr"] for g in opt.param_groups] == list(BASE_LRS)


@pytest.mark.parametrize("name,make,closed_form,epochs", CASES, ids=IDS)
def test_rates_equal_torch(name, make, closed_form, epochs):
    torch = pytest.importorskip("torch")
    a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3))
    topt = torch.optim.SGD([{"params": [a], "lr": BASE_LRS[0]},
                            {"params": [b], "lr": BASE_LRS[1]}])
    want = []
    tsched = make(torch.optim.lr_scheduler, topt)
    want.append(tsched.get_last_lr())
    for _ in range(epochs - 1):
        topt.step()
        tsched.step()
        want.append(tsched.get_last_lr())
    got = _run(make, lr_scheduler, _opt(), epochs)
    for e, (g, w) in enumerate(zip(got, want)):
        assert g == pytest.approx(w, rel=1e-9, abs=1e-15), f"epoch {e}"


def test_one_cycle_cycles_momentum_and_beta1():
    sgd = _opt(momentum=0.9)
    sched = lr_scheduler.OneCycleLR(sgd, max_lr=1.0, total_steps=10, pct_start=0.5,
                                    base_momentum=0.8, max_momentum=0.9)
    momenta = []
    for _ in range(10):
        momenta.append(sgd.param_groups[0]["momentum"])
        sched.step()
    # against the rate: max_momentum while the rate is lowest, base_momentum at max_lr
    assert momenta[0] == pytest.approx(0.9) and momenta[4] == pytest.approx(0.8)
    assert momenta[9] == pytest.approx(0.9)
    for e, m in enumerate(momenta):
        want = 0.8 + 0.1 * (1 + math.cos(math.pi * e / 4)) / 2 if e <= 4 else \
            0.9 + (0.8 - 0.9) * (1 + math.cos(math.pi * (e - 4) / 5)) / 2
        assert m == pytest.approx(want, rel=1e-12)
    adam = _opt(optim.Adam, betas=(0.5, 0.99))
    lr_scheduler.OneCycleLR(adam, max_lr=1.0, total_steps=10)
    assert adam.param_groups[1]["betas"] == (0.95, 0.99)


def test_scheduler_changes_the_optimizers_step():
    p = nn.Parameter(lazyt.zeros(1))
    opt = optim.SGD([p], lr=1.0)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.step({p: lazyt.ones(1)})
        sched.step()
    assert p.item() == pytest.approx(-(1 + 0.5 + 0.25))


@pytest.mark.parametrize("name,make,closed_form,epochs", CASES, ids=IDS)
def test_state_dict_resumes_the_schedule(name, make, closed_form, epochs):
    opt = _opt()
    sched = make(lr_scheduler, opt)
    for _ in range(7):
        sched.step()
    opt_sd, sched_sd = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in sched_sd and sched_sd["last_epoch"] == 7
    rest = []
    for _ in range(epochs - 8):
        sched.step()
        rest.append(sched.get_last_lr())

    opt2 = _opt()
    sched2 = make(lr_scheduler, opt2)
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sched_sd)
    assert sched2.last_epoch == 7
    resumed = []
    for _ in range(epochs - 8):
        sched2.step()
        resumed.append(sched2.get_last_lr())
    assert resumed == rest


def test_lambda_state_dict_keeps_callable_objects():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = _opt()
    sched = lr_scheduler.LambdaLR(opt, [Decay(0.5), lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}, None]
    other = lr_scheduler.LambdaLR(_opt(), [Decay(0.9), lambda e: 1.0])
    other.load_state_dict(sd)
    other.step()
    assert other.get_last_lr() == pytest.approx([0.05, 0.02])


def test_resuming_with_last_epoch_keeps_the_restored_rates():
    opt = _opt()
    with pytest.raises(optim.OptimizerError, match="initial_lr"):
        lr_scheduler.StepLR(opt, step_size=2, last_epoch=4)
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.9)
    for _ in range(4):
        sched.step()
    restored = _opt()
    restored.load_state_dict(opt.state_dict())  # lr at epoch 4, and initial_lr
    # as torch: the constructor's step keeps the restored rates of a chainable schedule
    resumed = lr_scheduler.ExponentialLR(restored, gamma=0.9, last_epoch=3)
    assert resumed.last_epoch == 4
    assert resumed.get_last_lr() == pytest.approx([b * 0.9 ** 4 for b in BASE_LRS])
    resumed.step()
    assert resumed.get_last_lr() == pytest.approx([b * 0.9 ** 5 for b in BASE_LRS])


def test_bad_arguments():
    opt = _opt()
    err = optim.OptimizerError
    with pytest.raises(err, match="StepLR: expected a lazyt.optim.Optimizer, got list"):
        lr_scheduler.StepLR([], step_size=1)
    with pytest.raises(err, match="StepLR: step_size must be a positive integer"):
        lr_scheduler.StepLR(opt, step_size=0)
    with pytest.raises(err, match="MultiStepLR: milestones must be integers"):
        lr_scheduler.MultiStepLR(opt, milestones=[1.5])
    with pytest.raises(err, match="CosineAnnealingLR: T_max"):
        lr_scheduler.CosineAnnealingLR(opt, T_max=0)
    with pytest.raises(err, match="LinearLR: start_factor"):
        lr_scheduler.LinearLR(opt, start_factor=0.0)
    with pytest.raises(err, match="LinearLR: end_factor"):
        lr_scheduler.LinearLR(opt, end_factor=1.5)
    with pytest.raises(err, match="LambdaLR: expected 2 values of lr_lambda"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(err, match="LambdaLR: lr_lambda must be callable"):
        lr_scheduler.LambdaLR(opt, 0.5)
    with pytest.raises(err, match="OneCycleLR: give total_steps"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, epochs=3)
    with pytest.raises(err, match="OneCycleLR: pct_start"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=1.5)
    with pytest.raises(err, match="OneCycleLR: anneal_strategy"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="exp")
    with pytest.raises(err, match="SequentialLR: expected 1 milestones"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(opt, 1), lr_scheduler.StepLR(opt, 1)],
                                  milestones=[])
    with pytest.raises(err, match="SequentialLR: schedulers\\[0\\] is bound to another"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.StepLR(_opt(), 1)], milestones=[])


def test_one_cycle_refuses_to_step_past_total_steps():
    sched = lr_scheduler.OneCycleLR(_opt(), max_lr=1.0, total_steps=3, cycle_momentum=False)
    for _ in range(3):
        sched.step()
    with pytest.raises(optim.OptimizerError, match="OneCycleLR.step: stepped 4 times, but "
                                                   "total_steps is 3"):
        sched.step()
    assert sched.last_epoch == 3
