"""What compiling costs: harp.compile_stats()'s kernel functions and phase
times, and the mechanism that keeps compile time linear (every kernel a
function of its own, equal kernels compiled once: harp-outline-kernels).

Each case runs in a fresh process on an empty disk cache, so its graphs
compile (a cache hit would count nothing)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

# A training step of an MLP with `n` identical hidden layers; prints the
# loss, the first layer's gradient and the compile counters' increase.
SCRIPT = r"""
import json, sys
import numpy as np
import harp
n = int(sys.argv[1])
rng = np.random.default_rng(0)
width = 16
weights = [rng.standard_normal((width, width)).astype(np.float32) * 0.3
           for _ in range(n)]
mods = []
for w in weights:
    lin = harp.nn.Linear(width, width)
    lin.load_state_dict({"weight": w, "bias": np.zeros(width, np.float32)})
    mods += [lin, harp.nn.ReLU()]
net = harp.nn.Sequential(*mods)
x = harp.tensor(rng.standard_normal((8, width)).astype(np.float32))
before = harp.compile_stats()
loss = (net(x) ** 2).mean()
loss.backward()
after = harp.compile_stats()
print(json.dumps({
    "loss": loss.item(),
    "grad": net[0].weight.grad.numpy().tolist(),
    "stats": {k: after[k] - before[k] for k in after},
}))
"""


def run_step(n, tmp_path, threads=None, cache=None):
    env = dict(os.environ, HARP_CACHE_DIR=str(tmp_path / (cache or f"cache{n}")))
    env.pop("HARP_COMPILE_THREADS", None)
    if threads is not None:
        env["HARP_COMPILE_THREADS"] = str(threads)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(n)],
                          capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def reference(n):
    """The same step in NumPy: loss and the first layer's weight gradient."""
    rng = np.random.default_rng(0)
    width = 16
    weights = [rng.standard_normal((width, width)).astype(np.float64) * 0.3
               for _ in range(n)]
    x = rng.standard_normal((8, width)).astype(np.float32).astype(np.float64)
    acts, pre = [x], []
    for w in weights:
        z = acts[-1] @ w.T
        pre.append(z)
        acts.append(np.maximum(z, 0))
    out = acts[-1]
    loss = (out ** 2).mean()
    g = 2 * out / out.size
    for i in reversed(range(n)):
        g = g * (pre[i] > 0)
        if i == 0:
            return loss, g.T @ acts[0]
        g = g @ weights[i]


def test_equal_layers_compile_once(tmp_path):
    # A model of N identical layers compiles as many kernel functions for
    # N = 3 as for N = 7: the layers' kernels (forward and backward) are
    # equal up to their buffers, and equal kernels are one function.
    few, many = run_step(3, tmp_path), run_step(7, tmp_path)
    for n, res in ((3, few), (7, many)):
        loss, grad = reference(n)
        np.testing.assert_allclose(res["loss"], loss, rtol=1e-4)
        np.testing.assert_allclose(np.array(res["grad"]), grad, rtol=1e-3,
                                   atol=1e-6)
        assert res["stats"]["compiles"] == 1, res["stats"]
    assert few["stats"]["kernel_functions"] > 0
    assert many["stats"]["kernel_functions"] == few["stats"]["kernel_functions"]


def test_compile_stats_phase_times(tmp_path):
    res = run_step(2, tmp_path)
    stats = res["stats"]
    for phase in ("lower_seconds", "translate_seconds", "optimize_seconds",
                  "codegen_seconds"):
        assert isinstance(stats[phase], float)
        assert stats[phase] > 0, (phase, stats)
    assert isinstance(stats["kernel_functions"], int)


def cached_payloads(cache_dir):
    """The objects of the disk cache's entries, past each entry's header
    (magic, checksum, size, key: 8 + 8 + 8 + 64 bytes)."""
    return [path.read_bytes()[88:] for path in cache_dir.glob("*.o")]


def test_compiling_in_parts(tmp_path):
    # A module of many kernel functions compiled on 2 threads: two LLVM
    # modules, one object each, joined in one disk entry; the results are
    # those of one thread, and a fresh process loads the joined entry.
    one = run_step(7, tmp_path, threads=1, cache="one")
    two = run_step(7, tmp_path, threads=2, cache="two")
    assert one["stats"]["kernel_functions"] >= 8  # enough for 2 parts
    assert two["loss"] == one["loss"]
    assert two["grad"] == one["grad"]
    [single] = cached_payloads(tmp_path / "one")
    assert single.startswith(b"\x7fELF")
    [parts] = cached_payloads(tmp_path / "two")
    assert parts.startswith(b"HARPPRTS")
    assert int.from_bytes(parts[8:16], "little") == 2
    assert parts.count(b"\x7fELF") >= 2
    warm = run_step(7, tmp_path, threads=2, cache="two")
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["disk_hits"] == 1
    assert warm["loss"] == one["loss"] and warm["grad"] == one["grad"]
