"""Shape, data-movement and scan ops with PyTorch's names and argument
forms. Each calls the C++ composite of the same name (lib/API/Composite.cpp:
views, concat, gather and element-wise maps, so each has a gradient through
harp-autodiff); harp/__init__.py exports them as functions and as Tensor
methods."""

import numpy as _np

from . import _harp
from ._harp import HarpError

__all__ = ["broadcast_to", "chunk", "cumprod", "cumsum",
           "full_like", "index_select", "normal", "ones_like", "bernoulli",
           "rand", "rand_like", "randint", "randint_like", "randn",
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


def cumsum(input, dim, *, dtype=None):
    """Running sums along `dim` (a parallel scan of log2(n) steps), in
    `dtype` if given (the input cast first, as torch.cumsum)."""
    return _harp.cumsum(input if dtype is None else input.to(dtype), dim)


def cumprod(input, dim, *, dtype=None):
    """Running products along `dim` (a parallel scan of log2(n) steps), in
    `dtype` if given (the input cast first, as torch.cumprod)."""
    return _harp.cumprod(input if dtype is None else input.to(dtype), dim)


def _placed(result, device, requires_grad):
    """torch's device= and requires_grad= of a new tensor: `result` moved to
    `device` (if given and not its own), and with requires_grad made a new
    leaf that requires a gradient (a computed tensor cannot hold one)."""
    if device is not None:
        result = result.to(device)
    if requires_grad:
        result = result.detach()
        result.requires_grad = True
    return result


def zeros_like(input, dtype=None, *, device=None, requires_grad=False):
    """Zeros of input's shape (and dtype, unless given); device and
    requires_grad as harp.zeros'."""
    return _placed(_harp.full(dtype or input.dtype, list(input.shape), 0.0), device,
                   requires_grad)


def ones_like(input, dtype=None, *, device=None, requires_grad=False):
    """Ones of input's shape (and dtype, unless given); device and
    requires_grad as harp.zeros'."""
    return _placed(_harp.full(dtype or input.dtype, list(input.shape), 1.0), device,
                   requires_grad)


def full_like(input, fill_value, dtype=None, *, device=None, requires_grad=False):
    """`fill_value` in input's shape (and dtype, unless given); device and
    requires_grad as harp.zeros'."""
    return _placed(_harp.full(dtype or input.dtype, list(input.shape), float(fill_value)),
                   device, requires_grad)


def _seed_of(generator, seed):
    from .random import next_seed
    return next_seed(generator, seed)


def rand(*size, generator=None, dtype=None, seed=None, device=None, requires_grad=False):
    """Uniform numbers in [0, 1) (float32 unless `dtype`), fresh on every
    call: the seed of the draw is the next of `generator` (harp's default
    generator unless given, seeded by harp.manual_seed) and a run-time
    argument, so nothing compiles anew. `seed=` fixes the draw instead: the
    same seed gives the same numbers on every machine. device and
    requires_grad as harp.zeros'."""
    from . import _shape, float32
    return _placed(_harp.rand_seeded(dtype or float32, _shape(size),
                                     _seed_of(generator, seed)), device, requires_grad)


def rand_like(input, dtype=None, generator=None, seed=None, *, device=None,
              requires_grad=False):
    """rand in input's shape (and dtype, unless given)."""
    return _placed(_harp.rand_seeded(dtype or input.dtype, list(input.shape),
                                     _seed_of(generator, seed)), device, requires_grad)


def randn(*size, generator=None, dtype=None, seed=None, device=None, requires_grad=False):
    """Standard normal numbers (Box-Muller on two uniform draws), fresh on
    every call as rand's; device and requires_grad as harp.zeros'."""
    from . import _shape, float32
    return _placed(_harp.randn_seeded(dtype or float32, _shape(size),
                                      _seed_of(generator, seed)), device, requires_grad)


def randn_like(input, dtype=None, generator=None, seed=None, *, device=None,
               requires_grad=False):
    """randn in input's shape (and dtype, unless given)."""
    return _placed(_harp.randn_seeded(dtype or input.dtype, list(input.shape),
                                      _seed_of(generator, seed)), device, requires_grad)


def randint(*args, size=None, generator=None, dtype=None, seed=None, device=None):
    """Integers uniform in [low, high): randint(high, size) or
    randint(low, high, size) (torch's forms; int64 unless `dtype`), on
    `device` if given."""
    from . import _shape, int64, float64
    args = list(args)
    if size is None and args and not isinstance(args[-1], int):
        size = args.pop()
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError("randint: expected randint(high, size) or "
                        "randint(low, high, size)")
    if size is None:
        raise TypeError("randint: missing the size")
    low, high = int(low), int(high)
    if high <= low:
        raise ValueError("randint: needs low < high, got low=%d, high=%d"
                         % (low, high))
    if high - low > 1 << 53:
        raise ValueError("randint: the range high - low must be at most 2**53, "
                         "got %d" % (high - low))
    uniform = _harp.rand_seeded(float64, _shape((size,)), _seed_of(generator, seed))
    # u < 1, so floor(u * n) < n; the clamp guards the rounding of u * n.
    drawn = (uniform * float(high - low)).floor().clamp(0.0, float(high - low - 1))
    return _placed((drawn + float(low)).to(dtype or int64), device, False)


def randint_like(input, *args, dtype=None, generator=None, seed=None, device=None,
                 requires_grad=False, memory_format=None):
    """randint in input's shape: randint_like(x, high) or (x, low, high), on
    input's device unless `device` is given (memory_format is ignored)."""
    result = randint(*args, list(input.shape), generator=generator,
                     dtype=dtype or input.dtype, seed=seed)
    return _placed(result, input.device if device is None else device, requires_grad)


def normal(mean=0.0, std=1.0, size=None, generator=None, dtype=None, seed=None):
    """Normal numbers of mean `mean` and standard deviation `std` (numbers or
    tensors, broadcast together; `size` when both are numbers)."""
    from . import Tensor, _shape, float32
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if tensors:
        if size is not None:
            raise TypeError("normal: size is for a number mean and std only")
        shape = list(_np.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
        dtype = dtype or tensors[0].dtype
    else:
        if size is None:
            raise TypeError("normal: a number mean and std need size")
        shape, dtype = _shape((size,)), dtype or float32
    z = _harp.randn_seeded(dtype, shape, _seed_of(generator, seed))
    return z * std + mean


def multinomial(input, num_samples, replacement=False, *, generator=None, seed=None):
    """torch.multinomial: `num_samples` category indices (int64) per row of
    `input` ([C] or [N, C] non-negative weights, not necessarily summing to
    one), drawn with or without replacement; fresh on every call as rand's.
    With replacement (or one sample), each draw inverts the rows' cumulative
    distribution at a uniform number; without, the categories of the
    num_samples largest log(w) + Gumbel noise, which draws them as
    successive samples without replacement would."""
    from . import Tensor, float64, HarpError, cumsum, log, topk
    if not isinstance(input, Tensor):
        raise TypeError("multinomial: input must be a harp tensor, got %s"
                        % type(input).__name__)
    if input.ndim not in (1, 2) or not input.dtype.name.startswith("float"):
        raise HarpError("multinomial: input must be a 1-d or 2-d float tensor of weights, "
                        "got %s %s" % (input.dtype.name, list(input.shape)))
    classes = int(input.shape[-1])
    if not isinstance(num_samples, int) or num_samples <= 0:
        raise HarpError("multinomial: num_samples must be a positive int, got %r"
                        % (num_samples,))
    if not replacement and num_samples > classes:
        raise HarpError("multinomial: cannot draw %d samples without replacement from %d "
                        "categories" % (num_samples, classes))
    rows = input if input.ndim == 2 else input.unsqueeze(0)
    n = int(rows.shape[0])
    weights = rows.to(float64)
    if replacement or num_samples == 1:
        cdf = cumsum(weights, 1)
        total = cdf.narrow(1, classes - 1, 1)
        u = _harp.rand_seeded(float64, [n, num_samples], _seed_of(generator, seed)) * total
        # The category is the number of cumulative weights at or below u.
        below = (cdf.unsqueeze(1) <= u.unsqueeze(2)).to(float64).sum(2)
        drawn = below.clamp(0.0, float(classes - 1)).to(_harp.DType.int64)
    else:
        u = _harp.rand_seeded(float64, [n, classes], _seed_of(generator, seed))
        gumbel = -log(-log(u.clamp(1e-300, 1.0)))
        drawn = topk(log(weights) + gumbel, num_samples, dim=1).indices
    return drawn if input.ndim == 2 else drawn.squeeze(0)


def bernoulli(input, p=None, generator=None, seed=None):
    """0 or 1 in input's shape and dtype, 1 with probability `p` (a number)
    or, without `p`, the element of input (torch.bernoulli)."""
    u = _harp.rand_seeded(input.dtype, list(input.shape), _seed_of(generator, seed))
    return (u < (input if p is None else float(p))).to(input.dtype)
