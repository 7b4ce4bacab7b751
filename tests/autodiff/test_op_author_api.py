"""The op-author API as an extension author uses it: the seed's fused matmul + add + relu with
a hand-written backward (compute-bound, stateful), and a memory-bound op with a retro-forward
that balanced checkpointing recomputes instead of saving."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.autodiff import (AutodiffTensor, Backward, Tracked, UnTracked, broadcast_shape,
                            saved_tensors)
from lazyt.errors import GradError
from lazyt.ops import BinaryOp, UnaryOp
from lazyt.testing import gradcheck


def fused_matmul_add_relu(ad, lhs, rhs, bias):
    """The seed's Autodiff impl (examples/custom_kernel/backward.py), on the layer `ad`."""
    B = ad.inner
    lhs, rhs, bias = ad.view(lhs), ad.view(rhs), ad.view(bias)

    class FusedMatmulAddReluBackward(Backward, n_parents=3):
        def backward(self, ops, grads, checkpointer):
            node_lhs, node_rhs, node_bias = ops.parents
            grad = grads.consume(ops.node)
            lhs_state, rhs_state, output, shape_bias = ops.state
            lhs = checkpointer.retrieve_node_output(lhs_state)
            rhs = checkpointer.retrieve_node_output(rhs_state)
            grad_output = B.relu_backward(output, grad)
            grad_lhs = broadcast_shape(B, B.float_matmul(grad_output, B.float_transpose(rhs)),
                                       B.shape_of(lhs))
            grad_rhs = broadcast_shape(B, B.float_matmul(B.float_transpose(lhs), grad_output),
                                       B.shape_of(rhs))
            grad_bias = broadcast_shape(B, grad_output, shape_bias)
            if node_bias is not None:
                grads.register(node_bias.id, grad_bias)
            if node_lhs is not None:
                grads.register(node_lhs.id, grad_lhs)
            if node_rhs is not None:
                grads.register(node_rhs.id, grad_rhs)

    def forward(a, b, c):  # the "kernel"
        return B.relu(B.float_add(B.float_matmul(a, b), c))

    match (FusedMatmulAddReluBackward().prepare(ad.ckpt, [lhs.node, rhs.node, bias.node])
           .compute_bound().stateful()):
        case Tracked(prep):
            lhs_state = prep.checkpoint(lhs)
            rhs_state = prep.checkpoint(rhs)
            output = forward(lhs.primitive, rhs.primitive, bias.primitive)
            state = (lhs_state, rhs_state, output, B.shape_of(bias.primitive))
            return prep.finish(state, output)
        case UnTracked(prep):
            return prep.finish(forward(lhs.primitive, rhs.primitive, bias.primitive))


def custom(dev, fn, *tensors):
    return lazyt.Tensor(fn(dev.backend, *[t.primitive for t in tensors]), dev)


def test_seed_fused_op_gradients_match_the_reference(ad_device, rng):
    dev = ad_device
    a = lazyt.tensor(rng.standard_normal((2, 5, 4)), device=dev).require_grad()
    b = lazyt.tensor(rng.standard_normal((4, 3)), device=dev).require_grad()
    c = lazyt.tensor(rng.standard_normal((3,)), device=dev).require_grad()
    out = custom(dev, fused_matmul_add_relu, a, b, c)
    ref = (a @ b + c).relu()
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    w = lazyt.tensor(rng.standard_normal(out.shape), device=dev)
    g_out, g_ref = (out * w).sum().backward(), (ref * w).sum().backward()
    for t in (a, b, c):
        np.testing.assert_allclose(g_out.get(t).numpy(), g_ref.get(t).numpy(), rtol=1e-12)
    assert gradcheck(lambda x, y, z: custom(x.device, fused_matmul_add_relu, x, y, z), [a, b, c])


def test_seed_fused_op_untracked_and_partly_tracked(ad_device, rng):
    dev = ad_device
    a = lazyt.tensor(rng.standard_normal((3, 4)), device=dev)
    b = lazyt.tensor(rng.standard_normal((4, 2)), device=dev)
    c = lazyt.tensor(rng.standard_normal((2,)), device=dev)
    raw = fused_matmul_add_relu(dev.backend, a.primitive, b.primitive, c.primitive)
    assert type(raw) is not AutodiffTensor  # untracked: a plain inner primitive
    np.testing.assert_allclose(dev.backend.to_numpy(raw),
                               np.maximum(a.numpy() @ b.numpy() + c.numpy(), 0))
    c.require_grad()  # only the bias is tracked: ops.parents has None for lhs and rhs
    g = custom(dev, fused_matmul_add_relu, a, b, c).sum().backward()
    mask = (a.numpy() @ b.numpy() + c.numpy()) > 0
    np.testing.assert_allclose(g.get(c).numpy(), mask.sum(0))
    assert g.get(a) is None


def scaled_tanh(ad, x, scale: float):
    """A memory-bound extension op: under balanced its output is recomputed from the
    retro-forward when a later op needs it, not saved."""
    B = ad.inner
    x = ad.view(x)
    scaled_tanh.retro_calls = getattr(scaled_tanh, "retro_calls", 0)

    class ScaledTanhBackward(Backward, n_parents=1):
        def backward(self, ops, grads, checkpointer):
            (node,) = ops.parents
            grad = grads.consume(ops.node)
            t = B.unary(UnaryOp.TANH, B.binary(BinaryOp.MUL,
                                               checkpointer.retrieve_node_output(ops.state), scale))
            d = B.binary(BinaryOp.MUL, B.binary(BinaryOp.SUB, 1, B.binary(BinaryOp.MUL, t, t)),
                         scale)
            grads.register(node, B.binary(BinaryOp.MUL, grad, d))

    def retro(a):
        scaled_tanh.retro_calls += 1
        return B.unary(UnaryOp.TANH, B.binary(BinaryOp.MUL, a, scale))

    match (ScaledTanhBackward().prepare(ad.ckpt, [x.node]).memory_bound()
           .retro_forward(retro).parents([x]).stateful()):
        case Tracked(prep):
            return prep.finish(prep.checkpoint(x), retro(x.primitive))
        case UnTracked(prep):
            return prep.finish(retro(x.primitive))


@pytest.mark.parametrize("checkpointing", ["balanced", "none"])
def test_memory_bound_extension_op_is_recomputed_under_balanced(checkpointing):
    dev = lazyt.device("cpu", fusion=False, checkpointing=checkpointing)
    x = lazyt.tensor(np.linspace(-1, 1, 8), device=dev).require_grad()
    h = x * 2.0                          # memory-bound: checkpointed by scaled_tanh
    base = saved_tensors()
    y = custom(dev, lambda ad, p: scaled_tanh(ad, p, 0.7), h)
    z = y.exp()                          # exp checkpoints y
    saved = saved_tensors() - base
    scaled_tanh.retro_calls = 0
    g = z.sum().backward()
    xv = np.linspace(-1, 1, 8)
    t = np.tanh(0.7 * 2 * xv)
    np.testing.assert_allclose(g.get(x).numpy(), np.exp(t) * (1 - t * t) * 0.7 * 2, rtol=1e-12)
    if checkpointing == "balanced":
        assert saved == 0                 # h and y are recomputed, x was saved before `base`
        assert scaled_tanh.retro_calls == 1  # y recomputed once in backward
    else:
        assert saved == 2                 # h (for scaled_tanh) and y (for exp)
        assert scaled_tanh.retro_calls == 0


def test_prepare_checks_the_number_of_parents():
    dev = lazyt.device("cpu", fusion=False)

    class TwoParents(Backward, n_parents=2):
        pass

    x = dev.backend.view(np.ones(2))
    with pytest.raises(GradError, match="expected 2 parent nodes, got 1"):
        TwoParents().prepare(dev.backend.ckpt, [x.node])


def test_tracked_and_untracked_support_match_args():
    assert Tracked.__match_args__ == ("prep",)
    assert UnTracked.__match_args__ == ("prep",)
