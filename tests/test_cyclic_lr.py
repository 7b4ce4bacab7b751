"""CyclicLR against torch's, step for step: rates and momenta (SGD momentum, Adam's beta1),
every mode, a custom scale function, uneven up and down phases, and a restored state."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt

torch = pytest.importorskip("torch")


def _pair(opt_name, **opt_kw):
    tp = torch.nn.Parameter(torch.zeros(2))
    lp = lazyt.nn.Parameter(lazyt.zeros(2))
    return (getattr(torch.optim, opt_name)([tp], lr=0.1, **opt_kw),
            getattr(lazyt.optim, opt_name)([lp], lr=0.1, **opt_kw))


@pytest.mark.parametrize("kw", [
    dict(mode="triangular"),
    dict(mode="triangular2", step_size_down=3),
    dict(mode="exp_range", gamma=0.9),
    dict(scale_fn=lambda x: 0.5 ** x, scale_mode="iterations"),
    dict(mode="triangular", cycle_momentum=False),
])
@pytest.mark.parametrize("opt", [("SGD", {"momentum": 0.9}), ("Adam", {})])
def test_rates_and_momenta_match_torch(kw, opt):
    to, lo = _pair(opt[0], **opt[1])
    args = dict(base_lr=0.01, max_lr=0.1, step_size_up=4, **kw)
    if opt[0] == "Adam" and kw.get("cycle_momentum", True):
        args.update(base_momentum=0.85, max_momentum=0.95)
    ts = torch.optim.lr_scheduler.CyclicLR(to, **args)
    ls = lazyt.optim.lr_scheduler.CyclicLR(lo, **args)
    key = "betas" if opt[0] == "Adam" else "momentum"
    for _ in range(20):
        np.testing.assert_allclose(ls.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        tm, lm = to.param_groups[0][key], lo.param_groups[0][key]
        np.testing.assert_allclose(np.ravel(lm), np.ravel(tm), rtol=1e-12)
        to.step()
        lo.step()
        ts.step()
        ls.step()


def test_state_round_trip_and_errors():
    _, lo = _pair("SGD", momentum=0.9)
    s = lazyt.optim.lr_scheduler.CyclicLR(lo, 0.01, 0.1, step_size_up=2)
    for _ in range(3):
        s.step()
    state = s.state_dict()
    _, lo2 = _pair("SGD", momentum=0.9)
    s2 = lazyt.optim.lr_scheduler.CyclicLR(lo2, 0.01, 0.1, step_size_up=2)
    s2.load_state_dict(state)
    s.step()
    s2.step()
    assert s.get_last_lr() == s2.get_last_lr()
    _, adamw_free = _pair("Adagrad")
    with pytest.raises(lazyt.optim.OptimizerError, match="cycle_momentum"):
        lazyt.optim.lr_scheduler.CyclicLR(adamw_free, 0.01, 0.1)
    with pytest.raises(lazyt.optim.OptimizerError, match="mode"):
        lazyt.optim.lr_scheduler.CyclicLR(lo, 0.01, 0.1, mode="square", cycle_momentum=False)
