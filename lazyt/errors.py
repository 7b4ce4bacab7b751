"""Error types. Every error lazyt raises for bad input is a `LazytError`.

Each also derives from the built-in exceptions torch raises for the same mistake, so code
written for torch keeps catching them: torch raises RuntimeError for most bad shapes, dtypes
and arguments (where Python's own convention is ValueError or TypeError, both are bases),
IndexError for an index or dim out of range, NotImplementedError for a missing kernel.
"""
import pickle


class LazytError(Exception):
    """Base class of every error lazyt raises on purpose."""


class ShapeError(LazytError, ValueError, RuntimeError):
    """Shapes that do not fit the op (broadcasting, matmul contraction, reshape size, ...)."""


class InvalidArgumentError(LazytError, ValueError, RuntimeError):
    """An argument value the op does not accept (a zero slice step, an unknown mode, ...)."""


class DTypeError(LazytError, TypeError, RuntimeError):
    """A dtype the op or the device does not support, or a value that does not fit it."""


class DeviceError(LazytError, RuntimeError):
    """Tensors on different devices, or a device whose backend is unavailable."""


class IndexOutOfRangeError(LazytError, IndexError):
    """An index or dim outside the valid range."""


class MissingImplError(LazytError, NotImplementedError):
    """An op has no implementation for a backend or layer of the stack."""


class DivisionByZeroError(LazytError, ZeroDivisionError, RuntimeError):
    """Integer `//` or `%` by a zero number (torch raises "ZeroDivisionError" on the cpu)."""


class LinAlgError(LazytError, RuntimeError):
    """A linear-algebra `_ex` function with `check_errors=True` met a singular or not positive
    definite matrix (torch.linalg.LinAlgError)."""


class UnsafeLoadError(LazytError, pickle.UnpicklingError):
    """`lazyt.load(weights_only=True)` met a global other than tensors and plain containers."""


class GradError(LazytError, RuntimeError):
    """Misuse of autodiff: backward on a non-scalar without a seed, or twice through a freed graph."""


class FusionError(LazytError, RuntimeError):
    """A lazily recorded op failed when the stream was executed."""


class CaptureError(LazytError, RuntimeError):
    """`lazyt.compile` cannot record or replay a function: it reads a tensor's value, draws
    random numbers, has data-dependent shapes, or records different ops for one signature."""


class DistributedError(LazytError, RuntimeError):
    """A collective across processes failed: a peer rank died or did not answer within the
    timeout, ranks called mismatched collectives or shapes, or no process group is set up."""


class MetadataMismatchError(LazytError, RuntimeError):
    """A custom op's real outputs disagree with what its metadata callback declared."""


class KernelLanguageError(LazytError, RuntimeError):
    """A kernel source launched on a runtime of another language."""


class KernelCompileError(LazytError, RuntimeError):
    """A kernel failed to compile; the message holds the compiler output."""


class TemplateError(LazytError, KeyError):
    """A kernel source template has an unfilled or unknown placeholder."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""
