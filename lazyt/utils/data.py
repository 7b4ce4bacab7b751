"""Data loading with `torch.utils.data`'s names and semantics: datasets, samplers,
`default_collate` and `DataLoader`, optionally with worker processes.

Shuffling draws from lazyt's generator (so `lazyt.manual_seed` makes it reproducible) unless a
`generator=` is given: an int seed or a `numpy.random.Generator` (lazyt has no Generator class).
Worker processes are started with `spawn` by default. They receive the dataset pickled, with
lazyt tensors sent as host arrays, and compute on cpu devices only: a cpu device stands for
itself and each GPU device (the default one included) for a cpu variant of its own (other
layer switches). Batches come back the same way and are rebuilt on the device each tensor
stands for, so they equal the batches of `num_workers=0`, devices included.
"""
from __future__ import annotations

import bisect
import io
import math
import multiprocessing
import pickle
import queue
import random
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..creation import tensor as _tensor
from ..data import generator as _global_generator
from ..data import manual_seed as _manual_seed
from ..device import device as _device
from ..device import get_default_device, set_default_device
from ..errors import (DTypeError, IndexOutOfRangeError, InvalidArgumentError, LazytError,
                      MissingImplError, ShapeError)
from ..functional import stack
from ..tensor import Tensor

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
    "StackDataset", "random_split",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "DistributedSampler", "BatchSampler", "default_collate",
    "default_convert",
    "DataLoader", "get_worker_info", "WorkerInfo", "WorkerError",
]


class WorkerError(LazytError, RuntimeError):
    """A DataLoader worker process died, timed out, or raised an error of a type that cannot be
    rebuilt in the main process."""


class _NoLengthError(InvalidArgumentError, TypeError):
    """A length needed of an object without `__len__`; a TypeError too, as Python's own is
    (and `list(loader)` only tolerates TypeErrors from `__len__`)."""


def _length(obj, op: str, why: str) -> int:
    try:
        return len(obj)
    except _NoLengthError:
        raise
    except TypeError:
        raise _NoLengthError(f"{op}: {why} needs len() of the {type(obj).__name__}, which "
                             "has no __len__") from None


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# ---------------------------------------------------------------------- random numbers
def _as_rng(generator, op: str):
    """`generator=` as a numpy or lazyt Generator; None means lazyt's generator, read at each
    draw."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if hasattr(generator, "numpy_generator"):      # a lazyt.Generator, read at each draw
        return generator
    if _is_int(generator) and -(1 << 63) <= generator < (1 << 64):
        return np.random.default_rng(int(generator) % (1 << 64))  # negative: as torch's seeds
    raise InvalidArgumentError(f"{op}: generator must be None (lazyt's generator, seeded by "
                               "lazyt.manual_seed), a lazyt.Generator, an int seed in "
                               "[-2**63, 2**64) or a numpy.random.Generator, got "
                               f"{type(generator).__name__} {generator!r:.60}")


def _rng(rng) -> np.random.Generator:
    return _global_generator(rng)


# ---------------------------------------------------------------------- datasets
class Dataset:
    """A map-style dataset: `dataset[i]` for `0 <= i < len(dataset)`; `a + b` concatenates."""

    def __getitem__(self, index):
        raise MissingImplError(f"{type(self).__name__}: subclasses of Dataset must implement "
                               "__getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream (`__iter__`); each DataLoader worker iterates its own copy,
    so split the work with `get_worker_info()` to avoid duplicates."""

    def __iter__(self):
        raise MissingImplError(f"{type(self).__name__}: subclasses of IterableDataset must "
                               "implement __iter__")

    def __add__(self, other) -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Rows of tensors (lazyt Tensors or numpy arrays) sharing their first dim:
    `dataset[i]` is `(t[i] for t in tensors)` as a tuple."""

    def __init__(self, *tensors):
        if not tensors:
            raise InvalidArgumentError("TensorDataset: expected at least one tensor")
        for k, t in enumerate(tensors):
            if isinstance(t, np.ndarray):
                if t.dtype.kind not in "biuf":
                    raise DTypeError(f"TensorDataset: numpy array {k} has dtype {t.dtype}; "
                                     "expected a bool, integer or float array")
            elif not isinstance(t, Tensor):
                raise DTypeError(f"TensorDataset: argument {k} is a {type(t).__name__}; "
                                 "expected a lazyt.Tensor or a numpy array")
            if len(t.shape) == 0:
                raise ShapeError(f"TensorDataset: argument {k} is 0-d; every tensor needs a "
                                 "first dim to index")
        sizes = [t.shape[0] for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ShapeError(f"TensorDataset: tensors must share their first dim, got sizes "
                             f"{sizes} (shapes {[tuple(t.shape) for t in tensors]})")
        self.tensors = tuple(tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, index):
        if _is_int(index):
            index = self._check(int(index))
        return tuple(t[index] for t in self.tensors)

    def _check(self, i: int) -> int:
        n = len(self)
        if not -n <= i < n:
            raise IndexOutOfRangeError(f"TensorDataset: index {i} is out of range for a "
                                       f"dataset of {n} rows")
        return i % n

    def _rows(self, indices) -> list:
        """`default_collate([self[i] for i in indices])`, read as one slice or one gather per
        tensor instead of a stack of rows."""
        idx = [self._check(int(i)) for i in indices]
        if idx == list(range(idx[0], idx[0] + len(idx))):
            key = slice(idx[0], idx[0] + len(idx))
        else:
            key = np.asarray(idx, dtype=np.int64)
        return [t[key] if isinstance(t, Tensor) else _tensor(t[key]) for t in self.tensors]


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list) -> list:
        """The samples at `indices` (through the dataset's own `__getitems__` if it has one)."""
        inner = [self.indices[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise InvalidArgumentError("ConcatDataset: expected at least one dataset")
        sizes = []
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise InvalidArgumentError("ConcatDataset: does not support IterableDataset")
            sizes.append(_length(d, "ConcatDataset", "concatenating"))
        self.cumulative_sizes = list(np.cumsum(sizes).tolist())

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if not _is_int(index):
            raise DTypeError(f"ConcatDataset: index must be an int, got {type(index).__name__}")
        if not -n <= index < n:
            raise IndexOutOfRangeError(f"ConcatDataset: index {index!r} is out of range for a "
                                       f"dataset of {n} items")
        index = int(index) % n
        k = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[k - 1] if k > 0 else 0
        return self.datasets[k][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, read lazily (torch's `ChainDataset`); `datasets`
    is iterated anew on every pass."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            _check_chained(d)
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            _check_chained(d)
            total += _length(d, "ChainDataset", "len(ChainDataset)")
        return total


def _check_chained(d) -> None:
    if not isinstance(d, IterableDataset):
        raise InvalidArgumentError(f"ChainDataset only supports IterableDataset, got "
                                   f"{type(d).__name__}")


class StackDataset(Dataset):
    """Datasets of one length side by side (torch's `StackDataset`): `StackDataset(a, b)[i]`
    is `(a[i], b[i])`, `StackDataset(x=a, y=b)[i]` is `{"x": a[i], "y": b[i]}`."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise InvalidArgumentError("StackDataset: supports either tuple-like (via args) or "
                                       "dict-like (via kwargs) input/output, but both types "
                                       "are given")
        if not args and not kwargs:
            raise InvalidArgumentError("StackDataset: at least one dataset should be passed")
        datasets = list(args or kwargs.values())
        lengths = [_length(d, "StackDataset", "stacking") for d in datasets]
        if any(n != lengths[0] for n in lengths):
            raise InvalidArgumentError(f"StackDataset: size mismatch between datasets (lengths "
                                       f"{lengths})")
        self._length = lengths[0]
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """The samples at `indices`, through each dataset's own `__getitems__` if it has one."""
        named = self.datasets.items() if isinstance(self.datasets, dict) \
            else enumerate(self.datasets)
        columns = {}
        for k, d in named:
            getitems = getattr(d, "__getitems__", None)
            if callable(getitems):
                items = getitems(indices)
                if len(items) != len(indices):
                    raise InvalidArgumentError(f"StackDataset: nested dataset's output size "
                                               f"mismatch. Expected {len(indices)}, got "
                                               f"{len(items)}")
            else:
                items = [d[i] for i in indices]
            columns[k] = items
        if isinstance(self.datasets, dict):
            return [{k: columns[k][j] for k in columns} for j in range(len(indices))]
        return [tuple(col[j] for col in columns.values()) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


def random_split(dataset, lengths: Sequence[int | float], generator=None) -> list[Subset]:
    """Split `dataset` into disjoint random `Subset`s covering it. `lengths` are ints summing to
    `len(dataset)` or fractions summing to 1 (each `floor(f * n)`, the remainder handed out one
    at a time from the first split on, as torch does)."""
    rng = _as_rng(generator, "random_split")
    n = _length(dataset, "random_split", "splitting")
    lengths = list(lengths)
    if not lengths:
        raise InvalidArgumentError("random_split: expected at least one length")
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        for f in lengths:
            if not 0 <= f <= 1:
                raise InvalidArgumentError(f"random_split: fraction {f} is not in [0, 1] "
                                           f"(lengths {lengths})")
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    else:
        if not all(_is_int(v) and v >= 0 for v in lengths):
            raise InvalidArgumentError(f"random_split: lengths must be non-negative ints "
                                       f"summing to len(dataset) = {n}, or fractions summing "
                                       f"to 1; got {lengths}")
        if total != n:
            raise InvalidArgumentError(f"random_split: lengths {lengths} sum to {total}, but "
                                       f"the dataset has {n} items; expected ints summing to "
                                       f"{n} or fractions summing to 1")
        sizes = [int(v) for v in lengths]
    perm = _rng(rng).permutation(n).tolist()
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, perm[start:start + size]))
        start += size
    return out


# ---------------------------------------------------------------------- samplers
class Sampler:
    """Yields dataset indices (or, for a batch sampler, lists of them)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self) -> Iterator:
        raise MissingImplError(f"{type(self).__name__}: subclasses of Sampler must implement "
                               "__iter__")


class SequentialSampler(Sampler):
    """`0, 1, ..., len(data_source) - 1`."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self)))

    def __len__(self) -> int:
        return _length(self.data_source, "SequentialSampler", "sampling")


class RandomSampler(Sampler):
    """A random permutation of the indices each epoch (or `num_samples` draws, with
    `replacement=True` independently). The order is drawn when `iter()` is called."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None):
        if not isinstance(replacement, bool):
            raise InvalidArgumentError(f"RandomSampler: replacement must be a bool, got "
                                       f"{replacement!r}")
        if num_samples is not None and (not _is_int(num_samples) or num_samples <= 0):
            raise InvalidArgumentError(f"RandomSampler: num_samples must be a positive int, "
                                       f"got {num_samples!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = _as_rng(generator, "RandomSampler")

    @property
    def num_samples(self) -> int:
        """Indices per epoch: `num_samples`, else `len(data_source)`."""
        if self._num_samples is not None:
            return int(self._num_samples)
        return _length(self.data_source, "RandomSampler", "sampling")

    def __iter__(self) -> Iterator[int]:
        n = _length(self.data_source, "RandomSampler", "sampling")
        m = self.num_samples
        rng = _rng(self.generator)
        if self.replacement:
            return iter(rng.integers(0, n, size=m).tolist())
        full, rest = divmod(m, n) if n else (0, 0)
        order = [i for _ in range(full) for i in rng.permutation(n).tolist()]
        if rest:
            order += rng.permutation(n)[:rest].tolist()
        return iter(order)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order each epoch."""

    def __init__(self, indices: Sequence[int], generator=None):
        self.indices = indices
        self.generator = _as_rng(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        perm = _rng(self.generator).permutation(len(self.indices)).tolist()
        return iter([self.indices[i] for i in perm])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        w = np.asarray(weights.numpy() if isinstance(weights, Tensor) else weights,
                       dtype=np.float64)
        if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) \
                or w.sum() <= 0:
            raise InvalidArgumentError("WeightedRandomSampler: weights must be a non-empty 1-D "
                                       "sequence of finite non-negative numbers with a "
                                       "positive sum")
        if not _is_int(num_samples) or num_samples <= 0:
            raise InvalidArgumentError(f"WeightedRandomSampler: num_samples must be a positive "
                                       f"int, got {num_samples!r}")
        if not replacement and num_samples > np.count_nonzero(w):
            raise InvalidArgumentError(f"WeightedRandomSampler: cannot draw {num_samples} "
                                       f"samples without replacement from "
                                       f"{np.count_nonzero(w)} non-zero weights")
        self.weights = w
        self.num_samples = int(num_samples)
        self.replacement = bool(replacement)
        self.generator = _as_rng(generator, "WeightedRandomSampler")

    def __iter__(self) -> Iterator[int]:
        rng = _rng(self.generator)
        picks = rng.choice(self.weights.size, size=self.num_samples, replace=self.replacement,
                           p=self.weights / self.weights.sum())
        return iter(picks.tolist())

    def __len__(self) -> int:
        return self.num_samples


class DistributedSampler(Sampler):
    """This rank's share of the indices (torch's `DistributedSampler`): every
    `num_replicas`-th index of one order, starting at `rank`. With `shuffle` the order is a
    permutation drawn from `seed + epoch` (the same on every rank; call `set_epoch` each
    epoch); without `drop_last` the order is padded by repeating its start so every rank gets
    `ceil(n / num_replicas)` indices, with it the tail is dropped. `num_replicas` and `rank`
    default to the process group's."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            from .. import distributed as dist
            if not dist.is_initialized():
                raise InvalidArgumentError("DistributedSampler: no process group; call "
                                           "lazyt.distributed.init_process_group() first or "
                                           "pass num_replicas= and rank=")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not _is_int(num_replicas) or num_replicas < 1:
            raise InvalidArgumentError(f"DistributedSampler: num_replicas must be a positive "
                                       f"int, got {num_replicas!r}")
        if not _is_int(rank) or not 0 <= rank < num_replicas:
            raise InvalidArgumentError(f"DistributedSampler: invalid rank {rank!r}, rank "
                                       f"should be in the interval [0, {num_replicas - 1}]")
        if not _is_int(seed):
            raise InvalidArgumentError(f"DistributedSampler: seed must be an int, got {seed!r}")
        self.dataset = dataset
        self.num_replicas = int(num_replicas)
        self.rank = int(rank)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        n = _length(dataset, "DistributedSampler", "splitting")
        if self.drop_last and n % self.num_replicas:
            self.num_samples = n // self.num_replicas
        else:
            self.num_samples = -(-n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        n = _length(self.dataset, "DistributedSampler", "splitting")
        if self.shuffle:
            rng = np.random.default_rng((self.seed + self.epoch) % (1 << 64))
            order = rng.permutation(n).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            order = order[:self.total_size]
        else:
            pad = self.total_size - len(order)
            while pad > 0 and order:
                order += order[:pad]
                pad = self.total_size - len(order)
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Draw the next epoch's order from `seed + epoch` (the same on every rank)."""
        self.epoch = int(epoch)


def _check_batch_size(op: str, batch_size) -> int:
    if not _is_int(batch_size) or batch_size <= 0:
        raise InvalidArgumentError(f"{op}: batch_size must be a positive int, got "
                                   f"{batch_size!r}")
    return int(batch_size)


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of `batch_size` (the last one shorter unless
    `drop_last`)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        self.batch_size = _check_batch_size("BatchSampler", batch_size)
        if not isinstance(drop_last, bool):
            raise InvalidArgumentError(f"BatchSampler: drop_last must be a bool, got "
                                       f"{drop_last!r}")
        self.sampler = sampler
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = _length(self.sampler, "BatchSampler", "counting batches")
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ---------------------------------------------------------------------- collation
def _numpy_batch(op: str, arrays: list) -> Tensor:
    try:
        arr = np.stack([np.asarray(a) for a in arrays])
    except ValueError:
        raise ShapeError(f"{op}: numpy arrays in a batch need one shape, got "
                         f"{[np.shape(a) for a in arrays]}") from None
    if arr.dtype.kind not in "biuf":
        raise DTypeError(f"{op}: numpy arrays of dtype {arr.dtype} cannot become a tensor; "
                         "expected bool, integer or float arrays")
    return _tensor(arr)


def default_collate(batch: list):
    """Stack a list of samples into a batch, as torch does: lazyt Tensors with `lazyt.stack`
    (on their device), numpy arrays and numbers into a tensor on the default device (Python
    floats as float32, lazyt's default, where torch gives float64), strings into a list; dicts,
    namedtuples, tuples and lists are collated per field (a tuple sample gives a list)."""
    if not isinstance(batch, (list, tuple)) or not batch:
        raise InvalidArgumentError(f"default_collate: expected a non-empty list of samples, "
                                   f"got {type(batch).__name__}"
                                   + (" of length 0" if isinstance(batch, (list, tuple)) else ""))
    elem = batch[0]
    if isinstance(elem, Tensor):
        try:
            return stack(batch, 0)
        except ShapeError:
            raise ShapeError(f"default_collate: tensors in a batch need one shape, got "
                             f"{[tuple(t.shape) for t in batch]}") from None
    if isinstance(elem, (np.ndarray, np.generic)) and not isinstance(elem, (np.str_, np.bytes_)):
        return _numpy_batch("default_collate", batch)
    if isinstance(elem, (bool, int, float)):
        return _tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        out = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        sizes = [len(s) for s in batch]
        if any(s != sizes[0] for s in sizes):
            raise ShapeError(f"default_collate: each sequence in a batch needs one length, got "
                             f"{sizes}")
        fields = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return fields
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    raise DTypeError(f"default_collate: samples must hold lazyt Tensors, numpy arrays, numbers, "
                     f"strings, dicts or sequences; found {type(elem).__name__}")


def default_convert(data):
    """What a DataLoader without batching (`batch_size=None`) does to each sample: numpy arrays
    and numpy scalars become tensors, containers are converted per item, the rest is kept."""
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return _tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return _tensor(data)
    if isinstance(data, Mapping):
        out = {key: default_convert(v) for key, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


# ---------------------------------------------------------------------- fetching
def _stacked_rows(dataset, indices):
    """The default-collated batch of a plain TensorDataset (or Subsets of one) read directly;
    None for any other dataset. Exact types only: a subclass may change `__getitem__`."""
    while type(dataset) is Subset:
        try:
            indices = [int(dataset.indices[i]) for i in indices]
        except (TypeError, ValueError):
            return None
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or not indices:
        return None
    return dataset._rows(indices)


def _fetch(dataset, indices, auto_collation: bool, collate_fn, where: list):
    """One batch of a map-style dataset. `where[0]` names what is being read, for errors."""
    if not auto_collation:
        where[0] = f"index {indices!r}"
        return collate_fn(dataset[indices])
    where[0] = f"indices {list(indices)}"
    if collate_fn is default_collate:
        rows = _stacked_rows(dataset, indices)
        if rows is not None:
            return rows
    getitems = getattr(dataset, "__getitems__", None)
    if getitems is not None:
        samples = getitems(list(indices))
    else:
        samples = []
        for i in indices:
            where[0] = f"index {i!r}"
            samples.append(dataset[i])
    where[0] = f"collating indices {list(indices)}"
    return collate_fn(samples)


class _StreamFetcher:
    """Batches of an IterableDataset, read from one iterator."""

    def __init__(self, dataset, auto_collation, collate_fn, batch_size, drop_last):
        self.it = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.ended = False

    def fetch(self):
        """The next batch; StopIteration at the end of the stream."""
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                sample = next(self.it)
            except StopIteration:
                self.ended = True
                raise
            return self.collate_fn(sample)
        batch = []
        while len(batch) < self.batch_size:
            try:
                batch.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.ended and self.drop_last and len(batch) < self.batch_size):
            self.ended = True
            raise StopIteration
        return self.collate_fn(batch)


# ---------------------------------------------------------------------- DataLoader
class DataLoader:
    """Iterates `dataset` in batches, as `torch.utils.data.DataLoader` does.

    `batch_size=None` turns batching off (each sample goes through `default_convert`).
    `pin_memory` is accepted and ignored (lazyt has no pinned host memory). `num_workers > 0`
    loads batches in worker processes (`multiprocessing_context`, default `"spawn"`), keeping
    their order; the dataset, `collate_fn` and `worker_init_fn` must then be picklable."""

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable | None = None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = ""):
        if not _is_int(num_workers) or num_workers < 0:
            raise InvalidArgumentError(f"DataLoader: num_workers must be an int >= 0, got "
                                       f"{num_workers!r}")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise InvalidArgumentError(f"DataLoader: timeout must be a number >= 0, got "
                                       f"{timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise InvalidArgumentError("DataLoader: prefetch_factor needs num_workers > 0 "
                                       "(it counts batches loaded ahead per worker)")
        if prefetch_factor is None:
            prefetch_factor = 2
        if not _is_int(prefetch_factor) or prefetch_factor < 1:
            raise InvalidArgumentError(f"DataLoader: prefetch_factor must be an int >= 1, got "
                                       f"{prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise InvalidArgumentError("DataLoader: persistent_workers=True needs "
                                       "num_workers > 0")
        if not isinstance(drop_last, bool):
            raise InvalidArgumentError(f"DataLoader: drop_last must be a bool, got "
                                       f"{drop_last!r}")
        shuffle = bool(shuffle)
        self.generator = generator
        rng = _as_rng(generator, "DataLoader")
        self._rng = rng
        self._iterable = isinstance(dataset, IterableDataset)

        if self._iterable:
            if shuffle:
                raise InvalidArgumentError("DataLoader: shuffle is not supported for an "
                                           "IterableDataset (its __iter__ sets the order)")
            if sampler is not None or batch_sampler is not None:
                raise InvalidArgumentError("DataLoader: an IterableDataset takes no sampler or "
                                           "batch_sampler (its __iter__ sets the order)")
        if sampler is not None and shuffle:
            raise InvalidArgumentError("DataLoader: shuffle=True cannot be combined with a "
                                       "sampler (the sampler sets the order; shuffle inside "
                                       "it, e.g. RandomSampler)")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise InvalidArgumentError("DataLoader: batch_sampler cannot be combined with "
                                           "batch_size, shuffle, sampler or drop_last (the "
                                           "batch_sampler sets all of them)")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise InvalidArgumentError("DataLoader: drop_last=True needs a batch_size "
                                           "(batch_size=None turns batching off)")
        else:
            batch_size = _check_batch_size("DataLoader", batch_size)

        if sampler is None and not self._iterable:
            if not hasattr(dataset, "__len__"):
                raise _NoLengthError(f"DataLoader: the default sampler needs len(dataset), but "
                                     f"{type(dataset).__name__} has no __len__; define it, "
                                     "pass sampler= or batch_sampler=, or use an "
                                     "IterableDataset")
            sampler = RandomSampler(dataset, generator=rng) if shuffle \
                else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = int(num_workers)
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None
            else default_convert)
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = int(prefetch_factor)
        self.persistent_workers = bool(persistent_workers)
        self._pool = None
        if num_workers > 0:
            self._context()  # an unknown start method fails here, not at the first iter()

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __len__(self) -> int:
        """Batches per epoch (for an IterableDataset: from its `__len__`, as torch does)."""
        if self._iterable:
            n = _length(self.dataset, "DataLoader", "len() of a loader over an IterableDataset")
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return _length(self._index_sampler, "DataLoader", "len(loader)")

    def __iter__(self):
        seed = self._base_seed()
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._pool is None or not self._pool.alive():
                self._pool = _WorkerPool(self, seed)
            return _MultiProcessIter(self, self._pool, owns_pool=False)
        return _MultiProcessIter(self, _WorkerPool(self, seed), owns_pool=True)

    def _base_seed(self) -> int:
        """Each epoch draws one seed before its order (with or without workers, so both use the
        generator alike); worker `k` seeds lazyt, `random` and numpy with `seed + k`
        (persistent workers keep the seed of their first epoch)."""
        return int(_rng(self._rng).integers(0, 2 ** 62))

    def _context(self):
        ctx = self.multiprocessing_context
        if ctx is None:
            return multiprocessing.get_context("spawn")
        if isinstance(ctx, str):
            try:
                return multiprocessing.get_context(ctx)
            except ValueError:
                raise InvalidArgumentError(f"DataLoader: unknown multiprocessing_context "
                                           f"{ctx!r}; expected one of "
                                           f"{multiprocessing.get_all_start_methods()}") from None
        return ctx

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown()


class _SingleProcessIter:
    """Batches loaded in the calling thread."""

    def __init__(self, loader: DataLoader):
        self._loader = loader
        self._sampler_iter = None if loader._iterable else iter(loader._index_sampler)
        self._stream = None
        if loader._iterable:
            self._stream = _StreamFetcher(loader.dataset, loader._auto_collation,
                                          loader.collate_fn, loader.batch_size,
                                          loader.drop_last)

    def __iter__(self):
        return self

    def __next__(self):
        if self._stream is not None:
            return self._stream.fetch()
        loader = self._loader
        indices = next(self._sampler_iter)
        return _fetch(loader.dataset, indices, loader._auto_collation, loader.collate_fn, [""])

    def __len__(self) -> int:
        return len(self._loader)


# ---------------------------------------------------------------------- worker processes
@dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: its `id` (0-based), `num_workers`, its
    `seed` and its copy of the `dataset`."""
    id: int
    num_workers: int
    seed: int
    dataset: Any


_WORKER_INFO: list = [None]


def get_worker_info() -> WorkerInfo | None:
    """The WorkerInfo of the DataLoader worker this runs in; None in the main process."""
    return _WORKER_INFO[0]


def _key(dev) -> tuple:
    return (dev.base, dev.index, dev.autodiff, dev.fusion, dev.checkpointing)


def _from_key(key: tuple):
    base, index, autodiff, fusion, checkpointing = key
    return _device(f"{base}:{index}", autodiff=autodiff, fusion=fusion,
                   checkpointing=checkpointing)


# cpu devices a worker can use in place of GPU devices (the plain cpu device stands for itself)
_CPU_STAND_INS = [("cpu", 0, a, f, c) for a in (True, False) for f in (True, False)
                  for c in ("balanced", "none")][1:]


def _stand_ins(devices) -> dict:
    """Main-process device key -> the key of the cpu device a worker computes on instead: a
    cpu device stands for itself, each GPU device gets a cpu variant of its own, so tensors
    the worker makes come back on the device they would have had without workers."""
    keys = list(dict.fromkeys(_key(d) for d in devices))
    table = {k: k for k in keys if k[0] == "cpu"}
    free = [k for k in _CPU_STAND_INS if k not in table]
    for k in keys:
        if k[0] != "cpu":
            if not free:
                raise InvalidArgumentError(f"DataLoader: workers compute on cpu devices and "
                                           f"have too few to stand in for {keys}")
            table[k] = free.pop(0)
    return table


class _Pickler(pickle.Pickler):
    """Pickles lazyt tensors as host arrays with their device's key."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.devices = []

    def persistent_id(self, obj):
        if isinstance(obj, Tensor):
            self.devices.append(obj.device)
            return ("lazyt.Tensor", np.ascontiguousarray(obj.numpy()), _key(obj.device))
        return None


class _Unpickler(pickle.Unpickler):
    """Rebuilds the tensors `_Pickler` wrote, on the device `devices` maps their key to (the
    device of the key itself when absent)."""

    def __init__(self, file, devices: dict):
        super().__init__(file)
        self.devices = devices

    def persistent_load(self, pid):
        _, arr, key = pid
        return _tensor(arr, device=_from_key(self.devices.get(key, key)))


def _dumps(obj) -> tuple[bytes, list]:
    """`obj` pickled, and the devices of the tensors in it."""
    buf = io.BytesIO()
    p = _Pickler(buf)
    p.dump(obj)
    return buf.getvalue(), p.devices


def _loads(data: bytes, devices: dict):
    return _Unpickler(io.BytesIO(data), devices).load()


class _ErrorMessage(str):
    # KeyError's str() is the repr of its argument: keep the message readable
    def __repr__(self):
        return str(self)


def _worker_loop(worker_id, num_workers, payload, devices, default, seed, index_queue,
                 result_queue, epoch_now, stop):
    """A worker process: reads tasks `(epoch, task, indices)` until None or `stop`, answers
    `(worker_id, epoch, task, status, data)` in the order the tasks came; tasks of an epoch
    other than `epoch_now` (one the main process left early) are skipped. `devices` maps the
    main process's devices to the cpu devices used here; `default` is the default's key."""
    parent = multiprocessing.parent_process()
    try:
        set_default_device(_from_key(devices[default]))
        random.seed(seed + worker_id)
        np.random.seed((seed + worker_id) % 2 ** 32)
        _manual_seed(seed + worker_id)
        (dataset, collate_fn, auto_collation, batch_size, drop_last, iterable,
         worker_init_fn) = _loads(payload, devices)
        _WORKER_INFO[0] = WorkerInfo(worker_id, num_workers, seed + worker_id, dataset)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        init_error = None
    except Exception as e:  # noqa: BLE001 - reported with every task
        init_error = _describe(e, "starting up")
    stream, stream_epoch = None, None
    while True:
        try:
            task = index_queue.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                break
            continue
        if task is None or stop.is_set():
            break
        epoch, task_idx, indices = task
        if epoch != epoch_now.value:
            continue
        if init_error is not None:
            result_queue.put((worker_id, epoch, task_idx, "error", init_error))
            continue
        where = [""]
        try:
            if iterable:
                if stream_epoch != epoch:
                    where[0] = "iter(dataset)"
                    stream_epoch, stream = epoch, None
                    stream = _StreamFetcher(dataset, auto_collation, collate_fn, batch_size,
                                            drop_last)
                where[0] = f"batch {task_idx} of the IterableDataset"
                try:
                    if stream is None:  # iter(dataset) failed earlier this epoch
                        raise StopIteration
                    batch = stream.fetch()
                except StopIteration:
                    result_queue.put((worker_id, epoch, task_idx, "end", None))
                    continue
            else:
                batch = _fetch(dataset, indices, auto_collation, collate_fn, where)
            where[0] = f"pickling batch {task_idx} to send it"
            data, _ = _dumps(batch)
        except Exception as e:  # noqa: BLE001 - re-raised in the main process
            result_queue.put((worker_id, epoch, task_idx, "error", _describe(e, where[0])))
            continue
        result_queue.put((worker_id, epoch, task_idx, "ok", data))
    result_queue.cancel_join_thread()


def _describe(e: BaseException, where: str) -> tuple:
    """An exception as (pickled type or None, where, 'Type: message', the worker's traceback)."""
    try:
        kind = pickle.dumps(type(e))
    except Exception:  # noqa: BLE001 - a local class: rebuilt as WorkerError
        kind = None
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return kind, where, f"{type(e).__name__}: {e}", tb


def _worker_exception(worker_id: int, info: tuple) -> BaseException:
    kind, where, summary, tb = info
    msg = _ErrorMessage(f"DataLoader worker {worker_id} failed on {where}: {summary}\n\n"
                        f"Traceback in the worker:\n{tb}")
    try:
        cls = pickle.loads(kind) if kind is not None else None
        err = cls(msg) if cls is not None else None
    except Exception:  # noqa: BLE001 - the type needs other arguments
        err = None
    if not isinstance(err, Exception):
        err = WorkerError(msg)
    return err


class _WorkerPool:
    """The worker processes of one DataLoader: an index queue each, one shared result queue."""

    def __init__(self, loader: DataLoader, seed: int):
        state = (loader.dataset, loader.collate_fn, loader._auto_collation, loader.batch_size,
                 loader.drop_last, loader._iterable, loader.worker_init_fn)
        try:
            payload, devices = _dumps(state)
        except Exception as e:  # noqa: BLE001 - pickling raises many types
            raise InvalidArgumentError(
                f"DataLoader: with num_workers={loader.num_workers} the dataset, collate_fn and "
                f"worker_init_fn are sent to worker processes and must be picklable (defined at "
                f"module level, no lambdas): {type(e).__name__}: {e}") from None
        default = _key(get_default_device())
        table = _stand_ins([get_default_device(), *devices])
        self.devices = {v: k for k, v in table.items()}  # worker's device -> ours
        ctx = loader._context()
        self._epoch = ctx.Value("q", 0, lock=False)
        self._stop = ctx.Event()
        self.num_workers = loader.num_workers
        self.result_queue = ctx.Queue()
        self.index_queues, self.workers = [], []
        for wid in range(loader.num_workers):
            q = ctx.Queue()
            q.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, name=f"lazyt-dataloader-worker-{wid}",
                            args=(wid, loader.num_workers, payload, table, default, seed, q,
                                  self.result_queue, self._epoch, self._stop),
                            daemon=True)
            w.start()
            self.index_queues.append(q)
            self.workers.append(w)
        self._closed = False

    @property
    def epoch(self) -> int:
        """The epoch whose tasks the workers run (one per `iter(loader)`)."""
        return self._epoch.value

    def next_epoch(self) -> int:
        self._epoch.value += 1
        return self._epoch.value

    def alive(self) -> bool:
        return not self._closed and all(w.is_alive() for w in self.workers)

    def get(self, timeout: float):
        """The next result; WorkerError when a worker died or `timeout` (if > 0) passed."""
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            try:
                return self.result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            for wid, w in enumerate(self.workers):
                if not w.is_alive():
                    self.shutdown()
                    raise WorkerError(f"DataLoader worker {wid} (pid {w.pid}) exited "
                                      f"unexpectedly with exit code {w.exitcode} (its output "
                                      "is above; with the 'spawn' start method the script's "
                                      "loop must run under `if __name__ == '__main__':`)")
            if deadline is not None and time.monotonic() >= deadline:
                raise WorkerError(f"DataLoader: timed out after {timeout} s waiting for a batch "
                                  "from the workers")

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for q in self.index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self.workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
                w.join(timeout=1)
        for q in self.index_queues:
            q.close()
        self.result_queue.cancel_join_thread()
        self.result_queue.close()


class _MultiProcessIter:
    """Batches loaded by worker processes, `prefetch_factor` per worker ahead, returned in
    the order of the sampler (of the round-robin over workers, for an IterableDataset)."""

    def __init__(self, loader: DataLoader, pool: _WorkerPool, owns_pool: bool):
        self._loader = loader
        self._pool = pool
        self._owns_pool = owns_pool
        self._sampler_iter = None if loader._iterable else iter(loader._index_sampler)
        self._epoch = pool.next_epoch()
        self._active = [True] * pool.num_workers
        self._next_worker = 0
        self._sent = 0
        self._received = 0
        self._buffer = {}
        self._done = False
        for _ in range(loader.prefetch_factor * pool.num_workers):
            self._put()

    def _put(self) -> None:
        if self._sampler_iter is not None:
            indices = next(self._sampler_iter, None)
            if indices is None:
                return
        else:
            indices = None
        n = self._pool.num_workers
        for _ in range(n):
            wid = self._next_worker
            self._next_worker = (wid + 1) % n
            if self._active[wid]:
                break
        else:
            return
        self._pool.index_queues[wid].put((self._epoch, self._sent, indices))
        self._sent += 1

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        pool = self._pool
        if pool.epoch != self._epoch:
            raise InvalidArgumentError("DataLoader: this iterator's persistent workers were "
                                       "taken over by a newer iter(loader)")
        while True:
            if self._received == self._sent:
                self._finish()
                raise StopIteration
            item = self._buffer.pop(self._received, None)
            if item is None:
                try:
                    got = pool.get(self._loader.timeout)
                except WorkerError:
                    self._finish()
                    raise
                wid, epoch, task, status, data = got
                if epoch == self._epoch:
                    self._buffer[task] = (wid, status, data)
                continue
            self._received += 1
            wid, status, data = item
            if status == "end":
                self._active[wid] = False
                continue
            self._put()
            if status == "error":
                self._finish()
                raise _worker_exception(wid, data)
            return _loads(data, pool.devices)

    def _finish(self) -> None:
        self._done = True
        if self._owns_pool:
            self._pool.shutdown()

    def __len__(self) -> int:
        return len(self._loader)

    def __del__(self):
        if getattr(self, "_owns_pool", False):
            self._pool.shutdown()
