"""`save_state` / `load_state`: an optimizer's state dict in one safetensors file.

Per-parameter state tensors are stored as float arrays named `state.<index>.<name>` (the
optimizer's `scalar_state`, such as Adam's `step`, as 0-d float32 arrays); the optimizer's class,
its param groups (hyper-parameters and parameter indices) and any non-tensor state go to the
file's metadata as JSON. safetensors comes with the `models` extra."""
from __future__ import annotations

import json
import os

import numpy as np

from ..creation import tensor as _tensor
from ..tensor import Tensor
from .optimizer import Optimizer, OptimizerError

FORMAT = "lazyt.optim"
_INSTALL = 'pip install -e ".[models]"'


def _safetensors(call: str):
    """The `safetensors.numpy` module, or an OptimizerError saying how to install it."""
    try:
        import safetensors.numpy as st
    except ImportError as e:
        raise OptimizerError(f"{call}: needs the safetensors package; install it with "
                             f"{_INSTALL}") from e
    return st


def _json(call: str, what: str, value) -> str:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=True)
    except TypeError as e:
        raise OptimizerError(f"{call}: {what} cannot be written as JSON ({e}); keep "
                             "hyper-parameters and non-tensor state to numbers, strings, "
                             "bools, None, lists and dicts") from None


def save_state(optimizer: Optimizer, path: str | os.PathLike) -> None:
    """Write `optimizer.state_dict()` to the safetensors file `path`."""
    call = "save_state"
    if not isinstance(optimizer, Optimizer):
        raise OptimizerError(f"{call}: expected a lazyt.optim.Optimizer, got "
                             f"{type(optimizer).__name__}")
    st = _safetensors(call)
    sd = optimizer.state_dict()
    arrays: dict[str, np.ndarray] = {}
    other: dict[str, dict] = {}
    for index, entries in sd["state"].items():
        for key, value in entries.items():
            if isinstance(value, Tensor):
                arrays[f"state.{index}.{key}"] = np.ascontiguousarray(value.numpy())
            else:
                other.setdefault(str(index), {})[key] = value
    metadata = {"format": FORMAT, "optimizer": type(optimizer).__name__,
                "param_groups": _json(call, "a param group", sd["param_groups"]),
                "state": _json(call, "the non-tensor state", other)}
    st.save_file(arrays, os.fspath(path), metadata=metadata)


def load_state(optimizer: Optimizer, path: str | os.PathLike) -> None:
    """Read a file written by `save_state` into `optimizer` (of the same class, over
    parameters of the same shapes in the same groups) with `load_state_dict`."""
    call = "load_state"
    if not isinstance(optimizer, Optimizer):
        raise OptimizerError(f"{call}: expected a lazyt.optim.Optimizer, got "
                             f"{type(optimizer).__name__}")
    st = _safetensors(call)
    from safetensors import safe_open

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise OptimizerError(f"{call}: no file {path!r}")
    with safe_open(path, framework="np") as f:
        metadata = f.metadata() or {}
    if metadata.get("format") != FORMAT:
        raise OptimizerError(f"{call}: {path!r} is not an optimizer state written by save_state "
                             f"(metadata format {metadata.get('format')!r}, expected {FORMAT!r})")
    saved_cls, cls = metadata.get("optimizer"), type(optimizer).__name__
    if saved_cls != cls:
        raise OptimizerError(f"{call}: {path!r} holds the state of a {saved_cls}, the "
                             f"optimizer is a {cls}")
    groups = json.loads(metadata["param_groups"])
    for g in groups:  # JSON has no tuples: betas and the like come back as lists
        for k, v in g.items():
            if k not in ("params", "param_names") and isinstance(v, list):
                g[k] = tuple(v)
    state: dict[int, dict] = {int(i): dict(v) for i, v in json.loads(metadata["state"]).items()}
    for name, array in st.load_file(path).items():
        _, index, key = name.split(".", 2)
        state.setdefault(int(index), {})[key] = _tensor(array, device="cpu")
    optimizer.load_state_dict({"state": state, "param_groups": groups})
