"""torch's lazy modules: `LazyLinear`, `LazyConv*d`, `LazyConvTranspose*d`, `LazyBatchNorm*d`
and `LazyInstanceNorm*d`, whose input size (`in_features`, `in_channels`, `num_features`) is
read from the first input.

Until that first call their parameters and buffers are `UninitializedParameter`s and
`UninitializedBuffer`s (`lazyt/nn/parameter.py`). The first call materializes them in place
(the same objects, so an optimizer built before it trains them), fills them with the values
the regular class would start from, and then the module becomes that class
(`type(m) is nn.Linear`). A state dict loaded before the first call materializes them from
its shapes instead, as torch does.
"""
from __future__ import annotations

import inspect
from itertools import chain

from ..autodiff import no_grad
from ..errors import (CaptureError, DTypeError, InvalidArgumentError, LazytError,
                      ShapeError)
from ..tensor import Tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = [
    "LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d",
    "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "UninitializedParameter", "UninitializedBuffer", "is_lazy",
]


class LazyModuleMixin:
    """torch's `LazyModuleMixin`. A lazy class derives from it and from its regular class,
    builds that class with the inferred size 0 and calls `_make_lazy()`; it names the
    regular class (`cls_to_become`) and the constructor argument inferred (`_inferred`), and
    `_infer_size(input)` reads that size from an input (raising for an input that fits no
    size)."""

    cls_to_become: type | None = None
    _inferred: str = ""

    def _make_lazy(self) -> None:
        """Replace every parameter, and every buffer left empty by the size 0, with an
        uninitialized one of its dtype and device; infer the size on the first call."""
        d = self.__dict__
        for name, p in d["_parameters"].items():
            if p is not None:
                d["_parameters"][name] = UninitializedParameter(p.trainable, p.device, p.dtype)
        for name, b in d["_buffers"].items():
            if b is not None and b.ndim > 0 and b.numel() == 0:
                d["_buffers"][name] = UninitializedBuffer(False, b.device, b.dtype)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """True while a parameter or buffer of this module is uninitialized."""
        d = self.__dict__
        return any(is_lazy(t) for t in chain(d["_parameters"].values(), d["_buffers"].values()))

    def initialize_parameters(self, input, *args, **kwargs) -> None:  # noqa: A002
        """Read the inferred size from `input` and materialize what is uninitialized with the
        values the regular class starts from (its random draws, in its order)."""
        size = self._infer_size(input)
        if self.has_uninitialized_params():
            self._materialize(size)
        elif getattr(self, self._inferred) == 0:  # materialized by load_state_dict
            loaded = self._size_from_state()
            setattr(self, self._inferred, size if loaded is None else loaded)

    def _materialize(self, size: int) -> None:
        d = self.__dict__
        lazy = [t for t in chain(d["_parameters"].values(), d["_buffers"].values())
                if is_lazy(t)]
        config = self._regular_config(size)
        config.update(device=lazy[0].device, dtype=lazy[0].dtype)  # as moved by `to`
        with no_grad():
            try:
                fresh = self.cls_to_become(**config)
            except CaptureError as e:
                raise CaptureError(f"{type(self).__name__}: its first call draws the initial "
                                   f"values; call it once outside lazyt.compile (a dry run) "
                                   f"before compiling ({e})") from None
            for registry in ("_parameters", "_buffers"):
                for name, t in d[registry].items():
                    if is_lazy(t):
                        value = fresh.__dict__[registry][name]
                        t.materialize(value.shape)
                        t.copy_(value)
        setattr(self, self._inferred, size)

    def _regular_config(self, size: int) -> dict:
        """The regular class's constructor arguments: this module's, with the inferred size."""
        given = {self._inferred: size, **self.get_config()}
        sig = inspect.signature(self.cls_to_become.__init__)
        return {name: given[name] for name in sig.parameters if name in given}

    def _size_from_state(self) -> int | None:
        """The inferred size as the loaded parameters and buffers say (None: they do not)."""
        return None

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        """The forward pre-hook of the first call: materialize, then become the regular
        class (with its constructor arguments, for `get_config` and `save_pretrained`)."""
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise LazytError(f"{type(self).__name__}: has not been fully initialized")
        self._initialize_hook.remove()
        del self._initialize_hook
        config = self._regular_config(getattr(self, self._inferred))
        self.__dict__["_init_args"], self.__dict__["_init_kwargs"] = (), config
        self.__class__ = self.cls_to_become


def _tensor_input(fn: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise DTypeError(f"{fn}: expected a tensor input, got {type(x).__name__}")
    return x


# ---------------------------------------------------------------------- linear
class LazyLinear(LazyModuleMixin, Linear):
    """`Linear` whose `in_features` is the last dim of the first input."""

    cls_to_become = Linear
    _inferred = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        Linear.__init__(self, 0, 0, bias, device, dtype)
        self.out_features = out_features
        self._make_lazy()

    def _infer_size(self, x) -> int:
        x = _tensor_input(type(self).__name__, x)
        if x.ndim == 0:
            raise ShapeError(f"{type(self).__name__}: cannot infer in_features from a 0-d "
                             f"input; give at least one dim")
        return x.shape[-1]

    def _size_from_state(self) -> int | None:
        return self.weight.shape[1]


# ---------------------------------------------------------------------- convolutions
class _LazyConvNd(LazyModuleMixin):
    """`in_channels` is dim 1 of a batched input (N, C, *spatial), dim 0 of an unbatched one."""

    _inferred = "in_channels"

    def _lazy_out_channels(self, out_channels: int) -> None:
        name = type(self).__name__
        if isinstance(out_channels, bool) or not isinstance(out_channels, int) \
                or out_channels < 0:
            raise InvalidArgumentError(f"{name}: out_channels must be a non-negative int, got "
                                       f"{out_channels!r}")
        if out_channels % self.groups:
            raise InvalidArgumentError(f"{name}: out_channels ({out_channels}) must be "
                                       f"divisible by groups ({self.groups})")
        self.out_channels = out_channels
        self._make_lazy()

    def _infer_size(self, x) -> int:
        name, n = type(self).__name__, self._n
        x = _tensor_input(name, x)
        if x.ndim not in (n + 1, n + 2):
            raise ShapeError(f"{name}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) "
                             f"input, got shape {x.shape}")
        channels = x.shape[1] if x.ndim == n + 2 else x.shape[0]
        if channels % self.groups:
            raise InvalidArgumentError(f"{name}: the input's {channels} channels (shape "
                                       f"{x.shape}) must be divisible by groups ({self.groups})")
        return channels

    def _size_from_state(self) -> int | None:
        w = self.weight.shape
        return w[0] if self.transposed else w[1] * self.groups


class _LazyConv(_LazyConvNd):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None):
        self.cls_to_become.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups,
                                    bias, padding_mode, device, dtype)
        self._lazy_out_channels(out_channels)


class _LazyConvTranspose(_LazyConvNd):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None):
        self.cls_to_become.__init__(self, 0, 0, kernel_size, stride, padding, output_padding,
                                    groups, bias, dilation, padding_mode, device, dtype)
        self._lazy_out_channels(out_channels)


class LazyConv1d(_LazyConv, Conv1d):
    """`Conv1d` whose `in_channels` is read from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """`Conv2d` whose `in_channels` is read from the first input."""
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """`Conv3d` whose `in_channels` is read from the first input."""
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """`ConvTranspose1d` whose `in_channels` is read from the first input."""
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """`ConvTranspose2d` whose `in_channels` is read from the first input."""
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """`ConvTranspose3d` whose `in_channels` is read from the first input."""
    cls_to_become = ConvTranspose3d


# ---------------------------------------------------------------------- normalization
class _LazyNorm(LazyModuleMixin):
    """torch's `_LazyNormBase`: `num_features` is the input's channel dim. The defaults are
    torch's lazy ones (`affine=True, track_running_stats=True`, for instance norm too)."""

    _inferred = "num_features"

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *,
                 bias: bool = True):
        self.cls_to_become.__init__(self, 0, eps, momentum, affine, track_running_stats,
                                    device, dtype, bias=bias)
        self._make_lazy()

    def _channel_dim(self, x: Tensor) -> int:
        return 1

    def _infer_size(self, x) -> int:
        name = type(self).__name__
        x = _tensor_input(name, x)
        if x.ndim not in self._dims:
            raise ShapeError(f"{name}: expected {' or '.join(f'{d}-D' for d in self._dims)} "
                             f"input, got shape {x.shape}")
        return x.shape[self._channel_dim(x)]

    def _size_from_state(self) -> int | None:
        for t in (self.weight, self.bias, self.running_mean, self.running_var):
            if t is not None:
                return t.shape[0]
        return None


class _LazyInstanceNorm(_LazyNorm):
    def _channel_dim(self, x: Tensor) -> int:
        return 0 if x.ndim == min(self._dims) else 1  # (C, *spatial) is one unbatched sample


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """`BatchNorm1d` whose `num_features` is read from the first input."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """`BatchNorm2d` whose `num_features` is read from the first input."""
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """`BatchNorm3d` whose `num_features` is read from the first input."""
    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    """`InstanceNorm1d` whose `num_features` is read from the first input."""
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    """`InstanceNorm2d` whose `num_features` is read from the first input."""
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    """`InstanceNorm3d` whose `num_features` is read from the first input."""
    cls_to_become = InstanceNorm3d
