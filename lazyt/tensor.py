"""`lazyt.Tensor`: the user-facing value. Methods validate and promote, then call `Dispatch`."""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from . import dtype as dt
from . import shape as sh
from .device import device as _device
from .dispatch import Dispatch, DispatchTensor, common_device
from .dtype import DType
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from .ops import FLOAT_UNARY, BinaryOp, ReduceOp, UnaryOp

_B = BinaryOp
_BOOL_FORBIDDEN = frozenset({_B.SUB, _B.POW, _B.FLOOR_DIV, _B.MOD})
_LOGICAL = frozenset({_B.AND, _B.OR})


def _shape_args(args) -> tuple:
    """`f(2, 3)` and `f((2, 3))` both mean shape (2, 3); sizes must be integers."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    try:
        return tuple(operator.index(a) for a in args)
    except TypeError:
        raise DTypeError(f"expected a shape of ints, got {args!r}") from None


class Tensor(DispatchTensor):
    """An n-dimensional array on a device. Ops may run lazily; reads (`numpy()`, `item()`,
    printing) execute what is pending. Tensors are immutable."""

    __slots__ = ()
    __array_ufunc__ = None  # `ndarray + tensor` is computed by lazyt
    __hash__ = object.__hash__

    # ------------------------------------------------------------------ dispatch boundary
    def into_dispatch(self) -> DispatchTensor:
        return DispatchTensor(self.primitive, self.device)

    @classmethod
    def from_dispatch(cls, value: DispatchTensor) -> "Tensor":
        return cls(value.primitive, value.device)

    # ------------------------------------------------------------------ info
    @property
    def shape(self) -> tuple:
        return self.device.backend.shape_of(self.primitive)

    @property
    def dtype(self) -> DType:
        return self.device.backend.dtype_of(self.primitive)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return sh.numel(self.shape)

    def size(self, dim: int | None = None):
        s = self.shape
        return s if dim is None else s[sh.normalize_dim("size", dim, len(s))]

    def __len__(self) -> int:
        s = self.shape
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # ------------------------------------------------------------------ reads
    def numpy(self) -> np.ndarray:
        """The values as a read-only numpy array (executes pending work)."""
        arr = Dispatch.to_numpy(self)
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
        return arr

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def item(self):
        n = self.numel()
        if n != 1:
            raise ShapeError(f"item: only a one-element tensor converts to a Python scalar, "
                             f"got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_float:
            raise DTypeError(f"__index__: only integer tensors can be used as an index, "
                             f"got {self.dtype.name}")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise ShapeError(f"bool: the truth value of a tensor of shape {self.shape} is "
                             "ambiguous; use .any() or .all()")
        return bool(self.item())

    def __repr__(self) -> str:
        try:
            body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        except Exception as e:  # a failed lazy op must not break printing the error
            body = f"<error: {e}>"
        return f"tensor({body}, shape={self.shape}, dtype={self.dtype.name}, device={self.device})"

    def __setitem__(self, key, value):
        raise TypeError("lazyt tensors are immutable; build a new tensor (e.g. with "
                        "lazyt.where or index_add) instead of assigning into one")

    # ------------------------------------------------------------------ conversion
    def to(self, *args, dtype=None, device=None) -> "Tensor":
        """`.to(dtype)`, `.to(device)` or both; returns self when nothing changes."""
        for a in args:
            if isinstance(a, (DType, type, np.dtype)) or (isinstance(a, str) and _is_dtype_name(a)):
                dtype = a
            else:
                device = a
        out = self
        if device is not None:
            dev = _device(device)
            if dev is not out.device:
                out = Dispatch.to_device(out, dev)
        if dtype is not None:
            d = dt.as_dtype(dtype)
            if d is not out.dtype:
                out = Dispatch.cast(out, d)
        return out

    def float(self):
        return self.to(dt.float32)

    def double(self):
        return self.to(dt.float64)

    def half(self):
        return self.to(dt.float16)

    def int(self):
        return self.to(dt.int32)

    def long(self):
        return self.to(dt.int64)

    def bool(self):
        return self.to(dt.bool_)

    def type_as(self, other: "Tensor"):
        return self.to(other.dtype)

    def contiguous(self):
        return Dispatch.contiguous(self)

    def clone(self):
        return Dispatch.contiguous(self)

    # ------------------------------------------------------------------ autodiff hooks
    def require_grad(self) -> "Tensor":
        """Track this tensor as a leaf of the autodiff graph (in place; returns self)."""
        if not self.dtype.is_float:
            from .errors import GradError
            raise GradError(f"require_grad: only float tensors can require grad, "
                            f"got {self.dtype.name}")
        self.primitive = self.device.backend.require_grad(self.primitive)
        return self

    requires_grad_ = require_grad

    @property
    def is_tracked(self) -> bool:
        return self.device.backend.is_tracked(self.primitive)

    requires_grad = is_tracked

    def detach(self) -> "Tensor":
        return Tensor(self.device.backend.detach(self.primitive), self.device)

    def backward(self, grad: "Tensor | None" = None):
        """Backpropagate from this tensor; returns the `Gradients` of the graph's leaves."""
        g = None
        if grad is not None:
            grad = _as_tensor(grad, self)
            if grad.shape != self.shape:
                raise ShapeError(f"backward: seed gradient shape {grad.shape} differs from the "
                                 f"tensor's shape {self.shape}")
            g = grad.to(self.dtype).primitive
        return self.device.backend.backward(self.primitive, g)

    def grad(self, grads) -> "Tensor | None":
        """This leaf's gradient in `grads` (None when it has none)."""
        g = self.device.backend.grad(self.primitive, grads)
        return None if g is None else Tensor(g, self.device)

    # ------------------------------------------------------------------ elementwise
    def __add__(self, o):
        return _binary(_B.ADD, self, o)

    def __radd__(self, o):
        return _binary(_B.ADD, o, self)

    def __sub__(self, o):
        return _binary(_B.SUB, self, o)

    def __rsub__(self, o):
        return _binary(_B.SUB, o, self)

    def __mul__(self, o):
        return _binary(_B.MUL, self, o)

    def __rmul__(self, o):
        return _binary(_B.MUL, o, self)

    def __truediv__(self, o):
        return _binary(_B.DIV, self, o)

    def __rtruediv__(self, o):
        return _binary(_B.DIV, o, self)

    def __floordiv__(self, o):
        return _binary(_B.FLOOR_DIV, self, o)

    def __rfloordiv__(self, o):
        return _binary(_B.FLOOR_DIV, o, self)

    def __mod__(self, o):
        return _binary(_B.MOD, self, o)

    def __rmod__(self, o):
        return _binary(_B.MOD, o, self)

    def __pow__(self, o):
        return _binary(_B.POW, self, o)

    def __rpow__(self, o):
        return _binary(_B.POW, o, self)

    def __eq__(self, o):  # type: ignore[override]
        if not _is_operand(o):
            return NotImplemented  # `t == None` is False, as for any object
        return _binary(_B.EQ, self, o)

    def __ne__(self, o):  # type: ignore[override]
        if not _is_operand(o):
            return NotImplemented
        return _binary(_B.NE, self, o)

    def __lt__(self, o):
        return _binary(_B.LT, self, o)

    def __le__(self, o):
        return _binary(_B.LE, self, o)

    def __gt__(self, o):
        return _binary(_B.GT, self, o)

    def __ge__(self, o):
        return _binary(_B.GE, self, o)

    def __and__(self, o):
        return _logical(_B.AND, self, o)

    __rand__ = __and__

    def __or__(self, o):
        return _logical(_B.OR, self, o)

    __ror__ = __or__

    def __invert__(self):
        if self.dtype is not dt.bool_:
            raise DTypeError(f"invert: only bool tensors support ~, got {self.dtype.name}")
        return Dispatch.unary(UnaryOp.NOT, self)

    def __neg__(self):
        return _unary(UnaryOp.NEG, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _unary(UnaryOp.ABS, self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(_as_tensor(o, self), self)

    def add(self, o):
        return _binary(_B.ADD, self, o)

    def sub(self, o):
        return _binary(_B.SUB, self, o)

    def mul(self, o):
        return _binary(_B.MUL, self, o)

    def div(self, o):
        return _binary(_B.DIV, self, o)

    def pow(self, o):
        return _binary(_B.POW, self, o)

    def eq(self, o):
        return _binary(_B.EQ, self, o)

    def ne(self, o):
        return _binary(_B.NE, self, o)

    def lt(self, o):
        return _binary(_B.LT, self, o)

    def le(self, o):
        return _binary(_B.LE, self, o)

    def gt(self, o):
        return _binary(_B.GT, self, o)

    def ge(self, o):
        return _binary(_B.GE, self, o)

    def maximum(self, o):
        return _binary(_B.MAXIMUM, self, o)

    def minimum(self, o):
        return _binary(_B.MINIMUM, self, o)

    def logical_not(self):
        return Dispatch.unary(UnaryOp.NOT, self.to(dt.bool_))

    def neg(self):
        return _unary(UnaryOp.NEG, self)

    def abs(self):
        return _unary(UnaryOp.ABS, self)

    def exp(self):
        return _unary(UnaryOp.EXP, self)

    def log(self):
        return _unary(UnaryOp.LOG, self)

    def sqrt(self):
        return _unary(UnaryOp.SQRT, self)

    def rsqrt(self):
        return _unary(UnaryOp.RSQRT, self)

    def tanh(self):
        return _unary(UnaryOp.TANH, self)

    def sigmoid(self):
        return _unary(UnaryOp.SIGMOID, self)

    def sin(self):
        return _unary(UnaryOp.SIN, self)

    def cos(self):
        return _unary(UnaryOp.COS, self)

    def erf(self):
        return _unary(UnaryOp.ERF, self)

    def reciprocal(self):
        return _unary(UnaryOp.RECIPROCAL, self)

    def sign(self):
        return _unary(UnaryOp.SIGN, self)

    def floor(self):
        return self if not self.dtype.is_float else _unary(UnaryOp.FLOOR, self)

    def ceil(self):
        return self if not self.dtype.is_float else _unary(UnaryOp.CEIL, self)

    def square(self):
        return _binary(_B.MUL, self, self)

    def relu(self):
        return _unary(UnaryOp.RELU, self)

    def gelu(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise InvalidArgumentError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return Dispatch.helper("gelu", _floating(self), approximate)

    def silu(self):
        return Dispatch.helper("silu", _floating(self))

    def softmax(self, dim: int = -1):
        return _along_dim("softmax", _floating(self), dim)

    def log_softmax(self, dim: int = -1):
        return _along_dim("log_softmax", _floating(self), dim)

    def clamp(self, min=None, max=None):
        """Limit values to [min, max]. At a bound the gradient flows to self (as in torch),
        which maximum/minimum, splitting ties, would not do; NaN stays NaN."""
        out = self
        if min is not None:
            out = where(_binary(_B.LT, out, min), min, out)
        if max is not None:
            out = where(_binary(_B.GT, out, max), max, out)
        return out

    clip = clamp

    def where(self, condition, other):
        """`where(condition, self, other)`."""
        return where(condition, self, other)

    # ------------------------------------------------------------------ reductions
    def _reduce(self, op: ReduceOp, name: str, dim, keepdim: bool):
        x = self
        if x.ndim == 0:  # a 0-d tensor reduces to itself; dim 0 / -1 are accepted
            for d in (() if dim is None else (dim,) if isinstance(dim, int) else dim):
                sh.normalize_dim(name, d, 0)
            dims = ()
        else:
            dims = sh.normalize_dims(name, dim, x.ndim)
        if op in (ReduceOp.MAX, ReduceOp.MIN) and any(x.shape[d] == 0 for d in dims):
            raise ShapeError(f"{name}: cannot reduce a zero-size dim of shape {x.shape}")
        if op is ReduceOp.MEAN and not x.dtype.is_float:
            x = x.to(dt.DEFAULT_FLOAT)
        if x.dtype is dt.bool_ and op in (ReduceOp.MAX, ReduceOp.MIN):
            return Dispatch.reduce(op, x.to(dt.int64), dims, keepdim).to(dt.bool_)
        return Dispatch.reduce(op, x, dims, keepdim)

    def sum(self, dim=None, keepdim: bool = False):
        return self._reduce(ReduceOp.SUM, "sum", dim, keepdim)

    def mean(self, dim=None, keepdim: bool = False):
        return self._reduce(ReduceOp.MEAN, "mean", dim, keepdim)

    def prod(self, dim=None, keepdim: bool = False):
        return self._reduce(ReduceOp.PROD, "prod", dim, keepdim)

    def max(self, dim=None, keepdim: bool = False):
        """Maximum values over `dim` (values only; see `argmax` for indices)."""
        return self._reduce(ReduceOp.MAX, "max", dim, keepdim)

    def min(self, dim=None, keepdim: bool = False):
        return self._reduce(ReduceOp.MIN, "min", dim, keepdim)

    def any(self, dim=None, keepdim: bool = False):
        return self.to(dt.bool_).to(dt.int32).sum(dim, keepdim) > 0

    def all(self, dim=None, keepdim: bool = False):
        return self.to(dt.bool_).logical_not().to(dt.int32).sum(dim, keepdim) == 0

    def _arg(self, op: ReduceOp, name: str, dim, keepdim: bool):
        x = self
        shape = x.shape
        if dim is None:
            if x.numel() == 0:
                raise ShapeError(f"{name}: cannot reduce a zero-size dim of shape {shape}")
            out = Dispatch.reduce(op, x.reshape(-1), (0,), False)
            return out.reshape((1,) * len(shape)) if keepdim else out
        d = sh.normalize_dim(name, dim, x.ndim)
        if x.ndim == 0:
            return Dispatch.reduce(op, x.reshape(1), (0,), False)
        if x.shape[d] == 0:
            raise ShapeError(f"{name}: cannot reduce a zero-size dim of shape {shape}")
        if x.dtype is dt.bool_:
            x = x.to(dt.int32)
        return Dispatch.reduce(op, x, (d,), keepdim)

    def argmax(self, dim=None, keepdim: bool = False):
        return self._arg(ReduceOp.ARGMAX, "argmax", dim, keepdim)

    def argmin(self, dim=None, keepdim: bool = False):
        return self._arg(ReduceOp.ARGMIN, "argmin", dim, keepdim)

    def var(self, dim=None, keepdim: bool = False, *, correction=None, unbiased=None):
        """Variance over `dim`; unbiased (`correction=1`) by default, as in torch and Burn."""
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        x = _floating(self)
        if x.dtype is dt.float16:  # squared deviations overflow float16: accumulate wider
            return x.to(dt.float32).var(dim, keepdim, correction=correction).to(dt.float16)
        dims = sh.normalize_dims("var", dim, x.ndim)
        return Dispatch.helper("var", x, dims, keepdim, correction)

    def std(self, dim=None, keepdim: bool = False, *, correction=None, unbiased=None):
        return self.var(dim, keepdim, correction=correction, unbiased=unbiased).sqrt()

    # ------------------------------------------------------------------ movement
    def reshape(self, *shape) -> "Tensor":
        new = sh.reshape(self.shape, _shape_args(shape))
        return self if new == self.shape else Dispatch.reshape(self, new)

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        s = self.shape
        if not s:
            return self.reshape(1)
        a = sh.normalize_dim("flatten", start_dim, len(s))
        b = sh.normalize_dim("flatten", end_dim, len(s))
        if a > b:
            raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        return self.reshape(s[:a] + (sh.numel(s[a:b + 1]),) + s[b + 1:])

    def permute(self, *dims):
        axes = sh.permute(self.shape, _shape_args(dims))
        return self if axes == tuple(range(len(axes))) else Dispatch.permute(self, axes)

    def transpose(self, dim0: int, dim1: int):
        nd = self.ndim
        a = sh.normalize_dim("transpose", dim0, nd)
        b = sh.normalize_dim("transpose", dim1, nd)
        if a == b:
            return self
        axes = list(range(nd))
        axes[a], axes[b] = axes[b], axes[a]
        return Dispatch.permute(self, tuple(axes))

    swapaxes = transpose

    def t(self):
        if self.ndim > 2:
            raise ShapeError(f"t: expects a tensor of rank <= 2, got shape {self.shape}; "
                             "use transpose(dim0, dim1)")
        return self if self.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self):
        return self.permute(tuple(reversed(range(self.ndim))))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    def expand(self, *sizes):
        target = sh.expand(self.shape, _shape_args(sizes))
        if target == self.shape:
            return self
        x = self
        lead = len(target) - x.ndim
        if lead:
            x = Dispatch.reshape(x, (1,) * lead + x.shape)
        return Dispatch.expand(x, target)

    def expand_as(self, other: "Tensor"):
        return self.expand(other.shape)

    def broadcast_to(self, *shape):
        return self.expand(*shape)

    def squeeze(self, dim=None):
        s = self.shape
        if not s:  # a 0-d tensor squeezes to itself (dim 0 / -1 accepted)
            for d in (() if dim is None else (dim,) if isinstance(dim, int) else dim):
                sh.normalize_dim("squeeze", d, 0)
            return self
        if dim is None:
            dims = {i for i, d in enumerate(s) if d == 1}
        else:
            dims = {d for d in sh.normalize_dims("squeeze", dim, len(s)) if s[d] == 1}
        if not dims:
            return self
        return Dispatch.reshape(self, tuple(d for i, d in enumerate(s) if i not in dims))

    def unsqueeze(self, dim: int):
        s = self.shape
        d = sh.normalize_dim("unsqueeze", dim, len(s), extra=1)
        return Dispatch.reshape(self, s[:d] + (1,) + s[d:])

    def chunk(self, chunks: int, dim: int = 0):
        if not isinstance(chunks, int) or chunks <= 0:
            raise ShapeError(f"chunk: chunks must be a positive int, got {chunks!r}")
        _rank1("chunk", self)
        d = sh.normalize_dim("chunk", dim, self.ndim)
        n = self.shape[d]
        size = max(1, math.ceil(n / chunks))
        return self.split(size, d)

    def split(self, split_size_or_sections, dim: int = 0):
        _rank1("split", self)
        d = sh.normalize_dim("split", dim, self.ndim)
        n = self.shape[d]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size <= 0:
                raise ShapeError(f"split: split size must be positive, got {size}")
            sizes = [min(size, n - i) for i in range(0, n, size)] or [0]
        else:
            sizes = [int(x) for x in split_size_or_sections]
            if sum(sizes) != n or any(x < 0 for x in sizes):
                raise ShapeError(f"split: sections {sizes} do not add up to dim {d} of "
                                 f"shape {self.shape}")
        out, start = [], 0
        for size in sizes:
            out.append(self._narrow(d, start, start + size))
            start += size
        return tuple(out)

    def narrow(self, dim: int, start: int, length: int):
        d = sh.normalize_dim("narrow", dim, self.ndim)
        n = self.shape[d]
        if start < 0:
            start += n
        if not (0 <= start <= n) or length < 0 or start + length > n:
            raise IndexOutOfRangeError(f"narrow: [{start}, {start + length}) is out of range "
                                       f"for dim {d} of size {n}")
        return self._narrow(d, start, start + length)

    def _narrow(self, d: int, start: int, stop: int):
        s = self.shape
        if start == 0 and stop == s[d]:
            return self
        slices = tuple((start, stop, 1) if i == d else (0, n, 1) for i, n in enumerate(s))
        return Dispatch.slice(self, slices)

    def __getitem__(self, key):
        return _getitem(self, key)

    # ------------------------------------------------------------------ matmul, indexing ops
    def matmul(self, other):
        return matmul(self, other)

    def index_select(self, dim: int, index):
        return index_select(self, dim, index)

    def gather(self, dim: int, index):
        return gather(self, dim, index)

    def index_add(self, dim: int, index, source, *, alpha=1):
        return index_add(self, dim, index, source, alpha=alpha)

    def scatter_add(self, dim: int, index, src):
        return scatter_add(self, dim, index, src)


def _is_operand(o) -> bool:
    return isinstance(o, (Tensor, int, float, np.generic, np.ndarray, list, tuple))


def _is_dtype_name(s: str) -> bool:
    try:
        dt.as_dtype(s)
        return True
    except DTypeError:
        return False


Tensor._result_type = Tensor  # ops on subclasses (nn.Parameter) return plain tensors


# ---------------------------------------------------------------------- shared machinery
def _as_tensor(value, like: Tensor, dtype: DType | None = None) -> Tensor:
    """`value` as a tensor on `like`'s device (tensors pass through unchanged)."""
    if isinstance(value, Tensor):
        return value
    from .creation import tensor
    return tensor(value, dtype=dtype, device=like.device)


def _floating(x: Tensor) -> Tensor:
    return x if x.dtype.is_float else x.to(dt.DEFAULT_FLOAT)


def _along_dim(helper: str, x: Tensor, dim: int) -> Tensor:
    """A helper working along one dim; a 0-d tensor is treated as one element along it."""
    d = sh.normalize_dim(helper, dim, x.ndim)
    if x.numel() == 0:
        return x  # nothing to normalize: an empty result of the same shape
    if x.ndim == 0:
        return Dispatch.reshape(Dispatch.helper(helper, Dispatch.reshape(x, (1,)), 0), ())
    return Dispatch.helper(helper, x, d)


def _unary(op: UnaryOp, x: Tensor) -> Tensor:
    d = x.dtype
    if not d.is_float:
        if op in FLOAT_UNARY:
            x = x.to(dt.DEFAULT_FLOAT)
        elif d is dt.bool_:
            if op is UnaryOp.ABS or op is UnaryOp.RELU:
                return x
            raise DTypeError(f"{op.value}: not supported for bool tensors (shape {x.shape})")
    return Dispatch.unary(op, x)


def _binary(op: BinaryOp, a, b) -> Tensor:
    """Promote dtypes (numpy rules, weak Python scalars), check broadcasting, dispatch."""
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            dev = a.device
            if b.device is not dev:
                common_device(op.value, (a, b))
            be = dev.backend
            pa, pb = a.primitive, b.primitive
            da, db = be.dtype_of(pa), be.dtype_of(pb)
            sa, sb = be.shape_of(pa), be.shape_of(pb)
            if sa != sb:
                sh.broadcast(op.value, sa, sb)
            d = da if da is db else dt.promote(da, db)
            if not d.is_float or op in _LOGICAL:
                d = _op_dtype(op, d)
            if da is not d:
                a = Dispatch.cast(a, d)
            if db is not d:
                b = Dispatch.cast(b, d)
            return Dispatch.binary(op, a, b)
        t, s, t_first = a, b, True
    elif isinstance(b, Tensor):
        t, s, t_first = b, a, False
    else:
        raise DTypeError(f"{op.value}: expected a tensor operand")
    ts = type(s)
    dtt = t.device.backend.dtype_of(t.primitive)
    if (ts is float or ts is int) and dtt.is_float and op not in _LOGICAL:
        pass  # the common case: a float tensor with a Python number keeps its dtype
    else:
        if isinstance(s, (np.ndarray, list, tuple)):
            s = _as_tensor(s, t)
            return _binary(op, t, s) if t_first else _binary(op, s, t)
        if isinstance(s, np.generic):
            s = s.item()
        d = _op_dtype(op, dt.promote_scalar(dtt, dt.scalar_kind(s)))
        if dtt is not d:
            t = Dispatch.cast(t, d)
        if d is dt.bool_:
            s = bool(s)
        elif not d.is_float:
            s = _int_scalar(op, s, d, t_first)
    return Dispatch.binary(op, t, s) if t_first else Dispatch.binary(op, s, t)


def _int_scalar(op: BinaryOp, s, d: DType, tensor_first: bool) -> int:
    """A Python integer operand of an integer op, checked against the tensor's dtype."""
    s = int(s)
    info = np.iinfo(d.np)
    if not info.min <= s <= info.max:
        raise DTypeError(f"{op.value}: the scalar {s} does not fit the tensor's dtype {d.name}")
    if op is _B.POW and tensor_first and s < 0:
        raise DTypeError(f"pow: an integer tensor ({d.name}) to a negative integer power; "
                         "cast to float first")
    return s


def _logical(op: BinaryOp, a: Tensor, b) -> Tensor:
    """`&` / `|`: logical and/or of bool tensors (lazyt has no bitwise integer ops)."""
    for x in (a, b):
        d = x.dtype if isinstance(x, Tensor) else None
        if (d is not None and d is not dt.bool_) or (d is None and not isinstance(x, bool)):
            raise DTypeError(f"{op.value}: needs bool operands, got "
                             f"{d.name if d is not None else type(x).__name__} "
                             f"(shape {a.shape}); compare first (e.g. x > 0) or use .bool()")
    return _binary(op, a, b)


def _op_dtype(op: BinaryOp, d: DType) -> DType:
    """The dtype both operands are cast to before the op."""
    if op in _LOGICAL:
        return dt.bool_
    if d.is_float:
        return d
    if op is _B.DIV:
        return dt.DEFAULT_FLOAT
    if d is dt.bool_ and op in _BOOL_FORBIDDEN:
        raise DTypeError(f"{op.value}: not supported for bool tensors; cast with .int() "
                         "or .float() first")
    return d


# ---------------------------------------------------------------------- functions
def where(condition, x, y) -> Tensor:
    """Elements of `x` where `condition` holds, else of `y` (tensors or scalars, broadcast)."""
    like = next((t for t in (condition, x, y) if isinstance(t, Tensor)), None)
    if like is None:
        raise DTypeError("where: expected at least one tensor argument")
    cond = _as_tensor(condition, like)
    if cond.dtype is not dt.bool_:
        cond = cond.to(dt.bool_)
    tx, ty = isinstance(x, Tensor), isinstance(y, Tensor)
    if isinstance(x, (np.ndarray, list, tuple)):
        x, tx = _as_tensor(x, like), True
    if isinstance(y, (np.ndarray, list, tuple)):
        y, ty = _as_tensor(y, like), True
    if tx and ty:
        d = dt.promote(x.dtype, y.dtype)
    elif tx:
        d = dt.promote_scalar(x.dtype, dt.scalar_kind(y))
    elif ty:
        d = dt.promote_scalar(y.dtype, dt.scalar_kind(x))
    else:
        kinds = {dt.scalar_kind(x), dt.scalar_kind(y)}
        d = dt.DEFAULT_FLOAT if "float" in kinds else dt.DEFAULT_INT if "int" in kinds \
            else dt.bool_
    shapes = [cond.shape] + [t.shape for t in (x, y) if isinstance(t, Tensor)]
    sh.broadcast("where", *shapes)
    common_device("where", [t for t in (cond, x, y) if isinstance(t, Tensor)])
    if not tx and not ty:  # two scalars: the result takes cond's shape and their dtype
        x, tx = _as_tensor(x, like, dtype=d), True
    x = x.to(d) if tx else d.np.type(x).item()
    y = y.to(d) if ty else d.np.type(y).item()
    return Dispatch.where(cond, x, y)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """numpy matmul semantics: 1-D operands are promoted and squeezed, batch dims broadcast."""
    if not isinstance(a, Tensor):
        a = _as_tensor(a, b)
    if not isinstance(b, Tensor):
        b = _as_tensor(b, a)
    common_device("matmul", (a, b))
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        raise ShapeError(f"matmul: operands must have rank >= 1, got {sa} and {sb}")
    d = dt.promote(a.dtype, b.dtype) if a.dtype is not b.dtype else a.dtype
    if d is dt.bool_:
        raise DTypeError(f"matmul: not supported for bool tensors (shapes {sa} and {sb})")
    a, b = a.to(d), b.to(d)
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
        raise ShapeError(f"matmul: cannot multiply shapes {tuple(a.shape)} and {tuple(b.shape)}"
                         f" (contraction {sa[-1]} vs {sb[-2]}, or batch dims that do not "
                         "broadcast)") from None
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


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    if not all(isinstance(t, Tensor) for t in tensors):
        raise DTypeError("cat: expected a sequence of tensors")
    common_device("cat", tensors)
    nd = tensors[0].ndim
    if nd == 0:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    if any(t.ndim != nd for t in tensors):
        raise ShapeError(f"cat: tensors have different ranks: {[t.shape for t in tensors]}")
    d = sh.normalize_dim("cat", dim, nd)
    sh.cat([t.shape for t in tensors], d)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = dt.promote(dtype, t.dtype)
    tensors = [t.to(dtype) for t in tensors]
    if len(tensors) == 1:
        return tensors[0]
    return Dispatch.cat(tensors, d)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    first = tensors[0].shape
    if any(t.shape != first for t in tensors):
        raise ShapeError(f"stack: all tensors need the same shape, got {[t.shape for t in tensors]}")
    common_device("stack", tensors)
    d = sh.normalize_dim("stack", dim, len(first), extra=1)
    return cat([t.unsqueeze(d) for t in tensors], d)


def _index_tensor(op: str, index, like: Tensor) -> Tensor:
    idx = _as_tensor(index, like)
    if idx.dtype.is_float or idx.dtype is dt.bool_:
        raise DTypeError(f"{op}: index must be an integer tensor, got {idx.dtype.name}")
    return idx if idx.dtype is dt.int64 else idx.to(dt.int64)


def _rank1(op: str, x: Tensor) -> None:
    if x.ndim == 0:
        raise ShapeError(f"{op}: needs a tensor of rank >= 1, got a 0-d tensor")


def index_select(x: Tensor, dim: int, index) -> Tensor:
    _rank1("index_select", x)
    d = sh.normalize_dim("index_select", dim, x.ndim)
    idx = _index_tensor("index_select", index, x)
    if idx.ndim > 1:
        raise ShapeError(f"index_select: index must be 1-D, got shape {idx.shape}")
    if idx.ndim == 0:
        idx = idx.reshape(1)
    return Dispatch.helper("index_select", x, d, idx)


def gather(x: Tensor, dim: int, index) -> Tensor:
    _rank1("gather", x)
    d = sh.normalize_dim("gather", dim, x.ndim)
    idx = _index_tensor("gather", index, x)
    sh.gather("gather", x.shape, d, idx.shape)
    return Dispatch.gather(x, d, idx)


def index_add(x: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    _rank1("index_add", x)
    d = sh.normalize_dim("index_add", dim, x.ndim)
    idx = _index_tensor("index_add", index, x)
    if idx.ndim > 1:
        raise ShapeError(f"index_add: index must be 1-D, got shape {idx.shape}")
    if idx.ndim == 0:
        idx = idx.reshape(1)
    src = _as_tensor(source, x)
    expected = x.shape[:d] + (idx.shape[0],) + x.shape[d + 1:]
    if src.shape != expected:
        raise ShapeError(f"index_add: source shape {src.shape} must be {expected} for input "
                         f"{x.shape}, dim {d} and {idx.shape[0]} indices")
    if alpha != 1:
        src = src * alpha
    d_out = dt.promote(x.dtype, src.dtype)
    return Dispatch.helper("index_add", x.to(d_out), d, idx, src.to(d_out))


def scatter_add(x: Tensor, dim: int, index, src) -> Tensor:
    _rank1("scatter_add", x)
    d = sh.normalize_dim("scatter_add", dim, x.ndim)
    idx = _index_tensor("scatter_add", index, x)
    src = _as_tensor(src, x)
    sh.gather("scatter_add", x.shape, d, idx.shape)
    if src.ndim != idx.ndim or any(i > s for i, s in zip(idx.shape, src.shape)):
        raise ShapeError(f"scatter_add: index shape {idx.shape} must fit inside src shape "
                         f"{src.shape}")
    d_out = dt.promote(x.dtype, src.dtype)
    return Dispatch.scatter_add(x.to(d_out), d, idx, src.to(d_out))


# ---------------------------------------------------------------------- indexing
def _getitem(x: Tensor, key) -> Tensor:
    if not isinstance(key, tuple):
        key = (key,)
    shape = x.shape
    nd = len(shape)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > nd:
        raise IndexOutOfRangeError(f"getitem: too many indices ({consumed}) for a tensor of "
                                   f"rank {nd}")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexOutOfRangeError("getitem: an index can only have a single ellipsis")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (nd - consumed))
        else:
            expanded.append(k)
    if not any(k is Ellipsis for k in key):
        expanded.extend([slice(None)] * (nd - consumed))

    slices, out_shape, tensor_index = [], [], None
    dim = 0
    sliced = False
    for k in expanded:
        if k is None:
            out_shape.append(1)
            continue
        n = shape[dim]
        if isinstance(k, slice):
            if k.step == 0:
                raise InvalidArgumentError("getitem: slice step cannot be zero")
            start, stop, step = k.indices(n)
            length = sh.slice_len(start, stop, step)
            if length == 0:
                start, stop, step = 0, 0, 1
            slices.append((start, stop, step))
            sliced |= (start, stop, step) != (0, n, 1)
            out_shape.append(length)
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            if not -n <= i < n:
                raise IndexOutOfRangeError(f"getitem: index {i} is out of range for dim {dim} "
                                           f"of size {n} (shape {shape})")
            i %= n
            slices.append((i, i + 1, 1))
            sliced = True
        elif isinstance(k, (Tensor, list, np.ndarray)) and tensor_index is None:
            idx = _index_tensor("getitem", k, x)
            idx = where(idx < 0, idx + n, idx)  # negative entries count from the end
            tensor_index = (len(out_shape), dim, idx)
            slices.append((0, n, 1))
            out_shape.append(None)
        else:
            raise DTypeError(f"getitem: unsupported index {k!r}; lazyt supports ints, slices, "
                             "None, Ellipsis and one integer index tensor")
        dim += 1
    out = Dispatch.slice(x, tuple(slices)) if sliced else x
    if tensor_index is not None:
        pos, src_dim, idx = tensor_index
        out = Dispatch.helper("index_select", out, src_dim, idx.reshape(-1))
        out_shape[pos:pos + 1] = list(idx.shape)
    final = tuple(out_shape)
    if final != out.shape:
        out = Dispatch.reshape(out, final)
    return out
