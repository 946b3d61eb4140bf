"""The Tensor API builds IR with MLIR's builders: nothing is parsed, numbers
are arguments (a changed learning rate compiles nothing), compiled code is
found by the graph's structure, ops carry the user's file and line, and
compile options come from Python."""

import inspect
import math
import os
import re

import numpy as np
import pytest
import torch

import harp

HERE = os.path.abspath(__file__)


def line_of(marker):
    """The line of this file holding `marker` (a comment)."""
    for number, text in enumerate(open(HERE), 1):
        if marker in text and "line_of" not in text:
            return number
    raise AssertionError(marker)


def test_realize_and_backward_parse_no_ir():
    before = harp.compile_stats()["ir_parses"]
    x = harp.tensor(np.linspace(-1, 1, 12).reshape(3, 4), harp.float64)
    w = harp.tensor(np.linspace(0, 1, 4), harp.float64, requires_grad=True)
    loss = ((x * w).tanh() * 3.0 + (x @ w.reshape([4, 1])).sum()).mean()
    loss.backward()
    assert np.isfinite(loss.numpy())
    assert w.grad.numpy().shape == (4,)
    (x.softmax(1) * 2).numpy()
    assert harp.compile_stats()["ir_parses"] == before
    # harp.ir is the text door, and the JIT counts what it parses there.
    text = ("func.func @counted(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
            "  return %x : tensor<3xf32>\n}\n")
    harp.ir.call(text, "counted", [np.ones(3, np.float32)])
    assert harp.compile_stats()["ir_parses"] == before + 1


def adam(steps, lr=1e-4, b1=0.9, b2=0.999, eps=1e-8):
    """Fits w to minimise |A w - b|^2 with Adam, the bias corrections
    changing every step, all in harp tensors."""
    rng = np.random.default_rng(0)
    a = harp.tensor(rng.standard_normal((16, 4)), harp.float64)
    b = harp.tensor(rng.standard_normal((16, 1)), harp.float64)
    w = harp.tensor(np.zeros((4, 1)), harp.float64, requires_grad=True)
    m = harp.tensor(np.zeros((4, 1)), harp.float64)
    v = harp.tensor(np.zeros((4, 1)), harp.float64)
    for t in range(1, steps + 1):
        r = a @ w - b
        (r * r).mean().backward()
        g = w.grad
        m = (m * b1 + g * (1 - b1)).detach()
        v = (v * b2 + g * g * (1 - b2)).detach()
        step = lr / (1 - b1 ** t)        # a new number every step
        scale = 1 / (1 - b2 ** t) ** 0.5  # and another
        w_new = w - m * step / ((v * scale * scale).sqrt() + eps)
        w = harp.tensor(w_new.numpy(), harp.float64, requires_grad=True)
    return w.numpy(), a.numpy(), b.numpy()


def adam_numpy(a, b, steps, lr=1e-4, b1=0.9, b2=0.999, eps=1e-8):
    w = np.zeros((4, 1))
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, steps + 1):
        g = 2 * a.T @ (a @ w - b) / a.shape[0]
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step = lr / (1 - b1 ** t)
        scale = 1 / (1 - b2 ** t) ** 0.5
        w = w - m * step / (np.sqrt(v * scale * scale) + eps)
    return w


def test_adam_with_bias_correction_compiles_each_graph_once():
    adam(2)  # every distinct graph of a step, compiled (or found on disk)
    before = harp.compile_stats()
    w, a, b = adam(1000)
    after = harp.compile_stats()
    assert after["compiles"] == before["compiles"]
    assert after["disk_hits"] == before["disk_hits"]
    assert after["memory_hits"] - before["memory_hits"] >= 1000 * 4
    np.testing.assert_allclose(w, adam_numpy(a, b, 1000), rtol=1e-9, atol=1e-12)


def test_constants_are_part_of_the_code():
    x = harp.tensor(np.ones(5, np.float32))
    (x + harp.constant(1.5)).numpy()
    before = harp.compile_stats()
    np.testing.assert_array_equal((x + harp.constant(2.5)).numpy(), np.full(5, 3.5))
    after = harp.compile_stats()
    assert (after["compiles"] + after["disk_hits"]
            == before["compiles"] + before["disk_hits"] + 1)
    # Python numbers take the tensor's dtype, or float32 next to integers.
    i = harp.tensor(np.arange(4, dtype=np.int64))
    assert (i + 2).dtype == harp.int64 and (i * 0.5).dtype == harp.float32
    assert (i + 2**40).numpy()[1] == 2**40 + 1
    assert (harp.tensor(np.arange(3, dtype=np.uint8)) + 255).numpy()[1] == 0


def test_small_exponents_are_structural():
    x = harp.tensor(np.linspace(0.5, 2, 7, dtype=np.float32))
    (x ** 2.7).numpy()
    before = harp.compile_stats()
    np.testing.assert_allclose((x ** 2.9).numpy(), x.numpy() ** np.float32(2.9),
                               rtol=1e-6)
    after = harp.compile_stats()
    assert after["memory_hits"] == before["memory_hits"] + 1  # an argument
    squares = (x ** 2).numpy()
    np.testing.assert_allclose(squares, x.numpy() ** 2, rtol=1e-7)
    between = harp.compile_stats()
    (x ** 3).numpy()  # a constant of the code: not the kernel of x ** 2
    assert harp.compile_stats()["memory_hits"] == between["memory_hits"]
    assert "arith.constant dense<2.0" in (x ** 2).mlir()
    assert "arith.constant" not in (x ** 2.9).mlir()


def test_compile_errors_name_the_users_line(monkeypatch):
    # Every op lowering rejects (a test hook of the JIT) reports its location:
    # the user's line, not harp's.
    monkeypatch.setenv("HARP_DEBUG_REJECT_OP", "math.erf")
    # A length new to every run, so no cached kernel skips the lowering.
    n = 5 + int.from_bytes(os.urandom(2), "little")
    x = harp.tensor(np.linspace(1, 2, n, dtype=np.float32), requires_grad=True)
    y = (x.erf() * 3).sum()  # BUILT HERE
    with pytest.raises(harp.HarpError) as info:
        y.backward()
    message = str(info.value)
    assert "%s:%d: error: 'math.erf' op rejected" % (HERE, line_of("BUILT HERE")) \
        in message, message
    assert "harp could not compile the graph of backward()" in message
    with pytest.raises(harp.HarpError) as info:
        (x.erf() + 1).numpy()  # REALIZED HERE
    assert "%s:%d:" % (HERE, line_of("REALIZED HERE")) in str(info.value)
    monkeypatch.delenv("HARP_DEBUG_REJECT_OP")
    np.testing.assert_allclose((x.erf() + 1).numpy(),
                               [math.erf(v) + 1 for v in np.linspace(1, 2, n)],
                               rtol=1e-6)


def test_printed_ir_shows_locations():
    x = harp.tensor(np.ones((2, 3), np.float32))
    y = (x.exp() * 2).sum(axis=1)  # PRINTED HERE
    plain = y.mlir()
    assert "loc(" not in plain
    located = y.mlir(debug_info=True)
    assert '"%s":%d' % (HERE, line_of("PRINTED HERE")) in located, located
    assert "__init__.py" not in located


@pytest.mark.parametrize("preset", [None, "7"])
def test_threads_keep_workers_awake_between_kernels(preset):
    # With threads, idle OpenMP workers spin 1 ms before they sleep
    # (KMP_BLOCKTIME=1), unless the user set KMP_BLOCKTIME. A fresh process:
    # the runtime reads it once, when threads first load it.
    import subprocess
    import sys
    code = (
        "import ctypes, numpy as np, harp\n"
        "harp.set_options(threads=True)\n"
        "x = harp.tensor(np.ones((64, 64), np.float32))\n"
        "assert float((x @ x).sum().item()) == 64.0 ** 3\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.getenv.restype = ctypes.c_char_p\n"
        "print(libc.getenv(b'KMP_BLOCKTIME').decode())\n")
    env = dict(os.environ)
    env.pop("KMP_BLOCKTIME", None)
    if preset:
        env["KMP_BLOCKTIME"] = preset
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[-1] == (preset or "1"), out


def test_options_from_python():
    saved = harp.get_options()
    assert set(saved) == {"threads", "vectorize", "cpu", "profile"}
    x = harp.tensor(np.linspace(0, 1, 37, dtype=np.float32))
    expected = np.sin(np.linspace(0, 1, 37, dtype=np.float32)) * 3
    try:
        harp.set_options(vectorize=False)
        assert harp.get_options()["vectorize"] is False
        np.testing.assert_allclose((x.sin() * 3).numpy(), expected, rtol=1e-6)
        harp.set_options(vectorize=True, threads=True)
        np.testing.assert_allclose((x.sin() * 3).numpy(), expected, rtol=1e-6)
    finally:
        harp.set_options(**saved)
    assert harp.get_options() == saved
    # Per realization: the same graph for two CPU profiles is two kernels.
    # (cos: a graph not realized above, whatever $HARP_CPU names.)
    cosines = np.cos(np.linspace(0, 1, 37, dtype=np.float32)) * 4
    y = x.cos() * 4
    before = harp.compile_stats()
    np.testing.assert_allclose(y.numpy(cpu="x86-64-v2"), cosines, rtol=1e-6)
    z = x.cos() * 4
    np.testing.assert_allclose(z.numpy(cpu="x86-64-v2", vectorize=False),
                               cosines, rtol=1e-6)
    after = harp.compile_stats()
    assert after["memory_hits"] == before["memory_hits"]
    with pytest.raises(harp.HarpError, match="x86-64-v3"):
        harp.set_options(cpu="no-such-cpu")
    with pytest.raises(TypeError):
        harp.set_options(True)  # keyword-only
    assert harp.get_options() == saved


def _runs():
    """Modules compiled or found compiled so far (in memory or on disk)."""
    s = harp.compile_stats()
    return s["compiles"] + s["disk_hits"] + s["memory_hits"]


def test_backward_computes_the_intermediates_a_user_holds():
    # A model's output read after backward() (an accuracy, a log line) comes
    # from backward()'s module: reading it runs nothing, where it used to
    # compute the whole forward again.
    a = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
    x = harp.tensor(a, requires_grad=True)
    hidden = (x * 2).relu()
    out = hidden.exp()
    loss = (out * 3).sum()
    loss.backward()
    before = _runs()
    relu = np.maximum(2 * a, 0)
    np.testing.assert_allclose(hidden.numpy(), relu, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), np.exp(relu), rtol=1e-6)
    assert loss.item() == pytest.approx(float((3 * np.exp(relu)).sum()), rel=1e-5)
    assert _runs() == before
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.exp(relu) * (a > 0), rtol=1e-5)


def _backward_results(tmp_path, monkeypatch, hold):
    """The results of the module backward() compiles for a loss over a 3 x 11
    graph, with its intermediates held or dropped as `hold` says."""
    tmp_path.mkdir()
    monkeypatch.setenv("HARP_DEBUG_DUMP_IR", str(tmp_path))
    a = np.linspace(-1, 1, 33).reshape(3, 11)
    x = harp.tensor(a, requires_grad=True)
    hidden = (x * 2).relu()
    view = (x + 1).t()
    loss = (hidden.exp().sum() + view.sum()) * 0.5
    kept = hold(hidden, view)
    del hidden, view
    loss.backward()
    monkeypatch.delenv("HARP_DEBUG_DUMP_IR")
    [dumped] = [p for p in tmp_path.iterdir() if "@loss" in p.read_text()]
    signature = re.search(r"func\.func @main\(.*?\) -> \((.*?)\) \{",
                          dumped.read_text()).group(1)
    np.testing.assert_allclose(x.grad.numpy(), 0.5 * (2 * np.exp(2 * a) * (a > 0) + 1))
    return signature.count("tensor<"), kept


def test_backward_computes_held_intermediates_only(tmp_path, monkeypatch):
    # Held: the loss, `hidden` and the gradient. Not the view: computing it
    # again is a copy (a module keeping a view of its weight would otherwise
    # copy it at every step).
    results, (hidden, view) = _backward_results(tmp_path / "held", monkeypatch,
                                                lambda h, v: (h, v))
    assert results == 3
    before = _runs()
    hidden.numpy()
    assert _runs() == before
    a = np.linspace(-1, 1, 33).reshape(3, 11)
    np.testing.assert_allclose(view.numpy(), (a + 1).T)
    assert _runs() == before + 1
    # Dropped: the loss and the gradient.
    results, _ = _backward_results(tmp_path / "dropped", monkeypatch, lambda h, v: None)
    assert results == 2


def test_backward_does_not_count_the_running_statistics_as_holders(tmp_path, monkeypatch):
    # A training-mode batch norm's running statistics are deferred writes
    # computed from the batch's mean and variance: those graphs hold the
    # batch statistics, which are the writes' own, not a user's.
    monkeypatch.setenv("HARP_DEBUG_DUMP_IR", str(tmp_path))
    x = harp.tensor(np.linspace(-1, 1, 4 * 6).reshape(4, 6), requires_grad=True)
    norm = harp.nn.BatchNorm1d(6).double()
    loss = (norm(x) * harp.tensor(np.arange(6.0))).sum()
    loss.backward()
    monkeypatch.delenv("HARP_DEBUG_DUMP_IR")
    [dumped] = [p for p in tmp_path.iterdir() if "@loss" in p.read_text()]
    signature = re.search(r"func\.func @main\(.*?\) -> \((.*?)\) \{",
                          dumped.read_text()).group(1)
    # The loss, the two running statistics, and the gradients of x, the
    # weight and the bias.
    assert signature.count("tensor<") == 6, signature
    t = torch.nn.BatchNorm1d(6).double()
    tx = torch.tensor(np.linspace(-1, 1, 4 * 6).reshape(4, 6), requires_grad=True)
    (t(tx) * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(norm.running_mean.numpy(), t.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)
