"""Conv1d/2d/3d with padding_mode reflect, replicate and circular, against torch (values and
gradients)."""
import numpy as np
import pytest

import lazyt
from lazyt import nn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("n,padding,stride,dilation", [
    (1, 2, 1, 1), (2, 1, 2, 1), (2, (2, 1), 1, 2), (2, "same", 1, 1), (3, 1, 1, 1),
])
def test_padding_modes_match_torch(mode, n, padding, stride, dilation):
    rng = np.random.default_rng(n)
    tcls = getattr(torch.nn, f"Conv{n}d")
    lcls = getattr(nn, f"Conv{n}d")
    tc = tcls(2, 3, 3, stride=stride, padding=padding, dilation=dilation, padding_mode=mode)
    lc = lcls(2, 3, 3, stride=stride, padding=padding, dilation=dilation, padding_mode=mode)
    lc.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in tc.state_dict().items()})
    x = rng.standard_normal((2, 2) + (7,) * n).astype(np.float32)
    lx, tx = lazyt.tensor(x).require_grad(), torch.from_numpy(x).requires_grad_()
    out, ref = lc(lx), tc(tx)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    out.square().sum().backward()
    ref.square().sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lc.weight.grad.numpy(), tc.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-4)
    assert repr(lc) == repr(tc)


def test_reflect_padding_wider_than_the_input_raises():
    c = nn.Conv1d(1, 1, 3, padding=4, padding_mode="reflect")
    with pytest.raises(lazyt.LazytError):
        c(lazyt.zeros(1, 1, 3))
