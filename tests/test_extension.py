"""Backend extensions: routing through the stack, metadata callbacks and their validation,
fusion(meta=...), fusion(default), hand-written Fusion impls, memory-bound autodiff impls, and
the seed's fused matmul + bias + relu example."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch, Tensor
from lazyt.autodiff import Backward, Tracked, UnTracked, saved_tensors
from lazyt.backends import Autodiff, Cube, Fusion, Numpy
from lazyt.errors import (FusionError, LazytError, MetadataMismatchError, MissingImplError,
                          ShapeError)
from lazyt.extension import TensorMeta, backend_extension, default, fusion
from lazyt.ops import BinaryOp, UnaryOp
from lazyt.testing import ExtensionCheckError, check_extension

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from custom_kernel.lib import (matmul_add_relu_custom, matmul_add_relu_reference,  # noqa: E402
                               output_shape)

CPU_STACKS = [lazyt.device("cpu"), lazyt.device("cpu", fusion=False),
              lazyt.device("cpu", checkpointing="none"),
              lazyt.device("cpu", autodiff=False)]


def call(name, *args):
    out = getattr(Dispatch, name)(*[a.into_dispatch() if isinstance(a, Tensor) else a
                                    for a in args])
    if isinstance(out, tuple):
        return tuple(Tensor.from_dispatch(o) if isinstance(o, lazyt.DispatchTensor) else o
                     for o in out)
    return Tensor.from_dispatch(out)


# ---------------------------------------------------------------------- the seed example
@pytest.mark.parametrize("dev", CPU_STACKS, ids=str)
def test_example_matches_reference_with_broadcast_batch_dims(dev):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((1, 64, 32), (4, 32, 48), (4, 64, 48))]
    ts = [lazyt.tensor(a, device=dev) for a in arrays]
    if dev.autodiff:
        ts = [t.require_grad() for t in ts]
    out = matmul_add_relu_custom(*ts)
    expected = np.maximum(arrays[0] @ arrays[1] + arrays[2], 0)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert out.shape == (4, 64, 48) and out.dtype is lazyt.float32
    if dev.autodiff:
        grads = out.sum().backward()
        ref = [lazyt.tensor(a, device=dev).require_grad() for a in arrays]
        ref_grads = matmul_add_relu_reference(*ref).sum().backward()
        for t, r in zip(ts, ref):
            np.testing.assert_allclose(grads.get(t).numpy(), ref_grads.get(r).numpy(),
                                       rtol=1e-5, atol=1e-5)


def test_example_passes_check_extension():
    rng = np.random.default_rng(2)
    report = check_extension(Dispatch.fused_matmul_add_relu,
                             [rng.standard_normal(s) for s in ((1, 3, 4), (2, 4, 5), (2, 3, 5))],
                             reference=matmul_add_relu_reference)
    assert report[("cpu", "gradcheck")] == "ok"
    assert all(v == "ok" for v in report.values())


def test_example_run_script_passes_on_cpu():
    res = subprocess.run([sys.executable, str(ROOT / "examples/custom_kernel/run.py"),
                          "--device", "cpu"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all ok" in res.stdout
    assert res.stdout.count("| cpu |") == 3


@pytest.mark.parametrize("shapes, fragment", [
    (((2, 3), (4, 5), (2, 5)), "contraction"),
    (((2, 3, 4), (3, 4, 5), (3, 3, 5)), "batch dims"),
    (((3, 4), (4, 5), (3, 4)), "bias must have the output's shape"),
    (((4,), (4, 5), (5,)), "at least two dims"),
])
def test_bad_shapes_raise_shape_error_at_record_time(shapes, fragment):
    ts = [lazyt.zeros(s) for s in shapes]
    with lazyt.fusion.inspect() as report:
        with pytest.raises(ShapeError, match=fragment) as e:
            matmul_add_relu_custom(*ts)
    assert "fused_matmul_add_relu" in str(e.value)
    assert report.kernels == 0  # raised while recording: nothing ran
    assert matmul_add_relu_custom(lazyt.ones(1, 2, 3), lazyt.ones(1, 3, 2),
                                  lazyt.ones(1, 2, 2)).numpy().sum() == 16  # still usable


def test_output_shape_callback_alone():
    assert output_shape((1, 64, 32), (4, 32, 48), (4, 64, 48)) == (4, 64, 48)
    with pytest.raises(ValueError):
        output_shape((2, 3), (3, 4, 5), (2, 5))


# ---------------------------------------------------------------------- lying metadata
def _planted(shape_fn=None, dtype_arg="x", impl=None):
    @backend_extension(Autodiff, Numpy, Fusion)
    class Lying(lazyt.Backend):
        @fusion(dtype=dtype_arg, shape=shape_fn or (lambda x: x))
        def lying_double(x): ...

    @Lying.implement(Numpy)
    def lying_double(x):
        return impl(x) if impl else x * 2

    return Lying


def test_wrong_output_shape_is_caught_by_check_extension():
    _planted(shape_fn=lambda x: x[:-1] + (x[-1] + 1,))  # declares one column too many
    with pytest.raises(ExtensionCheckError, match=r"metadata.*MetadataMismatchError"):
        check_extension(Dispatch.lying_double, [np.ones((2, 3))],
                        reference=lambda x: x * 2, grad=False, devices=["cpu"])


def test_wrong_output_dtype_is_caught_by_check_extension():
    _planted(impl=lambda x: (x * 2).astype(np.float64))  # declares x's dtype: float32
    with pytest.raises(ExtensionCheckError) as e:
        check_extension(Dispatch.lying_double, [np.ones((2, 3), np.float32)],
                        reference=lambda x: x * 2, grad=False, devices=["cpu"])
    assert "float64" in str(e.value) and "float32" in str(e.value)


@pytest.mark.parametrize("dev", [lazyt.device("cpu"), lazyt.device("cpu", fusion=False)],
                         ids=str)
def test_lazyt_check_meta_env_catches_wrong_shape_and_dtype(monkeypatch, dev):
    monkeypatch.setenv("LAZYT_CHECK_META", "1")
    _planted(shape_fn=lambda x: (x[0] + 1,) + x[1:])
    with pytest.raises((MetadataMismatchError, FusionError)) as e:
        call("lying_double", lazyt.ones(2, 3, device=dev)).numpy()
    text = str(e.value) + str(e.value.__cause__ or "")
    assert "lying_double" in text and "output 0" in text
    assert "(2, 3)" in text and "(3, 3)" in text
    _planted(impl=lambda x: (x * 2).astype(np.float64))
    with pytest.raises((MetadataMismatchError, FusionError)) as e:
        call("lying_double", lazyt.ones(2, 3, device=dev)).numpy()
    text = str(e.value) + str(e.value.__cause__ or "")
    assert "float64" in text and "float32" in text
    assert (lazyt.ones(2, device=dev) + 1).numpy().tolist() == [2.0, 2.0]  # still usable


def test_without_check_meta_a_correct_op_is_not_checked_twice(monkeypatch):
    monkeypatch.delenv("LAZYT_CHECK_META", raising=False)
    _planted()
    np.testing.assert_array_equal(call("lying_double", lazyt.ones(2)).numpy(), [2, 2])


# ---------------------------------------------------------------------- routing errors
def test_missing_base_impl_names_the_backends_that_have_one():
    @backend_extension(Autodiff, Cube, Numpy, Fusion)
    class CubeOnly(lazyt.Backend):
        @fusion(dtype="x", shape=lambda x: x)
        def cube_only_op(x): ...

    @CubeOnly.implement(Cube)
    def cube_only_op(x):
        return x

    for dev in (lazyt.device("cpu"), lazyt.device("cpu", fusion=False)):
        with pytest.raises(MissingImplError) as e:
            call("cube_only_op", lazyt.ones(3, device=dev)).numpy()
        text = str(e.value) + str(e.value.__cause__ or "")
        assert "cube_only_op" in text and "NumpyBackend" in text and "CubeBackend" in text


def test_tracked_input_without_autodiff_impl_raises_instead_of_detaching():
    @backend_extension(Autodiff, Numpy, Fusion)
    class NoGrad(lazyt.Backend):
        @fusion(dtype="x", shape=lambda x: x)
        def no_grad_op(x): ...

    @NoGrad.implement(Numpy)
    def no_grad_op(x):
        return x + 1

    x = lazyt.ones(3).require_grad()
    with pytest.raises(MissingImplError, match="Autodiff"):
        call("no_grad_op", x)
    # untracked inputs pass through the layer
    np.testing.assert_array_equal(call("no_grad_op", lazyt.ones(3)).numpy(), [2, 2, 2])
    with lazyt.no_grad():
        np.testing.assert_array_equal(call("no_grad_op", x).numpy(), [2, 2, 2])


def test_mixed_devices_raise_device_error():
    a = lazyt.ones(1, 2, 3)
    b = lazyt.ones(1, 3, 2, device=lazyt.device("cpu", fusion=False))
    with pytest.raises(lazyt.DeviceError, match="fused_matmul_add_relu"):
        matmul_add_relu_custom(a, b, lazyt.ones(1, 2, 2))


def test_dispatch_from_inside_an_impl_raises():
    @backend_extension(Numpy)
    class Reentrant(lazyt.Backend):
        def reentrant_op(x): ...

    @Reentrant.implement(Numpy)
    def reentrant_op(x):
        return Dispatch.reentrant_op(lazyt.tensor(x).into_dispatch())

    with pytest.raises(LazytError, match="inside the impl"):
        call("reentrant_op", lazyt.ones(2, device=lazyt.device("cpu", autodiff=False,
                                                                 fusion=False)))


def test_fusion_selector_needs_metadata():
    with pytest.raises(LazytError, match="@fusion"):
        @backend_extension(Numpy, Fusion)
        class NoMeta(lazyt.Backend):
            def no_meta_op(x): ...


def test_unknown_op_in_implement_is_an_error():
    @backend_extension(Numpy)
    class Small(lazyt.Backend):
        def small_op(x): ...

    with pytest.raises(LazytError, match="declares no op 'other'"):
        @Small.implement(Numpy)
        def other(x):
            return x


# ---------------------------------------------------------------------- non-tensor arguments
def test_non_tensor_arguments_reach_impls_and_callbacks():
    seen = {}

    def shape_fn(x, eps):
        seen["callback"] = eps
        return x

    @backend_extension(Autodiff, Numpy, Fusion)
    class WithEps(lazyt.Backend):
        @fusion(dtype="x", shape=shape_fn)
        def add_eps(x, eps=0.5): ...

    @WithEps.implement(Numpy)
    def add_eps(x, eps):
        seen["impl"] = eps
        return x + np.asarray(eps, x.dtype)

    np.testing.assert_allclose(call("add_eps", lazyt.zeros(2), 0.25).numpy(), [0.25, 0.25])
    assert seen == {"callback": 0.25, "impl": 0.25}
    np.testing.assert_allclose(call("add_eps", lazyt.zeros(2)).numpy(), [0.5, 0.5])


# ---------------------------------------------------------------------- fusion(meta=...)
def test_fusion_meta_with_a_non_tensor_output_returned_at_once():
    ran = []

    def meta(x):
        n = x.shape[-1]
        return TensorMeta(x.shape, x.dtype), TensorMeta(x.shape[:-1], x.dtype), n

    @backend_extension(Autodiff, Numpy, Fusion)
    class Stats(lazyt.Backend):
        @fusion(meta=meta)
        def center_rows(x): ...

    @Stats.implement(Numpy)
    def center_rows(x):
        ran.append(1)
        m = x.mean(-1)
        return x - m[..., None], m, x.shape[-1]

    x = lazyt.tensor([[1.0, 2.0, 3.0], [4.0, 4.0, 7.0]])
    centered, mean, n = call("center_rows", x)
    assert n == 3 and isinstance(n, int)
    assert ran == []  # the count came from the metadata; the op is still pending
    assert centered.shape == (2, 3) and mean.shape == (2,)
    np.testing.assert_allclose(mean.numpy(), [2.0, 5.0])
    np.testing.assert_allclose(centered.numpy(), [[-1, 0, 1], [-1, -1, 2]])
    assert ran == [1]


# ---------------------------------------------------------------------- fusion(default)
@backend_extension(Autodiff, Numpy, Fusion)
class Composite(lazyt.Backend):
    @fusion(default)
    def scaled_softsign(B, x, scale):
        """scale * x / (1 + |x|), written with backend helpers: fully fusible."""
        den = B.binary(BinaryOp.ADD, B.unary(UnaryOp.ABS, x), 1.0)
        return B.binary(BinaryOp.MUL, B.binary(BinaryOp.DIV, x, den), scale)


def test_fusion_default_fuses_with_its_neighbours():
    x = lazyt.tensor(np.linspace(-2, 2, 16, dtype=np.float32))
    with lazyt.fusion.inspect() as report:
        y = (call("scaled_softsign", x * 2.0, 3.0) + 1.0).exp()
        out = y.numpy()
    xs = np.linspace(-2, 2, 16) * 2
    np.testing.assert_allclose(out, np.exp(3 * xs / (1 + np.abs(xs)) + 1), rtol=1e-5)
    assert len(report.blocks) == 1
    assert report.kernels == 1
    assert report.opaque_ops == []


def test_fusion_default_gets_gradients_and_runs_without_fusion():
    for dev in (lazyt.device("cpu"), lazyt.device("cpu", fusion=False)):
        x = lazyt.tensor(np.array([-1.5, 0.5, 2.0]), device=dev).require_grad()
        g = call("scaled_softsign", x, 2.0).sum().backward()
        xv = np.array([-1.5, 0.5, 2.0])
        np.testing.assert_allclose(g.get(x).numpy(), 2.0 / (1 + np.abs(xv)) ** 2, rtol=1e-12)


# ---------------------------------------------------------------------- hand-written Fusion impl
def test_hand_written_fusion_impl_records_a_custom_op():
    calls = []

    @backend_extension(Autodiff, Numpy)  # no Fusion: the author registers a Fusion impl
    class Hand(lazyt.Backend):
        def hand_square(x): ...

    @Hand.implement(Numpy)
    def hand_square(x):
        return x * x

    def run_square(x):  # a stable function: part of the fusion plan-cache key
        return hand_square(x)

    @Hand.implement(Fusion, name="hand_square")
    def hand_square_fusion(F, x):
        calls.append(F)
        (out,) = F.custom("hand_square", run_square, [x], [(F.shape_of(x), F.dtype_of(x))])
        return out

    with lazyt.fusion.inspect() as report:
        y = call("hand_square", lazyt.tensor([1.0, 2.0, 3.0])) + 1.0
        np.testing.assert_allclose(y.numpy(), [2.0, 5.0, 10.0])
    assert len(calls) == 1 and report.opaque_ops == ["hand_square"]
    # without the Fusion layer the base impl runs directly
    dev = lazyt.device("cpu", fusion=False)
    np.testing.assert_allclose(call("hand_square", lazyt.tensor([3.0], device=dev)).numpy(), [9])
    assert len(calls) == 1


def test_hand_written_fusion_impl_conflicts_with_fusion_selector():
    with pytest.raises(LazytError, match="leave Fusion out"):
        Composite.implement(Fusion, name="scaled_softsign")(lambda F, x, scale: x)


# ---------------------------------------------------------------------- memory-bound op
@backend_extension(Autodiff, Numpy, Fusion)
class Tanh(lazyt.Backend):
    @fusion(dtype="x", shape=lambda x, scale: x)
    def scaled_tanh(x, scale): ...


@Tanh.implement(Numpy)
def scaled_tanh(x, scale):
    return np.tanh(x * np.asarray(scale, x.dtype))


RETRO_CALLS = []


class ScaledTanhBackward(Backward, n_parents=1):
    def backward(self, ops, grads, checkpointer):
        (node,) = ops.parents
        B = ops.backend
        grad = grads.consume(ops.node)
        x_state, scale = ops.state
        t = B.scaled_tanh(checkpointer.retrieve_node_output(x_state), scale)
        d = B.binary(BinaryOp.MUL, B.binary(BinaryOp.SUB, 1.0, B.binary(BinaryOp.MUL, t, t)),
                     scale)
        grads.register(node, B.binary(BinaryOp.MUL, grad, d))


@Tanh.implement(Autodiff, name="scaled_tanh")
def scaled_tanh_autodiff(B, ckpt, x, scale):
    def retro(a):
        RETRO_CALLS.append(1)
        return B.scaled_tanh(a, scale)

    match (ScaledTanhBackward().prepare(ckpt, [x.node]).memory_bound()
           .retro_forward(retro).parents([x]).stateful()):
        case Tracked(prep):
            return prep.finish((prep.checkpoint(x), scale), B.scaled_tanh(x.primitive, scale))
        case UnTracked(prep):
            return prep.finish(B.scaled_tanh(x.primitive, scale))


@pytest.mark.parametrize("fusion_on", [False, True])
def test_memory_bound_extension_output_is_recomputed_under_balanced(fusion_on):
    xv = np.linspace(-1, 1, 8)
    results = {}
    for strategy in ("balanced", "none"):
        dev = lazyt.device("cpu", fusion=fusion_on, checkpointing=strategy)
        x = lazyt.tensor(xv, device=dev).require_grad()
        h = x * 2.0
        base = saved_tensors()
        y = call("scaled_tanh", h, 0.7)
        z = y.exp()  # exp's backward needs y: saved under none, recomputed under balanced
        saved = saved_tensors() - base
        RETRO_CALLS.clear()
        g = z.sum().backward()
        results[strategy] = (g.get(x).numpy(), saved, len(RETRO_CALLS))
    t = np.tanh(0.7 * 2 * xv)
    expected = np.exp(t) * (1 - t * t) * 0.7 * 2
    for strategy, (grad, _, _) in results.items():
        np.testing.assert_allclose(grad, expected, rtol=1e-12, err_msg=strategy)
    np.testing.assert_array_equal(results["balanced"][0], results["none"][0])
    assert results["balanced"][1] < results["none"][1]
    assert results["balanced"][2] >= 1  # y came back from the retro-forward
    assert results["none"][2] == 0


# ---------------------------------------------------------------------- failures at drain
def test_exception_at_drain_marks_dependents_failed_and_names_where():
    @backend_extension(Autodiff, Numpy, Fusion)
    class Boom(lazyt.Backend):
        @fusion(dtype="x", shape=lambda x: x)
        def boom(x): ...

    @Boom.implement(Numpy)
    def boom(x):
        raise RuntimeError("kernel exploded")

    x = lazyt.ones(3)
    y = call("boom", x) + 1.0  # recorded, not run
    z = (x * 2).sum()
    with pytest.raises(Exception) as e:
        y.numpy()
    text = f"{e.value} {e.value.__cause__}"
    assert "kernel exploded" in text and "test_extension.py" in text
    assert z.item() == 6.0  # ops not depending on it still ran
    assert (lazyt.ones(2) + 1).numpy().tolist() == [2.0, 2.0]


def test_data_dependent_op_runs_eagerly():
    @backend_extension(Autodiff, Numpy, Fusion)
    class Select(lazyt.Backend):
        @fusion(data_dependent=True)
        def positive_values(x): ...

    @Select.implement(Numpy)
    def positive_values(x):
        return x[x > 0]

    x = lazyt.tensor([-1.0, 2.0, -3.0, 4.0]) * 1.0
    out = call("positive_values", x)
    assert out.shape == (2,)
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])
