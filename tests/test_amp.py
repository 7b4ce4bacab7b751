"""lazyt.amp against torch.amp on the cpu (float16 autocast): per-op result dtypes and values,
gradients through the casts, the autocast state, and GradScaler's scale, growth tracker and
skipped steps."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

import lazyt  # noqa: E402
import lazyt.nn.functional as F  # noqa: E402
from lazyt import amp  # noqa: E402
from lazyt.nn import Parameter  # noqa: E402

F16, F32 = lazyt.float16, lazyt.float32
TORCH_DTYPE = {F16: torch.float16, F32: torch.float32, lazyt.float64: torch.float64}


def _rng(seed=0):
    return np.random.default_rng(seed)


def _pair(arr, device, grad=False):
    """The same float32 array as a lazyt tensor on `device` and a torch tensor."""
    arr = np.asarray(arr)
    t = torch.tensor(arr, requires_grad=grad)
    x = lazyt.tensor(arr, device=device)
    return (Parameter(x) if grad else x), t


def _close(lz, tt, tol=2e-3):
    assert lz.dtype is {v: k for k, v in TORCH_DTYPE.items()}[tt.dtype], (lz.dtype, tt.dtype)
    np.testing.assert_allclose(lz.numpy().astype(np.float64),
                               tt.detach().double().numpy(), rtol=tol, atol=tol)


def _autocast_both(device):
    return amp.autocast(device.base, dtype=F16), torch.autocast("cpu", dtype=torch.float16)


# ---------------------------------------------------------------------- per-op dtypes and values
# ops whose autocast policy is the same in torch's cpu and cuda lists: compared with torch
# running under cpu autocast
_SAME_POLICY = {
    "linear": (lambda m, f, a: f.linear(a[0], a[1], a[2]), [(4, 8), (6, 8), (6,)]),
    "matmul": (lambda m, f, a: a[0] @ a[1], [(2, 4, 8), (8, 3)]),
    "bmm": (lambda m, f, a: m.bmm(a[0], a[1]), [(2, 4, 8), (2, 8, 3)]),
    "addmm": (lambda m, f, a: m.addmm(a[0], a[1], a[2], beta=0.5, alpha=2.0),
              [(4, 3), (4, 8), (8, 3)]),
    "baddbmm": (lambda m, f, a: m.baddbmm(a[0], a[1], a[2]), [(2, 4, 3), (2, 4, 8), (2, 8, 3)]),
    "conv1d": (lambda m, f, a: f.conv1d(a[0], a[1], a[2], padding=1), [(2, 3, 9), (4, 3, 3), (4,)]),
    "conv2d": (lambda m, f, a: f.conv2d(a[0], a[1], stride=2), [(1, 2, 7, 7), (3, 2, 3, 3)]),
    "conv_transpose2d": (lambda m, f, a: f.conv_transpose2d(a[0], a[1], a[2], stride=2),
                         [(1, 3, 4, 4), (3, 2, 3, 3), (2,)]),
    "sdpa": (lambda m, f, a: f.scaled_dot_product_attention(a[0], a[1], a[2], is_causal=True),
             [(2, 2, 5, 8), (2, 2, 5, 8), (2, 2, 5, 4)]),
    "mse_loss": (lambda m, f, a: f.mse_loss(a[0] @ a[1], a[2]), [(4, 8), (8, 3), (4, 3)]),
    "l1_loss": (lambda m, f, a: f.l1_loss(a[0] @ a[1], a[2]), [(4, 8), (8, 3), (4, 3)]),
    "smooth_l1_loss": (lambda m, f, a: f.smooth_l1_loss(a[0] @ a[1], a[2]),
                       [(4, 8), (8, 3), (4, 3)]),
    "bce_with_logits": (lambda m, f, a: f.binary_cross_entropy_with_logits(a[0] @ a[1], a[2].abs()
                                                                           .clamp(max=1.0)),
                        [(4, 8), (8, 3), (4, 3)]),
    "kl_div": (lambda m, f, a: f.kl_div(f.log_softmax(a[0] @ a[1], -1), a[2].abs(),
                                        reduction="batchmean"), [(4, 8), (8, 3), (4, 3)]),
}


@pytest.mark.parametrize("name", list(_SAME_POLICY))
def test_op_dtype_and_value_as_torch(device, name):
    op, shapes = _SAME_POLICY[name]
    rng = _rng(1)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    lz = [lazyt.tensor(a, device=device) for a in arrs]
    tt = [torch.tensor(a) for a in arrs]
    ours, theirs = _autocast_both(device)
    with ours:
        y = op(lazyt, F, lz)
    with theirs:
        want = op(torch, TF, tt)
    _close(y, want, tol=1e-2)
    out = op(lazyt, F, lz)  # outside: nothing changes
    assert out.dtype is F32


def test_float32_ops_follow_torch_cuda_list(device):
    """softmax, log_softmax, layer_norm, group_norm, cross_entropy, nll_loss of a float16 input
    compute in float32 (torch's cuda list; torch's cpu list keeps the first four in float16)."""
    rng = _rng(2)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    x = lazyt.tensor(a, device=device).half()
    t = torch.tensor(a).half().float()   # what autocast computes on
    target = np.array([0, 5, 2, 1])
    lt, tt = lazyt.tensor(target, device=device), torch.tensor(target)
    w, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    with amp.autocast(device.base, dtype=F16):
        got = {
            "softmax": F.softmax(x, -1), "log_softmax": F.log_softmax(x, dim=1),
            "softmin": F.softmin(x, 1),
            "layer_norm": F.layer_norm(x, (6,), lazyt.tensor(w, device=device),
                                       lazyt.tensor(b, device=device)),
            "group_norm": F.group_norm(x.reshape(2, 6, 2), 3),
            "cross_entropy": F.cross_entropy(x, lt, label_smoothing=0.1),
            "nll_loss": F.nll_loss(x, lt), "softplus": F.softplus(x),
            "cosine_similarity": F.cosine_similarity(x, x.flip(0)),
            "cdist": lazyt.cdist(x, x),
        }
    want = {
        "softmax": TF.softmax(t, -1), "log_softmax": TF.log_softmax(t, dim=1),
        "softmin": TF.softmin(t, 1),
        "layer_norm": TF.layer_norm(t, (6,), torch.tensor(w), torch.tensor(b)),
        "group_norm": TF.group_norm(t.reshape(2, 6, 2), 3),
        "cross_entropy": TF.cross_entropy(t, tt, label_smoothing=0.1),
        "nll_loss": TF.nll_loss(t, tt), "softplus": TF.softplus(t),
        "cosine_similarity": TF.cosine_similarity(t, t.flip(0)), "cdist": torch.cdist(t, t),
    }
    for k in want:
        _close(got[k], want[k], tol=1e-4)
    assert F.softmax(x, -1).dtype is F16  # outside autocast: the input's dtype


def test_lower_precision_leaves_float64_and_other_devices(device):
    x = lazyt.randn(3, 4, dtype=lazyt.float64, device=device)
    y = lazyt.randn(3, 4, device=device)
    with amp.autocast(device.base, dtype=F16):
        assert (x @ x.T).dtype is lazyt.float64  # torch casts float32 only
        assert (y @ y.T).dtype is F16
    other = "cuda" if device.base != "cuda" else "wgpu"
    with amp.autocast(other):  # another device type's autocast leaves these tensors alone
        assert (y @ y.T).dtype is F32
        assert not amp.is_autocast_enabled(device.base)
        assert amp.is_autocast_enabled(other)


# ---------------------------------------------------------------------- gradients
def test_training_step_gradients_as_torch(device):
    """linear -> relu -> layer_norm -> linear -> cross_entropy under autocast: float16
    activations, a float32 loss, float32 gradients of float32 parameters, torch's values."""
    rng = _rng(3)
    w1, tw1 = _pair(rng.standard_normal((16, 8)).astype(np.float32) * 0.3, device, grad=True)
    b1, tb1 = _pair(rng.standard_normal(16).astype(np.float32) * 0.1, device, grad=True)
    w2, tw2 = _pair(rng.standard_normal((5, 16)).astype(np.float32) * 0.3, device, grad=True)
    xa = rng.standard_normal((6, 8)).astype(np.float32)
    x, tx = lazyt.tensor(xa, device=device), torch.tensor(xa)
    y = np.array([0, 1, 2, 3, 4, 0])
    ours, theirs = _autocast_both(device)
    with ours:
        h = F.relu(F.linear(x, w1, b1))
        assert h.dtype is F16
        h = F.layer_norm(h, (16,))
        logits = F.linear(h, w2)
        assert logits.dtype is F16
        loss = F.cross_entropy(logits, lazyt.tensor(y, device=device))
    with theirs:
        th = TF.layer_norm(TF.relu(TF.linear(tx, tw1, tb1)).float(), (16,))
        tloss = TF.cross_entropy(TF.linear(th, tw2), torch.tensor(y))
    assert loss.dtype is F32
    _close(loss, tloss)
    loss.backward()
    tloss.backward()
    for p, tp in ((w1, tw1), (b1, tb1), (w2, tw2)):
        assert p.dtype is F32 and p.grad.dtype is F32
        _close(p.grad, tp.grad, tol=5e-3)


def test_parameter_cast_cache_across_iterations(device):
    """A parameter used twice per region and over two backward passes in one region: its
    cached float16 copy keeps gradients flowing each time."""
    w = Parameter(lazyt.ones(3, 3, device=device))
    x = lazyt.ones(2, 3, device=device)
    with amp.autocast(device.base, dtype=F16):
        for _ in range(2):
            w.grad = None
            (x @ w @ w).sum().backward()
            np.testing.assert_allclose(w.grad.numpy(), np.full((3, 3), 12.0))
            assert w.grad.dtype is F32
    with amp.autocast(device.base, dtype=F16, cache_enabled=False):
        w.grad = None
        (x @ w).sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), np.full((3, 3), 2.0))


# ---------------------------------------------------------------------- the autocast state
def test_state_nesting_and_decorator(device):
    base = device.base
    y = lazyt.randn(2, 2, device=device)
    assert not amp.is_autocast_enabled(base) and amp.AUTOCAST.get() is None
    with lazyt.amp.autocast(base, dtype=F16):
        assert amp.is_autocast_enabled(base) and amp.get_autocast_dtype(base) is F16
        with amp.autocast(base, dtype=F16, enabled=False):
            assert not amp.is_autocast_enabled(base)
            assert (y @ y).dtype is F32
            with amp.autocast(base, dtype=F16):
                assert (y @ y).dtype is F16
            assert (y @ y).dtype is F32
        assert (y @ y).dtype is F16
    assert amp.AUTOCAST.get() is None and (y @ y).dtype is F32

    @amp.autocast(base, dtype=F16)
    def f(a, depth=0):
        return f(a, depth + 1) if depth < 2 else a @ a   # re-entered decorator

    assert f(y).dtype is F16 and amp.AUTOCAST.get() is None
    assert amp.get_autocast_dtype("cuda") is F16 and not amp.is_autocast_enabled()


def test_errors():
    with pytest.raises(lazyt.DTypeError, match="bfloat16"):
        amp.autocast("cpu")
    with pytest.raises(lazyt.DTypeError, match="bfloat16"):
        amp.autocast("cuda", dtype=torch.bfloat16)
    with pytest.raises(lazyt.DTypeError, match="float16"):
        amp.autocast("cuda", dtype=lazyt.float32)
    with pytest.raises(lazyt.InvalidArgumentError, match="device_type"):
        amp.autocast("mps")
    p = lazyt.rand(4, 3)
    with amp.autocast("cpu", dtype=F16):
        with pytest.raises(lazyt.DTypeError, match="binary_cross_entropy_with_logits"):
            F.binary_cross_entropy(p, p)
        with amp.autocast("cpu", enabled=False, dtype=F16):
            F.binary_cross_entropy(p, p)  # not autocast here: allowed


# ---------------------------------------------------------------------- GradScaler
class _Pair:
    """One linear model and SGD optimizer in lazyt and in torch, same weights."""

    def __init__(self, device, lr=0.1):
        rng = _rng(4)
        self.w, self.tw = _pair(rng.standard_normal((3, 4)).astype(np.float32), device, True)
        self.b, self.tb = _pair(rng.standard_normal(3).astype(np.float32), device, True)
        self.opt = lazyt.optim.SGD([self.w, self.b], lr=lr)
        self.topt = torch.optim.SGD([self.tw, self.tb], lr=lr)
        self.device = device

    def losses(self, step, autocast=True):
        xa = _rng(10 + step).standard_normal((5, 4)).astype(np.float32)
        x = lazyt.tensor(xa, device=self.device)
        with amp.autocast(self.device.base, dtype=F16, enabled=autocast):
            loss = F.mse_loss(F.linear(x, self.w, self.b), lazyt.zeros(5, 3, device=self.device))
        with torch.autocast("cpu", dtype=torch.float16, enabled=autocast):
            tloss = TF.mse_loss(TF.linear(torch.tensor(xa), self.tw, self.tb), torch.zeros(5, 3))
        return loss, tloss


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "autocast"])
def test_grad_scaler_as_torch(device, autocast):
    """Scales, growth tracker, skipped steps and parameters as torch's, over steps with an inf
    and a NaN gradient; float16 gradients (autocast) round differently, hence its tolerance."""
    m = _Pair(device)
    tol = 2e-3 if autocast else 1e-6
    kw = dict(init_scale=2.0 ** 10, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
    scaler = amp.GradScaler(device.base, **kw)
    tscaler = torch.amp.GradScaler("cpu", **kw)
    history = []
    for step in range(7):
        m.opt.zero_grad()
        m.topt.zero_grad()
        loss, tloss = m.losses(step, autocast)
        scaler.scale(loss).backward()
        tscaler.scale(tloss).backward()
        if step in (2, 5):   # an overflow: the step is skipped and the scale backs off
            g = m.w.grad.numpy().copy()
            g[0, 1] = np.inf if step == 2 else np.nan
            m.w.grad = lazyt.tensor(g, device=device)
            m.tw.grad[0, 1] = math.inf if step == 2 else math.nan
        before = m.w.numpy().copy()
        if step == 3:
            scaler.unscale_(m.opt)
            tscaler.unscale_(m.topt)
            _close(m.w.grad, m.tw.grad, tol=max(tol, 1e-5))  # unscaled in place
        scaler.step(m.opt)
        tscaler.step(m.topt)
        assert np.array_equal(before, m.w.numpy()) == (step in (2, 5))
        scaler.update()
        tscaler.update()
        history.append((scaler.get_scale(), scaler._get_growth_tracker()))
        assert history[-1] == (tscaler.get_scale(), tscaler._get_growth_tracker())
        for p, tp in ((m.w, m.tw), (m.b, m.tb)):
            np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=tol, atol=tol)
    assert [s for s, _ in history] == [1024.0, 2048.0, 1024.0, 1024.0, 2048.0, 1024.0, 1024.0]
    assert scaler.state_dict() == tscaler.state_dict()


def test_grad_scaler_state_machine_and_state_dict(device):
    m = _Pair(device)
    scaler = amp.GradScaler(device.base, init_scale=8.0, growth_interval=3)
    with pytest.raises(lazyt.InvalidArgumentError, match="scale"):
        scaler.step(m.opt)          # before scale()
    loss, _ = m.losses(0)
    a, (b, c) = scaler.scale([loss, (loss, loss)])
    assert all(math.isclose((v / loss).item(), 8.0) for v in (a, b, c))
    scaler.scale(loss).backward()
    with pytest.raises(lazyt.InvalidArgumentError, match="no inf checks"):
        scaler.update()
    scaler.unscale_(m.opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(m.opt)
    scaler.step(m.opt)
    with pytest.raises(lazyt.InvalidArgumentError, match="already been called"):
        scaler.step(m.opt)
    with pytest.raises(lazyt.InvalidArgumentError, match="after step"):
        scaler.unscale_(m.opt)
    with pytest.raises(lazyt.InvalidArgumentError, match="closure"):
        scaler.step(m.opt, closure=lambda: None)
    scaler.update()
    assert scaler._get_growth_tracker() == 1
    scaler.update(new_scale=4.0)
    assert scaler.get_scale() == 4.0
    sd = scaler.state_dict()
    other = amp.GradScaler(device.base)
    other.load_state_dict(sd)
    assert other.state_dict() == sd == {"scale": 4.0, "growth_factor": 2.0,
                                         "backoff_factor": 0.5, "growth_interval": 3,
                                         "_growth_tracker": 1}
    assert other.get_growth_factor() == 2.0 and other.get_backoff_factor() == 0.5
    assert other.get_growth_interval() == 3 and other.is_enabled()
    with pytest.raises(lazyt.InvalidArgumentError, match="empty"):
        other.load_state_dict({})


def test_grad_scaler_step_returns_and_disabled(device):
    class Counting(lazyt.optim.SGD):
        def step(self, grads=None):
            super().step(grads)
            return "stepped"

    m = _Pair(device)
    opt = Counting([m.w, m.b], lr=0.1)
    scaler = amp.GradScaler(device.base, init_scale=256.0)
    loss, _ = m.losses(0)
    scaler.scale(loss).backward()
    assert scaler.step(opt) == "stepped"
    off = amp.GradScaler(device.base, enabled=False)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    assert not off.is_enabled()
    assert off.step(opt) == "stepped"


def test_grad_scaler_refuses_float16_grads(device):
    w = Parameter(lazyt.ones(2, 2, dtype=F16, device=device))
    opt = lazyt.optim.SGD([w], lr=0.1)
    scaler = amp.GradScaler(device.base)
    scaler.scale((w * 2).sum()).backward()
    with pytest.raises(ValueError, match="float16 gradients"):
        scaler.step(opt)
    with pytest.raises(lazyt.InvalidArgumentError, match="growth_factor"):
        amp.GradScaler(device.base, growth_factor=1.0)
