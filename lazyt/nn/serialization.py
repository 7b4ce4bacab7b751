"""Checkpoints: `model.safetensors` (the safetensors numpy API; no torch) plus `config.json`
holding the model's constructor arguments.

A model whose layout was changed after construction (the kernel hub swaps modules for Layouts
with other parameter names) keeps loading and saving the original checkpoint keys through
*checkpoint adapters*: a module may carry an adapter object in its `checkpoint_adapter`
attribute with two methods working on flat dicts keyed relative to the module's parent:

- `from_checkpoint(state) -> state`: checkpoint keys -> the model's current keys;
- `to_checkpoint(state) -> state`: the model's current keys -> checkpoint keys.

Keys an adapter does not own pass through. This module only calls adapters, so `lazyt.nn`
never imports the kernel hub that creates them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .. import dtype as dt
from ..creation import tensor as _tensor
from ..device import Device, device as _device
from ..errors import LazytError
from ..tensor import Tensor

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
ADAPTER_ATTR = "checkpoint_adapter"


class CheckpointError(LazytError, OSError):
    """A checkpoint directory that cannot be written or read (missing files, bad config)."""


def _adapters(model):
    """(parent path, adapter) of every module carrying a checkpoint adapter, deepest first."""
    found = []
    for path, m in model.named_modules():
        adapter = m.__dict__.get(ADAPTER_ATTR)
        if adapter is not None:
            found.append((path.rpartition(".")[0] if "." in path else "", adapter))
    found.sort(key=lambda pa: -pa[0].count("."))
    return found


def _through(state: dict, parent: str, fn) -> dict:
    """Apply `fn` to the keys under `parent` (made relative), leaving the others alone."""
    if not parent:
        return dict(fn(dict(state)))
    prefix = parent + "."
    inner = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    out = {k: v for k, v in state.items() if not k.startswith(prefix)}
    out.update({prefix + k: v for k, v in fn(inner).items()})
    return out


def to_checkpoint_state(model, state: Mapping[str, Any] | None = None) -> dict:
    """`state` (default: `model.state_dict()`) with keys as the original checkpoint names them.

    Works for any dict of tensors keyed like the model's parameters, e.g. gradients."""
    out = dict(model.state_dict() if state is None else state)
    for parent, adapter in _adapters(model):
        out = _through(out, parent, adapter.to_checkpoint)
    return out


def from_checkpoint_state(model, state: Mapping[str, Any]) -> dict:
    """Checkpoint keys -> the model's current keys (the inverse of `to_checkpoint_state`)."""
    out = dict(state)
    for parent, adapter in reversed(_adapters(model)):
        out = _through(out, parent, adapter.from_checkpoint)
    return out


def _config_value(key: str, value: Any) -> Any:
    if isinstance(value, dt.DType):
        return value.name
    if isinstance(value, tuple):
        return [_config_value(key, v) for v in value]
    if isinstance(value, list):
        return [_config_value(key, v) for v in value]
    if isinstance(value, dict):
        return {k: _config_value(key, v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise CheckpointError(f"save_pretrained: constructor argument {key!r} = {value!r} "
                          f"({type(value).__name__}) cannot be written to {CONFIG_NAME}; "
                          "give the model JSON-friendly constructor arguments")


def save_pretrained(model, directory) -> None:
    """Write `model.safetensors` (original checkpoint key names) and `config.json` (the
    constructor arguments, without `device`)."""
    from safetensors.numpy import save_file

    directory = Path(directory)
    config = {k: _config_value(k, v) for k, v in model.get_config().items() if k != "device"}
    state = to_checkpoint_state(model)
    arrays = {k: np.ascontiguousarray(v.numpy() if isinstance(v, Tensor) else np.asarray(v))
              for k, v in state.items()}
    directory.mkdir(parents=True, exist_ok=True)
    # "pt" marks the torch-compatible tensor layout that transformers expects in the metadata.
    save_file(arrays, str(directory / WEIGHTS_NAME), metadata={"format": "pt"})
    with open(directory / CONFIG_NAME, "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")


def load_checkpoint(directory) -> dict:
    """The arrays of `<directory>/model.safetensors` as a dict of numpy arrays."""
    from safetensors.numpy import load_file

    path = Path(directory) / WEIGHTS_NAME
    if not path.is_file():
        raise CheckpointError(f"from_pretrained: no {WEIGHTS_NAME} in {str(directory)!r}")
    return load_file(str(path))


def read_config(directory) -> dict:
    path = Path(directory) / CONFIG_NAME
    if not path.is_file():
        raise CheckpointError(f"from_pretrained: no {CONFIG_NAME} in {str(directory)!r}")
    with open(path) as f:
        return json.load(f)


def load_checkpoint_state(model, state: Mapping[str, Any], strict: bool = True):
    """Load a state keyed as the checkpoint names it (numpy arrays or tensors) into `model`,
    whatever Layouts it holds now."""
    dev = model.get_device()
    tensors = {k: v if isinstance(v, Tensor) else _tensor(np.asarray(v), device=dev)
               for k, v in state.items()}
    return model.load_state_dict(from_checkpoint_state(model, tensors), strict=strict)


def from_pretrained(cls, directory, device=None, use_kernels: bool = False,
                    kernel_config=None, kernel_paths=None, dtype=None):
    """Build `cls.from_config(config.json)` on `device`, load `model.safetensors`, return it in
    eval mode. `dtype` casts the float parameters (default: as the model builds them).

    With `use_kernels=True` the `kernel_config` (a `lazyt.kernels.KernelConfig`) first patches
    its Layouts into the model (before the weights load, so its conversion rules map the
    checkpoint keys), then kernelizes the loaded model for inference on `device`.
    `kernel_paths` adds directories searched for kernel repos."""
    if not isinstance(directory, (str, os.PathLike)):
        raise CheckpointError(f"from_pretrained: expected a directory path, got "
                              f"{type(directory).__name__}")
    if use_kernels and kernel_config is None:
        raise LazytError("from_pretrained: use_kernels=True needs a kernel_config "
                         "(lazyt.kernels.KernelConfig)")
    config = read_config(directory)
    model = cls.from_config(config)
    dev: Device | None = None if device is None else _device(device)
    if dev is not None or dtype is not None:
        model.to(device=dev, dtype=dtype)
    if use_kernels:
        kernel_config.patch_model(model, kernel_paths=kernel_paths)
    load_checkpoint_state(model, load_checkpoint(directory), strict=True)
    model.eval()
    if use_kernels:
        kernel_config.kernelize_model(model, device=dev)
    return model
