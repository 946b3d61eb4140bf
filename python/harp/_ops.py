"""Shape, data-movement and scan ops with PyTorch's names and argument
forms. Each calls the C++ composite of the same name (lib/API/Composite.cpp:
views, concat, gather and element-wise maps, so each has a gradient through
harp-autodiff); harp/__init__.py exports them as functions and as Tensor
methods."""

import numpy as _np

from . import _harp
from ._harp import HarpError

__all__ = ["broadcast_to", "chunk", "cumprod", "cumsum",
           "full_like", "index_select", "ones_like", "rand_like", "randn",
           "randn_like", "repeat", "repeat_interleave", "roll", "split",
           "stack", "take_along_dim", "tril", "triu", "unbind", "zeros_like"]


def stack(tensors, dim=0):
    """The tensors (all of one shape) joined along a new dim `dim`."""
    return _harp.stack(list(tensors), dim)


def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along `dim`: each of split_size (the last
    one shorter) or of the listed sizes, which must add up to the dim."""
    if isinstance(split_size_or_sections, int):
        return tuple(_harp.split(tensor, split_size_or_sections, dim))
    return tuple(_harp.split_sections(tensor, [int(s) for s in split_size_or_sections], dim))


def chunk(input, chunks, dim=0):
    """split() into `chunks` pieces of ceil(n / chunks) (fewer if n is small)."""
    return tuple(_harp.chunk(input, chunks, dim))


def unbind(input, dim=0):
    """The slices along `dim`, that dim removed."""
    return tuple(_harp.unbind(input, dim))


def _index_tensor(index):
    from . import tensor
    if not isinstance(index, _harp.Tensor):
        index = tensor(_np.asarray(index, dtype=_np.int64))
    return index


def index_select(input, dim, index):
    """The entries of `input` at the 1-D `index` along `dim`."""
    return _harp.index_select(input, dim, _index_tensor(index))


def take_along_dim(input, indices, dim=None):
    """gather with broadcasting: input and indices broadcast against each
    other except along `dim` (dim=None: both flattened)."""
    return _harp.take_along_dim(input, _index_tensor(indices), dim)


def repeat(input, *sizes):
    """Tensor.repeat: the tensor tiled sizes[i] times along dim i (extra
    leading sizes add dims)."""
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    return _harp.repeat(input, [int(s) for s in sizes])


def repeat_interleave(input, repeats, dim=None):
    """Each element repeated `repeats` times along `dim` (an int, or one
    count per element; dim=None flattens first)."""
    if isinstance(repeats, int):
        return _harp.repeat_interleave(input, repeats, dim)
    counts = _np.asarray(repeats.numpy() if isinstance(repeats, _harp.Tensor) else repeats,
                         dtype=_np.int64).reshape(-1)
    return _harp.repeat_interleave(input, counts.tolist(), dim)


def tril(input, diagonal=0):
    """The lower triangle of the last two dims (j <= i + diagonal); zeros above."""
    return _harp.triangle(input, diagonal, True)


def triu(input, diagonal=0):
    """The upper triangle of the last two dims (j >= i + diagonal); zeros below."""
    return _harp.triangle(input, diagonal, False)


def roll(input, shifts, dims=None):
    """Elements shifted cyclically by `shifts` along `dims` (dims=None:
    the flattened tensor, shape kept)."""
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [] if dims is None else [dims] if isinstance(dims, int) else list(dims)
    if not dims and len(shifts) != 1:
        raise HarpError("roll: without dims, shifts must be one int")
    return _harp.roll(input, shifts, dims)


def broadcast_to(input, shape):
    """The tensor broadcast to `shape` (NumPy's rules: new leading dims,
    size-1 dims stretched; -1 keeps a dim)."""
    return _harp.broadcast_to(input, [int(s) for s in shape])


def cumsum(input, dim):
    """Running sums along `dim` (a parallel scan of log2(n) steps)."""
    return _harp.cumsum(input, dim)


def cumprod(input, dim):
    """Running products along `dim` (a parallel scan of log2(n) steps)."""
    return _harp.cumprod(input, dim)


def zeros_like(input, dtype=None):
    """Zeros of input's shape (and dtype, unless given)."""
    return _harp.full(dtype or input.dtype, list(input.shape), 0.0)


def ones_like(input, dtype=None):
    """Ones of input's shape (and dtype, unless given)."""
    return _harp.full(dtype or input.dtype, list(input.shape), 1.0)


def full_like(input, fill_value, dtype=None):
    """`fill_value` in input's shape (and dtype, unless given)."""
    return _harp.full(dtype or input.dtype, list(input.shape), float(fill_value))


def rand_like(input, seed=0, dtype=None):
    """Uniform [0, 1) numbers in input's shape (a float dtype)."""
    return _harp.rand(dtype or input.dtype, list(input.shape), seed)


def randn(*shape, seed=0, dtype=None):
    """Standard normal numbers (Box-Muller on two uniform draws of harp's
    counter-based generator): the same seed gives the same numbers."""
    from . import _shape, float32
    return _harp.randn(dtype or float32, _shape(shape), seed)


def randn_like(input, seed=0, dtype=None):
    """randn in input's shape."""
    return randn(list(input.shape), seed=seed, dtype=dtype or input.dtype)
