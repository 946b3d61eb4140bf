"""torch functions harp composes from its element-wise ops, views and
reductions, each differentiable through them: hyperbolic and other
element-wise math, logical and bitwise functions, the clamp and add-product
forms, shape utilities (stacks, splits, atleast_nd, rot90, diag), ranges
(linspace, logspace, eye, tril/triu_indices) and small reductions (diff,
trapezoid, count_nonzero, nansum, var_mean). Integer inputs of float
functions are computed in float32, as torch's default float type. Each is
checked against torch on its OpInfo samples (test_opinfo.py)."""

import builtins
import math
import numbers

import numpy as np

from . import _harp
from ._harp import DType, HarpError, Tensor

__all__ = [
    "sinh", "cosh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "log10",
    "deg2rad", "rad2deg", "sinc", "xlogy", "heaviside", "copysign", "signbit",
    "isposinf", "isneginf", "isreal", "positive", "logaddexp2", "float_power",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "clamp_min", "clamp_max", "addcmul", "addcdiv", "rsub", "true_divide", "mv", "vdot",
    "inner", "ger",
    "hstack", "vstack", "dstack", "column_stack", "row_stack", "atleast_1d", "atleast_2d",
    "atleast_3d", "ravel", "fliplr", "flipud", "rot90", "select", "split_with_sizes",
    "tensor_split", "hsplit", "vsplit", "dsplit", "unflatten", "diag", "diag_embed",
    "diagflat", "block_diag", "broadcast_tensors", "broadcast_shapes", "cartesian_prod",
    "linspace", "logspace", "eye", "tril_indices", "triu_indices",
    "diff", "trapezoid", "trapz", "count_nonzero", "nansum", "nanmean", "var_mean",
    "std_mean", "aminmax",
]

_FLOATS = (DType.float32, DType.float64)


def _check(op, *tensors):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError("harp.%s: expected a harp tensor, got %s" % (op, type(t).__name__))


def _is_float(t):
    return t.dtype.name.startswith(("float", "complex"))


def _float(op, t):
    """`t` in a float type: integers and bools as float32 (torch's default)."""
    _check(op, t)
    return t if _is_float(t) else t.to(DType.float32)


def _where(cond, a, b):
    from . import where
    return where(cond, a, b)


# Element-wise math -----------------------------------------------------------


def sinh(input):
    """(e^x - e^-x) / 2, from expm1 so that it keeps its precision near 0."""
    x = _float("sinh", input)
    return (x.expm1() - (-x).expm1()) * 0.5


def cosh(input):
    """(e^x + e^-x) / 2."""
    x = _float("cosh", input)
    return (x.exp() + (-x).exp()) * 0.5


def asinh(input):
    """sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): no cancellation near 0
    and no overflow of x^2 before the log for large |x| (above 1e15 the
    log of 2|x|)."""
    x = _float("asinh", input)
    a = x.abs()
    big = a > 1e15
    small_a = _where(big, 1.0, a)
    near = (small_a + small_a * small_a / ((small_a * small_a + 1).sqrt() + 1)).log1p()
    far = (_where(big, a, 1.0)).log() + math.log(2.0)
    return _where(big, far, near) * x.sign()


def acosh(input):
    """log1p((x - 1) + sqrt((x - 1)(x + 1))): exact near 1 (NaN below)."""
    x = _float("acosh", input)
    t = x - 1
    return (t + (t * (x + 1)).sqrt()).log1p()


def atanh(input):
    """log1p(2x / (1 - x)) / 2."""
    x = _float("atanh", input)
    return (x * 2 / (1 - x)).log1p() * 0.5


arcsinh, arccosh, arctanh = asinh, acosh, atanh


def log10(input):
    """log(x) / log(10)."""
    return _float("log10", input).log() * (1.0 / math.log(10.0))


def deg2rad(input):
    """Degrees to radians."""
    return _float("deg2rad", input) * (math.pi / 180.0)


def rad2deg(input):
    """Radians to degrees."""
    return _float("rad2deg", input) * (180.0 / math.pi)


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (slope 0 there)."""
    x = _float("sinc", input)
    zero = x == 0
    scaled = _where(zero, 1.0, x) * math.pi
    return _where(zero, 1.0, scaled.sin() / scaled)


def xlogy(input, other):
    """x log(y), 0 where x is 0 (unless y is NaN), as torch.xlogy."""
    from . import full_like
    if isinstance(input, numbers.Number):
        input = full_like(_float("xlogy", other), input)
    if isinstance(other, numbers.Number):
        other = full_like(_float("xlogy", input), other)
    x, y = _float("xlogy", input), _float("xlogy", other)
    return _where((x == 0) & ~y.isnan(), 0.0, x * y.log())


def heaviside(input, values):
    """0 where x < 0, 1 where x > 0, `values` where x is 0."""
    _check("heaviside", input, values)
    step = (input > 0).to(input.dtype)
    return _where(input == 0, values.to(input.dtype), step)


def signbit(input):
    """Whether the sign bit is set (-0.0 included)."""
    _check("signbit", input)
    if not _is_float(input):
        return input < 0
    negative_zero = (input == 0) & ((1.0 / _where(input == 0, input, 1.0)) < 0)
    return (input < 0) | negative_zero


def copysign(input, other):
    """|input| with the sign of `other` (its sign bit: -0.0 counts)."""
    from . import full_like
    x = _float("copysign", input)
    if isinstance(other, numbers.Number):
        other = full_like(x, other)
    magnitude = x.abs()
    return _where(signbit(other), -magnitude, magnitude)


def isposinf(input):
    """Where the value is +inf."""
    _check("isposinf", input)
    return input.isinf() & (input > 0) if _is_float(input) else input != input


def isneginf(input):
    """Where the value is -inf."""
    _check("isneginf", input)
    return input.isinf() & (input < 0) if _is_float(input) else input != input


def isreal(input):
    """Where the imaginary part is 0 (all true for real tensors)."""
    _check("isreal", input)
    if input.dtype.name.startswith("complex"):
        return input.imag == 0
    return input == input if not _is_float(input) else (input == input) | input.isnan()


def positive(input):
    """The tensor itself (torch.positive)."""
    _check("positive", input)
    return input


def logaddexp2(input, other):
    """log2(2^input + 2^other), stably."""
    from ._extra import logaddexp
    ln2 = math.log(2.0)
    x, y = _float("logaddexp2", input), _float("logaddexp2", other)
    return logaddexp(x * ln2, y * ln2) * (1.0 / ln2)


def float_power(input, exponent):
    """input ** exponent in float64 (torch.float_power)."""
    base = input.to(DType.float64) if isinstance(input, Tensor) else float(input)
    power = exponent.to(DType.float64) if isinstance(exponent, Tensor) else float(exponent)
    if not isinstance(base, Tensor):
        from . import full_like
        base = full_like(power, base)
    return base ** power


# Logical and bitwise ---------------------------------------------------------


def _truth(t):
    return t if t.dtype == DType.bool else t != 0


def logical_and(input, other):
    """Element-wise `and` of the truth values (non-zero is true)."""
    _check("logical_and", input, other)
    return _truth(input) & _truth(other)


def logical_or(input, other):
    """Element-wise `or` of the truth values."""
    _check("logical_or", input, other)
    return _truth(input) | _truth(other)


def logical_xor(input, other):
    """Element-wise `xor` of the truth values."""
    _check("logical_xor", input, other)
    return _truth(input) ^ _truth(other)


def logical_not(input):
    """Element-wise `not` of the truth values."""
    _check("logical_not", input)
    return ~_truth(input)


def bitwise_and(input, other):
    """input & other (integers and bools)."""
    return input & other


def bitwise_or(input, other):
    """input | other."""
    return input | other


def bitwise_xor(input, other):
    """input ^ other."""
    return input ^ other


def bitwise_not(input):
    """~input."""
    return ~input


# Arithmetic forms ------------------------------------------------------------


def clamp_min(input, min):
    """input limited below by `min` (a number or a tensor)."""
    return input.clamp(min=min)


def clamp_max(input, max):
    """input limited above by `max` (a number or a tensor)."""
    return input.clamp(max=max)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2 (value an integer product's type,
    as torch converts it)."""
    _check("addcmul", input, tensor1, tensor2)
    product = tensor1 * tensor2
    if not _is_float(product) and product.dtype != DType.bool:
        value = int(value)
    return input + (product if value == 1 else product * value)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (float tensors, as torch's)."""
    _check("addcdiv", input, tensor1, tensor2)
    if not (_is_float(tensor1) or _is_float(tensor2)):
        raise HarpError("addcdiv: integer division with addcdiv is not supported, use "
                        "(input + value * tensor1 // tensor2)")
    quotient = tensor1 / tensor2
    return input + (quotient if value == 1 else quotient * value)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    _check("rsub", input)
    return other - (input if alpha == 1 else input * alpha)


def true_divide(input, other):
    """input / other, always a float division."""
    return input / other


def mv(input, vec):
    """The product of a matrix and a vector."""
    _check("mv", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise HarpError("mv: expected a matrix and a vector, got %d and %d dims"
                        % (input.ndim, vec.ndim))
    return input @ vec


def vdot(input, other):
    """sum(conj(input) * other) of two vectors."""
    _check("vdot", input, other)
    if input.dtype.name.startswith("complex"):
        input = input.conj()
    from . import dot
    return dot(input, other)


def inner(input, other):
    """The sum over the last dims of both (a scalar operand scales)."""
    _check("inner", input, other)
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    from ._einsum import tensordot
    return tensordot(input, other, dims=([input.ndim - 1], [other.ndim - 1]))


def ger(input, vec2):
    """The outer product of two vectors (torch.ger, outer's older name)."""
    from . import outer
    return outer(input, vec2)


# Shapes ----------------------------------------------------------------------


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (one tensor in, one out)."""
    out = [t.reshape([1]) if t.ndim == 0 else t for t in _flat_tensors(tensors)]
    return out[0] if len(out) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (leading 1s)."""
    def up(t):
        return t.reshape([1] * (2 - t.ndim) + list(t.shape)) if t.ndim < 2 else t
    out = [up(t) for t in _flat_tensors(tensors)]
    return out[0] if len(out) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims (a vector [n] as [1, n, 1], a matrix
    [m, n] as [m, n, 1], as NumPy)."""
    def up(t):
        if t.ndim == 0:
            return t.reshape([1, 1, 1])
        if t.ndim == 1:
            return t.reshape([1, t.shape[0], 1])
        if t.ndim == 2:
            return t.unsqueeze(2)
        return t
    out = [up(t) for t in _flat_tensors(tensors)]
    return out[0] if len(out) == 1 and isinstance(tensors[0], Tensor) else tuple(out)


def _flat_tensors(tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    for t in tensors:
        _check("atleast_nd", t)
    return list(tensors)


def _cat(tensors, dim):
    from . import concat
    return concat(list(tensors), dim)


def hstack(tensors):
    """Joined along dim 1 (dim 0 for vectors)."""
    ts = atleast_1d(list(tensors))
    return _cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """Joined along dim 0, vectors as rows."""
    return _cat(atleast_2d(list(tensors)), 0)


row_stack = vstack


def dstack(tensors):
    """Joined along dim 2 (as atleast_3d)."""
    return _cat(atleast_3d(list(tensors)), 2)


def column_stack(tensors):
    """Vectors as columns, joined along dim 1."""
    ts = [t.reshape([-1, 1]) if t.ndim <= 1 else t for t in tensors]
    return _cat(ts, 1)


def ravel(input):
    """The tensor flattened to 1 dim."""
    _check("ravel", input)
    return input.reshape([-1])


def fliplr(input):
    """Reversed along dim 1."""
    _check("fliplr", input)
    if input.ndim < 2:
        raise HarpError("fliplr: input must have at least 2 dims, got %d" % input.ndim)
    return input.flip([1])


def flipud(input):
    """Reversed along dim 0."""
    _check("flipud", input)
    if input.ndim < 1:
        raise HarpError("flipud: input must have at least 1 dim")
    return input.flip([0])


def rot90(input, k=1, dims=(0, 1)):
    """Rotated by 90 degrees k times in the plane of `dims` (from the first
    towards the second)."""
    _check("rot90", input)
    dims = list(dims)
    if len(dims) != 2 or input.ndim < 2:
        raise HarpError("rot90: needs 2 dims of a tensor of at least 2, got dims %s of %d"
                        % (dims, input.ndim))
    a, b = (d % input.ndim for d in dims)
    if a == b:
        raise HarpError("rot90: the two dims must differ, got %s" % dims)
    k %= 4
    if k == 0:
        return input
    if k == 2:
        return input.flip([a, b])
    return input.flip([b]).transpose(a, b) if k == 1 else input.transpose(a, b).flip([b])


def select(input, dim, index):
    """The slice at `index` along `dim`, that dim removed (a view)."""
    _check("select", input)
    from ._tensor_methods import _normalized
    dim = _normalized("select", dim, input.ndim)
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError("select: index %d is out of range for dim %d of size %d"
                         % (index, dim, size))
    index %= size
    return input.slice(dim, index, index + 1, 1).squeeze(dim)


def split_with_sizes(input, split_sizes, dim=0):
    """Views of consecutive pieces of the listed sizes along `dim`."""
    from ._ops import split
    return split(input, list(split_sizes), dim)


def tensor_split(input, indices_or_sections, dim=0):
    """Views split at the listed indices along `dim`, or into `sections`
    pieces of sizes differing by at most one (the first ones larger)."""
    _check("tensor_split", input)
    from ._tensor_methods import _normalized
    dim = _normalized("tensor_split", dim, input.ndim)
    n = input.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, numbers.Integral):
        sections = int(indices_or_sections)
        if sections < 1:
            raise HarpError("tensor_split: sections must be positive, got %d" % sections)
        base, extra = divmod(n, sections)
        bounds, at = [], 0
        for i in range(sections - 1):
            at += base + (1 if i < extra else 0)
            bounds.append(at)
    else:
        bounds = [int(i) for i in indices_or_sections]
    pieces, start = [], 0
    for stop in bounds + [n]:
        lo = min(max(start if start >= 0 else start + n, 0), n)
        hi = min(max(stop if stop >= 0 else stop + n, lo), n)
        pieces.append(input.slice(dim, lo, hi, 1))
        start = stop
    return tuple(pieces)


def _split_along(op, input, indices_or_sections, dim, need):
    _check(op, input)
    if input.ndim < need:
        raise HarpError("%s: needs a tensor of at least %d dims, got %d" % (op, need, input.ndim))
    if isinstance(indices_or_sections, numbers.Integral) and \
            input.shape[dim] % indices_or_sections:
        raise HarpError("%s: dim %d of size %d does not split into %d equal pieces"
                        % (op, dim, input.shape[dim], indices_or_sections))
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """tensor_split along dim 1 (dim 0 for vectors), equal pieces only."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """tensor_split along dim 0, equal pieces only."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """tensor_split along dim 2, equal pieces only."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def unflatten(input, dim, sizes):
    """Dim `dim` reshaped to `sizes` (one may be -1)."""
    _check("unflatten", input)
    from ._tensor_methods import _normalized
    dim = _normalized("unflatten", dim, input.ndim)
    shape = list(input.shape)
    return input.reshape(shape[:dim] + list(sizes) + shape[dim + 1:])


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices whose diagonal `offset` (in dims dim1, dim2 of the result)
    holds the last dim of `input`."""
    _check("diag_embed", input)
    n = input.shape[-1]
    m = n + abs(offset)
    rows = np.arange(m)[:, None]
    cols = np.arange(m)[None, :]
    mask = cols - rows == offset
    # The entry of the last dim each (row, col) of the diagonal holds.
    source = np.where(mask, np.minimum(rows, cols), 0).reshape(-1)
    from ._einsum import select as take
    from . import tensor
    picked = take(input, input.ndim - 1, source)
    picked = picked.reshape(list(input.shape[:-1]) + [m, m])
    out = _where(tensor(mask), picked, 0)
    rank = out.ndim
    d1, d2 = dim1 % rank, dim2 % rank
    if d1 == d2:
        raise HarpError("diag_embed: dim1 and dim2 must differ, got %d and %d" % (dim1, dim2))
    order = [None] * rank
    order[d1], order[d2] = rank - 2, rank - 1
    rest = iter(range(rank - 2))
    order = [next(rest) if o is None else o for o in order]
    return out.permute(order)


def diag(input, diagonal=0):
    """A vector as a matrix with it on diagonal `diagonal`; a matrix's
    diagonal `diagonal` as a vector."""
    _check("diag", input)
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        from ._einsum import diagonal as diag_of
        return diag_of(input, diagonal)
    raise HarpError("diag: expected a vector or a matrix, got %d dims" % input.ndim)


def diagflat(input, offset=0):
    """The flattened input on diagonal `offset` of a matrix."""
    return diag_embed(ravel(input), offset)


def block_diag(*tensors):
    """The tensors (at most 2-d) as the blocks of a block-diagonal matrix."""
    blocks = [t.reshape([1, -1]) if t.ndim <= 1 and t.ndim == 1 else
              (t.reshape([1, 1]) if t.ndim == 0 else t) for t in tensors]
    for t in blocks:
        if t.ndim != 2:
            raise HarpError("block_diag: the inputs must have at most 2 dims, got %d" % t.ndim)
    if not blocks:
        from . import zeros
        return zeros(1, 0)
    from . import promote
    dtype = blocks[0].dtype
    for t in blocks[1:]:
        dtype = promote(dtype, t.dtype)
    width = builtins.sum(t.shape[1] for t in blocks)
    rows, at = [], 0
    for t in blocks:
        rows.append(t.to(dtype).pad([0, at], [0, width - at - t.shape[1]], 0))
        at += t.shape[1]
    return _cat(rows, 0)


def broadcast_shapes(*shapes):
    """The shape NumPy's broadcasting gives the shapes."""
    try:
        return tuple(np.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s)
                                           for s in shapes]))
    except ValueError as error:
        raise HarpError("broadcast_shapes: %s" % error) from None


def broadcast_tensors(*tensors):
    """The tensors broadcast to their common shape (views)."""
    shape = list(broadcast_shapes(*[t.shape for t in tensors]))
    return tuple(t.broadcast_to(shape) for t in tensors)


def cartesian_prod(*tensors):
    """Every combination of the vectors' entries, as rows [n1 * n2 * ..., k]
    (one vector: itself)."""
    if len(tensors) == 1:
        return tensors[0]
    from ._extra import meshgrid
    from . import stack
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape([-1]) for g in grids], 1)


# Ranges ----------------------------------------------------------------------


def _factory(values, dtype, device, requires_grad):
    from . import float32, tensor
    from ._ops import _placed
    result = tensor(np.ascontiguousarray(values), dtype or float32)
    return _placed(result, device, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """`steps` values from start to end inclusive, evenly spaced (each half
    counted from its own end, as torch computes them)."""
    steps = int(steps)
    if steps < 0:
        raise HarpError("linspace: steps must be non-negative, got %d" % steps)
    i = np.arange(steps, dtype=np.float64)
    if steps == 1:
        values = np.array([start], np.float64)
    else:
        step = (float(end) - float(start)) / (steps - 1)
        half = steps // 2
        values = np.where(i < half, start + step * i, end - step * (steps - 1 - i))
    _float_dtype("linspace", dtype)
    return _factory(values, dtype, device, requires_grad)


def _float_dtype(op, dtype):
    if dtype is not None and not dtype.name.startswith(("float", "complex")):
        raise HarpError("%s: dtype must be a float type, got %s (harp has no integer "
                        "form; cast the float result)" % (op, dtype.name))


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps)."""
    _float_dtype("logspace", dtype)
    exponents = np.asarray(linspace(start, end, steps, dtype=DType.float64).numpy())
    return _factory(np.power(float(base), exponents), dtype, device, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The n x m identity (m = n by default)."""
    return _factory(np.eye(n, n if m is None else m), dtype, device, requires_grad)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The [2, count] int64 indices of the lower triangle (diagonal offset
    `offset`) of a row x col matrix, row by row."""
    from . import int64
    r, c = np.tril_indices(row, offset, col)
    return _factory(np.stack([r, c]).astype(np.int64).reshape(2, -1), dtype or int64, device,
                    False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The [2, count] int64 indices of the upper triangle, row by row."""
    from . import int64
    r, c = np.triu_indices(row, offset, col)
    return _factory(np.stack([r, c]).astype(np.int64).reshape(2, -1), dtype or int64, device,
                    False)


# Small reductions ------------------------------------------------------------


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim` (prepend / append joined
    first)."""
    _check("diff", input)
    if n == 0:
        return input  # torch: prepend and append are not joined either
    from ._tensor_methods import _normalized
    dim = _normalized("diff", dim, input.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    x = _cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        a = x.slice(dim, 1, size, 1)
        b = x.slice(dim, 0, size - 1, 1)
        x = (a ^ b) if x.dtype == DType.bool else a - b
    return x


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule's integral of y along `dim`, at spacing dx (1) or
    at the points x."""
    _check("trapezoid", y)
    from ._tensor_methods import _normalized
    dim = _normalized("trapezoid", dim, y.ndim)
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim)
    pair = y.slice(dim, 1, n, 1) + y.slice(dim, 0, n - 1, 1)
    if x is None:
        return pair.sum(dim) * ((1.0 if dx is None else dx) * 0.5)
    if isinstance(x, Tensor):
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[dim] = x.shape[0]
            x = x.reshape(shape)
        xd = _normalized("trapezoid", dim - y.ndim + x.ndim if dim >= 0 else dim, x.ndim)
        step = x.slice(xd, 1, n, 1) - x.slice(xd, 0, n - 1, 1)
        return (pair * step).sum(dim) * 0.5
    return pair.sum(dim) * (float(x) * 0.5)


def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid (the older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def count_nonzero(input, dim=None):
    """The number of non-zero entries over `dim` (None: all), int64."""
    _check("count_nonzero", input)
    counted = (input != 0).to(DType.int64)
    if dim is None:
        return counted.sum()
    return counted.sum(dim if isinstance(dim, int) else list(dim))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum with NaNs counted as zero."""
    _check("nansum", input)
    x = input if dtype is None else input.to(dtype)
    if _is_float(x):
        x = _where(x.isnan(), 0.0, x)
    return x.sum(dim, keepdim) if dim is not None else (x.sum() if not keepdim else
                                                       x.sum(list(range(x.ndim)), True))


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over the entries that are not NaN."""
    _check("nanmean", input)
    x = input if dtype is None else input.to(dtype)
    kept = (~x.isnan()).to(x.dtype)
    axes = list(range(x.ndim)) if dim is None else dim
    return nansum(x, axes, keepdim) / kept.sum(axes, keepdim)


def var_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """(var, mean) over `dim` (var_mean(input, unbiased) too, as torch's)."""
    _check("var_mean", input)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    kwargs = {} if correction is None else {"correction": correction}
    if correction is not None:
        return (input.var(dim, keepdim=keepdim, correction=correction),
                input.mean(dim, keepdim))
    return input.var(dim, unbiased, keepdim, **kwargs), input.mean(dim, keepdim)


def std_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """(std, mean) over `dim` (std_mean(input, unbiased) too)."""
    _check("std_mean", input)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if correction is not None:
        return (input.std(dim, keepdim=keepdim, correction=correction),
                input.mean(dim, keepdim))
    return input.std(dim, unbiased, keepdim), input.mean(dim, keepdim)


def aminmax(input, *, dim=None, keepdim=False):
    """(amin, amax) over `dim` (None: all)."""
    _check("aminmax", input)
    if input.ndim == 0 and dim is not None and keepdim:
        input = input.reshape([1])  # torch keeps a dim of a 0-d input here
    return input.amin(dim, keepdim), input.amax(dim, keepdim)
