"""The numpy backend's float32 attention with numba: its two softmax passes
(`jitrows.scale_mask_shift_rows`: scale, mask, row maximum and shift; `normalize_rows`: the
row sum in numpy's order and the division) give the same bits as the numpy passes they replace
(`LAZYT_NUMBA=0`), for every mask layout the backend takes, fully masked rows, NaN rows, and
falls back where it does not apply. Skipped without numba (the numpy passes then run). The
one-kernel form that large pools take instead is tested in test_numba_attention_kernel.py;
here it is switched off."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.backends.numpy import jit

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed "
                                "(pip install -e '.[cpu]'); the numpy fallback runs instead")

BASE = lazyt.device("cpu", autodiff=False).base_backend


@pytest.fixture(autouse=True)
def _numpy_form(monkeypatch):
    from lazyt.backends.numpy import backend
    monkeypatch.setattr(backend, "ATTENTION_KERNEL_MIN_THREADS", 1 << 30)
B, H, T, D = 3, 4, 130, 16   # 130 keys: rows that are not a multiple of the 8 running maxima


def _masks(rng):
    bert = np.where(rng.random((B, 1, 1, T)) < 0.2, np.float32(-1e30), 0).astype(np.float32)
    inf = np.where(rng.random((B, 1, T, T)) < 0.5, -np.inf, 0).astype(np.float32)
    inf[0, 0, 3] = -np.inf                    # one query with no key left
    nan = np.zeros((B, 1, T, T), np.float32)
    nan[1, 0, 5] = -np.inf
    nan[1, 0, 5, 7] = np.nan                  # -inf everywhere but a NaN: a NaN row, not zeros
    return {"none": None, "bert": bert, "inf": inf, "nan": nan,
            "full": rng.standard_normal((B, H, T, T)).astype(np.float32),
            "heads": rng.standard_normal((1, H, T, T)).astype(np.float32),
            "2d": rng.standard_normal((T, T)).astype(np.float32),
            "strided": rng.standard_normal((B, H, T, 2 * T)).astype(np.float32)[..., ::2]}


def _run(monkeypatch, numba: bool, *args):
    monkeypatch.setenv("LAZYT_NUMBA", "1" if numba else "0")
    return BASE.attention(*args)


@pytest.mark.parametrize("name", ["none", "bert", "inf", "nan", "full", "heads", "2d",
                                  "strided"])
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_same_bits_as_the_numpy_passes(monkeypatch, name, scale):
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "1")
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    mask = _masks(rng)[name]
    want = _run(monkeypatch, False, q, k, v, mask, scale)
    got = _run(monkeypatch, True, q, k, v, mask, scale)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    from lazyt.backends.numpy import jitrows
    assert jitrows.scale_mask_shift_rows.signatures      # the numba passes did run
    assert jitrows.normalize_rows.signatures
    if name == "inf":
        assert np.all(got[0, :, 3] == 0)                  # no key to attend to: zeros
    if name == "nan":
        assert np.all(np.isnan(got[1, :, 5]))             # NaN in, NaN out, as numpy's max


def test_heads_split_out_of_a_sequence_and_a_block_of_many_rows(monkeypatch):
    """MiniLM's layout (heads permuted out of [b, t, h*d]) and more query rows than one block."""
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "1")
    rng = np.random.default_rng(8)
    b, h, t, d = 2, 12, 256, 32
    q, k, v = (rng.standard_normal((b, t, h * d)).astype(np.float32)
               .reshape(b, t, h, d).transpose(0, 2, 1, 3) for _ in range(3))
    mask = np.where(rng.random((b, 1, 1, t)) < 0.3, np.float32(-3.4e38), 0).astype(np.float32)
    want = _run(monkeypatch, False, q, k, v, mask, 0.17)
    got = _run(monkeypatch, True, q, k, v, mask, 0.17)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_mask_broadcast_along_the_keys_takes_the_numpy_passes(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "1")
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    mask = rng.standard_normal((B, H, T, 1)).astype(np.float32)
    want = _run(monkeypatch, False, q, k, v, mask, 0.5)
    got = _run(monkeypatch, True, q, k, v, mask, 0.5)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    ref = q @ k.swapaxes(-1, -2) * np.float32(0.5) + mask
    ref = np.exp(ref - ref.max(-1, keepdims=True))
    np.testing.assert_allclose(got, (ref / ref.sum(-1, keepdims=True)) @ v, rtol=1e-5,
                               atol=1e-6)


def test_through_the_tensor_api_against_numpy(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "1")
    rng = np.random.default_rng(10)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    mask = np.where(rng.random((B, 1, 1, T)) < 0.2, -np.inf, 0).astype(np.float32)
    cpu = lazyt.device("cpu")
    got = lazyt.scaled_dot_product_attention(
        *(lazyt.tensor(x, device=cpu) for x in (q, k, v)),
        attn_mask=lazyt.tensor(mask, device=cpu)).numpy()
    s = (q @ k.swapaxes(-1, -2)).astype(np.float64) / np.sqrt(D) + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(got, (p / p.sum(-1, keepdims=True)) @ v, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 127, 128, 129, 130, 257, 1000, 4096 + 13])
def test_normalize_rows_divides_by_numpys_own_sum(n):
    """The row sum follows numpy's pairwise order at every length (one block, the halves of
    a long row), so the weights are the bits of `s / s.sum(-1)`; dead rows become zeros."""
    from lazyt.backends.numpy import jitrows
    rng = np.random.default_rng(n)
    s = np.abs(rng.standard_normal((3, n)) * 50).astype(np.float32)
    want = np.divide(s, s.sum(axis=-1, keepdims=True))
    got = s.copy()
    jitrows.normalize_rows(got, np.array([0, 1, 0], np.uint8), 0, 3)
    assert np.array_equal(got[[0, 2]].view(np.uint32), want[[0, 2]].view(np.uint32))
    assert np.all(got[1] == 0)
