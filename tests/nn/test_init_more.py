"""torch.nn.init's initializers (`lazyt/nn/init.py`): gains, fans, the bounds and spreads of
the draws on every device, that a Parameter stays a trainable leaf, errors, and torch's
gains and bounds where installed."""
import math

import numpy as np
import pytest

import lazyt
from lazyt.nn import init

try:
    import torch
except ImportError:  # the comparisons with torch skip; the checks of values still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

GAINS = [("linear", None, 1.0), ("conv2d", None, 1.0), ("conv_transpose3d", None, 1.0),
         ("sigmoid", None, 1.0), ("tanh", None, 5 / 3), ("relu", None, math.sqrt(2)),
         ("leaky_relu", None, math.sqrt(2 / (1 + 0.01 ** 2))),
         ("leaky_relu", 0.2, math.sqrt(2 / 1.04)), ("leaky_relu", 0, math.sqrt(2)),
         ("selu", None, 0.75)]


@pytest.mark.parametrize("name, param, want", GAINS)
def test_calculate_gain(name, param, want):
    assert init.calculate_gain(name, param) == pytest.approx(want, rel=1e-12)


def test_fills(device, check):
    w = lazyt.empty(3, 4, device=device)
    assert init.constant_(w, 2.5) is w
    check(w, np.full((3, 4), 2.5, np.float32))
    check(init.zeros_(w), np.zeros((3, 4), np.float32))
    check(init.ones_(w), np.ones((3, 4), np.float32))
    i = lazyt.zeros(2, dtype=lazyt.int64, device=device)
    check(init.constant_(i, 7), np.array([7, 7]))


def _spread(t) -> tuple:
    a = t.numpy().astype(np.float64)
    return np.abs(a).max(), a.std(), a.mean()


@pytest.mark.parametrize("shape", [(200, 100), (64, 16, 3, 3)])
def test_random_initializers(device, shape):
    lazyt.manual_seed(0)
    fan_in = shape[1] * int(np.prod(shape[2:]))
    fan_out = shape[0] * int(np.prod(shape[2:]))
    w = lazyt.zeros(*shape, device=device)
    # uniform: the bound is reached closely, never passed; std is bound / sqrt(3)
    for fn, kw, bound in [
        (init.kaiming_uniform_, {}, math.sqrt(6 / fan_in)),          # a=0: gain sqrt(2)
        (init.kaiming_uniform_, dict(a=math.sqrt(5)), 1 / math.sqrt(fan_in)),
        (init.kaiming_uniform_, dict(mode="fan_out", nonlinearity="relu"),
         math.sqrt(6 / fan_out)),
        (init.xavier_uniform_, {}, math.sqrt(6 / (fan_in + fan_out))),
        (init.xavier_uniform_, dict(gain=2.0), 2 * math.sqrt(6 / (fan_in + fan_out))),
        (init.uniform_, dict(a=-0.3, b=0.3), 0.3),
    ]:
        assert fn(w, **kw) is w
        top, std, mean = _spread(w)
        assert bound * 0.97 < top <= bound, (fn.__name__, kw)
        assert std == pytest.approx(bound / math.sqrt(3), rel=0.05), (fn.__name__, kw)
    for fn, kw, want in [
        (init.kaiming_normal_, {}, math.sqrt(2 / fan_in)),
        (init.kaiming_normal_, dict(mode="fan_out", nonlinearity="tanh"),
         5 / 3 / math.sqrt(fan_out)),
        (init.xavier_normal_, {}, math.sqrt(2 / (fan_in + fan_out))),
        (init.normal_, dict(mean=1.0, std=0.5), 0.5),
    ]:
        fn(w, **kw)
        _, std, mean = _spread(w)
        assert std == pytest.approx(want, rel=0.05), (fn.__name__, kw)
        assert abs(mean - kw.get("mean", 0.0)) < 0.1 * want
    assert w.shape == shape and w.dtype is lazyt.float32 and w.device == device


def test_parameters_stay_trainable_leaves():
    lin = lazyt.nn.Linear(8, 4)
    w = lin.weight
    init.kaiming_uniform_(w, a=math.sqrt(5))
    init.zeros_(lin.bias)
    assert lin.weight is w and w.is_leaf and w.requires_grad
    g = lin(lazyt.ones(2, 8)).sum().backward()
    np.testing.assert_allclose(g.get(lin.bias).numpy(), np.full(4, 2.0))
    assert g.get(w) is not None
    empty = lazyt.zeros(0, 3)
    assert init.kaiming_uniform_(empty) is empty and init.kaiming_normal_(empty) is empty


def test_init_errors():
    with pytest.raises(lazyt.InvalidArgumentError, match="unsupported nonlinearity 'relu7'"):
        init.calculate_gain("relu7")
    with pytest.raises(lazyt.InvalidArgumentError, match="negative_slope True"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(lazyt.ShapeError, match="xavier_uniform_: fan in and fan out"):
        init.xavier_uniform_(lazyt.zeros(5))
    with pytest.raises(lazyt.ShapeError, match="kaiming_normal_: fan in and fan out"):
        init.kaiming_normal_(lazyt.zeros(5))
    with pytest.raises(lazyt.InvalidArgumentError, match="mode must be 'fan_in' or 'fan_out'"):
        init.kaiming_uniform_(lazyt.zeros(2, 3), mode="fan_avg")
    with pytest.raises(lazyt.DTypeError, match="expects a floating-point tensor"):
        init.normal_(lazyt.zeros(2, 3, dtype=lazyt.int64))
    with pytest.raises(lazyt.DTypeError, match="constant_: expected a lazyt.Tensor"):
        init.constant_(np.zeros(3), 1.0)


@needs_torch
def test_against_torch():
    for name, param, _ in GAINS:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param), rel=1e-12)
    shape = (16, 8, 3, 3)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    lazyt.manual_seed(1)
    w = init.xavier_uniform_(lazyt.zeros(*shape))
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / (fan_in + fan_out))
    w = init.kaiming_uniform_(lazyt.zeros(*shape), mode="fan_out")
    assert np.abs(w.numpy()).max() <= math.sqrt(3) * init.calculate_gain("leaky_relu", 0) \
        / math.sqrt(fan_out)
