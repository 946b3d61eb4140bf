"""torch functions harp composes (harp/_extra.py) against torch: values and
gradients in f64 on shapes that are not multiples of a vector, special
values (inf, NaN), and errors."""

import numpy as np
import pytest
import torch

import harp


def leaves(*arrays):
    return ([harp.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def compare(fn_h, fn_t, *arrays, grad=True, tol=1e-12):
    hs, ts = leaves(*arrays)
    h, t = fn_h(*hs), fn_t(*ts)
    np.testing.assert_allclose(h.numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    if not grad:
        return
    w = np.random.default_rng(3).uniform(0.5, 1.5, size=tuple(t.shape))
    (h * harp.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for a, b in zip(hs, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


def sample(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-3, 3, size=shape)


@pytest.mark.parametrize("shape", [(7,), (3, 17), (2, 1, 5)], ids=str)
def test_elementwise_pairs(shape):
    a, b = sample(*shape, seed=1), sample(*shape, seed=2)
    compare(harp.logaddexp, torch.logaddexp, a, b)
    compare(harp.hypot, torch.hypot, a, b)
    compare(lambda x, y: harp.lerp(x, y, 0.3), lambda x, y: torch.lerp(x, y, 0.3), a, b)
    w = np.random.default_rng(4).uniform(0, 1, size=shape)
    compare(lambda x, y, z: x.lerp(y, z), lambda x, y, z: x.lerp(y, z), a, b, w)
    compare(lambda x, y: x.logaddexp(y), lambda x, y: x.logaddexp(y), a * 200, b * 200)


def test_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -np.inf, 1e308, 0.0])
    y = np.array([np.inf, -np.inf, 1.0, 0.0, 2.0, 1e308, 1e-320])
    for h, t in ((harp.logaddexp, torch.logaddexp), (harp.hypot, torch.hypot)):
        np.testing.assert_array_equal(h(harp.tensor(x), harp.tensor(y)).numpy(),
                                      t(torch.tensor(x), torch.tensor(y)).numpy())
    np.testing.assert_array_equal(harp.isfinite(harp.tensor(x)).numpy(),
                                  torch.isfinite(torch.tensor(x)).numpy())
    assert harp.isfinite(harp.tensor(np.arange(3))).numpy().all()
    for kw in (dict(), dict(nan=1.5, posinf=9.0, neginf=-9.0)):
        np.testing.assert_array_equal(harp.nan_to_num(harp.tensor(x), **kw).numpy(),
                                      torch.nan_to_num(torch.tensor(x), **kw).numpy())
    f32 = np.array([np.inf, np.nan, -np.inf], np.float32)
    np.testing.assert_array_equal(harp.tensor(f32).nan_to_num().numpy(),
                                  torch.tensor(f32).nan_to_num().numpy())


def test_matrix_products_with_scales():
    m, k, n = 5, 7, 3
    base, a, b = sample(m, n, seed=5), sample(m, k, seed=6), sample(k, n, seed=7)
    compare(harp.addmm, torch.addmm, base, a, b)
    compare(lambda i, x, y: harp.addmm(i, x, y, beta=0.5, alpha=-2),
            lambda i, x, y: torch.addmm(i, x, y, beta=0.5, alpha=-2), base, a, b)
    compare(lambda i, x, y: i.addmm(x, y), lambda i, x, y: i.addmm(x, y), sample(n, seed=8), a, b)
    compare(lambda i, x, v: harp.addmv(i, x, v, alpha=3),
            lambda i, x, v: torch.addmv(i, x, v, alpha=3), sample(m, seed=9), a, sample(k, seed=10))
    compare(lambda i, x, y: harp.baddbmm(i, x, y, beta=2),
            lambda i, x, y: torch.baddbmm(i, x, y, beta=2),
            sample(2, m, n, seed=11), sample(2, m, k, seed=12), sample(2, k, n, seed=13))
    # beta=0 ignores the input, NaN included, as torch.
    nan = np.full((m, n), np.nan)
    np.testing.assert_allclose(
        harp.addmm(harp.tensor(nan), harp.tensor(a), harp.tensor(b), beta=0).numpy(),
        torch.addmm(torch.tensor(nan), torch.tensor(a), torch.tensor(b), beta=0).numpy(),
        rtol=1e-12, atol=1e-12)
    compare(harp.trace, torch.trace, sample(4, 6, seed=14))


def test_cross_and_meshgrid():
    compare(lambda x, y: harp.cross(x, y, dim=1), lambda x, y: torch.cross(x, y, dim=1),
            sample(4, 3, 2, seed=15), sample(4, 3, 2, seed=16))
    compare(harp.cross, lambda x, y: torch.cross(x, y), sample(3, 5, seed=17),
            sample(3, 5, seed=18))
    for indexing in ("ij", "xy"):
        hs = harp.meshgrid(harp.arange(3), harp.arange(4), harp.arange(2), indexing=indexing)
        ts = torch.meshgrid(torch.arange(3), torch.arange(4), torch.arange(2), indexing=indexing)
        for h, t in zip(hs, ts):
            np.testing.assert_array_equal(h.numpy(), t.numpy())
    hs, ts = leaves(sample(3, seed=19), sample(5, seed=20))
    gh = harp.meshgrid(hs, indexing="xy")
    gt = torch.meshgrid(ts, indexing="xy")
    (gh[0] * gh[1]).sum().backward()
    (gt[0] * gt[1]).sum().backward()
    for a, b in zip(hs, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_masked_select_and_nonzero():
    x = sample(3, 5, seed=21)
    mask = x > 0.5
    compare(lambda t: harp.masked_select(t, harp.tensor(mask)),
            lambda t: torch.masked_select(t, torch.tensor(mask)), x)
    row = np.array([True, False, True, True, False])
    compare(lambda t: t.masked_select(harp.tensor(row)),
            lambda t: t.masked_select(torch.tensor(row)), x)  # broadcast
    for value in (x * (x > 0), np.zeros((2, 0))):
        np.testing.assert_array_equal(harp.nonzero(harp.tensor(value)).numpy(),
                                      torch.nonzero(torch.tensor(value)).numpy())
        for h, t in zip(harp.tensor(value).nonzero(as_tuple=True),
                        torch.tensor(value).nonzero(as_tuple=True)):
            np.testing.assert_array_equal(h.numpy(), t.numpy())


def test_errors():
    with pytest.raises(harp.HarpError, match="trace: expected a matrix, got 3 dims"):
        harp.trace(harp.ones(2, 2, 2))
    with pytest.raises(harp.HarpError, match="cross: dim 0 has size 2, not 3"):
        harp.cross(harp.ones(2, 3), harp.ones(2, 3), dim=0)
    with pytest.raises(harp.HarpError, match="masked_select: mask must be a bool tensor"):
        harp.masked_select(harp.ones(3), harp.ones(3))
    with pytest.raises(harp.HarpError, match="meshgrid: indexing must be 'ij' or 'xy'"):
        harp.meshgrid(harp.arange(2), indexing="yx")
    with pytest.raises(TypeError, match="harp.addmm: expected harp tensors"):
        harp.addmm(np.ones((2, 2)), harp.ones(2, 2), harp.ones(2, 2))
