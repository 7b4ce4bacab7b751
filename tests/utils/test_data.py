"""lazyt.utils.data: datasets, samplers, collation and DataLoader, checked against numpy slicing
and torch's documented behaviour."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import lazyt
import lazyt.utils.data
from lazyt.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,
                              RandomSampler, SequentialSampler, Subset, SubsetRandomSampler,
                              TensorDataset, WeightedRandomSampler, default_collate,
                              default_convert, get_worker_info, random_split)


def _rows(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) * 10
    return x, y


class RowByRow(TensorDataset):
    """A TensorDataset subclass: the loader reads it one row at a time and stacks the rows."""

    def __getitem__(self, index):
        return super().__getitem__(index)


class Records(Dataset):
    """Dict samples holding a lazyt tensor row and a Python int (picklable for workers)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"x": self.x[i], "y": int(self.y[i])}


_WORKER_OFFSET = [0]


def _init_worker(worker_id):
    info = get_worker_info()
    assert info is not None and info.id == worker_id and info.num_workers == 2
    _WORKER_OFFSET[0] = 1000


class Shards(IterableDataset):
    """0..n-1 split between the workers by `get_worker_info()`."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        first, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter([i + _WORKER_OFFSET[0] for i in range(first, self.n, step)])


def _other_device():
    """A GPU device when one is present (workers then compute on a cpu stand-in for it),
    else a cpu device with other layer switches."""
    for spec in ("cuda", "wgpu"):
        try:
            dev = lazyt.device(spec)
            dev.backend  # noqa: B018 - builds the stack
            return dev
        except Exception:  # noqa: BLE001 - absent here
            pass
    return lazyt.device("cpu", fusion=False)


class Stream(IterableDataset):
    def __init__(self, n, with_len=True):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if not self.with_len:
            raise TypeError("no length")
        return self.n


def _labels(loader):
    return [b[1].tolist() for b in loader]


# ---------------------------------------------------------------------- batches
@pytest.mark.parametrize("cls", [TensorDataset, RowByRow], ids=["sliced", "stacked"])
def test_batches_equal_numpy_slicing(device, check, cls):
    x, y = _rows(10)
    ds = cls(lazyt.from_numpy(x, device=device), y)
    loader = DataLoader(ds, batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert len(batches) == 3
    for k, (bx, by) in enumerate(batches):
        check(bx, x[4 * k:4 * k + 4], device=device)
        check(by, y[4 * k:4 * k + 4], device=lazyt.get_default_device())
    dropped = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dropped) == 2
    assert [b[1].tolist() for b in dropped] == [y[:4].tolist(), y[4:8].tolist()]


def test_shuffled_batches_match_numpy_on_device(device, check):
    x, y = _rows(9)
    loader = DataLoader(TensorDataset(lazyt.from_numpy(x, device=device),
                                      lazyt.from_numpy(y, device=device)),
                        batch_size=4, shuffle=True, generator=3)
    seen = []
    for bx, by in loader:
        idx = by.numpy() // 10
        check(bx, x[idx], device=device)
        seen += idx.tolist()
    assert sorted(seen) == list(range(9))


def test_default_collate_stacks_tensors_on_their_device(device, check):
    rows = [lazyt.tensor([1.0, 2.0], device=device), lazyt.tensor([3.0, 4.0], device=device)]
    check(default_collate(rows), np.array([[1, 2], [3, 4]], np.float32), device=device)
    other = lazyt.device("cpu", fusion=False) if device != lazyt.device("cpu", fusion=False) \
        else lazyt.device("cpu")
    with pytest.raises(lazyt.DeviceError):
        default_collate([rows[0], lazyt.tensor([1.0, 2.0], device=other)])


def test_subset_of_tensor_dataset_reads_the_mapped_rows(check):
    x, y = _rows(8)
    sub = Subset(TensorDataset(lazyt.from_numpy(x), y), [6, 2, 3, 7])
    assert len(sub) == 4
    bx, by = next(iter(DataLoader(sub, batch_size=3)))
    check(bx, x[[6, 2, 3]])
    check(by, y[[6, 2, 3]])
    check(sub[1][0], x[2])
    assert len(sub.__getitems__([0, 3])) == 2


def test_batch_size_none_yields_converted_samples(check):
    x, y = _rows(3)
    samples = list(DataLoader(TensorDataset(x, y), batch_size=None))
    assert len(samples) == 3
    check(samples[2][0], x[2])
    check(samples[2][1], np.array(y[2]))
    assert isinstance(samples[0], list)  # tuples become lists, as in torch


def test_custom_collate_fn_and_batch_sampler():
    x, y = _rows(6)
    ds = TensorDataset(x, y)
    loader = DataLoader(ds, batch_sampler=[[5, 0], [1], [2, 3, 4]],
                        collate_fn=lambda batch: [int(s[1]) for s in batch])
    assert len(loader) == 3
    assert list(loader) == [[50, 0], [10], [20, 30, 40]]


# ---------------------------------------------------------------------- shuffling
def test_shuffle_reproducible_with_a_seed_and_different_across_epochs():
    ds = TensorDataset(*_rows(32))
    a = DataLoader(ds, batch_size=8, shuffle=True, generator=7)
    b = DataLoader(ds, batch_size=8, shuffle=True, generator=np.random.default_rng(7))
    epochs_a = [sum(_labels(a), []) for _ in range(2)]
    epochs_b = [sum(_labels(b), []) for _ in range(2)]
    assert epochs_a == epochs_b
    assert epochs_a[0] != epochs_a[1]
    for order in epochs_a:
        assert sorted(order) == [10 * i for i in range(32)]
    assert epochs_a[0] != sum(_labels(DataLoader(ds, batch_size=8, shuffle=True,
                                                 generator=8)), [])


def test_shuffle_without_generator_follows_lazyt_manual_seed():
    ds = TensorDataset(*_rows(32))
    loader = DataLoader(ds, batch_size=5, shuffle=True)
    lazyt.manual_seed(0)
    first = [_labels(loader) for _ in range(2)]
    lazyt.manual_seed(0)
    again = [_labels(loader) for _ in range(2)]
    assert first == again
    assert first[0] != first[1]
    assert first[0] != _labels(DataLoader(ds, batch_size=5))


def test_samplers():
    ds = list(range(10))
    assert list(SequentialSampler(ds)) == ds
    perm = list(RandomSampler(ds, generator=1))
    assert sorted(perm) == ds and perm != ds
    assert len(RandomSampler(ds, num_samples=25)) == 25
    longer = list(RandomSampler(ds, num_samples=25, generator=1))
    assert sorted(longer[:20]) == sorted(ds * 2) and len(set(longer[20:])) == 5
    drawn = list(RandomSampler(ds, replacement=True, num_samples=5, generator=2))
    assert len(drawn) == 5 and set(drawn) <= set(ds)
    assert len(list(RandomSampler([0, 1], replacement=True, num_samples=9))) == 9
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    assert sorted(SubsetRandomSampler([4, 8, 9], generator=0)) == [4, 8, 9]
    weighted = list(WeightedRandomSampler([0.0, 1.0, 3.0], 200, generator=0))
    assert 0 not in weighted and weighted.count(2) > weighted.count(1)


# ---------------------------------------------------------------------- datasets
def test_tensor_dataset_items_and_errors(check):
    x, y = _rows(4)
    ds = TensorDataset(lazyt.from_numpy(x), y)
    assert len(ds) == 4
    item = ds[-1]
    assert isinstance(item, tuple)
    check(item[0], x[3])
    assert item[1] == y[3]
    with pytest.raises(lazyt.IndexOutOfRangeError, match="TensorDataset: index 4 is out of range"):
        ds[4]
    with pytest.raises(lazyt.ShapeError, match=r"TensorDataset: .*sizes \[4, 5\]"):
        TensorDataset(lazyt.from_numpy(x), np.zeros(5))
    with pytest.raises(lazyt.DTypeError, match="TensorDataset"):
        TensorDataset([1, 2, 3])


def test_concat_and_add():
    a, b = TensorDataset(*_rows(3)), TensorDataset(*_rows(2))
    both = a + b
    assert isinstance(both, ConcatDataset) and len(both) == 5
    assert [int(both[i][1]) for i in range(5)] == [0, 10, 20, 0, 10]
    assert int(both[-1][1]) == 10
    with pytest.raises(lazyt.IndexOutOfRangeError, match="ConcatDataset"):
        both[5]
    assert len(ConcatDataset([a, b, a])) == 8
    assert _labels(DataLoader(both, batch_size=2)) == [[0, 10], [20, 0], [10]]


def test_random_split_is_disjoint_complete_and_reproducible():
    ds = TensorDataset(*_rows(10))
    parts = random_split(ds, [3, 7], generator=0)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert random_split(ds, [3, 7], generator=0)[0].indices == parts[0].indices
    thirds = random_split(ds, [0.33, 0.33, 0.34], generator=np.random.default_rng(1))
    assert [len(p) for p in thirds] == [4, 3, 3]  # floors 3, 3, 3; the rest goes to the first
    assert sorted(sum((p.indices for p in thirds), [])) == list(range(10))
    lazyt.manual_seed(5)
    first = random_split(ds, [0.5, 0.5])[0].indices
    lazyt.manual_seed(5)
    assert random_split(ds, [0.5, 0.5])[0].indices == first


def test_iterable_dataset_batches_in_process():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                        [6]]
    assert len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert len(list(DataLoader(Stream(7), batch_size=3, drop_last=True))) == 2
    no_len = DataLoader(Stream(4, with_len=False), batch_size=2)
    with pytest.raises(lazyt.InvalidArgumentError, match="DataLoader: .* has no __len__"):
        len(no_len)
    assert [b.tolist() for b in list(no_len)] == [[0, 1], [2, 3]]  # list() tolerates it
    assert get_worker_info() is None


# ---------------------------------------------------------------------- collation
def test_default_collate_containers_and_numbers(check):
    Point = namedtuple("Point", "a b")
    batch = [({"v": np.array([1, 2], np.int32), "w": 0.5}, Point(1, True), "s0"),
             ({"v": np.array([3, 4], np.int32), "w": 1.5}, Point(2, False), "s1")]
    out = default_collate(batch)
    assert isinstance(out, list) and len(out) == 3
    check(out[0]["v"], np.array([[1, 2], [3, 4]], np.int32))
    check(out[0]["w"], np.array([0.5, 1.5], np.float32))
    assert isinstance(out[1], Point)
    check(out[1].a, np.array([1, 2], np.int64))
    check(out[1].b, np.array([True, False]))
    assert out[2] == ["s0", "s1"]
    check(default_collate([np.float64(1.0), np.float64(2.0)]), np.array([1.0, 2.0]))
    check(default_collate([[1, 2], [3, 4]])[0], np.array([1, 3]))
    assert default_convert((np.ones(2, np.float32), 3))[1] == 3
    with pytest.raises(lazyt.ShapeError, match="default_collate"):
        default_collate([np.ones(2), np.ones(3)])
    with pytest.raises(lazyt.ShapeError, match="default_collate"):
        default_collate([[1, 2], [3]])
    with pytest.raises(lazyt.DTypeError, match="default_collate: .* found object"):
        default_collate([object(), object()])


# ---------------------------------------------------------------------- errors
def test_bad_arguments_name_the_function_and_what_was_expected():
    ds = TensorDataset(*_rows(4))
    err = lazyt.InvalidArgumentError
    with pytest.raises(err, match="DataLoader: batch_size must be a positive int, got 0"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(err, match="DataLoader: batch_sampler cannot be combined with batch_size"):
        DataLoader(ds, batch_size=2, batch_sampler=[[0, 1]])
    with pytest.raises(err, match="DataLoader: shuffle=True cannot be combined with a sampler"):
        DataLoader(ds, shuffle=True, sampler=[0, 1])
    with pytest.raises(err, match="DataLoader: drop_last=True needs a batch_size"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(err, match="DataLoader: num_workers must be an int >= 0"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(err, match="DataLoader: persistent_workers=True needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(err, match="DataLoader: generator must be None"):
        DataLoader(ds, shuffle=True, generator="seed")
    with pytest.raises(err, match="DataLoader: shuffle is not supported for an IterableDataset"):
        DataLoader(Stream(3), shuffle=True)

    class NoLen(Dataset):
        def __getitem__(self, i):
            return i
    with pytest.raises(err, match="DataLoader: the default sampler needs len.* NoLen has no"):
        DataLoader(NoLen())
    with pytest.raises(TypeError):  # also a TypeError, as len() of such an object is
        DataLoader(NoLen())
    assert list(DataLoader(NoLen(), sampler=[2, 0], batch_size=2))[0].tolist() == [2, 0]
    with pytest.raises(err, match="random_split: .*needs len"):
        random_split(NoLen(), [1, 1])
    with pytest.raises(err, match=r"random_split: lengths \[3, 4\] sum to 7, but the dataset has "
                                  "4 items"):
        random_split(ds, [3, 4])
    with pytest.raises(err, match="random_split: lengths must be non-negative ints"):
        random_split(ds, [2.5, 1.5])
    with pytest.raises(err, match="random_split: fraction"):
        random_split(ds, [1.5, -0.5])
    with pytest.raises(err, match="DataLoader: with num_workers=1 .* must be picklable"):
        iter(DataLoader(ds, num_workers=1, collate_fn=lambda b: b))
    with pytest.raises(lazyt.MissingImplError, match="must implement __getitem__"):
        Dataset()[0]


def test_import_paths():
    import lazyt.utils
    assert lazyt.utils.data.DataLoader is DataLoader
    for name in lazyt.utils.data.__all__:
        obj = getattr(lazyt.utils.data, name)
        assert obj.__doc__, f"{name} has no docstring"


# ---------------------------------------------------------------------- workers
def test_workers_equal_no_workers_and_reraise_errors(check):
    """One pool of two persistent spawn workers: batches (dict samples with lazyt tensors built
    in the workers) equal num_workers=0 in order; an error names worker and index; the pool
    keeps serving the next epoch."""
    x, y = _rows(11)
    dev = _other_device()
    ds = Records(lazyt.from_numpy(x, device=dev), y)
    order = np.random.default_rng(0).permutation(11).tolist()
    plain = list(DataLoader(ds, batch_size=3, sampler=order))
    loader = DataLoader(ds, batch_size=3, sampler=order, num_workers=2,
                        persistent_workers=True)
    assert len(loader) == 4
    got = list(loader)
    assert len(got) == len(plain) == 4
    for a, b in zip(got, plain):
        check(a["x"], b["x"].numpy(), device=dev)
        check(a["y"], b["y"].numpy(), device=lazyt.get_default_device())
    order[4] = 99
    with pytest.raises(lazyt.IndexOutOfRangeError,
                       match=r"DataLoader worker 1 failed on index 99:"):
        list(loader)
    order[4] = 0
    assert [b["y"].tolist() for b in loader] == [b["y"].tolist() for b in
                                                 DataLoader(ds, batch_size=3, sampler=order)]


def test_iterable_dataset_workers_share_out_the_stream():
    """Each worker iterates its own copy; batches alternate between workers, as in torch."""
    loader = DataLoader(Shards(10), batch_size=2, num_workers=2, worker_init_fn=_init_worker)
    assert [b.tolist() for b in loader] == [[1000, 1002], [1001, 1003], [1004, 1006],
                                            [1005, 1007], [1008], [1009]]
    assert [b.tolist() for b in DataLoader(Shards(3), batch_size=2)] == [[0, 1], [2]]
