"""torch.nn.init's other initializers: trunc_normal_, orthogonal_, eye_, dirac_, sparse_ and
the deprecated names without the underscore."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import lazyt
from lazyt.nn import init

try:
    import torch
except ImportError:
    torch = None


def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    lazyt.manual_seed(0)
    w = lazyt.empty(50000)
    assert init.trunc_normal_(w, 1.0, 2.0, -1.0, 3.0) is w
    v = w.numpy()
    assert v.min() >= -1.0 and v.max() <= 3.0
    # N(1, 4) cut at one std either side: mean 1, std 2 * 0.5396
    assert abs(v.mean() - 1.0) < 0.02 and abs(v.std() - 2 * 0.5396) < 0.02
    with pytest.raises(lazyt.InvalidArgumentError, match="trunc_normal_"):
        init.trunc_normal_(w, a=2.0, b=1.0)


@pytest.mark.parametrize("shape", [(6, 4), (3, 7), (4, 2, 3)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape):
    w = lazyt.empty(*shape)
    init.orthogonal_(w, gain=1.5)
    a = w.numpy().reshape(shape[0], -1)
    small = min(a.shape)
    gram = a.T @ a if a.shape[0] >= a.shape[1] else a @ a.T
    np.testing.assert_allclose(gram, 2.25 * np.eye(small), atol=1e-5)
    with pytest.raises(lazyt.ShapeError, match="orthogonal_"):
        init.orthogonal_(lazyt.empty(3))


def test_sparse_zeroes_whole_fractions_of_columns():
    w = lazyt.empty(10, 5)
    init.sparse_(w, 0.25, std=0.5)
    np.testing.assert_array_equal((w.numpy() == 0).sum(0), [3] * 5)


def test_deprecated_names_warn_and_work():
    w = lazyt.empty(2, 3)
    with pytest.warns(FutureWarning, match="nn.init.constant is now deprecated"):
        init.constant(w, 0.5)
    np.testing.assert_array_equal(w.numpy(), 0.5)


def test_init_keeps_a_parameter_a_leaf():
    p = lazyt.nn.Parameter(lazyt.empty(4, 4))
    init.orthogonal_(p)
    init.trunc_normal_(p, std=0.02)
    assert p.requires_grad and p.is_leaf


@pytest.mark.skipif(torch is None, reason="torch is not installed here")
@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((2, 2, 1, 3, 3), 1)])
def test_eye_and_dirac_match_torch(shape, groups):
    w, tw = lazyt.empty(*shape), torch.empty(*shape)
    init.dirac_(w, groups)
    torch.nn.init.dirac_(tw, groups)
    np.testing.assert_array_equal(w.numpy(), tw.numpy())
    e, te = lazyt.empty(3, 5), torch.empty(3, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        init.eye(e)
    torch.nn.init.eye_(te)
    np.testing.assert_array_equal(e.numpy(), te.numpy())
