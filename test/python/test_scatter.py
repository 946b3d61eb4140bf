"""torch's scatter family on harp (harp/_scatter.py): scatter (src, value,
reduce='add'), scatter_add, index_add, index_copy, index_fill, as functions
and Tensor methods with their in-place forms, against torch: values,
gradients (f64) and errors."""

import numpy as np
import pytest
import torch

import harp


def unique_rows(rng, n_rows, shape, dim):
    """An index of `shape` whose entries along `dim` are distinct in [0, n_rows)
    for each position of the other dims (torch's scatter is defined then)."""
    index = np.empty(shape, np.int64)
    moved = np.moveaxis(index, dim, -1)
    for pos in np.ndindex(moved.shape[:-1]):
        moved[pos] = rng.permutation(n_rows)[:moved.shape[-1]]
    return index


def both(x, requires_grad=False):
    return (harp.tensor(x, requires_grad=requires_grad),
            torch.tensor(x, requires_grad=requires_grad))


def check_gradients(h_out, t_out, pairs):
    w = np.random.default_rng(5).uniform(0.5, 1.5, size=tuple(t_out.shape))
    (h_out * harp.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    for h, t in pairs:
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,dim,index_shape,src_shape", [
    ((5, 4), 0, (3, 4), (3, 4)), ((5, 4), 1, (5, 2), (5, 3)), ((3, 4, 6), -1, (2, 3, 4), (3, 4, 5)),
    ((7,), 0, (7,), (7,)), ((1, 17), 1, (1, 9), (1, 9))])
def test_scatter_src_values_and_gradients(shape, dim, index_shape, src_shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape)
    src = rng.standard_normal(src_shape)
    index = unique_rows(rng, shape[dim], index_shape, dim)
    hx, tx = both(x, True)
    hs, _ = both(src, True)
    # torch reads src only where index reaches (its own backward fails on a
    # larger src in torch 1.13): the reference gets that block.
    block = tuple(slice(0, n) for n in index_shape)
    ts = torch.tensor(src[block], requires_grad=True)
    h = harp.scatter(hx, dim, harp.tensor(index), hs)
    t = torch.scatter(tx, dim, torch.tensor(index), ts)
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_gradients(h, t, [(hx, tx)])
    grad = hs.grad.numpy()
    np.testing.assert_allclose(grad[block], ts.grad.numpy(), rtol=1e-12, atol=1e-12)
    outside = np.ones(src_shape, bool)
    outside[block] = False
    assert np.all(grad[outside] == 0)


def test_scatter_value_add_and_scatter_add():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6))
    index = rng.integers(0, 6, size=(4, 9))  # repeats: add and value are defined
    src = rng.standard_normal((4, 9))
    hx, tx = both(x)
    hi, ti = harp.tensor(index), torch.tensor(index)
    np.testing.assert_array_equal(hx.scatter(1, hi, 2.5).numpy(), tx.scatter(1, ti, 2.5).numpy())
    np.testing.assert_array_equal(hx.scatter(1, hi, value=-1).numpy(),
                                  tx.scatter(1, ti, value=-1).numpy())
    np.testing.assert_allclose(hx.scatter(1, hi, harp.tensor(src), reduce="add").numpy(),
                               tx.scatter(1, ti, torch.tensor(src), reduce="add").numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(hx.scatter_add(1, hi, harp.tensor(src)).numpy(),
                               tx.scatter_add(1, ti, torch.tensor(src)).numpy(), rtol=1e-12)
    # One-hot targets, as training code writes them.
    y = np.array([2, 0, 3])
    np.testing.assert_array_equal(
        harp.zeros(3, 4).scatter_(1, harp.tensor(y).unsqueeze(1), 1.0).numpy(),
        torch.zeros(3, 4).scatter_(1, torch.tensor(y).unsqueeze(1), 1.0).numpy())


def test_scatter_repeated_index_writes_the_mean():
    x = harp.zeros(2, 3)
    out = x.scatter(1, harp.tensor(np.array([[1, 1, 0], [2, 2, 2]])),
                    harp.tensor(np.array([[1.0, 3.0, 5.0], [6.0, 0.0, 3.0]], np.float32)))
    np.testing.assert_array_equal(out.numpy(), [[5, 2, 0], [0, 0, 3]])
    ints = harp.tensor(np.zeros((1, 2), np.int64)).scatter(
        1, harp.tensor(np.array([[0, 0]])), harp.tensor(np.array([[2, 3]])))
    np.testing.assert_array_equal(ints.numpy(), [[2, 0]])  # floor of the mean


@pytest.mark.parametrize("shape,dim,n", [((5, 3), 0, 7), ((4, 6), 1, 3), ((2, 3, 4), -2, 5),
                                         ((6,), 0, 4)])
def test_index_add_with_repeats(shape, dim, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(shape)
    source_shape = list(shape)
    source_shape[dim] = n
    source = rng.standard_normal(source_shape)
    index = rng.integers(0, shape[dim], size=n)
    hx, tx = both(x, True)
    hs, ts = both(source, True)
    h = hx.index_add(dim, harp.tensor(index), hs, alpha=-1.5)
    t = tx.index_add(dim, torch.tensor(index), ts, alpha=-1.5)
    np.testing.assert_allclose(h.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    check_gradients(h, t, [(hx, tx), (hs, ts)])


def test_index_copy_and_index_fill():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5))
    index = np.array([3, 0, 4])
    source = rng.standard_normal((4, 3))
    hx, tx = both(x, True)
    hs, ts = both(source, True)
    h = harp.index_copy(hx, 1, harp.tensor(index), hs)
    t = torch.index_copy(tx, 1, torch.tensor(index), ts)
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_gradients(h, t, [(hx, tx), (hs, ts)])
    hx, tx = both(x, True)
    h = hx.index_fill(-2, harp.tensor(np.array([1, 3, 1])), harp.tensor(7.0, dtype=harp.float64))
    t = tx.index_fill(-2, torch.tensor([1, 3, 1]), torch.tensor(7.0, dtype=torch.float64))
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_gradients(h, t, [(hx, tx)])


def test_in_place_forms_on_leaves_and_computed_tensors():
    x = harp.zeros(3, 4)
    idx = harp.tensor(np.array([0, 2]))
    assert x.index_fill_(0, idx, 2.0) is x
    x.index_add_(1, harp.tensor(np.array([1])), harp.ones(3, 1))
    x.scatter_add_(0, harp.tensor(np.array([[1, 1, 1, 1]])), harp.ones(1, 4))
    t = torch.zeros(3, 4)
    t.index_fill_(0, torch.tensor([0, 2]), 2.0)
    t.index_add_(1, torch.tensor([1]), torch.ones(3, 1))
    t.scatter_add_(0, torch.tensor([[1, 1, 1, 1]]), torch.ones(1, 4))
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    computed = harp.ones(2, 3) * 2
    computed.index_copy_(1, harp.tensor(np.array([2])), harp.zeros(2, 1))
    np.testing.assert_array_equal(computed.numpy(), [[2, 2, 0], [2, 2, 0]])
    leaf = harp.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="index_fill_: a leaf tensor that requires grad"):
        leaf.index_fill_(0, harp.tensor(np.array([0])), 0.0)


def test_errors_name_op_and_shapes():
    x = harp.zeros(3, 4)
    with pytest.raises(harp.HarpError, match="scatter: index must be an int64 or int32 tensor"):
        x.scatter(0, harp.zeros(1, 4), 1.0)
    with pytest.raises(harp.HarpError, match=r"scatter: index \[4, 4\] is larger than src"):
        x.scatter(1, harp.tensor(np.zeros((4, 4), np.int64)), harp.zeros(4, 4))
    with pytest.raises(harp.HarpError, match="reduce='multiply' is not supported"):
        x.scatter(0, harp.tensor(np.zeros((1, 4), np.int64)), harp.zeros(1, 4), reduce="multiply")
    with pytest.raises(TypeError, match="give exactly one of src"):
        harp.scatter(x, 0, harp.tensor(np.zeros((1, 4), np.int64)))
    with pytest.raises(harp.HarpError, match=r"index_add: source \[3, 2\] must have self's shape"):
        x.index_add(1, harp.tensor(np.array([0, 1, 2])), harp.zeros(3, 2))
    with pytest.raises(harp.HarpError, match="index_fill: dim 2 is out of range"):
        x.index_fill(2, harp.tensor(np.array([0])), 1.0)
    with pytest.raises(harp.HarpError, match="scatter: src's dtype float64 differs"):
        x.scatter(0, harp.tensor(np.zeros((1, 4), np.int64)), harp.zeros(1, 4, dtype=harp.float64))


def test_bool_and_integer_tensors():
    mask = np.array([[True, False, False], [False, False, True]])
    index = np.array([[2, 0, 1], [0, 2, 1]])
    src = np.array([[False, True, True], [True, False, False]])
    h = harp.tensor(mask).scatter(1, harp.tensor(index), harp.tensor(src))
    t = torch.tensor(mask).scatter(1, torch.tensor(index), torch.tensor(src))
    np.testing.assert_array_equal(h.numpy(), t.numpy())
    np.testing.assert_array_equal(
        harp.tensor(mask).index_fill(1, harp.tensor(np.array([0])), True).numpy(),
        torch.tensor(mask).index_fill(1, torch.tensor([0]), True).numpy())
    ints = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(
        harp.tensor(ints).index_copy(0, harp.tensor(np.array([2, 0])),
                                     harp.tensor(np.full((2, 4), -1))).numpy(),
        torch.tensor(ints).index_copy(0, torch.tensor([2, 0]), torch.full((2, 4), -1)).numpy())
