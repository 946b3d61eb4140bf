"""harp's vectorized tanh (a rational approximation, lib/Codegen/CPU/
MathApproximations.cpp) in ulps against float64, for each CPU profile this
machine runs (x86-64-v2 has no FMA: its multiply-adds are split), with the
special values; and MLIR's approximations without FMA against float64."""

import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

import harp

erf = np.vectorize(math.erf, otypes=[np.float64])


ROOT = pathlib.Path(__file__).resolve().parents[2]
HARP_RUN = os.environ.get("HARP_RUN", str(ROOT / "build" / "bin" / "harp-run"))


def _runs_here(cpu):
    """Whether this machine executes `cpu`'s code (harp's own target model,
    as scripts/run-tests.sh asks it)."""
    out = subprocess.run([HARP_RUN, "--print-cpu", "--cpu", cpu], capture_output=True,
                         text=True, check=True).stdout
    return "runs here: yes" in out.splitlines()


RUNNABLE = [cpu for cpu in ("x86-64-v2", "x86-64-v3", "x86-64-v4") if _runs_here(cpu)]


def ulps(got, ref):
    """|got - ref| in units of the f32 spacing at ref."""
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / spacing


def sweep():
    dense = np.linspace(-12, 12, 2_000_001, dtype=np.float32)
    tiny = np.float32(2.0) ** -np.arange(1, 150, 0.25, dtype=np.float32)
    return np.concatenate([dense, tiny, -tiny])


def tanh_on(x, cpu):
    return harp.tensor(x).tanh().numpy(cpu=cpu)


@pytest.mark.parametrize("cpu", RUNNABLE)
def test_tanh_error_in_ulps(cpu):
    # Measured (AMD EPYC Zen 4): 5.12 ulps at most, 1.02 on average with
    # FMA; 5.91 and 1.08 without (x86-64-v2).
    x = sweep()
    y = tanh_on(x, cpu)
    error = ulps(y, np.tanh(x.astype(np.float64)))
    assert error.max() <= 6.0, (cpu, float(x[np.argmax(error)]), error.max())
    assert error.mean() <= 1.2, (cpu, error.mean())
    # Never beyond 1 in magnitude, odd, and the sign of x (also for -0).
    assert np.abs(y).max() <= 1.0
    np.testing.assert_array_equal(tanh_on(-x, cpu), -y)
    assert np.array_equal(np.signbit(y), np.signbit(x))


@pytest.mark.parametrize("cpu", RUNNABLE)
def test_tanh_special_values(cpu):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 8.0, -8.0, 9.0, 1e30,
                  -3.4e38], dtype=np.float32)
    y = tanh_on(x, cpu)
    assert y[0] == 0 and not np.signbit(y[0])
    assert y[1] == 0 and np.signbit(y[1])
    assert np.isnan(y[4])
    # Beyond the clamp at 8: tanh(8) rounded, within 3 ulps of 1.
    for i in (2, 5, 7, 8):
        assert 1 - 3 * 2.0**-24 <= y[i] <= 1.0, (x[i], y[i])
    for i in (3, 6, 9):
        assert -1.0 <= y[i] <= -(1 - 3 * 2.0**-24), (x[i], y[i])


@pytest.mark.parametrize("cpu", RUNNABLE)
def test_tanh_of_tiny_and_subnormal_values_is_exact(cpu):
    # P(0) = Q(0) = 1: no branch for small |x|, and no product that
    # underflows (x * 0.0049 would lose a subnormal's bits).
    x = np.concatenate([np.float32(2.0) ** -np.arange(13, 150, dtype=np.float32),
                        np.array([1e-45, 3e-39, 1.17549435e-38], dtype=np.float32)])
    x = np.concatenate([x, -x])
    np.testing.assert_array_equal(tanh_on(x, cpu), x)


@pytest.mark.parametrize("cpu", RUNNABLE)
@pytest.mark.parametrize("n", [1, 3, 7, 17, 1021])
def test_tanh_remainder_rounds_as_the_vector_lanes(cpu, n):
    # The last n % width elements run in a scalar (or narrower) remainder:
    # the same values in the vector lanes of a longer array come out the
    # same to the bit.
    values = np.random.default_rng(n).uniform(-9, 9, n).astype(np.float32)
    alone = tanh_on(values, cpu)
    padded = np.concatenate([values, np.zeros(64 - n % 64, np.float32)])
    np.testing.assert_array_equal(tanh_on(padded, cpu)[:n], alone)


@pytest.mark.parametrize("name, harp_fn, reference, low, high", [
    ("exp", lambda t: t.exp(), np.exp, -80.0, 80.0),
    ("expm1", lambda t: t.expm1(), np.expm1, -5.0, 5.0),
    ("log1p", lambda t: t.log1p(), np.log1p, -0.9, 10.0),
    ("erf", lambda t: t.erf(), erf, -4.0, 4.0),
])
def test_approximations_without_fma(name, harp_fn, reference, low, high):
    # x86-64-v2 has no FMA: the approximations' multiply-adds are split
    # (not left as llvm.fma, one libm fmaf call per element). Error bounds
    # are those with FMA plus 1 ulp; measured (Zen 4) without FMA: exp 1.0,
    # expm1 2.4, log1p 2.0, erf 4.9 ulps.
    x = np.random.default_rng(1).uniform(low, high, 100_003).astype(np.float32)
    ref = reference(x.astype(np.float64))
    bound = {"exp": 2.0, "expm1": 3.5, "log1p": 3.0, "erf": 6.0}[name]
    error = ulps(harp_fn(harp.tensor(x)).numpy(cpu="x86-64-v2"), ref)
    assert error.max() <= bound, (name, error.max())


def test_tanh_coefficients_are_the_fit():
    # scripts/fit-tanh.py refits harp's tanh; the coefficients in
    # MathApproximations.cpp must be what it prints.
    import importlib.util
    import re

    spec = importlib.util.spec_from_file_location("fit_tanh", ROOT / "scripts" / "fit-tanh.py")
    fit_tanh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit_tanh)
    p, q, error = fit_tanh.fit(*fit_tanh.DEGREES, fit_tanh.BOUND)
    assert error < 1e-8
    source = (ROOT / "lib" / "Codegen" / "CPU" / "MathApproximations.cpp").read_text()

    def coefficients(name):
        body = re.search(r"float %s\[\] = \{([^}]*)\}" % name, source).group(1)
        return np.array([float(c.strip().rstrip("f")) for c in body.split(",")],
                        dtype=np.float32)

    # Within a few f32 ulps: the least-squares solver's last bits depend on
    # the BLAS kernels this machine gets.
    np.testing.assert_allclose(coefficients("p"), p, rtol=5e-7)
    np.testing.assert_allclose(coefficients("q"), q, rtol=5e-7)
    assert float(re.search(r"bound = ([0-9.]+)f;", source).group(1)) == fit_tanh.BOUND


# harp's sin, cos and tan on f32: x - k pi/2 reduced exactly up to 2^17
# with FMA and 4096 without (x86-64-v2), polynomials of degree 7 and 8,
# libm for the lanes beyond (docs/Lowering.md, "Math functions").
SIN_COS = {"sin": (lambda t: t.sin(), np.sin), "cos": (lambda t: t.cos(), np.cos)}


def bound_of(cpu):
    return 4096.0 if cpu == "x86-64-v2" else 131072.0


def near_multiples_of_half_pi(bound):
    """The f32 nearest each multiple of pi/2 up to `bound` (and up to 4000
    of them), and the four on either side: where the reduction cancels."""
    k = np.unique(np.linspace(1, bound / (np.pi / 2), 4000).astype(np.int64))
    nearest = (k * (np.pi / 2)).astype(np.float32)
    near = (nearest.view(np.int32)[:, None] + np.arange(-4, 5, dtype=np.int32)).ravel()
    near = near.view(np.float32)
    return near[near <= bound]


@pytest.mark.parametrize("cpu", RUNNABLE)
@pytest.mark.parametrize("name", sorted(SIN_COS))
def test_sin_cos_error_in_ulps(cpu, name):
    # Measured (AMD EPYC Zen 4) on these points: at most 1.53 (sin) and
    # 1.57 (cos) ulps with FMA, 1.91 and 1.96 without; 0.33-0.35 on average.
    fn, reference = SIN_COS[name]
    bound = bound_of(cpu)
    rng = np.random.default_rng(7)
    x = np.concatenate([np.linspace(-7, 7, 400_001, dtype=np.float32),
                        rng.uniform(-bound, bound, 400_000).astype(np.float32),
                        near_multiples_of_half_pi(bound)])
    y = fn(harp.tensor(x)).numpy(cpu=cpu)
    error = ulps(y, reference(x.astype(np.float64)))
    limit = 2.0 if cpu != "x86-64-v2" else 3.0
    assert error.max() <= limit, (cpu, name, float(x[np.argmax(error)]), error.max())
    assert error.mean() <= 0.4, (cpu, name, error.mean())
    assert np.abs(y).max() <= 1.0
    # Odd and even by construction of the reduction (roundeven is odd).
    other = fn(harp.tensor(-x)).numpy(cpu=cpu)
    np.testing.assert_array_equal(other, -y if name == "sin" else y)


@pytest.mark.parametrize("cpu", RUNNABLE)
def test_sin_cos_special_and_out_of_bound_values(cpu):
    # Lanes beyond the bound, inf and NaN come from libm, in the same
    # vectors as lanes the polynomials compute; -0 keeps its sign.
    bound = bound_of(cpu)
    special = [0.0, -0.0, 1e-45, -3e-39, 1e-20, np.inf, -np.inf, np.nan,
               bound, np.nextafter(np.float32(bound), np.float32(np.inf)), -2 * bound,
               1e6, -3.4e38, 123456.789, 0.5]
    x = np.tile(np.array(special, dtype=np.float32), 5)
    for name, (fn, reference) in SIN_COS.items():
        y = fn(harp.tensor(x)).numpy(cpu=cpu)
        with np.errstate(invalid="ignore"):
            want = reference(x.astype(np.float64))
        finite = np.isfinite(x)
        assert np.all(np.isnan(y[~finite])), (name, y[~finite])
        assert ulps(y[finite], want[finite]).max() <= 3.0, (name, cpu)
        if name == "sin":
            zeros = x == 0
            assert np.array_equal(np.signbit(y[zeros]), np.signbit(x[zeros]))
            tiny = (x != 0) & (np.abs(x) < 1e-10)
            np.testing.assert_array_equal(y[tiny], x[tiny])
        else:
            assert np.all(y[x == 0] == 1.0)


@pytest.mark.parametrize("cpu", RUNNABLE)
def test_tan_error_in_ulps(cpu):
    # tan is sin(r) / cos(r) or -cos(r) / sin(r) on the same reduction.
    # Measured (AMD EPYC Zen 4) on these points: at most 3.24 ulps with FMA
    # and 3.47 without; 0.52-0.53 on average.
    bound = bound_of(cpu)
    rng = np.random.default_rng(7)
    x = np.concatenate([np.linspace(-7, 7, 400_001, dtype=np.float32),
                        rng.uniform(-bound, bound, 400_000).astype(np.float32),
                        near_multiples_of_half_pi(bound)])
    y = harp.tensor(x).tan().numpy(cpu=cpu)
    error = ulps(y, np.tan(x.astype(np.float64)))
    assert error.max() <= 4.0, (cpu, float(x[np.argmax(error)]), error.max())
    assert error.mean() <= 0.6, (cpu, error.mean())
    np.testing.assert_array_equal(harp.tensor(-x).tan().numpy(cpu=cpu), -y)


@pytest.mark.parametrize("cpu", RUNNABLE)
def test_tan_special_and_out_of_bound_values(cpu):
    bound = bound_of(cpu)
    special = [0.0, -0.0, 1e-45, -3e-39, 1e-20, np.inf, -np.inf, np.nan,
               bound, np.nextafter(np.float32(bound), np.float32(np.inf)), -2 * bound,
               1e6, -3.4e38, 123456.789, 0.5, np.float32(np.pi / 2), -np.float32(np.pi / 2)]
    x = np.tile(np.array(special, dtype=np.float32), 5)
    y = harp.tensor(x).tan().numpy(cpu=cpu)
    with np.errstate(invalid="ignore"):
        want = np.tan(x.astype(np.float64))
    finite = np.isfinite(x)
    assert np.all(np.isnan(y[~finite])), y[~finite]
    assert ulps(y[finite], want[finite]).max() <= 4.0, cpu
    zeros = x == 0
    assert np.array_equal(np.signbit(y[zeros]), np.signbit(x[zeros]))
    tiny = (x != 0) & (np.abs(x) < 1e-10)
    np.testing.assert_array_equal(y[tiny], x[tiny])


@pytest.mark.parametrize("cpu", RUNNABLE)
@pytest.mark.parametrize("n", [1, 3, 7, 17, 1021])
def test_sin_cos_remainder_rounds_as_the_vector_lanes(cpu, n):
    values = np.random.default_rng(n).uniform(-30, 30, n).astype(np.float32)
    values[0] = 2e6  # a libm lane, in a remainder too
    padded = np.concatenate([values, np.zeros(64 - n % 64, np.float32)])
    for fn in [fn for fn, _ in SIN_COS.values()] + [lambda t: t.tan()]:
        np.testing.assert_array_equal(fn(harp.tensor(padded)).numpy(cpu=cpu)[:n],
                                      fn(harp.tensor(values)).numpy(cpu=cpu))


def test_sin_cos_constants_are_the_fit():
    # scripts/fit-sincos.py fits the polynomials and splits pi/2; the
    # constants in MathApproximations.cpp must be what it prints.
    import importlib.util
    import re

    spec = importlib.util.spec_from_file_location("fit_sincos",
                                                  ROOT / "scripts" / "fit-sincos.py")
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    source = (ROOT / "lib" / "Codegen" / "CPU" / "MathApproximations.cpp").read_text()

    def constants(name):
        body = re.search(r"float %s\[\] = \{([^}]*)\}" % name, source).group(1)
        return np.array([float(c.strip().rstrip("f")) for c in body.split(",")],
                        dtype=np.float32)

    sin_fit, sin_error = fit.fit(lambda r, s: (np.sin(r) / r - 1) / s,
                                 lambda r, s: s * r / np.sin(r))
    cos_fit, cos_error = fit.fit(lambda r, s: (np.cos(r) - 1 + s / 2) / (s * s),
                                 lambda r, s: s * s / np.cos(r))
    assert sin_error < 1e-8 and cos_error < 1e-9
    np.testing.assert_allclose(constants("sinCoefficients"), sin_fit, rtol=5e-7)
    np.testing.assert_allclose(constants("cosCoefficients"), cos_fit, rtol=5e-7)
    with_fma, without_fma = fit.reduction_constants()
    np.testing.assert_array_equal(constants("halfPiFma"), np.array(with_fma, np.float32))
    np.testing.assert_array_equal(constants("halfPiPieces"),
                                  np.array(without_fma, np.float32))
    assert float(re.search(r"fma \? ([0-9.]+)f : ([0-9.]+)f", source).group(1)) == fit.BOUND_FMA
    assert float(re.search(r"fma \? ([0-9.]+)f : ([0-9.]+)f", source).group(2)) == fit.BOUND_NO_FMA
