"""torch's `nn.AdaptiveLogSoftmaxWithLoss` (Grave et al., "Efficient softmax approximation
for GPUs"): the frequent classes share the `head` softmax with one entry per tail cluster; the
classes of cluster i sit behind a low-rank projection `tail[i]` (Linear -> Linear, no bias).

Parameter names and shapes are torch's (`head.weight`, `head.bias`, `tail.{i}.0.weight`,
`tail.{i}.1.weight`), so a torch state_dict loads. `forward` reads the targets once (their
range is checked, as torch does) and runs each cluster's projection on its own rows only; under
`lazyt.compile`, where no value is read, every cluster runs on every row and masks (same
values).
"""
from __future__ import annotations

from collections import namedtuple
from typing import Sequence

import numpy as np

from .. import capture_state as _capture
from .. import creation
from .. import dtype as dt
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..functional import cat, where
from ..functional import log_softmax as _log_softmax
from ..tensor import Tensor
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _valid_cutoffs(cutoffs: list, n_classes: int) -> bool:
    try:
        ints = all(int(c) == c for c in cutoffs)
    except (TypeError, ValueError):
        return False
    return (ints and cutoffs == sorted(cutoffs) and min(cutoffs) > 0
            and max(cutoffs) <= n_classes - 1 and len(set(cutoffs)) == len(cutoffs))


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over `n_classes` classes sorted by decreasing frequency: classes below
    `cutoffs[0]` in the head, then one cluster per cutoff interval whose projection has
    `in_features // div_value ** (i + 1)` features. `forward(input, target)` returns
    `(output, loss)`: each target's log-probability and the mean negative log-likelihood."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise InvalidArgumentError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a "
                                       "sequence of length larger than 0")
        if not _valid_cutoffs(cutoffs, n_classes):
            raise InvalidArgumentError(
                "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive "
                "integers sorted in an increasing order, where each value is between 1 and "
                f"n_classes-1 (n_classes={n_classes}), got {cutoffs}")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        """Draws every weight afresh, as `__init__` does."""
        fresh = AdaptiveLogSoftmaxWithLoss(self.in_features, self.n_classes, self.cutoffs[:-1],
                                           self.div_value, self.head_bias,
                                           device=self.head.weight.device,
                                           dtype=self.head.weight.dtype)
        self.load_state_dict(fresh.state_dict())

    # ------------------------------------------------------------------ forward
    def _checked(self, input, target) -> tuple:  # noqa: A002 - torch's name
        """(input (N, F), target (N,) int64, batched) after torch's shape checks."""
        name = "AdaptiveLogSoftmaxWithLoss"
        if not isinstance(input, Tensor) or not isinstance(target, Tensor):
            raise DTypeError(f"{name}: input and target must be lazyt Tensors, got "
                             f"{type(input).__name__} and {type(target).__name__}")
        if not target.dtype.is_int:
            raise DTypeError(f"{name}: target must be an integer tensor of class indices, got "
                             f"{target.dtype.name}")
        if target.ndim == 1:
            if input.ndim == 0 or input.shape[0] != target.shape[0]:
                raise ShapeError(f"{name}: input and target should have the same size in the "
                                 f"batch dimension, got {input.shape} and {target.shape}")
            if input.ndim != 2:
                raise ShapeError(f"{name}: 1D target tensor expects 2D input tensors, but "
                                 f"found inputs with size {input.shape}")
        elif target.ndim == 0:
            if input.ndim != 1:
                raise ShapeError(f"{name}: 0D target tensor expects 1D input tensors, but "
                                 f"found inputs with size {input.shape}")
        else:
            raise ShapeError(f"{name}: 0D or 1D target tensor expected, multi-target not "
                             f"supported (got target of shape {target.shape})")
        batched = target.ndim > 0
        if not batched:
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        return input, target.to(dt.int64), batched

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:  # noqa: A002
        x, target, batched = self._checked(input, target)
        host = None if _capture.active() else np.asarray(target.numpy())
        if host is not None and host.size and (host.min() < 0 or host.max() >= self.n_classes):
            raise InvalidArgumentError(
                f"AdaptiveLogSoftmaxWithLoss: target values should be in "
                f"[0, {self.n_classes - 1}], but values in range [{host.min()}, {host.max()}] "
                "were found")
        n = target.shape[0]
        output = creation.zeros((n,), dtype=x.dtype, device=x.device)
        # the head entry each row reads: its class in the shortlist, else its cluster's entry
        cluster = creation.zeros_like(target)
        for c in self.cutoffs[:-1]:
            cluster = cluster + (target >= c).to(dt.int64)
        head_index = where(cluster == 0, target, self.shortlist_size + cluster - 1)
        for i in range(1, len(self.cutoffs)):
            low, high = self.cutoffs[i - 1], self.cutoffs[i]
            if host is None:          # under capture: every row, masked
                rel = (target - low).clamp(0, high - low - 1)
                logp = _log_softmax(self.tail[i - 1](x), dim=1)
                local = logp.gather(1, rel.unsqueeze(1)).squeeze(1)
                output = where(cluster == i, local, output)
                continue
            rows = np.nonzero((host >= low) & (host < high))[0]
            if rows.size == 0:
                continue
            index = creation.tensor(rows.astype(np.int64), device=x.device)
            rel = creation.tensor(host[rows].astype(np.int64) - low, device=x.device)
            logp = _log_softmax(self.tail[i - 1](x.index_select(0, index)), dim=1)
            output = output.index_copy(0, index, logp.gather(1, rel.unsqueeze(1)).squeeze(1))
        head_logprob = _log_softmax(self.head(x), dim=1)
        output = output + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    # ------------------------------------------------------------------ full distribution
    def _full_log_prob(self, x: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = _log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster_logprob = _log_softmax(tail(x), dim=1)
            parts.append(cluster_logprob
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def _input_2d(self, fn: str, input) -> Tensor:  # noqa: A002 - torch's name
        if not isinstance(input, Tensor) or input.ndim != 2:
            got = input.shape if isinstance(input, Tensor) else type(input).__name__
            raise ShapeError(f"AdaptiveLogSoftmaxWithLoss.{fn}: expected an input of shape "
                             f"(N, {self.in_features}), got {got}")
        return input

    def log_prob(self, input: Tensor) -> Tensor:  # noqa: A002
        """Log-probabilities (N, n_classes) of every class for `input` (N, in_features)."""
        x = self._input_2d("log_prob", input)
        return self._full_log_prob(x, self.head(x))

    def predict(self, input: Tensor) -> Tensor:  # noqa: A002
        """The most probable class per row (int64, (N,)), `log_prob(input).argmax(1)`; the
        tails run only for the rows whose head argmax is a cluster (reads that mask, as
        torch)."""
        x = self._input_2d("predict", input)
        head_output = self.head(x)
        output = head_output.argmax(1)
        outside = np.asarray((output >= self.shortlist_size).numpy())
        if not outside.any():
            return output
        if outside.all():
            return self._full_log_prob(x, head_output).argmax(1)
        rows = creation.tensor(np.nonzero(outside)[0].astype(np.int64), device=x.device)
        full = self._full_log_prob(x.index_select(0, rows), head_output.index_select(0, rows))
        return output.index_copy(0, rows, full.argmax(1))
