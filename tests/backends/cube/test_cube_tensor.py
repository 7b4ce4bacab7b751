"""CubeTensor: layout description of a Cube-family primitive."""
import pytest

import lazyt.dtype as dt
from lazyt.backends.cube.tensor import CubeTensor, contiguous_strides
from lazyt.errors import DeviceError


def make(shape, strides=None, offset=0, device="wgpu:0"):
    strides = contiguous_strides(shape) if strides is None else strides
    return CubeTensor(None, device, shape, strides, object(), dt.float32, offset)


def test_new_contiguous():
    t = CubeTensor.new_contiguous("client", "wgpu:0", (2, 3, 4), "handle", dt.float16)
    assert (t.shape, t.strides, t.offset) == ((2, 3, 4), (12, 4, 1), 0)
    assert (t.client, t.device, t.handle, t.dtype) == ("client", "wgpu:0", "handle", dt.float16)
    assert t.num_elements == 24 and t.ndim == 3 and t.is_contiguous()


def test_contiguous_strides():
    assert contiguous_strides(()) == ()
    assert contiguous_strides((5,)) == (1,)
    assert contiguous_strides((2, 0, 3)) == (3, 3, 1)


@pytest.mark.parametrize("shape, strides, offset, expected", [
    ((2, 3), (3, 1), 0, True),
    ((2, 3), (1, 2), 0, False),          # transposed
    ((2, 3), (3, 1), 3, False),          # a view into the middle of a buffer
    ((4, 1, 3), (3, 99, 1), 0, True),    # a size-1 dim's stride does not matter
    ((4, 3), (0, 1), 0, False),          # expanded (broadcast) dim
    ((0, 3), (7, 7), 0, True),           # empty
])
def test_is_contiguous(shape, strides, offset, expected):
    assert make(shape, strides, offset).is_contiguous() is expected


def test_assert_is_on_same_device():
    a, b = make((2,), device="wgpu:0"), make((3,), device="wgpu:0")
    a.assert_is_on_same_device(b)
    with pytest.raises(DeviceError, match=r"wgpu:0.*\(2,\).*wgpu:1.*\(3,\)"):
        a.assert_is_on_same_device(make((3,), device="wgpu:1"))
