"""`lazyt.utils.checkpoint`: torch's activation-checkpointing calls, so code written for
`torch.utils.checkpoint` runs unchanged.

lazyt decides what a backward pass keeps per device (`lazyt.device(..., checkpointing=
"balanced")`, the default, keeps the outputs of compute-bound ops and recomputes memory-bound
ones from them), for the whole graph. So `checkpoint(fn, *args)` calls `fn(*args)` as it is:
the values and gradients are those of the plain call, and the memory policy is the device's.
"""
from __future__ import annotations

from ..errors import InvalidArgumentError

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """`function(*args, **kwargs)`; torch's options are accepted (see the module's
    docstring for how lazyt saves memory)."""
    if not callable(function):
        raise InvalidArgumentError(f"checkpoint: function must be callable, got "
                                   f"{type(function).__name__}")
    if determinism_check not in ("default", "none"):
        raise InvalidArgumentError(f"checkpoint: determinism_check must be 'default' or 'none', "
                                   f"got {determinism_check!r}")
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant=None,  # noqa: A002
                          **kwargs):
    """Run `functions` (a Sequential or a list of modules) one after the other on `input`."""
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise InvalidArgumentError(f"checkpoint_sequential: segments must be an int >= 1, got "
                                   f"{segments!r}")
    mods = list(functions.children()) if hasattr(functions, "children") else list(functions)
    for f in mods:
        input = f(input)
    return input
