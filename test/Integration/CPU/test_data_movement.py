"""Integration tests of harp's data-movement and source ops on the CPU:
harp.concat, harp.gather, harp.scatter_add, harp.rand, harp.arange and
harp.contiguous, run through harp-run and compared with NumPy references.

Run with: python3 -m pytest -q test/Integration/CPU/test_data_movement.py
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harptest  # noqa: E402
from harptest import (DTYPES, HarpError, assert_close, elt, random,  # noqa: E402
                      run, tensor)


def dtype_id(dtype):
    return elt(dtype).replace("<", "").replace(">", "")


DTYPE_PARAMS = [pytest.param(d, id=dtype_id(d)) for d in DTYPES]
# scatter_add accumulates with addition, which i1 does not have.
SCATTER_DTYPES = [pytest.param(d, id=dtype_id(d)) for d in DTYPES
                  if np.dtype(d) != np.bool_]
INDEX_DTYPES = [pytest.param(np.int32, id="i32"), pytest.param(np.int64, id="i64")]

# A subset for edge cases whose handling does not depend on the element type
# beyond its width: 32- and 64-bit, i1 and complex.
EDGE_DTYPES = [pytest.param(d, id=dtype_id(d))
               for d in (np.float32, np.int64, np.bool_, np.complex64)]

# Base shapes per rank and every (rank, dim) pair of them.
SHAPES = {1: (5,), 2: (4, 5), 3: (3, 4, 5)}
RANK_DIMS = [pytest.param(r, d, id="rank%d-dim%d" % (r, d))
             for r in (1, 2, 3) for d in range(r)]


def with_dim(shape, dim, size):
    return tuple(shape[:dim]) + (size,) + tuple(shape[dim + 1:])


def func(name, args, results, body):
    """A func.func: `args` is a list of (ssa name, type), `results` a list of
    (ssa value, type), `body` lines of ops."""
    sig = ", ".join("%s: %s" % a for a in args)
    res_types = [t for _, t in results]
    if len(res_types) == 1:
        arrow = " -> %s" % res_types[0]
    elif res_types:
        arrow = " -> (%s)" % ", ".join(res_types)
    else:
        arrow = ""
    lines = ["func.func @%s(%s)%s {" % (name, sig, arrow)]
    lines += ["  " + line for line in body]
    if results:
        lines.append("  return %s : %s" % (", ".join(v for v, _ in results),
                                           ", ".join(res_types)))
    else:
        lines.append("  return")
    lines.append("}")
    return "\n".join(lines) + "\n"


def identity_map_reduce(result, operand, shape, dtype):
    """A map_reduce that copies `operand` into `result`."""
    t, e = tensor(shape, dtype), elt(dtype)
    return [
        "%s = harp.map_reduce ins(%s : %s) {" % (result, operand, t),
        "^bb0(%%elem: %s):" % e,
        "  harp.yield %%elem : %s" % e,
        "} : %s" % t,
    ]


def doubling_map_reduce(result, operand, shape, dtype):
    """A map_reduce computing x + x (x xor true for i1), and its NumPy twin."""
    t, e = tensor(shape, dtype), elt(dtype)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        ops = ["  %true_c = arith.constant true",
               "  %mapped = arith.xori %elem, %true_c : i1"]
        ref = np.logical_not
    elif harptest.is_complex(dt):
        ops = ["  %%mapped = complex.add %%elem, %%elem : %s" % e]
        ref = lambda x: x + x  # noqa: E731
    elif harptest.is_float(dt):
        ops = ["  %%mapped = arith.addf %%elem, %%elem : %s" % e]
        ref = lambda x: x + x  # noqa: E731
    else:
        ops = ["  %%mapped = arith.addi %%elem, %%elem : %s" % e]
        ref = lambda x: x + x  # noqa: E731
    body = ["%s = harp.map_reduce ins(%s : %s) {" % (result, operand, t),
            "^bb0(%%elem: %s):" % e] + ops + [
            "  harp.yield %%mapped : %s" % e,
            "} : %s" % t]
    return body, ref


def pad_value(dtype):
    return np.zeros((), dtype=dtype)[()]


# ---------------------------------------------------------------------------
# harp.concat
# ---------------------------------------------------------------------------

def concat_module(shapes, out_shape, dim, dtype):
    args = [("%%a%d" % i, tensor(s, dtype)) for i, s in enumerate(shapes)]
    out = tensor(out_shape, dtype)
    body = ["%%c = harp.concat dim(%d) %s : (%s) -> %s" % (
        dim, ", ".join(a for a, _ in args), ", ".join(t for _, t in args), out)]
    return func("f", args, [("%c", out)], body)


def check_concat(dtype, rank, dim, sizes, seed):
    rng = np.random.default_rng(seed)
    base = SHAPES[rank]
    shapes = [with_dim(base, dim, s) for s in sizes]
    arrays = [random(s, dtype, rng) for s in shapes]
    out_shape = with_dim(base, dim, sum(sizes))
    (got,) = run(concat_module(shapes, out_shape, dim, dtype), *arrays)
    assert_close(got, np.concatenate(arrays, axis=dim))


@pytest.mark.parametrize("rank, dim", RANK_DIMS)
@pytest.mark.parametrize("dtype", DTYPE_PARAMS)
def test_concat_three_operands(dtype, rank, dim):
    check_concat(dtype, rank, dim, [2, 3, 1], seed=rank * 10 + dim)


@pytest.mark.parametrize("rank, dim", RANK_DIMS)
@pytest.mark.parametrize("count", [1, 2])
def test_concat_operand_count(count, rank, dim):
    check_concat(np.float32, rank, dim, [3, 2][:count], seed=count * 100 + rank * 10 + dim)


# (rank, dim, sizes along dim): a zero-size operand first, in the middle, last,
# and a zero-size result.
ZERO_SIZE_CASES = [
    pytest.param(1, 0, [3, 0, 2], id="1d-middle"),
    pytest.param(2, 1, [0, 4], id="2d-first"),
    pytest.param(3, 0, [2, 0], id="3d-last"),
    pytest.param(2, 0, [0, 0], id="2d-all-empty"),
]


@pytest.mark.parametrize("rank, dim, sizes", ZERO_SIZE_CASES)
@pytest.mark.parametrize("dtype", EDGE_DTYPES)
def test_concat_zero_size_operand(dtype, rank, dim, sizes):
    check_concat(dtype, rank, dim, sizes, seed=7)


def concat_view_case(kind, dtype, rng):
    """Returns (module, inputs, expected) for a concat of views."""
    T = lambda shape: tensor(shape, dtype)  # noqa: E731
    if kind == "transpose":
        a, b = random((5, 3), dtype, rng), random((3, 2), dtype, rng)
        body = ["%%t = harp.view %%a <(d0, d1) -> (d1, d0)> : %s -> %s" % (T((5, 3)), T((3, 5))),
                "%%c = harp.concat dim(1) %%t, %%b : (%s, %s) -> %s" % (T((3, 5)), T((3, 2)), T((3, 7)))]
        args = [("%a", T((5, 3))), ("%b", T((3, 2)))]
        return func("f", args, [("%c", T((3, 7)))], body), [a, b], np.concatenate([a.T, b], 1)
    if kind == "pad":
        a, b = random((3,), dtype, rng), random((2,), dtype, rng)
        body = ["%%p = harp.view %%a <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 3)> : %s -> %s"
                % (T((3,)), T((5,))),
                "%%c = harp.concat dim(0) %%b, %%p, %%b : (%s, %s, %s) -> %s"
                % (T((2,)), T((5,)), T((2,)), T((9,)))]
        args = [("%a", T((3,))), ("%b", T((2,)))]
        z = np.array([pad_value(dtype)], dtype=dtype)
        expected = np.concatenate([b, z, a, z, b])
        return func("f", args, [("%c", T((9,)))], body), [a, b], expected
    if kind == "slice-flip":
        a, b = random((8, 4), dtype, rng), random((1, 4), dtype, rng)
        body = ["%%s = harp.view %%a <(d0, d1) -> (d0 * 2 + 1, -d1 + 3)> : %s -> %s"
                % (T((8, 4)), T((4, 4))),
                "%%c = harp.concat dim(0) %%s, %%b : (%s, %s) -> %s" % (T((4, 4)), T((1, 4)), T((5, 4)))]
        args = [("%a", T((8, 4))), ("%b", T((1, 4)))]
        return func("f", args, [("%c", T((5, 4)))], body), [a, b], np.concatenate([a[1::2, ::-1], b], 0)
    if kind == "broadcast":
        # (harptest.run passes 0-d arrays as shape (1,), so the single element
        # is a tensor<1x...> expanded with a constant index.)
        r, s, c = random((4,), dtype, rng), random((1,), dtype, rng), random((2, 4), dtype, rng)
        body = ["%%r = harp.view %%row <(d0, d1) -> (d1)> : %s -> %s" % (T((4,)), T((3, 4))),
                "%%s = harp.view %%sc <(d0, d1) -> (0)> : %s -> %s" % (T((1,)), T((1, 4))),
                "%%c = harp.concat dim(0) %%r, %%m, %%s : (%s, %s, %s) -> %s"
                % (T((3, 4)), T((2, 4)), T((1, 4)), T((6, 4)))]
        args = [("%row", T((4,))), ("%sc", T((1,))), ("%m", T((2, 4)))]
        expected = np.concatenate([np.broadcast_to(r, (3, 4)), c, np.broadcast_to(s, (1, 4))], 0)
        return func("f", args, [("%c", T((6, 4)))], body), [r, s, c], expected
    if kind == "permute-3d":
        x, y = random((4, 2, 3), dtype, rng), random((3, 4, 1), dtype, rng)
        body = ["%%p = harp.view %%x <(d0, d1, d2) -> (d1, d2, d0)> : %s -> %s"
                % (T((4, 2, 3)), T((3, 4, 2))),
                "%%c = harp.concat dim(2) %%p, %%y : (%s, %s) -> %s" % (T((3, 4, 2)), T((3, 4, 1)), T((3, 4, 3)))]
        args = [("%x", T((4, 2, 3))), ("%y", T((3, 4, 1)))]
        expected = np.concatenate([np.transpose(x, (2, 0, 1)), y], 2)
        return func("f", args, [("%c", T((3, 4, 3)))], body), [x, y], expected
    if kind == "repeated-and-nested":
        a, b = random((2, 3), dtype, rng), random((4, 2), dtype, rng)
        body = ["%%c1 = harp.concat dim(0) %%a, %%a : (%s, %s) -> %s" % (T((2, 3)), T((2, 3)), T((4, 3))),
                "%%c = harp.concat dim(1) %%c1, %%b, %%c1 : (%s, %s, %s) -> %s"
                % (T((4, 3)), T((4, 2)), T((4, 3)), T((4, 8)))]
        args = [("%a", T((2, 3))), ("%b", T((4, 2)))]
        aa = np.concatenate([a, a], 0)
        return func("f", args, [("%c", T((4, 8)))], body), [a, b], np.concatenate([aa, b, aa], 1)
    raise ValueError(kind)


CONCAT_VIEW_KINDS = ["transpose", "pad", "slice-flip", "broadcast", "permute-3d",
                     "repeated-and-nested"]
# Transpose and pad (whose pad value depends on the type) with every dtype,
# the other views with f32, i1 and complex64.
CONCAT_VIEW_CASES = [
    pytest.param(d, k, id="%s-%s" % (dtype_id(d), k))
    for k in CONCAT_VIEW_KINDS for d in DTYPES
    if k in ("transpose", "pad") or np.dtype(d) in (np.float32, np.bool_, np.complex64)]


@pytest.mark.parametrize("dtype, kind", CONCAT_VIEW_CASES)
def test_concat_views(dtype, kind):
    rng = np.random.default_rng(CONCAT_VIEW_KINDS.index(kind))
    module, inputs, expected = concat_view_case(kind, dtype, rng)
    (got,) = run(module, *inputs)
    assert_close(got, expected)


# ---------------------------------------------------------------------------
# harp.gather
# ---------------------------------------------------------------------------

def gather_module(x_shape, idx_shape, dim, dtype, idx_dtype):
    tx, ti = tensor(x_shape, dtype), tensor(idx_shape, idx_dtype)
    tr = tensor(idx_shape, dtype)
    body = ["%%g = harp.gather %%x[%%i] dim(%d) : (%s, %s) -> %s" % (dim, tx, ti, tr)]
    return func("f", [("%x", tx), ("%i", ti)], [("%g", tr)], body)


def gather_ref(x, idx, dim):
    """torch.gather: crop the input to the index in the non-gather dims, then
    take along `dim`."""
    crop = tuple(slice(None) if k == dim else slice(0, idx.shape[k])
                 for k in range(x.ndim))
    return np.take_along_axis(x[crop], idx.astype(np.int64), axis=dim)


def gather_index_shape(x_shape, dim, along):
    """One smaller than the input in every non-gather dim of size > 1."""
    return tuple(along if k == dim else max(1, s - 1) for k, s in enumerate(x_shape))


def check_gather(dtype, idx_dtype, rank, dim, along, seed):
    rng = np.random.default_rng(seed)
    x_shape = SHAPES[rank]
    idx_shape = gather_index_shape(x_shape, dim, along)
    x = random(x_shape, dtype, rng)
    idx = rng.integers(0, x_shape[dim], size=idx_shape).astype(idx_dtype)
    (got,) = run(gather_module(x_shape, idx_shape, dim, dtype, idx_dtype), x, idx)
    assert_close(got, gather_ref(x, idx, dim))


@pytest.mark.parametrize("rank, dim", RANK_DIMS)
@pytest.mark.parametrize("dtype", DTYPE_PARAMS)
def test_gather(dtype, rank, dim):
    # The index is longer than the input along `dim` (8 > 5): values repeat.
    check_gather(dtype, np.int64, rank, dim, along=8, seed=rank * 10 + dim)


@pytest.mark.parametrize("rank, dim", RANK_DIMS)
def test_gather_i32_index(rank, dim):
    # i32 indices (test_gather uses i64), shorter than the input along `dim`.
    check_gather(np.float32, np.int32, rank, dim, along=2, seed=200 + rank * 10 + dim)


@pytest.mark.parametrize("dtype", DTYPE_PARAMS)
def test_gather_all_repeated(dtype):
    # Every index reads the same element along dim 1.
    rng = np.random.default_rng(3)
    x = random((4, 5), dtype, rng)
    idx = np.full((4, 6), 3, dtype=np.int64)
    (got,) = run(gather_module((4, 5), (4, 6), 1, dtype, np.int64), x, idx)
    assert_close(got, np.repeat(x[:, 3:4], 6, axis=1))


@pytest.mark.parametrize("dtype", DTYPE_PARAMS)
def test_gather_from_view(dtype):
    # The input is a transposed tensor and the index a sliced one.
    rng = np.random.default_rng(4)
    x = random((5, 4), dtype, rng)
    idx = rng.integers(0, 5, size=(6, 3)).astype(np.int32)
    tx, tv = tensor((5, 4), dtype), tensor((4, 5), dtype)
    ti, tiv = tensor((6, 3), np.int32), tensor((3, 3), np.int32)
    tr = tensor((3, 3), dtype)
    body = ["%%t = harp.view %%x <(d0, d1) -> (d1, d0)> : %s -> %s" % (tx, tv),
            "%%s = harp.view %%i <(d0, d1) -> (d0 * 2, d1)> : %s -> %s" % (ti, tiv),
            "%%g = harp.gather %%t[%%s] dim(1) : (%s, %s) -> %s" % (tv, tiv, tr)]
    module = func("f", [("%x", tx), ("%i", ti)], [("%g", tr)], body)
    (got,) = run(module, x, idx)
    assert_close(got, gather_ref(np.ascontiguousarray(x.T), idx[::2], 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_gather_rows_of_broadcast_index(dtype):
    # An embedding lookup: the index is broadcast along the rows it selects
    # (read once per row in the kernel, rows copied as vectors: 40 and 33
    # columns are whole vectors plus remainders). Out-of-range rows clamp.
    rng = np.random.default_rng(11)
    x = random((7, 40), dtype, rng)
    idx = np.array([3, 0, 6, -2, 9], dtype=np.int64)
    tx, ti, tb = tensor((7, 40), dtype), tensor((5,), np.int64), tensor((5, 40), np.int64)
    tr = tensor((5, 40), dtype)
    body = ["%%b = harp.view %%i <(d0, d1) -> (d0)> : %s -> %s" % (ti, tb),
            "%%g = harp.gather %%x[%%b] dim(0) : (%s, %s) -> %s" % (tx, tb, tr)]
    (got,) = run(func("f", [("%x", tx), ("%i", ti)], [("%g", tr)], body), x, idx)
    assert_close(got, x[np.clip(idx, 0, 6)])

    # Rank 3, gathering along the middle dim with a 2-D index.
    x3 = random((2, 7, 33), dtype, rng)
    idx3 = rng.integers(0, 7, size=(2, 4)).astype(np.int32)
    tx3, ti3 = tensor((2, 7, 33), dtype), tensor((2, 4), np.int32)
    tb3, tr3 = tensor((2, 4, 33), np.int32), tensor((2, 4, 33), dtype)
    body3 = ["%%b = harp.view %%i <(d0, d1, d2) -> (d0, d1)> : %s -> %s" % (ti3, tb3),
             "%%g = harp.gather %%x[%%b] dim(1) : (%s, %s) -> %s" % (tx3, tb3, tr3)]
    (got3,) = run(func("f", [("%x", tx3), ("%i", ti3)], [("%g", tr3)], body3), x3, idx3)
    assert_close(got3, np.stack([x3[b][idx3[b]] for b in range(2)]))


def test_gather_out_of_range_clamped_1d():
    # harp's behaviour (PyTorch raises instead): an index below 0 reads
    # element 0 and one past the end reads the last element.
    x = np.arange(10, 60, 10).astype(np.float32)  # [10, 20, 30, 40, 50]
    idx = np.array([-3, 99, -1, 5, 0, 4, 2], dtype=np.int64)
    (got,) = run(gather_module((5,), (7,), 0, np.float32, np.int64), x, idx)
    assert_close(got, np.array([10, 50, 10, 50, 10, 50, 30], dtype=np.float32))


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("idx_dtype", INDEX_DTYPES)
def test_gather_out_of_range_clamped(idx_dtype, dim):
    # Clamping into [0, size) is harp's documented lowering behaviour
    # (Passes.td); -3 reads index 0 and 99 reads the last index.
    rng = np.random.default_rng(5)
    x = random((4, 5), np.int32, rng, low=-100, high=100)
    info = np.iinfo(idx_dtype)
    values = [-3, 99, -1, x.shape[dim], 0, x.shape[dim] - 1, info.min, info.max]
    idx_shape = (4, 8) if dim == 1 else (8, 5)
    if dim == 1:
        idx = np.resize(np.array(values, dtype=idx_dtype), idx_shape)
    else:
        idx = np.ascontiguousarray(np.resize(np.array(values, dtype=idx_dtype), (5, 8)).T)
    (got,) = run(gather_module((4, 5), idx_shape, dim, np.int32, idx_dtype), x, idx)
    clamped = np.clip(idx.astype(np.int64), 0, x.shape[dim] - 1)
    assert_close(got, gather_ref(x, clamped, dim))


# ---------------------------------------------------------------------------
# harp.scatter_add
# ---------------------------------------------------------------------------

def scatter_module(src_shape, dest_shape, idx_shape, dim, dtype, idx_dtype):
    ts, td = tensor(src_shape, dtype), tensor(dest_shape, dtype)
    ti = tensor(idx_shape, idx_dtype)
    body = ["%%s = harp.scatter_add %%src into %%dest[%%i] dim(%d) : %s into %s[%s]"
            % (dim, ts, td, ti)]
    return func("f", [("%src", ts), ("%dest", td), ("%i", ti)], [("%s", td)], body)


def scatter_ref(src, dest, idx, dim):
    """Tensor.scatter_add_ on a copy: out[..., idx[p], ...] += src[p] for every
    position p of the index, duplicates accumulating (np.add.at)."""
    out = dest.copy()
    coords = list(np.indices(idx.shape))
    coords[dim] = idx.astype(np.int64)
    src_crop = src[tuple(slice(0, n) for n in idx.shape)]
    np.add.at(out, tuple(coords), src_crop)
    return out


def scatter_shapes(rank, dim, along):
    dest_shape = SHAPES[rank]
    idx_shape = tuple(along if k == dim else max(1, s - 1) for k, s in enumerate(dest_shape))
    src_shape = tuple(n + 1 for n in idx_shape)  # src larger than index in every dim
    return src_shape, dest_shape, idx_shape


def check_scatter(dtype, idx_dtype, rank, dim, along, seed):
    rng = np.random.default_rng(seed)
    src_shape, dest_shape, idx_shape = scatter_shapes(rank, dim, along)
    src = random(src_shape, dtype, rng)
    dest = random(dest_shape, dtype, rng)
    idx = rng.integers(0, dest_shape[dim], size=idx_shape).astype(idx_dtype)
    module = scatter_module(src_shape, dest_shape, idx_shape, dim, dtype, idx_dtype)
    (got,) = run(module, src, dest, idx)
    assert_close(got, scatter_ref(src, dest, idx, dim))


@pytest.mark.parametrize("rank, dim", RANK_DIMS)
@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
def test_scatter_add(dtype, rank, dim):
    # 8 index entries along `dim` into 5 positions: duplicates accumulate.
    check_scatter(dtype, np.int64, rank, dim, along=8, seed=rank * 10 + dim)


@pytest.mark.parametrize("rank, dim", RANK_DIMS)
def test_scatter_add_i32_index(rank, dim):
    # i32 indices (test_scatter_add uses i64), 3 entries along `dim`.
    check_scatter(np.float64, np.int32, rank, dim, along=3, seed=200 + rank * 10 + dim)


@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
def test_scatter_add_all_duplicates(dtype):
    # Every src element of a column lands on one row.
    rng = np.random.default_rng(8)
    src = random((6, 3), dtype, rng)
    dest = random((4, 3), dtype, rng)
    idx = np.full((6, 3), 2, dtype=np.int32)
    (got,) = run(scatter_module((6, 3), (4, 3), (6, 3), 0, dtype, np.int32), src, dest, idx)
    expected = dest.copy()
    expected[2] += src.sum(axis=0)
    assert_close(got, expected)
    assert_close(got, scatter_ref(src, dest, idx, 0))


@pytest.mark.parametrize("idx_dtype", INDEX_DTYPES)
def test_scatter_add_out_of_range_clamped(idx_dtype):
    # harp clamps out-of-range indices (PyTorch raises): -3 adds into row 0,
    # 99 into the last row.
    src = np.arange(1, 7, dtype=np.int64).reshape(6, 1) * np.array([[1, 100]])
    dest = np.zeros((4, 2), dtype=np.int64)
    info = np.iinfo(idx_dtype)
    idx = np.array([[-3, 99], [99, -3], [-1, 4], [1, 2], [info.min, info.max],
                    [3, 0]], dtype=idx_dtype)
    (got,) = run(scatter_module((6, 2), (4, 2), (6, 2), 0, np.int64, idx_dtype), src, dest, idx)
    clamped = np.clip(idx.astype(np.int64), 0, 3)
    assert_close(got, scatter_ref(src, dest, clamped, 0))
    assert got[0, 0] == 1 + 3 + 5 and got[3, 0] == 2 + 6


def test_scatter_add_i1_rejected():
    t = tensor((2, 2), np.bool_)
    ti = tensor((2, 2), np.int64)
    module = func("f", [("%src", t), ("%dest", t), ("%i", ti)], [("%s", t)],
                  ["%%s = harp.scatter_add %%src into %%dest[%%i] dim(0) : %s into %s[%s]"
                   % (t, t, ti)])
    b = np.array([[True, False], [False, True]])
    with pytest.raises(HarpError) as err:
        run(module, b, b, np.zeros((2, 2), dtype=np.int64))
    message = str(err.value)
    assert "harp.scatter_add" in message, message
    assert "accumulates with addition, which i1 does not have" in message, message


SCATTER_DEST_KINDS = ["argument", "computed", "contiguous", "constant", "two-scatters",
                      "transposed-view"]


@pytest.mark.parametrize("kind", SCATTER_DEST_KINDS)
@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
def test_scatter_add_keeps_dest(dtype, kind):
    """Value semantics: after the scatter, a map_reduce copy of dest must still
    read the original values."""
    rng = np.random.default_rng(9)
    src_shape, dest_shape, idx_shape = (5, 3), (4, 3), (5, 3)
    ts, td, ti = tensor(src_shape, dtype), tensor(dest_shape, dtype), tensor(idx_shape, np.int64)
    src = random(src_shape, dtype, rng)
    src2 = random(src_shape, dtype, rng)
    dest = random(dest_shape, dtype, rng)
    idx = rng.integers(0, 4, size=idx_shape).astype(np.int64)
    args = [("%src", ts), ("%dest", td), ("%i", ti)]
    inputs = [src, dest, idx]
    body = []
    if kind == "argument":
        d = "%dest"
    elif kind == "computed":
        body += identity_map_reduce("%d", "%dest", dest_shape, dtype)
        d = "%d"
    elif kind == "contiguous":
        body += ["%%d = harp.contiguous %%dest : %s" % td]
        d = "%d"
    elif kind == "constant":
        dest = np.arange(12).reshape(dest_shape).astype(dtype)
        if harptest.is_complex(dtype):
            dest = dest + 0.5j * dest
        inputs = [src, idx]
        args = [("%src", ts), ("%i", ti)]
        if harptest.is_complex(dtype):
            text = "[%s]" % ", ".join(
                "[%s]" % ", ".join("(%r, %r)" % (float(v.real), float(v.imag)) for v in row)
                for row in dest)
        elif harptest.is_float(dtype):
            text = "[%s]" % ", ".join("[%s]" % ", ".join(repr(float(v)) for v in row) for row in dest)
        else:
            text = "[%s]" % ", ".join("[%s]" % ", ".join(str(int(v)) for v in row) for row in dest)
        body += ["%%d = arith.constant dense<%s> : %s" % (text, td)]
        d = "%d"
    elif kind == "two-scatters":
        d = "%dest"
        args.append(("%src2", ts))
        inputs.append(src2)
    elif kind == "transposed-view":
        # dest is a transpose of the (3, 4) argument.
        arg = np.ascontiguousarray(dest.T)
        tt = tensor(arg.shape, dtype)
        args[1] = ("%dest", tt)
        inputs[1] = arg
        body += ["%%d = harp.view %%dest <(d0, d1) -> (d1, d0)> : %s -> %s" % (tt, td)]
        d = "%d"
    body += ["%%s = harp.scatter_add %%src into %s[%%i] dim(0) : %s into %s[%s]" % (d, ts, td, ti)]
    results = [("%s", td)]
    if kind == "two-scatters":
        body += ["%%s2 = harp.scatter_add %%src2 into %s[%%i] dim(0) : %s into %s[%s]"
                 % (d, ts, td, ti)]
        results.append(("%s2", td))
    body += identity_map_reduce("%copy", d, dest_shape, dtype)
    results.append(("%copy", td))
    module = func("f", args, results, body)
    got = run(module, *inputs)
    assert_close(got[0], scatter_ref(src, dest, idx, 0))
    if kind == "two-scatters":
        assert_close(got[1], scatter_ref(src2, dest, idx, 0))
    assert_close(got[-1], dest)


def test_gather_scatter_empty_index():
    # A zero-size index: the gather result is empty, the scatter a copy of dest.
    rng = np.random.default_rng(12)
    x, src, dest = (random(s, np.float32, rng) for s in [(4, 5), (4, 3), (5, 3)])
    gi, si = np.zeros((4, 0), dtype=np.int64), np.zeros((0, 3), dtype=np.int64)
    module = func(
        "f", [("%x", tensor((4, 5), np.float32)), ("%gi", tensor((4, 0), np.int64)),
              ("%src", tensor((4, 3), np.float32)), ("%si", tensor((0, 3), np.int64)),
              ("%dest", tensor((5, 3), np.float32))],
        [("%g", tensor((4, 0), np.float32)), ("%s", tensor((5, 3), np.float32))],
        ["%g = harp.gather %x[%gi] dim(1) : (tensor<4x5xf32>, tensor<4x0xi64>) -> tensor<4x0xf32>",
         "%s = harp.scatter_add %src into %dest[%si] dim(0) : tensor<4x3xf32> into tensor<5x3xf32>[tensor<0x3xi64>]"])
    g, sc = run(module, x, gi, src, si, dest)
    assert_close(g, np.zeros((4, 0), dtype=np.float32))
    assert_close(sc, dest)


@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
def test_data_movement_chain(dtype):
    """map_reduce -> gather -> concat -> scatter_add -> map_reduce, so that
    producers and consumers of each op can be fused with it."""
    rng = np.random.default_rng(13)
    x, dest = random((4, 5), dtype, rng), random((4, 5), dtype, rng)
    gi = rng.integers(0, 5, size=(4, 3)).astype(np.int64)
    si = rng.integers(0, 5, size=(4, 6)).astype(np.int32)
    T = lambda shape: tensor(shape, dtype)  # noqa: E731
    double_x, ref = doubling_map_reduce("%d", "%x", (4, 5), dtype)
    double_s, _ = doubling_map_reduce("%m", "%s", (4, 5), dtype)
    body = double_x + [
        "%%g = harp.gather %%d[%%gi] dim(1) : (%s, %s) -> %s" % (T((4, 5)), tensor((4, 3), np.int64), T((4, 3))),
        "%%c = harp.concat dim(1) %%g, %%g : (%s, %s) -> %s" % (T((4, 3)), T((4, 3)), T((4, 6))),
        "%%s = harp.scatter_add %%c into %%dest[%%si] dim(1) : %s into %s[%s]"
        % (T((4, 6)), T((4, 5)), tensor((4, 6), np.int32)),
    ] + double_s
    module = func("f", [("%x", T((4, 5))), ("%gi", tensor((4, 3), np.int64)),
                        ("%dest", T((4, 5))), ("%si", tensor((4, 6), np.int32))],
                  [("%c", T((4, 6))), ("%m", T((4, 5)))], body)
    c, m = run(module, x, gi, dest, si)
    g = gather_ref(ref(x), gi, 1)
    expected_c = np.concatenate([g, g], 1)
    assert_close(c, expected_c)
    assert_close(m, ref(scatter_ref(expected_c, dest, si, 1)))


# ---------------------------------------------------------------------------
# harp.rand
# ---------------------------------------------------------------------------

MASK32 = np.uint64(0xFFFFFFFF)
MANTISSA_BITS = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
NP_FLOAT = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32}


def philox_uniform(shape, seed, type_name):
    """harp.rand's Philox-2x32-10 on the row-major linear index, as
    Sources.cpp lowers it; bf16 values are returned as float32."""
    seed &= (1 << 64) - 1
    bits = MANTISSA_BITS[type_name]
    n = int(np.prod(shape, dtype=np.int64))
    counter = np.arange(n, dtype=np.uint64)
    x0 = counter & MASK32
    x1 = (counter >> np.uint64(32)) ^ np.uint64(seed >> 32)
    key = seed & 0xFFFFFFFF
    for _ in range(10):
        product = x0 * np.uint64(0xD256D193)  # < 2**64: exact in uint64
        hi = product >> np.uint64(32)
        lo = product & MASK32
        x0 = hi ^ np.uint64(key) ^ x1
        x1 = lo
        key = (key + 0x9E3779B9) & 0xFFFFFFFF
    if bits <= 32:
        word = x0 >> np.uint64(32 - bits)
    else:
        word = (x0 << np.uint64(bits - 32)) | (x1 >> np.uint64(64 - bits))
    values = word.astype(np.float64) * 2.0 ** -bits
    return values.astype(NP_FLOAT[type_name]).reshape(shape)


def rand_module(shape, seed, type_name, name="f"):
    if type_name == "bf16":
        t = "tensor<%sbf16>" % "".join("%dx" % d for d in shape)
        out = tensor(shape, np.float32)
        body = ["%%r = harp.rand seed(%d) : %s" % (seed, t),
                "%%e = harp.map_reduce ins(%%r : %s) {" % t,
                "^bb0(%v: bf16):",
                "  %x = arith.extf %v : bf16 to f32",
                "  harp.yield %x : f32",
                "} : %s" % out]
        return func(name, [], [("%e", out)], body)
    t = tensor(shape, NP_FLOAT[type_name])
    return func(name, [], [("%r", t)], ["%%r = harp.rand seed(%d) : %s" % (seed, t)])


HI_BITS_SEED = 0x123456789ABCDEF0  # high word 0x12345678, low word 0x9ABCDEF0
RAND_SEED_IDS = {0: "0", 1: "1", 42: "42", -1: "minus1", HI_BITS_SEED: "hi-bits"}
# Every seed on a 3-D shape, rank 0 and 1-D on some of them.
RAND_SEED_SHAPES = ([(s, (3, 5, 7)) for s in RAND_SEED_IDS]
                    + [(0, ()), (-1, ()), (42, (1000,)), (HI_BITS_SEED, (1000,))])
SHAPE_IDS = {(): "rank0", (1000,): "1d", (3, 5, 7): "3d"}
RAND_CASES = [
    pytest.param(t, s, shape, id="%s-%s-%s" % (t, RAND_SEED_IDS[s], SHAPE_IDS[shape]))
    for t in ("f16", "f32", "f64") for s, shape in RAND_SEED_SHAPES
] + [
    pytest.param("bf16", s, (3, 5, 7), id="bf16-%s-3d" % RAND_SEED_IDS[s])
    for s in RAND_SEED_IDS
]


@pytest.mark.parametrize("type_name, seed, shape", RAND_CASES)
def test_rand_exact(type_name, seed, shape):
    (got,) = run(rand_module(shape, seed, type_name))
    expected = philox_uniform(shape, seed, type_name)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert np.all(got >= 0) and np.all(got < 1)


@pytest.mark.parametrize("type_name", ["f16", "f32", "f64", "bf16"])
def test_rand_statistics(type_name):
    shape = (256, 256)  # 2**16 elements
    (got,) = run(rand_module(shape, 12345, type_name))
    values = got.astype(np.float64)
    assert np.all(values >= 0) and np.all(values < 1)
    assert abs(values.mean() - 0.5) < 0.01, values.mean()
    assert abs(values.var() - 1.0 / 12) < 0.01, values.var()
    np.testing.assert_array_equal(got, philox_uniform(shape, 12345, type_name))


def test_rand_seeds_differ():
    # 1 << 32 differs from 0 only in the seed's high word (mixed into x1).
    seeds = [0, 1, 2, 1 << 32, -1, HI_BITS_SEED, -(1 << 63)]
    results = [run(rand_module((64,), s, "f32"))[0] for s in seeds]
    for i in range(len(seeds)):
        for j in range(i + 1, len(seeds)):
            assert not np.array_equal(results[i], results[j]), (seeds[i], seeds[j])
            # Not merely a permutation or a shift: most elements differ.
            assert np.mean(results[i] != results[j]) > 0.9, (seeds[i], seeds[j])


def test_rand_same_seed_two_functions():
    # Element i depends only on (seed, row-major i): the same seed gives the
    # same numbers in two functions, whatever the shape.
    module = (rand_module((64,), 7, "f32", name="a")
              + func("b", [], [("%r", tensor((8, 8), np.float32)),
                               ("%q", tensor((8, 8), np.float32))],
                     ["%%r = harp.rand seed(7) : %s" % tensor((8, 8), np.float32),
                      "%%q = harp.rand seed(8) : %s" % tensor((8, 8), np.float32)]))
    (a,) = run(module, entry="a")
    b, q = run(module, entry="b")
    np.testing.assert_array_equal(a, b.reshape(64))
    np.testing.assert_array_equal(a, philox_uniform((64,), 7, "f32"))
    np.testing.assert_array_equal(q, philox_uniform((8, 8), 8, "f32"))
    assert not np.array_equal(b, q)


# ---------------------------------------------------------------------------
# harp.arange
# ---------------------------------------------------------------------------

def mlir_number(value, dtype):
    if np.issubdtype(np.dtype(dtype), np.floating):
        return "%.17e" % value
    return "%d" % value


ARANGE_CASES = [
    # (dtype, start, step, n)
    (np.int8, 0, 100, 3),        # 0, 100, 200: fits only read unsigned -> 0, 100, -56
    (np.int8, 10, -3, 4),
    (np.int8, -128, 1, 256),     # the whole signed range
    (np.int8, 0, 1, 256),        # the whole unsigned range
    (np.int8, 127, -1, 256),
    (np.int8, 200, 10, 5),       # start 200 : i8 is -56 read signed
    (np.int16, -5, 7, 10),
    (np.int32, 0, 1, 10),
    (np.int32, 5, -2, 10),
    (np.int32, -(1 << 31), 1 << 24, 256),
    (np.int32, 0, 1 << 24, 256),  # up to 2**32 - 2**24: unsigned only
    (np.int64, 0, 1, 10),
    (np.int64, 1 << 40, -3, 17),
    (np.int64, -7, 1 << 33, 5),
    (np.int64, 0, 1, 1),
    (np.float32, 1.0, 0.5, 4),
    (np.float32, 0.0, 0.1, 50),
    (np.float32, 3.0, -0.25, 20),
    (np.float32, -2.5, 1.0, 1),
    (np.float64, 0.0, 0.5, 9),
    (np.float64, 10.0, -0.1, 100),
    (np.float64, -1000.0, 12.5, 33),
    (np.float16, -2.0, 0.25, 16),
    (np.int32, 3, 2, 0),         # empty
    (np.float32, 3.0, 2.0, 0),
]


def arange_id(case):
    dtype, start, step, n = case
    return "%s-%s-%s-%d" % (dtype_id(dtype), start, step, n)


@pytest.mark.parametrize("dtype, start, step, n",
                         [pytest.param(*c, id=arange_id(c)) for c in ARANGE_CASES])
def test_arange(dtype, start, step, n):
    e, t = elt(dtype), tensor((n,), dtype)
    module = func("f", [], [("%a", t)], [
        "%%a = harp.arange start(%s : %s) step(%s : %s) : %s"
        % (mlir_number(start, dtype), e, mlir_number(step, dtype), e, t)])
    (got,) = run(module)
    if np.issubdtype(np.dtype(dtype), np.integer):
        # Exact, wrapping into the type like the hardware does.
        expected = np.arange(start, start + n * step, step, dtype=np.int64)[:n] if n else \
            np.zeros(0, dtype=np.int64)
        assert len(expected) == n
        expected = expected.astype(dtype)
        assert_close(got, expected)
    else:
        # start + i * step in the element type.
        i = np.arange(n).astype(dtype)
        expected = dtype(start) + i * dtype(step)
        assert_close(got, expected)
        assert_close(got, (start + np.arange(n) * step).astype(dtype))
        if step == 0.5 or step == 1.0:
            assert_close(got, np.arange(start, start + n * step, step, dtype=dtype))


def test_arange_i8_unsigned_reading():
    t = tensor((3,), np.int8)
    module = func("f", [], [("%a", t)], ["%%a = harp.arange start(0 : i8) step(100 : i8) : %s" % t])
    (got,) = run(module)
    assert got.dtype == np.int8
    assert got.tolist() == [0, 100, -56]


# ---------------------------------------------------------------------------
# harp.contiguous
# ---------------------------------------------------------------------------

def contiguous_source(kind, dtype, rng):
    """A (3, 4) value: (arg type, lines producing %v, input, expected)."""
    if kind == "plain":
        x = random((3, 4), dtype, rng)
        return tensor((3, 4), dtype), [], "%x", x, x
    if kind == "transpose":
        x = random((4, 3), dtype, rng)
        line = "%%view = harp.view %%x <(d0, d1) -> (d1, d0)> : %s -> %s" % (
            tensor((4, 3), dtype), tensor((3, 4), dtype))
        return tensor((4, 3), dtype), [line], "%view", x, np.ascontiguousarray(x.T)
    if kind == "pad":
        # (1, 2) -> (3, 4): one row of pad above and below, one column each side.
        x = random((1, 2), dtype, rng)
        line = ("%%view = harp.view %%x <(d0, d1) -> (d0 - 1, d1 - 1), "
                "mask_ge = (d0, d1) -> (d0 - 1, -d0 + 1, d1 - 1, -d1 + 2)> : %s -> %s"
                % (tensor((1, 2), dtype), tensor((3, 4), dtype)))
        expected = np.zeros((3, 4), dtype=dtype)
        expected[1:2, 1:3] = x
        return tensor((1, 2), dtype), [line], "%view", x, expected
    raise ValueError(kind)


# "both" returns the contiguous tensor directly and also feeds it to a
# map_reduce; "map_reduce" only feeds it.
@pytest.mark.parametrize("use", ["map_reduce", "both"])
@pytest.mark.parametrize("kind", ["plain", "transpose", "pad"])
@pytest.mark.parametrize("dtype", DTYPE_PARAMS)
def test_contiguous(dtype, kind, use):
    rng = np.random.default_rng(11)
    targ, lines, source, x, expected = contiguous_source(kind, dtype, rng)
    t = tensor((3, 4), dtype)
    body = lines + ["%%c = harp.contiguous %s : %s" % (source, t)]
    mr, ref = doubling_map_reduce("%m", "%c", (3, 4), dtype)
    results = []
    if use in ("return", "both"):
        results.append(("%c", t))
    if use in ("map_reduce", "both"):
        body += mr
        results.append(("%m", t))
    got = run(func("f", [("%x", targ)], results, body), x)
    if use in ("return", "both"):
        assert_close(got[0], expected)
    if use in ("map_reduce", "both"):
        assert_close(got[-1], ref(expected))


@pytest.mark.parametrize("dtype", DTYPE_PARAMS)
def test_contiguous_twice(dtype):
    # contiguous of contiguous (folded to one) of a transpose, and of a
    # constant (folded away).
    rng = np.random.default_rng(14)
    x = random((4, 3), dtype, rng)
    tx, t = tensor((4, 3), dtype), tensor((3, 4), dtype)
    if harptest.is_complex(dtype):
        const, cval = "dense<(1.5, -2.0)>", np.full((3, 4), 1.5 - 2j, dtype=dtype)
    elif harptest.is_bool(dtype):
        const, cval = "dense<true>", np.ones((3, 4), dtype=dtype)
    elif harptest.is_float(dtype):
        const, cval = "dense<1.5>", np.full((3, 4), 1.5, dtype=dtype)
    else:
        const, cval = "dense<-7>", np.full((3, 4), -7, dtype=dtype)
    body = ["%%v = harp.view %%x <(d0, d1) -> (d1, d0)> : %s -> %s" % (tx, t),
            "%%c1 = harp.contiguous %%v : %s" % t,
            "%%c2 = harp.contiguous %%c1 : %s" % t,
            "%%k = arith.constant %s : %s" % (const, t),
            "%%ck = harp.contiguous %%k : %s" % t]
    mr, ref = doubling_map_reduce("%m", "%c2", (3, 4), dtype)
    body += mr
    got = run(func("f", [("%x", tx)], [("%c2", t), ("%ck", t), ("%m", t)], body), x)
    assert_close(got[0], np.ascontiguousarray(x.T))
    assert_close(got[1], cval)
    assert_close(got[2], ref(np.ascontiguousarray(x.T)))
