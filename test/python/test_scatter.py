"""torch's scatter family on harp (harp/_scatter.py): scatter (src, value,
reduce='add' or 'multiply'), scatter_add, scatter_reduce, index_add,
index_copy, index_fill, as functions and Tensor methods with their in-place
forms, against torch: values, gradients (f64) and errors."""

import warnings

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
    with pytest.raises(ValueError, match="scatter: reduce must be 'add' or 'multiply', got 'mul'"):
        x.scatter(0, harp.tensor(np.zeros((1, 4), np.int64)), harp.zeros(1, 4), reduce="mul")
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


# scatter_reduce and scatter(reduce='multiply') ---------------------------------

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def reduce_both(x, dim, index, src, reduce, include_self=True, grad=True):
    """scatter_reduce on harp and torch (torch's beta warning silenced):
    (harp out, torch out, [(harp, torch) inputs])."""
    hx, tx = both(x, grad)
    hs, ts = both(src, grad)
    h = hx.scatter_reduce(dim, harp.tensor(index), hs, reduce, include_self=include_self)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t = tx.scatter_reduce(dim, torch.tensor(index), ts, reduce, include_self=include_self)
    return h, t, [(hx, tx), (hs, ts)]


def check_exact_gradients(h_out, t_out, pairs):
    """check_gradients, NaN where torch's is NaN and otherwise to 1e-12."""
    w = np.random.default_rng(5).uniform(0.5, 1.5, size=tuple(t_out.shape))
    (h_out * harp.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    for h, t in pairs:
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12,
                                   equal_nan=True)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("shape,dim,index_shape", [
    ((5, 4), 0, (13, 4)), ((3, 7), -1, (3, 13)), ((7, 1, 13), 1, (7, 5, 2)),
    ((2, 7, 3), -2, (2, 13, 3)), ((1,), 0, (7,)), ((13,), -1, (1,))])
def test_scatter_reduce_values_and_gradients(reduce, include_self, shape, dim, index_shape):
    # Random indices repeat positions (up to 13 elements to one) and leave
    # others out; f64 values and both gradients against torch's.
    rng = np.random.default_rng(sum(shape) + len(index_shape))
    x = rng.standard_normal(shape)
    src = rng.standard_normal(index_shape)
    index = rng.integers(0, shape[dim], size=index_shape)
    h, t, pairs = reduce_both(x, dim, index, src, reduce, include_self)
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_exact_gradients(h, t, pairs)


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_scatter_reduce_float32_and_int64_values(reduce, dtype):
    rng = np.random.default_rng(11)
    for include_self in (True, False):
        x = rng.integers(-9, 10, size=(7, 13)).astype(dtype)
        src = rng.integers(-9, 10, size=(7, 13)).astype(dtype)
        if dtype == np.float32:
            x, src = x * np.float32(0.37), src * np.float32(1.13)
        index = rng.integers(0, 13, size=(7, 13))
        h, t, _ = reduce_both(x, 1, index, src, reduce, include_self, grad=False)
        assert h.dtype == (harp.float32 if dtype == np.float32 else harp.int64)
        # Integer 'mean' is the floor of the quotient, as torch's.
        np.testing.assert_array_equal(h.numpy(), t.numpy())


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_with_zeros(include_self):
    # torch's gradient of a product is the product of the others: with a
    # zero in self, one zero among a position's src elements, or several.
    x = np.array([0.0, 2.0, 3.0, 0.0, 1.5, -4.0])
    index = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 4])
    src = np.array([0.0, 3.0, 0.0, 5.0, 0.5, 0.0, 0.0, 2.0, -1.5, 0.0, 7.0])
    h, t, pairs = reduce_both(x, 0, index, src, "prod", include_self)
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_exact_gradients(h, t, pairs)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_extremes_share_ties_infinities_and_nan(reduce, include_self):
    # Equal elements share the gradient (self counted even when excluded:
    # torch 1.13's rule); -inf / inf results, a NaN that wins; and the sign
    # of a zero result, torch's first of the equal ones.
    inf, nan = np.inf, np.nan
    x = np.array([3.0, 1.0, -inf, 5.0, nan, -0.0, 0.0, 2.0])
    index = np.array([0, 0, 1, 1, 2, 2, 3, 4, 5, 5, 6, 6])
    src = np.array([3.0, 3.0, 1.0, -2.0, -inf, -inf, 1.0, 7.0, 0.0, -0.0, -0.0, 0.0])
    if reduce == "amin":
        x, src = -x, -src
    h, t, pairs = reduce_both(x, 0, index, src, reduce, include_self)
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    np.testing.assert_array_equal(np.signbit(h.numpy()), np.signbit(t.detach().numpy()))
    check_exact_gradients(h, t, pairs)


def test_scatter_reduce_long_groups():
    # More than 32 elements to a position: the fold takes halving steps
    # (amax exact; a float product may differ in the last bits).
    rng = np.random.default_rng(4)
    x = rng.uniform(0.5, 1.5, size=(3, 2))
    src = rng.uniform(0.5, 1.5, size=(101, 2))
    index = rng.integers(0, 3, size=(101, 2))
    for reduce in ("amax", "amin"):
        h, t, pairs = reduce_both(x, 0, index, src, reduce, False)
        np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
        check_exact_gradients(h, t, pairs)
    h, t, pairs = reduce_both(x, 0, index, src, "prod")
    np.testing.assert_allclose(h.numpy(), t.detach().numpy(), rtol=1e-13)
    w = np.random.default_rng(5).uniform(0.5, 1.5, size=(3, 2))
    (h * harp.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for hh, tt in pairs:
        np.testing.assert_allclose(hh.grad.numpy(), tt.grad.numpy(), rtol=1e-12)


def test_scatter_reduce_forms_and_computed_inputs():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 7))
    src = rng.standard_normal((4, 13))
    index = rng.integers(0, 7, size=(4, 13))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        want = torch.scatter_reduce(torch.tensor(x), 1, torch.tensor(index), torch.tensor(src),
                                    "amax", include_self=False).numpy()
    got = harp.scatter_reduce(harp.tensor(x), 1, harp.tensor(index.astype(np.int32)),
                              harp.tensor(src), "amax", include_self=False)
    np.testing.assert_array_equal(got.numpy(), want)
    # The gradient flows through computed inputs (harp's requires_grad is
    # a leaf's).
    hx, tx = both(x, True)
    hs, ts = both(src, True)
    h = (hx * 2).scatter_reduce(1, harp.tensor(index), hs.sin(), "prod")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t = (tx * 2).scatter_reduce(1, torch.tensor(index), ts.sin(), "prod")
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_gradients(h, t, [(hx, tx), (hs, ts)])
    with harp.no_grad():
        assert not harp.tensor(x).scatter_reduce(1, harp.tensor(index), harp.tensor(src),
                                                 "amin").requires_grad


def test_scatter_reduce_0d_and_empty_index():
    hx, tx = both(np.array(3.0), True)
    h = hx.scatter_reduce(-1, harp.tensor(np.array(0)), harp.tensor(np.array(-2.0)), "prod")
    t = tx.scatter_reduce(-1, torch.tensor(0), torch.tensor(-2.0, dtype=torch.float64), "prod")
    assert h.shape == ()
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_gradients(h, t, [(hx, tx)])
    for reduce in REDUCES:
        hx, tx = both(np.array([3.0, -1.0]), True)
        h = hx.scatter_reduce(0, harp.tensor(np.zeros(0, np.int64)),
                              harp.tensor(np.zeros(0)), reduce, include_self=False)
        np.testing.assert_array_equal(h.numpy(), [3.0, -1.0])
        h.sum().backward()
        np.testing.assert_array_equal(hx.grad.numpy(), [1.0, 1.0])


def test_scatter_reduce_in_place():
    index = np.array([[0, 0, 2], [1, 1, 1]])
    src = np.array([[1.0, 5.0, 2.0], [-1.0, 4.0, 0.5]], np.float32)
    x = harp.zeros(2, 3)
    assert x.scatter_reduce_(1, harp.tensor(index), harp.tensor(src), "amax",
                             include_self=False) is x
    t = torch.zeros(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t.scatter_reduce_(1, torch.tensor(index), torch.tensor(src), "amax", include_self=False)
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    computed = harp.ones(2, 3) * 2
    computed.scatter_reduce_(1, harp.tensor(index), harp.tensor(src), "mean")
    np.testing.assert_allclose(computed.numpy(), [[8 / 3, 2, 2], [2, 5.5 / 4, 2]], rtol=1e-6)
    leaf = harp.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="scatter_reduce_: a leaf tensor that requires grad"):
        leaf.scatter_reduce_(0, harp.tensor(np.array([0])), harp.ones(1), "sum")


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_scatter_multiply(dtype):
    # Each element sent to a position multiplies it (a value once per time
    # the index names the position), as torch's reduce='multiply'.
    rng = np.random.default_rng(6)
    x = rng.integers(-3, 4, size=(7, 13)).astype(dtype)
    src = rng.integers(-3, 4, size=(5, 13)).astype(dtype)
    index = rng.integers(0, 7, size=(5, 13))
    hx, tx = both(x)
    hi, ti = harp.tensor(index), torch.tensor(index)
    np.testing.assert_array_equal(
        hx.scatter(0, hi, harp.tensor(src), reduce="multiply").numpy(),
        tx.scatter(0, ti, torch.tensor(src), reduce="multiply").numpy())
    np.testing.assert_array_equal(hx.scatter(-2, hi, 3, reduce="multiply").numpy(),
                                  tx.scatter(-2, ti, 3, reduce="multiply").numpy())
    computed = hx * 1
    computed.scatter_(0, hi, harp.tensor(src), reduce="multiply")
    np.testing.assert_array_equal(computed.numpy(),
                                  tx.scatter(0, ti, torch.tensor(src), reduce="multiply").numpy())


def test_scatter_multiply_gradient_is_scatter_reduce_prods():
    # torch 1.13 has no gradient for scatter(reduce='multiply'); harp's is
    # that of scatter_reduce(..., 'prod'), the same function.
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 7))
    src = rng.standard_normal((3, 13))
    index = rng.integers(0, 7, size=(3, 13))
    hx, hs = harp.tensor(x, requires_grad=True), harp.tensor(src, requires_grad=True)
    h = hx.scatter(1, harp.tensor(index), hs, reduce="multiply")
    _, t, pairs = reduce_both(x, 1, index, src, "prod")
    np.testing.assert_array_equal(h.numpy(), t.detach().numpy())
    check_exact_gradients(h, t, [(hx, pairs[0][1]), (hs, pairs[1][1])])


def test_scatter_reduce_errors_name_the_op():
    x = harp.zeros(3, 4)
    index = harp.tensor(np.zeros((1, 4), np.int64))
    with pytest.raises(ValueError, match="scatter_reduce: reduce must be one of 'sum', 'prod', "
                                         "'mean', 'amax' or 'amin', got 'max'"):
        x.scatter_reduce(0, index, harp.ones(1, 4), "max")
    with pytest.raises(ValueError, match="scatter_reduce: reduce must be one of"):
        harp.scatter_reduce(x, 0, index, harp.ones(1, 4), reduce="multiply")
    with pytest.raises(harp.HarpIndexError, match=r"scatter_reduce: index 3 at \[0, 1\] is out "
                                                  "of range for dim 0 of size 3"):
        x.scatter_reduce(0, harp.tensor(np.array([[0, 3, 1, 2]])), harp.ones(1, 4), "amax")
    # A computed index is read when the reduction groups it: checked too.
    with pytest.raises(harp.HarpIndexError, match=r"scatter_reduce: index 4 at \[0, 0\]"):
        x.scatter_reduce(0, harp.tensor(np.array([[1, 0, 1, 2]])) * 4, harp.ones(1, 4), "amax")
    with pytest.raises(harp.HarpError, match="scatter_reduce: src's dtype float64 differs"):
        x.scatter_reduce(0, index, harp.ones(1, 4, dtype=harp.float64), "sum")
    with pytest.raises(harp.HarpError, match=r"scatter_reduce: index \[1, 5\] is larger than"):
        x.scatter_reduce(1, harp.tensor(np.zeros((1, 5), np.int64)), harp.ones(1, 4), "mean")
    with pytest.raises(harp.HarpError, match="scatter_reduce: reduce='amax' needs an integer or "
                                             "float tensor, got bool"):
        harp.tensor(np.zeros(3, bool)).scatter_reduce(0, harp.tensor(np.array([0])),
                                                      harp.tensor(np.ones(1, bool)), "amax")
    with pytest.raises(TypeError, match="scatter_reduce: src must be a harp tensor"):
        x.scatter_reduce(0, index, 1.0, "sum")
    with pytest.raises(harp.HarpError, match="scatter_reduce: dim -3 is out of range"):
        x.scatter_reduce(-3, index, harp.ones(1, 4), "sum")
