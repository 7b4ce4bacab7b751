"""Errors and warnings of the kernel hub."""
from __future__ import annotations

from ..errors import LazytError


class KernelHubError(LazytError, ValueError):
    """A kernel config, repo, kernel class or Layout that cannot be used as asked (the message
    names the key, repo, class or module path involved)."""


class ConversionError(KernelHubError):
    """A conversion rule that does not fit the checkpoint keys or shapes it is applied to."""


class KernelFallbackWarning(UserWarning):
    """`kernelize` kept the original forward for a kernel it cannot use (no implementation for
    the device, or no backward in training mode)."""
