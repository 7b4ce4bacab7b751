"""`lazyt.utils`: helpers around the tensor runtime; `lazyt.utils.data` loads datasets in
batches the way `torch.utils.data` does."""
from . import data  # noqa: F401  (`import lazyt.utils` then `lazyt.utils.data` works)

__all__ = ["data"]
