#!/usr/bin/python3
"""harp's benchmark suite (issues #8 and #16): harp, NumPy, PyTorch and a C
roofline loop side by side in one run.

    /usr/bin/python3 bench/run.py [--cpu PROFILE] [--only KEY,...] [--rebuild]
    /usr/bin/python3 bench/run.py --models [N|all] [--cpu PROFILE] [--only MODEL,...]

Prints a table for 1 thread (the headline) and one for 2 threads, the machine
facts, and writes bench/results.json (bench/results-PROFILE.json with --cpu).
With --cpu (x86-64-v2, x86-64-v3, x86-64-v4 or an LLVM CPU name) harp
generates code for that profile and the anchors are held to the same ISA:
OpenBLAS's coretype, PyTorch's ATen and oneDNN ISA, the C loop's -march.
See bench/README.md.
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
HARP_RUN = os.path.join(BUILD, "bin", "harp-run")

REPS = 10  # timed runs after one warm-up...
MAX_SECONDS = 20  # ...unless that takes longer: then fewer, but at least 3
THREADS = (1, 2)
N24 = 1 << 24

# The convolutions: harp-bench's spec (channels c -> f, k x k filters on
# h x h images, stride s, padding p, groups g).
CONV_RESNET = "c=64,h=56,f=64,k=3,s=1,p=1"
CONV_DEEP = "c=256,h=14,f=256,k=3,s=1,p=1"
CONV_STEM = "c=3,h=224,f=64,k=7,s=2,p=3"
CONV_1X1 = "c=256,h=56,f=64,k=1,s=1,p=0"
CONV_DEPTHWISE = "c=144,h=56,f=144,k=3,s=1,p=1,g=144"

# (key, harp-bench workload, size, label, target). Targets:
#   ("C", name, r)      harp bandwidth >= r x the C roofline loop `name`
#   ("torch", r)        harp >= r x PyTorch's speed
#   ("blas", r)         harp >= r x NumPy at OpenBLAS's best coretype
#   ("best", r)         harp >= r x the faster of NumPy and PyTorch
#   ("ms", x), ("us", x)  compile latency below x
# Workloads "mlp" and "attention" run in Python (harp's API against
# PyTorch's).
WORKLOADS = [
    ("gelu", "gelu", str(N24), "GELU-tanh chain 2^24", ("C", "triad", 0.85)),
    ("sum", "sum", str(N24), "sum 2^24", ("C", "read", 0.9)),
    ("rowsum", "rowsum", str(N24), "row-sum 4096x4096", ("C", "read", 0.9)),
    ("softmax", "softmax", "4096x4096", "softmax 4096x4096", ("torch", 3.0)),
    ("softmax512", "softmax", "512x768", "softmax 512x768", ("torch", 1.5)),
    ("layernorm", "layernorm", "8192x1024", "layer norm 8192x1024",
     ("torch", 3.0)),
    ("layernorm512", "layernorm", "512x768", "layer norm 512x768",
     ("torch", 1.5)),
    ("matmul256", "matmul", "256", "matmul 256", ("blas", 0.9)),
    ("matmul384", "matmul", "384", "matmul 384", ("blas", 0.9)),
    ("matmul500", "matmul", "500", "matmul 500", ("blas", 0.9)),
    ("matmul512", "matmul", "512", "matmul 512", ("blas", 0.9)),
    ("matmul1024", "matmul", "1024", "matmul 1024", ("blas", 0.9)),
    ("matmul1536", "matmul", "1536", "matmul 1536", ("blas", 0.9)),
    ("matmul2048", "matmul", "2048", "matmul 2048", ("blas", 0.9)),
    ("matmul_skinny", "matmul", "97x1031x257", "matmul 97x1031x257",
     ("blas", 0.9)),
    ("bmm", "bmm", "32x128x64x128", "bmm 32x(128x64 @ 64x128)",
     ("blas", 0.9)),
    ("vecmat", "matmul", "1x4096x4096", "vector-matrix 1x4096 @ 4096x4096",
     ("blas", 0.9)),
    ("mm_bias_gelu", "matmul_bias_gelu", "1024", "matmul+bias+GELU 1024",
     ("best", 1.1)),
    ("conv2d", "conv2d", CONV_RESNET, "conv2d 64->64 3x3 56x56",
     ("torch", 1.0)),
    ("conv_deep", "conv2d", CONV_DEEP, "conv2d 256->256 3x3 14x14",
     ("torch", 1.0)),
    ("conv_stem", "conv2d", CONV_STEM, "conv2d stem 3->64 7x7 s2 224",
     ("torch", 1.0)),
    ("conv_1x1", "conv2d", CONV_1X1, "conv2d 1x1 256->64 56x56",
     ("torch", 1.0)),
    ("conv_dw", "conv2d", CONV_DEPTHWISE, "depthwise 3x3 144ch 56x56",
     ("torch", 1.0)),
    ("gather", "gather", "8192", "gather 50000x512[8192]", ("best", 1.0)),
    ("transpose", "transpose", "4096", "transpose 4096x4096", ("best", 1.0)),
    ("mlp", "mlp", "256", "MLP 784-1024-1024-10 train step, batch 256",
     ("torch", 1.5)),
    ("attention", "attention", "16x64x64x4",
     "MultiheadAttention fwd+bwd, causal, [16, 64, 64], 4 heads", ("torch", 1.0)),
]
PY_WORKLOADS = ("mlp", "attention")
COMPILE_ROWS = [
    ("compile_cold", "compile small fused (cold)", ("ms", 100)),
    ("compile_hit", "compile small fused (hit)", ("us", 50)),
]
WORKLOAD = {w[0]: w for w in WORKLOADS}

# What the anchors may use under a profile of a given vector width:
# OpenBLAS coretypes, PyTorch's ATen CPU capability, oneDNN's ISA limit and
# the C loop's -march.
ISA_LIMITS = {
    128: {"coretypes": ["Nehalem"], "aten": "default",
          "onednn": "SSE41", "march": "x86-64-v2"},
    256: {"coretypes": ["Haswell", "Zen"], "aten": "avx2",
          "onednn": "AVX2", "march": "x86-64-v3"},
    512: {"coretypes": ["SkylakeX", "Cooperlake"], "aten": "avx512",
          "onednn": "AVX512_CORE", "march": "x86-64-v4"},
}

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


def conv_spec(size):
    spec = dict(c=64, h=56, f=64, k=3, s=1, p=1, g=1)
    spec.update({k: int(v) for k, v in
                 (item.split("=") for item in size.split(","))})
    return spec


def mlp_data(batch, sizes=(784, 1024, 1024, 10), seed=0):
    """Inputs, labels and (weight, bias) parameters of the MLP step."""
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], size=batch)
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params.append((rng.normal(size=(a, b)) * (2 / a) ** 0.5)
                      .astype(np.float32))
        params.append(np.zeros((1, b), np.float32))
    return x, y, params


def mlp_step(lib, batch, lr=0.01):
    """One SGD training step (forward, backward, in-place update) of the
    MLP in `lib` ("harp" or "torch"), returning the loss."""
    import numpy as np
    x, y, params = mlp_data(batch)
    if lib == "harp":
        sys.path.insert(0, os.path.join(BUILD, "python"))
        import harp
        onehot = np.eye(params[-1].shape[1], dtype=np.float32)[y]

        def step():
            ts = [harp.tensor(p) for p in params]
            for t in ts:
                t.requires_grad = True
            h = harp.tensor(x)
            for i in range(0, len(ts), 2):
                h = h @ ts[i] + ts[i + 1]
                if i + 2 < len(ts):
                    h = h.relu()
            m = h.max(axis=1, keepdim=True)
            s = h - m
            lse = s.exp().sum(axis=1, keepdim=True).log()
            loss = ((lse - s) * harp.tensor(onehot)).sum() * (1.0 / batch)
            loss.backward()
            for p, t in zip(params, ts):
                p -= lr * t.grad.numpy()
            return loss.item()
        return step
    import torch
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    xt, yt = torch.tensor(x), torch.tensor(y)

    def step():
        h = xt
        for i in range(0, len(ps), 2):
            h = h @ ps[i] + ps[i + 1]
            if i + 2 < len(ps):
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, yt)
        loss.backward()
        with torch.no_grad():
            for p in ps:
                p -= lr * p.grad
                p.grad = None
        return loss.item()
    return step


def attention_step(lib, size, seed=0):
    """Forward and backward of self-attention with a causal mask through
    `lib`'s nn.MultiheadAttention (batch first): size is NxLxExH."""
    import numpy as np
    n, length, e, heads = [int(d) for d in size.split("x")]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, length, e)).astype(np.float32)
    mask = np.triu(np.ones((length, length), bool), k=1)
    if lib == "harp":
        sys.path.insert(0, os.path.join(BUILD, "python"))
        import harp
        m = harp.nn.MultiheadAttention(e, heads, batch_first=True)
        xs, masks = harp.tensor(x), harp.tensor(mask)
        xs.requires_grad = True
        params = list(m.parameters()) + [xs]

        def step():
            for p in params:
                p.zero_grad()
            loss = m(xs, xs, xs, attn_mask=masks, need_weights=False)[0].sum()
            loss.backward()
            return loss.item()
        return step
    import torch
    m = torch.nn.MultiheadAttention(e, heads, batch_first=True)
    xs = torch.tensor(x, requires_grad=True)
    masks = torch.tensor(mask)
    params = list(m.parameters()) + [xs]

    def step():
        for p in params:
            p.grad = None
        loss = m(xs, xs, xs, attn_mask=masks, need_weights=False)[0].sum()
        loss.backward()
        return loss.item()
    return step


def attention_flops(size):
    """Multiply-adds of the attention step times 2: the four projections and
    the two products of the heads forward, twice that backward."""
    n, length, e, _ = [int(d) for d in size.split("x")]
    forward = 4 * n * length * e * e + 2 * n * length * length * e
    return 2.0 * 3 * forward


def anchor_functions(lib, key, size):
    """A zero-argument function computing workload `key` with `lib`."""
    import numpy as np
    rng = np.random.default_rng(0)
    name = WORKLOAD[key][1]
    dims = ([int(d) for d in size.split("x")]
            if name not in ("conv2d",) + PY_WORKLOADS else [])

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

    if name == "mlp":
        return mlp_step(lib, int(size)) if lib != "numpy" else None
    if name == "attention":
        return attention_step(lib, size) if lib != "numpy" else None
    if name == "gelu":
        x = rand(dims[0])
        return lambda: gelu(x)
    if name == "sum":
        x = rand(dims[0])
        return lambda: x.sum()
    if name == "rowsum":
        x = rand(4096, dims[0] // 4096)
        return lambda: x.sum(1)
    if name == "softmax":
        x = rand(*dims)
        if torch:
            return lambda: torch.softmax(x, 1)

        def softmax():
            e = np.exp(x - x.max(1, keepdims=True))
            e /= e.sum(1, keepdims=True)
            return e
        return softmax
    if name == "layernorm":
        cols = dims[1]
        x, g, b = rand(dims[0], cols), rand(cols), rand(cols)
        if torch:
            return lambda: F.layer_norm(x, (cols,), g, b, 1e-5)

        def layer_norm():
            xc = x - x.mean(1, keepdims=True)
            var = np.einsum("ij,ij->i", xc, xc)[:, None] / cols
            xc *= 1 / np.sqrt(var + 1e-5)
            xc *= g
            xc += b
            return xc
        return layer_norm
    if name in ("matmul", "matmul_bias_gelu"):
        m, k, n = dims * 3 if len(dims) == 1 else dims
        a, b, bias = rand(m, k), rand(k, n), rand(n)
        if name == "matmul":
            return lambda: a @ b
        if torch:
            return lambda: gelu(torch.addmm(bias, a, b))

        def mm_bias_gelu():
            z = a @ b
            z += bias
            return gelu(z)
        return mm_bias_gelu
    if name == "bmm":
        batch, m, k, n = dims
        a, b = rand(batch, m, k), rand(batch, k, n)
        return lambda: a @ b
    if name == "conv2d":
        c = conv_spec(size)
        cin = c["c"] // c["g"]
        x, w = rand(1, c["c"], c["h"], c["h"]), rand(c["f"], cin, c["k"],
                                                     c["k"])
        if torch:
            return lambda: F.conv2d(x, w, stride=c["s"], padding=c["p"],
                                    groups=c["g"])
        return numpy_conv2d(np, x, w, c)
    if name == "gather":
        table = rand(50000, 512)
        idx = rng.integers(0, 50000, size=dims[0])
        if torch:
            idx = torch.from_numpy(idx)
            return lambda: torch.index_select(table, 0, idx)
        return lambda: np.take(table, idx, axis=0)
    if name == "transpose":
        x = rand(dims[0], dims[0])
        if torch:
            return lambda: x.t().contiguous()
        return lambda: np.ascontiguousarray(x.T)
    raise ValueError(key)


def numpy_conv2d(np, x, w, c):
    """im2col and one BLAS matmul per group (one group: all of them, as a
    batched matmul when depthwise)."""
    k, s, p, g = c["k"], c["s"], c["p"], c["g"]
    out = (c["h"] + 2 * p - k) // s + 1
    cin = c["c"] // g

    def conv2d():
        xp = np.pad(x[0], ((0, 0), (p, p), (p, p)))
        win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), (1, 2))
        win = win[:, ::s, ::s][:, :out, :out]
        cols = win.transpose(0, 3, 4, 1, 2).reshape(g, cin * k * k,
                                                    out * out)
        wg = w.reshape(g, c["f"] // g, cin * k * k)
        return (wg @ cols).reshape(1, c["f"], out, out)
    return conv2d


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
    for key, name, size, _, _ in WORKLOADS:
        # harp's worker runs its Python workloads; the anchors run the rest.
        if key not in keys or (lib == "harp" and name not in PY_WORKLOADS):
            continue
        try:
            fn = anchor_functions(lib, key, size)
            if fn is None:
                continue
            out[key] = time_calls(fn, MAX_SECONDS)
            if name == "mlp":
                _, _, params = mlp_data(int(size))
                macs = sum(p.size for p in params[::2])
                # forward, and two products per layer backward (the first
                # layer's input gradient is not needed: a little less)
                out[key]["flops"] = 6.0 * int(size) * macs
                out[key]["ok"] = True
            if name == "attention":
                out[key]["flops"] = attention_flops(size)
                out[key]["ok"] = True
        except Exception as e:  # report, do not stop the suite
            out[key] = {"error": repr(e)}
    np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
    out["blas"] = blas_info()
    if lib == "torch":
        out["aten_capability"] = torch.backends.cpu.get_cpu_capability() \
            if hasattr(torch.backends, "cpu") else os.environ.get(
                "ATEN_CPU_CAPABILITY", "default")
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


def thread_env(threads, coretype=None, limits=None, cpu=None):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    if limits:  # PyTorch held to the profile's ISA
        env["ATEN_CPU_CAPABILITY"] = limits["aten"]
        env["ONEDNN_MAX_CPU_ISA"] = env["DNNL_MAX_CPU_ISA"] = limits["onednn"]
    if cpu:
        env["HARP_CPU"] = cpu
    return env


def run_anchor(lib, threads, keys, coretype=None, limits=None, cpu=None):
    label = lib + (f" OPENBLAS_CORETYPE={coretype}" if coretype else "")
    log(f"{label}, {threads} thread(s)")
    return run_json([sys.executable, __file__, "--worker", lib, "--threads",
                     str(threads), "--only", ",".join(keys)],
                    env=thread_env(threads, coretype, limits, cpu))


def run_roofline(tmp, threads, march="native"):
    exe = os.path.join(tmp, "roofline")
    if not os.path.exists(exe):
        cc = shutil.which("cc") or "gcc"
        subprocess.run([cc, "-O3", f"-march={march}", "-fopenmp", "-o", exe,
                        os.path.join(BENCH, "roofline.c")], check=True)
    log(f"C roofline, {threads} thread(s)")
    return run_json([exe, str(N24), str(REPS), str(MAX_SECONDS)],
                    env=thread_env(threads))


def ensure_harp_bench(rebuild):
    """harp-bench, harp-run and the Python module (for the MLP step)."""
    python = os.path.join(BUILD, "python", "harp")
    if all(os.path.exists(p) for p in (HARP_BENCH, HARP_RUN, python)) \
            and not rebuild:
        return
    log("building harp")
    if not os.path.exists(os.path.join(BUILD, "build.ninja")):
        subprocess.run(["cmake", "-G", "Ninja", "-S", ROOT, "-B", BUILD],
                       check=True)
    subprocess.run(["ninja", "-C", BUILD], check=True)


def describe_cpu(cpu):
    """harp-run --print-cpu for `cpu` ("" = native) as a dict."""
    cmd = [HARP_RUN, "--print-cpu"] + ([f"--cpu={cpu}"] if cpu else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"run.py: {p.stderr.strip() or p.stdout.strip()}")
    facts = {}
    for line in p.stdout.splitlines():
        key, _, value = line.partition(":")
        facts[key.strip()] = value.strip()
    return facts


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
    """Table rows for one thread count; `anchors` maps name -> worker JSON
    (numpy, numpy_CORETYPE..., torch)."""
    rows = []
    for key, _, _, label, target in WORKLOADS:
        if key not in harp:
            continue
        h = harp[key]
        numpys = {name: run.get(key, {}) for name, run in anchors.items()
                  if name.startswith("numpy")}
        np_best = min((r for r in numpys.values() if "best_s" in r),
                      key=lambda r: r["best_s"], default=None)
        torch = anchors["torch"].get(key)
        torch = torch if torch and "best_s" in torch else None
        row = {"key": key, "label": label, "harp": h, "numpy": np_best,
               "numpy_runs": numpys, "torch": torch}
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
    """Prints the tables and the machine facts of a results file."""
    facts, blas = data["machine"], data["machine"]["numpy_blas"]
    target = facts.get("target", {})
    for t in THREADS:
        title = (f"== {t} thread{'s' if t > 1 else ''}"
                 f"{' (headline)' if t == 1 else ''}: NumPy, PyTorch and C "
                 f"on {t}; harp on {t} (" +
                 ("harp-to-llvm{threads=true}" if t > 1 else "default") +
                 "; the MLP step on 1) ==")
        print_table(title, data["tables"][str(t)])
    print("\nMachine:")
    print(f"  CPU: {facts['cpu']}, {facts['cores']} cores, "
          f"AVX-512: {'yes' if facts['avx512f'] else 'no'}")
    if target:
        print(f"  harp's code: profile {facts.get('profile', 'native')} "
              f"(LLVM CPU {target.get('llvm cpu')}, "
              f"{target.get('vector bits')}-bit vectors, "
              f"{target.get('vector registers')} registers, "
              f"FMA {target.get('fma')}); caches L1d "
              f"{target.get('l1d cache')}, L2 {target.get('l2 cache')} "
              f"({target.get('caches from')})")
    limits = facts.get("anchor_limits")
    if limits:
        print(f"  anchors held to the profile's ISA: OPENBLAS_CORETYPE "
              f"{' and '.join(limits['coretypes'])} for NumPy (the faster "
              f"shown), {limits['coretypes'][0]} for PyTorch, "
              f"ATEN_CPU_CAPABILITY={limits['aten']}, "
              f"ONEDNN_MAX_CPU_ISA={limits['onednn']}, C loops "
              f"-march={limits['march']}")
    else:
        print(f"  OPENBLAS_CORETYPE (environment): "
              f"{facts['OPENBLAS_CORETYPE']}; NumPy also run with "
              f"{' and '.join(facts.get('coretypes', []))}; the table shows "
              f"the fastest")
    print(f"  threads: {', '.join(map(str, THREADS))} "
          f"(OMP/OPENBLAS/MKL_NUM_THREADS, torch.set_num_threads)")
    libs = ", ".join(blas.get("libraries", [])) or "none found"
    kind = (f"OpenBLAS {blas.get('version')}, coretype in use "
            f"{blas.get('coretype')}" if blas.get("openblas")
            else "NOT OpenBLAS: OpenBLAS targets are n/a")
    print(f"  NumPy {facts['numpy']} BLAS: {libs} ({kind})")
    print(f"  PyTorch {facts['torch']} (ATen capability "
          f"{facts.get('aten_capability', '?')}); harp {facts['harp_commit']}")
    print(f"  every cell: best of >= {REPS} timed runs after a warm-up "
          f"(>= 3 when one run takes > {MAX_SECONDS / REPS:g} s; see notes)")
    print(f"  date: {facts.get('date', '?')}; total runtime: "
          f"{data['runtime_s']:.0f} s")


def results_path(cpu):
    return os.path.join(BENCH, f"results-{cpu}.json" if cpu
                        else "results.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", default="",
                    help="generate harp's code for this profile (x86-64-v2, "
                         "x86-64-v3, x86-64-v4 or an LLVM CPU name) and hold "
                         "the anchors to its ISA; default: this machine")
    ap.add_argument("--only", help="comma-separated workload keys")
    ap.add_argument("--rebuild", action="store_true",
                    help="run ninja harp-bench even if it exists")
    ap.add_argument("--table", action="store_true",
                    help="only print the tables of the results file")
    ap.add_argument("--models", nargs="?", const="1", metavar="N|all",
                    help="run the model-step benchmark (bench/models.py) "
                         "instead, on N threads (default 1), with --cpu and "
                         "--only (model names) passed on")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    if args.models:
        cmd = [sys.executable, os.path.join(BENCH, "models.py"),
               "--threads", args.models]
        cmd += ["--cpu", args.cpu] if args.cpu else []
        cmd += ["--only", args.only] if args.only else []
        ensure_harp_bench(args.rebuild)
        return subprocess.run(cmd).returncode
    keys = [w[0] for w in WORKLOADS] + ["compile"]
    if args.only:
        wanted = args.only.split(",")
        unknown = [k for k in wanted if k not in keys]
        if unknown:
            raise SystemExit(f"run.py: unknown workload(s) {unknown}; "
                             f"known: {', '.join(keys)}")
        keys = [k for k in keys if k in wanted]
    if args.worker:
        return worker(args.worker, args.threads, keys)
    results = results_path(args.cpu)
    if args.table:
        with open(results) as f:
            return report(json.load(f))

    ensure_harp_bench(args.rebuild)
    facts = machine_facts()
    target = describe_cpu(args.cpu)
    if not target.get("runs here", "").startswith("yes"):
        raise SystemExit(f"run.py: this machine cannot run {args.cpu} code "
                         f"({target.get('runs here')})")
    facts.update(profile=args.cpu or "native", target=target,
                 date=time.strftime("%Y-%m-%d"))
    # Anchors: under a profile, held to its ISA; natively, the
    # environment's OpenBLAS coretype and OpenBLAS's best for this machine.
    bits = int(target["vector bits"])
    limits = ISA_LIMITS.get(bits) if args.cpu else None
    coretypes = (limits["coretypes"] if limits else
                 ISA_LIMITS[bits]["coretypes"][:1])
    facts.update(anchor_limits=limits, coretypes=coretypes)
    march = limits["march"] if limits else "native"
    anchors, roofline = {}, {}
    with tempfile.TemporaryDirectory(prefix="harp-bench-") as tmp:
        for t in THREADS:
            roofline[t] = run_roofline(tmp, t, march)
            anchors[t] = {} if limits else {
                "numpy": run_anchor("numpy", t, keys)}
            for coretype in coretypes:
                anchors[t]["numpy_" + coretype] = run_anchor(
                    "numpy", t, keys, coretype)
            # PyTorch's matmuls go to the same OpenBLAS: held to the
            # profile's first coretype too.
            anchors[t]["torch"] = run_anchor(
                "torch", t, keys, limits["coretypes"][0] if limits else None,
                limits)
    # 1 thread: harp-to-llvm as the JIT uses it by default; more threads:
    # harp-to-llvm{threads=true} (harp-bench --threads) on OMP_NUM_THREADS.
    # The MLP step runs in Python, on harp's default (1 thread).
    cpu = ["--cpu", args.cpu] if args.cpu else []
    harp_by_threads = {}
    for t in THREADS:
        harp = harp_by_threads[t] = {}
        extra = (["--threads"] if t > 1 else []) + cpu
        for key, name, size, _, _ in WORKLOADS:
            if key in keys and name not in PY_WORKLOADS:
                log(f"harp {name} {size}, {t} thread(s)")
                harp[key] = run_json([HARP_BENCH, name, size, "--reps",
                                      str(REPS), "--max-seconds",
                                      str(MAX_SECONDS)] + extra,
                                     env=thread_env(t))
        if any(k in keys for k in PY_WORKLOADS) and t == 1:
            python = run_anchor("harp", t, keys, cpu=args.cpu or None)
            for k in PY_WORKLOADS:
                if k in python:
                    harp[k] = python[k]
        if "compile" in keys:
            log(f"harp compile latency, {t} thread(s)")
            harp["compile"] = run_json([HARP_BENCH, "compile"] + extra,
                                       env=thread_env(t))
    harp = harp_by_threads[1]

    first = next(iter(anchors[1].values()))
    blas = first.get("blas", {})
    facts.update(numpy_blas=blas, numpy=first.get("numpy_version"),
                 torch=anchors[1]["torch"].get("version"),
                 aten_capability=anchors[1]["torch"].get("aten_capability"))
    data = {"machine": facts, "runtime_s": time.time() - T0, "harp": harp,
            "harp_threads": {str(t): harp_by_threads[t] for t in THREADS},
            "anchors": {str(t): anchors[t] for t in THREADS},
            "roofline": {str(t): roofline[t] for t in THREADS},
            "tables": {str(t): build_rows(harp_by_threads[t], anchors[t],
                                          roofline[t],
                                          bool(blas.get("openblas")))
                       for t in THREADS}}
    with open(results, "w") as f:
        json.dump(data, f, indent=1)
    report(data)
    print(f"  wrote {os.path.relpath(results, os.getcwd())}")


if __name__ == "__main__":
    sys.exit(main())
