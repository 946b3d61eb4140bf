"""torch's scatter family over harp's scatter_add (an op with its gradient):
scatter (src, value, reduce='add' or 'multiply'), scatter_reduce, index_add,
index_copy and index_fill, as functions and (harp/_tensor_methods.py) as
Tensor methods with their in-place forms.

Writes are compositions: the positions an index reaches are counted by
scatter-adding ones, and the result is `where(count > 0, written, input)`.
Where an index repeats a position, torch's scatter and index_copy write one
of the values there without saying which; harp writes their mean (the
integer floor of it for integer tensors), deterministically. scatter's
`value=` form and index_fill are exact.

scatter_reduce's 'sum' and 'mean' are scatter_adds (in torch's order, so
the sums are torch's to the bit), with their own gradients. 'prod', 'amax'
and 'amin' (and scatter's reduce='multiply', which is 'prod') read the
index's values, as repeat_interleave reads its repeats: the elements sent to
each position are grouped (a stable sort), and each group is folded with
`maximum`, `minimum` or `*`. 'prod' folds groups of up to 32 elements one
after the other, in torch's order; longer groups, and those of 'amax' and
'amin' (whose result does not depend on the order), fold in halving steps
(log2 of the longest group), so float products of more than 32 elements
may differ from torch's in the last bits. The fold runs on detached values;
the gradient is torch 1.13's (scatter_reduce_backward: the exclusive
product for 'prod', the gradient shared evenly between the elements equal
to the result for 'amax' and 'amin'), attached as a term that is zero in
value and carries exactly that gradient. Where that term cannot be zero
('prod' over an infinite or NaN element, or a product that overflows), the
output keeps its value and the elements there get a gradient of 0 or NaN,
where torch's is NaN or infinite.
"""

import collections
import functools
import numbers

import numpy as np

from . import _harp
from ._harp import HarpError, Tensor

__all__ = ["scatter", "scatter_reduce", "index_add", "index_copy", "index_fill"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")

# 'prod' folds groups of at most this many elements one after the other
# (torch's order, so float products are torch's to the bit); longer ones in
# halving steps, which keep the graph small (log2 of the group's length).
_SEQUENTIAL = 32


def _scatter_add(input, dim, index, src):
    """harp.scatter_add without the range check: the entry point checked
    the index (or attached its check to the result)."""
    return _harp.scatter_add(input, index, src, dim, check=False)


def _gather(input, dim, index):
    """harp.gather without the range check (see _scatter_add)."""
    return _harp.gather(input, index, dim, check=False)


def _checked(op, wraps_negative=False):
    """Decorates an entry point (input, dim, index, ...), whose body checks
    the arguments and builds the result (no side effects): the index's
    range is checked then, raising HarpIndexError where its values are
    known, else attached to the result."""
    def decorate(fn):
        @functools.wraps(fn)
        def entry(input, dim, index, *args, **kwargs):
            result = fn(input, dim, index, *args, **kwargs)
            rank = len(input.shape)
            dim = int(dim) + max(rank, 1) if dim < 0 else int(dim)
            size = (_shape(input) or [1])[dim]
            check = _harp._check_index(op, index, size, "dim %d of size %d" % (dim, size),
                                       wraps_negative=wraps_negative)
            return _harp._with_check(result, check)
        return entry
    return decorate


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
    """`index` a harp integer tensor (its range: @_checked)."""
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
    from . import float32, ones_like, zeros_like
    ones = ones_like(index, dtype=float32)
    return _scatter_add(zeros_like(input, dtype=float32), dim, index, ones)


def _written(input, dim, index, src):
    """The values scatter writes: src's elements summed at their positions,
    divided by how many landed there (bool: whether any True did); and
    where any did."""
    from . import float32, where, zeros_like
    count = _counts(input, dim, index)
    reached = count > 0
    if input.dtype.name == "bool":
        total = _scatter_add(zeros_like(input, dtype=float32), dim, index, src.to(float32))
        return total > 0, reached
    total = _scatter_add(zeros_like(input), dim, index, src)
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


@_checked("scatter")
def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """torch.scatter: out = input with src[i][j] written at [index[i][j]][j]
    for dim 0 (and so on), or the number `value` (scatter(input, dim, index,
    value) with a number in src's place works too). reduce='add' adds
    instead (scatter_add) and reduce='multiply' multiplies (by each element
    sent there, a value once per time the index names the position; the
    gradient is scatter_reduce's for 'prod', which torch 1.13 does not
    give). Where an index repeats without reduce, the mean of the values
    written there (see the module doc)."""
    from . import where
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
    if value is not None:
        if not isinstance(value, (numbers.Number, Tensor)):
            raise TypeError("%s: value must be a number, got %s" % (op, type(value).__name__))
        src = _constant(value, index, input.dtype) if not isinstance(value, Tensor) \
            else value.to(input.dtype).expand(*_shape(index))
        if reduce == "add":
            return _scatter_add(input, dim, index, src)
        if reduce == "multiply":
            return _reduced(op, input, dim, index, src, "prod", True)
        reached = _counts(input, dim, index) > 0
        return where(reached, src.reshape(-1)[0] if isinstance(value, Tensor)
                     else _constant(value, input), input)
    if src.dtype != input.dtype:
        raise HarpError("%s: src's dtype %s differs from self's %s"
                        % (op, src.dtype.name, input.dtype.name))
    src = _index_shaped(op, dim, index, src, input)
    if reduce == "add":
        return _scatter_add(input, dim, index, src)
    if reduce == "multiply":
        return _reduced(op, input, dim, index, src, "prod", True)
    written, reached = _written(input, dim, index, src)
    return where(reached, written, input)


@_checked("scatter_reduce")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """torch.scatter_reduce: input with the elements of src sent to
    [index[i][j]][j] for dim 0 (and so on) reduced into each position they
    reach, together with input's element there unless include_self=False:
    reduce 'sum', 'prod', 'mean' (the integer floor for integer tensors),
    'amax' or 'amin'. Positions no index names keep input's value. The
    gradients with respect to input and src are torch 1.13's (see the
    module doc)."""
    op = "scatter_reduce"
    if not isinstance(input, Tensor):
        raise TypeError("%s: input must be a harp tensor, got %s" % (op, type(input).__name__))
    if not isinstance(src, Tensor):
        raise TypeError("%s: src must be a harp tensor, got %s" % (op, type(src).__name__))
    if reduce not in _REDUCES:
        raise HarpError("%s: reduce must be one of 'sum', 'prod', 'mean', 'amax' or 'amin', "
                        "got %r" % (op, reduce))
    dim = _dim(op, dim, len(input.shape))
    _check_index(op, index)
    if src.dtype != input.dtype:
        raise HarpError("%s: src's dtype %s differs from self's %s"
                        % (op, src.dtype.name, input.dtype.name))
    if input.dtype.name == "bool" or input.dtype.name.startswith("complex"):
        raise HarpError("%s: reduce=%r needs an integer or float tensor, got %s"
                        % (op, reduce, input.dtype.name))
    if len(input.shape) == 0:
        # A 0-d tensor is one element along dim 0 (or -1), as torch's; its
        # index and src may be 0-d or hold one element.
        one = [t.reshape(1) if len(t.shape) == 0 else t for t in (input, index, src)]
        return scatter_reduce(one[0], 0, one[1], one[2], reduce,
                              include_self=include_self).reshape(())
    src = _index_shaped(op, dim, index, src, input)
    return _reduced(op, input, dim, index, src, reduce, bool(include_self))


def _reduced(op, input, dim, index, src, reduce, include_self):
    """scatter_reduce of src (already index's shape) into input."""
    if len(input.shape) == 0:
        one = [t.reshape(1) for t in (input, index, src)]
        return _reduced(op, one[0], 0, one[1], one[2], reduce, include_self).reshape(())
    if reduce in ("sum", "mean"):
        return _summed(input, dim, index, src, reduce, include_self)
    groups = _groups(op, input, dim, index)
    if not groups.targets.size:
        return input.clone()  # an empty index: input, gradient and all
    result = _folded(input.detach(), src.detach(), reduce, include_self, groups)
    if not (input.dtype.name.startswith("float") and _harp.is_grad_enabled()
            and (_may_need_gradient(input) or _may_need_gradient(src))):
        return result
    if reduce == "prod":
        return _with_prod_gradient(input, dim, index, src, include_self, groups, result)
    return _with_extreme_gradient(input, dim, index, src, include_self, groups, result)


def _summed(input, dim, index, src, reduce, include_self):
    """'sum' and 'mean': a scatter_add (torch's order of addition) into
    input, or into input with 0 where the index reaches when include_self
    is False; 'mean' divides by the number of elements summed (1 where
    none), with floor division for integer tensors, as torch."""
    from . import where
    base = input
    if not include_self or reduce == "mean":
        count = _counts(input, dim, index)
    if not include_self:
        base = where(count > 0, _constant(0, input), input)
    total = _scatter_add(base, dim, index, src)
    if reduce == "sum":
        return total
    if include_self:
        count = count + 1
    divisor = where(count > 0, count, _constant(1, count)).to(input.dtype)
    if input.dtype.name.startswith("float"):
        return total / divisor
    return total // divisor


_Groups = collections.namedtuple("_Groups", ["order", "starts", "lengths", "targets", "slot",
                                             "reached"])


def _groups(op, input, dim, index):
    """Where the index sends src's elements, read from its values (NumPy
    arrays): `order` lists index's elements (row-major) grouped by the
    flat position of input they go to, each group in index's order along
    dim (torch's order of reduction); group g is order[starts[g]:
    starts[g] + lengths[g]] and goes to input's flat position targets[g].
    `slot` gives each flat position of input its group (0 where none) and
    `reached` (input's shape) whether it has one. An index out of
    [0, size) raises HarpIndexError, a computed one too (its values are
    realized here), as torch raises its RuntimeError."""
    shape = _shape(input)
    to = np.asarray(index.numpy()).astype(np.int64).reshape(_shape(index))
    size = shape[dim]
    _harp._check_index(op, index, size, "dim %d of size %d" % (dim, size))
    coords = list(np.indices(to.shape, sparse=True))
    coords[dim] = to
    flat = np.ravel_multi_index(np.broadcast_arrays(*coords), shape).reshape(-1)
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))) \
        if flat.size else np.zeros(0, np.int64)
    lengths = np.diff(np.append(starts, flat.size))
    targets = ordered[starts]
    slot = np.zeros(int(np.prod(shape, dtype=np.int64)), np.int64)
    slot[targets] = np.arange(targets.size)
    reached = np.zeros(slot.size, bool)
    reached[targets] = True
    return _Groups(order, starts, lengths, targets, slot, reached.reshape(shape))


def _folded(base, src, reduce, include_self, groups):
    """The values of scatter_reduce 'prod', 'amax' or 'amin' of src into
    base (both detached): each group of src's elements folded, with base's
    element first unless include_self is False, and written at its
    position; the other positions keep base's value."""
    from . import concat, full, index_select, isnan, tensor, where

    def combine(a, b):
        # a comes before b. torch's rule: b if it is NaN or beyond a, else a
        # (so a NaN wins, and of equal values, 0.0 and -0.0, the first).
        if reduce == "prod":
            return a * b
        beyond = b > a if reduce == "amax" else b < a
        if base.dtype.name.startswith("float"):
            beyond = beyond | isnan(b)
        return where(beyond, b, a)

    def padded(values):
        # The product's 1 after the elements, for those with no partner.
        return concat([values, full([1], 1, dtype=values.dtype)])

    flat = base.reshape(-1)
    values = index_select(src.reshape(-1), 0, tensor(groups.order))
    n, longest = int(groups.order.size), int(groups.lengths.max())
    if reduce == "prod" and longest <= _SEQUENTIAL:
        # One element after the other, in torch's order.
        if include_self:
            folded, first = index_select(flat, 0, tensor(groups.targets)), 0
        else:
            folded, first = index_select(values, 0, tensor(groups.starts)), 1
        values = padded(values)
        for r in range(first, longest):
            pick = np.where(r < groups.lengths, groups.starts + r, n)
            folded = folded * index_select(values, 0, tensor(pick))
    else:
        # Halving steps: element i takes in element i + step of its group
        # (past the group's end, itself for a maximum or minimum and the 1
        # for a product).
        ends = np.repeat(groups.starts + groups.lengths, groups.lengths)
        position = np.arange(n)
        step = 1
        while step < longest:
            partner = np.where(position + step < ends, position + step,
                               n if reduce == "prod" else position)
            source = padded(values) if reduce == "prod" else values
            values = combine(values, index_select(source, 0, tensor(partner)))
            step *= 2
        folded = index_select(values, 0, tensor(groups.starts))
        if include_self:
            folded = combine(index_select(flat, 0, tensor(groups.targets)), folded)
    written = index_select(folded, 0, tensor(groups.slot)).reshape(*_shape(base))
    return where(tensor(groups.reached), written, base)


def _may_need_gradient(tensor):
    """Whether a gradient may flow into `tensor`: a leaf that requires one,
    or a computed tensor (whose requires_grad harp does not track)."""
    return tensor.requires_grad or not tensor.is_leaf


def _zero_with_gradient(term):
    """+0.0 wherever `term` is finite (NaN elsewhere), with term's
    gradient."""
    return term - term.detach()


def _with_extreme_gradient(input, dim, index, src, include_self, groups, result):
    """result ('amax' or 'amin') with torch 1.13's gradient: each element
    equal to the result at its position gets grad / N, N the number of
    such elements there (input's counted even when include_self is False,
    and then given none: torch's rule); at a NaN result (no element equals
    it) every element there gets NaN, as torch's 0 * (grad / 0)."""
    from . import isinf, isnan, tensor, where, zeros_like
    dtype = input.dtype
    own, theirs = input.detach(), src.detach()
    value = _gather(result, dim, index)
    own_ties, their_ties = own == result, theirs == value
    count = own_ties.to(dtype) + _scatter_add(zeros_like(own), dim, index,
                                             their_ties.to(dtype))
    kept = tensor(np.ones_like(groups.reached)) if include_self else tensor(~groups.reached)
    # Finite results: x.detach() - x of the tied elements, over N, is 0
    # with the gradient -grad / N. At a NaN result all are taken, times 0.
    own_term = where((own_ties | isnan(result)) & kept, own - input, 0) * own_ties.to(dtype)
    their_term = _scatter_add(zeros_like(own), dim, index,
                             where(their_ties | isnan(value), theirs - src, 0)
                             * their_ties.to(dtype))
    finite = result - _zero_with_gradient((own_term + their_term) / count)
    # Infinite results (x.detach() - x is NaN there): the mean of the tied
    # elements, which is the result itself, with the same gradient.
    infinite = isinf(result)
    share = where(infinite, count, _constant(1, count))
    mean = (where(own_ties & kept, input, 0)
            + _scatter_add(zeros_like(own), dim, index, where(their_ties, src, 0))) / share
    return where(infinite, mean, finite)


def _with_prod_gradient(input, dim, index, src, include_self, groups, result):
    """result ('prod') with torch 1.13's gradient: grad times the product
    of the other elements at the position, computed as torch computes it:
    grad * result' / x for input's element x (result' the product with x
    read as 1 where x is 0), grad * result / x for a src element x, and
    grad * result' for a src element that is its position's only zero
    among src's (result' with it read as 1)."""
    from . import isnan, tensor, where, zeros_like
    own, theirs = input.detach(), src.detach()
    own_safe = where(own == 0, _constant(1, own), own)
    own_rest = _folded(own_safe, theirs, "prod", include_self, groups)
    zero = theirs == 0
    zeros_there = _gather(_scatter_add(zeros_like(own), dim, index, zero.to(input.dtype)),
                         dim, index)
    lone = zero & (zeros_there == 1)
    their_rest = _folded(own, where(lone, _constant(1, theirs), theirs), "prod", include_self,
                         groups)
    moved = own - input
    if not include_self:
        moved = where(tensor(~groups.reached), moved, 0)
    own_term = (moved / own_safe) * own_rest
    lone_term = _scatter_add(zeros_like(own), dim, index,
                            where(lone, theirs - src, 0)) * their_rest
    other_term = _scatter_add(zeros_like(own), dim, index,
                             where(lone, 0, (theirs - src) / where(zero, 1, theirs))) * result
    change = _zero_with_gradient(own_term + lone_term + other_term)
    # Where the term is not 0 (an infinite or NaN element, an overflow) the
    # value stays the result's; the gradient there is 0 or NaN (torch's is
    # NaN or infinite).
    return where(isnan(change.detach()), result, result - change)


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


@_checked("index_add")
def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add: input with alpha x source's slice i along `dim`
    added to input's slice index[i]; repeated indices add up."""
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
        return _scatter_add(input.reshape(1), 0, spread, source).reshape(())
    return _scatter_add(input, dim, spread, source)


@_checked("index_copy")
def index_copy(input, dim, index, source):
    """torch.index_copy: input with source's slice i along `dim` written at
    slice index[i] (a repeated index: the mean of its slices)."""
    op = "index_copy"
    if not isinstance(input, Tensor) or not isinstance(source, Tensor):
        raise TypeError("%s: input and source must be harp tensors" % op)
    dim = _dim(op, dim, len(input.shape))
    spread, source = _spread_index(op, input, dim, index, source)
    if len(input.shape) == 0:
        return scatter.__wrapped__(input.reshape(1), 0, spread, source).reshape(())
    return scatter.__wrapped__(input, dim, spread, source)


@_checked("index_fill", wraps_negative=True)
def index_fill(input, dim, index, value):
    """torch.index_fill: input with its slices index[i] along `dim` set to
    `value` (a number or a 0-d tensor)."""
    from . import where
    op = "index_fill"
    if not isinstance(input, Tensor):
        raise TypeError("%s: input must be a harp tensor, got %s" % (op, type(input).__name__))
    dim = _dim(op, dim, len(input.shape))
    # Negative entries count from the end, as torch's index_fill
    # (@_checked(wraps_negative=True)).
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
    from . import float32, ones_like, zeros
    along = zeros(shape[dim], dtype=float32)
    flat = index.reshape(-1)
    flat = where(flat < 0, flat + shape[dim], flat)
    hit = _scatter_add(along, 0, flat, ones_like(flat, dtype=float32)) > 0
    view = [1] * len(shape)
    view[dim] = shape[dim]
    hit = hit.reshape(*view)
    if len(input.shape) == 0:
        hit = hit.reshape(())
    fill = value.to(input.dtype) if isinstance(value, Tensor) else _constant(value, input)
    return where(hit, fill, input)
