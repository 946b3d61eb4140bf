"""harp's random streams: fresh numbers per call from a seed stream,
reproducible under manual_seed, with the seed a run-time argument."""

import numpy as np
import pytest

import harp
import harp.nn.functional as F

SAMPLERS = {
    "rand": lambda **kw: harp.rand(3, 5, **kw),
    "randn": lambda **kw: harp.randn(3, 5, **kw),
    "rand_like": lambda **kw: harp.rand_like(harp.zeros(3, 5, dtype=harp.float64), **kw),
    "randn_like": lambda **kw: harp.randn_like(harp.zeros(3, 5), **kw),
    "randint": lambda **kw: harp.randint(-4, 1000, (3, 5), **kw),
    "randint_like": lambda **kw: harp.randint_like(harp.zeros(3, 5, dtype=harp.int32), 7, **kw),
    "normal": lambda **kw: harp.normal(2.0, 3.0, (3, 5), **kw),
    "normal_tensors": lambda **kw: harp.normal(harp.zeros(3, 1), harp.ones(1, 5), **kw),
    "bernoulli": lambda **kw: harp.bernoulli(harp.full((3, 5), 0.5), **kw),
    "dropout": lambda **kw: F.dropout(harp.ones(3, 5), 0.5, **kw),
    "multinomial": lambda **kw: harp.multinomial(harp.ones(3, 10), 5, True, **kw),
    "multinomial_without": lambda **kw: harp.multinomial(harp.ones(3, 10), 5, **kw),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_fresh_numbers_per_call_without_recompiling(name):
    draw = SAMPLERS[name]
    first = draw().numpy()
    compiles = harp.compile_stats()["compiles"]
    draws = [draw().numpy() for _ in range(4)]
    assert harp.compile_stats()["compiles"] == compiles  # the seed is an argument
    assert first.shape == (3, 5)
    for d in draws:
        assert not np.array_equal(d, first)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_manual_seed_repeats_the_sequence(name):
    draw = SAMPLERS[name]
    harp.manual_seed(123)
    a, b = draw().numpy(), draw().numpy()
    harp.manual_seed(123)
    np.testing.assert_array_equal(draw().numpy(), a)
    np.testing.assert_array_equal(draw().numpy(), b)
    harp.manual_seed(124)
    assert not np.array_equal(draw().numpy(), a)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_seed_and_generator_arguments(name):
    draw = SAMPLERS[name]
    np.testing.assert_array_equal(draw(seed=9).numpy(), draw(seed=9).numpy())
    g1, g2 = harp.Generator(), harp.Generator()
    g1.manual_seed(77)
    g2.manual_seed(77)
    before = harp.get_rng_state()
    np.testing.assert_array_equal(draw(generator=g1).numpy(), draw(generator=g2).numpy())
    assert harp.get_rng_state() == before  # the default stream is untouched
    with pytest.raises(ValueError, match="either seed= or generator="):
        draw(seed=1, generator=g1)
    with pytest.raises(TypeError, match="must be a harp.Generator, got int"):
        draw(generator=5)


def test_generator_state():
    g = harp.Generator(42)
    assert g.initial_seed() == 42 and g.get_state() == (42, 0)
    first = harp.rand(4, generator=g).numpy()
    state = g.get_state()
    assert state == (42, 1)
    second = harp.rand(4, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(harp.rand(4, generator=g).numpy(), second)
    assert g.manual_seed(42) is g
    np.testing.assert_array_equal(harp.rand(4, generator=g).numpy(), first)
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    # The module-level functions act on the default generator.
    assert harp.manual_seed(8) is harp.default_generator
    assert harp.initial_seed() == 8
    state = harp.get_rng_state()
    x = harp.randn(6).numpy()
    harp.set_rng_state(state)
    np.testing.assert_array_equal(harp.randn(6).numpy(), x)
    harp.manual_seed(-1)  # torch's negative seeds: the two's complement
    assert harp.initial_seed() == 2 ** 64 - 1
    with pytest.raises(ValueError, match="64 bits"):
        harp.manual_seed(2 ** 64)


def test_manual_seed_also_seeds_module_initialisation():
    harp.manual_seed(3)
    w1 = harp.nn.Linear(4, 3).weight.numpy()
    d1 = F.dropout(harp.ones(50), 0.5).numpy()
    harp.manual_seed(3)
    np.testing.assert_array_equal(harp.nn.Linear(4, 3).weight.numpy(), w1)
    np.testing.assert_array_equal(F.dropout(harp.ones(50), 0.5).numpy(), d1)


def test_explicit_seed_matches_the_compiled_constant_seed():
    # seed= passes the seed at run time; the op's constant-seed form gives
    # the same numbers.
    for seed in (0, 5, 2 ** 40 + 3):
        np.testing.assert_array_equal(harp.rand(5, 7, seed=seed).numpy(),
                                      harp._harp.rand(harp.float32, [5, 7], seed).numpy())
        np.testing.assert_array_equal(harp.randn(5, 7, seed=seed, dtype=harp.float64).numpy(),
                                      harp._harp.randn(harp.float64, [5, 7], seed).numpy())


def test_distributions():
    harp.manual_seed(0)
    u = harp.rand(100003, dtype=harp.float64).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    z = harp.randn(100003).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    n = harp.normal(-3.0, 0.5, (100003,)).numpy()
    assert abs(n.mean() + 3) < 0.01 and abs(n.std() - 0.5) < 0.01
    mean = harp.tensor(np.array([[-10.0], [10.0]]))
    std = harp.tensor(np.array([[0.1, 2.0]]))
    m = harp.normal(mean, std)
    assert m.shape == (2, 2) and m.dtype == harp.float64
    k = harp.randint(-3, 4, (70001,)).numpy()
    assert k.dtype == np.int64 and k.min() == -3 and k.max() == 3
    counts = np.bincount(k + 3, minlength=7)
    assert (abs(counts / len(k) - 1 / 7) < 0.01).all()
    assert (harp.randint(5, 6, (9,)).numpy() == 5).all()
    assert harp.randint(10, (3, 2), dtype=harp.int32).dtype == harp.int32
    b = harp.bernoulli(harp.tensor(np.array([0.0, 1.0] * 5000 + [0.3] * 100000))).numpy()
    assert (b[:10000:2] == 0).all() and (b[1:10000:2] == 1).all()
    assert abs(b[10000:].mean() - 0.3) < 0.01
    assert abs(harp.bernoulli(harp.zeros(100000), p=0.8).numpy().mean() - 0.8) < 0.01


def test_argument_errors():
    with pytest.raises(ValueError, match="needs low < high, got low=3, high=3"):
        harp.randint(3, 3, (2,))
    with pytest.raises(TypeError, match="randint"):
        harp.randint(1, 2, 3, (2,))
    with pytest.raises(TypeError, match="missing the size"):
        harp.randint(5)
    with pytest.raises(harp.HarpError, match="rand: needs a float dtype, got i64"):
        harp.rand(3, dtype=harp.int64)
    with pytest.raises(harp.HarpError, match="randn: needs a float dtype"):
        harp.randn(3, dtype=harp.int32)
    with pytest.raises(TypeError, match="need size"):
        harp.normal(0.0, 1.0)


def test_multinomial_distribution():
    # Frequencies of 40000 draws from weights (not normalized, one zero)
    # within 4 standard errors of the probabilities, with and without
    # replacement (one draw each: the same distribution), 1-d and 2-d.
    weights = np.array([1.0, 0.0, 3.0, 0.5, 5.5])
    p = weights / weights.sum()
    harp.manual_seed(0)
    for replacement in (True, False):
        rows = harp.tensor(np.tile(weights, (40000, 1)))
        drawn = harp.multinomial(rows, 1, replacement).numpy().ravel()
        assert drawn.dtype == np.int64
        counts = np.bincount(drawn, minlength=5) / drawn.size
        assert counts[1] == 0
        assert np.all(np.abs(counts - p) <= 4 * np.sqrt(p * (1 - p) / drawn.size) + 1e-9), counts
    drawn = harp.multinomial(harp.tensor(weights), 20000, replacement=True).numpy()
    np.testing.assert_allclose(np.bincount(drawn, minlength=5) / drawn.size, p, atol=0.02)
    # Without replacement: distinct categories per row, never the zero one.
    drawn = harp.tensor(np.tile(weights, (200, 1))).multinomial(4).numpy()
    assert all(len(set(row)) == 4 and 1 not in row for row in drawn)
    # The first of them is a draw from p; the second from p without the first.
    first = np.bincount(drawn[:, 0], minlength=5) / 200
    assert first[4] > first[3] and first[2] > first[0]


def test_multinomial_errors():
    with pytest.raises(harp.HarpError, match="cannot draw 6 samples without replacement from 5"):
        harp.multinomial(harp.ones(5), 6)
    with pytest.raises(harp.HarpError, match="num_samples must be a positive int"):
        harp.multinomial(harp.ones(5), 0)
    with pytest.raises(harp.HarpError, match="1-d or 2-d float tensor of weights"):
        harp.multinomial(harp.ones(2, 2, 2), 1)
