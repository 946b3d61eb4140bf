#!/usr/bin/python3
"""Fits harp's rational tanh (lib/Codegen/CPU/MathApproximations.cpp):
tanh(x) = x P(x^2) / Q(x^2) on [0, BOUND], P and Q of degree 4 with
P(0) = Q(0) = 1, by iteratively reweighted least squares on the relative
error (each round weights the points by their error, which drives the fit
towards equal ripples). Prints the f32 coefficients; with --check, also
evaluates them in f32 (Horner's rule, with and without FMA, as the
generated code does) over every f32 in [0, BOUND] against float64's tanh
and prints the largest error in ulps and the largest |tanh| (about two
minutes).

    /usr/bin/python3 scripts/fit-tanh.py [--check]
"""

import sys

import numpy as np

BOUND = 8.0
DEGREES = (4, 4)


def fit(p_degree, q_degree, bound, points=200_001, rounds=60):
    x = np.linspace(1e-4, bound, points)
    scale = bound * bound
    t = x * x / scale                  # y = x^2, scaled into [0, 1]
    g = np.tanh(x) / x                 # the function P / Q approximates
    # P(t) - g Q(t) = 0 with P(0) = Q(0) = 1, as a linear system in the
    # other coefficients, relative to g.
    powers_p = np.vander(t, p_degree + 1, increasing=True)[:, 1:]
    powers_q = np.vander(t, q_degree + 1, increasing=True)[:, 1:]
    system = np.hstack([powers_p, -g[:, None] * powers_q]) / g[:, None]
    rhs = (g - 1) / g
    weight = np.ones_like(t)
    best = None
    for _ in range(rounds):
        v, *_ = np.linalg.lstsq(system * weight[:, None], rhs * weight, rcond=None)
        p = np.concatenate([[1.0], v[:p_degree]])
        q = np.concatenate([[1.0], v[p_degree:]])
        ratio = np.polyval(p[::-1], t) / np.polyval(q[::-1], t)
        error = np.abs(ratio / g - 1)
        if best is None or error.max() < best[2]:
            best = (p / scale ** np.arange(p_degree + 1),
                    q / scale ** np.arange(q_degree + 1), error.max())
        weight *= np.sqrt(error / error.max() + 1e-3)
        weight /= weight.max()
    return best


def evaluate(x, p, q, fma):
    """harp's code in f32: clamp, y = x * x, Horner's rule, x * P / Q."""
    x = np.minimum(np.maximum(x, np.float32(-BOUND)), np.float32(BOUND))
    y = (x * x).astype(np.float32)

    def horner(coefficients):
        total = np.full_like(y, coefficients[-1])
        for c in coefficients[-2::-1]:
            if fma:
                total = (total.astype(np.float64) * y + np.float64(c)).astype(np.float32)
            else:
                total = ((total * y).astype(np.float32) + c).astype(np.float32)
        return total

    return ((x * horner(p)).astype(np.float32) / horner(q)).astype(np.float32)


def check(p, q):
    top = int(np.float32(BOUND).view(np.uint32))
    for fma in (True, False):
        worst, at, largest = 0.0, 0.0, 0.0
        for start in range(0, top + 1, 1 << 24):
            x = np.arange(start, min(start + (1 << 24), top + 1),
                          dtype=np.uint32).view(np.float32)
            got = evaluate(x, p, q, fma)
            ref = np.tanh(x.astype(np.float64))
            spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
            ulps = np.abs(got - ref) / spacing
            if ulps.max() > worst:
                worst, at = float(ulps.max()), float(x[np.argmax(ulps)])
            largest = max(largest, float(np.abs(got).max()))
        print("%s: at most %.2f ulps (at %.7g), largest |tanh| %r"
              % ("with FMA" if fma else "without FMA", worst, at, largest))


def main():
    p, q, error = fit(*DEGREES, BOUND)
    p32, q32 = p.astype(np.float32), q.astype(np.float32)
    print("relative error in exact arithmetic: %.3g" % error)
    print("p = {%s}" % ", ".join("%.9gf" % c for c in p32))
    print("q = {%s}" % ", ".join("%.9gf" % c for c in q32))
    if "--check" in sys.argv[1:]:
        check(p32, q32)


if __name__ == "__main__":
    main()
