"""Helpers for harp's integration tests: run harp IR through harp-run on
NumPy arrays and compare the results with references at the tolerances of
torch.testing.assert_close."""

import os
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARP_RUN = os.environ.get("HARP_RUN", os.path.join(ROOT, "build", "bin", "harp-run"))

# Where run() executes modules. "cpu" (default); "cuda": on the GPU
# (harp-run --device cuda), so every integration test checks the GPU against
# the same references; "cuda-compile": every module is also compiled for the
# GPU down to cubin (ptxas checks each kernel), then run on the CPU: the GPU
# lowering is exercised on machines without a GPU.
DEVICE = os.environ.get("HARP_TEST_DEVICE", "cpu")
if DEVICE not in ("cpu", "cuda", "cuda-compile"):
    raise ValueError("HARP_TEST_DEVICE must be cpu, cuda or cuda-compile, "
                     "not %r" % DEVICE)
# CPU profiles this machine cannot execute (HARP_TEST_COMPILE_CPU, comma-
# separated, e.g. "x86-64-v4" on an AVX2 machine): every module is also
# compiled for each of them (harp-run --cpu P --compile-only), then run
# natively, so their code generation is exercised where it cannot run.
# (The profile the tests run under is HARP_CPU, which harp-run reads.)
COMPILE_CPUS = [c for c in os.environ.get("HARP_TEST_COMPILE_CPU", "").split(",") if c]
# cubin needs the toolkit's ptxas (harp-to-gpu's toolkit path); without it
# the PTX is still produced and checked by the NVPTX backend only.
PTXAS = "/usr/local/cuda/bin/ptxas"
GPU_FORMAT = "cubin" if os.path.exists(PTXAS) else "ptx"
# The stand-in driver (test/Runtime/FakeCuda, built where cuda.h is found).
# In "cuda-compile" mode every module's host code also runs against it: it
# executes no kernel, but fails a launch that hands a kernel memory that is
# not a device allocation, as a GPU would fault on it, and it assembles the
# PTX it loads with ptxas (HARP_FAKE_CUDA_PTXAS) as a driver's JIT does: the
# same check as a compile to cubin, from the one compile of the module.
FAKE_CUDA = os.path.join(os.path.dirname(os.path.dirname(HARP_RUN)), "test",
                         "fake-cuda")
if not os.path.exists(os.path.join(FAKE_CUDA, "libcuda.so.1")):
    FAKE_CUDA = None
# Many modules compile to the same PTX (one op over dtypes or layouts that
# the kernel does not tell apart): the stand-in driver assembles each text
# once, remembered here for this ptxas (its modification time names the
# directory).
PTXAS_CACHE = None
if DEVICE == "cuda-compile" and FAKE_CUDA and GPU_FORMAT == "cubin":
    PTXAS_CACHE = os.path.join(FAKE_CUDA, "ptxas-assembled-%d"
                               % int(os.path.getmtime(PTXAS)))
    os.makedirs(PTXAS_CACHE, exist_ok=True)

# MLIR element type spellings of the NumPy dtypes harp exchanges.
MLIR_TYPES = {
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.complex64): "complex<f32>",
    np.dtype(np.complex128): "complex<f64>",
}

# The dtypes every op family is checked with.
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64]

# rtol, atol as torch.testing.assert_close uses them by dtype.
TOLERANCES = {
    np.dtype(np.float16): (1e-3, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}


def elt(dtype):
    return MLIR_TYPES[np.dtype(dtype)]


def tensor(shape, dtype):
    """tensor<2x3xf32> for shape (2, 3) and float32."""
    dims = "".join("%dx" % d for d in shape)
    return "tensor<%s%s>" % (dims, elt(dtype))


def is_float(dtype):
    return np.issubdtype(np.dtype(dtype), np.floating)


def is_complex(dtype):
    return np.issubdtype(np.dtype(dtype), np.complexfloating)


def is_bool(dtype):
    return np.dtype(dtype) == np.bool_


def random(shape, dtype, rng, low=-3, high=3):
    """Random data of any harp dtype: small integers, uniform floats."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(low, high + 1, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        re = rng.uniform(low, high, size=shape)
        im = rng.uniform(low, high, size=shape)
        return (re + 1j * im).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


class HarpError(Exception):
    """harp-run exited non-zero; the message is its stderr."""


def fake_run(path, args, tmp, env):
    """Runs the module's host code on the stand-in driver (PTX, so the driver
    sees which kernel parameters are pointers); its results are not
    computed, only the launches checked."""
    log = os.path.join(tmp, "fake-cuda.log")
    fake_env = dict(env if env is not None else os.environ)
    fake_env["LD_LIBRARY_PATH"] = FAKE_CUDA
    fake_env["HARP_FAKE_CUDA_LOG"] = log
    if GPU_FORMAT == "cubin":
        fake_env["HARP_FAKE_CUDA_PTXAS"] = PTXAS
        if PTXAS_CACHE:
            fake_env["HARP_FAKE_CUDA_PTXAS_CACHE"] = PTXAS_CACHE
    cmd = [HARP_RUN, path, "--device", "cuda", "--gpu-format", "ptx",
           "--no-disk-cache"] + args
    proc = subprocess.run(cmd, capture_output=True, text=True, env=fake_env)
    if proc.returncode != 0:
        faults = []
        if os.path.exists(log):  # absent if harp-run failed before the driver
            with open(log) as f:
                faults = [l for l in f if "not device memory" in l]
        raise HarpError("GPU compilation or the GPU host code failed on the "
                        "stand-in driver:\n"
                        + proc.stderr + "".join(faults))


def run(module, *inputs, entry=None, extra_args=(), env=None, device=None):
    """Runs `entry` (default: the only function) of the MLIR text `module` on
    `inputs` and returns the results as a list of arrays. It runs on the
    suite's device (HARP_TEST_DEVICE), except with a CPU-only option
    (--parallel, --no-vectorize, --gradcheck) or `device="cpu"`: a test that
    compares a CPU-only variant bit for bit with the default run asks for
    the default on the CPU too (the GPU rounds differently)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "module.mlir")
        with open(path, "w") as f:
            f.write(module)
        if device not in (None, "cpu"):
            raise ValueError("harptest.run: device must be None or 'cpu', "
                             "not %r" % (device,))
        cpu_only = device == "cpu" or any(
            a in ("--parallel", "--no-vectorize", "--gradcheck")
            for a in extra_args)
        entry_args = ["--entry", entry] if entry else []
        input_args = []

        def saved_inputs():
            """harp-run's --input flags, the .npy files written once (a
            module run in this process needs none)."""
            if inputs and not input_args:
                for i, array in enumerate(inputs):
                    name = os.path.join(tmp, "in%d.npy" % i)
                    # np.asarray keeps 0-d arrays 0-d.
                    np.save(name, np.asarray(array, order="C"))
                    input_args.extend(["--input", name])
            return input_args
        n_out = module_result_count(module, entry)
        if DEVICE == "cuda-compile" and not cpu_only:
            # The run on the stand-in driver compiles the module to PTX and
            # has ptxas assemble it: compiled here only without that driver.
            if not FAKE_CUDA:
                compile_only(module, path, entry_args, env, "GPU compilation failed",
                             ["--device", "cuda", "--gpu-format", GPU_FORMAT],
                             {"device": "cuda", "gpu_format": GPU_FORMAT})
            if FAKE_CUDA:
                outs = ["--output=" + os.path.join(tmp, "fake%d.npy" % i)
                        for i in range(n_out)]
                fake_run(path, entry_args + saved_inputs() + outs, tmp, env)
        # (--gradcheck builds its module inside harp-run: compiled natively
        # only; explicit harp.autodiff wrappers are compiled here.)
        for cpu in COMPILE_CPUS if "--gradcheck" not in extra_args else ():
            flags = [a for a in extra_args if a in _OPTIONS]
            compile_only(module, path, entry_args + flags, env,
                         "compiling for %s failed" % cpu, ["--cpu", cpu],
                         dict([("cpu", cpu)] + [_OPTIONS[a] for a in flags]))
        if IN_PROCESS and env is None and DEVICE != "cuda":
            results = run_in_process(module, inputs, entry, extra_args)
            if results is not None:
                return results
        cmd = [HARP_RUN, path]
        if DEVICE == "cuda" and not cpu_only:
            cmd += ["--device", "cuda"]
        cmd += entry_args + saved_inputs()
        outs = [os.path.join(tmp, "out%d.npy" % i) for i in range(n_out)]
        for name in outs:
            cmd += ["--output", name]
        cmd += list(extra_args)
        if "--parallel" in extra_args and "OMP_NUM_THREADS" not in (env or {}):
            env = dict(env or os.environ, OMP_NUM_THREADS=str(THREADS))
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise HarpError(proc.stderr)
        return [np.load(name) for name in outs]


# Modules run in this process through harp.ir.call, the JIT harp-run uses,
# rather than in a harp-run process each (about 70 ms of process start per
# module: loading and relocating LLVM). HARP_TEST_IN_PROCESS=0 runs every
# module through harp-run; test_harp_run.py tests the command itself, and
# modules harp-run is asked more of (--gradcheck, an environment of their
# own, the GPU) always run there.
IN_PROCESS = os.environ.get("HARP_TEST_IN_PROCESS", "1") != "0"
_OPTIONS = {"--no-fuse": ("fuse", False), "--no-vectorize": ("vectorize", False),
            "--parallel": ("threads", True),
            "--parallel-min-work=0": ("parallel_min_work", 0)}
# Threaded modules run on this many threads (the suite's workers run on one
# each otherwise: test/conftest.py).
THREADS = 2


def _harp_module():
    """The harp package, or None where it is not importable (harp-run
    alone is built): then every module goes through harp-run."""
    try:
        import harp
    except ImportError:
        return None
    return harp


def compile_only(module, path, args, env, failure, flags, options):
    """Compiles the module without running it (harp-run --compile-only
    `flags` `args`; harp.ir.compile_object(**options) in this process)."""
    harp = _harp_module() if IN_PROCESS and env is None else None
    if harp is not None:
        try:
            harp.ir.compile_object(module, **options)
        except ValueError as error:
            raise HarpError("%s:\n%s" % (failure, error)) from None
        return
    check = [HARP_RUN, path] + flags + ["--compile-only"] + args
    proc = subprocess.run(check, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise HarpError("%s:\n%s" % (failure, proc.stderr))


def run_in_process(module, inputs, entry, extra_args):
    """The results of `entry` (default: the only public function) on
    `inputs`, computed in this process; None where harp-run is needed."""
    import re
    harp = _harp_module()
    if harp is None or any(a not in _OPTIONS for a in extra_args):
        return None
    if entry is None:
        public = re.findall(r"func\.func @(\w+)\(", module)
        if len(public) != 1:
            return None
        entry = public[0]
    options = dict(_OPTIONS[a] for a in extra_args)
    arrays = [np.asarray(a, order="C") for a in inputs]  # 0-d stays 0-d
    threads = harp.get_num_threads()
    if options.get("threads"):
        harp.set_num_threads(THREADS)
    try:
        results = harp.ir.call(module, entry, arrays, **options)
    except ValueError as error:
        raise HarpError(str(error)) from None
    finally:
        harp.set_num_threads(threads)
    # Copies that own their memory, as np.load's arrays do.
    return [np.array(r) for r in results]


def module_result_count(module, entry):
    """Counts the results of `entry` from its `func.func` line."""
    import re
    funcs = re.findall(r"func\.func @(\w+)\(.*?\)\s*(->\s*(\(.*?\)|[^{]*))?\s*\{",
                       module, re.S)
    for name, arrow, _ in funcs:
        if entry is None or name == entry:
            if not arrow:
                return 0
            results = arrow.strip()[2:].strip()
            if results.startswith("("):
                results = results[1:-1]
            return len(split_types(results))
    raise ValueError("no function %s in module" % entry)


def split_types(text):
    """Splits 'tensor<2xf32>, tensor<complex<f32>>' at top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def assert_close(actual, expected, rtol=None, atol=None):
    """torch.testing.assert_close semantics on NumPy arrays: same shape and
    dtype, exact for integers and bools, rtol/atol by dtype for floats."""
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    dtype = np.dtype(actual.dtype)
    if dtype in TOLERANCES:
        r, a = TOLERANCES[dtype]
        np.testing.assert_allclose(actual, expected,
                                   rtol=r if rtol is None else rtol,
                                   atol=a if atol is None else atol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(actual, expected)
