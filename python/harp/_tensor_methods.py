"""PyTorch's Tensor methods that harp writes in Python.

The Tensor class is native (harp._harp.Tensor, python/TensorBindings.cpp);
`install()` (called once by harp/__init__.py) adds the methods below to it,
each only where the class has no member of that name, so a method the
extension defines itself always wins. The exceptions are `float`, `double`,
`int`, `long` and `bool`, which wrap the native conversions to take torch's
`memory_format=` keyword (ignored: harp has one layout).

In-place methods (`fill_`, `zero_`, `add_`, `sub_`, `mul_`, `div_`,
`clamp_`, `masked_fill_`, `normal_`, `uniform_`, and assigning `.data`)
compute the new value and write it with `copy_`, so they take the leaves
copy_ takes (tensors made from data, parameters, `detach()` and `.data`)
and keep the tensor's shape and dtype: a result of another shape, or of a
dtype the tensor's cannot hold (float into an integer tensor), raises
HarpError as torch raises its RuntimeError.
"""

import builtins
import numbers
import operator

import numpy as np

from . import _harp
from ._harp import DType, HarpError, Tensor
from ._einsum import diagonal, select, tile
from . import _extra, _scatter, _sort
from . import autograd as _autograd
from ._ops import multinomial as _multinomial

__all__ = ["install", "install_forwarding"]


# Helpers ---------------------------------------------------------------------


def _kind(dtype):
    """0 for bool, 1 for integers, 2 for floats, 3 for complex dtypes."""
    name = dtype.name
    if name == "bool":
        return 0
    if name.startswith(("int", "uint")):
        return 1
    return 2 if name.startswith("float") else 3


def _numpy_dtype(dtype):
    return np.dtype(dtype.name)


def _dims(value):
    """An int, or a tuple or list of ints, as a list."""
    return [value] if isinstance(value, numbers.Integral) else [int(d) for d in value]


def _normalized(op, dim, rank):
    """`dim` in [-rank, rank) as a non-negative dim (a 0-d tensor has 0 and -1)."""
    size = max(rank, 1)
    if not -size <= dim < size:
        raise HarpError("%s: dim %d is out of range for a tensor of %d dims"
                        % (op, dim, rank))
    return dim + size if dim < 0 else dim


def _shape_of(op, size):
    """torch's size argument: ints, or one tuple or list of ints."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for n in size:
        if not isinstance(n, numbers.Integral) or isinstance(n, bool):
            raise TypeError("%s: the size must be ints, got %r" % (op, tuple(size)))
    return [int(n) for n in size]


def _leaf(array, device, requires_grad):
    """A new leaf holding `array` (NumPy) on `device`."""
    result = _harp.from_numpy(np.require(array, None, "C"), device)  # keeps 0-d
    if requires_grad:
        result.requires_grad = True
    return result


def _write(tensor, op, value):
    """Writes `value` (a tensor or a number) into the leaf `tensor` with
    copy_, as the in-place op `op`; returns the tensor."""
    if op != "data" and tensor.requires_grad and _harp.is_grad_enabled():
        raise RuntimeError("%s: a leaf tensor that requires grad is being used in an "
                           "in-place operation; write it under harp.no_grad() (as "
                           "torch requires)" % op)
    if isinstance(value, Tensor):
        if tuple(value.shape) != tuple(tensor.shape):
            raise HarpError("%s: the result's shape %s does not match the tensor's "
                            "shape %s (an in-place op keeps the shape)"
                            % (op, list(value.shape), list(tensor.shape)))
        if _kind(value.dtype) > _kind(tensor.dtype):
            raise HarpError("%s: result type %s can't be cast to the tensor's "
                            "type %s" % (op, value.dtype.name, tensor.dtype.name))
    if not tensor.is_leaf:
        # A computed tensor: the new value is a new binding of the handle in
        # the lazy graph (as __setitem__), differentiable as torch's.
        if not isinstance(value, Tensor):
            # masked everywhere: the new value still hangs off the old one
            # in the graph, which passes a zero gradient back (torch's too)
            from . import ones_like
            value = tensor.masked_fill(ones_like(tensor, dtype=DType.bool), value)
        tensor._rebind(value if value.dtype == tensor.dtype else value.to(tensor.dtype))
        return tensor
    try:
        tensor.copy_(value)
    except HarpError as error:
        raise HarpError("%s: %s" % (op, error)) from None
    return tensor


def _check_alpha(op, tensor, alpha):
    if not isinstance(alpha, numbers.Number):
        raise TypeError("%s: alpha must be a number, got %s" % (op, _type_name(alpha)))
    if _kind(tensor.dtype) <= 1 and isinstance(alpha, numbers.Number) \
            and not isinstance(alpha, numbers.Integral):
        raise HarpError("%s: for integral input tensors, alpha must not be a "
                        "floating point number" % op)


def _scaled(other, alpha):
    return other if alpha == 1 else other * alpha


# Arithmetic with torch's keywords ---------------------------------------------


def add(self, other, *, alpha=1):
    """self + alpha * other (torch.Tensor.add)."""
    _check_alpha("add", self, alpha)
    return self + _scaled(other, alpha)


def sub(self, other, *, alpha=1):
    """self - alpha * other (torch.Tensor.sub)."""
    _check_alpha("sub", self, alpha)
    return self - _scaled(other, alpha)


def mul(self, other):
    """self * other (torch.Tensor.mul)."""
    return self * other


def _integral(value):
    if isinstance(value, Tensor):
        return _kind(value.dtype) <= 1
    return isinstance(value, numbers.Integral)


def div(self, other, *, rounding_mode=None):
    """self / other (torch.Tensor.div): rounding_mode None is true division
    (a float result), "trunc" rounds the quotient toward zero and "floor"
    down (integer tensors keep an integer result)."""
    if rounding_mode is None:
        return self / other
    if rounding_mode == "floor":
        return self // other
    if rounding_mode != "trunc":
        raise ValueError("div: rounding_mode must be None, 'trunc' or 'floor', "
                         "got %r" % (rounding_mode,))
    if not (_integral(self) and _integral(other)):
        return (self / other).trunc()
    # Integers: the floor quotient, one more where it was rounded down past
    # a negative exact quotient (a remainder and operands of unlike signs).
    quotient = self // other
    inexact = (self % other) != 0
    unlike = (self < 0) != (other < 0) if isinstance(other, Tensor) else \
        (self < 0) if other > 0 else (self >= 0)
    return quotient + (inexact & unlike).to(quotient.dtype)


def neg(self):
    """-self (torch.Tensor.neg)."""
    return -self


def lt(self, other):
    """self < other, element-wise (torch.Tensor.lt)."""
    return self < other


def le(self, other):
    """self <= other, element-wise (torch.Tensor.le)."""
    return self <= other


def gt(self, other):
    """self > other, element-wise (torch.Tensor.gt)."""
    return self > other


def ge(self, other):
    """self >= other, element-wise (torch.Tensor.ge)."""
    return self >= other


def mm(self, mat2):
    """The matrix product of two 2-D tensors (torch.Tensor.mm)."""
    if self.ndim != 2:
        raise HarpError("mm: self must be a matrix, got shape %s" % list(self.shape))
    if not isinstance(mat2, Tensor) or mat2.ndim != 2:
        raise HarpError("mm: mat2 must be a matrix, got %s"
                        % (list(mat2.shape) if isinstance(mat2, Tensor)
                           else _type_name(mat2)))
    return self.matmul(mat2)


def bmm(self, mat2):
    """Batched matrix products of two 3-D tensors [b, n, m] @ [b, m, p]
    (torch.Tensor.bmm)."""
    if self.ndim != 3 or not isinstance(mat2, Tensor) or mat2.ndim != 3:
        raise HarpError("bmm: both operands must be 3-D, got %s and %s"
                        % (list(self.shape), list(mat2.shape) if isinstance(mat2, Tensor)
                           else _type_name(mat2)))
    if self.shape[0] != mat2.shape[0]:
        raise HarpError("bmm: batch sizes differ: %d and %d" % (self.shape[0], mat2.shape[0]))
    return self.matmul(mat2)


# Reductions ------------------------------------------------------------------


def _reduce_dims(op, self, dim):
    """torch's dim argument of amax/amin (an int or a tuple; () or None:
    every dim) as NumPy's axis (a tuple)."""
    if dim is None or (not isinstance(dim, numbers.Integral) and len(dim) == 0):
        return tuple(range(self.ndim))
    return tuple(_normalized(op, d, self.ndim) for d in _dims(dim))


def amax(self, dim=(), keepdim=False):
    """The maximum over `dim` (an int or a tuple; () or None: all dims)
    (torch.Tensor.amax)."""
    axis = _reduce_dims("amax", self, dim)
    return self.max(axis=axis, keepdim=keepdim) if self.ndim else self


def amin(self, dim=(), keepdim=False):
    """The minimum over `dim` (an int or a tuple; () or None: all dims)
    (torch.Tensor.amin)."""
    axis = _reduce_dims("amin", self, dim)
    return self.min(axis=axis, keepdim=keepdim) if self.ndim else self


def _truth(op, self, dim, keepdim, every):
    nonzero = self if self.dtype == DType.bool else self != 0
    if dim is None:
        if keepdim:
            raise TypeError("%s: keepdim needs a dim" % op)
        axis = None
    else:
        if not isinstance(dim, numbers.Integral):
            raise TypeError("%s: dim must be an int, got %r" % (op, dim))
        axis = _normalized(op, int(dim), self.ndim)
    if self.ndim == 0:
        result = nonzero
    elif every:
        result = (~nonzero).sum(axis=axis, keepdim=keepdim) == 0
    else:
        result = nonzero.sum(axis=axis, keepdim=keepdim) > 0
    # torch keeps uint8 for uint8 input.
    return result.to(DType.uint8) if self.dtype == DType.uint8 else result


def all(self, dim=None, keepdim=False):
    """Whether every element (along `dim`) is non-zero (torch.Tensor.all);
    a bool tensor."""
    return _truth("all", self, dim, keepdim, True)


def any(self, dim=None, keepdim=False):
    """Whether any element (along `dim`) is non-zero (torch.Tensor.any);
    a bool tensor."""
    return _truth("any", self, dim, keepdim, False)


# Shapes ----------------------------------------------------------------------


def t(self):
    """The transpose of a matrix; a 0-d or 1-D tensor as it is
    (torch.Tensor.t)."""
    if self.ndim > 2:
        raise HarpError("t: expects a tensor with <= 2 dimensions, but self is %dD"
                        % self.ndim)
    return self.transpose(0, 1) if self.ndim == 2 else self


def movedim(self, source, destination):
    """The dims `source` moved to the positions `destination` (ints or
    sequences of one length), the others keeping their order
    (torch.Tensor.movedim)."""
    rank = self.ndim
    src = [_normalized("movedim", d, rank) for d in _dims(source)]
    dst = [_normalized("movedim", d, rank) for d in _dims(destination)]
    if len(src) != len(dst):
        raise HarpError("movedim: source (%d dims) and destination (%d dims) must "
                        "have as many dims" % (len(src), len(dst)))
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise HarpError("movedim: repeated dim in `%s` (%s)" % (name, dims))
    if rank == 0:
        return self
    order = [None] * rank
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(rank) if i not in src)
    order = [next(rest) if o is None else o for o in order]
    return self.permute(order)


def narrow(self, dim, start, length):
    """The `length` elements from `start` (may be negative) along `dim`, a
    view (torch.Tensor.narrow)."""
    dim = _normalized("narrow", dim, self.ndim)
    size = self.shape[dim]
    start = operator.index(start)  # torch takes a 0-d integer tensor too
    if not -size <= start <= size:
        raise HarpError("narrow: start %d is out of range for a dim of size %d"
                        % (start, size))
    if start < 0:
        start += size
    if length < 0:
        raise HarpError("narrow: length must be non-negative, got %d" % length)
    if start + length > size:
        raise HarpError("narrow: start (%d) + length (%d) exceeds dimension size (%d)"
                        % (start, length, size))
    return self.slice(dim, start, start + length, 1)


def view_as(self, other):
    """self.view(other.shape) (torch.Tensor.view_as)."""
    return self.view(list(other.shape))


def reshape_as(self, other):
    """self.reshape(other.shape) (torch.Tensor.reshape_as)."""
    return self.reshape(list(other.shape))


def expand_as(self, other):
    """self.expand(other.shape) (torch.Tensor.expand_as)."""
    return self.expand(list(other.shape))


def unfold(self, dimension, size, step):
    """Every slice of `size` elements along `dimension`, `step` apart, as a
    new last dim of `size`; `dimension` holds their count (a view,
    torch.Tensor.unfold; harp.unfold takes windows of several dims)."""
    if self.ndim == 0:
        if size != 1 or step < 1:
            raise HarpError("unfold: a 0-d tensor has windows of size 1 with a positive "
                            "step, got size %d, step %d" % (size, step))
        return self.reshape([1])
    dim = _normalized("unfold", dimension, self.ndim)
    if not 0 <= size <= self.shape[dim]:
        raise HarpError("unfold: size %d is out of range for dim %d of size %d"
                        % (size, dim, self.shape[dim]))
    if step < 1:
        raise HarpError("unfold: step must be positive, got %d" % step)
    if size == 0:
        # windows of nothing: shape[dim] // step + 1 of them (torch's count)
        from . import zeros
        shape = list(self.shape)
        shape[dim] = self.shape[dim] // step + 1
        return zeros(shape + [0], dtype=self.dtype)
    windows = _harp.unfold(self.movedim(dim, -1), [size], [step], [1])
    return windows.movedim(-2, dim)


def gather(self, dim, index, *, sparse_grad=False):
    """out[i][j] = self[index[i][j]][j] for dim 0, and so on
    (torch.Tensor.gather; harp.gather). An index of any integer type; a 0-d
    tensor gathers along dim 0 or -1 as a 1-element one."""
    if isinstance(index, Tensor) and index.dtype in _NARROW_INDEX_TYPES:
        index = index.to(DType.int64)
    if self.ndim == 0 and isinstance(index, Tensor) and index.ndim <= 1:
        _normalized("gather", dim, 1)
        out = _harp.gather(self.reshape([1]), index.reshape([-1]), 0)
        return out.reshape(list(index.shape))
    return _harp.gather(self, index, dim)


_NARROW_INDEX_TYPES = (DType.int8, DType.int16, DType.uint8, DType.uint16, DType.uint32)


def clone(self, *, memory_format=None):
    """A copy computed into its own buffer, differentiable
    (torch.Tensor.clone; memory_format is ignored)."""
    return self.contiguous()


def nelement(self):
    """The number of elements (torch.Tensor.nelement)."""
    return self.numel()


def element_size(self):
    """The size of one element in bytes (torch.Tensor.element_size)."""
    return _numpy_dtype(self.dtype).itemsize


# Types and devices -----------------------------------------------------------

_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
    "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor",
    "uint8": "ByteTensor", "bool": "BoolTensor", "uint16": "UInt16Tensor",
    "uint32": "UInt32Tensor", "uint64": "UInt64Tensor",
    "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
}


def type(self, dtype=None, non_blocking=False, **kwargs):
    """Without `dtype`, the type's name ("harp.FloatTensor", or
    "harp.cuda.FloatTensor" on the GPU); with a dtype or such a name
    ("harp." or "torch." prefixed), the tensor converted to it
    (torch.Tensor.type)."""
    if dtype is None:
        prefix = "harp.cuda." if self.device == "cuda" else "harp."
        return prefix + _TYPE_NAMES[self.dtype.name]
    if isinstance(dtype, DType):
        return self.to(dtype)
    if isinstance(dtype, str):
        module, _, name = dtype.rpartition(".")
        for key, value in _TYPE_NAMES.items():
            if value == name and module in ("harp", "torch", "harp.cuda", "torch.cuda"):
                result = self.to(getattr(DType, key))
                return result.to("cuda") if module.endswith("cuda") else result
        raise ValueError("type: invalid type %r" % dtype)
    raise TypeError("type: expected a dtype or a type name, got %s" % _type_name(dtype))


def _type_name(value):
    return value.__class__.__name__


def type_as(self, other):
    """self converted to other's dtype (torch.Tensor.type_as)."""
    return self.to(other.dtype)


def cpu(self, memory_format=None):
    """The tensor on the CPU: itself if it is there (torch.Tensor.cpu)."""
    return self.to("cpu")


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """The tensor on the GPU (harp drives one: device None, 0, "cuda" or
    "cuda:0") (torch.Tensor.cuda)."""
    if device is not None and device != 0:
        from ._device import device as make_device
        if make_device(device) not in ("cuda", "cuda:0"):
            raise HarpError("cuda: harp drives one GPU (cuda or cuda:0), got %s" % (device,))
    return self.to("cuda")


def _is_cuda(self):
    """Whether the tensor is on the GPU (torch.Tensor.is_cuda)."""
    return self.device == "cuda"


def get_device(self):
    """-1 on the CPU, the GPU's index (0) on the GPU (torch.Tensor.get_device)."""
    return 0 if self.device == "cuda" else -1


def _converter(name, dtype, native):
    def convert(self, memory_format=None):
        return native(self)
    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = ("astype(harp.%s), as torch.Tensor.%s (memory_format is "
                       "accepted and ignored)." % (dtype, name))
    return convert


# New tensors -----------------------------------------------------------------


def _new(self, op, size, fill, dtype, device, requires_grad):
    dtype = self.dtype if dtype is None else dtype
    array = np.full(_shape_of(op, size), fill, dtype=_numpy_dtype(dtype))
    return _leaf(array, self.device if device is None else device, requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """A new leaf of zeros of `size` with this tensor's dtype and device
    unless given (torch.Tensor.new_zeros)."""
    return _new(self, "new_zeros", size, 0, dtype, device, requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """A new leaf of ones of `size` with this tensor's dtype and device
    unless given (torch.Tensor.new_ones)."""
    return _new(self, "new_ones", size, 1, dtype, device, requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """A new leaf of `size` (zeros: harp does not hand out uninitialised
    memory) with this tensor's dtype and device unless given
    (torch.Tensor.new_empty)."""
    return _new(self, "new_empty", size, 0, dtype, device, requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A new leaf of `size` (a tuple or list) filled with `fill_value`, with
    this tensor's dtype and device unless given (torch.Tensor.new_full)."""
    if isinstance(size, numbers.Integral):
        raise TypeError("new_full: size must be a tuple or list of ints, got %r" % size)
    return _new(self, "new_full", (size,), fill_value, dtype, device, requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """A new leaf holding a copy of `data` (array-like or a harp tensor),
    with this tensor's dtype and device unless given
    (torch.Tensor.new_tensor)."""
    array = np.array(data.numpy() if isinstance(data, Tensor) else data)
    array = array.astype(_numpy_dtype(self.dtype if dtype is None else dtype))
    return _leaf(array, self.device if device is None else device, requires_grad)


# In place, through copy_ ----------------------------------------------------


def fill_(self, value):
    """Every element set to `value` (a number or a 0-d tensor), in place
    (torch.Tensor.fill_)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise HarpError("fill_: only supports a 0-dimension value tensor, got "
                            "one with %d dimensions" % value.ndim)
        value = value.to(self.dtype).broadcast_to(list(self.shape))
    elif not isinstance(value, numbers.Number):
        raise TypeError("fill_: value must be a number or a 0-d tensor, got %s"
                        % _type_name(value))
    return _write(self, "fill_", value)


def zero_(self):
    """Every element set to zero, in place (torch.Tensor.zero_)."""
    return _write(self, "zero_", 0)


def add_(self, other, *, alpha=1):
    """self += alpha * other, in place (torch.Tensor.add_)."""
    return _write(self, "add_", add(self, other, alpha=alpha))


def sub_(self, other, *, alpha=1):
    """self -= alpha * other, in place (torch.Tensor.sub_)."""
    return _write(self, "sub_", sub(self, other, alpha=alpha))


def mul_(self, other):
    """self *= other, in place (torch.Tensor.mul_)."""
    return _write(self, "mul_", self * other)


def div_(self, other, *, rounding_mode=None):
    """self /= other, in place, with div's rounding_mode (torch.Tensor.div_)."""
    return _write(self, "div_", div(self, other, rounding_mode=rounding_mode))


def _clamped(op, self, min, max, native=None):
    """self limited to [min, max], numbers (the native clamp) or tensors
    (broadcast): as torch's, the gradient goes to self where min <= self <=
    max, to min where self < min and to max where the result would exceed
    max (max wins where min > max)."""
    if min is None and max is None:
        raise HarpError("%s: at least one of min and max must be given" % op)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        from . import where
        result = self
        if min is not None:
            result = where(result < min, min, result)
        if max is not None:
            result = where(result > max, max, result)
        return result
    return (native or Tensor.clamp)(self, min, max)


def _clamp_method(native):
    def clamp(self, min=None, max=None):
        if min is None and max is None:
            return native(self, min, max)  # raises, naming clamp
        return _clamped("clamp", self, min, max, native)
    clamp.__doc__ = ("self limited to [min, max] (numbers or tensors; either may be None), "
                     "as torch.Tensor.clamp; the gradient is 1 inside and at the bounds.")
    return clamp


def clamp_(self, min=None, max=None):
    """self limited to [min, max] (numbers or tensors), in place
    (torch.Tensor.clamp_)."""
    return _write(self, "clamp_", _clamped("clamp_", self, min, max))


def masked_fill_(self, mask, value):
    """`value` written where the bool `mask` holds, in place
    (torch.Tensor.masked_fill_)."""
    return _write(self, "masked_fill_", self.masked_fill(mask, value))


def _check_float(op, self):
    if _kind(self.dtype) != 2:
        raise HarpError("%s: expects a floating-point tensor, got %s" % (op, self.dtype.name))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Normal numbers of `mean` and `std` written in place, drawn from
    harp's random streams (`generator`, else the default one)
    (torch.Tensor.normal_)."""
    from ._ops import randn_like
    _check_float("normal_", self)
    if std < 0:
        raise HarpError("normal_: std must be >= 0, got %r" % std)
    return _write(self, "normal_", randn_like(self, generator=generator) * std + mean)


def uniform_(self, *bounds, generator=None, **keywords):
    """Uniform numbers in [from, to) written in place (uniform_(a, b), or
    torch's keywords `from` and `to`; 0 and 1 by default), drawn from
    harp's random streams (torch.Tensor.uniform_)."""
    from ._ops import rand_like
    _check_float("uniform_", self)
    names = ("from", "to")
    unknown = set(keywords) - set(names)
    if unknown or len(bounds) > 2:
        raise TypeError("uniform_: takes from and to, got %s"
                        % (sorted(unknown) if unknown else "%d bounds" % len(bounds)))
    values = dict(zip(names, bounds))
    for name in keywords:
        if name in values:
            raise TypeError("uniform_: got %s twice" % name)
    values.update(keywords)
    low, high = values.get("from", 0.0), values.get("to", 1.0)
    if low > high:
        raise HarpError("uniform_: expects from <= to, got from=%r, to=%r" % (low, high))
    return _write(self, "uniform_", rand_like(self, generator=generator) * (high - low) + low)


def _get_data(self):
    return self.detach()


def _set_data(self, value):
    if not isinstance(value, Tensor):
        raise TypeError("data: expected a harp.Tensor, got %s" % _type_name(value))
    if tuple(value.shape) != tuple(self.shape) or value.dtype != self.dtype:
        raise HarpError("data: harp writes the new values into the tensor, so they "
                        "must have its shape and dtype: %s %s, got %s %s"
                        % (self.dtype.name, list(self.shape), value.dtype.name,
                           list(value.shape)))
    _write(self, "data", value)


_data = property(
    _get_data, _set_data,
    doc="The values as a tensor without a gradient that shares them (detach()); "
        "assigning a tensor of the same shape and dtype writes its values in "
        "place with copy_ (torch.Tensor.data).")
_is_cuda_property = property(_is_cuda, doc=_is_cuda.__doc__)


def _index_for_numpy(index):
    """`index` with harp tensors (and lists holding them) as NumPy arrays."""
    def convert(part):
        if isinstance(part, Tensor):
            return part.numpy()
        if isinstance(part, list):
            return np.asarray([p.item() if isinstance(p, Tensor) else p
                               for p in part])
        return part
    if isinstance(index, tuple):
        return tuple(convert(part) for part in index)
    return convert(index)


def __setitem__(self, index, value):
    """self[index] = value as torch's: ints, slices (with steps), None,
    ..., int lists and tensors, bool masks; `value` a number or a tensor
    broadcast to the indexed region and cast to self's dtype. A leaf is
    written in place (copy_: under no_grad where it requires grad); a
    computed tensor (harp.zeros(...), a result) is rebound to the new
    value, with the gradient flowing to both the old value and `value`
    (views taken before the write keep the old values)."""
    shape = tuple(self.shape)
    count = int(np.prod(shape, dtype=np.int64))
    try:
        positions = np.arange(count, dtype=np.int64).reshape(shape)[
            _index_for_numpy(index)]
    except (IndexError, TypeError, ValueError) as error:
        raise IndexError("__setitem__: index %r for a tensor of shape %s: %s"
                         % (index, list(shape), error)) from None
    region = positions.shape
    flat = positions.reshape(-1)
    if flat.size == 0:
        return
    if np.unique(flat).size != flat.size:
        raise HarpError("__setitem__: the index selects some elements more "
                        "than once (a tensor of shape %s)" % list(shape))
    if not isinstance(value, Tensor):
        if isinstance(value, numbers.Number):
            value = _harp.full(self.dtype, list(region), float(value)) \
                if not isinstance(value, complex) else \
                _harp.full_complex(self.dtype, list(region), value.real,
                                   value.imag)
        else:
            value = _harp.from_numpy(np.asarray(value), self.device)
    if value.dtype != self.dtype:
        value = value.to(self.dtype)
    try:
        value = value.broadcast_to(list(region))
    except HarpError:
        raise HarpError("__setitem__: a value of shape %s does not broadcast "
                        "to the indexed region's shape %s"
                        % (list(value.shape), list(region))) from None
    mask = np.zeros(count, dtype=bool)
    mask[flat] = True
    base = self.reshape(count)
    placed = _harp.scatter_add(
        _harp.full(self.dtype, [count], 0.0),
        _harp.from_numpy(flat, self.device), value.reshape(flat.size), 0, check=False)
    written = _harp.where(_harp.from_numpy(mask, self.device), placed,
                          base).reshape(*shape)
    if self.is_leaf:
        _write(self, "__setitem__", written)
    else:
        self._rebind(written)


def _is_advanced(part):
    return (isinstance(part, (list, np.ndarray)) or
            (isinstance(part, Tensor) and part.ndim > 0))


def _is_int_index(part):
    return ((isinstance(part, numbers.Integral) and not isinstance(part, bool)) or
            (isinstance(part, Tensor) and part.ndim == 0 and _kind(part.dtype) in (0, 1)
             and part.dtype != DType.bool))


def _index_values(part):
    values = part.numpy() if isinstance(part, Tensor) else np.asarray(part)
    if values.size == 0 and values.dtype.kind == "f":
        values = values.astype(np.int64)   # [] as torch reads it
    if values.dtype != bool and values.dtype.kind not in "iu":
        raise IndexError("an index list or tensor must hold integers or bools, got %s"
                         % values.dtype)
    return values


def _combined_getitem(self, native, parts):
    """Several advanced indices (torch's rules): ints select first, bool
    masks become the int arrays of where they hold; the arrays are broadcast
    together and pick one element of the dims they index each, as one
    index_select of those dims flattened. The picked dims replace the indexed
    ones where those are adjacent in the index (ints aside), and lead the
    result otherwise."""
    arrays, flat_parts = [], []
    for part in parts:
        if _is_advanced(part):
            values = _index_values(part)
            pieces = list(np.nonzero(values)) if values.dtype == bool else [values]
        elif _is_int_index(part):
            continue  # torch selects with ints first: they take no place below
        else:
            flat_parts.append(part)
            continue
        for piece in pieces:
            flat_parts.append(len(arrays))
            arrays.append(piece)
    where = [k for k, p in enumerate(flat_parts) if isinstance(p, int)]
    # The view of the basic parts, ints included, the arrays' dims kept.
    basic = []
    for part in parts:
        if _is_advanced(part):
            values = _index_values(part)
            basic += [slice(None)] * (values.ndim if values.dtype == bool else 1)
        else:
            basic.append(part)
    view = native(self, tuple(basic))
    # Each part but the Ellipsis stands for one dim of the view (None for
    # the dim it adds); the Ellipsis for the rest.
    consumed = builtins.sum(1 for p in flat_parts if p is not Ellipsis)
    dims, dim = [], 0
    for p in flat_parts:
        if isinstance(p, int):
            dims.append(dim)
            dim += 1
        elif p is Ellipsis:
            dim += view.ndim - consumed
        elif p is None or isinstance(p, slice):
            dim += 1
    sizes = [view.shape[d] for d in dims]
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                         "with shapes %s" % " ".join(str(list(a.shape)) for a in arrays)) from None
    wrapped = []
    for values, size in zip(arrays, sizes):
        if values.size and (values.min() < -size or values.max() >= size):
            raise IndexError("index %d is out of range for a dim of size %d"
                             % (values.max() if values.max() >= size else values.min(), size))
        wrapped.append(np.where(values < 0, values + size, values).astype(np.int64))
    batch = arrays[0].shape
    linear = (np.ravel_multi_index(tuple(w.reshape(-1) for w in wrapped), sizes)
              if int(np.prod(sizes)) else np.zeros(int(np.prod(batch)), np.int64))
    rest = [d for d in range(view.ndim) if d not in dims]
    moved = view.permute(dims + rest).reshape(int(np.prod(sizes)),
                                              *[view.shape[d] for d in rest])
    picked = select(moved, 0, linear.reshape(-1))
    picked = picked.reshape(*batch, *[view.shape[d] for d in rest])
    adjacent = where == list(range(where[0], where[-1] + 1))
    if adjacent and dims[0] > 0 and batch:
        nb = len(batch)
        order = list(range(nb, nb + dims[0])) + list(range(nb)) + \
            list(range(nb + dims[0], picked.ndim))
        picked = picked.permute(order)
    return picked


def _advanced_getitem(native):
    """Tensor.__getitem__ with torch's advanced indices on top of the native
    basic ones (ints, slices, None, ...): one int list, array or tensor
    (x[:, [-1], :], x[idx]) is an index_select along its dim, its shape in
    the dim's place; one bool mask (x[mask], x[:, m]) selects the elements
    of the dims it covers where it holds, as one dim. The basic parts are a
    view first."""
    def __getitem__(self, index):
        if isinstance(index, list) and builtins.any(
                p is None or p is Ellipsis or isinstance(p, (slice, list, tuple, np.ndarray, Tensor))
                for p in index):
            index = tuple(index)  # torch reads such a list as a tuple of indices
        parts = index if isinstance(index, tuple) else (index,)
        advanced = [k for k, part in enumerate(parts) if _is_advanced(part)]
        if not advanced:
            return native(self, index)
        if len(advanced) > 1:
            return _combined_getitem(self, native, parts)
        k = advanced[0]
        part = parts[k]
        values = part.numpy() if isinstance(part, Tensor) else np.asarray(part)
        if values.size == 0 and values.dtype.kind == "f":
            values = values.astype(np.int64)   # [] as torch reads it
        if values.dtype != bool and values.dtype.kind not in "iu":
            raise IndexError("an index list or tensor must hold integers or "
                             "bools, got %s" % values.dtype)
        covered = values.ndim if values.dtype == bool else 1
        # The dims of the basic view before the advanced part's.
        consumed = sum(covered if j == k else 1 for j, p in enumerate(parts)
                       if p is not None and p is not Ellipsis)
        dim = 0
        for p in parts[:k]:
            if p is Ellipsis:
                dim += self.ndim - consumed
            elif p is None or isinstance(p, slice):
                dim += 1
        basic = parts[:k] + (slice(None),) * covered + parts[k + 1:]
        view = native(self, basic)
        sizes = tuple(view.shape[dim:dim + covered])
        if values.dtype == bool:
            if values.shape != sizes:
                raise IndexError("a bool index of shape %s for dims of sizes "
                                 "%s" % (list(values.shape), list(sizes)))
            flat = np.flatnonzero(values)
            view = view.reshape(*view.shape[:dim], int(np.prod(sizes)),
                                *view.shape[dim + covered:])
            shape = (flat.size,)
        else:
            size = sizes[0]
            if values.size and (values.min() < -size or values.max() >= size):
                raise IndexError("index %d is out of range for a dim of size "
                                 "%d" % (values.max() if values.max() >= size
                                         else values.min(), size))
            flat = np.where(values < 0, values + size, values).reshape(-1)
            shape = values.shape
        picked = select(view, dim, flat)
        return picked.reshape(*view.shape[:dim], *shape,
                              *view.shape[dim + 1:])
    __getitem__.__doc__ = native.__doc__
    return __getitem__


def _in_place(self, op, value):
    """`value` as the tensor's new value: written with copy_ on a leaf, a
    new binding of the tensor otherwise (as __setitem__)."""
    if self.is_leaf:
        return _write(self, op, value)
    self._rebind(value)
    return self


def scatter(self, dim, index, src=None, value=None, *, reduce=None):
    """torch.Tensor.scatter (harp.scatter): src or value written at index."""
    return _scatter.scatter(self, dim, index, src, value, reduce=reduce)


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """scatter in place."""
    return _in_place(self, "scatter_", _scatter.scatter(self, dim, index, src, value,
                                                        reduce=reduce))


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """torch.Tensor.scatter_reduce (harp.scatter_reduce): src reduced into
    the positions index names ('sum', 'prod', 'mean', 'amax', 'amin')."""
    return _scatter.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """scatter_reduce in place."""
    return _in_place(self, "scatter_reduce_", _scatter.scatter_reduce(
        self, dim, index, src, reduce, include_self=include_self))


def scatter_add(self, dim, index, src):
    """torch.Tensor.scatter_add: src added at index (a new tensor)."""
    from . import scatter_add as function
    return function(self, dim, index, src)


def scatter_add_(self, dim, index, src):
    """scatter_add in place."""
    return _in_place(self, "scatter_add_", scatter_add(self, dim, index, src))


def index_add(self, dim, index, source, *, alpha=1):
    """torch.Tensor.index_add (harp.index_add)."""
    return _scatter.index_add(self, dim, index, source, alpha=alpha)


def index_add_(self, dim, index, source, *, alpha=1):
    """index_add in place."""
    return _in_place(self, "index_add_", _scatter.index_add(self, dim, index, source,
                                                            alpha=alpha))


def index_copy(self, dim, index, source):
    """torch.Tensor.index_copy (harp.index_copy)."""
    return _scatter.index_copy(self, dim, index, source)


def index_copy_(self, dim, index, source):
    """index_copy in place."""
    return _in_place(self, "index_copy_", _scatter.index_copy(self, dim, index, source))


def index_fill(self, dim, index, value):
    """torch.Tensor.index_fill (harp.index_fill)."""
    return _scatter.index_fill(self, dim, index, value)


def index_fill_(self, dim, index, value):
    """index_fill in place."""
    return _in_place(self, "index_fill_", _scatter.index_fill(self, dim, index, value))


def __float__(self):
    """float(t) of a one-element tensor (torch's), through item()."""
    return float(self.item())


def __int__(self):
    """int(t) of a one-element tensor (truncated, as torch's)."""
    return int(self.item())


def __complex__(self):
    """complex(t) of a one-element tensor."""
    return complex(self.item())


def __index__(self):
    """operator.index(t) of a one-element integer tensor (as a list index or
    a range bound), as torch's; float tensors raise TypeError."""
    if _kind(self.dtype) not in (0, 1):
        raise TypeError("only integer tensors of a single element can be converted to an "
                        "index, got %s" % self.dtype.name)
    return int(self.item())


def __format__(self, spec):
    """format(t, spec): a one-element tensor formats as its number
    ('{:.3f}'.format(loss)), as torch's; others as their repr with an
    empty spec."""
    if spec and self.numel() == 1:
        return format(self.item(), spec)
    if spec:
        raise TypeError("unsupported format string %r for a tensor of %d elements"
                        % (spec, self.numel()))
    return str(self)


def multinomial(self, num_samples, replacement=False, *, generator=None):
    """torch.Tensor.multinomial (harp.multinomial): category indices drawn
    from the rows' weights."""
    return _multinomial(self, num_samples, replacement, generator=generator)


def _augmented(op, inplace, compute):
    """`a op= b` as torch's: in place on a leaf (a parameter updated by hand
    under no_grad), a new tensor bound to the name otherwise (harp's
    computed tensors have no storage to write)."""
    def method(self, other):
        if self.is_leaf:
            return inplace(self, other)
        return compute(self, other)
    method.__name__ = op
    method.__doc__ = ("self %s other: in place on a leaf (through copy_), a new "
                      "tensor otherwise." % compute.__name__)
    return method


_METHODS = {
    "backward": _autograd._tensor_backward,
    "__iadd__": _augmented("__iadd__", add_, Tensor.__add__),
    "__isub__": _augmented("__isub__", sub_, Tensor.__sub__),
    "__imul__": _augmented("__imul__", mul_, Tensor.__mul__),
    "__itruediv__": _augmented("__itruediv__", div_, Tensor.__truediv__),
    "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg,
    "lt": lt, "le": le, "gt": gt, "ge": ge, "mm": mm, "bmm": bmm,
    "amax": amax, "amin": amin, "all": all, "any": any,
    "t": t, "movedim": movedim, "narrow": narrow, "unfold": unfold, "view_as": view_as,
    "reshape_as": reshape_as, "expand_as": expand_as, "gather": gather,
    "clone": clone, "nelement": nelement, "element_size": element_size,
    "type": type, "type_as": type_as, "cpu": cpu, "cuda": cuda,
    "is_cuda": _is_cuda_property, "get_device": get_device,
    "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty,
    "new_full": new_full, "new_tensor": new_tensor,
    "fill_": fill_, "zero_": zero_, "add_": add_, "sub_": sub_, "mul_": mul_,
    "div_": div_, "clamp_": clamp_, "masked_fill_": masked_fill_,
    "normal_": normal_, "uniform_": uniform_, "data": _data,
    "diagonal": diagonal, "tile": tile, "__setitem__": __setitem__,
    "scatter": scatter, "scatter_": scatter_, "scatter_add": scatter_add,
    "scatter_add_": scatter_add_, "scatter_reduce": scatter_reduce,
    "scatter_reduce_": scatter_reduce_, "index_add": index_add, "index_add_": index_add_,
    "index_copy": index_copy, "index_copy_": index_copy_, "index_fill": index_fill,
    "index_fill_": index_fill_,
    "__float__": __float__, "__int__": __int__, "__complex__": __complex__,
    "__index__": __index__, "__format__": __format__,
    "multinomial": multinomial,
    "logaddexp": _extra.logaddexp, "lerp": _extra.lerp, "hypot": _extra.hypot,
    "trace": _extra.trace, "addmm": _extra.addmm, "addmv": _extra.addmv,
    "baddbmm": _extra.baddbmm, "nan_to_num": _extra.nan_to_num, "isfinite": _extra.isfinite,
    "cross": _extra.cross, "masked_select": _extra.masked_select, "nonzero": _extra.nonzero,
    "sort": _sort.sort, "argsort": _sort.argsort, "msort": _sort.msort, "topk": _sort.topk,
}

# harp functions that torch also has as Tensor methods: `x.name(*args)` is
# `harp.name(x, *args)` (test_api.py checks the list against torch's).
_FUNCTION_METHODS = [
    "sinh", "cosh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "log10",
    "deg2rad", "rad2deg", "sinc", "xlogy", "heaviside", "copysign", "signbit", "isposinf",
    "isneginf", "isreal", "positive", "logaddexp2", "float_power", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "clamp_min", "clamp_max", "addcmul", "addcdiv", "true_divide", "mv",
    "vdot", "inner", "ger", "ravel", "fliplr", "flipud", "rot90", "select",
    "split_with_sizes", "tensor_split", "hsplit", "vsplit", "dsplit", "unflatten", "diag",
    "diag_embed", "diff", "count_nonzero", "nansum", "nanmean", "aminmax",
    "divide", "floor_divide", "multiply", "negative", "subtract", "bernoulli", "dot",
    "outer", "erfc", "fmax", "fmin", "logit", "sgn", "ldexp", "isclose", "allclose",
    "equal", "addr", "addbmm", "kron", "dist", "cov", "corrcoef", "diagflat",
    "bitwise_left_shift", "bitwise_right_shift", "conj_physical", "diagonal_scatter",
    "index_put", "narrow_copy", "put", "renorm", "resolve_conj", "resolve_neg",
    "select_scatter", "slice_scatter", "take", "cummax", "cummin", "kthvalue",
    "logcumsumexp", "median", "nanmedian", "nanquantile", "quantile", "argwhere",
    "masked_scatter", "index_reduce", "as_strided", "erfinv",
]


def _forwarding(name):
    """Tensor.name(self, ...) as harp.name(self, ...)."""
    import harp
    function = getattr(harp, name)

    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = function.__doc__
    return method


def where(self, condition, y):
    """`self` where `condition` holds, else `y` (torch.Tensor.where:
    harp.where(condition, self, y))."""
    from . import where as _where
    return _where(condition, self, y)


def _matrix_transpose(self):
    """The last two dims swapped (torch's Tensor.mT)."""
    if self.ndim == 1:
        raise HarpError("mT: needs at least 2 dims (or 0), got 1")
    return self if self.ndim == 0 else self.transpose(-2, -1)


def _adjoint(self):
    """The conjugate transpose of the last two dims (torch's Tensor.mH)."""
    return _matrix_transpose(self).conj()


def _hermitian(self):
    """The conjugate transpose of a matrix (torch's Tensor.H: 0-d and 2-D
    tensors only)."""
    if self.ndim not in (0, 2):
        raise HarpError("H: needs a 0-d or 2-D tensor, got %d dims" % self.ndim)
    return self if self.ndim == 0 else self.transpose(0, 1).conj()


def sum_to_size(self, *size):
    """The tensor summed over its broadcast dims down to `size` (which it
    must expand to) (torch's Tensor.sum_to_size)."""
    shape = [int(n) for n in (size[0] if len(size) == 1 and not isinstance(
        size[0], int) else size)]
    current = list(self.shape)
    if len(shape) > len(current) or builtins.any(
            n != 1 and n != m for n, m in zip(shape[::-1], current[::-1])):
        raise HarpError("sum_to_size: size %s is not expandable to the tensor's %s"
                        % (shape, current))
    lead = len(current) - len(shape)
    x = self.sum(list(range(lead))) if lead else self
    kept = [d for d, (n, m) in enumerate(zip(shape, current[lead:])) if n == 1 and m != 1]
    return x.sum(kept, True) if kept else x


def cfloat(self):
    """The tensor as complex64 (torch's Tensor.cfloat)."""
    return self.to(DType.complex64)


def cdouble(self):
    """The tensor as complex128 (torch's Tensor.cdouble)."""
    return self.to(DType.complex128)


_CONVERSIONS = {"float": "float32", "double": "float64", "int": "int32",
                "long": "int64", "bool": "bool_"}

# torch's conversions to the narrow integer types.
_NEW_CONVERSIONS = {"short": "int16", "char": "int8", "byte": "uint8"}


def _with_dtype(name, native):
    """Tensor.softmax / log_softmax with torch's dtype= (the input cast
    first) over the native method."""
    def method(self, dim=None, dtype=None, *, axis=None):
        if dtype is not None:
            self = self.to(dtype)
        return native(self, axis, dim=dim)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = native.__doc__
    return method


_installed = False


def install_forwarding():
    """Adds the methods of _FUNCTION_METHODS (once harp's functions are all
    defined: harp/__init__.py calls this last)."""
    for name in _FUNCTION_METHODS:
        if name not in vars(Tensor):
            setattr(Tensor, name, _forwarding(name))


def install():
    """Adds the methods to harp.Tensor (once): each where the native class
    has no member of that name, and the memory_format-taking conversions."""
    global _installed
    if _installed:
        return
    for name, member in _METHODS.items():
        if name not in vars(Tensor):
            setattr(Tensor, name, member)
    for name, member in (("where", where), ("sum_to_size", sum_to_size),
                         ("__rdiv__", vars(Tensor)["__rtruediv__"]),
                         ("cfloat", cfloat), ("cdouble", cdouble)):
        if name not in vars(Tensor):
            setattr(Tensor, name, member)
    for name, getter in (("mT", _matrix_transpose), ("mH", _adjoint), ("H", _hermitian)):
        if name not in vars(Tensor):
            setattr(Tensor, name, property(getter, doc=getter.__doc__))
    Tensor.__getitem__ = _advanced_getitem(vars(Tensor)["__getitem__"])
    for name, dtype in _CONVERSIONS.items():
        setattr(Tensor, name, _converter(name, dtype, vars(Tensor)[name]))
    for name, dtype in _NEW_CONVERSIONS.items():
        setattr(Tensor, name, _converter(name, dtype, lambda self, d=dtype: self.to(getattr(_harp.DType, d))))
    native_softmax, native_log_softmax = vars(Tensor)["softmax"], vars(Tensor)["log_softmax"]
    Tensor.softmax = _with_dtype("softmax", native_softmax)
    Tensor.log_softmax = _with_dtype("log_softmax", native_log_softmax)
    native_clamp = vars(Tensor)["clamp"]
    Tensor.clamp = _clamp_method(native_clamp)
    Tensor.clip = _clamp_method(native_clamp)
    _installed = True
