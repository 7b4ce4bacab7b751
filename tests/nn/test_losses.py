"""Loss functions (`lazyt.nn.functional`) and modules (`lazyt.nn.*Loss`): values against numpy
references written here (and against torch where it is installed), float64 gradients, errors."""
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
REDUCTIONS = ["none", "mean", "sum"]
TOL = dict(rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- numpy references
def np_log_softmax(x, axis=1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _class_axis_last(a):
    return np.moveaxis(a, 1, -1)


def np_weighted_ce(logp, q, w, valid, reduction, denom):
    """Per element `-sum_c w_c q_c logp_c` (0 where not valid), reduced; "mean" divides by
    `denom`."""
    w = np.ones(logp.shape[1]) if w is None else w
    per = -(_class_axis_last(logp) * _class_axis_last(q) * w).sum(-1)
    per = np.where(valid, per, 0.0)
    return {"none": per, "sum": per.sum(), "mean": per.sum() / denom}[reduction]


def np_cross_entropy(x, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                     log_probs=False):
    logp = x if log_probs else np_log_softmax(x)
    c = x.shape[1]
    valid = t != ignore_index
    onehot = np.moveaxis(np.eye(c)[np.where(valid, t, 0)], -1, 1)
    q = (1 - label_smoothing) * onehot + label_smoothing / c
    wt = np.ones(c) if w is None else w
    denom = np.where(valid, wt[np.where(valid, t, 0)], 0.0).sum()
    return np_weighted_ce(logp, q, w, valid, reduction, denom)


def np_cross_entropy_probs(x, p, w=None, reduction="mean", label_smoothing=0.0):
    c = x.shape[1]
    q = p * (1 - label_smoothing) + label_smoothing / c
    valid = np.ones((x.shape[0],) + x.shape[2:], bool)
    return np_weighted_ce(np_log_softmax(x), q, w, valid, reduction, x.size / c)


def np_reduce(loss, reduction):
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def np_bce(x, t, w=None, reduction="mean"):
    loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log(1 - x), -100))
    return np_reduce(loss * (1.0 if w is None else w), reduction)


def np_bce_logits(x, t, w=None, reduction="mean", pos_weight=None):
    p = 1.0 if pos_weight is None else pos_weight
    log_sig, log_1m_sig = -np.logaddexp(0, -x), -np.logaddexp(0, x)
    loss = -(p * t * log_sig + (1 - t) * log_1m_sig)
    return np_reduce(loss * (1.0 if w is None else w), reduction)


def np_smooth_l1(x, y, reduction="mean", beta=1.0):
    d = np.abs(x - y)
    loss = d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return np_reduce(loss, reduction)


def np_kl_div(x, t, reduction="mean", log_target=False):
    if log_target:
        loss = np.exp(t) * (t - x)
    else:
        loss = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0) - t * x
    if reduction == "batchmean":
        return loss.sum() / x.shape[0]
    return np_reduce(loss, reduction)


# ---------------------------------------------------------------------- helpers
def _t(a, device, dtype=None):
    a = np.asarray(a)
    if dtype is None:
        dtype = lazyt.int64 if a.dtype.kind == "i" else lazyt.float32
    return lazyt.tensor(a, dtype=dtype, device=device)


def _f64(a, grad=True):
    t = lazyt.tensor(np.asarray(a, dtype=np.float64), dtype=lazyt.float64)
    return t.require_grad() if grad else t


def _close(got, expected, **tol):
    got = np.asarray(got.numpy(), dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, f"shape {got.shape} != expected {expected.shape}"
    np.testing.assert_allclose(got, expected, **(tol or TOL))


def _probs(rng, *shape):
    e = np.exp(rng.standard_normal(shape))
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------- cross entropy / nll
CE_CASES = {
    "plain": dict(),
    "weight": dict(weight=True),
    "ignore": dict(ignore=True),
    "weight_ignore": dict(weight=True, ignore=True),
    "smooth": dict(label_smoothing=0.2),
    "smooth_weight_ignore": dict(weight=True, ignore=True, label_smoothing=0.3),
}


def _ce_inputs(rng, shape, case):
    x = rng.standard_normal(shape)
    c = shape[1]
    t = rng.integers(0, c, (shape[0],) + shape[2:])
    if case.get("ignore"):
        t.flat[::3] = -100
    w = rng.uniform(0.5, 2.0, c) if case.get("weight") else None
    return x, t, w


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2), (2, 3, 2, 2)], ids=["NC", "NCd", "NCdd"])
@pytest.mark.parametrize("case", list(CE_CASES), ids=list(CE_CASES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_class_indices(device, rng, shape, case, reduction):
    x, t, w = _ce_inputs(rng, shape, CE_CASES[case])
    ls = CE_CASES[case].get("label_smoothing", 0.0)
    got = F.cross_entropy(_t(x, device), _t(t, device), None if w is None else _t(w, device),
                          reduction=reduction, label_smoothing=ls)
    assert got.dtype == lazyt.float32
    _close(got, np_cross_entropy(x, t, w, reduction=reduction, label_smoothing=ls))


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2)], ids=["NC", "NCd"])
@pytest.mark.parametrize("case", ["plain", "weight", "weight_ignore"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(device, rng, shape, case, reduction):
    x, t, w = _ce_inputs(rng, shape, CE_CASES[case])
    logp = np_log_softmax(x)
    got = F.nll_loss(_t(logp, device), _t(t, device), None if w is None else _t(w, device),
                     reduction=reduction)
    _close(got, np_cross_entropy(logp, t, w, reduction=reduction, log_probs=True))


def test_nll_loss_custom_ignore_index_and_all_ignored(device):
    logp = np_log_softmax(np.array([[1.0, 2.0, 0.5], [0.1, 0.2, 0.3]]))
    got = F.nll_loss(_t(logp, device), _t([2, 1], device), ignore_index=1)
    _close(got, -logp[0, 2])
    none = F.nll_loss(_t(logp, device), _t([1, 1], device), ignore_index=1, reduction="none")
    _close(none, [0.0, 0.0])
    assert np.isnan(F.nll_loss(_t(logp, device), _t([1, 1], device), ignore_index=1).item())


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 2)], ids=["NC", "NCd"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities(device, rng, shape, smoothing, weighted, reduction):
    x, p = rng.standard_normal(shape), _probs(rng, *shape)
    w = rng.uniform(0.5, 2.0, shape[1]) if weighted else None
    got = F.cross_entropy(_t(x, device), _t(p, device), None if w is None else _t(w, device),
                          reduction=reduction, label_smoothing=smoothing)
    _close(got, np_cross_entropy_probs(x, p, w, reduction, smoothing))


def test_cross_entropy_unbatched(device):
    x = np.array([0.5, -1.0, 2.0])
    _close(F.cross_entropy(_t(x, device), _t(np.int64(2), device), reduction="none"),
           -np_log_softmax(x[None])[0, 2])
    _close(F.cross_entropy(_t(x, device), _t(np.array([0.2, 0.3, 0.5]), device)),
           np_cross_entropy_probs(x[None], np.array([[0.2, 0.3, 0.5]])))


def test_cross_entropy_is_stable_for_large_logits(device):
    x = np.array([[1000.0, 0.0, -1000.0]])
    _close(F.cross_entropy(_t(x, device), _t([1], device)), 1000.0)


# ---------------------------------------------------------------------- binary losses
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(device, rng, weighted, reduction):
    x, t = rng.uniform(0.05, 0.95, (4, 3)), rng.uniform(0, 1, (4, 3))
    w = rng.uniform(0.5, 2.0, (3,)) if weighted else None
    got = F.binary_cross_entropy(_t(x, device), _t(t, device),
                                 None if w is None else _t(w, device), reduction)
    _close(got, np_bce(x, t, w, reduction))


def test_binary_cross_entropy_clamps_log(device):
    got = F.binary_cross_entropy(_t([0.0, 1.0, 0.0], device), _t([1.0, 0.0, 0.0], device),
                                 reduction="none")
    _close(got, [100.0, 100.0, 0.0])


@pytest.mark.parametrize("pos", [False, True], ids=["no_pos_weight", "pos_weight"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(device, rng, pos, weighted, reduction):
    x, t = rng.standard_normal((4, 3)) * 3, rng.uniform(0, 1, (4, 3))
    w = rng.uniform(0.5, 2.0, (4, 1)) if weighted else None
    p = rng.uniform(0.5, 3.0, (3,)) if pos else None
    got = F.binary_cross_entropy_with_logits(
        _t(x, device), _t(t, device), None if w is None else _t(w, device), reduction,
        None if p is None else _t(p, device))
    _close(got, np_bce_logits(x, t, w, reduction, p))


def test_binary_cross_entropy_with_logits_is_stable(device):
    x, t = np.array([-200.0, 0.0, 200.0, 80.0]), np.array([1.0, 0.5, 0.0, 1.0])
    got = F.binary_cross_entropy_with_logits(_t(x, device), _t(t, device), reduction="none")
    _close(got, np_bce_logits(x, t, reduction="none"))


# ---------------------------------------------------------------------- regression losses
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_and_l1(device, rng, reduction):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    _close(F.mse_loss(_t(x, device), _t(y, device), reduction), np_reduce((x - y) ** 2, reduction))
    _close(F.l1_loss(_t(x, device), _t(y, device), reduction), np_reduce(np.abs(x - y), reduction))


@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_smooth_l1(device, rng, beta, reduction):
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    _close(F.smooth_l1_loss(_t(x, device), _t(y, device), reduction, beta),
           np_smooth_l1(x, y, reduction, beta))


@pytest.mark.parametrize("log_target", [False, True], ids=["probs", "log_target"])
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div(device, rng, log_target, reduction):
    x = np_log_softmax(rng.standard_normal((3, 4)))
    t = _probs(rng, 3, 4)
    t[0, 1] = 0.0  # 0 * log 0 counts as 0
    if log_target:
        t = np_log_softmax(rng.standard_normal((3, 4)))
    _close(F.kl_div(_t(x, device), _t(t, device), reduction, log_target),
           np_kl_div(x, t, reduction, log_target))


# ---------------------------------------------------------------------- gradients (cpu, float64)
@pytest.mark.parametrize("case", list(CE_CASES), ids=list(CE_CASES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_gradients(rng, case, reduction):
    x, t, w = _ce_inputs(rng, (3, 4, 2), CE_CASES[case])
    ls = CE_CASES[case].get("label_smoothing", 0.0)
    tt = lazyt.tensor(t)
    ww = None if w is None else _f64(w, grad=False)
    assert gradcheck(lambda a: F.cross_entropy(a, tt, ww, reduction=reduction,
                                               label_smoothing=ls), [_f64(x)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_gradients(rng, reduction):
    x, t, w = _ce_inputs(rng, (4, 3), CE_CASES["weight_ignore"])
    tt = lazyt.tensor(t)
    assert gradcheck(lambda a, b: F.nll_loss(a, tt, b, reduction=reduction),
                     [_f64(np_log_softmax(x)), _f64(w)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_gradients(rng, reduction):
    x, p, w = rng.standard_normal((2, 3, 2)), _probs(rng, 2, 3, 2), rng.uniform(0.5, 2, 3)
    ww = _f64(w, grad=False)
    assert gradcheck(lambda a, b: F.cross_entropy(a, b, ww, reduction=reduction,
                                                  label_smoothing=0.1), [_f64(x), _f64(p)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_gradients(rng, reduction):
    x, t = rng.uniform(0.1, 0.9, (3, 2)), rng.uniform(0, 1, (3, 2))
    w = _f64(rng.uniform(0.5, 2.0, (2,)), grad=False)
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, w, reduction),
                     [_f64(x), _f64(t)])
    logits = rng.standard_normal((3, 2)) * 2
    logits[0, 0] = 0.0  # a zero logit: the gradient there is sigmoid(0) - t, not a subgradient
    p = _f64(rng.uniform(0.5, 3.0, (2,)), grad=False)
    assert gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(a, b, w, reduction, p),
                     [_f64(logits), _f64(t)])
    assert gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, _f64(t, False),
                                                                  reduction=reduction),
                     [_f64(logits)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_gradients(rng, reduction):
    x, y = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    for fn in (F.mse_loss, F.l1_loss, lambda a, b, r: F.smooth_l1_loss(a, b, r, beta=0.7)):
        assert gradcheck(lambda a, b: fn(a, b, reduction), [_f64(x), _f64(y)])


@pytest.mark.parametrize("log_target", [False, True], ids=["probs", "log_target"])
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div_gradients(rng, log_target, reduction):
    x = np_log_softmax(rng.standard_normal((2, 3)))
    t = np_log_softmax(rng.standard_normal((2, 3)))
    if not log_target:
        t = np.exp(t)
    assert gradcheck(lambda a, b: F.kl_div(a, b, reduction, log_target), [_f64(x), _f64(t)])


# ---------------------------------------------------------------------- modules
def test_modules_call_their_functionals(rng):
    x, t = rng.standard_normal((4, 3)), rng.integers(0, 3, (4,))
    w = rng.uniform(0.5, 2.0, 3)
    xx, tt, ww = lazyt.tensor(x), lazyt.tensor(t), lazyt.tensor(w)
    ce = nn.CrossEntropyLoss(weight=ww, ignore_index=1, reduction="sum", label_smoothing=0.1)
    _close(ce(xx, tt), np_cross_entropy(x, t, w, 1, "sum", 0.1))
    assert set(ce.state_dict()) == {"weight"}
    logp = lazyt.tensor(np_log_softmax(x))
    _close(nn.NLLLoss(ww)(logp, tt), np_cross_entropy(np_log_softmax(x), t, w, log_probs=True))
    pr, y = rng.uniform(0.1, 0.9, (4, 3)), rng.uniform(0, 1, (4, 3))
    pp, yy = lazyt.tensor(pr), lazyt.tensor(y)
    _close(nn.BCELoss(reduction="none")(pp, yy), np_bce(pr, y, reduction="none"))
    _close(nn.BCEWithLogitsLoss(pos_weight=ww)(xx, yy), np_bce_logits(x, y, pos_weight=w))
    _close(nn.MSELoss()(xx, yy), ((x - y) ** 2).mean())
    _close(nn.L1Loss(reduction="sum")(xx, yy), np.abs(x - y).sum())
    _close(nn.SmoothL1Loss(beta=0.5)(xx, yy), np_smooth_l1(x, y, beta=0.5))
    _close(nn.KLDivLoss(reduction="batchmean")(logp, pp), np_kl_div(np_log_softmax(x), pr,
                                                                    "batchmean"))
    assert isinstance(ce, nn.Module) and "reduction='sum'" in repr(ce)


@pytest.mark.parametrize("cls", [nn.CrossEntropyLoss, nn.NLLLoss, nn.BCELoss,
                                 nn.BCEWithLogitsLoss, nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss,
                                 nn.KLDivLoss])
def test_module_rejects_bad_reduction(cls):
    with pytest.raises(lazyt.InvalidArgumentError, match=f"{cls.__name__}: reduction"):
        cls(reduction="avg")


def test_functional_reexports_activations():
    x = lazyt.tensor(np.linspace(-2, 2, 12).reshape(3, 4))
    for name in ("relu", "gelu", "silu"):
        np.testing.assert_array_equal(getattr(F, name)(x).numpy(), getattr(lazyt, name)(x).numpy())
    for name in ("softmax", "log_softmax"):   # F's take torch's (input, dim, _stacklevel, dtype)
        np.testing.assert_array_equal(getattr(F, name)(x, 1).numpy(),
                                      getattr(lazyt, name)(x, 1).numpy())
    assert nn.functional is F


# ---------------------------------------------------------------------- errors
X = lambda: lazyt.tensor(np.zeros((2, 3)))  # noqa: E731
P = lambda: lazyt.tensor(np.full((2, 3), 0.5))  # noqa: E731

REDUCTION_CALLS = {
    "cross_entropy": lambda r: F.cross_entropy(X(), lazyt.tensor([0, 1]), reduction=r),
    "nll_loss": lambda r: F.nll_loss(X(), lazyt.tensor([0, 1]), reduction=r),
    "binary_cross_entropy": lambda r: F.binary_cross_entropy(P(), P(), reduction=r),
    "binary_cross_entropy_with_logits":
        lambda r: F.binary_cross_entropy_with_logits(X(), P(), reduction=r),
    "mse_loss": lambda r: F.mse_loss(X(), X(), reduction=r),
    "l1_loss": lambda r: F.l1_loss(X(), X(), reduction=r),
    "smooth_l1_loss": lambda r: F.smooth_l1_loss(X(), X(), reduction=r),
    "kl_div": lambda r: F.kl_div(X(), P(), reduction=r),
}


@pytest.mark.parametrize("name", list(REDUCTION_CALLS))
def test_bad_reduction(name):
    with pytest.raises(lazyt.InvalidArgumentError, match=f"{name}: reduction must be one of"):
        REDUCTION_CALLS[name]("avg")
    if name != "kl_div":
        with pytest.raises(lazyt.InvalidArgumentError):
            REDUCTION_CALLS[name]("batchmean")


@pytest.mark.parametrize("call, err, match", [
    (lambda: F.cross_entropy(X(), lazyt.tensor([0, 1, 2])), lazyt.ShapeError,
     r"cross_entropy: .*target must have shape \(2,\)"),
    (lambda: F.cross_entropy(X(), lazyt.tensor(np.zeros((2, 4)))), lazyt.ShapeError,
     "cross_entropy: probability target must have the input's shape"),
    (lambda: F.cross_entropy(X(), lazyt.tensor([True, False])), lazyt.DTypeError,
     "cross_entropy: class-index target must be an integer tensor"),
    (lambda: F.nll_loss(X(), lazyt.tensor([0.0, 1.0])), lazyt.DTypeError,
     "nll_loss: class-index target must be an integer tensor"),
    (lambda: F.nll_loss(lazyt.tensor([[0, 1]]), lazyt.tensor([0])), lazyt.DTypeError,
     "nll_loss: input must be a floating-point tensor"),
    (lambda: F.cross_entropy(X(), lazyt.tensor([0, 3])), lazyt.IndexOutOfRangeError,
     r"cross_entropy: target holds class index 3, outside \[0, 3\)"),
    (lambda: F.nll_loss(X(), lazyt.tensor([-1, 0])), IndexError,
     "nll_loss: target holds class index -1"),
    (lambda: F.cross_entropy(X(), lazyt.tensor([0, 1]), lazyt.tensor([1.0, 2.0])),
     lazyt.ShapeError, r"cross_entropy: weight must have shape \(3,\)"),
    (lambda: F.cross_entropy(X(), lazyt.tensor([0, 1]), label_smoothing=1.5),
     lazyt.InvalidArgumentError, r"cross_entropy: label_smoothing must be in \[0, 1\]"),
    (lambda: F.cross_entropy(lazyt.tensor(1.0), lazyt.tensor(0)), lazyt.ShapeError,
     "cross_entropy: input must have shape"),
    (lambda: F.binary_cross_entropy(P(), lazyt.tensor(np.full((3, 2), 0.5))), lazyt.ShapeError,
     r"binary_cross_entropy: target shape \(3, 2\) must equal input shape \(2, 3\)"),
    (lambda: F.binary_cross_entropy(P(), lazyt.tensor([[1, 0, 1], [0, 1, 0]])),
     lazyt.DTypeError, "binary_cross_entropy: target must be a floating-point tensor"),
    (lambda: F.binary_cross_entropy_with_logits(X(), P(), pos_weight=lazyt.tensor([1.0, 2.0])),
     lazyt.ShapeError, "binary_cross_entropy_with_logits: pos_weight of shape"),
    (lambda: F.mse_loss(X(), lazyt.tensor(np.zeros(2))), lazyt.ShapeError, "mse_loss: target"),
    (lambda: F.l1_loss(X(), [[0.0] * 3] * 2), lazyt.DTypeError,
     "l1_loss: target must be a lazyt.Tensor"),
    (lambda: F.smooth_l1_loss(X(), X(), beta=-1.0), lazyt.InvalidArgumentError,
     "smooth_l1_loss: beta must be >= 0"),
    (lambda: F.kl_div(X(), lazyt.tensor(np.zeros((2, 1)))), lazyt.ShapeError, "kl_div: target"),
], ids=["ce_target_shape", "ce_prob_shape", "ce_bool_target", "nll_float_target",
        "nll_int_input", "ce_class_too_big", "nll_class_negative", "ce_weight_shape",
        "ce_label_smoothing", "ce_scalar_input", "bce_shape", "bce_int_target",
        "bce_logits_pos_weight", "mse_shape", "l1_not_tensor", "smooth_l1_beta", "kl_shape"])
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


# ---------------------------------------------------------------------- torch, where installed
@needs_torch
@pytest.mark.parametrize("case", list(CE_CASES), ids=list(CE_CASES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_matches_torch_cross_entropy(rng, case, reduction):
    x, t, w = _ce_inputs(rng, (3, 4, 2), CE_CASES[case])
    ls = CE_CASES[case].get("label_smoothing", 0.0)
    ww = None if w is None else torch.tensor(w)
    ref = TF.cross_entropy(torch.tensor(x), torch.tensor(t), ww, reduction=reduction,
                           label_smoothing=ls)
    got = F.cross_entropy(_f64(x, False), lazyt.tensor(t), None if w is None else _f64(w, False),
                          reduction=reduction, label_smoothing=ls)
    _close(got, ref.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_matches_torch_elementwise(rng, reduction):
    x, t = rng.standard_normal((3, 4)), rng.uniform(0.05, 0.95, (3, 4))
    p, w = rng.uniform(0.5, 2, 4), rng.uniform(0.5, 2, 4)
    probs = _probs(rng, 3, 4)
    pairs = [
        (F.binary_cross_entropy(_f64(t, False), _f64(probs, False), _f64(w, False), reduction),
         TF.binary_cross_entropy(torch.tensor(t), torch.tensor(probs), torch.tensor(w),
                                 reduction=reduction)),
        (F.binary_cross_entropy_with_logits(_f64(x, False), _f64(t, False), _f64(w, False),
                                            reduction, _f64(p, False)),
         TF.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(t), torch.tensor(w),
                                             reduction=reduction, pos_weight=torch.tensor(p))),
        (F.smooth_l1_loss(_f64(x, False), _f64(t, False), reduction, 0.5),
         TF.smooth_l1_loss(torch.tensor(x), torch.tensor(t), reduction=reduction, beta=0.5)),
        (F.kl_div(_f64(x, False), _f64(probs, False), reduction),
         TF.kl_div(torch.tensor(x), torch.tensor(probs), reduction=reduction)),
        (F.cross_entropy(_f64(x, False), _f64(probs, False), _f64(w, False),
                         reduction=reduction, label_smoothing=0.1),
         TF.cross_entropy(torch.tensor(x), torch.tensor(probs), torch.tensor(w),
                          reduction=reduction, label_smoothing=0.1)),
    ]
    for got, ref in pairs:
        _close(got, ref.numpy(), rtol=1e-10, atol=1e-12)
