"""The Cube backends' one-kernel attention (kernels/attention.cu on cuda, generated WGSL on
wgpu) against numpy and against the three-launch path it replaces: head widths up to
ATTENTION_MAX_D, key counts off the tile size, other blockings, strided (permuted) heads,
broadcast and full masks, rows that see no key, and the fallback for wider heads. wgpu runs
in CI (lavapipe); cuda on the GPU machine."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.errors import DeviceError
from lazyt.interop import base_value


def _device(name: str):
    try:
        dev = lazyt.device(name)
        dev.backend  # noqa: B018
        return dev
    except DeviceError:
        return None


DEVICES = {name: _device(name) for name in ("cuda", "wgpu")}


@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.skipif(
    DEVICES[name] is None, reason=f"no {name} device here (cuda runs on the GPU machine, wgpu "
                                  f"wherever a Vulkan driver is)")) for name in DEVICES])
def dev(request):
    return DEVICES[request.param]


@pytest.fixture
def backend(dev):
    return dev.base_backend


@pytest.fixture
def entries(backend, monkeypatch):
    """The entry names of the kernels launched while the test runs."""
    seen = []
    launch = backend.client.launch

    def spy(kernel, count, bindings):
        seen.append(getattr(kernel, "entry", None))
        return launch(kernel, count, bindings)

    monkeypatch.setattr(backend.client, "launch", spy)
    monkeypatch.setattr(backend, "replay", False)
    return seen


def reference(q, k, v, mask, scale):
    s = np.einsum("...qd,...kd->...qk", q.astype(np.float64), k.astype(np.float64)) * scale
    if mask is not None:
        s = s + mask
    m = s.max(-1, keepdims=True)
    dead = ~np.isfinite(m)
    e = np.where(dead, 0.0, np.exp(s - np.where(dead, 0.0, m)))
    tot = e.sum(-1, keepdims=True)
    p = np.where(tot > 0, e / np.where(tot > 0, tot, 1), 0.0)
    return np.einsum("...qk,...kd->...qd", p, v.astype(np.float64))


def _run(backend, q, k, v, mask, scale):
    t = backend.from_numpy
    out = backend.attention(t(q), t(k), t(v), None if mask is None else t(mask), scale)
    return backend.to_numpy(out)


SHAPES = [((2, 3), 16, 16, 8, 8), ((4, 12), 128, 128, 32, 32), ((2,), 70, 33, 7, 32),
          ((), 1, 1, 1, 1), ((3, 2), 129, 100, 32, 32), ((1, 1, 2), 5, 31, 3, 17),
          ((2, 2), 200, 64, 16, 24)]


@pytest.mark.parametrize("lead,lq,lk,d,dv", SHAPES)
def test_fused_attention_matches_numpy(backend, entries, lead, lq, lk, d, dv):
    rng = np.random.default_rng(lq * 7 + lk)
    q = rng.standard_normal(lead + (lq, d), dtype=np.float32)
    k = rng.standard_normal(lead + (lk, d), dtype=np.float32)
    v = rng.standard_normal(lead + (lk, dv), dtype=np.float32)
    mask = rng.standard_normal(lead + (lq, lk)).astype(np.float32)
    for m in (None, mask):
        got = _run(backend, q, k, v, m, 1 / np.sqrt(d))
        np.testing.assert_allclose(got, reference(q, k, v, m, 1 / np.sqrt(d)), rtol=2e-5,
                                   atol=2e-5)
    if backend._attention_bk(d, dv) is None:   # the block's rows overflow shared memory
        assert "attention_fused" not in entries
    else:
        assert entries.count("attention_fused") == 2 and "attention_rows" not in entries


@pytest.mark.parametrize("threads,rows,bk", [(32, 1, 8), (64, 2, 32), (256, 3, 64),
                                             (128, 4, 128)])
@pytest.mark.parametrize("lead,lq,lk,d,dv", [SHAPES[1], SHAPES[2], SHAPES[5],
                                            ((2, 2), 70, 90, 64, 64), ((3,), 33, 65, 33, 60)])
def test_every_kernel_shape_matches_numpy(backend, entries, monkeypatch, threads, rows, bk,
                                          lead, lq, lk, d, dv):
    """Other blocks (one warp to eight, 1 to 4 rows per group of lanes), tiles of 8 to 128
    keys (halved where shared memory would overflow) and heads up to 64 wide (the kernel
    takes them; the default limit keeps them off it)."""
    monkeypatch.setattr(backend, "ATTENTION_THREADS", threads)
    monkeypatch.setattr(backend, "ATTENTION_ROWS", rows)
    monkeypatch.setattr(backend, "ATTENTION_BK", bk)
    monkeypatch.setattr(backend, "ATTENTION_MAX_D", 64)
    test_fused_attention_matches_numpy(backend, entries, lead, lq, lk, d, dv)


def test_the_tile_shrinks_to_fit_shared_memory_or_the_heads_go_elsewhere(backend, entries,
                                                                      monkeypatch):
    from lazyt.backends.cube.backend import attention_tile
    assert attention_tile(32, 32, 128, 4, 64, 48 * 1024) == 64     # MiniLM's heads
    assert attention_tile(64, 64, 128, 4, 64, 48 * 1024) == 32
    assert attention_tile(512, 512, 128, 4, 64, 48 * 1024) is None
    # one float per lane and row where lanes meet in shared memory (wgpu); lavapipe's 32 KiB
    assert attention_tile(32, 32, 128, 4, 64, 48 * 1024, 1) == 64
    assert attention_tile(32, 32, 128, 4, 64, 32 * 1024, 1) == 32
    # tiles stay whole multiples of the 8 lanes that share them
    assert attention_tile(32, 32, 128, 4, 48, 24 * 1024) == 24
    assert attention_tile(32, 32, 128, 4, 48, 20 * 1024) == 8
    assert attention_tile(32, 32, 128, 4, 12, 48 * 1024) == 8
    assert backend._attention_bk(32, 32) == attention_tile(
        32, 32, 128, 4, 64, min(48 * 1024, getattr(backend.client.limits, "max_workgroup_storage",
                                                    48 * 1024)), backend.ATTENTION_LANE_SCRATCH)
    rng = np.random.default_rng(9)
    monkeypatch.setattr(backend, "ATTENTION_SMEM", 20 * 1024)     # 8 or 16 keys a tile
    assert backend._attention_bk(32, 32) in (8, 16)
    q, k, v = (rng.standard_normal((2, 3, 70, 32), dtype=np.float32) for _ in range(3))
    np.testing.assert_allclose(_run(backend, q, k, v, None, 0.2), reference(q, k, v, None, 0.2),
                               rtol=2e-5, atol=2e-5)
    assert entries[0] == "attention_fused" and "attention_rows" not in entries  # (then the
    monkeypatch.setattr(backend, "ATTENTION_SMEM", 48 * 1024)                  # read's copy)
    monkeypatch.setattr(backend, "ATTENTION_MAX_D", 1024)
    entries.clear()
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((2, 9, 512), dtype=np.float32) for _ in range(3))
    np.testing.assert_allclose(_run(backend, q, k, v, None, 0.05), reference(q, k, v, None, 0.05),
                               rtol=2e-5, atol=2e-5)
    assert "attention_fused" not in entries and "attention_rows" in entries


def test_permuted_heads_and_a_broadcast_padding_mask_as_bert(backend, entries):
    b, t, h, d = 3, 40, 4, 16
    rng = np.random.default_rng(1)
    qkv = [rng.standard_normal((b, t, h * d), dtype=np.float32) for _ in range(3)]
    keep = np.ones((b, t), np.float32)
    keep[1, 25:] = 0
    keep[2, 3:] = 0
    mask = ((1.0 - keep) * np.finfo(np.float32).min).reshape(b, 1, 1, t)
    heads = [backend.permute(backend.reshape(backend.from_numpy(x), (b, t, h, d)), (0, 2, 1, 3))
             for x in qkv]
    out = backend.attention(*heads, backend.from_numpy(mask), 0.25)
    assert out.shape == (b, h, t, d)
    # laid out as [b, t, h, d]: merging the heads back is a reshape of the buffer
    assert out.strides == (t * h * d, d, h * d, 1)
    merged = backend.to_numpy(backend.reshape(backend.permute(out, (0, 2, 1, 3)), (b, t, h * d)))
    want = reference(*[x.reshape(b, t, h, d).transpose(0, 2, 1, 3) for x in qkv], mask, 0.25)
    np.testing.assert_allclose(merged, want.transpose(0, 2, 1, 3).reshape(b, t, h * d),
                               rtol=2e-5, atol=2e-5)
    assert entries == ["attention_fused"]   # no copy of the heads in, none to merge them out


def test_heads_sliced_from_one_buffer_and_masks_of_lower_rank(backend, entries):
    """q, k and v as views at offsets into one [b, t, 3, h, d] buffer; masks passed with
    fewer dims than the scores, and broadcast over the keys."""
    b, t, h, d = 2, 33, 3, 8
    rng = np.random.default_rng(8)
    qkv = rng.standard_normal((b, t, 3, h, d), dtype=np.float32)
    whole = backend.from_numpy(qkv)
    heads = [backend.permute(backend.reshape(backend.slice(
        whole, ((0, b, 1), (0, t, 1), (i, i + 1, 1), (0, h, 1), (0, d, 1))), (b, t, h, d)),
        (0, 2, 1, 3)) for i in range(3)]
    assert heads[1].offset == h * d and heads[2].offset == 2 * h * d
    want_heads = [qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3)]
    for mask in (rng.standard_normal((t,)).astype(np.float32),
                 rng.standard_normal((t, t)).astype(np.float32),
                 rng.standard_normal((h, t, 1)).astype(np.float32),
                 rng.standard_normal((b, 1, t, t)).astype(np.float32)):
        m = backend.from_numpy(mask)
        entries.clear()
        out = backend.attention(*heads, m, 0.3)
        assert entries == ["attention_fused"], mask.shape   # (reading the heads-last
        got = backend.to_numpy(out)                         # output copies it: after)
        np.testing.assert_allclose(got, reference(*want_heads, mask, 0.3), rtol=2e-5, atol=2e-5)


def test_heads_off_16_byte_boundaries_are_read_a_float_at_a_time(dev, backend, entries,
                                                                 monkeypatch):
    """cuda: heads in memory imported from torch that starts on and off 16-byte boundaries, with
    replay on: the kernel reads whole float4s only where every row starts on a boundary,
    and a launch recorded on aligned memory is not replayed on memory that is not (the
    layouts are the same; a misaligned vector load would fault)."""
    if backend.name != "cuda":
        pytest.skip("imports memory from torch's CUDA tensors")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    monkeypatch.setattr(backend, "replay", True)
    vec = []
    template = backend._template

    def spy(stem, values, *args, **kwargs):
        if stem == "attention":
            vec.append(values["vec"])
        return template(stem, values, *args, **kwargs)

    monkeypatch.setattr(backend, "_template", spy)
    rng = np.random.default_rng(10)
    b, h, t, d = 2, 3, 20, 8
    n = b * h * t * d
    for shift in (0, 1, 0, 1, 3):
        flat = rng.standard_normal(3 * n + 3, dtype=np.float32)
        whole = torch.from_numpy(flat).cuda()
        heads = [base_value(lazyt.from_dlpack(
            whole[shift + i * n:shift + (i + 1) * n].reshape(b, h, t, d), device=dev))
            for i in range(3)]
        assert all(x.offset == 0 for x in heads)
        assert all((x.handle.ptr % 16 == 0) == (shift == 0) for x in heads)
        entries.clear()
        got = backend.to_numpy(backend.attention(*heads, None, 0.5))
        want = reference(*[flat[shift + i * n:shift + (i + 1) * n].reshape(b, h, t, d)
                           for i in range(3)], None, 0.5)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
        assert "attention_rows" not in entries
    # one recording per alignment (0, 4 and 12 bytes past a boundary); the repeats replay
    assert vec == ["true", "false", "false"]


def test_a_grid_split_over_y_reaches_every_batch_entry(backend, entries, monkeypatch):
    """70001 batch entries: more blocks than one grid dimension holds, so the block index is
    recovered from a grid split over x and y (the one block past the work returns; what it
    would compute, entry 0 again, could not show here). Blocks of one warp keep it quick on
    a software device."""
    monkeypatch.setattr(backend, "ATTENTION_THREADS", 32)
    monkeypatch.setattr(backend, "ATTENTION_ROWS", 1)
    monkeypatch.setattr(backend, "ATTENTION_BK", 8)
    rng = np.random.default_rng(6)
    q = rng.standard_normal((70001, 3, 4), dtype=np.float32)
    k = rng.standard_normal((70001, 5, 4), dtype=np.float32)
    v = rng.standard_normal((70001, 5, 4), dtype=np.float32)
    got = _run(backend, q, k, v, None, 0.5)
    np.testing.assert_allclose(got, reference(q, k, v, None, 0.5), rtol=2e-5, atol=2e-5)
    assert entries == ["attention_fused"]


def test_rows_that_see_no_key_give_zeros(backend, entries):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 37, 8), dtype=np.float32) for _ in range(3))
    mask = np.zeros((2, 37, 37), np.float32)
    mask[0, 5, :] = -np.inf       # one query row masked everywhere
    mask[1, :, 30:] = -np.inf     # the last keys masked for every row
    got = _run(backend, q, k, v, mask, 0.5)
    assert np.all(got[0, 5] == 0)
    np.testing.assert_allclose(got, reference(q, k, v, mask, 0.5), rtol=2e-5, atol=2e-5)
    assert "attention_fused" in entries


def test_fused_equals_the_three_launch_path(backend, entries, monkeypatch):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 12, 128, 32), dtype=np.float32) for _ in range(3))
    mask = np.where(rng.random((2, 1, 1, 128)) < 0.2, np.finfo(np.float32).min,
                    0).astype(np.float32)
    fused = _run(backend, q, k, v, mask, 1 / np.sqrt(32))
    assert entries.count("attention_fused") == 1 and "attention_rows" not in entries
    monkeypatch.setattr(backend, "fused_attention", False)
    plain = _run(backend, q, k, v, mask, 1 / np.sqrt(32))
    assert "attention_rows" in entries and entries.count("attention_fused") == 1
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)


def test_wider_heads_and_float64_take_the_other_paths(backend, entries):
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 9, backend.ATTENTION_MAX_D + 1), dtype=np.float32)
               for _ in range(3))
    np.testing.assert_allclose(_run(backend, q, k, v, None, 0.1), reference(q, k, v, None, 0.1),
                               rtol=2e-5, atol=2e-5)
    assert "attention_fused" not in entries and "attention_rows" in entries
    if backend.name == "wgpu":
        return                   # no float64 there
    q64, k64, v64 = (x[..., :8].astype(np.float64) for x in (q, k, v))
    np.testing.assert_allclose(_run(backend, q64, k64, v64, None, 0.1),
                               reference(q64, k64, v64, None, 0.1), rtol=1e-12, atol=1e-12)
    assert entries.count("attention_fused") == 0


def test_sdpa_through_the_front_end_with_bool_and_causal_masks(dev, entries):
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 3, 20, 16), dtype=np.float32) for _ in range(3))
    keep = rng.random((2, 1, 20, 20)) < 0.7
    keep[..., 0] = True
    tq, tk, tv = (lazyt.tensor(x, device=dev) for x in (q, k, v))
    got = lazyt.scaled_dot_product_attention(
        tq, tk, tv, lazyt.tensor(keep, device=dev)).numpy()
    want = reference(q, k, v, np.where(keep, 0.0, -np.inf), 0.25)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    causal = lazyt.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    tri = np.where(np.tril(np.ones((20, 20), bool)), 0.0, -np.inf)
    np.testing.assert_allclose(causal.numpy(), reference(q, k, v, tri, 0.25), rtol=2e-5,
                               atol=2e-5)
    assert entries.count("attention_fused") == 2


@pytest.mark.parametrize("bk", [8, 32, 64])
def test_tiles_a_padding_mask_leaves_out_are_skipped_bit_for_bit(backend, monkeypatch, bk):
    """BERT's padding mask (one row per batch entry, the dtype's lowest on padded keys; also
    -inf): tiles of keys it leaves out entirely are skipped once a live tile ran, with the
    same bits as without skipping; a row whose first tiles are all masked, a row with no live
    key at all (uniform weights, as softmax gives) and NaN-free heads stay exact."""
    monkeypatch.setattr(backend, "ATTENTION_BK", bk)
    rng = np.random.default_rng(bk)
    b, h, t, d = 6, 2, 100, 32
    q, k, v = (rng.standard_normal((b, h, t, d), dtype=np.float32) for _ in range(3))
    keep = np.zeros((b, t), bool)
    for i, n in enumerate([100, 1, 9, 40, 64]):
        keep[i, :n] = True
    keep[5, 70:] = True                               # only the last keys are live
    low = np.finfo(np.float32).min
    for fill in (low, -np.inf):
        mask = np.where(keep, 0.0, fill).astype(np.float32)[:, None, None, :]
        outs = []
        for skip in (False, True):
            monkeypatch.setattr(backend, "ATTENTION_SKIP_MASKED", skip)
            outs.append(_run(backend, q, k, v, mask, 1 / np.sqrt(d)))
        np.testing.assert_array_equal(outs[1], outs[0])
        np.testing.assert_allclose(outs[1], reference(q, k, v, mask, 1 / np.sqrt(d)),
                                   rtol=2e-5, atol=2e-5)
    dead = np.full((b, 1, 1, t), low, np.float32)     # no live key: uniform weights
    monkeypatch.setattr(backend, "ATTENTION_SKIP_MASKED", True)
    np.testing.assert_allclose(_run(backend, q, k, v, dead, 0.2),
                               np.broadcast_to(v.mean(-2, keepdims=True), v.shape),
                               rtol=2e-5, atol=2e-5)
