"""Element-wise math and activations against PyTorch: forward values and
gradients in float32 and float64 on odd shapes, floor-division and Python's
% for floats and integers, where / masked_fill with infinities, clamp at its
bounds, and finite differences for the composed activations."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import harp
import harp.nn.functional as HF

SHAPES = [(1,), (7,), (3, 5), (2, 3, 17)]
DTYPES = {"f32": (np.float32, harp.float32, 1e-5), "f64": (np.float64, harp.float64, 1e-11)}


def sample(shape, dtype, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def check(hfn, tfn, x, tol, domain=None):
    """Forward and gradient (of sum(f(x) * seed)) of harp against torch."""
    seed = sample(x.shape, x.dtype, seed=9)
    hx = harp.tensor(x, requires_grad=True)
    hy = hfn(hx)
    (hy * harp.tensor(seed)).sum().backward()
    tx = torch.tensor(x, requires_grad=True)
    ty = tfn(tx)
    (ty * torch.tensor(seed)).sum().backward()
    np.testing.assert_allclose(hy.numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=tol * 10,
                               atol=tol * 10)


UNARY = {
    "erf": (torch.erf, (-2, 2)), "log1p": (torch.log1p, (-0.9, 3)),
    "expm1": (torch.expm1, (-2, 2)), "rsqrt": (torch.rsqrt, (0.2, 3)),
    "tan": (torch.tan, (-1.2, 1.2)), "atan": (torch.atan, (-3, 3)),
    "ceil": (torch.ceil, (-3, 3)), "round": (torch.round, (-3, 3)),
    "trunc": (torch.trunc, (-3, 3)), "sign": (torch.sign, (-2, 2)),
    "square": (torch.square, (-2, 2)),
}


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math(name, shape, dtype):
    np_t, _, tol = DTYPES[dtype]
    tfn, (low, high) = UNARY[name]
    x = sample(shape, np_t, low, high)
    check(lambda t: getattr(t, name)(), tfn, x, tol)


ACTIVATIONS = {
    "gelu": (HF.gelu, F.gelu),
    "gelu_tanh": (lambda t: HF.gelu(t, approximate="tanh"),
                  lambda t: F.gelu(t, approximate="tanh")),
    "silu": (HF.silu, F.silu),
    "elu": (lambda t: HF.elu(t, alpha=0.7), lambda t: F.elu(t, alpha=0.7)),
    "leaky_relu": (lambda t: HF.leaky_relu(t, 0.1), lambda t: F.leaky_relu(t, 0.1)),
    "softplus": (lambda t: HF.softplus(t, beta=2.0, threshold=3.0),
                 lambda t: F.softplus(t, beta=2.0, threshold=3.0)),
    "hardtanh": (lambda t: HF.hardtanh(t, -0.5, 1.5), lambda t: F.hardtanh(t, -0.5, 1.5)),
    "clamp_min": (lambda t: t.clamp(min=0.25), lambda t: t.clamp(min=0.25)),
    "clamp_max": (lambda t: t.clip(max=-0.25), lambda t: t.clip(max=-0.25)),
}


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations(name, shape, dtype):
    np_t, _, tol = DTYPES[dtype]
    ours, theirs = ACTIVATIONS[name]
    check(ours, theirs, sample(shape, np_t, -3, 3, seed=len(shape)), tol)


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "elu", "softplus"])
def test_activation_gradients_match_finite_differences(name):
    ours, _ = ACTIVATIONS[name]
    x = sample((11,), np.float64, -3, 3, seed=4)
    hx = harp.tensor(x, requires_grad=True)
    ours(hx).sum().backward()
    h = 1e-6
    for i in range(len(x)):
        plus, minus = x.copy(), x.copy()
        plus[i] += h
        minus[i] -= h
        fd = (ours(harp.tensor(plus)).sum().item() - ours(harp.tensor(minus)).sum().item()) / (2 * h)
        assert abs(hx.grad.numpy()[i] - fd) < 1e-7, (i, hx.grad.numpy()[i], fd)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_floor_division_and_python_modulo(dtype):
    a = np.array([-7.5, -3, 0, 2.5, 7, -1, 5, -9], dtype=dtype)
    b = np.array([2, -3, 4, -2.5, 3, 7, -2, 4], dtype=dtype)
    b[b == 0] = 3
    ha, hb = harp.tensor(a), harp.tensor(b)
    np.testing.assert_array_equal((ha // hb).numpy(), a // b)
    np.testing.assert_array_equal((ha % hb).numpy(), np.mod(a, b))
    np.testing.assert_array_equal(ha.remainder(hb).numpy(),
                                  torch.remainder(torch.tensor(a), torch.tensor(b)).numpy())
    np.testing.assert_array_equal(ha.fmod(hb).numpy(), np.fmod(a, b))
    np.testing.assert_array_equal((ha % 3).numpy(), np.mod(a, dtype(3)))


def test_modulo_gradient_matches_torch():
    a, b = sample((9,), np.float64, -5, 5, seed=1), sample((9,), np.float64, 0.5, 2, seed=2)
    b[::2] *= -1
    ha, hb = harp.tensor(a, requires_grad=True), harp.tensor(b, requires_grad=True)
    ((ha % hb) * 2 + ha.fmod(hb)).sum().backward()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (torch.remainder(ta, tb) * 2 + torch.fmod(ta, tb)).sum().backward()
    np.testing.assert_allclose(ha.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hb.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


def test_where_and_masked_fill_select():
    x = sample((4, 5), np.float64, seed=3)
    hx = harp.tensor(x, requires_grad=True)
    # log of a negative is NaN, and -inf fills: neither leaks through a select.
    y = harp.where(hx > 0, hx.log(), float("-inf"))
    np.testing.assert_allclose(y.numpy(), np.where(x > 0, np.log(np.abs(x)), -np.inf),
                               rtol=1e-14)
    masked = hx.masked_fill(hx < 0, float("inf"))
    assert np.isinf(masked.numpy()[x < 0]).all()
    soft = harp.where(hx > 0, hx * 2, hx.exp()).sum()
    soft.backward()
    np.testing.assert_allclose(hx.grad.numpy(), np.where(x > 0, 2.0, np.exp(x)), rtol=1e-12)
    # Broadcasting, promotion and numbers on either side.
    cond = harp.tensor(np.array([True, False, True]))
    np.testing.assert_array_equal(
        harp.where(cond, 1, harp.tensor(np.zeros((2, 3), np.float32))).numpy(),
        np.where([True, False, True], 1, np.zeros((2, 3))))
    with pytest.raises(harp.HarpError, match="where: the condition must be a bool tensor"):
        harp.where(hx, hx, hx)


def test_isnan_isinf():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
    np.testing.assert_array_equal(harp.tensor(x).isnan().numpy(), np.isnan(x))
    np.testing.assert_array_equal(harp.tensor(x).isinf().numpy(), np.isinf(x))
    i = harp.tensor(np.arange(4))
    assert not i.isnan().numpy().any() and not i.isinf().numpy().any()
    assert i.isnan().dtype == harp.bool_


@pytest.mark.parametrize("name", ["exp", "log", "log2", "exp2", "sqrt", "rsqrt", "sin", "cos",
                                  "tan", "tanh", "atan", "sigmoid", "erf", "log1p", "expm1",
                                  "reciprocal"])
def test_floating_functions_promote_integers_and_bools(name):
    # As torch's: integer and bool tensors are computed in the default float type.
    torch = pytest.importorskip("torch")
    for values in (np.array([1, 2, 7], np.int64), np.array([3, 0, 5], np.int32),
                   np.array([True, False, True])):
        got = getattr(harp.tensor(values), name)()
        want = getattr(torch, name)(torch.from_numpy(values))
        assert got.dtype == harp.float32, (name, values.dtype, got.dtype)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, atol=1e-6)


def test_rounding_keeps_integers():
    i = harp.tensor(np.array([-3, 0, 5], np.int64))
    for name in ("floor", "ceil", "round", "trunc"):
        got = getattr(i, name)()
        assert got.dtype == harp.int64
        np.testing.assert_array_equal(got.numpy(), [-3, 0, 5])
    with pytest.raises(harp.HarpError, match="floor: not defined for bool"):
        harp.tensor(np.array([True])).floor()


def test_errors_name_the_op():
    i = harp.tensor(np.arange(3))
    with pytest.raises(harp.HarpError, match="gelu: needs a float tensor"):
        HF.gelu(i)
    with pytest.raises(ValueError, match="approximate"):
        HF.gelu(harp.tensor(np.ones(2)), approximate="fast")
    with pytest.raises(harp.HarpError, match="clamp: give min, max or both"):
        harp.tensor(np.ones(2)).clamp()


def test_pow_gradients_at_zero_match_torch():
    # 0 ** t has a zero gradient where t >= 0, and x ** 0 a zero one at x = 0
    # (torch's rules; 0 * log(0) and 0 * 0^-1 would be NaN).
    torch = pytest.importorskip("torch")
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    for base in (0.0, 2.0, 0.5):
        h, t = harp.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (base ** h).sum().backward()
        (base ** t).sum().backward()
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    a, b = np.array([0.0, 0.0, 1.5, 2.0, 0.0]), np.array([0.0, 2.0, 0.0, -1.0, 0.5])
    ha, hb = harp.tensor(a, requires_grad=True), harp.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (ha ** hb).sum().backward()
    (ta ** tb).sum().backward()
    np.testing.assert_allclose(ha.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hb.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


def test_inverse_trigonometry_and_frac_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    y, x = rng.normal(size=13), rng.normal(size=13)
    x[:4] = [0.0, -1.5, 2.0, 0.0]     # the y axis, the left half-plane, y = 0
    y[:4] = [1.2, 0.0, 0.0, -0.7]
    hy, hx = harp.tensor(y, requires_grad=True), harp.tensor(x, requires_grad=True)
    ty, tx = torch.tensor(y, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = harp.atan2(hy, hx), torch.atan2(ty, tx)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-14, atol=1e-15)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(hy.grad.numpy(), ty.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert harp.atan2(harp.tensor(np.zeros(1)), harp.tensor(np.zeros(1))).item() == 0.0
    # Integers promote to float32; a number broadcasts.
    ints = harp.tensor(np.array([1, -2, 0])).atan2(harp.tensor(np.array([3, 0, -1])))
    assert ints.dtype == harp.float32
    np.testing.assert_allclose(ints.numpy(), np.arctan2([1, -2, 0], [3, 0, -1]), rtol=1e-6)
    np.testing.assert_allclose(harp.tensor(y).atan2(2.0).numpy(), np.arctan2(y, 2.0))
    v = np.concatenate([np.tanh(y), [1.0, -1.0, 0.0]])
    for name in ("asin", "acos"):
        h, t = harp.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        got, want = getattr(h, name)(), getattr(torch, name)(t)
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-14, atol=1e-15)
        got[:-3].sum().backward()
        want[:-3].sum().backward()
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert np.isnan(harp.tensor(np.array([1.5])).asin().item())
    f = np.array([-2.75, -0.5, 0.0, 1.25, 3.0])
    np.testing.assert_array_equal(harp.frac(harp.tensor(f)).numpy(), torch.frac(torch.tensor(f)))
