"""`lazyt.autograd`: torch's functional gradient API (grad, backward with inputs=, the
Jacobian and vector products) on every device, against numpy references and torch."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.errors import GradError, InvalidArgumentError, ShapeError

try:
    import torch
except ImportError:  # the torch comparisons skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")


def T(values, device, grad=False):
    t = lazyt.tensor(np.asarray(values, np.float32), device=device)
    return t.requires_grad_() if grad else t


def test_grad_of_leaves_and_intermediates_leaves_dot_grad_alone(device):
    x = T([0.5, 1.0, 2.0], device, grad=True)
    y = x * 2
    z = y.sin().sum()
    gx, gy = lazyt.autograd.grad(z, [x, y])
    np.testing.assert_allclose(gy.numpy(), np.cos([1.0, 2.0, 4.0]), rtol=1e-5)
    np.testing.assert_allclose(gx.numpy(), 2 * np.cos([1.0, 2.0, 4.0]), rtol=1e-5)
    assert x.grad is None and not gx.requires_grad
    with pytest.raises(GradError):                    # the graph was freed, as torch's
        z.backward()


def test_grad_outputs_and_several_outputs(device):
    x = T([1.0, 2.0, 3.0], device, grad=True)
    a, b = x * 2, x * x
    (g,) = lazyt.autograd.grad([a, b], x, grad_outputs=[T([1, 1, 1], device),
                                                       T([2, 2, 2], device)])
    np.testing.assert_allclose(g.numpy(), 2 + 4 * np.array([1.0, 2.0, 3.0]))
    y = x * 3
    (g,) = lazyt.autograd.grad(y, x, T([1.0, 0.0, -1.0], device))
    np.testing.assert_allclose(g.numpy(), [3.0, 0.0, -3.0])
    y = x * 3
    (g,) = lazyt.autograd.grad(y, y, grad_outputs=T([4, 5, 6], device))   # the seed itself
    np.testing.assert_allclose(g.numpy(), [4.0, 5.0, 6.0])


def test_unused_inputs(device):
    x = T([1.0, 2.0], device, grad=True)
    w = T([5.0], device, grad=True)
    with pytest.raises(GradError, match="input 1 .* was not used.*allow_unused=True"):
        lazyt.autograd.grad((x * 2).sum(), [x, w])
    gx, gw = lazyt.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)
    assert gw is None
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    _, gw = lazyt.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    np.testing.assert_array_equal(gw.numpy(), [0.0])


def test_grad_errors_leave_the_runtime_usable(device):
    x = T([1.0, 2.0], device, grad=True)
    c = T([1.0, 2.0], device)
    with pytest.raises(ShapeError, match="one-element output"):
        lazyt.autograd.grad(x * 2, x)
    with pytest.raises(ShapeError, match=r"gradient for output 0 has shape \(3,\)"):
        lazyt.autograd.grad(x * 2, x, T([1, 1, 1], device))
    with pytest.raises(GradError, match="input 0 .* does not require grad"):
        lazyt.autograd.grad((x * c).sum(), c)
    with pytest.raises(GradError, match="output 0 .* does not require grad"):
        lazyt.autograd.grad((c * 2).sum(), x)
    with pytest.raises(InvalidArgumentError, match="create_graph=True is not supported"):
        lazyt.autograd.grad((x * x).sum(), x, create_graph=True)
    with pytest.raises(InvalidArgumentError, match="outputs must be a tensor"):
        lazyt.autograd.grad("loss", x)
    (g,) = lazyt.autograd.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_backward_inputs_accumulates_only_there(device):
    x = T([1.0, 2.0], device, grad=True)
    w = T([3.0], device, grad=True)
    y = x * w
    y.retain_grad()
    (y * y).sum().backward(inputs=[w])
    assert x.grad is None and y.grad is None
    np.testing.assert_allclose(w.grad.numpy(), [2 * 3 * (1 + 4)])
    h = x * w
    lazyt.autograd.backward([h.sum(), (h * h).sum()], inputs=[x, h])
    np.testing.assert_allclose(x.grad.numpy(), (1 + 2 * np.array([3.0, 6.0])) * 3)
    np.testing.assert_allclose(h.grad.numpy(), 1 + 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(w.grad.numpy(), [30.0])     # unchanged: not an input


def test_autograd_backward_adds_roots(device):
    x = T([1.0, 2.0], device, grad=True)
    lazyt.autograd.backward([x * 2, (x * x).sum()], [T([1.0, 10.0], device), None])
    np.testing.assert_allclose(x.grad.numpy(), [2 + 2, 20 + 4])


def test_grad_runs_tensor_hooks_but_no_post_accumulate_hooks():
    x = T([1.0, 2.0], "cpu", grad=True)
    seen = []
    x.register_hook(lambda g: g * 10)
    x.register_post_accumulate_grad_hook(lambda t: seen.append(1))
    (g,) = lazyt.autograd.grad((x * 3).sum(), x)
    np.testing.assert_allclose(g.numpy(), [30.0, 30.0])
    assert seen == [] and x.grad is None


def test_jacobian_vjp_jvp(device):
    jac = lazyt.autograd.functional.jacobian
    x = T([1.0, 2.0, 3.0], device)
    J = jac(lambda t: t * t + t.sum(), x)
    np.testing.assert_allclose(J.numpy(), np.diag([2.0, 4.0, 6.0]) + 1)
    (Jab, Ja_b), (Jsa, Jsb) = jac(lambda a, b: (a * b, a.sum()),
                                  (T([1, 2], device), T([3, 4], device)))
    np.testing.assert_allclose(Jab.numpy(), np.diag([3.0, 4.0]))
    np.testing.assert_allclose(Ja_b.numpy(), np.diag([1.0, 2.0]))
    np.testing.assert_allclose(Jsa.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(Jsb.numpy(), [0.0, 0.0])       # unused: zeros
    m = T(np.arange(6).reshape(2, 3), device)
    assert jac(lambda t: t.sum(1), m).shape == (2, 2, 3)
    out, v = lazyt.autograd.functional.vjp(lambda t: t * t, x, T([1, 0, 2], device))
    np.testing.assert_allclose(out.numpy(), [1.0, 4.0, 9.0])
    np.testing.assert_allclose(v.numpy(), [2.0, 0.0, 12.0])
    out, u = lazyt.autograd.functional.jvp(lambda t: t * t, x, T([1, 0, 2], device))
    np.testing.assert_allclose(u.numpy(), [2.0, 0.0, 12.0])
    with pytest.raises(InvalidArgumentError, match="hessian: needs gradients of gradients"):
        lazyt.autograd.functional.hessian(lambda t: (t ** 3).sum(), x)


@needs_torch
def test_against_torch():
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))

    def f(lib, x, w):
        h = (x @ w).tanh()
        return h, (h * h).sum() + x.sum()

    tx, tw = torch.tensor(xv, requires_grad=True), torch.tensor(wv, requires_grad=True)
    lx = lazyt.tensor(xv, dtype=lazyt.float64).requires_grad_()
    lw = lazyt.tensor(wv, dtype=lazyt.float64).requires_grad_()
    th, tl = f(torch, tx, tw)
    lh, ll = f(lazyt, lx, lw)
    want = torch.autograd.grad(tl, [tx, tw, th])
    got = lazyt.autograd.grad(ll, [lx, lw, lh])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    tj = torch.autograd.functional.jacobian(lambda x, w: f(torch, x, w)[0],
                                            (torch.tensor(xv), torch.tensor(wv)))
    lj = lazyt.autograd.functional.jacobian(lambda x, w: f(lazyt, x, w)[0],
                                            (lazyt.tensor(xv, dtype=lazyt.float64),
                                             lazyt.tensor(wv, dtype=lazyt.float64)))
    for a, b in zip(lj, tj):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
