"""Property-based differential testing against PyTorch: random programs
(DAGs of element-wise, broadcast, reduction, matmul, view, softmax and
data-movement ops on random shapes and dtypes) built with harp's Python API
and the same program in torch, compared forward and backward.

CI runs a fixed batch (derandomized: the same programs every run,
HARP_FUZZ_EXAMPLES of them, 300 by default). The exploratory mode draws new
programs each run:

    HARP_FUZZ_EXAMPLES=5000 HARP_FUZZ_RANDOM=1 /usr/bin/python3 -m pytest \\
        test/python/test_differential.py

A failure prints the program (the op list) that Hypothesis shrank it to;
each one found becomes a regression test in test_regressions.py.
"""

import os

import numpy as np
import pytest
import torch

import harp

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

EXAMPLES = int(os.environ.get("HARP_FUZZ_EXAMPLES", "300"))
RANDOM = os.environ.get("HARP_FUZZ_RANDOM", "") not in ("", "0")

# Sizes that expose remainders at every vector width: 1, primes, and one
# below and above the f32/f64 lane counts of 128-, 256- and 512-bit vectors.
SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 33]
DTYPES = {"f32": (np.float32, torch.float32, harp.float32, 2e-4),
          "f64": (np.float64, torch.float64, harp.float64, 1e-9)}


class Value:
    """The same tensor in harp and in torch."""

    def __init__(self, h, t):
        self.h, self.t = h, t

    @property
    def shape(self):
        return tuple(self.t.shape)


def _leaf(draw, shape, dtype, leaves):
    np_dtype, t_dtype, h_dtype, _ = DTYPES[dtype]
    seed = draw(st.integers(0, 2**31 - 1))
    data = np.random.default_rng(seed).uniform(-2, 2, size=shape).astype(np_dtype)
    h = harp.tensor(data, h_dtype)
    h.requires_grad = True
    t = torch.tensor(data, requires_grad=True)
    leaves.append((h, t))
    return Value(h, t)


def _shape(draw, rank):
    return tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))


def _broadcast_partner(draw, shape):
    """A shape that broadcasts against `shape`: a suffix with some dims 1."""
    keep = draw(st.integers(0, len(shape)))
    suffix = shape[len(shape) - keep:]
    return tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n for n in suffix)


def _safe(v):
    """x*x + 1: positive, for sqrt, log and division."""
    return Value(v.h * v.h + 1.0, v.t * v.t + 1.0)


UNARY = {
    "neg": (lambda h: -h, lambda t: -t),
    "exp": (lambda h: (h * 0.25).exp(), lambda t: (t * 0.25).exp()),
    "sin": (lambda h: h.sin(), torch.sin),
    "cos": (lambda h: h.cos(), torch.cos),
    "tanh": (lambda h: h.tanh(), torch.tanh),
    "sigmoid": (lambda h: h.sigmoid(), torch.sigmoid),
    "relu": (lambda h: h.relu(), torch.relu),
    "abs": (lambda h: h.abs(), torch.abs),
    "sqrt": (lambda h: (h * h + 1.0).sqrt(), lambda t: (t * t + 1.0).sqrt()),
    "log": (lambda h: (h * h + 1.0).log(), lambda t: (t * t + 1.0).log()),
}
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / (b * b + 1.0), lambda a, b: a / (b * b + 1.0)),
    "maximum": (lambda a, b: a.maximum(b), torch.maximum),
    "minimum": (lambda a, b: a.minimum(b), torch.minimum),
}
REDUCE = {
    "sum": (lambda h, d, k: h.sum(d, k), lambda t, d, k: t.sum(d, keepdim=k)),
    "mean": (lambda h, d, k: h.mean(d, k), lambda t, d, k: t.mean(d, keepdim=k)),
    "max": (lambda h, d, k: h.max(axis=d, keepdim=k), lambda t, d, k: t.amax(d, keepdim=k)),
    "min": (lambda h, d, k: h.min(axis=d, keepdim=k), lambda t, d, k: t.amin(d, keepdim=k)),
}
OPS = ["unary", "binary", "reduce", "matmul", "transpose", "flip", "slice",
       "reshape", "softmax", "concat", "unsqueeze"]


@st.composite
def programs(draw):
    """Builds a random program on both sides; returns (result, leaves, ops)."""
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    leaves, ops = [], []
    pool = [_leaf(draw, _shape(draw, draw(st.integers(0, 3))), dtype, leaves)]
    for _ in range(draw(st.integers(1, 6))):
        v = draw(st.sampled_from(pool))
        op = draw(st.sampled_from(OPS))
        rank = len(v.shape)
        if op == "unary":
            name = draw(st.sampled_from(sorted(UNARY)))
            fh, ft = UNARY[name]
            out = Value(fh(v.h), ft(v.t))
        elif op == "binary":
            name = draw(st.sampled_from(sorted(BINARY)))
            if draw(st.booleans()) and len(pool) > 1:
                w = draw(st.sampled_from(pool))
            else:
                w = _leaf(draw, _broadcast_partner(draw, v.shape), dtype, leaves)
            try:
                np.broadcast_shapes(v.shape, w.shape)
            except ValueError:
                continue
            if draw(st.booleans()):
                v, w = w, v
            fh, ft = BINARY[name]
            out = Value(fh(v.h, w.h), ft(v.t, w.t))
        elif op == "reduce" and rank > 0:
            name = draw(st.sampled_from(sorted(REDUCE)))
            dim = draw(st.integers(0, rank - 1))
            keep = draw(st.booleans())
            fh, ft = REDUCE[name]
            out = Value(fh(v.h, [dim], keep), ft(v.t, dim, keep))
        elif op == "matmul" and rank >= 2:
            n = draw(st.sampled_from(SIZES))
            w = _leaf(draw, v.shape[:-2] + (v.shape[-1], n), dtype, leaves)
            out = Value(v.h @ w.h, v.t @ w.t)
        elif op == "transpose" and rank >= 2:
            a, b = draw(st.integers(0, rank - 1)), draw(st.integers(0, rank - 1))
            out = Value(v.h.transpose(a, b), v.t.transpose(a, b))
        elif op == "flip" and rank > 0:
            dim = draw(st.integers(0, rank - 1))
            out = Value(v.h.flip([dim]), v.t.flip([dim]))
        elif op == "slice" and rank > 0:
            dim = draw(st.integers(0, rank - 1))
            size = v.shape[dim]
            start = draw(st.integers(0, size - 1))
            stop = draw(st.integers(start + 1, size))
            step = draw(st.integers(1, 3))
            index = [slice(None)] * dim + [slice(start, stop, step)]
            out = Value(v.h[tuple(index)], v.t[tuple(index)])
        elif op == "reshape":
            out = Value(v.h.reshape([-1]), v.t.reshape(-1))
        elif op == "unsqueeze":
            dim = draw(st.integers(0, rank))
            out = Value(v.h.unsqueeze(dim), v.t.unsqueeze(dim))
        elif op == "softmax" and rank > 0:
            dim = draw(st.integers(0, rank - 1))
            out = Value(v.h.softmax(dim), torch.softmax(v.t, dim))
        elif op == "concat" and rank > 0:
            dim = draw(st.integers(0, rank - 1))
            shape = list(v.shape)
            shape[dim] = draw(st.sampled_from(SIZES[:6]))
            w = _leaf(draw, tuple(shape), dtype, leaves)
            out = Value(harp.concat([v.h, w.h], dim), torch.cat([v.t, w.t], dim))
        else:
            continue
        ops.append(op if op not in ("unary", "binary", "reduce") else name)
        pool.append(out)
    return pool[-1], leaves, ops, dtype


_SETTINGS = settings(max_examples=EXAMPLES, derandomize=not RANDOM, deadline=None,
                     database=None, print_blob=True,
                     suppress_health_check=[HealthCheck.too_slow,
                                            HealthCheck.data_too_large])


@pytest.mark.heavy
@_SETTINGS
@given(programs())
def test_random_programs_match_torch(program):
    result, leaves, ops, dtype = program
    tol = DTYPES[dtype][3]
    what = "%s program %s" % (dtype, " -> ".join(ops) or "leaf")
    np.testing.assert_allclose(result.h.numpy(), result.t.detach().numpy(),
                               rtol=tol, atol=tol, err_msg=what + " forward")
    weight = np.random.default_rng(1).uniform(0.5, 1.5, size=result.shape)
    np_dtype, t_dtype = DTYPES[dtype][:2]
    (result.h * harp.tensor(weight.astype(np_dtype))).sum().backward()
    (result.t * torch.tensor(weight, dtype=t_dtype)).sum().backward()
    for i, (h, t) in enumerate(leaves):
        want = t.grad if t.grad is not None else torch.zeros_like(t)
        got = h.grad.numpy() if h.grad is not None else np.zeros(t.shape)
        # Ties (two leaves drawn from one seed) split as torch splits them:
        # evenly, for maximum/minimum and for max/min reductions.
        np.testing.assert_allclose(got, want.numpy(), rtol=tol * 10, atol=tol * 10,
                                   err_msg="%s gradient of leaf %d" % (what, i))
