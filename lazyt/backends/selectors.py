"""`Autodiff` and `Fusion` as an extension names them in `backend_extension(...)` and
`implement(...)`. The layer classes live above the backends (`lazyt.autodiff`, `lazyt.fusion`)
and register themselves here, so a selector also answers `isinstance` and builds its layer
(`Autodiff(inner)`) without this package importing any layer."""
from __future__ import annotations

from ..errors import LazytError


class _LayerSelector(type):
    def __instancecheck__(cls, obj) -> bool:
        return cls.layer is not None and isinstance(obj, cls.layer)

    def __subclasscheck__(cls, sub) -> bool:
        return cls.layer is not None and issubclass(sub, cls.layer)

    def __call__(cls, *args, **kwargs):
        if cls.layer is None:
            raise LazytError(f"{cls.__name__}: the layer is not loaded (import lazyt first)")
        return cls.layer(*args, **kwargs)

    def __repr__(cls) -> str:
        return f"lazyt.backends.{cls.__name__}"


class Autodiff(metaclass=_LayerSelector):
    """Selects the Autodiff layer (`lazyt.autodiff.Autodiff`)."""

    layer = None


class Fusion(metaclass=_LayerSelector):
    """Selects the Fusion layer (`lazyt.fusion.Fusion`)."""

    layer = None


def register_layer(selector, layer_class) -> None:
    """Called by a layer's module: `selector` now stands for `layer_class`."""
    selector.layer = layer_class
