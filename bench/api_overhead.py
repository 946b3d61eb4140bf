"""What one small realization costs from Python: a 21-op element-wise graph
on a 64-element tensor, built and realized again and again with a number
that changes every time (a learning rate, a bias correction), and with the
same number every time (a plain cache hit).

    /usr/bin/python3 bench/api_overhead.py [--harp-path DIR] [--reps N]

harp's time per realization is split into building the graph in Python
and realize() (finding the compiled code by the graph's structure, then the
call); the anchors are the same 20 ops in PyTorch eager mode and in NumPy,
in this process. It prints microseconds per realization and the ratios,
with the CPU it ran on. `--harp-path` points at another build's python/
directory (to compare two versions of harp on one machine).
"""

import argparse
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def graph(x, scale, lib):
    """20 element-wise ops; `scale` is a Python number."""
    tanh = {"numpy": lambda v: lib.tanh(v), "torch": lambda v: v.tanh(),
            "harp": lambda v: v.tanh()}[lib.__name__]
    y = x * scale                                # 1 op
    for _ in range(4):                           # 5 ops each: 21 in all
        y = tanh(y * 0.5 + 0.25) - y * 0.125
    return y


def best_of(fn, reps, budget=3.0):
    """Best and median time per call over 5 rounds of `reps` calls (fewer
    when a round would take more than `budget` / 5 seconds)."""
    start = time.perf_counter()
    fn(0)
    first = time.perf_counter() - start
    reps = max(1, min(reps, int(budget / 5 / max(first, 1e-9))))
    times = []
    for r in range(5):
        start = time.perf_counter()
        for i in range(reps):
            fn(1 + r * reps + i)
        times.append((time.perf_counter() - start) / reps)
    return min(times), statistics.median(times)


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--harp-path", default=os.path.join(ROOT, "build", "python"))
    ap.add_argument("--reps", type=int, default=2000)
    args = ap.parse_args()
    sys.path.insert(0, args.harp_path)
    import numpy as np
    import torch
    import harp
    torch.set_num_threads(1)
    data = np.linspace(-1, 1, 64, dtype=np.float32)
    x = harp.tensor(data)
    tx = torch.tensor(data)

    ops = None
    def harp_build(i):
        return graph(x, 1.0 + i * 1e-3, harp)

    def harp_realize(i):
        return harp_build(i).numpy()

    def harp_same_number(i):
        return harp_build(0).numpy()

    def torch_eager(i):
        return graph(tx, 1.0 + i * 1e-3, torch).numpy()

    def numpy_eager(i):
        return graph(data, 1.0 + i * 1e-3, np)

    harp_realize(0)
    stats = harp.compile_stats() if hasattr(harp, "compile_stats") else None
    results = {
        "harp: build the graph": best_of(harp_build, args.reps),
        "harp: build + realize": best_of(harp_realize, args.reps),
        "harp: same number each time": best_of(harp_same_number, args.reps),
        "PyTorch eager": best_of(torch_eager, args.reps),
        "NumPy": best_of(numpy_eager, args.reps),
    }
    if stats is not None:
        after = harp.compile_stats()
        ops = after["compiles"] - stats["compiles"]
    build = results["harp: build the graph"][0]
    total = results["harp: build + realize"][0]
    print("21-op element-wise graph on 64 f32, a new Python number each time")
    print(f"{'':28} {'best us':>9} {'median us':>10}")
    for name, (best, median) in results.items():
        print(f"{name:28} {best * 1e6:9.1f} {median * 1e6:10.1f}")
    print(f"{'harp: realize alone':28} {(total - build) * 1e6:9.1f}")
    print(f"harp / PyTorch eager: {results['PyTorch eager'][0] / total:.2f}x "
          f"(>1: harp faster); harp / NumPy: {results['NumPy'][0] / total:.2f}x")
    if ops is not None:
        print(f"compiles during the timed loops: {ops}")
    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores, "
          f"AVX-512: {'avx512f' in open('/proc/cpuinfo').read()}; "
          f"harp from {args.harp_path}")


if __name__ == "__main__":
    main()
