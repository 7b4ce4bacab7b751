"""`lazyt.nn.utils.parametrize` / `parametrizations` and the hook-based `spectral_norm` against
torch: state-dict keys, outputs in train and eval mode, gradients of the originals, the power
iteration buffers, right_inverse, removal, and the errors."""
from __future__ import annotations

import copy
import itertools
import pickle
import warnings

import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.nn.utils import parametrizations as LP
from lazyt.nn.utils import parametrize as P

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrize
TPZ = torch.nn.utils.parametrizations


def _wide(device) -> bool:
    """Whether `device` holds float64 (wgpu does not: its modules run in float32 there, and
    the comparisons loosen to float32's precision)."""
    return device == "cpu" or device.base != "wgpu"


def _tol(t, rtol: float, atol: float) -> dict:
    """The float64 tolerances given, or float32's where `t` is float32."""
    return dict(rtol=rtol, atol=atol) if t.dtype is lazyt.float64 else dict(rtol=2e-4, atol=2e-5)


def _to_lazyt(tm, lm) -> None:
    """Load torch module `tm`'s state (buffers included) into lazyt module `lm`."""
    lm.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _same_state(tm, lm, rtol=1e-12, atol=1e-14) -> None:
    ts, ls = tm.state_dict(), lm.state_dict()
    assert list(ls) == list(ts)
    for k in ts:
        np.testing.assert_allclose(ls[k].numpy(), ts[k].numpy(), err_msg=k,
                                   **_tol(ls[k], rtol, atol))


def _close(lt, tt, rtol=1e-11, atol=1e-13) -> None:
    np.testing.assert_allclose(lt.numpy(), tt.detach().numpy(), **_tol(lt, rtol, atol))


def _pair(make, device):
    """The same module in torch and lazyt (float64, float32 where the device lacks it), with
    torch's initial values."""
    wide = _wide(device)
    torch.manual_seed(0)
    tm = make(torch.nn).to(torch.float64 if wide else torch.float32)
    lm = make(nn).to(lazyt.float64 if wide else lazyt.float32).to(device)
    _to_lazyt(tm, lm)
    return tm, lm


def _input(x, device):
    """numpy `x` as a torch and a lazyt tensor of the modules' dtype."""
    if not _wide(device):
        x = x.astype(np.float32)
    return torch.tensor(x), lazyt.tensor(x, device=device)


class _Symmetric(nn.Module):
    def forward(self, X):  # noqa: N803
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):  # noqa: N803
        return A.triu()


class _TSymmetric(torch.nn.Module):
    def forward(self, X):  # noqa: N803
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):  # noqa: N803
        return A.triu()


class _RowSums(nn.Module):
    def forward(self, X):  # noqa: N803
        return X.sum(1)


class _Scale(nn.Module):
    def forward(self, X):  # noqa: N803
        return 2.0 * X


class _TScale(torch.nn.Module):
    def forward(self, X):  # noqa: N803
        return 2.0 * X


# ---------------------------------------------------------------------- parametrize
def test_register_chain_assign_remove_matches_torch(device):
    tm, lm = _pair(lambda n: n.Linear(4, 4), device)
    TP.register_parametrization(tm, "weight", _TSymmetric())
    P.register_parametrization(lm, "weight", _Symmetric())
    TP.register_parametrization(tm, "weight", _TScale())
    P.register_parametrization(lm, "weight", _Scale())
    assert type(lm).__name__ == "ParametrizedLinear"
    assert P.type_before_parametrizations(lm) is nn.Linear
    assert P.is_parametrized(lm) and P.is_parametrized(lm, "weight")
    assert not P.is_parametrized(lm, "bias")
    assert isinstance(lm.parametrizations.weight, P.ParametrizationList)
    assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()] == \
        ["bias", "parametrizations.weight.original"]
    _same_state(tm, lm)
    x = np.random.default_rng(0).standard_normal((3, 4))
    tx, lx = _input(x, device)
    to, lo = tm(tx), lm(lx)
    _close(lo, to)
    _close(lm.weight, tm.weight)
    to.square().sum().backward()
    lo.square().sum().backward()
    _close(lm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad)

    # assignment goes through right_inverse (the chain's last has none: torch refuses too)
    with pytest.raises(NotImplementedError, match="right_inverse"):
        lm.weight = lazyt.eye(4, dtype=lm.bias.dtype, device=device)
    for m in (tm, lm):
        del m.parametrizations.weight[1]
    a = np.random.default_rng(1).standard_normal((4, 4))
    orig = lm.parametrizations.weight.original
    ta, la = _input(a, device)
    with torch.no_grad():
        tm.weight = ta
    lm.weight = la
    assert lm.parametrizations.weight.original is orig  # the same Parameter, updated
    _same_state(tm, lm)
    with pytest.raises(lazyt.nn.ModuleError, match="parametrized"):
        lm.weight = nn.Parameter(la)

    TP.remove_parametrizations(tm, "weight", leave_parametrized=True)
    P.remove_parametrizations(lm, "weight", leave_parametrized=True)
    assert type(lm) is nn.Linear and lm.weight is orig
    assert not P.is_parametrized(lm)
    _same_state(tm, lm)
    with pytest.raises(lazyt.InvalidArgumentError, match="remove_parametrizations"):
        P.remove_parametrizations(lm, "weight")


def test_remove_leave_unparametrized_and_buffers():
    lm = nn.BatchNorm1d(3)
    tm = torch.nn.BatchNorm1d(3)
    for m, scale in ((lm, _Scale()), (tm, _TScale())):
        (TP if m is tm else P).register_parametrization(m, "running_var", scale)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert "parametrizations.running_var.original" in lm.state_dict()
    np.testing.assert_allclose(lm.running_var.numpy(), 2 * np.ones(3))
    P.remove_parametrizations(lm, "running_var", leave_parametrized=False)
    assert "running_var" in dict(lm.named_buffers())
    np.testing.assert_allclose(lm.running_var.numpy(), np.ones(3))


class _Split(nn.Module):
    """A parametrization from two tensors: weight = a + b (right_inverse: a half each)."""

    def forward(self, a, b):
        return a + b

    def right_inverse(self, w):
        return w * 0.5, w * 0.5


class _TSplit(torch.nn.Module):
    def forward(self, a, b):
        return a + b

    def right_inverse(self, w):
        return w * 0.5, w * 0.5


def test_right_inverse_with_several_tensors():
    tm, lm = _pair(lambda n: n.Linear(3, 2), "cpu")
    TP.register_parametrization(tm, "weight", _TSplit())
    P.register_parametrization(lm, "weight", _Split())
    assert list(lm.state_dict()) == list(tm.state_dict()) == \
        ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    _same_state(tm, lm)
    x = np.random.default_rng(0).standard_normal((2, 3))
    tm(torch.tensor(x)).sum().backward()
    lm(lazyt.tensor(x)).sum().backward()
    for i in (0, 1):
        _close(getattr(lm.parametrizations.weight, f"original{i}").grad,
               getattr(tm.parametrizations.weight, f"original{i}").grad)
    lm.weight = lazyt.ones(2, 3, dtype=lazyt.float64)
    np.testing.assert_allclose(lm.parametrizations.weight.original1.numpy(), 0.5)
    with pytest.raises(lazyt.InvalidArgumentError, match="leave_parametrized"):
        P.remove_parametrizations(lm, "weight", leave_parametrized=False)
    P.remove_parametrizations(lm, "weight")
    assert isinstance(lm.weight, nn.Parameter)
    np.testing.assert_allclose(lm.weight.numpy(), 1.0)


def test_cached_transfer_copy_and_errors():
    lm = nn.Linear(3, 3)
    P.register_parametrization(lm, "weight", _Symmetric())
    assert lm.weight is not lm.weight
    with P.cached():
        w = lm.weight
        assert lm.weight is w
    assert lm.weight is not w

    other = nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(lm, other)
    assert P.is_parametrized(other, "weight")
    assert other.parametrizations.weight.original is lm.parametrizations.weight.original
    np.testing.assert_array_equal(other.weight.numpy(), lm.weight.numpy())

    twin = copy.deepcopy(lm)
    assert type(twin) is type(lm) and P.is_parametrized(twin, "weight")
    np.testing.assert_array_equal(twin.weight.numpy(), lm.weight.numpy())
    with pytest.raises(lazyt.nn.ModuleError, match="state_dict"):
        pickle.dumps(lm)

    with pytest.raises(lazyt.InvalidArgumentError, match="register_parametrization.*'nope'"):
        P.register_parametrization(lm, "nope", _Symmetric())
    with pytest.raises(lazyt.ShapeError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(3, 2), "weight", _RowSums())
    with pytest.raises(lazyt.nn.ModuleError, match="must be a Module"):
        P.register_parametrization(nn.Linear(3, 3), "weight", lambda x: x)


# ---------------------------------------------------------------------- orthogonal
@pytest.mark.parametrize("shape,orthogonal_map,trivial", [
    (s, m, t) for s, m, t in itertools.product(
        [(4, 4), (5, 3), (3, 5)], [None, "matrix_exp", "cayley", "householder"], [True, False])])
def test_orthogonal_matches_torch(shape, orthogonal_map, trivial):
    tm, lm = _pair(lambda n: n.Linear(shape[1], shape[0]), "cpu")
    TPZ.orthogonal(tm, orthogonal_map=orthogonal_map, use_trivialization=trivial)
    LP.orthogonal(lm, orthogonal_map=orthogonal_map, use_trivialization=trivial)
    if shape[0] == shape[1] or not trivial:  # a non-square base is completed at random
        _same_state(tm, lm, rtol=1e-10, atol=1e-12)
    _to_lazyt(tm, lm)
    w = lm.weight.numpy()
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    x = np.random.default_rng(0).standard_normal((2, shape[1]))
    to, lo = tm(torch.tensor(x)), lm(lazyt.tensor(x))
    _close(lo, to)
    to.square().sum().backward()
    lo.square().sum().backward()
    _close(lm.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad,
           rtol=1e-9, atol=1e-12)


def test_orthogonal_assign_and_errors():
    q = np.linalg.qr(np.random.default_rng(2).standard_normal((4, 4)))[0]
    tm, lm = _pair(lambda n: n.Linear(4, 4), "cpu")
    TPZ.orthogonal(tm)
    LP.orthogonal(lm)
    with torch.no_grad():
        tm.weight = torch.tensor(q)
    lm.weight = lazyt.tensor(q)
    _same_state(tm, lm)
    np.testing.assert_allclose(lm.weight.numpy(), q, atol=1e-12)

    no_triv = LP.orthogonal(nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        no_triv.weight = lazyt.eye(3)
    with pytest.raises(lazyt.InvalidArgumentError, match="orthogonal_map"):
        LP.orthogonal(nn.Linear(3, 3), orthogonal_map="svd")
    with pytest.raises(lazyt.ShapeError, match="orthogonal: expected a matrix"):
        LP.orthogonal(nn.Linear(3, 3), "bias")
    with pytest.raises(lazyt.InvalidArgumentError, match="orthogonal: .*'nope'"):
        LP.orthogonal(nn.Linear(3, 3), "nope")


# ---------------------------------------------------------------------- spectral norm
_SPECTRAL_CASES = [
    (lambda n: n.Linear(4, 5), (3, 4), {}),
    (lambda n: n.Conv2d(2, 3, 3), (2, 2, 5, 5), {"n_power_iterations": 3}),
    (lambda n: n.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4), {}),          # dim 1 by default
    (lambda n: n.Linear(4, 5), (3, 4), {"dim": 1, "eps": 1e-6}),
]


@pytest.mark.parametrize("case", range(len(_SPECTRAL_CASES)))
def test_spectral_norm_parametrization_matches_torch(case, device):
    make, x_shape, kwargs = _SPECTRAL_CASES[case]
    tm, lm = _pair(make, device)
    TPZ.spectral_norm(tm, **kwargs)
    LP.spectral_norm(lm, **kwargs)
    assert list(lm.state_dict()) == list(tm.state_dict())
    assert "parametrizations.weight.0._u" in lm.state_dict()
    _to_lazyt(tm, lm)  # torch's random u, v
    x = np.random.default_rng(0).standard_normal(x_shape)
    for training in (True, True, False):  # the buffers advance in training mode only
        tm.train(training)
        lm.train(training)
        tx, lx = _input(x, device)
        to, lo = tm(tx), lm(lx)
        _close(lo, to)
        _same_state(tm, lm, rtol=1e-10, atol=1e-13)
        to.square().sum().backward()
        lo.square().sum().backward()
        _close(lm.parametrizations.weight.original.grad,
               tm.parametrizations.weight.original.grad, rtol=1e-10, atol=1e-12)


def test_spectral_norm_in_place_buffers_two_forwards_and_compile():
    """The buffers advance in place (the same tensors, as torch's), so two forwards before one
    backward work and a compiled training step replays the power iteration."""
    m = LP.spectral_norm(nn.Linear(4, 5))
    twin = copy.deepcopy(m)
    u = m.parametrizations.weight[0]._u
    x = lazyt.tensor(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32))
    (m(x).sum() + m(x).sum()).backward()
    assert m.parametrizations.weight[0]._u is u
    assert m.parametrizations.weight.original.grad is not None

    runs = []
    for model, compiled in ((copy.deepcopy(twin), True), (twin, False)):
        opt = lazyt.optim.SGD(model.parameters(), lr=0.1)

        def step(x, model=model, opt=opt):
            opt.zero_grad()
            loss = model(x).square().sum()
            loss.backward()
            opt.step()
            return loss

        step = lazyt.compile(step) if compiled else step
        runs.append(([step(x).item() for _ in range(3)],
                     model.parametrizations.weight[0]._v.numpy()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-6)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-6, atol=1e-7)


def test_spectral_norm_vector_and_errors():
    tm, lm = _pair(lambda n: n.Linear(3, 4), "cpu")
    TPZ.spectral_norm(tm, "bias")
    LP.spectral_norm(lm, "bias")
    assert list(lm.state_dict()) == list(tm.state_dict())
    _close(lm.bias, tm.bias)
    with pytest.raises(lazyt.IndexOutOfRangeError, match="spectral_norm: dim 2"):
        LP.spectral_norm(nn.Linear(3, 3), dim=2)
    with pytest.raises(lazyt.InvalidArgumentError, match="n_power_iterations"):
        LP.spectral_norm(nn.Linear(3, 3), n_power_iterations=0)


# ---------------------------------------------------------------------- weight norm
@pytest.mark.parametrize("dim", [0, 1, None, -1, -2])
def test_weight_norm_parametrization_matches_torch(dim, device):
    tm, lm = _pair(lambda n: n.Conv1d(3, 4, 3), device)
    TPZ.weight_norm(tm, dim=dim)
    LP.weight_norm(lm, dim=dim)
    assert list(lm.state_dict()) == ["bias", "parametrizations.weight.original0",
                                     "parametrizations.weight.original1"]
    _same_state(tm, lm)
    x = np.random.default_rng(0).standard_normal((2, 3, 7))
    tx, lx = _input(x, device)
    to, lo = tm(tx), lm(lx)
    _close(lo, to)
    to.square().sum().backward()
    lo.square().sum().backward()
    for i in (0, 1):
        _close(getattr(lm.parametrizations.weight, f"original{i}").grad,
               getattr(tm.parametrizations.weight, f"original{i}").grad)


def test_weight_norm_parametrization_loads_hook_checkpoints():
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2).double())
    lm = LP.weight_norm(nn.Linear(3, 2, dtype=lazyt.float64))
    _to_lazyt(old, lm)  # weight_g / weight_v -> original0 / original1
    _close(lm.weight, old.weight)


# ---------------------------------------------------------------------- hook spectral norm
@pytest.mark.parametrize("case", [0, 1, 2])
def test_spectral_norm_hook_matches_torch(case, device):
    make, x_shape, kwargs = _SPECTRAL_CASES[case]
    tm, lm = _pair(make, device)
    torch.nn.utils.spectral_norm(tm, **kwargs)
    nn.utils.spectral_norm(lm, **kwargs)
    assert [n for n, _ in lm.named_parameters()] == ["bias", "weight_orig"]
    assert list(lm.state_dict()) == list(tm.state_dict()) == \
        ["bias", "weight_orig", "weight_u", "weight_v"]
    _to_lazyt(tm, lm)
    x = np.random.default_rng(0).standard_normal(x_shape)
    for training in (True, True, False):
        tm.train(training)
        lm.train(training)
        tx, lx = _input(x, device)
        to, lo = tm(tx), lm(lx)
        _close(lo, to)
        _close(lm.weight, tm.weight)
        _same_state(tm, lm, rtol=1e-10, atol=1e-13)
        to.square().sum().backward()
        lo.square().sum().backward()
        _close(lm.weight_orig.grad, tm.weight_orig.grad, rtol=1e-10, atol=1e-12)
    with pytest.raises(lazyt.InvalidArgumentError, match="already has a spectral norm"):
        nn.utils.spectral_norm(lm)
    torch.nn.utils.remove_spectral_norm(tm)
    nn.utils.remove_spectral_norm(lm)
    assert [n for n, _ in lm.named_parameters()] == ["bias", "weight"]
    _same_state(tm, lm, rtol=1e-10, atol=1e-13)
    with pytest.raises(lazyt.InvalidArgumentError, match="remove_spectral_norm"):
        nn.utils.remove_spectral_norm(lm)


def test_package_paths():
    import lazyt.nn.utils.parametrizations as parametrizations_module
    import lazyt.nn.utils.parametrize as parametrize_module
    from lazyt.nn.utils.rnn import PackedSequence, pad_sequence  # noqa: F401

    assert parametrize_module is P and parametrizations_module is LP
    for name in ("clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector",
                 "vector_to_parameters", "weight_norm", "remove_weight_norm", "spectral_norm",
                 "remove_spectral_norm"):
        assert callable(getattr(nn.utils, name)), name
