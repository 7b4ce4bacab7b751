"""The numpy backend's float32 attention as one numba kernel per thread (`jitattn`, taken by
pools of `ATTENTION_KERNEL_MIN_THREADS` or more; forced here): the numpy form's results to a
few ulp for every mask layout, fully masked rows (zeros), NaN rows (NaN), MiniLM's heads-last
layout, other batch ranks and head sizes, and the numpy form where it does not apply. Skipped
without numba or SciPy (numba's BLAS calls go through SciPy)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import lazyt
from lazyt.backends.numpy import backend, jit
from test_numba_attention import B, H, T, D, _masks  # the same mask layouts

pytestmark = pytest.mark.skipif(
    not jit.available() or importlib.util.find_spec("scipy") is None,
    reason="numba and SciPy are not both installed (pip install -e '.[cpu]'); the numpy form "
    "runs instead")

BASE = lazyt.device("cpu", autodiff=False).base_backend


@pytest.fixture(autouse=True)
def _kernel_on(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "1")
    monkeypatch.setattr(backend, "ATTENTION_KERNEL_MIN_THREADS", 1)


def _reference(q, k, v, mask, scale):
    s = (q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64)) * scale
    if mask is not None:
        s = s + mask
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(top), 0, top))
    with np.errstate(invalid="ignore"):
        p = e / e.sum(-1, keepdims=True)
    p = np.where(np.isneginf(top) & ~np.isnan(s).any(-1, keepdims=True), 0, p)
    return p @ v.astype(np.float64)


def _kernel(*args):
    before = jit.STATS["attention_kernel_runs"]
    out = BASE.attention(*args)
    assert jit.STATS["attention_kernel_runs"] == before + 1, "the kernel did not run"
    return out


def _numpy_form(monkeypatch, *args):
    with monkeypatch.context() as m:
        m.setattr(backend, "ATTENTION_KERNEL_MIN_THREADS", 1 << 30)
        return BASE.attention(*args)


@pytest.mark.parametrize("name", ["none", "bert", "inf", "nan", "full", "heads", "2d",
                                  "strided"])
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_matches_the_numpy_form_for_every_mask_layout(monkeypatch, name, scale):
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    mask = _masks(rng)[name]
    got = _kernel(q, k, v, mask, scale)
    want = _numpy_form(monkeypatch, q, k, v, mask, scale)
    assert got.shape == want.shape == (B, H, T, D) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(got, _reference(q, k, v, mask, scale), rtol=1e-5, atol=2e-6)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    if name == "inf":
        assert np.all(got[0, :, 3] == 0)                  # no key to attend to: zeros
    if name == "nan":
        assert np.all(np.isnan(got[1, :, 5]))             # NaN in, NaN out


def test_minilm_layout_and_more_rows_than_one_blas_block(monkeypatch):
    """Heads permuted out of [b, t, h*d], BERT's mask of the most negative float, 300 queries
    (several row blocks and a partial one) against 256 keys, d != dv."""
    rng = np.random.default_rng(8)
    b, h, tq, tk, d, dv = 2, 6, 300, 256, 32, 24
    q = rng.standard_normal((b, tq, h * d)).astype(np.float32).reshape(b, tq, h, d) \
        .transpose(0, 2, 1, 3)
    k = rng.standard_normal((b, tk, h * d)).astype(np.float32).reshape(b, tk, h, d) \
        .transpose(0, 2, 1, 3)
    v = rng.standard_normal((b, tk, h * dv)).astype(np.float32).reshape(b, tk, h, dv) \
        .transpose(0, 2, 1, 3)
    mask = np.where(rng.random((b, 1, 1, tk)) < 0.3, np.float32(-3.4e38), 0).astype(np.float32)
    got = _kernel(q, k, v, mask, 0.17)
    np.testing.assert_allclose(got, _numpy_form(monkeypatch, q, k, v, mask, 0.17), rtol=1e-5,
                               atol=2e-6)
    merged = got.swapaxes(1, 2).reshape(b, tq, h * dv)   # heads last: a free view
    assert np.shares_memory(merged, got)


@pytest.mark.parametrize("lead", [(12,), (2, 3, 4)], ids=str)
def test_other_batch_ranks(monkeypatch, lead):
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal(lead + (20, 8)).astype(np.float32) for _ in range(3))
    mask = rng.standard_normal(lead[-1:] + (20, 20)).astype(np.float32)
    got = _kernel(q, k, v, mask, 0.5)
    np.testing.assert_allclose(got, _numpy_form(monkeypatch, q, k, v, mask, 0.5), rtol=1e-5,
                               atol=2e-6)


def test_where_it_does_not_apply_the_numpy_form_runs(monkeypatch):
    """A mask broadcast along the keys, heads that are no [b, h] view, float64: the numpy form
    (same bits as with the kernel switched off)."""
    rng = np.random.default_rng(10)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    along_keys = rng.standard_normal((B, H, T, 1)).astype(np.float32)
    # lead (2, 3, 4) whose first two axes no view merges
    odd = rng.standard_normal((3, 2, 4, T, D)).astype(np.float32).transpose(1, 0, 2, 3, 4)
    cases = [(q, k, v, along_keys, 0.5),
             (odd, k[:2, :3].reshape(2, 3, 1, T, D).repeat(4, 2),
              v[:2, :3].reshape(2, 3, 1, T, D).repeat(4, 2), None, 0.5),
             (q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), None, 0.5)]
    for args in cases:
        before = jit.STATS["attention_kernel_runs"]
        got = BASE.attention(*args)
        want = _numpy_form(monkeypatch, *args)
        assert np.array_equal(got, want, equal_nan=True)
        if args[0].dtype != np.float32 or args[3] is not None or args[0].ndim == 5:
            assert jit.STATS["attention_kernel_runs"] == before


def test_small_pools_keep_the_numpy_form(monkeypatch):
    monkeypatch.setattr(backend, "ATTENTION_KERNEL_MIN_THREADS", 1 << 30)
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    before = jit.STATS["attention_kernel_runs"]
    BASE.attention(q, k, v, None, 1.0)
    assert jit.STATS["attention_kernel_runs"] == before


def test_sdpa_through_the_fusion_layer_and_autograd():
    """`lazyt.scaled_dot_product_attention` on the default device (the Fusion layer) takes
    the kernel; with gradients wanted it gives the same values, and gradients."""
    rng = np.random.default_rng(12)
    q, k, v = (rng.standard_normal((2, 3, 40, 8)).astype(np.float32) for _ in range(3))
    mask = np.where(rng.random((2, 1, 1, 40)) < 0.25, -np.inf, 0).astype(np.float32)
    want = _reference(q, k, v, mask, 8 ** -0.5)
    before = jit.STATS["attention_kernel_runs"]
    with lazyt.no_grad():
        got = lazyt.scaled_dot_product_attention(*(lazyt.tensor(a) for a in (q, k, v, mask)))
        got = got.numpy()
    assert jit.STATS["attention_kernel_runs"] > before
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    tq, tk, tv = (lazyt.tensor(a, requires_grad=True) for a in (q, k, v))
    out = lazyt.scaled_dot_product_attention(tq, tk, tv, lazyt.tensor(mask))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=2e-6)
    out.sum().backward()
    assert tq.grad is not None and np.isfinite(tq.grad.numpy()).all()
