"""`nn.MultiheadAttention`, `nn.TransformerEncoderLayer` and `nn.TransformerEncoder`: values
against a numpy reference written here on every device (torch's masks: bool True = blocked,
float added; batch_first and torch's [L, N, E]; unbatched input; kdim/vdim), gradients, errors,
and the same outputs as torch's modules with torch's state_dict where torch is installed."""
import math

import numpy as np
import pytest

import lazyt
from lazyt import nn

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")


def np_mha(m, q, k, v, mask=None):
    """The reference on [N, L, E] inputs with m's weights: (output, per-head weights)."""
    e, h = m.embed_dim, m.num_heads
    d = e // h
    if m.in_proj_weight is not None:
        w = m.in_proj_weight.numpy().astype(np.float64)
        wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
    else:
        wq, wk, wv = (getattr(m, f"{c}_proj_weight").numpy().astype(np.float64) for c in "qkv")
    b = np.zeros(3 * e) if m.in_proj_bias is None else m.in_proj_bias.numpy()

    def heads(x, w, bb):
        y = x.astype(np.float64) @ w.T + bb
        return y.reshape(x.shape[0], x.shape[1], h, d).transpose(0, 2, 1, 3)
    qh, kh, vh = heads(q, wq, b[:e]), heads(k, wk, b[e:2 * e]), heads(v, wv, b[2 * e:])
    s = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(d)
    if mask is not None:
        s = s + mask
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(-1, keepdims=True)
    o = (p @ vh).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    ow = m.out_proj.weight.numpy().astype(np.float64)
    ob = 0 if m.out_proj.bias is None else m.out_proj.bias.numpy()
    return o @ ow.T + ob, p


def arr(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_values_and_weights(device, check, rng, batch_first):
    m = nn.MultiheadAttention(16, 4, batch_first=batch_first, device=device)
    n, ln, s = 3, 5, 7
    q, k, v = arr(rng, n, ln, 16), arr(rng, n, s, 16), arr(rng, n, s, 16)
    want, p = np_mha(m, q, k, v)

    def t(x):  # [N, L, E] as the module takes it
        return lazyt.tensor(x if batch_first else x.transpose(1, 0, 2).copy(), device=device)
    out, weights = m(t(q), t(k), t(v))
    got = want if batch_first else want.transpose(1, 0, 2)
    check(out, got.astype(np.float32), atol=1e-5)
    check(weights, p.mean(1).astype(np.float32), atol=1e-6)
    _, per_head = m(t(q), t(k), t(v), average_attn_weights=False)
    check(per_head, p.astype(np.float32), atol=1e-6)
    fast, none = m(t(q), t(k), t(v), need_weights=False)
    assert none is None
    check(fast, got.astype(np.float32), atol=1e-5)


def test_multihead_attention_masks(device, check, rng):
    m = nn.MultiheadAttention(8, 2, batch_first=True, device=device)
    n, ln, s = 2, 4, 6
    q, kv = arr(rng, n, ln, 8), arr(rng, n, s, 8)
    causal = np.triu(np.ones((ln, s), bool), 1)
    pad = np.zeros((n, s), bool)
    pad[1, 4:] = True
    float_mask = arr(rng, n * 2, ln, s)
    add = np.where(causal, -np.inf, 0)[None, None] + np.where(pad, -np.inf, 0)[:, None, None]
    want, _ = np_mha(m, q, kv, kv, add)
    tq, tkv = lazyt.tensor(q, device=device), lazyt.tensor(kv, device=device)
    for need in (True, False):
        out, _ = m(tq, tkv, tkv, attn_mask=lazyt.tensor(causal, device=device),
                   key_padding_mask=lazyt.tensor(pad, device=device), need_weights=need)
        check(out, want.astype(np.float32), atol=1e-5)
    want, _ = np_mha(m, q, kv, kv, float_mask.reshape(n, 2, ln, s))
    out, _ = m(tq, tkv, tkv, attn_mask=lazyt.tensor(float_mask, device=device))
    check(out, want.astype(np.float32), atol=1e-5)


def test_unbatched_input_and_other_key_value_widths(check, rng):
    m = nn.MultiheadAttention(8, 2, kdim=5, vdim=3)
    assert m.in_proj_weight is None and m.k_proj_weight.shape == (8, 5)
    q, k, v = arr(rng, 4, 8), arr(rng, 6, 5), arr(rng, 6, 3)
    want, p = np_mha(m, q[None], k[None], v[None])
    out, w = m(lazyt.tensor(q), lazyt.tensor(k), lazyt.tensor(v))
    check(out, want[0].astype(np.float32), atol=1e-5)
    check(w, p.mean(1)[0].astype(np.float32), atol=1e-6)


def test_multihead_attention_gradients_reach_every_parameter(rng):
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    x = lazyt.tensor(arr(rng, 2, 5, 8)).require_grad()
    out, w = m(x, x, x)
    (out.sum() + w.sum()).backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and np.isfinite(p.grad.numpy()).all(), name
    assert x.grad.shape == x.shape


def test_parameter_names_and_initial_biases():
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias",
                                                   "out_proj.weight", "out_proj.bias"]
    assert not m.in_proj_bias.numpy().any() and not m.out_proj.bias.numpy().any()
    assert [n for n, _ in nn.MultiheadAttention(8, 2, bias=False).named_parameters()] == [
        "in_proj_weight", "out_proj.weight"]


@pytest.mark.parametrize("call,err", [
    (lambda: nn.MultiheadAttention(10, 3), lazyt.ShapeError),
    (lambda: nn.MultiheadAttention(8, 2)(lazyt.ones((3, 2, 6)), lazyt.ones((3, 2, 6)),
                                         lazyt.ones((3, 2, 6))), lazyt.ShapeError),
    (lambda: nn.MultiheadAttention(8, 2)(lazyt.ones((3, 2, 8)), lazyt.ones((4, 2, 8)),
                                         lazyt.ones((4, 2, 8)),
                                         attn_mask=lazyt.ones((3, 5))), lazyt.ShapeError),
    (lambda: nn.MultiheadAttention(8, 2)(lazyt.ones((3, 2, 8)), lazyt.ones((4, 2, 8)),
                                         lazyt.ones((4, 2, 8)),
                                         key_padding_mask=lazyt.ones((4, 2))), lazyt.ShapeError),
    (lambda: nn.MultiheadAttention(8, 2)(lazyt.ones((3, 8)), lazyt.ones((3, 8)),
                                         lazyt.ones((3, 8)), is_causal=True),
     lazyt.InvalidArgumentError),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"), lazyt.InvalidArgumentError),
], ids=["heads", "embed", "attn-mask", "padding-mask", "causal-hint", "activation"])
def test_errors(call, err):
    with pytest.raises(err, match="MultiheadAttention|TransformerEncoderLayer"):
        call()


def _np_layer_norm(x, ln):
    m = x.mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + ln.eps)
    return y * ln.weight.numpy() + ln.bias.numpy()


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_and_encoder_in_eval_mode(check, rng, norm_first):
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=norm_first)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8)).eval()
    assert enc.layers[0] is not layer and enc.layers[0] is not enc.layers[1]
    x = arr(rng, 2, 5, 8).astype(np.float64)
    want = x
    for lay in enc.layers:
        def sa(h, lay=lay):
            return np_mha(lay.self_attn, h, h, h)[0]

        def ff(h, lay=lay):
            a = np.maximum(h @ lay.linear1.weight.numpy().T + lay.linear1.bias.numpy(), 0)
            return a @ lay.linear2.weight.numpy().T + lay.linear2.bias.numpy()
        if norm_first:
            want = want + sa(_np_layer_norm(want, lay.norm1))
            want = want + ff(_np_layer_norm(want, lay.norm2))
        else:
            want = _np_layer_norm(want + sa(want), lay.norm1)
            want = _np_layer_norm(want + ff(want), lay.norm2)
    want = _np_layer_norm(want, enc.norm)
    check(enc(lazyt.tensor(x.astype(np.float32))), want.astype(np.float32), atol=2e-5)


def test_dropout_runs_only_in_training_mode(rng):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5, batch_first=True)
    x = lazyt.tensor(arr(rng, 2, 5, 8))
    lazyt.manual_seed(0)
    a = layer(x).numpy()
    lazyt.manual_seed(1)
    b = layer(x).numpy()
    assert not np.allclose(a, b)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_same_outputs_and_gradients_as_torch(rng, norm_first, activation):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(16, 4, 32, activation=activation,
                                          norm_first=norm_first, batch_first=True)
    te = torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False).eval()
    le = nn.TransformerEncoder(nn.TransformerEncoderLayer(
        16, 4, 32, activation=activation, norm_first=norm_first, batch_first=True), 2).eval()
    result = le.load_state_dict({k: v.detach().numpy() for k, v in te.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    x = arr(rng, 3, 6, 16)
    pad = np.zeros((3, 6), bool)
    pad[0, 4:] = True
    causal = np.triu(np.ones((6, 6), bool), 1)
    tx = torch.tensor(x, requires_grad=True)
    lx = lazyt.tensor(x).require_grad()
    want = te(tx, mask=torch.tensor(causal), src_key_padding_mask=torch.tensor(pad))
    got = le(lx, mask=lazyt.tensor(causal), src_key_padding_mask=lazyt.tensor(pad))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    (want ** 2).sum().backward()
    (got ** 2).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    tw = dict(te.named_parameters())
    for name, p in le.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tw[name].grad.numpy(), rtol=1e-3,
                                   atol=1e-4, err_msg=name)


def test_decoder_layer_in_eval_mode(check, rng):
    layer = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True).eval()
    tgt, mem = arr(rng, 2, 4, 8).astype(np.float64), arr(rng, 2, 6, 8).astype(np.float64)
    causal = np.triu(np.full((4, 4), -np.inf), 1)
    x = _np_layer_norm(tgt + np_mha(layer.self_attn, tgt, tgt, tgt, causal)[0], layer.norm1)
    x = _np_layer_norm(x + np_mha(layer.multihead_attn, x, mem, mem)[0], layer.norm2)
    a = np.maximum(x @ layer.linear1.weight.numpy().T + layer.linear1.bias.numpy(), 0)
    x = _np_layer_norm(x + a @ layer.linear2.weight.numpy().T + layer.linear2.bias.numpy(),
                       layer.norm3)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(mask.numpy(), causal.astype(np.float32))
    got = layer(lazyt.tensor(tgt.astype(np.float32)), lazyt.tensor(mem.astype(np.float32)),
                tgt_mask=mask)
    check(got, x.astype(np.float32), atol=2e-5)


def test_transformer_parameters_start_glorot_uniform():
    m = nn.Transformer(16, 4, 1, 1, 32)
    names = [n for n, _ in m.named_parameters()]
    assert "encoder.layers.0.self_attn.in_proj_weight" in names
    assert "decoder.layers.0.multihead_attn.out_proj.weight" in names
    assert "decoder.norm.weight" in names and len(names) == 34
    w = m.decoder.layers[0].linear1.weight.numpy()
    bound = math.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_same_outputs_as_torch(rng, norm_first):
    torch.manual_seed(0)
    tt = torch.nn.Transformer(16, 4, 2, 2, 32, batch_first=True, norm_first=norm_first).eval()
    lt = nn.Transformer(16, 4, 2, 2, 32, batch_first=True, norm_first=norm_first).eval()
    result = lt.load_state_dict({k: v.detach().numpy() for k, v in tt.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    src, tgt = arr(rng, 2, 7, 16), arr(rng, 2, 5, 16)
    pad = np.zeros((2, 7), bool)
    pad[1, 5:] = True
    want = tt(torch.tensor(src), torch.tensor(tgt),
              tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(5),
              src_key_padding_mask=torch.tensor(pad),
              memory_key_padding_mask=torch.tensor(pad)).detach().numpy()
    got = lt(lazyt.tensor(src), lazyt.tensor(tgt),
             tgt_mask=nn.Transformer.generate_square_subsequent_mask(5),
             src_key_padding_mask=lazyt.tensor(pad),
             memory_key_padding_mask=lazyt.tensor(pad)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
