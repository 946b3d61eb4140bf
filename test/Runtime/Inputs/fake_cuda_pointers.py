"""Launches a kernel on the stand-in driver (argv[1]) with each kind of
pointer and prints the launch's result code."""
import ctypes
import os
import sys

os.environ.setdefault("HARP_FAKE_CUDA_LOG", os.devnull)
cuda = ctypes.CDLL(sys.argv[1])
PTX = b"""
.version 7.8
.target sm_90
.address_size 64
.visible .entry k(
\t.param .u64 .ptr .align 1 k_param_0,
\t.param .u32 k_param_1
)
{
\tret;
}
"""
assert cuda.cuInit(0) == 0
module = ctypes.c_void_p()
assert cuda.cuModuleLoadData(ctypes.byref(module), PTX) == 0
function = ctypes.c_void_p()
assert cuda.cuModuleGetFunction(ctypes.byref(function), module, b"k") == 0


def launch(pointer):
    p = ctypes.c_uint64(pointer)
    n = ctypes.c_uint32(7)  # not a pointer: never checked
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(p), ctypes.c_void_p),
                                   ctypes.cast(ctypes.byref(n), ctypes.c_void_p))
    return cuda.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, None, params, None)


device = ctypes.c_uint64()
assert cuda.cuMemAlloc_v2(ctypes.byref(device), ctypes.c_size_t(64)) == 0
host = ctypes.create_string_buffer(64)
print("device buffer:", launch(device.value))
print("inside it:", launch(device.value + 16))
print("host buffer:", launch(ctypes.addressof(host)))
assert cuda.cuMemFree_v2(device) == 0
print("freed buffer:", launch(device.value))
