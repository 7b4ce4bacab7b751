"""`lazyt.finfo` / `lazyt.iinfo`: torch's dtype limits, with torch's values (as printed by
torch 2.13) and torch's refusals."""
import pytest

import lazyt


def test_finfo_matches_torch():
    f32 = lazyt.finfo(lazyt.float32)
    assert (f32.bits, f32.eps, f32.max, f32.min, f32.tiny, f32.resolution) == (
        32, 1.1920928955078125e-07, 3.4028234663852886e+38, -3.4028234663852886e+38,
        1.1754943508222875e-38, 1e-06)
    assert f32.smallest_normal == f32.tiny and f32.dtype == "float32"
    f16 = lazyt.finfo("half")
    assert (f16.bits, f16.eps, f16.max, f16.tiny, f16.resolution) == (
        16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001)
    f64 = lazyt.finfo(lazyt.float64)
    assert (f64.eps, f64.resolution, f64.tiny) == (2.220446049250313e-16, 1e-15,
                                                   2.2250738585072014e-308)
    assert lazyt.finfo().eps == f32.eps          # the default float
    assert "eps=1.1920928955078125e-07" in repr(f32)


def test_iinfo_matches_torch():
    assert [(i.bits, i.min, i.max) for i in map(lazyt.iinfo, (
        lazyt.uint8, lazyt.int8, lazyt.int16, lazyt.int32, lazyt.int64))] == [
        (8, 0, 255), (8, -128, 127), (16, -32768, 32767), (32, -2**31, 2**31 - 1),
        (64, -2**63, 2**63 - 1)]
    assert lazyt.iinfo("long").dtype == "int64"


@pytest.mark.parametrize("fn, dtype", [(lazyt.finfo, lazyt.int32), (lazyt.finfo, lazyt.bool_),
                                       (lazyt.iinfo, lazyt.float32), (lazyt.iinfo, lazyt.bool_)])
def test_the_other_kind_of_dtype_raises(fn, dtype):
    with pytest.raises(lazyt.DTypeError, match=fn.__name__):
        fn(dtype)
    with pytest.raises(TypeError):  # what torch raises, for code written for it
        fn(dtype)
