"""torch.sort, argsort and topk as compositions of harp's ops (no sort
kernel yet).

Along the sorted dim (length n), element i's place is the number of
elements that come before it: those smaller (larger when descending), and
the equal ones at smaller positions, so equal elements keep their order (a
stable sort) and NaN sorts above every number, as in torch. The places are
a permutation; the indices are its inverse (a scatter of positions to
places) and the values a gather of the input at the indices, through which
the gradient flows. The count compares every pair of a row: O(n^2) work per
row, vectorized and fused into one reduction, which suits the rows models
sort (classes, vocabularies, a few thousand elements) and not long ones.
"""

import collections
import numbers

from . import _harp
from ._harp import HarpError, Tensor
from ._scatter import _dim

__all__ = ["sort", "argsort", "topk", "msort"]

SortResult = collections.namedtuple("sort", ["values", "indices"])
TopkResult = collections.namedtuple("topk", ["values", "indices"])


def _check(op, input):
    if not isinstance(input, Tensor):
        raise TypeError("%s: input must be a harp tensor, got %s" % (op, type(input).__name__))
    if input.dtype.name.startswith("complex"):
        raise HarpError("%s: complex tensors have no order (got %s)" % (op, input.dtype.name))


def _places(x, descending):
    """The sorted place of each element of x [..., n] along its last dim."""
    from . import arange, isnan
    n = int(x.shape[-1])
    a = x.unsqueeze(-1)   # element i
    b = x.unsqueeze(-2)   # element j
    if descending:
        ahead = b > a     # j comes before i
    else:
        ahead = b < a
    if x.dtype.name.startswith("float"):
        nan_a, nan_b = isnan(a), isnan(b)
        # NaN is above every number: first when descending, last otherwise.
        ahead = (ahead | nan_b & ~nan_a) if descending else (ahead | ~nan_b & nan_a)
        equal = (b == a) | (nan_a & nan_b)
    else:
        equal = b == a
    positions = arange(n)
    earlier = positions.unsqueeze(-1) > positions.unsqueeze(0)   # j < i, as [i, j]
    before = ahead | (equal & earlier)
    return before.to(positions.dtype).sum(-1)


def sort(input, dim=-1, descending=False, *, stable=False):
    """torch.sort: (values, indices) of input sorted along `dim`, ascending
    unless `descending`; stable (equal elements keep their order) whatever
    `stable` says; NaN above every number."""
    from . import zeros_like, arange
    op = "sort"
    _check(op, input)
    rank = len(input.shape)
    dim = _dim(op, dim, rank)
    if rank == 0:
        return SortResult(input, zeros_like(input, dtype=arange(1).dtype))
    x = input.movedim(dim, -1) if dim != rank - 1 else input
    places = _places(x, descending)
    n = int(x.shape[-1])
    positions = arange(n).expand(*[int(d) for d in x.shape])
    # Ranks and their inverse are in range by construction: no checks.
    indices = _harp.scatter_add(zeros_like(places), places, positions, -1, check=False)
    values = _harp.gather(x, indices, -1, check=False)
    if dim != rank - 1:
        values, indices = values.movedim(-1, dim), indices.movedim(-1, dim)
    return SortResult(values, indices)


def argsort(input, dim=-1, descending=False, *, stable=False):
    """torch.argsort: the indices of sort(input, dim, descending)."""
    return sort(input, dim, descending, stable=stable).indices


def msort(input):
    """torch.msort: the values of sort(input, dim=0)."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """torch.topk: (values, indices) of the k largest (smallest with
    largest=False) elements along `dim`, in order."""
    op = "topk"
    _check(op, input)
    rank = len(input.shape)
    d = _dim(op, dim, rank)
    n = int(input.shape[d]) if rank else 1
    if not isinstance(k, numbers.Integral) or not 0 <= k <= n:
        raise HarpError("%s: k must be an int in [0, %d] (the size of dim %d), got %r"
                        % (op, n, d, k))
    values, indices = sort(input, d, descending=largest)
    if rank and k != n:
        values, indices = values.narrow(d, 0, int(k)), indices.narrow(d, 0, int(k))
    return TopkResult(values, indices)
