"""The Fusion layer on its own primitives: recording, draining, liveness, in-place reuse,
failures, custom ops, the plan cache, draw and LAZYT_DEBUG."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import lazyt
from lazyt.backends.numpy import NumpyBackend
from lazyt.errors import DTypeError, FusionError, IndexOutOfRangeError, ShapeError
from lazyt.fusion import Fusion, FusionTensor, TensorStatus, draw, inspect
from lazyt.fusion.cache import PlanCache
from lazyt.ops import BinaryOp as B, ReduceOp as R, UnaryOp as U

f32 = lazyt.float32


@pytest.fixture
def F():
    return Fusion(NumpyBackend())


def up(F, a):
    return F.from_numpy(np.asarray(a, dtype=np.float32))


# ---------------------------------------------------------------------------- recording
def test_ops_are_recorded_not_run_and_shapes_come_from_rules(F):
    x = up(F, np.ones((2, 3)))
    b = up(F, np.arange(3))
    with inspect() as report:
        y = F.binary(B.ADD, x, b)
        z = F.reduce(R.SUM, F.unary(U.EXP, y), (1,), True)
        m = F.matmul(y, F.permute(y, (1, 0)))
        c = F.binary(B.GT, z, 0.5)
        assert (y.shape, z.shape, m.shape, c.shape) == ((2, 3), (2, 1), (2, 2), (2, 1))
        assert c.dtype is lazyt.bool_ and F.reduce(R.ARGMAX, y, (1,), False).dtype is \
            lazyt.int64
        assert report.kernels == 0 and F.pending == 7
        np.testing.assert_allclose(F.to_numpy(z), np.exp(np.ones((2, 3)) + np.arange(3))
                                   .sum(1, keepdims=True), rtol=1e-6)
    assert F.pending == 0


@pytest.mark.parametrize("record, op", [
    (lambda F, x, y: F.binary(B.ADD, x, y), "add"),
    (lambda F, x, y: F.matmul(x, y), "matmul"),
    (lambda F, x, y: F.where(F.from_numpy(np.ones((2, 3), bool)), x, y), "where"),
    (lambda F, x, y: F.reshape(x, (4, 5)), "reshape"),
    (lambda F, x, y: F.expand(x, (2, 4)), "expand"),
    (lambda F, x, y: F.cat([x, y], 0), "cat"),
    (lambda F, x, y: F.permute(x, (0, 0)), "permute"),
])
def test_shape_errors_are_raised_at_record_time_naming_the_op(F, record, op):
    x = up(F, np.ones((2, 3)))
    y = up(F, np.ones((4, 2)))
    before = F.pending
    with pytest.raises(ShapeError, match=op):
        record(F, x, y)
    assert F.pending == before  # nothing recorded


def test_dtype_errors_at_record_time(F):
    x = up(F, np.ones(3))
    i = F.from_numpy(np.arange(3))
    with pytest.raises(DTypeError, match="add"):
        F.binary(B.ADD, x, i)
    with pytest.raises(DTypeError, match="where"):
        F.where(x, x, x)
    with pytest.raises(DTypeError, match="int64"):
        F.gather(x, 0, F.cast(i, lazyt.int32))


def test_sync_and_the_size_bound_drain():
    F = Fusion(NumpyBackend(), max_ops=10)
    x = up(F, np.ones(4))
    y = x
    for _ in range(9):
        y = F.binary(B.ADD, y, 1.0)
    assert F.pending == 9
    y = F.binary(B.ADD, y, 1.0)  # the tenth op reaches the bound
    assert F.pending == 0
    np.testing.assert_array_equal(F.to_numpy(y), np.full(4, 11, np.float32))
    z = F.binary(B.MUL, y, 2.0)
    assert F.pending == 1
    F.sync()
    assert F.pending == 0 and z.id in F.handles.values


def test_lazyt_sync_drains_every_device():
    dev = lazyt.device("cpu", autodiff=False)
    x = lazyt.tensor([1.0, 2.0], device=dev) * 3
    fusion = dev.backend
    assert fusion.pending >= 1
    lazyt.sync()
    assert fusion.pending == 0
    np.testing.assert_array_equal(x.numpy(), [3, 6])


# ---------------------------------------------------------------------------- liveness
def test_dead_intermediates_are_never_materialized(F):
    x = up(F, np.arange(5))
    a = F.binary(B.MUL, x, 2.0)
    b = F.unary(U.EXP, a)
    c = F.binary(B.ADD, b, a)
    ids = (a.id, b.id)
    del a, b
    np.testing.assert_allclose(F.to_numpy(c), np.exp(np.arange(5) * 2) + np.arange(5) * 2,
                               rtol=1e-6)
    assert not any(i in F.handles.values for i in ids)
    assert c.id in F.handles.values


def test_a_dead_tensor_is_freed_at_the_next_safe_point(F):
    x = up(F, np.arange(5))
    y = F.binary(B.ADD, x, 1.0)
    F.sync()
    tid = y.id
    assert tid in F.handles.values
    del y
    gc.collect()
    assert tid in F.handles.values  # released, but only queued
    F.unary(U.NEG, x)               # recording processes the queue only once it is long
    F.sync()                        # a safe point: the queue is processed
    assert tid not in F.handles.values and tid not in F.handles.counts
    assert tid not in F.handles.refs


def test_a_tensor_read_by_the_pending_stream_survives_its_holder(F):
    x = up(F, np.arange(4))
    y = F.binary(B.MUL, x, 3.0)
    F.sync()
    z = F.binary(B.SUB, y, 1.0)
    del y
    gc.collect()
    np.testing.assert_array_equal(F.to_numpy(z), np.arange(4) * 3 - 1)


def test_held_state_is_never_overwritten_in_place(F):
    x = up(F, np.arange(6))
    y = F.binary(B.MUL, x, 2.0)
    saved = [y]  # like saved autodiff state: a holder of y
    F.sync()
    y_buf = F.handles.values[y.id]
    z = F.binary(B.ADD, y, 1.0)
    del y
    F.sync()
    assert F.handles.values[z.id] is not y_buf
    np.testing.assert_array_equal(F.to_numpy(saved[0]), np.arange(6) * 2)
    np.testing.assert_array_equal(F.to_numpy(z), np.arange(6) * 2 + 1)


def test_a_dead_owned_buffer_is_reused_in_place(F):
    x = up(F, np.arange(6))
    y = F.binary(B.MUL, x, 2.0)
    F.sync()
    y_buf = F.handles.values[y.id]
    z = F.binary(B.ADD, y, 1.0)
    stream_ir = F.stream.irs[F.stream.seen[y.id]]
    del y
    F.sync()
    assert stream_ir.status is TensorStatus.READ_WRITE
    assert F.handles.values[z.id] is y_buf  # written into the dead input's buffer
    np.testing.assert_array_equal(F.to_numpy(z), np.arange(6) * 2 + 1)


def test_exported_and_uploaded_buffers_are_never_reused(F):
    host = np.arange(6, dtype=np.float32)
    x = F.from_numpy(host)      # numpy's from_numpy keeps the caller's array
    y = F.binary(B.MUL, x, 2.0)
    exported = F.to_numpy(y)    # the caller now holds y's buffer
    z = F.binary(B.ADD, y, 1.0)
    w = F.binary(B.ADD, x, 1.0)
    del x, y
    F.sync()
    np.testing.assert_array_equal(exported, np.arange(6) * 2)
    np.testing.assert_array_equal(host, np.arange(6))
    np.testing.assert_array_equal(F.to_numpy(z), np.arange(6) * 2 + 1)
    np.testing.assert_array_equal(F.to_numpy(w), np.arange(6) + 1)


def test_a_buffer_read_after_its_first_use_in_the_stream_is_not_reused(F):
    x = up(F, np.arange(6))
    y = F.binary(B.MUL, x, 2.0)
    F.sync()
    z = F.binary(B.ADD, y, 1.0)  # y enters the stream while the runtime still owns it
    exported = F.to_numpy(y)     # a read: no drain needed, y has a value; now it is shared
    del y
    F.sync()
    np.testing.assert_array_equal(exported, np.arange(6) * 2)
    np.testing.assert_array_equal(F.to_numpy(z), np.arange(6) * 2 + 1)


def test_a_buffer_viewed_by_a_movement_op_is_not_reused(F):
    x = up(F, np.arange(6))
    t = F.binary(B.MUL, x, 2.0)
    F.sync()
    v = F.reshape(t, (2, 3))     # numpy: a view of t's buffer
    F.sync()
    w = F.binary(B.ADD, t, 1.0)
    del t
    F.sync()
    np.testing.assert_array_equal(F.to_numpy(v), (np.arange(6) * 2).reshape(2, 3))
    np.testing.assert_array_equal(F.to_numpy(w), np.arange(6) * 2 + 1)


def test_liveness_counts_and_finalizers(F):
    x = up(F, [1.0])
    assert isinstance(x, FusionTensor) and F.handles.counts[x.id] == 1
    F.handles.retain(x.id)
    tid = x.id
    del x
    gc.collect()
    F.handles.process({})
    assert F.handles.counts[tid] == 1  # one holder left
    F.handles.released.append(tid)
    F.handles.process({})
    assert tid not in F.handles.counts and tid not in F.handles.values


# ---------------------------------------------------------------------------- failures
def _boom(x):
    raise ValueError("kernel exploded")


def test_a_failing_op_fails_its_dependents_on_read_and_the_layer_stays_usable(F):
    x = up(F, np.arange(3))
    (bad,) = F.custom("boom", _boom, [x], [((3,), f32)])
    dep = F.binary(B.ADD, bad, 1.0)
    dep2 = F.unary(U.EXP, dep)
    indep = F.binary(B.MUL, x, 2.0)
    F.sync()  # the failure does not surface here
    np.testing.assert_array_equal(F.to_numpy(indep), np.arange(3) * 2)
    for t in (bad, dep, dep2):
        with pytest.raises(FusionError, match="boom") as info:
            F.to_numpy(t)
        assert isinstance(info.value, ValueError)  # also the original error's class
        assert "test_fusion_layer.py" in str(info.value)  # where the op was recorded
        assert isinstance(info.value.__cause__, ValueError)
    later = F.binary(B.ADD, dep, 5.0)  # recorded after the failure: fails too
    with pytest.raises(FusionError):
        F.to_numpy(later)
    ok = F.binary(B.ADD, indep, 1.0)
    np.testing.assert_array_equal(F.to_numpy(ok), np.arange(3) * 2 + 1)


def test_a_block_with_one_failed_input_still_computes_independent_outputs(F):
    x = up(F, np.arange(3))
    (bad,) = F.custom("boom", _boom, [x], [((3,), f32)])
    a = F.binary(B.MUL, x, 3.0)      # independent of bad
    b = F.binary(B.ADD, bad, a)      # depends on bad
    c = F.binary(B.ADD, a, 1.0)
    F.sync()
    np.testing.assert_array_equal(F.to_numpy(c), np.arange(3) * 3 + 1)
    np.testing.assert_array_equal(F.to_numpy(a), np.arange(3) * 3)
    with pytest.raises(FusionError):
        F.to_numpy(b)


def test_index_errors_surface_on_read_with_their_type():
    dev = lazyt.device("cpu", autodiff=False)
    x = lazyt.tensor(np.arange(4.0), device=dev)
    # an index made by pending ops: its values are known only when they run
    y = x.index_select(0, lazyt.tensor([0, 4], device=dev) * 2 + 1)
    with pytest.raises(IndexOutOfRangeError, match="index_select"):
        y.numpy()
    np.testing.assert_array_equal((x + 1).numpy(), np.arange(4.0) + 1)


def test_recording_while_draining_raises(F):
    x = up(F, np.arange(3))

    def sneaky(p):
        return F.binary(B.ADD, x, 1.0)  # calls the layer instead of base primitives

    (y,) = F.custom("sneaky", sneaky, [x], [((3,), f32)])
    with pytest.raises(FusionError, match="while it runs its pending ops"):
        F.to_numpy(y)


# ---------------------------------------------------------------------------- custom ops
def _affine(x, w, scale):
    return x @ w * scale, (x * scale).sum(0)


def test_custom_op_with_two_outputs_and_scalar_args_fuses_with_its_neighbours(F):
    rng = np.random.default_rng(0)
    nx_, nw = rng.standard_normal((4, 3)).astype(np.float32), \
        rng.standard_normal((3, 2)).astype(np.float32)
    x, w = F.from_numpy(nx_), F.from_numpy(nw)
    with inspect() as report:
        h = F.unary(U.TANH, F.binary(B.ADD, x, 1.0))
        y, s = F.custom("affine", _affine, [h, w], [((4, 2), f32), ((3,), f32)], (0.5,))
        out = F.binary(B.MUL, F.unary(U.RELU, y), 2.0)
        got, got_s = F.to_numpy(out), F.to_numpy(s)
    hn = np.tanh(nx_ + 1)
    np.testing.assert_allclose(got, np.maximum(hn @ nw * 0.5, 0) * 2, rtol=1e-5)
    np.testing.assert_allclose(got_s, (hn * 0.5).sum(0), rtol=1e-5)
    assert report.opaque_ops == ["affine"]
    assert [b.ops for b in report.blocks] == [("add", "tanh"), ("relu", "mul")]
    # other scalar values reuse the plan
    with inspect() as again:
        h = F.unary(U.TANH, F.binary(B.ADD, x, 1.0))
        y, s = F.custom("affine", _affine, [h, w], [((4, 2), f32), ((3,), f32)], (2.0,))
        F.to_numpy(F.binary(B.MUL, F.unary(U.RELU, y), 2.0))
    assert again.cache_hits == 1


def test_eager_runs_data_dependent_ops_now(F):
    x = F.binary(B.SUB, up(F, np.arange(6)), 2.0)
    nz = F.eager(lambda a: np.flatnonzero(a > 0).astype(np.int64), [x])
    assert nz.shape == (3,) and nz.dtype is lazyt.int64
    np.testing.assert_array_equal(F.to_numpy(nz), [3, 4, 5])


def test_wrong_output_count_from_a_custom_op_fails_cleanly(F):
    x = up(F, np.arange(3))
    a, b = F.custom("two", lambda p: p, [x], [((3,), f32), ((3,), f32)])
    with pytest.raises(FusionError, match="declares 2"):
        F.to_numpy(a)


# ---------------------------------------------------------------------------- plan cache
def test_plan_cache_is_lru_bounded_and_counts():
    cache = PlanCache(maxsize=2)
    keys = [((("k",) * n,), (), ()) for n in (1, 2, 3)]
    for k in keys:
        assert cache.get(k) is None
        cache.put(k, object())
    assert len(cache) == 2 and cache.get(keys[0]) is None and cache.get(keys[2]) is not None
    assert (cache.hits, cache.misses) == (1, 4)


def test_plan_key_ignores_values_ids_and_scalars_but_not_liveness(F):
    def run(value, scalar, keep):
        x = up(F, np.full(3, value))
        a = F.binary(B.MUL, x, scalar)
        b = F.unary(U.EXP, a)
        held = [a] if keep else []
        del a
        out = F.to_numpy(b)
        return out, held

    run(1.0, 2.0, False)
    hits = F.cache.hits
    out, _ = run(3.0, -1.0, False)
    assert F.cache.hits == hits + 1
    np.testing.assert_allclose(out, np.exp(np.full(3, -3.0)), rtol=1e-6)
    misses = F.cache.misses
    out, (a,) = run(3.0, 0.5, True)  # `a` alive: another mask, another plan
    assert F.cache.misses == misses + 1
    np.testing.assert_allclose(F.to_numpy(a), np.full(3, 1.5))


def test_a_cache_hit_runs_no_graph_analysis(F, monkeypatch):
    import lazyt.fusion.backend as backend_module

    def chain(v):
        x = up(F, np.full(4, v))
        return F.to_numpy(F.unary(U.SQRT, F.binary(B.ADD, F.binary(B.MUL, x, x), 1.0)))

    chain(1.0)

    def no_analysis(*args):
        raise AssertionError("the optimizer ran on a cache hit")

    monkeypatch.setattr(backend_module, "build_plan", no_analysis)
    np.testing.assert_allclose(chain(2.0), np.sqrt(np.full(4, 5.0)), rtol=1e-6)


# ---------------------------------------------------------------------------- threads
def test_two_threads_recording_on_one_layer():
    dev = lazyt.device("cpu", autodiff=False)
    errors = []

    def work(k):
        try:
            for i in range(50):
                x = lazyt.tensor(np.full(16, float(k + i), np.float32), device=dev)
                y = ((x * 2 + 1).relu() - x).numpy()
                np.testing.assert_array_equal(y, np.full(16, k + i + 1, np.float32))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# ---------------------------------------------------------------------------- draw, debug
def test_draw_writes_the_pending_graph_as_dot(tmp_path):
    dev = lazyt.device("cpu", autodiff=False)
    x = lazyt.tensor(np.ones((2, 2), np.float32), device=dev)
    y = (x.exp() @ x).sum()
    graph = draw(tmp_path / "g.dot", dev)
    text = (tmp_path / "g.dot").read_text()
    assert text == graph.source and text.startswith("digraph")
    for name in ("exp", "matmul", "sum"):
        assert name in text
    assert "->" in text
    assert float(y.numpy()) == pytest.approx(8 * np.e)  # images: tests/fusion/test_draw.py


def test_lazyt_debug_2_prints_each_fused_blocks_code(F, monkeypatch, capsys):
    monkeypatch.setenv("LAZYT_DEBUG", "2")
    x = up(F, np.arange(7))  # a shape no other test uses: a new block is compiled
    F.to_numpy(F.unary(U.SQRT, F.binary(B.ADD, F.binary(B.MUL, x, x), 1.0)))
    out = capsys.readouterr().out
    assert "def fused_block(" in out and "sqrt(" in out and "multiply(" in out
