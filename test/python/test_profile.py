"""Kernel profiling (harp.set_options(profile=True), HARP_PROFILE): every
kernel of a compiled program is timed under a name saying what it is and
which line built it, results are unchanged, and the table is printed at
exit when the environment asks for it."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import harp

HERE = os.path.basename(__file__)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(np.float32)


def finish_deferred_writes():
    """Realizes a trivial expression: the in-place writes an earlier test
    left deferred (an optimizer step nothing read since) are done by the
    next realization, as a program of their own, which would be profiled
    inside the test (an extra '@main (whole call)', kernels of its file)."""
    (harp.zeros(1) + 1).numpy()


@pytest.fixture
def profiling():
    finish_deferred_writes()
    before = harp.get_options()["profile"]
    harp.set_options(profile=True)
    harp.reset_profile()
    try:
        yield
    finally:
        harp.set_options(profile=before)
        harp.reset_profile()


def by_name(rows, text):
    return [r for r in rows if text in r["kernel"]]


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (37, 53, 29), (64, 128, 96)])
def test_kernels_timed_and_named(profiling, m, k, n):
    assert harp.get_options()["profile"] is True
    a, b, c = rnd(m, k), rnd(k, n, seed=1), rnd(n, seed=2)
    runs = 3
    for i in range(runs):
        # A new input each run: the same program runs again.
        x = harp.tensor(a + i)
        got = (x @ harp.tensor(b) + harp.tensor(c)).relu().numpy()
        np.testing.assert_allclose(got, np.maximum((a + i) @ b + c, 0),
                                   rtol=1e-4, atol=1e-4)
    rows = harp.profile()
    whole = by_name(rows, "@main (whole call)")
    assert len(whole) == 1 and whole[0]["calls"] == runs
    kernels = [r for r in rows if r not in whole]
    assert kernels, rows
    for r in kernels:
        assert r["kernel"].startswith("@main #"), r
        assert r["calls"] == runs, r
        assert r["seconds"] >= 0
    # The result's buffer and this file's line are named.
    assert by_name(kernels, "writes memref<%dx%dxf32>" % (m, n)), rows
    assert all((" at %s:" % HERE) in r["kernel"] for r in kernels), rows
    # Kernels run inside the whole call.
    assert sum(r["seconds"] for r in kernels) <= whole[0]["seconds"] * 1.01 + 1e-6
    # The most time first.
    assert [r["seconds"] for r in rows] == sorted((r["seconds"] for r in rows),
                                                  reverse=True)
    # The flops each kernel does per call: the matmul's multiply-adds (two
    # each) and at most a few per result for the bias and the ReLU. The
    # names give three significant digits.
    prefix = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}
    flops = sum(float(v) * prefix[p] for r in kernels
                for v, p in re.findall(r" \(([0-9.]+) ([kMG]?)flop\)", r["kernel"]))
    assert 2 * m * k * n * 0.995 <= flops <= (2 * m * k * n + 4 * m * n) * 1.005, rows
    table = harp.format_profile()
    assert table.startswith("harp profile: %d kernels" % len(rows))
    assert "@main (whole call)" in table and "100.0%" in table


def test_backward_profiled(profiling):
    w = harp.tensor(rnd(19, 7))
    w.requires_grad = True
    x = harp.tensor(rnd(5, 19, seed=3))
    loss = (x @ w).tanh().sum()
    loss.backward()
    want = rnd(5, 19, seed=3).T @ (1 - np.tanh(rnd(5, 19, seed=3) @ rnd(19, 7)) ** 2)
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-4, atol=1e-5)
    rows = harp.profile()
    assert by_name(rows, "@main (whole call)")[0]["calls"] == 1
    assert by_name(rows, "writes memref<19x7xf32>"), rows


def test_reset_and_off(profiling):
    harp.tensor(rnd(4, 4)).exp().numpy()
    assert harp.profile()
    harp.reset_profile()
    assert harp.profile() == []
    harp.set_options(profile=False)
    # A program compiled without profiling records nothing.
    harp.tensor(rnd(4, 4, seed=9)).sin().numpy()
    assert harp.profile() == []
    assert harp.get_options()["profile"] is False


def test_environment_prints_table_at_exit():
    code = ("import numpy as np, harp\n"
            "x = harp.tensor(np.ones((33, 17), np.float32))\n"
            "for _ in range(2):\n"
            "    print(float((x * 2).sum().numpy()))\n")
    env = dict(os.environ, HARP_PROFILE="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1122.0", "1122.0"]
    assert "harp profile:" in proc.stderr
    line = [l for l in proc.stderr.splitlines() if "@main (whole call)" in l]
    assert len(line) == 1 and line[0].split()[2] == "2", proc.stderr
    # HARP_PROFILE=0 and unset mean off: no table.
    for value in ("0", ""):
        env = dict(os.environ, HARP_PROFILE=value)
        proc = subprocess.run([sys.executable, "-c", code],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0 and "harp profile" not in proc.stderr


def test_set_options_type_errors(profiling):
    with pytest.raises(TypeError, match="profile must be a bool, got str"):
        harp.set_options(profile="yes please")
    with pytest.raises(TypeError, match="threads must be a bool, got int"):
        harp.set_options(threads=1)
    with pytest.raises(TypeError, match="cpu must be a str, got int"):
        harp.set_options(cpu=3)
    harp.set_options(profile=np.bool_(False))
    assert harp.get_options()["profile"] is False


def test_ir_call_profiled(profiling):
    text = """
func.func @scale(%x: tensor<29x31xf32>) -> tensor<29x31xf32> {
  %y = harp.map_reduce ins(%x : tensor<29x31xf32>) {
  ^bb0(%a: f32):
    %three = arith.constant 3.0 : f32
    %b = arith.mulf %a, %three : f32
    harp.yield %b : f32
  } : tensor<29x31xf32>
  return %y : tensor<29x31xf32>
}
"""
    x = rnd(29, 31)
    for _ in range(2):
        (y,) = harp.ir.call(text, "scale", [x])
        np.testing.assert_allclose(y, 3 * x, rtol=1e-6)
    rows = harp.profile()
    assert by_name(rows, "@scale (whole call)")[0]["calls"] == 2, rows
    assert by_name(rows, "writes memref<29x31xf32>"), rows
