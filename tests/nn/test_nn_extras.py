"""AdaptiveLogSoftmaxWithLoss, fractional max pooling, triplet_margin_with_distance_loss,
SyncBatchNorm and CrossMapLRN2d against torch (values, gradients, shapes, errors) on every
device; SyncBatchNorm also on two MPI ranks against a BatchNorm over the whole batch."""
import os
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lazyt
from lazyt import capture_state
from lazyt.errors import DTypeError, InvalidArgumentError, LazytError, ShapeError
from lazyt.nn.adaptive import AdaptiveLogSoftmaxWithLoss
from lazyt.nn.extras import (CrossMapLRN2d, SyncBatchNorm, TripletMarginWithDistanceLoss,
                             triplet_margin_with_distance_loss)
from lazyt.nn.fractional_pool import (FractionalMaxPool2d, FractionalMaxPool3d,
                                      fractional_max_pool2d, fractional_max_pool3d)
from lazyt.nn.container import Sequential
from lazyt.nn.linear import Linear
from lazyt.nn.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d

torch = pytest.importorskip("torch")
TF = torch.nn.functional

ROOT = Path(__file__).resolve().parents[2]


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def pair(x, device, grad=True):
    """(torch tensor, lazyt tensor) of one array, both requiring grad."""
    return (torch.tensor(x, requires_grad=grad),
            lazyt.tensor(x, device=device, requires_grad=grad))


def close(got, want, tol=1e-10):
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else want
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


# ---------------------------------------------------------------------- adaptive softmax
def _adaptive_pair(device, head_bias=False, seed=0):
    torch.manual_seed(seed)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0,
                                             head_bias=head_bias).double()
    lm = AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0, head_bias=head_bias,
                                    device=device, dtype=lazyt.float64)
    result = lm.load_state_dict({k: lazyt.tensor(v.numpy(), device=device)
                                 for k, v in tm.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    return tm, lm


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_parameters_match_torch(device, head_bias):
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], head_bias=head_bias)
    lm = AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], head_bias=head_bias, device=device)
    assert [(k, tuple(v.shape)) for k, v in tm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in lm.state_dict().items()]
    assert lm.head_size == 7 and lm.shortlist_size == 4 and lm.n_clusters == 3
    assert lm.tail[1][0].weight.shape == (1, 16)   # 16 // 4 ** 2


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_forward_backward_log_prob(device, head_bias):
    tm, lm = _adaptive_pair(device, head_bias)
    x = rand(7, 16)
    target = np.array([0, 3, 5, 19, 12, 9, 4])
    tx, lx = pair(x, device)
    want = tm(tx, torch.tensor(target))
    got = lm(lx, lazyt.tensor(target, device=device))
    assert got._fields == ("output", "loss") and got.output.shape == (7,)
    close(got.output, want.output)
    close(got.loss, want.loss)
    want.loss.backward()
    got.loss.backward()
    close(lx.grad, tx.grad.numpy())
    for (name, p), (_, q) in zip(tm.named_parameters(), lm.named_parameters()):
        close(q.grad, p.grad.numpy())
    close(lm.log_prob(lx), tm.log_prob(tx))
    np.testing.assert_allclose(np.exp(lm.log_prob(lx).numpy()).sum(1), 1.0, rtol=1e-12)
    # a single example: 1-D input, 0-D target
    one = lm(lx[2], lazyt.tensor(target[2], device=device))
    assert one.output.shape == ()
    close(one.output, tm(tx[2], torch.tensor(target[2])).output)


def test_adaptive_masked_path_under_capture(device, monkeypatch):
    """Where no value may be read (lazyt.compile), every cluster runs on every row."""
    tm, lm = _adaptive_pair(device)
    x, target = rand(6, 16, seed=2), np.array([1, 19, 7, 7, 16, 0])
    want = tm(torch.tensor(x), torch.tensor(target))
    monkeypatch.setattr(capture_state, "active", lambda: True)
    got = lm(lazyt.tensor(x, device=device), lazyt.tensor(target, device=device))
    close(got.output, want.output)


def test_adaptive_predict(device):
    tm, lm = _adaptive_pair(device, head_bias=True, seed=1)
    x = rand(12, 16, seed=3)
    for bias in ([0.0] * 7, [0, 0, 0, 0, 9.0, 9.0, 9.0], [-5, -5, -5, -5, 5.0, 5.0, 5.0]):
        with torch.no_grad():
            tm.head.bias.copy_(torch.tensor(bias))
        lm.head.bias.assign(lazyt.tensor(np.array(bias), device=device))
        want = tm.predict(torch.tensor(x)).numpy()
        got = lm.predict(lazyt.tensor(x, device=device))
        assert got.dtype == lazyt.int64
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(got.numpy(),
                                      lm.log_prob(lazyt.tensor(x, device=device)).numpy()
                                      .argmax(1))


def test_adaptive_errors(device):
    for cutoffs in ([], [5, 3], [0, 4], [4, 20], [4, 4], [2.5]):
        with pytest.raises(InvalidArgumentError):
            AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
        with pytest.raises(ValueError):
            torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
    lm = AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], device=device)
    x = lazyt.tensor(rand(4, 8, dtype=np.float32), device=device)
    t = lazyt.tensor(np.array([0, 1, 2, 3]), device=device)
    with pytest.raises(ShapeError, match="same size in the batch"):
        lm(x, t[:3])
    with pytest.raises(ShapeError, match="0D target"):
        lm(x, t[0])
    with pytest.raises(ShapeError, match="multi-target"):
        lm(x, t.reshape(2, 2))
    with pytest.raises(InvalidArgumentError, match=r"\[0, 9\]"):
        lm(x, lazyt.tensor(np.array([0, 1, 10, 3]), device=device))
    with pytest.raises(DTypeError):
        lm(x, t.to(lazyt.float32))
    with pytest.raises(ShapeError):
        lm.log_prob(x[0])
    # torch raises RuntimeError for all of these: lazyt's errors derive from it
    with pytest.raises(RuntimeError):
        lm(x, lazyt.tensor(np.array([0, 1, -1, 3]), device=device))


# ---------------------------------------------------------------------- fractional max pooling
POOL_CASES = [
    ((2, 3, 9, 10), 2, (4, 5)),
    ((2, 3, 11, 7), (3, 2), (5, 6)),
    ((3, 13, 12), 3, (7, 1)),          # unbatched, one output column
    ((1, 2, 6, 6), 2, (5, 5)),         # windows overlap
    ((2, 2, 7, 8, 9), (2, 3, 2), (4, 3, 6)),
    ((2, 7, 8, 9), 2, (5, 6, 7)),      # unbatched 3-D
]


@pytest.mark.parametrize("shape,kernel,out", POOL_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fractional_max_pool_equals_torch(device, shape, kernel, out, dtype):
    n = len(out)
    x = np.round(rand(*shape, seed=1, dtype=dtype), 1)      # rounding makes ties
    nb = 1 if len(shape) == n + 1 else shape[0]
    s = np.random.default_rng(2).random((nb, shape[-n - 1], n)).astype(dtype)
    tfn, lfn = ((TF.fractional_max_pool2d, fractional_max_pool2d) if n == 2 else
                (TF.fractional_max_pool3d, fractional_max_pool3d))
    tx, lx = pair(x, device)
    ty, ti = tfn(tx, kernel, output_size=out, return_indices=True,
                 _random_samples=torch.tensor(s))
    ly, li = lfn(lx, kernel, output_size=out, return_indices=True,
                 _random_samples=lazyt.tensor(s, device=device))
    assert ly.shape == tuple(ty.shape) and li.dtype == lazyt.int64
    np.testing.assert_array_equal(ly.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    g = rand(*ty.shape, seed=3, dtype=dtype)
    ty.backward(torch.tensor(g))
    (ly * lazyt.tensor(g, device=device)).sum().backward()
    np.testing.assert_array_equal(lx.grad.numpy(), tx.grad.numpy())


def test_fractional_max_pool_float16_and_ratio(device):
    x = rand(2, 3, 25, 31, seed=4, dtype=np.float16)
    s = np.random.default_rng(5).random((2, 3, 2)).astype(np.float16)
    for out in ((7, 9), (22, 29)):
        ty, ti = TF.fractional_max_pool2d(torch.tensor(x), 3, output_size=out,
                                          return_indices=True, _random_samples=torch.tensor(s))
        ly, li = fractional_max_pool2d(lazyt.tensor(x, device=device), 3, output_size=out,
                                       return_indices=True,
                                       _random_samples=lazyt.tensor(s, device=device))
        np.testing.assert_array_equal(li.numpy(), ti.numpy())
        np.testing.assert_array_equal(ly.numpy(), ty.numpy())
    # output_ratio: int(size * ratio) per dim, as torch
    x32 = lazyt.tensor(x.astype(np.float32), device=device)
    assert fractional_max_pool2d(x32, 2, output_ratio=(0.5, 0.3)).shape == (2, 3, 12, 9)
    assert FractionalMaxPool3d(2, output_ratio=0.5)(
        lazyt.tensor(rand(3, 6, 7, 8), device=device)).shape == (3, 3, 3, 4)


def test_fractional_max_pool_draws_from_lazyt_generator(device):
    x = lazyt.tensor(rand(2, 3, 20, 20, seed=6), device=device)
    lazyt.manual_seed(11)
    a, ia = fractional_max_pool2d(x, 2, output_size=8, return_indices=True)
    lazyt.manual_seed(11)
    b = fractional_max_pool2d(x, 2, output_size=8)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the drawn samples are lazyt.rand(N, C, 2) in the input's dtype
    lazyt.manual_seed(11)
    s = lazyt.rand(2, 3, 2, dtype=lazyt.float64, device=device)
    want = TF.fractional_max_pool2d(torch.tensor(x.numpy()), 2, output_size=8,
                                    _random_samples=torch.tensor(s.numpy()))
    np.testing.assert_array_equal(a.numpy(), want.numpy())
    # every window's maximum is the input at its index
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, ia.numpy().reshape(2, 3, -1), 2),
                                  a.numpy().reshape(2, 3, -1))


def test_fractional_max_pool_modules(device):
    s = np.random.default_rng(7).random((2, 3, 2))
    x = rand(2, 3, 10, 11, seed=8)
    tm = torch.nn.FractionalMaxPool2d(3, output_size=(5, 4), return_indices=True,
                                      _random_samples=torch.tensor(s))
    lm = FractionalMaxPool2d(3, output_size=(5, 4), return_indices=True,
                             _random_samples=lazyt.tensor(s, device=device))
    assert "_random_samples" in dict(lm.named_buffers())
    (ty, ti), (ly, li) = tm(torch.tensor(x)), lm(lazyt.tensor(x, device=device))
    np.testing.assert_array_equal(ly.numpy(), ty.numpy())
    np.testing.assert_array_equal(li.numpy(), ti.numpy())
    s3 = np.random.default_rng(9).random((1, 2, 3))
    x3 = rand(1, 2, 6, 7, 8, seed=10)
    want = torch.nn.FractionalMaxPool3d((2, 3, 2), output_size=(3, 4, 5),
                                        _random_samples=torch.tensor(s3))(torch.tensor(x3))
    got = FractionalMaxPool3d((2, 3, 2), output_size=(3, 4, 5),
                              _random_samples=lazyt.tensor(s3, device=device))(
        lazyt.tensor(x3, device=device))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_fractional_max_pool_errors(device):
    x = lazyt.tensor(rand(2, 3, 7, 8, dtype=np.float32), device=device)
    s = lazyt.rand(2, 3, 2, device=device)
    cases = [
        (ShapeError, "too large", dict(kernel_size=3, output_size=6)),
        (InvalidArgumentError, "kernel_size", dict(kernel_size=0, output_size=5)),
        (InvalidArgumentError, "kernel_size", dict(kernel_size=(3, 2, 1), output_size=5)),
        (InvalidArgumentError, "either", dict(kernel_size=3)),
        (ShapeError, "size.2.", dict(kernel_size=3, output_size=5,
                                     _random_samples=lazyt.rand(2, 3, 3, device=device))),
        (ShapeError, "batch size", dict(kernel_size=3, output_size=5,
                                        _random_samples=lazyt.rand(1, 3, 2, device=device))),
        (ShapeError, "channels", dict(kernel_size=3, output_size=5,
                                      _random_samples=lazyt.rand(2, 2, 2, device=device))),
        (ShapeError, "3 dims", dict(kernel_size=3, output_size=5,
                                    _random_samples=lazyt.rand(3, 2, device=device))),
        (DTypeError, "dtype", dict(kernel_size=3, output_size=5, _random_samples=s.double())),
    ]
    for err, match, kw in cases:
        with pytest.raises(err, match=match):
            fractional_max_pool2d(x, **kw)
    with pytest.raises(ShapeError):
        fractional_max_pool2d(x[0, 0], 2, output_size=3)
    with pytest.raises(ShapeError):
        fractional_max_pool3d(x, 2, output_size=3)
    with pytest.raises(ShapeError, match="too large"):  # 3-D: torch's strict bound
        fractional_max_pool3d(lazyt.tensor(rand(1, 1, 6, 6, 6), device=device), 2,
                              output_size=(4, 4, 5))
    assert fractional_max_pool3d(lazyt.tensor(rand(1, 1, 6, 6, 6), device=device), 2,
                                 output_size=4).shape == (1, 1, 4, 4, 4)
    with pytest.raises(DTypeError):
        fractional_max_pool2d(x.to(lazyt.int64), 2, output_size=3)
    for kw in (dict(), dict(output_size=3, output_ratio=0.5), dict(output_ratio=1.5),
               dict(output_ratio=(0.5, 0.0))):
        with pytest.raises(InvalidArgumentError):
            FractionalMaxPool2d(2, **kw)
        with pytest.raises(ValueError):
            torch.nn.FractionalMaxPool2d(2, **kw)


# ---------------------------------------------------------------------- triplet, custom distance
def _cosine_distance(lib):
    def d(a, b):
        return 1.0 - lib.nn.functional.cosine_similarity(a, b)
    return d


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("distance", [None, "l1", "cosine"])
def test_triplet_with_distance_equals_torch(device, swap, reduction, distance):
    arrays = [rand(6, 5, seed=s) for s in (1, 2, 3)]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ls = [lazyt.tensor(a, device=device, requires_grad=True) for a in arrays]
    if distance is None:
        tdist = ldist = None
    elif distance == "l1":
        def tdist(a, b):
            return (a - b).abs().sum(-1)
        ldist = tdist
    else:
        tdist, ldist = _cosine_distance(torch), _cosine_distance(lazyt)
    want = TF.triplet_margin_with_distance_loss(*ts, distance_function=tdist, margin=0.7,
                                                swap=swap, reduction=reduction)
    got = triplet_margin_with_distance_loss(*ls, distance_function=ldist, margin=0.7, swap=swap,
                                            reduction=reduction)
    assert got.shape == tuple(want.shape)
    close(got, want)
    want.sum().backward()
    got.sum().backward()
    for t, l in zip(ts, ls):
        close(l.grad, t.grad.numpy())
    mod = TripletMarginWithDistanceLoss(distance_function=ldist, margin=0.7, swap=swap,
                                        reduction=reduction)
    close(mod(*ls), want)


def test_triplet_with_distance_default_is_pairwise_distance(device):
    # 1-D inputs (one triplet) and float32, as torch.pairwise_distance
    arrays = [rand(5, seed=s, dtype=np.float32) for s in (4, 5, 6)]
    want = TF.triplet_margin_with_distance_loss(*map(torch.tensor, arrays), margin=3.0)
    got = triplet_margin_with_distance_loss(*(lazyt.tensor(a, device=device) for a in arrays),
                                            margin=3.0)
    assert got.dtype == lazyt.float32
    close(got, want, tol=1e-6)


def test_triplet_with_distance_errors(device):
    a = lazyt.tensor(rand(3, 4), device=device)
    with pytest.raises(InvalidArgumentError, match="reduction"):
        triplet_margin_with_distance_loss(a, a, a, reduction="avg")
    with pytest.raises(InvalidArgumentError, match="margin"):
        triplet_margin_with_distance_loss(a, a, a, margin=0.0)
    with pytest.raises(ShapeError, match="same number of dimensions"):
        triplet_margin_with_distance_loss(a, a, a[0])
    with pytest.raises(InvalidArgumentError):
        TripletMarginWithDistanceLoss(margin=-1.0)
    with pytest.raises(TypeError):
        triplet_margin_with_distance_loss(a, a, a, None)   # keyword-only, as torch


# ---------------------------------------------------------------------- SyncBatchNorm
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 2),
                                   (2, 3, 2, 2, 2, 2)])
def test_sync_batch_norm_single_process_equals_torch(device, shape):
    tm = torch.nn.SyncBatchNorm(3, momentum=0.3).double()
    lm = SyncBatchNorm(3, momentum=0.3, device=device, dtype=lazyt.float64)
    w, b = rand(3, seed=1), rand(3, seed=2)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
        tm.bias.copy_(torch.tensor(b))
    lm.weight.assign(lazyt.tensor(w, device=device))
    lm.bias.assign(lazyt.tensor(b, device=device))
    x = rand(*shape, seed=3)
    tx, lx = pair(x, device)
    for _ in range(2):
        ty, ly = tm(tx), lm(lx)
    close(ly, ty)
    g = rand(*shape, seed=4)
    ty.backward(torch.tensor(g))
    ly.backward(lazyt.tensor(g, device=device))
    close(lx.grad, tx.grad.numpy())
    close(lm.weight.grad, tm.weight.grad.numpy())
    close(lm.bias.grad, tm.bias.grad.numpy())
    close(lm.running_mean, tm.running_mean)
    close(lm.running_var, tm.running_var)
    assert lm.num_batches_tracked.item() == 2
    tm.eval()
    lm.eval()
    close(lm(lx), tm(tx))


def test_sync_batch_norm_momentum_none_and_no_stats(device):
    x = rand(5, 3, 4, seed=5)
    for kw in (dict(momentum=None), dict(track_running_stats=False), dict(affine=False)):
        tm, lm = torch.nn.SyncBatchNorm(3, **kw).double(), SyncBatchNorm(3, **kw, device=device,
                                                                          dtype=lazyt.float64)
        for seed in (5, 6):
            x = rand(5, 3, 4, seed=seed)
            close(lm(lazyt.tensor(x, device=device)), tm(torch.tensor(x)))
        tm.eval()
        lm.eval()
        close(lm(lazyt.tensor(x, device=device)), tm(torch.tensor(x)))


def test_sync_batch_norm_errors(device):
    m = SyncBatchNorm(3, device=device)
    with pytest.raises(ShapeError, match="at least 2D"):
        m(lazyt.tensor(rand(3, dtype=np.float32), device=device))
    with pytest.raises(ShapeError, match="channels"):
        m(lazyt.tensor(rand(2, 4, 5, dtype=np.float32), device=device))
    with pytest.raises(ValueError):   # torch: ValueError too
        torch.nn.SyncBatchNorm(3)(torch.randn(3))


def test_convert_sync_batchnorm_keeps_parameters_and_buffers(device):
    inner = Sequential(Linear(4, 4, device=device), BatchNorm1d(4, device=device))
    model = Sequential(inner, BatchNorm2d(3, momentum=None, device=device),
                       BatchNorm3d(2, affine=False, device=device))
    model[1].eval()
    with lazyt.no_grad():
        model[1].running_mean.add_(1.5)
    before = {k: v.numpy() for k, v in model.state_dict().items()}
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    out = SyncBatchNorm.convert_sync_batchnorm(model)
    assert out is model
    assert [type(m).__name__ for m in (out[0][1], out[1], out[2])] == ["SyncBatchNorm"] * 3
    assert isinstance(out[0][0], Linear)
    assert out[1].momentum is None and not out[1].training and out[0][1].training
    assert out[2].weight is None and out[2].affine is False
    after = out.state_dict()
    assert list(after) == list(before)
    for k in before:
        np.testing.assert_array_equal(after[k].numpy(), before[k])
    for k, p in out.named_parameters():
        assert p is params[k]
    for k, b in out.named_buffers():
        assert b is buffers[k]
    single = SyncBatchNorm.convert_sync_batchnorm(BatchNorm2d(5, device=device))
    assert isinstance(single, SyncBatchNorm) and single.num_features == 5
    # and it normalizes as the BatchNorm it replaced, over a 2-D input
    x = lazyt.tensor(rand(6, 4, seed=7, dtype=np.float32), device=device)
    bn = BatchNorm1d(4, device=device)
    close(SyncBatchNorm.convert_sync_batchnorm(BatchNorm1d(4, device=device))(x), bn(x).numpy(),
          tol=1e-6)


_WORKER = '''
import numpy as np, lazyt, lazyt.distributed as dist
from lazyt.nn.extras import SyncBatchNorm
from lazyt.nn.normalization import BatchNorm2d
dist.init_process_group("mpi", timeout=60)
r, w = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
x = rng.standard_normal((2 * w + 1, 3, 4, 5))       # uneven: ranks hold 3 and 2 samples
g = rng.standard_normal(x.shape)
wt, bs = rng.standard_normal(3), rng.standard_normal(3)
mine = np.array_split(np.arange(len(x)), w)[r]
sbn, bn = SyncBatchNorm(3, dtype=lazyt.float64), BatchNorm2d(3, dtype=lazyt.float64)
for m in (sbn, bn):
    m.weight.assign(lazyt.tensor(wt))
    m.bias.assign(lazyt.tensor(bs))
lx, full = lazyt.tensor(x[mine], requires_grad=True), lazyt.tensor(x, requires_grad=True)
for step in range(2):
    y = sbn(lx)
    (y * lazyt.tensor(g[mine])).sum().backward()
    yr = bn(full)
    (yr * lazyt.tensor(g)).sum().backward()
wg = sbn.weight.grad * 1.0
dist.all_reduce(wg)
checks = {
    "out": np.abs(y.numpy() - yr.numpy()[mine]).max(),
    "grad_x": np.abs(lx.grad.numpy() - full.grad.numpy()[mine]).max(),
    "grad_w": np.abs(wg.numpy() - bn.weight.grad.numpy()).max(),
    "running_mean": np.abs(sbn.running_mean.numpy() - bn.running_mean.numpy()).max(),
    "running_var": np.abs(sbn.running_var.numpy() - bn.running_var.numpy()).max(),
}
bad = {k: v for k, v in checks.items() if not v < 1e-12}
print(f"rank {r}: {'OK' if not bad else bad}")
dist.destroy_process_group()
'''


def _mpi_missing():
    from lazyt import distributed
    from lazyt.distributed import launch
    if not distributed.is_mpi_available():
        return "mpi4py is not installed"
    try:
        launch.mpiexec()
    except Exception as e:  # noqa: BLE001
        return f"no mpiexec: {e}"
    return None


@pytest.mark.skipif(_mpi_missing() is not None, reason=str(_mpi_missing()))
def test_sync_batch_norm_two_ranks_equals_batch_norm_over_whole_batch(tmp_path):
    from lazyt.distributed import launch
    script = tmp_path / "sync_bn_worker.py"
    script.write_text(textwrap.dedent(_WORKER))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(launch.command(2, [str(script)]), capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "rank 0: OK" in out and "rank 1: OK" in out, out


# ---------------------------------------------------------------------- CrossMapLRN2d
@pytest.mark.parametrize("size", [2, 3, 4, 5, 6, 9])
@pytest.mark.parametrize("channels", [1, 3, 7])
def test_cross_map_lrn2d_equals_torch(device, size, channels):
    x = rand(2, channels, 3, 4, seed=size)
    tx, lx = pair(x, device)
    tm = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)
    lm = CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)
    ty, ly = tm(tx), lm(lx)
    close(ly, ty)
    g = rand(*ty.shape, seed=size + 1)
    ty.backward(torch.tensor(g))
    ly.backward(lazyt.tensor(g, device=device))
    close(lx.grad, tx.grad.numpy())      # torch's hand-written backward, not the derivative


def test_cross_map_lrn2d_size_one_and_errors(device):
    x = rand(2, 4, 3, 3, seed=8)
    tx, lx = pair(x, device)
    close(CrossMapLRN2d(1, alpha=0.3)(lx), torch.nn.CrossMapLRN2d(1, alpha=0.3)(tx))
    y = CrossMapLRN2d(1, alpha=0.3)(lx)
    y.sum().backward()                   # torch's backward raises for size 1; lazyt's derives
    txd = torch.tensor(x, requires_grad=True)
    sq = txd ** 2
    scale = (sq + torch.cat([torch.zeros_like(sq[:, :1]), sq[:, :1].expand(-1, 3, -1, -1)], 1)
             ) * 0.3 + 1.0
    (txd * scale ** -0.75).sum().backward()
    close(lx.grad, txd.grad.numpy())
    m = CrossMapLRN2d(3)
    with pytest.raises(ShapeError, match="4D"):
        m(lazyt.tensor(rand(2, 3, 4, dtype=np.float32), device=device))
    with pytest.raises(DTypeError):
        m(lazyt.tensor(np.ones((1, 2, 2, 2), np.int64), device=device))
    with pytest.raises(InvalidArgumentError):
        CrossMapLRN2d(0)(lazyt.tensor(rand(1, 2, 2, 2), device=device))
    assert repr(m) == "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"
    assert issubclass(ShapeError, LazytError)


# ---------------------------------------------------------------------- float32 (every device)
def test_float32_on_every_device(device):
    rng = np.random.default_rng(12)
    torch.manual_seed(12)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0)
    lm = AdaptiveLogSoftmaxWithLoss(16, 20, [4, 9, 15], div_value=2.0, device=device)
    lm.load_state_dict({k: lazyt.tensor(v.numpy(), device=device)
                        for k, v in tm.state_dict().items()})
    x = rng.standard_normal((7, 16)).astype(np.float32)
    tx, lx = pair(x, device)
    want, got = tm(tx, torch.tensor([0, 3, 5, 19, 12, 9, 4])), \
        lm(lx, lazyt.tensor(np.array([0, 3, 5, 19, 12, 9, 4]), device=device))
    want.loss.backward()
    got.loss.backward()
    close(got.loss, want.loss, tol=1e-5)
    close(lx.grad, tx.grad.numpy(), tol=1e-5)
    np.testing.assert_array_equal(lm.predict(lx).numpy(), tm.predict(tx).numpy())
    before = lm.head.weight.numpy()
    lm.reset_parameters()
    assert not np.array_equal(lm.head.weight.numpy(), before)

    x = rng.standard_normal((2, 7, 3, 4)).astype(np.float32)
    pairs = ((torch.nn.CrossMapLRN2d(5, 0.5, 0.75, 1.5), CrossMapLRN2d(5, 0.5, 0.75, 1.5)),
             (torch.nn.SyncBatchNorm(7), SyncBatchNorm(7, device=device)))
    for tmod, lmod in pairs:
        tx, lx = pair(x, device)
        ty, ly = tmod(tx), lmod(lx)
        (ty * ty).sum().backward()
        (ly * ly).sum().backward()
        close(ly, ty, tol=1e-5)
        close(lx.grad, tx.grad.numpy(), tol=1e-4)
