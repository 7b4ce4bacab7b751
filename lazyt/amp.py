"""Mixed precision, as torch.amp: `autocast` runs torch's "lower precision" ops (matmul,
linear, convolutions, attention) in float16 and its "float32" ops (softmax, norms, losses,
distances) in float32; `GradScaler` scales the loss so float16 gradients do not underflow.

One context variable (`AUTOCAST`) holds the autocast state; it is None outside every
`autocast` region, so each hooked op pays one `AUTOCAST.get() is not None` check when autocast
is off. Inside a region the hook calls `call(policy, op, *args)`: the floating-point tensor
arguments on an autocast device are cast by the op's policy (`Policy`), and the op runs once
more with autocast off, so the ops it is built from are not cast again (torch's autocast
kernels redispatch below autocast the same way). Casts are ordinary differentiable ops:
gradients flow back to float32 parameters in float32.

lazyt applies torch's CUDA op lists on every device (torch's own CPU lists differ: there,
softmax and layer_norm stay in float16) and has float16 as its only lower-precision dtype.
"""
from __future__ import annotations

import contextvars
import enum
import functools
import math
import warnings
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import dtype as dt
from .device import BASES
from .device import device as _device
from .dispatch import Dispatch, DispatchTensor
from .errors import DeviceError, DTypeError, InvalidArgumentError

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "GradScaler"]


# ---------------------------------------------------------------------- autocast state
class Policy(enum.Enum):
    """What autocast does to an op's floating-point tensor arguments."""
    LOWER = "lower"    # float32 -> the autocast dtype (float64 stays, as torch)
    FP32 = "fp32"      # float16 -> float32
    BANNED = "banned"  # refused inside autocast (torch's binary_cross_entropy)


@dataclass(frozen=True)
class _State:
    """One autocast region and the regions around it: the device types it casts on (with
    their dtype) and the dtype each device type was last given (enabled or not)."""
    enabled: dict   # device type -> autocast dtype, for enabled device types only
    dtypes: dict    # device type -> autocast dtype, as `get_autocast_dtype` reports


#: None outside every `autocast` region: the one check each hooked op makes.
AUTOCAST: contextvars.ContextVar[_State | None] = contextvars.ContextVar("lazyt_autocast",
                                                                       default=None)

_DEFAULT_DTYPE = {"cuda": dt.float16, "wgpu": dt.float16}


def _device_type(fn: str, device_type) -> str:
    if not isinstance(device_type, str) or device_type.split(":")[0] not in BASES:
        raise InvalidArgumentError(f"{fn}: device_type must be one of {', '.join(BASES)} "
                                   f"(lazyt's device types), got {device_type!r}")
    return device_type.split(":")[0]


def _low_dtype(device_type: str, dtype) -> dt.DType:
    """The autocast dtype asked for: float16, the only lower-precision dtype lazyt has."""
    if dtype is None:
        if device_type not in _DEFAULT_DTYPE:
            raise DTypeError("autocast: torch's default autocast dtype on 'cpu' is bfloat16, "
                             "which lazyt does not have; pass dtype=lazyt.float16 "
                             "(lazyt.autocast('cpu', dtype=lazyt.float16))")
        return _DEFAULT_DTYPE[device_type]
    if "bfloat16" in str(dtype):
        raise DTypeError(f"autocast: lazyt has no bfloat16 dtype (got {dtype!r}); its "
                         "lower-precision dtype is lazyt.float16")
    try:
        d = dt.as_dtype(dtype)
    except (DTypeError, TypeError, ValueError):
        d = None
    if d is not dt.float16:
        raise DTypeError(f"autocast: dtype must be lazyt.float16 (lazyt's only "
                         f"lower-precision dtype), got {dtype!r}")
    return d


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether ops on `device_type` tensors are autocast here (torch's function)."""
    state = AUTOCAST.get()
    return state is not None and _device_type("is_autocast_enabled", device_type) in \
        state.enabled


def get_autocast_dtype(device_type: str) -> dt.DType:
    """The dtype autocast uses on `device_type`: the innermost region's for it, else
    float16 (torch's default on 'cpu' is bfloat16, which lazyt does not have)."""
    base = _device_type("get_autocast_dtype", device_type)
    state = AUTOCAST.get()
    if state is not None and base in state.dtypes:
        return state.dtypes[base]
    return dt.float16


class autocast:  # noqa: N801 - torch's name
    """`with lazyt.autocast("cuda"):` (or as a decorator): inside, torch's lower-precision
    ops run in `dtype` (float16) on `device_type` tensors and its float32 ops in float32.
    `enabled=False` turns autocast off for the region; regions nest. On 'cpu' pass
    dtype=lazyt.float16 (torch's cpu default, bfloat16, is not in lazyt). `cache_enabled` is
    accepted and has no effect: each use casts again (a lazy elementwise op), since a cached
    copy's graph would be freed by the first backward()."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        self.device = _device_type("autocast", device_type)
        if not isinstance(enabled, bool):
            raise InvalidArgumentError(f"autocast: enabled must be a bool, got {enabled!r}")
        self.fast_dtype = _low_dtype(self.device, dtype)
        self._enabled = enabled
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self._tokens: list = []

    def __enter__(self) -> "autocast":
        outer = AUTOCAST.get()
        enabled = dict(outer.enabled) if outer is not None else {}
        dtypes = dict(outer.dtypes) if outer is not None else {}
        dtypes[self.device] = self.fast_dtype
        if self._enabled:
            enabled[self.device] = self.fast_dtype
        else:
            enabled.pop(self.device, None)
        self._tokens.append(AUTOCAST.set(_State(enabled, dtypes)))
        return self

    def __exit__(self, *exc) -> None:
        AUTOCAST.reset(self._tokens.pop())

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return run


# ---------------------------------------------------------------------- the hook
def call(policy: Policy, op: Callable, *args, **kwargs):
    """`op(*args, **kwargs)` with its floating-point tensor arguments cast by `policy`,
    run with autocast off (the hook at the top of each autocast op calls this)."""
    state = AUTOCAST.get()
    if policy is Policy.BANNED:
        if any(_on(state, a) for a in (*args, *kwargs.values())):
            raise DTypeError(
                f"{op.__name__}: unsafe to autocast (as in torch): a sigmoid before a binary "
                "cross entropy is better computed by binary_cross_entropy_with_logits "
                "(nn.BCEWithLogitsLoss), which is safe to autocast; or leave the autocast "
                "region for this call")
    else:
        args = tuple(_cast(state, policy, a) for a in args)
        kwargs = {k: _cast(state, policy, v) for k, v in kwargs.items()}
    token = AUTOCAST.set(None)
    try:
        return op(*args, **kwargs)
    finally:
        AUTOCAST.reset(token)


def _on(state: _State, x) -> bool:
    return isinstance(x, DispatchTensor) and x.device.base in state.enabled


def _cast(state: _State, policy: Policy, x):
    if not isinstance(x, DispatchTensor):
        return x
    low = state.enabled.get(x.device.base)
    if low is None:
        return x
    if policy is Policy.FP32:
        return Dispatch.cast(x, dt.float32) if x.dtype is low else x
    return Dispatch.cast(x, low) if x.dtype is dt.float32 else x


# ---------------------------------------------------------------------- GradScaler
class _Stage(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": _Stage.READY, "found_inf": None}


def _f32(v: float) -> float:
    """`v` rounded to float32, as torch keeps the scale."""
    return float(np.float32(v))


class GradScaler:
    """torch.amp.GradScaler: `scaler.scale(loss).backward()`, `scaler.step(optimizer)` (skipped
    when a gradient is inf or NaN), `scaler.update()` (the scale backs off after an overflow,
    grows after `growth_interval` clean steps). Reads each parameter's `.grad` (torch's flow).

    The scale and growth tracker are kept on the host: `step` reads one flag per optimizer
    (one lazy reduction over all its gradients, one host read), `update` reuses it."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        self._device = _device_type("GradScaler", device)
        self._enabled = bool(enabled)
        if self._enabled:
            try:
                _device(self._device)
            except DeviceError:
                warnings.warn(f"lazyt.amp.GradScaler is enabled, but the {self._device!r} "
                              "device is not available. Disabling.", stacklevel=2)
                self._enabled = False
        if growth_factor <= 1.0:
            raise InvalidArgumentError(f"GradScaler: growth_factor must be > 1.0, got "
                                       f"{growth_factor}")
        if backoff_factor >= 1.0:
            raise InvalidArgumentError(f"GradScaler: backoff_factor must be < 1.0, got "
                                       f"{backoff_factor}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or \
                growth_interval <= 0:
            raise InvalidArgumentError(f"GradScaler: growth_interval must be a positive int, "
                                       f"got {growth_interval!r}")
        self._init_scale = float(init_scale)
        self._scale: float | None = None
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker: int | None = None
        self._per_optimizer_states: defaultdict = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ scaling
    def scale(self, outputs):
        """`outputs` (a tensor, or nested lists/tuples of tensors) times the scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = _f32(self._init_scale)
            self._growth_tracker = self._init_growth_tracker
        return self._scaled(outputs)

    def _scaled(self, v):
        if isinstance(v, DispatchTensor):
            return v * self._scale
        if isinstance(v, (list, tuple)):
            out = [self._scaled(x) for x in v]
            return type(v)(*out) if hasattr(v, "_fields") else type(v)(out)
        raise InvalidArgumentError(f"GradScaler.scale: outputs must be a Tensor or an "
                                   f"iterable of Tensors, got {type(v).__name__}")

    def _check_started(self, fn: str) -> None:
        if self._scale is None:
            raise InvalidArgumentError(f"GradScaler.{fn}: called before scale(); this may "
                                       "indicate your script did not use scaler.scale(loss "
                                       "or outputs) earlier in the iteration")

    def unscale_(self, optimizer) -> None:
        """Divide the `.grad` of `optimizer`'s parameters by the scale (in place), and note
        whether any is inf or NaN. At most once per optimizer between `update()`s."""
        if not self._enabled:
            return
        self._check_started("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is _Stage.UNSCALED:
            raise InvalidArgumentError("GradScaler.unscale_() has already been called on this "
                                       "optimizer since the last update()")
        if state["stage"] is _Stage.STEPPED:
            raise InvalidArgumentError("GradScaler.unscale_() is being called after step()")
        inv_scale = _f32(1.0 / self._scale)
        state["found_inf"] = self._unscale_grads(optimizer, inv_scale)
        state["stage"] = _Stage.UNSCALED

    @staticmethod
    def _unscale_grads(optimizer, inv_scale: float) -> list:
        """Unscale every gradient; per device, one lazy sum of `grad * 0` over the scaled
        gradients (0 when every element is finite, NaN otherwise), as torch checks them."""
        from .autodiff import no_grad
        flags: dict = {}
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype is dt.float16:
                        raise InvalidArgumentError(
                            f"GradScaler.unscale_: attempting to unscale float16 gradients "
                            f"(parameter of shape {p.shape}); keep the parameters in float32 "
                            "and let autocast cast them")
                    flag = (g * 0).sum().to(dt.float32)
                    flags[g.device] = flag if g.device not in flags else flags[g.device] + flag
                    p.grad = g * inv_scale
        return list(flags.values())

    @staticmethod
    def _found_inf(state: dict) -> bool:
        """Read (once) whether this optimizer's gradients had an inf or NaN."""
        found = state["found_inf"]
        if not isinstance(found, bool):
            found = any(not math.isfinite(f.item()) for f in found)
            state["found_inf"] = found
        return found

    def step(self, optimizer, *args, **kwargs) -> Any:
        """Unscale (unless `unscale_` was called) and, if no gradient is inf or NaN,
        `optimizer.step(*args, **kwargs)`; returns its return value (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise InvalidArgumentError("GradScaler.step: closure use is not supported while "
                                       "the GradScaler is enabled (as in torch)")
        self._check_started("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is _Stage.STEPPED:
            raise InvalidArgumentError("GradScaler.step() has already been called since the "
                                       "last update()")
        if state["stage"] is _Stage.READY:
            self.unscale_(optimizer)
        retval = None
        if not self._found_inf(state):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _Stage.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """After the step(s): back off the scale if any step saw an inf or NaN, else count a
        clean step and grow it every `growth_interval` of them; or set `new_scale`."""
        if not self._enabled:
            return
        self._check_started("update")
        if new_scale is not None:
            if isinstance(new_scale, DispatchTensor):
                if math.prod(new_scale.shape) != 1:
                    raise InvalidArgumentError(f"GradScaler.update: new_scale must be a float "
                                               f"or a 1-element tensor, got shape "
                                               f"{new_scale.shape}")
                new_scale = new_scale.item()
            self._scale = _f32(new_scale)
        else:
            states = [s for s in self._per_optimizer_states.values()
                      if s["found_inf"] is not None]
            if not states:
                raise InvalidArgumentError("GradScaler.update: no inf checks were recorded "
                                           "before update(); call step() or unscale_() first")
            if any(self._found_inf(s) for s in states):
                self._scale = _f32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = _f32(self._scale * self._growth_factor)
                    if math.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
        self._per_optimizer_states = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ settings and state
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None \
            else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """torch's: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
        ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise InvalidArgumentError("GradScaler.load_state_dict: the state dict is empty, "
                                       "possibly because it was saved from a disabled "
                                       "GradScaler")
        try:
            self._init_scale = float(state_dict["scale"])
            self._growth_factor = float(state_dict["growth_factor"])
            self._backoff_factor = float(state_dict["backoff_factor"])
            self._growth_interval = int(state_dict["growth_interval"])
            self._init_growth_tracker = int(state_dict["_growth_tracker"])
        except KeyError as e:
            raise InvalidArgumentError(f"GradScaler.load_state_dict: missing key {e}") from None
        if self._scale is not None:
            self._scale = _f32(self._init_scale)
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker
