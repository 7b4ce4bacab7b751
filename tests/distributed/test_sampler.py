"""`lazyt.utils.data.DistributedSampler`: torch's split of a data set over ranks."""
import pytest

from lazyt.errors import InvalidArgumentError
from lazyt.utils.data import DistributedSampler


def test_strided_split_with_padding_and_drop_last():
    parts = [list(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]   # padded from the start
    parts = [list(DistributedSampler(range(10), 3, r, shuffle=False, drop_last=True))
             for r in range(3)]
    assert parts == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert len(DistributedSampler(range(10), 3, 0)) == 4
    assert len(DistributedSampler(range(10), 3, 0, drop_last=True)) == 3


def test_shuffle_is_shared_by_ranks_and_changes_with_set_epoch():
    samplers = [DistributedSampler(range(20), 2, r, seed=3) for r in range(2)]
    first = [list(s) for s in samplers]
    assert sorted(first[0] + first[1]) == list(range(20))        # a partition
    assert first[0] != list(range(0, 20, 2))
    assert [list(s) for s in samplers] == first                  # same epoch, same order
    for s in samplers:
        s.set_epoch(1)
    second = [list(s) for s in samplers]
    assert second != first and sorted(second[0] + second[1]) == list(range(20))


def test_bad_arguments():
    with pytest.raises(InvalidArgumentError, match="rank"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(InvalidArgumentError, match="num_replicas"):
        DistributedSampler(range(4), 0, 0)
