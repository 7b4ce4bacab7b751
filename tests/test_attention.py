"""`lazyt.scaled_dot_product_attention` (the `attention` helper) on every device stack, against
a numpy reference with torch's semantics: the default scale 1/sqrt(E), bool masks keep keys
where True, float masks are added, `is_causal` is top-left aligned, and a query that sees no
key gives zeros."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.fusion import inspect
from lazyt.testing import gradcheck

sdpa = lazyt.scaled_dot_product_attention


def reference(q, k, v, mask=None, scale=None):
    e = q.shape[-1]
    scale = (1.0 / np.sqrt(e) if e else 1.0) if scale is None else scale
    s = (q @ np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
    if mask is not None:
        s = s + (np.where(mask, 0, -np.inf).astype(q.dtype) if mask.dtype == bool else mask)
    top = s.max(-1, keepdims=True)
    dead = np.isneginf(top)
    e = np.exp(s - np.where(dead, 0, top))
    p = e / np.where(dead, 1, e.sum(-1, keepdims=True))
    return (p @ v).astype(q.dtype)


def qkv(rng, batch=(2, 3), n_q=4, n_k=5, e=8, ev=6, dtype=np.float32):
    return (rng.standard_normal(batch + (n_q, e)).astype(dtype),
            rng.standard_normal(batch + (n_k, e)).astype(dtype),
            rng.standard_normal(batch + (n_k, ev)).astype(dtype))


def on(device, *arrays):
    return [lazyt.tensor(a, device=device) for a in arrays]


@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 5), (1, 3, 4, 5), (4, 5), (4, 1),
                                        (3, 1, 5)])
def test_float_mask_broadcasts(device, check, rng, mask_shape):
    q, k, v = qkv(rng)
    mask = None if mask_shape is None else rng.standard_normal(mask_shape).astype(np.float32)
    args = on(device, q, k, v) + ([] if mask is None else on(device, mask))
    check(sdpa(*args), reference(q, k, v, mask))


def test_bool_mask_and_fully_masked_query_gives_zeros(device, check, rng):
    q, k, v = qkv(rng)
    keep = rng.random((4, 5)) > 0.4
    keep[1] = False            # query 1 sees no key
    keep[2, 3] = True
    out = sdpa(*on(device, q, k, v, keep))
    check(out, reference(q, k, v, keep))
    assert np.all(out.numpy()[:, :, 1] == 0)


def test_float_mask_of_minus_inf_gives_zeros_like_torch(device, check, rng):
    q, k, v = qkv(rng)
    mask = np.zeros((4, 5), np.float32)
    mask[2] = -np.inf
    out = sdpa(*on(device, q, k, v, mask)).numpy()
    assert np.all(out[:, :, 2] == 0) and np.isfinite(out).all()


@pytest.mark.parametrize("n_k", [1, 3, 33, 128, 130, 600])
def test_row_lengths(device, check, rng, n_k):
    """Rows shorter and longer than a workgroup, row counts that do not fill the last one."""
    q, k, v = qkv(rng, batch=(3,), n_q=7, n_k=n_k)
    keep = rng.random((3, 7, n_k)) > 0.3
    keep[1, 2] = False
    check(sdpa(*on(device, q, k, v, keep)), reference(q, k, v, keep))


def test_causal_and_scale(device, check, rng):
    q, k, v = qkv(rng, n_q=5, n_k=5)
    causal = np.tril(np.ones((5, 5), bool))
    check(sdpa(*on(device, q, k, v), is_causal=True), reference(q, k, v, causal))
    check(sdpa(*on(device, q, k, v), scale=0.25), reference(q, k, v, scale=0.25))
    # more queries than keys: each query still sees at least key 0
    q2, k2, v2 = qkv(rng, n_q=6, n_k=3)
    check(sdpa(*on(device, q2, k2, v2), is_causal=True),
          reference(q2, k2, v2, np.tril(np.ones((6, 3), bool))))


def test_batch_dims_broadcast(device, check, rng):
    q = rng.standard_normal((4, 8)).astype(np.float32)            # no batch dims
    k = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    v = rng.standard_normal((3, 5, 6)).astype(np.float32)
    out = sdpa(*on(device, q, k, v))
    assert out.shape == (2, 3, 4, 6)
    check(out, reference(q, k, v))


def test_strided_inputs_and_mask(device, check, rng):
    """Heads split from one projection (permuted views) and a transposed mask."""
    proj = rng.standard_normal((2, 5, 3, 3, 8)).astype(np.float32)   # b, t, (q k v), h, d
    mask = rng.standard_normal((5, 5)).astype(np.float32)
    t, m = on(device, proj, mask)
    q, k, v = (t[:, :, i].permute(0, 2, 1, 3) for i in range(3))
    ref = [np.transpose(proj[:, :, i], (0, 2, 1, 3)) for i in range(3)]
    check(sdpa(q, k, v, m.mT), reference(*ref, mask.T))


def test_float64(device, check, rng):
    q, k, v = qkv(rng, dtype=np.float64)
    mask = rng.standard_normal((2, 1, 4, 5))
    check(sdpa(*on(device, q, k, v, mask)), reference(q, k, v, mask))


def test_float16_computes_its_softmax_in_float32(device, check, rng):
    q, k, v = qkv(rng, dtype=np.float16)
    out = sdpa(*on(device, q, k, v))
    assert out.dtype is lazyt.float16
    ref = reference(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32))
    check(out, ref.astype(np.float16), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("sizes", [dict(n_k=0), dict(n_q=0), dict(batch=(0, 3)), dict(e=0)])
def test_empty_sizes(device, check, rng, sizes):
    q, k, v = qkv(rng, **sizes)
    if sizes.get("e") == 0:  # scores of zero: every query averages the values
        expected = np.broadcast_to(v.mean(-2, keepdims=True), (2, 3, 4, 6))
    else:
        expected = np.zeros(q.shape[:-1] + v.shape[-1:], np.float32)
    check(sdpa(*on(device, q, k, v)), expected)


def test_matches_the_composed_ops_with_tracked_inputs(device, check, rng):
    """Tracked inputs go through the primitives (Autodiff); the values match the native
    helper, and the gradients match those of the same formula written out by hand."""
    q, k, v = qkv(rng)
    mask = rng.standard_normal((2, 1, 1, 5)).astype(np.float32)
    plain = sdpa(*on(device, q, k, v, mask)).numpy()
    tq, tk, tv, tm = (t.require_grad() for t in on(device, q, k, v, mask))
    out = sdpa(tq, tk, tv, tm)
    check(out, plain)
    grads = out.sum().backward()
    tq2, tk2, tv2, tm2 = (t.require_grad() for t in on(device, q, k, v, mask))
    by_hand = ((tq2.matmul(tk2.mT) * (1 / np.sqrt(8)) + tm2).softmax(-1)).matmul(tv2)
    grads2 = by_hand.sum().backward()
    for a, b in ((tq, tq2), (tk, tk2), (tv, tv2), (tm, tm2)):
        check(grads.get(a), grads2.get(b).numpy(), rtol=1e-4, atol=1e-5)


def test_gradcheck_with_bool_mask(rng):
    dev = lazyt.device("cpu")
    q, k, v = (lazyt.tensor(a, device=dev).require_grad()
               for a in qkv(rng, batch=(2,), n_q=3, n_k=4, e=3, ev=2, dtype=np.float64))
    keep = lazyt.tensor(np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 1]], bool), device=dev)
    assert gradcheck(lambda q, k, v: sdpa(q, k, v, keep), [q, k, v])


def test_no_grad_with_tracked_inputs_runs_the_helper(rng):
    """Under no_grad tracked parameters count as plain values: one helper op is recorded."""
    dev = lazyt.device("cpu")
    q, k, v = (t.require_grad() for t in on(dev, *qkv(rng)))
    with lazyt.no_grad(), inspect() as report:
        out = sdpa(q, k, v).numpy()
    assert "attention" in report.opaque_ops and not any("softmax" in n for n in report.opaque_ops)
    assert not report.blocks
    np.testing.assert_allclose(out, reference(*(t.numpy() for t in (q, k, v))), rtol=2e-5,
                               atol=1e-6)


def test_numpy_helper_never_holds_all_scores(rng, monkeypatch):
    """The numpy helper works a block of heads and query rows at a time and gives the same
    values as the generic helper (the scores of the whole batch at once)."""
    from lazyt.backends.base import Backend
    from lazyt.backends.numpy import NumpyBackend
    q, k, v = qkv(rng, batch=(3, 4), n_q=300, n_k=200, e=16, ev=8)
    mask = np.where(rng.random((3, 1, 300, 200)) > 0.1, 0, -1e9).astype(np.float32)
    native = NumpyBackend().attention(q, k, v, mask, 0.25)
    seen = []
    real_matmul = np.matmul

    def spy(a, b, *args, **kw):
        seen.append(a.shape)
        return real_matmul(a, b, *args, **kw)

    monkeypatch.setattr(np, "matmul", spy)
    again = NumpyBackend().attention(q, k, v, mask, 0.25)
    monkeypatch.undo()
    assert max(s[-2] for s in seen) < 300          # query rows were split into blocks
    np.testing.assert_array_equal(native, again)
    generic = Backend.attention(NumpyBackend(), q, k, v, mask, 0.25)
    np.testing.assert_allclose(native, generic, rtol=1e-5, atol=1e-6)


def test_dropout(rng):
    dev = lazyt.device("cpu")
    q, k, v = on(dev, *qkv(rng))
    assert np.all(sdpa(q, k, v, dropout_p=1.0).numpy() == 0)
    lazyt.manual_seed(7)
    out = sdpa(q, k, v, dropout_p=0.5).numpy()
    lazyt.manual_seed(7)
    keep = lazyt.rand((2, 3, 4, 5), device=dev).numpy() >= 0.5
    qn, kn, vn = (t.numpy() for t in (q, k, v))
    s = qn @ np.swapaxes(kn, -1, -2) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, np.where(keep, p * 2, 0) @ vn, rtol=1e-5, atol=1e-6)
    # a query that sees no key: zeros and finite gradients with dropout too
    tq, tk, tv = (t.detach().require_grad() for t in (q, k, v))
    mask = np.ones((4, 5), bool)
    mask[2] = False
    out = sdpa(tq, tk, tv, lazyt.tensor(mask, device=dev), dropout_p=0.3)
    grads = out.sum().backward()
    assert np.all(out.numpy()[:, :, 2] == 0)
    for t in (tq, tk, tv):
        assert np.isfinite(grads.get(t).numpy()).all()


@pytest.mark.parametrize("call, error, words", [
    (lambda q, k, v: sdpa(q, k.to(lazyt.float64), v), lazyt.DTypeError, "one dtype"),
    (lambda q, k, v: sdpa(q.to(lazyt.int32), k.to(lazyt.int32), v.to(lazyt.int32)),
     lazyt.DTypeError, "floating point"),
    (lambda q, k, v: sdpa(q, k, v, q.sum(-1, keepdim=True).to(lazyt.int32)),
     lazyt.DTypeError, "attn_mask must be bool"),
    (lambda q, k, v: sdpa(q, k, v, lazyt.zeros((3, 5))), lazyt.ShapeError,
     "does not broadcast"),
    (lambda q, k, v: sdpa(q, k, v, lazyt.zeros((2, 2, 3, 4, 5))), lazyt.ShapeError,
     "does not broadcast"),
    (lambda q, k, v: sdpa(q, k[..., :3], v), lazyt.ShapeError, "[..., S, E]"),
    (lambda q, k, v: sdpa(q, k, v[..., :4, :]), lazyt.ShapeError, "[..., S, E]"),
    (lambda q, k, v: sdpa(q[0, 0, 0], k, v), lazyt.ShapeError, "rank >= 2"),
    (lambda q, k, v: sdpa(q, k, v, lazyt.ones((4, 5), dtype=lazyt.bool_), is_causal=True),
     lazyt.InvalidArgumentError, "not both"),
    (lambda q, k, v: sdpa(q, k, v, dropout_p=1.5), lazyt.InvalidArgumentError, "dropout_p"),
    (lambda q, k, v: sdpa(q.numpy(), k, v), lazyt.DTypeError, "must be a Tensor"),
])
def test_errors_name_the_op_and_leave_the_runtime_usable(rng, call, error, words):
    q, k, v = on(lazyt.device("cpu"), *qkv(rng))
    with pytest.raises(error, match="scaled_dot_product_attention") as info:
        call(q, k, v)
    assert words in str(info.value)
    np.testing.assert_allclose(sdpa(q, k, v).numpy(), reference(q.numpy(), k.numpy(),
                                                               v.numpy()), rtol=2e-5, atol=1e-6)


def test_mixed_devices_raise(rng):
    wgpu = pytest.importorskip("wgpu")  # noqa: F841
    try:
        gpu = lazyt.device("wgpu")
        gpu.backend  # noqa: B018
    except lazyt.DeviceError as e:
        pytest.skip(f"no wgpu device: {e}")
    q, k, v = qkv(rng)
    with pytest.raises(lazyt.DeviceError):
        sdpa(*on(lazyt.device("cpu"), q, k), lazyt.tensor(v, device=gpu))


def test_value_and_mask_batch_larger_than_query_key(device, check, rng):
    """The batch of v (and the mask) may exceed that of q and k: every backend sees the
    broadcast batch."""
    q = rng.standard_normal((1, 4, 8)).astype(np.float32)
    k = rng.standard_normal((1, 5, 8)).astype(np.float32)
    v = rng.standard_normal((3, 5, 6)).astype(np.float32)
    mask = rng.standard_normal((3, 4, 5)).astype(np.float32)
    check(sdpa(*on(device, q, k, v, mask)), reference(q, k, v, mask))


@pytest.mark.parametrize("sizes", [dict(n_k=0), dict(n_q=0), dict(batch=(0, 3)),
                                   dict(ev=0)])
def test_empty_sizes_keep_zero_gradients(device, rng, sizes):
    q, k, v = (t.require_grad() for t in on(device, *qkv(rng, **sizes)))
    out = sdpa(q, k, v)
    grads = (out.sum() + q.sum() + k.sum() + v.sum()).backward()
    for t in (q, k, v):
        g = grads.get(t)
        assert g is not None and g.shape == t.shape
        np.testing.assert_array_equal(g.numpy(), np.ones(t.shape, np.float32))


def test_scores_that_overflow_to_minus_inf_give_zeros(device):
    """torch's rule: a query whose every score (with the mask) is -inf gets weights of zero,
    also when the mask alone is finite."""
    q = np.full((1, 2, 4), 1e30, np.float32)
    k = np.full((1, 3, 4), -1e30, np.float32)
    v = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    out = sdpa(*on(device, q, k, v, np.zeros((2, 3), np.float32))).numpy()
    np.testing.assert_array_equal(out, np.zeros((1, 2, 2), np.float32))


def test_float16_mask_of_the_lowest_value_stays_finite(device):
    """float16 adds the mask in float32: the lowest float16 plus a score does not overflow
    into a row of -inf (torch gives the values' average here)."""
    q = np.full((1, 2, 4), 8, np.float16)
    k = np.full((1, 3, 4), -8, np.float16)
    v = np.arange(6, dtype=np.float16).reshape(1, 3, 2)
    mask = np.zeros((2, 3), np.float16)
    mask[0] = np.finfo(np.float16).min
    out = sdpa(*on(device, q, k, v, mask)).numpy()
    np.testing.assert_allclose(out[0, 0], [2, 3])


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_float32_mask_goes_with_any_query_dtype(device, check, rng, dtype):
    q, k, v = qkv(rng, dtype=dtype)
    mask = rng.standard_normal((4, 5)).astype(np.float32)
    out = sdpa(*on(device, q, k, v, mask))
    assert out.dtype is getattr(lazyt, np.dtype(dtype).name)
    ref = reference(*(a.astype(np.float64) for a in (q, k, v)), mask.astype(dtype).astype(
        np.float64))
    check(out, ref.astype(dtype), rtol=1e-2 if dtype == np.float16 else None,
          atol=1e-2 if dtype == np.float16 else None)


def test_bert_attention_keeps_mask_promotion(rng):
    """`lazyt.models.bert.scaled_dot_product_attention` adds a mask of another dtype with the
    usual promotion (as before it used the helper)."""
    from lazyt.models.bert import scaled_dot_product_attention as bert_sdpa
    q, k, v = on(lazyt.device("cpu"), *qkv(rng, dtype=np.float16))
    mask = lazyt.zeros((2, 1, 1, 5))
    assert bert_sdpa(q, k, v, mask).dtype is lazyt.float32
    q32, k32, v32 = (t.to(lazyt.float32) for t in (q, k, v))
    ones = lazyt.ones((2, 1, 1, 5), dtype=lazyt.bool_)  # a bool mask is added (+1 everywhere)
    np.testing.assert_allclose(bert_sdpa(q32, k32, v32, ones).numpy(),
                               bert_sdpa(q32, k32, v32).numpy(), rtol=1e-5, atol=1e-6)


def test_grouped_query_attention(device, rng):
    q = rng.standard_normal((2, 4, 3, 5)).astype(np.float32)
    k = rng.standard_normal((2, 2, 6, 5)).astype(np.float32)
    v = rng.standard_normal((2, 2, 6, 7)).astype(np.float32)
    t = [lazyt.tensor(a, device=device) for a in (q, k, v)]
    out = lazyt.scaled_dot_product_attention(*t, enable_gqa=True).numpy()
    kk, vv = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    s = q @ kk.transpose(0, 1, 3, 2) / np.sqrt(5)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(out, (p / p.sum(-1, keepdims=True)) @ vv, rtol=1e-5, atol=1e-5)
    with pytest.raises(lazyt.ShapeError, match="enable_gqa"):
        lazyt.scaled_dot_product_attention(t[0], lazyt.ones(2, 3, 6, 5, device=device),
                                           lazyt.ones(2, 3, 6, 7, device=device),
                                           enable_gqa=True)
    with pytest.raises(lazyt.ShapeError):          # without enable_gqa the heads must match
        lazyt.scaled_dot_product_attention(*t)


def test_grouped_query_attention_gradients(rng):
    q, k, v = (lazyt.tensor(rng.standard_normal(s), dtype=lazyt.float64).require_grad()
               for s in ((1, 4, 2, 3), (1, 2, 3, 3), (1, 2, 3, 2)))
    gradcheck(lambda a, b, c: lazyt.scaled_dot_product_attention(a, b, c, enable_gqa=True),
              [q, k, v])
