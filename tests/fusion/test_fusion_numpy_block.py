"""The numpy fused-block executor against the generic op-by-op replay of the same block:
small blocks, tiled blocks (several threads), broadcast and strided inputs, dtypes, in place.

These test the numpy program, the fallback when numba is absent, so this module turns numba off
(`LAZYT_NUMBA=0`): with it, large blocks run as numba kernels, whose float32 exp is an ulp away
from numpy's (tests/backends/test_numba_kernels.py and test_fusion_fuzz_numba.py test those)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref, run_generic
from lazyt.backends.numpy import NumpyBackend
from lazyt.backends.numpy.fused import compile_block, run_block
from lazyt.ops import BinaryOp as B, UnaryOp as U

NB = NumpyBackend()


@pytest.fixture(autouse=True)
def _numpy_programs_only(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA", "0")

f16, f32, f64, i32, boolean = lazyt.float16, lazyt.float32, lazyt.float64, lazyt.int32, \
    lazyt.bool_


def v(i):
    return Ref("v", i)


def inp(j):
    return Ref("in", j)


def sc(k):
    return Ref("sc", k)


def chain_block(shape, in_shapes, dtype=f32):
    """(a*b + c).relu()*s0 - a, exp, + s1, sqrt, maximum with s2; a where and a cast."""
    I = FusedInstr
    instrs = (
        I("binary", B.MUL, (inp(0), inp(1)), dtype),        # v0
        I("binary", B.ADD, (v(0), inp(2)), dtype),          # v1
        I("unary", U.RELU, (v(1),), dtype),                 # v2
        I("binary", B.MUL, (v(2), sc(0)), dtype),           # v3
        I("binary", B.SUB, (v(3), inp(0)), dtype),          # v4
        I("unary", U.EXP, (v(4),), dtype),                  # v5
        I("binary", B.ADD, (v(5), sc(1)), dtype),           # v6
        I("unary", U.SQRT, (v(6),), dtype),                 # v7
        I("binary", B.MAXIMUM, (v(7), sc(2)), dtype),       # v8
        I("binary", B.GT, (v(4), sc(2)), boolean),          # v9
        I("where", None, (v(9), v(8), inp(1)), dtype),      # v10
        I("cast", None, (v(10),), f64),                     # v11
        I("unary", U.SIGMOID, (v(4),), dtype),              # v12
    )
    return FusedBlock(shape=shape, inputs=tuple((s, dtype) for s in in_shapes),
                      scalars=(dtype, dtype, dtype), instrs=instrs, outputs=(8, 10, 11, 12))


def _arrays(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype.np) for s in shapes]


def _check(block, arrays, scalars):
    with np.errstate(all="ignore"):
        want = run_generic(NB, block, arrays, scalars)
    got = run_block(block, arrays, scalars)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == block.shape and g.dtype == w.dtype, k
        np.testing.assert_array_equal(g, np.broadcast_to(w, block.shape), err_msg=f"out{k}")


@pytest.mark.parametrize("shape, in_shapes", [
    ((8,), [(8,), (8,), (8,)]),
    ((), [(), (), ()]),
    ((0, 3), [(0, 3), (1, 3), (3,)]),
    ((300_000,), [(300_000,), (300_000,), (1,)]),                   # tiled, flat, threads
    ((3, 70_001), [(3, 70_001), (1, 70_001), (3, 1)]),              # tiled, broadcast rows
    ((700, 513), [(700, 513), (513,), (700, 1)]),                   # tiled over rows
    ((2, 3, 40_000), [(2, 3, 40_000), (3, 1), (1, 1, 40_000)]),
])
def test_chain_block_matches_the_generic_replay(shape, in_shapes):
    _check(chain_block(shape, in_shapes), _arrays(in_shapes, f32), [0.5, 1.0, 0.25])


def test_strided_inputs():
    a = _arrays([(513, 700)], f32)[0].T          # non-contiguous, full shape
    b, c = _arrays([(700, 513), (700, 513)], f32, seed=1)
    b = b[:, ::-1]                                # negative strides
    _check(chain_block((700, 513), [(700, 513)] * 3), [a, b, c], [2.0, -1.0, 0.0])


def test_float16_and_int_blocks():
    _check(chain_block((5000,), [(5000,)] * 3, f16), _arrays([(5000,)] * 3, f16),
           [0.5, 1.0, 0.25])
    I = FusedInstr
    block = FusedBlock(shape=(100_000,), inputs=(((100_000,), i32), ((1,), i32)),
                       scalars=(i32, i32), instrs=(
                           I("binary", B.MUL, (inp(0), sc(0)), i32),
                           I("binary", B.FLOOR_DIV, (v(0), inp(1)), i32),
                           I("binary", B.MOD, (v(1), sc(1)), i32),
                           I("unary", U.ABS, (v(2),), i32),
                           I("binary", B.EQ, (v(3), inp(1)), boolean),
                           I("unary", U.NOT, (v(4),), boolean),
                           I("full", None, (sc(1),), i32),
                       ), outputs=(3, 5, 6))
    rng = np.random.default_rng(3)
    arrays = [rng.integers(-50, 50, 100_000).astype(np.int32), np.array([3], np.int32)]
    _check(block, arrays, [7, 5])


def test_in_place_output_writes_into_the_dead_input():
    I = FusedInstr
    n = 200_000
    block = FusedBlock(shape=(n,), inputs=(((n,), f32), ((n,), f32)), scalars=(f32,),
                       instrs=(I("binary", B.MUL, (inp(0), inp(1)), f32),
                               I("unary", U.EXP, (v(0),), f32),
                               I("binary", B.ADD, (v(1), sc(0)), f32)),
                       outputs=(2,), inplace=((0, 0),))
    a, b = _arrays([(n,), (n,)], f32)
    want = np.exp(a * b) + np.float32(1.5)
    (out,) = run_block(block, [a, b], [1.5])
    assert out is a
    np.testing.assert_array_equal(out, want)


def test_in_place_is_refused_when_the_input_is_read_after_the_write():
    I = FusedInstr
    block = FusedBlock(shape=(4,), inputs=(((4,), f32),), scalars=(),
                       instrs=(I("unary", U.NEG, (inp(0),), f32),
                               I("binary", B.ADD, (v(0), inp(0)), f32)),
                       outputs=(0, 1), inplace=((0, 0),))
    assert compile_block(block).inplace == ()
    a = np.arange(4, dtype=np.float32)
    outs = run_block(block, [a.copy()], [])
    np.testing.assert_array_equal(outs[0], -a)
    np.testing.assert_array_equal(outs[1], np.zeros(4))


def test_generated_code_is_readable():
    prog = compile_block(chain_block((8,), [(8,)] * 3))
    assert prog.source.startswith("# fused block: 13 ops")
    assert "def fused_block(" in prog.source and "out=o0" in prog.source
    # 13 ops, few registers: values are reused as soon as they are dead
    assert len(prog.reg_dtypes) <= 4


def test_fused_chain_through_the_layer_on_a_large_tensor():
    dev = lazyt.device("cpu", autodiff=False)
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(600_000).astype(np.float32) for _ in range(3))
    ta, tb, tc = (lazyt.tensor(x, device=dev) for x in (a, b, c))
    got = ((((ta * tb + tc).relu() * 0.5 - ta).exp() + 1).sqrt()).numpy()
    want = np.sqrt(np.exp(np.maximum(a * b + c, 0) * np.float32(0.5) - a) + 1)
    np.testing.assert_array_equal(got, want)
