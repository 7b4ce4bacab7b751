"""Replayed ops (lazyt/backends/cube/replay.py): the second call of a kernel op with the same
layouts re-issues the first call's launches on new buffers. Every test checks the values
against numpy, and that a replay happened where it should and not where it must not."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import lazyt
from lazyt import dtype as dt
from lazyt.backends.fused import FusedBlock, FusedInstr, Ref
from lazyt.ops import BinaryOp


def _mul_add_block(shape=(4, 6)):
    """out = in0 * s0 + in1"""
    return FusedBlock(shape=shape, inputs=((shape, dt.float32), (shape, dt.float32)),
                      scalars=(dt.float32,),
                      instrs=(FusedInstr("binary", BinaryOp.MUL, (Ref("in", 0), Ref("sc", 0)),
                                         dt.float32),
                              FusedInstr("binary", BinaryOp.ADD, (Ref("v", 0), Ref("in", 1)),
                                         dt.float32)),
                      outputs=(1,))


@pytest.fixture
def replaying(backend):
    """The backend with replay on and no recordings; the setting is restored after."""
    was = backend.replay
    backend.replay = True
    backend._replays.clear()
    yield backend
    backend.replay = was
    backend._replays.clear()


def test_second_call_replays_with_new_data(replaying, up, down, rng, close):
    b = replaying
    block = _mul_add_block()
    for i in range(3):
        x, y = rng.standard_normal((2, 4, 6)).astype(np.float32)
        hits = b.replay_hits
        out, = b.run_fused(block, [up(x), up(y)], [2.5])
        close(down(out), x * np.float32(2.5) + y)
        assert b.replay_hits == hits + (i > 0)


def test_scalars_layouts_and_shared_buffers_are_part_of_the_key(replaying, up, down, rng,
                                                                  close):
    b = replaying
    block = _mul_add_block()
    x, y = rng.standard_normal((2, 4, 6)).astype(np.float32)
    tx, ty = up(x), up(y)
    b.run_fused(block, [tx, ty], [2.0])
    hits = b.replay_hits
    for s in (3.0, -0.0, 0.0):  # another scalar, and zeros of both signs
        out, = b.run_fused(block, [tx, ty], [s])
        close(down(out), x * np.float32(s) + y)
        assert np.array_equal(np.signbit(down(out)), np.signbit(x * np.float32(s) + y))
    assert b.replay_hits == hits
    out, = b.run_fused(block, [tx, tx], [2.0])  # one buffer for both inputs: its own key
    close(down(out), x * 2 + x)
    xt = b.permute(up(np.ascontiguousarray(x.T)), (1, 0))  # strided: its own key
    out, = b.run_fused(block, [xt, ty], [2.0])
    close(down(out), x * 2 + y)
    assert b.replay_hits == hits
    out, = b.run_fused(block, [up(y), up(x)], [2.0])  # same key as the first call
    close(down(out), y * 2 + x)
    assert b.replay_hits == hits + 1


def test_matmul_attention_rows_and_copies_replay(replaying, up, down, rng, close):
    b = replaying
    for i in range(2):
        a = rng.standard_normal((2, 5, 8)).astype(np.float32)
        w = rng.standard_normal((3, 8)).astype(np.float32)
        bias = rng.standard_normal(3).astype(np.float32)
        close(down(b.linear(up(a), up(w), up(bias))), a @ w.T + bias, rtol=1e-5, atol=1e-5)
        q, k, v = rng.standard_normal((3, 2, 4, 8)).astype(np.float32)
        s = q @ k.swapaxes(-1, -2) * np.float32(0.5)
        p = np.exp(s - s.max(-1, keepdims=True))
        close(down(b.attention(up(q), up(k), up(v), None, 0.5)), p / p.sum(-1, keepdims=True) @ v,
              rtol=1e-5, atol=1e-5)
        close(down(b.softmax(up(q), 2)), np.exp(q) / np.exp(q).sum(-1, keepdims=True))
        close(down(b.copy(b.permute(up(q), (0, 2, 1)))), q.transpose(0, 2, 1))
    assert b.replay_hits >= 5


def test_matmul_settings_are_part_of_the_key(replaying, up, down, rng, close):
    from lazyt.backends.wgpu import codegen as cg
    b = replaying
    a, c = rng.standard_normal((2, 40, 40)).astype(np.float32)
    close(down(b.matmul(up(a), up(c))), a @ c, rtol=1e-5, atol=1e-5)
    saved = b.matmul_config
    try:
        b.matmul_config = cg.MatmulConfig(bm=16, bn=16, bk=4, tm=4, tn=4)
        hits = b.replay_hits
        close(down(b.matmul(up(a), up(c))), a @ c, rtol=1e-5, atol=1e-5)
        assert b.replay_hits == hits  # recorded anew with the new tiles
    finally:
        b.matmul_config = saved


def test_ops_with_range_checks_are_never_replayed(replaying, up, down):
    """gather checks its indices on the device: an out-of-range index must still raise."""
    b = replaying
    x = up(np.arange(6, dtype=np.float32).reshape(2, 3))
    for _ in range(2):
        idx = up(np.array([[0, 2], [1, 0]], np.int32))
        np.testing.assert_array_equal(down(b.gather(x, 1, idx)), [[0, 2], [4, 3]])
    with pytest.raises(lazyt.IndexOutOfRangeError):
        down(b.gather(x, 1, up(np.array([[0, 5], [1, 0]], np.int32))))


def test_replay_off(replaying, up, down, rng, close):
    b = replaying
    b.replay = False
    hits = b.replay_hits
    block = _mul_add_block()
    for _ in range(2):
        x, y = rng.standard_normal((2, 4, 6)).astype(np.float32)
        out, = b.run_fused(block, [up(x), up(y)], [1.5])
        close(down(out), x * np.float32(1.5) + y)
    assert b.replay_hits == hits and not b._replays


def test_threads_share_the_recordings(replaying, up, down, rng):
    b = replaying
    block = _mul_add_block((64, 32))
    data = [rng.standard_normal((2, 64, 32)).astype(np.float32) for _ in range(8)]
    errors = []

    def work(x, y):
        try:
            for _ in range(5):
                out, = b.run_fused(block, [up(x), up(y)], [3.0])
                np.testing.assert_allclose(down(out), x * 3 + y, rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(x, y)) for x, y in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_model_forward_replays_without_growing_the_pool(rng):
    """The second and later forwards replay their ops; the buffer pool stops growing."""
    from lazyt import nn
    dev = lazyt.device("wgpu")
    base = dev.base_backend
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32),
                          nn.Linear(32, 8)).to(dev)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    cpu = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 8))
    cpu.load_state_dict({k: v.to("cpu") for k, v in model.state_dict().items()})
    want = cpu(lazyt.tensor(x)).softmax(-1).numpy()
    created = []
    with lazyt.no_grad():
        for _ in range(4):
            hits = base.replay_hits
            got = model(lazyt.tensor(x, device=dev)).softmax(-1).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
            created.append(base.client.pool.created)
    assert base.replay_hits > hits
    assert created[-1] == created[-2]


def test_nan_scalars_keep_their_sign(replaying, up, down):
    """-nan and nan are different keys: each call gives the bits a plain run gives (whether
    the device keeps a NaN's sign through arithmetic is its own business)."""
    b = replaying
    block = _mul_add_block((4,))
    zeros = up(np.zeros(4, np.float32))
    scalars = (float("nan"), -float("nan"), float("nan"))
    b.replay = False
    plain = [down(b.run_fused(block, [zeros, zeros], [s])[0]).view(np.uint32) for s in scalars]
    b.replay = True
    hits = []
    for s, want in zip(scalars, plain):
        before = b.replay_hits
        np.testing.assert_array_equal(down(b.run_fused(block, [zeros, zeros], [s])[0])
                                      .view(np.uint32), want)
        hits.append(b.replay_hits - before)
    assert hits == [0, 0, 1]  # -nan did not replay nan's recording; nan again did


def test_threads_evicting_each_others_recordings(replaying, up, down, monkeypatch):
    """With room for one recording, threads replaying different keys evict each other."""
    from lazyt.backends.cube import replay
    b = replaying
    monkeypatch.setattr(replay, "MAX_RECORDINGS", 1)
    xs = [np.arange(n, dtype=np.float32) for n in (5, 6, 7, 9)]
    errors = []

    def work(x):
        try:
            t = up(x)
            for _ in range(200):
                np.testing.assert_array_equal(down(b.copy(t)), x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(b._replays) <= 1
