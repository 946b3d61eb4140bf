"""harp-run as a command: the on-disk kernel cache across processes (hits,
corrupt entries rebuilt) and every error path ending in a message and exit
code 1, never a signal."""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harptest as h  # noqa: E402

ADD = """
func.func @main(%x: tensor<3x4xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %s = harp.map_reduce ins(%t, %y : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    harp.yield %c : f32
  } : tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}
"""


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "add.mlir").write_text(ADD)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.full((4, 3), 0.5, np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return tmp_path


def harp_run(args, cwd, cache=None):
    env = dict(os.environ)
    if cache is not None:
        env["HARP_CACHE_DIR"] = str(cache)
    return subprocess.run([h.HARP_RUN] + args, cwd=cwd, capture_output=True,
                          text=True, env=env)


def run_add(workdir, cache):
    proc = harp_run(["add.mlir", "--input", "x.npy", "--input", "y.npy",
                     "--output", "out.npy", "--stats"], workdir, cache)
    assert proc.returncode == 0, proc.stderr
    out = np.load(workdir / "out.npy")
    x = np.load(workdir / "x.npy")
    h.assert_close(out, x.T + np.float32(0.5))
    return proc.stderr


def test_disk_cache_hit_in_second_process(workdir):
    cache = workdir / "cache"
    first = run_add(workdir, cache)
    assert "0 disk hits, 1 compilations" in first
    assert len(glob.glob(str(cache / "*.o"))) == 1
    second = run_add(workdir, cache)
    assert "1 disk hits, 0 compilations" in second


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_corrupt_entry_is_rebuilt(workdir, damage):
    cache = workdir / "cache"
    run_add(workdir, cache)
    (entry,) = glob.glob(str(cache / "*.o"))
    data = bytearray(open(entry, "rb").read())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 3]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(os.urandom(len(data)))
    open(entry, "wb").write(bytes(data))
    rebuilt = run_add(workdir, cache)
    assert "0 disk hits, 1 compilations, 1 rejected disk entries" in rebuilt
    # The rebuilt entry is trusted again.
    assert "1 disk hits, 0 compilations, 0 rejected" in run_add(workdir, cache)


def test_no_disk_cache_writes_nothing(workdir):
    cache = workdir / "cache"
    proc = harp_run(["add.mlir", "--random-inputs", "3", "--no-disk-cache"],
                    workdir, cache)
    assert proc.returncode == 0, proc.stderr
    assert not cache.exists()


def test_random_inputs_are_deterministic(workdir):
    a = harp_run(["add.mlir", "--random-inputs", "7", "--print"], workdir)
    b = harp_run(["add.mlir", "--random-inputs", "7", "--print"], workdir)
    c = harp_run(["add.mlir", "--random-inputs", "8", "--print"], workdir)
    assert a.returncode == 0 and a.stdout == b.stdout and a.stdout != c.stdout
    assert "tensor<4x3xf32>" in a.stdout


ERRORS = [
    (["add.mlir", "--input", "x.npy"], "expects 2 inputs but 1 was given"),
    (["add.mlir", "--input", "x.npy", "--input", "x.npy"],
     "has type tensor<3x4xf32> but @main expects tensor<4x3xf32>"),
    (["add.mlir", "--input", "x64.npy", "--input", "y.npy"],
     "has type tensor<3x4xf64> but @main expects tensor<3x4xf32>"),
    (["add.mlir", "--entry", "nope", "--random-inputs", "1"], "nope"),
    (["missing.mlir", "--random-inputs", "1"], "missing.mlir"),
    (["add.mlir", "--input", "missing.npy", "--input", "y.npy"], "missing.npy"),
    (["add.mlir", "--input", "bad.npy", "--input", "y.npy"], "bad.npy"),
    (["bad.mlir", "--random-inputs", "1"], "invalid IR"),
    (["oob.mlir", "--random-inputs", "1"], "reads out of bounds"),
    # Compiling without running (a GPU object) verifies and locates too.
    (["oob.mlir", "--device", "cuda", "--compile-only"],
     "2:8: error: 'harp.view' op reads out of bounds"),
    (["add.mlir", "--random-inputs", "1", "--output", "a.npy", "--output", "b.npy"],
     "output"),
    (["add.mlir", "--random-inputs", "1", "--parallel-min-work=0"],
     "--parallel-min-work needs --parallel"),
    (["add.mlir", "--random-inputs", "1", "--parallel", "--parallel-min-work=-1"],
     "--parallel-min-work must be at least 0"),
]


@pytest.mark.parametrize("args,message", ERRORS, ids=[m for _, m in ERRORS])
def test_errors_are_messages(workdir, args, message):
    np.save(workdir / "x64.npy", np.zeros((3, 4), np.float64))
    (workdir / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    (workdir / "bad.mlir").write_text("func.func @main( {")
    (workdir / "oob.mlir").write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<5xf32> {\n"
        "  %v = harp.view %x <(d0) -> (d0)> : tensor<4xf32> -> tensor<5xf32>\n"
        "  return %v : tensor<5xf32>\n}\n")
    proc = harp_run(args, workdir, workdir / "cache")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "harp-run: error:" in proc.stderr
    assert message in proc.stderr, proc.stderr


SCALE_ROWS = """
func.func @main(%x: tensor<37x41xf32>) -> (tensor<37x41xf32>, tensor<37xf32>) {
  %y = harp.map_reduce ins(%x : tensor<37x41xf32>) {
  ^bb0(%a: f32):
    %two = arith.constant 2.0 : f32
    %b = arith.mulf %a, %two : f32
    harp.yield %b : f32
  } : tensor<37x41xf32>
  %s = harp.map_reduce ins(%x : tensor<37x41xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<37xf32>
  return %y, %s : tensor<37x41xf32>, tensor<37xf32>
}
"""


def test_profile_table_after_repeated_runs(tmp_path):
    (tmp_path / "scale.mlir").write_text(SCALE_ROWS)
    x = np.random.default_rng(0).uniform(-1, 1, (37, 41)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = harp_run(["scale.mlir", "--input", "x.npy", "--output", "y.npy",
                     "--output", "s.npy", "--profile", "--repeat", "4",
                     "--no-disk-cache"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    h.assert_close(np.load(tmp_path / "y.npy"), x * 2)
    h.assert_close(np.load(tmp_path / "s.npy"), x.sum(axis=1))
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("harp profile: "), proc.stderr
    whole = [l for l in lines if "@main (whole call)" in l]
    assert len(whole) == 1 and whole[0].split()[2] == "4", proc.stderr
    kernels = [l for l in lines if "@main #" in l]
    assert kernels and all(l.split()[2] == "4" for l in kernels), proc.stderr
    assert any("writes memref<37x41xf32> at scale.mlir:" in l
               for l in kernels), proc.stderr
    assert any("writes memref<37xf32> at scale.mlir:" in l
               for l in kernels), proc.stderr
    # Without --profile (or HARP_PROFILE) nothing is timed.
    env_off = dict(os.environ, HARP_PROFILE="")
    proc = subprocess.run([h.HARP_RUN, "scale.mlir", "--input", "x.npy",
                           "--repeat", "2"], cwd=tmp_path,
                          capture_output=True, text=True, env=env_off)
    assert proc.returncode == 0 and "harp profile" not in proc.stderr


@pytest.mark.parametrize("args,message", [
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--profile", "--device", "cuda"], "--profile are CPU options"),
])
def test_profile_option_errors(workdir, args, message):
    proc = harp_run(["add.mlir", "--input", "x.npy", "--input", "y.npy"] + args,
                    workdir)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
