"""torch's module-level functions over harp tensors: harp.exp(x),
harp.sum(x, dim=1), harp.max(x, 1), harp.add(x, y, alpha=2), ... Each takes
torch's positional order and keyword names and calls the Tensor method of
the same meaning, so it computes what the method computes (lazily, with a
gradient). The first argument must be a harp tensor, as torch's must be a
torch tensor; anything else raises TypeError naming the function.

harp/__init__.py exports them. The names that would hide Python's builtins
(abs, all, any, max, min, pow, round, sum) are attributes of harp but left
out of `harp.__all__`, so `from harp import *` keeps the builtins.
"""

import numbers

import numpy as np

from . import _harp
from . import _tensor_methods as _methods
from ._harp import Tensor

__all__ = [
    "abs", "acos", "add", "all", "amax", "amin", "any", "arccos", "arcsin",
    "arctan2", "argmax", "argmin", "asin", "atan", "atan2", "frac",
    "bmm", "ceil", "clamp", "clip", "clone", "cos", "div", "divide", "eq",
    "erf", "exp", "exp2", "expm1", "flatten", "flip", "floor",
    "floor_divide", "fmod", "from_numpy", "ge", "gt", "is_complex",
    "is_floating_point", "is_tensor", "isinf", "isnan", "le", "log", "log1p",
    "log2", "log_softmax", "logsumexp", "lt", "masked_fill", "max",
    "maximum", "mean", "min", "minimum", "mm", "movedim", "mul", "multiply",
    "narrow", "ne", "neg", "negative", "numel", "permute", "pow", "prod",
    "reciprocal", "relu", "remainder", "reshape", "round", "rsqrt",
    "sigmoid", "sign", "sin", "sqrt", "square", "squeeze", "std", "sub",
    "subtract", "sum", "t", "tan", "tanh", "transpose", "trunc",
    "unsqueeze", "var", "zero_",
]

# The names of __all__ that shadow a Python builtin.
BUILTIN_NAMES = ("abs", "all", "any", "max", "min", "pow", "round", "sum")


def _check(name, input):
    if not isinstance(input, Tensor):
        raise TypeError("harp.%s: input must be a harp.Tensor, got %s"
                        % (name, input.__class__.__name__))
    return input


def from_numpy(ndarray):
    """A tensor of the NumPy array's values, shape and dtype
    (torch.from_numpy). Harp copies the values: writing to the array
    afterwards does not change the tensor."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError("harp.from_numpy: expected a NumPy array, got %s"
                        % ndarray.__class__.__name__)
    return _harp.from_numpy(ndarray, "cpu")


def is_tensor(obj):
    """Whether `obj` is a harp tensor (torch.is_tensor)."""
    return isinstance(obj, Tensor)


def is_floating_point(input):
    """Whether input's dtype is a float dtype (torch.is_floating_point)."""
    return _check("is_floating_point", input).is_floating_point()


def is_complex(input):
    """Whether input's dtype is a complex dtype (torch.is_complex)."""
    return _check("is_complex", input).is_complex()


def numel(input):
    """The number of elements (torch.numel)."""
    return _check("numel", input).numel()


# Element-wise functions of one tensor ------------------------------------------


def _unary(name, method, what):
    def function(input):
        return getattr(_check(name, input), method)()
    function.__name__ = function.__qualname__ = name
    function.__doc__ = "%s, element-wise (torch.%s)." % (what, name)
    return function


abs = _unary("abs", "abs", "|x|")
acos = _unary("acos", "acos", "The arc cosine (NaN outside [-1, 1])")
arccos = _unary("arccos", "acos", "The arc cosine (NaN outside [-1, 1])")
asin = _unary("asin", "asin", "The arc sine (NaN outside [-1, 1])")
arcsin = _unary("arcsin", "asin", "The arc sine (NaN outside [-1, 1])")
atan = _unary("atan", "atan", "The arc tangent")
frac = _unary("frac", "frac", "x - trunc(x)")
ceil = _unary("ceil", "ceil", "x rounded up")
cos = _unary("cos", "cos", "The cosine")
erf = _unary("erf", "erf", "The error function")
exp = _unary("exp", "exp", "e ** x")
exp2 = _unary("exp2", "exp2", "2 ** x")
expm1 = _unary("expm1", "expm1", "e ** x - 1")
floor = _unary("floor", "floor", "x rounded down")
isinf = _unary("isinf", "isinf", "Whether x is infinite")
isnan = _unary("isnan", "isnan", "Whether x is NaN")
log = _unary("log", "log", "The natural logarithm")
log1p = _unary("log1p", "log1p", "log(1 + x)")
log2 = _unary("log2", "log2", "The base-2 logarithm")
neg = _unary("neg", "__neg__", "-x")
negative = _unary("negative", "__neg__", "-x")
reciprocal = _unary("reciprocal", "recip", "1 / x")
relu = _unary("relu", "relu", "max(x, 0)")
rsqrt = _unary("rsqrt", "rsqrt", "1 / sqrt(x)")
sigmoid = _unary("sigmoid", "sigmoid", "1 / (1 + exp(-x))")
sign = _unary("sign", "sign", "-1, 0 or 1 by the sign of x")
sin = _unary("sin", "sin", "The sine")
sqrt = _unary("sqrt", "sqrt", "The square root")
square = _unary("square", "square", "x * x")
tan = _unary("tan", "tan", "The tangent")
tanh = _unary("tanh", "tanh", "The hyperbolic tangent")
trunc = _unary("trunc", "trunc", "x rounded toward zero")


def round(input, *, decimals=0):
    """x rounded to the nearest integer, halves to even (torch.round); with
    `decimals`, to that many decimal places (negative: tens, hundreds, ...),
    as torch computes it: round(x * 10^d) / 10^d."""
    _check("round", input)
    if decimals == 0:
        return input.round()
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError("harp.round: decimals must be an int, got %r" % (decimals,))
    if decimals > 0:
        scale = 10.0 ** decimals
        return (input * scale).round() / scale
    scale = 10.0 ** -decimals
    return (input / scale).round() * scale


def clamp(input, min=None, max=None):
    """input limited to [min, max] (numbers or tensors; either may be None)
    (torch.clamp)."""
    return _methods._clamped("harp.clamp", _check("clamp", input), min, max)


def clip(input, min=None, max=None):
    """The same as clamp (torch.clip)."""
    return _methods._clamped("harp.clip", _check("clip", input), min, max)


# Two operands ----------------------------------------------------------------


def add(input, other, *, alpha=1):
    """input + alpha * other (torch.add)."""
    return _methods.add(_check("add", input), other, alpha=alpha)


def sub(input, other, *, alpha=1):
    """input - alpha * other (torch.sub)."""
    return _methods.sub(_check("sub", input), other, alpha=alpha)


def subtract(input, other, *, alpha=1):
    """The same as sub (torch.subtract)."""
    return _methods.sub(_check("subtract", input), other, alpha=alpha)


def mul(input, other):
    """input * other (torch.mul)."""
    return _check("mul", input) * other


def multiply(input, other):
    """The same as mul (torch.multiply)."""
    return _check("multiply", input) * other


def div(input, other, *, rounding_mode=None):
    """input / other; rounding_mode "trunc" or "floor" rounds the quotient
    (torch.div)."""
    return _methods.div(_check("div", input), other, rounding_mode=rounding_mode)


def divide(input, other, *, rounding_mode=None):
    """The same as div (torch.divide)."""
    return _methods.div(_check("divide", input), other, rounding_mode=rounding_mode)


def floor_divide(input, other):
    """The quotient rounded down (torch.floor_divide)."""
    return _check("floor_divide", input) // other


def remainder(input, other):
    """The remainder with the divisor's sign, Python's % (torch.remainder)."""
    return _check("remainder", input).remainder(other)


def fmod(input, other):
    """The remainder with the dividend's sign, C's fmod (torch.fmod)."""
    return _check("fmod", input).fmod(other)


def pow(input, exponent):
    """input ** exponent; input may be a number when exponent is a tensor
    (torch.pow)."""
    if isinstance(input, numbers.Number) and isinstance(exponent, Tensor):
        return input ** exponent
    return _check("pow", input) ** exponent


def atan2(input, other):
    """The angle of the point (other, input) in (-pi, pi], element-wise
    with broadcasting (torch.atan2)."""
    return _check("atan2", input).atan2(other)


arctan2 = atan2


def maximum(input, other):
    """The larger of the two, element-wise (torch.maximum)."""
    return _check("maximum", input).maximum(other)


def minimum(input, other):
    """The smaller of the two, element-wise (torch.minimum)."""
    return _check("minimum", input).minimum(other)


def eq(input, other):
    """input == other, element-wise (torch.eq)."""
    return _check("eq", input).eq(other)


def ne(input, other):
    """input != other, element-wise (torch.ne)."""
    return _check("ne", input).ne(other)


def lt(input, other):
    """input < other, element-wise (torch.lt)."""
    return _check("lt", input) < other


def le(input, other):
    """input <= other, element-wise (torch.le)."""
    return _check("le", input) <= other


def gt(input, other):
    """input > other, element-wise (torch.gt)."""
    return _check("gt", input) > other


def ge(input, other):
    """input >= other, element-wise (torch.ge)."""
    return _check("ge", input) >= other


def mm(input, mat2):
    """The product of two matrices (torch.mm)."""
    return _methods.mm(_check("mm", input), mat2)


def bmm(input, mat2):
    """Batched products of two 3-D tensors (torch.bmm)."""
    return _methods.bmm(_check("bmm", input), mat2)


def masked_fill(input, mask, value):
    """input with `value` where the bool `mask` holds (torch.masked_fill)."""
    return _check("masked_fill", input).masked_fill(mask, value)


# Reductions ------------------------------------------------------------------


def _dim(dim):
    """torch's dim as the methods take it (a list for several)."""
    return dim if dim is None or isinstance(dim, numbers.Integral) else list(dim)


def _cast(input, dtype):
    return input if dtype is None else input.to(dtype)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum over `dim` (an int or a tuple; None: everything), in `dtype`
    if given (torch.sum)."""
    return _cast(_check("sum", input), dtype).sum(dim=_dim(dim), keepdim=keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over `dim` (an int or a tuple; None: everything), in
    `dtype` if given (torch.mean)."""
    return _cast(_check("mean", input), dtype).mean(dim=_dim(dim), keepdim=keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product over `dim` (None: everything), in `dtype` if given
    (torch.prod)."""
    return _cast(_check("prod", input), dtype).prod(dim=_dim(dim), keepdim=keepdim)


def max(input, dim=None, keepdim=False):
    """torch.max: max(input) the largest element; max(input, dim,
    keepdim=False) the pair (values, indices) along dim; max(input, other)
    the element-wise maximum."""
    return _check("max", input).max(dim, keepdim)


def min(input, dim=None, keepdim=False):
    """torch.min: min(input) the smallest element; min(input, dim,
    keepdim=False) the pair (values, indices) along dim; min(input, other)
    the element-wise minimum."""
    return _check("min", input).min(dim, keepdim)


def amax(input, dim=(), keepdim=False):
    """The maximum over `dim` (an int or a tuple; (): everything) (torch.amax)."""
    return _methods.amax(_check("amax", input), dim, keepdim)


def amin(input, dim=(), keepdim=False):
    """The minimum over `dim` (an int or a tuple; (): everything) (torch.amin)."""
    return _methods.amin(_check("amin", input), dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    """The index of the first maximum along `dim` (None: of the flattened
    tensor) (torch.argmax)."""
    return _check("argmax", input).argmax(dim=dim, keepdim=keepdim)


def argmin(input, dim=None, keepdim=False):
    """The index of the first minimum along `dim` (None: of the flattened
    tensor) (torch.argmin)."""
    return _check("argmin", input).argmin(dim=dim, keepdim=keepdim)


def all(input, dim=None, keepdim=False):
    """Whether every element (along `dim`) is non-zero (torch.all)."""
    return _methods.all(_check("all", input), dim, keepdim)


def any(input, dim=None, keepdim=False):
    """Whether any element (along `dim`) is non-zero (torch.any)."""
    return _methods.any(_check("any", input), dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over `dim`, computed stably (torch.logsumexp;
    integers in the default float type, as torch's)."""
    _check("logsumexp", input)
    if not input.dtype.name.startswith(("float", "complex")):
        input = input.to(_harp.DType.float32)
    return input.logsumexp(dim=_dim(dim), keepdim=keepdim)


def zero_(input):
    """input.zero_() (torch.zero_)."""
    return _check("zero_", input).zero_()


def _spread(name, input, dim, unbiased, keepdim, correction):
    input = _check(name, input)
    if isinstance(dim, bool):  # torch's var(input, unbiased)
        dim, unbiased = None, dim
    return getattr(input, name)(dim=_dim(dim), unbiased=unbiased, keepdim=keepdim,
                                correction=correction)


def var(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """The variance over `dim` (None: everything), divided by n - 1
    (unbiased) or n, or n - correction (torch.var)."""
    return _spread("var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    """The standard deviation over `dim`, as var (torch.std)."""
    return _spread("std", input, dim, unbiased, keepdim, correction)


def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) along `dim`, in `dtype` if given (torch.log_softmax)."""
    return _cast(_check("log_softmax", input), dtype).log_softmax(dim=dim)


# Shapes ----------------------------------------------------------------------


def reshape(input, shape):
    """The tensor with a new shape (-1 allowed) (torch.reshape)."""
    shape = [shape] if isinstance(shape, numbers.Integral) else list(shape)
    return _check("reshape", input).reshape(shape)


def flatten(input, start_dim=0, end_dim=-1):
    """Dims start_dim..end_dim merged into one (torch.flatten)."""
    return _check("flatten", input).flatten(start_dim, end_dim)


def transpose(input, dim0, dim1):
    """Dims dim0 and dim1 swapped (torch.transpose)."""
    return _check("transpose", input).transpose(dim0, dim1)


def permute(input, dims):
    """The dims in the order `dims` (torch.permute)."""
    return _check("permute", input).permute(list(dims))


def squeeze(input, dim=None):
    """Size-1 dims removed: all, or `dim` if its size is 1 (torch.squeeze)."""
    input = _check("squeeze", input)
    return input.squeeze() if dim is None else input.squeeze(dim)


def unsqueeze(input, dim):
    """A size-1 dim inserted at `dim` (torch.unsqueeze)."""
    return _check("unsqueeze", input).unsqueeze(dim)


def flip(input, dims):
    """The order of the elements along `dims` reversed (torch.flip)."""
    dims = [dims] if isinstance(dims, numbers.Integral) else list(dims)
    return _check("flip", input).flip(*dims)


def t(input):
    """The transpose of a matrix; a 0-d or 1-D tensor as it is (torch.t)."""
    return _methods.t(_check("t", input))


def movedim(input, source, destination):
    """The dims `source` moved to the positions `destination` (torch.movedim)."""
    return _methods.movedim(_check("movedim", input), source, destination)


def narrow(input, dim, start, length):
    """`length` elements from `start` along `dim`, a view (torch.narrow)."""
    return _methods.narrow(_check("narrow", input), dim, start, length)


def clone(input, *, memory_format=None):
    """A differentiable copy in its own buffer (torch.clone)."""
    return _methods.clone(_check("clone", input))

