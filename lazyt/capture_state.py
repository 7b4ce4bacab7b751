"""Whether `lazyt.compile` is recording a function right now, and the hooks lazyt's own code
calls while it does (see `lazyt/capture.py`).

Kept apart from the capture machinery (it imports nothing of lazyt but the errors) so that the
low layers (Dispatch, Fusion, the in-place ops, random numbers) can ask it without import
cycles. Every hook is one attribute test when nothing is being recorded.
"""
from __future__ import annotations

from .errors import CaptureError


class _State:
    """`session`: the capture in progress (one per process at a time: `lazyt.compile` holds a
    lock while it records), or None. Only the recording thread's ops are captured; the hooks
    ask `session.mine()` before acting."""

    __slots__ = ("session",)

    def __init__(self):
        self.session = None


STATE = _State()


def active() -> bool:
    """True while `lazyt.compile` records a function on this thread."""
    s = STATE.session
    return s is not None and s.mine()


def refuse(what: str, why: str) -> None:
    """Raise `CaptureError` for `what` (an op or call) when a function is being recorded on
    this thread."""
    s = STATE.session
    if s is not None and s.mine():
        raise CaptureError(f"{what} inside a function compiled with lazyt.compile ({s.name}): "
                           f"{why}")


def saw(t) -> None:
    """A tensor is about to be read by an op (or changed): the capture notes its state."""
    s = STATE.session
    if s is not None:
        s.saw(t)


def saw_all(ts) -> None:
    """`saw` for each tensor among `ts` (other values are skipped)."""
    s = STATE.session
    if s is not None:
        s.saw_all(ts)


def made(t) -> None:
    """A tensor was created by an op inside the recorded function."""
    s = STATE.session
    if s is not None:
        s.made(t)
    return t


def watch(container: dict, key) -> None:
    """`container[key]` holds state that the recorded function may replace (an optimizer's
    per-parameter state): a replay writes the new value back there."""
    s = STATE.session
    if s is not None and s.mine():
        s.watch(container, key)


def guard(container: dict, key) -> None:
    """`container[key]` is a Python value the recording bakes in (a learning rate): a replay
    first checks it is unchanged, and records again when it is not."""
    s = STATE.session
    if s is not None and s.mine():
        s.guard(container, key)


__all__ = ["STATE", "active", "refuse", "saw", "saw_all", "made", "watch", "guard"]
