"""harp.cuda: the GPU's memory and synchronization, with torch.cuda's names.

harp keeps device memory it frees for reuse (a caching allocator, like
PyTorch's): a block freed by a computation goes back to a cache without
waiting for the GPU, and the next allocation of its size takes it. The
numbers below are bytes of blocks (sizes rounded up from what was asked:
multiples of 512 bytes, of 1/16 of the power of two below the size above
1 MiB). HARP_CUDA_NO_CACHING=1 turns the cache off (every free waits for the
GPU and gives the block back), for memory checkers.

All harp's GPU work runs in order on one stream; a computation's result
read on the host (numpy(), item()) waits for it.
"""

from . import _harp

__all__ = ["is_available", "synchronize", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "memory_stats",
           "reset_peak_memory_stats", "empty_cache"]


def is_available():
    """Whether a GPU can be used: harp built with cuda.h, the driver
    library found, a device present ($HARP_CUDA_DEVICE, default 0)."""
    return _harp._cuda_is_available()


def synchronize(device=None):
    """Waits for all work on the GPU (raises HarpError if there is none)."""
    _check_device(device, "synchronize")
    _harp._cuda_synchronize()


def memory_allocated(device=None):
    """Bytes of device memory in blocks harp holds for tensors and
    temporaries now (not counting the cache)."""
    _check_device(device, "memory_allocated")
    return _harp._cuda_memory_stats()["allocated_bytes"]


def max_memory_allocated(device=None):
    """The most bytes memory_allocated() reached since the start or the last
    reset_peak_memory_stats()."""
    _check_device(device, "max_memory_allocated")
    return _harp._cuda_memory_stats()["peak_allocated_bytes"]


def memory_reserved(device=None):
    """Bytes harp holds from the driver: allocated plus cached."""
    _check_device(device, "memory_reserved")
    return _harp._cuda_memory_stats()["reserved_bytes"]


def memory_stats(device=None):
    """A dict: allocated_bytes, peak_allocated_bytes, reserved_bytes,
    device_allocations and device_frees (how many times the driver was asked
    to allocate and to free: flat once a training loop's sizes repeat)."""
    _check_device(device, "memory_stats")
    return dict(_harp._cuda_memory_stats())


def reset_peak_memory_stats(device=None):
    """Starts max_memory_allocated() again from memory_allocated()."""
    _check_device(device, "reset_peak_memory_stats")
    _harp._cuda_reset_peak_memory()


def empty_cache():
    """Gives the cached blocks back to the driver (after the GPU is done
    with them); memory_allocated() is unchanged."""
    _harp._cuda_empty_cache()


def _check_device(device, what):
    if device is None:
        return
    from ._device import device as _device
    d = _device(device)
    if d.type != "cuda" or (d.index or 0) != 0:
        raise ValueError("harp.cuda.%s: harp drives one GPU, cuda:0; got %s"
                         % (what, d))
