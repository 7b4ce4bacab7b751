"""index_select along dim 0 of dense rows (an embedding lookup: the GPU backends' row-gather
kernel) and along other dims or of strided rows (the generic gather), against numpy on every
device, with an out-of-range index raising and leaving the runtime usable."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.errors import LazytError


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
@pytest.mark.parametrize("shape", [(100, 384), (30, 3), (9, 2, 6), (7,), (5, 0)])
def test_rows_match_numpy(device, dtype, shape):
    rng = np.random.default_rng(1)
    table = (rng.standard_normal(shape) * 50).astype(dtype)
    ids = rng.integers(0, shape[0], 41)
    t = lazyt.tensor(table, device=device)
    got = t.index_select(0, lazyt.tensor(ids, device=device)).numpy()
    np.testing.assert_array_equal(got, table[ids])
    # views: rows from an offset, a column slice (rows no longer dense), a transposed table
    sub = ids % (shape[0] - 1)
    np.testing.assert_array_equal(
        t[1:].index_select(0, lazyt.tensor(sub, device=device)).numpy(), table[1:][sub])
    if len(shape) == 2 and shape[1] > 1:
        np.testing.assert_array_equal(
            t[:, 1:].index_select(0, lazyt.tensor(ids, device=device)).numpy(), table[:, 1:][ids])
        cols = ids % shape[1]
        np.testing.assert_array_equal(
            t.T.index_select(0, lazyt.tensor(cols, device=device)).numpy(), table.T[cols])
        np.testing.assert_array_equal(
            t.index_select(1, lazyt.tensor(cols, device=device)).numpy(), table[:, cols])


def test_a_strided_index_and_an_embedding(device):
    table = np.arange(60, dtype=np.float32).reshape(12, 5)
    ids = lazyt.tensor(np.array([3, 0, 11, 3, 7, 1, 2, 9]), device=device)[::2]
    got = lazyt.tensor(table, device=device).index_select(0, ids).numpy()
    np.testing.assert_array_equal(got, table[[3, 11, 7, 2]])
    emb = lazyt.nn.Embedding(12, 5).to(device)
    emb.weight.data = lazyt.tensor(table, device=device)
    out = emb(lazyt.tensor([[1, 2], [11, 0]], device=device)).numpy()
    np.testing.assert_array_equal(out, table[[[1, 2], [11, 0]]])


def test_an_index_out_of_range_raises_and_the_runtime_goes_on(device):
    t = lazyt.tensor(np.ones((10, 8), np.float32), device=device)
    for bad in ([0, 10], [-11, 1]):
        with pytest.raises(LazytError, match="index_select"):
            t.index_select(0, lazyt.tensor(bad, device=device)).numpy()
    np.testing.assert_array_equal(
        t.index_select(0, lazyt.tensor([9, 0], device=device)).numpy(), np.ones((2, 8)))
