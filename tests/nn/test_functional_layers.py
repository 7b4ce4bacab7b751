"""The functional forms of torch's layers in `lazyt.nn.functional` (layer_norm, rms_norm,
group_norm, linear, dropout, embedding, glu, the shrink activations, threshold, huber_loss,
cosine_similarity, pairwise_distance) and the modules beside them: values against numpy
references on every device, float64 gradients on cpu, errors, and torch where installed."""
import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt import nn
from lazyt.testing import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")


def np_layer_norm(x, n_dims, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - n_dims, x.ndim))
    x64 = x.astype(np.float64)
    c = x64 - x64.mean(axes, keepdims=True)
    y = c / np.sqrt((c * c).mean(axes, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y.astype(x.dtype)


def np_rms_norm(x, n_dims, w=None, eps=None):
    axes = tuple(range(x.ndim - n_dims, x.ndim))
    if eps is None:
        eps = np.finfo(np.float32 if x.dtype == np.float16 else x.dtype).eps
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 * x64).mean(axes, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y.astype(x.dtype)


def np_group_norm(x, groups, w=None, b=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    y = g.reshape(x.shape)
    along = (1, c) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(along)
    if b is not None:
        y = y + b.reshape(along)
    return y.astype(x.dtype)


def _t(a, device, grad=False):
    t = lazyt.tensor(a, device=device)
    return t.require_grad() if grad else t


# ---------------------------------------------------------------------- layer_norm / rms_norm
@pytest.mark.parametrize("shape,n_dims", [((4, 6), 1), ((2, 3, 5), 2), ((7,), 1)])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_matches_the_formula(device, check, rng, shape, n_dims, affine):
    x = rng.standard_normal(shape).astype(np.float32)
    inner = shape[len(shape) - n_dims:]
    w = rng.standard_normal(inner).astype(np.float32) if affine else None
    b = rng.standard_normal(inner).astype(np.float32) if affine else None
    got = F.layer_norm(_t(x, device), inner, None if w is None else _t(w, device),
                       None if b is None else _t(b, device), eps=1e-4)
    check(got, np_layer_norm(x, n_dims, w, b, 1e-4), atol=1e-5)


@pytest.mark.parametrize("shape,n_dims", [((4, 6), 1), ((2, 3, 5), 2), ((7,), 1)])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm_matches_the_formula(device, check, rng, shape, n_dims, affine, eps):
    x = rng.standard_normal(shape).astype(np.float32)
    inner = shape[len(shape) - n_dims:]
    w = rng.standard_normal(inner).astype(np.float32) if affine else None
    got = F.rms_norm(_t(x, device), inner, None if w is None else _t(w, device), eps=eps)
    check(got, np_rms_norm(x, n_dims, w, eps), atol=1e-5)


def test_norms_of_float16_compute_in_float32_and_return_float16(device, check, rng):
    x = (rng.standard_normal((3, 8)) * 1e-2).astype(np.float16)
    w = rng.standard_normal(8).astype(np.float32)  # a float32 weight is accepted, as torch
    check(F.rms_norm(_t(x, device), (8,)), np_rms_norm(x, 1))
    check(F.rms_norm(_t(x, device), 8, _t(w, device)), np_rms_norm(x, 1, w))
    check(F.layer_norm(_t(x, device), (8,), _t(w, device)), np_layer_norm(x, 1, w))


def test_the_rms_norm_default_eps_is_the_compute_dtypes_epsilon(rng):
    # tiny rows: eps dominates, so a wrong default shows
    x = (rng.standard_normal((2, 4)) * 1e-4).astype(np.float32)
    got = F.rms_norm(lazyt.tensor(x), (4,)).numpy()
    np.testing.assert_allclose(got, np_rms_norm(x, 1, eps=np.finfo(np.float32).eps), rtol=1e-5)
    mod = nn.RMSNorm(4, elementwise_affine=False)
    assert mod.eps is None
    np.testing.assert_allclose(mod(lazyt.tensor(x)).numpy(), got, rtol=1e-6)


def test_norm_gradients_float64():
    rng = np.random.default_rng(3)
    x = lazyt.tensor(rng.standard_normal((3, 2, 4))).require_grad()
    w = lazyt.tensor(rng.standard_normal((2, 4))).require_grad()
    b = lazyt.tensor(rng.standard_normal((2, 4))).require_grad()
    assert gradcheck(lambda x, w: F.rms_norm(x, (2, 4), w, eps=1e-6), [x, w])
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (2, 4), w, b), [x, w, b])
    g = lazyt.tensor(rng.standard_normal(6)).require_grad()
    h = lazyt.tensor(rng.standard_normal(6)).require_grad()
    xg = lazyt.tensor(rng.standard_normal((2, 6, 3))).require_grad()
    assert gradcheck(lambda x, w, b: F.group_norm(x, 3, w, b), [xg, g, h])


@pytest.mark.parametrize("call", [
    lambda x: F.layer_norm(x, ()),
    lambda x: F.rms_norm(x, ()),
    lambda x: F.layer_norm(x, (5,)),
    lambda x: F.rms_norm(x, (3, 4, 4)),
    lambda x: F.layer_norm(x, (4,), lazyt.ones(5)),
    lambda x: F.rms_norm(x, (4,), lazyt.ones(4, dtype=lazyt.float64)),
    lambda x: F.layer_norm(x.to(lazyt.int64), (4,)),
    lambda x: F.group_norm(x.reshape(12), 2),
    lambda x: F.group_norm(x.reshape(3, 4, 1), 3),
    lambda x: F.group_norm(x.reshape(3, 4, 1), 2, lazyt.ones(3)),
], ids=["ln-empty", "rms-empty", "ln-shape", "rms-too-many-dims", "ln-weight-shape",
        "rms-weight-dtype", "ln-int", "gn-1d", "gn-groups", "gn-weight-shape"])
def test_norm_errors_name_the_op_and_leave_the_runtime_usable(call):
    x = lazyt.ones((3, 4))
    with pytest.raises(lazyt.LazytError) as e:
        call(x)
    assert any(n in str(e.value) for n in ("layer_norm", "rms_norm", "group_norm"))
    assert F.layer_norm(x, (4,)).numpy().shape == (3, 4)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 3), 3), ((3, 4, 7), 4), ((2, 4), 1)])
def test_group_norm_and_its_module(device, check, rng, shape, groups):
    x = rng.standard_normal(shape).astype(np.float32)
    c = shape[1]
    w = rng.standard_normal(c).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    check(F.group_norm(_t(x, device), groups, _t(w, device), _t(b, device)),
          np_group_norm(x, groups, w, b), atol=1e-5)
    mod = nn.GroupNorm(groups, c, device=device)
    check(mod(_t(x, device)), np_group_norm(x, groups), atol=1e-5)
    assert [n for n, _ in mod.named_parameters()] == ["weight", "bias"]
    assert nn.GroupNorm(groups, c, affine=False).weight is None


# the numba row kernel of the numpy backend (float32 rows of >= LAZYT_NUMBA_MIN elements)
def test_rms_norm_runs_as_one_numba_row_pass(rng):
    jit = pytest.importorskip("lazyt.backends.numpy.jit")
    if not jit.available():
        pytest.skip("numba is not installed here")
    x = rng.standard_normal((512, 256)).astype(np.float32)
    w = rng.standard_normal(256).astype(np.float32)
    before = jit.STATS["runs"]
    got = F.rms_norm(lazyt.tensor(x), (256,), lazyt.tensor(w), eps=1e-6).numpy()
    assert jit.STATS["runs"] == before + 1
    ref = np_rms_norm(x.astype(np.float64), 1, w.astype(np.float64), 1e-6)
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=2e-6)
    # the fallback (numba off) computes the same values through the composite's primitives
    plain = F.rms_norm(lazyt.tensor(x, device=lazyt.device("cpu", fusion=False)), (256,),
                       lazyt.tensor(w, device=lazyt.device("cpu", fusion=False)), eps=1e-6)
    np.testing.assert_allclose(got, plain.numpy(), rtol=2e-6, atol=2e-6)


def test_rms_norm_is_recorded_as_one_op_only_where_the_kernel_runs(rng):
    from lazyt.backends.numpy import jit
    from lazyt.backends.numpy.backend import NumpyBackend
    from lazyt.ops import TensorMeta as meta, kernel_when
    when = kernel_when(NumpyBackend.rms_norm)
    big = meta((512, 256), lazyt.float32)
    small = meta((4, 8), lazyt.float32)
    assert when(big, 1, 1e-6, None) == jit.available()
    assert not when(small, 1, 1e-6, None)
    assert not when(meta((512, 256), lazyt.float64), 1, 1e-6, None)


# ---------------------------------------------------------------------- linear
def test_linear(device, check, rng):
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    check(F.linear(_t(x, device), _t(w, device)), x @ w.T, atol=1e-5)
    check(F.linear(_t(x, device), _t(w, device), _t(b, device)), x @ w.T + b, atol=1e-5)
    x64 = lazyt.tensor(rng.standard_normal((3, 5))).require_grad()
    w64 = lazyt.tensor(rng.standard_normal((4, 5))).require_grad()
    b64 = lazyt.tensor(rng.standard_normal(4)).require_grad()
    assert gradcheck(F.linear, [x64, w64, b64])


@pytest.mark.parametrize("call,err", [
    (lambda: F.linear(lazyt.ones((2, 3)), lazyt.ones((4, 5))), lazyt.ShapeError),
    (lambda: F.linear(lazyt.ones((2, 3)), lazyt.ones(3)), lazyt.ShapeError),
    (lambda: F.linear(lazyt.ones((2, 3)), lazyt.ones((4, 3), dtype=lazyt.float64)),
     lazyt.DTypeError),
    (lambda: F.linear(lazyt.ones((2, 3)), lazyt.ones((4, 3)), lazyt.ones(4, dtype=lazyt.float64)),
     lazyt.DTypeError),
], ids=["in-features", "1-d-weight", "dtype", "bias-dtype"])
def test_linear_errors(call, err):
    with pytest.raises(err, match="linear"):
        call()


# ---------------------------------------------------------------------- dropout
def test_dropout_keeps_the_expected_share_scaled(rng):
    lazyt.manual_seed(0)
    x = lazyt.ones((200, 100))
    y = F.dropout(x, 0.25).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert F.dropout(x, 0.25, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).numpy().any()


@pytest.mark.parametrize("p", [-0.1, 1.5, "a", True])
def test_dropout_rejects_a_p_that_is_not_a_probability(p):
    with pytest.raises(lazyt.InvalidArgumentError, match="dropout"):
        F.dropout(lazyt.ones(3), p)
    with pytest.raises(lazyt.InvalidArgumentError, match="Dropout"):
        nn.Dropout(p)


def test_dropout_inplace_updates_the_input():
    lazyt.manual_seed(3)
    x = lazyt.ones(1000)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x
    v = x.numpy()
    assert set(np.unique(v)) == {0.0, 2.0} and 350 < (v == 0).sum() < 650
    y = lazyt.ones(4)
    assert F.dropout(y, 0.5, training=False, inplace=True) is y
    np.testing.assert_array_equal(y.numpy(), 1.0)


# ---------------------------------------------------------------------- embedding
def test_embedding_values_and_the_padding_rows_gradient(device, check, rng):
    table = rng.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([[0, 2, 4], [4, 0, 1]])
    check(F.embedding(_t(ids, device), _t(table, device)), table[ids])
    w = _t(table, device, grad=True)
    out = F.embedding(_t(ids, device), w, padding_idx=-1)  # row 4
    check(out, table[ids])  # the padding row is still read
    (out * 2).sum().backward()
    want = np.zeros_like(table)
    np.add.at(want, ids.reshape(-1), 2.0)
    want[4] = 0
    check(w.grad, want)


def test_embedding_module_padding_row_gets_no_gradient():
    emb = nn.Embedding(4, 2, padding_idx=1)
    emb(lazyt.tensor([1, 1, 2])).sum().backward()
    g = emb.weight.grad.numpy()
    assert not g[1].any() and g[2].all()


@pytest.mark.parametrize("call,err", [
    (lambda w: F.embedding(lazyt.tensor([0]), w, padding_idx=5), lazyt.IndexOutOfRangeError),
    (lambda w: F.embedding(lazyt.tensor([0]), w, max_norm=1.0), lazyt.InvalidArgumentError),
    (lambda w: F.embedding(lazyt.tensor([0.5]), w), lazyt.DTypeError),
    (lambda w: F.embedding(lazyt.tensor([0]), w.reshape(-1)), lazyt.ShapeError),
], ids=["padding-range", "max-norm", "float-ids", "1-d-table"])
def test_embedding_errors(call, err):
    with pytest.raises(err, match="embedding"):
        call(lazyt.ones((5, 3)))


# ---------------------------------------------------------------------- small activations, losses
X = np.array([[-2.0, -0.6, -0.5, -0.1, 0.0], [0.1, 0.5, 0.6, 1.5, 3.0]], np.float32)

ACTS = {
    "glu": (lambda x: F.glu(x, 0), lambda x: x[:1] / (1 + np.exp(-x[1:]))),
    "hardshrink": (lambda x: F.hardshrink(x), lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    "softshrink": (lambda x: F.softshrink(x, 0.4),
                   lambda x: np.where(x > 0.4, x - 0.4, np.where(x < -0.4, x + 0.4, 0))),
    "tanhshrink": (lambda x: F.tanhshrink(x), lambda x: x - np.tanh(x)),
    "threshold": (lambda x: F.threshold(x, 0.2, -3.0), lambda x: np.where(x > 0.2, x, -3.0)),
}


@pytest.mark.parametrize("name", list(ACTS))
def test_small_activations(device, check, name):
    fn, ref = ACTS[name]
    check(fn(_t(X, device)), ref(X.astype(np.float64)).astype(np.float32), atol=1e-6)


@pytest.mark.parametrize("name", ["glu", "softshrink", "tanhshrink"])
def test_small_activation_gradients_float64(name):
    x = lazyt.tensor(np.array([[-2.0, -0.7, -0.2, 0.3], [0.2, 0.7, 1.5, 3.0]])).require_grad()
    assert gradcheck(ACTS[name][0], [x])


def test_activation_modules_match_the_functions(rng):
    x = lazyt.tensor(X)
    for mod, fn in [(nn.GLU(0), ACTS["glu"][0]), (nn.Hardshrink(), F.hardshrink),
                    (nn.Softshrink(0.4), ACTS["softshrink"][0]), (nn.Tanhshrink(), F.tanhshrink),
                    (nn.Threshold(0.2, -3.0), ACTS["threshold"][0]),
                    (nn.Softmax(dim=1), lambda t: F.softmax(t, 1)),
                    (nn.LogSoftmax(dim=0), lambda t: F.log_softmax(t, 0))]:
        np.testing.assert_array_equal(mod(x).numpy(), fn(x).numpy())
    with pytest.warns(UserWarning, match="implicit dimension"):  # torch's choice: dim 1
        np.testing.assert_array_equal(nn.Softmax()(x).numpy(), F.softmax(x, 1).numpy())
    with pytest.raises(lazyt.ShapeError, match="glu"):
        F.glu(lazyt.ones((2, 3)))
    with pytest.raises(lazyt.InvalidArgumentError, match="softshrink"):
        F.softshrink(x, -1.0)


def test_flatten_and_unflatten_modules():
    x = lazyt.arange(24).reshape(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    np.testing.assert_array_equal(nn.Unflatten(1, (3, 4))(nn.Flatten()(x)).numpy(), x.numpy())


def test_huber_loss(device, check):
    a = X
    b = X[::-1].copy() * 0.5
    d = np.abs(a.astype(np.float64) - b)
    elem = np.where(d < 0.8, 0.5 * d * d, 0.8 * (d - 0.4))
    check(F.huber_loss(_t(a, device), _t(b, device), delta=0.8), np.float32(elem.mean()))
    check(nn.HuberLoss("sum", 0.8)(_t(a, device), _t(b, device)), np.float32(elem.sum()),
          rtol=1e-5)
    with pytest.raises(lazyt.InvalidArgumentError, match="huber_loss"):
        F.huber_loss(_t(a, device), _t(b, device), delta=0.0)


def test_cosine_similarity_and_pairwise_distance(device, check, rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((1, 5)).astype(np.float32)
    a[0] = 0  # a zero vector: its norm is clamped to eps, the similarity 0
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    na = np.maximum(np.linalg.norm(a64, axis=1, keepdims=True), 1e-8)
    nb = np.maximum(np.linalg.norm(b64, axis=1, keepdims=True), 1e-8)
    check(F.cosine_similarity(_t(a, device), _t(b, device)),
          ((a64 / na) * (b64 / nb)).sum(1).astype(np.float32), atol=1e-6)
    check(nn.CosineSimilarity(dim=1)(_t(a, device), _t(b, device)),
          ((a64 / na) * (b64 / nb)).sum(1).astype(np.float32), atol=1e-6)
    want = np.linalg.norm(a64 - b64 + 1e-6, axis=-1).astype(np.float32)
    check(F.pairwise_distance(_t(a, device), _t(b, device)), want, rtol=1e-5)
    check(nn.PairwiseDistance(keepdim=True)(_t(a, device), _t(b, device)), want[:, None],
          rtol=1e-5)
    want1 = np.abs(a64 - b64 + 1e-6).sum(-1).astype(np.float32)
    check(F.pairwise_distance(_t(a, device), _t(b, device), p=1), want1, rtol=1e-5)


def test_cosine_similarity_gradient_float64(rng):
    a = lazyt.tensor(rng.standard_normal((3, 4))).require_grad()
    b = lazyt.tensor(rng.standard_normal((3, 4))).require_grad()
    assert gradcheck(lambda a, b: F.cosine_similarity(a, b, dim=1), [a, b])
    assert gradcheck(lambda a, b: F.pairwise_distance(a, b), [a, b])


# ---------------------------------------------------------------------- against torch
@needs_torch
def test_against_torch(rng):
    x = rng.standard_normal((2, 6, 5)).astype(np.float32)
    w6 = rng.standard_normal(6).astype(np.float32)
    w5 = rng.standard_normal(5).astype(np.float32)
    tx = torch.tensor(x)
    pairs = [
        (F.layer_norm(lazyt.tensor(x), (5,), lazyt.tensor(w5)),
         TF.layer_norm(tx, (5,), torch.tensor(w5))),
        (F.rms_norm(lazyt.tensor(x), (6, 5)), TF.rms_norm(tx, (6, 5))),
        (F.rms_norm(lazyt.tensor(x).half(), (5,)), TF.rms_norm(tx.half(), (5,))),
        (nn.RMSNorm(5)(lazyt.tensor(x)), torch.nn.RMSNorm(5)(tx)),
        (F.group_norm(lazyt.tensor(x), 2, lazyt.tensor(w6)),
         TF.group_norm(tx, 2, torch.tensor(w6))),
        (F.glu(lazyt.tensor(x), 1), TF.glu(tx, 1)),
        (F.huber_loss(lazyt.tensor(x), lazyt.tensor(x[::-1].copy())),
         TF.huber_loss(tx, torch.tensor(x[::-1].copy()))),
        (F.cosine_similarity(lazyt.tensor(x), lazyt.tensor(x[:1]), dim=2),
         TF.cosine_similarity(tx, tx[:1], dim=2)),
        (F.pairwise_distance(lazyt.tensor(x), lazyt.tensor(x[:, :1])),
         TF.pairwise_distance(tx, tx[:, :1])),
        (F.softshrink(lazyt.tensor(x)), TF.softshrink(tx)),
    ]
    for got, want in pairs:
        want = want.detach()
        assert got.shape == tuple(want.shape)
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        tol = 2e-3 if want.dtype == torch.float16 else 2e-5
        np.testing.assert_allclose(got.numpy().astype(np.float64),
                                   want.numpy().astype(np.float64), rtol=tol, atol=tol)


@needs_torch
def test_group_norm_and_rms_norm_gradients_against_torch(rng):
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)
    lx, lw = lazyt.tensor(x).require_grad(), lazyt.tensor(w).require_grad()
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (F.group_norm(lx, 2, lw) ** 2).sum().backward()
    (TF.group_norm(tx, 2, tw) ** 2).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lw.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)
    w3 = rng.standard_normal(3).astype(np.float32)
    lx, lw = lazyt.tensor(x).require_grad(), lazyt.tensor(w3).require_grad()
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w3, requires_grad=True)
    (F.rms_norm(lx, (3,), lw) ** 2).sum().backward()
    (TF.rms_norm(tx, (3,), tw) ** 2).sum().backward()
    np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lw.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- batch norm
def np_batch_norm_train(x, eps=1e-5):
    dims = (0,) + tuple(range(2, x.ndim))
    x64 = x.astype(np.float64)
    mean = x64.mean(dims, keepdims=True)
    var = x64.var(dims, keepdims=True)
    n = x.size // x.shape[1]
    return ((x64 - mean) / np.sqrt(var + eps)).astype(x.dtype), mean.reshape(-1), \
        var.reshape(-1) * n / (n - 1)


@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (4, 3, 2, 5)),
                                       (nn.BatchNorm3d, (2, 3, 2, 2, 2))])
def test_batch_norm_modules_train_and_eval(device, check, rng, cls, shape):
    m = cls(3, momentum=0.2, device=device)
    rm, rv = np.zeros(3), np.ones(3)
    for _ in range(3):
        x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
        want, mean, var = np_batch_norm_train(x)
        check(m(_t(x, device)), want, atol=1e-5)
        rm, rv = 0.8 * rm + 0.2 * mean, 0.8 * rv + 0.2 * var
    check(m.running_mean, rm.astype(np.float32), atol=1e-6)
    check(m.running_var, rv.astype(np.float32), atol=1e-6)
    assert m.num_batches_tracked.item() == 3
    m.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    along = (1, 3) + (1,) * (len(shape) - 2)
    check(m(_t(x, device)), ((x - rm.reshape(along)) / np.sqrt(rv.reshape(along) + 1e-5))
          .astype(np.float32), atol=1e-5)
    assert m.num_batches_tracked.item() == 3  # eval mode updates nothing
    assert [n for n, _ in m.named_buffers()] == ["running_mean", "running_var",
                                                 "num_batches_tracked"]


def test_batch_norm_without_running_statistics_uses_the_batch_in_eval_too(rng):
    m = nn.BatchNorm1d(3, affine=False, track_running_stats=False).eval()
    x = rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(m(lazyt.tensor(x)).numpy(), np_batch_norm_train(x)[0], atol=1e-5)
    assert m.running_mean is None and m.weight is None


def test_batch_norm_momentum_none_is_the_cumulative_average(rng):
    m = nn.BatchNorm1d(2, momentum=None)
    xs = [rng.standard_normal((4, 2)).astype(np.float32) for _ in range(3)]
    for x in xs:
        m(lazyt.tensor(x))
    want = np.mean([x.mean(0) for x in xs], axis=0)
    np.testing.assert_allclose(m.running_mean.numpy(), want, rtol=1e-5, atol=1e-6)


def test_batch_norm_gradients_float64(rng):
    x = lazyt.tensor(rng.standard_normal((4, 3, 2))).require_grad()
    w = lazyt.tensor(rng.standard_normal(3)).require_grad()
    b = lazyt.tensor(rng.standard_normal(3)).require_grad()
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                     [x, w, b])
    rm = lazyt.tensor(rng.standard_normal(3))
    rv = lazyt.tensor(rng.uniform(0.5, 2.0, 3))
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b), [x, w, b])


def test_batch_norm_in_a_compiled_training_step_keeps_its_statistics(rng):
    def make():
        lazyt.manual_seed(0)
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.Flatten(), nn.Linear(4 * 5 * 5, 3))
    xs = [lazyt.tensor(rng.standard_normal((8, 2, 5, 5)).astype(np.float32)) for _ in range(4)]
    ys = [lazyt.tensor(rng.integers(0, 3, 8)) for _ in range(4)]
    runs = []
    for compiled in (False, True):
        model = make()
        opt = lazyt.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        fn = lazyt.compile(step) if compiled else step
        losses = [fn(x, y).item() for x, y in zip(xs, ys)]
        runs.append((losses, model[1].running_var.numpy(), model[1].num_batches_tracked.item()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[0][2] == runs[1][2] == 4


@pytest.mark.parametrize("call,err", [
    (lambda: nn.BatchNorm2d(3)(lazyt.ones((4, 3))), lazyt.ShapeError),
    (lambda: nn.BatchNorm1d(3)(lazyt.ones((4, 2))), lazyt.ShapeError),
    (lambda: nn.BatchNorm1d(3)(lazyt.ones((1, 3))), lazyt.InvalidArgumentError),
    (lambda: F.batch_norm(lazyt.ones((4, 3)), None, None), lazyt.InvalidArgumentError),
    (lambda: F.batch_norm(lazyt.ones((4, 3)), lazyt.zeros(2), lazyt.ones(3)), lazyt.ShapeError),
], ids=["2d-rank", "channels", "one-value", "eval-without-stats", "stat-shape"])
def test_batch_norm_errors(call, err):
    with pytest.raises(err, match="(?i)batch_?norm"):
        call()


@needs_torch
def test_batch_norm_against_torch(rng):
    m, t = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    for _ in range(2):
        x = (rng.standard_normal((4, 3, 3, 2)) * 3 - 1).astype(np.float32)
        lx, tx = lazyt.tensor(x).require_grad(), torch.tensor(x, requires_grad=True)
        (m(lx) ** 2).sum().backward()
        (t(tx) ** 2).sum().backward()
        np.testing.assert_allclose(lx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m.running_var.numpy(), t.running_var.numpy(), rtol=1e-6)
    np.testing.assert_allclose(m.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_padding_idx_minus_one_zeroes_the_last_row():
    assert not nn.Embedding(4, 2, padding_idx=-1).weight.numpy()[3].any()


def test_regression_and_ranking_losses_take_integer_targets():
    x = lazyt.tensor(np.array([0.5, -0.2, 1.5, 0.0], np.float32))
    y = lazyt.tensor(np.array([1, -1, 1, -1]))
    np.testing.assert_allclose(F.mse_loss(x, y).item(),
                               np.mean((x.numpy() - y.numpy()) ** 2), rtol=1e-6)
    np.testing.assert_allclose(F.hinge_embedding_loss(x, y).item(),
                               np.mean([0.5, 1.2, 1.5, 1.0]), rtol=1e-6)
    assert F.poisson_nll_loss(x, lazyt.tensor(np.array([1, 0, 2, 3]))).dtype is lazyt.float32


def test_float16_distances_do_not_overflow():
    a = np.full((2, 1000), 10, np.float16)
    got = F.pairwise_distance(lazyt.tensor(a), lazyt.tensor(a * 0)).numpy()
    assert got.dtype == np.float16 and np.isfinite(got).all()
    np.testing.assert_allclose(got, 316.2, rtol=1e-3)
    np.testing.assert_allclose(F.cosine_similarity(lazyt.tensor(a), lazyt.tensor(a)).numpy(),
                               1.0, rtol=1e-3)
    mixed = F.cosine_similarity(lazyt.ones((2, 3)), lazyt.ones((2, 3), dtype=lazyt.float64))
    assert mixed.dtype is lazyt.float64
