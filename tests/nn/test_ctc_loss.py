"""`lazyt.nn.ctc`: the CTC loss and its module against torch's, losses and gradients, on every
device: reductions, zero_infinity, blank anywhere, padded and concatenated targets, repeated
labels, infeasible alignments, unbatched input, length forms and the input errors."""
import numpy as np
import pytest

import lazyt
from lazyt.nn import CTCLoss
from lazyt.nn.functional import ctc_loss

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(11)


def _case(t, n, c, targets, il, tl, blank=0):
    return dict(x=RNG.standard_normal((t, n, c)), targets=np.asarray(targets, dtype=np.int64),
                il=list(il), tl=list(tl), blank=blank)


def _random_case(t, n, c, s, blank=0):
    labels = [k for k in range(c) if k != blank]
    tl = RNG.integers(1, s + 1, n)
    il = [int(RNG.integers(2 * k + 1, t + 1)) for k in tl]     # feasible however labels repeat
    return _case(t, n, c, RNG.choice(labels, (n, s)), il, tl, blank)


# name: (T, N, C) log_probs, padded targets (entries past a target's length are never read,
# so they may be anything), input lengths, target lengths, blank
CASES = {
    "basic": _case(8, 3, 5, [[1, 2, 3], [4, 1, 99], [2, -7, -7]], [8, 6, 5], [3, 2, 1]),
    "repeated": _case(9, 4, 4, [[2, 2, 2, 1], [1, 1, 0, 0], [3, 3, 1, 1], [1, 2, 1, 2]],
                      [9, 4, 9, 7], [3, 2, 4, 4]),
    "blank_last": _case(7, 2, 5, [[0, 1, 1], [3, 2, 0]], [7, 6], [3, 3], blank=4),
    "blank_mid": _case(7, 2, 5, [[0, 1, 3], [4, 4, 0]], [7, 5], [3, 2], blank=2),
    "empty_targets": _case(6, 3, 4, [[1, 2], [0, 0], [3, 0]], [6, 4, 0], [2, 0, 0]),
    "infeasible": _case(6, 3, 5, [[1, 1, 1], [1, 2, 3], [2, 3, 0]], [4, 2, 6], [3, 3, 2]),
    "no_frames": _case(5, 2, 4, [[1], [2]], [0, 0], [0, 1]),     # loss 0 and inf
    "random": _random_case(30, 4, 9, 10),
}


def _concatenated(case):
    return np.concatenate([row[:k] for row, k in zip(case["targets"], case["tl"])])


def _torch(case, targets, *, raw=False, dtype=torch.float64, **kw):
    """(loss, gradient w.r.t. x) of torch's ctc_loss of log_softmax(x) (of x itself if raw)."""
    x = torch.tensor(case["x"], dtype=dtype, requires_grad=True)
    loss = TF.ctc_loss(x if raw else x.log_softmax(-1), torch.tensor(targets), case["il"],
                       case["tl"], blank=case["blank"], **kw)
    loss.sum().backward()
    return loss.detach().numpy(), x.grad.numpy()


def _float(device):
    """float64 where the device has it, else float32 (wgpu)."""
    return lazyt.float32 if device.base == "wgpu" else lazyt.float64


def _lazyt(case, targets, device, *, raw=False, dtype=None, lengths=list, **kw):
    """(loss, gradient w.r.t. x) of lazyt's ctc_loss, as numpy arrays."""
    x = lazyt.tensor(case["x"], dtype=dtype or _float(device), device=device,
                     requires_grad=True)
    loss = ctc_loss(x if raw else x.log_softmax(-1), lazyt.tensor(targets, device=device),
                    lengths(case["il"]), lengths(case["tl"]), blank=case["blank"], **kw)
    loss.sum().backward()
    return loss.numpy(), x.grad.numpy()


def _assert_close(got, want):
    """Equal to float64 rounding, or to float32's where lazyt ran in float32."""
    tol = 1e-10 if got.dtype == np.float64 else 3e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_matches_torch_padded(device, name, reduction):
    _check_padded(device, name, reduction, zero_infinity=False)


@pytest.mark.parametrize("name", ["infeasible", "empty_targets", "no_frames"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_zero_infinity_matches_torch(device, name, reduction):
    _check_padded(device, name, reduction, zero_infinity=True)


def _check_padded(device, name, reduction, zero_infinity):
    case = CASES[name]
    want_loss, want_grad = _torch(case, case["targets"], reduction=reduction,
                                  zero_infinity=zero_infinity)
    loss, grad = _lazyt(case, case["targets"], device, reduction=reduction,
                        zero_infinity=zero_infinity)
    assert loss.shape == want_loss.shape
    _assert_close(loss, want_loss)
    _assert_close(grad, want_grad)


@pytest.mark.parametrize("name", ["basic", "repeated", "blank_mid", "empty_targets", "random"])
def test_concatenated_targets_equal_padded(device, name):
    case = CASES[name]
    want_loss, want_grad = _torch(case, case["targets"], reduction="none")
    loss, grad = _lazyt(case, _concatenated(case), device, reduction="none")
    _assert_close(loss, want_loss)
    _assert_close(grad, want_grad)


def test_infeasible_is_inf_with_nan_gradient_on_its_frames_as_torch(device):
    case = CASES["infeasible"]               # sample 0 needs 5 frames, has 4; sample 1 has 2
    loss, grad = _lazyt(case, case["targets"], device, reduction="none")
    assert np.isinf(loss[:2]).all() and np.isfinite(loss[2])
    assert np.isnan(grad[:4, 0]).all() and (grad[4:, 0] == 0).all()
    assert np.isnan(grad[:2, 1]).all() and (grad[2:, 1] == 0).all()
    assert np.isfinite(grad[:, 2]).all()
    loss, grad = _lazyt(case, case["targets"], device, reduction="mean", zero_infinity=True)
    assert np.isfinite(loss)
    assert (grad[:, :2] == 0).all() and np.abs(grad[:, 2]).sum() > 0


def test_frames_past_input_length_get_zero_gradient(device):
    case = CASES["basic"]
    _, grad = _lazyt(case, case["targets"], device, reduction="sum")
    for n, length in enumerate(case["il"]):
        assert (grad[length:, n] == 0).all() and np.abs(grad[:length, n]).min() > 0


@pytest.mark.parametrize("name", ["basic", "repeated", "random"])
def test_arbitrary_inputs_torch_adds_exp(device, name):
    """For inputs that are not log_softmax outputs torch returns exp(x) - posterior on a
    sample's frames (the logits gradient); lazyt returns the loss's own derivative, -posterior."""
    case = CASES[name]
    want_loss, want_grad = _torch(case, case["targets"], raw=True, reduction="sum")
    loss, grad = _lazyt(case, case["targets"], device, raw=True, reduction="sum")
    _assert_close(loss, want_loss)
    live = np.arange(case["x"].shape[0])[:, None, None] < np.array(case["il"])[None, :, None]
    _assert_close(grad + np.where(live, np.exp(case["x"]), 0.0).astype(grad.dtype), want_grad)


def test_float32_and_float16(device):
    case = CASES["random"]
    want_loss, want_grad = _torch(case, case["targets"], dtype=torch.float32, reduction="mean")
    loss, grad = _lazyt(case, case["targets"], device, dtype=lazyt.float32, reduction="mean")
    assert loss.dtype == np.float32 and grad.dtype == np.float32
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=1e-6)
    # torch has no float16 ctc on the cpu: lazyt runs float16 in float32 and rounds once
    x16 = lazyt.tensor(case["x"].astype(np.float16), device=device)
    loss16 = ctc_loss(x16.log_softmax(-1), lazyt.tensor(case["targets"], device=device),
                      case["il"], case["tl"], reduction="none")
    assert loss16.dtype == lazyt.float16
    ref = TF.ctc_loss(torch.tensor(case["x"].astype(np.float16)).float().log_softmax(-1),
                      torch.tensor(case["targets"]), case["il"], case["tl"], reduction="none")
    np.testing.assert_allclose(loss16.numpy().astype(np.float32), ref.numpy(), rtol=2e-3)


@pytest.mark.parametrize("lengths", [
    tuple,
    lambda v: lazyt.tensor(np.array(v, dtype=np.int64)),
    lambda v: lazyt.tensor(np.array(v, dtype=np.int32)),
    lambda v: [lazyt.tensor(k) for k in v],
], ids=["tuple", "int64", "int32", "list_of_0d"])
def test_length_forms(device, lengths):
    case = CASES["repeated"]
    want_loss, want_grad = _torch(case, case["targets"], reduction="mean")
    loss, grad = _lazyt(case, case["targets"], device, lengths=lengths, reduction="mean")
    _assert_close(loss, want_loss)
    _assert_close(grad, want_grad)


def test_int32_targets(device):
    case = CASES["basic"]
    want_loss, _ = _torch(case, case["targets"], reduction="none")
    loss, _ = _lazyt(case, case["targets"].astype(np.int32), device, reduction="none")
    _assert_close(loss, want_loss)


@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("form", ["1d", "2d", "2d_longer"])
def test_unbatched(device, reduction, form):
    x = RNG.standard_normal((7, 5))
    labels = np.array([3, 1, 1])
    targets = {"1d": labels, "2d": labels[None], "2d_longer": np.array([[3, 1, 1, 2]])}[form]
    xt = torch.tensor(x, requires_grad=True)
    want = TF.ctc_loss(xt.log_softmax(-1), torch.tensor(targets), torch.tensor(7),
                       torch.tensor(3), reduction=reduction)
    want.backward()
    xl = lazyt.tensor(x, dtype=_float(device), device=device, requires_grad=True)
    got = ctc_loss(xl.log_softmax(-1), lazyt.tensor(targets, device=device),
                   lazyt.tensor(7), [3], reduction=reduction)
    assert got.shape == ()
    got.backward()
    _assert_close(got.numpy(), want.detach().numpy())
    _assert_close(xl.grad.numpy(), xt.grad.numpy())


def test_module(device):
    case = CASES["blank_mid"]
    want_loss, want_grad = _torch(case, case["targets"], reduction="sum", zero_infinity=True)
    x = lazyt.tensor(case["x"], dtype=_float(device), device=device, requires_grad=True)
    crit = CTCLoss(blank=2, reduction="sum", zero_infinity=True)
    loss = crit(x.log_softmax(-1), lazyt.tensor(case["targets"], device=device),
                case["il"], case["tl"])
    loss.backward()
    _assert_close(loss.numpy(), want_loss)
    _assert_close(x.grad.numpy(), want_grad)
    assert isinstance(crit, lazyt.nn.Module) and list(crit.parameters()) == []
    assert repr(crit) == "CTCLoss(blank=2, reduction='sum', zero_infinity=True)"
    assert repr(CTCLoss()) == "CTCLoss()"
    with pytest.raises(lazyt.InvalidArgumentError, match="CTCLoss: reduction"):
        CTCLoss(reduction="batchmean")


def _call(**change):
    """ctc_loss of a valid (T=6, N=2, C=5) problem with some arguments replaced."""
    args = dict(log_probs=lazyt.tensor(RNG.standard_normal((6, 2, 5))).log_softmax(-1),
                targets=lazyt.tensor(np.array([[1, 2, 2], [3, 4, 0]])),
                input_lengths=[6, 5], target_lengths=[3, 2])
    args.update(change)
    return ctc_loss(**args)


ERRORS = {
    "reduction": (dict(reduction="batchmean"), lazyt.InvalidArgumentError, "reduction"),
    "log_probs_int": (dict(log_probs=lazyt.zeros(6, 2, 5, dtype=lazyt.int64)),
                      lazyt.DTypeError, "floating-point"),
    "log_probs_list": (dict(log_probs=[[0.0]]), lazyt.DTypeError, "lazyt.Tensor"),
    "log_probs_4d": (dict(log_probs=lazyt.zeros(6, 2, 5, 1)), lazyt.ShapeError, r"\(T, N, C\)"),
    "log_probs_1d": (dict(log_probs=lazyt.zeros(6)), lazyt.ShapeError, r"\(T, C\)"),
    "log_probs_empty": (dict(log_probs=lazyt.zeros(0, 2, 5), input_lengths=[0, 0]),
                        lazyt.ShapeError, "empty"),
    "blank_high": (dict(blank=5), lazyt.InvalidArgumentError, r"blank must be in \[0, 5\)"),
    "blank_negative": (dict(blank=-1), lazyt.InvalidArgumentError, "blank must be in"),
    "blank_float": (dict(blank=0.0), lazyt.InvalidArgumentError, "blank must be an int"),
    "target_is_blank": (dict(targets=lazyt.tensor(np.array([[1, 0, 2], [3, 4, 0]]))),
                        lazyt.InvalidArgumentError, "blank index 0"),
    "target_too_big": (dict(targets=lazyt.tensor(np.array([[1, 5, 2], [3, 4, 0]]))),
                       lazyt.IndexOutOfRangeError, r"class index 5, outside \[0, 5\)"),
    "target_negative": (dict(targets=lazyt.tensor(np.array([[1, 2, 2], [-1, 4, 0]]))),
                        lazyt.IndexOutOfRangeError, "class index -1"),
    "targets_float": (dict(targets=lazyt.tensor([[1.0, 2.0, 2.0], [3.0, 4.0, 0.0]])),
                      lazyt.DTypeError, "integer tensor"),
    "targets_list": (dict(targets=[[1, 2, 2], [3, 4, 0]]), lazyt.DTypeError, "lazyt.Tensor"),
    "targets_3d": (dict(targets=lazyt.zeros(2, 3, 1, dtype=lazyt.int64)), lazyt.ShapeError,
                   "targets must be"),
    "targets_rows": (dict(targets=lazyt.tensor(np.array([[1, 2, 2]]))), lazyt.ShapeError,
                     r"shape \(2, S\)"),
    "target_length_past_s": (dict(target_lengths=[4, 2]), lazyt.ShapeError,
                             r"S >= max\(target_lengths\) = 4"),
    "concatenated_size": (dict(targets=lazyt.tensor(np.array([1, 2, 2, 3]))), lazyt.ShapeError,
                          r"shape \(5,\)"),
    "input_length_past_t": (dict(input_lengths=[7, 5]), lazyt.InvalidArgumentError,
                            "input_lengths must be <= T = 6"),
    "input_length_negative": (dict(input_lengths=[-1, 5]), lazyt.InvalidArgumentError,
                              "input_lengths must be >= 0"),
    "target_length_negative": (dict(target_lengths=[3, -2]), lazyt.InvalidArgumentError,
                               "target_lengths must be >= 0"),
    "lengths_count": (dict(input_lengths=[6, 5, 5]), lazyt.ShapeError, "one length per"),
    "lengths_float_tensor": (dict(target_lengths=lazyt.tensor([3.0, 2.0])), lazyt.DTypeError,
                             "integer tensor"),
    "lengths_float_items": (dict(input_lengths=[6.0, 5.0]), lazyt.DTypeError, "must hold ints"),
    "lengths_bool_tensor": (dict(input_lengths=lazyt.tensor([True, True])), lazyt.DTypeError,
                            "integer tensor"),
    "lengths_string": (dict(input_lengths="65"), lazyt.DTypeError, "list/tuple of ints"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    change, error, message = ERRORS[name]
    with pytest.raises(error, match=message) as info:
        _call(**change)
    assert str(info.value).startswith(("ctc_loss", "CTCLoss"))


def test_torch_rejects_the_same_inputs():
    """Each rejection above that torch makes too (torch computes garbage for out-of-range or
    blank targets and accepts float targets, which torch's documentation rules out)."""
    lp = torch.randn(6, 2, 5).log_softmax(-1)
    tg = torch.tensor([[1, 2, 2], [3, 4, 0]])
    for kw in [dict(blank=5), dict(blank=-1)]:
        with pytest.raises(RuntimeError, match="blank must be in label range"):
            TF.ctc_loss(lp, tg, [6, 5], [3, 2], **kw)
    for il, tl in [([7, 5], [3, 2]), ([-1, 5], [3, 2]), ([6, 5], [4, 2]), ([6, 5], [3, -2]),
                   ([6, 5, 5], [3, 2])]:
        with pytest.raises(RuntimeError):
            TF.ctc_loss(lp, tg, il, tl)
    with pytest.raises(RuntimeError, match="must not be empty"):
        TF.ctc_loss(lp[:0], tg, [0, 0], [3, 2])
