"""Module conveniences torch users reach for: forward hooks and pre-hooks (with removable
handles), `zero_grad`, `requires_grad_`, `float`/`double`/`half`/`cpu`, `get_parameter` and
`get_buffer`."""
import numpy as np
import pytest

import lazyt
from lazyt import nn


def _model():
    lazyt.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_forward_hooks_see_and_replace_values():
    m = _model()
    x = lazyt.tensor(np.ones((5, 3), np.float32))
    seen = []
    h1 = m[0].register_forward_hook(lambda mod, args, out: seen.append((mod, out.shape)))
    h2 = m[2].register_forward_pre_hook(lambda mod, args: args[0] * 0)  # one value: wrapped
    y = m(x)
    assert seen == [(m[0], (5, 4))]
    np.testing.assert_allclose(y.numpy(), np.broadcast_to(m[2].bias.numpy(), (5, 2)))
    h3 = m.register_forward_hook(lambda mod, args, out: out + 1)
    np.testing.assert_allclose(m(x).numpy(), y.numpy() + 1)
    for h in (h1, h2, h3):
        h.remove()
    h1.remove()  # twice: nothing left to remove
    plain = m(x).numpy()
    assert len(seen) == 2 and not np.allclose(plain, y.numpy())
    with m.register_forward_hook(lambda mod, args, out: out * 0):
        assert not m(x).numpy().any()
    np.testing.assert_array_equal(m(x).numpy(), plain)
    with pytest.raises(nn.ModuleError, match="callable"):
        m.register_forward_hook("not a function")


def test_hooks_fire_under_autodiff_and_keep_gradients():
    m = _model()
    grads = []
    m[0].register_forward_hook(lambda mod, args, out: out * 2)
    x = lazyt.tensor(np.ones((2, 3), np.float32)).require_grad()
    m(x).sum().backward()
    grads.append(m[0].weight.grad.numpy().copy())
    m2 = _model()
    x2 = lazyt.tensor(np.ones((2, 3), np.float32)).require_grad()
    (m2[2](m2[1](m2[0](x2) * 2))).sum().backward()
    np.testing.assert_allclose(grads[0], m2[0].weight.grad.numpy(), rtol=1e-6)


def test_zero_grad_and_requires_grad():
    m = _model()
    m(lazyt.ones((2, 3))).sum().backward()
    assert m[0].weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert not m[0].weight.grad.numpy().any()
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m[0].requires_grad_(False)
    assert not m[0].weight.requires_grad and m[2].weight.requires_grad
    m(lazyt.ones((2, 3))).sum().backward()
    assert m[0].weight.grad is None and m[2].weight.grad is not None


def test_dtype_and_device_shortcuts_and_lookups():
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    w = m[0].weight
    assert m.double() is m and w.dtype is lazyt.float64 and m[1].running_mean.dtype is \
        lazyt.float64
    assert m[1].num_batches_tracked.dtype is lazyt.int64  # integer buffers keep their dtype
    m.half()
    assert w.dtype is lazyt.float16
    m.float().cpu()
    assert w.dtype is lazyt.float32 and m[0].weight is w  # the same Parameter object
    assert m.get_parameter("0.weight") is w
    assert m.get_buffer("1.running_var").shape == (4,)
    with pytest.raises(nn.ModuleError, match="no parameter"):
        m.get_parameter("0.gamma")
    with pytest.raises(nn.ModuleError, match="no buffer"):
        m.get_buffer("0.weight")


def test_hook_order_and_kwargs():
    m = nn.Linear(2, 2)
    seen = []
    h1 = m.register_forward_hook(lambda *a: seen.append("a"))
    m.register_forward_hook(lambda *a: seen.append("b"), prepend=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: out * 0, with_kwargs=True)
    y = m(lazyt.ones((1, 2)))
    assert seen == ["b", "a"] and not y.numpy().any()
    h1.remove()  # removing after a prepend still finds it
    m(lazyt.ones((1, 2)))
    assert seen == ["b", "a", "b"]


def test_missing_members_are_attribute_errors():
    m = nn.Sequential(nn.Linear(2, 2))
    for call in (lambda: m.get_parameter("0.gamma"), lambda: m.get_submodule("3"),
                 lambda: m.get_buffer("0.weight")):
        with pytest.raises(AttributeError):
            call()
