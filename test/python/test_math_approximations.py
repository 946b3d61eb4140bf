"""The vectorized math approximations (lib/Codegen/CPU/MathApproximations.cpp)
in ulps against float64 without FMA (x86-64-v2), where their multiply-adds
are split."""

import numpy as np
import pytest
from scipy import special

import harp


def ulps(got, ref):
    """|got - ref| in units of the f32 spacing at ref."""
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / spacing


@pytest.mark.parametrize("name, harp_fn, reference, low, high", [
    ("exp", lambda t: t.exp(), np.exp, -80.0, 80.0),
    ("expm1", lambda t: t.expm1(), np.expm1, -5.0, 5.0),
    ("log1p", lambda t: t.log1p(), np.log1p, -0.9, 10.0),
    ("erf", lambda t: t.erf(), special.erf, -4.0, 4.0),
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
