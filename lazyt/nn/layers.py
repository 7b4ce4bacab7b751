"""More of torch's small layers: the padding modules (`ZeroPad2d`, `ConstantPad1d`,
`ReflectionPad2d`, ...), `PixelShuffle`/`PixelUnshuffle`, `PReLU`, `Bilinear`, `InstanceNorm*d`,
the parameter containers `ParameterList`/`ParameterDict`, channel dropout
(`Dropout1d`-`3d`, `AlphaDropout`, `FeatureAlphaDropout`), `ChannelShuffle` and `Softmax2d`,
with their functional forms in `lazyt.nn.functional` (`pixel_shuffle`, `pixel_unshuffle`,
`prelu`, `bilinear`, `instance_norm`, `dropout1d`-`3d`, `alpha_dropout`,
`feature_alpha_dropout`, `channel_shuffle`, `pdist`)."""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import Iterable, Iterator, Mapping

import numpy as np

from .. import creation
from .. import dtype as dt
from ..errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from ..functional import stack, where
from ..inplace import stored as _stored
from ..reductions import _norm
from ..layout import pad
from ..tensor import Tensor
from .conv import as_tuple, windows
from .dropout import _probability
from .module import Module, ModuleError
from .normalization import _affine_parameters, batch_norm
from .parameter import Parameter


# ---------------------------------------------------------------------- padding modules
class _Pad(Module):
    """torch's padding modules: `padding` an int (every side of the `_dims` trailing dims) or
    a tuple of (before, after) pairs from the last dim, as `F.pad` takes it."""

    _dims = 1
    _mode = "constant"
    _takes_value = False

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        n = 2 * self._dims
        if isinstance(padding, int) and not isinstance(padding, bool):
            padding = (padding,) * n
        padding = tuple(padding)
        if len(padding) != n or not all(isinstance(p, int) for p in padding):
            raise InvalidArgumentError(f"{type(self).__name__}: padding must be an int or "
                                       f"{n} ints, got {padding!r}")
        self.padding = padding
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        d = self._dims
        ok = (x.ndim >= d) if self._mode == "constant" else x.ndim in (d + 1, d + 2)
        if not isinstance(x, Tensor) or not ok:
            want = f"at least {d}" if self._mode == "constant" else f"{d + 1} or {d + 2}"
            raise ShapeError(f"{type(self).__name__}: expected an input of {want} dims, got "
                             f"{getattr(x, 'shape', None)}")
        if self._mode == "constant":
            return pad(x, self.padding, "constant", self.value)
        return pad(x, self.padding, self._mode)

    def extra_repr(self) -> str:
        extra = f", value={self.value}" if self._takes_value else ""
        return f"{self.padding}{extra}"


def _pad_class(name: str, dims: int, mode: str, constant_value: bool) -> type:
    doc = f"`F.pad(x, padding, {mode!r})` over the last {dims} dim{'s' if dims > 1 else ''}."
    if constant_value:
        def init(self, padding, value: float):
            _Pad.__init__(self, padding, value)
    else:
        def init(self, padding):
            _Pad.__init__(self, padding, 0.0)
    return type(name, (_Pad,), {"__init__": init, "__doc__": doc, "_dims": dims,
                                "_mode": mode, "_takes_value": constant_value,
                                "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", 1, "constant", True)
ConstantPad2d = _pad_class("ConstantPad2d", 2, "constant", True)
ConstantPad3d = _pad_class("ConstantPad3d", 3, "constant", True)
ZeroPad1d = _pad_class("ZeroPad1d", 1, "constant", False)
ZeroPad2d = _pad_class("ZeroPad2d", 2, "constant", False)
ZeroPad3d = _pad_class("ZeroPad3d", 3, "constant", False)
ReflectionPad1d = _pad_class("ReflectionPad1d", 1, "reflect", False)
ReflectionPad2d = _pad_class("ReflectionPad2d", 2, "reflect", False)
ReflectionPad3d = _pad_class("ReflectionPad3d", 3, "reflect", False)
ReplicationPad1d = _pad_class("ReplicationPad1d", 1, "replicate", False)
ReplicationPad2d = _pad_class("ReplicationPad2d", 2, "replicate", False)
ReplicationPad3d = _pad_class("ReplicationPad3d", 3, "replicate", False)
CircularPad1d = _pad_class("CircularPad1d", 1, "circular", False)
CircularPad2d = _pad_class("CircularPad2d", 2, "circular", False)
CircularPad3d = _pad_class("CircularPad3d", 3, "circular", False)


# ---------------------------------------------------------------------- pixel shuffle
def _factor(fn: str, r) -> int:
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise InvalidArgumentError(f"{fn}: the factor must be a positive int, got {r!r}")
    return r


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """[*, C r^2, H, W] -> [*, C, H r, W r] (sub-pixel convolution's rearrangement)."""
    r = _factor("pixel_shuffle", upscale_factor)
    if not isinstance(input, Tensor) or input.ndim < 3 or input.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: expected [*, C * {r * r}, H, W], got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    *lead, c, h, w = input.shape
    nl = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """[*, C, H r, W r] -> [*, C r^2, H, W] (the inverse of `pixel_shuffle`)."""
    r = _factor("pixel_unshuffle", downscale_factor)
    if not isinstance(input, Tensor) or input.ndim < 3 or input.shape[-1] % r or \
            input.shape[-2] % r:
        raise ShapeError(f"pixel_unshuffle: expected [*, C, H, W] with H and W divisible by "
                         f"{r}, got {getattr(input, 'shape', type(input).__name__)}")
    *lead, c, h, w = input.shape
    nl = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = _factor("PixelShuffle", upscale_factor)

    def forward(self, x: Tensor) -> Tensor:
        return pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = _factor("PixelUnshuffle", downscale_factor)

    def forward(self, x: Tensor) -> Tensor:
        return pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


# ---------------------------------------------------------------------- PReLU, Bilinear
def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """`x` where x >= 0, else `weight * x`, with one weight or one per channel (dim 1)."""
    if not isinstance(input, Tensor) or not input.dtype.is_float:
        raise DTypeError(f"prelu: expected a floating-point tensor input, got "
                         f"{getattr(input, 'dtype', type(input).__name__)}")
    if not isinstance(weight, Tensor) or weight.ndim > 1:
        raise ShapeError(f"prelu: weight must be a 1-D tensor, got "
                         f"{getattr(weight, 'shape', type(weight).__name__)}")
    if weight.dtype is not input.dtype:
        raise DTypeError(f"prelu: input dtype {input.dtype.name} does not match the weight's "
                         f"{weight.dtype.name}")
    n = weight.numel()
    if n != 1:
        if input.ndim < 2 or input.shape[1] != n:
            raise ShapeError(f"prelu: {n} weights need {n} channels in dim 1, got input of "
                             f"shape {input.shape}")
        weight = weight.reshape((1, n) + (1,) * (input.ndim - 2))
    else:
        weight = weight.reshape(())
    return where(input > 0, input, weight * input)  # x = 0 takes the weight's side (torch)


class PReLU(Module):
    """`x` where x >= 0, else `a * x` with learned `a` (`num_parameters` of them, one per
    channel, or one shared), initialized to `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(creation.full((num_parameters,), init, dtype=dtype,
                                              device=device))

    def forward(self, x: Tensor) -> Tensor:
        return prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """`y_k = x1^T W_k x2 + b_k`: input1 [*, in1], input2 [*, in2], weight [out, in1, in2]."""
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise DTypeError(f"bilinear: {name} must be a Tensor, got {type(t).__name__}")
    if weight.ndim != 3 or input1.shape[-1:] != weight.shape[1:2] or \
            input2.shape[-1:] != weight.shape[2:3] or input1.shape[:-1] != input2.shape[:-1]:
        raise ShapeError(f"bilinear: expected input1 [*, {weight.shape[1:2]}], input2 "
                         f"[*, {weight.shape[2:3]}] with one batch shape and weight [out, in1, "
                         f"in2], got {input1.shape}, {input2.shape}, {weight.shape}")
    if not input1.dtype is input2.dtype is weight.dtype:
        raise DTypeError(f"bilinear: input1 ({input1.dtype.name}), input2 "
                         f"({input2.dtype.name}) and weight ({weight.dtype.name}) must have one "
                         "dtype")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, weight.shape[1])
    x2 = input2.reshape(-1, weight.shape[2])
    # (x1 W_k) for every k at once: [n, out * in2], then the dot with x2 per k
    t = (x1 @ weight.permute(1, 0, 2).reshape(weight.shape[1], -1))
    y = (t.reshape(-1, weight.shape[0], weight.shape[2]) * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, weight.shape[0])


class Bilinear(Module):
    """torch's `nn.Bilinear(in1_features, in2_features, out_features)`: weight
    [out, in1, in2] and bias [out], uniform in +-1/sqrt(in1_features)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in1_features)

        def uniform(shape):
            u = creation.rand(shape, dtype=dtype, device=device)
            return Parameter(u * (2 * bound) - bound)
        self.weight = uniform((out_features, in1_features, in2_features))
        if bias:
            self.bias = uniform((out_features,))
        else:
            self.register_parameter("bias", None)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


# ---------------------------------------------------------------------- instance norm
def instance_norm(input: Tensor, running_mean=None, running_var=None,  # noqa: A002
                  weight: Tensor | None = None, bias: Tensor | None = None,
                  use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    """torch's `F.instance_norm`: each sample's channels normalized over their positions
    (a batch norm of the input seen as one sample of N * C channels); running statistics,
    when given, are updated with the mean over the batch and used when not
    `use_input_stats`."""
    if not isinstance(input, Tensor) or input.ndim < 3:
        raise ShapeError(f"instance_norm: expected an input [N, C, *] of at least 3 dims, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    n, c = input.shape[:2]
    rest = input.shape[2:]
    x = input.reshape(1, n * c, *rest)

    def per_sample(t):
        return None if t is None else t.reshape(1, c).expand(n, c).reshape(n * c)
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    rm = None if running_mean is None else per_sample(running_mean) * 1
    rv = None if running_var is None else per_sample(running_var) * 1
    y = batch_norm(x, rm, rv, per_sample(weight), per_sample(bias), True, momentum, eps)
    if running_mean is not None:  # the batch's mean of the per-sample updates
        from ..autodiff import no_grad
        with no_grad():
            running_mean.copy_(rm.reshape(n, c).mean(0))
            running_var.copy_(rv.reshape(n, c).mean(0))
    return y.reshape(input.shape)


class _InstanceNorm(Module):
    """torch's `nn.InstanceNorm*d(num_features)`: no affine parameters and no running
    statistics by default (`affine=True`, `track_running_stats=True` add them; `bias=False`
    leaves the bias out)."""

    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = dict(dtype=dtype, device=device)
        _affine_parameters(self, (num_features,), affine, bias, dtype, device)
        if track_running_stats:  # torch's names (num_batches_tracked stays 0, as torch's)
            self.register_buffer("running_mean", creation.zeros((num_features,), **kw))
            self.register_buffer("running_var", creation.ones((num_features,), **kw))
            self.register_buffer("num_batches_tracked",
                                 creation.zeros((), dtype=dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in self._dims:
            raise ShapeError(f"{name}: expected {' or '.join(f'{d}D' for d in self._dims)} "
                             f"input, got {getattr(x, 'shape', type(x).__name__)}")
        unbatched = x.ndim == min(self._dims)
        if unbatched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.num_features and self.affine:
            raise ShapeError(f"{name}: expected {self.num_features} channels in dim 1, got "
                             f"input of shape {x.shape}")
        use_input = self.training or not self.track_running_stats
        y = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                          use_input, self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Over [N, C, L] (or unbatched [C, L])."""

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Over [N, C, H, W] (or unbatched [C, H, W])."""

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Over [N, C, D, H, W] (or unbatched [C, D, H, W])."""

    _dims = (4, 5)


# ---------------------------------------------------------------------- parameter containers
def _param(owner: str, p) -> Parameter:
    """A Parameter as given, or a tensor wrapped in one (as torch's containers do)."""
    if isinstance(p, Parameter):
        return p
    if isinstance(p, Tensor):
        return Parameter(p)
    raise ModuleError(f"{owner}: needs Parameters or tensors, got {type(p).__name__}")


class ParameterList(Module):
    """Parameters registered as "0", "1", ... (so optimizers and `state_dict` see them)."""

    def __init__(self, values: Iterable[Parameter] | None = None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(list(self._parameters.values()))

    def __getitem__(self, i):
        values = list(self._parameters.values())
        if isinstance(i, slice):
            return ParameterList(values[i])
        if not -len(values) <= i < len(values):
            raise IndexOutOfRangeError(f"ParameterList: index {i} out of range for length "
                                       f"{len(values)}")
        return values[i]

    def __setitem__(self, i: int, p: Parameter) -> None:
        n = len(self)
        if not -n <= i < n:
            raise IndexOutOfRangeError(f"ParameterList: index {i} out of range for length {n}")
        self.register_parameter(str(i % n), _param("ParameterList", p))

    def append(self, p: Parameter) -> "ParameterList":
        self.register_parameter(str(len(self)), _param("ParameterList", p))
        return self

    def extend(self, values: Iterable[Parameter]) -> "ParameterList":
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values: Iterable[Parameter]) -> "ParameterList":
        return self.extend(values)


class ParameterDict(Module):
    """Parameters by string key (keys without dots)."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def update(self, parameters) -> None:
        """Add (or replace) the parameters of a mapping or of (key, parameter) pairs. A plain
        mapping's keys are taken sorted, an OrderedDict's, ParameterDict's or pair list's in
        order (as torch)."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items(), key=lambda kv: kv[0])
        else:
            items = parameters
        for k, v in items:
            self[k] = v

    def get(self, key: str, default=None):
        return self._parameters.get(key, default)

    def pop(self, key: str) -> Parameter:
        return self._parameters.pop(key)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, p: Parameter) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise ModuleError(f"ParameterDict: keys must be non-empty strings without dots, "
                              f"got {key!r}")
        self.register_parameter(key, _param("ParameterDict", p))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()


# ---------------------------------------------------------------------- channel dropout
_ALPHA = 1.7580993408473766  # -SELU's negative saturation value


def _channel_mask(x: Tensor, p: float, spatial: int) -> Tensor:
    """A keep mask (True with probability 1 - p) per channel: x's shape with the last
    `spatial` dims set to 1 (0: per element)."""
    shape = x.shape[:x.ndim - spatial] + (1,) * spatial if spatial else x.shape
    return creation.rand(shape, device=x.device) >= p


def _channel_dropout(fn: str, input, p: float, training: bool, inplace: bool,  # noqa: A002
                     spatial: int, dims: tuple) -> Tensor:
    p = _probability(fn, p)
    if not isinstance(input, Tensor) or not input.dtype.is_float:
        raise DTypeError(f"{fn}: expected a floating-point tensor input, got "
                         f"{getattr(input, 'dtype', type(input).__name__)}")
    if input.ndim not in dims:
        raise ShapeError(f"{fn}: expected a {' or '.join(f'{d}-D' for d in dims)} input "
                         f"(channels first, batch optional), got shape {input.shape}")
    if not training or p == 0.0:
        return input
    out = input * 0 if p == 1.0 else where(_channel_mask(input, p, spatial),
                                           input * (1.0 / (1.0 - p)), 0.0)
    return _stored(fn, input, out, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability p, scale the rest."""
    return _channel_dropout("dropout1d", input, p, training, inplace, 1, (2, 3))


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W) with probability p, scale the rest."""
    return _channel_dropout("dropout2d", input, p, training, inplace, 2, (3, 4))


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p."""
    return _channel_dropout("dropout3d", input, p, training, inplace, 3, (4, 5))


def _alpha_dropout(fn: str, input, p: float, training: bool, spatial: int) -> Tensor:  # noqa: A002
    p = _probability(fn, p)
    if not isinstance(input, Tensor) or not input.dtype.is_float:
        raise DTypeError(f"{fn}: expected a floating-point tensor input, got "
                         f"{getattr(input, 'dtype', type(input).__name__)}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0
    if spatial and input.ndim < 2:
        raise ShapeError(f"{fn}: expected channels in dim 1 (or 0 unbatched), got shape "
                         f"{input.shape}")
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    keep = _channel_mask(input, p, min(spatial, input.ndim - 1)).to(input.dtype)
    return input * keep * a + (keep - 1) * (_ALPHA * a) + _ALPHA * a * p


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements become SELU's
    saturation value, then everything is scaled and shifted (torch's `a`, `b`)."""
    return _stored("alpha_dropout", input,
                   _alpha_dropout("alpha_dropout", input, p, training, 0), inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """`alpha_dropout` of whole channels (dim 1 of a batched input)."""
    spatial = input.ndim - 2 if isinstance(input, Tensor) and input.ndim > 2 else 0
    return _stored("feature_alpha_dropout", input,
                   _alpha_dropout("feature_alpha_dropout", input, p, training, spatial), inplace)


class _ChannelDropout(Module):
    _fn = staticmethod(dropout2d)

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = _probability(type(self).__name__, p)
        self.inplace = bool(inplace)

    def forward(self, x: Tensor) -> Tensor:
        return type(self)._fn(x, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_ChannelDropout):
    _fn = staticmethod(dropout1d)


class Dropout2d(_ChannelDropout):
    _fn = staticmethod(dropout2d)


class Dropout3d(_ChannelDropout):
    _fn = staticmethod(dropout3d)


class AlphaDropout(_ChannelDropout):
    _fn = staticmethod(alpha_dropout)


class FeatureAlphaDropout(_ChannelDropout):
    _fn = staticmethod(feature_alpha_dropout)


# ---------------------------------------------------------------------- shuffles, distances
def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """(N, C, *) with its channels regrouped: [g0c0, g1c0, ..., g0c1, ...] (ShuffleNet)."""
    g = _factor("channel_shuffle", groups)
    if not isinstance(input, Tensor) or input.ndim < 3 or input.shape[1] % g:
        raise ShapeError(f"channel_shuffle: expected (N, C, *) with C divisible by {g}, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    n, c, *rest = input.shape
    return input.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(input.shape)


class ChannelShuffle(Module):
    def __init__(self, groups: int):
        super().__init__()
        self.groups = _factor("ChannelShuffle", groups)

    def forward(self, x: Tensor) -> Tensor:
        return channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) (dim -3)."""

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expected a 3-D or 4-D input, got "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        return x.softmax(-3)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002
    """The p-norm distances between the rows of `input` (N, M), for every pair i < j in
    row-major order: N (N - 1) / 2 values."""
    if not isinstance(input, Tensor) or input.ndim != 2 or not input.dtype.is_float:
        raise ShapeError(f"pdist: expected a 2-D floating-point input, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    if not p >= 0:
        raise InvalidArgumentError(f"pdist: p must be >= 0, got {p!r}")
    i, j = np.triu_indices(input.shape[0], 1)
    if i.size == 0:
        return creation.zeros((0,), dtype=input.dtype, device=input.device)
    rows = creation.tensor(i, device=input.device)
    cols = creation.tensor(j, device=input.device)
    d = input.index_select(0, rows) - input.index_select(0, cols)
    if p == 0:
        return (d != 0).to(input.dtype).sum(1)
    return _norm(d, float(p), 1).squeeze(1)


# ---------------------------------------------------------------------- unfold / fold
def _fold_geometry(fn: str, kernel_size, dilation, padding, stride) -> tuple:
    kernel = as_tuple(fn, "kernel_size", kernel_size, 2, 1)
    dilation = as_tuple(fn, "dilation", dilation, 2, 1)
    padding = as_tuple(fn, "padding", padding, 2, 0)
    stride = as_tuple(fn, "stride", stride, 2, 1)
    return kernel, dilation, padding, stride


def _blocks(fn: str, size: tuple, kernel, dilation, padding, stride) -> tuple:
    out = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                for s, k, d, p, st in zip(size, kernel, dilation, padding, stride))
    if any(o < 1 for o in out):
        raise ShapeError(f"{fn}: the kernel {kernel} (dilation {dilation}) does not fit the "
                         f"padded input {tuple(s + 2 * p for s, p in zip(size, padding))}")
    return out


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), column l holding the l-th sliding block
    (channel-major, then kernel offsets in row-major order, as torch)."""
    fn = "unfold"
    kernel, dilation, padding, stride = _fold_geometry(fn, kernel_size, dilation, padding,
                                                       stride)
    if not isinstance(input, Tensor) or input.ndim not in (3, 4):
        raise ShapeError(f"unfold: expected a 3-D or 4-D input, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    out = _blocks(fn, x.shape[2:], kernel, dilation, padding, stride)
    views = windows(x, kernel, stride, dilation, padding, out, 0.0)
    n, c = x.shape[:2]
    cols = stack(views, 2).reshape(n, c * len(views), out[0] * out[1])
    return cols.squeeze(0) if unbatched else cols


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0,  # noqa: A002
         stride=1) -> Tensor:
    """col2im, the adjoint of `unfold`: (N, C * kh * kw, L) -> (N, C, *output_size), each
    column's values added at the positions its block covers (overlaps sum)."""
    fn = "fold"
    kernel, dilation, padding, stride = _fold_geometry(fn, kernel_size, dilation, padding,
                                                       stride)
    size = as_tuple(fn, "output_size", output_size, 2, 1)
    if not isinstance(input, Tensor) or input.ndim not in (2, 3):
        raise ShapeError(f"fold: expected a 2-D or 3-D input, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    k = kernel[0] * kernel[1]
    out = _blocks(fn, size, kernel, dilation, padding, stride)
    n, ck, length = x.shape
    if ck % k or length != out[0] * out[1]:
        raise ShapeError(f"fold: expected (N, C * {k}, {out[0] * out[1]}) for output_size "
                         f"{size} and kernel {kernel}, got {tuple(x.shape)}")
    c = ck // k
    hp, wp = size[0] + 2 * padding[0], size[1] + 2 * padding[1]
    ki, kj = np.divmod(np.arange(k), kernel[1])
    oa, ob = np.divmod(np.arange(length), out[1])
    rows = oa[None, :] * stride[0] + ki[:, None] * dilation[0]
    cols = ob[None, :] * stride[1] + kj[:, None] * dilation[1]
    table = creation.tensor((rows * wp + cols).reshape(1, 1, -1), device=x.device)
    flat = creation.zeros((n, c, hp * wp), dtype=x.dtype, device=x.device)
    flat = flat.scatter_add(2, table.expand(n, c, k * length), x.reshape(n, c, k * length))
    y = flat.reshape(n, c, hp, wp)[:, :, padding[0]:padding[0] + size[0],
                                   padding[1]:padding[1] + size[1]]
    return y.squeeze(0) if unbatched else y


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Unfold):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, " + super().extra_repr()
