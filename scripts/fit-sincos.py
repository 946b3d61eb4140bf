#!/usr/bin/python3
"""Fits harp's sin and cos on f32 (lib/Codegen/CPU/MathApproximations.cpp).

x is reduced to r = x - k pi/2 with k = roundeven(x 2/pi), |r| <= pi/4; then

    sin(r) = r + r s S(s),        s = r^2, S of degree 2,
    cos(r) = 1 - s/2 + s^2 C(s),  C of degree 2,

and the quadrant k mod 4 picks sin(r), cos(r), -sin(r) or -cos(r). S and C
are fitted by iteratively reweighted least squares on the relative error of
sin(r) and cos(r) over [0, pi/4] (each round weights the points by their
error, which drives the fit towards equal ripples). Prints the f32
coefficients and the reduction's constants; with --check, also evaluates
the generated code's arithmetic in f32 (with and without FMA) on every
seventh f32 in [0, 4], on 20 million random points up to the bound the
vector code handles and on the f32 nearest each multiple of pi/2 up to it
(and eight on either side), against float64, and prints the largest errors
in ulps (about a minute and a half).

    /usr/bin/python3 scripts/fit-sincos.py [--check]
"""

import sys
from decimal import Decimal, getcontext

import numpy as np

getcontext().prec = 60
# pi/2 to 50 digits: the pieces of the reduction go 72 bits deep, past
# float64's pi.
HALF_PI = Decimal("3.14159265358979323846264338327950288419716939937510") / 2

QUARTER = np.pi / 4
# Beyond these |x| (and for inf and NaN) the generated code calls libm: the
# reduction below is exact up to them (docs/Lowering.md, "Math functions").
BOUND_FMA = 131072.0
BOUND_NO_FMA = 4096.0


def fit(target, weight_of, points=100_001, rounds=60, degree=3):
    r = np.linspace(1e-3, QUARTER, points)
    s = r * r
    g, w0 = target(r, s), weight_of(r, s)
    powers = np.vander(s, degree, increasing=True)
    weight = np.ones_like(s)
    best = None
    for _ in range(rounds):
        w = w0 * weight
        c, *_ = np.linalg.lstsq(powers * w[:, None], g * w, rcond=None)
        error = np.abs((powers @ c - g) * w0)
        if best is None or error.max() < best[1]:
            best = (c, error.max())
        weight *= np.sqrt(error / error.max() + 1e-3)
        weight /= weight.max()
    return best


def below(value):
    """The largest f32 not above value (a Decimal)."""
    rounded = np.float32(float(value))
    if Decimal(float(rounded)) > value:
        rounded = np.nextafter(rounded, np.float32(0))
    return rounded


def split(value, bits):
    """value in pieces of `bits` significant bits each, each rounded down
    (the last to f32): products of the first pieces with k < 2^(24 - bits)
    are exact, and every piece is positive."""
    pieces = []
    rest = value
    for _ in range(3):
        exponent = int(np.floor(np.log2(float(rest))))
        quantum = Decimal(2) ** (exponent - bits + 1)
        piece = (rest / quantum).to_integral_value(rounding="ROUND_FLOOR") * quantum
        pieces.append(np.float32(float(piece)))
        rest -= piece
    pieces.append(below(rest))
    return pieces


def reduction_constants():
    """pi/2 in three f32 pieces for the reduction with FMA, in four of 12
    bits without; every piece rounded down, so all are positive: x - k P
    with k = +0 then adds -0 to x and keeps its sign (sin(-0) = -0)."""
    p1 = below(HALF_PI)
    p2 = below(HALF_PI - Decimal(float(p1)))
    p3 = below(HALF_PI - Decimal(float(p1)) - Decimal(float(p2)))
    return [p1, p2, p3], split(HALF_PI, 12)


def evaluate(x, s_coefficients, c_coefficients, fma, cosine):
    """harp's code in f32 (x within the bound)."""
    f = np.float32
    L = np.longdouble
    (p1, p2, p3), (c1, c2, c3, c4) = reduction_constants()
    k = np.rint((x * f(2 / np.pi)).astype(f)).astype(f)
    if fma:
        r = (L(x) - L(k) * L(p1)).astype(f)
        r = (L(r) - L(k) * L(p2)).astype(f)
        r = (L(r) - L(k) * L(p3)).astype(f)
    else:
        r = x
        for c in (c1, c2, c3, c4):
            r = (r - (k * c).astype(f)).astype(f)

    def madd(a, b, c):
        if fma:
            return (L(a) * L(b) + L(c)).astype(f)
        return ((a * b).astype(f) + c).astype(f)

    def horner(coefficients, y):
        total = np.full_like(y, f(coefficients[-1]))
        for c in coefficients[-2::-1]:
            total = madd(total, y, f(c))
        return total

    s = (r * r).astype(f)
    sine = madd((r * s).astype(f), horner(s_coefficients, s), r)
    head = madd(s, f(-0.5), f(1))
    cosine_r = madd((s * s).astype(f), horner(c_coefficients, s), head)
    quadrant = k.astype(np.int64) + (1 if cosine else 0)
    value = np.where(quadrant & 1, cosine_r, sine)
    return np.where(quadrant & 2, -value, value).astype(f)


def check(s_coefficients, c_coefficients):
    rng = np.random.default_rng(0)
    for fma in (True, False):
        bound = BOUND_FMA if fma else BOUND_NO_FMA
        top = int(np.float32(4.0).view(np.uint32))
        dense = np.arange(0, top, 7, dtype=np.uint32).view(np.float32)
        wide = rng.uniform(0, bound, 20_000_000).astype(np.float32)
        # The f32 nearest each multiple of pi/2 up to the bound, and the
        # eight on either side: where the reduction cancels most.
        nearest = (np.arange(1, int(bound / (np.pi / 2)) + 1) * (np.pi / 2)).astype(np.float32)
        steps = np.arange(-8, 9, dtype=np.int32)
        near = (nearest.view(np.int32)[:, None] + steps).ravel().view(np.float32)
        near = near[(near > 0) & (near <= bound)]
        for name, cosine, ref in (("sin", False, np.sin), ("cos", True, np.cos)):
            worst, at, total, count = 0.0, 0.0, 0.0, 0
            for x in (dense, wide, near):
                for chunk in np.array_split(x, max(1, len(x) // 4_000_000)):
                    got = evaluate(chunk, s_coefficients, c_coefficients, fma, cosine)
                    want = ref(chunk.astype(np.float64))
                    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
                    ulps = np.abs(got - want) / spacing
                    if ulps.max() > worst:
                        worst, at = float(ulps.max()), float(chunk[np.argmax(ulps)])
                    total += float(ulps.sum())
                    count += len(chunk)
            print("%s %s: at most %.2f ulps (at %.9g), %.3f on average, |x| <= %g"
                  % (name, "with FMA" if fma else "without FMA", worst, at,
                     total / count, bound))


def main():
    s_fit, s_error = fit(lambda r, s: (np.sin(r) / r - 1) / s,
                         lambda r, s: s * r / np.sin(r))
    c_fit, c_error = fit(lambda r, s: (np.cos(r) - 1 + s / 2) / (s * s),
                         lambda r, s: s * s / np.cos(r))
    s32, c32 = s_fit.astype(np.float32), c_fit.astype(np.float32)
    print("relative error in exact arithmetic: sin %.3g, cos %.3g" % (s_error, c_error))
    print("sin = {%s}" % ", ".join("%.9gf" % c for c in s32))
    print("cos = {%s}" % ", ".join("%.9gf" % c for c in c32))
    fma_constants, split_constants = reduction_constants()
    print("pi/2 with FMA = {%s}" % ", ".join("%.9gf" % c for c in fma_constants))
    print("pi/2 without FMA = {%s}" % ", ".join("%.9gf" % c for c in split_constants))
    if "--check" in sys.argv[1:]:
        check(s32, c32)


if __name__ == "__main__":
    main()
