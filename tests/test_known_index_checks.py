"""Index ops check ids whose values are already on the host when they are recorded, so a bad
id raises at the call (as in torch) instead of at the next read, after an optimizer step has
already recorded an update of the table from the failed lookup."""
import numpy as np
import pytest

import lazyt
from lazyt import nn
from lazyt.errors import IndexOutOfRangeError


def host(device) -> bool:
    return device.type == "cpu"


def _ids(a, x, rows: bool):
    """The ids as a tensor made from data: 1-D, or [n, 3] (each id repeated along a row)."""
    a = np.repeat(np.asarray(a)[:, None], 3, axis=1) if rows else np.asarray(a)
    return lazyt.tensor(a, device=x.device)


def _ones(x, n):
    return lazyt.ones(n, 3, device=x.device)


CASES = {
    "index_select": lambda x, a: x.index_select(0, _ids(a, x, False)),
    "gather": lambda x, a: x.gather(0, _ids(a, x, True)),
    "index_add": lambda x, a: x.index_add(0, _ids(a, x, False), _ones(x, len(a))),
    "scatter_add": lambda x, a: x.scatter_add(0, _ids(a, x, True), _ones(x, len(a))),
    "scatter": lambda x, a: x.scatter(0, _ids(a, x, True), _ones(x, len(a))),
}


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("bad", [5, 9, -1])
def test_a_known_bad_index_raises_at_the_call_on_the_host(device, op, bad):
    x = lazyt.ones(5, 3, device=device)
    ids = [0, bad, 2]
    if host(device):
        with pytest.raises(IndexOutOfRangeError, match=f"{op}: index {bad} is out of range"):
            CASES[op](x, ids)
    else:  # a GPU buffer is not read at record time: the kernel's check raises at the read
        with pytest.raises(IndexOutOfRangeError, match=op):
            CASES[op](x, ids).numpy()
    np.testing.assert_array_equal((x + 1).numpy(), np.full((5, 3), 2.0, np.float32))


@pytest.mark.parametrize("op", sorted(CASES))
def test_good_known_indices_still_work(device, op):
    x = lazyt.tensor(np.arange(15.0, dtype=np.float32).reshape(5, 3), device=device)
    ids = [4, 0, 2]
    xa, ia = np.arange(15.0, dtype=np.float32).reshape(5, 3), np.array([4, 0, 2])
    want = {
        "index_select": xa[ia],
        "gather": xa[ia],
        "index_add": xa + np.isin(np.arange(5), ia)[:, None],
        "scatter_add": xa + np.isin(np.arange(5), ia)[:, None],
        "scatter": np.where(np.isin(np.arange(5), ia)[:, None], 1.0, xa),
    }[op]
    np.testing.assert_array_equal(CASES[op](x, ids).numpy(), want)


def test_a_bad_embedding_id_leaves_the_table_and_its_optimizer_usable(device):
    lazyt.manual_seed(0)
    emb = nn.Embedding(10, 4, device=device)
    opt = lazyt.optim.SGD(emb.parameters(), lr=0.1)
    w0 = emb.weight.numpy().copy()
    bad = lazyt.tensor(np.array([1, 12]), device=device)
    if host(device):
        with pytest.raises(IndexOutOfRangeError, match="Embedding: index 12 is out of range "
                                                       "for dim 0 of size 10"):
            emb(bad)
    else:
        with pytest.raises(IndexOutOfRangeError):
            emb(bad).numpy()
    # the table is untouched and a good step afterwards works
    np.testing.assert_array_equal(emb.weight.numpy(), w0)
    opt.zero_grad()
    emb(lazyt.tensor(np.array([1, 3]), device=device)).sum().backward()
    opt.step()
    want = w0.copy()
    want[[1, 3]] -= 0.1
    np.testing.assert_allclose(emb.weight.numpy(), want, rtol=1e-6)


def test_f_embedding_checks_known_ids_too():
    w = lazyt.randn(6, 2)
    with pytest.raises(IndexOutOfRangeError, match="embedding: index 6"):
        nn.functional.embedding(np.array([[0, 6]]), w)


def test_ids_made_by_pending_ops_are_checked_when_they_run():
    x = lazyt.ones(5, 3)
    ids = lazyt.tensor(np.array([1, 2])) * 4     # [4, 8]: known only when the ops run
    y = x.index_select(0, ids)                    # recorded without a read
    with pytest.raises(IndexOutOfRangeError, match="index_select: index 8"):
        y.numpy()


def test_capture_records_without_reading_ids_and_the_kernel_still_checks_on_replay():
    x = lazyt.ones(5, 3)

    @lazyt.compile
    def pick(i):
        return x.index_select(0, i) * 2

    good = lazyt.tensor(np.array([0, 4]))
    for _ in range(3):  # record, then replays
        np.testing.assert_array_equal(pick(good).numpy(), np.full((2, 3), 2.0, np.float32))
    with pytest.raises(IndexOutOfRangeError, match="index_select"):
        pick(lazyt.tensor(np.array([0, 7]))).numpy()
    np.testing.assert_array_equal(pick(good).numpy(), np.full((2, 3), 2.0, np.float32))
