"""Shape and data-movement ops and scans against PyTorch: stack, split,
chunk, unbind, index_select, take_along_dim, repeat, repeat_interleave,
tril/triu, roll, broadcast_to, cumsum/cumprod, *_like, randn. Values and
the gradients of sum(out^2) (f64), with errors that name the op."""

import numpy as np
import pytest
import torch

import harp

rng = np.random.default_rng(3)


def check(harp_fn, torch_fn, *arrays, rtol=1e-10, atol=1e-12):
    hs = [harp.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    ts = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out, expected = harp_fn(*hs), torch_fn(*ts)
    if isinstance(expected, tuple):
        assert isinstance(out, tuple) and len(out) == len(expected)
        loss_h = sum((o * o).sum() for o in out)
        loss_t = sum((e * e).sum() for e in expected)
        for o, e in zip(out, expected):
            np.testing.assert_allclose(o.numpy(), e.detach().numpy(), rtol=rtol, atol=atol)
    else:
        assert tuple(out.shape) == tuple(expected.shape)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol, atol=atol)
        loss_h, loss_t = (out * out).sum(), (expected * expected).sum()
    loss_h.backward()
    loss_t.backward()
    for h, t in zip(hs, ts):
        if t.requires_grad:
            np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)


x, y = rng.normal(size=(3, 5, 4)), rng.normal(size=(3, 5, 4))


@pytest.mark.parametrize("dim", [0, 1, 3, -1])
def test_stack(dim):
    check(lambda a, b: harp.stack([a, b, a], dim), lambda a, b: torch.stack([a, b, a], dim), x, y)


def test_split_chunk_unbind():
    check(lambda a: a.split(2, 1), lambda a: a.split(2, 1), x)
    check(lambda a: harp.split(a, [1, 3, 1], 1), lambda a: torch.split(a, [1, 3, 1], 1), x)
    check(lambda a: a.chunk(3, 1), lambda a: a.chunk(3, 1), x)
    check(lambda a: harp.chunk(a, 7, -1), lambda a: torch.chunk(a, 7, -1), x)
    check(lambda a: a.unbind(2), lambda a: a.unbind(2), x)
    with pytest.raises(harp.HarpError, match=r"split: sections \[1, 1\] do not add up to dim 1 of size 5"):
        harp.split(harp.tensor(x), [1, 1], 1)


def test_index_select_take_along_dim():
    idx = np.array([4, 0, 0, 2])
    check(lambda a: a.index_select(1, harp.tensor(idx)),
          lambda a: a.index_select(1, torch.tensor(idx)), x)
    ti = rng.integers(0, 5, size=(3, 2, 1))
    check(lambda a: harp.take_along_dim(a, harp.tensor(ti), 1),
          lambda a: torch.take_along_dim(a, torch.tensor(ti), 1), x)
    flat = np.array([3, 59, 0])
    check(lambda a: harp.take_along_dim(a, harp.tensor(flat)),
          lambda a: torch.take_along_dim(a, torch.tensor(flat)), x)
    with pytest.raises(harp.HarpError, match="index_select: the index must be 1-D"):
        harp.tensor(x).index_select(0, harp.tensor(np.zeros((2, 2), np.int64)))
    with pytest.raises(harp.HarpError, match="int32 or int64"):
        harp.tensor(x).index_select(0, harp.tensor(np.zeros(2)))


def test_repeat_and_interleave():
    check(lambda a: a.repeat(2, 1, 3, 2), lambda a: a.repeat(2, 1, 3, 2), x)
    check(lambda a: a.repeat_interleave(3, 1), lambda a: a.repeat_interleave(3, 1), x)
    counts = np.array([1, 0, 2, 3])
    check(lambda a: a.repeat_interleave(harp.tensor(counts), dim=2),
          lambda a: a.repeat_interleave(torch.tensor(counts), dim=2), x)
    check(lambda a: harp.repeat_interleave(a, 2), lambda a: torch.repeat_interleave(a, 2), x)
    with pytest.raises(harp.HarpError, match="repeat: needs at least 3"):
        harp.tensor(x).repeat(2, 2)


@pytest.mark.parametrize("diagonal", [-2, 0, 1, 3])
def test_tril_triu(diagonal):
    check(lambda a: a.tril(diagonal), lambda a: a.tril(diagonal), x)
    check(lambda a: harp.triu(a, diagonal), lambda a: torch.triu(a, diagonal), x)


def test_roll_broadcast_to():
    check(lambda a: a.roll((2, -1), (1, 2)), lambda a: a.roll((2, -1), (1, 2)), x)
    check(lambda a: a.roll(7), lambda a: a.roll(7), x)
    check(lambda a: a[:, :1].broadcast_to((2, 3, 5, 4)), lambda a: a[:, :1].broadcast_to((2, 3, 5, 4)), x)
    with pytest.raises(harp.HarpError, match=r"broadcast_to: cannot broadcast \[3, 5, 4\] to \[3, 6, 4\]"):
        harp.tensor(x).broadcast_to((3, 6, 4))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 17, 64])
def test_cumsum_cumprod(n):
    z = rng.normal(size=(2, n, 3))
    check(lambda a: a.cumsum(1), lambda a: a.cumsum(1), z)
    check(lambda a: harp.cumprod(a, -2), lambda a: torch.cumprod(a, -2), z)


def test_cumsum_f32_vector_widths():
    for n in (15, 16, 17, 33):
        z = rng.normal(size=(3, n)).astype(np.float32)
        np.testing.assert_allclose(harp.tensor(z).cumsum(-1).numpy(), np.cumsum(z, -1),
                                   rtol=1e-5, atol=1e-5)


def test_like_and_randn():
    t = harp.tensor(x)
    assert (harp.zeros_like(t).numpy() == 0).all() and harp.zeros_like(t).shape == t.shape
    assert (harp.ones_like(t, dtype=harp.int32).numpy() == 1).all()
    assert (harp.full_like(t, 2.5).numpy() == 2.5).all()
    u = harp.rand_like(t, seed=4).numpy()
    assert ((u >= 0) & (u < 1)).all()
    r = harp.randn(200000, seed=3).numpy()
    assert abs(r.mean()) < 0.01 and abs(r.std() - 1) < 0.01
    np.testing.assert_array_equal(harp.randn(5, 4, seed=9).numpy(), harp.randn((5, 4), seed=9).numpy())
    assert harp.randn_like(t, seed=1).shape == t.shape
