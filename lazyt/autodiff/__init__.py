"""The Autodiff layer (Burn's `burn-autodiff`): reverse-mode gradients over any backend stack,
with checkpointed backward state. See `backend.Autodiff` and the op-author API in `ops`."""
from .backend import (Autodiff, enable_grad, inference_mode, is_grad_enabled,
                      is_inference_mode_enabled, no_grad, set_grad_enabled)
from .checkpoint import CheckpointStrategy, Checkpointer, saved_bytes, saved_tensors
from .grads import Gradients
from .node import Node, NodeId, Requirement, live_nodes
from .ops import (AutodiffTensor, Backward, Ops, Tracked, UnTracked, broadcast_shape,
                  untracked_view)

__all__ = ["Autodiff", "AutodiffTensor", "Backward", "CheckpointStrategy", "Checkpointer",
           "Gradients", "Node", "NodeId", "Ops", "Requirement", "Tracked", "UnTracked",
           "broadcast_shape", "enable_grad", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "live_nodes", "no_grad", "saved_bytes", "saved_tensors", "set_grad_enabled",
           "untracked_view"]
