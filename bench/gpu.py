#!/usr/bin/env python3
"""harp's GPU benchmarks: harp-bench --device cuda for each workload, with
its anchors timed in the same run on the same device (a device-to-device
copy of the largest input: the HBM roofline; cuBLAS sgemm for matmul).
Prints a table with the ratios and the targets of issue #9 and writes
bench/results-gpu.json. Needs a GPU and its driver; without one it says why
and exits 1.

  /usr/bin/python3 bench/gpu.py            # every workload
  /usr/bin/python3 bench/gpu.py --only gelu,matmul1024
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
    ("sum", "sum", 1 << 24, "copy", 0.8),
    ("rowsum", "rowsum", 1 << 24, "copy", 0.8),
    ("softmax", "softmax", 4096, "copy", None),
    ("matmul1024", "matmul", 1024, "cublas", 0.6),
    ("matmul2048", "matmul", 2048, "cublas", 0.6),
]


def run(workload, size, reps):
    cmd = [BENCH, workload, str(size), "--device", "cuda", "--reps", str(reps)]
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
        ("met" if ratio >= target else "MISSED") + " (>= %.1fx)" % target)
    if not result["ok"]:
        verdict = "WRONG result"
    return [name, "%.3f ms" % (t * 1e3)] + cells + ["%.2fx" % ratio, verdict]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    if not os.path.exists(BENCH):
        subprocess.run(["ninja", "-C", os.path.join(ROOT, "build"), "harp-bench"],
                       check=True)
    chosen = [w for w in WORKLOADS
              if not args.only or w[0] in args.only.split(",")]
    results, rows = {}, []
    for name, workload, size, anchor, target in chosen:
        result = run(workload, size, args.reps)
        results[name] = result
        if "error" in result and "driver" in result["error"]:
            sys.exit("bench/gpu.py: " + result["error"])
        rows.append(row(name, result, anchor, target))
    device = next((r["device"] for r in results.values() if "device" in r), "?")
    header = ["workload", "harp", "rate", "anchor", "ratio", "target"]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(6)]
    print("harp on %s (best of %d, device buffers, anchors in the same run)"
          % (device, args.reps))
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    with open(os.path.join(ROOT, "bench", "results-gpu.json"), "w") as f:
        json.dump({"device": device, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
