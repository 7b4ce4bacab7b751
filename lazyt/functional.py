"""The Tensor API's operations: validation, torch-like argument handling and dtype promotion in
front of `Dispatch`. Each is a function form (`lazyt.relu(x)`, `lazyt.cat([...])`) and, where
torch has one, a Tensor method: `lazyt.tensor` installs every function registered here with
`@method` (`METHODS`), so `x.relu()` is `lazyt.relu(x)`.

Ops declared with a `method=`/`function=` name (`lazyt.ops`) get their function generated from
the declaration (`declared_frontend`), so a new op needs no code here. The functions work on
any `DispatchTensor` and return the representative input's result type (`Tensor`).
"""
from __future__ import annotations

import builtins
import inspect
import math
import operator
from typing import NamedTuple, Sequence

import numpy as np

from . import dtype as dt
from . import ops
from . import promotion as pr
from . import shape as sh
from .capture_state import STATE as _CAPTURE
from .data import generator, host_array
from .dispatch import Dispatch, DispatchTensor, common_device
from .dtype import DType
from .errors import (DivisionByZeroError, DTypeError, IndexOutOfRangeError, InvalidArgumentError,
                     ShapeError)
from .ops import FLOAT_UNARY, BinaryOp, ReduceOp, TensorMeta, UnaryOp
from .amp import AUTOCAST as _AUTOCAST, Policy as _Policy, call as _autocast

DT = DispatchTensor
_B = BinaryOp

#: name -> function whose first parameter is a tensor: installed as `Tensor.<name>`.
METHODS: dict = {}
#: The function forms `lazyt` exports.
__all__: list = []


def method(*extra_names: str, function: bool = True):
    """Register the decorated function as a Tensor method (also under `extra_names`) and,
    with `function=True`, as a function form `lazyt.<name>`."""
    def register(fn):
        for n in (fn.__name__, *extra_names):
            METHODS[n] = fn
        if function:
            __all__.append(fn.__name__)
        return fn
    return register


def function(fn):
    """Register the decorated function as a function form only."""
    __all__.append(fn.__name__)
    return fn


# ---------------------------------------------------------------------- shared machinery
def shape_args(args) -> tuple:
    """`f(2, 3)` and `f((2, 3))` both mean shape (2, 3); sizes must be integers."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    try:
        return tuple(operator.index(a) for a in args)
    except TypeError:
        raise DTypeError(f"expected a shape of ints, got {args!r}") from None


def as_tensor(value, like: DT, dtype: DType | None = None) -> DT:
    """`value` as a tensor on `like`'s device (tensors pass through unchanged)."""
    if isinstance(value, DT):
        return value
    return Dispatch.from_numpy(host_array(value, dtype), like.device, like._result_type)


def to(x: DT, dtype: DType) -> DT:
    """`x` in `dtype` (itself when it already is)."""
    return x if x.dtype is dtype else Dispatch.cast(x, dtype)


def floating(x: DT) -> DT:
    return x if x.dtype.is_float else Dispatch.cast(x, dt.DEFAULT_FLOAT)


def _rank1(op: str, x: DT) -> None:
    if x.ndim == 0:
        raise ShapeError(f"{op}: needs a tensor of rank >= 1, got a 0-d tensor")


def _is_operand(o) -> bool:
    return isinstance(o, (DT, int, float, np.generic, np.ndarray, list, tuple))


# ---------------------------------------------------------------------- elementwise
def unary(op: UnaryOp, x: DT) -> DT:
    """A unary op; integer input of a float-only op is computed in the default float."""
    dev = x.device
    fast = dev.backend.fast
    if fast is not None and _CAPTURE.session is None:   # a float tensor, untracked: record it
        out = fast.fast_unary(op, x.primitive)
        if out is not None:
            return x._result_type(out, dev)
    d = x.dtype
    if not d.is_float:
        if op in FLOAT_UNARY:
            x = Dispatch.cast(x, dt.DEFAULT_FLOAT)
        elif d is dt.bool_:
            if op is UnaryOp.ABS or op is UnaryOp.RELU:
                return x
            raise DTypeError(f"{op.value}: not supported for bool tensors (shape {x.shape})")
    return Dispatch.unary(op, x)


#: ops whose operands are never floats (logical and bitwise): checked even on the fast path
#: (string keys: hashing an Enum is slow)
_NOT_FLOAT = frozenset(op._value_ for op in pr.LOGICAL | pr.BITWISE)
_INT_DIVISIONS = (_B.FLOOR_DIV, _B.MOD)


def binary(op: BinaryOp, a, b) -> DT:
    """Promote dtypes (torch's rules, `promotion`), check broadcasting, dispatch."""
    if isinstance(a, DT):
        if isinstance(b, DT):
            dev = a.device
            if b.device is not dev:
                common_device(op.value, (a, b))
            be = dev.backend
            fast = be.fast
            if fast is not None and _CAPTURE.session is None:  # one float dtype, untracked
                out = fast.fast_binary(op, a.primitive, b.primitive)
                if out is not None:
                    return a._result_type(out, dev)
            pa, pb = a.primitive, b.primitive
            da, db = be.dtype_of(pa), be.dtype_of(pb)
            sa, sb = be.shape_of(pa), be.shape_of(pb)
            if sa != sb:
                sh.broadcast(op.value, sa, sb)
            d = da if da is db else pr.pair_dtype(da, not sa, db, not sb)
            if not d.is_float or op._value_ in _NOT_FLOAT:
                d = pr.operand_dtype(op, d)
            if da is not d:
                a = Dispatch.cast(a, d)
            if db is not d:
                b = Dispatch.cast(b, d)
            if op is _B.POW and not d.is_float and d is not dt.bool_:
                return _int_pow(a, b)
            return Dispatch.binary(op, a, b)
        t, s, t_first = a, b, True
    elif isinstance(b, DT):
        t, s, t_first = b, a, False
    else:
        raise DTypeError(f"{op.value}: expected a tensor operand")
    ts = type(s)
    if ts is float or ts is int:   # a float tensor and a Python number, untracked: record it
        dev = t.device
        fast = dev.backend.fast
        if fast is not None and _CAPTURE.session is None:
            p = t.primitive
            out = fast.fast_binary(op, p, s) if t_first else fast.fast_binary(op, s, p)
            if out is not None:
                return t._result_type(out, dev)
    dtt = t.device.backend.dtype_of(t.primitive)
    if (ts is float or ts is int) and dtt.is_float and op._value_ not in _NOT_FLOAT:
        pass  # the common case: a float tensor with a Python number keeps its dtype
    else:
        if isinstance(s, (np.ndarray, list, tuple)):
            if isinstance(s, tuple) and hasattr(s, "_fields"):
                raise InvalidArgumentError(
                    f"{op.value}: got a {type(s).__name__}{tuple(s._fields)!r} result as an "
                    f"operand, not a tensor (max and min along a dim give (values, indices): "
                    f"take .values, or use amax/amin)")
            s = as_tensor(s, t)
            return binary(op, t, s) if t_first else binary(op, s, t)
        if isinstance(s, np.generic):
            s = s.item()
        d = pr.operand_dtype(op, dt.promote_scalar(dtt, dt.scalar_kind(s)))
        if dtt is not d:
            t = Dispatch.cast(t, d)
        if d is dt.bool_:
            s = bool(s)
        elif not d.is_float:
            s = pr.int_scalar(op, s, d, t_first)
            if s == 0 and t_first and op in _INT_DIVISIONS:
                raise DivisionByZeroError(f"{op.value}: integer division of a {d.name} tensor "
                                          f"(shape {t.shape}) by zero")
            if op is _B.POW and not t_first:        # an integer number to tensor powers
                return _int_pow(as_tensor(s, t, d), t)
    return Dispatch.binary(op, t, s) if t_first else Dispatch.binary(op, s, t)


def _int_pow(base: DT, exp: DT) -> DT:
    """Integer tensor powers with torch's results for negative exponents (which the kernels'
    integer power does not take): 1 for a base of 1, +-1 for -1 (by the exponent's parity),
    0 for any other base."""
    if exp.dtype.name.startswith("uint"):
        return Dispatch.binary(_B.POW, base, exp)
    neg = binary(_B.LT, exp, 0)
    powered = Dispatch.binary(_B.POW, base, where(neg, 0, exp))
    odd = binary(_B.NE, binary(_B.BITAND, exp, 1), 0)
    small = where(binary(_B.EQ, base, 1), 1,
                  where(binary(_B.EQ, base, -1), where(odd, -1, 1), 0))
    return where(neg, to(small, powered.dtype), powered)


def bitwise(op: BinaryOp, a, b) -> DT:
    """`&` `|` `^` `<<` `>>`: bitwise ops of integer tensors (and `& | ^` of bools, where
    they are the logical ops); floats raise `DTypeError`."""
    if not isinstance(a, DT) and not isinstance(b, DT):
        raise DTypeError(f"{op.value}: expected a tensor operand")
    for x in (a, b):
        if isinstance(x, float) or (isinstance(x, DT) and x.dtype.is_float):
            raise DTypeError(f"{op.value}: needs integer or bool tensors, got "
                             f"{x.dtype.name if isinstance(x, DT) else 'a float number'}")
    return binary(op, a, b)


def logical(op: BinaryOp, a: DT, b) -> DT:
    """Logical and/or of bool tensors (`logical_and`, `logical_or` take any dtype, as
    truth values)."""
    for x in (a, b):
        d = x.dtype if isinstance(x, DT) else None
        if (d is not None and d is not dt.bool_) or (d is None and not isinstance(x, bool)):
            raise DTypeError(f"{op.value}: needs bool operands, got "
                             f"{d.name if d is not None else type(x).__name__} "
                             f"(shape {a.shape}); compare first (e.g. x > 0) or use .bool()")
    return binary(op, a, b)


def _binary_fn(name: str, op: BinaryOp, doc: str, frontend=None):
    """The function form `lazyt.<name>(a, b)` and the method `x.<name>(o)` (through
    `frontend`, `binary` by default)."""
    run = binary if frontend is None else frontend
    if op in (_B.ADD, _B.SUB):   # torch's `alpha=`: a + alpha * b
        def fn(a, b, *, alpha=1):
            return run(op, a, scaled(name, b, alpha, a if isinstance(a, DT) else b))

        def meth(self, o, *, alpha=1):
            return run(op, self, scaled(name, o, alpha, self))
    else:
        def fn(a, b):
            return run(op, a, b)

        def meth(self, o):
            return run(op, self, o)
    for f in (fn, meth):
        f.__name__ = f.__qualname__ = name
        f.__doc__ = doc
    METHODS[name] = meth
    __all__.append(name)
    return fn


def scaled(name: str, b, alpha, like: DT):
    """`alpha * b` for add/sub's `alpha=` (b itself when alpha is 1); a Python number stays a
    number (a weak scalar in promotion), a list or array becomes a tensor like `like`."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (int, float, np.number)):
        raise InvalidArgumentError(f"{name}: alpha must be a number, got {alpha!r}")
    if alpha == 1:
        return b
    if isinstance(b, (int, float, bool, np.number)):
        return b * alpha
    b = as_tensor(b, like)
    if not b.dtype.is_float and not float(alpha).is_integer():
        raise DTypeError(f"{name}: a float alpha={alpha!r} for an integer {b.dtype.name} "
                         "tensor (torch refuses it too)")
    return binary(_B.MUL, b, alpha)


add = _binary_fn("add", _B.ADD, "`a + alpha * b` with broadcasting and promotion.")
sub = _binary_fn("sub", _B.SUB, "`a - alpha * b`.")
mul = _binary_fn("mul", _B.MUL, "`a * b`.")
div = _binary_fn("div", _B.DIV, "`a / b` (true division: integers give float32).")
pow = _binary_fn("pow", _B.POW, "`a ** b`.")  # noqa: A001 - torch's name
maximum = _binary_fn("maximum", _B.MAXIMUM, "Elementwise maximum (NaN propagates).")
minimum = _binary_fn("minimum", _B.MINIMUM, "Elementwise minimum (NaN propagates).")
eq = _binary_fn("eq", _B.EQ, "`a == b` as bool.")
ne = _binary_fn("ne", _B.NE, "`a != b` as bool.")
lt = _binary_fn("lt", _B.LT, "`a < b` as bool.")
le = _binary_fn("le", _B.LE, "`a <= b` as bool.")
gt = _binary_fn("gt", _B.GT, "`a > b` as bool.")
ge = _binary_fn("ge", _B.GE, "`a >= b` as bool.")


def _bitwise_fn(name: str, op: BinaryOp, doc: str):
    return _binary_fn(name, op, doc, bitwise)


bitwise_and = _bitwise_fn("bitwise_and", _B.BITAND, "`a & b` of integer or bool tensors.")
bitwise_or = _bitwise_fn("bitwise_or", _B.BITOR, "`a | b` of integer or bool tensors.")
bitwise_xor = _bitwise_fn("bitwise_xor", _B.BITXOR, "`a ^ b` of integer or bool tensors.")
bitwise_left_shift = _bitwise_fn("bitwise_left_shift", _B.SHL,
                                 "`a << b` of integer tensors (amounts outside [0, bits) "
                                 "give 0, as numpy).")
bitwise_right_shift = _bitwise_fn("bitwise_right_shift", _B.SHR,
                                  "`a >> b` (arithmetic) of integer tensors.")


@method()
def bitwise_not(x: DT) -> DT:
    """`~x`: logical not of a bool tensor, `-x - 1` (every bit flipped) of an integer one."""
    if x.dtype is dt.bool_:
        return Dispatch.unary(UnaryOp.NOT, x)
    if x.dtype.is_float:
        raise DTypeError(f"bitwise_not: needs integer or bool tensors, got {x.dtype.name}")
    return binary(_B.BITXOR, x, -1 if x.dtype.is_signed else (1 << x.dtype.bits) - 1)


def _unary_fn(name: str, op: UnaryOp, doc: str, ints_unchanged: bool = False):
    def fn(x):
        if ints_unchanged and not x.dtype.is_float:
            return x
        return unary(op, x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return method()(fn)


neg = _unary_fn("neg", UnaryOp.NEG, "`-x`.")
abs = _unary_fn("abs", UnaryOp.ABS, "`|x|`.")  # noqa: A001 - torch's name
exp = _unary_fn("exp", UnaryOp.EXP, "`e ** x` (integers are computed in float32).")
log = _unary_fn("log", UnaryOp.LOG, "Natural logarithm (log 0 = -inf, log of < 0 = nan).")
sqrt = _unary_fn("sqrt", UnaryOp.SQRT, "Square root.")
rsqrt = _unary_fn("rsqrt", UnaryOp.RSQRT, "`1 / sqrt(x)`.")
tanh = _unary_fn("tanh", UnaryOp.TANH, "Hyperbolic tangent.")
sigmoid = _unary_fn("sigmoid", UnaryOp.SIGMOID, "`1 / (1 + exp(-x))`.")
sin = _unary_fn("sin", UnaryOp.SIN, "Sine.")
cos = _unary_fn("cos", UnaryOp.COS, "Cosine.")
erf = _unary_fn("erf", UnaryOp.ERF, "The error function.")
reciprocal = _unary_fn("reciprocal", UnaryOp.RECIPROCAL, "`1 / x`.")
_sign = _unary_fn("sign", UnaryOp.SIGN, "-1, 0 or 1.")


@method()
def sign(x: DT) -> DT:
    """-1, 0 or 1; NaN gives 0, as torch's (numpy's `np.sign` keeps NaN)."""
    if x.dtype is dt.bool_:
        return x
    s = unary(UnaryOp.SIGN, x)
    return where(binary(_B.NE, x, x), 0, s) if x.dtype.is_float else s
floor = _unary_fn("floor", UnaryOp.FLOOR, "Round down (integers unchanged).", True)
ceil = _unary_fn("ceil", UnaryOp.CEIL, "Round up (integers unchanged).", True)
relu = _unary_fn("relu", UnaryOp.RELU, "`max(x, 0)` (nan stays nan).")


@method()
def logical_not(x: DT) -> DT:
    """`~x` of `x` as bool."""
    return Dispatch.unary(UnaryOp.NOT, to(x, dt.bool_))


@method()
def square(x: DT) -> DT:
    """`x * x`; bool counts as int64, as torch's."""
    if x.dtype is dt.bool_:
        x = Dispatch.cast(x, dt.int64)
    return binary(_B.MUL, x, x)


@method("clip")
def clamp(x: DT, min=None, max=None) -> DT:  # noqa: A002 - torch's names
    """Limit values to [min, max] with torch's gradient. A number bound passes the gradient
    only strictly inside it (0 at the bound and at NaN); a tensor bound splits a tie 1/2 to x
    and 1/2 to the bound, as `maximum`/`minimum` do (a min above max gives max, whose
    gradient is 1). NaN stays NaN, and a NaN bound gives NaN (as torch's)."""
    if min is None and max is None:
        raise InvalidArgumentError(f"clamp: At least one of 'min' or 'max' must not be None "
                                   f"(tensor of shape {x.shape}, {x.dtype.name})")
    out = x
    if min is not None:
        out = _clamp_side(out, min, _B.GT, _B.MAXIMUM)
    if max is not None:
        out = _clamp_side(out, max, _B.LT, _B.MINIMUM)
    return out


def _clamp_side(x: DT, bound, inside: BinaryOp, extreme: BinaryOp) -> DT:
    """One side of `clamp`: `maximum`/`minimum` for a tensor bound; for a number, x where it
    lies strictly inside, else the bound (NaN where x is NaN), which takes no gradient."""
    if isinstance(bound, DT):
        return binary(extreme, x, bound)
    cond = binary(inside, x, bound)
    if x.dtype.is_float:
        bound = where(binary(_B.NE, x, x), math.nan, as_tensor(bound, x, x.dtype))
    return where(cond, x, bound)


_NO_OPERAND = object()


@function
def where(condition, x=_NO_OPERAND, y=_NO_OPERAND):
    """Elements of `x` where `condition` holds, else of `y` (tensors or scalars, broadcast).
    `where(condition)` alone is `nonzero(condition, as_tuple=True)`, as in torch."""
    if x is _NO_OPERAND and y is _NO_OPERAND:
        if not isinstance(condition, DT):
            raise DTypeError("where: where(condition) needs a tensor condition")
        return METHODS["nonzero"](condition, as_tuple=True)
    if x is _NO_OPERAND or y is _NO_OPERAND:
        raise InvalidArgumentError("where: pass both x and y, or neither (the nonzero form)")
    like = next((t for t in (condition, x, y) if isinstance(t, DT)), None)
    if like is None:
        raise DTypeError("where: expected at least one tensor argument")
    cond = as_tensor(condition, like)
    if cond.dtype is not dt.bool_:
        cond = Dispatch.cast(cond, dt.bool_)
    tx, ty = isinstance(x, DT), isinstance(y, DT)
    if isinstance(x, (np.ndarray, list, tuple)):
        x, tx = as_tensor(x, like), True
    if isinstance(y, (np.ndarray, list, tuple)):
        y, ty = as_tensor(y, like), True
    d = pr.where_dtype(x, y)
    shapes = [cond.shape] + [t.shape for t in (x, y) if isinstance(t, DT)]
    sh.broadcast("where", *shapes)
    common_device("where", [t for t in (cond, x, y) if isinstance(t, DT)])
    if not tx and not ty:  # two scalars: the result takes cond's shape and their dtype
        x, tx = as_tensor(x, like, dtype=d), True
    x = to(x, d) if tx else _where_scalar(x, d)
    y = to(y, d) if ty else _where_scalar(y, d)
    return Dispatch.where(cond, x, y)


def _where_scalar(s, d: DType):
    """A number operand of `where` as a value of the result dtype `d` (range checked)."""
    if d.is_int and isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)):
        return pr.fit_int("where", s, d)
    return d.np.type(s).item()


def _where_method(x: DT, condition, other) -> DT:
    """`x.where(condition, other)` is `where(condition, x, other)`."""
    return where(condition, x, other)


METHODS["where"] = _where_method


# ---------------------------------------------------------------------- reductions
def _reduce(op: ReduceOp, name: str, x: DT, dim, keepdim: bool) -> DT:
    keepdim = bool(keepdim)
    if x.ndim == 0:  # a 0-d tensor reduces to itself; dim 0 / -1 are accepted
        for d in (() if dim is None else (dim,) if isinstance(dim, int) else dim):
            sh.normalize_dim(name, d, 0)
        dims = ()
    else:
        dims = sh.normalize_dims(name, dim, x.ndim)
    if op in (ReduceOp.MAX, ReduceOp.MIN) and builtins.any(x.shape[d] == 0 for d in dims):
        raise ShapeError(f"{name}: cannot reduce a zero-size dim of shape {x.shape}")
    if op is ReduceOp.MEAN and not x.dtype.is_float:
        x = Dispatch.cast(x, dt.DEFAULT_FLOAT)
    if x.dtype is dt.bool_ and op in (ReduceOp.MAX, ReduceOp.MIN):
        return Dispatch.cast(Dispatch.reduce(op, Dispatch.cast(x, dt.int64), dims, keepdim),
                             dt.bool_)
    return Dispatch.reduce(op, x, dims, keepdim)


def _torch_dim(dim):
    """torch reads an empty `dim` (`()` or `[]`) as every dim."""
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


def _np_args(name: str, x: DT, dim, keepdim, np_kw: dict):
    """numpy's spellings of a reduction's arguments (`np.sum(t, axis=1)` calls
    `t.sum(axis=1, dtype=None, out=None)`): `axis` for `dim`, `keepdims` for `keepdim`,
    `dtype` casts first; `out` cannot be honoured (tensors are immutable). torch reads an
    empty `dim=()` as every dim; numpy's `axis=()` reduces none."""
    dim = _torch_dim(dim)
    if not np_kw:
        return x, dim, keepdim
    kw = dict(np_kw)
    axis = kw.pop("axis", None)
    if axis is not None:
        if dim is not None:
            raise InvalidArgumentError(f"{name}: got both dim={dim!r} and axis={axis!r}")
        dim = axis
    keepdims = kw.pop("keepdims", None)
    if keepdims is not None:
        keepdim = keepdims
    dtype = kw.pop("dtype", None)
    if kw.pop("out", None) is not None:
        raise InvalidArgumentError(f"{name}: out= is not supported: lazyt tensors are immutable; "
                                   "use the returned tensor")
    if kw:
        raise InvalidArgumentError(f"{name}: unexpected argument(s) "
                                   f"{', '.join(sorted(kw))}")
    if dtype is not None:
        x = to(x, dt.as_dtype(dtype))
    return x, dim, keepdim


def _as_requested(out: DT, np_kw: dict) -> DT:
    """A sum or product in the `dtype=` it was asked for (torch and numpy: an integer
    `dtype=` is the result's dtype, wrapping as it does; lazyt accumulates in int64)."""
    d = np_kw.get("dtype")
    return out if d is None else to(out, dt.as_dtype(d))


@method()
def sum(x: DT, dim=None, keepdim: bool = False, **np_kw) -> DT:  # noqa: A001
    """Sum over `dim` (int or tuple; all dims when None). Integers sum in int64 unless
    `dtype=` names another result dtype. numpy's `axis=`, `keepdims=` and `dtype=` are
    accepted (so `np.sum(t, axis=0)` works)."""
    x, dim, keepdim = _np_args("sum", x, dim, keepdim, np_kw)
    return _as_requested(_reduce(ReduceOp.SUM, "sum", x, dim, keepdim), np_kw)


@method()
def mean(x: DT, dim=None, keepdim: bool = False, **np_kw) -> DT:
    x, dim, keepdim = _np_args("mean", x, dim, keepdim, np_kw)
    return _reduce(ReduceOp.MEAN, "mean", x, dim, keepdim)


@method()
def prod(x: DT, dim=None, keepdim: bool = False, **np_kw) -> DT:
    x, dim, keepdim = _np_args("prod", x, dim, keepdim, np_kw)
    return _as_requested(_reduce(ReduceOp.PROD, "prod", x, dim, keepdim), np_kw)


class ValuesIndices(NamedTuple):
    """`(values, indices)`, as torch's max, min, sort, topk, mode, cummax and cummin return
    them (`v, i = x.max(1)` or `x.max(1).values`)."""
    values: DT
    indices: DT


def _extreme(name: str, op: ReduceOp, arg: ReduceOp, pair, x: DT, dim, keepdim: bool,
             np_kw: dict):
    """torch's three forms of max/min. `x.max()`: the value over every element. `x.max(dim)`
    with one int dim: `(values, indices)` along it. `x.max(other)` with a tensor: the
    elementwise `maximum`. `axis=` is torch's alias of `dim`. numpy's calls (`np.max(t,
    axis=0)` passes `out=`; `keepdims=`) reduce over an int or a tuple and give the values,
    as numpy does."""
    if isinstance(dim, DT):
        if keepdim or np_kw:
            raise InvalidArgumentError(f"{name}: the elementwise form {name}(input, other) "
                                       "takes no keepdim or other arguments")
        return pair(x, dim)
    numpy_form = "out" in np_kw or "keepdims" in np_kw   # np.max(t, axis=1) passes out=
    x, dim, keepdim = _np_args(name, x, dim, keepdim, np_kw)
    if dim is None or numpy_form:
        return _reduce(op, name, x, dim, keepdim)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise InvalidArgumentError(
            f"{name}: dim must be one int (the result is values and indices along it), got "
            f"{dim!r}; a{name}(x, dims) reduces over several dims and gives the values")
    dim = int(dim)
    indices = _arg(arg, name, x, dim, True)
    if x.ndim == 0:
        return ValuesIndices(x, Dispatch.reshape(indices, ()))
    # the values are read at the indices, so the gradient goes to the index returned (torch);
    # amax/amin share it between ties instead
    values = gather(x, dim, indices)
    if not keepdim:
        d = sh.normalize_dim(name, dim, x.ndim)
        out = x.shape[:d] + x.shape[d + 1:]
        values, indices = Dispatch.reshape(values, out), Dispatch.reshape(indices, out)
    return ValuesIndices(values, indices)


@method()
def max(x: DT, dim=None, keepdim: bool = False, **np_kw):  # noqa: A001
    """torch's max: `x.max()` is the largest element; `x.max(dim)` is `(values, indices)` along
    one dim (the first index of the largest value); `x.max(other)` is `maximum(x, other)`.
    `amax` reduces several dims at once and gives the values only."""
    return _extreme("max", ReduceOp.MAX, ReduceOp.ARGMAX, maximum, x, dim, keepdim, np_kw)


@method()
def min(x: DT, dim=None, keepdim: bool = False, **np_kw):  # noqa: A001
    """torch's min, as `max` (the first index of the smallest value)."""
    return _extreme("min", ReduceOp.MIN, ReduceOp.ARGMIN, minimum, x, dim, keepdim, np_kw)


@method()
def amax(x: DT, dim=(), keepdim: bool = False) -> DT:
    """The largest value over `dim` (an int or a tuple; every dim when empty or None)."""
    return _reduce(ReduceOp.MAX, "amax", x, _torch_dim(dim), keepdim)


@method()
def amin(x: DT, dim=(), keepdim: bool = False) -> DT:
    """The smallest value over `dim` (an int or a tuple; every dim when empty or None)."""
    return _reduce(ReduceOp.MIN, "amin", x, _torch_dim(dim), keepdim)


@method()
def any(x: DT, dim=None, keepdim: bool = False, **np_kw) -> DT:  # noqa: A001
    x, dim, keepdim = _np_args("any", x, dim, keepdim, np_kw)
    out = binary(_B.GT, sum(to(to(x, dt.bool_), dt.int32), dim, keepdim), 0)
    return to(out, dt.uint8) if x.dtype is dt.uint8 else out   # torch: uint8 stays uint8


@method()
def all(x: DT, dim=None, keepdim: bool = False, **np_kw) -> DT:  # noqa: A001
    x, dim, keepdim = _np_args("all", x, dim, keepdim, np_kw)
    out = binary(_B.EQ, sum(to(logical_not(x), dt.int32), dim, keepdim), 0)
    return to(out, dt.uint8) if x.dtype is dt.uint8 else out


def _arg(op: ReduceOp, name: str, x: DT, dim, keepdim: bool) -> DT:
    keepdim = bool(keepdim)
    shape = x.shape
    if dim is None:
        if sh.numel(shape) == 0:
            raise ShapeError(f"{name}: cannot reduce a zero-size dim of shape {shape}")
        out = Dispatch.reduce(op, Dispatch.reshape(x, (sh.numel(shape),)), (0,), False)
        return Dispatch.reshape(out, (1,) * len(shape)) if keepdim else out
    d = sh.normalize_dim(name, dim, x.ndim)
    if x.ndim == 0:
        return Dispatch.reduce(op, Dispatch.reshape(x, (1,)), (0,), False)
    if x.shape[d] == 0:
        raise ShapeError(f"{name}: cannot reduce a zero-size dim of shape {shape}")
    if x.dtype is dt.bool_:
        x = Dispatch.cast(x, dt.int32)
    return Dispatch.reduce(op, x, (d,), keepdim)


@method()
def argmax(x: DT, dim=None, keepdim: bool = False, **np_kw) -> DT:
    x, dim, keepdim = _np_args("argmax", x, dim, keepdim, np_kw)
    return _arg(ReduceOp.ARGMAX, "argmax", x, dim, keepdim)


@method()
def argmin(x: DT, dim=None, keepdim: bool = False, **np_kw) -> DT:
    x, dim, keepdim = _np_args("argmin", x, dim, keepdim, np_kw)
    return _arg(ReduceOp.ARGMIN, "argmin", x, dim, keepdim)


def _stat_positional(name: str, dim, args: tuple, keepdim, unbiased):
    """torch's positional forms `var(x, unbiased)` and `var(x, dim, unbiased, keepdim)`:
    (dim, keepdim, unbiased)."""
    if isinstance(dim, (bool, np.bool_)):   # var(x, False): the unbiased-only overload
        if args:
            raise InvalidArgumentError(f"{name}: var(input, unbiased) takes no more "
                                       f"positional arguments, got {args!r}")
        return None, keepdim, bool(dim)
    if len(args) > 2:
        raise InvalidArgumentError(f"{name}: expected (input, dim, unbiased, keepdim), got "
                                   f"{2 + len(args)} positional arguments")
    if args:
        if unbiased is not None:
            raise InvalidArgumentError(f"{name}: unbiased given both by position and by name")
        unbiased = args[0]
        if len(args) == 2:
            keepdim = args[1]
    return dim, keepdim, unbiased


@method()
def var(x: DT, dim=None, *args, keepdim: bool = False, correction=None, unbiased=None,
        **np_kw) -> DT:
    """Variance over `dim`; unbiased (`correction=1`) by default, as in torch and Burn
    (numpy's `np.var(t)` passes `ddof=0`, its own default, which is honoured). As in torch,
    the positional arguments after `dim` are `unbiased` then `keepdim` (`x.var(1, False)` is
    the biased variance), and `x.var(False)` alone means `unbiased=False`."""
    dim, keepdim, unbiased = _stat_positional("var", dim, args, keepdim, unbiased)
    if unbiased is not None and correction is not None:
        raise InvalidArgumentError("var: pass either unbiased or correction, not both")
    if "ddof" in np_kw:
        np_kw = dict(np_kw)
        correction = np_kw.pop("ddof")
    x, dim, keepdim = _np_args("var", x, dim, keepdim, np_kw)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    x = floating(x)
    if x.dtype is dt.float16:  # squared deviations overflow float16: accumulate wider
        return Dispatch.cast(var(Dispatch.cast(x, dt.float32), dim, keepdim=keepdim,
                                 correction=correction), dt.float16)
    if x.ndim == 0:   # a 0-d tensor: dim 0 / -1 name its one element, as torch allows
        for d in (() if dim is None else (dim,) if isinstance(dim, int) else dim):
            sh.normalize_dim("var", d, 0)
        return Dispatch.helper("var", Dispatch.reshape(x, (1,)), (0,), False, correction) \
            if not keepdim else Dispatch.reshape(
                Dispatch.helper("var", Dispatch.reshape(x, (1,)), (0,), False, correction), ())
    dims = sh.normalize_dims("var", dim, x.ndim)
    return Dispatch.helper("var", x, dims, keepdim, correction)


@method()
def std(x: DT, dim=None, *args, keepdim: bool = False, correction=None, unbiased=None,
        **np_kw) -> DT:
    """The square root of `var`, with its arguments. Where the values do not spread (var 0)
    the gradient is 0, as torch's, not 0 * inf = NaN."""
    dim, keepdim, unbiased = _stat_positional("std", dim, args, keepdim, unbiased)
    return std_of_var(var(x, dim, keepdim=keepdim, correction=correction, unbiased=unbiased,
                          **np_kw))


def std_of_var(v: DT) -> DT:
    """`sqrt(v)` with gradient 0 where `v` is 0 (torch's std backward); NaN stays NaN."""
    spread = binary(_B.NE, v, 0)
    return where(spread, unary(UnaryOp.SQRT, where(spread, v, 1)), 0)


# ---------------------------------------------------------------------- movement
@method("view")
def reshape(x: DT, *shape) -> DT:
    """The same elements in a new shape (one -1 is inferred)."""
    new = sh.reshape(x.shape, shape_args(shape))
    return x if new == x.shape else Dispatch.reshape(x, new)


@method()
def flatten(x: DT, start_dim: int = 0, end_dim: int = -1) -> DT:
    s = x.shape
    if not s:
        return reshape(x, 1)
    a = sh.normalize_dim("flatten", start_dim, len(s))
    b = sh.normalize_dim("flatten", end_dim, len(s))
    if a > b:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(x, s[:a] + (sh.numel(s[a:b + 1]),) + s[b + 1:])


@method()
def permute(x: DT, *dims) -> DT:
    axes = sh.permute(x.shape, shape_args(dims))
    return x if axes == tuple(range(len(axes))) else Dispatch.permute(x, axes)


@method("swapaxes")
def transpose(x: DT, dim0: int, dim1: int) -> DT:
    nd = x.ndim
    a = sh.normalize_dim("transpose", dim0, nd)
    b = sh.normalize_dim("transpose", dim1, nd)
    if a == b:
        return x
    axes = list(range(nd))
    axes[a], axes[b] = axes[b], axes[a]
    return Dispatch.permute(x, tuple(axes))


@method(function=False)
def t(x: DT) -> DT:
    if x.ndim > 2:
        raise ShapeError(f"t: expects a tensor of rank <= 2, got shape {x.shape}; "
                         "use transpose(dim0, dim1)")
    return x if x.ndim < 2 else transpose(x, 0, 1)


def T(x: DT) -> DT:  # noqa: N802 - torch's name (a property)
    return permute(x, tuple(reversed(range(x.ndim))))


def mT(x: DT) -> DT:  # noqa: N802 - torch's name (a property)
    return transpose(x, -2, -1)


@method("broadcast_to")
def expand(x: DT, *sizes) -> DT:
    target = sh.expand(x.shape, shape_args(sizes))
    if target == x.shape:
        return x
    lead = len(target) - x.ndim
    if lead:
        x = Dispatch.reshape(x, (1,) * lead + x.shape)
    return Dispatch.expand(x, target)


@method(function=False)
def expand_as(x: DT, other: DT) -> DT:
    return expand(x, other.shape)


@method()
def squeeze(x: DT, dim=None) -> DT:
    s = x.shape
    if not s:  # a 0-d tensor squeezes to itself (dim 0 / -1 accepted)
        for d in (() if dim is None else (dim,) if isinstance(dim, int) else dim):
            sh.normalize_dim("squeeze", d, 0)
        return x
    if dim is None:
        dims = {i for i, d in enumerate(s) if d == 1}
    else:
        dims = {d for d in sh.normalize_dims("squeeze", dim, len(s)) if s[d] == 1}
    if not dims:
        return x
    return Dispatch.reshape(x, tuple(d for i, d in enumerate(s) if i not in dims))


@method()
def unsqueeze(x: DT, dim: int) -> DT:
    s = x.shape
    d = sh.normalize_dim("unsqueeze", dim, len(s), extra=1)
    return Dispatch.reshape(x, s[:d] + (1,) + s[d:])


@method()
def chunk(x: DT, chunks: int, dim: int = 0) -> tuple:
    if not isinstance(chunks, int) or chunks <= 0:
        raise ShapeError(f"chunk: chunks must be a positive int, got {chunks!r}")
    _rank1("chunk", x)
    d = sh.normalize_dim("chunk", dim, x.ndim)
    n = x.shape[d]
    if n == 0:  # as torch: `chunks` empty pieces, not one
        return split(x, [0] * chunks, d)
    size = builtins.max(1, math.ceil(n / chunks))
    return split(x, size, d)


@method()
def split(x: DT, split_size_or_sections, dim: int = 0) -> tuple:
    _rank1("split", x)
    d = sh.normalize_dim("split", dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0:
            raise ShapeError(f"split: split size must be positive, got {size}")
        sizes = [builtins.min(size, n - i) for i in range(0, n, size)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n or builtins.any(s < 0 for s in sizes):
            raise ShapeError(f"split: sections {sizes} do not add up to dim {d} of "
                             f"shape {x.shape}")
    out, start = [], 0
    for size in sizes:
        out.append(_narrow(x, d, start, start + size))
        start += size
    return tuple(out)


@method(function=False)
def narrow(x: DT, dim: int, start: int, length: int) -> DT:
    d = sh.normalize_dim("narrow", dim, x.ndim)
    n = x.shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n) or length < 0 or start + length > n:
        raise IndexOutOfRangeError(f"narrow: [{start}, {start + length}) is out of range "
                                   f"for dim {d} of size {n}")
    return _narrow(x, d, start, start + length)


def _narrow(x: DT, d: int, start: int, stop: int) -> DT:
    s = x.shape
    if start == 0 and stop == s[d]:
        return x
    slices = tuple((start, stop, 1) if i == d else (0, n, 1) for i, n in enumerate(s))
    return Dispatch.slice(x, slices)


def _tensor_list(op: str, tensors) -> list:
    """`tensors` (a sequence of tensors) as a list; `DTypeError` naming `op` and the first
    thing that is not a tensor otherwise (a lone tensor too, as torch)."""
    if isinstance(tensors, DT) or not hasattr(tensors, "__iter__"):
        raise DTypeError(f"{op}: expected a sequence of tensors, got {type(tensors).__name__}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, DT):
            raise DTypeError(f"{op}: expected a sequence of tensors, got "
                             f"{type(t).__name__} at position {i}")
    return tensors


@function
def cat(tensors: Sequence[DT], dim: int = 0) -> DT:
    """Join tensors of one rank along `dim` (dtypes promote). As in torch, a 1-D tensor of
    size 0 may join tensors of any rank: it adds nothing (its dtype still promotes)."""
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    common_device("cat", tensors)
    legacy = [t for t in tensors if t.shape == (0,)]
    if legacy and len(legacy) < len(tensors):
        kept = [t for t in tensors if t.shape != (0,)]
        dtype = tensors[0].dtype
        for t in tensors[1:]:
            dtype = dt.promote(dtype, t.dtype)
        return cat([to(t, dtype) for t in kept], dim)
    nd = tensors[0].ndim
    if nd == 0:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    if builtins.any(t.ndim != nd for t in tensors):
        raise ShapeError(f"cat: tensors have different ranks: {[t.shape for t in tensors]}")
    d = sh.normalize_dim("cat", dim, nd)
    sh.cat([t.shape for t in tensors], d)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = dt.promote(dtype, t.dtype)
    tensors = [to(t, dtype) for t in tensors]
    if len(tensors) == 1:
        return tensors[0]
    return Dispatch.cat(tensors, d)


@function
def stack(tensors: Sequence[DT], dim: int = 0) -> DT:
    """Join tensors of one shape along a new dim."""
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    first = tensors[0].shape
    if builtins.any(t.shape != first for t in tensors):
        raise ShapeError(f"stack: all tensors need the same shape, got "
                         f"{[t.shape for t in tensors]}")
    common_device("stack", tensors)
    d = sh.normalize_dim("stack", dim, len(first), extra=1)
    return cat([unsqueeze(t, d) for t in tensors], d)


# ---------------------------------------------------------------------- matmul
@function
def matmul(a, b) -> DT:
    """numpy matmul semantics: 1-D operands are promoted and squeezed, batch dims broadcast."""
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, matmul, a, b)
    if not isinstance(a, DT):
        a = as_tensor(a, b)
    if not isinstance(b, DT):
        b = as_tensor(b, a)
    common_device("matmul", (a, b))
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        raise ShapeError(f"matmul: operands must have rank >= 1, got {sa} and {sb}")
    d = dt.promote(a.dtype, b.dtype) if a.dtype is not b.dtype else a.dtype
    if d is dt.bool_:
        raise DTypeError(f"matmul: not supported for bool tensors (shapes {sa} and {sb})")
    if d in dt.SMALL_INTS:
        # uint8/int8/int16 products are int32 products wrapped back (numpy's and torch's
        # results: both wrap modulo 2^bits), so kernel backends need no 8/16-bit matmul
        return to(matmul(to(a, dt.int32), to(b, dt.int32)), d)
    a, b = to(a, d), to(b, d)
    squeeze_first = len(sa) == 1
    squeeze_last = len(sb) == 1
    if squeeze_first:
        a = Dispatch.reshape(a, (1,) + sa)
    if squeeze_last:
        b = Dispatch.reshape(b, sb + (1,))
    sa, sb = a.shape, b.shape
    try:
        out_shape = sh.matmul(sa, sb)
    except ShapeError:
        raise ShapeError(f"matmul: cannot multiply shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)} (contraction {sa[-1]} vs {sb[-2]}, or batch dims "
                         "that do not broadcast)") from None
    if len(sa) < len(sb):
        a = Dispatch.reshape(a, (1,) * (len(sb) - len(sa)) + sa)
    elif len(sb) < len(sa):
        b = Dispatch.reshape(b, (1,) * (len(sa) - len(sb)) + sb)
    out = Dispatch.matmul(a, b)
    if squeeze_first or squeeze_last:
        final = out_shape[:-2] + (() if squeeze_first else (out_shape[-2],)) \
            + (() if squeeze_last else (out_shape[-1],))
        out = Dispatch.reshape(out, final)
    return out


# ---------------------------------------------------------------------- gather family
def refuse_byte_index(op: str, index) -> None:
    """`DTypeError` for a uint8 tensor (or array) used as `x[index]`: torch reads it as a
    boolean mask (deprecated), numpy as integer positions; lazyt asks which one is meant."""
    d = getattr(index, "dtype", None)
    if d is dt.uint8 or (isinstance(d, np.dtype) and d == np.uint8):
        raise DTypeError(f"{op}: a uint8 index tensor is ambiguous (torch reads it as a "
                         f"boolean mask, numpy as positions); shape {tuple(index.shape)}: "
                         "use index.bool() for a mask or index.long() for positions")


def index_tensor(op: str, index, like: DT) -> DT:
    """`index` as an int64 tensor on `like`'s device."""
    idx = as_tensor(index, like)
    if idx.dtype.is_float or idx.dtype is dt.bool_:
        raise DTypeError(f"{op}: index must be an integer tensor, got {idx.dtype.name}")
    return to(idx, dt.int64)


def check_known_index(op: str, idx: DT, size: int, dim: int, low: int = 0) -> None:
    """Raise IndexOutOfRangeError now when `idx`'s values are already on the host (ids made
    from data, not by pending ops) and one is outside [low, size) (`low=-size` where negative
    ids count from the end). The kernels check too, but
    only when the pending ops run: by then an optimizer step may have recorded an update of
    the table from the bad lookup, leaving the parameter without a value. Not while
    `lazyt.compile` records (a replay would not repeat the check; the kernel's does)."""
    if _CAPTURE.session is not None:
        return
    a = Dispatch.host_value(idx)
    if a is None or a.size == 0 or a.dtype.kind not in "iu":
        return
    lo, hi = a.min(), a.max()
    if lo < low or hi >= size:
        bad = lo if lo < low else hi
        raise IndexOutOfRangeError(f"{op}: index {int(bad)} is out of range for dim {dim} of "
                                   f"size {size} (index shape {idx.shape})")


def _line(op: str, idx: DT) -> DT:
    if idx.ndim > 1:
        raise ShapeError(f"{op}: index must be 1-D, got shape {idx.shape}")
    return Dispatch.reshape(idx, (1,)) if idx.ndim == 0 else idx


@method()
def index_select(x: DT, dim: int, index) -> DT:
    """The slices of `x` along `dim` at the positions in the 1-D `index`."""
    _rank1("index_select", x)
    d = sh.normalize_dim("index_select", dim, x.ndim)
    idx = index_tensor("index_select", index, x)
    check_known_index("index_select", idx, x.shape[d], d)
    return Dispatch.helper("index_select", x, d, _line("index_select", idx))


@method()
def gather(x: DT, dim: int, index, *, sparse_grad: bool = False) -> DT:
    """torch.gather: `out[i][j] = x[i][index[i][j]]` for dim 1. `sparse_grad` is accepted
    for torch's signature; the gradient is dense either way."""
    _rank1("gather", x)
    d = sh.normalize_dim("gather", dim, x.ndim)
    idx = index_tensor("gather", index, x)
    ops.lookup("gather").meta(x, d, idx)  # the op's one shape rule, with the user's names
    check_known_index("gather", idx, x.shape[d], d)
    return Dispatch.gather(x, d, idx)


@method()
def index_add(x: DT, dim: int, index, source, *, alpha=1) -> DT:
    """A copy of `x` with the slices of `source` added at the rows `index` along `dim`."""
    _rank1("index_add", x)
    d = sh.normalize_dim("index_add", dim, x.ndim)
    idx = index_tensor("index_add", index, x)
    check_known_index("index_add", idx, x.shape[d], d)
    idx = _line("index_add", idx)
    src = as_tensor(source, x)
    d_out = dt.promote(x.dtype, src.dtype)
    # the op's one shape rule first, as the inputs will be once promoted
    ops.lookup("index_add").meta(TensorMeta(x.shape, d_out), d, idx,
                                 TensorMeta(src.shape, d_out))
    if alpha != 1:
        src = binary(_B.MUL, src, alpha)
    d_out = dt.promote(x.dtype, src.dtype)
    x, src = to(x, d_out), to(src, d_out)
    return Dispatch.helper("index_add", x, d, idx, src)


@method()
def scatter_add(x: DT, dim: int, index, src) -> DT:
    """A copy of `x` with `src` added at `index` along `dim` (torch.scatter_add)."""
    _rank1("scatter_add", x)
    d = sh.normalize_dim("scatter_add", dim, x.ndim)
    idx = index_tensor("scatter_add", index, x)
    src = as_tensor(src, x)
    d_out = dt.promote(x.dtype, src.dtype)
    ops.lookup("scatter_add").meta(TensorMeta(x.shape, d_out), d, idx,
                                   TensorMeta(src.shape, d_out))
    check_known_index("scatter_add", idx, x.shape[d], d)
    x, src = to(x, d_out), to(src, d_out)
    return Dispatch.scatter_add(x, d, idx, src)


# ---------------------------------------------------------------------- attention
@function
def scaled_dot_product_attention(query: DT, key: DT, value: DT, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> DT:
    """`softmax(query @ key^T * scale + mask) @ value`, as torch's function of this name.

    query [..., L, E], key [..., S, E] and value [..., S, Ev] share one float dtype; their
    batch dims broadcast. `attn_mask` broadcasts to the scores [..., L, S]: a bool mask keeps
    the keys where it is True, a float mask (query's dtype) is added. `is_causal` lets query
    i see keys 0..i. `scale` defaults to 1 / sqrt(E). A query that sees no key gives zeros.
    `dropout_p` drops attention weights (always, as torch: pass 0.0 outside training).
    `enable_gqa`: key and value may have fewer heads (dim -3) than query, a divisor of its
    count; each key/value head serves that many consecutive query heads (grouped-query
    attention). float16 is computed in float32 and rounded once.

    One composite (`attention`): the numpy backend computes a few heads at a time in cache
    instead of the whole batch's scores; gradients reach all inputs and a float mask.
    """
    if _AUTOCAST.get() is not None:
        return _autocast(_Policy.LOWER, scaled_dot_product_attention, query, key, value,
                         attn_mask, dropout_p, is_causal, scale, enable_gqa)
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, DT):
            raise DTypeError(f"scaled_dot_product_attention: {name} must be a Tensor, got "
                             f"{type(t).__name__}")
        if not t.dtype.is_float:
            raise DTypeError(f"scaled_dot_product_attention: {name} must be floating point, "
                             f"got {t.dtype.name}")
        if t.ndim < 2:
            raise ShapeError(f"scaled_dot_product_attention: {name} needs rank >= 2 "
                             f"([..., seq, features]), got shape {t.shape}")
    common_device("scaled_dot_product_attention", (query, key, value))
    if not (query.dtype is key.dtype is value.dtype):
        raise DTypeError("scaled_dot_product_attention: query, key and value must have one "
                         f"dtype, got {query.dtype.name}, {key.dtype.name}, {value.dtype.name}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError("scaled_dot_product_attention: expected query [..., L, E], key "
                         f"[..., S, E] and value [..., S, Ev], got {query.shape}, {key.shape} "
                         f"and {value.shape}")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3 and \
            key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if value.shape[-3] != hk or hk == 0 or hq % hk:
            raise ShapeError(f"scaled_dot_product_attention: with enable_gqa the query heads "
                             f"({hq}) must be a multiple of the key/value heads, got key "
                             f"{key.shape} and value {value.shape}")
        key, value = (_repeat_heads(t, hq // hk) for t in (key, value))
    batch = sh.broadcast("scaled_dot_product_attention", query.shape[:-2], key.shape[:-2])
    batch = sh.broadcast("scaled_dot_product_attention", batch, value.shape[:-2])
    n_q, n_k, e = query.shape[-2], key.shape[-2], query.shape[-1]
    scores = batch + (n_q, n_k)
    nd = len(scores)
    if not 0.0 <= dropout_p <= 1.0:
        raise InvalidArgumentError(f"scaled_dot_product_attention: dropout_p must be in "
                                   f"[0, 1], got {dropout_p}")
    if scale is None:
        scale = 1.0 / math.sqrt(e) if e else 1.0
    mask = None
    if is_causal:
        if attn_mask is not None:
            raise InvalidArgumentError("scaled_dot_product_attention: pass attn_mask or "
                                       "is_causal=True, not both")
        attn_mask = as_tensor(np.tril(np.ones((n_q, n_k), bool)), query)
    if attn_mask is not None:
        if not isinstance(attn_mask, DT):
            raise DTypeError("scaled_dot_product_attention: attn_mask must be a Tensor, got "
                             f"{type(attn_mask).__name__}")
        common_device("scaled_dot_product_attention", (query, attn_mask))
        if attn_mask.dtype is dt.bool_:
            mask = to(where(attn_mask, 0.0, float("-inf")), query.dtype)
        elif attn_mask.dtype is query.dtype or attn_mask.dtype is dt.float32:
            mask = to(attn_mask, query.dtype)  # as torch: float32 masks go with any query
        else:
            raise DTypeError("scaled_dot_product_attention: attn_mask must be bool, float32 "
                             f"or the query's dtype {query.dtype.name}, got "
                             f"{attn_mask.dtype.name}")
        try:
            fits = sh.broadcast("attn_mask", mask.shape, scores) == scores
        except ShapeError:
            fits = False
        if not fits:
            raise ShapeError(f"scaled_dot_product_attention: attn_mask of shape "
                             f"{attn_mask.shape} does not broadcast to the scores {scores}")
        mask = _with_rank(mask, nd)
    # one batch shape for all three (views), so every backend sees matching batch dims
    q, k, v = (_with_rank(t, nd) for t in (query, key, value))
    q, k, v = (t if t.shape[:-2] == batch else expand(t, batch + t.shape[-2:])
               for t in (q, k, v))
    if 0 in scores or 0 in value.shape[-1:]:
        # nothing to normalize: zeros, still connected to the inputs (zero gradients)
        return matmul(matmul(q, mT(k)), v)
    if dropout_p == 0.0:
        return Dispatch.helper("attention", q, k, v, mask, float(scale))
    # dropout needs the weights themselves: the composite's steps, written out
    w = binary(_B.MUL, matmul(q, mT(k)), scale)
    if mask is not None:
        dead = binary(_B.EQ, amax(mask, -1, keepdim=True), float("-inf"))
        w = softmax(where(dead, 0.0, binary(_B.ADD, w, mask)), -1)
        w = where(dead, 0.0, w)
    else:
        w = softmax(w, -1)
    noise = Dispatch.from_numpy(generator().random(w.shape).astype(w.dtype.np), w.device,
                                w._result_type)
    keep = binary(_B.GE, noise, dropout_p)
    w = where(keep, binary(_B.MUL, w, 1.0 / (1.0 - dropout_p)), 0.0) if dropout_p < 1.0 \
        else binary(_B.MUL, w, 0.0)
    return matmul(w, v)


def _repeat_heads(t: DT, groups: int) -> DT:
    """[..., h, S, E] -> [..., h * groups, S, E], each head repeated `groups` times in a row."""
    lead, (h, n, e) = t.shape[:-3], t.shape[-3:]
    t = expand(unsqueeze(t, t.ndim - 2), *lead, h, groups, n, e)
    return reshape(t, *lead, h * groups, n, e)


def _matmul_method(x: DT, other) -> DT:
    """`x @ other` (numpy's matmul rules)."""
    return matmul(x, other)


METHODS["matmul"] = _matmul_method


def _with_rank(t: DT, nd: int) -> DT:
    return t if t.ndim == nd else Dispatch.reshape(t, (1,) * (nd - t.ndim) + t.shape)


# ---------------------------------------------------------------------- declared ops
def declared_frontend(op: ops.OpDef):
    """The function form of a declared op with a user name: its declared frontend (called
    with the Dispatch entry first) or, without one, the entry itself."""
    entry = getattr(Dispatch, op.name) if not op.is_composite else \
        (lambda *a, **k: Dispatch.helper(op.name, *a, **k))
    if op.frontend is None:
        return entry
    front = op.frontend

    def fn(*args, **kwargs):
        return front(entry, *args, **kwargs)
    fn.__doc__ = front.__doc__ or op.doc
    sig = inspect.signature(front)
    fn.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])
    return fn


def _install(op: ops.OpDef) -> None:
    if op.method is None and op.function is None:
        return
    fn = declared_frontend(op)
    if op.method is not None:
        METHODS[op.method] = fn
    if op.function is not None:
        fn.__name__ = fn.__qualname__ = op.function
        globals()[op.function] = fn
        if op.function not in __all__:
            __all__.append(op.function)


ops.subscribe(_install)
