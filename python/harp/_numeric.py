"""More of torch's numeric functions, composed from harp's element-wise ops,
selects, contractions, scatters and reductions (so each fuses and
differentiates through them): NaN-ignoring extremes, logit, sgn, ldexp,
erfinv, closeness tests, the rank-1 and batch-summed products, Kronecker
products, distances, covariance and correlation; copies with a part
written (put, index_put, the select / slice / diagonal scatters,
masked_scatter); searches (isin, searchsorted, bucketize); log-step scans
(cummax, cummin, logcumsumexp) and order statistics through sort (median,
kthvalue, quantile). Each is checked against torch on its OpInfo samples
(test_opinfo.py), the tails and NaN rules in test_numeric.py."""

import math
import numbers

import numpy as np

from ._harp import DType, HarpError, Tensor
from ._compose import _check, _float, _is_float, _where

__all__ = [
    "erfc", "fmax", "fmin", "logit", "sgn", "ldexp", "isclose", "allclose", "equal",
    "addr", "addbmm", "kron", "dist", "cdist", "cov", "corrcoef",
    "bitwise_left_shift", "bitwise_right_shift", "fill", "constant_pad_nd", "narrow_copy",
    "conj_physical", "resolve_conj", "resolve_neg", "take", "put", "index_put",
    "select_scatter", "slice_scatter", "diagonal_scatter", "renorm", "combinations", "isin",
    "searchsorted", "bucketize", "cummax", "cummin", "logcumsumexp", "median", "nanmedian",
    "kthvalue", "quantile", "nanquantile", "argwhere", "empty", "empty_like", "masked_scatter",
    "index_reduce", "as_strided", "cumulative_trapezoid", "erfinv",
]


def _complex(t):
    return t.dtype.name.startswith("complex")


def erfc(input):
    """1 - erf(x), accurate where erf(x) is near 1 (torch.erfc)."""
    return _float("erfc", input).erfc()


def fmax(input, other):
    """The larger of the two where both are numbers, the number where one is
    NaN (torch.fmax; a tie's gradient goes to `input`)."""
    _check("fmax", input, other)
    if not (_is_float(input) or _is_float(other)):
        return input.maximum(other)
    return _where((input >= other) | other.isnan(), input, other)


def fmin(input, other):
    """The smaller of the two where both are numbers, the number where one is
    NaN (torch.fmin; a tie's gradient goes to `input`)."""
    _check("fmin", input, other)
    if not (_is_float(input) or _is_float(other)):
        return input.minimum(other)
    return _where((input <= other) | other.isnan(), input, other)


def logit(input, eps=None):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given
    (torch.logit)."""
    x = _float("logit", input)
    if eps is not None:
        x = x.clamp(float(eps), 1.0 - float(eps))
    return (x / (1 - x)).log()


def sgn(input):
    """The sign for real tensors, x / |x| (0 at 0) for complex ones
    (torch.sgn)."""
    _check("sgn", input)
    if not _complex(input):
        return input.sign()
    magnitude = input.abs()
    zero = magnitude == 0
    return _where(zero, 0, input / _where(zero, 1.0, magnitude))


def ldexp(input, other):
    """input * 2 ** other (torch.ldexp: a float result)."""
    _check("ldexp", input, other)
    return _float("ldexp", input) * _float("ldexp", other).exp2()


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where |input - other| <= atol + rtol * |other|, or the two are equal
    (infinities of one sign included); NaNs are close to each other only
    with equal_nan (torch.isclose)."""
    _check("isclose", input, other)
    if input.dtype != other.dtype:
        raise HarpError("isclose: input and other must have the same dtype, got %s and %s"
                        % (input.dtype.name, other.dtype.name))
    if rtol < 0 or atol < 0:
        raise HarpError("isclose: rtol and atol must be >= 0, got %r and %r" % (rtol, atol))
    equal = input == other
    if input.dtype == DType.bool:
        return equal
    if equal_nan and _is_float(input):
        equal = equal | (input.isnan() & other.isnan())
    if rtol == 0 and atol == 0:
        return equal
    wide = DType.float64 if not _is_float(input) else input.dtype
    a, b = input.to(wide), other.to(wide)
    error = (a - b).abs()
    return equal | ((error <= (b.abs() * rtol + atol)) & error.isfinite())


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is close (torch.allclose): a Python bool."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    """Whether both have the same shape and elements (torch.equal): a
    Python bool."""
    _check("equal", input, other)
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all().item())


def _scaled(op, x, factor):
    """x * factor, with torch's integer scalars for integer tensors."""
    if factor == 1:
        return x
    if not _is_float(x) and x.dtype != DType.bool:
        factor = int(factor)  # as torch converts a scalar for an integer tensor
    return x * factor


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2) (input broadcast; ignored
    when beta is 0, as torch.addr)."""
    _check("addr", input, vec1, vec2)
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise HarpError("addr: vec1 and vec2 must be 1-D, got %d and %d dims"
                        % (vec1.ndim, vec2.ndim))
    if vec1.dtype == DType.bool and vec2.dtype == DType.bool:
        product = vec1.unsqueeze(1) & vec2.unsqueeze(0)
        product = product if alpha else product & False
        return product if not beta else (input & True) | product
    product = _scaled("addr", vec1.unsqueeze(1) * vec2.unsqueeze(0), alpha)
    if beta == 0:
        return product
    return _scaled("addr", input, beta) + product


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum over b of batch1[b] @ batch2[b] (one
    contraction over the batch and the inner dim; input ignored when beta
    is 0, as torch.addbmm)."""
    _check("addbmm", input, batch1, batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise HarpError("addbmm: batch1 and batch2 must be 3-D, got %d and %d dims"
                        % (batch1.ndim, batch2.ndim))
    if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
        raise HarpError("addbmm: batch1 %s and batch2 %s do not multiply"
                        % (list(batch1.shape), list(batch2.shape)))
    from ._einsum import einsum
    product = _scaled("addbmm", einsum("bij,bjk->ik", batch1, batch2), alpha)
    if beta == 0:
        return product
    return _scaled("addbmm", input, beta) + product


def kron(input, other):
    """The Kronecker product: block (i, j, ...) is input[i, j, ...] * other
    (ranks padded with leading 1s, as torch.kron)."""
    _check("kron", input, other)
    rank = max(input.ndim, other.ndim)
    a_shape = [1] * (rank - input.ndim) + list(input.shape)
    b_shape = [1] * (rank - other.ndim) + list(other.shape)
    a_spread, b_spread = [], []
    for m, n in zip(a_shape, b_shape):
        a_spread += [m, 1]
        b_spread += [1, n]
    product = input.reshape(a_spread) * other.reshape(b_spread)
    return product.reshape([m * n for m, n in zip(a_shape, b_shape)])


def _p_norm(x, p, dim, keepdim=False):
    """The p-norm of x over `dim` (p a number, inf or -inf)."""
    return x.norm(float(p), dim, keepdim)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast) (torch.dist)."""
    _check("dist", input, other)
    return _p_norm(_float("dist", input) - _float("dist", other), p, None)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """The p-norm distances between the rows of x1 [..., P, M] and x2
    [..., R, M]: [..., P, R] (batch dims broadcast; torch.cdist, computed
    directly whatever compute_mode says)."""
    _check("cdist", x1, x2)
    if x1.ndim < 2 or x2.ndim < 2:
        raise HarpError("cdist: x1 and x2 need at least 2 dims, got %d and %d"
                        % (x1.ndim, x2.ndim))
    if x1.shape[-1] != x2.shape[-1]:
        raise HarpError("cdist: x1 %s and x2 %s differ in their last dim"
                        % (list(x1.shape), list(x2.shape)))
    if not (_is_float(x1) and _is_float(x2)):
        raise HarpError("cdist: needs float tensors, got %s and %s"
                        % (x1.dtype.name, x2.dtype.name))
    if p < 0:
        raise HarpError("cdist: p must be >= 0, got %r" % p)
    difference = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return _p_norm(difference, p, -1)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of `input` (a 1-D
    input is one variable: a 0-d result), with frequency and observation
    weights (torch.cov)."""
    _check("cov", input)
    if input.ndim > 2:
        raise HarpError("cov: expected at most 2 dims, got %d" % input.ndim)
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if not (_is_float(x)):
        x = x.to(DType.float32)
    observations = x.shape[1]
    weights = None
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        _check("cov", w)
        if w.ndim > 1 or (w.ndim == 1 and w.shape[0] != observations):
            raise HarpError("cov: %s must be 1-D with %d elements, got %s"
                            % (name, observations, list(w.shape)))
        if name == "fweights" and _is_float(w):
            raise HarpError("cov: fweights must be integers, got %s" % w.dtype.name)
        weights = w if weights is None else weights * w
    if weights is None:
        mean = x.mean(1, True)
        factor = observations - correction
        centered = x - mean
        product = centered @ centered.transpose(0, 1).conj()
        result = product / max(factor, 0)
    else:
        total = weights.sum()
        mean = (x * weights).sum(1, True) / total
        if correction == 0:
            factor = total
        elif aweights is None:
            factor = total - correction
        else:
            factor = total - (weights * aweights).sum() * correction / total
        factor = factor.clamp(min=0)
        centered = x - mean
        product = (centered * weights) @ centered.transpose(0, 1).conj()
        result = product / factor
    return result.reshape([]) if x.shape[0] == 1 else result


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in the rows of
    `input` (torch.corrcoef), clipped to [-1, 1] for real inputs."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    from ._compose import diag
    stddev = diag(c).sqrt() if not _complex(c) else diag(c).real.sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clamp(-1, 1) if not _complex(c) else c


# Shifts, copies and identities ------------------------------------------------


def bitwise_left_shift(input, other):
    """input << other (integers; torch.bitwise_left_shift)."""
    _check("bitwise_left_shift", input)
    return input << other


def bitwise_right_shift(input, other):
    """input >> other, arithmetic for signed integers (torch.bitwise_right_shift)."""
    _check("bitwise_right_shift", input)
    return input >> other


def fill(input, value):
    """A tensor of input's shape and dtype filled with `value` (a number or a
    0-d tensor; torch.fill). The gradient goes to a tensor value."""
    _check("fill", input)
    from . import full_like
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise HarpError("fill: value must be a number or a 0-d tensor, got %d dims"
                            % value.ndim)
        filled = _broadcast(value.to(input.dtype), list(input.shape))
    else:
        filled = full_like(input, value)
    if not _is_float(input):
        return filled
    # input * 0 keeps input in the graph with a zero gradient, as torch's
    # fill (not where it is infinite or NaN, whose product is NaN).
    return _where(input.isfinite(), filled + input * 0, filled)


def constant_pad_nd(input, pad, value=0):
    """input padded with `value` (pairs of before / after widths from the
    last dim back; negative widths crop) (torch.constant_pad_nd)."""
    from .nn.functional import pad as _pad
    return _pad(input, list(pad), "constant", value)


def narrow_copy(input, dim, start, length):
    """A copy of input.narrow(dim, start, length) (torch.narrow_copy)."""
    _check("narrow_copy", input)
    return input.narrow(dim, start, length).clone()


def conj_physical(input):
    """The complex conjugate (input itself for real tensors; torch.conj_physical)."""
    _check("conj_physical", input)
    return input.conj()


def resolve_conj(input):
    """input itself: harp computes conjugates, it never marks them (torch.resolve_conj)."""
    _check("resolve_conj", input)
    return input


def resolve_neg(input):
    """input itself: harp computes negations, it never marks them (torch.resolve_neg)."""
    _check("resolve_neg", input)
    return input


# Indexing by flat positions and scatters --------------------------------------


def take(input, index):
    """input's elements at the positions of the flattened tensor (negative
    positions from the end), in index's shape (torch.take)."""
    _check("take", input, index)
    flat = input.reshape(-1)
    positions = index.reshape(-1)
    positions = _where(positions < 0, positions + flat.shape[0], positions)
    return flat.index_select(0, positions).reshape(list(index.shape))


def put(input, index, source, accumulate=False):
    """A copy of input with source written (or added, with accumulate) at the
    flat positions `index` (torch.put)."""
    _check("put", input, index, source)
    if index.numel() != source.numel():
        raise HarpError("put: index has %d elements, source %d" % (index.numel(), source.numel()))
    flat = input.reshape(-1)
    positions = index.reshape(-1)
    positions = _where(positions < 0, positions + flat.shape[0], positions)
    values = source.reshape(-1).to(input.dtype)
    if accumulate:
        result = flat.index_add(0, positions, values)
    else:
        result = flat.index_copy(0, positions, values)
    return result.reshape(list(input.shape))


def index_put(input, indices, values, accumulate=False):
    """A copy of input with values written (or added) at input[indices] (a
    tuple of index tensors, as advanced indexing takes them) (torch.index_put)."""
    _check("index_put", input)
    indices = tuple(indices)
    result = input.clone()
    if accumulate:
        flat_index = _flat_positions(input, indices)
        added = result.reshape(-1).index_add(
            0, flat_index.reshape(-1),
            _broadcast(values.to(input.dtype), list(flat_index.shape)).reshape(-1))
        return added.reshape(list(input.shape))
    result[indices] = values
    return result


def _broadcast(t, shape):
    from . import broadcast_to
    return broadcast_to(t, shape) if list(t.shape) != list(shape) else t


def _flat_positions(input, indices):
    """The flat positions input[indices] reads (bool masks, int tensors and
    full slices over leading dims, as advanced indexing takes them)."""
    from . import arange
    positions = arange(input.numel(), dtype=DType.int64).reshape(list(input.shape))
    return positions[indices]


def select_scatter(input, src, dim, index):
    """A copy of input with src written at `index` of `dim` (torch.select_scatter)."""
    _check("select_scatter", input, src)
    from ._tensor_methods import _normalized
    dim = _normalized("select_scatter", dim, input.ndim)
    result = input.clone()
    result[(slice(None),) * dim + (index,)] = src
    return result


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with src written at start:end:step of `dim`
    (torch.slice_scatter)."""
    _check("slice_scatter", input, src)
    from ._tensor_methods import _normalized
    dim = _normalized("slice_scatter", dim, input.ndim)
    result = input.clone()
    result[(slice(None),) * dim + (slice(start, end, step),)] = src
    return result


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src written on the diagonal torch.diagonal(input,
    offset, dim1, dim2) reads (torch.diagonal_scatter)."""
    _check("diagonal_scatter", input, src)
    from ._einsum import diagonal
    from . import arange
    positions = arange(input.numel(), dtype=DType.int64).reshape(list(input.shape))
    where_ = diagonal(positions, offset, dim1, dim2)
    if list(where_.shape) != list(src.shape):
        raise HarpError("diagonal_scatter: src has shape %s, the diagonal %s"
                        % (list(src.shape), list(where_.shape)))
    if where_.numel() == 0:
        return input.clone()
    flat = input.reshape(-1).index_copy(0, where_.reshape(-1), src.reshape(-1).to(input.dtype))
    return flat.reshape(list(input.shape))


def renorm(input, p, dim, maxnorm):
    """Each slice along `dim` whose p-norm exceeds maxnorm scaled down to it
    (torch.renorm)."""
    _check("renorm", input)
    if not _is_float(input):
        raise HarpError("renorm: needs a float tensor, got %s" % input.dtype.name)
    if p <= 0:
        raise HarpError("renorm: p must be positive, got %r" % p)
    from ._tensor_methods import _normalized
    dim = _normalized("renorm", dim, input.ndim)
    others = [d for d in range(input.ndim) if d != dim]
    norms = input.norm(float(p), others, True) if others else input.abs()
    factor = _where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-D tensor's elements, one per row,
    in itertools' order (torch.combinations)."""
    import itertools
    _check("combinations", input)
    if input.ndim != 1:
        raise HarpError("combinations: expected a 1-D tensor, got %d dims" % input.ndim)
    if r < 0:
        raise HarpError("combinations: r must be >= 0, got %d" % r)
    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(n), r)), dtype=np.int64).reshape(-1, r)
    if r == 0:
        return input[:0]
    if rows.shape[0] == 0:
        return input[:0].unsqueeze(1).expand([0, r])
    from . import tensor
    return input[tensor(rows)]


# Searches --------------------------------------------------------------------


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Where each element is among test_elements (torch.isin)."""
    from . import tensor as _tensor
    if not isinstance(elements, Tensor):
        elements = _tensor(elements)
    if not isinstance(test_elements, Tensor):
        test_elements = _tensor(test_elements)
    if test_elements.numel():
        found = (elements.unsqueeze(-1) == test_elements.reshape(-1)).any(-1)
    else:
        found = elements.unsqueeze(-1)[..., :0].any(-1)  # nothing to find
    return ~found if invert else found


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """For each value, how many entries of the sorted last dim are below it
    (`right`: not above it): its insertion index (torch.searchsorted)."""
    from . import tensor as _tensor
    _check("searchsorted", sorted_sequence)
    scalar = not isinstance(input, Tensor)
    values = _tensor(input) if scalar else input
    if side is not None:
        if side not in ("left", "right"):
            raise HarpError("searchsorted: side must be 'left' or 'right', got %r" % (side,))
        if right and side == "left":
            raise HarpError("searchsorted: side='left' and right=True disagree")
        right = side == "right"
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    if sorted_sequence.ndim == 1:
        below = (sorted_sequence <= values.unsqueeze(-1)) if right else \
            (sorted_sequence < values.unsqueeze(-1))
    else:
        if list(sorted_sequence.shape[:-1]) != list(values.shape[:-1]):
            raise HarpError("searchsorted: the leading dims of sorted_sequence %s and input "
                            "%s differ" % (list(sorted_sequence.shape), list(values.shape)))
        s, v = sorted_sequence.unsqueeze(-2), values.unsqueeze(-1)
        below = (s <= v) if right else (s < v)
    if _is_float(sorted_sequence):
        # NaNs sort last: every number is below a NaN, a NaN value above all.
        nan_value = values.isnan().unsqueeze(-1)
        below = below | (nan_value & ~(sorted_sequence.isnan() if sorted_sequence.ndim == 1
                                        else sorted_sequence.unsqueeze(-2).isnan()))
    counts = below.to(DType.int64).sum(-1)
    if out_int32:
        counts = counts.to(DType.int32)
    return counts.reshape([]) if scalar else counts


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket index of each value among the sorted 1-D boundaries
    (torch.bucketize: searchsorted with the roles of `right` as torch's)."""
    _check("bucketize", boundaries)
    if boundaries.ndim != 1:
        raise HarpError("bucketize: boundaries must be 1-D, got %d dims" % boundaries.ndim)
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# Scans and order statistics --------------------------------------------------

import collections as _collections

_ValuesIndices = {name: _collections.namedtuple(name, ["values", "indices"])
                  for name in ("cummax", "cummin", "median", "nanmedian", "kthvalue", "mode")}


def _shifted(x, dim, k, pad):
    """x moved k places along `dim` (toward higher indices), `pad` in front."""
    from . import cat, full
    n = x.shape[dim]
    shape = list(x.shape)
    shape[dim] = min(k, n)
    front = full(shape, pad, dtype=x.dtype)
    return front if k >= n else cat([front, x.narrow(dim, 0, n - k)], dim)


def _extreme_scan(op, input, dim, larger):
    """The running max (min) along `dim` and the index of its latest
    occurrence, NaN the most extreme (torch.cummax / cummin): a scan of
    ceil(log2 n) steps, each a fused select."""
    _check(op, input)
    if input.dtype.name.startswith("complex"):
        raise HarpError("%s: complex tensors have no order" % op)
    from ._tensor_methods import _normalized
    from . import arange
    rank = max(input.ndim, 1)
    x = input if input.ndim else input.reshape(1)
    dim = _normalized(op, dim, rank)
    n = x.shape[dim]
    shape = [1] * rank
    shape[dim] = n
    index = arange(n, dtype=DType.int64).reshape(shape).expand(list(x.shape))
    if _is_float(x):
        pad = -math.inf if larger else math.inf
    elif x.dtype == DType.bool:
        pad = False if larger else True
    else:
        info = np.iinfo(np.dtype(x.dtype.name))
        pad = int(info.min if larger else info.max)
    values, k = x, 1
    while k < n:
        earlier = _shifted(values, dim, k, pad)
        earlier_index = _shifted(index, dim, k, -1)
        take = (earlier > values) if larger else (earlier < values)
        if _is_float(x):
            take = take | (earlier.isnan() & ~values.isnan())
        values = _where(take, earlier, values)
        index = _where(take, earlier_index, index)
        k *= 2
    if input.ndim == 0:
        values, index = values.reshape([]), index.reshape([])
    return _ValuesIndices[op](values, index)


def cummax(input, dim):
    """(values, indices): the running maximum along `dim` and where it was
    last reached; NaN propagates (torch.cummax)."""
    return _extreme_scan("cummax", input, dim, True)


def cummin(input, dim):
    """(values, indices): the running minimum along `dim` and where it was
    last reached; NaN propagates (torch.cummin)."""
    return _extreme_scan("cummin", input, dim, False)


def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) along `dim`, stably: a scan of logaddexp steps
    (torch.logcumsumexp)."""
    _check("logcumsumexp", input)
    if not _is_float(input):
        raise HarpError("logcumsumexp: needs a float tensor, got %s" % input.dtype.name)
    from ._tensor_methods import _normalized
    x = input if input.ndim else input.reshape(1)
    dim = _normalized("logcumsumexp", dim, max(input.ndim, 1))
    n, k = x.shape[dim], 1
    while k < n:
        earlier = _shifted(x, dim, k, -math.inf)
        # logaddexp with -inf on either side exact (-inf + -inf is -inf).
        high = x.maximum(earlier)
        low = x.minimum(earlier)
        finite = high != -math.inf
        safe_high = _where(finite, high, 0.0)
        x = _where(finite, safe_high + (_where(finite, low, 0.0) - safe_high).exp().log1p(), high)
        k *= 2
    return x if input.ndim else x.reshape([])


def _sorted_along(op, input, dim):
    """input sorted along dim (NaN last) with the indices, and dim."""
    from ._sort import sort
    from ._tensor_methods import _normalized
    _check(op, input)
    dim = _normalized(op, dim, max(input.ndim, 1))
    values, indices = sort(input, dim if input.ndim else 0)
    return values, indices, dim


def _pick(values, indices, dim, position, keepdim, ndim):
    """values / indices at `position` (an int tensor broadcast over the
    other dims, or an int) along dim."""
    if isinstance(position, numbers.Integral):
        v = values.narrow(dim, position, 1)
        i = indices.narrow(dim, position, 1)
    else:
        v = values.gather(dim, position)
        i = indices.gather(dim, position)
    if not keepdim and ndim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    return v, i


def median(input, dim=None, keepdim=False):
    """The lower median: of all elements (a 0-d tensor), or (values, indices)
    along `dim`; NaN when the row holds a NaN (torch.median)."""
    return _median("median", input, dim, keepdim, ignore_nan=False)


def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the numbers, NaNs left out (NaN for a row of
    NaNs) (torch.nanmedian)."""
    return _median("nanmedian", input, dim, keepdim, ignore_nan=True)


def _median(op, input, dim, keepdim, ignore_nan):
    _check(op, input)
    whole = dim is None
    x = input.reshape(-1) if whole else input
    if x.numel() == 0 and whole:
        raise HarpError("%s: an empty tensor has no median" % op)
    values, indices, d = _sorted_along(op, x, 0 if whole else dim)
    n = values.shape[d] if values.ndim else 1
    if n == 0:
        raise HarpError("%s: dim %d is empty" % (op, d))
    if x.ndim == 0:
        values, indices = values.reshape(1), indices.reshape(1)
    if ignore_nan and _is_float(x):
        numbers_ = (~(x if x.ndim else x.reshape(1)).isnan()).to(DType.int64).sum(d, True)
        position = _where(numbers_ > 0, (numbers_ - 1) // 2, 0)
    elif _is_float(x):
        has_nan = (x if x.ndim else x.reshape(1)).isnan().any(d, True)
        position = _where(has_nan, n - 1, (n - 1) // 2)  # a NaN sorts last
        position = position.to(DType.int64)
    else:
        position = (n - 1) // 2
    v, i = _pick(values, indices, d, position, keepdim or whole, max(x.ndim, 1))
    if whole:
        return v.reshape([])
    if x.ndim == 0:
        v, i = v.reshape([]), i.reshape([])
    return _ValuesIndices[op](v, i)


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices): the k-th smallest (1-based) along `dim`
    (torch.kthvalue; NaN sorts last)."""
    values, indices, d = _sorted_along("kthvalue", input, dim)
    n = values.shape[d] if values.ndim else 1
    if not 1 <= k <= n:
        raise HarpError("kthvalue: k = %d is out of range for a dim of size %d" % (k, n))
    if input.ndim == 0:
        return _ValuesIndices["kthvalue"](input, indices.reshape([]))
    v, i = _pick(values, indices, d, k - 1, keepdim, input.ndim)
    return _ValuesIndices["kthvalue"](v, i)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (q a number or a 1-D tensor in [0, 1]) of all
    elements or along `dim`, interpolated as numpy's methods; NaN where the
    row holds a NaN (torch.quantile)."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile with the NaNs left out (NaN for a row of NaNs)
    (torch.nanquantile)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    _check(op, input)
    if not _is_float(input) or _complex(input):
        raise HarpError("%s: needs a float tensor, got %s" % (op, input.dtype.name))
    methods = ("linear", "lower", "higher", "midpoint", "nearest")
    if interpolation not in methods:
        raise HarpError("%s: interpolation must be one of %s, got %r"
                        % (op, ", ".join(methods), interpolation))
    scalar_q = not isinstance(q, Tensor)
    if not scalar_q and q.dtype != input.dtype:
        raise HarpError("%s: q must have the input's dtype %s, got %s"
                        % (op, input.dtype.name, q.dtype.name))
    qs = np.atleast_1d(np.asarray(q.numpy() if not scalar_q else q, dtype=np.float64))
    if qs.ndim > 1:
        raise HarpError("%s: q must be a number or a 1-D tensor, got %d dims" % (op, qs.ndim))
    if ((qs < 0) | (qs > 1)).any():
        raise HarpError("%s: q values must be in [0, 1]" % op)
    whole = dim is None
    x = input.reshape(-1) if whole else (input if input.ndim else input.reshape(1))
    from ._tensor_methods import _normalized
    d = 0 if whole else _normalized(op, dim, max(input.ndim, 1))
    n = x.shape[d]
    if n == 0:
        raise HarpError("%s: the input is empty along dim %d" % (op, d))
    values, _, _ = _sorted_along(op, x, d)
    from . import tensor as _tensor
    # q as a tensor [Q, 1, ...] (differentiable when given as one).
    qt = q.to(x.dtype) if not scalar_q else _tensor(qs.astype(np.dtype(x.dtype.name)))
    qt = qt.reshape([len(qs)] + [1] * x.ndim)
    if ignore_nan:
        count = (~x.isnan()).to(x.dtype).sum(d, True)
        rank = (count - 1).clamp(min=0).unsqueeze(0) * qt
    else:
        has_nan = x.isnan().any(d, True)
        rank = qt * (n - 1)
    low, high = rank.floor(), rank.ceil()
    if interpolation == "lower":
        pos_low = pos_high = low
    elif interpolation == "higher":
        pos_low = pos_high = high
    elif interpolation == "nearest":
        pos_low = pos_high = rank.round()
    else:
        pos_low, pos_high = low, high
    shape = [len(qs)] + list(x.shape)
    shape[d + 1] = 1
    expanded = values.unsqueeze(0).expand([len(qs)] + list(values.shape))
    v_low = expanded.gather(d + 1, _broadcast(pos_low.detach().to(DType.int64), shape))
    v_high = expanded.gather(d + 1, _broadcast(pos_high.detach().to(DType.int64), shape))
    if interpolation == "linear":
        out = v_low + (v_high - v_low) * (rank - low.detach())
    elif interpolation == "midpoint":
        out = v_low + (v_high - v_low) * 0.5
    else:
        out = v_low
    if ignore_nan:
        out = _where(count.unsqueeze(0) > 0, out, math.nan)
    else:
        out = _where(has_nan.unsqueeze(0), math.nan, out)
    if whole:
        out = out.reshape([len(qs)] + ([1] * input.ndim if keepdim else []))
    elif not keepdim:
        out = out.squeeze(d + 1)
        if input.ndim == 0:
            out = out.reshape([len(qs)])
    elif input.ndim == 0:
        out = out.reshape([len(qs)])
    return out[0] if scalar_q else out


# More of torch's long tail ---------------------------------------------------


def argwhere(input):
    """The indices of the non-zero elements, one row each [n, ndim]
    (torch.argwhere: nonzero's rows)."""
    from ._extra import nonzero
    return nonzero(input)


def empty(*size, dtype=None, device=None, requires_grad=False, **ignored):
    """A new tensor of `size` (zeros: harp has no uninitialized memory)
    (torch.empty)."""
    from . import zeros
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(input, dtype=None, *, device=None, requires_grad=False, **ignored):
    """A new tensor of input's shape (zeros) (torch.empty_like)."""
    from . import zeros_like
    return zeros_like(input, dtype, device=device, requires_grad=requires_grad)


def masked_scatter(input, mask, source):
    """A copy of input with source's leading elements written, in order,
    where the (broadcast) bool mask holds (torch.masked_scatter)."""
    _check("masked_scatter", input, mask, source)
    if mask.dtype != DType.bool:
        raise HarpError("masked_scatter: mask must be a bool tensor, got %s" % mask.dtype.name)
    from . import broadcast_tensors
    x, m = broadcast_tensors(input, mask)
    flat_mask = m.reshape(-1)
    taken = int(flat_mask.to(DType.int64).sum().item())
    if taken > source.numel():
        raise HarpError("masked_scatter: the mask selects %d elements, source has %d"
                        % (taken, source.numel()))
    if source.numel() == 0:
        return x.clone()
    # The i-th selected position reads source's i-th element.
    order = (flat_mask.to(DType.int64).cumsum(0) - 1).clamp(min=0)
    picked = source.reshape(-1).to(x.dtype).index_select(0, order)
    return _where(flat_mask, picked, x.reshape(-1)).reshape(list(x.shape))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with source's slices reduced ('prod', 'mean', 'amax', 'amin')
    into the slices `index` names along `dim` (torch.index_reduce)."""
    _check("index_reduce", input, index, source)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise HarpError("index_reduce: reduce must be 'prod', 'mean', 'amax' or 'amin', got %r"
                        % (reduce,))
    from ._tensor_methods import _normalized
    dim = _normalized("index_reduce", dim, max(input.ndim, 1))
    if index.ndim > 1:
        raise HarpError("index_reduce: index must be 1-D, got %d dims" % index.ndim)
    shape = [1] * source.ndim
    if source.ndim:
        shape[dim] = index.shape[0]
    expanded = index.reshape(shape).expand(list(source.shape)) if source.ndim else index
    from . import scatter_reduce
    return scatter_reduce(input, dim, expanded, source, reduce, include_self=include_self)


def as_strided(input, size, stride, storage_offset=0):
    """The view of input's elements (read in row-major order, as a
    contiguous torch tensor stores them) at storage_offset + sum(i_k *
    stride_k) for each index i of `size` (torch.as_strided on a contiguous
    tensor; a gather here)."""
    _check("as_strided", input)
    size, stride = [int(n) for n in size], [int(s) for s in stride]
    if len(size) != len(stride):
        raise HarpError("as_strided: size %s and stride %s differ in length" % (size, stride))
    if any(s < 0 for s in stride):
        raise HarpError("as_strided: strides must be >= 0, got %s" % stride)
    positions = np.full(size, int(storage_offset), dtype=np.int64)
    for axis, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[axis] = n
        positions = positions + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    if positions.size and positions.max() >= input.numel():
        raise HarpError("as_strided: size %s, stride %s and offset %d reach element %d of a "
                        "tensor of %d" % (size, stride, storage_offset, int(positions.max()),
                                          input.numel()))
    from . import tensor
    flat = input.reshape(-1)
    return flat.index_select(0, tensor(positions.reshape(-1))).reshape(size)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integrals of y along `dim` (one fewer than
    y's size) at spacing dx (1) or at the points x (torch.cumulative_trapezoid)."""
    _check("cumulative_trapezoid", y)
    from ._tensor_methods import _normalized
    dim = _normalized("cumulative_trapezoid", dim, y.ndim)
    n = y.shape[dim]
    if n == 0:
        return y
    pair = y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)
    if x is None:
        areas = pair * ((1.0 if dx is None else dx) * 0.5)
    elif isinstance(x, Tensor):
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[dim] = x.shape[0]
            x = x.reshape(shape)
        xd = _normalized("cumulative_trapezoid", dim - y.ndim + x.ndim if dim >= 0 else dim,
                         x.ndim)
        step = x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1)
        areas = pair * step * 0.5
    else:
        areas = pair * (float(x) * 0.5)
    if not _is_float(areas):
        areas = areas.to(DType.float32)
    return areas.cumsum(dim)


def erfinv(input):
    """The inverse error function on (-1, 1) (+-inf at +-1, NaN outside)
    (torch.erfinv): Winitzki's closed form (within 2e-3) refined by Newton
    steps on erf, written with erfc above 0.5 so that 1 - |y| keeps its
    digits near the ends."""
    x = _float("erfinv", input)
    magnitude = x.abs()
    inside = magnitude < 1
    sign = x.sign().detach()
    w = _where(inside, magnitude, 0.0).detach()
    ln = (1 - w * w).log()
    k = 0.147
    t = 2 / (math.pi * k) + ln * 0.5
    # The guess is a constant to the gradient: through the Newton steps
    # alone the gradient is 1 / erf'(z), the inverse's derivative.
    z = ((t * t - ln / k).sqrt() - t).sqrt() * sign
    y = _where(inside, x, 0.0)
    near = w > 0.5
    for _ in range(3 if x.dtype == DType.float32 else 4):
        # erf(z) - y, as sign ((1 - |y|) - erfc(|z|)) near the ends.
        residual = _where(near, ((1 - y * sign) - (z * sign).erfc()) * sign, z.erf() - y)
        z = z - residual / ((-(z * z)).exp() * (2 / math.sqrt(math.pi)))
    # +-inf at +-1 and NaN beyond, with torch's gradients there (inf, NaN);
    # each branch reads x only where it is taken, so nothing leaks inside.
    one = magnitude == 1
    ends = _where(one, _where(one, x, 0.0) * math.inf,
                  _where(inside | one, 0.0, x) * math.nan)
    return _where(inside, z, ends)
