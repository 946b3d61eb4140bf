# -*- Python -*-
# lit configuration for harp's regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "HARP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".py", ".c", ".graph"]
# Integration/ and python/ are pytest suites, run by scripts/run-tests.sh
# next to lit; conftest.py configures them.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs",
                   "Integration", "python", "FakeCuda", "conftest.py"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.harp_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%harp_src_root", config.harp_src_root))
config.substitutions.append(("%harp_obj_root", config.harp_obj_root))
config.substitutions.append(("%python", config.python_executable))

# HARP_DEBUG_POISON: result storage starts as NaN bytes (scripts/run-tests.sh).
# OMP_NUM_THREADS: the threads compiled code runs on (one under the
# sanitizers: scripts/run-sanitizers.sh).
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     "HARP_DEBUG_POISON", "OMP_NUM_THREADS"])
llvm_config.use_default_substitutions()

tool_dirs = [config.harp_tools_dir, config.llvm_tools_dir]
tools = ["harp-opt", "harp-run", "harp-compile", "harp-translate", "harp-reduce", "harp-lsp-server",
         "harp-capi-test",
         "harp-capi-jit-test"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
# Debian's own mlir-opt, for the plugin tests (test/Plugin), and the plugin.
llvm_config.add_tool_substitutions(["mlir-opt"], [config.llvm_tools_dir])
config.substitutions.append(
    ("%harp_plugin", os.path.join(config.harp_obj_root, "lib", "libHarpPlugin.so")))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.harp_tools_dir, append_path=True)

# GPU features. `ptxas`: the CUDA toolkit's assembler is there, so cubin
# compilation and PTX checks run (no GPU needed). `cuda`: a GPU and its
# driver answer, so GPU execution tests run.
import ctypes
import shutil

# A C compiler: the tests of libraries harp compiles ahead of time link C
# programs with it (test/Runtime/library.test).
if shutil.which("cc"):
    config.available_features.add("cc")

ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas")
    else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))


def cuda_device_count():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if lib.cuInit(0) != 0:
            return 0
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    except OSError:
        return 0


if cuda_device_count() > 0:
    config.available_features.add("cuda")

# `valgrind`: memcheck, for tests of passes that once read freed IR (a
# use-after-free crashes only sometimes; memcheck sees it every time).
if shutil.which("valgrind"):
    config.available_features.add("valgrind")

# `asan`: harp built with AddressSanitizer (scripts/run-sanitizers.sh). Its
# binaries need the ASan runtime loaded first and more stack; the tests that
# load harp into an uninstrumented process (mlir-opt's plugin, an installed
# consumer, the stand-in CUDA driver preloaded), run it under valgrind, count
# on a signal reaching harp's own handler, or measure stack depth are
# UNSUPPORTED there (the normal build runs them).
if "-fsanitize=address" in getattr(config, "harp_cxx_flags", ""):
    config.available_features.add("asan")

# The stand-in driver (test/Runtime/FakeCuda), for runtime tests anywhere.
fake_cuda = os.path.join(config.harp_obj_root, "test", "fake-cuda")
if os.path.exists(os.path.join(fake_cuda, "libcuda.so.1")):
    config.available_features.add("fake-cuda")
    config.substitutions.append(("%fake_cuda_dir", fake_cuda))

config.substitutions.append(
    ("%extract_ptx", "%s %s" % (config.python_executable,
                                os.path.join(config.harp_src_root, "utils",
                                             "extract-ptx.py"))))

# ISA features of this machine: which CPU profiles' code can run here.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                      if line.startswith("flags")), [])
except OSError:
    flags = []
if "avx512f" in flags:
    config.available_features.add("avx512")
