"""A fused block handed to the op that reads it (`PrologueStep`): the block that sums a
layer norm's input runs inside the norm's kernel when nothing else reads the sum, with the same
bits as adding first; everything else (a kept sum, a second reader, a layout or block the
backend cannot take, a failed input) keeps the old steps or their results."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.backends import fused as fused_mod
from lazyt.backends.base import Backend
from lazyt.backends.numpy import NumpyBackend, jit
from lazyt.dispatch import Dispatch
from lazyt.fusion import Fusion, inspect
from lazyt.fusion.plan import PrologueStep
from lazyt.ops import BinaryOp as B, UnaryOp as U

H = 96      # row length
LEAD = (8, 96)   # rows: enough elements for the numba row kernels (LAZYT_NUMBA_MIN)
needs_numba = pytest.mark.skipif(not jit.available(), reason="numba is not installed: the "
                                 "numpy backend runs the block, then the norm")


class Counting(NumpyBackend):
    """Counts the prologue calls that the numpy backend ran as one pass."""

    def __init__(self):
        super().__init__()
        self.fused_passes = 0
        self.fallbacks = 0

    def _sum_layer_norm(self, *args, **kwargs):
        out = super()._sum_layer_norm(*args, **kwargs)
        if out is None:
            self.fallbacks += 1
        else:
            self.fused_passes += 1
        return out


@pytest.fixture
def F():
    return Fusion(Counting())


def arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def up(F, a):
    return F.from_numpy(np.asarray(a))


def steps_of(F, run):
    """Run `run()` (which records and returns a pending tensor), then the plan's steps."""
    out = run()
    plan = F._drain()
    return out, plan.steps


def reference(x, n_dims, eps, w, b):
    """numpy's layer norm in float64 (what the float32 results are held to)."""
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - n_dims, x.ndim))
    m = x.mean(axes, keepdims=True)
    v = ((x - m) ** 2).mean(axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


CASES = [
    # (addends as (shape, kind), how they are added)
    ("a+r", lambda F, a, r, c: F.binary(B.ADD, a, r)),
    ("a+bias", lambda F, a, r, c: F.binary(B.ADD, a, c)),
    ("bias+a", lambda F, a, r, c: F.binary(B.ADD, c, a)),
    ("(a+bias)+r", lambda F, a, r, c: F.binary(B.ADD, F.binary(B.ADD, a, c), r)),
    ("r+(a+bias)", lambda F, a, r, c: F.binary(B.ADD, r, F.binary(B.ADD, a, c))),
    ("(a+r)+a", lambda F, a, r, c: F.binary(B.ADD, F.binary(B.ADD, a, r), a)),
]


@needs_numba
@pytest.mark.parametrize("name, add", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("affine", ["wb", "w", "b", "none"])
def test_a_sum_runs_inside_the_layer_norm_with_the_bits_of_adding_first(F, name, add, affine):
    a, r, c = arr(*LEAD, H, seed=1), arr(*LEAD, H, seed=2), arr(H, seed=3)
    w = arr(H, seed=4) if "w" in affine else None
    b = arr(H, seed=5) if "b" in affine else None
    ta, tr, tc = up(F, a), up(F, r), up(F, c)
    tw = None if w is None else up(F, w)
    tb = None if b is None else up(F, b)
    with inspect() as report:
        y, steps = steps_of(F, lambda: F.layer_norm(add(F, ta, tr, tc), 1, 1e-5, tw, tb))
    assert [type(s) for s in steps] == [PrologueStep]
    assert report.kernels == 1 and report.opaque_ops == ["layer_norm(n_dims=1)"]
    assert report.blocks[0].outputs == 0
    assert F.inner.fused_passes == 1 and F.inner.fallbacks == 0
    got = F.to_numpy(y)
    # the same computation with the sum kept (so written out, then normalized)
    s = add(F, ta, tr, tc)
    kept = F.layer_norm(s, 1, 1e-5, tw, tb)
    want = F.to_numpy(kept)
    F.to_numpy(s)
    assert np.array_equal(got, want)
    sum64 = F.to_numpy(s).astype(np.float64)
    np.testing.assert_allclose(got, reference(sum64, 1, 1e-5, w, b), atol=1e-5)


@needs_numba
def test_two_trailing_dims_and_a_row_of_one_leading_dim(F):
    a, r = arr(4, 128, 192, seed=1), arr(128, 192, seed=2)   # r broadcasts over the leading dim
    ta, tr = up(F, a), up(F, r)
    y, steps = steps_of(F, lambda: F.layer_norm(F.binary(B.ADD, ta, tr), 2, 1e-6))
    assert [type(s) for s in steps] == [PrologueStep] and F.inner.fused_passes == 1
    got = F.to_numpy(y)
    np.testing.assert_allclose(got, reference(a + r, 2, 1e-6, None, None), atol=1e-5)
    assert np.array_equal(got, NumpyBackend().layer_norm(a + r, 2, 1e-6))


def test_a_kept_sum_or_a_second_reader_keeps_the_block_and_the_op_apart(F):
    ta, tr = up(F, arr(*LEAD, H, seed=1)), up(F, arr(*LEAD, H, seed=2))

    def kept():
        s = F.binary(B.ADD, ta, tr)
        return s, F.layer_norm(s, 1, 1e-5)

    s, y = kept()
    plan = F._drain()
    assert not any(isinstance(st, PrologueStep) for st in plan.steps)

    def two_readers():
        s = F.binary(B.ADD, ta, tr)
        return F.binary(B.ADD, F.layer_norm(s, 1, 1e-5), F.unary(U.EXP, s))

    y2, steps = steps_of(F, two_readers)
    assert not any(isinstance(st, PrologueStep) for st in steps)
    sn = F.to_numpy(s)
    np.testing.assert_array_equal(F.to_numpy(y), NumpyBackend().layer_norm(sn, 1, 1e-5))


def test_a_block_the_backend_cannot_take_runs_first_then_the_norm(F):
    a, r = arr(*LEAD, H, seed=1), arr(*LEAD, H, seed=2)
    ta, tr = up(F, a), up(F, r)
    # a scale in the block: the plan hands it over, the numpy backend runs it as before
    y, steps = steps_of(F, lambda: F.layer_norm(
        F.binary(B.ADD, F.binary(B.MUL, ta, 0.5), tr), 1, 1e-5))
    assert [type(s) for s in steps] == [PrologueStep]
    assert F.inner.fallbacks == 1 and F.inner.fused_passes == 0
    want = NumpyBackend().layer_norm(np.float32(0.5) * a + r, 1, 1e-5)
    np.testing.assert_array_equal(F.to_numpy(y), want)
    # an addend that broadcasts along the row (a column), not as a row: run as before
    col = arr(*LEAD, 1, seed=3)
    tc = up(F, col)
    y = F.layer_norm(F.binary(B.ADD, ta, tc), 1, 1e-5)
    np.testing.assert_array_equal(F.to_numpy(y), NumpyBackend().layer_norm(a + col, 1, 1e-5))
    assert F.inner.fallbacks == 2


def test_float64_and_small_rows_fall_back_to_the_block_then_the_norm(F):
    a, r = arr(*LEAD, H, seed=1).astype(np.float64), arr(*LEAD, H, seed=2).astype(np.float64)
    y = F.layer_norm(F.binary(B.ADD, up(F, a), up(F, r)), 1, 1e-5)
    np.testing.assert_array_equal(F.to_numpy(y), NumpyBackend().layer_norm(a + r, 1, 1e-5))
    small = arr(2, 3, seed=1), arr(2, 3, seed=2)
    y = F.layer_norm(F.binary(B.ADD, up(F, small[0]), up(F, small[1])), 1, 1e-5)
    np.testing.assert_array_equal(F.to_numpy(y),
                                  NumpyBackend().layer_norm(small[0] + small[1], 1, 1e-5))


def test_a_backend_without_prologue_ops_keeps_two_steps():
    class Plain(NumpyBackend):
        prologue_ops = frozenset()

    F = Fusion(Plain())
    ta, tr = up(F, arr(*LEAD, H, seed=1)), up(F, arr(*LEAD, H, seed=2))
    y, steps = steps_of(F, lambda: F.layer_norm(F.binary(B.ADD, ta, tr), 1, 1e-5))
    assert [type(s).__name__ for s in steps] == ["BlockStep", "OpStep"]


def test_the_default_run_prologue_runs_the_block_then_the_op():
    np_b = NumpyBackend()
    block = fused_mod.FusedBlock(
        shape=(2, 3), inputs=(((2, 3), lazyt.float32), ((3,), lazyt.float32)), scalars=(),
        instrs=(fused_mod.FusedInstr("binary", B.ADD, (fused_mod.Ref("in", 0),
                                                       fused_mod.Ref("in", 1)), lazyt.float32),),
        outputs=(0,))
    a, c = arr(2, 3), arr(3)
    got = Backend.run_prologue(np_b, "layer_norm", block, [a, c], [], (1, 1e-5, None, None))
    np.testing.assert_array_equal(got, np_b.layer_norm(a + c, 1, 1e-5))


def test_summed_inputs_reads_only_sums_of_float32_inputs():
    f32, f64 = lazyt.float32, lazyt.float64
    I, V = (lambda j: fused_mod.Ref("in", j)), (lambda j: fused_mod.Ref("v", j))

    def blk(instrs, inputs=(((4,), f32),) * 3, scalars=()):
        return fused_mod.FusedBlock(shape=(4,), inputs=inputs, scalars=scalars,
                                    instrs=instrs, outputs=(len(instrs) - 1,))

    add = lambda a, b, d=f32: fused_mod.FusedInstr("binary", B.ADD, (a, b), d)  # noqa: E731
    assert fused_mod.summed_inputs(blk((add(I(0), I(1)),))) == (0, 1)
    assert fused_mod.summed_inputs(blk((add(I(2), I(0)), add(V(0), I(1))))) == (2, 0, 1)
    assert fused_mod.summed_inputs(blk((add(I(2), I(0)), add(I(1), V(0))))) == (2, 0, 1)
    assert fused_mod.summed_inputs(blk((add(I(0), I(1)), add(V(0), V(0))))) is None
    assert fused_mod.summed_inputs(blk((fused_mod.FusedInstr(
        "binary", B.MUL, (I(0), I(1)), f32),))) is None
    assert fused_mod.summed_inputs(blk((add(I(0), I(1)),),
                                       inputs=(((4,), f64),) * 2)) is None
    three = (add(I(0), I(1)), add(V(0), I(2)), add(V(1), I(0)))
    assert fused_mod.summed_inputs(blk(three)) is None


def test_a_failed_addend_fails_the_norm_and_the_layer_stays_usable(F):
    ta = up(F, arr(*LEAD, H, seed=1))

    def boom(x):
        raise ValueError("boom")

    bad = F.custom("boom", boom, [ta], [((*LEAD, H), lazyt.float32)])[0]
    y = F.layer_norm(F.binary(B.ADD, ta, bad), 1, 1e-5)
    with pytest.raises(Exception, match="boom"):
        F.to_numpy(y)
    ok = F.layer_norm(F.binary(B.ADD, ta, ta), 1, 1e-5)
    a = F.to_numpy(ta)
    np.testing.assert_array_equal(F.to_numpy(ok), NumpyBackend().layer_norm(a + a, 1, 1e-5))


def test_on_the_default_device_gradients_and_compiled_calls_agree():
    dev = lazyt.device("cpu")
    a, r = arr(*LEAD, H, seed=1), arr(*LEAD, H, seed=2)
    w, b = arr(H, seed=3), arr(H, seed=4)

    def norm(x, y, tw, tb):
        return Dispatch.helper("layer_norm", x + y, 1, 1e-5, tw, tb)

    ta, tr, tw, tb = (lazyt.tensor(v, device=dev) for v in (a, r, w, b))
    plain = norm(ta, tr, tw, tb).numpy()
    s = ta + tr
    np.testing.assert_array_equal(plain, Dispatch.helper("layer_norm", s, 1, 1e-5, tw, tb)
                                  .numpy())
    compiled = lazyt.compile(norm)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(ta, tr, tw, tb).numpy(), plain)
    # gradients through the sum: the autodiff layer keeps what the norm's backward needs
    ga, gr = (lazyt.tensor(v, device=dev, requires_grad=True) for v in (a, r))
    norm(ga, gr, tw, tb).sum().backward()
    ha, hr = (lazyt.tensor(v, device=dev, requires_grad=True) for v in (a, r))
    s = ha + hr
    Dispatch.helper("layer_norm", s, 1, 1e-5, tw, tb).sum().backward()
    np.testing.assert_array_equal(ga.grad.numpy(), ha.grad.numpy())
    np.testing.assert_array_equal(ga.grad.numpy(), gr.grad.numpy())
