"""Every derivative rule, checked numerically: harp-run --gradcheck compares
harp-autodiff's gradient with central finite differences of the compiled
function in f64 (complex128 for complex rules), and, where PyTorch has the
op, the gradient is compared with torch.autograd at
torch.testing.assert_close tolerances."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harptest as h  # noqa: E402


def gradcheck(module, seed=1, extra=()):
    """Runs harp-run --gradcheck on the module's only function."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "f.mlir")
        with open(path, "w") as f:
            f.write(module)
        proc = subprocess.run([h.HARP_RUN, path, "--gradcheck", "--random-inputs",
                               str(seed)] + list(extra), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"gradcheck @\w+: \d+ elements, .*: PASS", proc.stdout), proc.stdout
    return proc.stdout


def elementwise(body, dtype="f64", shape=(3, 4), nargs=1, out=None):
    """f(x...) = map_reduce of `body` (reads %a0.., defines %r)."""
    t = "tensor<%s%s>" % ("".join("%dx" % d for d in shape), dtype)
    to = "tensor<%s%s>" % ("".join("%dx" % d for d in shape), out or dtype)
    args = ", ".join("%%x%d: %s" % (i, t) for i in range(nargs))
    ins = ", ".join("%%x%d" % i for i in range(nargs))
    tys = ", ".join([t] * nargs)
    bargs = ", ".join("%%a%d: %s" % (i, dtype) for i in range(nargs))
    return """
func.func @f(%s) -> %s {
  %%y = harp.map_reduce ins(%s : %s) {
  ^bb0(%s):
    %s
    harp.yield %%r : %s
  } : %s
  return %%y : %s
}
""" % (args, to, ins, tys, bargs, body.replace("\n", "\n    "), out or dtype, to, to)


#===------------------------------------------------------------------------===#
# Scalar rules (arith, math) through finite differences
#===------------------------------------------------------------------------===#

UNARY = {
    "negf": "%r = arith.negf %a0 : f64",
    "exp": "%r = math.exp %a0 : f64",
    "exp2": "%r = math.exp2 %a0 : f64",
    "expm1": "%r = math.expm1 %a0 : f64",
    "log": "%p = math.absf %a0 : f64\n%c = arith.constant 0.5 : f64\n%q = arith.addf %p, %c : f64\n%r = math.log %q : f64",
    "log2": "%p = math.absf %a0 : f64\n%c = arith.constant 0.5 : f64\n%q = arith.addf %p, %c : f64\n%r = math.log2 %q : f64",
    "log1p": "%r = math.log1p %a0 : f64",
    "sin": "%r = math.sin %a0 : f64",
    "cos": "%r = math.cos %a0 : f64",
    "tan": "%r = math.tan %a0 : f64",
    "tanh": "%r = math.tanh %a0 : f64",
    "atan": "%r = math.atan %a0 : f64",
    "sqrt": "%p = math.absf %a0 : f64\n%c = arith.constant 0.5 : f64\n%q = arith.addf %p, %c : f64\n%r = math.sqrt %q : f64",
    "rsqrt": "%p = math.absf %a0 : f64\n%c = arith.constant 0.5 : f64\n%q = arith.addf %p, %c : f64\n%r = math.rsqrt %q : f64",
    "absf": "%r = math.absf %a0 : f64",
    "erf": "%r = math.erf %a0 : f64",
    "erfc": "%r = math.erfc %a0 : f64",
    "floor": "%s = arith.constant 3.0 : f64\n%m = arith.mulf %a0, %s : f64\n%f = math.floor %m : f64\n%r = arith.addf %f, %a0 : f64",
    "ceil": "%s = arith.constant 3.0 : f64\n%m = arith.mulf %a0, %s : f64\n%f = math.ceil %m : f64\n%r = arith.addf %f, %a0 : f64",
    "round": "%s = arith.constant 3.0 : f64\n%m = arith.mulf %a0, %s : f64\n%f = math.round %m : f64\n%r = arith.addf %f, %a0 : f64",
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rule(name):
    gradcheck(elementwise(UNARY[name]))


BINARY = {
    "addf": "%r = arith.addf %a0, %a1 : f64",
    "subf": "%r = arith.subf %a0, %a1 : f64",
    "mulf": "%r = arith.mulf %a0, %a1 : f64",
    "divf": "%two = arith.constant 2.0 : f64\n%d = arith.addf %a1, %two : f64\n%r = arith.divf %a0, %d : f64",
    "maximumf": "%r = arith.maximumf %a0, %a1 : f64",
    "minimumf": "%r = arith.minimumf %a0, %a1 : f64",
    "powf": "%p = math.absf %a0 : f64\n%c = arith.constant 0.5 : f64\n%q = arith.addf %p, %c : f64\n%r = math.powf %q, %a1 : f64",
    "remf": "%s = arith.constant 7.0 : f64\n%x = arith.mulf %a0, %s : f64\n%three = arith.constant 3.0 : f64\n%d = arith.addf %a1, %three : f64\n%r = arith.remf %x, %d : f64",
    "select": "%c = arith.cmpf olt, %a0, %a1 : f64\n%s = arith.mulf %a0, %a1 : f64\n%r = arith.select %c, %s, %a1 : f64",
    "chain": "%m = arith.mulf %a0, %a1 : f64\n%t = math.tanh %m : f64\n%e = math.exp %a0 : f64\n%r = arith.addf %t, %e : f64",
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rule(name):
    gradcheck(elementwise(BINARY[name], nargs=2))


def test_extf_truncf():
    # f32 -> f64 widening: checked with f32 finite differences.
    gradcheck(elementwise("%e = arith.extf %a0 : f32 to f64\n%r = arith.mulf %e, %e : f64",
                          dtype="f32", out="f64"))
    # f64 -> f32 narrowing: linear, so a large step is exact but for rounding.
    gradcheck(elementwise("%t = arith.truncf %a0 : f64 to f32\n%r = arith.mulf %t, %t : f32",
                          out="f32"), extra=["--fd-step", "1e-2", "--rtol", "1e-3", "--atol", "1e-4"])


def test_int_to_float_has_no_gradient():
    module = """
func.func @f(%x: tensor<5xf64>, %n: tensor<5xi32>) -> tensor<5xf64> {
  %y = harp.map_reduce ins(%x, %n : tensor<5xf64>, tensor<5xi32>) {
  ^bb0(%a: f64, %b: i32):
    %c = arith.sitofp %b : i32 to f64
    %r = arith.mulf %a, %c : f64
    harp.yield %r : f64
  } : tensor<5xf64>
  return %y : tensor<5xf64>
}
"""
    gradcheck(module)


#===------------------------------------------------------------------------===#
# Complex rules (PyTorch's convention) through finite differences
#===------------------------------------------------------------------------===#

C = "complex<f64>"
COMPLEX = {
    "add": ("%r = complex.add %a0, %a1 : complex<f64>", 2, C),
    "sub": ("%r = complex.sub %a0, %a1 : complex<f64>", 2, C),
    "mul": ("%r = complex.mul %a0, %a1 : complex<f64>", 2, C),
    "div": ("%one = complex.constant [2.0, 0.5] : complex<f64>\n%d = complex.add %a1, %one : complex<f64>\n%r = complex.div %a0, %d : complex<f64>", 2, C),
    "neg": ("%r = complex.neg %a0 : complex<f64>", 1, C),
    "conj": ("%r = complex.conj %a0 : complex<f64>", 1, C),
    "exp": ("%r = complex.exp %a0 : complex<f64>", 1, C),
    "log": ("%one = complex.constant [2.0, 0.5] : complex<f64>\n%d = complex.add %a0, %one : complex<f64>\n%r = complex.log %d : complex<f64>", 1, C),
    "sqrt": ("%one = complex.constant [2.0, 0.5] : complex<f64>\n%d = complex.add %a0, %one : complex<f64>\n%r = complex.sqrt %d : complex<f64>", 1, C),
    "sin": ("%r = complex.sin %a0 : complex<f64>", 1, C),
    "cos": ("%r = complex.cos %a0 : complex<f64>", 1, C),
    "re": ("%r = complex.re %a0 : complex<f64>", 1, "f64"),
    "im": ("%r = complex.im %a0 : complex<f64>", 1, "f64"),
    "abs": ("%r = complex.abs %a0 : complex<f64>", 1, "f64"),
    "create": ("%re = complex.re %a0 : complex<f64>\n%im = complex.im %a1 : complex<f64>\n%r = complex.create %im, %re : complex<f64>", 2, C),
    "tanh": ("%r = complex.tanh %a0 : complex<f64>", 1, C),
    "tan": ("%r = complex.tan %a0 : complex<f64>", 1, C),
    "rsqrt": ("%one = complex.constant [2.0, 0.5] : complex<f64>\n%d = complex.add %a0, %one : complex<f64>\n%r = complex.rsqrt %d : complex<f64>", 1, C),
    "expm1": ("%r = complex.expm1 %a0 : complex<f64>", 1, C),
    "log1p": ("%one = complex.constant [2.0, 0.5] : complex<f64>\n%d = complex.add %a0, %one : complex<f64>\n%r = complex.log1p %d : complex<f64>", 1, C),
    "pow": ("%one = complex.constant [2.0, 0.5] : complex<f64>\n%d = complex.add %a0, %one : complex<f64>\n%r = complex.pow %d, %a1 : complex<f64>", 2, C),
    "angle": ("%one = complex.constant [2.0, 0.5] : complex<f64>\n%d = complex.add %a0, %one : complex<f64>\n%r = complex.angle %d : complex<f64>", 1, "f64"),
}


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_rule(name):
    body, nargs, out = COMPLEX[name]
    gradcheck(elementwise(body, dtype=C, nargs=nargs, out=out))


#===------------------------------------------------------------------------===#
# Reductions, views, data movement, calls, multiple uses
#===------------------------------------------------------------------------===#

def reduce_module(kind, dims, keepdim, shape=(3, 4, 5)):
    out = [1 if d in dims else n for d, n in enumerate(shape)] if keepdim \
        else [n for d, n in enumerate(shape) if d not in dims]
    t = h.tensor(shape, np.float64)
    to = h.tensor(out, np.float64)
    return """
func.func @f(%%x: %s) -> %s {
  %%y = harp.map_reduce ins(%%x : %s) {
  ^bb0(%%a: f64):
    %%s = math.sin %%a : f64
    harp.yield %%s : f64
  } reduce(%s, dims = [%s]%s) : %s
  return %%y : %s
}
""" % (t, to, t, kind, ", ".join(map(str, dims)), ", keepdim" if keepdim else "", to, to)


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (0, 1, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_rule(kind, dims, keepdim):
    gradcheck(reduce_module(kind, dims, keepdim))


def harp_grad(module, entry, inputs, seeds, wrt):
    """harp-autodiff's gradients of `entry` at `inputs` for cotangents
    `seeds`, through a generated wrapper run by harp-run."""
    ins = [h.tensor(a.shape, a.dtype) for a in inputs]
    outs = [h.tensor(s.shape, s.dtype) for s in seeds]
    grads = [ins[w] for w in wrt]
    alltypes = outs + grads
    wrapper = """
func.func @main(%s) -> (%s) {
  %%r:%d = harp.autodiff @%s(%s) seed(%s : %s) wrt [%s] : (%s) -> (%s)
  return %s : %s
}
""" % (", ".join(["%%a%d: %s" % (i, t) for i, t in enumerate(ins)] +
                 ["%%s%d: %s" % (k, t) for k, t in enumerate(outs)]),
       ", ".join(alltypes), len(alltypes), entry,
       ", ".join("%%a%d" % i for i in range(len(ins))),
       ", ".join("%%s%d" % k for k in range(len(outs))), ", ".join(outs),
       ", ".join(map(str, wrt)), ", ".join(ins), ", ".join(alltypes),
       ", ".join("%%r#%d" % j for j in range(len(alltypes))), ", ".join(alltypes))
    results = h.run(module + wrapper, *inputs, *seeds, entry="main")
    return results[len(seeds):]


def test_max_ties_share_the_cotangent():
    module = reduce_module("max", (1,), False, shape=(2, 4)).replace(
        "%s = math.sin %a : f64", "%s = arith.addf %a, %a : f64")
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    (gx,) = harp_grad(module, "f", [x], [np.array([1.0, 1.0])], [0])
    np.testing.assert_allclose(gx, [[0, 1, 1, 0], [0.5, 0.5, 0.5, 0.5]])
    # As torch.amax.
    xt = torch.tensor(x, requires_grad=True)
    (2 * xt).amax(dim=1).sum().backward()
    np.testing.assert_allclose(gx, xt.grad.numpy())


def test_prod_with_zeros():
    module = reduce_module("prod", (1,), False, shape=(3, 4)).replace(
        "%s = math.sin %a : f64", "%s = arith.addf %a, %a : f64")
    x = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 3.0, 4.0], [0.0, 2.0, 0.0, 4.0]])
    seed = np.array([1.0, 0.5, 2.0])
    (gx,) = harp_grad(module, "f", [x], [seed], [0])
    xt = torch.tensor(x, requires_grad=True)
    (2 * xt).prod(dim=1).backward(torch.tensor(seed))
    torch.testing.assert_close(torch.tensor(gx), xt.grad)


def view_module(spec, src_shape, dst_shape):
    ts, td = h.tensor(src_shape, np.float64), h.tensor(dst_shape, np.float64)
    return """
func.func @f(%%x: %s) -> %s {
  %%e = harp.map_reduce ins(%%x : %s) {
  ^bb0(%%a: f64):
    %%s = math.sin %%a : f64
    harp.yield %%s : f64
  } : %s
  %%v = harp.view %%e <%s> : %s -> %s
  %%y = harp.map_reduce ins(%%v : %s) {
  ^bb0(%%a: f64):
    %%q = arith.mulf %%a, %%a : f64
    harp.yield %%q : f64
  } : %s
  return %%y : %s
}
""" % (ts, td, ts, ts, spec, ts, td, td, td, td)


VIEWS = {
    "transpose": ("(i, j) -> (j, i)", (3, 4), (4, 3)),
    "permute3d": ("(i, j, k) -> (k, i, j)", (2, 3, 4), (3, 4, 2)),
    "broadcast": ("(i, j) -> (j)", (4,), (3, 4)),
    "broadcast0d": ("(i, j) -> ()", (), (2, 3)),
    "reshape": ("(i, j) -> ((i * 6 + j) floordiv 4, (i * 6 + j) mod 4)", (3, 4), (2, 6)),
    "flatten": ("(i) -> (i floordiv 12, (i floordiv 4) mod 3, i mod 4)", (2, 3, 4), (24,)),
    "slice_step": ("(i, j) -> (i * 2 + 1, j * 3)", (7, 9), (3, 3)),
    "flip": ("(i, j) -> (3 - i, j)", (4, 5), (4, 5)),
    "squeeze": ("(i) -> (0, i)", (1, 5), (5,)),
    "unsqueeze": ("(i, j) -> (j)", (5,), (1, 5)),
    "pad": ("(i, j) -> (i - 1, j - 2), mask_ge = (i, j) -> (i - 1, -i + 3, j - 2, -j + 5)", (3, 4), (5, 8)),
    "pad_ones": ("(i) -> (i - 2), mask_ge = (i) -> (i - 2, -i + 6), pad = one", (5,), (9,)),
    "unfold": ("(i, j) -> (i * 2 + j * 2)", (10,), (3, 3)),
    "unfold2d": ("(a, b, c, d) -> (a * 2 + c, b + d * 2)", (6, 7), (2, 3, 3, 2)),
    "tril": ("(i, j) -> (i, j), mask_ge = (i, j) -> (i - j)", (4, 4), (4, 4)),
    "diagonal": ("(i) -> (i, i)", (4, 4), (4,)),
    "zero_insertion": ("(i) -> (i floordiv 2), mask_eq = (i) -> (i mod 2)", (4,), (7,)),
    "pad_then_unfold": ("(i, j) -> (i + j - 1), mask_ge = (i, j) -> (i + j - 1, -i - j + 5)", (5,), (5, 3)),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_rule(name):
    spec, src, dst = VIEWS[name]
    gradcheck(view_module(spec, src, dst))


def test_concat_rule():
    gradcheck("""
func.func @f(%a: tensor<2x3xf64>, %b: tensor<2x4xf64>) -> tensor<2x7xf64> {
  %c = harp.concat dim(1) %a, %b : (tensor<2x3xf64>, tensor<2x4xf64>) -> tensor<2x7xf64>
  %y = harp.map_reduce ins(%c : tensor<2x7xf64>) {
  ^bb0(%x: f64):
    %s = math.sin %x : f64
    harp.yield %s : f64
  } : tensor<2x7xf64>
  return %y : tensor<2x7xf64>
}
""")


GATHER_SCATTER = """
func.func @f(%x: tensor<4x5xf64>, %src: tensor<3x5xf64>) -> (tensor<3x5xf64>, tensor<4x5xf64>) {
  %idx = arith.constant dense<[[0, 1, 2, 3, 0], [3, 3, 1, 0, 2], [1, 0, 0, 2, 3]]> : tensor<3x5xi64>
  %g = harp.gather %x[%idx] dim(0) : (tensor<4x5xf64>, tensor<3x5xi64>) -> tensor<3x5xf64>
  %sq = harp.map_reduce ins(%g : tensor<3x5xf64>) {
  ^bb0(%a: f64):
    %q = arith.mulf %a, %a : f64
    harp.yield %q : f64
  } : tensor<3x5xf64>
  %idx2 = arith.constant dense<[[0, 1], [3, 3]]> : tensor<2x2xi64>
  %s = harp.scatter_add %src into %x[%idx2] dim(0) : tensor<3x5xf64> into tensor<4x5xf64>[tensor<2x2xi64>]
  %t = harp.map_reduce ins(%s : tensor<4x5xf64>) {
  ^bb0(%a: f64):
    %q = math.sin %a : f64
    harp.yield %q : f64
  } : tensor<4x5xf64>
  return %sq, %t : tensor<3x5xf64>, tensor<4x5xf64>
}
"""


def test_gather_scatter_add_rules():
    gradcheck(GATHER_SCATTER)


def test_contiguous_call_and_multiple_uses():
    gradcheck("""
func.func private @g(%x: tensor<3x4xf64>, %y: tensor<3x4xf64>) -> tensor<3x4xf64> {
  %p = harp.map_reduce ins(%x, %y : tensor<3x4xf64>, tensor<3x4xf64>) {
  ^bb0(%a: f64, %b: f64):
    %m = arith.mulf %a, %b : f64
    %t = math.tanh %m : f64
    harp.yield %t : f64
  } : tensor<3x4xf64>
  return %p : tensor<3x4xf64>
}
func.func @f(%x: tensor<3x4xf64>, %w: tensor<3x4xf64>) -> tensor<4xf64> {
  %c = harp.contiguous %x : tensor<3x4xf64>
  %p = func.call @g(%c, %w) : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %q = func.call @g(%p, %x) : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %s = harp.map_reduce ins(%q, %x : tensor<3x4xf64>, tensor<3x4xf64>) {
  ^bb0(%a: f64, %b: f64):
    %m = arith.mulf %a, %b : f64
    harp.yield %m : f64
  } reduce(sum, dims = [0]) : tensor<4xf64>
  return %s : tensor<4xf64>
}
""")


#===------------------------------------------------------------------------===#
# Against torch.autograd
#===------------------------------------------------------------------------===#

MLP = """
func.func @loss(%x: tensor<6x5xf64>, %w1: tensor<5x4xf64>, %b1: tensor<4xf64>, %w2: tensor<4x3xf64>) -> tensor<f64> {
  %xb = harp.view %x <(i, j, k) -> (i, k)> : tensor<6x5xf64> -> tensor<6x4x5xf64>
  %w1b = harp.view %w1 <(i, j, k) -> (k, j)> : tensor<5x4xf64> -> tensor<6x4x5xf64>
  %h0 = harp.map_reduce ins(%xb, %w1b : tensor<6x4x5xf64>, tensor<6x4x5xf64>) {
  ^bb0(%a: f64, %b: f64):
    %m = arith.mulf %a, %b : f64
    harp.yield %m : f64
  } reduce(sum, dims = [2]) : tensor<6x4xf64>
  %b1b = harp.view %b1 <(i, j) -> (j)> : tensor<4xf64> -> tensor<6x4xf64>
  %h = harp.map_reduce ins(%h0, %b1b : tensor<6x4xf64>, tensor<6x4xf64>) {
  ^bb0(%a: f64, %b: f64):
    %s = arith.addf %a, %b : f64
    %t = math.tanh %s : f64
    harp.yield %t : f64
  } : tensor<6x4xf64>
  %hb = harp.view %h <(i, j, k) -> (i, k)> : tensor<6x4xf64> -> tensor<6x3x4xf64>
  %w2b = harp.view %w2 <(i, j, k) -> (k, j)> : tensor<4x3xf64> -> tensor<6x3x4xf64>
  %o = harp.map_reduce ins(%hb, %w2b : tensor<6x3x4xf64>, tensor<6x3x4xf64>) {
  ^bb0(%a: f64, %b: f64):
    %m = arith.mulf %a, %b : f64
    harp.yield %m : f64
  } reduce(sum, dims = [2]) : tensor<6x3xf64>
  %m = harp.map_reduce ins(%o : tensor<6x3xf64>) {
  ^bb0(%a: f64):
    harp.yield %a : f64
  } reduce(max, dims = [1]) : tensor<6xf64>
  %mb = harp.view %m <(i, j) -> (i)> : tensor<6xf64> -> tensor<6x3xf64>
  %e = harp.map_reduce ins(%o, %mb : tensor<6x3xf64>, tensor<6x3xf64>) {
  ^bb0(%a: f64, %b: f64):
    %d = arith.subf %a, %b : f64
    %x2 = math.exp %d : f64
    harp.yield %x2 : f64
  } : tensor<6x3xf64>
  %se = harp.map_reduce ins(%e : tensor<6x3xf64>) {
  ^bb0(%a: f64):
    harp.yield %a : f64
  } reduce(sum, dims = [1]) : tensor<6xf64>
  %lse = harp.map_reduce ins(%se, %m : tensor<6xf64>, tensor<6xf64>) {
  ^bb0(%a: f64, %b: f64):
    %l = math.log %a : f64
    %s = arith.addf %l, %b : f64
    harp.yield %s : f64
  } : tensor<6xf64>
  %loss = harp.map_reduce ins(%lse : tensor<6xf64>) {
  ^bb0(%a: f64):
    harp.yield %a : f64
  } reduce(sum, dims = [0]) : tensor<f64>
  return %loss : tensor<f64>
}
"""


def mlp_torch(x, w1, b1, w2):
    o = torch.tanh(x @ w1 + b1) @ w2
    return torch.logsumexp(o, dim=1).sum()


def test_mlp_loss_gradient_matches_torch():
    rng = np.random.default_rng(3)
    args = [rng.normal(size=s) for s in [(6, 5), (5, 4), (4,), (4, 3)]]
    grads = harp_grad(MLP, "loss", args, [np.array(1.0)], [0, 1, 2, 3])
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    mlp_torch(*ts).backward()
    for g, t in zip(grads, ts):
        torch.testing.assert_close(torch.tensor(g), t.grad)
    gradcheck(MLP)


@pytest.mark.parametrize("name,torch_fn", [
    ("exp", torch.exp), ("sin", torch.sin), ("cos", torch.cos), ("tanh", torch.tanh),
    ("atan", torch.atan), ("erf", torch.erf), ("erfc", torch.erfc), ("absf", torch.abs), ("expm1", torch.expm1),
    ("log1p", torch.log1p), ("negf", torch.neg), ("exp2", torch.exp2), ("tan", torch.tan),
])
def test_unary_matches_torch(name, torch_fn):
    rng = np.random.default_rng(5)
    x = rng.uniform(-0.9, 0.9, size=(3, 4))
    seed = rng.normal(size=(3, 4))
    (g,) = harp_grad(elementwise(UNARY[name]), "f", [x], [seed], [0])
    xt = torch.tensor(x, requires_grad=True)
    torch_fn(xt).backward(torch.tensor(seed))
    torch.testing.assert_close(torch.tensor(g), xt.grad)


@pytest.mark.parametrize("name,torch_fn", [
    ("mul", lambda a, b: a * b), ("exp", lambda a, b: torch.exp(a)), ("conj", lambda a, b: a.conj()),
    ("abs", lambda a, b: a.abs()), ("re", lambda a, b: a.real), ("sin", lambda a, b: torch.sin(a)),
])
def test_complex_matches_torch(name, torch_fn):
    body, nargs, out = COMPLEX[name]
    rng = np.random.default_rng(6)
    xs = [(rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))) for _ in range(nargs)]
    odt = np.complex128 if out.startswith("complex") else np.float64
    seed = rng.normal(size=(3, 4)).astype(odt)
    if odt == np.complex128:
        seed = seed + 1j * rng.normal(size=(3, 4))
    grads = harp_grad(elementwise(body, dtype=C, nargs=nargs, out=out), "f", xs, [seed],
                      list(range(nargs)))
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    torch_fn(*(ts + [None] * (2 - nargs))).backward(torch.tensor(seed))
    for g, t in zip(grads, ts):
        torch.testing.assert_close(torch.tensor(g), t.grad)


CONV = """
func.func @conv(%x: tensor<1x2x5x5xf64>, %w: tensor<3x2x3x3xf64>) -> tensor<1x3x3x3xf64> {
  %xp = harp.view %x <(n, c, h, w) -> (n, c, h - 1, w - 1), mask_ge = (n, c, h, w) -> (h - 1, -h + 5, w - 1, -w + 5)> : tensor<1x2x5x5xf64> -> tensor<1x2x7x7xf64>
  %u = harp.view %xp <(n, c, oh, ow, kh, kw) -> (n, c, oh * 2 + kh, ow * 2 + kw)> : tensor<1x2x7x7xf64> -> tensor<1x2x3x3x3x3xf64>
  %xb = harp.view %u <(n, f, oh, ow, c, kh, kw) -> (n, c, oh, ow, kh, kw)> : tensor<1x2x3x3x3x3xf64> -> tensor<1x3x3x3x2x3x3xf64>
  %wb = harp.view %w <(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)> : tensor<3x2x3x3xf64> -> tensor<1x3x3x3x2x3x3xf64>
  %y = harp.map_reduce ins(%xb, %wb : tensor<1x3x3x3x2x3x3xf64>, tensor<1x3x3x3x2x3x3xf64>) {
  ^bb0(%a: f64, %b: f64):
    %m = arith.mulf %a, %b : f64
    harp.yield %m : f64
  } reduce(sum, dims = [4, 5, 6]) : tensor<1x3x3x3xf64>
  return %y : tensor<1x3x3x3xf64>
}
"""


def test_conv2d_gradient_matches_torch():
    rng = np.random.default_rng(7)
    x, w = rng.normal(size=(1, 2, 5, 5)), rng.normal(size=(3, 2, 3, 3))
    seed = rng.normal(size=(1, 3, 3, 3))
    gx, gw = harp_grad(CONV, "conv", [x, w], [seed], [0, 1])
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(xt, wt, padding=1, stride=2).backward(torch.tensor(seed))
    torch.testing.assert_close(torch.tensor(gx), xt.grad)
    torch.testing.assert_close(torch.tensor(gw), wt.grad)
    gradcheck(CONV)


#===------------------------------------------------------------------------===#
# Grad of grad: a Hessian-vector product
#===------------------------------------------------------------------------===#

def test_hessian_vector_product_matches_torch():
    # g(params, v) = <grad loss(params), v>; its gradient is H v.
    params = ["x", "w1", "b1", "w2"]
    shapes = [(6, 5), (5, 4), (4,), (4, 3)]
    types = [h.tensor(s, np.float64) for s in shapes]
    sig = ", ".join("%%%s: %s" % (p, t) for p, t in zip(params, types))
    vsig = ", ".join("%%v%s: %s" % (p, t) for p, t in zip(params, types))
    dot = ""
    for i, (p, s, t) in enumerate(zip(params, shapes, types)):
        dims = ", ".join(str(d) for d in range(len(s)))
        dot += """
  %%d%d = harp.map_reduce ins(%%g#%d, %%v%s : %s, %s) {
  ^bb0(%%a: f64, %%b: f64):
    %%m = arith.mulf %%a, %%b : f64
    harp.yield %%m : f64
  } reduce(sum, dims = [%s]) : tensor<f64>""" % (i, i + 1, p, t, t, dims)
    gv = """
func.func @gv(%s, %s) -> tensor<f64> {
  %%g:5 = harp.autodiff @loss(%s) wrt [0, 1, 2, 3] : (%s) -> (tensor<f64>, %s)%s
  %%s01 = harp.map_reduce ins(%%d0, %%d1 : tensor<f64>, tensor<f64>) {
  ^bb0(%%a: f64, %%b: f64):
    %%s = arith.addf %%a, %%b : f64
    harp.yield %%s : f64
  } : tensor<f64>
  %%s23 = harp.map_reduce ins(%%d2, %%d3 : tensor<f64>, tensor<f64>) {
  ^bb0(%%a: f64, %%b: f64):
    %%s = arith.addf %%a, %%b : f64
    harp.yield %%s : f64
  } : tensor<f64>
  %%s = harp.map_reduce ins(%%s01, %%s23 : tensor<f64>, tensor<f64>) {
  ^bb0(%%a: f64, %%b: f64):
    %%s = arith.addf %%a, %%b : f64
    harp.yield %%s : f64
  } : tensor<f64>
  return %%s : tensor<f64>
}
""" % (sig, vsig, ", ".join("%" + p for p in params), ", ".join(types), ", ".join(types), dot)
    module = MLP.replace("func.func @loss", "func.func private @loss") + gv
    rng = np.random.default_rng(11)
    args = [rng.normal(size=s) for s in shapes]
    vs = [rng.normal(size=s) for s in shapes]
    hv = harp_grad(module, "gv", args + vs, [np.array(1.0)], [0, 1, 2, 3])
    _, torch_hv = torch.autograd.functional.hvp(
        mlp_torch, tuple(torch.tensor(a) for a in args), tuple(torch.tensor(v) for v in vs))
    for mine, theirs in zip(hv, torch_hv):
        torch.testing.assert_close(torch.tensor(mine), theirs)
