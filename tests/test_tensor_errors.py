"""Every error path of the foundation: the error type (and its built-in base), a message that
names the op and the operands' shapes/dtypes, and a runtime that stays usable afterwards."""
import numpy as np
import pytest

import lazyt
import lazyt.errors as errors


def T(arr, device):
    return lazyt.tensor(np.asarray(arr), device=device)


def assert_usable(device):
    out = lazyt.ones(2, 3, device=device) @ lazyt.ones(3, device=device) + 1
    np.testing.assert_array_equal(out.numpy(), np.full(2, 4.0, np.float32))


def mentions_shape(msg: str, shape) -> bool:
    shape = tuple(shape)
    forms = {str(shape), str(list(shape)), "x".join(map(str, shape)), ", ".join(map(str, shape))}
    return any(f in msg for f in forms)


def raises(exc, fn, *, op, shapes=(), words=()):
    """Run fn (reading its result) expecting `exc`; the message names `op` (or one of a tuple of
    accepted spellings), `shapes` and `words`."""
    with pytest.raises(exc) as e:
        out = fn()
        if isinstance(out, lazyt.Tensor):
            out.numpy()
    msg = str(e.value)
    ops = op if isinstance(op, tuple) else (op,)
    assert any(o in msg for o in ops), f"message does not name the op {op!r}: {msg!r}"
    for s in shapes:
        assert mentions_shape(msg, s), f"message does not mention shape {s}: {msg!r}"
    for w in words:
        assert w in msg, f"message does not mention {w!r}: {msg!r}"
    return e.value


# ------------------------------------------------------------------ the error classes
def test_error_hierarchy():
    names = ["LazytError", "ShapeError", "DTypeError", "DeviceError", "IndexOutOfRangeError",
             "MissingImplError", "GradError", "FusionError", "MetadataMismatchError",
             "KernelLanguageError", "KernelCompileError"]
    for n in names:
        cls = getattr(errors, n)
        assert issubclass(cls, errors.LazytError), n
        assert issubclass(cls, Exception)
    assert issubclass(errors.ShapeError, ValueError)
    assert issubclass(errors.DTypeError, TypeError)
    assert issubclass(errors.DeviceError, RuntimeError)
    assert issubclass(errors.IndexOutOfRangeError, IndexError)
    for n in ["LazytError", "ShapeError", "DTypeError", "DeviceError", "IndexOutOfRangeError"]:
        assert getattr(lazyt, n) is getattr(errors, n), n


# ------------------------------------------------------------------ shapes
@pytest.mark.parametrize("sa, sb", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 3), (2,)),
                                    ((5, 2, 3), (5, 4, 6)), ((3,), (2, 4, 5))], ids=str)
def test_matmul_contraction_mismatch(device, sa, sb):
    a, b = lazyt.ones(*sa, device=device), lazyt.ones(*sb, device=device)
    for fn in (lambda: a @ b, lambda: a.matmul(b)):
        err = raises(lazyt.ShapeError, fn, op="matmul", shapes=(sa, sb))
        assert isinstance(err, ValueError)
    assert_usable(device)


def test_matmul_batch_mismatch(device):
    a, b = lazyt.ones(2, 3, 4, device=device), lazyt.ones(3, 4, 5, device=device)
    raises(lazyt.ShapeError, lambda: a @ b, op="matmul", shapes=((2, 3, 4), (3, 4, 5)))
    assert_usable(device)


def test_matmul_0d(device):
    a = lazyt.tensor(2.0, device=device)
    with pytest.raises(lazyt.ShapeError):
        (a @ lazyt.ones(1, device=device)).numpy()
    assert_usable(device)


@pytest.mark.parametrize("sym, op, fn", [
    ("+", "add", lambda a, b: a + b), ("-", "sub", lambda a, b: a - b),
    ("*", "mul", lambda a, b: a * b), ("/", "div", lambda a, b: a / b),
    ("<", "lt", lambda a, b: a < b), ("==", "eq", lambda a, b: a == b),
    ("max", "maximum", lambda a, b: lazyt.maximum(a, b)),
], ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("sa, sb", [((2, 3), (4,)), ((2, 3), (3, 2)), ((0,), (2,)),
                                    ((4, 1, 3), (5, 2))], ids=str)
def test_broadcast_failure(device, sym, op, fn, sa, sb):
    a, b = lazyt.ones(*sa, device=device), lazyt.ones(*sb, device=device)
    err = raises(lazyt.ShapeError, lambda: fn(a, b), op=op, shapes=(sa, sb))
    assert isinstance(err, ValueError)
    assert_usable(device)


def test_broadcast_failure_where_and_logical(device):
    c = lazyt.ones(2, 3, dtype=lazyt.bool_, device=device)
    raises(lazyt.ShapeError, lambda: lazyt.where(c, lazyt.ones(4, device=device), 0.0),
           op="where", shapes=((2, 3), (4,)))
    raises(lazyt.ShapeError, lambda: c & lazyt.ones(4, dtype=lazyt.bool_, device=device),
           op="and", shapes=((2, 3), (4,)))
    assert_usable(device)


@pytest.mark.parametrize("shape, new", [((2, 3), (4, 2)), ((2, 3), (4, -1)), ((6,), (7,)),
                                        ((0, 3), (1,)), ((2, 3), (-1, -1))], ids=str)
@pytest.mark.parametrize("method", ["reshape", "view"])
def test_reshape_wrong_size(device, shape, new, method):
    t = lazyt.ones(*shape, device=device)
    err = raises(lazyt.ShapeError, lambda: getattr(t, method)(*new), op=(method, "reshape"),
                 shapes=(shape,))
    assert isinstance(err, ValueError)
    assert_usable(device)


def test_expand_cat_stack_split_shape_errors(device):
    t = lazyt.ones(3, 2, device=device)
    raises(lazyt.ShapeError, lambda: t.expand(3, 4), op="expand", shapes=((3, 2), (3, 4)))
    raises(lazyt.ShapeError, lambda: t.expand(4), op="expand", shapes=((3, 2),))
    raises(lazyt.ShapeError, lambda: lazyt.cat([t, lazyt.ones(3, 3, device=device)], dim=0),
           op="cat", shapes=((3, 2), (3, 3)))
    raises(lazyt.ShapeError, lambda: lazyt.cat([t, lazyt.ones(2, device=device)]),
           op="cat", shapes=((3, 2), (2,)))
    raises(lazyt.ShapeError, lambda: lazyt.stack([t, lazyt.ones(2, 3, device=device)]),
           op="stack", shapes=((3, 2), (2, 3)))
    raises(lazyt.ShapeError, lambda: t.split([1, 1]), op="split", shapes=((3, 2),))
    raises(lazyt.ShapeError, lambda: t.permute(1, 0, 2), op="permute", shapes=((3, 2),))
    raises(lazyt.ShapeError, lambda: t.gather(0, lazyt.zeros(3, dtype=lazyt.int64,
                                                            device=device)),
           op="gather", shapes=((3, 2),))
    assert_usable(device)


def test_empty_list_to_cat_and_stack(device):
    with pytest.raises(lazyt.LazytError):
        lazyt.cat([])
    with pytest.raises(lazyt.LazytError):
        lazyt.stack([])
    assert_usable(device)


# ------------------------------------------------------------------ dims
BAD_DIMS = [
    ("sum", lambda t: t.sum(dim=2)), ("mean", lambda t: t.mean(dim=-3)),
    ("max", lambda t: t.max(dim=5)), ("argmax", lambda t: t.argmax(dim=2)),
    ("var", lambda t: t.var(dim=(0, 2))), ("transpose", lambda t: t.transpose(0, 3)),
    ("unsqueeze", lambda t: t.unsqueeze(3)), ("unsqueeze", lambda t: t.unsqueeze(-4)),
    ("squeeze", lambda t: t.squeeze(2)), ("softmax", lambda t: t.softmax(2)),
    ("log_softmax", lambda t: t.log_softmax(-3)), ("flatten", lambda t: t.flatten(0, 5)),
    ("cat", lambda t: lazyt.cat([t, t], dim=2)), ("stack", lambda t: lazyt.stack([t, t], dim=4)),
    ("chunk", lambda t: t.chunk(2, dim=2)), ("split", lambda t: t.split(1, dim=-3)),
    ("index_select", lambda t: t.index_select(2, lazyt.zeros(1, dtype=lazyt.int64,
                                                             device=t.device))),
    ("permute", lambda t: t.permute(0, 2)), ("size", lambda t: t.size(2)),
]


@pytest.mark.parametrize("op, fn", BAD_DIMS, ids=[f"{op}-{i}" for i, (op, _) in enumerate(BAD_DIMS)])
def test_bad_dim(device, op, fn):
    t = lazyt.ones(2, 3, device=device)
    err = raises(lazyt.IndexOutOfRangeError, lambda: fn(t), op=op)
    assert isinstance(err, IndexError)
    assert_usable(device)


# ------------------------------------------------------------------ devices
def test_mixing_devices(device):
    other = lazyt.device("cpu", fusion=False) if device == lazyt.device("cpu") \
        else lazyt.device("cpu")
    a = lazyt.ones(2, 2, device=device)
    b = lazyt.ones(2, 2, device=other)
    cases = [("add", lambda: a + b), ("mul", lambda: b * a), ("matmul", lambda: a @ b),
             ("cat", lambda: lazyt.cat([a, b])), ("stack", lambda: lazyt.stack([a, b])),
             ("where", lambda: lazyt.where(a > 0, a, b)), ("maximum", lambda: lazyt.maximum(a, b)),
             ("index_select", lambda: a.index_select(0, lazyt.zeros(1, dtype=lazyt.int64,
                                                                    device=other)))]
    for op, fn in cases:
        err = raises(lazyt.DeviceError, fn, op=op)
        assert isinstance(err, RuntimeError)
        msg = str(err)
        # the message must tell the two devices apart (both are "cpu" with different layers)
        assert repr(other) in msg or repr(device) in msg or "fusion=False" in msg, msg
    assert_usable(device)
    assert_usable(other)
    np.testing.assert_array_equal((a + b.to(device)).numpy(), np.full((2, 2), 2.0, np.float32))


# ------------------------------------------------------------------ dtypes
@pytest.mark.parametrize("data", [np.array([1 + 1j, 2]), 3j, np.array(["a"]), [1, "b"]],
                         ids=["complex-array", "complex", "str-array", "mixed-list"])
def test_unsupported_input_dtype(device, data):
    with pytest.raises(lazyt.DTypeError) as e:
        lazyt.tensor(data, device=device)
    assert isinstance(e.value, TypeError)
    assert_usable(device)


def test_complex_message_names_the_dtype(device):
    with pytest.raises(lazyt.DTypeError) as e:
        lazyt.tensor(np.array([1 + 1j]), device=device)
    assert "complex" in str(e.value)


def test_neg_of_bool(device):
    b = lazyt.tensor([True, False], device=device)
    err = raises(lazyt.DTypeError, lambda: -b, op="neg", words=("bool",))
    assert isinstance(err, TypeError)
    assert_usable(device)


@pytest.mark.parametrize("op, fn", [(("not", "invert", "~"), lambda t: ~t),
                                    (("and", "&"), lambda t: t & t),
                                    (("or", "|"), lambda t: t | (t > 0))], ids=["not", "and", "or"])
@pytest.mark.parametrize("dtype", [lazyt.float32], ids=str)
def test_logical_ops_on_non_bool(device, op, fn, dtype):
    """`& | ~` are bitwise on bool and integer tensors (as torch); floats must raise."""
    t = lazyt.tensor([1, 2, 3], dtype=dtype, device=device)
    raises(lazyt.DTypeError, lambda: fn(t), op=op, words=(dtype.name,))
    assert_usable(device)
    i = lazyt.tensor([1, 2, 3], device=device)
    assert (~i).tolist() == [-2, -3, -4] and (i & 6).tolist() == [0, 2, 2]


def test_unknown_dtype_name(device):
    with pytest.raises(lazyt.DTypeError):
        lazyt.zeros(2, dtype="complex64", device=device)
    assert_usable(device)


def test_scalar_of_unsupported_type(device):
    t = lazyt.ones(2, device=device)
    with pytest.raises(TypeError):
        t + 1j
    with pytest.raises(TypeError):
        t * "a"
    assert_usable(device)


# ------------------------------------------------------------------ ragged lists and creation
@pytest.mark.parametrize("data", [[[1, 2], [3]], [[1.0], 2.0], [[[1], [2]], [[3]]]], ids=str)
def test_ragged_lists(device, data):
    with pytest.raises(lazyt.ShapeError) as e:
        lazyt.tensor(data, device=device)
    assert isinstance(e.value, ValueError)
    assert_usable(device)


def test_negative_size(device):
    with pytest.raises(lazyt.ShapeError):
        lazyt.zeros(2, -1, device=device)
    assert_usable(device)


# ------------------------------------------------------------------ indices and values
def test_index_out_of_range(device):
    t = lazyt.ones(3, 4, device=device)
    err = raises(lazyt.IndexOutOfRangeError, lambda: t[5], op="", words=("5",))
    assert isinstance(err, IndexError)
    err = raises(lazyt.IndexOutOfRangeError, lambda: t[:, -5], op="", words=("-5",))
    with pytest.raises(lazyt.IndexOutOfRangeError):
        t.index_select(0, lazyt.tensor([0, 3], device=device)).numpy()
    with pytest.raises(lazyt.IndexOutOfRangeError):
        t.gather(1, lazyt.tensor([[4]], device=device)).numpy()
    assert_usable(device)


@pytest.mark.parametrize("conv", [lambda t: t.item(), float, int, bool],
                         ids=["item", "float", "int", "bool"])
def test_scalar_conversion_of_many_elements(device, conv):
    t = lazyt.ones(2, 2, device=device)
    with pytest.raises(lazyt.ShapeError) as e:
        conv(t)
    assert mentions_shape(str(e.value), (2, 2)), str(e.value)
    with pytest.raises(lazyt.ShapeError):
        conv(lazyt.zeros(0, device=device))
    assert_usable(device)


def test_setitem_with_a_bad_value_leaves_the_tensor_usable(device):
    t = lazyt.ones(3, device=device)
    with pytest.raises(lazyt.ShapeError, match="setitem"):
        t[0] = lazyt.ones(2, device=device)
    np.testing.assert_array_equal(t.numpy(), np.ones(3, np.float32))
    t[0] = 2.0                                   # torch's in-place assignment
    np.testing.assert_array_equal(t.numpy(), [2.0, 1.0, 1.0])


def test_reduce_zero_size_dim(device):
    t = lazyt.zeros(0, 3, device=device)
    raises(lazyt.ShapeError, lambda: t.max(dim=0), op="max", shapes=((0, 3),))
    raises(lazyt.ShapeError, lambda: t.argmin(), op="argmin", shapes=((0, 3),))
    assert_usable(device)


def test_errors_in_a_chain_leave_earlier_results_intact(device):
    a = lazyt.arange(6, device=device).reshape(2, 3).float()
    b = a * 2
    with pytest.raises(lazyt.ShapeError):
        b @ a
    with pytest.raises(lazyt.ShapeError):
        b + lazyt.ones(4, device=device)
    np.testing.assert_array_equal(b.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    np.testing.assert_array_equal((b @ a.t()).numpy(), (np.arange(6.0).reshape(2, 3) * 2)
                                  @ np.arange(6.0).reshape(2, 3).T)
