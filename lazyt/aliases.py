"""torch's other names for lazyt's ops, its in-place method forms, and small `Tensor` queries.

- Alternate names, as functions and methods: `multiply subtract divide true_divide greater
  greater_equal less less_equal not_equal negative absolute arccos arcsin arctan arccosh
  arcsinh arctanh arctan2 fix`, each the op it names (`x.divide(y, rounding_mode="floor")`
  is `x.div(y, rounding_mode="floor")`).
- In-place forms `op_` of the shape-keeping methods (`exp_ sqrt_ sigmoid_ relu_ pow_ lerp_
  tril_ eq_ ...`, the list in `INPLACE`): the out-of-place op, then `inplace.rebind`, so they
  follow the rules of `add_` (the tensor keeps its shape and dtype; a leaf that requires grad
  is updated only under `no_grad`; a value a later backward needs raises `GradError` there).
- Queries and views: `view_as reshape_as mm fliplr flipud positive ndimension nelement
  element_size is_floating_point is_complex is_signed is_same_size`, and the properties
  `is_cpu is_cuda`.
"""
from __future__ import annotations

import sys

from . import functional as F
from .errors import DTypeError, ShapeError
from .inplace import rebind
from .tensor import Tensor

#: torch's name -> lazyt's op (a function of `lazyt` and a method of `Tensor`).
ALIASES = {
    "multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne", "negative": "neg", "absolute": "abs", "arccos": "acos",
    "arcsin": "asin", "arctan": "atan", "arccosh": "acosh", "arcsinh": "asinh",
    "arctanh": "atanh", "arctan2": "atan2", "fix": "trunc",
}

#: Methods whose result has the input's shape: each gets an in-place form `name_`.
INPLACE = (
    "abs acos acosh asin asinh atan atanh atan2 ceil cos cosh deg2rad erf "
    "exp exp2 expm1 floor frac hypot log log10 log1p log2 logit nan_to_num neg "
    "reciprocal rad2deg round rsqrt sigmoid sign sgn sin sinc sinh sqrt square tan tanh trunc "
    "relu pow fmod lerp tril triu cumsum cumprod clamp_min clamp_max clip "
    "copysign float_power floor_divide heaviside xlogy logical_and logical_or logical_xor "
    "logical_not bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift "
    "bitwise_right_shift eq ne lt le gt ge masked_fill masked_scatter index_add scatter "
    "scatter_add scatter_reduce index_put erfc gcd lcm i0 ldexp lgamma digamma polygamma "
    "erfinv mvlgamma igamma igammac nextafter addmm baddbmm remainder "
).split() + list(ALIASES)


#: torch's module-level in-place functions (`torch.relu_(x)` is `x.relu_()`): each is made
#: where the Tensor method of that name exists.
FUNCTIONS_INPLACE = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ "
    "asinh_ atan_ atanh_ ceil_ celu_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ "
    "detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ "
    "ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ "
    "relu_ round_ rrelu_ rsqrt_ selu_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ "
    "threshold_ trunc_ xlogy_ zero_"
).split()


def _function_inplace(name: str):
    def function(input, *args, **kwargs):  # noqa: A002 - torch's name
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"`input.{name}(...)`: the tensor updated in place (torch.{name})."
    return function


def _alias(target: str, name: str):
    fn = getattr(Tensor, target)

    def alias(*args, **kwargs):
        return fn(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"torch's other name for `{target}`."
    return alias


def _inplace(name: str):
    def method(self, *args, **kwargs):
        return rebind(self, getattr(self, name)(*args, **kwargs), name + "_")

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"`{name}` in place (see lazyt/aliases.py)."
    return method


def view_as(self, other):
    """This tensor with `other`'s shape (`view(other.shape)`)."""
    return self.view(*other.shape)


def reshape_as(self, other):
    return self.reshape(*other.shape)


def mm(self, mat2):
    """The matrix product of two 2-D tensors (torch.mm: no broadcasting, no 1-D operands)."""
    other = F.as_tensor(mat2, self)
    if self.ndim != 2 or other.ndim != 2:
        raise ShapeError(f"mm: expected two 2-D tensors, got shapes {tuple(self.shape)} and "
                         f"{tuple(other.shape)}")
    return F.matmul(self, other)


def fliplr(self):
    """Reverse dim 1 (left/right), as torch.fliplr; needs at least 2 dims."""
    if self.ndim < 2:
        raise ShapeError(f"fliplr: the input must have at least 2 dims, got shape "
                         f"{tuple(self.shape)}")
    return self.flip(1)


def flipud(self):
    """Reverse dim 0 (up/down), as torch.flipud; needs at least 1 dim."""
    if self.ndim < 1:
        raise ShapeError("flipud: the input must have at least 1 dim, got a 0-d tensor")
    return self.flip(0)


def positive(self):
    """The tensor itself (torch.positive), refused for bool as torch does."""
    if self.dtype.name == "bool":
        raise DTypeError("positive: not defined for bool tensors")
    return self


def ndimension(self) -> int:
    return self.ndim


def nelement(self) -> int:
    return self.numel()


def element_size(self) -> int:
    """Bytes per element of the tensor's dtype."""
    return self.dtype.itemsize


def is_floating_point(self) -> bool:
    return self.dtype.is_float


def is_complex(self) -> bool:
    return False  # lazyt has no complex dtypes


def is_signed(self) -> bool:
    return self.dtype.name != "bool" and not self.dtype.name.startswith("uint")


def is_same_size(self, other) -> bool:
    return tuple(self.shape) == tuple(other.shape)


_METHODS = {f.__name__: f for f in (view_as, reshape_as, mm, fliplr, flipud, positive,
                                    ndimension, nelement, element_size, is_floating_point,
                                    is_complex, is_signed, is_same_size)}


def _install() -> list:
    """Attach what `Tensor` lacks; returns the names of the new module-level functions."""
    exported = []
    module = sys.modules["lazyt"]
    for name, target in ALIASES.items():
        if hasattr(Tensor, target) and name not in vars(Tensor):
            setattr(Tensor, name, _alias(target, name))
        if not hasattr(module, name) and hasattr(module, target):
            setattr(module, name, getattr(module, target))
            exported.append(name)
    for name, fn in _METHODS.items():
        if name not in vars(Tensor):
            setattr(Tensor, name, fn)
    for name in ("mm", "fliplr", "flipud", "positive", "is_floating_point", "is_complex",
                 "is_same_size"):
        if not hasattr(module, name):
            setattr(module, name, _METHODS[name])
            exported.append(name)
    for name in INPLACE:
        if hasattr(Tensor, name) and name + "_" not in vars(Tensor):
            setattr(Tensor, name + "_", _inplace(name))
    from .nn import functional as nnf
    for name in ("selu", "celu", "rrelu", "threshold", "selu_", "celu_", "rrelu_",
                 "threshold_"):     # torch has these activations at the top level too
        if not hasattr(module, name):
            setattr(module, name, getattr(nnf, name))
            exported.append(name)
    for name in FUNCTIONS_INPLACE:
        if hasattr(Tensor, name) and not hasattr(module, name):
            setattr(module, name, _function_inplace(name))
            exported.append(name)
    if "is_cpu" not in vars(Tensor):
        Tensor.is_cpu = property(lambda self: self.device.type == "cpu")
    if "is_cuda" not in vars(Tensor):
        Tensor.is_cuda = property(lambda self: self.device.type == "cuda")
    return exported
