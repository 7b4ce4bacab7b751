"""Tensor.register_hook, retain_grad and retains_grad, as in torch: hooks see a tensor's final
gradient in each backward pass and may replace it; retain_grad keeps an intermediate's."""
import numpy as np
import pytest

import lazyt
from lazyt.errors import DeviceError, GradError, InvalidArgumentError, ShapeError


def _leaf(device, values=(1.0, 2.0, 3.0)):
    return lazyt.tensor(list(values), device=device).require_grad()


def test_an_intermediate_hook_replaces_the_gradient_its_op_passes_on(device):
    x = _leaf(device)
    y = x * x
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.register_hook(lambda g: g * 10)
    (y * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3, 3, 3])
    # dL/dx = 10 * 3 * 2x: the hook's gradient is the one the multiply differentiates
    np.testing.assert_allclose(x.grad.numpy(), [60, 120, 180])


def test_hooks_run_in_registration_order_each_on_the_last_ones_result(device):
    x = _leaf(device)
    y = x + 0
    order = []
    y.register_hook(lambda g: (order.append("a"), g + 1)[1])
    y.register_hook(lambda g: (order.append("b"), g * 2)[1])
    y.sum().backward()
    assert order == ["a", "b"]
    np.testing.assert_allclose(x.grad.numpy(), [4, 4, 4])


def test_the_hook_sees_the_gradient_summed_over_every_use(device):
    x = _leaf(device)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    (y * 3 + y * y).sum().backward()   # d/dy = 3 + 2y
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 3 + 2 * np.array([2, 4, 6]))


def test_a_leaf_hook_changes_what_is_added_into_grad(device):
    x = _leaf(device)
    x.register_hook(lambda g: g * -1)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-2, -4, -6])
    (x * 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-3, -5, -7])


def test_a_leaf_hook_outlives_in_place_updates_of_the_leaf(device):
    x = _leaf(device)
    x.register_hook(lambda g: g * 0.5)
    with lazyt.no_grad():
        x.sub_(1.0)      # a new leaf node for the same tensor
    (x * 4).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])


def test_a_leaf_hook_runs_before_its_post_accumulate_hook(device):
    x = _leaf(device)
    got = []
    x.register_hook(lambda g: g + 100)
    x.register_post_accumulate_grad_hook(lambda t: got.append(t.grad.numpy().copy()))
    x.sum().backward()
    np.testing.assert_allclose(got[0], [101, 101, 101])
    np.testing.assert_allclose(x.grad.numpy(), [101, 101, 101])


def test_the_burn_gradients_hold_the_hooked_gradient(device):
    x = _leaf(device)
    x.register_hook(lambda g: g * 3)
    grads = (x * 2).sum().backward()
    np.testing.assert_allclose(grads[x].numpy(), [6, 6, 6])


def test_remove_unregisters_and_the_handle_is_a_context_manager(device):
    x = _leaf(device)
    y = x * 1
    h = y.register_hook(lambda g: g * 5)
    h.remove()
    h.remove()   # a second remove is a no-op
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1, 1, 1])
    x.grad = None
    with x.register_hook(lambda g: g * 7):
        x.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [7, 7, 7])
    x.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8, 8, 8])


def test_retain_grad_keeps_an_intermediates_gradient_after_its_hooks(device):
    x = _leaf(device)
    y = x * x
    assert not y.retains_grad
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    assert y.retains_grad and not y.is_leaf
    (y * 3).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6, 6, 6])
    np.testing.assert_allclose(x.grad.numpy(), [12, 24, 36])
    assert not y.is_leaf   # consumed by backward, still not a leaf


def test_an_intermediate_without_retain_grad_has_no_grad(device):
    x = _leaf(device)
    y = x * x
    y.sum().backward()
    assert y.grad is None
    assert not x.retains_grad


def test_retain_grad_on_a_leaf_is_a_no_op(device):
    x = _leaf(device)
    x.retain_grad()
    assert not x.retains_grad and x.is_leaf
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])


def test_a_retained_gradient_not_reached_stays_none(device):
    x = _leaf(device)
    y = x * 2
    y.retain_grad()
    (x * 3).sum().backward()
    assert y.grad is None


def test_hooks_and_retain_grad_need_a_tensor_that_requires_grad(device):
    t = lazyt.ones(3, device=device)
    with pytest.raises(GradError, match="register_hook"):
        t.register_hook(lambda g: g)
    with pytest.raises(GradError, match="retain_grad"):
        t.retain_grad()
    with pytest.raises(InvalidArgumentError, match="callable"):
        _leaf(device).register_hook(3)


def test_a_hook_returning_a_wrong_shape_or_type_raises_and_the_runtime_stays_usable(device):
    x = _leaf(device)
    y = x * 2
    y.register_hook(lambda g: g.sum())
    with pytest.raises(ShapeError, match="register_hook.*shape"):
        y.sum().backward()
    x2 = _leaf(device)
    y2 = x2 * 2
    y2.register_hook(lambda g: "nope")
    with pytest.raises(GradError, match="tensor or None"):
        y2.sum().backward()
    z = _leaf(device)
    (z * z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [2, 4, 6])


def test_a_hook_on_another_device_raises(device):
    if device.type == "cpu":
        pytest.skip("needs a second device type to return a gradient from")
    x = _leaf(device)
    y = x * 2
    y.register_hook(lambda g: g.cpu())
    with pytest.raises(DeviceError, match="register_hook"):
        y.sum().backward()


def test_a_hook_on_a_tensor_already_backpropagated_raises(device):
    x = _leaf(device)
    y = x * 2
    y.sum().backward()
    with pytest.raises(GradError, match="already"):
        y.register_hook(lambda g: g)


def test_hooks_run_without_recording_a_graph(device):
    x = _leaf(device)
    y = x * 2
    flags = []
    y.register_hook(lambda g: flags.append(g.requires_grad))
    y.sum().backward()
    assert flags == [False]


def test_a_hook_on_a_float16_tensor_keeps_the_dtype(device):
    x = lazyt.tensor([1.0, 2.0], device=device).to(lazyt.float16).require_grad()
    y = x * 2
    y.register_hook(lambda g: g.to(lazyt.float32) * 2)
    y.sum().backward()
    assert x.grad.dtype is lazyt.float16
    np.testing.assert_allclose(x.grad.numpy(), [4, 4])


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    out = {}
    for lib in ("lazyt", "torch"):
        if lib == "torch":
            x = torch.tensor(a, requires_grad=True)
        else:
            x = lazyt.tensor(a).require_grad()
        y = x.exp()
        y.retain_grad()
        y.register_hook(lambda g: g * g)
        x.register_hook(lambda g: g - 1)
        (y * y).sum().backward()
        out[lib] = (x.grad.detach().numpy(), y.grad.detach().numpy())
    for u, v in zip(out["lazyt"], out["torch"]):
        np.testing.assert_allclose(u, v, rtol=1e-6)
