"""Fused elementwise blocks as one generated WGSL kernel: the vec4 and strided forms, several
outputs, scalars of every dtype, splitting when a block needs too many bindings, and blocks
recorded by the Fusion layer on `lazyt.device("wgpu")`."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lazyt
import lazyt.dtype as dt
from lazyt.backends.cube.launch import split_block
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref, run_generic
from lazyt.backends.numpy import NumpyBackend
from lazyt.ops import BinaryOp, UnaryOp

REF = NumpyBackend()
IN, SC, V = (lambda i: Ref("in", i)), (lambda i: Ref("sc", i)), (lambda i: Ref("v", i))


def chain_block(shape, in_shapes, dtype=dt.float32):
    """out0 = ((in0 * s0 + s1).relu() * in1 - s2).abs(); out1 = (out0 > in0) (bool)."""
    instrs = (
        FusedInstr("binary", BinaryOp.MUL, (IN(0), SC(0)), dtype),
        FusedInstr("binary", BinaryOp.ADD, (V(0), SC(1)), dtype),
        FusedInstr("unary", UnaryOp.RELU, (V(1),), dtype),
        FusedInstr("binary", BinaryOp.MUL, (V(2), IN(1)), dtype),
        FusedInstr("binary", BinaryOp.SUB, (V(3), SC(2)), dtype),
        FusedInstr("unary", UnaryOp.ABS, (V(4),), dtype),
        FusedInstr("binary", BinaryOp.GT, (V(5), IN(0)), dt.bool_),
    )
    return FusedBlock(shape=shape, inputs=tuple((s, dtype) for s in in_shapes),
                      scalars=(dtype, dtype, dtype), instrs=instrs, outputs=(5, 6))


def reference(block, inputs, scalars):
    return [np.asarray(x) for x in run_generic(REF, block, inputs, scalars)]


@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.int32], ids=str)
@pytest.mark.parametrize("layout", ["vec4", "broadcast", "strided", "odd-size"])
def test_fused_block_matches_op_by_op(backend, up, down, close, rng, dtype, layout):
    shape = {"vec4": (8, 16), "broadcast": (8, 16), "strided": (8, 16), "odd-size": (5, 7)}[layout]
    a = rng.uniform(-3, 3, shape).astype(dtype.np)
    b = rng.uniform(-3, 3, shape[-1:] if layout == "broadcast" else shape).astype(dtype.np)
    ta, tb = up(a), up(b)
    if layout == "strided":
        ta = backend.permute(up(np.ascontiguousarray(a.T)), (1, 0))
    block = chain_block(shape, (shape, b.shape), dtype)
    scalars = [2, 1, 3] if dtype is dt.int32 else [2.0, 1.0, 3.0]
    got = backend.run_fused(block, [ta, tb], scalars)
    want = reference(block, [a, b], scalars)
    for g, w in zip(got, want):
        close(down(g), w)
    form = (True, (False, False)) if layout == "vec4" else ()
    assert backend.client.has_kernel(backend.renderer.fused_kernel(block, *form))


def test_fused_splat_input_and_bool_and_cast(backend, up, down, close, rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    c = np.array(0.5, np.float32)                                   # 0-d: a splat input
    instrs = (
        FusedInstr("binary", BinaryOp.LT, (IN(0), IN(1)), dt.bool_),
        FusedInstr("binary", BinaryOp.AND, (V(0), SC(0)), dt.bool_),
        FusedInstr("where", None, (V(1), IN(0), SC(1)), dt.float32),
        FusedInstr("cast", None, (V(2),), dt.float16),
        FusedInstr("full", None, (SC(2),), dt.int32),
        FusedInstr("cast", None, (V(0),), dt.int32),
        FusedInstr("binary", BinaryOp.ADD, (V(4), V(5)), dt.int32),
        FusedInstr("unary", UnaryOp.ERF, (IN(0),), dt.float32),
    )
    # (int32: a block adding int64 values runs op by op on wgpu, range-checked; see below)
    block = FusedBlock(shape=(4, 8), inputs=(((4, 8), dt.float32), ((), dt.float32)),
                       scalars=(dt.bool_, dt.float32, dt.int32), instrs=instrs,
                       outputs=(3, 6, 7))
    scalars = [True, -1.5, 7]
    got = backend.run_fused(block, [up(x), up(c)], scalars)
    want = reference(block, [x, c], scalars)
    for g, w in zip(got, want):
        close(down(g), w)
    assert backend.client.has_kernel(backend.renderer.fused_kernel(block, True, (False, True)))


def test_fused_block_is_split_when_it_needs_too_many_bindings(backend, up, down, close, rng):
    n_in = 9
    xs = [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(n_in)]
    instrs = [FusedInstr("binary", BinaryOp.MUL, (IN(0), SC(0)), dt.float32)]
    for j in range(1, n_in):
        instrs.append(FusedInstr("binary", BinaryOp.ADD, (V(len(instrs) - 1), IN(j)), dt.float32))
        instrs.append(FusedInstr("unary", UnaryOp.TANH, (V(len(instrs) - 1),), dt.float32))
    block = FusedBlock(shape=(3, 5), inputs=tuple(((3, 5), dt.float32) for _ in range(n_in)),
                       scalars=(dt.float32,), instrs=tuple(instrs),
                       outputs=(3, len(instrs) - 1))
    client = backend.client
    saved = client.limits
    client.limits = dataclasses.replace(saved, max_storage_buffers=4)   # WebGPU's floor is 8
    try:
        got = backend.run_fused(block, [up(x) for x in xs], [0.5])
    finally:
        client.limits = saved
    parts = split_block(block, 4)
    assert len(parts) > 1
    assert all(len(sub.inputs) + len(sub.outputs) + 1 <= 4 for sub, _, _ in parts)
    assert all(backend.client.has_kernel(backend.renderer.fused_kernel(sub)) for sub, _, _ in parts)
    for g, w in zip(got, reference(block, xs, [0.5])):
        close(down(g), w)


def test_fused_block_with_a_failed_input_runs_what_it_can(backend, up, down, close):
    block = FusedBlock(shape=(3,), inputs=(((3,), dt.float32), ((3,), dt.float32)), scalars=(),
                       instrs=(FusedInstr("unary", UnaryOp.NEG, (IN(0),), dt.float32),
                               FusedInstr("unary", UnaryOp.NEG, (IN(1),), dt.float32)),
                       outputs=(0, 1))
    out = backend.run_fused(block, [up(np.ones(3, np.float32)), None], [])
    assert out[1] is None
    close(down(out[0]), -np.ones(3, np.float32))


def test_fusion_layer_on_wgpu_runs_one_kernel_per_block(check, rng):
    dev = lazyt.device("wgpu")
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32,)).astype(np.float32)
    x, y = lazyt.tensor(a, device=dev), lazyt.tensor(b, device=dev)
    with lazyt.fusion.inspect() as report:
        out = ((x * 2 + 1).relu() * y - 3).abs()
        check(out, np.abs(np.maximum(a * 2 + 1, 0) * b - 3))
    assert report.kernels == 1 and len(report.blocks) == 1
    z = (x.T.exp() + (x.T > 0).float() * 0.5).sigmoid()        # strided inputs
    check(z, (1 / (1 + np.exp(-(np.exp(a.T) + (a.T > 0) * 0.5)))).astype(np.float32), rtol=1e-5)


def test_fusion_fed_by_matmul_and_reduction(check, rng):
    dev = lazyt.device("wgpu")
    a = rng.standard_normal((16, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    bias = rng.standard_normal((4,)).astype(np.float32)
    x, tw, tb = (lazyt.tensor(v, device=dev) for v in (a, w, bias))
    h = (x @ tw + tb).relu()
    s = h.softmax(-1)
    e = np.maximum(a @ w + bias, 0)
    e = np.exp(e - e.max(-1, keepdims=True))
    check(s, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_float16_intermediates_round_as_numpy(backend, up, down, rng):
    """A fused block's float16 values are rounded half to even, subnormals kept, overflow to
    +-inf, NaN kept: bit for bit numpy's astype(float16) (a driver may fold a plain
    f32 -> f16 -> f32 conversion away; the kernel rounds with integer arithmetic)."""
    if not backend.client.has_f16:
        pytest.skip("the adapter has no shader-f16")
    mags = np.float32(10) ** rng.integers(-9, 6, 4000).astype(np.float32)
    h = rng.standard_normal(1000).astype(np.float16)
    half_ulp = np.spacing(np.abs(h)).astype(np.float32) / 2
    x = np.concatenate([rng.standard_normal(4000).astype(np.float32) * mags,
                        h.astype(np.float32) + half_ulp, h.astype(np.float32) - half_ulp,
                        np.array([0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520,
                                  -65520, 6.1e-5, 2.98e-8, 2.9802322e-08, 1e-9],
                                 np.float32)]).astype(np.float32)
    block = FusedBlock(shape=x.shape, inputs=((x.shape, dt.float32),), scalars=(),
                       instrs=(FusedInstr("cast", None, (Ref("in", 0),), dt.float16),
                               FusedInstr("cast", None, (Ref("v", 0),), dt.float32)),
                       outputs=(1,))
    out, = backend.run_fused(block, [up(x)], [])
    got = down(out)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()
