"""harp's numeric functions where their OpInfo samples do not reach: tails
(erfc, log_ndtr), NaN rules (fmax, fmin, isclose), the norms' errors and
gradients at zero, distances between equal rows, and torch's Tensor
methods of harp's functions."""

import math

import numpy as np
import pytest
import torch

import harp


def test_erfc_keeps_its_precision_where_erf_is_one():
    x = np.array([0.5, 3.0, 6.0, 10.0, 20.0, 26.0])
    got = harp.erfc(harp.tensor(x)).numpy()
    want = np.array([math.erfc(v) for v in x])
    np.testing.assert_allclose(got, want, rtol=1e-13)  # 1 - erf(x) is 0 from x = 6
    f32 = harp.erfc(harp.tensor(x[:3].astype(np.float32))).numpy()
    np.testing.assert_allclose(f32, want[:3], rtol=2e-6)
    assert harp.erfc(harp.tensor([1, 2])).dtype == harp.float32  # integers as torch's


def test_log_ndtr_far_in_the_lower_tail_with_its_gradient():
    x = np.array([-1e3, -60.0, -20.0, -10.5, -9.5, -3.0, 0.0, 4.0])
    h = harp.tensor(x, requires_grad=True)
    y = harp.special.log_ndtr(h)
    y.sum().backward()
    t = torch.tensor(x, requires_grad=True)
    torch.special.log_ndtr(t).sum().backward()
    np.testing.assert_allclose(y.numpy(), torch.special.log_ndtr(torch.tensor(x)).numpy(),
                               rtol=1e-10)
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-8)
    assert np.isfinite(h.grad.numpy()).all()


def test_fmax_fmin_take_the_number_over_nan_and_give_ties_to_input():
    a = np.array([1.0, np.nan, 3.0, np.nan, 2.0])
    b = np.array([np.nan, 2.0, 1.0, np.nan, 2.0])
    for name in ("fmax", "fmin"):
        ha, hb = harp.tensor(a, requires_grad=True), harp.tensor(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        got, want = getattr(harp, name)(ha, hb), getattr(torch, name)(ta, tb)
        np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_array_equal(ha.grad.numpy(), ta.grad.numpy())
        np.testing.assert_array_equal(hb.grad.numpy(), tb.grad.numpy())


def test_isclose_with_infinities_and_nans():
    a = np.array([np.inf, np.inf, 1.0, np.nan, 1.0, -np.inf])
    b = np.array([np.inf, -np.inf, np.inf, np.nan, 1.0 + 1e-9, -np.inf])
    for equal_nan in (False, True):
        got = harp.isclose(harp.tensor(a), harp.tensor(b), equal_nan=equal_nan).numpy()
        want = torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=equal_nan).numpy()
        np.testing.assert_array_equal(got, want)
    assert harp.allclose(harp.tensor(a[4:5]), harp.tensor(b[4:5])) is True
    assert harp.equal(harp.tensor([1, 2]), harp.tensor([1, 2])) is True
    assert harp.equal(harp.tensor([1, 2]), harp.tensor([[1, 2]])) is False
    with pytest.raises(harp.HarpError, match="isclose: input and other must have the same dtype"):
        harp.isclose(harp.tensor([1.0]), harp.tensor([1]))


def test_norms_that_need_singular_values_raise_and_name_ord():
    a = harp.tensor(np.ones((3, 3)))
    for ord in ("nuc", 2, -2):
        with pytest.raises(harp.HarpError, match=r"matrix_norm: ord=%r needs singular" % (ord,)):
            harp.linalg.matrix_norm(a, ord)
    with pytest.raises(harp.HarpError, match="ord must be 'fro'"):
        harp.linalg.matrix_norm(a, 3)
    with pytest.raises(harp.HarpError, match="vector_norm: needs a float"):
        harp.linalg.vector_norm(harp.tensor([1, 2]))


@pytest.mark.parametrize("ord", [2, 1, 0.5, -1, math.inf])
def test_vector_norm_gradient_at_zero_as_torch(ord):
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]])
    h = harp.tensor(x, requires_grad=True)
    harp.linalg.vector_norm(h, ord, dim=1).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    torch.linalg.vector_norm(t, ord, dim=1).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_distances_between_equal_rows_differentiate_as_torch():
    x = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, -1.0]])
    h = harp.tensor(x, requires_grad=True)
    (harp.nn.functional.pdist(h) + harp.cdist(h, h + 1.0).sum()).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    (torch.nn.functional.pdist(t) + torch.cdist(t, t + 1.0).sum()).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_functions_are_tensor_methods_as_in_torch():
    missing = sorted(name for name in harp.__all__
                     if callable(getattr(harp, name)) and hasattr(torch.Tensor, name)
                     and not isinstance(getattr(harp, name), (type, harp.DType))
                     and not hasattr(harp.Tensor, name))
    assert missing == []
    x = harp.tensor(np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -0.25]]))
    np.testing.assert_allclose(x.sinh().numpy(), np.sinh(x.numpy()))
    np.testing.assert_array_equal(x.fmax(harp.tensor(np.full((2, 3), 0.1))).numpy(),
                                  np.fmax(x.numpy(), 0.1))
    np.testing.assert_array_equal(x.where(x > 0, 7.0).numpy(), np.where(x.numpy() > 0, x.numpy(), 7))
    np.testing.assert_array_equal(x.mT.numpy(), x.numpy().T)
    np.testing.assert_array_equal(x.H.numpy(), x.numpy().T)
    np.testing.assert_array_equal(x.sum_to_size(1, 3).numpy(), x.numpy().sum(0, keepdims=True))
    assert x.cdouble().dtype == harp.complex128
    with pytest.raises(harp.HarpError, match="sum_to_size: size \\[4\\] is not expandable"):
        x.sum_to_size(4)
    with pytest.raises(harp.HarpError, match="H: needs a 0-d or 2-D tensor"):
        harp.ones(2, 2, 2).H


def test_fill_keeps_input_in_the_graph_with_a_zero_gradient():
    x = harp.tensor(np.array([1.0, np.inf, np.nan, -2.0]), requires_grad=True)
    v = harp.tensor(3.0, requires_grad=True)
    y = harp.fill(x, v) * harp.tensor([1.0, 2.0, 3.0, 4.0])
    y.sum().backward()
    np.testing.assert_array_equal(y.numpy(), [3.0, 6.0, 9.0, 12.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0, 0.0])
    assert v.grad.item() == 10.0
    assert harp.fill(harp.tensor([1, 2]), 7).numpy().tolist() == [7, 7]


def test_scans_of_extremes_and_logsumexp_as_torch():
    x = np.array([[1.0, 3.0, 3.0, np.nan, 2.0, np.nan, 5.0],
                  [-np.inf, -np.inf, 0.5, 0.5, -1.0, 7.0, 7.0]])
    for name in ("cummax", "cummin"):
        got = getattr(harp, name)(harp.tensor(x), 1)
        want = getattr(torch, name)(torch.tensor(x), 1)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    wide = np.array([1000.0, -1000.0, 1000.5, -np.inf, 3.0])
    h = harp.tensor(wide, requires_grad=True)
    y = harp.logcumsumexp(h, 0)
    (y * harp.tensor(np.arange(1.0, 6.0))).sum().backward()
    t = torch.tensor(wide, requires_grad=True)
    ty = torch.logcumsumexp(t, 0)
    (ty * torch.arange(1.0, 6.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-300)


def test_medians_and_quantiles_with_nans_as_torch():
    x = np.array([[3.0, np.nan, 1.0, 2.0], [4.0, 0.5, -1.0, 9.0]])
    got, want = harp.median(harp.tensor(x), 1), torch.median(torch.tensor(x), 1)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(harp.nanmedian(harp.tensor(x), 1).values.numpy(),
                                  torch.nanmedian(torch.tensor(x), 1).values.numpy())
    for interpolation in ("linear", "lower", "higher", "midpoint", "nearest"):
        for name in ("quantile", "nanquantile"):
            got = getattr(harp, name)(harp.tensor(x), harp.tensor([0.1, 0.5, 0.9],
                                      dtype=harp.float64), 1, interpolation=interpolation)
            want = getattr(torch, name)(torch.tensor(x), torch.tensor([0.1, 0.5, 0.9],
                                        dtype=torch.float64), 1, interpolation=interpolation)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)
    with pytest.raises(harp.HarpError, match="quantile: q must have the input's dtype"):
        harp.quantile(harp.tensor(x), harp.tensor([0.5]))
    with pytest.raises(harp.HarpError, match="interpolation must be one of"):
        harp.quantile(harp.tensor(x), 0.5, interpolation="cubic")
    with pytest.raises(harp.HarpError, match="kthvalue: k = 5 is out of range"):
        harp.kthvalue(harp.tensor(x), 5)


def test_erfinv_near_the_ends_and_its_gradient():
    y = np.array([-1.0, -0.999999, -0.3, 0.0, 0.6, 1 - 1e-12, 1.0, 1.5])
    h = harp.tensor(y, requires_grad=True)
    z = harp.erfinv(h)
    z.sum().backward()
    inside = np.abs(y) < 1
    # erf of the result gives y back to the last bits (erfc of it near the ends).
    back = np.array([math.erfc(abs(v)) if abs(u) > 0.5 else math.erf(v)
                     for u, v in zip(y[inside], z.numpy()[inside])])
    want = np.where(np.abs(y[inside]) > 0.5, 1 - np.abs(y[inside]), y[inside])
    np.testing.assert_allclose(back, want, rtol=1e-13, atol=1e-300)
    t = torch.tensor(y, requires_grad=True)
    torch.erfinv(t).sum().backward()
    np.testing.assert_allclose(h.grad.numpy()[inside], t.grad.numpy()[inside], rtol=1e-4)
    np.testing.assert_array_equal(z.numpy()[~inside], [-np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(h.grad.numpy()[~inside], [np.inf, np.inf, np.nan])


def test_max_unpool_gradient_reaches_every_input_of_a_shared_index():
    x = np.array([[[5.0, 5.0, 1.0]]])  # two windows that took the same maximum
    indices = np.array([[[1, 1, 3]]])
    h = harp.tensor(x, requires_grad=True)
    out = harp.nn.functional.max_unpool1d(h, harp.tensor(indices), 2, stride=1)
    (out * harp.tensor(np.arange(1.0, 5.0).reshape(1, 1, 4))).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    tout = torch.nn.functional.max_unpool1d(t, torch.tensor(indices), 2, stride=1)
    (tout * torch.arange(1.0, 5.0, dtype=torch.float64).reshape(1, 1, 4)).sum().backward()
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(h.grad.numpy(), t.grad.numpy())


def test_long_tail_errors_name_the_op():
    x = harp.tensor([1.0, 2.0, 3.0])
    with pytest.raises(harp.HarpError, match="masked_scatter: the mask selects 2 elements, "
                                             "source has 1"):
        harp.masked_scatter(x, x > 1.5, harp.tensor([9.0]))
    with pytest.raises(harp.HarpError, match="as_strided: size \\[2\\], stride \\[2\\] and "
                                             "offset 0 reach element 2 of a tensor of 2"):
        harp.as_strided(x[:2], [2], [2])
    with pytest.raises(harp.HarpError, match="index_reduce: reduce must be"):
        harp.index_reduce(x, 0, harp.tensor([0]), harp.tensor([1.0]), "sum")
