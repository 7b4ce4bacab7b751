"""lazyt's errors are also the built-in exceptions torch raises for the same mistake, so code
written for torch (`except RuntimeError`, `except IndexError`, ...) keeps catching them; and
the torch-habit error paths: stack of non-tensors, clamp without bounds, indexes out of
bounds."""
import numpy as np
import pytest

import lazyt
import lazyt.errors as errors

# class -> the built-ins it must derive from: torch's exception for the same mistake (most
# bad shapes, dtypes and arguments are RuntimeError in torch), plus Python's own convention.
BUILTIN_BASES = {
    "DistributedError": (RuntimeError,),
    "ShapeError": (ValueError, RuntimeError),
    "InvalidArgumentError": (ValueError, RuntimeError),
    "DTypeError": (TypeError, RuntimeError),
    "DeviceError": (RuntimeError,),
    "IndexOutOfRangeError": (IndexError,),
    "MissingImplError": (NotImplementedError, RuntimeError),
    "GradError": (RuntimeError,),
    "FusionError": (RuntimeError,),
    "CaptureError": (RuntimeError,),
    "MetadataMismatchError": (RuntimeError,),
    "KernelLanguageError": (RuntimeError,),
    "KernelCompileError": (RuntimeError,),
    "TemplateError": (KeyError,),
    "DivisionByZeroError": (ZeroDivisionError, RuntimeError),
    "LinAlgError": (RuntimeError,),
    "UnsafeLoadError": (__import__("pickle").UnpicklingError,),
}


def test_every_error_class_is_listed():
    classes = {n for n, c in vars(errors).items()
               if isinstance(c, type) and issubclass(c, errors.LazytError)}
    assert classes - {"LazytError"} == set(BUILTIN_BASES)


@pytest.mark.parametrize("name", sorted(BUILTIN_BASES))
def test_builtin_bases(name):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.LazytError)
    for base in BUILTIN_BASES[name]:
        assert issubclass(cls, base), (name, base)
    err = cls("probe: message")
    assert "probe: message" in str(err)


def _raises(exc, fn, *words):
    """fn() (its result read) raises `exc`; the message holds `words`; returns the error."""
    with pytest.raises(exc) as e:
        out = fn()
        if isinstance(out, lazyt.Tensor):
            out.numpy()
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    return e.value


def test_torch_style_except_clauses_catch_lazyt_errors(device):
    x = lazyt.ones(2, 3, device=device)
    # torch: RuntimeError for shapes that do not broadcast, matmul, reshape
    for fn in (lambda: x + lazyt.ones(4, device=device), lambda: x @ x,
               lambda: x.reshape(5)):
        assert isinstance(_raises(RuntimeError, fn), lazyt.ShapeError)
    # torch: RuntimeError for an op a dtype does not support
    b = lazyt.ones(2, dtype=lazyt.bool_, device=device)
    err = _raises(RuntimeError, lambda: b - b, "sub")
    assert isinstance(err, lazyt.DTypeError) and isinstance(err, TypeError)
    # torch: IndexError for a dim out of range
    err = _raises(IndexError, lambda: x.sum(2), "sum", "out of range")
    assert isinstance(err, lazyt.IndexOutOfRangeError)


@pytest.mark.parametrize("bad", [[1, 2], (1.0,), 5, "ab"], ids=["ints", "floats", "int", "str"])
def test_stack_and_cat_of_non_tensors(device, bad):
    for op, fn in (("stack", lazyt.stack), ("cat", lazyt.cat)):
        err = _raises(lazyt.DTypeError, lambda: fn(bad), f"{op}:", "tensors")
        assert isinstance(err, TypeError)


def test_stack_of_a_tensor_and_a_number(device):
    x = lazyt.ones(2, device=device)
    _raises(lazyt.DTypeError, lambda: lazyt.stack([x, 1.0]), "stack:", "float", "position 1")
    _raises(lazyt.DTypeError, lambda: lazyt.stack(x), "stack:", "Tensor")


def test_clamp_needs_a_bound(device):
    x = lazyt.tensor([-1.0, 0.5, 2.0], device=device)
    for fn in (lambda: x.clamp(), lambda: lazyt.clamp(x, None, None), lambda: x.clip(),
               lambda: x.clamp(min=None, max=None), lambda: x.clone().clamp_()):
        err = _raises(lazyt.InvalidArgumentError, fn, "clamp",
                      "At least one of 'min' or 'max' must not be None")
        assert isinstance(err, RuntimeError)   # torch's exception
    np.testing.assert_array_equal(x.clamp(min=0).numpy(), [0.0, 0.5, 2.0])
    np.testing.assert_array_equal(x.clamp(max=1).numpy(), [-1.0, 0.5, 1.0])


@pytest.mark.parametrize("key", [3, -4, (0, 3), (slice(None), 5)], ids=str)
def test_index_out_of_bounds(device, key):
    x = lazyt.ones(3, 3, device=device)
    err = _raises(IndexError, lambda: x[key], "getitem", "out of bounds")
    assert isinstance(err, lazyt.IndexOutOfRangeError)
