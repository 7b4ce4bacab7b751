"""nn.functional.interpolate and the Upsample modules (`lazyt/nn/interpolate.py`): values
against a direct numpy transcription of torch's index formulas on every device, float64
gradients on cpu, errors, and torch where installed."""
import math

import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt.testing import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")


def _x(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


# ---------------------------------------------------------------------- numpy reference
def _scale(n_in, n_out, factor, align):
    if align:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / factor if factor else n_in / n_out


def np_interpolate(x, out, factors, mode, align=False):
    """torch's formulas, one output element at a time (float64 arithmetic)."""
    n = x.ndim - 2
    for i in range(n):
        d, n_in, n_out = 2 + i, x.shape[2 + i], out[i]
        s = _scale(n_in, n_out, factors[i], align)
        rows = []
        for j in range(n_out):
            if mode in ("nearest", "nearest-exact"):
                if mode == "nearest" and n == 2 and n_out in (n_in, 2 * n_in):
                    src = j * n_in // n_out
                else:
                    src = min(int(math.floor((j + 0.5 * (mode == "nearest-exact")) * s)),
                              n_in - 1)
                rows.append(np.take(x, [src], axis=d))
                continue
            if n_in == n_out:
                rows.append(np.take(x, [j], axis=d))
                continue
            src = j * s if align else max(0.0, (j + 0.5) * s - 0.5)
            i0 = min(int(src), n_in - 1)
            i1 = i0 + (i0 < n_in - 1)
            w1 = src - i0
            rows.append(np.take(x, [i0], axis=d) * (1 - w1) + np.take(x, [i1], axis=d) * w1)
        x = np.concatenate(rows, axis=d).astype(x.dtype)
    return x


RESIZES = [  # (shape, mode, kwargs, output sizes, factors used by the kernel)
    ((2, 3, 5), "nearest", dict(scale_factor=2), (10,), (2.0,)),
    ((2, 3, 5), "nearest", dict(scale_factor=1.3), (6,), (1.3,)),
    ((1, 1, 3), "nearest", dict(scale_factor=1.3), (3,), (1.3,)),
    ((2, 3, 5), "nearest", dict(size=3), (3,), (None,)),
    ((2, 3, 5), "nearest-exact", dict(size=7), (7,), (None,)),
    ((1, 2, 4, 5), "nearest", dict(scale_factor=(1.5, 0.5)), (6, 2), (1.5, 0.5)),
    ((1, 2, 3, 4), "nearest", dict(scale_factor=(1.3, 1.7)), (3, 6), (1.3, 1.7)),
    ((1, 2, 4, 5), "nearest-exact", dict(size=(3, 8)), (3, 8), (None, None)),
    ((1, 1, 3, 4, 2), "nearest", dict(scale_factor=(1.3, 2, 0.7)), (3, 8, 1), (1.3, 2, 0.7)),
    ((2, 3, 5), "linear", dict(scale_factor=1.5), (7,), (1.5,)),
    ((2, 3, 5), "linear", dict(size=3), (3,), (None,)),
    ((2, 3, 5), "linear", dict(size=9, align_corners=True), (9,), (None,)),
    ((2, 3, 5), "linear", dict(size=1, align_corners=True), (1,), (None,)),
    ((1, 2, 4, 5), "bilinear", dict(scale_factor=2), (8, 10), (2.0, 2.0)),
    ((1, 2, 4, 5), "bilinear", dict(size=(3, 7)), (3, 7), (None, None)),
    ((1, 2, 3, 4), "bilinear", dict(scale_factor=(1.3, 2.5)), (3, 10), (1.3, 2.5)),
    ((1, 2, 4, 5), "bilinear", dict(size=(6, 3), align_corners=True), (6, 3), (None, None)),
    ((1, 2, 4, 5), "bilinear", dict(scale_factor=1.7, recompute_scale_factor=True), (6, 8),
     (None, None)),
    ((1, 1, 2, 3, 2), "trilinear", dict(scale_factor=(2, 1.5, 1)), (4, 4, 2), (2, 1.5, 1)),
]


@pytest.mark.parametrize("shape, mode, kw, out, factors", RESIZES,
                         ids=[f"{m}-{s}-{sorted(k.items())}" for s, m, k, _, _ in RESIZES])
def test_interpolate_every_device(device, check, shape, mode, kw, out, factors):
    x = _x(shape)
    want = np_interpolate(x.astype(np.float64), out, factors, mode,
                          kw.get("align_corners", False)).astype(np.float32)
    check(F.interpolate(lazyt.tensor(x, device=device), mode=mode, **kw), want,
          rtol=1e-5, atol=1e-6)


def test_interpolate_dtypes_area_and_modules(device, check):
    i = np.arange(12).reshape(1, 1, 3, 4)
    check(F.interpolate(lazyt.tensor(i, device=device), scale_factor=2),
          i.repeat(2, axis=2).repeat(2, axis=3))
    h = _x((1, 2, 3, 4)).astype(np.float16)
    want = np_interpolate(h.astype(np.float64), (6, 8), (2.0, 2.0), "bilinear")
    check(F.interpolate(lazyt.tensor(h, device=device), scale_factor=2, mode="bilinear"),
          want.astype(np.float16))
    x = _x((1, 2, 4, 6))
    check(F.interpolate(lazyt.tensor(x, device=device), size=(2, 3), mode="area"),
          x.reshape(1, 2, 2, 2, 3, 2).mean((3, 5)), rtol=1e-5)
    check(F.interpolate(lazyt.tensor(x[0], device=device), size=3, mode="area"),
          x[0].reshape(2, 4, 3, 2).mean(3), rtol=1e-5)
    up = lazyt.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    check(up(lazyt.tensor(x, device=device)),
          np_interpolate(x.astype(np.float64), (8, 12), (2, 2), "bilinear", True)
          .astype(np.float32), rtol=1e-5, atol=1e-6)
    check(lazyt.nn.UpsamplingNearest2d(size=(5, 7))(lazyt.tensor(x, device=device)),
          np_interpolate(x, (5, 7), (None, None), "nearest"))
    check(lazyt.nn.UpsamplingBilinear2d(scale_factor=2)(lazyt.tensor(x, device=device)),
          np_interpolate(x.astype(np.float64), (8, 12), (2, 2), "bilinear", True)
          .astype(np.float32), rtol=1e-5, atol=1e-6)
    assert repr(lazyt.nn.Upsample(size=(3, 4))) == "Upsample(size=(3, 4), mode='nearest')"
    check(F.upsample(lazyt.tensor(x, device=device), scale_factor=2),
          x.repeat(2, axis=2).repeat(2, axis=3))


@pytest.mark.parametrize("shape, mode, kw", [
    ((1, 2, 3), "nearest", dict(scale_factor=2.5)),
    ((1, 2, 4), "linear", dict(size=7)),
    ((1, 2, 4), "linear", dict(size=3, align_corners=True)),
    ((1, 1, 3, 4), "bilinear", dict(scale_factor=(1.5, 0.75))),
    ((1, 1, 3, 4), "bilinear", dict(size=(5, 6), align_corners=True)),
    ((1, 1, 3, 4), "nearest-exact", dict(size=(5, 3))),
    ((1, 1, 2, 2, 3), "trilinear", dict(size=(3, 3, 2))),
    ((1, 1, 4, 6), "area", dict(size=(2, 4))),
])
def test_interpolate_gradients(shape, mode, kw):
    x = lazyt.tensor(_x(shape, 3, np.float64)).require_grad()
    assert gradcheck(lambda t: F.interpolate(t, mode=mode, **kw), [x])


def test_interpolate_errors():
    x = lazyt.ones(1, 1, 3, 4)
    with pytest.raises(lazyt.InvalidArgumentError, match="exactly one of size and scale"):
        F.interpolate(x)
    with pytest.raises(lazyt.InvalidArgumentError, match="exactly one of size and scale"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(lazyt.ShapeError, match="bilinear mode needs 4-D input"):
        F.interpolate(lazyt.ones(1, 1, 3), size=2, mode="bilinear")
    with pytest.raises(lazyt.ShapeError, match="linear mode needs 3-D input"):
        F.interpolate(x, size=2, mode="linear")
    with pytest.raises(lazyt.InvalidArgumentError, match="align_corners can only be set"):
        F.interpolate(x, size=2, mode="nearest", align_corners=True)
    with pytest.raises(lazyt.InvalidArgumentError, match="mode must be one of"):
        F.interpolate(x, size=2, mode="cubic")
    with pytest.raises(lazyt.ShapeError, match="must give 2 spatial sizes"):
        F.interpolate(x, size=(2, 3, 4))
    with pytest.raises(lazyt.ShapeError, match="greater than 0"):
        F.interpolate(x, scale_factor=0.2)
    with pytest.raises(lazyt.ShapeError, match="expected a 3-D, 4-D or 5-D input"):
        F.interpolate(lazyt.ones(3, 4), size=2)
    with pytest.raises(lazyt.DTypeError, match="needs a floating-point input"):
        F.interpolate(lazyt.ones(1, 1, 3, 4, dtype=lazyt.int64), size=2, mode="bilinear")
    with pytest.raises(lazyt.DTypeError, match="must be a lazyt.Tensor"):
        F.interpolate(np.ones((1, 1, 3)), size=2)
    with pytest.raises(lazyt.InvalidArgumentError, match="antialias"):
        F.interpolate(x, size=2, mode="bilinear", antialias=True)


def test_exported():
    for name in ("interpolate", "upsample"):
        assert name in F.__all__ and callable(getattr(F, name))
    for name in ("Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"):
        assert name in lazyt.nn.__all__ and issubclass(getattr(lazyt.nn, name), lazyt.nn.Module)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_torch(dtype):
    cases = [((2, 3, 5), m) for m in ("nearest", "nearest-exact", "linear", "area")] \
        + [((1, 2, 4, 5), m) for m in ("nearest", "nearest-exact", "bilinear", "area")] \
        + [((1, 1, 3, 4, 2), m) for m in ("nearest", "nearest-exact", "trilinear")]
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for shape, mode in cases:
        n = len(shape) - 2
        x = _x(shape, 1, dtype)
        for kw in (dict(scale_factor=2), dict(scale_factor=1.5), dict(scale_factor=0.5),
                   dict(scale_factor=1.3), dict(size=7), dict(size=1),
                   dict(size=(3, 2, 5)[:n]), dict(scale_factor=(1.3, 2.6, 0.7)[:n]),
                   dict(scale_factor=2.3, recompute_scale_factor=True)):
            for align in ([None] if mode in ("nearest", "nearest-exact", "area")
                          else [False, True]):
                t = torch.tensor(x, requires_grad=True)
                want = TF.interpolate(t, mode=mode, align_corners=align, **kw)
                lx = lazyt.tensor(x).require_grad()
                got = F.interpolate(lx, mode=mode, align_corners=align, **kw)
                np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **tol,
                                           err_msg=f"{shape} {mode} {kw} {align}")
                if mode == "nearest" and n != 2 and any(
                        a == b for a, b in zip(want.shape[2:], shape[2:])) and "scale_factor" in kw:
                    continue  # torch's backward copies a dim its forward resampled
                w = _x(want.shape, 2, dtype)
                (gt,) = torch.autograd.grad((want * torch.tensor(w)).sum(), t)
                g = (got * lazyt.tensor(w)).sum().backward()
                np.testing.assert_allclose(g.get(lx).numpy(), gt.numpy(), **tol,
                                           err_msg=f"grad {shape} {mode} {kw} {align}")
