"""Shape, data-movement and scan ops with PyTorch's names, composed from
harp's views, concat, gather and element-wise maps (so each has a gradient
through harp-autodiff). harp/__init__.py exports them as functions and as
Tensor methods."""

import math

import numpy as _np

from . import _harp
from ._harp import HarpError

__all__ = ["broadcast_to", "chunk", "cumprod", "cumsum",
           "full_like", "index_select", "ones_like", "rand_like", "randn",
           "randn_like", "repeat", "repeat_interleave", "roll", "split",
           "stack", "take_along_dim", "tril", "triu", "unbind", "zeros_like"]


def _dim(dim, rank, op, extra=0):
    """`dim` in [-(rank + extra), rank + extra) as a non-negative index."""
    size = rank + extra
    if not -size <= dim < size:
        raise HarpError("%s: dim %d out of range for a tensor of rank %d" % (op, dim, rank))
    return dim % size if size else 0


def stack(tensors, dim=0):
    """The tensors (all of one shape) joined along a new dim `dim`."""
    from . import concat
    tensors = list(tensors)
    if not tensors:
        raise HarpError("stack: needs at least one tensor")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise HarpError("stack: tensor %d has shape %s but tensor 0 has %s"
                            % (i, list(t.shape), list(shape)))
    d = _dim(dim, len(shape), "stack", extra=1)
    return concat([t.unsqueeze(d) for t in tensors], d)


def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along `dim`: each of split_size (the last
    one shorter) or of the listed sizes, which must add up to the dim."""
    d = _dim(dim, len(tensor.shape), "split")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0:
            raise HarpError("split: split_size must be positive, got %d" % size)
        sizes = [min(size, n - start) for start in range(0, n, size)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise HarpError("split: sections %s do not add up to dim %d of size %d"
                            % (sizes, d, n))
    pieces, start = [], 0
    for size in sizes:
        pieces.append(tensor.slice(d, start, start + size))
        start += size
    return tuple(pieces)


def chunk(input, chunks, dim=0):
    """split() into `chunks` pieces of ceil(n / chunks) (fewer if n is small)."""
    if chunks <= 0:
        raise HarpError("chunk: chunks must be positive, got %d" % chunks)
    d = _dim(dim, len(input.shape), "chunk")
    n = input.shape[d]
    return split(input, max(1, -(-n // chunks)), d)


def unbind(input, dim=0):
    """The slices along `dim`, that dim removed."""
    d = _dim(dim, len(input.shape), "unbind")
    return tuple(piece.squeeze(d) for piece in split(input, 1, d))


def _index_tensor(index, op):
    from . import int32, int64, tensor
    if not isinstance(index, _harp.Tensor):
        index = tensor(_np.asarray(index, dtype=_np.int64))
    if index.dtype not in (int32, int64):
        raise HarpError("%s: the index must be int32 or int64, got %s" % (op, index.dtype))
    return index


def index_select(input, dim, index):
    """The entries of `input` at the 1-D `index` along `dim`."""
    index = _index_tensor(index, "index_select")
    if len(index.shape) != 1:
        raise HarpError("index_select: the index must be 1-D, got shape %s"
                        % list(index.shape))
    d = _dim(dim, len(input.shape), "index_select")
    shape = list(input.shape)
    shape[d] = index.shape[0]
    view = [1] * len(shape)
    view[d] = index.shape[0]
    return _harp.gather(input, index.reshape(view).expand(*shape), d)


def take_along_dim(input, indices, dim=None):
    """gather with broadcasting: input and indices broadcast against each
    other except along `dim` (dim=None: both flattened)."""
    indices = _index_tensor(indices, "take_along_dim")
    if dim is None:
        return _harp.gather(input.reshape(-1), indices.reshape(-1), 0)
    rank = len(input.shape)
    if len(indices.shape) != rank:
        raise HarpError("take_along_dim: input %s and indices %s need the same rank"
                        % (list(input.shape), list(indices.shape)))
    d = _dim(dim, rank, "take_along_dim")
    shape_in, shape_idx = list(input.shape), list(indices.shape)
    for i in range(rank):
        if i == d:
            continue
        a, b = shape_in[i], shape_idx[i]
        if a != b and a != 1 and b != 1:
            raise HarpError("take_along_dim: input %s and indices %s do not broadcast "
                            "in dim %d" % (list(input.shape), list(indices.shape), i))
        shape_in[i] = shape_idx[i] = max(a, b)
    return _harp.gather(input.expand(*shape_in), indices.expand(*shape_idx), d)


def repeat(input, *sizes):
    """Tensor.repeat: the tensor tiled sizes[i] times along dim i (extra
    leading sizes add dims)."""
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    sizes = [int(s) for s in sizes]
    rank = len(input.shape)
    if len(sizes) < rank or any(s < 0 for s in sizes):
        raise HarpError("repeat: needs at least %d non-negative sizes for shape %s, got %s"
                        % (rank, list(input.shape), sizes))
    shape = [1] * (len(sizes) - rank) + list(input.shape)
    # [1, s0, 1, s1, ...] broadcast to [r0, s0, r1, s1, ...], then merged.
    interleaved, target = [], []
    for r, s in zip(sizes, shape):
        interleaved += [1, s]
        target += [r, s]
    return input.reshape(interleaved).expand(*target).reshape(
        [r * s for r, s in zip(sizes, shape)])


def repeat_interleave(input, repeats, dim=None):
    """Each element repeated `repeats` times along `dim` (an int, or one
    count per element; dim=None flattens first)."""
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = _dim(dim, len(input.shape), "repeat_interleave")
    n = input.shape[d]
    if isinstance(repeats, int):
        if repeats < 0:
            raise HarpError("repeat_interleave: repeats must be non-negative, got %d" % repeats)
        shape = list(input.shape)
        expanded = shape[:d + 1] + [repeats] + shape[d + 1:]
        out_shape = list(shape)
        out_shape[d] = n * repeats
        return input.unsqueeze(d + 1).expand(*expanded).reshape(out_shape)
    counts = _np.asarray(repeats.numpy() if isinstance(repeats, _harp.Tensor) else repeats,
                         dtype=_np.int64).reshape(-1)
    if counts.shape[0] != n or (counts < 0).any():
        raise HarpError("repeat_interleave: needs %d non-negative repeats for dim %d, got %s"
                        % (n, d, counts.tolist()))
    return index_select(input, d, _np.repeat(_np.arange(n), counts))


def _triangle(input, diagonal, lower, op):
    from . import tensor
    if len(input.shape) < 2:
        raise HarpError("%s: needs a tensor of rank >= 2, got shape %s" % (op, list(input.shape)))
    rows, cols = input.shape[-2], input.shape[-1]
    keep = _np.tri(rows, cols, diagonal, dtype=bool) if lower \
        else ~_np.tri(rows, cols, diagonal - 1, dtype=bool)
    return _harp.where(tensor(keep), input, 0)


def tril(input, diagonal=0):
    """The lower triangle of the last two dims (j <= i + diagonal); zeros above."""
    return _triangle(input, diagonal, True, "tril")


def triu(input, diagonal=0):
    """The upper triangle of the last two dims (j >= i + diagonal); zeros below."""
    return _triangle(input, diagonal, False, "triu")


def roll(input, shifts, dims=None):
    """Elements shifted cyclically by `shifts` along `dims` (dims=None:
    the flattened tensor, shape kept)."""
    from . import concat
    if dims is None:
        if not isinstance(shifts, int):
            raise HarpError("roll: without dims, shifts must be one int")
        return roll(input.reshape(-1), shifts, 0).reshape(list(input.shape))
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(shifts) != len(dims):
        raise HarpError("roll: %d shifts for %d dims" % (len(shifts), len(dims)))
    out = input
    for shift, dim in zip(shifts, dims):
        d = _dim(dim, len(input.shape), "roll")
        n = input.shape[d]
        s = shift % n if n else 0
        if s:
            out = concat([out.slice(d, n - s, n), out.slice(d, 0, n - s)], d)
    return out


def broadcast_to(input, shape):
    """The tensor broadcast to `shape` (NumPy's rules: new leading dims,
    size-1 dims stretched; -1 keeps a dim)."""
    shape = [int(s) for s in shape]
    rank = len(input.shape)
    if len(shape) < rank:
        raise HarpError("broadcast_to: cannot broadcast %s to the smaller rank of %s"
                        % (list(input.shape), shape))
    lead = len(shape) - rank
    for i, s in enumerate(input.shape):
        want = shape[lead + i]
        if want != -1 and s != want and s != 1:
            raise HarpError("broadcast_to: cannot broadcast %s to %s (dim %d)"
                            % (list(input.shape), shape, lead + i))
    if any(s == -1 for s in shape[:lead]):
        raise HarpError("broadcast_to: -1 is not allowed for a new dim in %s" % shape)
    return input.reshape([1] * lead + list(input.shape)).expand(*shape)


def _scan(input, dim, op, combine, identity):
    """An inclusive scan along `dim` in log2(n) steps (Hillis-Steele): step k
    combines every element with the one 2^k before it (identity before the
    start). Each step is one fused element-wise kernel; the gradient
    follows through the shifts."""
    d = _dim(dim, len(input.shape), op)
    n = input.shape[d]
    rank = len(input.shape)
    out = input
    shift = 1
    while shift < n:
        before = [0] * rank
        before[d] = shift
        shifted = out.slice(d, 0, n - shift).pad(before, [0] * rank, identity)
        out = combine(out, shifted)
        shift *= 2
    return out


def cumsum(input, dim):
    """Running sums along `dim` (a parallel scan of log2(n) steps)."""
    return _scan(input, dim, "cumsum", lambda a, b: a + b, 0.0)


def cumprod(input, dim):
    """Running products along `dim` (a parallel scan of log2(n) steps)."""
    return _scan(input, dim, "cumprod", lambda a, b: a * b, 1.0)


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
    shape = _shape(shape)
    dtype = dtype or float32
    uniform = _harp.rand(dtype, [2] + shape, seed)
    u1, u2 = uniform[0], uniform[1]
    return (-2.0 * (1.0 - u1).log()).sqrt() * (u2 * (2.0 * math.pi)).cos()


def randn_like(input, seed=0, dtype=None):
    """randn in input's shape."""
    return randn(list(input.shape), seed=seed, dtype=dtype or input.dtype)
