"""Graph semantics of the Autodiff layer: tracking, no_grad, detach, seeds, consumed graphs,
freeing, accumulation, dtypes, reads that do not cut gradients, differentiable transfer."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import lazyt
from lazyt.autodiff import (Autodiff, AutodiffTensor, Gradients, Requirement, live_nodes,
                            no_grad, saved_bytes)
from lazyt.errors import GradError
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp


def T(a, dev):
    return lazyt.tensor(np.asarray(a, dtype=np.float64), device=dev)


def test_untracked_values_are_inner_primitives():
    dev = lazyt.device("cpu", fusion=False)
    be = dev.backend
    assert isinstance(be, Autodiff)
    a, b = np.ones((2, 3)), np.arange(3.0)
    out = be.binary(BinaryOp.ADD, a, b)
    assert type(out) is np.ndarray
    np.testing.assert_array_equal(out, a + b)
    assert type(be.softmax(a, 1)) is np.ndarray  # helpers delegate to inner when untracked
    assert type(be.reduce(ReduceOp.SUM, a, (0,), False)) is np.ndarray
    assert not be.is_tracked(out)
    assert be.grad(out, Gradients()) is None


def test_require_grad_makes_a_leaf_and_ops_track(ad_device):
    x = T([[1.0, -2.0], [3.0, 4.0]], ad_device)
    assert not x.is_tracked
    x.require_grad()
    assert x.is_tracked
    assert type(x.primitive) is AutodiffTensor
    assert x.primitive.node.requirement is Requirement.GRAD
    y = x * 2
    assert y.is_tracked and y.primitive.node.requirement is Requirement.GRAD_IN_BACKWARD
    assert x.require_grad() is x and x.primitive.node.requirement is Requirement.GRAD
    # results without a gradient are untracked: comparisons, arg reductions, integer casts
    assert not (x > 0).is_tracked
    assert not x.argmax().is_tracked
    assert not x.long().is_tracked
    assert x.float().is_tracked


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_require_grad_rejects_non_float(dtype):
    dev = lazyt.device("cpu", fusion=False)
    with pytest.raises(GradError, match=np.dtype(dtype).name.replace("bool", "bool")):
        lazyt.tensor(np.zeros(3, dtype=dtype), device=dev).require_grad()
    with pytest.raises(GradError, match="floating-point"):  # the layer itself checks too
        dev.backend.require_grad(np.zeros(3, dtype=dtype))


def test_no_grad_context_and_decorator(ad_device):
    x = T([1.0, 2.0], ad_device).require_grad()
    with lazyt.autodiff.no_grad():
        y = (x * 3).exp()
        assert not lazyt.autodiff.is_grad_enabled()
    assert lazyt.autodiff.is_grad_enabled()
    assert not y.is_tracked
    np.testing.assert_allclose(y.numpy(), np.exp([3.0, 6.0]))

    @no_grad()
    def f(t):
        return t * 2

    assert not f(x).is_tracked
    assert (x * 2).is_tracked
    with no_grad():
        with no_grad():
            pass
        assert not (x + 1).is_tracked  # the inner exit restores the outer state
    assert (x + 1).is_tracked


def test_no_grad_is_per_thread():
    dev = lazyt.device("cpu", fusion=False)
    x = T([1.0], dev).require_grad()
    seen = {}

    def worker():
        seen["tracked"] = (x * 2).is_tracked

    with no_grad():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
    assert seen["tracked"] is True


def test_detach(ad_device):
    x = T([1.0, 2.0], ad_device).require_grad()
    d = x.detach()
    assert not d.is_tracked and not (d * 2).is_tracked
    y = (x * d).sum()  # d is a constant
    g = y.backward()
    np.testing.assert_allclose(g.get(x).numpy(), [1.0, 2.0])
    assert g.get(d) is None


def test_seed_gradient_and_non_scalar_error(ad_device):
    x = T([[1.0, 2.0], [3.0, 4.0]], ad_device).require_grad()
    y = x * x
    with pytest.raises(GradError, match=r"non-scalar .*\(2, 2\).*grad="):
        y.backward()
    g = y.backward(T([[1.0, 0.0], [0.5, 2.0]], ad_device))
    np.testing.assert_allclose(g.get(x).numpy(), [[2.0, 0.0], [3.0, 16.0]])
    z = (x * 3).sum(0, keepdim=True).sum(1, keepdim=True)  # shape (1, 1): one element is fine
    np.testing.assert_allclose(z.backward()[x].numpy(), np.full((2, 2), 3.0))


def test_backward_of_untracked_tensor_raises(ad_device):
    with pytest.raises(GradError, match="not tracked"):
        T([1.0], ad_device).sum().backward()


def test_backward_twice_raises_and_graph_is_freed(ad_device):
    base_nodes, base_saved = live_nodes(), saved_bytes()
    x = T(np.linspace(-1, 1, 6).reshape(2, 3), ad_device).require_grad()
    loss = (x.exp() * x.sin()).sum()
    assert live_nodes() > base_nodes
    g = loss.backward()
    np.testing.assert_allclose(g.get(x).numpy(), np.exp(x.numpy()) * (np.sin(x.numpy())
                                                                      + np.cos(x.numpy())))
    assert live_nodes() == base_nodes
    assert saved_bytes() == base_saved
    with pytest.raises(GradError, match="already consumed"):
        loss.backward()


def test_backward_through_a_consumed_shared_subgraph_raises(ad_device):
    x = T([1.0, 2.0], ad_device).require_grad()
    y = x.exp()
    a, b = y.sum(), (y * 2).sum()
    a.backward()
    with pytest.raises(GradError, match="already consumed"):
        b.backward()


def test_dropped_graph_is_freed(ad_device):
    base_nodes, base_saved = live_nodes(), saved_bytes()
    x = T(np.ones((4, 4)), ad_device).require_grad()
    y = (x.sin() @ x).tanh().sum()
    assert live_nodes() > base_nodes and saved_bytes() > base_saved
    del y
    assert live_nodes() == base_nodes
    assert saved_bytes() == base_saved


def test_gradients_accumulate_over_uses(ad_device):
    x = T([1.0, 2.0, 3.0], ad_device).require_grad()
    w = T([0.5, -1.0, 2.0], ad_device).require_grad()
    y = (x * w + x * x + x).sum() + x[0] * 4
    g = y.backward()
    np.testing.assert_allclose(g.get(x).numpy(), [0.5 + 2 + 1 + 4, -1 + 4 + 1, 2 + 6 + 1])
    np.testing.assert_allclose(g.get(w).numpy(), [1.0, 2.0, 3.0])


def test_intermediate_gradients_are_consumed(ad_device):
    x = T([1.0, 2.0], ad_device).require_grad()
    h = x * 2
    g = (h * h).sum().backward()
    assert g.get(h) is None
    np.testing.assert_allclose(g.get(x).numpy(), [8.0, 16.0])


def test_backward_on_a_leaf_returns_the_seed(ad_device):
    x = T([3.0], ad_device).require_grad()
    g = x.backward()
    np.testing.assert_allclose(g.get(x).numpy(), [1.0])


def test_reading_does_not_cut_the_gradient(ad_device):
    x = T([1.0, 2.0, 3.0], ad_device).require_grad()
    y = x * 2
    np.testing.assert_allclose(y.numpy(), [2.0, 4.0, 6.0])
    s = (y * y).sum()
    assert s.item() == pytest.approx(56.0)
    lazyt.sync()
    g = s.backward()
    np.testing.assert_allclose(g.get(x).numpy(), [8.0, 16.0, 24.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_gradient_dtype_is_the_input_dtype(ad_device, dtype):
    x = lazyt.tensor(np.array([1.0, 2.0], dtype=dtype), device=ad_device).require_grad()
    y = (x.double() * 3).sum()  # computed in float64
    gx = y.backward()[x]
    assert gx.dtype == lazyt.dtype.from_numpy(np.dtype(dtype))
    np.testing.assert_allclose(gx.numpy(), [3.0, 3.0])
    z = (x * 2.5).sum()  # scalar operands keep the dtype
    gz = z.backward()[x]
    assert gz.dtype == x.dtype
    np.testing.assert_allclose(gz.numpy().astype(np.float64), [2.5, 2.5])


def test_transfer_between_stacks_is_differentiable():
    a = lazyt.device("cpu", fusion=False)
    b = lazyt.device("cpu", fusion=False, checkpointing="none")
    x = T([1.0, 2.0, 3.0], a).require_grad()
    y = x.exp().to(b)
    assert y.device == b and y.is_tracked
    loss = (y * y).sum()
    g = loss.backward()
    gx = g.get(x)
    assert gx.device == a
    np.testing.assert_allclose(gx.numpy(), 2 * np.exp(2 * np.array([1.0, 2.0, 3.0])))


def test_transfer_to_a_stack_without_autodiff_detaches():
    a = lazyt.device("cpu", fusion=False)
    plain = lazyt.device("cpu", fusion=False, autodiff=False)
    x = T([1.0, 2.0], a).require_grad()
    y = x.to(plain)
    assert not y.is_tracked
    np.testing.assert_allclose(y.numpy(), [1.0, 2.0])


def test_gradients_api():
    g = Gradients()
    dev = lazyt.device("cpu", fusion=False)
    x = dev.backend.require_grad(np.array([1.0, 2.0]))
    node = x.node
    g.register(node, np.array([1.0, 1.0]))
    g.register(node, np.array([0.5, 2.0]))  # accumulates
    np.testing.assert_allclose(g.get(node), [1.5, 3.0])
    np.testing.assert_allclose(g.get(node.id), [1.5, 3.0])
    np.testing.assert_allclose(g.consume(node), [1.5, 3.0])
    assert g.get(node) is None
    with pytest.raises(GradError, match="no gradient"):
        g.consume(node)


def test_backend_helpers_get_gradients_through_primitives(ad_device):
    """Named helpers of base.py run through the layer's primitives for tracked inputs."""
    be = ad_device.backend
    x = lazyt.tensor(np.array([[0.5, -1.0, 2.0]]), device=ad_device).require_grad()
    out = lazyt.Tensor(be.softmax(x.primitive, 1), ad_device)
    assert out.is_tracked
    s = np.exp(x.numpy()) / np.exp(x.numpy()).sum()
    w = np.array([[1.0, 2.0, 3.0]])
    g = (out * T(w, ad_device)).sum().backward()
    np.testing.assert_allclose(g.get(x).numpy(), s * (w - (s * w).sum()), rtol=1e-12)


def test_unary_zero_gradient_ops(ad_device):
    x = T([0.3, -1.7], ad_device).require_grad()
    g = (x.floor() + x.sign() + x.ceil()).sum().backward()
    np.testing.assert_array_equal(g.get(x).numpy(), [0.0, 0.0])
    _ = UnaryOp  # the op table covers every float unary op
    from lazyt.ops.elementwise import UNARY_GRAD
    assert set(UNARY_GRAD) == set(UnaryOp) - {UnaryOp.NOT}


def test_require_grad_on_an_intermediate_keeps_its_gradient(ad_device):
    x = T([1.0, 2.0], ad_device).require_grad()
    h = (x * 3).require_grad()
    assert h.primitive.node.requirement is Requirement.GRAD
    g = (h * h).sum().backward()
    np.testing.assert_allclose(g.get(h).numpy(), [6.0, 12.0])
    np.testing.assert_allclose(g.get(x).numpy(), [18.0, 36.0])


def test_binary_grad_table_covers_every_non_comparison_op():
    from lazyt.ops.elementwise import BINARY_GRAD
    from lazyt.ops import COMPARISONS
    assert set(BINARY_GRAD) == set(BinaryOp) - COMPARISONS


def test_ties_split_the_gradient(ad_device):
    """maximum/minimum and max/min reductions share the gradient evenly between ties."""
    a = T([1.0, 2.0, 3.0], ad_device).require_grad()
    b = T([1.0, 5.0, 0.0], ad_device).require_grad()
    g = lazyt.maximum(a, b).sum().backward()
    np.testing.assert_allclose(g.get(a).numpy(), [0.5, 0.0, 1.0])
    np.testing.assert_allclose(g.get(b).numpy(), [0.5, 1.0, 0.0])
    x = T([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]], ad_device).require_grad()
    g = x.amax(1).sum().backward()
    np.testing.assert_allclose(g.get(x).numpy(), [[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]])
    x = T([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]], ad_device).require_grad()
    g = x.max(1).values.sum().backward()        # the pair's values: all to the index, as torch
    np.testing.assert_allclose(g.get(x).numpy(), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    g = x.min().backward()
    np.testing.assert_allclose(g.get(x).numpy(), [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
