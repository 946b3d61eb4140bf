#!/usr/bin/env python3
"""harp's GPU benchmarks: harp-bench --device cuda for each workload, with
its anchors timed in the same run on the same device (a device-to-device
copy of the largest input: the HBM roofline; cuBLAS sgemm for matmul) and,
where the Python running this has PyTorch with CUDA, the same computation in
PyTorch CUDA timed with CUDA events. Prints a table with the ratios and the
targets (issues #9 and #47) and writes bench/results-gpu.json. Needs a GPU
and its driver; without one it says why and exits 1.

  /usr/bin/python3 bench/gpu.py            # every workload
  /usr/bin/python3 bench/gpu.py --only gelu,matmul1024
  /usr/bin/python3 bench/gpu.py --only none --models mlp   # training steps only

--models trains bench/models.py's models on cuda, harp against PyTorch
CUDA (same initial weights and batches): the first step (compilation
included), the median step after warm-up, and the losses.
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "build", "bin", "harp-bench")

# name, harp-bench workload and size, what the target compares, target.
WORKLOADS = [
    ("gelu", "gelu", 1 << 24, "copy", 0.8),
    ("gelu1g", "gelu", 1 << 28, "copy", 0.85),
    ("sum", "sum", 1 << 24, "copy", 0.8),
    ("sum1g", "sum", 1 << 28, "copy", 0.85),
    ("rowsum", "rowsum", 1 << 24, "copy", 0.8),
    ("softmax", "softmax", 4096, "copy", None),
    ("layernorm", "layernorm", 8192, "copy", None),
    ("matmul1024", "matmul", 1024, "cublas", 0.6),
    ("matmul2048", "matmul", 2048, "cublas", 0.6),
]

# Workloads whose target is PyTorch CUDA rather than the roofline (#47).
TORCH_TARGETS = {"softmax": 1.0, "layernorm": 1.0}


def torch_anchor(workload, size, reps):
    """PyTorch CUDA's best time for the same computation, from CUDA events,
    or None where this Python has no PyTorch with CUDA."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    gen = torch.Generator(device="cuda").manual_seed(0)
    rand = lambda *shape: torch.rand(*shape, device="cuda", generator=gen)
    if workload == "gelu":
        x = rand(size)
        fn = lambda: torch.nn.functional.gelu(x, approximate="tanh")
    elif workload == "sum":
        x = rand(size)
        fn = lambda: x.sum()
    elif workload == "rowsum":
        x = rand(4096, size // 4096)
        fn = lambda: x.sum(1)
    elif workload == "softmax":
        x = rand(size, size)
        fn = lambda: torch.softmax(x, 1)
    elif workload == "layernorm":
        x, g, b = rand(size, 1024), rand(1024), rand(1024)
        fn = lambda: torch.nn.functional.layer_norm(x, (1024,), g, b)
    elif workload == "matmul":
        a, b = rand(size, size), rand(size, size)
        torch.backends.cuda.matmul.allow_tf32 = False
        fn = lambda: a @ b
    else:
        return None
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return best


def run(workload, size, reps, per_thread=None):
    cmd = [BENCH, workload, str(size), "--device", "cuda", "--reps", str(reps)]
    if per_thread:
        cmd += ["--gpu-elements-per-thread", str(per_thread)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    try:
        return json.loads(line)
    except ValueError:
        return {"ok": False, "error": proc.stderr.strip() or "no output"}


def row(name, result, anchor, target):
    if "error" in result:
        return [name, "error: " + result["error"][:70], "", "", "", ""]
    t = result["best_s"]
    if anchor == "copy":
        rate = result["bytes"] / t / 1e9
        ref = result["copy_bytes"] / result["copy_best_s"] / 1e9
        cells = ["%.1f GB/s" % rate, "copy %.1f GB/s" % ref]
    else:
        rate = result["flops"] / t / 1e9
        if "cublas_best_s" not in result:
            return [name, "%.3f ms" % (t * 1e3), "%.1f GFLOP/s" % rate,
                    "cuBLAS: " + result.get("cublas_error", "?"), "",
                    "" if result["ok"] else "WRONG result"]
        ref = result["flops"] / result["cublas_best_s"] / 1e9
        cells = ["%.1f GFLOP/s" % rate, "cuBLAS %.1f GFLOP/s" % ref]
    ratio = rate / ref
    verdict = "" if target is None else (
        ("met" if ratio >= target else "MISSED") + " (>= %gx)" % target)
    if not result["ok"]:
        verdict = "WRONG result"
    return [name, "%.3f ms" % (t * 1e3)] + cells + ["%.2fx" % ratio, verdict]


def model_steps(key, steps=10, warmup=3, device="cuda"):
    """harp and PyTorch training `key` of bench/models.py on `device`."""
    import time
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import models as M
    import harp
    build = M.MODELS[key][0]
    rng = np.random.default_rng(0)
    batches = [M.MODELS[key][1](rng) for _ in range(M.BATCHES)]
    batches = [(x, y.astype(np.int64)) for x, y in batches]
    torch.manual_seed(0)
    T, H = M.Lib("torch"), M.Lib("harp")
    tnet = build(T)
    state = {k: v.detach().numpy().copy() for k, v in tnet.state_dict().items()}
    hnet = build(H)
    hnet.load_state_dict(state)
    tnet.to(device)
    hnet.to(device)
    out = {}
    tsync = torch.cuda.synchronize if device == "cuda" else lambda: None
    for name, L, net, sync in (
            ("torch", T, tnet, tsync),
            ("harp", H, hnet, lambda: None)):
        tr = M.Trainer(L, key, net, [])
        if name == "torch":
            tr.batches = [(torch.from_numpy(x).to(device),
                           torch.from_numpy(y).to(device)) for x, y in batches]
        else:
            tr.batches = [(harp.tensor(x, device=device),
                           harp.tensor(y, device=device)) for x, y in batches]
        t0 = time.perf_counter()
        losses = [tr.step()]
        sync()
        first = time.perf_counter() - t0
        for _ in range(warmup):
            losses.append(tr.step())
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            losses.append(tr.step())
            sync()
            times.append(time.perf_counter() - t0)
        out[name] = {"first_s": first, "median_s": float(np.median(times)),
                     "losses": losses[:4]}
    if device == "cuda":
        out["harp"]["memory"] = harp.cuda.memory_stats()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--elements-per-thread", type=int,
                        help="harp-gpu-kernels' elements-per-thread (default: "
                        "the pipeline's)")
    parser.add_argument("--models", default="",
                        help="comma-separated bench/models.py models to train "
                        "on cuda against PyTorch CUDA (e.g. mlp)")
    args = parser.parse_args()
    if not os.path.exists(BENCH):
        subprocess.run(["ninja", "-C", os.path.join(ROOT, "build"), "harp-bench"],
                       check=True)
    chosen = [w for w in WORKLOADS
              if not args.only or w[0] in args.only.split(",")]
    results, rows = {}, []
    for name, workload, size, anchor, target in chosen:
        result = run(workload, size, args.reps, args.elements_per_thread)
        results[name] = result
        if "error" in result and "driver" in result["error"]:
            sys.exit("bench/gpu.py: " + result["error"])
        cells = row(name, result, anchor, target)
        torch_s = torch_anchor(workload, size, args.reps)
        if torch_s is not None:
            result["torch_best_s"] = torch_s
        if torch_s is None or "best_s" not in result:
            cells.append("")
        else:
            ratio = torch_s / result["best_s"]
            cells.append("%.3f ms, %.2fx" % (torch_s * 1e3, ratio))
            if name in TORCH_TARGETS and result["ok"]:
                cells[5] = ("met" if ratio >= TORCH_TARGETS[name] else
                            "MISSED") + " (>= %gx PyTorch)" % TORCH_TARGETS[name]
        rows.append(cells)
    device = next((r["device"] for r in results.values() if "device" in r), "?")
    header = ["workload", "harp", "rate", "anchor", "ratio", "target",
              "PyTorch CUDA"]
    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]
    print("harp on %s (best of %d, device buffers, anchors in the same run;"
          " PyTorch timed with CUDA events)" % (device, args.reps))
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    models = {}
    for key in filter(None, args.models.split(",")):
        try:
            models[key] = r = model_steps(key)
        except Exception as e:  # a model that fails on cuda is a result too
            models[key] = {"error": "%s: %s" % (type(e).__name__, e)}
            print("model %s on cuda: %s" % (key, models[key]["error"][:300]))
            continue
        h, t = r["harp"], r["torch"]
        print("model %s on cuda: harp step %.2f ms (first %.2f s), PyTorch CUDA "
              "%.2f ms (first %.2f s): %.2fx; losses harp %s, PyTorch %s"
              % (key, h["median_s"] * 1e3, h["first_s"], t["median_s"] * 1e3,
                 t["first_s"], t["median_s"] / h["median_s"],
                 ["%.5f" % v for v in h["losses"]],
                 ["%.5f" % v for v in t["losses"]]))
        if "memory" in h:
            print("  harp's device memory after the steps: %s" % h["memory"])
    with open(os.path.join(ROOT, "bench", "results-gpu.json"), "w") as f:
        json.dump({"device": device, "results": results, "models": models},
                  f, indent=1)


if __name__ == "__main__":
    main()
