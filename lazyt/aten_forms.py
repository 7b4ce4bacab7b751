"""torch's top-level names for ops lazyt has elsewhere, in torch's argument order.

- The top-level forms of `nn.functional` ops (`lazyt.conv2d`, `lazyt.layer_norm`,
  `lazyt.dropout(x, p, train)`, ...). Some take their arguments in ATen's order, not
  `nn.functional`'s: `embedding(weight, indices, padding_idx=-1)` (-1: no padding row),
  `batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
  cudnn_enabled)`, and the losses' `reduction` as ATen's integer (0 none, 1 mean, 2 sum; the
  string names work too). `cudnn_enabled` flags are accepted and ignored.
- RNN cells as functions (`rnn_tanh_cell`, `rnn_relu_cell`, `gru_cell`, `lstm_cell`),
  `conv_tbc`, `convolution`, `constant_pad_nd`, `native_layer_norm`.
- Small forms and queries: `select`, `rsub`, `fill`, `adjoint`, `detach`, `numel`,
  `concat`/`concatenate`, `split_with_sizes`, `unravel_index`, `scalar_tensor`, `as_tensor`,
  `asarray`, `is_tensor`, `is_nonzero`, `isreal`, `isposinf`, `isneginf`, the identities of
  real tensors (`conj`, `resolve_conj`, `resolve_neg`, `is_conj`, `is_neg`), the view copies
  (`permute_copy`, `transpose_copy`, ...), and dtype rules (`result_type`, `promote_types`,
  `can_cast`, `broadcast_shapes`, `get_default_dtype`, `set_default_dtype`).
"""
from __future__ import annotations

import builtins
import numbers
import sys
import warnings

import numpy as np

from . import config as _config
from . import creation
from . import dtype as dt
from . import promotion as _promote
from .autodiff import is_inference_mode_enabled as _is_inference
from .errors import (DTypeError, GradError, IndexOutOfRangeError, InvalidArgumentError,
                     ShapeError)
from .functional import cat, floating, split, where
from .inplace import rebind
from .moreops import exporter
from .nn import functional as F
from .tensor import PRINT_OPTIONS as _PRINT_OPTIONS
from .tensor import Tensor

__all__: list = []
_export = exporter(globals(), __all__)


def _tensor(op: str, name: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise DTypeError(f"{op}: {name} must be a lazyt.Tensor, got {type(x).__name__}")
    return x


# ---------------------------------------------------------------------- nn ops, torch's order
#: nn.functional ops whose top-level form takes the same leading arguments.
SAME_ORDER = ("conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d "
              "avg_pool1d max_pool1d max_pool2d max_pool3d adaptive_avg_pool1d "
              "pixel_shuffle pixel_unshuffle channel_shuffle cosine_similarity "
              "pairwise_distance hardshrink prelu bilinear").split()

_REDUCTION_CODES = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op: str, reduction) -> str:
    """ATen's integer reduction (or its name) as nn.functional's string."""
    if isinstance(reduction, str):
        return reduction
    if isinstance(reduction, numbers.Integral) and not isinstance(reduction, bool) \
            and int(reduction) in _REDUCTION_CODES:
        return _REDUCTION_CODES[int(reduction)]
    raise InvalidArgumentError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                               f"{reduction!r}")


@_export(method=False)
def layer_norm(input, normalized_shape, weight=None, bias=None,  # noqa: A002 - torch's name
               eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


@_export(method=False)
def group_norm(input, num_groups: int, weight=None, bias=None,  # noqa: A002 - torch's name
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    return F.group_norm(input, num_groups, weight, bias, eps)


@_export(method=False)
def rms_norm(input, normalized_shape, weight=None, eps=None) -> Tensor:  # noqa: A002
    return F.rms_norm(input, normalized_shape, weight, eps)


@_export(method=False)
def native_layer_norm(input, normalized_shape, weight, bias, eps: float):  # noqa: A002
    """(output, mean, rstd): the mean and 1/sqrt(var + eps) over the normalized dims, kept as
    size-1 dims, beside the layer norm."""
    x = _tensor("native_layer_norm", "input", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    out = F.layer_norm(x, shape, weight, bias, eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    xf = floating(x)
    mean = xf.mean(dims, keepdim=True)
    rstd = ((xf - mean).square().mean(dims, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


@_export(method=False)
def batch_norm(input, weight, bias, running_mean, running_var,  # noqa: A002 - torch's name
               training: bool, momentum: float, eps: float, cudnn_enabled: bool = True):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


@_export(method=False)
def instance_norm(input, weight, bias, running_mean, running_var,  # noqa: A002
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


@_export(method=False)
def embedding(weight, indices, padding_idx: int = -1,  # noqa: A002 - torch's names
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` at `indices` (ATen's order; padding_idx -1 means none)."""
    w = _tensor("embedding", "weight", weight)
    pad = None if padding_idx is None or padding_idx == -1 else padding_idx
    return F.embedding(indices, w, pad, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _dropout_forms(name: str, fn):
    def dropout(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's name
        return fn(input, p, train)

    def dropout_(input, p: float, train: bool) -> Tensor:  # noqa: A002 - torch's name
        return fn(input, p, train, inplace=True)
    dropout.__name__, dropout_.__name__ = name, name + "_"
    dropout.__doc__ = f"`nn.functional.{fn.__name__}(input, p, train)`."
    dropout_.__doc__ = f"`nn.functional.{fn.__name__}(input, p, train, inplace=True)`."
    return dropout, dropout_


def _feature_dropout(input, p: float = 0.5, training: bool = True,  # noqa: A002
                     inplace: bool = False) -> Tensor:
    """Zero whole channels (dim 1) of an input of rank >= 2."""
    x = _tensor("feature_dropout", "input", input)
    if x.ndim < 2:
        raise ShapeError(f"feature_dropout: expects an input of rank >= 2 (N, C, ...), got "
                         f"shape {x.shape}")
    by_rank = {3: F.dropout1d, 4: F.dropout2d, 5: F.dropout3d}
    if x.ndim in by_rank:
        return by_rank[x.ndim](x, p, training, inplace)
    if not training or p == 0:
        return x
    mask = F.dropout(creation.ones(x.shape[:2] + (1,) * (x.ndim - 2), dtype=x.dtype,
                                   device=x.device), p, True)
    return x.mul_(mask) if inplace else x * mask


_feature_dropout.__name__ = "feature_dropout"

for _name, _fn in (("dropout", F.dropout), ("alpha_dropout", F.alpha_dropout),
                   ("feature_alpha_dropout", F.feature_alpha_dropout),
                   ("feature_dropout", _feature_dropout)):
    for _form in _dropout_forms(_name, _fn):
        _export(method=False)(_form)


@_export(method=False)
def adaptive_max_pool1d(input, output_size):  # noqa: A002 - torch's name
    """(values, indices), as torch's top-level form returns both."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


@_export(method=False)
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0,  # noqa: A002
                            dilation=1, ceil_mode: bool = False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode,
                        return_indices=True)


@_export(method=False)
def constant_pad_nd(input, pad, value=0) -> Tensor:  # noqa: A002 - torch's name
    return F.pad(input, pad, "constant", value)


@_export(method=False)
def conv_tbc(input, weight, bias, pad: int = 0) -> Tensor:  # noqa: A002 - torch's name
    """A 1-d convolution of a (time, batch, channels) input with a (kernel, in, out) weight."""
    x = _tensor("conv_tbc", "input", input)
    w = _tensor("conv_tbc", "weight", weight)
    if x.ndim != 3 or w.ndim != 3:
        raise ShapeError(f"conv_tbc: expects a (T, B, C_in) input and a (K, C_in, C_out) "
                         f"weight, got {x.shape} and {w.shape}")
    out = F.conv1d(x.permute(1, 2, 0), w.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


@_export(method=False)
def convolution(input, weight, bias, stride, padding, dilation,  # noqa: A002 - torch's name
                transposed: bool, output_padding, groups: int) -> Tensor:
    """ATen's one entry to every convolution: N-d by the input's rank, transposed or not."""
    x = _tensor("convolution", "input", input)
    n = x.ndim - 2
    if n not in (1, 2, 3):
        raise ShapeError(f"convolution: expects a (N, C, ...) input with 1 to 3 spatial dims, "
                         f"got shape {x.shape}")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(x, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    return fn(x, weight, bias, stride, padding, dilation, groups)


@_export(method=False)
def kl_div(input, target, reduction=1, *, log_target: bool = False):  # noqa: A002
    return F.kl_div(input, target, _reduction("kl_div", reduction), log_target)


@_export(method=False)
def binary_cross_entropy_with_logits(input, target, weight=None,  # noqa: A002
                                     pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(
        input, target, weight, _reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight)


@_export(method=False)
def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction("cosine_embedding_loss", reduction))


@_export(method=False)
def hinge_embedding_loss(input, target, margin: float = 1.0, reduction=1):  # noqa: A002
    return F.hinge_embedding_loss(input, target, margin,
                                  reduction=_reduction("hinge_embedding_loss", reduction))


@_export(method=False)
def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction("margin_ranking_loss", reduction))


@_export(method=False)
def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float,  # noqa: A002
                     reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps,
                              _reduction("poisson_nll_loss", reduction))


@_export(method=False)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction=1,
             zero_infinity: bool = False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction("ctc_loss", reduction), zero_infinity)


@_export(method=False)
def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 _reduction("triplet_margin_loss", reduction))


# ---------------------------------------------------------------------- RNN cells
def _affine(x: Tensor, w: Tensor, b) -> Tensor:
    out = x @ w.mT
    return out if b is None else out + b


def _cell_args(op: str, input, hx, w_ih, w_hh):
    x = _tensor(op, "input", input)
    if x.ndim not in (1, 2):
        raise ShapeError(f"{op}: input must be (batch, input_size) or (input_size,), got "
                         f"{x.shape}")
    for name, w in (("w_ih", w_ih), ("w_hh", w_hh)):
        if _tensor(op, name, w).ndim != 2:
            raise ShapeError(f"{op}: {name} must be 2-D, got {w.shape}")
    if w_ih.shape[1] != x.shape[-1]:
        raise ShapeError(f"{op}: input has {x.shape[-1]} features but w_ih expects "
                         f"{w_ih.shape[1]}")
    return x


@_export(method=False)
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """One Elman step: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    x = _cell_args("rnn_tanh_cell", input, hx, w_ih, w_hh)
    return (_affine(x, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).tanh()


@_export(method=False)
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """One Elman step with relu."""
    x = _cell_args("rnn_relu_cell", input, hx, w_ih, w_hh)
    return (_affine(x, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).relu()


@_export(method=False)
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """One GRU step (torch's gate order r, z, n; the reset gate scales W_hn h + b_hn)."""
    x = _cell_args("gru_cell", input, hx, w_ih, w_hh)
    gi, gh = _affine(x, w_ih, b_ih), _affine(hx, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * hx


@_export(method=False)
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002 - torch's name
    """One LSTM step: (h', c') from `hx` = (h, c) (torch's gate order i, f, g, o)."""
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise InvalidArgumentError("lstm_cell: hx must be the pair (h, c)")
    x = _cell_args("lstm_cell", input, hx[0], w_ih, w_hh)
    gates = _affine(x, w_ih, b_ih) + _affine(hx[0], w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * hx[1] + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


# ---------------------------------------------------------------------- small forms
@_export()
def select(input, dim: int, index: int) -> Tensor:  # noqa: A002 - torch's name
    """The slice at `index` along `dim`, with that dim removed."""
    x = _tensor("select", "input", input)
    if x.ndim == 0:
        raise IndexOutOfRangeError("select: cannot select from a 0-d tensor")
    d = _dim("select", dim, x.ndim)
    size = x.shape[d]
    if isinstance(index, bool) or not isinstance(index, numbers.Integral) \
            or not -size <= index < size:
        raise IndexOutOfRangeError(f"select: index {index!r} is out of range for dim {dim} of "
                                   f"size {size}")
    return x.narrow(d, int(index) % size, 1).squeeze(d)


def _dim(op: str, dim, ndim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) \
            or not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexOutOfRangeError(f"{op}: dim {dim!r} is out of range for a tensor of rank "
                                   f"{ndim}")
    return int(dim) % max(ndim, 1)


@_export(method=False)
def rsub(input, other, alpha=1) -> Tensor:  # noqa: A002 - torch's name
    """`other - alpha * input`."""
    x = _tensor("rsub", "input", input)
    return other - x if alpha == 1 else other - x * alpha


@_export(method=False)
def fill(input, value) -> Tensor:  # noqa: A002 - torch's name
    """A tensor like `input` holding `value` (a number or a 0-d tensor) everywhere."""
    x = _tensor("fill", "input", input)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ShapeError(f"fill: value must be a number or a 0-d tensor, got shape "
                             f"{value.shape}")
        return value.to(x.dtype).expand(x.shape).contiguous() if x.ndim else value.to(x.dtype)
    return creation.full_like(x, value)


@_export()
def adjoint(input) -> Tensor:  # noqa: A002 - torch's name
    """The conjugate transpose of the last two dims (the transpose, for real tensors)."""
    x = _tensor("adjoint", "input", input)
    if x.ndim < 2:
        raise ShapeError(f"adjoint: expects a tensor of rank >= 2, got shape {x.shape}")
    return x.transpose(-2, -1)


@_export(method=False)
def detach(input) -> Tensor:  # noqa: A002 - torch's name
    return _tensor("detach", "input", input).detach()


@_export(method=False)
def numel(input) -> int:  # noqa: A002 - torch's name
    return _tensor("numel", "input", input).numel()


@_export(method=False)
def concat(tensors, dim: int = 0) -> Tensor:
    return cat(tensors, dim)


@_export(method=False)
def concatenate(tensors, axis: int = 0) -> Tensor:
    return cat(tensors, axis)


@_export()
def split_with_sizes(input, split_sizes, dim: int = 0):  # noqa: A002 - torch's name
    if isinstance(split_sizes, numbers.Integral):
        raise InvalidArgumentError("split_with_sizes: split_sizes must be a list of ints")
    return split(input, list(split_sizes), dim)


@_export()
def unsafe_split(input, split_size, dim: int = 0):  # noqa: A002 - torch's name
    return split(input, split_size, dim)


@_export()
def unsafe_chunk(input, chunks: int, dim: int = 0):  # noqa: A002 - torch's name
    return _tensor("unsafe_chunk", "input", input).chunk(chunks, dim)


@_export(method=False)
def unsafe_split_with_sizes(input, split_sizes, dim: int = 0):  # noqa: A002
    return split_with_sizes(input, split_sizes, dim)


@_export(method=False)
def unravel_index(indices, shape) -> tuple:
    """The coordinates in `shape` of flat `indices` (int64 tensors, one per dim; indices wrap
    with floor division, as torch's do)."""
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0:
            raise ShapeError(f"unravel_index: shape must hold non-negative ints, got {shape}")
    if isinstance(indices, numbers.Integral) and not isinstance(indices, bool):
        indices = creation.tensor(int(indices))
    idx = _tensor("unravel_index", "indices", indices)
    if not idx.dtype.is_int:
        raise DTypeError(f"unravel_index: indices must be an integer tensor, got "
                         f"{idx.dtype.name}")
    if 0 in shape:
        raise ShapeError(f"unravel_index: shape {shape} has no elements to index")
    q = idx.to(dt.int64)
    coords = []
    for s in reversed(shape):
        coords.append(q.remainder(s))
        q = q.div(s, rounding_mode="floor")
    return tuple(reversed(coords))


@_export(method=False)
def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number `s` (the default float dtype unless `dtype`)."""
    if isinstance(s, Tensor) or not isinstance(s, (numbers.Number, np.generic)):
        raise DTypeError(f"scalar_tensor: expects a number, got {type(s).__name__}")
    return creation.full((), s, dtype=dtype or dt.DEFAULT_FLOAT, device=device,
                         requires_grad=requires_grad)


@_export(method=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a tensor; a tensor already of that dtype and device is returned itself."""
    if isinstance(data, Tensor):
        out = data
        if device is not None:
            out = out.to(device)
        return out.to(dtype) if dtype is not None else out
    return creation.tensor(data, dtype=dtype, device=device)


@_export(method=False)
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False):
    out = as_tensor(obj, dtype=dtype, device=device)
    if copy and out is obj:
        out = out.clone()
    if copy is False and isinstance(obj, Tensor) and out is not obj:
        raise InvalidArgumentError("asarray: copy=False, but the dtype or device asked for "
                                   "needs a copy")
    return out.require_grad() if requires_grad else out


@_export(method=False)
def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


@_export()
def is_nonzero(input) -> bool:  # noqa: A002 - torch's name
    x = _tensor("is_nonzero", "input", input)
    if x.numel() != 1:
        raise ShapeError(f"is_nonzero: expects a one-element tensor, got shape {x.shape}")
    return bool(x.reshape(()).item())


@_export()
def isreal(input) -> Tensor:  # noqa: A002 - torch's name
    """True everywhere: lazyt's dtypes are real."""
    x = _tensor("isreal", "input", input)
    return creation.ones(x.shape, dtype=dt.bool_, device=x.device)


@_export()
def isposinf(input) -> Tensor:  # noqa: A002 - torch's name
    x = _tensor("isposinf", "input", input)
    if not x.dtype.is_float:
        return creation.zeros(x.shape, dtype=dt.bool_, device=x.device)
    return x == float("inf")


@_export()
def isneginf(input) -> Tensor:  # noqa: A002 - torch's name
    x = _tensor("isneginf", "input", input)
    if not x.dtype.is_float:
        return creation.zeros(x.shape, dtype=dt.bool_, device=x.device)
    return x == float("-inf")


def _identity(name: str, doc: str):
    def same(input) -> Tensor:  # noqa: A002 - torch's name
        return _tensor(name, "input", input)
    same.__name__, same.__doc__ = name, doc
    return same


def _false(name: str):
    def query(input) -> bool:  # noqa: A002 - torch's name
        _tensor(name, "input", input)
        return False
    query.__name__ = name
    query.__doc__ = "False: lazyt's tensors are real and carry no lazy conjugate or negation."
    return query


for _name in ("conj", "resolve_conj", "resolve_neg", "conj_physical"):
    _export()(_identity(_name, "The tensor itself: a real tensor is its own conjugate."))
for _name in ("is_conj", "is_neg", "is_inference"):
    _export()(_false(_name))


# ---------------------------------------------------------------------- view copies
def _copy_of(name: str, view):
    def copy(input, *args, **kwargs) -> Tensor:  # noqa: A002 - torch's name
        return view(_tensor(name, "input", input), *args, **kwargs).clone()
    copy.__name__ = name
    copy.__doc__ = f"A new tensor holding `{name[:-5]}`'s view."
    return copy


_VIEW_COPIES = {
    "alias_copy": lambda x: x, "detach_copy": lambda x: x.detach(),
    "diagonal_copy": lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
    "expand_copy": lambda x, size: x.expand(*size),
    "permute_copy": lambda x, dims: x.permute(*dims),
    "select_copy": select, "squeeze_copy": lambda x, dim=None: x.squeeze(dim),
    "t_copy": lambda x: x.t(), "transpose_copy": lambda x, d0, d1: x.transpose(d0, d1),
    "unsqueeze_copy": lambda x, dim: x.unsqueeze(dim),
    "unfold_copy": lambda x, dimension, size, step: x.unfold(dimension, size, step),
    "view_copy": lambda x, size: x.view(*size) if not isinstance(size, int) else x.view(size),
    "slice_copy": lambda x, dim=0, start=None, end=None, step=1:
        x[(slice(None),) * (dim % max(x.ndim, 1)) + (slice(start, end, step),)],
}
for _name, _view in _VIEW_COPIES.items():
    _export(method=False)(_copy_of(_name, _view))


@_export(method=False)
def split_copy(input, split_size, dim: int = 0):  # noqa: A002 - torch's name
    return tuple(t.clone() for t in split(input, split_size, dim))


@_export(method=False)
def split_with_sizes_copy(input, split_sizes, dim: int = 0):  # noqa: A002 - torch's name
    return tuple(t.clone() for t in split_with_sizes(input, split_sizes, dim))


@_export(method=False)
def unbind_copy(input, dim: int = 0):  # noqa: A002 - torch's name
    return tuple(t.clone() for t in _tensor("unbind_copy", "input", input).unbind(dim))


# ---------------------------------------------------------------------- dtype rules
def _as_dtype(op: str, d) -> dt.DType:
    try:
        return dt.as_dtype(d)
    except (DTypeError, TypeError, KeyError):
        raise DTypeError(f"{op}: expected a dtype, got {d!r}") from None


@_export(method=False)
def result_type(tensor1, tensor2) -> dt.DType:
    """The dtype an arithmetic op on the two operands (tensors or numbers) gives."""
    for t in (tensor1, tensor2):
        if not isinstance(t, (Tensor, numbers.Number)):
            raise DTypeError(f"result_type: expects tensors or numbers, got {type(t).__name__}")
    return _promote.result_type(tensor1, tensor2)


@_export(method=False)
def promote_types(type1, type2) -> dt.DType:
    return dt.promote(_as_dtype("promote_types", type1), _as_dtype("promote_types", type2))


def _kind(d: dt.DType) -> int:
    return 0 if d is dt.bool_ else 2 if d.is_float else 1


@_export(method=False)
def can_cast(from_, to) -> bool:
    """Whether torch's type promotion allows casting `from_` to `to` (no float to integer, no
    number to bool)."""
    a, b = _as_dtype("can_cast", from_), _as_dtype("can_cast", to)
    return _kind(a) <= _kind(b)


@_export(method=False)
def broadcast_shapes(*shapes) -> tuple:
    """The shape the given shapes broadcast to (`ShapeError` if they do not)."""
    norm = []
    for s in shapes:
        if isinstance(s, numbers.Integral) and not isinstance(s, bool):
            s = (int(s),)
        s = tuple(s)
        if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0 for v in s):
            raise ShapeError(f"broadcast_shapes: shapes hold non-negative ints, got {s}")
        norm.append(s)
    try:
        return tuple(int(v) for v in np.broadcast_shapes(*norm))
    except ValueError:
        raise ShapeError(f"broadcast_shapes: shapes {', '.join(map(str, norm))} do not "
                         "broadcast") from None


@_export(method=False)
def get_default_dtype() -> dt.DType:
    """The dtype of tensors made from Python floats (float32 unless set)."""
    return dt.DEFAULT_FLOAT


@_export(method=False)
def set_default_dtype(d) -> None:
    """Make `d` (float16, float32 or float64) the dtype of new float tensors, as torch's."""
    d = _as_dtype("set_default_dtype", d)
    if not d.is_float:
        raise DTypeError(f"set_default_dtype: only floating-point dtypes can be the default, "
                         f"got {d.name}")
    dt.DEFAULT_FLOAT = d


def inclusive_range(start=0, end=None, step=1, *, dtype=None, device=None,
                    requires_grad: bool = False) -> Tensor:
    """`lazyt.range`, deprecated as torch's is: `start, start + step, ...` up to and including
    `end`, in the default float dtype. Use `arange`, whose end is exclusive. (Not exported
    by `from lazyt import *`, which would hide Python's `range`.)"""
    warnings.warn("lazyt.range is deprecated, as torch.range is; use lazyt.arange (its end is "
                  "exclusive)", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise InvalidArgumentError("range: step must be non-zero")
    n = int(np.floor((end - start) / step)) + 1
    if n < 0:
        raise InvalidArgumentError(f"range: the bound {end} is on the wrong side of {start} for "
                                   f"step {step}")
    d = dtype or dt.DEFAULT_FLOAT
    values = start + step * np.arange(max(n, 0), dtype=np.float64)
    out = creation.tensor(values.astype(d.np) if not d.is_int else values.astype(np.int64),
                          dtype=d, device=device)
    return out.require_grad() if requires_grad else out


# ---------------------------------------------------------------------- process settings
@_export(method=False)
def get_num_threads() -> int:
    """The threads lazyt's cpu work uses (`set_num_threads`, `LAZYT_NUM_THREADS` or the
    cores, at most 8)."""
    return _config.num_threads()


@_export(method=False)
def set_num_threads(n: int) -> None:
    """Use `n` threads for cpu work from now on (lazyt's pool, its numba kernels and BLAS)."""
    _config.set_num_threads(n)


_PRINT_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, max_line_width=80),
                   "short": dict(precision=2, threshold=1000, edgeitems=2, max_line_width=80),
                   "full": dict(precision=4, threshold=sys.maxsize, edgeitems=3,
                                max_line_width=80)}


@_export(method=False)
def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """How `repr` prints values, as torch.set_printoptions: digits after the point, the
    element count above which the middle is summarized, the items kept at each edge, the line
    width, a `profile` ("default", "short", "full") and `sci_mode` (True: always scientific,
    False: never, None: numpy's choice)."""
    opts = dict(_PRINT_OPTIONS)
    if profile is not None:
        if profile not in _PRINT_PROFILES:
            raise InvalidArgumentError(f"set_printoptions: profile must be one of "
                                       f"{', '.join(map(repr, _PRINT_PROFILES))}, got "
                                       f"{profile!r}")
        opts.update(_PRINT_PROFILES[profile])
    for name, v in (("precision", precision), ("threshold", threshold),
                    ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise InvalidArgumentError(f"set_printoptions: {name} must be a non-negative "
                                           f"int, got {v!r}")
            opts["max_line_width" if name == "linewidth" else name] = int(v)
    opts.pop("formatter", None)
    opts.pop("suppress_small", None)
    if sci_mode is True:
        digits = opts.get("precision", 4)
        opts["formatter"] = {"float_kind": lambda v: f"{v:.{digits}e}"}
    elif sci_mode is False:
        opts["suppress_small"] = True
    _PRINT_OPTIONS.clear()
    _PRINT_OPTIONS.update(opts)


@_export(method=False)
def get_printoptions() -> dict:
    """The options `set_printoptions` set, in torch's names."""
    out = {("linewidth" if k == "max_line_width" else k): v for k, v in _PRINT_OPTIONS.items()
           if k not in ("formatter", "suppress_small")}
    out["sci_mode"] = True if "formatter" in _PRINT_OPTIONS else \
        False if "suppress_small" in _PRINT_OPTIONS else None
    return out


_MATMUL_PRECISIONS = ("highest", "high", "medium")
_MATMUL_PRECISION = ["highest"]


@_export(method=False)
def set_float32_matmul_precision(precision: str) -> None:
    """Accepted as torch's ("highest", "high", "medium"); lazyt multiplies float32 matrices
    in full float32 at every setting (no TF32 or bfloat16 passes)."""
    if precision not in _MATMUL_PRECISIONS:
        raise InvalidArgumentError(f"set_float32_matmul_precision: expected one of "
                                   f"{', '.join(map(repr, _MATMUL_PRECISIONS))}, got "
                                   f"{precision!r}")
    _MATMUL_PRECISION[0] = precision


@_export(method=False)
def get_float32_matmul_precision() -> str:
    return _MATMUL_PRECISION[0]


@_export(method=False)
def is_inference_mode_enabled() -> bool:
    return _is_inference()


@_export(method=False)
def empty_strided(size, stride, *, dtype=None, device=None, requires_grad: bool = False):
    """`empty(size)`: lazyt's tensors have no strides to choose."""
    return creation.empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


@_export(method=False)
def empty_permuted(size, physical_layout, *, dtype=None, device=None,
                   requires_grad: bool = False):
    """`empty(size)`; `physical_layout` (a permutation of the dims) is checked, not used."""
    size = tuple(size)
    if sorted(physical_layout) != list(builtins.range(len(size))):
        raise InvalidArgumentError(f"empty_permuted: physical_layout {tuple(physical_layout)} "
                                   f"is not a permutation of {len(size)} dims")
    return creation.empty(size, dtype=dtype, device=device, requires_grad=requires_grad)


@_export(method=False)
def nonzero_static(input, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """`nonzero(input)` cut or padded with `fill_value` rows to exactly `size` rows."""
    x = _tensor("nonzero_static", "input", input)
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise InvalidArgumentError(f"nonzero_static: size must be a non-negative int, got "
                                   f"{size!r}")
    idx = x.nonzero()
    n = idx.shape[0]
    if n >= size:
        return idx[:size]
    pad = creation.full((size - n, max(x.ndim, 1) if x.ndim else 0), fill_value,
                        dtype=idx.dtype, device=idx.device)
    return cat([idx, pad], 0)


@_export(method=False)
def real(input) -> Tensor:  # noqa: A002 - torch's name
    return _tensor("real", "input", input)


@_export(method=False)
def imag(input) -> Tensor:  # noqa: A002 - torch's name
    _tensor("imag", "input", input)
    raise DTypeError("imag: lazyt's tensors are real; torch has imag only for complex dtypes")


@_export(method=False)
def is_signed(input) -> bool:  # noqa: A002 - torch's name
    return _tensor("is_signed", "input", input).is_signed()


@_export(method=False)
def get_device(input) -> int:  # noqa: A002 - torch's name
    return _tensor("get_device", "input", input).get_device()


# ---------------------------------------------------------------------- Tensor odds and ends
for _name in ("hardshrink", "prelu"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, getattr(F, _name))


def fill_diagonal_(self, fill_value, wrap: bool = False) -> Tensor:
    """Write `fill_value` on the main diagonal in place (all dims equal for rank > 2; a tall
    matrix with `wrap` starts again every cols + 1 rows, as torch)."""
    x = _tensor("fill_diagonal_", "input", self)
    if x.ndim < 2:
        raise ShapeError(f"fill_diagonal_: expects a tensor of rank >= 2, got shape {x.shape}")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise ShapeError(f"fill_diagonal_: all dims must be equal for rank > 2, got {x.shape}")
    mask = np.zeros(x.shape, dtype=bool)
    if x.ndim == 2:
        rows, cols = x.shape
        flat = mask.reshape(-1)
        step = cols + 1
        count = min(rows, cols) if not wrap else -(-flat.size // step)
        flat[np.arange(count) * step] = True
    else:
        idx = np.arange(x.shape[0])
        mask[(idx,) * x.ndim] = True
    m = creation.tensor(mask, device=x.device)
    return rebind(x, where(m, creation.full((), fill_value, dtype=x.dtype, device=x.device),
                           x), "fill_diagonal_")


@_export()
def angle(input) -> Tensor:  # noqa: A002 - torch's name
    """The argument of each (real) element: pi where negative, 0 elsewhere, NaN kept; float."""
    x = floating(_tensor("angle", "input", input))
    zero = x * 0
    return where(x < 0, zero + np.pi, zero)


def sum_to_size(self, *size) -> Tensor:
    """Sum over the dims that `size` broadcasts along, giving `size`."""
    x = _tensor("sum_to_size", "input", self)
    shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], numbers.Integral) \
        else tuple(size)
    try:
        if np.broadcast_shapes(shape, x.shape) != tuple(x.shape):
            raise ValueError
    except ValueError:
        raise ShapeError(f"sum_to_size: size {shape} is not expandable to the tensor's shape "
                         f"{x.shape}") from None
    lead = x.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and x.shape[lead + i] != 1)
    out = x.sum(dims, keepdim=True) if dims else x
    return out.reshape(shape)


_TYPE_NAMES = {"float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "int16": "ShortTensor",
               "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor"}


def _type(self, dtype=None, non_blocking: bool = False):
    """torch's `Tensor.type`: the type name ('lazyt.FloatTensor') or, given a dtype, a cast."""
    if dtype is None:
        return "lazyt." + _TYPE_NAMES[self.dtype.name]
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        names = {v: k for k, v in _TYPE_NAMES.items()}
        key = dtype.rsplit(".", 1)[-1]
        if key not in names:
            raise DTypeError(f"type: unknown tensor type {dtype!r}")
        dtype = names[key]
    return self.to(dtype)


def _get_device(self) -> int:
    """-1 on the cpu, else the device's index (torch's `get_device`)."""
    return -1 if self.device.type == "cpu" else (self.device.index or 0)


def _imag(self):
    raise DTypeError("imag: lazyt's tensors are real; torch has imag only for complex dtypes")


_EXTRA_METHODS = {
    "fill_diagonal_": fill_diagonal_, "sum_to_size": sum_to_size, "type": _type,
    "get_device": _get_device, "is_pinned": lambda self: False,
    "pin_memory": lambda self: self, "share_memory_": lambda self: self,
    "new_empty_strided": lambda self, size, stride, **kw: self.new_empty(tuple(size), **kw),
}
_EXTRA_PROPERTIES = {
    "itemsize": lambda self: self.dtype.itemsize,
    "nbytes": lambda self: self.dtype.itemsize * self.numel(),
    "real": lambda self: self, "imag": _imag,
}
for _flag in ("is_meta", "is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn",
              "is_nested", "is_mps", "is_xpu", "is_vulkan", "is_ipu", "is_xla", "is_maia",
              "is_mtia"):
    _EXTRA_PROPERTIES[_flag] = lambda self: False
for _name, _fn in _EXTRA_METHODS.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
for _name, _fn in _EXTRA_PROPERTIES.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, property(_fn))


# ---------------------------------------------------------------------- in-place views
def _view_inplace(name: str, view):
    def method(self, *args, **kwargs):
        return rebind(self, view(self, *args, **kwargs), name, reshape=True)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`{name[:-1]}` in place: the tensor takes the view's shape."
    return method


_VIEW_INPLACE = {
    "squeeze_": lambda x, dim=None: x.squeeze(dim) if dim is not None else x.squeeze(),
    "unsqueeze_": lambda x, dim: x.unsqueeze(dim),
    "t_": lambda x: x.t(),
    "transpose_": lambda x, dim0, dim1: x.transpose(dim0, dim1),
    "swapaxes_": lambda x, axis0, axis1: x.transpose(axis0, axis1),
    "swapdims_": lambda x, dim0, dim1: x.transpose(dim0, dim1),
}
for _name, _view in _VIEW_INPLACE.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _view_inplace(_name, _view))


def _strided_index(op: str, numel: int, size, stride, storage_offset: int) -> np.ndarray:
    """The flat positions a strided view of a contiguous storage of `numel` elements reads."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise ShapeError(f"{op}: size {size} and stride {stride} must have the same length")
    for v in size + stride + (storage_offset,):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise InvalidArgumentError(f"{op}: sizes, strides and the offset must be "
                                       f"non-negative ints, got size {size}, stride {stride}, "
                                       f"offset {storage_offset!r}")
    idx = np.full(size, int(storage_offset), dtype=np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        idx = idx + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    if idx.size and int(idx.max()) >= numel:
        raise IndexOutOfRangeError(f"{op}: size {size}, stride {stride} and offset "
                                   f"{storage_offset} reach element {int(idx.max())}, beyond "
                                   f"the {numel} elements of the tensor")
    return idx


@_export()
def as_strided(input, size, stride, storage_offset: int = 0) -> Tensor:  # noqa: A002
    """The view torch's `as_strided` makes of the tensor's elements in row-major order (a
    lazyt tensor's storage is always that order): a gather, so it is differentiable."""
    x = _tensor("as_strided", "input", input)
    idx = _strided_index("as_strided", x.numel(), size, stride, storage_offset)
    flat = x.reshape(-1)
    if not idx.size:
        return flat[:0].reshape(idx.shape)
    return flat.take(creation.tensor(idx, device=x.device))


@_export(method=False)
def as_strided_scatter(input, src, size, stride, storage_offset: int = 0) -> Tensor:  # noqa
    """`input` with `src` written where `as_strided(input, size, stride, offset)` reads."""
    x = _tensor("as_strided_scatter", "input", input)
    s = _tensor("as_strided_scatter", "src", src)
    idx = _strided_index("as_strided_scatter", x.numel(), size, stride, storage_offset)
    if tuple(s.shape) != idx.shape:
        raise ShapeError(f"as_strided_scatter: src has shape {s.shape}, the view {idx.shape}")
    flat = x.reshape(-1)
    pos = creation.tensor(idx.reshape(-1), device=x.device)
    return flat.scatter(0, pos, s.reshape(-1).to(x.dtype)).reshape(x.shape)


def _resize_(self, *sizes) -> Tensor:
    """torch's `resize_`: the first elements (row-major) in the new shape; new elements are 0
    (torch leaves them uninitialized). Refused for tensors that require grad, as torch does."""
    x = _tensor("resize_", "input", self)
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], numbers.Integral) \
        else tuple(sizes)
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0 for v in shape):
        raise ShapeError(f"resize_: sizes must be non-negative ints, got {shape}")
    if x.requires_grad:
        raise GradError("resize_: cannot resize a tensor that requires grad (torch refuses "
                        "it too)")
    n = int(np.prod(shape, dtype=np.int64))
    flat = x.reshape(-1)
    if n <= flat.shape[0]:
        out = flat[:n]
    else:
        out = cat([flat, creation.zeros((n - flat.shape[0],), dtype=x.dtype,
                                        device=x.device)])
    return rebind(x, out.reshape(shape), "resize_", reshape=True)


if not hasattr(Tensor, "resize_"):
    Tensor.resize_ = _resize_
if not hasattr(Tensor, "resize_as_"):
    Tensor.resize_as_ = lambda self, other: _resize_(self, tuple(other.shape))
if not hasattr(Tensor, "as_strided_"):
    Tensor.as_strided_ = lambda self, size, stride, storage_offset=0: rebind(
        self, as_strided(self, size, stride, storage_offset), "as_strided_", reshape=True)


# the matrix views of real tensors: `mH` is `mT`, `H` is `T`
if not hasattr(Tensor, "mH"):
    Tensor.mH = property(lambda self: self.mT)
if not hasattr(Tensor, "H"):
    Tensor.H = property(lambda self: self if self.ndim < 2 else adjoint(self) if self.ndim == 2
                        else _matrix_only("H", self))


def _matrix_only(name: str, x: Tensor):
    raise ShapeError(f"Tensor.{name}: is for 0-d to 2-D tensors; use mH for a batch of "
                     f"matrices (shape {x.shape})")

# the nn.functional ops of the same argument order, at the top level
for _name in SAME_ORDER:
    globals()[_name] = getattr(F, _name)
    __all__.append(_name)
del _name
