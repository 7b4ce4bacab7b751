"""`nn.RNN`, `nn.LSTM`, `nn.GRU` and their cells: values against numpy step-by-step references
on every device (layers, directions, batch_first, unbatched input, initial states), float64
gradients, parameter names, errors, and the same outputs and gradients as torch's modules
with torch's state_dict where torch is installed."""
import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.testing import gradcheck

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")


def sig(x):
    return 1 / (1 + np.exp(-x))


def np_step(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gx = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    if mode == "LSTM":
        i, f, g, o = np.split(gx + gh, 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        return sig(o) * np.tanh(c), c
    if mode == "GRU":
        xr, xz, xn = np.split(gx, 3, -1)
        hr, hz, hn = np.split(gh, 3, -1)
        r, z = sig(xr + hr), sig(xz + hz)
        n = np.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    return np.tanh(gx + gh), None


def np_rnn(m, mode, x, h0=None, c0=None):
    """x [L, N, in] in float64: (output, h_n, c_n)."""
    d = 2 if m.bidirectional else 1
    nl, n, hsz = m.num_layers, x.shape[1], m.hidden_size
    h0 = np.zeros((nl * d, n, hsz)) if h0 is None else h0
    c0 = np.zeros((nl * d, n, hsz)) if c0 is None else c0
    p = {k: v.numpy().astype(np.float64) for k, v in m.named_parameters()}
    hs, cs, inp = [], [], x
    for layer in range(nl):
        outs = []
        for k, sfx in enumerate(["", "_reverse"][:d]):
            h, c = h0[layer * d + k], c0[layer * d + k]
            ys = [None] * x.shape[0]
            order = range(x.shape[0] - 1, -1, -1) if sfx else range(x.shape[0])
            for t in order:
                h, c2 = np_step(mode, inp[t], h, c, p[f"weight_ih_l{layer}{sfx}"],
                                p[f"weight_hh_l{layer}{sfx}"], p[f"bias_ih_l{layer}{sfx}"],
                                p[f"bias_hh_l{layer}{sfx}"])
                c = c2 if c2 is not None else c
                ys[t] = h
            outs.append(np.stack(ys))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, -1)
    return inp, np.stack(hs), np.stack(cs)


@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_sequence_layers_against_numpy(device, check, rng, mode, layers, bidirectional):
    m = getattr(nn, mode)(5, 6, num_layers=layers, bidirectional=bidirectional, device=device)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    out, hn, cn = np_rnn(m, mode, x.astype(np.float64))
    got = m(lazyt.tensor(x, device=device))
    check(got[0], out.astype(np.float32), atol=1e-5)
    if mode == "LSTM":
        check(got[1][0], hn.astype(np.float32), atol=1e-5)
        check(got[1][1], cn.astype(np.float32), atol=1e-5)
    else:
        check(got[1], hn.astype(np.float32), atol=1e-5)


def test_batch_first_unbatched_and_initial_states(check, rng):
    m = nn.LSTM(4, 3, batch_first=True)
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    h0 = rng.standard_normal((1, 2, 3)).astype(np.float32)
    c0 = rng.standard_normal((1, 2, 3)).astype(np.float32)
    out, hn, cn = np_rnn(m, "LSTM", x.transpose(1, 0, 2).astype(np.float64), h0, c0)
    y, (h, c) = m(lazyt.tensor(x), (lazyt.tensor(h0), lazyt.tensor(c0)))
    check(y, out.transpose(1, 0, 2).astype(np.float32), atol=1e-5)
    check(h, hn.astype(np.float32), atol=1e-5)
    g = nn.GRU(4, 3)
    x1 = x[0]  # one unbatched sequence [L, in]
    out, hn, _ = np_rnn(g, "GRU", x1[:, None].astype(np.float64))
    y, h = g(lazyt.tensor(x1))
    check(y, out[:, 0].astype(np.float32), atol=1e-5)
    check(h, hn[:, 0].astype(np.float32), atol=1e-5)


@pytest.mark.parametrize("mode", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cells_are_one_step(check, rng, mode):
    m = getattr(nn, mode)(4, 3)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    h = rng.standard_normal((2, 3)).astype(np.float32)
    p = {k: v.numpy().astype(np.float64) for k, v in m.named_parameters()}
    kind = {"RNNCell": "RNN", "GRUCell": "GRU", "LSTMCell": "LSTM"}[mode]
    want_h, want_c = np_step(kind, x.astype(np.float64), h, h, p["weight_ih"], p["weight_hh"],
                             p["bias_ih"], p["bias_hh"])
    got = m(lazyt.tensor(x), (lazyt.tensor(h), lazyt.tensor(h)) if kind == "LSTM"
            else lazyt.tensor(h))
    if kind == "LSTM":
        check(got[0], want_h.astype(np.float32), atol=1e-6)
        check(got[1], want_c.astype(np.float32), atol=1e-6)
    else:
        check(got, want_h.astype(np.float32), atol=1e-6)


def test_gradients_float64(rng):
    m = nn.GRU(3, 2, dtype=lazyt.float64)
    x = lazyt.tensor(rng.standard_normal((4, 2, 3))).require_grad()
    assert gradcheck(lambda x: m(x)[0], [x])
    lstm = nn.LSTM(3, 2, dtype=lazyt.float64, bidirectional=True)
    assert gradcheck(lambda x: lstm(x)[1][1], [x])
    out, _ = lstm(x)
    out.sum().backward()
    for name, p in lstm.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name


def test_parameter_names_shapes_and_init():
    m = nn.LSTM(5, 4, num_layers=2, bidirectional=True)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert "weight_ih_l1_reverse" in names and len(names) == 16
    assert m.weight_ih_l1.shape == (16, 8) and m.weight_hh_l0.shape == (16, 4)
    bound = 1 / np.sqrt(4)
    assert all(np.abs(p.numpy()).max() <= bound for p in m.parameters())
    assert [n for n, _ in nn.GRU(5, 4, bias=False).named_parameters()] == ["weight_ih_l0",
                                                                         "weight_hh_l0"]


def test_dropout_between_layers_only_in_training(rng):
    m = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = lazyt.tensor(rng.standard_normal((5, 2, 3)).astype(np.float32))
    lazyt.manual_seed(0)
    a = m(x)[0].numpy()
    lazyt.manual_seed(1)
    assert not np.allclose(a, m(x)[0].numpy())
    m.eval()
    np.testing.assert_array_equal(m(x)[0].numpy(), m(x)[0].numpy())


@pytest.mark.parametrize("call,err", [
    (lambda: nn.LSTM(3, 4)(lazyt.ones((2, 3, 5))), lazyt.ShapeError),
    (lambda: nn.LSTM(3, 4)(lazyt.ones((2, 3, 3)), lazyt.ones((1, 3, 4))),
     lazyt.InvalidArgumentError),
    (lambda: nn.GRU(3, 4)(lazyt.ones((2, 3, 3)), lazyt.ones((2, 3, 4))), lazyt.ShapeError),
    (lambda: nn.RNN(3, 4, nonlinearity="gelu"), lazyt.InvalidArgumentError),
    (lambda: nn.LSTM(3, 4, proj_size=4), lazyt.InvalidArgumentError),
    (lambda: nn.GRU(3, 0), lazyt.InvalidArgumentError),
    (lambda: nn.GRUCell(3, 4)(lazyt.ones((2, 5))), lazyt.ShapeError),
    (lambda: nn.RNN(3, 4)(lazyt.ones((2, 3, 3), dtype=lazyt.int64)), lazyt.DTypeError),
], ids=["input-size", "lstm-hx", "hx-shape", "nonlinearity", "proj", "hidden", "cell", "int"])
def test_errors(call, err):
    with pytest.raises(err, match="RNN|LSTM|GRU"):
        call()


@needs_torch
@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
def test_same_outputs_and_gradients_as_torch(rng, mode):
    torch.manual_seed(0)
    kw = dict(num_layers=2, bidirectional=True, batch_first=True)
    tm = getattr(torch.nn, mode)(5, 6, **kw)
    lm = getattr(nn, mode)(5, 6, **kw)
    result = lm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    tx, lx = torch.tensor(x, requires_grad=True), lazyt.tensor(x).require_grad()
    to, lo = tm(tx), lm(lx)
    np.testing.assert_allclose(lo[0].numpy(), to[0].detach().numpy(), rtol=1e-5, atol=1e-6)
    (to[0] ** 2).sum().backward()
    (lo[0] ** 2).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-6)
    tp = dict(tm.named_parameters())
    for name, p in lm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_dtype_mismatch_raises_and_torch_helpers():
    m = nn.LSTM(3, 4).double()
    with pytest.raises(lazyt.DTypeError, match="LSTM"):
        m(lazyt.ones((2, 1, 3)))
    g = nn.GRU(3, 4)
    with pytest.raises(lazyt.DTypeError, match="GRU"):
        g(lazyt.ones((2, 1, 3)), lazyt.ones((1, 1, 4), dtype=lazyt.float64))
    with pytest.raises(lazyt.DTypeError, match="GRUCell"):
        nn.GRUCell(3, 4)(lazyt.ones((2, 3), dtype=lazyt.float64))
    g.flatten_parameters()  # torch's cuDNN packing call: nothing to do
    assert [[w.shape for w in ws] for ws in g.all_weights] == [[(12, 3), (12, 4), (12,), (12,)]]
