"""The recording hot path's shortcuts give what the general path gives.

- `Fusion.fast_binary` / `fast_unary`: the front end records the commonest elementwise calls
  (float tensors of one dtype, broadcasting; a float tensor and a Python number; unary float
  ops) straight on the Fusion layer. Every other call returns None and takes the general path.
- `_run_now`: on an asynchronous base a composite kernel whose inputs all have values is
  launched at once instead of recorded; a pending input, a capture or an open report records
  it as before.
"""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.backends.numpy import NumpyBackend
from lazyt.fusion import Fusion
from lazyt.fusion.ir import OperationIr, TensorIr, TensorStatus
from lazyt.ops import BinaryOp as B, UnaryOp as U

from tests.fusion.test_fusion_overlap import AsyncNumpy, up


@pytest.mark.parametrize("dtype", [lazyt.float32, lazyt.float64, lazyt.float16])
def test_fast_binary_records_the_general_paths_op(dtype):
    dev = lazyt.device("cpu")
    lazyt.sync()
    a = lazyt.tensor(np.arange(1, 7, dtype=np.float32).reshape(2, 3), dtype=dtype)
    b = lazyt.tensor(np.linspace(0.5, 3, 6, dtype=np.float32).reshape(2, 3), dtype=dtype)
    fusion = dev.backend.inner
    row = lazyt.tensor(np.array([0.5, -1.0, 2.0], np.float32), dtype=dtype)
    col = lazyt.tensor(np.array([[2.0], [3.0]], np.float32), dtype=dtype)
    cases = [lambda: a * b, lambda: a - 2, lambda: 2 - a, lambda: a ** 2.5, lambda: 3.0 / a,
             lambda: lazyt.maximum(a, b), lambda: a.exp(), lambda: a.relu(), lambda: -a,
             lambda: a + row, lambda: col * a, lambda: row - col]
    for case in cases:
        lazyt.sync()
        fast = case()
        fast_keys = list(fusion.stream.keys)
        slow_fast, fusion.fast = fusion.fast, None   # the stack's fast entry switched off
        dev.backend.fast = None
        try:
            slow = case()
            slow_keys = list(fusion.stream.keys)[len(fast_keys):]
        finally:
            fusion.fast = dev.backend.fast = slow_fast
        assert fast_keys == slow_keys
        assert fast.dtype is slow.dtype is dtype and fast.shape == slow.shape
        np.testing.assert_array_equal(fast.numpy(), slow.numpy())


def test_cases_outside_the_fast_path_are_unchanged():
    F = Fusion(NumpyBackend())
    f32 = up(F, [1.0, 2.0])
    i64 = F.from_numpy(np.array([1, 2], np.int64))
    f64 = F.from_numpy(np.array([1.0, 2.0]))
    assert F.fast_binary(B.EQ, f32, f32) is None          # a bool result
    assert F.fast_binary(B.ADD, i64, 1) is None           # integers: range checks, wraparound
    assert F.fast_binary(B.ADD, f32, f64) is None         # promotion
    assert F.fast_binary(B.ADD, f32, True) is None        # bool is not a number here
    assert F.fast_binary(B.ADD, f32, np.float32(1)) is None
    assert F.fast_binary(B.BITAND, f32, f32) is None
    assert F.fast_unary(U.NOT, f32) is None
    assert F.fast_unary(U.EXP, i64) is None
    assert F.pending == 0


def test_shapes_that_do_not_broadcast_raise_the_general_paths_error():
    a, c = lazyt.randn(2, 3), lazyt.randn(4)
    lazyt.sync()
    with pytest.raises(lazyt.ShapeError) as fast:
        a + c
    fusion = lazyt.device("cpu").backend.inner
    keep, fusion.fast = fusion.fast, None
    lazyt.device("cpu").backend.fast = None
    try:
        with pytest.raises(lazyt.ShapeError) as slow:
            a + c
    finally:
        fusion.fast = lazyt.device("cpu").backend.fast = keep
    assert str(fast.value) == str(slow.value) and "add" in str(fast.value)
    assert fusion.pending == 0
    np.testing.assert_allclose((a + 1).numpy(), a.numpy() + 1)   # still usable


def test_tracked_tensors_and_parameters_take_the_right_path():
    w = lazyt.nn.Parameter(lazyt.tensor([1.0, -2.0, 3.0]))
    x = lazyt.tensor([0.5, 0.5, 0.5])
    y = (w * x + 1.0).relu().sum()                        # w is tracked: the general path
    grads = y.backward()
    np.testing.assert_allclose(grads[w].numpy(), [0.5, 0.0, 0.5])
    z = x * x
    assert type(z) is lazyt.Tensor
    with lazyt.no_grad():
        v = w * 2.0
    assert type(v) is lazyt.Tensor and not v.requires_grad
    np.testing.assert_array_equal(v.numpy(), [2.0, -4.0, 6.0])


def test_a_device_without_float64_still_refuses_it():
    F = Fusion(NumpyBackend())
    F._dtypes_ok = frozenset({lazyt.float32})           # as wgpu declares its dtypes
    f64 = F.from_numpy(np.array([1.0, 2.0]))
    assert F.fast_binary(B.ADD, f64, f64) is None and F.fast_unary(U.EXP, f64) is None


def test_ir_records_compare_by_identity():
    a = TensorIr((1, (2,), lazyt.float32, TensorStatus.NOT_INIT))
    b = TensorIr((1, (2,), lazyt.float32, TensorStatus.NOT_INIT))
    assert a != b and a == a and len({a, b}) == 2
    assert a != [1, (2,), lazyt.float32, TensorStatus.NOT_INIT] and not (list(a) == a)
    a.status = TensorStatus.READ_WRITE
    assert a.status is TensorStatus.READ_WRITE and b.status is TensorStatus.NOT_INIT
    c = a.copy()
    assert c is not a and (c.id, c.shape, c.dtype, c.status) == (a.id, a.shape, a.dtype, a.status)
    op = OperationIr((None, B.ADD, (a,), (b,), ("tt",), (), None, None))
    same = OperationIr((None, B.ADD, (a,), (b,), ("tt",), (), None, None))
    assert op != same and op != tuple(op) and op.name == "add" and op.inputs == (a,) and op.outputs == (b,)


# ---------------------------------------------------------------------------- _run_now
class AsyncLinear(AsyncNumpy):
    """An asynchronous numpy base with a linear kernel for every bias (numpy's own takes
    bias=None only)."""

    calls = 0

    @lazyt.ops.kernel
    def linear(self, x, weight, bias=None):
        type(self).calls += 1
        out = x @ weight.T
        return out if bias is None else out + bias


def _ready(F, shape, seed):
    return up(F, np.random.default_rng(seed).standard_normal(shape))


def test_a_composite_with_ready_inputs_runs_at_once():
    F = Fusion(AsyncLinear())
    x, w, b = _ready(F, (4, 3), 0), _ready(F, (5, 3), 1), _ready(F, (5,), 2)
    before = AsyncLinear.calls
    y = F.linear(x, w, b)
    assert F.pending == 0 and AsyncLinear.calls == before + 1   # ran, nothing recorded
    want = F.to_numpy(x) @ F.to_numpy(w).T + F.to_numpy(b)
    np.testing.assert_allclose(F.to_numpy(y), want, rtol=1e-6)
    z = F.unary(U.RELU, y)                                       # its output fuses on as input
    np.testing.assert_allclose(F.to_numpy(z), np.maximum(want, 0), rtol=1e-6)


def test_a_composite_with_a_pending_input_is_recorded():
    F = Fusion(AsyncLinear())
    x, w = _ready(F, (4, 3), 0), _ready(F, (5, 3), 1)
    h = F.binary(B.MUL, x, 2.0)
    y = F.linear(h, w, None)
    assert F.pending == 2
    np.testing.assert_allclose(F.to_numpy(y), (F.to_numpy(x) * 2) @ F.to_numpy(w).T, rtol=1e-6)


def test_a_synchronous_base_records_composites():
    class SyncLinear(NumpyBackend):
        linear = AsyncLinear.linear

    F = Fusion(SyncLinear())
    x, w = _ready(F, (4, 3), 0), _ready(F, (5, 3), 1)
    F.linear(x, w, None)
    assert F.pending == 1


def test_an_open_report_records_composites():
    F = Fusion(AsyncLinear())
    x, w = _ready(F, (4, 3), 0), _ready(F, (5, 3), 1)
    with lazyt.fusion.inspect() as report:
        y = F.linear(x, w, None)
        assert F.pending == 1
        F.to_numpy(y)
    assert report.drains >= 1


def test_a_lying_kernel_is_caught_when_it_runs_at_once():
    class Lying(AsyncNumpy):
        @lazyt.ops.kernel
        def linear(self, x, weight, bias=None):
            return x   # the wrong shape

    F = Fusion(Lying())
    x, w = _ready(F, (4, 3), 0), _ready(F, (5, 3), 1)
    with pytest.raises(lazyt.errors.MetadataMismatchError, match="linear"):
        F.linear(x, w, None)
    assert F.pending == 0
    np.testing.assert_array_equal(F.to_numpy(F.binary(B.ADD, x, 1.0)), F.to_numpy(x) + 1)


def test_dispatch_helper_linear_on_an_async_stack_matches_numpy():
    F = Fusion(AsyncLinear())
    x, w, b = _ready(F, (6, 4), 3), _ready(F, (2, 4), 4), _ready(F, (2,), 5)
    outs = [F.linear(x, w, b) for _ in range(3)]
    assert F.pending == 0
    for o in outs:
        np.testing.assert_allclose(F.to_numpy(o), F.to_numpy(x) @ F.to_numpy(w).T +
                                   F.to_numpy(b), rtol=1e-6)
