#!/usr/bin/python3
"""harp's benchmark suite (issue #8): harp, NumPy, PyTorch and a C roofline
loop side by side in one run.

    /usr/bin/python3 bench/run.py [--only KEY,...] [--rebuild]

Prints a table for 1 thread (the headline) and one for 2 threads, the machine
facts, and writes bench/results.json. See bench/README.md.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
BUILD = os.path.join(ROOT, "build")
HARP_BENCH = os.path.join(BUILD, "bin", "harp-bench")
RESULTS = os.path.join(BENCH, "results.json")

REPS = 10  # timed runs after one warm-up...
MAX_SECONDS = 20  # ...unless that takes longer: then fewer, but at least 3
THREADS = (1, 2)
N24 = 1 << 24

# (key, harp-bench workload, size, label, target). Targets:
#   ("C", name, r)      harp bandwidth >= r x the C roofline loop `name`
#   ("torch", r)        harp >= r x PyTorch's speed
#   ("blas", r)         harp >= r x NumPy at OpenBLAS's best coretype
#   ("best", r)         harp >= r x the faster of NumPy and PyTorch
#   ("ms", x), ("us", x)  compile latency below x
WORKLOADS = [
    ("gelu", "gelu", N24, "GELU-tanh chain 2^24", ("C", "triad", 0.85)),
    ("sum", "sum", N24, "sum 2^24", ("C", "read", 0.85)),
    ("rowsum", "rowsum", N24, "row-sum 4096x4096", ("C", "read", 0.85)),
    ("softmax", "softmax", 4096, "softmax 4096x4096", ("torch", 3.0)),
    ("layernorm", "layernorm", 8192, "layer norm 8192x1024", ("torch", 3.0)),
    ("matmul256", "matmul", 256, "matmul 256", ("blas", 0.8)),
    ("matmul512", "matmul", 512, "matmul 512", ("blas", 0.8)),
    ("matmul1024", "matmul", 1024, "matmul 1024", ("blas", 0.8)),
    ("matmul2048", "matmul", 2048, "matmul 2048", ("blas", 0.8)),
    ("mm_bias_gelu", "matmul_bias_gelu", 1024, "matmul+bias+GELU 1024",
     ("best", 1.0)),
    ("conv2d", "conv2d", 56, "conv2d 64->64 3x3 56x56", ("torch", 0.8)),
    ("gather", "gather", 8192, "gather 50000x512[8192]", ("best", 1.0)),
    ("transpose", "transpose", 4096, "transpose 4096x4096", ("best", 1.0)),
]
COMPILE_ROWS = [
    ("compile_cold", "compile small fused (cold)", ("ms", 100)),
    ("compile_hit", "compile small fused (hit)", ("us", 50)),
]

#===------------------------------------------------------------------------===#
# Anchors (run in a worker subprocess, so that thread and OpenBLAS variables
# are read when NumPy and PyTorch load)
#===------------------------------------------------------------------------===#


def time_calls(fn, max_seconds):
    """One warm-up, then REPS timed calls (at least 3 when slow)."""
    start = time.perf_counter()
    fn()
    warm = time.perf_counter() - start
    reps = min(REPS, max(3, int(max_seconds / max(warm, 1e-9))))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"reps": reps, "best_s": min(times),
            "median_s": statistics.median(times)}


def anchor_functions(lib, key, size):
    """A zero-argument function computing workload `key` with `lib`."""
    import numpy as np
    rng = np.random.default_rng(0)

    def rand(*shape):
        x = (rng.integers(-32, 33, size=shape) / 32).astype(np.float32)
        return torch.from_numpy(x) if lib == "torch" else x

    if lib == "torch":
        import torch
        import torch.nn.functional as F

        def gelu(z):
            return F.gelu(z, approximate="tanh")
    else:
        torch = None

        def gelu(z):
            t = z * z
            t *= z
            t *= 0.044715
            t += z
            t *= 0.7978845608
            np.tanh(t, out=t)
            t += 1
            t *= z
            t *= 0.5
            return t

    if key == "gelu":
        x = rand(size)
        return lambda: gelu(x)
    if key == "sum":
        x = rand(size)
        return lambda: x.sum()
    if key == "rowsum":
        x = rand(4096, size // 4096)
        return lambda: x.sum(1)
    if key == "softmax":
        x = rand(size, size)
        if torch:
            return lambda: torch.softmax(x, 1)

        def softmax():
            e = np.exp(x - x.max(1, keepdims=True))
            e /= e.sum(1, keepdims=True)
            return e
        return softmax
    if key == "layernorm":
        x, g, b = rand(size, 1024), rand(1024), rand(1024)
        if torch:
            return lambda: F.layer_norm(x, (1024,), g, b, 1e-5)

        def layer_norm():
            xc = x - x.mean(1, keepdims=True)
            var = np.einsum("ij,ij->i", xc, xc)[:, None] / 1024
            xc *= 1 / np.sqrt(var + 1e-5)
            xc *= g
            xc += b
            return xc
        return layer_norm
    if key.startswith("matmul"):
        a, b = rand(size, size), rand(size, size)
        return lambda: a @ b
    if key == "mm_bias_gelu":
        a, b, bias = rand(size, size), rand(size, size), rand(size)
        if torch:
            return lambda: gelu(torch.addmm(bias, a, b))

        def mm_bias_gelu():
            z = a @ b
            z += bias
            return gelu(z)
        return mm_bias_gelu
    if key == "conv2d":
        x, w = rand(1, 64, size, size), rand(64, 64, 3, 3)
        if torch:
            return lambda: F.conv2d(x, w, padding=1)
        w2 = w.reshape(64, 64 * 9)

        def conv2d():  # im2col and one BLAS matmul
            xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
            win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), (1, 2))
            cols = win.transpose(0, 3, 4, 1, 2).reshape(64 * 9, size * size)
            return (w2 @ cols).reshape(1, 64, size, size)
        return conv2d
    if key == "gather":
        table = rand(50000, 512)
        idx = rng.integers(0, 50000, size=size)
        if torch:
            idx = torch.from_numpy(idx)
            return lambda: torch.index_select(table, 0, idx)
        return lambda: np.take(table, idx, axis=0)
    if key == "transpose":
        x = rand(size, size)
        if torch:
            return lambda: x.t().contiguous()
        return lambda: np.ascontiguousarray(x.T)
    raise ValueError(key)


def blas_info():
    """The BLAS NumPy actually loaded (from the process's mappings)."""
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "blas" in os.path.basename(path).lower():
                libs.add(os.path.realpath(path))
    info = {"libraries": sorted(libs)}
    info["openblas"] = any("openblas" in p.lower() for p in libs)
    try:
        from threadpoolctl import threadpool_info
        for pool in threadpool_info():
            if pool.get("internal_api") == "openblas":
                info.update(version=pool.get("version"),
                            coretype=pool.get("architecture"),
                            num_threads=pool.get("num_threads"))
    except Exception:  # threadpoolctl is optional
        pass
    return info


def worker(lib, threads, keys):
    import numpy as np
    if lib == "torch":
        import torch
        torch.set_num_threads(threads)
    out = {"threads": threads}
    for key, _, size, _, _ in WORKLOADS:
        if key not in keys:
            continue
        try:
            out[key] = time_calls(anchor_functions(lib, key, size),
                                  MAX_SECONDS)
        except Exception as e:  # report, do not stop the suite
            out[key] = {"error": repr(e)}
    np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
    out["blas"] = blas_info()
    if lib == "torch":
        out["version"] = torch.__version__
        out["torch_threads"] = torch.get_num_threads()
    out["numpy_version"] = np.__version__
    print(json.dumps(out))


#===------------------------------------------------------------------------===#
# Driver
#===------------------------------------------------------------------------===#

T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:5.0f} s] {msg}", file=sys.stderr, flush=True)


def run_json(cmd, env=None, timeout=600):
    """Runs `cmd` and parses the JSON of its last stdout line."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout} s"}
    lines = p.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "error": (p.stderr or p.stdout)[-2000:]}


def thread_env(threads, coretype=None):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def run_anchor(lib, threads, keys, coretype=None):
    label = lib + (f" OPENBLAS_CORETYPE={coretype}" if coretype else "")
    log(f"{label}, {threads} thread(s)")
    return run_json([sys.executable, __file__, "--worker", lib, "--threads",
                     str(threads), "--only", ",".join(keys)],
                    env=thread_env(threads, coretype))


def run_roofline(tmp, threads):
    exe = os.path.join(tmp, "roofline")
    if not os.path.exists(exe):
        cc = shutil.which("cc") or "gcc"
        subprocess.run([cc, "-O3", "-march=native", "-fopenmp", "-o", exe,
                        os.path.join(BENCH, "roofline.c")], check=True)
    log(f"C roofline, {threads} thread(s)")
    return run_json([exe, str(N24), str(REPS), str(MAX_SECONDS)],
                    env=thread_env(threads))


def ensure_harp_bench(rebuild):
    if os.path.exists(HARP_BENCH) and not rebuild:
        return
    log("building harp-bench")
    if not os.path.exists(os.path.join(BUILD, "build.ninja")):
        subprocess.run(["cmake", "-G", "Ninja", "-S", ROOT, "-B", BUILD],
                       check=True)
    subprocess.run(["ninja", "-C", BUILD, "harp-bench"], check=True)


def machine_facts():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    flags = open("/proc/cpuinfo").read()
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always",
                             "--dirty"], capture_output=True, text=True)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "avx512f": " avx512f" in flags,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
        "threads": list(THREADS),
        "python": platform.python_version(),
        "harp_commit": commit.stdout.strip(),
    }


def fmt_time(s):
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.3g} s"
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} us"


def rate(key, res):
    """harp's GB/s or GFLOP/s for a result."""
    if res.get("flops"):
        return res["flops"] / res["best_s"] * 1e-9, "GFLOP/s"
    return res["bytes"] / res["best_s"] * 1e-9, "GB/s"


def build_rows(harp, anchors, c, blas_is_openblas):
    """Table rows for one thread count; `anchors` maps name -> worker JSON."""
    rows = []
    for key, _, _, label, target in WORKLOADS:
        if key not in harp:
            continue
        h = harp[key]
        np_env = anchors["numpy"].get(key, {})
        np_sx = anchors["numpy_skylakex"].get(key, {})
        np_best = min((r for r in (np_env, np_sx) if "best_s" in r),
                      key=lambda r: r["best_s"], default=None)
        torch = anchors["torch"].get(key)
        torch = torch if torch and "best_s" in torch else None
        row = {"key": key, "label": label, "harp": h, "numpy": np_best,
               "numpy_env": np_env, "numpy_skylakex": np_sx, "torch": torch}
        ok = h.get("ok") is True and "best_s" in h
        hs = h["best_s"] if ok else None
        row["vs_numpy"] = np_best["best_s"] / hs if ok and np_best else None
        row["vs_torch"] = torch["best_s"] / hs if ok and torch else None
        if target[0] == "C":
            cres = c.get(target[1], {})
            row["c"] = cres
            if ok and "gbps" in cres:
                row["vs_c"] = h["bytes"] / hs * 1e-9 / cres["gbps"]
        kind, need = target[0], target[-1]
        ratio = {"C": row.get("vs_c"), "torch": row["vs_torch"],
                 "blas": row["vs_numpy"],
                 "best": min((r for r in (row["vs_numpy"], row["vs_torch"])
                              if r), default=None)}[kind]
        row["target"] = {"C": f">= {need}x C {target[1]} GB/s",
                         "torch": f">= {need}x PyTorch",
                         "blas": f">= {need}x OpenBLAS best",
                         "best": f">= {need}x best of NumPy/PyTorch"}[kind]
        if not ok:
            row["status"] = "WRONG" if "best_s" in h else "FAILED"
        elif ratio is None:
            row["status"] = "n/a"
        elif kind == "blas" and not blas_is_openblas:
            row["status"] = "n/a (no OpenBLAS)"
        else:
            row["status"] = "met" if ratio >= need else "MISSED"
        rows.append(row)
    comp = harp.get("compile")
    for key, label, (unit, limit) in COMPILE_ROWS if comp else []:
        value = comp.get("cold_median_ms" if unit == "ms" else "hit_median_us")
        status = "FAILED" if value is None else (
            "met" if value < limit else "MISSED")
        note = (f"first Jit of the process: {comp['cold_first_ms']:.3g} ms"
                if unit == "ms" and value is not None else
                comp.get("error", ""))
        rows.append({"key": key, "label": label, "compile": value,
                     "unit": unit, "target": f"< {limit} {unit} (median)",
                     "status": status, "note": note})
    return rows


def print_table(title, rows):
    head = ("workload", "harp best/median", "harp rate", "NumPy best",
            "PyTorch", "C roofline", "vs NumPy", "vs PyTorch", "vs C",
            "target", "status", "notes")
    lines = []
    for r in rows:
        if "compile" in r:
            v = r["compile"]
            cell = "-" if v is None else f"{v:.3g} {r['unit']}"
            lines.append((r["label"], cell, "", "", "", "", "", "", "",
                          r["target"], r["status"], r["note"]))
            continue
        h = r["harp"]
        x = lambda v: f"{v:.2f}x" if v else "-"
        notes = []
        if "best_s" in h:
            cell = f"{fmt_time(h['best_s'])} / {fmt_time(h['median_s'])}"
            value, unit = rate(r["key"], h)
            hrate = f"{value:.3g} {unit}"
            if h["reps"] < REPS:
                notes.append(f"harp {h['reps']} runs")
        else:
            cell, hrate = "-", "-"
        if not h.get("ok"):
            notes.append("harp: " + ("wrong result" if "best_s" in h
                                     else h.get("error", "?")[:40]))
        for name in ("numpy", "torch"):
            if r[name] and r[name]["reps"] < REPS:
                notes.append(f"{name} {r[name]['reps']} runs")
        c = r.get("c") or {}
        lines.append((r["label"], cell, hrate,
                      fmt_time(r["numpy"]["best_s"]) if r["numpy"] else "-",
                      fmt_time(r["torch"]["best_s"]) if r["torch"] else "-",
                      f"{c['gbps']:.3g} GB/s" if "gbps" in c else "-",
                      x(r["vs_numpy"]), x(r["vs_torch"]), x(r.get("vs_c")),
                      r["target"], r["status"], "; ".join(notes)))
    widths = [max(len(str(l[i])) for l in lines + [head])
              for i in range(len(head))]
    print(f"\n{title}")
    for line in [head, tuple("-" * w for w in widths)] + lines:
        print("  ".join(str(v).ljust(w) for v, w in zip(line, widths))
              .rstrip())


def report(data):
    """Prints the tables and the machine facts of a results.json."""
    facts, blas = data["machine"], data["machine"]["numpy_blas"]
    for t in THREADS:
        title = (f"== {t} thread{'s' if t > 1 else ''}"
                 f"{' (headline)' if t == 1 else ''}: NumPy, PyTorch and C "
                 f"on {t}; harp on {t} (" +
                 ("harp-to-llvm{threads=true}" if t > 1 else "default") +
                 ") ==")
        print_table(title, data["tables"][str(t)])
    print("\nMachine:")
    print(f"  CPU: {facts['cpu']}, {facts['cores']} cores, "
          f"AVX-512: {'yes' if facts['avx512f'] else 'no'}")
    print(f"  OPENBLAS_CORETYPE (environment): {facts['OPENBLAS_CORETYPE']}; "
          f"NumPy also run with SkylakeX; the table shows the faster")
    print(f"  threads: {', '.join(map(str, THREADS))} "
          f"(OMP/OPENBLAS/MKL_NUM_THREADS, torch.set_num_threads)")
    libs = ", ".join(blas.get("libraries", [])) or "none found"
    kind = (f"OpenBLAS {blas.get('version')}, coretype in use "
            f"{blas.get('coretype')}" if blas.get("openblas")
            else "NOT OpenBLAS: OpenBLAS targets are n/a")
    print(f"  NumPy {facts['numpy']} BLAS: {libs} ({kind})")
    print(f"  PyTorch {facts['torch']}; harp {facts['harp_commit']}")
    print(f"  every cell: best of >= {REPS} timed runs after a warm-up "
          f"(>= 3 when one run takes > {MAX_SECONDS / REPS:g} s; see notes)")
    print(f"  total runtime: {data['runtime_s']:.0f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated workload keys")
    ap.add_argument("--rebuild", action="store_true",
                    help="run ninja harp-bench even if it exists")
    ap.add_argument("--table", action="store_true",
                    help="only print the tables of bench/results.json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    keys = [w[0] for w in WORKLOADS] + ["compile"]
    if args.only:
        keys = [k for k in keys if k in args.only.split(",")]
    if args.worker:
        return worker(args.worker, args.threads, keys)
    if args.table:
        with open(RESULTS) as f:
            return report(json.load(f))

    ensure_harp_bench(args.rebuild)
    facts = machine_facts()
    anchors, roofline = {}, {}
    with tempfile.TemporaryDirectory(prefix="harp-bench-") as tmp:
        for t in THREADS:
            roofline[t] = run_roofline(tmp, t)
            anchors[t] = {
                "numpy": run_anchor("numpy", t, keys),
                # The environment's coretype, then OpenBLAS's best here.
                "numpy_skylakex": run_anchor("numpy", t, keys, "SkylakeX"),
                "torch": run_anchor("torch", t, keys),
            }
    # 1 thread: harp-to-llvm as the JIT uses it by default; more threads:
    # harp-to-llvm{threads=true} (harp-bench --threads) on OMP_NUM_THREADS.
    harp_by_threads = {}
    for t in THREADS:
        harp = harp_by_threads[t] = {}
        extra = ["--threads"] if t > 1 else []
        for key, name, size, _, _ in WORKLOADS:
            if key in keys:
                log(f"harp {name} {size}, {t} thread(s)")
                harp[key] = run_json([HARP_BENCH, name, str(size), "--reps",
                                      str(REPS), "--max-seconds",
                                      str(MAX_SECONDS)] + extra,
                                     env=thread_env(t))
        if "compile" in keys:
            log(f"harp compile latency, {t} thread(s)")
            harp["compile"] = run_json([HARP_BENCH, "compile"] + extra,
                                       env=thread_env(t))
    harp = harp_by_threads[1]

    blas = anchors[1]["numpy"].get("blas", {})
    facts.update(numpy_blas=blas, numpy=anchors[1]["numpy"].get(
        "numpy_version"), torch=anchors[1]["torch"].get("version"))
    data = {"machine": facts, "runtime_s": time.time() - T0, "harp": harp,
            "harp_threads": {str(t): harp_by_threads[t] for t in THREADS},
            "anchors": {str(t): anchors[t] for t in THREADS},
            "roofline": {str(t): roofline[t] for t in THREADS},
            "tables": {str(t): build_rows(harp_by_threads[t], anchors[t],
                                          roofline[t],
                                          bool(blas.get("openblas")))
                       for t in THREADS}}
    with open(RESULTS, "w") as f:
        json.dump(data, f, indent=1)
    report(data)
    print(f"  wrote {os.path.relpath(RESULTS, os.getcwd())}")


if __name__ == "__main__":
    sys.exit(main())
