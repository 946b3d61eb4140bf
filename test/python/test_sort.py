"""harp.sort, argsort, msort and topk (harp/_sort.py) against torch: values,
indices (torch's stable sort), NaN placement, dtypes, dims, lengths around
the vector widths, gradients (f64) and errors."""

import numpy as np
import pytest
import torch

import harp


def data(shape, dtype, seed, ties=False):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5 if ties else -1000, 5 if ties else 1000, size=shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    values = rng.standard_normal(shape)
    if ties:
        values = np.round(values * 2) / 2
    return values.astype(dtype)


@pytest.mark.parametrize("n", [1, 7, 16, 17, 33, 100])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_rows_matches_torch_stable(n, dtype, descending):
    x = data((3, n), dtype, n, ties=True)
    h = harp.sort(harp.tensor(x), -1, descending)
    t = torch.sort(torch.tensor(x), stable=True, dim=-1, descending=descending)
    np.testing.assert_array_equal(h.values.numpy(), t.values.numpy())
    np.testing.assert_array_equal(h.indices.numpy(), t.indices.numpy())
    assert h.indices.dtype == harp.int64


@pytest.mark.parametrize("dim", [0, 1, -1, -3])
def test_sort_any_dim_of_3d(dim):
    x = data((4, 5, 6), np.float64, dim + 10)
    h_values, h_indices = harp.tensor(x).sort(dim, descending=True)
    t = torch.tensor(x).sort(dim=dim, descending=True, stable=True)
    np.testing.assert_array_equal(h_values.numpy(), t.values.numpy())
    np.testing.assert_array_equal(h_indices.numpy(), t.indices.numpy())
    np.testing.assert_array_equal(harp.argsort(harp.tensor(x), dim).numpy(),
                                  torch.argsort(torch.tensor(x), dim=dim).numpy())
    np.testing.assert_array_equal(harp.msort(harp.tensor(x)).numpy(),
                                  torch.msort(torch.tensor(x)).numpy())


def test_nan_sorts_above_every_number_and_bool():
    x = np.array([[np.nan, 1.0, -np.inf, np.nan, np.inf, 0.0]], np.float32)
    for descending in (False, True):
        h = harp.sort(harp.tensor(x), descending=descending)
        t = torch.sort(torch.tensor(x), stable=True, dim=-1, descending=descending)
        np.testing.assert_array_equal(h.values.numpy(), t.values.numpy())
        np.testing.assert_array_equal(h.indices.numpy(), t.indices.numpy())
    b = data((2, 9), np.bool_, 3)
    np.testing.assert_array_equal(harp.sort(harp.tensor(b)).indices.numpy(),
                                  torch.sort(torch.tensor(b), stable=True, dim=-1).indices.numpy())


def test_zero_d_and_single_element():
    v, i = harp.sort(harp.tensor(2.5))
    assert float(v) == 2.5 and int(i) == 0
    v, i = harp.topk(harp.tensor([4.0]), 1)
    assert v.numpy().tolist() == [4.0] and i.numpy().tolist() == [0]


@pytest.mark.parametrize("k,largest", [(1, True), (3, True), (3, False), (0, True), (9, False)])
def test_topk_matches_torch(k, largest):
    x = data((5, 9), np.float32, k + 20)   # distinct values: torch's order is defined
    h = harp.topk(harp.tensor(x), k, largest=largest)
    t = torch.topk(torch.tensor(x), k, largest=largest)
    np.testing.assert_array_equal(h.values.numpy(), t.values.numpy())
    np.testing.assert_array_equal(h.indices.numpy(), t.indices.numpy())
    h = harp.tensor(x).topk(k, dim=0, largest=largest) if k <= 5 else None
    if h is not None:
        t = torch.tensor(x).topk(k, dim=0, largest=largest)
        np.testing.assert_array_equal(h.indices.numpy(), t.indices.numpy())


def test_gradients_flow_through_the_values():
    x = data((4, 11), np.float64, 5)
    w = np.random.default_rng(6).uniform(0.5, 1.5, size=(4, 3))
    hx = harp.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    (harp.topk(hx, 3).values * harp.tensor(w)).sum().backward()
    (torch.topk(tx, 3).values * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    hx = harp.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    w = np.random.default_rng(7).uniform(0.5, 1.5, size=x.shape)
    (harp.sort(hx, 0).values * harp.tensor(w)).sum().backward()
    (torch.sort(tx, 0).values * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_errors():
    x = harp.zeros(3, 4)
    with pytest.raises(harp.HarpError, match=r"topk: k must be an int in \[0, 4\]"):
        harp.topk(x, 5)
    with pytest.raises(harp.HarpError, match="sort: dim 2 is out of range"):
        harp.sort(x, 2)
    with pytest.raises(harp.HarpError, match="complex tensors have no order"):
        harp.sort(harp.tensor(np.ones(3, np.complex64)))
    with pytest.raises(TypeError, match="sort: input must be a harp tensor"):
        harp.sort([1, 2])
