"""nn.utils.weight_norm / remove_weight_norm against torch: parameter names and order,
outputs and the gradients of the magnitude and the direction."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import lazyt
from lazyt import nn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_matches_torch(dim):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tc = torch.nn.utils.weight_norm(torch.nn.Conv1d(3, 4, 3).double(), dim=dim)
    with pytest.warns(FutureWarning, match="weight_norm is deprecated"):
        lc = nn.utils.weight_norm(nn.Conv1d(3, 4, 3, dtype=lazyt.float64), dim=dim)
    assert [n for n, _ in lc.named_parameters()] == [n for n, _ in tc.named_parameters()]
    lc.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in
                        tc.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 7))
    to, lo = tc(torch.tensor(x)), lc(lazyt.tensor(x))
    np.testing.assert_allclose(lo.numpy(), to.detach().numpy(), rtol=1e-12, atol=1e-14)
    to.square().sum().backward()
    lo.square().sum().backward()
    for name in ("weight_g", "weight_v"):
        np.testing.assert_allclose(getattr(lc, name).grad.numpy(),
                                   getattr(tc, name).grad.numpy(), rtol=1e-10, atol=1e-13)
    nn.utils.remove_weight_norm(lc)
    torch.nn.utils.remove_weight_norm(tc)
    assert [n for n, _ in lc.named_parameters()] == [n for n, _ in tc.named_parameters()]
    np.testing.assert_allclose(lc.weight.numpy(), tc.weight.detach().numpy(), rtol=1e-12)
    with pytest.raises(lazyt.InvalidArgumentError, match="remove_weight_norm"):
        nn.utils.remove_weight_norm(lc)
