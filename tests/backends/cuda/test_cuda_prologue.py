"""The cuda backend's layer norm with a fused block in front (`layer_norm_block_rows`): the
block that computes the norm's input runs inside the row kernel, one launch, with the bits of
writing the block out first for sums, and close to numpy in float64 for every block; layouts
the kernel cannot take run the block, then the norm. Skipped where no CUDA device is present
(they run on the GPU machine)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazyt
from lazyt import Dispatch
from lazyt.fusion import inspect
from cuda_device import DEV, requires_cuda

pytestmark = requires_cuda


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def dev(v):
    return None if v is None else lazyt.tensor(v, device=DEV)


def norm(x, n_dims, w=None, b=None, eps=1e-12):
    return Dispatch.helper("layer_norm", x, n_dims, eps, w, b)


def reference(x, n_dims, w, b, eps=1e-12):
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - n_dims, x.ndim))
    m = x.mean(axes, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def gelu(x):
    return x * 0.5 * (1.0 + (x * (1 / math.sqrt(2))).erf())


BLOCKS = {   # name -> (fn of (a, r, c, one), float64 reference, whether only adds)
    "a+r": (lambda a, r, c, o: a + r, lambda a, r, c, o: a + r, True),
    "(a+bias)+r": (lambda a, r, c, o: (a + c) + r, lambda a, r, c, o: (a + c) + r, True),
    "r+(a+bias)": (lambda a, r, c, o: r + (a + c), lambda a, r, c, o: r + (a + c), True),
    "a*0.5+r": (lambda a, r, c, o: a * 0.5 + r, lambda a, r, c, o: a * 0.5 + r, False),
    "gelu(a+bias)+r": (lambda a, r, c, o: gelu(a + c) + r,
                       lambda a, r, c, o: _gelu64(a + c) + r, False),
    "a+one": (lambda a, r, c, o: a + o, lambda a, r, c, o: a + o, True),
}


def _gelu64(x):
    from math import erf
    return x * 0.5 * (1.0 + np.vectorize(erf)(x / math.sqrt(2)))


@pytest.mark.parametrize("name", list(BLOCKS))
@pytest.mark.parametrize("affine", ["both", "none"])
@pytest.mark.parametrize("n", [384, 1000, 3000])   # 3000: more than one element a lane
def test_a_block_runs_inside_the_norm_in_one_launch(name, affine, n):
    fn, ref, adds_only = BLOCKS[name]
    a, r, c, o = rnd(6, 33, n, seed=1), rnd(6, 33, n, seed=2), rnd(n, seed=3), rnd(1, seed=4)
    w = rnd(n, seed=5) if affine == "both" else None
    b = rnd(n, seed=6) if affine == "both" else None
    ta, tr, tc, to, tw, tb = (dev(v) for v in (a, r, c, o, w, b))
    lazyt.sync(DEV)
    client = DEV.base_backend.client
    before = client.launches
    with inspect() as report:
        got = norm(fn(ta, tr, tc, to), 1, tw, tb).numpy()
    assert report.kernels == 1 and report.blocks[0].outputs == 0
    assert client.launches - before == 1
    s = fn(ta, tr, tc, to)                 # the block written out, then the norm
    kept = norm(s, 1, tw, tb).numpy()
    s.numpy()
    if adds_only:
        assert np.array_equal(got, kept)
    else:
        np.testing.assert_allclose(got, kept, rtol=1e-5, atol=1e-5)
    x64 = ref(*(v.astype(np.float64) for v in (a, r, c, o)))
    np.testing.assert_allclose(got, reference(x64, 1, w, b), rtol=1e-4, atol=1e-4)


def test_two_trailing_dims_a_row_broadcast_over_the_leading_one_and_an_offset_view():
    a, r = rnd(5, 16, 48, seed=1), rnd(16, 48, seed=2)
    ta = dev(np.concatenate([np.zeros((2, 16, 48), np.float32), a]))[2:]   # an offset view
    got = norm(ta + dev(r), 2).numpy()
    np.testing.assert_allclose(got, reference(a.astype(np.float64) + r, 2, None, None),
                               rtol=1e-4, atol=1e-4)


def test_layouts_the_kernel_cannot_take_run_the_block_then_the_norm():
    a, r, col = rnd(64, 384, seed=1), rnd(384, 64, seed=2), rnd(64, 1, seed=3)
    for fn, x64 in [
        (lambda: dev(a) + dev(r).permute(1, 0), a.astype(np.float64) + r.T),    # transposed
        (lambda: dev(a) + dev(col), a.astype(np.float64) + col),               # a column
    ]:
        got = norm(fn(), 1).numpy()
        np.testing.assert_allclose(got, reference(x64, 1, None, None), rtol=1e-4, atol=1e-4)


def test_a_compiled_call_matches_the_plain_one():
    a, r, w, b = rnd(32, 128, 384, seed=1), rnd(32, 128, 384, seed=2), rnd(384, seed=3), \
        rnd(384, seed=4)
    ta, tr, tw, tb = (dev(v) for v in (a, r, w, b))

    def block(x, y):
        return norm(x + y, 1, tw, tb)

    plain = block(ta, tr).numpy()
    compiled = lazyt.compile(block)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(ta, tr).numpy(), plain)


def test_bert_embeddings_positions_repeated_over_the_batch_run_inside_the_norm():
    """words [b, t, h] + positions [1, t, h] + the token-type row [h]: the positions repeat
    every t * h elements (mode -t*h), one launch, the bits of writing the sum out first."""
    words, pos, typ = rnd(4, 16, 384, seed=1), rnd(1, 16, 384, seed=2), rnd(384, seed=3)
    w, b = rnd(384, seed=4), rnd(384, seed=5)
    tw_, tp, tt, tw, tb = (dev(v) for v in (words, pos, typ, w, b))
    lazyt.sync(DEV)
    client = DEV.base_backend.client
    before = client.launches
    got = norm(tw_ + tp + tt, 1, tw, tb).numpy()
    assert client.launches - before == 1
    s = tw_ + tp + tt
    kept = norm(s, 1, tw, tb).numpy()
    s.numpy()
    np.testing.assert_array_equal(got, kept)
    x64 = words.astype(np.float64) + pos + typ
    np.testing.assert_allclose(got, reference(x64, 1, w, b), rtol=1e-4, atol=1e-4)
    # a middle dim broadcast, dense outer and inner: not a repeat, the block runs first
    mid = rnd(4, 1, 384, seed=6)
    got = norm(tw_ + dev(mid), 1).numpy()
    np.testing.assert_allclose(got, reference(words.astype(np.float64) + mid, 1, None, None),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_index_select_rows_match_numpy(dtype):
    """Embedding lookups (`gather_rows.cu`): 16-byte rows four a thread, odd rows one."""
    rng = np.random.default_rng(0)
    for shape in [(1000, 384), (50, 3), (9, 2, 6), (7,)]:
        table = (rng.standard_normal(shape) * 100).astype(dtype)
        ids = rng.integers(0, shape[0], 300)
        t = lazyt.tensor(table, device=DEV)
        got = t.index_select(0, lazyt.tensor(ids, device=DEV)).numpy()
        np.testing.assert_array_equal(got, table[ids])
        view = t[1:]                           # an offset of a row: one a thread
        got = view.index_select(0, lazyt.tensor(ids % (shape[0] - 1), device=DEV)).numpy()
        np.testing.assert_array_equal(got, table[1:][ids % (shape[0] - 1)])
