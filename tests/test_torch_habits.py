"""A PyTorch user's habits: the training flow through `.grad` (beside Burn's `Gradients`),
`requires_grad=` on creation, numpy's reduction protocol, and constructor misuse. Each fails
loudly or works, never silently; on every device present."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.errors import GradError, InvalidArgumentError, ShapeError


def _leaf(values, device):
    return lazyt.tensor(np.asarray(values, np.float32), device=device).require_grad()


def test_backward_accumulates_into_leaf_grad(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    assert x.grad is None                                  # nothing yet, as in torch
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    (3 * x).sum().backward()                               # a second backward adds
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])
    x.grad = None
    assert x.grad is None
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_burn_spelling_reads_one_pass(device):
    x = _leaf([1.0, 2.0], device)
    d = lazyt.tensor(np.array([5.0, 6.0], np.float32), device=device)
    first = (x * x).sum().backward()
    second = (x * 10).sum().backward()
    np.testing.assert_allclose(first[x].numpy(), [2.0, 4.0])       # grads[x]
    np.testing.assert_allclose(second.get(x).numpy(), [10.0, 10.0])
    np.testing.assert_allclose(x.grad(first).numpy(), [2.0, 4.0])  # the former spelling
    np.testing.assert_allclose(x.grad.numpy(), [12.0, 14.0])       # both passes, accumulated
    assert first.get(d) is None
    with pytest.raises(GradError, match="no gradient"):
        first[d]


def test_only_leaves_get_grad_and_intermediates_stay_none(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 2
    (h * h).sum().backward()
    assert h.grad is None and not h.is_leaf and x.is_leaf
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])


def test_parameters_accumulate_and_zero_grad_by_assignment(device):
    lin = lazyt.nn.Linear(3, 2, device=device)
    x = lazyt.tensor(np.ones((4, 3), np.float32), device=device)
    lin(x).sum().backward()
    assert lin.weight.grad.shape == (2, 3) and lin.bias.grad.shape == (2,)
    np.testing.assert_allclose(lin.bias.grad.numpy(), [4.0, 4.0])
    for p in lin.parameters():
        p.grad = None
    assert all(p.grad is None for p in lin.parameters())


def test_requires_grad_keyword_and_attribute(device):
    x = lazyt.randn(2, 3, requires_grad=True, device=device)
    assert x.requires_grad and x.is_leaf
    y = lazyt.zeros(2, 3, device=device)
    assert not y.requires_grad
    y.requires_grad = True                                  # torch's attribute assignment
    assert y.requires_grad
    y.requires_grad_(False)
    assert not y.requires_grad
    z = lazyt.ones(3, requires_grad=True, device=device)
    (z * z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(GradError, match="float"):
        lazyt.arange(3, requires_grad=True, device=device)


def test_grad_assignment_checks_shape_and_type(device):
    x = _leaf([1.0, 2.0], device)
    with pytest.raises(ShapeError, match="grad"):
        x.grad = lazyt.zeros(3, device=device)
    with pytest.raises(GradError, match="grad"):
        x.grad = [1.0, 2.0]
    x.grad = lazyt.ones(2, device=device)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_numpy_reductions_take_numpy_arguments(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = lazyt.tensor(a, device=device)
    np.testing.assert_allclose(np.sum(t, axis=0).numpy(), a.sum(0))
    np.testing.assert_allclose(np.mean(t, axis=1, keepdims=True).numpy(),
                               a.mean(1, keepdims=True))
    assert float(np.max(t)) == 11.0 and int(np.argmax(t)) == 11
    np.testing.assert_allclose(float(np.std(t)), a.std(), rtol=1e-6)       # numpy's ddof=0
    np.testing.assert_allclose(float(t.std()), a.std(ddof=1), rtol=1e-6)   # torch's default
    with pytest.raises(InvalidArgumentError, match="out="):
        np.sum(t, out=np.zeros(()))
    with pytest.raises(InvalidArgumentError, match="both dim"):
        t.sum(0, axis=1)


def test_tensor_constructor_misuse_is_a_clear_error():
    with pytest.raises(InvalidArgumentError, match=r"Tensor\(2, 3\).*lazyt.tensor"):
        lazyt.Tensor(2, 3)
    assert lazyt.ones(2).sum().item() == 2.0          # still usable


def test_creating_absurd_shapes_raises_before_allocating():
    with pytest.raises(ShapeError, match="randn"):
        lazyt.randn(2 ** 62)
    with pytest.raises(ShapeError, match="zeros"):
        lazyt.zeros(2 ** 40, 2 ** 10)
    assert lazyt.randn(3).shape == (3,)


# ---------------------------------------------------------------- metadata that lies
from lazyt import Dispatch, Tensor  # noqa: E402
from lazyt.backends import Autodiff, Fusion, Numpy  # noqa: E402
from lazyt.extension import backend_extension, fusion  # noqa: E402


def _same(x):
    return x


@backend_extension(Autodiff, Numpy, Fusion)
class LyingOps(lazyt.Backend):
    @fusion(dtype="x", shape=_same)
    def lie_shape(x): ...

    @fusion(dtype="x", shape=_same)
    def lie_dtype(x): ...


@LyingOps.implement(Numpy)
def lie_shape(x):
    return np.concatenate([x, x])          # twice the rows the metadata declares


@LyingOps.implement(Numpy)
def lie_dtype(x):                           # noqa: F811
    return x.astype(np.float64)            # float64 where float32 is declared


@pytest.mark.parametrize("fusion_on", [True, False])
@pytest.mark.parametrize("op, expect", [("lie_shape", r"\(4, 3\):float32 but .*\(2, 3\)"),
                                        ("lie_dtype", r"\(2, 3\):float64 but .*float32")])
def test_lying_metadata_is_caught_at_the_op(fusion_on, op, expect):
    dev = lazyt.device("cpu", fusion=fusion_on)
    x = lazyt.tensor(np.ones((2, 3), np.float32), device=dev)
    with pytest.raises(lazyt.MetadataMismatchError, match=f"{op}: output 0 is {expect}"):
        y = Tensor.from_dispatch(getattr(Dispatch, op)(x.into_dispatch()))
        (y + 1).numpy()
    assert (x + 1).sum().item() == 12.0    # the runtime stays usable


def test_cpu_and_cuda_moves(device):
    x = lazyt.tensor(np.arange(3, dtype=np.float32), device=device)
    c = x.cpu()
    assert c.device.base == "cpu" and c.numpy().tolist() == [0.0, 1.0, 2.0]
    if device.base == "cpu" and device.fusion and device.autodiff:
        assert c is x
    try:
        g = x.cuda()
    except lazyt.DeviceError as e:           # no CUDA here: the error says what to install
        assert "cuda" in str(e)
    else:
        assert g.device.base == "cuda" and g.numpy().tolist() == [0.0, 1.0, 2.0]


def test_dlpack_shares_memory_with_numpy_on_cpu():
    a = np.arange(6, dtype=np.float32)
    t = lazyt.from_dlpack(a)                   # zero-copy: the producer's later write shows
    a[0] = 100.0
    assert t.numpy()[0] == 100.0 and (t + 1).numpy()[1] == 2.0
    assert a[1] == 1.0                          # lazyt never writes into shared memory
    back = np.from_dlpack(lazyt.tensor([1.0, 2.0]))
    assert back.tolist() == [1.0, 2.0] and not back.flags.writeable
    with pytest.raises(lazyt.DTypeError, match="__dlpack__"):
        lazyt.from_dlpack([1, 2])


def test_dlpack_onto_another_device_copies(device):
    a = np.arange(4, dtype=np.float32)
    t = lazyt.from_dlpack(a, device=device)
    assert t.device == device and t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    if device.base not in ("cpu", "cuda"):          # cuda exports through CuPy
        with pytest.raises(lazyt.DeviceError, match="cpu"):
            t.__dlpack__()


def test_burn_step_hands_the_pass_over_and_torch_step_accumulates(device):
    lin = lazyt.nn.Linear(3, 2, device=device)
    opt = lazyt.optim.SGD(lin.parameters(), lr=0.1)
    x = lazyt.ones(4, 3, device=device)
    for _ in range(3):                                  # Burn's loop: nothing accumulates
        opt.step(lin(x).sum().backward())
        assert lin.bias.grad is None and lin.weight.grad is None
    lin(x).sum().backward()                             # torch's flow: accumulates until reset
    lin(x).sum().backward()
    opt.step()
    np.testing.assert_allclose(lin.bias.grad.numpy(), [8.0, 8.0])
    opt.zero_grad()
    assert lin.bias.grad is None


# ---------------------------------------------------------------- int64 where it is 32-bit
def _wgpu():
    try:
        d = lazyt.device("wgpu")
        d.backend  # noqa: B018
        return d
    except lazyt.DeviceError:
        return None


WGPU = _wgpu()


@pytest.mark.skipif(WGPU is None, reason="no wgpu adapter (CI has the software Vulkan one)")
@pytest.mark.parametrize("name, fn", [
    ("add", lambda d: lazyt.tensor([2 ** 31 - 1], device=d) + 1),
    ("sub", lambda d: lazyt.tensor([-(2 ** 31)], device=d) - 1),
    ("mul", lambda d: lazyt.tensor([70000], device=d) * 70000),
    ("neg", lambda d: -lazyt.tensor([-(2 ** 31)], device=d)),
    ("pow", lambda d: lazyt.tensor([2], device=d) ** 31),
    ("cast", lambda d: lazyt.tensor([3e9], device=d).to(lazyt.int64)),
    ("sum", lambda d: lazyt.tensor([2 ** 30, 2 ** 30], device=d).sum()),
    ("cumsum", lambda d: lazyt.tensor([2 ** 30, 2 ** 30], device=d).cumsum(0)),
    ("matmul", lambda d: lazyt.tensor([[2 ** 20, 2 ** 20]], device=d)
     @ lazyt.tensor([[2 ** 12], [2 ** 12]], device=d)),
    ("mul", lambda d: lazyt.tensor([2 ** 30], device=d) * 2 + 5),       # inside a fused chain
])
def test_wgpu_int64_never_wraps_silently(name, fn):
    with pytest.raises(lazyt.DTypeError, match=f"{name}: .*fit in int64 on wgpu.*32 bits"):
        fn(WGPU).numpy()
    np.testing.assert_array_equal((lazyt.tensor([2 ** 31 - 2], device=WGPU) + 1).numpy(),
                                  [2 ** 31 - 1])               # in range: exact, and usable


@pytest.mark.skipif(WGPU is None, reason="no wgpu adapter (CI has the software Vulkan one)")
def test_wgpu_int64_in_range_matches_cpu():
    a = np.array([3, -7, 1000, 2 ** 10], np.int64)
    for f in (lambda t: t * 3 - 1, lambda t: (t ** 2).sum(), lambda t: -t, lambda t: t // 7,
              lambda t: t.cumsum(0)):
        np.testing.assert_array_equal(f(lazyt.tensor(a, device=WGPU)).numpy(),
                                      f(lazyt.tensor(a)).numpy())


def test_cuda_memory_needs_a_cuda_device_and_other_devices_have_no_cuda_interface(device):
    class CudaArray:                       # what torch/CuPy CUDA tensors expose
        __cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False),
                                    "version": 3}
    if device.base != "cuda":
        with pytest.raises(lazyt.DeviceError, match="CUDA memory"):
            lazyt.from_dlpack(CudaArray(), device=device)
        assert not hasattr(lazyt.ones(2, device=device), "__cuda_array_interface__")


def test_boolean_mask_indexing_and_its_gradient(device):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = lazyt.tensor(a, device=device)
    np.testing.assert_array_equal(t[t > 2].numpy(), a[a > 2])           # torch's t[t > 2]
    np.testing.assert_array_equal(t[np.array([False, True])].numpy(), a[[False, True]])
    x = lazyt.tensor(np.array([1.0, -2.0, 3.0], np.float32), device=device).require_grad()
    g = (x[x > 0] ** 2).sum().backward()
    np.testing.assert_allclose(g[x].numpy(), [2.0, 0.0, 6.0])
    with pytest.raises(lazyt.IndexOutOfRangeError, match="boolean mask"):
        t[lazyt.tensor([True, False, True], device=device)]


def test_detach_in_place(device):
    x = lazyt.ones(2, requires_grad=True, device=device)
    assert x.detach_() is x and not x.requires_grad
