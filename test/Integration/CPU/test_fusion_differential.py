"""Fusion must not change results: a corpus of graphs (MLP layers, softmax,
layer norm, convolution, causal attention scores, broadcast-heavy
expressions, chains through every view kind) runs through harp-run with
fusion on and off; both must match each other and a NumPy reference."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harptest as h  # noqa: E402


def mr(name, ins, body, out, reduce=None, types=None):
    """One harp.map_reduce line block. `ins` are (value, type) pairs; `body`
    uses %a0, %a1, ... and defines %r of element type `out[1]`."""
    vals = ", ".join(v for v, _ in ins)
    tys = ", ".join(t for _, t in ins)
    args = ", ".join("%%a%d: %s" % (i, types[i] if types else "f32")
                     for i in range(len(ins)))
    head = "  %s = harp.map_reduce ins(%s : %s) {\n  ^bb0(%s):\n" % (name, vals, tys, args) if ins \
        else "  %s = harp.map_reduce {\n" % name
    red = " reduce(%s)" % reduce if reduce else ""
    return head + "    " + body.replace("\n", "\n    ") + "\n    harp.yield %%r : %s\n  }%s : %s\n" % (
        out[1], red, out[0])


def T(*shape, e="f32"):
    return h.tensor(shape, {"f32": np.float32, "f64": np.float64}[e])


def func(args, body, result):
    sig = ", ".join("%%%s: %s" % (n, t) for n, t in args)
    return "func.func @main(%s) -> %s {\n%s  return %s : %s\n}\n" % (
        sig, result[1], body, result[0], result[1])


# Each case: (name, module text, inputs, numpy reference).
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def linear_relu(m, k, n, relu=True, seed=0):
    rng = np.random.default_rng(seed)
    x, w, b = rng.normal(size=(m, k)), rng.normal(size=(k, n)) / 4, rng.normal(size=n)
    body = ("  %%xb = harp.view %%x <(i, j, l) -> (i, l)> : %s -> %s\n"
            "  %%wb = harp.view %%w <(i, j, l) -> (l, j)> : %s -> %s\n") % (
        T(m, k), T(m, n, k), T(k, n), T(m, n, k))
    body += mr("%mm", [("%xb", T(m, n, k)), ("%wb", T(m, n, k))],
               "%r = arith.mulf %a0, %a1 : f32", (T(m, n), "f32"), "sum, dims = [2]")
    body += "  %%bb = harp.view %%b <(i, j) -> (j)> : %s -> %s\n" % (T(n), T(m, n))
    act = "%s = arith.addf %a0, %a1 : f32\n%z = arith.constant 0.0 : f32\n%r = arith.maximumf %s, %z : f32" \
        if relu else "%r = arith.addf %a0, %a1 : f32"
    body += mr("%y", [("%mm", T(m, n)), ("%bb", T(m, n))], act, (T(m, n), "f32"))
    module = func([("x", T(m, k)), ("w", T(k, n)), ("b", T(n))], body, ("%y", T(m, n)))
    ref = x @ w + b
    if relu:
        ref = np.maximum(ref, 0)
    return module, [x.astype(np.float32), w.astype(np.float32), b.astype(np.float32)], ref


for i, (m, k, n, relu) in enumerate([(4, 8, 3, True), (16, 32, 8, True), (1, 5, 7, False),
                                     (9, 3, 12, True), (32, 64, 16, False)]):
    CASES.append(("linear_relu_%dx%dx%d" % (m, k, n),
                  lambda m=m, k=k, n=n, relu=relu, i=i: linear_relu(m, k, n, relu, i)))


def softmax(rows, cols, seed):
    x = np.random.default_rng(seed).normal(size=(rows, cols)) * 3
    t, v = T(rows, cols), T(rows)
    # max(-(-x)): a region with work before the reduction.
    body = mr("%m", [("%x", t)], "%n = arith.negf %a0 : f32\n%r = arith.negf %n : f32",
              (v, "f32"), "max, dims = [1]")
    body += "  %%mb = harp.view %%m <(i, j) -> (i)> : %s -> %s\n" % (v, t)
    body += mr("%e", [("%x", t), ("%mb", t)], "%d = arith.subf %a0, %a1 : f32\n%r = math.exp %d : f32", (t, "f32"))
    body += mr("%s", [("%e", t)], "%r = arith.addf %a0, %a0 : f32", (v, "f32"), "sum, dims = [1]")
    body += "  %%sb = harp.view %%s <(i, j) -> (i)> : %s -> %s\n" % (v, t)
    body += mr("%y", [("%e", t), ("%sb", t)],
               "%two = arith.constant 2.0 : f32\n%q = arith.divf %a0, %a1 : f32\n%r = arith.mulf %q, %two : f32",
               (t, "f32"))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return func([("x", t)], body, ("%y", t)), [x.astype(np.float32)], e / e.sum(axis=1, keepdims=True)


for i, (r, c) in enumerate([(4, 10), (16, 33), (1, 128), (64, 7)]):
    CASES.append(("softmax_%dx%d" % (r, c), lambda r=r, c=c, i=i: softmax(r, c, i)))


def layer_norm(rows, cols, seed):
    rng = np.random.default_rng(seed)
    x, g, b = rng.normal(size=(rows, cols)) * 2 + 1, rng.normal(size=cols), rng.normal(size=cols)
    t, v, c = T(rows, cols), T(rows), T(cols)
    inv = "%%n = arith.constant %.17g : f32" % (1.0 / cols)
    body = mr("%s", [("%x", t)], "%r = arith.addf %a0, %a0 : f32", (v, "f32"), "sum, dims = [1]")
    body += mr("%mean", [("%s", v)], inv + "\n%h = arith.constant 0.5 : f32\n%m = arith.mulf %a0, %n : f32\n%r = arith.mulf %m, %h : f32", (v, "f32"))
    body += "  %%mb = harp.view %%mean <(i, j) -> (i)> : %s -> %s\n" % (v, t)
    body += mr("%xc", [("%x", t), ("%mb", t)], "%r = arith.subf %a0, %a1 : f32", (t, "f32"))
    body += mr("%ss", [("%xc", t)], "%r = arith.mulf %a0, %a0 : f32", (v, "f32"), "sum, dims = [1]")
    body += mr("%rstd", [("%ss", v)], inv + "\n%eps = arith.constant 1.0e-5 : f32\n%m = arith.mulf %a0, %n : f32\n%e = arith.addf %m, %eps : f32\n%r = math.rsqrt %e : f32", (v, "f32"))
    body += "  %%rb = harp.view %%rstd <(i, j) -> (i)> : %s -> %s\n" % (v, t)
    body += "  %%gb = harp.view %%g <(i, j) -> (j)> : %s -> %s\n" % (c, t)
    body += "  %%bb = harp.view %%b <(i, j) -> (j)> : %s -> %s\n" % (c, t)
    body += mr("%y", [("%xc", t), ("%rb", t), ("%gb", t), ("%bb", t)],
               "%n1 = arith.mulf %a0, %a1 : f32\n%s1 = arith.mulf %n1, %a2 : f32\n%r = arith.addf %s1, %a3 : f32", (t, "f32"))
    module = func([("x", t), ("g", c), ("b", c)], body, ("%y", t))
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return module, [a.astype(np.float32) for a in (x, g, b)], (x - mu) / np.sqrt(var + 1e-5) * g + b


for i, (r, c) in enumerate([(4, 16), (8, 32), (3, 100), (1, 7)]):
    CASES.append(("layer_norm_%dx%d" % (r, c), lambda r=r, c=c, i=i: layer_norm(r, c, i)))


def conv_relu(n, c, hgt, wid, f, k, pad, stride, seed):
    rng = np.random.default_rng(seed)
    x, w, b = rng.normal(size=(n, c, hgt, wid)), rng.normal(size=(f, c, k, k)) / 3, rng.normal(size=f)
    oh, ow = (hgt + 2 * pad - k) // stride + 1, (wid + 2 * pad - k) // stride + 1
    tx, tp = T(n, c, hgt, wid), T(n, c, hgt + 2 * pad, wid + 2 * pad)
    tu, td = T(n, c, oh, ow, k, k), T(n, f, oh, ow, c, k, k)
    ty = T(n, f, oh, ow)
    # The input goes through an element-wise scale first (fused into the conv
    # through pad, unfold and broadcast views).
    body = mr("%xs", [("%x", tx)], "%k = arith.constant 0.5 : f32\n%r = arith.mulf %a0, %k : f32", (tx, "f32"))
    body += ("  %%xp = harp.view %%xs <(a, b, c, d) -> (a, b, c - %d, d - %d), mask_ge = (a, b, c, d) -> "
             "(c - %d, -c + %d, d - %d, -d + %d)> : %s -> %s\n") % (pad, pad, pad, hgt - 1 + pad, pad, wid - 1 + pad, tx, tp)
    body += "  %%u = harp.view %%xp <(a, b, c, d, e, g) -> (a, b, c * %d + e, d * %d + g)> : %s -> %s\n" % (stride, stride, tp, tu)
    body += "  %%xb = harp.view %%u <(a, b, c, d, e, g, l) -> (a, e, c, d, g, l)> : %s -> %s\n" % (tu, td)
    body += "  %%wb = harp.view %%w <(a, b, c, d, e, g, l) -> (b, e, g, l)> : %s -> %s\n" % (T(f, c, k, k), td)
    body += mr("%y", [("%xb", td), ("%wb", td)], "%r = arith.mulf %a0, %a1 : f32", (ty, "f32"), "sum, dims = [4, 5, 6]")
    body += "  %%bb = harp.view %%b <(a, b, c, d) -> (b)> : %s -> %s\n" % (T(f), ty)
    body += mr("%z", [("%y", ty), ("%bb", ty)], "%s = arith.addf %a0, %a1 : f32\n%zero = arith.constant 0.0 : f32\n%r = arith.maximumf %s, %zero : f32", (ty, "f32"))
    module = func([("x", tx), ("w", T(f, c, k, k)), ("b", T(f))], body, ("%z", ty))
    xp = np.pad(0.5 * x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ref = np.zeros((n, f, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            ref[:, :, i, j] = np.einsum("ncab,fcab->nf", win, w)
    ref = np.maximum(ref + b[None, :, None, None], 0)
    return module, [a.astype(np.float32) for a in (x, w, b)], ref


for i, args in enumerate([(1, 2, 6, 6, 3, 3, 1, 1), (2, 3, 7, 5, 4, 3, 0, 1), (1, 1, 9, 9, 2, 3, 2, 2),
                          (1, 4, 5, 5, 2, 1, 0, 1), (2, 2, 8, 8, 3, 3, 1, 3)]):
    CASES.append(("conv_relu_%d" % i, lambda args=args, i=i: conv_relu(*args, i)))


def causal_attention_scores(s, d, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(s, d)), rng.normal(size=(s, d))
    tq, tsd, ts = T(s, d), T(s, s, d), T(s, s)
    scale = 1.0 / np.sqrt(d)
    body = "  %%qb = harp.view %%qin <(i, j, l) -> (i, l)> : %s -> %s\n" % (tq, tsd)
    body += "  %%kb = harp.view %%kin <(i, j, l) -> (j, l)> : %s -> %s\n" % (tq, tsd)
    body += mr("%sc", [("%qb", tsd), ("%kb", tsd)], "%r = arith.mulf %a0, %a1 : f32", (ts, "f32"), "sum, dims = [2]")
    body += mr("%scaled", [("%sc", ts)], "%%sk = arith.constant %.17g : f32\n%%r = arith.mulf %%a0, %%sk : f32" % scale, (ts, "f32"))
    # Causal mask: -inf above the diagonal, as a masked view.
    body += "  %%cm = harp.view %%scaled <(i, j) -> (i, j), mask_ge = (i, j) -> (i - j), pad = -inf> : %s -> %s\n" % (ts, ts)
    body += mr("%m", [("%cm", ts)], "%r = arith.addf %a0, %a0 : f32", (T(s), "f32"), "max, dims = [1]")
    body += "  %%mb = harp.view %%m <(i, j) -> (i)> : %s -> %s\n" % (T(s), ts)
    body += mr("%e", [("%cm", ts), ("%mb", ts)],
               "%two = arith.constant 2.0 : f32\n%x2 = arith.mulf %a0, %two : f32\n%d = arith.subf %x2, %a1 : f32\n%r = math.exp %d : f32", (ts, "f32"))
    body += mr("%sum", [("%e", ts)], "%r = arith.addf %a0, %a0 : f32", (T(s), "f32"), "sum, dims = [1]")
    body += "  %%sb = harp.view %%sum <(i, j) -> (i)> : %s -> %s\n" % (T(s), ts)
    body += mr("%p", [("%e", ts), ("%sb", ts)], "%two = arith.constant 2.0 : f32\n%q = arith.divf %a0, %a1 : f32\n%r = arith.mulf %q, %two : f32", (ts, "f32"))
    module = func([("qin", tq), ("kin", tq)], body, ("%p", ts))
    sc = q @ k.T * scale
    sc = np.where(np.tril(np.ones((s, s), bool)), 2 * sc, -np.inf)
    e = np.exp(sc - sc.max(axis=1, keepdims=True))  # the module doubles the scores
    return module, [q.astype(np.float32), k.astype(np.float32)], e / e.sum(axis=1, keepdims=True)


for i, (s, d) in enumerate([(4, 8), (16, 16), (7, 3), (32, 8), (100, 8), (129, 4)]):
    CASES.append(("causal_attention_%dx%d" % (s, d), lambda s=s, d=d, i=i: causal_attention_scores(s, d, i)))


def broadcast_expr(shape_a, shape_b, seed):
    """(a + b) * tanh(a) - b / (1 + a^2), NumPy-broadcast with views."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
    out = np.broadcast_shapes(shape_a, shape_b)
    rank = len(out)
    dims = ["d%d" % i for i in range(rank)]

    def bview(name, shape):
        src = [dims[rank - len(shape) + i] if n != 1 else "0" for i, n in enumerate(shape)]
        return "  %%%sb = harp.view %%%s <(%s) -> (%s)> : %s -> %s\n" % (
            name, name, ", ".join(dims), ", ".join(src), T(*shape), T(*out))
    t = T(*out)
    body = bview("a", shape_a) + bview("b", shape_b)
    body += mr("%s1", [("%ab", t), ("%bb", t)], "%r = arith.addf %a0, %a1 : f32", (t, "f32"))
    body += mr("%t", [("%ab", t)], "%r = math.tanh %a0 : f32", (t, "f32"))
    body += mr("%p", [("%s1", t), ("%t", t)], "%r = arith.mulf %a0, %a1 : f32", (t, "f32"))
    body += mr("%den", [("%ab", t)], "%one = arith.constant 1.0 : f32\n%sq = arith.mulf %a0, %a0 : f32\n%r = arith.addf %one, %sq : f32", (t, "f32"))
    body += mr("%q", [("%bb", t), ("%den", t)], "%r = arith.divf %a0, %a1 : f32", (t, "f32"))
    body += mr("%y", [("%p", t), ("%q", t)], "%r = arith.subf %a0, %a1 : f32", (t, "f32"))
    module = func([("a", T(*shape_a)), ("b", T(*shape_b))], body, ("%y", t))
    ref = (a + b) * np.tanh(a) - b / (1 + a ** 2)
    return module, [a.astype(np.float32), b.astype(np.float32)], ref


for i, (sa, sb) in enumerate([((4, 1), (1, 5)), ((3, 4, 5), (5,)), ((2, 1, 6), (3, 1)),
                              ((8,), (8,)), ((1, 7), (6, 1)), ((2, 3, 1, 4), (5, 1))]):
    CASES.append(("broadcast_%d" % i, lambda sa=sa, sb=sb, i=i: broadcast_expr(sa, sb, i)))


def view_chain(kind, seed):
    """exp(x) read through one view kind, then negated and reduced."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(6, 8))
    views = {
        "transpose": ("(i, j) -> (j, i)", "", (8, 6), lambda e: e.T),
        "reshape": ("(i, j) -> ((i * 12 + j) floordiv 8, (i * 12 + j) mod 8)", "", (4, 12), lambda e: e.reshape(4, 12)),
        "slice_step": ("(i, j) -> (i * 2 + 1, j * 3)", "", (3, 3), lambda e: e[1::2, ::3]),
        "flip": ("(i, j) -> (5 - i, j)", "", (6, 8), lambda e: e[::-1]),
        "pad": ("(i, j) -> (i - 1, j - 2)", ", mask_ge = (i, j) -> (i - 1, -i + 6, j - 2, -j + 9), pad = 0.25", (8, 12),
                lambda e: np.pad(e, ((1, 1), (2, 2)), constant_values=0.25)),
        "tril": ("(i, j) -> (i, j)", ", mask_ge = (i, j) -> (i - j), pad = 7.0", (6, 8),
                 lambda e: np.where(np.tril(np.ones((6, 8), bool)), e, 7.0)),
        "unfold": ("(i, j, l) -> (i, j * 2 + l)", "", (6, 3, 3),
                   lambda e: np.stack([e[:, 2 * j:2 * j + 3] for j in range(3)], axis=1)),
    }
    spec, mask, shape, ref_fn = views[kind]
    t, tv = T(6, 8), T(*shape)
    body = mr("%e", [("%x", t)], "%r = math.exp %a0 : f32", (t, "f32"))
    body += "  %%v = harp.view %%e <%s%s> : %s -> %s\n" % (spec, mask, t, tv)
    body += mr("%n", [("%v", tv)], "%r = arith.negf %a0 : f32", (tv, "f32"))
    red = ", ".join(str(i) for i in range(1, len(shape)))
    body += mr("%s", [("%n", tv)], "%r = arith.mulf %a0, %a0 : f32", (T(shape[0]), "f32"), "sum, dims = [%s]" % red)
    module = func([("x", t)], body, ("%s", T(shape[0])))
    v = ref_fn(np.exp(x))
    return module, [x.astype(np.float32)], (v * v).reshape(shape[0], -1).sum(axis=1)


for i, kind in enumerate(["transpose", "reshape", "slice_step", "flip", "pad", "tril", "unfold"]):
    CASES.append(("view_chain_" + kind, lambda kind=kind, i=i: view_chain(kind, i)))


def mlp2(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(5, 12))
    w1, w2 = rng.normal(size=(12, 9)) / 3, rng.normal(size=(9, 4)) / 3
    t1 = T(5, 9, 12)
    body = "  %%xb = harp.view %%x <(i, j, l) -> (i, l)> : %s -> %s\n" % (T(5, 12), t1)
    body += "  %%w1b = harp.view %%w1 <(i, j, l) -> (l, j)> : %s -> %s\n" % (T(12, 9), t1)
    body += mr("%h0", [("%xb", t1), ("%w1b", t1)], "%r = arith.mulf %a0, %a1 : f32", (T(5, 9), "f32"), "sum, dims = [2]")
    body += mr("%h", [("%h0", T(5, 9))], "%r = math.tanh %a0 : f32", (T(5, 9), "f32"))
    t2 = T(5, 4, 9)
    body += "  %%hb = harp.view %%h <(i, j, l) -> (i, l)> : %s -> %s\n" % (T(5, 9), t2)
    body += "  %%w2b = harp.view %%w2 <(i, j, l) -> (l, j)> : %s -> %s\n" % (T(9, 4), t2)
    body += mr("%o", [("%hb", t2), ("%w2b", t2)], "%r = arith.mulf %a0, %a1 : f32", (T(5, 4), "f32"), "sum, dims = [2]")
    module = func([("x", T(5, 12)), ("w1", T(12, 9)), ("w2", T(9, 4))], body, ("%o", T(5, 4)))
    return module, [a.astype(np.float32) for a in (x, w1, w2)], np.tanh(x @ w1) @ w2


for i in range(3):
    CASES.append(("mlp2_%d" % i, lambda i=i: mlp2(i)))


@pytest.mark.parametrize("name,build", CASES, ids=[c[0] for c in CASES])
def test_fused_equals_unfused(name, build):
    module, inputs, reference = build()
    (fused,) = h.run(module, *inputs)
    (unfused,) = h.run(module, *inputs, extra_args=["--no-fuse"])
    (scalar,) = h.run(module, *inputs, extra_args=["--no-vectorize"])
    (threaded,) = h.run(module, *inputs,
                        extra_args=["--parallel", "--parallel-min-work=0"])
    np.testing.assert_allclose(fused, unfused, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused, scalar, rtol=1e-5, atol=1e-5)
    # Tiles of parallel dims write disjoint parts: threads change nothing.
    np.testing.assert_array_equal(fused, threaded)
    h.assert_close(fused, np.asarray(reference, dtype=np.float32), rtol=2e-5, atol=2e-5)


def test_corpus_size():
    assert len(CASES) >= 30, len(CASES)
