"""Every differentiable op passes `gradcheck` in float64: analytic gradients (one backward
pass) against central finite differences, on every autodiff stack (both checkpointing
strategies)."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.testing import GradcheckError, gradcheck


def inp(shape, kind="any", grad=True):
    """An input spec: float64 values of `kind` ('any', 'pos', 'nonzero', 'distinct')."""
    def make(dev, rng):
        n = int(np.prod(shape))
        if kind == "pos":
            v = rng.uniform(0.5, 2.0, shape)
        elif kind == "nonzero":
            v = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        elif kind == "distinct":  # well separated values: no ties for max/min/relu kinks
            v = (rng.permutation(n).reshape(shape) - n / 2 + 0.25) * 0.3
        else:
            v = rng.uniform(-1.5, 1.5, shape)
        t = lazyt.tensor(np.asarray(v, dtype=np.float64), device=dev)
        return t.require_grad() if grad else t
    return make


def idx(values):
    def make(dev, rng):
        return lazyt.tensor(np.asarray(values, dtype=np.int64), device=dev)
    return make


def const(value):
    return lambda dev, rng: value


CASES = [
    # ---- unary
    ("neg", lambda x: -x, [inp((3, 4))]),
    ("abs", lambda x: x.abs(), [inp((3, 4), "nonzero")]),
    ("exp", lambda x: x.exp(), [inp((3, 4))]),
    ("log", lambda x: x.log(), [inp((3, 4), "pos")]),
    ("sqrt", lambda x: x.sqrt(), [inp((3, 4), "pos")]),
    ("rsqrt", lambda x: x.rsqrt(), [inp((3, 4), "pos")]),
    ("tanh", lambda x: x.tanh(), [inp((3, 4))]),
    ("sigmoid", lambda x: x.sigmoid(), [inp((3, 4))]),
    ("sin", lambda x: x.sin(), [inp((3, 4))]),
    ("cos", lambda x: x.cos(), [inp((3, 4))]),
    ("erf", lambda x: x.erf(), [inp((3, 4))]),
    ("relu", lambda x: x.relu(), [inp((3, 4), "distinct")]),
    ("reciprocal", lambda x: x.reciprocal(), [inp((3, 4), "nonzero")]),
    ("square", lambda x: x.square(), [inp((3, 4))]),
    ("floor_ceil_sign", lambda x: x.floor() + x.ceil() * 2 + x.sign() + x,
     [inp((3, 4), "distinct")]),
    # ---- binary with broadcasting and scalars
    ("add_bcast", lambda a, b: a + b, [inp((3, 4)), inp((4,))]),
    ("sub_bcast", lambda a, b: a - b, [inp((3, 1)), inp((1, 4))]),
    ("mul_bcast", lambda a, b: a * b, [inp((2, 3, 4)), inp((3, 1))]),
    ("div_bcast", lambda a, b: a / b, [inp((2, 3, 4)), inp((2, 1, 4), "nonzero")]),
    ("mul_same", lambda a: a * a, [inp((3, 4))]),
    ("scalar_left", lambda a: 2.0 - a, [inp((3, 4))]),
    ("scalar_div_left", lambda a: 3.0 / a, [inp((3, 4), "nonzero")]),
    ("scalar_right", lambda a: (a + 1.5) * 0.5 / 4.0, [inp((3, 4))]),
    ("pow_scalar", lambda a: a ** 2.5, [inp((3, 4), "pos")]),
    ("pow_int_scalar", lambda a: a ** 3, [inp((3, 4))]),
    ("pow_zero_exponent", lambda a: a ** 0 + a, [inp((3, 4))]),
    ("rpow_scalar", lambda a: 2.0 ** a, [inp((3, 4))]),
    ("pow_tensors", lambda a, b: a ** b, [inp((3, 4), "pos"), inp((4,))]),
    ("maximum", lambda a, b: lazyt.maximum(a, b),
     [inp((3, 4), "distinct"), inp((4,), "distinct")]),
    ("minimum", lambda a, b: lazyt.minimum(a, b),
     [inp((3, 4), "distinct"), inp((3, 1), "distinct")]),
    ("clamp", lambda a: a.clamp(-0.4, 0.6), [inp((4, 5), "distinct")]),
    ("clamp_min", lambda a: a.clamp(min=0.1), [inp((4, 5), "distinct")]),
    ("mod", lambda a, b: a % b, [inp((3, 4), "distinct"), const(0.7)]),
    ("mod_tensor", lambda a, b: (a * 0.1 + 3.05) % b, [inp((3, 4)), inp((4,), "pos")]),
    ("floordiv_zero_grad", lambda a: (a // 0.7) + a, [inp((3, 4), "distinct")]),
    ("untracked_operand", lambda a, b: a * b + b, [inp((3, 4)), inp((3, 4), grad=False)]),
    ("where", lambda a, b: lazyt.where(a > 0, a * 2, b), [inp((3, 4), "distinct"), inp((4,))]),
    ("where_scalar", lambda a: lazyt.where(a > 0, a, 0.5), [inp((3, 4), "distinct")]),
    ("where_scalar_left", lambda a: lazyt.where(a > 0, 0.5, a.exp()), [inp((3, 4), "distinct")]),
    ("cast_roundtrip", lambda a: (a.float() * 3).double(), [inp((3, 4))],
     dict(eps=1e-3, rtol=1e-4, atol=1e-4)),
    # ---- reductions
    ("sum_all", lambda a: a.sum(), [inp((3, 4))]),
    ("sum_dim", lambda a: a.sum(1), [inp((2, 3, 4))]),
    ("sum_dims_keepdim", lambda a: a.sum((0, 2), keepdim=True), [inp((2, 3, 4))]),
    ("mean_dim", lambda a: a.mean(-1), [inp((2, 3, 4))]),
    ("mean_keepdim", lambda a: a.mean(0, keepdim=True) * a, [inp((2, 3))]),
    ("prod_dim", lambda a: a.prod(1), [inp((3, 4))]),
    ("prod_keepdim", lambda a: a.prod(0, keepdim=True), [inp((3, 4))]),
    ("prod_with_zeros", lambda a, z: (a * z).prod(1),
     [inp((3, 4)), lambda dev, rng: lazyt.tensor(
         np.array([[1, 0, 1, 1], [0, 1, 0, 1], [1, 1, 1, 1.0]]), device=dev)]),
    ("max_all", lambda a: a.max(), [inp((3, 4), "distinct")]),
    ("max_dim", lambda a: a.max(1).values, [inp((3, 4), "distinct")]),
    ("max_keepdim", lambda a: a.max(0, keepdim=True).values, [inp((3, 4), "distinct")]),
    ("min_dim", lambda a: a.min(-1).values, [inp((2, 3, 4), "distinct")]),
    ("min_keepdim", lambda a: a.amin((0, 2), keepdim=True), [inp((2, 3, 4), "distinct")]),
    ("var", lambda a: a.var(1), [inp((3, 5))]),
    ("var_keepdim_biased", lambda a: a.var(0, keepdim=True, correction=0), [inp((3, 5))]),
    ("var_all", lambda a: a.var(), [inp((3, 5))]),
    ("std", lambda a: a.std(-1), [inp((3, 5))]),
    ("cumsum", lambda a: a.cumsum(1) * a, [inp((3, 4))]),
    ("cumsum_dim0_3d", lambda a: a.cumsum(0), [inp((4, 2, 3))]),
    # ---- named helpers (through the primitives)
    ("softmax", lambda a: a.softmax(-1), [inp((3, 5))]),
    ("softmax_dim0", lambda a: a.softmax(0), [inp((3, 5))]),
    ("log_softmax", lambda a: a.log_softmax(1), [inp((2, 3, 4))]),
    ("gelu", lambda a: a.gelu(), [inp((3, 4))]),
    ("gelu_tanh", lambda a: a.gelu("tanh"), [inp((3, 4))]),
    ("silu", lambda a: a.silu(), [inp((3, 4))]),
    # ---- movement
    ("reshape", lambda a: a.reshape(4, 3) * lazyt.arange(3.0, device=a.device).double(),
     [inp((3, 4))]),
    ("permute", lambda a: a.permute(2, 0, 1), [inp((2, 3, 4))]),
    ("transpose_T", lambda a: a.transpose(0, 1) + a.T, [inp((3, 3))]),
    ("expand", lambda a: a.expand(2, 3, 4), [inp((3, 1))]),
    ("squeeze_unsqueeze", lambda a: a.squeeze(1).unsqueeze(0) * 2, [inp((3, 1, 4))]),
    ("flatten", lambda a: a.flatten(), [inp((2, 3, 4))]),
    ("getitem_basic", lambda a: a[1:, ::2], [inp((3, 5))]),
    ("getitem_negative_step", lambda a: a[::-1, 3:0:-2], [inp((3, 5))]),
    ("getitem_int_none", lambda a: a[1, None, :, -1], [inp((3, 4, 5))]),
    ("getitem_index_list", lambda a, i: a[:, i], [inp((3, 5)), const([4, 0, 0, 2])]),
    ("getitem_index_tensor", lambda a, i: a[i, 1:], [inp((3, 5)), idx([[2, 0], [0, 1]])]),
    ("narrow", lambda a: a.narrow(1, 1, 2), [inp((3, 4))]),
    ("cat", lambda a, b: lazyt.cat([a, b, a], 1), [inp((2, 3)), inp((2, 2))]),
    ("cat_untracked", lambda a, b: lazyt.cat([b, a], 0), [inp((2, 3)), inp((1, 3), grad=False)]),
    ("stack", lambda a, b: lazyt.stack([a, b], 1), [inp((2, 3)), inp((2, 3))]),
    ("chunk", lambda a: a.chunk(3, 1)[0] * a.chunk(3, 1)[2], [inp((2, 6))]),
    ("split", lambda a: a.split([1, 3], 0)[1].sum(0) + a.split(2, 0)[0][0], [inp((4, 3))]),
    ("contiguous", lambda a: a.T.contiguous(), [inp((3, 4))]),
    ("several_outputs", lambda a: a.chunk(2, 0), [inp((4, 3))]),
    # ---- matmul
    ("matmul", lambda a, b: a @ b, [inp((3, 4)), inp((4, 5))]),
    ("matmul_batch_broadcast", lambda a, b: a @ b, [inp((2, 1, 3, 4)), inp((5, 4, 2))]),
    ("matmul_vector", lambda a, b: a @ b, [inp((4,)), inp((2, 4, 3))]),
    ("matmul_matvec", lambda a, b: a @ b, [inp((3, 4)), inp((4,))]),
    ("matmul_one_tracked", lambda a, b: a @ b, [inp((3, 4), grad=False), inp((4, 2))]),
    # ---- indexing
    ("gather", lambda a, i: a.gather(1, i), [inp((3, 4)), idx([[0, 3], [1, 1], [2, 0]])]),
    ("index_select", lambda a, i: a.index_select(0, i), [inp((3, 4)), idx([2, 0, 2, 1])]),
    ("scatter_add", lambda a, i, s: a.scatter_add(1, i, s),
     [inp((3, 4)), idx([[0, 3], [1, 1], [2, 0]]), inp((3, 3))]),
    ("index_add", lambda a, i, s: a.index_add(0, i, s), [inp((3, 4)), idx([2, 0, 2]), inp((3, 4))]),
    ("index_add_alpha", lambda a, i, s: a.index_add(1, i, s, alpha=0.5),
     [inp((3, 4)), idx([1, 3]), inp((3, 2))]),
    # ---- compositions
    ("mlp", lambda x, w1, b1, w2: ((x @ w1 + b1).gelu() @ w2).log_softmax(-1).mean(),
     [inp((4, 3)), inp((3, 5)), inp((5,)), inp((5, 2))]),
    ("layernorm", lambda x, g: (x - x.mean(-1, keepdim=True))
     * (x.var(-1, keepdim=True, correction=0) + 1e-5).rsqrt() * g,
     [inp((3, 6)), inp((6,))]),
    ("reuse_and_accumulate", lambda a: (a.exp() * a).sum(0) + a.sum(0) * a[0], [inp((3, 4))]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradcheck(ad_device, rng, case):
    _, fn, specs, *kw = case
    inputs = [make(ad_device, rng) for make in specs]
    assert gradcheck(fn, inputs, **(kw[0] if kw else {}))


def test_gradcheck_reports_a_wrong_gradient():
    """A wrong backward is caught, naming the input, the index and both values."""
    from lazyt.autodiff import Backward, Tracked, UnTracked
    dev = lazyt.device("cpu", fusion=False)
    backend = dev.backend

    class WrongSquareBackward(Backward, n_parents=1):
        def backward(self, ops, grads, checkpointer):
            (node,) = ops.parents
            x = checkpointer.retrieve_node_output(ops.state)
            grads.register(node, ops.backend.binary(lazyt.ops.BinaryOp.MUL,
                                                    grads.consume(ops.node), x))  # missing 2*

    def wrong_square(t):
        x = backend.view(t.primitive)
        B = backend.inner
        match WrongSquareBackward().prepare(backend.ckpt, [x.node]).compute_bound().stateful():
            case Tracked(prep):
                out = prep.finish(prep.checkpoint(x), B.binary(lazyt.ops.BinaryOp.MUL, x.primitive,
                                                               x.primitive))
            case UnTracked(prep):
                out = prep.finish(B.binary(lazyt.ops.BinaryOp.MUL, x.primitive, x.primitive))
        return lazyt.Tensor(out, dev)

    x = lazyt.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), device=dev).require_grad()
    with pytest.raises(GradcheckError, match=r"input 0 .*index \(1, 1\): analytic") as info:
        gradcheck(wrong_square, [x])
    import re
    analytic, numeric = map(float, re.search(r"analytic (\S+) vs numeric (\S+)",
                                             str(info.value)).groups())
    assert analytic == pytest.approx(numeric / 2, rel=1e-6)  # the missing factor 2
    assert issubclass(GradcheckError, AssertionError)


def test_gradcheck_float32_inputs(ad_device_short, rng):
    """float32 gradients are compared with float64 finite differences at float32 tolerances."""
    x = lazyt.tensor(rng.standard_normal((3, 4)).astype(np.float32), device=ad_device_short)
    w = lazyt.tensor(rng.standard_normal((4, 2)).astype(np.float32), device=ad_device_short)
    assert gradcheck(lambda a, b: (a @ b).tanh(), [x.require_grad(), w.require_grad()])


def test_gradcheck_needs_a_tracked_input():
    x = lazyt.tensor(np.ones(3), device=lazyt.device("cpu", fusion=False))
    with pytest.raises(ValueError, match="requires grad"):
        gradcheck(lambda a: a * 2, [x])
