#!/usr/bin/python3
"""harp's compile-time benchmark: how long the first training step takes
to compile, where the time goes, and how it grows with the program.

    /usr/bin/python3 bench/compile_time.py [--only models,layers,lstm,cat]
        [--models cnn,gpt] [--cpu PROFILE] [--timeout S] [--json PATH]

Every measurement runs in a fresh process whose disk cache is an empty
directory, so its first step compiles everything. For each it prints the
first step's wall time and harp.compile_stats()'s split of the compile:
harp's and MLIR's passes (lower), translation to LLVM IR, LLVM's
optimizations, code generation, the kernel functions LLVM compiled and
those found compiled by an earlier graph of the step (the kernel cache).

Patterns at growing sizes (program size grows linearly in N):
  layers  an MLP of N identical hidden layers (Linear + ReLU), one SGD step;
  lstm    an LSTM cell unrolled over N time steps, backpropagated through
          all of them (f64, as a language model's truncated BPTT);
  cat     harp.cat of N small tensors, realized;
and for each the growth exponent: the slope of log(time) against log(N)
(1 is linear). `models` is the model benchmark's models (bench/models.py),
first step only. See bench/README.md.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PYTHON_DIR = os.path.join(ROOT, "build", "python")

PATTERNS = {
    "layers": [2, 4, 8, 16],
    "lstm": [1, 2, 4, 8, 16],
    "cat": [25, 100, 400, 1000],
}
PHASES = ["lower_seconds", "translate_seconds", "optimize_seconds",
          "codegen_seconds"]


#===------------------------------------------------------------------------===#
# The programs, run in the worker process
#===------------------------------------------------------------------------===#

def layers_step(n):
    import numpy as np
    import harp
    rng = np.random.default_rng(0)
    width = 64
    mods = []
    for _ in range(n):
        mods += [harp.nn.Linear(width, width), harp.nn.ReLU()]
    net = harp.nn.Sequential(*mods, harp.nn.Linear(width, 10))
    opt = harp.optim.SGD(net.parameters(), lr=0.01)
    x = harp.tensor(rng.standard_normal((32, width)).astype(np.float32))
    y = harp.tensor(rng.integers(0, 10, 32))

    def step():
        opt.zero_grad()
        loss = harp.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def lstm_step(n):
    import numpy as np
    import harp
    rng = np.random.default_rng(0)
    batch, inputs, hidden = 8, 16, 32

    def param(*shape):
        return harp.tensor(rng.standard_normal(shape) * 0.1,
                           dtype=harp.float64, requires_grad=True)
    wx, wh, b = param(inputs, 4 * hidden), param(hidden, 4 * hidden), \
        param(4 * hidden)
    xs = [harp.tensor(rng.standard_normal((batch, inputs)))
          for _ in range(n)]

    def step():
        h = harp.zeros(batch, hidden, dtype=harp.float64)
        c = harp.zeros(batch, hidden, dtype=harp.float64)
        loss = None
        for x in xs:
            gates = x @ wx + h @ wh + b
            i = harp.sigmoid(gates[:, :hidden])
            f = harp.sigmoid(gates[:, hidden:2 * hidden])
            g = harp.tanh(gates[:, 2 * hidden:3 * hidden])
            o = harp.sigmoid(gates[:, 3 * hidden:])
            c = f * c + i * g
            h = o * harp.tanh(c)
            term = (h * h).mean()
            loss = term if loss is None else loss + term
        loss.backward()  # gradients accumulate across steps; unread
        return loss.item()
    return step


def cat_step(n):
    import numpy as np
    import harp
    rng = np.random.default_rng(0)
    parts = [harp.tensor(rng.standard_normal((2, 3)).astype(np.float32))
             for _ in range(n)]

    def step():
        return float(harp.cat(parts, 0).sum().item())
    return step


def model_step(key):
    sys.path.insert(0, BENCH)
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import numpy as np
    import models as M
    import harp
    harp.set_options(threads=False)
    rng = np.random.default_rng(0)
    batches = [M.MODELS[key][1](rng) for _ in range(M.BATCHES)]
    batches = [(x, y.astype(np.int64)) for x, y in batches]
    H = M.Lib("harp")
    harp.manual_seed(0)
    net = M.MODELS[key][0](H)
    net.train()
    return M.Trainer(H, key, net, batches).step


def worker(pattern, size):
    import harp
    harp.set_options(threads=False)
    if pattern == "models":
        step = model_step(size)
    else:
        step = {"layers": layers_step, "lstm": lstm_step,
                "cat": cat_step}[pattern](int(size))
    before = harp.compile_stats()
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    after = harp.compile_stats()
    t0 = time.perf_counter()
    step()
    second = time.perf_counter() - t0
    stats = {k: after[k] - before.get(k, 0) for k in after}
    print("RESULT " + json.dumps({"first_s": first, "second_s": second,
                                  "stats": stats}), flush=True)


#===------------------------------------------------------------------------===#
# The driver
#===------------------------------------------------------------------------===#

def measure(pattern, size, args):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    if args.cpu:
        env["HARP_CPU"] = args.cpu
    with tempfile.TemporaryDirectory(prefix="harp-compile-time-") as cache:
        env["HARP_CACHE_DIR"] = cache
        try:
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--worker",
                 pattern, str(size)],
                env=env, capture_output=True, text=True,
                timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {args.timeout} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"error": " | ".join(tail) or f"exit {proc.returncode}"}


def exponent(points):
    """Least-squares slope of log(seconds) against log(size)."""
    pts = [(math.log(s), math.log(t)) for s, t in points if t > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None


def row(name, res):
    if "error" in res:
        return f"{name:<22} error: {res['error']}"
    s = res["stats"]
    return (f"{name:<22} {res['first_s']:8.2f} s {res['second_s'] * 1e3:9.1f} ms"
            + "".join(f" {s.get(p, 0):8.2f}" for p in PHASES)
            + f" {s.get('kernel_functions', 0):8d}"
            + f" {s.get('kernels_reused', 0):8d}")


def header():
    return (f"{'program':<22} {'1st step':>10} {'2nd step':>12}"
            f" {'lower':>8} {'to LLVM':>8} {'opt':>8} {'codegen':>8}"
            f" {'kernels':>8} {'reused':>8}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="models,layers,lstm,cat",
                        help="comma-separated: models,layers,lstm,cat")
    parser.add_argument("--models", default=None,
                        help="comma-separated models of bench/models.py "
                             "(default: all)")
    parser.add_argument("--cpu", default=None,
                        help="harp's code for this profile (HARP_CPU)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds per measurement (600)")
    parser.add_argument("--json", default=None, help="write every number here")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker)

    sys.path.insert(0, BENCH)
    from models import MODEL_ORDER
    import platform
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/cpuinfo") as f:
            avx512 = " avx512f" in f.read()
    except OSError:
        avx512 = False
    print("harp compile-time benchmark: the first training step on an empty "
          "disk cache, and where its compile time goes")
    print(f"  CPU: {cpu} ({os.cpu_count()} cores), AVX-512: "
          f"{'yes' if avx512 else 'no'}; harp profile: {args.cpu or 'native'}")
    print(f"  Python {platform.python_version()}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    print("  columns: first step (compiles), second step (runs), then the "
          "compile's seconds per phase and the kernel functions compiled")
    results = {}
    only = args.only.split(",")
    if "models" in only:
        keys = args.models.split(",") if args.models else MODEL_ORDER
        print("\n== models (bench/models.py) ==")
        print(header())
        for key in keys:
            res = measure("models", key, args)
            results[f"models/{key}"] = res
            print(row(key, res), flush=True)
    for pattern in ("layers", "lstm", "cat"):
        if pattern not in only:
            continue
        print(f"\n== {pattern}: N = {', '.join(map(str, PATTERNS[pattern]))} ==")
        print(header())
        points = []
        for n in PATTERNS[pattern]:
            res = measure(pattern, n, args)
            results[f"{pattern}/{n}"] = res
            print(row(f"{pattern} N={n}", res), flush=True)
            if "error" not in res:
                points.append((n, res["first_s"]))
        e = exponent(points)
        if e is not None:
            print(f"growth exponent of the first step in N: {e:.2f} "
                  f"(1 = linear)")
            results[f"{pattern}/exponent"] = e
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
