"""grid_sample, affine_grid (`lazyt/nn/grid.py`) and bicubic interpolate
(`lazyt/nn/interpolate.py`) against torch: forward values and the gradients with respect to
input, grid and theta, for every mode x padding_mode x align_corners, grids reaching outside
the input, NaN and huge grid values, unit-size dims, float16 and float64; and the errors."""
import itertools
import warnings
import zlib

import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt.nn.functional import affine_grid, grid_sample
from lazyt.testing import gradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional

F32 = dict(rtol=1e-5, atol=1e-5)
F64 = dict(rtol=1e-10, atol=1e-12)
SAMPLE_CASES = [(nd, mode, pad, align)
                for nd, mode, pad, align in itertools.product(
                    (4, 5), ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"),
                    (False, True))
                if not (nd == 5 and mode == "bicubic")]


def _rng(*key):
    """A generator seeded by the test's parameters (stable across runs)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _quiet(fn, *args, **kw):
    """fn(*args, **kw) without torch's align_corners=None warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kw)


def _compare_sample(x, g, tol, **kw):
    """grid_sample values and input/grid gradients of lazyt and torch for numpy x, g."""
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    want = _quiet(TF.grid_sample, tx, tg, **kw)
    w = _rng("w", x.shape, g.shape).normal(size=tuple(want.shape)).astype(x.dtype)
    gx, gg = torch.autograd.grad((want * torch.tensor(w)).sum(), [tx, tg])
    lx, lg = lazyt.tensor(x).require_grad(), lazyt.tensor(g).require_grad()
    got = _quiet(grid_sample, lx, lg, **kw)
    assert got.shape == tuple(want.shape) and got.dtype.name == str(x.dtype)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **tol, err_msg=f"{kw}")
    grads = (got * lazyt.tensor(w)).sum().backward()
    np.testing.assert_allclose(grads.get(lx).numpy(), gx.numpy(), **tol, err_msg=f"dx {kw}")
    # the grid's gradient sums signed terms that can cancel (bicubic taps clamped onto one
    # pixel): its absolute tolerance scales with the gradient's size
    scaled = dict(tol, atol=tol["atol"] * max(1.0, float(np.abs(gg.numpy()).max())))
    np.testing.assert_allclose(grads.get(lg).numpy(), gg.numpy(), **scaled,
                               err_msg=f"dgrid {kw}")


# ---------------------------------------------------------------------- grid_sample
@pytest.mark.parametrize("nd, mode, pad, align", SAMPLE_CASES,
                         ids=[f"{nd}d-{m}-{p}-{'ac' if a else 'noac'}"
                              for nd, m, p, a in SAMPLE_CASES])
def test_grid_sample_against_torch(nd, mode, pad, align):
    rng = _rng(nd, mode, pad, align)
    shape, gshape = ((2, 3, 5, 6), (2, 4, 7, 2)) if nd == 4 else ((2, 2, 3, 4, 5), (2, 2, 3, 4, 3))
    x = rng.normal(size=shape).astype(np.float32)
    g = rng.uniform(-1.3, 1.3, size=gshape).astype(np.float32)    # reaches outside the input
    _compare_sample(x, g, F32, mode=mode, padding_mode=pad, align_corners=align)
    # reflection folds several times for far-out points
    g = rng.uniform(-4.5, 4.5, size=gshape).astype(np.float32)
    _compare_sample(x, g, F32, mode=mode, padding_mode=pad, align_corners=align)


@pytest.mark.parametrize("nd, mode, pad", [(4, "bilinear", "reflection"), (4, "bicubic", "zeros"),
                                           (4, "bicubic", "border"), (5, "bilinear", "border"),
                                           (5, "nearest", "reflection")])
def test_grid_sample_float64_against_torch(nd, mode, pad):
    rng = _rng("f64", nd, mode, pad)
    shape, gshape = ((1, 2, 4, 3), (1, 3, 5, 2)) if nd == 4 else ((1, 2, 3, 2, 4), (1, 2, 2, 3, 3))
    x = rng.normal(size=shape)
    g = rng.uniform(-1.4, 1.4, size=gshape)
    for align in (False, True):
        _compare_sample(x, g, F64, mode=mode, padding_mode=pad, align_corners=align)


def test_grid_sample_gradcheck():
    rng = _rng("gradcheck")
    x = lazyt.tensor(rng.normal(size=(1, 2, 3, 4))).require_grad()
    g = lazyt.tensor(rng.uniform(-0.9, 0.9, size=(1, 2, 3, 2))).require_grad()
    for mode in ("bilinear", "bicubic"):
        assert gradcheck(lambda a, b: grid_sample(a, b, mode=mode, padding_mode="border",
                                                  align_corners=False), [x, g])


def test_grid_sample_unit_dims_and_layouts():
    rng = _rng("unit")
    for shape, gshape in [((2, 3, 1, 5), (2, 4, 3, 2)), ((1, 2, 1, 1), (1, 3, 2, 2)),
                          ((1, 2, 1, 4, 1), (1, 2, 2, 3, 3))]:
        for mode, pad, align in itertools.product(("bilinear", "nearest", "bicubic"),
                                                  ("zeros", "border", "reflection"),
                                                  (False, True)):
            if len(shape) == 5 and mode == "bicubic":
                continue
            x = rng.normal(size=shape).astype(np.float32)
            g = rng.uniform(-1.3, 1.3, size=gshape).astype(np.float32)
            _compare_sample(x, g, F32, mode=mode, padding_mode=pad, align_corners=align)
    x = rng.normal(size=(2, 5, 4, 3)).astype(np.float32)      # permuted (strided) operands
    g = rng.uniform(-1, 1, size=(2, 3, 3, 2)).astype(np.float32)
    want = TF.grid_sample(torch.tensor(x).permute(0, 3, 2, 1), torch.tensor(g).transpose(1, 2),
                          align_corners=True)
    got = grid_sample(lazyt.tensor(x).permute(0, 3, 2, 1), lazyt.tensor(g).transpose(1, 2),
                      align_corners=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), **F32)


def test_grid_sample_nearest_rounds_half_to_even():
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    # align_corners=False, W=4: x = -0.5 -> 0.5, 0.0 -> 1.5, 0.5 -> 2.5, -0.75 -> 0.0 (exact)
    g = np.array([[[[-0.5, 0.0], [0.0, 0.0], [0.5, 0.0], [-0.75, 0.0]]]], dtype=np.float32)
    got = grid_sample(lazyt.tensor(x), lazyt.tensor(g), mode="nearest", align_corners=False)
    want = TF.grid_sample(torch.tensor(x), torch.tensor(g), mode="nearest", align_corners=False)
    np.testing.assert_array_equal(got.numpy().ravel(), [0, 2, 2, 0])
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_grid_sample_nan_and_huge_grid_values():
    nan = float("nan")
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(1, 1, 3, 4)
    g = np.array([[[[nan, 0.2], [0.2, nan], [nan, nan], [1e30, 0.0], [-1e30, 0.0],
                    [-0.5, 0.25]]]], dtype=np.float32)
    x5 = np.arange(1.0, 25.0, dtype=np.float32).reshape(1, 1, 2, 3, 4)
    g5 = np.array([[[[[nan, 0.2, 0.1], [0.2, nan, 0.3], [nan, nan, nan], [1e30, 0.0, 0.0],
                      [-0.5, 0.25, 0.0]]]]], dtype=np.float32)
    for xx, gg, modes in ((x, g, ("bilinear", "nearest", "bicubic")),
                          (x5, g5, ("bilinear", "nearest"))):
        for mode, pad, align in itertools.product(modes, ("zeros", "border", "reflection"),
                                                  (False, True)):
            points = gg
            if xx.ndim == 5 and pad == "reflection":  # torch's 5-D kernel folds 1e30 through
                points = gg[..., [0, 1, 2, 4], :]      # an int overflow: no defined result
            kw = dict(mode=mode, padding_mode=pad, align_corners=align)
            want = TF.grid_sample(torch.tensor(xx), torch.tensor(points), **kw).numpy()
            got = grid_sample(lazyt.tensor(xx), lazyt.tensor(points), **kw).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True, err_msg=f"{kw}")


def test_grid_sample_float16_and_empty():
    rng = _rng("f16")
    x = rng.normal(size=(2, 3, 5, 6)).astype(np.float16)
    g = rng.uniform(-1.2, 1.2, size=(2, 4, 4, 2)).astype(np.float16)
    for mode in ("bilinear", "nearest", "bicubic"):
        got = grid_sample(lazyt.tensor(x), lazyt.tensor(g), mode=mode, align_corners=False)
        assert got.dtype is lazyt.float16
        # sampled in float32 and rounded once (torch's CPU kernel rounds every step in half)
        want = TF.grid_sample(torch.tensor(x).float(), torch.tensor(g).float(), mode=mode,
                              align_corners=False).half()
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = grid_sample(lazyt.ones(1, 2, 3, 4), lazyt.ones(1, 0, 3, 2), align_corners=False)
    assert got.shape == (1, 2, 0, 3)
    assert grid_sample(lazyt.ones(0, 2, 3, 4), lazyt.ones(0, 3, 3, 2),
                       align_corners=True).shape == (0, 2, 3, 3)


def test_grid_sample_default_align_corners_warns_as_torch():
    x, g = lazyt.ones(1, 1, 2, 2), lazyt.zeros(1, 1, 1, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        out = grid_sample(x, g)
    assert out.numpy().item() == 1.0
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        affine_grid(lazyt.zeros(1, 2, 3), (1, 1, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grid_sample(x, g, align_corners=False)
        affine_grid(lazyt.zeros(1, 2, 3), (1, 1, 2, 2), align_corners=True)
    with pytest.warns(UserWarning, match="unit-size grids when align_corners=True"):
        affine_grid(lazyt.zeros(1, 2, 3), (1, 1, 1, 2), align_corners=True)


def test_grid_sample_errors():
    x, g = lazyt.ones(2, 3, 4, 5), lazyt.zeros(2, 3, 3, 2)
    kw = dict(align_corners=False)
    with pytest.raises(lazyt.InvalidArgumentError, match="grid_sample: mode must be one of"):
        grid_sample(x, g, mode="trilinear", **kw)
    with pytest.raises(lazyt.InvalidArgumentError, match="grid_sample: padding_mode must be"):
        grid_sample(x, g, padding_mode="circular", **kw)
    with pytest.raises(lazyt.ShapeError, match="grid_sample: expected a 4-D input"):
        grid_sample(lazyt.ones(3, 4, 5), lazyt.zeros(3, 3, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match="grid_sample: expected a 4-D input"):
        grid_sample(x, lazyt.zeros(2, 3, 3, 3, 3), **kw)
    with pytest.raises(lazyt.ShapeError, match="same batch size"):
        grid_sample(x, lazyt.zeros(3, 3, 3, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match="grid's last dim must be 2"):
        grid_sample(x, lazyt.zeros(2, 3, 3, 3), **kw)
    with pytest.raises(lazyt.ShapeError, match="grid's last dim must be 3"):
        grid_sample(lazyt.ones(2, 3, 4, 5, 6), lazyt.zeros(2, 1, 3, 3, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match="bicubic mode supports only 4-D input"):
        grid_sample(lazyt.ones(2, 3, 4, 5, 6), lazyt.zeros(2, 1, 3, 3, 3), mode="bicubic", **kw)
    with pytest.raises(lazyt.ShapeError, match="empty spatial dim"):
        grid_sample(lazyt.ones(2, 3, 0, 5), g, **kw)
    with pytest.raises(lazyt.DTypeError, match="grid_sample: input must be a floating-point"):
        grid_sample(lazyt.ones(2, 3, 4, 5, dtype=lazyt.int64), g, **kw)
    with pytest.raises(lazyt.DTypeError, match="grid_sample: grid must be a lazyt.Tensor"):
        grid_sample(x, np.zeros((2, 3, 3, 2)), **kw)
    with pytest.raises(lazyt.DTypeError, match="same dtype"):
        grid_sample(x, g.double(), **kw)
    with pytest.raises(lazyt.DTypeError, match="align_corners must be a bool"):
        grid_sample(x, g, align_corners="yes")
    with pytest.raises(ValueError):  # torch raises ValueError for bad modes: still caught
        grid_sample(x, g, mode="area", **kw)


# ---------------------------------------------------------------------- affine_grid
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (3, 1, 1, 7), (2, 1, 6, 1), (1, 1, 9, 16),
                                  (2, 2, 3, 4, 5), (1, 1, 1, 3, 2), (2, 1, 7, 8, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_affine_grid_against_torch(size, dtype):
    n = len(size) - 2
    rng = _rng("affine", size, dtype)
    tol = F32 if dtype == np.float32 else F64
    eye = np.zeros((size[0], n, n + 1), dtype)
    eye[:, range(n), range(n)] = 1
    for align in (False, True):
        base = _quiet(affine_grid, lazyt.tensor(eye), size, align_corners=align).numpy()
        np.testing.assert_array_equal(   # torch's base grid, bit for bit
            base, _quiet(TF.affine_grid, torch.tensor(eye), size, align_corners=align).numpy())
        theta = rng.normal(size=(size[0], n, n + 1)).astype(dtype)
        tt = torch.tensor(theta, requires_grad=True)
        want = _quiet(TF.affine_grid, tt, size, align_corners=align)
        w = rng.normal(size=tuple(want.shape)).astype(dtype)
        (gt,) = torch.autograd.grad((want * torch.tensor(w)).sum(), tt)
        lt = lazyt.tensor(theta).require_grad()
        got = _quiet(affine_grid, lt, size, align_corners=align)
        assert got.shape == tuple(want.shape) and got.dtype.name == str(np.dtype(dtype))
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **tol)
        g = (got * lazyt.tensor(w)).sum().backward().get(lt)
        np.testing.assert_allclose(g.numpy(), gt.numpy(), **tol)


@pytest.mark.parametrize("nd, mode, pad", [(4, "bilinear", "zeros"), (4, "bicubic", "reflection"),
                                           (4, "nearest", "border"), (5, "bilinear", "reflection")])
def test_spatial_transformer_gradients(nd, mode, pad):
    """affine_grid then grid_sample, differentiated through both to theta and the input."""
    rng = _rng("stn", nd, mode, pad)
    n = nd - 2
    shape = (2, 3, 6, 7) if nd == 4 else (2, 2, 4, 5, 3)
    size = (2, 3, 5, 4) if nd == 4 else (2, 2, 3, 4, 5)
    x = rng.normal(size=shape).astype(np.float32)
    theta = (np.eye(n, n + 1) + rng.normal(scale=0.4, size=(2, n, n + 1))).astype(np.float32)
    for align in (False, True):
        tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(theta, requires_grad=True)
        want = TF.grid_sample(tx, TF.affine_grid(tt, size, align_corners=align), mode=mode,
                              padding_mode=pad, align_corners=align)
        w = rng.normal(size=tuple(want.shape)).astype(np.float32)
        gx, gt = torch.autograd.grad((want * torch.tensor(w)).sum(), [tx, tt])
        lx, lt = lazyt.tensor(x).require_grad(), lazyt.tensor(theta).require_grad()
        got = grid_sample(lx, affine_grid(lt, size, align_corners=align), mode=mode,
                          padding_mode=pad, align_corners=align)
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **F32)
        grads = (got * lazyt.tensor(w)).sum().backward()
        np.testing.assert_allclose(grads.get(lx).numpy(), gx.numpy(), **F32)
        np.testing.assert_allclose(grads.get(lt).numpy(), gt.numpy(), rtol=1e-4, atol=1e-4)


def test_affine_grid_errors():
    kw = dict(align_corners=False)
    with pytest.raises(lazyt.DTypeError, match="affine_grid: theta must be a floating-point"):
        affine_grid(lazyt.zeros(1, 2, 3, dtype=lazyt.int64), (1, 1, 2, 2), **kw)
    with pytest.raises(lazyt.DTypeError, match="theta must be a lazyt.Tensor"):
        affine_grid(np.zeros((1, 2, 3)), (1, 1, 2, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match=r"theta must be a batch of 2-D affine matrices "
                                               r"of shape \(N, 2, 3\)"):
        affine_grid(lazyt.zeros(1, 3, 4), (1, 1, 2, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match=r"of shape \(N, 3, 4\)"):
        affine_grid(lazyt.zeros(1, 2, 3), (1, 1, 2, 2, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match=r"of shape \(N, 2, 3\)"):
        affine_grid(lazyt.zeros(2, 3), (1, 1, 2, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match="size must have 4 entries"):
        affine_grid(lazyt.zeros(1, 2, 3), (1, 1, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match="asks for a batch of 2"):
        affine_grid(lazyt.zeros(1, 2, 3), (2, 1, 2, 2), **kw)
    with pytest.raises(lazyt.ShapeError, match="size must be positive"):
        affine_grid(lazyt.zeros(1, 2, 3), (1, 1, 0, 2), **kw)
    with pytest.raises(lazyt.DTypeError, match="size must be a sequence of ints"):
        affine_grid(lazyt.zeros(1, 2, 3), (1, 1, 2.5, 2), **kw)


# ---------------------------------------------------------------------- bicubic interpolate
BICUBIC = [dict(scale_factor=2), dict(scale_factor=0.5), dict(scale_factor=1.7),
           dict(scale_factor=(0.6, 2.3)), dict(size=(9, 4)), dict(size=(1, 1)),
           dict(size=(3, 11)), dict(scale_factor=(1.1, 2)),
           dict(scale_factor=2.3, recompute_scale_factor=True), dict(size=(5, 6))]


@pytest.mark.parametrize("kw", BICUBIC, ids=[str(sorted(k.items())) for k in BICUBIC])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bicubic_interpolate_against_torch(kw, dtype):
    tol = dict(rtol=1e-5, atol=2e-6) if dtype == np.float32 else F64
    rng = _rng("bicubic", str(kw), dtype)
    for shape in ((2, 3, 5, 6), (1, 2, 7, 3)):
        for align in (None, False, True):
            x = rng.normal(size=shape).astype(dtype)
            tx = torch.tensor(x, requires_grad=True)
            want = TF.interpolate(tx, mode="bicubic", align_corners=align, **kw)
            lx = lazyt.tensor(x).require_grad()
            got = F.interpolate(lx, mode="bicubic", align_corners=align, **kw)
            np.testing.assert_allclose(got.numpy(), want.detach().numpy(), **tol,
                                       err_msg=f"{shape} {kw} {align}")
            w = rng.normal(size=tuple(want.shape)).astype(dtype)
            (gt,) = torch.autograd.grad((want * torch.tensor(w)).sum(), tx)
            g = (got * lazyt.tensor(w)).sum().backward().get(lx)
            if tuple(want.shape[2:]) == shape[2:] and "scale_factor" in kw and not align:
                # torch's backward copies when no size changes, where its forward resampled
                # with the scale factor; lazyt's gradient is its forward's
                continue
            np.testing.assert_allclose(g.numpy(), gt.numpy(), **tol,
                                       err_msg=f"grad {shape} {kw} {align}")


def test_bicubic_same_size_scale_factor_resamples_as_torch_forward():
    x = _rng("same").normal(size=(1, 1, 5, 6)).astype(np.float32)
    want = TF.interpolate(torch.tensor(x), scale_factor=1.1, mode="bicubic")
    got = F.interpolate(lazyt.tensor(x), scale_factor=1.1, mode="bicubic")
    assert not np.allclose(want.numpy(), x)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=2e-6)
    np.testing.assert_array_equal(F.interpolate(lazyt.tensor(x), size=(5, 6), mode="bicubic")
                                  .numpy(), x)


def test_bicubic_gradcheck_float16_and_upsample():
    rng = _rng("bicubic-misc")
    x = lazyt.tensor(rng.normal(size=(1, 2, 3, 4))).require_grad()
    for kw in (dict(size=(5, 3)), dict(scale_factor=(1.5, 0.75), align_corners=True)):
        assert gradcheck(lambda t: F.interpolate(t, mode="bicubic", **kw), [x])
    h = rng.normal(size=(1, 2, 4, 5)).astype(np.float16)
    got = F.interpolate(lazyt.tensor(h), scale_factor=2, mode="bicubic")
    want = TF.interpolate(torch.tensor(h).float(), scale_factor=2, mode="bicubic").half()
    assert got.dtype is lazyt.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.numpy().astype(np.float32),
                               rtol=1e-3, atol=1e-3)
    x = rng.normal(size=(1, 2, 3, 4)).astype(np.float32)
    up = lazyt.nn.Upsample(scale_factor=2, mode="bicubic", align_corners=True)
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bicubic')"
    want = torch.nn.Upsample(scale_factor=2, mode="bicubic", align_corners=True)(torch.tensor(x))
    np.testing.assert_allclose(up(lazyt.tensor(x)).numpy(), want.numpy(), rtol=1e-5, atol=2e-6)


def test_bicubic_errors():
    x = lazyt.ones(1, 1, 3, 4)
    with pytest.raises(lazyt.ShapeError, match="bicubic mode needs 4-D input"):
        F.interpolate(lazyt.ones(1, 1, 3), size=2, mode="bicubic")
    with pytest.raises(lazyt.ShapeError, match="bicubic mode needs 4-D input"):
        F.interpolate(lazyt.ones(1, 1, 3, 4, 5), size=2, mode="bicubic")
    with pytest.raises(lazyt.InvalidArgumentError, match="antialias is not supported"):
        F.interpolate(x, size=2, mode="bicubic", antialias=True)
    with pytest.raises(lazyt.DTypeError, match="bicubic mode needs a floating-point input"):
        F.interpolate(lazyt.ones(1, 1, 3, 4, dtype=lazyt.uint8), size=2, mode="bicubic")
    with pytest.raises(lazyt.InvalidArgumentError, match="mode must be one of"):
        F.interpolate(x, size=2, mode="cubic")
