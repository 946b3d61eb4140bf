"""harp.map_reduce executed on the CPU: element-wise ops, casts, harp.index,
every reduction kind over every subset of dims, matmul, convolution and
softmax written as map_reduce, compared with NumPy."""

import itertools
import math
import os
import sys
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harptest as h  # noqa: E402

SHAPE = (3, 4)


def unary_module(shape, in_dtype, out_dtype, body):
    """A function mapping one tensor element-wise with `body` (which reads %x
    and defines %r)."""
    return """
func.func @main(%%arg: %(tin)s) -> %(tout)s {
  %%0 = harp.map_reduce ins(%%arg : %(tin)s) {
  ^bb0(%%x: %(ein)s):
    %(body)s
    harp.yield %%r : %(eout)s
  } : %(tout)s
  return %%0 : %(tout)s
}
""" % dict(tin=h.tensor(shape, in_dtype), tout=h.tensor(shape, out_dtype),
           ein=h.elt(in_dtype), eout=h.elt(out_dtype), body=body)


def binary_module(shape, dtype, out_dtype, body):
    return """
func.func @main(%%a: %(t)s, %%b: %(t)s) -> %(tout)s {
  %%0 = harp.map_reduce ins(%%a, %%b : %(t)s, %(t)s) {
  ^bb0(%%x: %(e)s, %%y: %(e)s):
    %(body)s
    harp.yield %%r : %(eout)s
  } : %(tout)s
  return %%0 : %(tout)s
}
""" % dict(t=h.tensor(shape, dtype), tout=h.tensor(shape, out_dtype),
           e=h.elt(dtype), eout=h.elt(out_dtype), body=body)


#===------------------------------------------------------------------------===#
# Element-wise
#===------------------------------------------------------------------------===#

ARITH = {
    # dtype kind -> (add, sub, mul) ops
    "float": ("arith.addf", "arith.subf", "arith.mulf"),
    "int": ("arith.addi", "arith.subi", "arith.muli"),
    "complex": ("complex.add", "complex.sub", "complex.mul"),
}


def kind_of(dtype):
    if h.is_complex(dtype):
        return "complex"
    if h.is_float(dtype):
        return "float"
    return "int"


@pytest.mark.parametrize("dtype", h.DTYPES)
@pytest.mark.parametrize("which", [0, 1, 2])
def test_binary_arith(dtype, which):
    rng = np.random.default_rng(10 + which)
    a, b = h.random(SHAPE, dtype, rng), h.random(SHAPE, dtype, rng)
    if h.is_bool(dtype):
        # i1 arithmetic wraps: add and sub are xor, mul is and.
        op = ARITH["int"][which]
        expected = [a ^ b, a ^ b, a & b][which]
    else:
        op = ARITH[kind_of(dtype)][which]
        expected = [a + b, a - b, a * b][which]
    body = "%%r = %s %%x, %%y : %s" % (op, h.elt(dtype))
    (out,) = h.run(binary_module(SHAPE, dtype, dtype, body), a, b)
    h.assert_close(out, expected.astype(dtype))


FLOAT_UNARY = [
    ("math.exp", np.exp, (-3, 3)),
    ("math.exp2", np.exp2, (-3, 3)),
    ("math.log", np.log, (0.1, 5)),
    ("math.log2", np.log2, (0.1, 5)),
    ("math.log1p", np.log1p, (-0.5, 5)),
    ("math.expm1", np.expm1, (-2, 2)),
    ("math.sqrt", np.sqrt, (0, 9)),
    ("math.rsqrt", lambda x: 1 / np.sqrt(x), (0.1, 9)),
    ("math.tanh", np.tanh, (-4, 4)),
    ("math.sin", np.sin, (-4, 4)),
    ("math.cos", np.cos, (-4, 4)),
    ("math.tan", np.tan, (-1.2, 1.2)),
    ("math.atan", np.arctan, (-4, 4)),
    ("math.erf", np.vectorize(math.erf), (-3, 3)),
    ("math.erfc", np.vectorize(math.erfc), (-3, 9)),
    ("math.absf", np.abs, (-3, 3)),
    ("math.floor", np.floor, (-3, 3)),
    ("math.ceil", np.ceil, (-3, 3)),
    ("math.round", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), (-3, 3)),
    ("arith.negf", np.negative, (-3, 3)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op,ref,domain", FLOAT_UNARY,
                         ids=[u[0] for u in FLOAT_UNARY])
def test_float_unary(dtype, op, ref, domain):
    rng = np.random.default_rng(1)
    x = rng.uniform(*domain, size=SHAPE).astype(dtype)
    body = "%%r = %s %%x : %s" % (op, h.elt(dtype))
    (out,) = h.run(unary_module(SHAPE, dtype, dtype, body), x)
    h.assert_close(out, ref(x.astype(np.float64)).astype(dtype))


FLOAT_BINARY = [
    ("arith.divf", np.divide),
    ("arith.maximumf", np.maximum),
    ("arith.minimumf", np.minimum),
    ("math.powf", lambda x, y: np.power(np.abs(x), y)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op,ref", FLOAT_BINARY, ids=[b[0] for b in FLOAT_BINARY])
def test_float_binary(dtype, op, ref):
    rng = np.random.default_rng(2)
    a = rng.uniform(0.5, 3, size=SHAPE).astype(dtype)
    b = rng.uniform(-2, 2, size=SHAPE).astype(dtype)
    e = h.elt(dtype)
    if op == "math.powf":
        body = "%%ax = math.absf %%x : %s\n    %%r = math.powf %%ax, %%y : %s" % (e, e)
    else:
        body = "%%r = %s %%x, %%y : %s" % (op, e)
    (out,) = h.run(binary_module(SHAPE, dtype, dtype, body), a, b)
    h.assert_close(out, ref(a, b).astype(dtype))


INT_BINARY = [
    ("arith.divsi", lambda a, b: np.trunc(a / b)),
    ("arith.remsi", np.fmod),
    ("arith.maxsi", np.maximum),
    ("arith.minsi", np.minimum),
    ("arith.andi", np.bitwise_and),
    ("arith.ori", np.bitwise_or),
    ("arith.xori", np.bitwise_xor),
]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op,ref", INT_BINARY, ids=[b[0] for b in INT_BINARY])
def test_int_binary(dtype, op, ref):
    rng = np.random.default_rng(3)
    a = rng.integers(-50, 50, size=SHAPE).astype(dtype)
    b = rng.integers(1, 7, size=SHAPE).astype(dtype) * rng.choice([-1, 1], size=SHAPE).astype(dtype)
    body = "%%r = %s %%x, %%y : %s" % (op, h.elt(dtype))
    (out,) = h.run(binary_module(SHAPE, dtype, dtype, body), a, b)
    h.assert_close(out, ref(a, b).astype(dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_unsigned_ops(dtype):
    rng = np.random.default_rng(4)
    a = rng.integers(-50, 50, size=SHAPE).astype(dtype)
    b = rng.integers(-50, 50, size=SHAPE).astype(dtype)
    udtype = np.uint32 if dtype == np.int32 else np.uint64
    body = "%%r = arith.maxui %%x, %%y : %s" % h.elt(dtype)
    (out,) = h.run(binary_module(SHAPE, dtype, dtype, body), a, b)
    h.assert_close(out, np.maximum(a.view(udtype), b.view(udtype)).view(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_compare_select(dtype):
    rng = np.random.default_rng(5)
    a, b = h.random(SHAPE, dtype, rng), h.random(SHAPE, dtype, rng)
    e = h.elt(dtype)
    cmp = "arith.cmpf olt" if h.is_float(dtype) else "arith.cmpi slt"
    body = "%%c = %s, %%x, %%y : %s\n    %%r = arith.select %%c, %%y, %%x : %s" % (cmp, e, e)
    (out,) = h.run(binary_module(SHAPE, dtype, dtype, body), a, b)
    h.assert_close(out, np.maximum(a, b))
    # The comparison itself, as an i1 result.
    body = "%%r = %s, %%x, %%y : %s" % (cmp, e)
    (out,) = h.run(binary_module(SHAPE, dtype, np.bool_, body), a, b)
    h.assert_close(out, a < b)


CASTS = [
    (np.float32, np.float64, "arith.extf %x : f32 to f64", lambda x: x.astype(np.float64)),
    (np.float64, np.float32, "arith.truncf %x : f64 to f32", lambda x: x.astype(np.float32)),
    (np.int32, np.float32, "arith.sitofp %x : i32 to f32", lambda x: x.astype(np.float32)),
    (np.float32, np.int32, "arith.fptosi %x : f32 to i32", lambda x: np.trunc(x).astype(np.int32)),
    (np.int32, np.int64, "arith.extsi %x : i32 to i64", lambda x: x.astype(np.int64)),
    (np.int64, np.int32, "arith.trunci %x : i64 to i32", lambda x: x.astype(np.int32)),
    (np.bool_, np.int32, "arith.extui %x : i1 to i32", lambda x: x.astype(np.int32)),
    (np.int64, np.float64, "arith.sitofp %x : i64 to f64", lambda x: x.astype(np.float64)),
    (np.float32, np.complex64, "%z = arith.constant 0.0 : f32\n    %r = complex.create %x, %z : complex<f32>",
     lambda x: x.astype(np.complex64)),
    (np.complex64, np.float32, "complex.abs %x : complex<f32>", lambda x: np.abs(x)),
    (np.complex64, np.float32, "complex.re %x : complex<f32>", lambda x: x.real),
]


@pytest.mark.parametrize("src,dst,op,ref", CASTS, ids=[c[2].split()[0] + "-%d" % i for i, c in enumerate(CASTS)])
def test_casts(src, dst, op, ref):
    rng = np.random.default_rng(6)
    x = h.random(SHAPE, src, rng, -100, 100)
    body = op if op.startswith("%") else "%r = " + op
    (out,) = h.run(unary_module(SHAPE, src, dst, body), x)
    h.assert_close(out, ref(x).astype(dst))


def test_index_only():
    module = """
func.func @main() -> tensor<3x5xi64> {
  %0 = harp.map_reduce {
    %i = harp.index 0
    %j = harp.index 1
    %c10 = arith.constant 10 : index
    %t = arith.muli %i, %c10 : index
    %s = arith.addi %t, %j : index
    %v = arith.index_cast %s : index to i64
    harp.yield %v : i64
  } : tensor<3x5xi64>
  return %0 : tensor<3x5xi64>
}
"""
    (out,) = h.run(module)
    i, j = np.indices((3, 5))
    h.assert_close(out, (10 * i + j).astype(np.int64))


def test_index_with_operand():
    # An identity matrix scaled by the operand: index arithmetic in a body.
    module = """
func.func @main(%a: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %0 = harp.map_reduce ins(%a : tensor<4x4xf64>) {
  ^bb0(%x: f64):
    %i = harp.index 0
    %j = harp.index 1
    %eq = arith.cmpi eq, %i, %j : index
    %z = arith.constant 0.0 : f64
    %r = arith.select %eq, %x, %z : f64
    harp.yield %r : f64
  } : tensor<4x4xf64>
  return %0 : tensor<4x4xf64>
}
"""
    a = np.random.default_rng(7).uniform(-1, 1, (4, 4))
    (out,) = h.run(module, a)
    h.assert_close(out, np.diag(np.diag(a)))


#===------------------------------------------------------------------------===#
# Reductions
#===------------------------------------------------------------------------===#

RSHAPE = (2, 3, 4)
SUBSETS = [s for n in range(1, 4) for s in itertools.combinations(range(3), n)]


def reduce_module(kind, dims, keepdim, dtype):
    out_shape = [1 if d in dims else n for d, n in enumerate(RSHAPE)] if keepdim \
        else [n for d, n in enumerate(RSHAPE) if d not in dims]
    t_in, t_out = h.tensor(RSHAPE, dtype), h.tensor(out_shape, dtype)
    return """
func.func @main(%%a: %(tin)s) -> %(tout)s {
  %%0 = harp.map_reduce ins(%%a : %(tin)s) {
  ^bb0(%%x: %(e)s):
    harp.yield %%x : %(e)s
  } reduce(%(kind)s, dims = [%(dims)s]%(keep)s) : %(tout)s
  return %%0 : %(tout)s
}
""" % dict(tin=t_in, tout=t_out, e=h.elt(dtype), kind=kind,
           dims=", ".join(map(str, dims)), keep=", keepdim" if keepdim else "")


def reduce_cases():
    numeric = [np.float32, np.float64, np.int32, np.int64, np.complex64]
    ordered = [np.float32, np.float64, np.int32, np.int64, np.bool_]
    for dims in SUBSETS:
        for keepdim in (False, True):
            for dtype in numeric:
                yield "sum", dtype, dims, keepdim
                yield "prod", dtype, dims, keepdim
            for dtype in ordered:
                yield "max", dtype, dims, keepdim
                yield "min", dtype, dims, keepdim
            for dtype in (np.int32, np.int64):
                yield "umax", dtype, dims, keepdim
                yield "umin", dtype, dims, keepdim


def reduce_reference(kind, x, dims, keepdim):
    axis = tuple(dims)
    if kind == "sum":
        return np.sum(x, axis=axis, keepdims=keepdim)
    if kind == "prod":
        return np.prod(x, axis=axis, keepdims=keepdim)
    if kind == "max":
        return np.max(x, axis=axis, keepdims=keepdim)
    if kind == "min":
        return np.min(x, axis=axis, keepdims=keepdim)
    udtype = np.uint32 if x.dtype == np.int32 else np.uint64
    fn = np.max if kind == "umax" else np.min
    return fn(x.view(udtype), axis=axis, keepdims=keepdim).astype(udtype).view(x.dtype)


@pytest.mark.parametrize("kind,dtype,dims,keepdim", list(reduce_cases()),
                         ids=lambda v: str(v) if not isinstance(v, type) else np.dtype(v).name)
def test_reductions(kind, dtype, dims, keepdim):
    # A stable seed (hash() of a str differs per process).
    rng = np.random.default_rng(zlib.crc32(repr((kind, dims, keepdim)).encode()))
    if kind == "prod" and (h.is_float(dtype) or h.is_complex(dtype)):
        x = (rng.uniform(0.8, 1.25, size=RSHAPE) *
             rng.choice([-1, 1], size=RSHAPE)).astype(dtype)
        if h.is_complex(dtype):
            x = (x * np.exp(1j * rng.uniform(-0.3, 0.3, size=RSHAPE))).astype(dtype)
    elif kind == "prod":
        x = rng.integers(-2, 3, size=RSHAPE).astype(dtype)
    else:
        x = h.random(RSHAPE, dtype, rng, -40, 40)
    (out,) = h.run(reduce_module(kind, dims, keepdim, dtype), x)
    atol = None
    if kind == "sum" and (h.is_float(dtype) or h.is_complex(dtype)):
        # Float sums in any order: the reference in double, and the bound
        # of a summation's rounding error (eps times the sum of |x|), since
        # terms of both signs can cancel far below their magnitude.
        expected = np.asarray(reduce_reference(kind, x.astype(np.complex128 if
                              h.is_complex(dtype) else np.float64), dims, keepdim))
        atol = 2 * np.finfo(dtype).eps * np.abs(x).sum()
        expected = expected.astype(dtype)
    else:
        expected = np.asarray(reduce_reference(kind, x, dims, keepdim)).astype(dtype)
    h.assert_close(out, expected, rtol=1e-5 if kind == "prod" else None, atol=atol)


def test_max_propagates_nan():
    module = reduce_module("max", (2,), False, np.float32)
    x = np.zeros(RSHAPE, np.float32)
    x[0, 1, 2] = np.nan
    (out,) = h.run(module, x)
    assert np.isnan(out[0, 1]) and not np.isnan(np.delete(out.ravel(), 1)).any()


def test_sum_of_expression():
    # Sum of squares over rows: the region maps before the reduction.
    module = """
func.func @main(%a: tensor<5x7xf64>) -> tensor<5xf64> {
  %0 = harp.map_reduce ins(%a : tensor<5x7xf64>) {
  ^bb0(%x: f64):
    %sq = arith.mulf %x, %x : f64
    harp.yield %sq : f64
  } reduce(sum, dims = [1]) : tensor<5xf64>
  return %0 : tensor<5xf64>
}
"""
    a = np.random.default_rng(8).normal(size=(5, 7))
    (out,) = h.run(module, a)
    h.assert_close(out, (a * a).sum(axis=1))


#===------------------------------------------------------------------------===#
# Matmul, convolution, softmax
#===------------------------------------------------------------------------===#

def matmul_module(m, k, n, dtype, batch=None):
    e = h.elt(dtype)
    mul = {"float": "arith.mulf", "int": "arith.muli", "complex": "complex.mul"}[kind_of(dtype)]
    if batch is None:
        return """
func.func @main(%%a: %(ta)s, %%b: %(tb)s) -> %(tc)s {
  %%ab = harp.view %%a <(d0, d1, d2) -> (d0, d2)> : %(ta)s -> %(td)s
  %%bb = harp.view %%b <(d0, d1, d2) -> (d2, d1)> : %(tb)s -> %(td)s
  %%c = harp.map_reduce ins(%%ab, %%bb : %(td)s, %(td)s) {
  ^bb0(%%x: %(e)s, %%y: %(e)s):
    %%p = %(mul)s %%x, %%y : %(e)s
    harp.yield %%p : %(e)s
  } reduce(sum, dims = [2]) : %(tc)s
  return %%c : %(tc)s
}
""" % dict(ta=h.tensor((m, k), dtype), tb=h.tensor((k, n), dtype),
           tc=h.tensor((m, n), dtype), td=h.tensor((m, n, k), dtype), e=e, mul=mul)
    # Batched, with the right operand broadcast over the batch.
    return """
func.func @main(%%a: %(ta)s, %%b: %(tb)s) -> %(tc)s {
  %%ab = harp.view %%a <(d0, d1, d2, d3) -> (d0, d1, d3)> : %(ta)s -> %(td)s
  %%bb = harp.view %%b <(d0, d1, d2, d3) -> (d3, d2)> : %(tb)s -> %(td)s
  %%c = harp.map_reduce ins(%%ab, %%bb : %(td)s, %(td)s) {
  ^bb0(%%x: %(e)s, %%y: %(e)s):
    %%p = %(mul)s %%x, %%y : %(e)s
    harp.yield %%p : %(e)s
  } reduce(sum, dims = [3]) : %(tc)s
  return %%c : %(tc)s
}
""" % dict(ta=h.tensor((batch, m, k), dtype), tb=h.tensor((k, n), dtype),
           tc=h.tensor((batch, m, n), dtype), td=h.tensor((batch, m, n, k), dtype),
           e=e, mul=mul)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex64])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (4, 8, 3), (7, 5, 9)])
def test_matmul(dtype, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a, b = h.random((m, k), dtype, rng), h.random((k, n), dtype, rng)
    (out,) = h.run(matmul_module(m, k, n, dtype), a, b)
    h.assert_close(out, (a @ b).astype(dtype), rtol=1e-5)


def matmul_bt_sum_module(m, k, n, dtype):
    """(a @ b.T) * w, and its total: b stored (n, k), read transposed."""
    e = h.elt(dtype)
    return """
func.func @main(%%a: %(ta)s, %%b: %(tb)s, %%w: %(tc)s) -> (%(tc)s, %(ts)s) {
  %%ab = harp.view %%a <(d0, d1, d2) -> (d0, d2)> : %(ta)s -> %(td)s
  %%bb = harp.view %%b <(d0, d1, d2) -> (d1, d2)> : %(tb)s -> %(td)s
  %%c = harp.map_reduce ins(%%ab, %%bb : %(td)s, %(td)s) {
  ^bb0(%%x: %(e)s, %%y: %(e)s):
    %%p = arith.mulf %%x, %%y : %(e)s
    harp.yield %%p : %(e)s
  } reduce(sum, dims = [2]) : %(tc)s
  %%cw = harp.map_reduce ins(%%c, %%w : %(tc)s, %(tc)s) {
  ^bb0(%%x: %(e)s, %%y: %(e)s):
    %%p = arith.mulf %%x, %%y : %(e)s
    harp.yield %%p : %(e)s
  } : %(tc)s
  %%t = harp.map_reduce ins(%%cw : %(tc)s) {
  ^bb0(%%x: %(e)s):
    harp.yield %%x : %(e)s
  } reduce(sum, dims = [0, 1]) : %(ts)s
  return %%cw, %%t : %(tc)s, %(ts)s
}
""" % dict(ta=h.tensor((m, k), dtype), tb=h.tensor((n, k), dtype),
           tc=h.tensor((m, n), dtype), td=h.tensor((m, n, k), dtype),
           ts=h.tensor((), dtype), e=e)


# Shapes for harp-vectorize's contraction tiles: smaller than a register
# tile, edges the 8x32 tile does not divide, several k steps, and cache
# blocks (n a multiple of 512 above it, k of 256); n above 512 and a multiple
# of the tile width packs the right operand into panels.
TILED_SHAPES = [(2, 3, 2), (9, 33, 40), (17, 300, 70), (64, 64, 64), (16, 512, 1024),
                (13, 100, 544), (40, 520, 1536), (96, 768, 80)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("m,k,n", TILED_SHAPES)
def test_matmul_tiled(dtype, m, k, n):
    rng = np.random.default_rng(m + k + n)
    a, b = h.random((m, k), dtype, rng), h.random((k, n), dtype, rng)
    (out,) = h.run(matmul_module(m, k, n, dtype), a, b)
    if np.issubdtype(dtype, np.integer):  # exact, wrapping like NumPy
        np.testing.assert_array_equal(out, (a @ b).astype(dtype))
        return
    tol = 1e-4 if dtype == np.float32 else 1e-10
    h.assert_close(out, (a @ b).astype(dtype), rtol=tol, atol=tol)


# On threads: the outer parallel loop is the m halves of a k-blocked
# matmul (96x768x80; 100 and 203 rows: halves of whole register tiles and
# a remainder block of 4 or 11 rows, tiled like the rest), the packed
# panels' blocks (16x512x1024), or the register-tile rows; each tile is
# summed in the same order as on one thread, so the results are
# bit-identical.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(96, 768, 80), (100, 768, 80), (203, 512, 37),
                                   (16, 512, 1024), (64, 64, 64)])
def test_matmul_tiled_on_threads(dtype, m, k, n):
    rng = np.random.default_rng(m * n + k)
    a, b = h.random((m, k), dtype, rng), h.random((k, n), dtype, rng)
    (one,) = h.run(matmul_module(m, k, n, dtype), a, b, device="cpu")
    (two,) = h.run(matmul_module(m, k, n, dtype), a, b,
                   extra_args=("--parallel", "--parallel-min-work=0"),
                   env=dict(os.environ, OMP_NUM_THREADS="2"))
    np.testing.assert_array_equal(one, two)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    h.assert_close(two, (a @ b).astype(dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", TILED_SHAPES)
def test_matmul_transposed_then_reduced(dtype, m, k, n):
    # Regression: a transposed right operand once came out of the register
    # tile broadcast along the wrong dim.
    rng = np.random.default_rng(m * k + n)
    a, b = h.random((m, k), dtype, rng), h.random((n, k), dtype, rng)
    w = h.random((m, n), dtype, rng)
    cw, total = h.run(matmul_bt_sum_module(m, k, n, dtype), a, b, w)
    ref = (a.astype(np.float64) @ b.T.astype(np.float64)) * w
    tol = 1e-4 if dtype == np.float32 else 1e-10
    h.assert_close(cw, ref.astype(dtype), rtol=tol, atol=tol)
    h.assert_close(total, np.asarray(ref.sum(), dtype=dtype), rtol=tol, atol=tol * m * n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_matmul(dtype):
    rng = np.random.default_rng(9)
    a, b = h.random((3, 4, 6), dtype, rng), h.random((6, 5), dtype, rng)
    (out,) = h.run(matmul_module(4, 6, 5, dtype, batch=3), a, b)
    h.assert_close(out, (a @ b).astype(dtype), rtol=1e-5)


def conv2d_module(n, c, hgt, wid, f, kh, kw, pad, stride, dtype):
    oh = (hgt + 2 * pad - kh) // stride + 1
    ow = (wid + 2 * pad - kw) // stride + 1
    e = h.elt(dtype)
    tx = h.tensor((n, c, hgt, wid), dtype)
    tp = h.tensor((n, c, hgt + 2 * pad, wid + 2 * pad), dtype)
    tu = h.tensor((n, c, oh, ow, kh, kw), dtype)
    td = h.tensor((n, f, oh, ow, c, kh, kw), dtype)
    tw = h.tensor((f, c, kh, kw), dtype)
    ty = h.tensor((n, f, oh, ow), dtype)
    return """
func.func @main(%%x: %(tx)s, %%w: %(tw)s) -> %(ty)s {
  %%xp = harp.view %%x <(n, c, h, w) -> (n, c, h - %(p)d, w - %(p)d),
      mask_ge = (n, c, h, w) -> (h - %(p)d, -h + %(hmax)d, w - %(p)d, -w + %(wmax)d)> : %(tx)s -> %(tp)s
  %%u = harp.view %%xp <(n, c, oh, ow, kh, kw) -> (n, c, oh * %(s)d + kh, ow * %(s)d + kw)> : %(tp)s -> %(tu)s
  %%xb = harp.view %%u <(n, f, oh, ow, c, kh, kw) -> (n, c, oh, ow, kh, kw)> : %(tu)s -> %(td)s
  %%wb = harp.view %%w <(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)> : %(tw)s -> %(td)s
  %%y = harp.map_reduce ins(%%xb, %%wb : %(td)s, %(td)s) {
  ^bb0(%%a: %(e)s, %%b: %(e)s):
    %%m = arith.mulf %%a, %%b : %(e)s
    harp.yield %%m : %(e)s
  } reduce(sum, dims = [4, 5, 6]) : %(ty)s
  return %%y : %(ty)s
}
""" % dict(tx=tx, tp=tp, tu=tu, td=td, tw=tw, ty=ty, e=e, p=pad, s=stride,
           hmax=hgt - 1 + pad, wmax=wid - 1 + pad)


def conv2d_reference(x, w, pad, stride):
    n, c, hgt, wid = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (hgt + 2 * pad - kh) // stride + 1
    ow = (wid + 2 * pad - kw) // stride + 1
    y = np.zeros((n, f, oh, ow), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.einsum("nckl,fckl->nf", win, w)
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pad,stride", [(0, 1), (1, 1), (1, 2), (2, 3)])
def test_conv2d(dtype, pad, stride):
    rng = np.random.default_rng(pad * 10 + stride)
    x = rng.normal(size=(2, 3, 7, 6)).astype(dtype)
    w = rng.normal(size=(4, 3, 3, 3)).astype(dtype)
    (out,) = h.run(conv2d_module(2, 3, 7, 6, 4, 3, 3, pad, stride, dtype), x, w)
    h.assert_close(out, conv2d_reference(x, w, pad, stride).astype(dtype), rtol=1e-5)



# Stride-1 windows whose output rows are no multiple of the register tile
# are computed on a grid as wide as the padded input (harp-vectorize's
# flatten-windows): rows longer than a tile, several tiles per row, a
# remainder of output channels, non-square and 1x1 windows, batches.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c,hgt,wid,f,kh,kw,pad", [
    (1, 5, 20, 37, 19, 3, 3, 1),
    (2, 4, 9, 70, 9, 2, 5, 0),
    (1, 16, 30, 30, 24, 3, 3, 1),
    (1, 3, 12, 40, 8, 1, 1, 0),
])
@pytest.mark.parametrize("extra", [(), ("--parallel", "--parallel-min-work=0")])
def test_conv2d_on_a_flattened_grid(dtype, n, c, hgt, wid, f, kh, kw, pad,
                                    extra):
    rng = np.random.default_rng(n * 1000 + c * 100 + wid)
    x = rng.normal(size=(n, c, hgt, wid)).astype(dtype)
    w = rng.normal(size=(f, c, kh, kw)).astype(dtype)
    (out,) = h.run(conv2d_module(n, c, hgt, wid, f, kh, kw, pad, 1, dtype), x, w,
                   extra_args=extra)
    ref = conv2d_reference(x.astype(np.float64), w.astype(np.float64), pad, 1)
    h.assert_close(out, ref.astype(dtype), rtol=1e-5 if dtype == np.float64 else 1e-4,
                   atol=1e-4 if dtype == np.float32 else 1e-10)


def depthwise_module(n, c, hgt, wid, k, pad, dtype, weighted=True):
    """A depthwise k x k convolution (each channel its own filter) over a
    zero-padded image, or the window's plain sum (weighted=False)."""
    oh, ow = hgt + 2 * pad - k + 1, wid + 2 * pad - k + 1
    e = h.elt(dtype)
    tx = h.tensor((n, c, hgt, wid), dtype)
    tp = h.tensor((n, c, hgt + 2 * pad, wid + 2 * pad), dtype)
    tu = h.tensor((n, c, oh, ow, k, k), dtype)
    tw = h.tensor((c, k, k), dtype)
    ty = h.tensor((n, c, oh, ow), dtype)
    if weighted:
        args, ins = "%%x: %(tx)s, %%w: %(tw)s", "%%u, %%wb : %(tu)s, %(tu)s"
        body = """^bb0(%%a: %(e)s, %%b: %(e)s):
    %%m = arith.mulf %%a, %%b : %(e)s
    harp.yield %%m : %(e)s"""
        wb = """  %%wb = harp.view %%w <(n, c, oh, ow, kh, kw) -> (c, kh, kw)> : %(tw)s -> %(tu)s
"""
    else:
        args, ins, wb = "%%x: %(tx)s", "%%u : %(tu)s", ""
        body = """^bb0(%%a: %(e)s):
    harp.yield %%a : %(e)s"""
    return ("""
func.func @main(""" + args + """) -> %(ty)s {
  %%xp = harp.view %%x <(n, c, h, w) -> (n, c, h - %(p)d, w - %(p)d),
      mask_ge = (n, c, h, w) -> (h - %(p)d, -h + %(hmax)d, w - %(p)d, -w + %(wmax)d)> : %(tx)s -> %(tp)s
  %%u = harp.view %%xp <(n, c, oh, ow, kh, kw) -> (n, c, oh + kh, ow + kw)> : %(tp)s -> %(tu)s
""" + wb + """  %%y = harp.map_reduce ins(""" + ins + """) {
  """ + body + """
  } reduce(sum, dims = [4, 5]) : %(ty)s
  return %%y : %(ty)s
}
""") % dict(tx=tx, tp=tp, tu=tu, tw=tw, ty=ty, e=e, p=pad, hmax=hgt - 1 + pad,
            wmax=wid - 1 + pad)


def depthwise_reference(x, w, pad):
    n, c, hgt, wid = x.shape
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = hgt + 2 * pad - k + 1, wid + 2 * pad - k + 1
    y = np.zeros((n, c, oh, ow), dtype=np.float64)
    for i in range(k):
        for j in range(k):
            y += xp[:, :, i:i + oh, j:j + ow] * w[None, :, i, j, None, None]
    return y


# Windows every image of which (batch, and channels of a depthwise kernel)
# is computed on its own (harp-rewrite-windows' slice-images): the padding
# is filled around each image's copy (harp-lower-copies), the grid copied
# out row by row in vectors. Rows below, at and past every vector width;
# on threads bit-identical to one thread.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c,hgt,wid,k,pad", [
    (1, 7, 9, 5, 3, 1), (3, 2, 6, 15, 3, 1), (2, 3, 8, 17, 5, 2),
    (1, 4, 5, 33, 3, 0), (2, 1, 12, 57, 3, 1)])
@pytest.mark.parametrize("weighted", [True, False])
def test_windows_one_image_at_a_time(dtype, n, c, hgt, wid, k, pad, weighted):
    rng = np.random.default_rng(n * 100 + c * 10 + wid)
    x = rng.normal(size=(n, c, hgt, wid)).astype(dtype)
    w = rng.normal(size=(c, k, k)).astype(dtype)
    module = depthwise_module(n, c, hgt, wid, k, pad, dtype, weighted)
    inputs = (x, w) if weighted else (x,)
    (one,) = h.run(module, *inputs, device="cpu")
    (two,) = h.run(module, *inputs, extra_args=("--parallel", "--parallel-min-work=0"),
                   env=dict(os.environ, OMP_NUM_THREADS="2"))
    np.testing.assert_array_equal(one, two)
    ref = depthwise_reference(x.astype(np.float64),
                              w.astype(np.float64) if weighted else np.ones((c, k, k)), pad)
    h.assert_close(one, ref.astype(dtype), rtol=1e-5 if dtype == np.float64 else 1e-4,
                   atol=1e-4 if dtype == np.float32 else 1e-10)


# A window kernel that accumulates into an initial value it is given (not
# a zero fill): the grid starts from that value padded to the grid's width.
CONV_INTO = """
#in = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh + kh, ow + kw)>
#w = affine_map<(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#o = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
func.func @main(%x: tensor<2x3x9x41xf64>, %w: tensor<10x3x3x3xf64>,
                %b: tensor<2x10x7x39xf64>) -> tensor<2x10x7x39xf64> {
  %r = linalg.generic {indexing_maps = [#in, #w, #o],
      iterator_types = ["parallel", "parallel", "parallel", "parallel",
                        "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<2x3x9x41xf64>, tensor<10x3x3x3xf64>)
      outs(%b : tensor<2x10x7x39xf64>) {
  ^bb0(%a: f64, %k: f64, %acc: f64):
    %m = arith.mulf %a, %k : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  } -> tensor<2x10x7x39xf64>
  return %r : tensor<2x10x7x39xf64>
}
"""


def test_conv2d_on_a_flattened_grid_into_an_initial_value():
    rng = np.random.default_rng(41)
    x = rng.normal(size=(2, 3, 9, 41))
    w = rng.normal(size=(10, 3, 3, 3))
    b = rng.normal(size=(2, 10, 7, 39))
    (out,) = h.run(CONV_INTO, x, w, b)
    h.assert_close(out, b + conv2d_reference(x, w, 0, 1), rtol=1e-12)
    (scalar,) = h.run(CONV_INTO, x, w, b, extra_args=("--no-vectorize",))
    h.assert_close(out, scalar, rtol=1e-12)

SOFTMAX = """
func.func @main(%x: tensor<6x10xf32>) -> tensor<6x10xf32> {
  %m = harp.map_reduce ins(%x : tensor<6x10xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<6xf32>
  %mb = harp.view %m <(d0, d1) -> (d0)> : tensor<6xf32> -> tensor<6x10xf32>
  %e = harp.map_reduce ins(%x, %mb : tensor<6x10xf32>, tensor<6x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    harp.yield %ex : f32
  } : tensor<6x10xf32>
  %s = harp.map_reduce ins(%e : tensor<6x10xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<6xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<6xf32> -> tensor<6x10xf32>
  %y = harp.map_reduce ins(%e, %sb : tensor<6x10xf32>, tensor<6x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %a, %b : f32
    harp.yield %q : f32
  } : tensor<6x10xf32>
  return %y : tensor<6x10xf32>
}
"""


def test_softmax():
    x = np.random.default_rng(11).normal(size=(6, 10)).astype(np.float32) * 5
    (out,) = h.run(SOFTMAX, x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    h.assert_close(out, (e / e.sum(axis=1, keepdims=True)).astype(np.float32))


def test_multiple_results_and_functions():
    module = """
func.func @twice(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
  %d = harp.map_reduce ins(%a : tensor<3xf32>) {
  ^bb0(%x: f32):
    %y = arith.addf %x, %x : f32
    harp.yield %y : f32
  } : tensor<3xf32>
  %s = harp.map_reduce ins(%a : tensor<3xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %d, %s : tensor<3xf32>, tensor<f32>
}
func.func @other(%a: tensor<3xf32>) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}
"""
    a = np.array([1, 2, 3], np.float32)
    d, s = h.run(module, a, entry="twice")
    h.assert_close(d, 2 * a)
    h.assert_close(s, np.float32(6).reshape(()))
    (o,) = h.run(module, a, entry="other")
    h.assert_close(o, a)
