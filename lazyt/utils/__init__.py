"""`lazyt.utils`: helpers around the tensor runtime; `lazyt.utils.data` loads datasets in
batches the way `torch.utils.data` does; `lazyt.utils.checkpoint` takes torch's
activation-checkpointing calls."""
from . import checkpoint, data  # noqa: F401  (`import lazyt.utils` then `lazyt.utils.data` works)

__all__ = ["checkpoint", "data"]
