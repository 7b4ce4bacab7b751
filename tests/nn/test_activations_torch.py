"""torch's activations (`lazyt.nn.functional` and their `lazyt.nn` modules): values against
numpy references written here on every device (large |x| included: finite where torch is),
float64 gradients on cpu, modules vs functions, reprs, errors, and torch where installed."""
import math

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

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# ---------------------------------------------------------------------- numpy references
def np_softplus(x, beta=1.0, threshold=20.0):
    z = x * beta
    with np.errstate(over="ignore"):
        return np.where(z > threshold, x, np.logaddexp(0.0, z) / beta)


def np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def np_sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# name -> (lazyt function, numpy reference) with the non-default arguments used
CASES = {
    "elu": (lambda x: F.elu(x), np_elu),
    "elu_alpha": (lambda x: F.elu(x, alpha=0.5), lambda x: np_elu(x, 0.5)),
    "celu": (lambda x: F.celu(x, alpha=2.0),
             lambda x: np.maximum(0, x) + np.minimum(0, 2.0 * np.expm1(np.minimum(x, 0) / 2.0))),
    "selu": (lambda x: F.selu(x), lambda x: SELU_SCALE * np_elu(x, SELU_ALPHA)),
    "leaky_relu": (lambda x: F.leaky_relu(x), lambda x: np.where(x > 0, x, 0.01 * x)),
    "leaky_relu_slope": (lambda x: F.leaky_relu(x, negative_slope=0.2),
                         lambda x: np.where(x > 0, x, 0.2 * x)),
    "relu6": (lambda x: F.relu6(x), lambda x: np.clip(x, 0, 6)),
    "hardtanh": (lambda x: F.hardtanh(x), lambda x: np.clip(x, -1, 1)),
    "hardtanh_range": (lambda x: F.hardtanh(x, min_val=-2.0, max_val=0.5),
                       lambda x: np.clip(x, -2.0, 0.5)),
    "hardsigmoid": (lambda x: F.hardsigmoid(x), lambda x: np.clip(x + 3, 0, 6) / 6),
    "hardswish": (lambda x: F.hardswish(x), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "softplus": (lambda x: F.softplus(x), np_softplus),
    "softplus_beta": (lambda x: F.softplus(x, beta=2.0, threshold=5.0),
                      lambda x: np_softplus(x, 2.0, 5.0)),
    "softsign": (lambda x: F.softsign(x), lambda x: x / (1 + np.abs(x))),
    "mish": (lambda x: F.mish(x), lambda x: x * np.tanh(np_softplus(x))),
    "logsigmoid": (lambda x: F.logsigmoid(x), lambda x: -np.logaddexp(0.0, -x)),
    "quick_gelu": (lambda x: F.quick_gelu(x), lambda x: x * np_sigmoid(1.702 * x)),
    "softmin": (lambda x: F.softmin(x, dim=-1), lambda x: np_softmax(-x, -1)),
    "softmin_dim0": (lambda x: F.softmin(x, 0), lambda x: np_softmax(-x, 0)),
}

# values away from every kink (0, +-1, +-3, 6, the softplus thresholds) for gradcheck
SMOOTH = np.array([[-7.3, -4.1, -2.6, -1.7, -0.8, -0.37],
                   [0.21, 0.66, 1.3, 2.2, 3.8, 7.9]])
# large magnitudes: torch gives finite values for all of these
WIDE = np.array([[-1e4, -500.0, -90.0, -30.0, -3.0, -1.0, -0.5, 0.0],
                 [0.5, 1.0, 2.5, 3.0, 6.0, 30.0, 90.0, 1e4]])


def _inputs():
    rng = np.random.default_rng(0)
    return np.concatenate([WIDE, SMOOTH.reshape(1, -1)[:, :8], rng.normal(0, 4, (3, 8))])


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_every_device(device, name):
    fn, ref = CASES[name]
    x = _inputs().astype(np.float32)
    got = fn(lazyt.tensor(x, device=device))
    assert got.dtype == lazyt.float32 and got.shape == x.shape
    out = got.numpy()
    want = ref(x.astype(np.float64))
    assert np.all(np.isfinite(out)), f"{name}: non-finite values {out}"
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_values_and_grad_cpu(name):
    fn, ref = CASES[name]
    x = _inputs()
    np.testing.assert_allclose(fn(lazyt.tensor(x, dtype=lazyt.float64)).numpy(), ref(x),
                               rtol=1e-12, atol=1e-14)
    t = lazyt.tensor(SMOOTH, dtype=lazyt.float64).require_grad()
    assert gradcheck(fn, [t])


@pytest.mark.parametrize("name", ["softplus", "logsigmoid", "mish", "elu", "selu"])
def test_gradients_finite_at_large_magnitudes(name):
    fn, _ = CASES[name]
    x = lazyt.tensor(WIDE, dtype=lazyt.float64).require_grad()
    assert np.all(np.isfinite(_grad(fn, x)))


def _grad(fn, x):
    return fn(x).sum().backward().get(x).numpy()


def test_exact_gradients_at_bounds():
    """torch's gradients where a piecewise form switches: hardtanh/relu6/hardsigmoid give 0 at
    and beyond the bounds, hardswish 0 at -3 and 1 at 3 (torch 2.11's), leaky_relu the slope
    at 0."""
    x = lazyt.tensor([-3.0, -1.0, 0.0, 1.0, 3.0, 6.0], dtype=lazyt.float64).require_grad()
    np.testing.assert_allclose(_grad(F.hardtanh, x), [0, 0, 1, 0, 0, 0])
    np.testing.assert_allclose(_grad(F.relu6, x), [0, 0, 0, 1, 1, 0])
    np.testing.assert_allclose(_grad(F.hardsigmoid, x), [0, 1 / 6, 1 / 6, 1 / 6, 0, 0])
    np.testing.assert_allclose(_grad(F.hardswish, x), [0.0, 1 / 6, 0.5, 5 / 6, 1.0, 1.0])
    np.testing.assert_allclose(_grad(F.leaky_relu, x), [0.01, 0.01, 0.01, 1, 1, 1])
    np.testing.assert_allclose(_grad(F.logsigmoid, x)[2], 0.5)
    np.testing.assert_allclose(_grad(F.softplus, x)[2], 0.5)


def test_softmin_dtype_argument():
    x = lazyt.tensor([[1.0, 2.0, 3.0]])
    y = F.softmin(x, dim=1, dtype=lazyt.float64)
    assert y.dtype == lazyt.float64
    np.testing.assert_allclose(y.numpy(), np_softmax(-np.array([[1.0, 2.0, 3.0]]), 1))


# ---------------------------------------------------------------------- modules
MODULES = [
    (nn.ELU(), lambda x: F.elu(x), "ELU(alpha=1.0)"),
    (nn.ELU(alpha=0.3), lambda x: F.elu(x, 0.3), "ELU(alpha=0.3)"),
    (nn.CELU(alpha=2.0), lambda x: F.celu(x, 2.0), "CELU(alpha=2.0)"),
    (nn.SELU(), F.selu, "SELU()"),
    (nn.LeakyReLU(0.2), lambda x: F.leaky_relu(x, 0.2), "LeakyReLU(negative_slope=0.2)"),
    (nn.ReLU6(), F.relu6, "ReLU6()"),
    (nn.Hardtanh(-2.0, 0.5), lambda x: F.hardtanh(x, -2.0, 0.5),
     "Hardtanh(min_val=-2.0, max_val=0.5)"),
    (nn.Hardsigmoid(), F.hardsigmoid, "Hardsigmoid()"),
    (nn.Hardswish(), F.hardswish, "Hardswish()"),
    (nn.Softplus(beta=2.0, threshold=5.0), lambda x: F.softplus(x, 2.0, 5.0),
     "Softplus(beta=2.0, threshold=5.0)"),
    (nn.Softsign(), F.softsign, "Softsign()"),
    (nn.Mish(), F.mish, "Mish()"),
    (nn.LogSigmoid(), F.logsigmoid, "LogSigmoid()"),
    (nn.Softmin(dim=1), lambda x: F.softmin(x, 1), "Softmin(dim=1)"),
]


@pytest.mark.parametrize("module,fn,text", MODULES, ids=[t for _, _, t in MODULES])
def test_module_matches_function(module, fn, text):
    x = lazyt.tensor(_inputs().astype(np.float32))
    np.testing.assert_array_equal(module(x).numpy(), fn(x).numpy())
    assert repr(module) == text
    assert list(module.parameters()) == []


def test_modules_in_sequential():
    seq = nn.Sequential(nn.Linear(8, 8), nn.Mish(), nn.Hardswish(), nn.Softmin(dim=-1))
    y = seq(lazyt.randn(2, 8))
    np.testing.assert_allclose(y.numpy().sum(-1), [1.0, 1.0], rtol=1e-5)


# ---------------------------------------------------------------------- errors
INPLACE_FNS = ["elu", "celu", "selu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid",
               "hardswish", "mish"]


INPLACE_FNS_ALL = INPLACE_FNS + ["relu", "silu", "threshold", "rrelu", "dropout"]
_ARGS = {"threshold": (0.5, -2.0), "dropout": (0.0,)}


@pytest.mark.parametrize("name", INPLACE_FNS_ALL)
def test_inplace_true_updates_the_input(name):
    """`inplace=True` returns the input object itself, holding what the out-of-place call
    returns; with False the input keeps its values."""
    fn = getattr(F, name)
    values = [1.5, -1.0, 0.25, -3.5]
    x = lazyt.tensor(values)
    expected = fn(x, *_ARGS.get(name, ()), inplace=False).numpy()
    np.testing.assert_array_equal(x.numpy(), np.float32(values))
    out = fn(x, *_ARGS.get(name, ()), inplace=True)
    assert out is x
    np.testing.assert_array_equal(x.numpy(), expected)


@pytest.mark.parametrize("name", INPLACE_FNS_ALL)
def test_inplace_true_gradient_through_a_non_leaf(name):
    """`y = w * 2; F.act(y, inplace=True)` differentiates as the out-of-place form (torch
    allows it: the in-place op's own backward may read what it replaced)."""
    fn = getattr(F, name)
    w0 = np.array([1.5, -1.0, 0.25, -3.5])
    w = lazyt.tensor(w0, dtype=lazyt.float64, requires_grad=True)
    fn(w * 2, *_ARGS.get(name, ()), inplace=False).sum().backward()
    ref = w.grad.numpy()
    w.grad = None
    y = w * 2
    fn(y, *_ARGS.get(name, ()), inplace=True)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), ref)


@pytest.mark.parametrize("name", INPLACE_FNS_ALL)
def test_inplace_true_on_a_leaf_that_requires_grad_raises(name):
    x = lazyt.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises(lazyt.GradError, match="in place"):
        getattr(F, name)(x, *_ARGS.get(name, ()), inplace=True)
    np.testing.assert_array_equal(x.numpy(), [1.0, -1.0])
    (x * 3).sum().backward()                      # the runtime is still usable
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("cls", [nn.ELU, nn.CELU, nn.SELU, nn.LeakyReLU, nn.ReLU6, nn.Hardtanh,
                                 nn.Hardsigmoid, nn.Hardswish, nn.Mish, nn.ReLU, nn.SiLU,
                                 nn.RReLU])
def test_module_inplace_true(cls):
    """torch's `nn.ReLU(inplace=True)` style: the module updates its input and returns it;
    gradients through the model are those of the out-of-place module."""
    m, ref_m = cls(inplace=True).eval(), cls().eval()       # RReLU: the mean slope
    if cls not in (nn.Hardsigmoid, nn.Hardswish):      # torch's reprs omit it for these two
        assert "inplace=True" in repr(m)
    w = lazyt.tensor([0.5, -2.0, 3.0], dtype=lazyt.float64, requires_grad=True)
    ref_m(w * 1.5).sum().backward()
    ref = w.grad.numpy()
    w.grad = None
    y = w * 1.5
    assert m(y) is y
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), ref)


@needs_torch
def test_inplace_sequential_matches_torch():
    """A torch-style model with in-place activations and dropout (eval) trains as torch's."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(inplace=True),
                             torch.nn.Dropout(0.3, inplace=True), torch.nn.Linear(8, 3),
                             torch.nn.LeakyReLU(0.2, inplace=True)).double().eval()
    lm = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Dropout(0.3, inplace=True),
                       nn.Linear(8, 3), nn.LeakyReLU(0.2, inplace=True)).eval()
    lm.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    lm = lm.to(lazyt.float64)
    x = np.random.default_rng(1).standard_normal((5, 4))
    tm(torch.tensor(x)).square().sum().backward()
    lm(lazyt.tensor(x)).square().sum().backward()
    for (name, tp), lp in zip(tm.named_parameters(), lm.parameters()):
        np.testing.assert_allclose(lp.grad.numpy(), tp.grad.numpy(), rtol=1e-10, err_msg=name)
    assert repr(lm[1]) == repr(tm[1]) and repr(lm[2]) == repr(tm[2])


def test_functional_inplace_forms():
    """`F.relu_` and friends, and `lazyt.relu_(x)`: the input updated in place."""
    x = lazyt.tensor([-1.0, 2.0])
    assert F.relu_(x) is x
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0])
    x = lazyt.tensor([-1.0, 2.0])
    assert F.leaky_relu_(x, 0.5) is x and F.hardtanh_(x, -0.25, 1.0) is x
    np.testing.assert_array_equal(x.numpy(), [-0.25, 1.0])
    x = lazyt.tensor([-1.0, 2.0])
    assert lazyt.exp_(x) is x and lazyt.threshold_(x, 1.0, 0.0) is x
    np.testing.assert_allclose(x.numpy(), [0.0, math.exp(2.0)], rtol=1e-6)


@pytest.mark.parametrize("name", INPLACE_FNS + ["softplus", "softsign", "logsigmoid",
                                                 "softmin", "quick_gelu"])
def test_non_float_input_rejected(name):
    fn = getattr(F, name)
    args = {"softmin": {"dim": 0}}.get(name, {})
    with pytest.raises(lazyt.DTypeError, match=f"^{name}: input must be a floating-point"):
        fn(lazyt.tensor([1, 2]), **args)
    with pytest.raises(lazyt.DTypeError, match=f"^{name}: input must be a lazyt.Tensor"):
        fn([1.0, 2.0], **args)


def test_bad_arguments():
    x = lazyt.tensor([1.0])
    with pytest.raises(lazyt.InvalidArgumentError, match="^hardtanh: min_val"):
        F.hardtanh(x, min_val=2.0, max_val=1.0)
    with pytest.raises(lazyt.InvalidArgumentError, match="^Hardtanh: min_val"):
        nn.Hardtanh(2.0, 1.0)
    with pytest.raises(lazyt.InvalidArgumentError, match="^celu: alpha"):
        F.celu(x, alpha=0.0)
    with pytest.raises(lazyt.InvalidArgumentError, match="^softplus: beta"):
        F.softplus(x, beta=0.0)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        F.softmin(x)            # torch's legacy dim, with torch's warning


# ---------------------------------------------------------------------- torch
TORCH_CASES = {
    "elu": lambda t: TF.elu(t), "elu_alpha": lambda t: TF.elu(t, alpha=0.5),
    "celu": lambda t: TF.celu(t, alpha=2.0), "selu": lambda t: TF.selu(t),
    "leaky_relu": lambda t: TF.leaky_relu(t), "leaky_relu_slope": lambda t: TF.leaky_relu(t, 0.2),
    "relu6": lambda t: TF.relu6(t), "hardtanh": lambda t: TF.hardtanh(t),
    "hardtanh_range": lambda t: TF.hardtanh(t, -2.0, 0.5),
    "hardsigmoid": lambda t: TF.hardsigmoid(t), "hardswish": lambda t: TF.hardswish(t),
    "softplus": lambda t: TF.softplus(t), "softplus_beta": lambda t: TF.softplus(t, 2.0, 5.0),
    "softsign": lambda t: TF.softsign(t), "mish": lambda t: TF.mish(t),
    "logsigmoid": lambda t: TF.logsigmoid(t),
    "quick_gelu": lambda t: t * torch.sigmoid(1.702 * t),
    "softmin": lambda t: TF.softmin(t, dim=-1), "softmin_dim0": lambda t: TF.softmin(t, 0),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_against_torch(name):
    fn, _ = CASES[name]
    x = _inputs()
    t = torch.tensor(x, requires_grad=True)
    want = TORCH_CASES[name](t)
    want.sum().backward()
    lx = lazyt.tensor(x, dtype=lazyt.float64).require_grad()
    np.testing.assert_allclose(fn(lx).numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    # rtol 1e-7: torch's float64 hardsigmoid backward multiplies by a float32 1/6
    np.testing.assert_allclose(_grad(fn, lx), t.grad.numpy(), rtol=1e-7, atol=1e-10)
    assert math.isfinite(float(want.sum()))
