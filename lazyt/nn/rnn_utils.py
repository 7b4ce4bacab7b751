"""`lazyt.nn.utils.rnn`: torch's variable-length sequence helpers.

`pad_sequence` stacks sequences of different lengths with padding; `pack_padded_sequence` /
`pack_sequence` make a `PackedSequence` (torch's layout: the time steps' rows one after the
other, longest sequences first, with `batch_sizes` per step and the sort order), which
`RNN`, `LSTM` and `GRU` take as input (they return one, and `h_n` of each sequence at its own
last step); `pad_packed_sequence` turns it back into a padded batch and the lengths.
`unpack_sequence` and `unpad_sequence` give the list of sequences back.

The lengths are host values (a list or a cpu tensor, as torch requires); the packing and
unpacking are one gather each on the data's device.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import creation
from ..errors import InvalidArgumentError, ShapeError
from ..functional import cat, stack
from ..tensor import Tensor

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence", "unpad_sequence"]


class PackedSequence(NamedTuple):
    """torch's packed batch: `data` [sum of lengths, *], the rows of step 0 of every
    sequence, then step 1 of those still running, ...; `batch_sizes` (int64, cpu) how many
    sequences run at each step; `sorted_indices` / `unsorted_indices` the order by
    decreasing length and back (None when the batch came sorted)."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def lengths(self) -> np.ndarray:
        """Each sequence's length, in the batch's original order (host values)."""
        sizes = self.batch_sizes.numpy()
        n = int(sizes[0]) if sizes.size else 0
        sorted_len = (sizes[None, :] > np.arange(n)[:, None]).sum(1)
        if self.unsorted_indices is None:
            return sorted_len
        return sorted_len[self.unsorted_indices.numpy()]

    def to(self, *args, **kwargs) -> "PackedSequence":
        return self._replace(data=self.data.to(*args, **kwargs))

    @property
    def is_cuda(self) -> bool:
        return self.data.device.base == "cuda"


def _host_lengths(fn: str, lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        lengths = lengths.numpy()
    out = np.asarray(lengths)
    if out.ndim != 1 or (out.size and not np.issubdtype(out.dtype, np.integer)):
        raise InvalidArgumentError(f"{fn}: lengths must be a 1-D list or tensor of integers, "
                                   f"got {out.dtype} of shape {out.shape}")
    return out.astype(np.int64)


def _index(values, like: Tensor) -> Tensor:
    return creation.tensor(np.asarray(values, np.int64), device=like.device)


def _packed_positions(lengths: np.ndarray, order: np.ndarray):
    """(batch_sizes, for each packed row its (t, original batch index))."""
    steps = int(lengths.max()) if lengths.size else 0
    sorted_len = lengths[order]
    sizes = (sorted_len[None, :] > np.arange(steps)[:, None]).sum(1)
    t = np.repeat(np.arange(steps), sizes)
    rank = np.concatenate([np.arange(s) for s in sizes]) if steps else np.zeros(0, np.int64)
    return sizes.astype(np.int64), t, order[rank]


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors [L_i, *] into [max L, B, *] ([B, max L, *] with `batch_first`), padded
    with `padding_value` on the right (or the left)."""
    seqs = list(sequences)
    if not seqs or not all(isinstance(s, Tensor) for s in seqs):
        raise InvalidArgumentError("pad_sequence: expected a non-empty list of tensors")
    if padding_side not in ("right", "left"):
        raise InvalidArgumentError(f"pad_sequence: padding_side must be 'right' or 'left', "
                                   f"got {padding_side!r}")
    tail = tuple(seqs[0].shape[1:])
    if any(s.ndim < 1 or tuple(s.shape[1:]) != tail for s in seqs):
        raise ShapeError(f"pad_sequence: every sequence must be [L, {', '.join(map(str, tail))}"
                         f"], got shapes {[tuple(s.shape) for s in seqs]}")
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        missing = longest - s.shape[0]
        if missing:
            pad = creation.full((missing,) + tail, padding_value, dtype=s.dtype,
                                device=s.device)
            s = cat([s, pad], 0) if padding_side == "right" else cat([pad, s], 0)
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch [T, B, *] ([B, T, *] with `batch_first`) whose sequence b has
    `lengths[b]` steps. With `enforce_sorted` the lengths must not increase."""
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise ShapeError("pack_padded_sequence: input must be a tensor of at least 2 dims")
    lens = _host_lengths("pack_padded_sequence", lengths)
    x = input.transpose(0, 1) if batch_first else input
    steps, batch = x.shape[:2]
    if lens.shape[0] != batch:
        raise ShapeError(f"pack_padded_sequence: {lens.shape[0]} lengths for a batch of "
                         f"{batch}")
    if batch and (lens.min() < 1 or lens.max() > steps):
        raise InvalidArgumentError(f"pack_padded_sequence: lengths must be in [1, {steps}], "
                                   f"got {lens.tolist()}")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise InvalidArgumentError(
                "pack_padded_sequence: `lengths` array must be sorted in decreasing order "
                "when `enforce_sorted` is True; pass enforce_sorted=False to pack unsorted "
                "sequences")
        order = np.arange(batch)
        sorted_idx = unsorted_idx = None
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_idx = creation.tensor(order, device=x.device)
        unsorted_idx = creation.tensor(np.argsort(order, kind="stable"), device=x.device)
    return _pack(x, lens, order, sorted_idx, unsorted_idx)


def _pack(x: Tensor, lens: np.ndarray, order: np.ndarray, sorted_idx, unsorted_idx):
    """Pack the time-major padded batch `x` whose sequences, longest first, are `order`."""
    steps, batch = x.shape[:2]
    sizes, t, b = _packed_positions(lens, order)
    flat = x.reshape(steps * batch, *x.shape[2:])
    data = flat.index_select(0, _index(t * batch + b, x))
    return PackedSequence(data, creation.tensor(sizes), sorted_idx, unsorted_idx)


def repack(x: Tensor, like: PackedSequence) -> PackedSequence:
    """The time-major padded batch `x` packed as `like` is (same lengths and order): a
    recurrent layer's output for a packed input."""
    lens = like.lengths()
    order = np.arange(lens.shape[0]) if like.sorted_indices is None else \
        like.sorted_indices.numpy()
    return _pack(x, lens, order, like.sorted_indices, like.unsorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None) -> tuple:
    """`(padded, lengths)`: the batch [T, B, *] ([B, T, *] with `batch_first`) in its
    original order, T the longest length (or `total_length`), and the int64 lengths."""
    if not isinstance(sequence, PackedSequence):
        raise InvalidArgumentError(f"pad_packed_sequence: expected a PackedSequence, got "
                                   f"{type(sequence).__name__}")
    data = sequence.data
    lens = sequence.lengths()
    batch = lens.shape[0]
    steps = int(lens.max()) if batch else 0
    if total_length is not None:
        if total_length < steps:
            raise InvalidArgumentError(f"pad_packed_sequence: total_length ({total_length}) "
                                       f"is below the longest sequence ({steps})")
        steps = total_length
    order = np.arange(batch) if sequence.sorted_indices is None else \
        sequence.sorted_indices.numpy()
    _, t, b = _packed_positions(lens, order)
    where_row = np.full(steps * batch, data.shape[0], np.int64)   # the padding row
    where_row[t * batch + b] = np.arange(t.shape[0])
    pad = creation.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
                        device=data.device)
    out = cat([data, pad], 0).index_select(0, _index(where_row, data))
    out = out.reshape(steps, batch, *data.shape[1:])
    if batch_first:
        out = out.transpose(0, 1)
    return out, creation.tensor(lens)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """`pack_padded_sequence(pad_sequence(sequences), their lengths)`."""
    seqs = list(sequences)
    lens = [s.shape[0] for s in seqs]
    return pack_padded_sequence(pad_sequence(seqs), lens, enforce_sorted=enforce_sorted)


def unpad_sequence(padded: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of sequences of a padded batch, each cut to its length."""
    lens = _host_lengths("unpad_sequence", lengths)
    x = padded if batch_first else padded.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lens)]


def unpack_sequence(packed: PackedSequence) -> list:
    """The list of sequences of a PackedSequence, in the batch's original order."""
    padded, lens = pad_packed_sequence(packed, batch_first=True)
    return unpad_sequence(padded, lens, batch_first=True)
