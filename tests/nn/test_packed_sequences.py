"""`lazyt.nn.utils.rnn` (pad/pack/unpack) and RNN, LSTM, GRU on packed input, against numpy
and, where installed, torch with the same weights."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.nn.utils.rnn import (PackedSequence, pack_padded_sequence, pack_sequence,
                                pad_packed_sequence, pad_sequence, unpack_sequence,
                                unpad_sequence)

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")
LENGTHS = [3, 5, 1, 5, 2]


def _seqs(device, dim=2):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((n, dim)).astype(np.float32) for n in LENGTHS]
    return arrays, [lazyt.tensor(a, device=device) for a in arrays]


def test_pad_pack_unpack_round_trip(device):
    arrays, seqs = _seqs(device)
    padded = pad_sequence(seqs, padding_value=-1.0)
    assert padded.shape == (5, 5, 2)
    want = np.full((5, 5, 2), -1.0, np.float32)
    for b, a in enumerate(arrays):
        want[:len(a), b] = a
    np.testing.assert_array_equal(padded.numpy(), want)
    with pytest.raises(lazyt.InvalidArgumentError, match="sorted in decreasing order"):
        pack_padded_sequence(padded, LENGTHS)
    packed = pack_padded_sequence(padded, LENGTHS, enforce_sorted=False)
    assert isinstance(packed, PackedSequence)
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), [5, 4, 3, 2, 2])
    np.testing.assert_array_equal(packed.sorted_indices.numpy(), [1, 3, 0, 4, 2])
    np.testing.assert_array_equal(packed.data.numpy()[:5], want[0, [1, 3, 0, 4, 2]])
    back, lens = pad_packed_sequence(packed, batch_first=True, padding_value=7.0,
                                     total_length=6)
    np.testing.assert_array_equal(lens.numpy(), LENGTHS)
    assert back.shape == (5, 6, 2)
    for b, a in enumerate(arrays):
        np.testing.assert_array_equal(back.numpy()[b, :len(a)], a)
        assert (back.numpy()[b, len(a):] == 7.0).all()
    for got, a in zip(unpack_sequence(pack_sequence(seqs, enforce_sorted=False)), arrays):
        np.testing.assert_array_equal(got.numpy(), a)
    for got, a in zip(unpad_sequence(padded, LENGTHS), arrays):
        np.testing.assert_array_equal(got.numpy(), a)


@needs_torch
@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_recurrent_layers_on_packed_input_match_torch(cls, bidirectional):
    from torch.nn.utils import rnn as trnn
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(2, 3, num_layers=2, bidirectional=bidirectional,
                                batch_first=True).double()
    lm = getattr(nn, cls)(2, 3, num_layers=2, bidirectional=bidirectional, batch_first=True,
                          dtype=lazyt.float64)
    lm.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    arrays, _ = _seqs("cpu")
    padded = np.zeros((5, 5, 2))
    for b, a in enumerate(arrays):
        padded[b, :len(a)] = a
    tx = torch.tensor(padded, requires_grad=True)
    tp = trnn.pack_padded_sequence(tx, LENGTHS, batch_first=True, enforce_sorted=False)
    lx = lazyt.tensor(padded).requires_grad_()
    lp = pack_padded_sequence(lx, LENGTHS, batch_first=True, enforce_sorted=False)
    tout, th = tm(tp)
    lout, lh = lm(lp)
    np.testing.assert_array_equal(lout.batch_sizes.numpy(), tout.batch_sizes.numpy())
    np.testing.assert_allclose(lout.data.numpy(), tout.data.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    th, lh = (th, lh) if cls != "LSTM" else (th[0] + 2 * th[1], lh[0] + 2 * lh[1])
    np.testing.assert_allclose(lh.numpy(), th.detach().numpy(), rtol=1e-10, atol=1e-12)
    (tout.data.square().sum() + th.sum()).backward()
    (lout.data.square().sum() + lh.sum()).backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (name, tp_), lp_ in zip(tm.named_parameters(), lm.parameters()):
        np.testing.assert_allclose(lp_.grad.numpy(), tp_.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


@needs_torch
@pytest.mark.parametrize("packed", [False, True])
def test_lstm_proj_size_matches_torch(packed):
    from torch.nn.utils import rnn as trnn
    torch.manual_seed(1)
    tm = torch.nn.LSTM(2, 5, num_layers=2, bidirectional=True, proj_size=3).double()
    lm = nn.LSTM(2, 5, num_layers=2, bidirectional=True, proj_size=3, dtype=lazyt.float64)
    assert repr(lm) == repr(tm)
    assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    lm.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((5, 5, 2))
    h0 = np.random.default_rng(3).standard_normal((4, 5, 3))
    c0 = np.random.default_rng(4).standard_normal((4, 5, 5))
    tx, lx = torch.tensor(x), lazyt.tensor(x)
    if packed:
        tx = trnn.pack_padded_sequence(tx, LENGTHS, enforce_sorted=False)
        lx = pack_padded_sequence(lx, LENGTHS, enforce_sorted=False)
    tout, (th, tc) = tm(tx, (torch.tensor(h0), torch.tensor(c0)))
    lout, (lh, lc) = lm(lx, (lazyt.tensor(h0), lazyt.tensor(c0)))
    if packed:
        tout, lout = tout.data, lout.data
    for a, b in ((lout, tout), (lh, th), (lc, tc)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
