"""DLPack: Tensor.__dlpack__ / __dlpack_device__ and harp.from_dlpack with
PyTorch and NumPy. Both directions share memory (a write on one side is
seen on the other), every dtype crosses with its bits, and a capsule gives
its tensor once."""

import gc
import weakref

import numpy as np
import pytest
import torch
import torch.utils.dlpack

import harp

DTYPES = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
          np.complex64, np.complex128]


def values(dtype, shape=(3, 5)):
    rng = np.random.default_rng(0)
    v = rng.standard_normal(shape) * 50
    if np.issubdtype(dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_to_harp_shares_memory(dtype):
    source = torch.from_numpy(values(dtype))
    t = harp.from_dlpack(source)
    assert t.dtype.name == np.dtype(dtype).name and tuple(t.shape) == (3, 5)
    np.testing.assert_array_equal(t.numpy(), source.numpy())
    source[1, 2] = 7
    assert t.numpy()[1, 2] == 7
    # Computations read the producer's memory when they run.
    source[0, 0] = 3
    np.testing.assert_array_equal((t * 2).numpy(), source.numpy() * 2)
    assert t.numpy().ctypes.data == source.data_ptr()


@pytest.mark.parametrize("dtype", DTYPES)
def test_harp_to_torch_shares_memory(dtype):
    t = harp.tensor(values(dtype))
    out = torch.from_dlpack(t)
    assert str(out.dtype) == "torch." + np.dtype(dtype).name
    np.testing.assert_array_equal(out.numpy(), t.numpy())
    assert out.data_ptr() == t.numpy().ctypes.data
    out[2, 4] = 9
    assert t.numpy()[2, 4] == 9
    np.testing.assert_array_equal((t + 0).numpy()[2, 4], 9)


def test_in_place_writes_by_harp_are_seen_at_once():
    source = torch.zeros(4)
    t = harp.from_dlpack(source)
    with harp.no_grad():
        t.add_(1.5)
    np.testing.assert_array_equal(source.numpy(), [1.5] * 4)  # no harp call in between
    t.copy_(harp.arange(4.0))
    np.testing.assert_array_equal(source.numpy(), [0, 1, 2, 3])
    # And into a harp tensor another library holds.
    h = harp.ones(3)
    out = torch.from_dlpack(h)
    with harp.no_grad():
        h.mul_(4.0)
    np.testing.assert_array_equal(out.numpy(), [4, 4, 4])


def test_tensors_built_before_a_write_keep_their_values():
    source = torch.arange(3.0)
    t = harp.from_dlpack(source)
    before = t * 1  # built before the write, computed after it
    with harp.no_grad():
        t.add_(10.0)
    np.testing.assert_array_equal(before.numpy(), [0, 1, 2])
    np.testing.assert_array_equal(source.numpy(), [10, 11, 12])


def test_numpy_both_ways():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = harp.from_dlpack(a)
    a[0, 1] = -1
    assert t.numpy()[0, 1] == -1
    back = np.from_dlpack(harp.tensor(a) * 2)
    np.testing.assert_array_equal(back, a * 2)


def test_computed_tensor_exports_its_values():
    a = harp.tensor(np.arange(6.0, dtype=np.float32))
    out = torch.from_dlpack((a * a).reshape(2, 3))
    np.testing.assert_array_equal(out.numpy(), (np.arange(6.0) ** 2).reshape(2, 3))


def test_bool_and_unsigned_follow_dlpack_0_6():
    mask = harp.tensor(np.array([True, False, True]))
    # DLPack 0.6 has no bool code: one byte per element, read as uint8.
    out = torch.from_dlpack(mask)
    assert out.dtype == torch.uint8 and out.tolist() == [1, 0, 1]
    big = np.array([0, 2**63 + 5, 2**64 - 1], np.uint64)
    t = harp.from_dlpack(big)
    assert t.dtype == harp.uint64
    np.testing.assert_array_equal(t.numpy(), big)
    assert np.from_dlpack(harp.tensor(np.array([7, 65535], np.uint16))).dtype == np.uint16


@pytest.mark.parametrize("shape", [(), (0,), (1,), (0, 3), (1, 1, 7)])
def test_edge_shapes(shape):
    source = torch.from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    t = harp.from_dlpack(source)
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(t.numpy(), source.numpy())
    back = torch.from_dlpack(t)
    assert tuple(back.shape) == shape


def test_strided_sources_are_views_of_the_producers_memory():
    base = torch.arange(24.0).reshape(4, 6)
    view = base[1:, ::2].t()  # offset, step and transpose
    t = harp.from_dlpack(view)
    np.testing.assert_array_equal(t.numpy(), view.numpy())
    base[1, 0] = 100  # an element of the view
    np.testing.assert_array_equal(t.numpy(), view.numpy())
    with pytest.raises(BufferError, match="negative strides"):
        harp.from_dlpack(np.arange(5.0)[::-1])


def test_a_capsule_gives_its_tensor_once():
    capsule = torch.utils.dlpack.to_dlpack(torch.ones(3))
    t = harp.from_dlpack(capsule)
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])
    with pytest.raises(BufferError, match="consumed already"):
        harp.from_dlpack(capsule)
    own = harp.ones(2).__dlpack__()
    torch.utils.dlpack.from_dlpack(own)
    with pytest.raises(BufferError, match="consumed already"):
        harp.from_dlpack(own)
    assert harp.ones(2).__dlpack_device__() == (1, 0)


def test_lifetimes_are_held_by_the_capsule():
    # NumPy's capsule holds the array object itself: harp keeps it alive.
    source = np.arange(5.0)
    ref = weakref.ref(source)
    t = harp.from_dlpack(source)
    view = t * 1
    del source
    gc.collect()
    assert ref() is not None  # harp holds the producer's array
    np.testing.assert_array_equal(t.numpy(), np.arange(5.0))
    del t
    gc.collect()
    assert ref() is not None  # a graph built on the tensor still reads it
    np.testing.assert_array_equal(view.numpy(), np.arange(5.0))
    del view
    gc.collect()
    assert ref() is None  # and lets it go with the last use
    # torch's holds its storage: the values stay valid without the tensor.
    source = torch.arange(100000.0)
    t = harp.from_dlpack(source)
    del source
    gc.collect()
    filler = [torch.full((100000,), -1.0) for _ in range(4)]
    np.testing.assert_array_equal(t.numpy(), np.arange(100000.0, dtype=np.float32))
    del filler
    # A harp buffer outlives its tensor while torch holds it.
    out = torch.from_dlpack(harp.tensor(np.arange(4.0)) + 1)
    gc.collect()
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, 4])
    # A capsule nobody consumed frees what it holds.
    for _ in range(3):
        harp.ones(1000).__dlpack__()


def test_errors():
    with pytest.raises(TypeError, match="expected a DLPack capsule or an object with "
                       "__dlpack__.*got list"):
        harp.from_dlpack([1, 2])
    with pytest.raises(BufferError, match="stream must be None"):
        harp.ones(2).__dlpack__(stream=1)
    with pytest.raises(BufferError, match="element type float16 has no harp dtype"):
        harp.from_dlpack(torch.ones(2, dtype=torch.float16))
    with pytest.raises(BufferError, match="bfloat16 has no harp dtype"):
        harp.from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    # A failed import leaves the capsule as it was: torch can still take it.
    capsule = torch.utils.dlpack.to_dlpack(torch.ones(2, dtype=torch.float16))
    with pytest.raises(BufferError):
        harp.from_dlpack(capsule)
    assert torch.utils.dlpack.from_dlpack(capsule).tolist() == [1.0, 1.0]


def test_gradients_flow_through_imported_tensors():
    w = harp.from_dlpack(torch.tensor([1.0, 2.0, 3.0]))
    w.requires_grad = True
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0, 6.0])


def test_what_is_computed_from_shared_memory_is_computed_again():
    source = torch.arange(4.0)
    t = harp.from_dlpack(source)
    doubled = t * 2
    np.testing.assert_array_equal(doubled.numpy(), [0, 2, 4, 6])
    source += 1  # under harp, which cannot know
    np.testing.assert_array_equal(doubled.numpy(), [2, 4, 6, 8])
    np.testing.assert_array_equal(t.sum().numpy(), 10)


def test_a_tensor_that_requires_a_gradient_is_not_exported():
    w = harp.ones(2, requires_grad=True)
    with pytest.raises(harp.HarpError, match="requires a gradient; export tensor.detach"):
        torch.from_dlpack(w)
    np.testing.assert_array_equal(torch.from_dlpack(w.detach()).numpy(), [1, 1])


def test_detach_shares_the_producers_memory_too():
    source = torch.zeros(3)
    d = harp.from_dlpack(source).detach()
    total = d.sum()
    np.testing.assert_array_equal(total.numpy(), 0)
    source += 2
    np.testing.assert_array_equal(total.numpy(), 6)
    with harp.no_grad():
        d.add_(1)
    np.testing.assert_array_equal(source.numpy(), [3, 3, 3])
