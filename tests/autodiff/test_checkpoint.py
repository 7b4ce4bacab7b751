"""Checkpointing: balanced saves less than none and gives identical gradients; recomputed
values are retrieved in order and freed; the checkpointer's bookkeeping."""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import lazyt
from lazyt.autodiff import Checkpointer, saved_bytes, saved_tensors
from lazyt.errors import GradError


CHAIN = [
    lambda t: t.sin(), lambda t: t * 1.5, lambda t: t.tanh(), lambda t: t + 0.25,
    lambda t: t.sigmoid(), lambda t: t.exp(), lambda t: t * t, lambda t: t.cos(),
    lambda t: t - 0.5, lambda t: t.erf(), lambda t: t.abs(), lambda t: (t + 1.0).sqrt(),
    lambda t: t.relu(), lambda t: t / 3.0, lambda t: t.reciprocal(), lambda t: t.log(),
    lambda t: t.neg(), lambda t: t.square(), lambda t: t.rsqrt(), lambda t: t.clamp(max=2.0),
]
assert len(CHAIN) == 20


def _run_chain(dev, x_np):
    """Forward the 20-op chain, realize it with item(); return bytes held (tracemalloc and the
    checkpointer's count) and the gradient."""
    gc.collect()
    x = lazyt.tensor(x_np, device=dev).require_grad()
    lazyt.sync()
    tracemalloc.start()
    try:
        base_traced = tracemalloc.get_traced_memory()[0]
        base_saved = saved_bytes()
        y = x
        for op in CHAIN:
            y = op(y)
        loss = y.mean()
        value = loss.item()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - base_traced
        saved = saved_bytes() - base_saved
    finally:
        tracemalloc.stop()
    del y
    g = loss.backward()
    return traced, saved, value, g.get(x).numpy()


def _fusion_available() -> bool:
    try:
        from lazyt.fusion import Fusion  # noqa: F401
    except ImportError:
        return False
    return True


FUSION_SETTINGS = [False] + ([True] if _fusion_available() else [])


@pytest.mark.parametrize("fusion", FUSION_SETTINGS, ids=lambda f: f"fusion={f}")
def test_balanced_saves_less_than_none_with_identical_gradients(fusion):
    x_np = np.random.default_rng(0).uniform(-1, 1, (1024, 1024)).astype(np.float32)
    none = _run_chain(lazyt.device("cpu", fusion=fusion, checkpointing="none"), x_np)
    balanced = _run_chain(lazyt.device("cpu", fusion=fusion, checkpointing="balanced"), x_np)
    mb = 1 << 20
    # "none" holds the input of every op that reads it: about 14 float tensors of 4 MiB
    # (clamp keeps a 1-byte mask instead of its input)
    assert none[1] >= 12 * 4 * mb, none[1] / mb
    assert none[0] >= 12 * 4 * mb, none[0] / mb
    assert balanced[1] <= 0.6 * none[1], (balanced[1] / mb, none[1] / mb)
    assert balanced[0] <= 0.6 * none[0], (balanced[0] / mb, none[0] / mb)
    assert balanced[2] == none[2]
    np.testing.assert_array_equal(balanced[3], none[3])


def test_balanced_recomputes_memory_bound_values_only(ad_device_short):
    """Under balanced a matmul output is saved (compute-bound); elementwise results are not."""
    dev = ad_device_short
    x = lazyt.tensor(np.ones((8, 8)), device=dev).require_grad()
    base = saved_tensors()
    h = (x @ x).sin()        # matmul saves x; sin checkpoints the matmul output: saved
    assert saved_tensors() == base + 2
    y = h.exp().cos()        # exp/cos checkpoint elementwise outputs: recomputed, not saved
    assert saved_tensors() == base + 2
    dev_none = lazyt.device("cpu", fusion=dev.fusion, checkpointing="none")
    x2 = lazyt.tensor(np.ones((8, 8)), device=dev_none).require_grad()
    base2 = saved_tensors()
    y2 = (x2 @ x2).sin().exp().cos()
    assert saved_tensors() == base2 + 4  # x2 (for matmul), and the inputs of sin, exp, cos
    g, g2 = y.sum().backward(), y2.sum().backward()
    np.testing.assert_allclose(g.get(x).numpy(), g2.get(x2).numpy(), rtol=1e-12)


def test_checkpointer_recomputes_in_order_and_frees_after_last_use():
    """A chain recomputed through the checkpointer: each value computed once, dropped after
    its last retrieval."""
    from lazyt.autodiff.checkpoint import Recompute, Retro, Saved
    from lazyt.autodiff.node import Node, Requirement
    calls = []

    def node_with(retro):
        return Node(0, (), Requirement.GRAD_IN_BACKWARD, None, retro=retro)

    leaf = Saved(np.array([1.0]), 8)
    n1 = node_with(Retro(lambda a: calls.append(1) or a + 1, [(1, leaf)]))
    n2 = node_with(Retro(lambda a: calls.append(2) or a * 10, [(2, Recompute(n1))]))
    n3 = node_with(Retro(lambda a, b: calls.append(3) or a + b,
                         [(2, Recompute(n1)), (3, Recompute(n2))]))
    ck = Checkpointer()
    ck.add_step([(4, Recompute(n3)), (3, Recompute(n2))])
    assert ck.retrieve_node_output(4)[0] == 2.0 + 20.0
    assert calls == [1, 2, 3]
    assert ck.retrieve_node_output(3)[0] == 20.0  # cached, not recomputed
    assert calls == [1, 2, 3]
    assert ck.held() == 0  # everything dropped after its last use
    with pytest.raises(GradError, match="retrieved more often"):
        ck.retrieve_node_output(3)
    with pytest.raises(GradError, match="not checkpointed"):
        ck.retrieve_node_output(99)


def test_long_chain_recomputation_is_iterative():
    """Recomputing a 3000-op elementwise chain does not hit Python's recursion limit."""
    dev = lazyt.device("cpu", fusion=False)
    x = lazyt.tensor(np.array([0.5]), device=dev).require_grad()
    y = x
    for _ in range(3000):
        y = (y * 1.0001).sin()
    g = y.sum().backward()
    assert np.isfinite(g.get(x).numpy()).all()
