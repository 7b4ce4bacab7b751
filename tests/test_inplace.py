"""torch's in-place habits: `+=` and friends, `add_ sub_ mul_ div_ copy_ zero_ fill_ clamp_` and
`x[idx] = v` update the tensor (every name bound to it sees the new value), keep its shape and
dtype, refuse a leaf that requires grad outside `no_grad`, and make a backward that needs an
overwritten value raise; the lazy layers keep fusing. On every device present."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.errors import DTypeError, GradError, InvalidArgumentError, ShapeError


def T(values, device, dtype=np.float32):
    return lazyt.tensor(np.asarray(values, dtype), device=device)


def test_augmented_assignment_updates_every_alias(device):
    y = T([1.0, 2.0], device)
    alias = y
    y += 1
    y *= 2
    y -= 1
    y /= 2
    assert alias is y and y._version == 4
    np.testing.assert_allclose(alias.numpy(), [1.5, 2.5])


def test_integer_in_place_keeps_the_dtype_and_refuses_float_results(device):
    i = T([1, 2], device, np.int32)
    i += 3
    i *= 2
    assert i.dtype is lazyt.int32 and i.numpy().tolist() == [8, 10]
    i //= 3
    assert i.numpy().tolist() == [2, 3]
    with pytest.raises(DTypeError, match="cannot be stored in place"):
        i /= 2
    with pytest.raises(DTypeError, match="cannot be stored in place"):
        i += 0.5
    assert i.numpy().tolist() == [2, 3]              # unchanged by the refused ops


def test_in_place_cannot_grow_the_tensor(device):
    x = T([1.0, 2.0], device)
    with pytest.raises(ShapeError, match="keeps the tensor's shape"):
        x += T([[1.0], [2.0]], device)
    np.testing.assert_allclose(x.numpy(), [1.0, 2.0])


def test_methods(device):
    x = T([[1.0, -2.0], [3.0, 4.0]], device)
    assert x.add_(1, alpha=2) is x
    np.testing.assert_allclose(x.numpy(), [[3.0, 0.0], [5.0, 6.0]])
    x.sub_(T([1.0, 1.0], device)).mul_(2).div_(4)
    np.testing.assert_allclose(x.numpy(), [[1.0, -0.5], [2.0, 2.5]])
    x.clamp_(0, 2)
    np.testing.assert_allclose(x.numpy(), [[1.0, 0.0], [2.0, 2.0]])
    x.copy_(T([7.0, 8.0], device))                   # broadcast into x's shape
    np.testing.assert_allclose(x.numpy(), [[7.0, 8.0], [7.0, 8.0]])
    x.fill_(3)
    np.testing.assert_allclose(x.numpy(), np.full((2, 2), 3.0))
    x.zero_()
    assert x.numpy().sum() == 0 and x.dtype is lazyt.float32 and x._version == 8


def test_setitem(device):
    z = lazyt.zeros(3, 4, device=device)
    ref = np.zeros((3, 4), np.float32)
    for key, value in [(1, 5.0), ((slice(None), 2), [1.0, 2.0, 3.0]), ((0, [0, 3]), 7.0),
                       ((slice(1, None), slice(None, None, 2)), [[8.0, 9.0], [10.0, 11.0]]),
                       (Ellipsis, 0.5)]:
        z[key] = lazyt.tensor(np.asarray(value, np.float32), device=device) \
            if isinstance(value, list) else value
        ref[key] = value
        np.testing.assert_allclose(z.numpy(), ref)
    z[2, 1] = 4.0
    ref[2, 1] = 4.0
    mask = z > 1.0
    z[mask] = -1.0                                     # torch's x[x > t] = v
    ref[ref > 1.0] = -1.0
    np.testing.assert_allclose(z.numpy(), ref)
    z[0, [1, 1]] = lazyt.tensor(np.array([2.0, 3.0], np.float32), device=device)
    ref[0, [1, 1]] = [2.0, 3.0]                        # a repeated position: the last write
    np.testing.assert_allclose(z.numpy(), ref)
    z[[0, 2], [3, 0]] = 6.0                            # several index lists
    ref[[0, 2], [3, 0]] = 6.0
    np.testing.assert_allclose(z.numpy(), ref)
    rows = z[:, 0] > 0
    z[rows] = 9.0                                      # a mask over the leading dim
    ref[ref[:, 0] > 0] = 9.0
    np.testing.assert_allclose(z.numpy(), ref)
    m = z < 0
    z[m] = lazyt.arange(int(m.sum()), device=device).float()  # one value per selected element
    ref[ref < 0] = np.arange(int((ref < 0).sum()))
    np.testing.assert_allclose(z.numpy(), ref)
    with pytest.raises(ShapeError, match="broadcast"):
        z[0] = lazyt.ones(3, device=device)


def test_setitem_of_ints_and_bools(device):
    i = T([1, 2, 3], device, np.int64)
    i[1] = 20
    assert i.numpy().tolist() == [1, 20, 3] and i.dtype is lazyt.int64
    i[2] = -2.7                                        # cast as torch casts: truncation
    assert i.numpy().tolist() == [1, 20, -2] and i.dtype is lazyt.int64
    b = lazyt.tensor([True, False, True], device=device)
    b[0] = False
    assert b.numpy().tolist() == [False, False, True]


def test_leaf_requiring_grad_only_in_no_grad(device):
    w = T([1.0, 2.0], device).require_grad()
    with pytest.raises(GradError, match="leaf"):
        w += 1
    with pytest.raises(GradError, match="leaf"):
        w[0] = 3.0
    (w * w).sum().backward()
    with lazyt.no_grad():                              # the manual SGD step
        w -= 0.25 * w.grad
    assert w.requires_grad and w.is_leaf
    np.testing.assert_allclose(w.numpy(), [0.5, 1.0])
    w.grad = None
    (w * w).sum().backward()                           # the updated leaf still gets gradients
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])


def test_backward_through_an_overwritten_value_raises(device):
    x = T([1.0, 2.0], device).require_grad()
    a = x.exp()
    b = a * a                                         # saves a
    a += 1
    with pytest.raises(GradError, match="modified by an in-place op"):
        b.sum().backward()
    x2 = T([1.0, 2.0], device).require_grad()
    y = x2 * 3
    y += 1                                            # nothing needs y's old value: fine
    y.sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("op", ["relu_", "exp_", "sin_", "tanh_", "sigmoid_", "sqrt_", "abs_",
                                "log_", "neg_", "square_", "mul_w", "div_w", "pow_2",
                                "addcmul_", "clamp_"])
def test_in_place_op_on_a_non_leaf_differentiates_as_out_of_place(device, op):
    """`y = x * 3; y.relu_()`: the in-place op's own backward may read the value it replaced
    (torch allows all of these); the gradient is the out-of-place one."""
    def apply(y, w, inplace):
        name, arg = (op[:-2] + "_", (w,)) if op.endswith("_w") else (op, ())
        if op == "pow_2":
            name, arg = "pow_", (2.0,)
        elif op == "addcmul_":
            arg = (w, w)
        elif op == "clamp_":
            arg = (0.5, 5.0)
        if inplace:
            return getattr(y, name)(*arg)
        return getattr(y, name.rstrip("_"))(*arg)

    grads = []
    for inplace in (False, True):
        x = T([0.25, 0.5, 1.5], device).require_grad()
        w = T([2.0, 3.0, 4.0], device).require_grad()
        y = x * 3
        out = apply(y, w, inplace)
        if inplace:
            assert out is y and y._version == 1
        (out * out).sum().backward()
        grads.append((x.grad.numpy(), None if w.grad is None else w.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-5)
    if grads[0][1] is not None:
        np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-5)


def test_a_value_read_before_an_in_place_op_still_raises(device):
    """torch's version check for the reads before the update: `z = y.sin(); y.relu_()` and
    then a backward through z raises; the gradient of y's new value works."""
    x = T([0.5, 1.5], device).require_grad()
    y = x * 3
    z = y.sin()                                        # saves y's old value
    y.relu_()
    with pytest.raises(GradError, match="modified by an in-place op"):
        z.sum().backward()
    x2 = T([0.5, 1.5], device).require_grad()
    y2 = x2 * 3
    y2.sin_().exp_()                                   # a chain of in-place ops
    y2.sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), np.exp(np.sin([1.5, 4.5])) *
                               np.cos([1.5, 4.5]) * 3, rtol=1e-5)


def test_gradients_flow_through_setitem(device):
    x = T([1.0, 2.0, 3.0], device).require_grad()
    v = T([10.0], device).require_grad()
    y = x * 1
    y[1] = v[0] * 2
    g = (y * y).sum().backward()
    np.testing.assert_allclose(g[x].numpy(), [2.0, 0.0, 6.0])
    np.testing.assert_allclose(g[v].numpy(), [80.0])


def test_in_place_chains_stay_fused():
    dev = lazyt.device("cpu")
    x = lazyt.tensor(np.arange(8, dtype=np.float32), device=dev)
    y = x * 1
    with lazyt.fusion.inspect() as report:
        y += 1
        y *= 2
        y -= 3
        y.numpy()
    assert report.kernels == 1


def test_data_writes_through_without_tracking(device):
    p = lazyt.nn.Parameter(lazyt.ones(3, device=device))
    (p * p).sum().backward()
    p.data -= 0.5 * p.grad                           # torch's manual step through .data
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0, 0.0])
    assert p.requires_grad and p.is_leaf
    p.data.copy_(T([1.0, 2.0, 3.0], device))          # in-place on .data reaches p
    p.data.mul_(2)
    np.testing.assert_allclose(p.numpy(), [2.0, 4.0, 6.0])
    p.data = lazyt.zeros(3, device=device)
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0, 0.0])
    p.grad = None
    (p + 1).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [1.0, 1.0, 1.0])
    assert not p.data.requires_grad
