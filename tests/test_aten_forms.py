"""torch's top-level forms (lazyt/aten_forms.py) against torch: same arguments, same values."""
import warnings

import numpy as np
import pytest

import lazyt
from lazyt import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _pair(*shape, dtype=np.float32):
    a = RNG.standard_normal(shape).astype(dtype)
    return lazyt.tensor(a), torch.from_numpy(a.copy())


def _close(a, b, tol=1e-5):
    if isinstance(b, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_same_order_nn_forms():
    (x, tx), (w, tw) = _pair(2, 3, 8, 8), _pair(4, 3, 3, 3)
    _close(lazyt.conv2d(x, w, None, 1, 1), torch.conv2d(tx, tw, None, 1, 1))
    _close(lazyt.max_pool2d(x, 2), torch.max_pool2d(tx, 2))
    _close(lazyt.pixel_shuffle(lazyt.tensor(np.arange(16.0).reshape(1, 4, 2, 2)), 2),
           torch.pixel_shuffle(torch.arange(16.0).reshape(1, 4, 2, 2), 2))
    (a, ta), (b, tb) = _pair(5, 6), _pair(5, 6)
    _close(lazyt.cosine_similarity(a, b), torch.cosine_similarity(ta, tb))
    _close(lazyt.pairwise_distance(a, b), torch.pairwise_distance(ta, tb))
    _close(lazyt.hardshrink(a, 0.3), torch.hardshrink(ta, 0.3))


def test_norms_in_atens_order():
    (x, tx), (w, tw), (b, tb) = _pair(4, 3, 5), _pair(3), _pair(3)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    out = lazyt.batch_norm(x, w, b, lazyt.tensor(rm), lazyt.tensor(rv), True, 0.1, 1e-5, True)
    ref = torch.batch_norm(tx, tw, tb, torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy()),
                           True, 0.1, 1e-5, True)
    _close(out, ref)
    _close(lazyt.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
           torch.instance_norm(tx, tw, tb, None, None, True, 0.1, 1e-5, False))
    (w5, tw5), (b5, tb5) = _pair(5), _pair(5)
    _close(lazyt.layer_norm(x, [5], w5, b5, 1e-5, True), torch.layer_norm(tx, [5], tw5, tb5,
                                                                         1e-5, True))
    _close(lazyt.group_norm(x, 3, w, b, 1e-5, True), torch.group_norm(tx, 3, tw, tb, 1e-5, True))
    _close(lazyt.rms_norm(x, [5], w5, 1e-6), torch.rms_norm(tx, [5], tw5, 1e-6))
    _close(lazyt.native_layer_norm(x, [5], w5, b5, 1e-5),
           torch.native_layer_norm(tx, [5], tw5, tb5, 1e-5))


def test_embedding_takes_weight_first_and_minus_one_for_no_padding():
    (w, tw) = _pair(6, 3)
    idx = np.array([[0, 5], [2, 2]])
    _close(lazyt.embedding(w, lazyt.tensor(idx)), torch.embedding(tw, torch.from_numpy(idx)))
    w.require_grad()
    tw.requires_grad_()
    lazyt.embedding(w, lazyt.tensor(idx), 2).sum().backward()
    torch.embedding(tw, torch.from_numpy(idx), 2).sum().backward()
    _close(w.grad, tw.grad)


@pytest.mark.parametrize("reduction", [0, 1, 2, "sum"])
def test_losses_with_aten_reduction_codes(reduction):
    treduction = {"sum": 2}.get(reduction, reduction)
    (a, ta), (b, tb) = _pair(4, 5), _pair(4, 5)
    t = np.sign(RNG.standard_normal(4)).astype(np.float32)
    lt, tt = lazyt.tensor(t), torch.from_numpy(t)
    p = lazyt.tensor(np.abs(b.numpy()))
    tp = torch.from_numpy(np.abs(b.numpy()))
    _close(lazyt.kl_div(a.log_softmax(1), b.softmax(1), reduction),
           torch.kl_div(ta.log_softmax(1), tb.softmax(1), treduction))
    _close(lazyt.binary_cross_entropy_with_logits(a, b.sigmoid(), None, None, reduction),
           torch.binary_cross_entropy_with_logits(ta, tb.sigmoid(), None, None, treduction))
    _close(lazyt.cosine_embedding_loss(a, b, lt, 0.1, reduction),
           torch.cosine_embedding_loss(ta, tb, tt, 0.1, treduction))
    _close(lazyt.hinge_embedding_loss(a, lazyt.tensor(np.sign(b.numpy())), 1.0, reduction),
           torch.hinge_embedding_loss(ta, torch.sign(tb), 1.0, treduction))
    _close(lazyt.margin_ranking_loss(a[:, 0], b[:, 0], lt, 0.2, reduction),
           torch.margin_ranking_loss(ta[:, 0], tb[:, 0], tt, 0.2, treduction))
    _close(lazyt.poisson_nll_loss(a, p, True, False, 1e-8, reduction),
           torch.poisson_nll_loss(ta, tp, True, False, 1e-8, treduction))
    (c, tc) = _pair(4, 5)
    _close(lazyt.triplet_margin_loss(a, b, c, 1.0, 2.0, 1e-6, False, reduction),
           torch.triplet_margin_loss(ta, tb, tc, 1.0, 2.0, 1e-6, False, treduction))


def test_bad_reduction_code():
    a = lazyt.zeros(3)
    with pytest.raises(InvalidArgumentError, match="reduction"):
        lazyt.kl_div(a, a, 3)


def test_dropout_forms():
    x = lazyt.ones(1000)
    np.testing.assert_array_equal(lazyt.dropout(x, 0.5, False).numpy(), x.numpy())
    y = lazyt.dropout(x, 0.5, True).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    z = lazyt.feature_dropout(lazyt.ones(8, 50, 3, 3, 2, 2), 0.5, True).numpy()
    per_channel = z.reshape(8, 50, -1)
    assert (per_channel.min(-1) == per_channel.max(-1)).all()
    np.testing.assert_array_equal(lazyt.alpha_dropout(x, 0.5, False).numpy(), x.numpy())
    with pytest.raises(ShapeError):
        lazyt.feature_dropout(lazyt.ones(3), 0.5, True)


def test_pool_forms_return_indices():
    (x, tx) = _pair(2, 3, 10)
    _close(lazyt.adaptive_max_pool1d(x, 4), torch.adaptive_max_pool1d(tx, 4))
    _close(lazyt.max_pool1d_with_indices(x, 3, 2), torch.max_pool1d_with_indices(tx, 3, 2))


def test_pad_tbc_and_convolution():
    (x, tx) = _pair(2, 3, 4)
    _close(lazyt.constant_pad_nd(x, [1, 2], 0.5), torch.constant_pad_nd(tx, [1, 2], 0.5))
    (s, ts), (w, tw), (b, tb) = _pair(7, 2, 3), _pair(3, 3, 4), _pair(4)
    for t in (s, w, b):
        t.require_grad()
    for t in (ts, tw, tb):
        t.requires_grad_()
    out, ref = lazyt.conv_tbc(s, w, b, 1), torch.conv_tbc(ts, tw, tb, 1)
    _close(out, ref)
    out.square().sum().backward()
    ref.square().sum().backward()
    _close([s.grad, w.grad, b.grad], [ts.grad, tw.grad, tb.grad], 1e-4)
    (x, tx), (w, tw) = _pair(1, 2, 5, 5), _pair(2, 3, 3, 3)
    _close(lazyt.convolution(x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
           torch.convolution(tx, tw, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1))
    (w, tw) = _pair(4, 2, 3, 3)
    _close(lazyt.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
           torch.convolution(tx, tw, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))


@pytest.mark.parametrize("cell,gates", [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1),
                                        ("gru_cell", 3), ("lstm_cell", 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_cells_values_and_grads(cell, gates, bias):
    (x, tx), (h, th) = _pair(3, 4), _pair(3, 5)
    (wi, twi), (wh, twh) = _pair(5 * gates, 4), _pair(5 * gates, 5)
    (bi, tbi), (bh, tbh) = _pair(5 * gates), _pair(5 * gates)
    lz = [x, h, wi, wh] + ([bi, bh] if bias else [])
    tt = [tx, th, twi, twh] + ([tbi, tbh] if bias else [])
    for t in lz:
        t.require_grad()
    for t in tt:
        t.requires_grad_()
    if cell == "lstm_cell":
        (c, tc) = _pair(3, 5)
        out = lazyt.lstm_cell(lz[0], (lz[1], c), *lz[2:])
        ref = torch.lstm_cell(tt[0], (tt[1], tc), *tt[2:])
        _close(out, ref)
        (out[0].sum() + out[1].square().sum()).backward()
        (ref[0].sum() + ref[1].square().sum()).backward()
    else:
        out, ref = getattr(lazyt, cell)(*lz), getattr(torch, cell)(*tt)
        _close(out, ref)
        out.square().sum().backward()
        ref.square().sum().backward()
    _close([t.grad for t in lz], [t.grad for t in tt], 1e-4)


def test_cell_errors():
    with pytest.raises(ShapeError):
        lazyt.gru_cell(lazyt.zeros(2, 3), lazyt.zeros(2, 4), lazyt.zeros(12, 5), lazyt.zeros(12, 4))
    with pytest.raises(InvalidArgumentError):
        lazyt.lstm_cell(lazyt.zeros(2, 3), lazyt.zeros(2, 4), lazyt.zeros(16, 3),
                        lazyt.zeros(16, 4))


def test_select_rsub_fill_adjoint():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    x, tx = lazyt.tensor(a), torch.from_numpy(a)
    for dim, index in ((0, 1), (1, -1), (-1, 2)):
        _close(lazyt.select(x, dim, index), torch.select(tx, dim, index))
        _close(x.select(dim, index), tx.select(dim, index))
    with pytest.raises(IndexOutOfRangeError):
        x.select(1, 3)
    with pytest.raises(IndexOutOfRangeError):
        x.select(3, 0)
    _close(lazyt.rsub(x, 5, alpha=2), torch.rsub(tx, 5, alpha=2))
    _close(lazyt.rsub(x, x[0]), torch.rsub(tx, tx[0]))
    _close(lazyt.fill(x, 3), torch.fill(tx, 3))
    _close(lazyt.fill(x, lazyt.tensor(2.5)), torch.fill(tx, torch.tensor(2.5)))
    _close(lazyt.adjoint(x), torch.adjoint(tx))
    _close(x.mH, tx.mH)
    _close(x[0].H, tx[0].H)
    with pytest.raises(ShapeError):
        x.H


def test_queries_and_identities():
    x = lazyt.tensor([1.0, float("inf"), float("-inf"), float("nan")])
    tx = torch.tensor([1.0, float("inf"), float("-inf"), float("nan")])
    for name in ("isposinf", "isneginf", "isreal"):
        np.testing.assert_array_equal(getattr(lazyt, name)(x).numpy(),
                                      getattr(torch, name)(tx).numpy())
    assert not lazyt.isposinf(lazyt.tensor([1, 2])).numpy().any()
    assert lazyt.numel(x) == 4 and lazyt.is_tensor(x) and not lazyt.is_tensor(3)
    assert lazyt.is_nonzero(lazyt.tensor([2.0])) and not lazyt.is_nonzero(lazyt.tensor(0))
    with pytest.raises(ShapeError):
        lazyt.is_nonzero(lazyt.tensor([1.0, 2.0]))
    assert lazyt.conj(x) is x and x.resolve_conj() is x and not x.is_conj()
    assert not lazyt.is_neg(x)
    assert not lazyt.detach(x.require_grad() if False else lazyt.ones(2).require_grad()) \
        .requires_grad


def test_concat_split_unravel_and_scalars():
    (a, ta), (b, tb) = _pair(2, 3), _pair(1, 3)
    _close(lazyt.concat([a, b]), torch.concat([ta, tb]))
    _close(lazyt.concatenate([a, b], axis=0), torch.concatenate([ta, tb], axis=0))
    (x, tx) = _pair(7, 2)
    _close(list(lazyt.split_with_sizes(x, [3, 4])), list(torch.split_with_sizes(tx, [3, 4])))
    _close(list(x.unsafe_split(3)), list(tx.unsafe_split(3)))
    idx = np.array([5, -1, 7, 0])
    got = lazyt.unravel_index(lazyt.tensor(idx), (2, 3))
    ref = torch.unravel_index(torch.from_numpy(idx), (2, 3))
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g.numpy(), r.numpy())
    assert got[0].dtype is lazyt.int64
    with pytest.raises(DTypeError):
        lazyt.unravel_index(lazyt.tensor([1.0]), (2,))
    s = lazyt.scalar_tensor(3)
    assert s.shape == () and s.dtype is lazyt.float32 and s.item() == 3
    t = lazyt.as_tensor([1, 2])
    assert t.dtype is lazyt.int64 and lazyt.as_tensor(t) is t
    assert lazyt.asarray(t, copy=True) is not t
    assert lazyt.as_tensor(t, dtype=lazyt.float32).dtype is lazyt.float32


@pytest.mark.parametrize("name,args", [
    ("permute_copy", ([2, 0, 1],)), ("transpose_copy", (0, 2)), ("t_copy", None),
    ("squeeze_copy", ()), ("unsqueeze_copy", (1,)), ("diagonal_copy", (0, 1, 2)),
    ("expand_copy", ([2, 2, 3, 4],)), ("select_copy", (1, 0)), ("view_copy", ([6, 4],)),
    ("unfold_copy", (2, 2, 1)), ("slice_copy", (2, 1, 3)), ("alias_copy", ()),
    ("detach_copy", ()),
])
def test_view_copies(name, args):
    (x, tx) = _pair(2, 3, 4)
    if args is None:
        (x, tx), args = _pair(3, 4), ()
    _close(getattr(lazyt, name)(x, *args), getattr(torch, name)(tx, *args))


def test_dtype_rules():
    i, f = lazyt.tensor([1]), lazyt.tensor([1.0], dtype=lazyt.float16)
    assert lazyt.result_type(i, 1.0) is lazyt.float32
    assert lazyt.result_type(f, lazyt.tensor([1.0])) is lazyt.float32
    assert lazyt.result_type(i, i.to(lazyt.int8)) is lazyt.int64
    assert lazyt.promote_types(lazyt.int32, lazyt.float16) is lazyt.float16
    assert lazyt.promote_types("uint8", "int8") is lazyt.int16
    cases = [("float32", "int32"), ("int32", "float32"), ("int64", "bool"), ("bool", "uint8"),
             ("float64", "float16"), ("int8", "uint8")]
    for a, b in cases:
        assert lazyt.can_cast(getattr(lazyt, a), getattr(lazyt, b)) == \
            torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)
    assert lazyt.broadcast_shapes((2, 1), (3,), 1) == tuple(torch.broadcast_shapes((2, 1), (3,),
                                                                                  1))
    with pytest.raises(ShapeError):
        lazyt.broadcast_shapes((2,), (3,))
    with pytest.raises(DTypeError):
        lazyt.promote_types("nope", lazyt.int8)


def test_default_dtype_is_settable():
    assert lazyt.get_default_dtype() is lazyt.float32
    try:
        lazyt.set_default_dtype(lazyt.float64)
        assert lazyt.tensor([1.5]).dtype is lazyt.float64
        assert lazyt.zeros(2).dtype is lazyt.float64
        assert lazyt.get_default_dtype() is lazyt.float64
        with pytest.raises(DTypeError):
            lazyt.set_default_dtype(lazyt.int32)
    finally:
        lazyt.set_default_dtype(lazyt.float32)
    assert lazyt.zeros(2).dtype is lazyt.float32


def test_inclusive_range_is_deprecated_and_not_star_exported():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = lazyt.range(1, 2.5, 0.5)
    assert any("deprecated" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(r.numpy(), torch.range(1, 2.5, 0.5).numpy())
        assert lazyt.range(3).shape == (4,)
    assert "range" not in lazyt.__all__


def test_ctc_loss_top_level_form():
    lp = RNG.standard_normal((6, 2, 4)).astype(np.float32)
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    tg = np.array([[1, 2], [3, 3]])
    args = ([6, 5], [2, 2])
    for code in (0, 1, 2):
        _close(lazyt.ctc_loss(lazyt.tensor(lp), lazyt.tensor(tg), *args, 0, code),
               torch.ctc_loss(torch.from_numpy(lp), torch.from_numpy(tg), *args, 0, code), 1e-4)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((7, 3), True), ((7, 3), False),
                                        ((3, 5), True), ((3, 3, 3), False)])
def test_fill_diagonal_matches_torch(shape, wrap):
    got = lazyt.zeros(*shape).fill_diagonal_(2.5, wrap=wrap)
    ref = torch.zeros(*shape).fill_diagonal_(2.5, wrap=wrap)
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    with pytest.raises(ShapeError):
        lazyt.zeros(2, 3, 3).fill_diagonal_(1.0)


def test_tensor_odds_and_ends():
    x = torch.tensor([1.0, -2.0, 0.0, float("nan")])
    lx = lazyt.tensor(x.numpy())
    np.testing.assert_array_equal(lazyt.angle(lx).numpy(), torch.angle(x).numpy())
    np.testing.assert_array_equal(lazyt.tensor([1, -2]).angle().numpy(),
                                  torch.tensor([1, -2]).angle().numpy())
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for size in ((1, 3, 1), (3, 4), (2, 1, 4), (4,)):
        _close(lazyt.tensor(a).sum_to_size(*size), torch.from_numpy(a).sum_to_size(*size))
    with pytest.raises(ShapeError):
        lazyt.tensor(a).sum_to_size(5)
    assert lazyt.ones(2).type() == "lazyt.FloatTensor"
    assert lazyt.ones(2, dtype=lazyt.int64).type() == "lazyt.LongTensor"
    assert lazyt.ones(2).type(lazyt.int32).dtype is lazyt.int32
    assert lazyt.ones(2).type("torch.DoubleTensor").dtype is lazyt.float64
    assert lazyt.ones(2).get_device() == torch.ones(2).get_device() == -1
    t = lazyt.ones(3, 2, dtype=lazyt.float16)
    assert (t.nbytes, t.itemsize) == (12, 2) and not t.is_sparse and not t.is_quantized
    assert t.real is t and not t.is_pinned() and t.pin_memory() is t
    with pytest.raises(DTypeError):
        t.imag
    (m, tm), (b, tb), (c, tc) = _pair(2, 2), _pair(2, 3), _pair(3, 2)
    m.addmm_(b, c, beta=0.5, alpha=2)
    tm.addmm_(tb, tc, beta=0.5, alpha=2)
    _close(m, tm)
    (m, tm), (b, tb), (c, tc) = _pair(2, 2, 2), _pair(2, 2, 3), _pair(2, 3, 2)
    _close(m.baddbmm_(b, c), tm.baddbmm_(tb, tc))
    _close(lazyt.tensor([5.0, -5.0]).remainder_(3), torch.tensor([5.0, -5.0]).remainder_(3))
    _close(lazyt.tensor([-1.0, 2.0]).hardshrink(1.5), torch.tensor([-1.0, 2.0]).hardshrink(1.5))
    _close(lazyt.tensor([-1.0, 2.0]).prelu(lazyt.tensor([0.25])),
           torch.tensor([-1.0, 2.0]).prelu(torch.tensor([0.25])))


def test_set_printoptions():
    from lazyt.tensor import PRINT_OPTIONS
    saved = dict(PRINT_OPTIONS)
    x = lazyt.tensor([1.123456789, 2e-5, 3000.0])
    try:
        lazyt.set_printoptions(precision=2)
        assert "1.12e+00" in repr(x)
        lazyt.set_printoptions(sci_mode=False)
        assert "3000." in repr(x) and "e+" not in repr(x)
        assert lazyt.get_printoptions() == {"precision": 2, "sci_mode": False}
        lazyt.set_printoptions(profile="default", sci_mode=True)
        assert "..." in repr(lazyt.arange(2000.0))
        lazyt.set_printoptions(profile="full")
        assert "..." not in repr(lazyt.arange(2000.0))
        with pytest.raises(InvalidArgumentError):
            lazyt.set_printoptions(profile="long")
        with pytest.raises(InvalidArgumentError):
            lazyt.set_printoptions(precision=-1)
    finally:
        PRINT_OPTIONS.clear()
        PRINT_OPTIONS.update(saved)


def test_set_num_threads_bounds_the_cpu_work():
    from lazyt import config
    saved = config._THREADS_SET[0]
    try:
        lazyt.set_num_threads(1)
        assert lazyt.get_num_threads() == 1 and config.max_threads() == 1
        a = lazyt.tensor(RNG.standard_normal((300, 200)).astype(np.float32))
        np.testing.assert_allclose((a.exp() @ a.T).numpy(),
                                   np.exp(a.numpy()) @ a.numpy().T, rtol=1e-4)
        with pytest.raises(InvalidArgumentError):
            lazyt.set_num_threads(0)
    finally:
        config._THREADS_SET[0] = saved


def test_settings_queries_and_static_nonzero():
    assert not lazyt.is_inference_mode_enabled()
    with lazyt.inference_mode():
        assert lazyt.is_inference_mode_enabled() and not lazyt.is_grad_enabled()
    with lazyt.inference_mode(False):
        assert not lazyt.is_inference_mode_enabled()
    assert lazyt.get_float32_matmul_precision() == "highest"
    try:
        lazyt.set_float32_matmul_precision("high")
        assert lazyt.get_float32_matmul_precision() == "high"
        with pytest.raises(InvalidArgumentError):
            lazyt.set_float32_matmul_precision("low")
    finally:
        lazyt.set_float32_matmul_precision("highest")
    for v, size in (([0, 1, 0, 2], 4), ([[0, 1], [3, 0]], 1), (5, 2), ([0, 0], 3)):
        got = lazyt.nonzero_static(lazyt.tensor(v), size=size, fill_value=-7)
        ref = torch.nonzero_static(torch.tensor(v), size=size, fill_value=-7)
        assert got.shape == tuple(ref.shape)
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
    assert lazyt.empty_strided((2, 3), (3, 1)).shape == (2, 3)
    assert lazyt.empty_permuted((2, 3), (1, 0), dtype=lazyt.int32).dtype is lazyt.int32
    with pytest.raises(InvalidArgumentError):
        lazyt.empty_permuted((2, 3), (0, 0))
    x = lazyt.ones(2)
    assert lazyt.real(x) is x and lazyt.is_signed(x) and lazyt.get_device(x) == -1
    with pytest.raises(DTypeError):
        lazyt.imag(x)


@pytest.mark.parametrize("name,args", [("squeeze_", ()), ("squeeze_", (1,)), ("unsqueeze_", (0,)),
                                       ("unsqueeze_", (-1,)), ("transpose_", (0, 2)),
                                       ("swapaxes_", (0, 1)), ("swapdims_", (1, 2))])
def test_in_place_views_change_the_shape(name, args):
    a = RNG.standard_normal((2, 1, 3)).astype(np.float32)
    x, tx = lazyt.tensor(a), torch.from_numpy(a.copy())
    assert getattr(x, name)(*args) is x
    getattr(tx, name)(*args)
    _close(x, tx)


def test_in_place_views_and_autodiff():
    w = lazyt.ones(2, 3).require_grad()
    y = w * 2
    y.t_()
    assert y.shape == (3, 2)
    (y * lazyt.tensor([[1.0, 2.0]] * 3)).sum().backward()
    tw = torch.ones(2, 3, requires_grad=True)
    ty = tw * 2
    ty.t_()
    (ty * torch.tensor([[1.0, 2.0]] * 3)).sum().backward()
    _close(w.grad, tw.grad)
    with pytest.raises(lazyt.GradError):
        w.unsqueeze_(0)
    m = lazyt.ones(2, 2)
    m.t_()
    assert m.shape == (2, 2)


@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 2), 1), ((3, 3), (1, 1), 0),
                                                ((2, 3), (3, 1), 0), ((4,), (0,), 2),
                                                ((0, 2), (1, 1), 0)])
def test_as_strided_values_and_grads(size, stride, offset):
    a = RNG.standard_normal(6).astype(np.float32)
    x, tx = lazyt.tensor(a).require_grad(), torch.from_numpy(a.copy()).requires_grad_()
    out, ref = x.as_strided(size, stride, offset), tx.as_strided(size, stride, offset)
    _close(out, ref)
    w = RNG.standard_normal(size).astype(np.float32)
    (out * lazyt.tensor(w)).sum().backward()
    (ref * torch.from_numpy(w)).sum().backward()
    _close(x.grad, tx.grad)
    src = RNG.standard_normal(size).astype(np.float32)
    reads = np.asarray(torch.arange(6).as_strided(size, stride, offset)).ravel()
    if len(set(reads.tolist())) == reads.size:      # torch refuses overlapping writes
        _close(lazyt.as_strided_scatter(lazyt.tensor(a), lazyt.tensor(src), size, stride, offset),
               torch.as_strided_scatter(torch.from_numpy(a), torch.from_numpy(src), size,
                                        stride, offset))


def test_as_strided_errors_and_resize():
    x = lazyt.arange(6.0)
    with pytest.raises(IndexOutOfRangeError):
        x.as_strided((3, 3), (3, 1))
    with pytest.raises(ShapeError):
        x.as_strided((2,), (1, 1))
    with pytest.raises(InvalidArgumentError):
        x.as_strided((2,), (-1,))
    r = lazyt.arange(6.0)
    r.resize_(2, 2)
    _close(r, torch.arange(6.0).resize_(2, 2))
    r.resize_((3, 3))
    assert r.shape == (3, 3) and r.numpy().ravel()[:4].tolist() == [0, 1, 2, 3]
    r.resize_as_(lazyt.zeros(1, 2))
    assert r.shape == (1, 2)
    with pytest.raises(lazyt.GradError):
        lazyt.ones(2).require_grad().resize_(4)
    v = lazyt.arange(6.0)
    v.as_strided_((2, 2), (2, 1), 1)
    _close(v, torch.arange(6.0).as_strided((2, 2), (2, 1), 1))
