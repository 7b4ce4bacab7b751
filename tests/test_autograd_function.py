"""lazyt.autograd.Function (lazyt/autograd_function.py): custom forward/backward pairs, against
the same functions written for torch.autograd.Function."""
import numpy as np
import pytest

import lazyt
from lazyt import GradError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


def _make(base):
    """The same custom functions on top of lazyt's or torch's Function."""
    class Exp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class MulAdd(base):          # torch 2 style: forward without ctx, setup_context
        @staticmethod
        def forward(x, w, k):
            return x * w + k, x - w

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, k = inputs
            ctx.save_for_backward(x, w)
            ctx.k = k

        @staticmethod
        def backward(ctx, g1, g2):
            x, w = ctx.saved_tensors
            return g1 * w + g2, (g1 * x - g2).sum(0), None

    class ClampGrad(base):       # a straight-through estimator
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return g.clamp(-0.5, 0.5)

    class SortedIdx(base):       # a non-differentiable second output
        @staticmethod
        def forward(ctx, x):
            v, i = x.sort(-1)
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            return v, i

        @staticmethod
        def backward(ctx, gv, gi):
            (i,) = ctx.saved_tensors
            return (gv * 0).scatter(-1, i, gv)

    return Exp, MulAdd, ClampGrad, SortedIdx


L, T = _make(lazyt.autograd.Function), _make(torch.autograd.Function)


def _both(shape):
    a = RNG.standard_normal(shape).astype(np.float32)
    return lazyt.tensor(a).require_grad(), torch.from_numpy(a.copy()).requires_grad_()


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_chained_functions_and_torch_2_style():
    (x, tx), (w, tw) = _both((3, 2)), _both((2,))
    outs = []
    for (exp, muladd, _, _), xx, ww in ((L, x, w), (T, tx, tw)):
        a, b = muladd.apply(exp.apply(xx), ww, 3.0)
        loss = a.sum() + (b * b).sum()
        loss.backward()
        outs.append((a, b, loss))
    for got, ref in zip(outs[0], outs[1]):
        _close(got, ref)
    _close(x.grad, tx.grad)
    _close(w.grad, tw.grad)


def test_unused_output_gets_zero_gradient_and_straight_through():
    (x, tx), (w, tw) = _both((4, 2)), _both((2,))
    L[1].apply(x, w, 1.0)[0].sum().backward()
    T[1].apply(tx, tw, 1.0)[0].sum().backward()
    _close(x.grad, tx.grad)
    _close(w.grad, tw.grad)
    (y, ty) = _both((5,))
    (L[2].apply(y * 3) * lazyt.tensor([1.0, 2, 3, 4, 5])).sum().backward()
    (T[2].apply(ty * 3) * torch.tensor([1.0, 2, 3, 4, 5])).sum().backward()
    _close(y.grad, ty.grad)


def test_non_differentiable_outputs():
    (x, tx) = _both((2, 5))
    v, i = L[3].apply(x)
    tv, ti = T[3].apply(tx)
    assert not i.requires_grad and i.dtype is lazyt.int64
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    (v * lazyt.arange(5.0)).sum().backward()
    (tv * torch.arange(5.0)).sum().backward()
    _close(x.grad, tx.grad)


def test_autograd_grad_and_repeated_backward_passes():
    (x, tx) = _both((3,))
    y = L[0].apply(x)
    (g,) = lazyt.autograd.grad(y.sum(), [x])
    _close(g, torch.autograd.grad(T[0].apply(tx).sum(), [tx])[0])
    for _ in range(2):                                   # the function is used afresh each time
        L[0].apply(x).sum().backward()
    _close(x.grad, 2 * tx.exp())


def test_without_grad_the_output_is_plain():
    x = lazyt.ones(2)
    assert not L[0].apply(x).requires_grad
    with lazyt.no_grad():
        assert not L[0].apply(lazyt.ones(2).require_grad()).requires_grad


def test_materialize_grads_off_passes_none():
    seen = []

    class Two(lazyt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2)
            return g1 * 2

    x = lazyt.ones(2).require_grad()
    Two.apply(x)[0].sum().backward()
    assert seen == [None]
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2])


def test_needs_input_grad_and_errors():
    flags = []

    class Bad(lazyt.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            flags.append(ctx.needs_input_grad)
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g                     # one gradient for two inputs

    x = lazyt.ones(2).require_grad()
    out = Bad.apply(x, lazyt.ones(2))
    assert flags == [(True, False)]
    with pytest.raises(GradError, match="expected 2"):
        out.sum().backward()

    class WrongShape(lazyt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    with pytest.raises(GradError, match="shape"):
        WrongShape.apply(lazyt.ones(2).require_grad()).sum().backward()
    with pytest.raises(lazyt.InvalidArgumentError):
        WrongShape()(lazyt.ones(2))
    with pytest.raises(lazyt.MissingImplError):
        lazyt.autograd.Function.apply(lazyt.ones(1))
    assert (lazyt.ones(2) * 2).sum().item() == 4.0       # still usable


def test_broadcastable_gradient_is_summed_and_once_differentiable():
    class Scale(lazyt.autograd.Function):
        @staticmethod
        def forward(ctx, x, s):
            ctx.save_for_backward(x, s)
            return x * s

        @staticmethod
        @lazyt.autograd.once_differentiable
        def backward(ctx, g):
            x, s = ctx.saved_tensors
            return g * s, g * x                 # g * x is (3, 2) for s of shape (2,)

    (x, tx), (s, ts) = _both((3, 2)), _both((2,))
    Scale.apply(x, s).sum().backward()
    (tx * ts).sum().backward()
    _close(x.grad, tx.grad)
    _close(s.grad, ts.grad)


def test_checkpoint_calls_run_the_function_with_its_gradients():
    from lazyt.utils.checkpoint import checkpoint, checkpoint_sequential
    model = lazyt.nn.Sequential(lazyt.nn.Linear(3, 4), lazyt.nn.Tanh(), lazyt.nn.Linear(4, 1))
    x = lazyt.randn(5, 3)
    out = checkpoint(model, x, use_reentrant=False)
    np.testing.assert_array_equal(out.numpy(), model(x).numpy())
    checkpoint_sequential(model, 2, x).sum().backward()
    g = model[0].weight.grad.numpy().copy()
    model.zero_grad()
    model(x).sum().backward()
    np.testing.assert_allclose(g, model[0].weight.grad.numpy(), rtol=1e-6)
    with pytest.raises(lazyt.InvalidArgumentError):
        checkpoint(3, x)
    with pytest.raises(lazyt.InvalidArgumentError):
        checkpoint_sequential(model, 0, x)
