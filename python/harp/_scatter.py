"""torch's scatter family over harp's scatter_add (an op with its gradient):
scatter (src, value, reduce='add'), index_add, index_copy and index_fill, as
functions and (harp/_tensor_methods.py) as Tensor methods with their
in-place forms.

Writes are compositions: the positions an index reaches are counted by
scatter-adding ones, and the result is `where(count > 0, written, input)`.
Where an index repeats a position, torch's scatter and index_copy write one
of the values there without saying which; harp writes their mean (the
integer floor of it for integer tensors), deterministically. scatter's
`value=` form and index_fill are exact.
"""

import numbers

from . import _harp
from ._harp import HarpError, Tensor

__all__ = ["scatter", "index_add", "index_copy", "index_fill"]


def _dim(op, dim, rank):
    """`dim` of a tensor of `rank` dims as a non-negative int (a 0-d tensor
    takes 0 and -1, as torch's); TypeError or HarpError naming `op`."""
    if not isinstance(dim, numbers.Integral):
        raise TypeError("%s: dim must be an int, got %s" % (op, type(dim).__name__))
    size = max(rank, 1)
    if not -size <= dim < size:
        raise HarpError("%s: dim %d is out of range for a tensor of %d dims" % (op, dim, rank))
    return int(dim) + size if dim < 0 else int(dim)


def _check_index(op, index):
    if not isinstance(index, Tensor):
        raise TypeError("%s: index must be a harp tensor, got %s" % (op, type(index).__name__))
    if index.dtype.name not in ("int64", "int32"):
        raise HarpError("%s: index must be an int64 or int32 tensor, got %s"
                        % (op, index.dtype.name))


def _shape(t):
    return [int(d) for d in t.shape]


def _constant(value, like, dtype=None):
    from . import full_like
    return full_like(like, value, dtype=dtype if dtype is not None else like.dtype)


def _counts(input, dim, index):
    """How many times `index` reaches each position of `input` along `dim`
    (float32: exact to 2^24)."""
    from . import float32, ones_like, scatter_add, zeros_like
    ones = ones_like(index, dtype=float32)
    return scatter_add(zeros_like(input, dtype=float32), dim, index, ones)


def _written(input, dim, index, src):
    """The values scatter writes: src's elements summed at their positions,
    divided by how many landed there (bool: whether any True did); and
    where any did."""
    from . import float32, scatter_add, where, zeros_like
    count = _counts(input, dim, index)
    reached = count > 0
    if input.dtype.name == "bool":
        total = scatter_add(zeros_like(input, dtype=float32), dim, index, src.to(float32))
        return total > 0, reached
    total = scatter_add(zeros_like(input), dim, index, src)
    divisor = where(reached, count, _constant(1, count)).to(input.dtype)
    if input.dtype.name.startswith(("float", "complex")):
        mean = total / divisor
    else:
        mean = total // divisor
    return mean, reached


def _index_shaped(op, dim, index, src, input):
    """src cut to index's shape (torch reads src only there), after torch's
    size checks."""
    ishape, sshape, xshape = _shape(index), _shape(src), _shape(input)
    if not (len(ishape) == len(sshape) == len(xshape)):
        raise HarpError("%s: index (%d dims), src (%d dims) and self (%d dims) must have the "
                        "same number of dims" % (op, len(ishape), len(sshape), len(xshape)))
    for d, (i, s, x) in enumerate(zip(ishape, sshape, xshape)):
        if i > s or (d != dim and i > x):
            raise HarpError("%s: index %s is larger than src %s or self %s along dim %d"
                            % (op, ishape, sshape, xshape, d))
    for d, (i, s) in enumerate(zip(ishape, sshape)):
        if i < s:
            src = src.narrow(d, 0, i)
    return src


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """torch.scatter: out = input with src[i][j] written at [index[i][j]][j]
    for dim 0 (and so on), or the number `value` (scatter(input, dim, index,
    value) with a number in src's place works too). reduce='add' adds
    instead (scatter_add); 'multiply' is not supported. Where an index
    repeats, the mean of the values written there (see the module doc)."""
    from . import scatter_add, where
    op = "scatter"
    if not isinstance(input, Tensor):
        raise TypeError("%s: input must be a harp tensor, got %s" % (op, type(input).__name__))
    dim = _dim(op, dim, len(input.shape))
    _check_index(op, index)
    if src is not None and not isinstance(src, Tensor):
        if value is not None:
            raise TypeError("%s: give src or value, not both" % op)
        src, value = None, src
    if (src is None) == (value is None):
        raise TypeError("%s: give exactly one of src (a tensor) and value (a number)" % op)
    if reduce not in (None, "add", "multiply"):
        raise HarpError("%s: reduce must be 'add' or 'multiply', got %r" % (op, reduce))
    if reduce == "multiply":
        raise HarpError("%s: reduce='multiply' is not supported (reduce='add' is)" % op)
    if value is not None:
        if not isinstance(value, (numbers.Number, Tensor)):
            raise TypeError("%s: value must be a number, got %s" % (op, type(value).__name__))
        src = _constant(value, index, input.dtype) if not isinstance(value, Tensor) \
            else value.to(input.dtype).expand(*_shape(index))
        if reduce == "add":
            return scatter_add(input, dim, index, src)
        reached = _counts(input, dim, index) > 0
        return where(reached, src.reshape(-1)[0] if isinstance(value, Tensor)
                     else _constant(value, input), input)
    if src.dtype != input.dtype:
        raise HarpError("%s: src's dtype %s differs from self's %s"
                        % (op, src.dtype.name, input.dtype.name))
    src = _index_shaped(op, dim, index, src, input)
    if reduce == "add":
        return scatter_add(input, dim, index, src)
    written, reached = _written(input, dim, index, src)
    return where(reached, written, input)


def _spread_index(op, input, dim, index, source):
    """A 1-d index along `dim` as the scatter index of source's shape."""
    _check_index(op, index)
    if len(index.shape) > 1:
        raise HarpError("%s: index must be 0-d or 1-d, got %d dims" % (op, len(index.shape)))
    if len(index.shape) == 0:
        index = index.reshape(1)
    n = _shape(index)[0]
    sshape, xshape = _shape(source), _shape(input)
    if len(sshape) == 0 and len(xshape) <= 1:
        sshape = [1]
        source = source.reshape(1)
    if len(sshape) != max(len(xshape), 1) or sshape[dim] != n or any(
            s != x for d, (s, x) in enumerate(zip(sshape, xshape)) if d != dim):
        raise HarpError("%s: source %s must have self's shape %s but %d (the index's length) "
                        "along dim %d" % (op, sshape, xshape, n, dim))
    view = [1] * len(sshape)
    view[dim] = n
    return index.reshape(*view).expand(*sshape), source


def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add: input with alpha x source's slice i along `dim`
    added to input's slice index[i]; repeated indices add up."""
    from . import scatter_add
    op = "index_add"
    if not isinstance(input, Tensor) or not isinstance(source, Tensor):
        raise TypeError("%s: input and source must be harp tensors" % op)
    dim = _dim(op, dim, len(input.shape))
    if not isinstance(alpha, numbers.Number):
        raise TypeError("%s: alpha must be a number, got %s" % (op, type(alpha).__name__))
    spread, source = _spread_index(op, input, dim, index, source)
    if alpha != 1:
        source = source * alpha
    if len(input.shape) == 0:
        return scatter_add(input.reshape(1), 0, spread, source).reshape(())
    return scatter_add(input, dim, spread, source)


def index_copy(input, dim, index, source):
    """torch.index_copy: input with source's slice i along `dim` written at
    slice index[i] (a repeated index: the mean of its slices)."""
    op = "index_copy"
    if not isinstance(input, Tensor) or not isinstance(source, Tensor):
        raise TypeError("%s: input and source must be harp tensors" % op)
    dim = _dim(op, dim, len(input.shape))
    spread, source = _spread_index(op, input, dim, index, source)
    if len(input.shape) == 0:
        return scatter(input.reshape(1), 0, spread, source).reshape(())
    return scatter(input, dim, spread, source)


def index_fill(input, dim, index, value):
    """torch.index_fill: input with its slices index[i] along `dim` set to
    `value` (a number or a 0-d tensor)."""
    from . import where
    op = "index_fill"
    if not isinstance(input, Tensor):
        raise TypeError("%s: input must be a harp tensor, got %s" % (op, type(input).__name__))
    dim = _dim(op, dim, len(input.shape))
    _check_index(op, index)
    if len(index.shape) > 1:
        raise HarpError("%s: index must be 0-d or 1-d, got %d dims" % (op, len(index.shape)))
    if isinstance(value, Tensor):
        if len(value.shape) != 0:
            raise HarpError("%s: value must be a number or a 0-d tensor, got %s"
                            % (op, _shape(value)))
    elif not isinstance(value, numbers.Number):
        raise TypeError("%s: value must be a number, got %s" % (op, type(value).__name__))
    shape = _shape(input) or [1]
    from . import float32, ones_like, scatter_add, zeros
    along = zeros(shape[dim], dtype=float32)
    flat = index.reshape(-1)
    hit = scatter_add(along, 0, flat, ones_like(flat, dtype=float32)) > 0
    view = [1] * len(shape)
    view[dim] = shape[dim]
    hit = hit.reshape(*view)
    if len(input.shape) == 0:
        hit = hit.reshape(())
    fill = value.to(input.dtype) if isinstance(value, Tensor) else _constant(value, input)
    return where(hit, fill, input)
