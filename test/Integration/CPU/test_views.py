"""Executes every kind of harp.view through harp-run and compares with NumPy.

Every view kind has a core case run for every dtype of harptest.DTYPES (and
every pad value representable in it); further instances of a kind (a second
slice, another reshape, more compositions) run on EDGE_DTYPES. Each case is
checked in two ways that the lowering treats differently:

* "direct":  the view is the function's result, so it is materialised;
* "map":     the view feeds a harp.map_reduce that yields its element
             unchanged, which reads through the view without a copy;

and, for a subset of cases, a third:

* "combine": the view feeds a harp.map_reduce that combines it with a second
             operand (add for numbers, xor for i1).

The references are plain NumPy indexing (np.pad, slicing, np.tril, sliding
windows, reshape...), written without the affine maps, so the maps are what
is being checked. A view only moves data, so "direct" and "map" results are
compared exactly.

Run with: python3 -m pytest -q test/Integration/CPU/test_views.py
"""

import os
import sys
import zlib

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harptest  # noqa: E402
from harptest import elt, tensor  # noqa: E402

DTYPES = harptest.DTYPES
# Further instances of a view kind (a second slice, a third reshape...) run on
# these only: 32- and 64-bit, i1 and complex, as in test_data_movement.py.
EDGE_DTYPES = [np.dtype(d) for d in (np.float32, np.int64, np.bool_, np.complex64)]


# ---------------------------------------------------------------------------
# Dtype helpers
# ---------------------------------------------------------------------------

def kind(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "bool"
    if np.issubdtype(dtype, np.complexfloating):
        return "complex"
    if np.issubdtype(dtype, np.floating):
        return "float"
    return "int"


def pad_values(dtype):
    """Every pad spelling representable in `dtype`, with the value it reads."""
    k = kind(dtype)
    dtype = np.dtype(dtype)
    if k == "float":
        return [("zero", 0), ("one", 1), ("-inf", -np.inf), ("+inf", np.inf),
                ("-3", -3), ("0.5", 0.5), ("-2.5", -2.5), ("0.1", 0.1)]
    if k == "int":
        info = np.iinfo(dtype)
        unsigned_max = str(2 ** info.bits - 1)  # the unsigned reading of -1
        return [("zero", 0), ("one", 1), ("-inf", info.min), ("+inf", info.max),
                ("-7", -7), ("42", 42), (unsigned_max, -1)]
    if k == "bool":
        return [("0", False), ("1", True), ("zero", False), ("one", True),
                ("-inf", False), ("+inf", True)]
    return [("zero", 0), ("one", 1), ("0.5", 0.5), ("-3", -3)]


def pad_value(dtype, spelling):
    return dict(pad_values(dtype))[spelling]


def lowest_pad(dtype):
    """The max-pooling pad: -inf where representable, else (complex) one."""
    return "one" if kind(dtype) == "complex" else "-inf"


def fill(shape, dtype, value):
    return np.full(shape, value, dtype=dtype)


def np_pad(x, pads, spelling, dtype):
    return np.pad(x, pads, mode="constant",
                  constant_values=np.array(pad_value(dtype, spelling), dtype=dtype))


def masked(x, keep, spelling, dtype):
    """x where `keep`, else the pad value."""
    return np.where(keep, x, fill(x.shape, dtype, pad_value(dtype, spelling)))


def windows(x, kernel, stride, dilation):
    """Unfold the last len(kernel) axes of x into (windows..., kernel...)
    with NumPy's sliding windows: window w, tap k reads w*s + k*r."""
    n = len(kernel)
    axes = tuple(range(x.ndim - n, x.ndim))
    span = tuple(r * (k - 1) + 1 for k, r in zip(kernel, dilation))
    sw = sliding_window_view(x, span, axis=axes)
    index = ((slice(None),) * (x.ndim - n)
             + tuple(slice(None, None, s) for s in stride)
             + tuple(slice(None, None, r) for r in dilation))
    return sw[index]


def aff(dim, offset):
    if offset > 0:
        return "%s + %d" % (dim, offset)
    if offset < 0:
        return "%s - %d" % (dim, -offset)
    return dim


def pad_layout(in_shape, pads, spelling):
    """Layout (text) and result shape of padding `in_shape` by `pads`
    ((lo, hi) per dim) with the pad `spelling`."""
    dims = ["d%d" % i for i in range(len(in_shape))]
    hdr = "(%s)" % ", ".join(dims)
    srcs, cons = [], []
    for d, n, (lo, hi) in zip(dims, in_shape, pads):
        srcs.append(aff(d, -lo))
        if lo:
            cons.append(aff(d, -lo))
        if hi:
            cons.append(aff("-" + d, n - 1 + lo))
    out = tuple(n + lo + hi for n, (lo, hi) in zip(in_shape, pads))
    layout = "%s -> (%s), mask_ge = %s -> (%s)" % (hdr, ", ".join(srcs), hdr, ", ".join(cons))
    if spelling != "zero":
        layout += ", pad = %s" % spelling
    return layout, out


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

class Spec:
    """One input of `in_shape` (0-d: see build_module), a chain of views
    [(layout, result shape)], the NumPy reference, and whether the case is
    also checked combined with a second operand."""

    def __init__(self, in_shape, views, ref, combine=False, core=True):
        self.in_shape = tuple(in_shape)
        self.views = [(layout, tuple(shape)) for layout, shape in views]
        self.ref = ref
        self.combine = combine
        self.core = core

    @property
    def out_shape(self):
        return self.views[-1][1]


GENERATORS = []


def cases(fn):
    """fn(dtype) yields (name, Spec) pairs."""
    GENERATORS.append(fn)
    return fn


def simple(name, in_shape, views, ref, combine=False, core=True):
    """A case that is the same for every dtype."""
    @cases
    def gen(dtype):
        yield name, Spec(in_shape, views, ref, combine, core)
    return gen


def variant(name, in_shape, views, ref):
    """A further instance of a view kind that a core case already checks on
    every dtype: checked on EDGE_DTYPES only, to keep the run short."""
    return simple(name, in_shape, views, ref, core=False)


# --- transpose and permute -------------------------------------------------

simple("transpose", (3, 4), [("(d0, d1) -> (d1, d0)", (4, 3))],
       lambda x: x.T, combine=True)
simple("permute_last_first", (2, 3, 4), [("(d0, d1, d2) -> (d1, d2, d0)", (4, 2, 3))],
       lambda x: np.moveaxis(x, 2, 0))
variant("permute_first_last", (2, 3, 4), [("(d0, d1, d2) -> (d2, d0, d1)", (3, 4, 2))],
        lambda x: np.moveaxis(x, 0, 2))

# --- broadcast ---------------------------------------------------------------

simple("broadcast_0d", (), [("(d0, d1) -> ()", (2, 3))],
       lambda x: np.broadcast_to(x, (2, 3)), combine=True)
simple("broadcast_leading", (4,), [("(d0, d1, d2) -> (d2)", (2, 3, 4))],
       lambda x: np.broadcast_to(x, (2, 3, 4)))
simple("broadcast_leading_and_middle", (3, 4), [("(d0, d1, d2, d3) -> (d1, d3)", (2, 3, 5, 4))],
       lambda x: np.broadcast_to(x[None, :, None, :], (2, 3, 5, 4)))
simple("broadcast_expand_middle", (3, 1, 4), [("(d0, d1, d2) -> (d0, 0, d2)", (3, 5, 4))],
       lambda x: np.broadcast_to(x, (3, 5, 4)))
variant("broadcast_0d_to_1d", (), [("(d0) -> ()", (5,))],
        lambda x: np.broadcast_to(x, (5,)))

# --- reshape -----------------------------------------------------------------

simple("reshape_3x4_to_2x6_to_4x3", (3, 4),
       [("(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)", (2, 6)),
        ("(d0, d1) -> ((d0 * 3 + d1) floordiv 6, (d0 * 3 + d1) mod 6)", (4, 3))],
       lambda x: x.reshape(4, 3), combine=True)
simple("flatten_2x3x4", (2, 3, 4),
       [("(d0) -> (d0 floordiv 12, (d0 floordiv 4) mod 3, d0 mod 4)", (24,))],
       lambda x: x.reshape(24))
simple("unflatten_24", (24,),
       [("(d0, d1, d2) -> (d0 * 12 + d1 * 4 + d2)", (2, 3, 4))],
       lambda x: x.reshape(2, 3, 4))
variant("reshape_4x6_to_3x2x4", (4, 6),
        [("(d0, d1, d2) -> ((d0 * 8 + d1 * 4 + d2) floordiv 6, (d0 * 8 + d1 * 4 + d2) mod 6)",
          (3, 2, 4))],
        lambda x: x.reshape(3, 2, 4))

# --- squeeze / unsqueeze -----------------------------------------------------

simple("squeeze_middle", (3, 1, 4), [("(d0, d1) -> (d0, 0, d1)", (3, 4))],
       lambda x: np.squeeze(x, 1))
simple("unsqueeze_middle", (3, 4), [("(d0, d1, d2) -> (d0, d2)", (3, 1, 4))],
       lambda x: np.expand_dims(x, 1))
variant("squeeze_to_0d", (1, 1), [("() -> (0, 0)", ())],
        lambda x: x.reshape(()))

# --- slice and flip ----------------------------------------------------------

simple("slice_steps_10x8", (10, 8), [("(d0, d1) -> (d0 * 2 + 1, d1 * 3 + 2)", (4, 2))],
       lambda x: x[1:9:2, 2:8:3], combine=True)
variant("slice_steps_7x9", (7, 9), [("(d0, d1) -> (d0 * 3, d1 * 2 + 1)", (3, 4))],
        lambda x: x[0:7:3, 1:9:2])
variant("slice_3d", (4, 4, 7), [("(d0, d1, d2) -> (d0 * 2, d1 + 1, d2 * 3)", (2, 2, 3))],
        lambda x: x[::2, 1:3, ::3])
variant("slice_negative_step", (10,), [("(d0) -> (d0 * -3 + 8)", (3,))],
        lambda x: x[8:1:-3])
variant("slice_element_to_0d", (3, 4), [("() -> (2, 1)", ())],
        lambda x: x[2, 1])
simple("flip_both", (5, 3), [("(d0, d1) -> (-d0 + 4, -d1 + 2)", (5, 3))],
       lambda x: x[::-1, ::-1])
variant("flip_dim0", (5, 3), [("(d0, d1) -> (-d0 + 4, d1)", (5, 3))],
        lambda x: np.flip(x, 0))
variant("flip_3d_middle", (2, 3, 4), [("(d0, d1, d2) -> (d0, 2 - d1, d2)", (2, 3, 4))],
        lambda x: np.flip(x, 1))


# --- pad -----------------------------------------------------------------------

@cases
def pad_cases(dtype):
    """Every representable pad value, on a 1-D and an asymmetric 2-D pad."""
    for spelling, _ in pad_values(dtype):
        tag = spelling.replace("+", "p").replace("-", "m").replace(".", "_")
        layout, out = pad_layout((4,), [(1, 1)], spelling)
        yield ("pad1d_%s" % tag,
               Spec((4,), [(layout, out)],
                    lambda x, s=spelling: np_pad(x, [(1, 1)], s, dtype)))
        pads = [(2, 1), (0, 3)]
        layout, out = pad_layout((3, 4), pads, spelling)
        yield ("pad2d_%s" % tag,
               Spec((3, 4), [(layout, out)],
                    lambda x, s=spelling, p=pads: np_pad(x, p, s, dtype),
                    combine=(spelling == "one")))
    pads3 = [(0, 0), (1, 1), (2, 0)]
    layout, out = pad_layout((2, 3, 2), pads3, "zero")
    yield "pad3d_zero", Spec((2, 3, 2), [(layout, out)],
                             lambda x: np_pad(x, pads3, "zero", dtype), core=False)


# --- unfold ----------------------------------------------------------------------

simple("unfold1d_k3_s2_r2", (10,), [("(d0, d1) -> (d0 * 2 + d1 * 2)", (3, 3))],
       lambda x: windows(x, (3,), (2,), (2,)))
variant("unfold1d_k2_s3", (9,), [("(d0, d1) -> (d0 * 3 + d1)", (3, 2))],
        lambda x: windows(x, (2,), (3,), (1,)))
variant("unfold1d_k3_r3", (11,), [("(d0, d1) -> (d0 + d1 * 3)", (5, 3))],
        lambda x: windows(x, (3,), (1,), (3,)))
# im2col of a 5x6 image, kernel 2x3, stride (2, 1), dilation (1, 2): 2x2 windows.
simple("unfold2d_5x6", (5, 6),
       [("(d0, d1, d2, d3) -> (d0 * 2 + d2, d1 + d3 * 2)", (2, 2, 2, 3))],
       lambda x: windows(x, (2, 3), (2, 1), (1, 2)), combine=True)
# The same as an im2col matrix (windows x taps), as two views and as one.
variant("unfold2d_5x6_then_flatten", (5, 6),
        [("(d0, d1, d2, d3) -> (d0 * 2 + d2, d1 + d3 * 2)", (2, 2, 2, 3)),
         ("(d0, d1) -> (d0 floordiv 2, d0 mod 2, d1 floordiv 3, d1 mod 3)", (4, 6))],
        lambda x: windows(x, (2, 3), (2, 1), (1, 2)).reshape(4, 6))
variant("im2col_5x6_one_view", (5, 6),
        [("(d0, d1) -> ((d0 floordiv 2) * 2 + d1 floordiv 3, d0 mod 2 + (d1 mod 3) * 2)", (4, 6))],
        lambda x: windows(x, (2, 3), (2, 1), (1, 2)).reshape(4, 6))


# --- triangular and equality masks -------------------------------------------------

simple("tril", (4, 4), [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1)", (4, 4))],
       lambda x: np.tril(x))
simple("triu", (4, 4), [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d1 - d0)", (4, 4))],
       lambda x: np.triu(x))
simple("tril_k1_3x5", (3, 5),
       [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1 + 1)", (3, 5))],
       lambda x: np.tril(x, 1))
simple("triu_km1_5x3", (5, 3),
       [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d1 - d0 + 1)", (5, 3))],
       lambda x: np.triu(x, -1))
variant("triu_k2_4x6", (4, 6),
        [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d1 - d0 - 2)", (4, 6))],
        lambda x: np.triu(x, 2))


@cases
def masked_pad_cases(dtype):
    low = lowest_pad(dtype)
    # Causal attention mask: tril with -inf (for complex, which has no -inf: one).
    yield "causal_%s" % ("minf" if low == "-inf" else low), Spec(
        (4, 4), [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1), pad = %s" % low, (4, 4))],
        lambda x: masked(x, np.tril(np.ones((4, 4), bool)), low, dtype), combine=True)
    if kind(dtype) != "complex":
        yield "triu_k1_pinf", Spec(
            (3, 4), [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d1 - d0 - 1), pad = +inf", (3, 4))],
            lambda x: masked(x, np.triu(np.ones((3, 4), bool), 1), "+inf", dtype), core=False)
    yield "diag_eq_one", Spec(
        (4, 4), [("(d0, d1) -> (d0, d1), mask_eq = (d0, d1) -> (d0 - d1), pad = one", (4, 4))],
        lambda x: masked(x, np.eye(4, dtype=bool), "one", dtype), core=False)


def zero_insert(x, n, step, start=0):
    out = np.zeros((n,), dtype=x.dtype)
    out[start::step] = x
    return out


def zero_insert_2d(x):
    out = np.zeros((5, 5), dtype=x.dtype)
    out[::2, ::2] = x
    return out


simple("diag_eq", (4, 4), [("(d0, d1) -> (d0, d1), mask_eq = (d0, d1) -> (d0 - d1)", (4, 4))],
       lambda x: np.diag(np.diag(x)))
simple("zero_insert_8", (4,), [("(d0) -> (d0 floordiv 2), mask_eq = (d0) -> (d0 mod 2)", (8,))],
       lambda x: zero_insert(x, 8, 2))
simple("zero_insert_2d", (3, 3),
       [("(d0, d1) -> (d0 floordiv 2, d1 floordiv 2), mask_eq = (d0, d1) -> (d0 mod 2, d1 mod 2)",
         (5, 5))],
       zero_insert_2d, combine=True)
variant("zero_insert_stride3", (3,), [("(d0) -> (d0 floordiv 3), mask_eq = (d0) -> (d0 mod 3)", (7,))],
        lambda x: zero_insert(x, 7, 3))
variant("zero_insert_ge_and_eq", (4,),
        [("(d0) -> (d0 floordiv 2 - 1), mask_ge = (d0) -> (d0 - 2), mask_eq = (d0) -> (d0 mod 2)",
          (9,))],
        lambda x: zero_insert(x, 9, 2, start=2))
variant("ceildiv_repeat", (4,), [("(d0) -> (d0 ceildiv 2)", (7,))],
        lambda x: np.concatenate([x[:1], np.repeat(x[1:], 2)]))


# --- compositions ------------------------------------------------------------------


@cases
def composition_cases(dtype):
    low = lowest_pad(dtype)

    # 1-D max pooling windows: pad 1 with -inf, kernel 3, stride 2.
    layout, out = pad_layout((6,), [(1, 1)], low)
    yield "pad_then_unfold1d", Spec(
        (6,), [(layout, out), ("(d0, d1) -> (d0 * 2 + d1)", (3, 3))],
        lambda x: windows(np_pad(x, [(1, 1)], low, dtype), (3,), (2,), (1,)), combine=True)

    # Padded convolution im2col: 4x5 image, zero pad 1, kernel 3x3, stride 2.
    pads = [(1, 1), (1, 1)]
    layout, out = pad_layout((4, 5), pads, "zero")
    unfold = ("(d0, d1, d2, d3) -> (d0 * 2 + d2, d1 * 2 + d3)", (2, 3, 3, 3))
    yield "pad_then_unfold2d", Spec(
        (4, 5), [(layout, out), unfold],
        lambda x: windows(np_pad(x, pads, "zero", dtype), (3, 3), (2, 2), (1, 1)))
    yield "pad_then_unfold2d_then_flatten", Spec(
        (4, 5), [(layout, out), unfold,
                 ("(d0, d1) -> (d0 floordiv 3, d0 mod 3, d1 floordiv 3, d1 mod 3)", (6, 9))],
        lambda x: windows(np_pad(x, pads, "zero", dtype), (3, 3), (2, 2), (1, 1)).reshape(6, 9),
        core=False)

    # Dilated: 3x3 image padded by 2 with `one`, kernel 2x2, dilation 2.
    pads2 = [(2, 2), (2, 2)]
    layout2, out2 = pad_layout((3, 3), pads2, "one")
    yield "pad_one_then_unfold2d_dilated", Spec(
        (3, 3), [(layout2, out2), ("(d0, d1, d2, d3) -> (d0 + d2 * 2, d1 + d3 * 2)", (5, 5, 2, 2))],
        lambda x: windows(np_pad(x, pads2, "one", dtype), (2, 2), (1, 1), (2, 2)), core=False)

    # Transposed convolution input: zero insertion, pad 2, windows of 3.
    layout3, out3 = pad_layout((7,), [(2, 2)], "zero")
    yield "zero_insert_pad_unfold", Spec(
        (4,), [("(d0) -> (d0 floordiv 2), mask_eq = (d0) -> (d0 mod 2)", (7,)),
               (layout3, out3), ("(d0, d1) -> (d0 + d1)", (9, 3))],
        lambda x: windows(np.pad(zero_insert(x, 7, 2), 2), (3,), (1,), (1,)), core=False)

    # Two stacked pads with different values stay two views.
    pairs = [("zero", "one")]
    if kind(dtype) != "complex":
        pairs.append(("-inf", "+inf"))
    else:
        pairs.append(("one", "0.5"))
    for i, (a, b) in enumerate(pairs):
        la, oa = pad_layout((4,), [(1, 1)], a)
        lb, ob = pad_layout(oa, [(1, 1)], b)
        yield "two_pads1d_%d" % i, Spec(
            (4,), [(la, oa), (lb, ob)],
            lambda x, a=a, b=b: np_pad(np_pad(x, [(1, 1)], a, dtype), [(1, 1)], b, dtype),
            combine=(i == 0), core=(i == 0))
    # On different dims: rows padded with zero, then columns with one.
    pa, pb = [(1, 0), (0, 0)], [(0, 0), (1, 2)]
    la, oa = pad_layout((2, 3), pa, "zero")
    lb, ob = pad_layout(oa, pb, "one")
    yield "two_pads2d", Spec(
        (2, 3), [(la, oa), (lb, ob)],
        lambda x: np_pad(np_pad(x, pa, "zero", dtype), pb, "one", dtype))
    # Two equal pads compose into one view.
    la, oa = pad_layout((4,), [(1, 2)], "one")
    lb, ob = pad_layout(oa, [(2, 1)], "one")
    yield "two_equal_pads", Spec(
        (4,), [(la, oa), (lb, ob)],
        lambda x: np_pad(np_pad(x, [(1, 2)], "one", dtype), [(2, 1)], "one", dtype), core=False)

    # Slice of a pad: pad 2 on both sides with `one`, then every third element from 1.
    la, oa = pad_layout((4,), [(2, 2)], "one")
    yield "pad_then_slice", Spec(
        (4,), [(la, oa), ("(d0) -> (d0 * 3 + 1)", (3,))],
        lambda x: np_pad(x, [(2, 2)], "one", dtype)[1::3], core=False)
    # Flip of an asymmetric pad, and pad of a flip.
    la, oa = pad_layout((4, 2), [(1, 3), (0, 1)], low)
    yield "pad_then_flip", Spec(
        (4, 2), [(la, oa), ("(d0, d1) -> (-d0 + 7, d1)", oa)],
        lambda x: np.flip(np_pad(x, [(1, 3), (0, 1)], low, dtype), 0), core=False)
    yield "flip_then_pad", Spec(
        (4, 2), [("(d0, d1) -> (-d0 + 3, -d1 + 1)", (4, 2)), (la, oa)],
        lambda x: np_pad(x[::-1, ::-1], [(1, 3), (0, 1)], low, dtype), core=False)
    # A causal (-inf) mask, then a zero pad: different pads, two views.
    lp, op = pad_layout((3, 3), [(1, 1), (1, 1)], "zero")
    yield "causal_then_zero_pad", Spec(
        (3, 3), [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1), pad = %s" % low, (3, 3)),
                 (lp, op)],
        lambda x: np.pad(masked(x, np.tril(np.ones((3, 3), bool)), low, dtype), 1), core=False)
    # Broadcast, then pad.
    lp, op = pad_layout((3, 4), [(0, 0), (1, 1)], "one")
    yield "broadcast_then_pad", Spec(
        (4,), [("(d0, d1) -> (d1)", (3, 4)), (lp, op)],
        lambda x: np_pad(np.broadcast_to(x, (3, 4)), [(0, 0), (1, 1)], "one", dtype), core=False)


simple("transpose_slice_flip", (8, 6),
       [("(d0, d1) -> (d1, d0)", (6, 8)),
        ("(d0, d1) -> (d0 * 2, d1 + 4)", (3, 4)),
        ("(d0, d1) -> (-d0 + 2, -d1 + 3)", (3, 4))],
       lambda x: x.T[0:6:2, 4:8][::-1, ::-1], combine=True)
simple("reshape_roundtrip", (2, 6),
       [("(d0, d1) -> ((d0 * 4 + d1) floordiv 6, (d0 * 4 + d1) mod 6)", (3, 4)),
        ("(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)", (2, 6))],
       lambda x: x.copy())
simple("flatten_unflatten", (2, 3, 4),
       [("(d0) -> (d0 floordiv 12, (d0 floordiv 4) mod 3, d0 mod 4)", (24,)),
        ("(d0, d1, d2) -> (d0 * 12 + d1 * 4 + d2)", (2, 3, 4))],
       lambda x: x.copy())
variant("reshape_then_transpose", (3, 4),
        [("(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)", (2, 6)),
         ("(d0, d1) -> (d1, d0)", (6, 2))],
        lambda x: x.reshape(2, 6).T)
variant("flatten_then_unfold", (2, 6),
        [("(d0) -> (d0 floordiv 6, d0 mod 6)", (12,)),
         ("(d0, d1) -> (d0 * 2 + d1)", (5, 4))],
        lambda x: windows(x.reshape(12), (4,), (2,), (1,)))
variant("tril_then_transpose", (4, 4),
        [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1)", (4, 4)),
         ("(d0, d1) -> (d1, d0)", (4, 4))],
        lambda x: np.tril(x).T)
variant("tril_then_triu_band", (5, 5),
        [("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1 + 1)", (5, 5)),
         ("(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d1 - d0 + 1)", (5, 5))],
        lambda x: np.triu(np.tril(x, 1), -1))
variant("slice_then_squeeze", (3, 4),
        [("(d0, d1) -> (d0 + 1, d1)", (1, 4)), ("(d0) -> (0, d0)", (4,))],
        lambda x: x[1:2][0])


# ---------------------------------------------------------------------------
# Module construction and the test
# ---------------------------------------------------------------------------

COMBINE_OPS = {"float": "arith.addf", "int": "arith.addi", "bool": "arith.xori",
               "complex": "complex.add"}


def combine_ref(a, b):
    if a.dtype == np.bool_:
        return np.logical_xor(a, b)
    return (a + b).astype(a.dtype)


def build_module(spec, dtype, mode):
    e = elt(dtype)
    args, body = [], []
    if spec.in_shape == ():
        # harptest.run saves inputs with np.ascontiguousarray, which turns a
        # 0-d array into shape (1,); take a 1-element tensor and make a real
        # 0-d tensor of it (contiguous keeps the views from composing).
        args.append("%%x1: %s" % tensor((1,), dtype))
        body.append("%%x0 = harp.view %%x1 <() -> (0)> : %s -> %s"
                    % (tensor((1,), dtype), tensor((), dtype)))
        body.append("%%x = harp.contiguous %%x0 : %s" % tensor((), dtype))
    else:
        args.append("%%x: %s" % tensor(spec.in_shape, dtype))
    cur, shape = "%x", spec.in_shape
    for i, (layout, out) in enumerate(spec.views):
        body.append("%%v%d = harp.view %s <%s> : %s -> %s"
                    % (i, cur, layout, tensor(shape, dtype), tensor(out, dtype)))
        cur, shape = "%%v%d" % i, out
    t = tensor(shape, dtype)
    if mode == "map":
        body += ["%%r = harp.map_reduce ins(%s : %s) {" % (cur, t),
                 "^bb0(%%a: %s):" % e,
                 "  harp.yield %%a : %s" % e,
                 "} : %s" % t]
        cur = "%r"
    elif mode == "combine":
        args.append("%%y: %s" % t)
        body += ["%%r = harp.map_reduce ins(%s, %%y : %s, %s) {" % (cur, t, t),
                 "^bb0(%%a: %s, %%b: %s):" % (e, e),
                 "  %%s = %s %%a, %%b : %s" % (COMBINE_OPS[kind(dtype)], e),
                 "  harp.yield %%s : %s" % e,
                 "} : %s" % t]
        cur = "%r"
    body.append("return %s : %s" % (cur, t))
    return ("func.func @f(%s) -> %s {\n" % (", ".join(args), t)
            + "".join("  %s\n" % line for line in body) + "}\n")


def random_input(shape, dtype, rng):
    # Integers from a wide range so that reading a wrong element is visible.
    if kind(dtype) == "int":
        return harptest.random(shape, dtype, rng, low=-1000, high=1000)
    return harptest.random(shape, dtype, rng)


def dtype_id(dtype):
    return elt(dtype).replace("<", "").replace(">", "")


def collect():
    params = []
    for gen in GENERATORS:
        for dtype in DTYPES:
            for name, spec in gen(dtype):
                if not spec.core and np.dtype(dtype) not in EDGE_DTYPES:
                    continue
                modes = ["direct", "map"] + (["combine"] if spec.combine else [])
                for mode in modes:
                    params.append(pytest.param(
                        name, spec, dtype, mode,
                        id="%s-%s-%s" % (name, dtype_id(dtype), mode)))
    ids = [p.id for p in params]
    assert len(ids) == len(set(ids)), "duplicate case names"
    return params


@pytest.mark.parametrize("name,spec,dtype,mode", collect())
def test_view(name, spec, dtype, mode):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(zlib.crc32(("%s-%s" % (name, dtype)).encode()))
    x = random_input(spec.in_shape, dtype, rng)
    expected = np.asarray(spec.ref(x)).astype(dtype)
    assert expected.shape == spec.out_shape, (expected.shape, spec.out_shape)
    inputs = [x.reshape((1,)) if x.ndim == 0 else x]
    if mode == "combine":
        y = random_input(spec.out_shape, dtype, rng)
        inputs.append(y)
        expected = combine_ref(expected, y)
    module = build_module(spec, dtype, mode)
    (actual,) = harptest.run(module, *inputs)
    if mode == "combine":
        harptest.assert_close(actual, expected)
    else:
        # A view copies elements: exact, pads included.
        harptest.assert_close(actual, expected, rtol=0, atol=0)
