"""Graph programs (docs/GraphDSL.md) run through harp-run against NumPy: the
specification's examples, the MLP and the convolutional network of
examples/graph, a discrete Fourier transform in complex tensors against
NumPy's FFT, recursion ended by a static `if`, and harp-run's errors for
graph files."""

import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harptest  # noqa: E402

EXAMPLES = os.path.join(harptest.ROOT, "examples", "graph")


def run_graph(program, *inputs, args=(), expect_error=False):
    """Runs graph program `program` (a path under examples/graph or text)
    on `inputs`; returns the results (or the error text)."""
    with tempfile.TemporaryDirectory() as tmp:
        if program.endswith(".graph") and "\n" not in program:
            path = os.path.join(EXAMPLES, program)
        else:
            path = os.path.join(tmp, "program.graph")
            with open(path, "w") as f:
                f.write(program)
        cmd = [harptest.HARP_RUN, path]
        for i, a in enumerate(inputs):
            name = os.path.join(tmp, "in%d.npy" % i)
            np.save(name, np.asarray(a))
            cmd += ["--input", name]
        outs = [os.path.join(tmp, "out%d.npy" % i) for i in range(4)]
        proc = subprocess.run(cmd + list(args) + ["--print"],
                              capture_output=True, text=True)
        if expect_error:
            assert proc.returncode == 1, proc.stdout + proc.stderr
            return proc.stderr
        assert proc.returncode == 0, proc.stderr
        # Results again as arrays: rerun with --output per result.
        count = proc.stdout.count("tensor<")
        proc = subprocess.run(
            cmd + list(args) + sum([["--output", o] for o in outs[:count]], []),
            capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return [np.load(o) for o in outs[:count]]


def test_spec_example():
    x = np.linspace(-2, 2, 10).astype(np.float32)
    out1, out2 = run_graph("spec.graph", x)
    harptest.assert_close(out1, np.maximum(x + 1, 0))
    harptest.assert_close(out2, x * 2)


COMPLEX = """
graph spectrum(x: f64[N], k: f64[N]) -> (s: c128[N]) {
    // One term of a discrete Fourier sum per (n, k): x[n] exp(-2 pi i k n / N).
    let n = cast(arange(N), f64)
    let phase = cast(outer(k, n), c128) * (-2j * 3.141592653589793 / N)
    s = reshape(matmul(exp(phase), cast(reshape(x, [N, 1]), c128)), [N])
}
graph main(x: f64[N], k: f64[N]) -> (s: c128[N], power: f64[N], phase: f64[N]) {
    s = spectrum(x, k)
    power = abs(s) ** 2.0
    phase = angle(s)
}
"""


@pytest.mark.parametrize("n", [1, 7, 16, 33])
def test_complex_program(n):
    # A discrete Fourier transform written with complex tensors, against
    # NumPy's FFT.
    x = np.random.default_rng(n).standard_normal(n)
    s, power, phase = run_graph(COMPLEX, x, np.arange(n, dtype=np.float64))
    expected = np.fft.fft(x)
    assert s.dtype == np.complex128
    harptest.assert_close(s, expected, rtol=1e-9, atol=1e-9)
    harptest.assert_close(power, np.abs(expected) ** 2, rtol=1e-9, atol=1e-9)
    keep = np.abs(expected) > 1e-6  # the phase of ~0 is rounding
    harptest.assert_close(phase[keep], np.angle(expected)[keep], rtol=1e-7,
                          atol=1e-7)


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("b,d,h,k", [(1, 1, 1, 1), (7, 13, 17, 5),
                                     (32, 64, 128, 10)])
def test_mlp(b, d, h, k):
    rng = np.random.default_rng(b * 1000 + d)
    x = rng.standard_normal((b, d)).astype(np.float32)
    w1 = rng.standard_normal((d, h)).astype(np.float32) / np.sqrt(d)
    b1 = rng.standard_normal(h).astype(np.float32)
    w2 = rng.standard_normal((h, k)).astype(np.float32) / np.sqrt(h)
    b2 = rng.standard_normal(k).astype(np.float32)
    probs, predicted = run_graph("mlp.graph", x, w1, b1, w2, b2)
    hidden = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    expected = softmax(hidden @ w2 + b2)
    np.testing.assert_allclose(probs, expected, rtol=1e-4, atol=1e-6)
    assert predicted.dtype == np.int64
    # Ties aside, the predicted class is the most probable one.
    np.testing.assert_array_equal(predicted, np.argmax(probs, axis=1))


def conv_same(x, w, b):
    """3x3 convolution, padding 1, of [N, C, S, S] by [F, C, 3, 3]."""
    n, c, s, _ = x.shape
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], s, s))
    for i in range(3):
        for j in range(3):
            out += np.einsum("ncyx,fc->nfyx", p[:, :, i:i + s, j:j + s],
                             w[:, :, i, j])
    return out + b[None, :, None, None]


def max_pool2(x):
    n, c, s, _ = x.shape
    return x.reshape(n, c, s // 2, 2, s // 2, 2).max(axis=(3, 5))


@pytest.mark.parametrize("n", [1, 3])
def test_convnet(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    w1 = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(4).astype(np.float32)
    w2 = rng.standard_normal((8, 4, 3, 3)).astype(np.float32) / 6
    b2 = rng.standard_normal(8).astype(np.float32)
    wf = rng.standard_normal((32, 10)).astype(np.float32)
    (logits,) = run_graph("convnet.graph", x, w1, b1, w2, b2, wf)
    h1 = max_pool2(np.maximum(conv_same(x.astype(np.float64), w1, b1), 0))
    h2 = max_pool2(np.maximum(conv_same(h1, w2, b2), 0))
    expected = h2.reshape(n, 32) @ wf
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)


HALFSUM = """
graph halfsum(x: f64[N]) -> (s: f64[]) {
    if N == 1 {
        s = reshape(x, [])
    } else {
        let h = N / 2
        s = halfsum(slice(x, 0, 0, h)) + halfsum(slice(x, 0, h, N))
    }
}
graph main(x: f64[N]) -> (s: f64[]) {
    s = halfsum(x)
}
"""


@pytest.mark.parametrize("n", [1, 2, 7, 31, 512])
def test_recursion(n):
    x = np.random.default_rng(n).standard_normal(n)
    (s,) = run_graph(HALFSUM, x)
    np.testing.assert_allclose(s, x.sum(), rtol=1e-12)


def test_gradcheck_through_calls():
    # harp-autodiff differentiates main through its subgraph calls.
    text = HALFSUM.replace("s = reshape(x, [])", "s = square(reshape(x, []))")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "halfsum.graph")
        with open(path, "w") as f:
            f.write(text)
        proc = subprocess.run([harptest.HARP_RUN, path, "--bind", "N=7",
                               "--random-inputs", "5", "--gradcheck"],
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "gradcheck @main: 7 elements" in proc.stdout
    assert proc.stdout.rstrip().endswith("PASS")


def test_recursion_limit():
    x = np.ones(1024)
    err = run_graph(HALFSUM, x, expect_error=True)
    assert "graph calls nest deeper than the limit of 10" in err
    (s,) = run_graph(HALFSUM, x, args=["--max-depth", "11"])
    assert s == 1024


def test_errors():
    x = np.ones(10, np.float64)
    err = run_graph("spec.graph", x, expect_error=True)
    assert "input #1" in err and "has type tensor<10xf64> but @main " \
        "expects tensor<10xf32>" in err
    err = run_graph("spec.graph", np.ones(9, np.float32), expect_error=True)
    assert "graph 'main': input 'input' is declared f32[10] but the " \
        "argument is f32[9] (dim 0 is 9, not 10)" in err
    assert "spec.graph:18:" in err
    err = run_graph("mlp.graph", args=["--random-inputs", "1"],
                    expect_error=True)
    assert "dim 'B' of graph 'main' is not bound: give its size (--bind " \
        "B=SIZE" in err
    err = run_graph("convnet.graph", args=["--bind", "N=2,Q=3",
                                           "--random-inputs", "1"],
                    expect_error=True)
    assert "--bind Q=3: graph 'main' has no dim 'Q'" in err
    err = run_graph("convnet.graph", args=["--bind", "N=2=3"],
                    expect_error=True)
    assert "--bind: expected NAME=SIZE, got 'N=2=3'" in err
    # A binding that disagrees with the inputs' shapes.
    err = run_graph("spec.graph", np.ones(10, np.float32),
                    args=["--bind", "N=3"], expect_error=True)
    assert "has no dim 'N'" in err
