"""Generators and samplers (lazyt/sampling.py): reproducible streams, torch's shapes, dtypes and
errors, and sample statistics within a few standard errors."""
import numpy as np
import pytest

import lazyt
from lazyt import InvalidArgumentError, ShapeError, DTypeError


def test_generator_streams_are_reproducible_and_independent():
    g1, g2 = lazyt.Generator().manual_seed(7), lazyt.Generator().manual_seed(7)
    a = lazyt.rand(5, generator=g1).numpy()
    lazyt.rand(100)                                   # the process stream does not disturb g2
    b = lazyt.rand(5, generator=g2).numpy()
    np.testing.assert_array_equal(a, b)
    assert g1.initial_seed() == 7
    assert not np.array_equal(lazyt.rand(5, generator=g1).numpy(), a)


def test_generator_state_round_trip():
    g = lazyt.Generator().manual_seed(1)
    state = g.get_state()
    assert state.dtype is lazyt.uint8 and state.ndim == 1
    a = lazyt.randn(4, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(lazyt.randn(4, generator=g).numpy(), a)


def test_process_generator_state_and_seeds():
    assert lazyt.manual_seed(123) is lazyt.default_generator
    assert lazyt.initial_seed() == 123
    state = lazyt.get_rng_state()
    a = lazyt.rand(3).numpy()
    lazyt.set_rng_state(state)
    np.testing.assert_array_equal(lazyt.rand(3).numpy(), a)
    lazyt.manual_seed(-1)
    assert lazyt.initial_seed() == 2 ** 64 - 1
    s = lazyt.seed()
    assert lazyt.initial_seed() == s and 0 <= s < 2 ** 64


@pytest.mark.parametrize("bad", [lazyt.zeros(3), lazyt.tensor(np.frombuffer(b"nope", np.uint8)),
                                 "state"])
def test_set_state_rejects_foreign_values(bad):
    with pytest.raises(InvalidArgumentError, match="set_state"):
        lazyt.Generator().set_state(bad)
    with pytest.raises(InvalidArgumentError):
        lazyt.set_rng_state(bad)
    lazyt.rand(2)                                      # the process generator still works


def test_generator_argument_type_is_checked():
    with pytest.raises(InvalidArgumentError, match="randperm: generator"):
        lazyt.randperm(3, generator="seed")


def test_generator_flows_into_fills_init_and_samplers():
    from lazyt.utils.data import RandomSampler
    t1 = lazyt.zeros(6).normal_(generator=lazyt.Generator().manual_seed(2))
    t2 = lazyt.zeros(6).normal_(generator=lazyt.Generator().manual_seed(2))
    np.testing.assert_array_equal(t1.numpy(), t2.numpy())
    w1 = lazyt.nn.init.uniform_(lazyt.zeros(4), generator=lazyt.Generator().manual_seed(5))
    w2 = lazyt.nn.init.uniform_(lazyt.zeros(4), generator=lazyt.Generator().manual_seed(5))
    np.testing.assert_array_equal(w1.numpy(), w2.numpy())
    g = lazyt.Generator().manual_seed(9)
    sampler = RandomSampler(range(10), generator=g)
    first = list(sampler)
    g.manual_seed(9)                       # the sampler reads the generator at each draw
    assert list(sampler) == first and sorted(first) == list(range(10))


def test_randperm():
    torch = pytest.importorskip("torch")
    p = lazyt.randperm(50)
    assert p.dtype is lazyt.int64 and p.shape == (50,)
    assert sorted(p.numpy().tolist()) == list(range(50))
    assert lazyt.randperm(0).shape == (0,)
    assert lazyt.randperm(5, dtype=lazyt.float32).dtype is lazyt.float32
    assert torch.randperm(5).dtype == torch.int64
    with pytest.raises(ShapeError):
        lazyt.randperm(-1)
    with pytest.raises(InvalidArgumentError):
        lazyt.randperm(300, dtype=lazyt.int8)


def test_bernoulli_statistics_dtype_and_errors():
    lazyt.manual_seed(0)
    p = lazyt.tensor(np.array([0.0, 0.25, 1.0], np.float32)).expand(20000, 3)
    draw = lazyt.bernoulli(p)
    assert draw.dtype is lazyt.float32 and draw.shape == (20000, 3)
    mean = draw.numpy().mean(0)
    assert mean[0] == 0 and mean[2] == 1 and abs(mean[1] - 0.25) < 0.02
    assert abs(lazyt.zeros(20000).bernoulli(0.7).numpy().mean() - 0.7) < 0.02
    assert abs(lazyt.zeros(20000, dtype=lazyt.float64).bernoulli_(0.1).numpy().mean()
               - 0.1) < 0.01
    with pytest.raises(InvalidArgumentError, match="bernoulli"):
        lazyt.bernoulli(lazyt.tensor([1.5]))
    with pytest.raises(InvalidArgumentError):
        lazyt.zeros(2).bernoulli_(-0.1)
    with pytest.raises(DTypeError):
        lazyt.bernoulli(lazyt.tensor([1, 0]))


def test_bernoulli_in_place_with_tensor_probability():
    t = lazyt.zeros(5000, 2).bernoulli_(lazyt.tensor([0.0, 1.0]))
    np.testing.assert_array_equal(t.numpy().mean(0), [0.0, 1.0])
    with pytest.raises(ShapeError):
        lazyt.zeros(3).bernoulli_(lazyt.tensor([0.5, 0.5]))


def test_multinomial_with_and_without_replacement():
    lazyt.manual_seed(1)
    w = lazyt.tensor([[1.0, 0.0, 3.0], [0.0, 2.0, 2.0]])
    s = lazyt.multinomial(w, 4000, replacement=True)
    assert s.dtype is lazyt.int64 and s.shape == (2, 4000)
    counts = np.stack([np.bincount(r, minlength=3) for r in s.numpy()]) / 4000
    np.testing.assert_allclose(counts, [[0.25, 0, 0.75], [0, 0.5, 0.5]], atol=0.03)
    s = w.multinomial(2)
    for row, allowed in zip(s.numpy(), ({0, 2}, {1, 2})):
        assert set(row.tolist()) == allowed
    assert lazyt.multinomial(lazyt.tensor([0.2, 0.8]), 1).shape == (1,)
    # without replacement, zero-weight categories follow the others in index order (torch)
    np.testing.assert_array_equal(lazyt.multinomial(lazyt.tensor([0.0, 1.0, 0.0]), 3).numpy(),
                                  [1, 0, 2])
    s = lazyt.multinomial(lazyt.tensor([1.0, 2.0, 3.0, 4.0]).expand(3000, 4), 1).numpy()
    np.testing.assert_allclose(np.bincount(s.ravel(), minlength=4) / 3000, [0.1, 0.2, 0.3, 0.4],
                               atol=0.03)


@pytest.mark.parametrize("weights,n,replacement,match", [
    ([0.0, 0.0], 1, False, "sums to 0"),
    ([1.0, 1.0], 3, False, "without replacement"),
    ([1.0, -1.0], 1, True, "negative"),
    ([1.0, float("nan")], 1, True, "nan"),
])
def test_multinomial_errors_as_torch(weights, n, replacement, match):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor(weights), n, replacement)
    with pytest.raises(InvalidArgumentError, match=match):
        lazyt.multinomial(lazyt.tensor(weights), n, replacement)


def test_multinomial_rank_and_count_errors():
    with pytest.raises(ShapeError):
        lazyt.multinomial(lazyt.ones(2, 2, 2), 1)
    with pytest.raises(InvalidArgumentError):
        lazyt.multinomial(lazyt.ones(3), 0)


def test_normal_overloads_shapes_dtypes_and_statistics():
    torch = pytest.importorskip("torch")
    lazyt.manual_seed(2)
    a = lazyt.normal(lazyt.full((20000,), 3.0), 2.0)
    assert a.dtype is lazyt.float32 and abs(a.numpy().mean() - 3) < 0.1
    assert abs(a.numpy().std() - 2) < 0.1
    b = lazyt.normal(1.0, lazyt.ones(2, 1, dtype=lazyt.float64))
    assert b.dtype is lazyt.float64 and b.shape == (2, 1)
    c = lazyt.normal(lazyt.zeros(3, 1), lazyt.ones(1, 4))
    assert c.shape == tuple(torch.normal(torch.zeros(3, 1), torch.ones(1, 4)).shape)
    d = lazyt.normal(2.0, 3.0, (4, 5))
    assert d.shape == (4, 5) and d.dtype is lazyt.float32
    assert lazyt.normal(0.0, 1.0, (2,), dtype=lazyt.float64).dtype is lazyt.float64
    np.testing.assert_array_equal(lazyt.normal(5.0, 0.0, (3,)).numpy(), [5, 5, 5])


def test_normal_errors():
    with pytest.raises(InvalidArgumentError, match="size"):
        lazyt.normal(0.0, 1.0)
    with pytest.raises(InvalidArgumentError, match="std"):
        lazyt.normal(lazyt.zeros(2), -1.0)
    with pytest.raises(ShapeError):
        lazyt.normal(lazyt.zeros(2), lazyt.ones(3))
    with pytest.raises(DTypeError):
        lazyt.normal(lazyt.zeros(2, dtype=lazyt.int64), 1.0)


def test_samples_give_zero_gradient_as_torch():
    torch = pytest.importorskip("torch")
    m = lazyt.zeros(3).require_grad()
    s = lazyt.ones(3).require_grad()
    lazyt.normal(m, s).sum().backward()
    tm, ts = torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True)
    torch.normal(tm, ts).sum().backward()
    np.testing.assert_array_equal(m.grad.numpy(), tm.grad.numpy())
    np.testing.assert_array_equal(s.grad.numpy(), ts.grad.numpy())
    p = lazyt.full((4,), 0.5).require_grad()
    lazyt.bernoulli(p).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(4))


def test_poisson_and_binomial():
    lazyt.manual_seed(3)
    x = lazyt.poisson(lazyt.full((20000,), 4.0))
    assert x.dtype is lazyt.float32 and abs(x.numpy().mean() - 4) < 0.1
    assert (x.numpy() == np.round(x.numpy())).all()
    with pytest.raises(InvalidArgumentError):
        lazyt.poisson(lazyt.tensor([-1.0]))
    b = lazyt.binomial(lazyt.full((20000,), 10.0), lazyt.tensor([0.3]))
    assert b.dtype is lazyt.float32 and abs(b.numpy().mean() - 3) < 0.1
    assert b.numpy().max() <= 10
    with pytest.raises(InvalidArgumentError):
        lazyt.binomial(lazyt.tensor([2.5]), lazyt.tensor([0.5]))
    with pytest.raises(InvalidArgumentError):
        lazyt.binomial(lazyt.tensor([2.0]), lazyt.tensor([1.5]))


def test_randint_like():
    x = lazyt.zeros(3, 4, dtype=lazyt.int32)
    r = lazyt.randint_like(x, 5)
    assert r.shape == (3, 4) and r.dtype is lazyt.int32
    assert r.numpy().min() >= 0 and r.numpy().max() < 5
    r = lazyt.randint_like(lazyt.zeros(1000), 10, 12)
    assert set(np.unique(r.numpy()).tolist()) <= {10.0, 11.0} and r.dtype is lazyt.float32


def test_random_fill_ranges():
    t = lazyt.zeros(5000).random_(3)
    assert set(np.unique(t.numpy()).tolist()) == {0.0, 1.0, 2.0}
    t = lazyt.zeros(5000, dtype=lazyt.int64).random_(-2, 2)
    assert set(np.unique(t.numpy()).tolist()) == {-2, -1, 0, 1}
    t = lazyt.zeros(1000, dtype=lazyt.int8).random_()
    assert t.numpy().min() >= 0 and t.numpy().max() <= 127
    t = lazyt.zeros(1000, dtype=lazyt.float16).random_()
    assert t.numpy().max() <= 2048 and (t.numpy() == np.round(t.numpy())).all()
    with pytest.raises(InvalidArgumentError):
        lazyt.zeros(2).random_(3, 3)


def test_distribution_fills():
    lazyt.manual_seed(4)
    e = lazyt.zeros(20000).exponential_(2.0).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.03
    g = lazyt.zeros(20000).geometric_(0.25).numpy()
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.15
    c = lazyt.zeros(20001).cauchy_(1.0, 0.5).numpy()
    assert abs(np.median(c) - 1.0) < 0.05
    ln = lazyt.zeros(20000, dtype=lazyt.float64).log_normal_(0.0, 0.5).numpy()
    assert ln.min() > 0 and abs(np.log(ln).std() - 0.5) < 0.02
    with pytest.raises(InvalidArgumentError):
        lazyt.zeros(2).exponential_(0.0)
    with pytest.raises(InvalidArgumentError):
        lazyt.zeros(2).geometric_(1.5)
    with pytest.raises(DTypeError):
        lazyt.zeros(2, dtype=lazyt.int64).exponential_()


def test_in_place_fill_keeps_the_leaf_rule():
    w = lazyt.zeros(3).require_grad()
    with pytest.raises(lazyt.GradError):
        w.exponential_()
    with lazyt.no_grad():
        w.exponential_()
    assert (w.numpy() > 0).all()
