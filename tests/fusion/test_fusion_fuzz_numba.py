"""The fusion fuzz programs of test_fusion_fuzz.py with every fused block run as a numba kernel
(`LAZYT_NUMBA_MIN=0`), against `fusion=False` (numpy op by op).

Integer, bool and most float ops give the same bits as numpy; float32 `exp`, `tanh` and
`sigmoid` are SIMD polynomials within 2 ulp of numpy's, and an ulp lost early is scaled by
later ops, so floats are compared as on wgpu: relative to the value's largest magnitude.
Each new block structure compiles (about half a second), so the example counts are small; the
`slow` run goes long. Skipped without numba (the fallback is what every other test runs).
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from lazyt.backends.numpy import jit

from test_fusion_fuzz import check_program, programs
from test_fusion_fuzz_wgpu import _close  # relative to each value's largest magnitude

NUMBA = settings(max_examples=40, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def _every_block_compiled(monkeypatch):
    monkeypatch.setenv("LAZYT_NUMBA_MIN", "0")


@NUMBA
@given(programs())
def test_random_dags_numba_blocks_equal_unfused(program):
    runs = jit.STATS["runs"]
    check_program(program, grad=False, same=_close)
    assert jit.STATS["runs"] >= runs  # (most programs have a block; some fuse nothing)


@settings(NUMBA, max_examples=20)
@given(programs())
def test_random_dags_numba_blocks_with_autodiff(program):
    check_program(program, grad=True, same=_close)


def test_the_fuzz_reaches_the_kernels():
    """The programs above do run numba kernels (not silently the numpy fallback)."""
    before = jit.STATS["runs"]
    test_random_dags_numba_blocks_equal_unfused()
    assert jit.STATS["runs"] > before + 20


@pytest.mark.slow
@settings(NUMBA, max_examples=2000, derandomize=False)
@given(programs())
def test_random_dags_numba_long_run(program):
    check_program(program, grad=False, same=_close)
