"""Hypothesis-generated op DAGs give the same values fused and with `fusion=False`.

A program is a list of steps; each step applies one op (elementwise, broadcasting, scalars,
casts, where, reductions, matmul, movement, indexing, a mid-program read) to earlier values.
The program runs on the fused device and on the reference device with the same inputs, values
die after their last use (so fused intermediates stay virtual), and a random subset of values
is read at the end. Each program runs twice on the fused device with other input values, so
the second run goes through the plan cache. Fused execution uses the same numpy kernels in the
same order, so values must be identical, not just close.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lazyt
from lazyt.backends.base import Backend
from lazyt.backends.numpy import NumpyBackend
from lazyt.device import Device
from lazyt.fusion import Fusion

FUSED = lazyt.device("cpu", autodiff=False)
REFERENCE = lazyt.device("cpu", autodiff=False, fusion=False)
FUSED_AD = lazyt.device("cpu")
REFERENCE_AD = lazyt.device("cpu", fusion=False)
FUSED_AD_SAVE_ALL = lazyt.device("cpu", checkpointing="none")
REFERENCE_AD_SAVE_ALL = lazyt.device("cpu", fusion=False, checkpointing="none")


class _GenericNumpy(NumpyBackend):
    """numpy without its fused-block executor: blocks replay op by op (`run_generic`), the
    path every backend without its own `run_fused` takes."""

    run_fused = Backend.run_fused


# A device whose stack is Fusion over that backend (index 7 keeps it apart from cpu:0).
GENERIC = Device("cpu", 7, False, True, "none")
GENERIC._stack = Fusion(_GenericNumpy())

UNARY = ["neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "relu", "sign",
         "floor", "reciprocal", "rsqrt", "erf", "square", "gelu", "silu"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "gt", "lt", "eq"]
OTHER = ["add_s", "rsub_s", "mul_s", "div_s", "pow_s", "gt_s", "where", "where_s", "cast64",
         "cast32", "cast16", "cast_int", "sum", "mean", "max", "argmax", "prod", "matmul",
         "reshape_flat", "reshape_split", "transpose", "expand", "slice", "cat", "contiguous",
         "index_select", "gather", "softmax", "read", "zeros_like_add", "clamp"]
OPS = UNARY + BINARY + OTHER


def _broadcastable(a: tuple, b: tuple) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _floaty(x):
    return x if x.dtype.is_float else x.float()


def _apply(name: str, x, y, c: int, rng: np.random.Generator):
    """One step; falls back to a unary op when the operands do not fit the op."""
    s = ((c % 9) - 4) * 0.5 or 1.5  # a non-zero scalar from the drawn integer
    nd = x.ndim
    if name in UNARY:
        return getattr(_floaty(x), name)()
    if name in BINARY:
        if not _broadcastable(x.shape, y.shape):
            return x.tanh() if x.dtype.is_float else x.abs()
        if x.dtype is lazyt.bool_ and name in ("sub", "pow"):
            x = x.float()
        return getattr(lazyt, name)(x, y) if name in ("maximum", "minimum", "pow") else \
            getattr(x, {"gt": "__gt__", "lt": "__lt__", "eq": "__eq__"}.get(name, name))(y)
    if name == "add_s":
        return x + s
    if name == "rsub_s":
        return s - _floaty(x)
    if name == "mul_s":
        return x * s
    if name == "div_s":
        return x / s
    if name == "pow_s":
        return _floaty(x).abs() ** (c % 3 + 1)
    if name == "gt_s":
        return x > s
    if name == "where":
        if _broadcastable(x.shape, y.shape) and x.dtype is y.dtype:
            return lazyt.where(_floaty(x) > 0, x, y)
        return lazyt.where(_floaty(x) > 0, x, s if x.dtype.is_float else 1)
    if name == "where_s":
        return lazyt.where(_floaty(x) < s, 0.0 if x.dtype.is_float else 0, x)
    if name == "cast64":
        return x.double()
    if name == "cast32":
        return x.float()
    if name == "cast16":
        return x.half()
    if name == "cast_int":
        return _floaty(x).clamp(-100, 100).long()
    if name in ("sum", "mean", "max", "prod", "argmax"):
        if nd == 0:
            return getattr(x, name)()
        dim = c % nd
        if name in ("max", "argmax") and x.shape[dim] == 0:
            return x.sum(dim)
        keep = bool((c // 8) % 2)
        fn = "amax" if name == "max" else name   # max(dim) is the (values, indices) pair
        return getattr(x, fn)(dim, keepdim=keep) if c % 5 else getattr(x, name)()
    if name == "matmul":
        x = x if x.dtype is not lazyt.bool_ else x.float()
        if nd >= 2:
            return x @ x.transpose(-1, -2)
        if nd == 1:
            return x @ x
        return x * x
    if name == "reshape_flat":
        return x.reshape(-1)
    if name == "reshape_split":
        n = x.numel()
        return x.reshape(2, -1) if n % 2 == 0 and n else x.reshape(n, 1)
    if name == "transpose":
        return x.transpose(0, -1) if nd >= 2 else x.reshape(-1, 1)
    if name == "expand":
        shape = tuple(3 if d == 1 else d for d in x.shape)
        return x.expand(*shape) if shape != x.shape else x.unsqueeze(0).expand(2, *x.shape)
    if name == "slice":
        if nd and x.shape[0] > 1:
            return x[1:] if c % 2 else x[::2]
        return x[..., ::-1] if nd else x
    if name == "cat":
        if nd and y.ndim == nd and y.dtype is x.dtype and x.shape[1:] == y.shape[1:]:
            return lazyt.cat([x, y], 0)
        return lazyt.cat([x, x], -1) if nd else lazyt.stack([x, x])
    if name == "contiguous":
        return x.contiguous()
    if name == "index_select":
        if nd == 0 or x.shape[c % nd] == 0:
            return x.neg() if x.dtype is not lazyt.bool_ else x
        dim = c % nd
        idx = rng.integers(0, x.shape[dim], size=3)
        return x.index_select(dim, lazyt.tensor(idx, device=x.device))
    if name == "gather":
        if nd == 0 or 0 in x.shape:
            return x
        dim = c % nd
        idx = rng.integers(0, x.shape[dim], size=x.shape)
        return x.gather(dim, lazyt.tensor(idx, device=x.device))
    if name == "softmax":
        return _floaty(x).softmax(c % nd) if nd else _floaty(x).exp()
    if name == "zeros_like_add":
        return lazyt.zeros_like(x) + x
    if name == "clamp":
        return _floaty(x).clamp(-1.0, s if s > -1 else 1.0)
    raise AssertionError(name)


@st.composite
def programs(draw, ops=OPS, dtypes=(np.float32, np.float32, np.float64)):
    base = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    n_inputs = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n_inputs):
        drop = draw(st.integers(0, len(base)))
        mask = draw(st.lists(st.booleans(), min_size=len(base), max_size=len(base)))
        shapes.append(tuple(1 if m else d for d, m in zip(base, mask))[drop:])
    steps = draw(st.lists(st.tuples(st.sampled_from(ops), st.integers(0, 99),
                                    st.integers(0, 99), st.integers(0, 99)),
                          min_size=1, max_size=16))
    outputs = draw(st.integers(0, 2 ** 16))
    seed = draw(st.integers(0, 2 ** 31))
    dtype = draw(st.sampled_from(list(dtypes)))
    return shapes, steps, outputs, seed, dtype


def _inputs(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 1.5).astype(dtype) for s in shapes]


def _run(program, device, arrays, *, grad: bool, loss_dtype=lazyt.float64, apply=_apply):
    """Run a program; returns (outputs as numpy arrays, input gradients or None). The loss is
    summed in `loss_dtype` (float32 on devices without float64); `apply` runs one step."""
    shapes, steps, out_mask, seed, _ = program
    rng = np.random.default_rng(seed + 1)
    env = [lazyt.tensor(a, device=device) for a in arrays]
    leaves = list(env)
    if grad:
        for t in leaves:
            t.require_grad()
    # which env slot each step reads, and each slot's last read, to drop dead values
    uses = []
    n = len(env)
    for name, a, b, _ in steps:
        uses.append((a % n, b % n))
        n += 1
    total = n
    keep = {i for i in range(total) if (out_mask >> (i % 16)) & 1} | {total - 1}
    last = {}
    for k, (i, j) in enumerate(uses):
        last[i] = last[j] = k
    outputs = {}
    for k, ((name, _, _, c), (i, j)) in enumerate(zip(steps, uses)):
        x, y = env[i], env[j]
        if name == "read":
            outputs[f"read{k}"] = x.numpy().copy()
            out = x
        else:
            out = apply(name, x, y, c, rng)
        env.append(out)
        del x, y, out
        for slot in (i, j):
            if last.get(slot) == k and slot not in keep and slot >= len(arrays):
                env[slot] = None
    for i in sorted(keep):
        if env[i] is not None:
            outputs[i] = env[i]
    grads = None
    if grad:
        loss = None
        for i, t in outputs.items():
            if isinstance(t, lazyt.Tensor) and t.dtype.is_float and t.is_tracked:
                w = lazyt.tensor(np.linspace(-1, 1, max(t.numel(), 1))[:t.numel()]
                                 .reshape(t.shape), dtype=t.dtype, device=device)
                term = (t * w).sum().to(loss_dtype)
                loss = term if loss is None else loss + term
        if loss is not None:
            g = loss.backward()
            grads = [None if g.get(t) is None else g.get(t).numpy() for t in leaves]
    values = {k: (v if isinstance(v, np.ndarray) else v.numpy()) for k, v in outputs.items()}
    return values, grads


def _same(got: dict, want: dict, what: str):
    assert got.keys() == want.keys(), what
    for k in want:
        g, w = got[k], want[k]
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what} value {k}: " \
            f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
        np.testing.assert_array_equal(g, w, err_msg=f"{what} value {k}")


def check_program(program, *, grad: bool, fused=None, ref=None, same=_same,
                  loss_dtype=lazyt.float64, apply=_apply):
    """Run `program` on `fused` and `ref` (twice, other inputs) and compare values and input
    gradients with `same` (bitwise by default)."""
    shapes, _, _, seed, dtype = program
    if fused is None:
        fused, ref = (FUSED_AD, REFERENCE_AD) if grad else (FUSED, REFERENCE)
    ref = ref or REFERENCE
    for run, s in enumerate((seed, seed + 7)):  # the second run hits the plan cache
        arrays = _inputs(shapes, dtype, s)
        with np.errstate(all="ignore"):
            want, want_g = _run(program, ref, arrays, grad=grad, loss_dtype=loss_dtype,
                                apply=apply)
            got, got_g = _run(program, fused, arrays, grad=grad, loss_dtype=loss_dtype,
                              apply=apply)
        same(got, want, f"run {run}")
        if grad:
            assert (got_g is None) == (want_g is None)
            for k, (g, w) in enumerate(zip(got_g or [], want_g or [])):
                assert (g is None) == (w is None), f"grad {k}"
                if g is not None:
                    same({k: g}, {k: w}, f"run {run} grad of input")


FAST = settings(max_examples=600, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(programs())
def test_random_dags_fused_equal_unfused(program):
    check_program(program, grad=False)


@settings(FAST, max_examples=300)
@given(programs())
def test_random_dags_with_autodiff_fused_equal_unfused(program):
    check_program(program, grad=True)


@settings(FAST, max_examples=100)
@given(programs())
def test_random_dags_with_autodiff_saving_everything(program):
    check_program(program, grad=True, fused=FUSED_AD_SAVE_ALL, ref=REFERENCE_AD_SAVE_ALL)


@settings(FAST, max_examples=100)
@given(programs())
def test_random_dags_generic_block_path_equal_unfused(program):
    check_program(program, grad=False, fused=GENERIC)


@pytest.mark.slow
@settings(FAST, max_examples=10_000, derandomize=False)
@given(programs(), st.booleans())
def test_random_dags_long_run(program, grad):
    check_program(program, grad=grad)
