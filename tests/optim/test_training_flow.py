"""torch's training flow (`loss.backward(); opt.step(); opt.zero_grad()`, reading each
parameter's accumulated `.grad`) next to Burn's (`opt.step(loss.backward())`)."""
import numpy as np
import pytest

import lazyt
from lazyt import nn, optim


def _model(device):
    lazyt.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 5, device=device), nn.GELU(),
                         nn.Linear(5, 1, device=device))


def _loss(model, device):
    rng = np.random.default_rng(2)
    x = lazyt.tensor(rng.standard_normal((8, 3)).astype(np.float32), device=device)
    return (model(x) ** 2).mean()


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
                                  lambda ps: optim.AdamW(ps, lr=0.05)], ids=["sgd", "adamw"])
def test_torch_flow_equals_burn_flow(make, device):
    torch_style, burn_style = _model(device), _model(device)
    opt_t, opt_b = make(torch_style.parameters()), make(burn_style.parameters())
    for _ in range(3):
        _loss(torch_style, device).backward()
        opt_t.step()
        opt_t.zero_grad()
        opt_b.step(_loss(burn_style, device).backward())
    for a, b in zip(torch_style.parameters(), burn_style.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


def test_step_reads_a_mapping_or_gradients(device):
    p = nn.Parameter(lazyt.tensor([1.0, 2.0], device=device))
    opt = optim.SGD([p], lr=0.5)
    opt.step({p: lazyt.tensor([1.0, 1.0], device=device)})
    np.testing.assert_allclose(p.numpy(), [0.5, 1.5])
    grads = (p * p).sum().backward()  # d/dp = 2p = [1, 3]
    opt.step(grads)
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])


def test_step_uses_the_accumulated_sum():
    p = nn.Parameter(lazyt.tensor([1.0, 2.0]))
    opt = optim.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    (p * p).sum().backward()  # no zero_grad in between: .grad = 3 + 2p
    opt.step()
    np.testing.assert_allclose(p.numpy(), [1.0 - 0.1 * 5, 2.0 - 0.1 * 7], rtol=1e-6)


def test_zero_grad_sets_none(device):
    model = _model(device)
    opt = optim.Adam(model.parameters())
    _loss(model, device).backward()
    assert all(isinstance(p.grad, lazyt.Tensor) for p in model.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    before = [p.numpy().copy() for p in model.parameters()]
    opt.step()  # no gradients: nothing moves, no state is made
    for b, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(p.numpy(), b)
    assert opt.state_dict()["state"] == {}


def test_zero_grad_to_zeros(device):
    a = nn.Parameter(lazyt.ones(2, 3, dtype=lazyt.float32, device=device))
    b = nn.Parameter(lazyt.ones(4, device=device))
    opt = optim.SGD([a, b], lr=0.1)
    (a.sum() * 2).backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad.shape == (2, 3) and a.grad.dtype == lazyt.float32
    assert a.grad.device == a.device
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 3), np.float32))
    assert b.grad is None  # as torch: a parameter without a gradient keeps None
    (a.sum() * 3).backward()  # accumulates onto the zeros
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 3), 3.0, np.float32))


@pytest.mark.parametrize("bad", ["garbage", 3, [1.0], lazyt.ones(2)],
                         ids=["str", "int", "list", "tensor"])
def test_step_rejects_other_arguments(bad):
    p = nn.Parameter(lazyt.ones(2))
    opt = optim.Adam([p])
    with pytest.raises(optim.OptimizerError, match=rf"Adam\.step: expected None .*Gradients.* "
                                                   rf"got {type(bad).__name__}$"):
        opt.step(bad)
    np.testing.assert_array_equal(p.numpy(), [1.0, 1.0])
