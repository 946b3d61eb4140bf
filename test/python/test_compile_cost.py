"""What compiling costs: harp.compile_stats()'s kernel functions and phase
times, and the mechanisms that keep compile time linear (every kernel a
function of its own, equal kernels compiled once: harp-outline-kernels; a
kernel met again in another graph or process reused: the kernel cache).

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
losses = sys.argv[2].split(",") if len(sys.argv) > 2 else ["mean"]
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
steps = []
for reduce in losses:
    net.zero_grad()
    before = harp.compile_stats()
    loss = getattr(net(x) ** 2, reduce)()
    loss.backward()
    after = harp.compile_stats()
    steps.append({
        "loss": loss.item(),
        "grad": net[0].weight.grad.numpy().tolist(),
        "stats": {k: after[k] - before[k] for k in after},
    })
print(json.dumps(steps[0] if len(steps) == 1 else steps))
"""


def run_step(n, tmp_path, threads=None, cache=None, losses=None,
             kernel_cache=True, cpu=None):
    """Runs SCRIPT in a fresh process: one step of the loss `mean` (the
    default), or one step per loss of `losses` ("mean", "sum")."""
    env = dict(os.environ, HARP_CACHE_DIR=str(tmp_path / (cache or f"cache{n}")))
    for name in ("HARP_COMPILE_THREADS", "HARP_KERNEL_CACHE", "HARP_CPU"):
        env.pop(name, None)
    if threads is not None:
        env["HARP_COMPILE_THREADS"] = str(threads)
    if not kernel_cache:
        env["HARP_KERNEL_CACHE"] = "0"
    if cpu is not None:
        env["HARP_CPU"] = cpu
    args = [str(n)] + ([",".join(losses)] if losses else [])
    proc = subprocess.run([sys.executable, "-c", SCRIPT] + args,
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



def check_step(res, n, scale=1.0):
    """`res` is the step of SCRIPT with n layers whose loss is `scale`
    times the mean's."""
    loss, grad = reference(n)
    np.testing.assert_allclose(res["loss"], loss * scale, rtol=1e-4)
    np.testing.assert_allclose(np.array(res["grad"]), grad * scale,
                               rtol=1e-3, atol=1e-6 * scale)


def payload_parts(payload):
    """The number of objects of a payload in parts ("HARPPRTS"), else 1."""
    if payload.startswith(b"HARPPRTS"):
        return int.from_bytes(payload[8:16], "little")
    assert payload.startswith(b"\x7fELF")
    return 1


def kernel_groups(payload):
    """The objects of a module compiled with its kernels apart
    ("HARPKRNS"): each object's kernel symbols; the last object is the
    module's own (its entry functions and the kernels compiled with them)."""
    assert payload.startswith(b"HARPKRNS")
    pos = 8

    def count():
        nonlocal pos
        pos += 8
        return int.from_bytes(payload[pos - 8:pos], "little")

    def chunk():
        nonlocal pos
        n = count()
        pos += n
        return payload[pos - n:pos]

    groups = []
    for _ in range(count()):
        symbols = [chunk().decode() for _ in range(count())]
        assert chunk().startswith(b"\x7fELF")
        groups.append(symbols)
    assert pos == len(payload)
    return groups


def test_compiling_kernels_apart_on_threads(tmp_path):
    # The kernels compile apart from their module, a part per 4 of them
    # on as many threads as there are (the first part with the module's
    # entry functions): the results are equal on 1 and 2 threads, and the
    # module's disk entry holds its parts, which a fresh process loads alone.
    one = run_step(7, tmp_path, threads=1, cache="one")
    two = run_step(7, tmp_path, threads=2, cache="two")
    check_step(one, 7)
    kernels = one["stats"]["kernel_functions"]
    assert kernels >= 8 and one["stats"]["kernels_reused"] == 0
    assert two["loss"] == one["loss"]
    assert two["grad"] == one["grad"]
    for cache, groups in (("one", 1), ("two", 2)):
        [payload] = cached_payloads(tmp_path / cache)
        symbols = kernel_groups(payload)
        assert len(symbols) == groups
        assert sum(map(len, symbols)) == kernels
        assert all(name.startswith("_harp_k_") for g in symbols for name in g)
    warm = run_step(7, tmp_path, threads=2, cache="two")
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["disk_hits"] == 1
    assert warm["loss"] == one["loss"] and warm["grad"] == one["grad"]


def test_compiling_in_parts(tmp_path):
    # Without the kernel cache (HARP_KERNEL_CACHE=0), a module of many
    # kernel functions compiled on 2 threads is two LLVM modules, one object
    # each, joined in one disk entry; the results are those of one thread
    # and of the kernels compiled apart, and a fresh process loads the
    # joined entry.
    one = run_step(7, tmp_path, threads=1, cache="one", kernel_cache=False)
    two = run_step(7, tmp_path, threads=2, cache="two", kernel_cache=False)
    assert one["stats"]["kernel_functions"] >= 8  # enough for 2 parts
    assert two["loss"] == one["loss"]
    assert two["grad"] == one["grad"]
    [single] = cached_payloads(tmp_path / "one")
    assert single.startswith(b"\x7fELF")
    [parts] = cached_payloads(tmp_path / "two")
    assert payload_parts(parts) == 2
    assert parts.count(b"\x7fELF") >= 2
    assert not (tmp_path / "two" / "kernels").exists()
    warm = run_step(7, tmp_path, threads=2, cache="two", kernel_cache=False)
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["disk_hits"] == 1
    assert warm["loss"] == one["loss"] and warm["grad"] == one["grad"]
    apart = run_step(7, tmp_path, threads=2, cache="apart")
    assert apart["loss"] == one["loss"] and apart["grad"] == one["grad"]


def test_kernels_reused_by_another_graph(tmp_path):
    # The same model with its loss summed instead of averaged is a new
    # graph (one compile), but only the kernels that differ compile: the
    # layers' forward and backward kernels are found compiled.
    mean, total = run_step(5, tmp_path, losses=["mean", "sum"])
    check_step(mean, 5)
    check_step(total, 5, scale=8 * 16)
    assert mean["stats"]["compiles"] == 1 and total["stats"]["compiles"] == 1
    assert mean["stats"]["kernels_reused"] == 0
    reused = total["stats"]["kernels_reused"]
    assert reused > 0, total["stats"]
    assert total["stats"]["kernel_functions"] < mean["stats"]["kernel_functions"]
    # Without the kernel cache the second graph compiles all of its own.
    _, whole = run_step(5, tmp_path, losses=["mean", "sum"], cache="whole",
                        kernel_cache=False)
    assert whole["stats"]["kernels_reused"] == 0
    assert (whole["stats"]["kernel_functions"]
            >= total["stats"]["kernel_functions"] + reused)
    assert whole["loss"] == total["loss"] and whole["grad"] == total["grad"]


def test_kernels_of_a_loaded_entry_serve_new_graphs(tmp_path):
    # A process that loads a module from the disk cache gets its kernels:
    # the summed loss's graph, never compiled, compiles only what differs.
    first = run_step(5, tmp_path, cache="shared")
    mean, total = run_step(5, tmp_path, cache="shared", losses=["mean", "sum"])
    assert mean["stats"]["disk_hits"] == 1 and mean["stats"]["compiles"] == 0
    assert mean["loss"] == first["loss"] and mean["grad"] == first["grad"]
    check_step(total, 5, scale=8 * 16)
    assert total["stats"]["disk_hits"] == 0 and total["stats"]["compiles"] == 1
    assert total["stats"]["kernels_reused"] > 0, total["stats"]
    assert (total["stats"]["kernel_functions"]
            < first["stats"]["kernel_functions"])


def test_kernels_not_shared_between_targets(tmp_path):
    # A kernel's key holds the target: x86-64-v2 code (128-bit vectors)
    # never reuses the native build's kernels from the same cache.
    native = run_step(3, tmp_path, cache="shared")
    v2 = run_step(3, tmp_path, cache="shared", cpu="x86-64-v2")
    assert native["stats"]["kernel_functions"] > 0
    assert v2["stats"]["kernels_reused"] == 0 and v2["stats"]["compiles"] == 1
    check_step(v2, 3)


def test_entry_that_reused_kernels_loads_alone(tmp_path):
    # The summed loss's module reused kernels compiled with the mean's
    # module, so its disk entry carries the mean's objects, whose entry
    # functions call kernels the entry does not carry. A fresh process
    # loads it from disk alone, without compiling, and computes the same.
    mean, total = run_step(5, tmp_path, cache="shared", losses=["mean", "sum"])
    assert total["stats"]["kernels_reused"] > 0, total["stats"]
    alone = run_step(5, tmp_path, cache="shared", losses=["sum"])
    assert alone["stats"]["disk_hits"] == 1, alone["stats"]
    assert alone["stats"]["compiles"] == 0, alone["stats"]
    assert alone["loss"] == total["loss"] and alone["grad"] == total["grad"]
