"""torch functions harp composes from its ops, each with its gradient:
logaddexp, lerp, hypot, trace, addmm, addmv, baddbmm, nan_to_num,
isfinite, meshgrid, cross, and the data-dependent masked_select and
nonzero (which realize their mask to size the result, as torch's
synchronize)."""

import numbers

import numpy as np

from ._harp import HarpError, Tensor

__all__ = ["logaddexp", "lerp", "hypot", "trace", "addmm", "addmv", "baddbmm",
           "nan_to_num", "isfinite", "meshgrid", "cross", "masked_select", "nonzero"]


def _check(op, *tensors):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError("harp.%s: expected harp tensors, got %s" % (op, type(t).__name__))


def logaddexp(input, other):
    """log(exp(input) + exp(other)), computed stably as max + log1p(exp(-|d|))."""
    _check("logaddexp", input, other)
    from . import where, zeros_like
    high = input.maximum(other)
    low = input.minimum(other)
    # Equal infinities: the sum is that infinity (d would be NaN).
    diff = where(high == low, zeros_like(high), low - high)
    return high + diff.exp().log1p()


def lerp(input, end, weight):
    """input + weight (end - input), weight a number or a tensor."""
    _check("lerp", input, end)
    return input + (end - input) * weight


def hypot(input, other):
    """sqrt(input^2 + other^2), scaled by the larger magnitude so that it
    neither overflows nor underflows early."""
    _check("hypot", input, other)
    from . import full_like, where
    a, b = input.abs(), other.abs()
    big = a.maximum(b)
    small = a.minimum(b)
    safe = where(big == 0, big + 1, big)
    ratio = small / safe
    result = where(big == 0, big, big * (ratio * ratio + 1).sqrt())
    # An infinite side gives inf, NaN on the other side included (IEEE).
    return where(a.isinf() | b.isinf(), full_like(result, float("inf")), result)


def trace(input):
    """The sum of a matrix's diagonal."""
    _check("trace", input)
    if input.ndim != 2:
        raise HarpError("trace: expected a matrix, got %d dims" % input.ndim)
    return input.diagonal().sum()


def _add_product(op, ranks, what, input, a, b, beta, alpha):
    """beta input + alpha (a @ b), a and b of `ranks` dims (torch ignores
    input, NaN and inf too, when beta is 0)."""
    _check(op, input, a, b)
    if (a.ndim, b.ndim) != ranks:
        raise HarpError("%s: expected %s, got %d and %d dims" % (op, what, a.ndim, b.ndim))
    result = a @ b
    if not result.dtype.name.startswith(("float", "complex")):
        # torch converts the scalars to an integer product's type
        alpha, beta = int(alpha), int(beta)
    if alpha != 1:
        result = result * alpha
    if beta == 0:
        return result
    return result + (input if beta == 1 else input * beta)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta input + alpha (mat1 @ mat2), input broadcast to the product."""
    return _add_product("addmm", (2, 2), "two matrices", input, mat1, mat2, beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta input + alpha (mat @ vec)."""
    return _add_product("addmv", (2, 1), "a matrix and a vector", input, mat, vec, beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta input + alpha (batch1 @ batch2) for [B, n, m] @ [B, m, p]."""
    return _add_product("baddbmm", (3, 3), "two 3-d batches", input, batch1, batch2, beta,
                        alpha)


def isfinite(input):
    """Whether each element is neither infinite nor NaN (integers: all)."""
    _check("isfinite", input)
    from . import ones_like
    if not input.dtype.name.startswith(("float", "complex")):
        return ones_like(input, dtype=_bool())
    return ~(input.isnan() | input.isinf())


def _bool():
    from . import bool_
    return bool_


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by
    default 0 and the dtype's largest and lowest finite values)."""
    _check("nan_to_num", input)
    from . import full_like, where
    if not input.dtype.name.startswith("float"):
        return input
    info = np.finfo(np.dtype(input.dtype.name))
    posinf = float(info.max) if posinf is None else float(posinf)
    neginf = float(info.min) if neginf is None else float(neginf)
    result = where(input.isnan(), full_like(input, nan), input)
    result = where(result == float("inf"), full_like(input, posinf), result)
    return where(result == float("-inf"), full_like(input, neginf), result)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 1-d tensors: with indexing "ij" the i-th result
    varies along dim i; "xy" swaps the first two dims (torch's default
    warns and uses "ij")."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _check("meshgrid", *tensors)
    if indexing not in ("ij", "xy"):
        raise HarpError("meshgrid: indexing must be 'ij' or 'xy', got %r" % (indexing,))
    for t in tensors:
        if t.ndim > 1:
            raise HarpError("meshgrid: expected 0-d or 1-d tensors, got %d dims" % t.ndim)
    flat = [t.reshape(-1) for t in tensors]
    sizes = [int(t.shape[0]) for t in flat]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, t in enumerate(flat):
        axis = i
        if swap and i < 2:
            axis = 1 - i
        view = [1] * len(flat)
        view[axis] = sizes[axis]
        grids.append(t.reshape(view).expand(*sizes))
    return tuple(grids)


def cross(input, other, dim=None):
    """The cross product of 3-vectors along `dim` (the first dim of size 3
    when None, as torch.cross)."""
    _check("cross", input, other)
    if tuple(input.shape) != tuple(other.shape):
        from . import broadcast_to
        shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        input, other = broadcast_to(input, shape), broadcast_to(other, shape)
    if dim is None:
        found = [d for d, n in enumerate(input.shape) if n == 3]
        if not found:
            raise HarpError("cross: no dim of size 3 in %s" % list(input.shape))
        dim = found[0]
    if not isinstance(dim, numbers.Integral) or not -input.ndim <= dim < input.ndim:
        raise HarpError("cross: dim %r is out of range for %d dims" % (dim, input.ndim))
    dim = dim % input.ndim
    if input.shape[dim] != 3:
        raise HarpError("cross: dim %d has size %d, not 3" % (dim, input.shape[dim]))
    from . import cat
    a = [input.narrow(dim, i, 1) for i in range(3)]
    b = [other.narrow(dim, i, 1) for i in range(3)]
    return cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0]], dim)


def masked_select(input, mask):
    """The elements of input where the bool mask (broadcast) holds, as a 1-d
    tensor, in order; the gradient flows to those elements."""
    _check("masked_select", input, mask)
    if mask.dtype.name != "bool":
        raise HarpError("masked_select: mask must be a bool tensor, got %s" % mask.dtype.name)
    from . import broadcast_to
    shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    values = broadcast_to(input, shape).reshape(-1)
    picked = np.flatnonzero(np.broadcast_to(mask.numpy(), shape))
    from . import tensor
    return values.index_select(0, tensor(picked.astype(np.int64)))


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements: an int64 [n, ndim] tensor, or
    with as_tuple one 1-d tensor per dim (torch.nonzero)."""
    _check("nonzero", input)
    from . import tensor
    where = np.nonzero(np.asarray(input.numpy()))
    if as_tuple:
        if input.ndim == 0:
            return (tensor(np.zeros(int(bool(input.item())), np.int64)),)
        return tuple(tensor(w.astype(np.int64)) for w in where)
    if input.ndim == 0:
        return tensor(np.zeros((int(bool(input.item())), 0), np.int64))
    return tensor(np.stack(where, axis=1).astype(np.int64).reshape(-1, input.ndim))
