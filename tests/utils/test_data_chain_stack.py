"""lazyt.utils.data's ChainDataset, StackDataset and `IterableDataset + IterableDataset`, with
hand-computed samples and (where torch is installed) against torch.utils.data."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
from lazyt.utils.data import (ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              StackDataset, TensorDataset)


class Stream(IterableDataset):
    """range(start, stop) as a stream; counts how often it was iterated."""

    def __init__(self, start, stop, with_len=True):
        self.start, self.stop, self.with_len = start, stop, with_len
        self.passes = 0

    def __iter__(self):
        self.passes += 1
        return iter(range(self.start, self.stop))

    def __len__(self):
        if not self.with_len:
            raise TypeError("no len")
        return self.stop - self.start


class Squares(Dataset):
    """A map-style dataset: sample i is i * i."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


class Batched(Squares):
    """A map-style dataset with `__getitems__`, which records the index lists it was given."""

    def __init__(self, n, drop=0):
        super().__init__(n)
        self.calls = []
        self.drop = drop

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [-i for i in indices][self.drop:]


# ---------------------------------------------------------------------- ChainDataset
def test_chain_dataset_iterates_each_dataset_in_turn_lazily():
    a, b = Stream(0, 3), Stream(10, 12)
    chain = ChainDataset([a, b])
    assert isinstance(chain, IterableDataset)
    it = iter(chain)
    assert (a.passes, b.passes) == (0, 0)  # nothing read before the first item
    assert next(it) == 0
    assert (a.passes, b.passes) == (1, 0)
    assert list(it) == [1, 2, 10, 11]
    assert (a.passes, b.passes) == (1, 1)
    assert list(chain) == [0, 1, 2, 10, 11]  # a new pass reads them again
    assert (a.passes, b.passes) == (2, 2)
    assert len(chain) == 5


def test_chain_dataset_of_no_datasets_and_of_a_generator():
    assert list(ChainDataset([])) == [] and len(ChainDataset([])) == 0
    # a one-shot iterable of datasets works for one pass (list() would first call __len__,
    # which uses it up, as torch's does)
    chain = ChainDataset(s for s in (Stream(0, 2), Stream(5, 6)))
    assert [v for v in chain] == [0, 1, 5]
    assert [v for v in chain] == []


def test_chain_dataset_len_needs_every_len():
    chain = ChainDataset([Stream(0, 3), Stream(0, 2, with_len=False)])
    with pytest.raises(TypeError, match="len"):
        len(chain)
    assert list(chain) == [0, 1, 2, 0, 1]  # list() tolerates the TypeError from __len__


def test_chain_dataset_refuses_map_style_datasets():
    chain = ChainDataset([Stream(0, 2), Squares(3)])
    it = iter(chain)
    assert [next(it), next(it)] == [0, 1]  # the first dataset is read before the check
    with pytest.raises(lazyt.InvalidArgumentError, match="only supports IterableDataset, got "
                                                         "Squares"):
        next(it)
    with pytest.raises(lazyt.InvalidArgumentError, match="only supports IterableDataset"):
        len(chain)


def test_adding_iterable_datasets_chains_them():
    a, b, c = Stream(0, 2), Stream(2, 4), Stream(7, 8)
    ab = a + b
    assert type(ab) is ChainDataset and ab.datasets == [a, b]
    abc = a + b + c
    assert type(abc) is ChainDataset
    assert list(abc) == [0, 1, 2, 3, 7] and len(abc) == 5
    # map-style + map-style still concatenates; map-style + iterable is still refused
    assert type(Squares(2) + Squares(3)) is ConcatDataset
    with pytest.raises(lazyt.InvalidArgumentError, match="IterableDataset"):
        Squares(2) + a


def test_chain_dataset_through_a_data_loader():
    chain = Stream(0, 3) + Stream(10, 13)
    batches = [b.numpy().tolist() for b in DataLoader(chain, batch_size=2)]
    assert batches == [[0, 1], [2, 10], [11, 12]]
    last_dropped = [b.numpy().tolist() for b in DataLoader(chain, batch_size=4, drop_last=True)]
    assert last_dropped == [[0, 1, 2, 10]]


def test_chain_dataset_matches_torch():
    torch = pytest.importorskip("torch")
    tdata = torch.utils.data

    class TStream(tdata.IterableDataset):
        def __init__(self, start, stop):
            self.start, self.stop = start, stop

        def __iter__(self):
            return iter(range(self.start, self.stop))

        def __len__(self):
            return self.stop - self.start

    ours = Stream(0, 3) + Stream(10, 12) + Stream(20, 21)
    theirs = TStream(0, 3) + TStream(10, 12) + TStream(20, 21)
    assert type(theirs) is tdata.ChainDataset
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)
    ob = [b.numpy().tolist() for b in DataLoader(ours, batch_size=4)]
    tb = [b.tolist() for b in tdata.DataLoader(theirs, batch_size=4)]
    assert ob == tb


# ---------------------------------------------------------------------- StackDataset
def test_stack_dataset_tuples():
    s = StackDataset(Squares(4), [10, 11, 12, 13])
    assert len(s) == 4
    assert s[0] == (0, 10) and s[3] == (9, 13)
    assert s.__getitems__([2, 0, 2]) == [(4, 12), (0, 10), (4, 12)]
    assert s.__getitems__([]) == []


def test_stack_dataset_dicts():
    s = StackDataset(x=Squares(3), y=["a", "b", "c"])
    assert len(s) == 3
    assert s[1] == {"x": 1, "y": "b"}
    assert list(s[2]) == ["x", "y"]  # the keyword order
    assert s.__getitems__([2, 1]) == [{"x": 4, "y": "c"}, {"x": 1, "y": "b"}]


def test_stack_dataset_uses_the_nested_getitems():
    inner = Batched(5)
    s = StackDataset(Squares(5), inner)
    assert s.__getitems__([3, 1, 4]) == [(9, -3), (1, -1), (16, -4)]
    assert inner.calls == [[3, 1, 4]]  # one call for the whole batch
    d = StackDataset(a=inner, b=Squares(5))
    assert d.__getitems__([0, 2]) == [{"a": 0, "b": 0}, {"a": -2, "b": 4}]
    assert inner.calls == [[3, 1, 4], [0, 2]]
    short = StackDataset(Squares(5), Batched(5, drop=1))
    with pytest.raises(lazyt.InvalidArgumentError, match="Expected 3, got 2"):
        short.__getitems__([0, 1, 2])
    with pytest.raises(lazyt.InvalidArgumentError, match="Expected 2, got 1"):
        StackDataset(k=Batched(5, drop=1)).__getitems__([0, 1])


def test_stack_dataset_errors():
    with pytest.raises(lazyt.InvalidArgumentError, match="size mismatch"):
        StackDataset(Squares(3), Squares(4))
    with pytest.raises(lazyt.InvalidArgumentError, match="size mismatch"):
        StackDataset(a=Squares(3), b=[1, 2])
    with pytest.raises(lazyt.InvalidArgumentError, match="both types are given"):
        StackDataset(Squares(2), b=Squares(2))
    with pytest.raises(lazyt.InvalidArgumentError, match="at least one dataset"):
        StackDataset()
    with pytest.raises(TypeError, match="len"):
        StackDataset(Stream(0, 2, with_len=False))
    assert issubclass(lazyt.InvalidArgumentError, ValueError)  # torch raises ValueError


def test_stack_dataset_through_a_data_loader():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    s = StackDataset(feat=TensorDataset(x), label=Batched(6))
    batches = list(DataLoader(s, batch_size=4))
    assert len(batches) == 2
    first = batches[0]
    assert sorted(first) == ["feat", "label"]
    np.testing.assert_array_equal(first["feat"][0].numpy(), x[:4])
    np.testing.assert_array_equal(first["label"].numpy(), [0, -1, -2, -3])
    np.testing.assert_array_equal(batches[1]["feat"][0].numpy(), x[4:])
    np.testing.assert_array_equal(batches[1]["label"].numpy(), [-4, -5])
    tup = list(DataLoader(StackDataset(Squares(3), Squares(3)), batch_size=3))
    assert len(tup) == 1
    np.testing.assert_array_equal(tup[0][0].numpy(), [0, 1, 4])
    np.testing.assert_array_equal(tup[0][1].numpy(), [0, 1, 4])


def test_stack_dataset_matches_torch():
    torch = pytest.importorskip("torch")
    tdata = torch.utils.data

    class TSquares(tdata.Dataset):
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return i * i

    class TBatched(TSquares):
        def __getitems__(self, indices):
            return [-i for i in indices]

    pairs = [(StackDataset(Squares(4), Batched(4)), tdata.StackDataset(TSquares(4), TBatched(4))),
             (StackDataset(a=Batched(4), b=[5, 6, 7, 8]),
              tdata.StackDataset(a=TBatched(4), b=[5, 6, 7, 8]))]
    for ours, theirs in pairs:
        assert len(ours) == len(theirs)
        assert [ours[i] for i in range(4)] == [theirs[i] for i in range(4)]
        assert ours.__getitems__([3, 0, 1]) == theirs.__getitems__([3, 0, 1])
    for args, kwargs in [((Squares(2), Squares(3)), {}), ((Squares(2),), {"b": Squares(2)}),
                         ((), {})]:
        with pytest.raises(ValueError):
            StackDataset(*args, **kwargs)
        targs = tuple(TSquares(len(a)) for a in args)
        tkwargs = {k: TSquares(len(v)) for k, v in kwargs.items()}
        with pytest.raises(ValueError):
            tdata.StackDataset(*targs, **tkwargs)
