"""Complex tensors (complex64, complex128) through the Tensor API: values
against NumPy and PyTorch on odd shapes, promotion, casts, reductions,
matmul and conv, views, the errors of ops complex numbers do not have, and
gradients against torch.autograd (PyTorch's convention: for a real loss L,
grad = dL/dre + i dL/dim) and, where PyTorch 1.13 has no complex kernel,
against finite differences."""

import numpy as np
import pytest
import torch

import harp

SHAPES = [(1,), (7,), (3, 5), (2, 3, 17)]
DTYPES = {"c64": (np.complex64, harp.complex64, 1e-5),
          "c128": (np.complex128, harp.complex128, 1e-12)}


def sample(shape, dtype, seed=0, scale=1.5):
    rng = np.random.default_rng(seed)
    z = rng.uniform(-scale, scale, shape) + 1j * rng.uniform(-scale, scale, shape)
    return z.astype(dtype)


def close(actual, expected, tol):
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


# --- Sources, dtypes and promotion -------------------------------------------

def test_sources_and_dtypes():
    z = harp.tensor([1 + 2j, 3j])  # Python complex numbers: complex64, as torch
    assert z.dtype == harp.complex64 and z.is_complex() and not z.is_floating_point()
    assert harp.tensor(np.array([1j])).dtype == harp.complex128
    assert harp.tensor([1.0], dtype=harp.complex128).numpy().dtype == np.complex128
    full = harp.full((2, 3), 1.5 - 2j)
    assert full.dtype == harp.complex64
    assert np.array_equal(full.numpy(), np.full((2, 3), 1.5 - 2j, np.complex64))
    assert harp.full([2], 1j, dtype=harp.complex128).numpy().dtype == np.complex128
    assert harp.constant(2j).item() == 2j
    assert harp.zeros(3, dtype=harp.complex64).numpy().tolist() == [0j] * 3
    assert harp.ones(2, dtype=harp.complex128).numpy().tolist() == [1 + 0j] * 2
    with pytest.raises(harp.HarpError, match="imaginary part needs a complex dtype"):
        harp.full([2], 1j, dtype=harp.float32)
    with pytest.raises(harp.HarpError, match="arange: needs a real numeric dtype, got c64"):
        harp.arange(3, dtype=harp.complex64)
    with pytest.raises(harp.HarpError, match="rand: needs a float dtype, got c64"):
        harp.rand(3, dtype=harp.complex64)


@pytest.mark.parametrize("a, b, expected", [
    (harp.complex64, harp.float32, harp.complex64),
    (harp.complex64, harp.float64, harp.complex128),
    (harp.complex64, harp.int64, harp.complex64),
    (harp.complex64, harp.bool_, harp.complex64),
    (harp.complex128, harp.float32, harp.complex128),
    (harp.complex64, harp.complex128, harp.complex128),
    (harp.uint8, harp.complex128, harp.complex128),
])
def test_promotion_is_pytorchs(a, b, expected):
    assert harp.promote(a, b) == expected and harp.promote(b, a) == expected
    ta, tb = (getattr(torch, str(d).split(".")[-1].replace("bool_", "bool"))
              for d in (a, b))
    assert str(torch.promote_types(ta, tb)).split(".")[-1] == str(expected).split(".")[-1]


@pytest.mark.parametrize("dtype, number, expected", [
    (np.float32, 1j, harp.complex64), (np.float64, 1j, harp.complex128),
    (np.int32, 1j, harp.complex64), (np.complex128, 2.0, harp.complex128),
    (np.complex64, 3, harp.complex64), (np.float32, np.complex64(1j), harp.complex64),
])
def test_python_numbers_are_weak(dtype, number, expected):
    x = np.arange(1, 4).astype(dtype)
    out = harp.tensor(x) * number
    assert out.dtype == expected
    close(out.numpy(), x * complex(number), 1e-6)
    # A number is an argument of the compiled code, as for reals.
    close((harp.tensor(x) * (number * 2)).numpy(), x * complex(number) * 2, 1e-6)


# --- Element-wise ------------------------------------------------------------

BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "pow": (lambda a, b: a ** b, np.power),
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", list(DTYPES))
def test_binary(name, shape, dt):
    np_dtype, _, tol = DTYPES[dt]
    a, b = sample(shape, np_dtype, 1), sample(shape, np_dtype, 2)
    hfn, nfn = BINARY[name]
    out = hfn(harp.tensor(a), harp.tensor(b))
    assert out.numpy().dtype == np_dtype
    expected = nfn(a.astype(np.complex128), b.astype(np.complex128))
    close(out.numpy(), expected, tol * (100 if name == "pow" else 1))


def test_powers():
    z = np.array([0j, 1 + 1j, -2 + 0j, 0.5 - 1.5j], np.complex64)
    h, t = harp.tensor(z), torch.tensor(z)
    # Small integer exponents are products: exact where exp(n log z) rounds.
    products = {0: np.ones_like(z), 1: z, 2: z * z, 3: z * z * z,
                4: (z * z) * (z * z)}
    for n, expected in products.items():
        assert np.array_equal((h ** n).numpy(), expected), n
    close((h ** -2).numpy()[1:], (t ** -2).numpy()[1:], 1e-6)
    # z ** w at z = 0: 1 for w = 0, 0 for Re(w) > 0 (complex.pow alone
    # gives NaN there).
    for w in (0.5, 1 + 1j, 2.5, 0j):
        close((h ** w).numpy(), (t ** w).numpy(), 1e-5)
    close(h.pow(h).numpy()[1:], t.pow(t).numpy()[1:], 1e-5)
    assert h.pow(h).numpy()[0] == 1


def test_comparisons_and_broadcast():
    a = sample((3, 4), np.complex64, 3)
    b = a.copy()
    b[1, 2] += 1j
    ha, hb = harp.tensor(a), harp.tensor(b)
    assert np.array_equal(ha.eq(hb).numpy(), a == b)
    assert np.array_equal(ha.ne(hb).numpy(), a != b)
    row = sample((4,), np.complex64, 4)
    close((ha + harp.tensor(row)).numpy(), a + row, 1e-6)
    mixed = harp.tensor(a) * harp.tensor(np.arange(4, dtype=np.float64))
    assert mixed.dtype == harp.complex128
    close(mixed.numpy(), a.astype(np.complex128) * np.arange(4), 1e-6)


UNARY = {  # name: NumPy reference (in complex128)
    "neg": np.negative, "recip": lambda z: 1 / z, "sqrt": np.sqrt,
    "log": np.log, "log2": np.log2, "exp": np.exp, "exp2": np.exp2,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "tan": np.tan,
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "log1p": np.log1p,
    "expm1": np.expm1, "rsqrt": lambda z: 1 / np.sqrt(z), "square": np.square,
    "abs": np.abs, "conj": np.conj, "angle": np.angle,
    "real": np.real, "imag": np.imag,
}


def apply(z, name):
    if name == "neg":
        return -z
    if name in ("real", "imag"):
        return getattr(z, name)
    return getattr(z, name)()


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("shape", [(1,), (17,), (2, 3, 5)])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_unary(name, shape, dt):
    np_dtype, _, tol = DTYPES[dt]
    z = sample(shape, np_dtype, 5)
    out = apply(harp.tensor(z), name).numpy()
    expected = UNARY[name](z.astype(np.complex128))
    real_result = name in ("abs", "angle", "real", "imag")
    part = np.float32 if np_dtype == np.complex64 else np.float64
    assert out.dtype == (part if real_result else np_dtype)
    close(out, expected, tol * 10)


def test_nan_and_inf():
    z = np.array([1 + 2j, complex(np.nan, 1), complex(1, np.inf),
                  complex(-np.inf, 0), complex(0, np.nan)], np.complex64)
    h = harp.tensor(z)
    assert np.array_equal(h.isnan().numpy(), np.isnan(z))
    assert np.array_equal(h.isinf().numpy(), np.isinf(z))


def test_real_tensors_have_parts_too():
    x = np.array([-1.5, 0.0, 2.0, np.nan], np.float32)
    h = harp.tensor(x)
    assert np.array_equal(h.real.numpy(), x, equal_nan=True)
    assert np.array_equal(h.conj().numpy(), x, equal_nan=True)
    assert np.array_equal(h.angle().numpy(), torch.tensor(x).angle().numpy(),
                          equal_nan=True)
    ints = harp.tensor(np.array([-2, 3], np.int32)).angle()
    assert ints.dtype == harp.float32 and np.allclose(ints.numpy(), [np.pi, 0])
    with pytest.raises(harp.HarpError, match=r"imag: needs a complex tensor, got f32 \[4\]"):
        h.imag


def test_complex_polar_and_views_as_real():
    re, im = np.random.default_rng(6).standard_normal((2, 3, 4))
    z = harp.complex(harp.tensor(re), harp.tensor(im.astype(np.float32)))
    assert z.dtype == harp.complex128  # f64 and f32 parts: the wider
    close(z.numpy(), re + 1j * im.astype(np.float32), 1e-12)
    assert harp.complex(harp.tensor(re.astype(np.float32)),
                        harp.tensor(im.astype(np.float32))).dtype == harp.complex64
    r, theta = np.abs(re), im
    close(harp.polar(harp.tensor(r), harp.tensor(theta)).numpy(),
          torch.polar(torch.tensor(r), torch.tensor(theta)).numpy(), 1e-12)
    pairs = harp.view_as_real(z)
    assert pairs.shape == (3, 4, 2)
    close(pairs.numpy(), torch.view_as_real(torch.tensor(z.numpy())).numpy(), 0)
    close(harp.view_as_complex(pairs).numpy(), z.numpy(), 0)
    for call in (lambda: harp.complex(harp.tensor([1, 2]), harp.tensor([3, 4])),
                 lambda: harp.view_as_real(harp.tensor([1.0])),
                 lambda: harp.view_as_complex(harp.tensor([1.0, 2.0, 3.0]))):
        with pytest.raises(harp.HarpError):
            call()


@pytest.mark.parametrize("op, match", [
    (lambda z: z.floor(), "floor: not defined for complex tensors, got c64 \\[3\\]"),
    (lambda z: z.sign(), "sign: not defined for complex tensors"),
    (lambda z: z.relu(), "relu: not defined for complex tensors"),
    (lambda z: z.erf(), "erf: not defined for complex tensors"),
    (lambda z: z < z, "lt: not defined for c64 and c64 .*unordered"),
    (lambda z: z.maximum(z), "maximum: not defined for c64 and c64"),
    (lambda z: z.max(), "max: not defined for complex tensors .*unordered"),
    (lambda z: z.argmax(), "argmax: not defined for complex tensors \\(c64 \\[3\\]\\)"),
    (lambda z: z.clamp(min=0.0), "clamp: not defined for c64 \\[3\\]"),
    (lambda z: z % 2, "mod: not defined for c64"),
    (lambda z: z.softmax(0), "softmax: needs a float tensor, got c64"),
    (lambda z: (z.requires_grad_(), z.sum().backward()),
     "backward: outputs\\[0\\] is a complex64 tensor: only real float outputs"),
])
def test_errors_name_the_op(op, match):
    z = harp.tensor(sample((3,), np.complex64))
    with pytest.raises(harp.HarpError, match=match):
        op(z)


# --- Casts -------------------------------------------------------------------

@pytest.mark.parametrize("to", [np.complex64, np.complex128, np.float32,
                                np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.filterwarnings("ignore:Casting complex values to real")
def test_casts_from_complex(to):
    z = np.array([0, 1.5 - 2j, -3.25 + 0.5j, 1j, -0.75], np.complex128)
    out = harp.tensor(z).astype(getattr(harp, np.dtype(to).name.replace("bool", "bool_"))).numpy()
    # PyTorch's rule: a real type keeps the real part. bool is "not zero",
    # as NumPy's (PyTorch 1.13 reads only the real part there: 1j is False).
    if to == np.bool_:
        expected = z != 0
    else:
        expected = torch.tensor(z).to(getattr(torch, np.dtype(to).name)).numpy()
    assert out.dtype == to and np.array_equal(out, expected)


@pytest.mark.parametrize("source", [np.bool_, np.int8, np.uint8, np.int64,
                                    np.float32, np.float64])
@pytest.mark.parametrize("to", [harp.complex64, harp.complex128])
def test_casts_to_complex(source, to):
    x = (np.arange(-3, 4) * 1.5).astype(source)
    out = harp.tensor(x).astype(to).numpy()
    assert out.dtype == (np.complex64 if to == harp.complex64 else np.complex128)
    assert np.array_equal(out, x.astype(out.dtype))


# --- Reductions, matmul, conv, views -------------------------------------------

@pytest.mark.parametrize("kind", ["sum", "prod", "mean"])
@pytest.mark.parametrize("axis, keepdim", [(None, False), (0, True), (2, False),
                                           ([0, 2], False)])
def test_reductions(kind, axis, keepdim):
    z = sample((3, 4, 5), np.complex128, 7, scale=0.9)
    out = getattr(harp.tensor(z), kind)(axis=axis, keepdim=keepdim).numpy()
    ax = tuple(axis) if isinstance(axis, list) else axis
    expected = getattr(np, kind)(z, axis=ax, keepdims=keepdim)
    close(out, expected, 1e-12)


def test_scans():
    z = sample((4, 9), np.complex128, 19, scale=0.9)
    close(harp.tensor(z).cumsum(1).numpy(), np.cumsum(z, 1), 1e-12)
    close(harp.tensor(z).cumprod(0).numpy(), np.cumprod(z, 0), 1e-12)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (17, 9, 16), (33, 31, 2)])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_matmul(m, k, n, dt):
    np_dtype, _, tol = DTYPES[dt]
    a, b = sample((m, k), np_dtype, 8), sample((k, n), np_dtype, 9)
    close((harp.tensor(a) @ harp.tensor(b)).numpy(),
          a.astype(np.complex128) @ b.astype(np.complex128), tol * 10)


def test_batched_matmul_and_transposed_operand():
    a, b = sample((4, 3, 6), np.complex64, 10), sample((4, 5, 6), np.complex64, 11)
    out = harp.tensor(a) @ harp.tensor(b).permute(0, 2, 1)
    close(out.numpy(), a @ b.transpose(0, 2, 1), 1e-5)


def test_conv2d_against_torch():
    x, w = sample((2, 3, 9, 7), np.complex128, 12), sample((4, 3, 3, 2), np.complex128, 13)
    out = harp.conv(harp.tensor(x), harp.tensor(w), stride=(2, 1), padding=1)
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w),
                                          stride=(2, 1), padding=1)
    close(out.numpy(), expected.numpy(), 1e-12)


def test_views_and_data_movement():
    z = sample((4, 6), np.complex64, 14)
    h = harp.tensor(z)
    close(h.permute(1, 0)[1:5:2].numpy(), z.T[1:5:2], 0)
    close(h.reshape(3, 8).flip(1).numpy(), z.reshape(3, 8)[:, ::-1], 0)
    close(h.pad([1, 0], [0, 2], 0.0).numpy(), np.pad(z, ((1, 0), (0, 2))), 0)
    close(harp.concat([h, h * 1j], 0).numpy(), np.concatenate([z, z * 1j]), 1e-6)
    close(harp.stack([h, h.conj()], 1).numpy(), np.stack([z, z.conj()], 1), 0)
    mask = np.abs(z) > 1
    close(harp.where(harp.tensor(mask), h, h.conj()).numpy(),
          np.where(mask, z, z.conj()), 0)
    index = np.array([[2, 0, 3, 3, 1, 0]] * 4)
    close(harp.gather(h, 0, harp.tensor(index)).numpy(),
          np.take_along_axis(z, index, 0), 0)


def test_item_and_tolist():
    z = harp.tensor(np.array([1 + 1j], np.complex64))
    assert (z * z).item() == 2j
    assert (z * z).tolist() == [2j]


# --- Gradients -------------------------------------------------------------------

# Real losses of complex inputs, written once for harp and torch.
LOSSES = {
    "abs": lambda z: z.abs().sum(),
    "mul_conj": lambda z: (z * z.conj()).real.sum(),
    "div": lambda z: (z / (z * z + 2)).imag.sum(),
    "exp": lambda z: z.exp().real.sum(),
    "log": lambda z: z.log().imag.sum(),
    "sqrt": lambda z: z.sqrt().abs().sum(),
    "sin_cos": lambda z: (z.sin() * z.cos()).real.sum(),
    "tanh": lambda z: z.tanh().real.sum(),
    "tan": lambda z: z.tan().abs().sum(),
    "rsqrt": lambda z: z.rsqrt().imag.sum(),
    "sigmoid": lambda z: z.sigmoid().real.sum(),
    "pow_real": lambda z: (z ** 3).real.sum(),
    "pow_complex": lambda z: (z ** (z * 0.5)).imag.sum(),
    "angle": lambda z: z.angle().sum(),
    "recip_square": lambda z: (z.reciprocal() if hasattr(z, "reciprocal") else z.recip()).square().real.sum(),
    "mean": lambda z: z.mean().abs(),
    "sum_prod": lambda z: (z.sum(0) * z.prod(0)).abs().sum(),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_gradients_match_torch(name):
    z = sample((3, 5), np.complex128, 15)
    loss = LOSSES[name]
    h = harp.tensor(z, requires_grad=True)
    loss(h).backward()
    t = torch.tensor(z, requires_grad=True)
    loss(t).backward()
    close(h.grad.numpy(), t.grad.numpy(), 1e-10)


def finite_difference(f, z, h=1e-6):
    """dL/dre + i dL/dim of the real function f, by central differences."""
    grad = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for step in (h, 1j * h):
            up, down = z.copy(), z.copy()
            up[i] += step
            down[i] -= step
            slope = (f(up) - f(down)) / (2 * h)
            grad[i] += slope if step == h else 1j * slope
    return grad


@pytest.mark.parametrize("name, hfn", [
    ("expm1", lambda z: z.expm1().real.sum()),
    ("log1p", lambda z: z.log1p().imag.sum()),
    ("log2_exp2", lambda z: (z.log2() + z.exp2()).abs().sum()),
    ("matmul", lambda z: (z @ z.conj().permute(1, 0)).real.sum()),
])
def test_gradients_by_finite_differences(name, hfn):
    z = sample((2, 3), np.complex128, 16, scale=0.8)
    h = harp.tensor(z, requires_grad=True)
    hfn(h).backward()
    numeric = finite_difference(lambda v: hfn(harp.tensor(v)).item(), z)
    close(h.grad.numpy(), numeric, 1e-6)


def test_gradients_through_parts_and_accumulation():
    re, im = np.random.default_rng(17).standard_normal((2, 4))
    hr, hi = harp.tensor(re, requires_grad=True), harp.tensor(im, requires_grad=True)
    tr, ti = torch.tensor(re, requires_grad=True), torch.tensor(im, requires_grad=True)
    for lib, r, i in ((harp, hr, hi), (torch, tr, ti)):
        w = lib.complex(r, i)
        ((w * w).abs().sum() + (w.exp() * 1j).real.sum()).backward()
    close(hr.grad.numpy(), tr.grad.numpy(), 1e-12)
    close(hi.grad.numpy(), ti.grad.numpy(), 1e-12)
    # A complex64 leaf accumulates over two backward passes, part by part.
    z = sample((5,), np.complex64, 18)
    h = harp.tensor(z, requires_grad=True)
    t = torch.tensor(z, requires_grad=True)
    for _ in range(2):
        (h * h).abs().sum().backward()
        (t * t).abs().sum().backward()
    assert h.grad.dtype == harp.complex64
    close(h.grad.numpy(), t.grad.numpy(), 1e-5)
