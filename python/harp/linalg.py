"""harp.linalg: torch.linalg's norms and products, composed from harp's
reductions and contractions (differentiable through them). The
decompositions (inv, solve, det, svd, qr, eig, cholesky, lstsq) are not in
harp; the norms that need singular values (ord 2, -2, 'nuc') raise."""

import math
import numbers

from ._harp import HarpError
from ._compose import _check, _is_float

__all__ = ["vector_norm", "matrix_norm", "norm", "multi_dot", "vecdot", "cross", "vander"]


def _dims(dim, ndim):
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, numbers.Integral) else [int(d) for d in dim]
    return [d + ndim if d < 0 else d for d in dims]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ord-norm of x over `dim` (all dims when None):
    (sum |x|^ord)^(1/ord), max |x| for inf, min |x| for -inf, the count of
    non-zeros for 0 (torch.linalg.vector_norm)."""
    _check("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    if not _is_float(x):
        raise HarpError("linalg.vector_norm: needs a float or complex tensor, got %s"
                        % x.dtype.name)
    if isinstance(ord, str) or not isinstance(ord, numbers.Real):
        raise HarpError("linalg.vector_norm: ord must be a number, got %r" % (ord,))
    dims = _dims(dim, x.ndim) if x.ndim else None
    if ord < 0 and ord != -math.inf and not any(n == 0 for n in x.shape):
        # (sum |x|^ord)^(1/ord): 0 where an element is 0 (inf^(1/ord)).
        total = x.abs().pow(float(ord)).sum(dims, keepdim)
        return total.pow(1.0 / ord)
    if dims is not None and len(dims) == 0:
        dims = None
    return x.norm(float(ord), dims, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm of A over the two dims `dim`: 'fro', or the largest
    (1, inf) or smallest (-1, -inf) absolute column (1) or row (inf) sum
    (torch.linalg.matrix_norm; 2, -2 and 'nuc' need singular values, which
    harp does not compute)."""
    _check("linalg.matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    if A.ndim < 2:
        raise HarpError("linalg.matrix_norm: A must have at least 2 dims, got %d" % A.ndim)
    if not _is_float(A):
        raise HarpError("linalg.matrix_norm: needs a float or complex tensor, got %s"
                        % A.dtype.name)
    dims = _dims(dim, A.ndim)
    if len(dims) != 2 or dims[0] == dims[1]:
        raise HarpError("linalg.matrix_norm: dim must be two different dims, got %r" % (dim,))
    if ord == "fro":
        return vector_norm(A, 2, dims, keepdim)
    if ord in ("nuc", 2, -2):
        raise HarpError("linalg.matrix_norm: ord=%r needs singular values (an SVD), which "
                        "harp does not compute" % (ord,))
    if ord not in (1, -1, math.inf, -math.inf):
        raise HarpError("linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf "
                        "or -inf, got %r" % (ord,))
    summed, extreme = (dims[0], dims[1]) if abs(ord) == 1 else (dims[1], dims[0])
    sums = A.abs().sum(summed, True)
    result = sums.amax(extreme, True) if ord > 0 else sums.amin(extreme, True)
    if not keepdim:
        result = result.squeeze(max(dims)).squeeze(min(dims))
    return result


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm over one dim (or all of a 1-D tensor, or all dims when
    ord and dim are None), a matrix norm over two (torch.linalg.norm)."""
    _check("linalg.norm", A)
    if dim is not None:
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise HarpError("linalg.norm: dim must name 1 or 2 dims, got %r" % (dim,))
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise HarpError("linalg.norm: ord=%r without dim needs a 1-D or 2-D tensor, got %d dims"
                    % (ord, A.ndim))


def multi_dot(tensors):
    """The product of the matrices in order; the first may be a 1-D row and
    the last a 1-D column (torch.linalg.multi_dot)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise HarpError("linalg.multi_dot: expected at least 2 tensors, got %d" % len(tensors))
    _check("linalg.multi_dot", *tensors)
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            raise HarpError("linalg.multi_dot: tensor %d must be %s, got %d dims"
                            % (i, "1-D or 2-D" if len(allowed) == 2 else "2-D", t.ndim))
    first_row, last_column = tensors[0].ndim == 1, tensors[-1].ndim == 1
    chain = list(tensors)
    if first_row:
        chain[0] = chain[0].unsqueeze(0)
    if last_column:
        chain[-1] = chain[-1].unsqueeze(1)
    result = chain[0]
    for t in chain[1:]:
        result = result @ t
    if first_row:
        result = result.squeeze(0)
    if last_column:
        result = result.squeeze(-1)
    return result


def vecdot(x, y, *, dim=-1):
    """sum(conj(x) * y) over `dim` (broadcast; torch.linalg.vecdot)."""
    _check("linalg.vecdot", x, y)
    if x.dtype.name.startswith("complex"):
        x = x.conj()
    return (x * y).sum(dim)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along `dim` (torch.linalg.cross)."""
    from ._extra import cross as _cross
    return _cross(input, other, dim)


def vander(x, N=None):
    """The Vandermonde matrix of the last dim: columns x^0, x^1, ...,
    x^(N-1) (torch.linalg.vander; N defaults to x's last size)."""
    _check("linalg.vander", x)
    if x.ndim == 0:
        x = x.reshape(1)  # torch: a 0-d x is one point
    n = x.shape[-1] if N is None else int(N)
    if n <= 1:
        raise HarpError("linalg.vander: N must be greater than 1, got %d" % n)
    from . import cat, ones_like
    column = x.unsqueeze(-1)
    powers = [ones_like(column)] + [column] * (n - 1)
    return cat(powers, -1).cumprod(-1)
