"""harp.export compiles a function ahead of time into a C library: a C
program links it and gets the JIT's results bit for bit, in a process
without LLVM, MLIR or harp; the model's weights are constants of the library
(docs/Embedding.md, "Libraries ahead of time")."""

import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import harp
import harp.nn as nn

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))

CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler to link with")

# The C type of each NumPy dtype in a harp header, and its tensor struct.
_C = {np.float32: ("float", "f32"), np.float64: ("double", "f64"),
      np.int64: ("int64_t", "i64"), np.int32: ("int32_t", "i32")}


def _driver(prefix, name, inputs, outputs):
    """A C program that reads the inputs' bytes from argv[1..], calls
    <prefix>_<name> and writes each result's bytes to the next argv files;
    then exits 3 if LLVM, MLIR or harp's libraries are mapped."""
    lines = ['#include "%s.h"' % prefix, "#include <stdio.h>",
             "#include <stdlib.h>", "#include <string.h>",
             "static void *slurp(const char *p, size_t n) {",
             "  void *d = malloc(n ? n : 1); FILE *f = fopen(p, \"rb\");",
             "  if (!f || fread(d, 1, n, f) != n) exit(2); fclose(f); return d;",
             "}", "int main(int argc, char **argv) {", "  (void)argc;"]
    args = []
    for i, a in enumerate(list(inputs) + list(outputs)):
        ctype, tag = _C[a.dtype.type]
        shape = ", ".join(str(s) for s in a.shape) or "0"
        lines.append("  int64_t s%d[] = {%s};" % (i, shape))
        if i < len(inputs):
            lines.append("  %s *d%d = slurp(argv[%d], %d);"
                         % (ctype, i, i + 1, a.nbytes))
        else:
            lines.append("  %s *d%d = malloc(%d);" % (ctype, i, max(a.nbytes, 1)))
        lines.append("  harp_%s_tensor t%d = {d%d, %d, s%d};"
                     % (tag, i, i, a.ndim, i))
        args.append("&t%d" % i)
    lines.append("  int rc = %s_%s(%s);" % (prefix, name, ", ".join(args)))
    lines.append('  if (rc) { fprintf(stderr, "%%s\\n", %s_last_error()); return 1; }'
                 % prefix)
    for i in range(len(inputs), len(inputs) + len(outputs)):
        lines.append('  { FILE *f = fopen(argv[%d], "wb"); fwrite(d%d, 1, %d, f); fclose(f); }'
                     % (i + 1, i, outputs[i - len(inputs)].nbytes))
    lines += ['  FILE *maps = fopen("/proc/self/maps", "r"); char line[4096];',
              "  while (maps && fgets(line, sizeof line, maps))",
              '    if (strstr(line, "libLLVM") || strstr(line, "libMLIR") ||',
              '        strstr(line, "libHarp") || strstr(line, "_harp.cpython") ||',
              '        strstr(line, "libstdc++")) return 3;',
              "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def _run_library(tmp_path, library, prefix, name, inputs, expected, link=()):
    """Builds the driver against `library` and returns its results."""
    source = tmp_path / ("%s_main.c" % prefix)
    source.write_text(_driver(prefix, name, inputs, expected))
    program = tmp_path / ("%s_main" % prefix)
    subprocess.run([CC, "-std=c99", "-I", str(tmp_path), str(source), "-o",
                    str(program), str(library), "-Wl,-rpath," + str(tmp_path),
                    "-lm", *link], check=True)
    files = []
    for i, a in enumerate(inputs):
        path = tmp_path / ("in%d.bin" % i)
        path.write_bytes(np.ascontiguousarray(a).tobytes())
        files.append(str(path))
    outs = [str(tmp_path / ("out%d.bin" % i)) for i in range(len(expected))]
    proc = subprocess.run([str(program), *files, *outs], capture_output=True,
                          text=True, env={"PATH": os.environ.get("PATH", "")})
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    return [np.frombuffer(open(p, "rb").read(), e.dtype).reshape(e.shape)
            for p, e in zip(outs, expected)]


def _jit(module, name, inputs, cpu=None):
    """The JIT's results of `name` in the module harp.export wrote."""
    return harp.ir.call(module.read_text(), name, inputs, cpu=cpu)


@needs_cc
@pytest.mark.parametrize("kind", [".so", ".a"])
def test_cnn_library_matches_the_jit_bitwise(tmp_path, kind):
    """The main job's CNN (examples/cnn_digits.py) in eval mode, with
    trained-looking batch-norm statistics, as a library a C program runs."""
    import cnn_digits
    harp.manual_seed(3)
    net = cnn_digits.model(nn)
    rng = np.random.default_rng(5)
    for m in net:
        if isinstance(m, nn.BatchNorm2d):
            c = m.running_mean.shape[0]
            m.running_mean.copy_(harp.tensor(rng.normal(0, 0.1, c).astype(np.float32)))
            m.running_var.copy_(harp.tensor(rng.uniform(0.5, 2, c).astype(np.float32)))
    net.eval()
    x = rng.standard_normal((7, 1, 8, 8)).astype(np.float32)
    library = tmp_path / ("libcnn" + kind)
    harp.export(net, (x,), library, header=tmp_path / "cnn.h")
    harp.export(net, (x,), tmp_path / "cnn.mlir")
    header = (tmp_path / "cnn.h").read_text()
    assert ("int cnn_forward(const harp_f32_tensor *input0, "
            "harp_f32_tensor *result0);") in header
    # The weights are constants of the module, not arguments.
    assert "func.func @forward(%arg0: tensor<7x1x8x8xf32>) -> tensor<7x10xf32>" \
        in (tmp_path / "cnn.mlir").read_text()
    for inputs in (x, rng.standard_normal((7, 1, 8, 8)).astype(np.float32)):
        (expected,) = _jit(tmp_path / "cnn.mlir", "forward", [inputs])
        (got,) = _run_library(tmp_path, library, "cnn", "forward", [inputs],
                              [expected])
        assert got.tobytes() == expected.tobytes()
        # The model run by the Tensor API, where the weights are arguments
        # (the constant weights' layouts may be folded: another order of
        # the same sums).
        np.testing.assert_allclose(got, net(harp.tensor(inputs)).numpy(),
                                   rtol=1e-5, atol=1e-6)


@needs_cc
def test_weights_are_constants_and_results_several(tmp_path):
    """A function of two inputs and three results; the linear layer's weights
    are frozen into the library as they were at export."""
    harp.manual_seed(0)
    layer = nn.Linear(5, 3)

    def two_heads(x, shift):
        y = layer(x)
        return y.relu(), (y + shift).sum(dim=1), (x.double() * 2).sum()

    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    shift = rng.standard_normal((4, 3)).astype(np.float32)
    eager = [t.numpy() for t in two_heads(harp.tensor(x), harp.tensor(shift))]
    library = tmp_path / "libheads.so"
    harp.export(two_heads, (x, shift), library, header=tmp_path / "heads.h")
    harp.export(two_heads, (x, shift), tmp_path / "heads.mlir")
    with harp.no_grad():
        layer.weight.mul_(0.0)  # after export: the library keeps the old weights
    expected = _jit(tmp_path / "heads.mlir", "two_heads", [x, shift])
    got = _run_library(tmp_path, library, "heads", "two_heads", [x, shift], expected)
    for g, e, a in zip(got, expected, eager):
        assert g.dtype == e.dtype == a.dtype and g.shape == e.shape == a.shape
        assert g.tobytes() == e.tobytes()
        np.testing.assert_allclose(g, a, rtol=1e-5, atol=1e-6)
    assert expected[2].shape == () and expected[2].dtype == np.float64


@needs_cc
def test_prefix_name_and_cpu_profiles(tmp_path):
    """prefix=, name= and cpu= as asked; code for every vector width this
    machine runs gives the JIT's results for that width."""
    x = np.arange(1, 40, dtype=np.float64).reshape(3, 13) / 7

    def f(t):
        return (t.exp() * t).sum(dim=0)

    for cpu in ("x86-64-v2", "x86-64-v3", "x86-64-v4"):
        harp.set_options(cpu=cpu)
        try:
            runs = "yes" in subprocess.run(
                [os.path.join(ROOT, "build", "bin", "harp-run"), "--print-cpu",
                 "--cpu", cpu], capture_output=True, text=True).stdout.split(
                "runs here:")[1].splitlines()[0]
            if not runs:
                continue
            expected = f(harp.tensor(x)).numpy()
        finally:
            harp.set_options(cpu="")
        library = tmp_path / ("libp_%s.so" % cpu.replace("-", "_"))
        harp.export(f, x, library, header=tmp_path / "pre.h", prefix="pre",
                    name="expsum", cpu=cpu)
        assert "int pre_expsum(" in (tmp_path / "pre.h").read_text()
        (got,) = _run_library(tmp_path, library, "pre", "expsum", [x], [expected])
        # No weights: the module is the Tensor API's own, bit for bit.
        assert got.tobytes() == expected.tobytes(), cpu


@needs_cc
def test_harp_compile_library_matches_the_jit_bitwise(tmp_path):
    """Every function of test/Runtime/Inputs/library.mlir (a layer, a 0-d
    result, integers, a training step through harp.autodiff) compiled by
    harp-compile gives what harp.ir.call gives, on random inputs."""
    module = os.path.join(ROOT, "test", "Runtime", "Inputs", "library.mlir")
    library = tmp_path / "libmod.so"
    subprocess.run([os.path.join(ROOT, "build", "bin", "harp-compile"), module,
                    "-o", str(library), "--header", str(tmp_path / "mod.h")],
                   check=True)
    text = open(module).read()
    rng = np.random.default_rng(11)
    shapes = {"affine": [((3, 17), np.float32), ((17, 7), np.float32),
                         ((7,), np.float32)],
              "moments": [((15,), np.float64)],
              "affine_int": [((9,), np.int64)],
              "train_step": [((5, 3), np.float32), ((3,), np.float32),
                             ((5,), np.float32)]}
    for name, args in shapes.items():
        inputs = [rng.integers(-1000, 1000, s).astype(t) if t == np.int64
                  else rng.standard_normal(s).astype(t) for s, t in args]
        expected = harp.ir.call(text, name, inputs)
        got = _run_library(tmp_path, library, "mod", name, inputs, expected)
        for g, e in zip(got, expected):
            assert g.tobytes() == e.tobytes(), name


@needs_cc
def test_training_step_returns_the_gradients(tmp_path):
    """gradients= exports a training step: the loss, an auxiliary result and
    the gradients with respect to the weights passed as inputs; a C program
    can then run steps of gradient descent. Checked against backward()."""
    import harp.nn.functional as F
    rng = np.random.default_rng(2)
    x = rng.standard_normal((13, 5)).astype(np.float32)
    y = rng.integers(0, 3, 13).astype(np.int64)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)

    def step(x, y, w, b):
        logits = F.linear(x, w, b)
        return F.cross_entropy(logits, y), logits.argmax(dim=1)

    harp.export(step, (x, y, w, b), tmp_path / "libstep.so",
                header=tmp_path / "step.h", gradients=[2, -1])
    harp.export(step, (x, y, w, b), tmp_path / "step.mlir", gradients=[2, 3])
    assert ("int step_step(const harp_f32_tensor *input0, const harp_i64_tensor "
            "*input1, const harp_f32_tensor *input2, const harp_f32_tensor "
            "*input3, harp_f32_tensor *result0, harp_i64_tensor *result1, "
            "harp_f32_tensor *result2, harp_f32_tensor *result3);") \
        in (tmp_path / "step.h").read_text()
    expected = _jit(tmp_path / "step.mlir", "step", [x, y, w, b])
    got = _run_library(tmp_path, tmp_path / "libstep.so", "step", "step",
                       [x, y, w, b], expected)
    for g, e in zip(got, expected):
        assert g.tobytes() == e.tobytes()
    tw = harp.tensor(w, requires_grad=True)
    tb = harp.tensor(b, requires_grad=True)
    loss, labels = step(harp.tensor(x), harp.tensor(y), tw, tb)
    loss.backward()
    np.testing.assert_allclose(got[0], loss.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(got[1], labels.numpy())
    np.testing.assert_allclose(got[2], tw.grad.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got[3], tb.grad.numpy(), rtol=1e-5, atol=1e-7)


@needs_cc
def test_threads_link_the_openmp_runtime(tmp_path):
    """threads=True: the parallel loops run on libomp, which the library
    then needs; results equal the JIT's threaded run of the module."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 300)).astype(np.float32)
    w = rng.standard_normal((300, 257)).astype(np.float32)

    def f(a, b):
        return (a @ b).tanh()

    harp.export(f, (x, w), tmp_path / "libthr.so", header=tmp_path / "thr.h",
                threads=True)
    harp.export(f, (x, w), tmp_path / "thr.mlir")
    needed = subprocess.run(["readelf", "-d", str(tmp_path / "libthr.so")],
                            capture_output=True, text=True).stdout
    assert "libomp.so.5" in needed
    expected = harp.ir.call((tmp_path / "thr.mlir").read_text(), "f", [x, w],
                            threads=True)
    got = _run_library(tmp_path, tmp_path / "libthr.so", "thr", "f", [x, w],
                       expected)
    assert got[0].tobytes() == expected[0].tobytes()


def test_export_errors(tmp_path):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="fn must be callable"):
        harp.export(3, (x,), tmp_path / "a.so")
    with pytest.raises(TypeError, match="result #1 is a float"):
        harp.export(lambda t: (t * 2, 1.5), (x,), tmp_path / "a.so")
    with pytest.raises(harp.HarpError, match=r"cannot tell what to write from "
                       r"the name .*a\.dll \(expected a \.so, \.a, \.o or \.mlir file\)"):
        harp.export(lambda t: t * 2, (x,), tmp_path / "a.dll")
    with pytest.raises(harp.HarpError, match="prefix '1x' is not a C identifier"):
        harp.export(lambda t: t * 2, (x,), tmp_path / "a.so", prefix="1x")
    with pytest.raises(harp.HarpError, match="cpu:"):
        harp.export(lambda t: t * 2, (x,), tmp_path / "a.so", cpu="pentium5000")
    with pytest.raises(harp.HarpError, match="linking .* failed"):
        harp.export(lambda t: t * 2, (x,), tmp_path / "a.so",
                    linker=str(tmp_path / "no-such-cc"))
    f = lambda t, n: ((t * t).sum(), (t * 2).sum(dim=0))  # noqa: E731
    n = np.arange(3)
    with pytest.raises(harp.HarpError, match="input #1 is i64, which has no "
                       "gradient"):
        harp.export(f, (x, n), tmp_path / "a.so", gradients=[1])
    with pytest.raises(harp.HarpError, match="gradients names input #2, but "
                       "the function has 2 inputs"):
        harp.export(f, (x, n), tmp_path / "a.so", gradients=[2])
    with pytest.raises(harp.HarpError, match="names input #0 twice"):
        harp.export(f, (x, n), tmp_path / "a.so", gradients=[0, -2])
    with pytest.raises(harp.HarpError, match="must be a 0-d float loss, but "
                       "it is f32 \\[3\\]"):
        harp.export(lambda t: t.sum(dim=0), (x,), tmp_path / "a.so",
                    gradients=[0])
    with pytest.raises(TypeError, match="gradients must be indices"):
        harp.export(f, (x, n), tmp_path / "a.so", gradients=["x"])
    assert not (tmp_path / "a.so").exists()
    # One input given alone, here a torch tensor, is one input (not its rows).
    import torch
    harp.export(lambda t: t * 2, torch.ones(2, 3), tmp_path / "one.mlir")
    assert "func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32>" \
        in (tmp_path / "one.mlir").read_text()
    # The process goes on: a good export after the failures.
    harp.export(lambda t: t * 2, (x,), tmp_path / "ok.o", header=tmp_path / "ok.h")
    assert (tmp_path / "ok.o").stat().st_size > 0
    assert "int ok_main(const harp_f32_tensor *input0, harp_f32_tensor *result0);" \
        in (tmp_path / "ok.h").read_text()


def test_library_loads_beside_harp(tmp_path):
    """A library loaded into a process that runs harp too (ctypes here) keeps
    its runtime to itself: its only exports are its entry points."""
    if CC is None:
        pytest.skip("no C compiler to link with")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    harp.export(lambda t: t * 3 + 1, (x,), tmp_path / "libside.so")
    lib = ctypes.CDLL(str(tmp_path / "libside.so"))

    class T(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("rank", ctypes.c_int64),
                    ("shape", ctypes.POINTER(ctypes.c_int64))]

    shape = (ctypes.c_int64 * 2)(2, 3)
    out = np.zeros_like(x)
    tin = T(x.ctypes.data, 2, shape)
    tout = T(out.ctypes.data, 2, shape)
    lib.side_main.restype = ctypes.c_int
    assert lib.side_main(ctypes.byref(tin), ctypes.byref(tout)) == 0
    np.testing.assert_array_equal(out, x * 3 + 1)
    bad = (ctypes.c_int64 * 2)(3, 2)
    assert lib.side_main(ctypes.byref(T(x.ctypes.data, 2, bad)),
                         ctypes.byref(tout)) == 3
    lib.side_last_error.restype = ctypes.c_char_p
    assert b"input0 has shape [3, 2], expected f32[2, 3]" in lib.side_last_error()
    for symbol in ("harp_lib_call", "memrefCopy", "_harp_packed_main"):
        assert not hasattr(lib, symbol), symbol
