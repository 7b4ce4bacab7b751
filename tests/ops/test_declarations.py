"""The op declarations drive every layer: one declaration gives an op its Dispatch entry, its
Autodiff and Fusion methods, the Backend protocol's stub or decomposition, and (with names)
its Tensor method; fast kernels of composites are found by name; no layer lists ops."""
from __future__ import annotations

import inspect as pyinspect

import numpy as np
import pytest

import lazyt
from lazyt import ops
from lazyt.autodiff import Autodiff
from lazyt.backends.base import Backend
from lazyt.backends.numpy import NumpyBackend
from lazyt.dispatch import _COMPOSITES, Dispatch
from lazyt.errors import LazytError, MissingImplError, ShapeError
from lazyt.extension import backend_extension, fusion
from lazyt.fusion import Fusion, inspect
from lazyt.ops.declare import Grad, OpDef, declare, static, tensor


def _params(fn) -> list:
    return [p for p in pyinspect.signature(fn).parameters if p != "self"]


@pytest.mark.parametrize("op", list(ops.all_ops()), ids=lambda op: op.name)
def test_every_layer_has_every_declared_op_with_its_signature(op):
    names = [p.name for p in op.params]
    for cls in (Backend, Autodiff, Fusion):
        assert _params(getattr(cls, op.name)) == names, cls
        assert getattr(cls, op.name).__doc__ == op.doc
    if op.tensor_params:  # a composite's attribute may be taken by an extension op
        entry = _COMPOSITES[op.name] if op.is_composite else getattr(Dispatch, op.name)
        assert _params(entry) == names
        assert entry.__lazyt_op__ is op


def test_layers_define_no_op_by_hand():
    """The layers' op methods all come from the declarations (generated code), so a layer
    never names an op."""
    for cls in (Autodiff, Fusion):
        for op in ops.all_ops():
            assert getattr(cls, op.name).__code__.co_filename.startswith("<lazyt "), \
                (cls.__name__, op.name)


class _DoublingNumpy(NumpyBackend):
    """A kernel backend with a kernel for a primitive declared by this test only."""

    def twice_for_test(self, x, scale):
        return x * (2 * scale)


def _declare_twice():
    op = ops.find("twice_for_test")
    if op is None:
        op = declare(OpDef(
            "twice_for_test", (tensor("x"), static("scale")),
            lambda x, scale: (tuple(x.shape), x.dtype),
            grad=Grad(lambda B, g, ctx: {"x": B.binary(ops.BinaryOp.MUL, g,
                                                       2.0 * ctx.args.scale)}),
            method="twice_for_test", doc="2 * scale * x (a test op)"))
    return op


def test_a_new_primitive_needs_its_declaration_and_a_kernel_only():
    _declare_twice()
    F = Fusion(_DoublingNumpy())
    A = Autodiff(F)
    x = A.require_grad(A.from_numpy(np.arange(4, dtype=np.float32)))
    with inspect() as report:
        y = A.twice_for_test(x, 1.5)
        np.testing.assert_array_equal(A.to_numpy(y), np.arange(4) * 3.0)
    assert report.opaque_ops == ["twice_for_test"]
    grads = A.backward(A.reduce(ops.ReduceOp.SUM, y, (0,), False))
    np.testing.assert_array_equal(A.to_numpy(A.grad(x, grads)), [3, 3, 3, 3])
    # the Tensor method was generated too (it routes through a device's stack)
    assert lazyt.Tensor.twice_for_test.__name__ == "twice_for_test"


def test_a_backend_without_the_kernel_says_who_has_it_at_record_time():
    _declare_twice()
    F = Fusion(NumpyBackend())
    x = F.from_numpy(np.ones(3, np.float32))
    with pytest.raises(MissingImplError, match=r"twice_for_test.*NumpyBackend.*_DoublingNumpy"):
        F.twice_for_test(x, 1.0)
    assert F.pending == 0
    with pytest.raises(MissingImplError, match="twice_for_test"):
        NumpyBackend().twice_for_test(np.ones(3), 1.0)


def test_shape_rules_run_at_record_time_on_every_stack():
    for dev in (lazyt.device("cpu"), lazyt.device("cpu", fusion=False)):
        a = lazyt.ones(2, 3, device=dev)
        with pytest.raises(ShapeError, match="matmul"):
            a @ a


class _SoftmaxKernel(NumpyBackend):
    calls = 0

    @ops.kernel(when=lambda x, dim: dim == len(x.shape) - 1)
    def softmax(self, x, dim):
        type(self).calls += 1
        return super().softmax(x, dim)


def test_a_composite_kernel_is_one_op_where_when_holds_else_the_primitives():
    F = Fusion(_SoftmaxKernel())
    x = F.from_numpy(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    with inspect() as report:
        last = F.to_numpy(F.softmax(x, 1))
    assert report.opaque_ops == ["softmax(dim=1)"] and _SoftmaxKernel.calls == 1
    with inspect() as report:
        first = F.to_numpy(F.softmax(x, 0))
    assert "softmax(dim=0)" not in report.opaque_ops and report.blocks  # decomposed, fused
    xs = F.to_numpy(x)
    e = np.exp(xs - xs.max(1, keepdims=True))
    np.testing.assert_allclose(last, e / e.sum(1, keepdims=True), rtol=1e-6)
    e = np.exp(xs - xs.max(0, keepdims=True))
    np.testing.assert_allclose(first, e / e.sum(0, keepdims=True), rtol=1e-6)


def test_composite_with_its_own_gradient_rule():
    """index_select declares its backward (index_add), so tracked inputs do not go through
    its gather decomposition."""
    x = lazyt.tensor(np.arange(12, dtype=np.float32).reshape(4, 3)).require_grad()
    i = lazyt.tensor([3, 0, 3])
    with inspect() as report:
        g = (x.index_select(0, i) * 2).sum().backward()
        got = g.get(x).numpy()
    assert any(name.startswith("index_add") for name in report.opaque_ops)
    assert not any(name.startswith(("gather", "scatter_add")) for name in report.opaque_ops)
    np.testing.assert_array_equal(got, [[2, 2, 2], [0, 0, 0], [0, 0, 0], [4, 4, 4]])


def test_extension_names_may_take_a_composite_but_not_a_primitive():
    with pytest.raises(LazytError, match="clashes"):
        @backend_extension(NumpyBackend)
        class Bad(lazyt.Backend):
            def matmul(lhs, rhs): ...

    @backend_extension(NumpyBackend)
    class Mine(lazyt.Backend):
        def attention(q, k, v): ...

    @Mine.implement(NumpyBackend)
    def attention(q, k, v):
        return q + k + v

    try:
        a = lazyt.ones(2, 2, device=lazyt.device("cpu", autodiff=False, fusion=False))
        out = lazyt.Tensor.from_dispatch(Dispatch.attention(*(t.into_dispatch()
                                                               for t in (a, a, a))))
        np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 3.0))
        # lazyt's own attention still runs (it is reached through Dispatch.helper)
        q = lazyt.ones(1, 2, 4)
        np.testing.assert_allclose(lazyt.scaled_dot_product_attention(q, q, q).numpy(),
                                   np.ones((1, 2, 4)))
    finally:
        delattr(Dispatch, "attention")
        setattr(Dispatch, "attention", staticmethod(_COMPOSITES["attention"]))


def test_declaring_a_name_twice_is_an_error():
    with pytest.raises(LazytError, match="declared already"):
        declare(OpDef("matmul", (tensor("x"),), lambda x: (x.shape, x.dtype)))
