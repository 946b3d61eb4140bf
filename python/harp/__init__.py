"""harp: an MLIR-based tensor compiler.

    import numpy as np, harp
    x = harp.tensor(np.ones((2, 3), np.float32))
    y = (x * 2 + 1).sum(axis=1)      # builds harp IR lazily
    y.numpy()                         # compiles (cached) and runs: [9., 9.]

Tensors are handles to a lazy graph; `numpy()` / `realize()` build its harp
IR with MLIR's builders, find the compiled code by the graph's structure (a
Python number in an expression is an argument, so a new value compiles
nothing) and run it. `backward()` differentiates with the harp-autodiff
pass. `harp.ir` parses, prints, transforms and runs harp IR given as text.
The Tensor class itself is native (harp._harp); this module adds the
functions, with PyTorch's names and keyword arguments (torch's module-level
forms of the methods are in harp/_functions.py, the Tensor methods written
in Python in harp/_tensor_methods.py, harp.device in harp/_device.py).
"""

import math as _math
import numbers as _numbers
import os as _os

import numpy as _np

from . import _harp
from ._harp import (DType, HarpError, HarpIndexError, Tensor, compile_stats,  # noqa: F401
                    format_profile, get_cpu, get_num_threads, get_options, ir,
                    profile, promote, realize, reset_profile, set_cpu,
                    set_num_threads, set_options, where)
from ._harp import from_dlpack  # noqa: F401

from . import nn, optim  # noqa: E402,F401
from . import distributed  # noqa: E402,F401
from . import graph  # noqa: E402,F401
from . import random  # noqa: E402,F401
from . import autograd  # noqa: E402,F401
from . import func  # noqa: E402,F401
from . import cuda  # noqa: E402,F401
from .autograd import (enable_grad, inference_mode,  # noqa: F401
                       is_grad_enabled, no_grad, set_grad_enabled)
from .random import (Generator, default_generator, get_rng_state,  # noqa: F401
                     initial_seed, manual_seed, seed, set_rng_state)
from ._ops import _placed  # noqa: E402
from ._ops import (bernoulli, broadcast_to, chunk, cumprod, cumsum,  # noqa: F401
                   full_like, index_select, multinomial, normal, ones_like, rand,
                   rand_like, randint, randint_like, randn, randn_like,
                   repeat_interleave, roll, split, stack, take_along_dim, tril,
                   triu, unbind, zeros_like)
from ._device import device  # noqa: F401
from . import _functions, _tensor_methods  # noqa: E402
from ._functions import (  # noqa: F401
    acos, arccos, arcsin, arctan2, asin, atan2, frac,
    add, amax, amin, argmax, argmin, atan, bmm, ceil, clamp, clip, clone, cos,
    div, divide, eq, erf, exp, exp2, expm1, flatten, flip, floor, floor_divide,
    fmod, from_numpy, ge, gt, is_complex, is_floating_point, is_tensor, isinf,
    isnan, le, log, log1p, log2, log_softmax, logsumexp, lt, masked_fill,
    maximum, mean, minimum, mm, movedim, mul, multiply, narrow, ne, neg,
    negative, numel, permute, prod, reciprocal, relu, remainder, reshape,
    rsqrt, sigmoid, sign, sin, sqrt, square, squeeze, std, sub, subtract, t,
    tan, tanh, transpose, trunc, unsqueeze, var, zero_)
from ._einsum import diagonal, einsum, tensordot, tile  # noqa: E402,F401
from ._scatter import (index_add, index_copy, index_fill, scatter,  # noqa: E402,F401
                       scatter_reduce)
from ._sort import argsort, msort, sort, topk  # noqa: E402,F401
from ._extra import (addmm, addmv, baddbmm, cross, hypot, isfinite, lerp,  # noqa: E402,F401
                     logaddexp, masked_select, meshgrid, nan_to_num, nonzero, trace)
class memory_format:
    """torch's memory formats, accepted where torch takes memory_format= and
    ignored: a harp tensor's layout is its compiler's choice."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "harp." + self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

from ._compose import *  # noqa: E402,F401,F403
from . import _compose  # noqa: E402
from ._numeric import *  # noqa: E402,F401,F403
from . import _numeric  # noqa: E402
from . import linalg, special  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from ._export import export  # noqa: E402,F401
from . import serialization  # noqa: E402
from . import safetensors  # noqa: E402,F401
from .serialization import load, save  # noqa: E402,F401

# PyTorch's Tensor methods written in Python (harp/_tensor_methods.py) join
# the native ones; tensors pickle by value (harp/serialization.py).
_tensor_methods.install()
serialization.install()

# Ops built from Python carry the caller's file and line: frames inside
# this package are skipped.
_harp._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)))

bool_ = DType.bool
int8, int16, int32, int64 = DType.int8, DType.int16, DType.int32, DType.int64
uint8, uint16, uint32, uint64 = DType.uint8, DType.uint16, DType.uint32, DType.uint64
float32, float64 = DType.float32, DType.float64
complex64, complex128 = DType.complex64, DType.complex128
# torch's other names of the dtypes; harp.float, harp.int and harp.bool are
# served by __getattr__ below.
double, long, short = DType.float64, DType.int64, DType.int16
cfloat, cdouble = DType.complex64, DType.complex128

_pycomplex = complex  # the builtin: harp.complex below builds tensors

_NUMPY = {DType.bool: _np.bool_, DType.int8: _np.int8, DType.int16: _np.int16,
          DType.int32: _np.int32, DType.int64: _np.int64, DType.uint8: _np.uint8,
          DType.uint16: _np.uint16, DType.uint32: _np.uint32, DType.uint64: _np.uint64,
          DType.float32: _np.float32, DType.float64: _np.float64,
          DType.complex64: _np.complex64, DType.complex128: _np.complex128}

# harp.complex is not in __all__: `from harp import *` keeps Python's complex.
__all__ = [
    "DType", "Generator", "HarpError", "HarpIndexError", "Tensor", "angle", "arange",
    "autograd", "enable_grad", "inference_mode", "is_grad_enabled", "no_grad",
    "set_grad_enabled",
    "bernoulli", "bool_", "broadcast_to", "default_generator",
    "get_rng_state", "initial_seed", "normal", "randint", "randint_like",
    "random", "seed", "set_rng_state",
    "cat", "chunk", "compile_stats", "complex128", "complex64", "cuda",
    "concat", "conj", "constant", "conv", "cumprod", "cumsum",
    "diagonal", "dot", "einsum", "float32", "float64", "fold", "format_profile", "full",
    "full_like", "gather",
    "get_cpu", "get_num_threads", "get_options", "index_select", "int16", "int32", "int64", "int8",
    "interpolate_linear", "interpolate_nearest", "ir", "manual_seed", "matmul",
    "imag", "nn", "norm", "ones", "ones_like", "optim", "outer", "polar",
    "profile", "promote", "rand", "rand_like", "randn", "randn_like", "real",
    "realize", "repeat_interleave", "reset_profile", "roll", "scatter_add",
    "set_cpu", "set_num_threads", "set_options", "softmax", "split", "stack", "take_along_dim",
    "tensor", "tensordot", "tile", "tril", "triu", "uint16", "uint32", "uint64", "uint8", "unbind",
    "unfold", "view_as_complex", "view_as_real", "where", "zeros",
    "zeros_like", "cdouble", "cfloat", "device", "double", "long", "short",
    "utils", "save", "load", "scatter", "scatter_reduce", "index_add", "index_copy", "index_fill",
    "sort",
    "argsort", "msort", "topk", "multinomial", "serialization", "addmm", "addmv", "baddbmm",
    "cross", "hypot", "isfinite", "lerp", "logaddexp", "masked_select", "meshgrid", "nan_to_num",
    "nonzero", "trace", "safetensors", "from_dlpack",
] + [name for name in _functions.__all__ if name not in _functions.BUILTIN_NAMES] \
  + _compose.__all__ + _numeric.__all__ + ["linalg", "special", "memory_format", "contiguous_format", "channels_last",
                         "channels_last_3d", "preserve_format"]

# Names that would hide Python's builtins, in this module and under
# `from harp import *`: torch's harp.sum, harp.max, ... (harp/_functions.py)
# and the dtypes harp.float (float32), harp.int (int32) and harp.bool. They
# are served by the module's __getattr__ (PEP 562) and left out of __all__.
_BUILTIN_NAMES = {name: getattr(_functions, name) for name in _functions.BUILTIN_NAMES}
_BUILTIN_NAMES.update({"float": DType.float32, "int": DType.int32, "bool": DType.bool})


def __getattr__(name):
    try:
        return _BUILTIN_NAMES[name]
    except KeyError:
        raise AttributeError("module 'harp' has no attribute %r" % name) from None


def __dir__():
    return sorted(set(globals()) | set(_BUILTIN_NAMES))



def _shape(shape):
    """A shape given as ints, a tuple or a list."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        return [int(n) for n in shape[0]]
    return [int(n) for n in shape]


def _ints(value, count, name, op):
    """`value` (an int or `count` ints) as a list of `count` ints."""
    if isinstance(value, int):
        return [value] * count
    value = [int(v) for v in value]
    if len(value) != count:
        raise HarpError("%s: %s needs 1 or %d values, got %d"
                        % (op, name, count, len(value)))
    return value


def tensor(data, dtype=None, requires_grad=False, device="cpu"):
    """A leaf tensor holding a copy of `data` (array-like), on `device`
    ("cpu" or "cuda"; "cuda" raises HarpError where no GPU can be used).
    Python floats become float32 and Python complex numbers complex64, as
    in PyTorch; NumPy arrays and scalars keep their dtype unless `dtype` is
    given."""
    array = _np.asarray(data)
    numpy_typed = isinstance(data, (_np.ndarray, _np.generic))
    if dtype is not None:
        array = array.astype(_NUMPY[dtype])
    elif array.dtype == _np.float64 and not numpy_typed:
        array = array.astype(_np.float32)  # Python floats: float32, as torch
    elif array.dtype == _np.complex128 and not numpy_typed:
        array = array.astype(_np.complex64)
    result = _harp.from_numpy(array, device)
    if requires_grad:
        result.requires_grad = True
    return result


def zeros(*shape, dtype=float32, device=None, requires_grad=False):
    """A constant tensor of zeros: zeros(2, 3) or zeros((2, 3)); on `device`
    if given; with requires_grad a new leaf that requires a gradient."""
    return _placed(_harp.full(dtype, _shape(shape), 0.0), device, requires_grad)


def ones(*shape, dtype=float32, device=None, requires_grad=False):
    """A constant tensor of ones: ones(2, 3) or ones((2, 3)); device and
    requires_grad as zeros'."""
    return _placed(_harp.full(dtype, _shape(shape), 1.0), device, requires_grad)


def _filled(dtype, shape, value):
    """A constant of `dtype` (None: float32, complex64 for a complex value)."""
    if isinstance(value, _pycomplex):
        if dtype is None:
            dtype = complex64
        return _harp.full_complex(dtype, shape, value.real, value.imag)
    return _harp.full(float32 if dtype is None else dtype, shape, float(value))


def full(shape, fill_value, dtype=None, device=None, requires_grad=False):
    """A constant tensor of `shape` filled with `fill_value` (float32, or
    complex64 for a complex value, unless `dtype` is given); device and
    requires_grad as zeros'."""
    return _placed(_filled(dtype, _shape((shape,)), fill_value), device, requires_grad)


def constant(value, dtype=None):
    """A 0-d constant compiled into the code (a new value compiles anew).
    Plain Python numbers in expressions are arguments instead: changing
    them reuses the compiled kernel."""
    return _filled(dtype, [], value)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from `start` (0 with one argument) up to but not including
    `end`, `step` apart, as numpy.arange and torch.arange: arange(5),
    arange(2, 5), arange(0, 1, 0.25). `dtype` defaults to int64 when start,
    end and step are all integers, else float32; device and requires_grad
    as zeros'."""
    if end is None:
        start, end = 0, start
    for name, value in (("start", start), ("end", end), ("step", step)):
        if not isinstance(value, _numbers.Real):
            raise TypeError("harp.arange: %s must be a real number, not %r" % (name, value))
    if dtype is None:
        integral = all(isinstance(v, _numbers.Integral) for v in (start, end, step))
        dtype = int64 if integral else float32
    if dtype in (int64, int32, int16, int8, uint8):
        # torch: an integer arange truncates its bounds and step first
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise ValueError("harp.arange: step must not be zero")
    count = max(0, _math.ceil((end - start) / step))
    return _placed(_harp.arange(dtype, count, float(start), float(step)), device,
                   requires_grad)


def complex(real, imag):
    """The complex tensor real + imag i (torch.complex): float parts,
    broadcast, give complex64 (float32) or complex128 (float64)."""
    return _harp.complex(real, imag)


def polar(abs, angle):
    """abs (cos angle + i sin angle), element-wise (torch.polar)."""
    return complex(abs * angle.cos(), abs * angle.sin())


def real(input):
    """The real part (the tensor itself for a real tensor)."""
    return input.real


def imag(input):
    """The imaginary part of a complex tensor."""
    return input.imag


def conj(input):
    """The complex conjugate (the tensor itself for a real tensor)."""
    return input.conj()


def angle(input):
    """The argument atan2(imag, real) (pi for negative reals, else 0)."""
    return input.angle()


def view_as_real(input):
    """A complex tensor's parts along a new last dim of 2 [..., (re, im)]
    (computed: harp's views keep the element type)."""
    if not input.is_complex():
        raise HarpError("view_as_real: needs a complex tensor, got %s"
                        % input.dtype.name)
    return stack([input.real, input.imag], -1)


def view_as_complex(input):
    """The complex tensor of a float tensor [..., 2] of (re, im) pairs."""
    if not input.shape or input.shape[-1] != 2:
        raise HarpError("view_as_complex: needs a last dim of 2, got shape %s"
                        % (tuple(input.shape),))
    return complex(input[..., 0], input[..., 1])


def matmul(input, other):
    """Matrix product with NumPy's rules: batch dims broadcast, a 1-D
    operand is a row on the left and a column on the right."""
    return input.matmul(other)


def concat(tensors, dim=0):
    """The tensors joined along `dim` (shapes equal elsewhere)."""
    return _harp.concat(list(tensors), dim)


cat = concat


def softmax(input, dim=-1, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along `dim`, in `dtype` if given
    (the input cast first, as torch.softmax)."""
    return input.softmax(dim, dtype)


def conv(input, weight, stride=1, padding=0, dilation=1, bias=None):
    """Convolution of `input` [N, C, spatial...] (1 to 3 spatial dims) with
    `weight` [F, C, kernel...]: stride, padding and dilation are an int or
    one per spatial dim; `bias` [F] is added per output channel."""
    k = len(input.shape) - 2
    out = _harp.conv(input, weight, _ints(stride, k, "stride", "conv"),
                     _ints(padding, k, "padding", "conv"),
                     _ints(dilation, k, "dilation", "conv"))
    if bias is not None:
        out = out + bias.reshape([1, -1] + [1] * k)
    return out


def gather(input, dim, index):
    """torch.gather: out[i][j] = input[index[i][j]][j] for dim 0 (and so
    on), `index` an int32 or int64 tensor of input's rank. The harp order
    gather(input, index, dim) is accepted too."""
    if isinstance(index, int):
        dim, index = index, dim
    return _tensor_methods.gather(input, dim, index)


def scatter_add(input, dim, index, src):
    """Tensor.scatter_add as a new tensor: input with src[i][j] added at
    [index[i][j]][j] for dim 0 (and so on). The harp order
    scatter_add(input, index, src, dim) is accepted too."""
    if isinstance(src, int):
        dim, index, src = src, dim, index
    return _harp.scatter_add(input, index, src, dim)


def unfold(input, kernel_size, stride=1, dilation=1):
    """Sliding windows over the trailing len(kernel_size) dims, as a view:
    shape [lead..., out..., kernel...]."""
    kernel = [kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    k = len(kernel)
    return _harp.unfold(input, kernel, _ints(stride, k, "stride", "unfold"),
                        _ints(dilation, k, "dilation", "unfold"))


def fold(input, output_size, stride=1, dilation=1):
    """The adjoint of unfold: windows [lead..., out..., kernel...] summed
    back into [lead..., output_size...] (overlaps add up)."""
    size = [output_size] if isinstance(output_size, int) else list(output_size)
    k = len(size)
    return _harp.fold(input, size, _ints(stride, k, "stride", "fold"),
                      _ints(dilation, k, "dilation", "fold"))


def interpolate_nearest(input, size):
    """Nearest-neighbour resize of the trailing len(size) dims (PyTorch's
    interpolate with mode="nearest")."""
    return _harp.interpolate_nearest(input, [size] if isinstance(size, int) else list(size))


def interpolate_linear(input, size):
    """(Bi/tri)linear resize of the trailing len(size) dims (PyTorch's
    interpolate with align_corners=False)."""
    return _harp.interpolate_linear(input, [size] if isinstance(size, int) else list(size))


def dot(input, other):
    """The inner product of two 1-D tensors."""
    return _harp.dot(input, other)


def outer(input, vec2):
    """The outer product of two 1-D tensors: [n] x [m] -> [n, m]."""
    return _harp.outer(input, vec2)


def norm(input, p="fro", dim=None, keepdim=False):
    """The vector p-norm of `input` over `dim` (torch.norm for vectors)."""
    return input.norm(p, dim, keepdim)


# Tensor methods that call the functions above (torch's x.sinh(), x.dot(y)).
_tensor_methods.install_forwarding()
