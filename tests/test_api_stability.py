"""What existing code relies on keeps working across the op-declaration layout: method keyword
names, `Dispatch.helper` on any backend method, argument normalization on every stack, error
order and wording, and the import paths of moved modules."""
from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

import lazyt
from lazyt.ops import BinaryOp

STACKS = [lazyt.device("cpu"), lazyt.device("cpu", fusion=False),
          lazyt.device("cpu", checkpointing="none")]


@pytest.mark.parametrize("dev", STACKS, ids=str)
def test_method_keyword_names(dev):
    x = lazyt.tensor([[1.0, -2.0], [3.0, 4.0]], device=dev)
    for name in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt",
                 "le", "gt", "ge"):
        np.testing.assert_array_equal(getattr(x, name)(o=x).numpy(),
                                      getattr(lazyt, name)(x, x).numpy())
    np.testing.assert_array_equal(x.matmul(other=x.T).numpy(), x.numpy() @ x.numpy().T)


def test_dispatch_helper_reaches_composites_and_backend_methods():
    x = lazyt.tensor([[1.0, -2.0, 3.0]])
    d = x.into_dispatch()
    np.testing.assert_allclose(lazyt.Tensor.from_dispatch(lazyt.Dispatch.helper("softmax", d, 1))
                               .numpy(), x.softmax(1).numpy())
    for name, want in (("relu", np.maximum(x.numpy(), 0)), ("float_exp", np.exp(x.numpy()))):
        got = lazyt.Tensor.from_dispatch(lazyt.Dispatch.helper(name, d)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(AttributeError):
        lazyt.Dispatch.helper("no_such_helper", d)


@pytest.mark.parametrize("dev", STACKS, ids=str)
def test_truthy_keepdim_on_every_stack(dev):
    x = lazyt.ones(2, 3, device=dev)
    assert x.sum(keepdim=1.5).numpy().shape == (1, 1)
    assert x.sum(1, keepdim=0).numpy().shape == (2,)


def test_index_shape_errors_come_before_promotion():
    x = lazyt.ones(6, dtype=lazyt.float16)
    with pytest.raises(lazyt.ShapeError, match=r"index_add: source shape \(2,\) must be \(1,\)"):
        lazyt.index_add(x, 0, lazyt.tensor([1]), lazyt.ones(2, dtype=lazyt.int64))
    with pytest.raises(lazyt.ShapeError, match="scatter_add: index shape .* must fit inside"):
        lazyt.ones(2, 3).scatter_add(1, lazyt.tensor([[0, 1]]), lazyt.ones(1, 1))


def test_device_errors_name_the_op_code():
    a = lazyt.ones(2)
    b = lazyt.ones(2, device=lazyt.device("cpu", fusion=False))
    with pytest.raises(lazyt.DeviceError, match="^maximum:"):
        lazyt.Dispatch.binary(BinaryOp.MAXIMUM, a.into_dispatch(), b.into_dispatch())


@pytest.mark.parametrize("path, names", [
    ("lazyt.backends.numpy_fused", ("compile_block", "run_block", "parallel_for", "_threads")),
    ("lazyt.autodiff.elementwise", ("UNARY_GRAD", "BINARY_GRAD")),
    ("lazyt.tensor", ("Tensor", "where", "cat", "stack", "matmul", "gather", "index_select",
                      "index_add", "scatter_add")),
    ("lazyt.extension", ("backend_extension", "fusion", "TensorMeta", "ShapeError", "DType")),
])
def test_former_import_paths(path, names):
    mod = importlib.import_module(path)
    for n in names:
        assert hasattr(mod, n), (path, n)


@pytest.mark.skipif(importlib.util.find_spec("wgpu") is None, reason="needs the wgpu package")
def test_wgpu_replay_former_path_is_the_cube_module():
    import lazyt.backends.wgpu.replay as old
    from lazyt.backends.cube import replay
    assert old is replay
