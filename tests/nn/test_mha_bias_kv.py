"""MultiheadAttention's add_bias_kv and add_zero_attn: torch's extra key and value, with
both masks, weights or not, against torch's module with the same parameters."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("bias_kv,zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_against_torch(bias_kv, zero_attn, need_weights):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                     batch_first=True).double().eval()
    lm = lazyt.nn.MultiheadAttention(8, 2, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                     batch_first=True, dtype=lazyt.float64).eval()
    assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    lm.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    rng = np.random.default_rng(0)
    q, kv = rng.standard_normal((3, 4, 8)), rng.standard_normal((3, 5, 8))
    pad = np.zeros((3, 5), bool)
    pad[1, 3:] = True
    causal = np.triu(np.ones((4, 5), bool), 2)
    to, tw = tm(torch.tensor(q), torch.tensor(kv), torch.tensor(kv),
                key_padding_mask=torch.tensor(pad), attn_mask=torch.tensor(causal),
                need_weights=need_weights)
    lq, lkv = lazyt.tensor(q).requires_grad_(), lazyt.tensor(kv)
    lo, lw = lm(lq, lkv, lkv, key_padding_mask=lazyt.tensor(pad),
                attn_mask=lazyt.tensor(causal), need_weights=need_weights)
    np.testing.assert_allclose(lo.numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(lw.numpy(), tw.detach().numpy(), rtol=1e-10, atol=1e-12)
    to.sum().backward()
    lo.sum().backward()
    if bias_kv:
        np.testing.assert_allclose(lm.bias_k.grad.numpy(), tm.bias_k.grad.numpy(), rtol=1e-9,
                                   atol=1e-12)
