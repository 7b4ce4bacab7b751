"""Optimizers against numpy transcriptions of torch's update rules, and a training run."""
import numpy as np
import pytest

import lazyt
from lazyt import nn, optim


def _numpy_sgd(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    buf = None
    for g in grads:
        g = g + weight_decay * p
        if momentum:
            buf = g if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def _numpy_adam(p, grads, lr, b1, b2, eps, weight_decay=0.0, decoupled=False, amsgrad=False):
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    vmax = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vh = (vmax if amsgrad else v) / (1 - b2 ** t)
        p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(vh) + eps)
    return p


CASES = [
    ("sgd", dict(lr=0.1), lambda p, gs: _numpy_sgd(p, gs, 0.1)),
    ("sgd_momentum_wd", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
     lambda p, gs: _numpy_sgd(p, gs, 0.05, 0.9, 0.1, 0.01)),
    ("sgd_nesterov", dict(lr=0.05, momentum=0.8, nesterov=True),
     lambda p, gs: _numpy_sgd(p, gs, 0.05, 0.8, nesterov=True)),
    ("adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6),
     lambda p, gs: _numpy_adam(p, gs, 0.01, 0.8, 0.9, 1e-6)),
    ("adam_l2_amsgrad", dict(lr=0.01, weight_decay=0.1, amsgrad=True),
     lambda p, gs: _numpy_adam(p, gs, 0.01, 0.9, 0.999, 1e-8, 0.1, amsgrad=True)),
    ("adamw", dict(lr=0.01, weight_decay=0.1),
     lambda p, gs: _numpy_adam(p, gs, 0.01, 0.9, 0.999, 1e-8, 0.1, decoupled=True)),
]


@pytest.mark.parametrize("name,kwargs,reference", CASES, ids=[c[0] for c in CASES])
def test_update_rules(name, kwargs, reference, device):
    cls = {"sgd": optim.SGD, "adam": optim.Adam, "adamw": optim.AdamW}[name.split("_")[0]]
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((3, 2)).astype(np.float64)
    grads = [rng.standard_normal((3, 2)) for _ in range(4)]
    f64 = device.type == "cpu"  # float32 where the backend has no float64
    dtype = lazyt.float64 if f64 else lazyt.float32
    param = nn.Parameter(lazyt.tensor(p0, dtype=dtype, device=device))
    opt = cls([param], **kwargs)
    for g in grads:
        opt.step({param: lazyt.tensor(g, dtype=dtype, device=device)})
    assert isinstance(param, nn.Parameter) and param.is_tracked and param.dtype == dtype
    tol = dict(rtol=1e-10, atol=1e-12) if f64 else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(param.numpy(), reference(p0, grads), **tol)


def test_step_reads_gradients_from_backward(device):
    rng = np.random.default_rng(0)
    lin = nn.Linear(3, 1, device=device)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    w0, b0 = lin.weight.numpy().copy(), lin.bias.numpy().copy()
    opt = optim.SGD(lin.parameters(), lr=0.1)
    weight = lin.weight
    grads = lin(lazyt.tensor(x, device=device)).sum().backward()
    opt.step(grads)
    assert lin.weight is weight
    np.testing.assert_allclose(lin.weight.numpy(), w0 - 0.1 * x.sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(lin.bias.numpy(), b0 - 0.1 * 8, rtol=1e-5)


def test_param_groups_and_skipped_parameters():
    a = nn.Parameter(lazyt.ones(2))
    b = nn.Parameter(lazyt.ones(2))
    c = nn.Parameter(lazyt.ones(2), requires_grad=False)
    opt = optim.SGD([{"params": [a]}, {"params": [b, c], "lr": 0.5}], lr=0.1)
    g = lazyt.ones(2)
    opt.step({a: g, b: g, c: g})
    np.testing.assert_allclose(a.numpy(), [0.9, 0.9])
    np.testing.assert_allclose(b.numpy(), [0.5, 0.5])
    np.testing.assert_allclose(c.numpy(), [1.0, 1.0])  # not trainable
    opt.step({})  # no gradients: nothing moves
    np.testing.assert_allclose(a.numpy(), [0.9, 0.9])


def test_bad_arguments():
    p = nn.Parameter(lazyt.ones(2))
    with pytest.raises(optim.OptimizerError, match="empty"):
        optim.Adam([])
    with pytest.raises(optim.OptimizerError, match="Parameters"):
        optim.SGD([lazyt.ones(2)])
    with pytest.raises(optim.OptimizerError, match="learning rate"):
        optim.SGD([p], lr=-1)
    with pytest.raises(optim.OptimizerError, match="betas"):
        optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(optim.OptimizerError, match="more than one group"):
        optim.SGD([{"params": [p]}, {"params": [p]}])
    with pytest.raises(optim.OptimizerError, match="shape"):
        optim.SGD([p]).step({p: lazyt.ones(3)})


@pytest.mark.parametrize("make", [lambda ps: optim.AdamW(ps, lr=0.05),
                                  lambda ps: optim.SGD(ps, lr=0.2, momentum=0.9)],
                         ids=["adamw", "sgd"])
def test_training_fits_a_small_regression(make):
    lazyt.manual_seed(0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = np.sin(x @ rng.standard_normal((4, 1))).astype(np.float32)
    model = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 1))
    opt = make(model.parameters())
    xt, yt = lazyt.tensor(x), lazyt.tensor(y)

    def loss():
        return ((model(xt) - yt) ** 2).mean()

    first = loss().item()
    for _ in range(60):
        opt.step(loss().backward())
    assert loss().item() < 0.2 * first
