"""harp: an MLIR-based tensor compiler.

    import numpy as np, harp
    x = harp.tensor(np.ones((2, 3), np.float32))
    y = (x * 2 + 1).sum(axis=1)      # builds harp IR lazily
    y.numpy()                         # compiles (cached) and runs: [9., 9.]

Tensors are handles to a lazy graph; `numpy()` / `realize()` compile it with
harp's JIT and run it. `backward()` differentiates with the harp-autodiff
pass. `harp.ir` parses, prints, transforms and runs harp IR given as text.
"""

import numpy as _np

from . import _harp
from ._harp import DType, HarpError, get_cpu, ir, promote, set_cpu  # noqa: F401

Tensor = _harp.Tensor

bool_ = DType.bool
int8, int16, int32, int64 = DType.int8, DType.int16, DType.int32, DType.int64
uint8, uint16, uint32, uint64 = DType.uint8, DType.uint16, DType.uint32, DType.uint64
float32, float64 = DType.float32, DType.float64

_NUMPY = {DType.bool: _np.bool_, DType.int8: _np.int8, DType.int16: _np.int16,
          DType.int32: _np.int32, DType.int64: _np.int64, DType.uint8: _np.uint8,
          DType.uint16: _np.uint16, DType.uint32: _np.uint32, DType.uint64: _np.uint64,
          DType.float32: _np.float32, DType.float64: _np.float64}


def tensor(data, dtype=None, requires_grad=False, device="cpu"):
    """A leaf tensor holding a copy of `data` (array-like), on `device`
    ("cpu" or "cuda"; "cuda" raises HarpError where no GPU can be used)."""
    array = _np.asarray(data)
    if dtype is not None:
        array = array.astype(_NUMPY[dtype])
    elif array.dtype == _np.float64 and not isinstance(data, _np.ndarray):
        array = array.astype(_np.float32)  # Python floats: float32, as torch
    result = _harp.from_numpy(array, device)
    if requires_grad:
        result.requires_grad = True
    return result


def zeros(shape, dtype=float32):
    return _harp.full(dtype, list(shape), 0.0)


def ones(shape, dtype=float32):
    return _harp.full(dtype, list(shape), 1.0)


def full(shape, value, dtype=float32):
    return _harp.full(dtype, list(shape), float(value))


def arange(count, start=0, step=1, dtype=int64):
    return _harp.arange(dtype, count, float(start), float(step))


def rand(shape, seed=0, dtype=float32):
    return _harp.rand(dtype, list(shape), seed)


def matmul(a, b):
    return a @ b


def concat(tensors, dim=0):
    return _harp.concat(list(tensors), dim)


def softmax(x, axis=-1):
    return x.softmax(axis)


conv = _harp.conv
gather = _harp.gather
scatter_add = _harp.scatter_add
unfold = _harp.unfold
fold = _harp.fold
interpolate_nearest = _harp.interpolate_nearest
interpolate_linear = _harp.interpolate_linear


# Methods written in Python over the native ones.
for _name in ["exp", "log", "log2", "exp2", "sqrt", "sin", "cos", "tanh",
              "sigmoid", "relu", "abs", "floor", "recip"]:
    def _method(self, _op=_name):
        return self.unary(_op)
    setattr(Tensor, _name, _method)

for _kind in ["sum", "prod", "max", "min", "mean"]:
    def _reduce(self, axis=None, keepdim=False, _kind=_kind):
        return self.reduce(_kind, axis, keepdim)
    setattr(Tensor, _kind, _reduce)


def _transpose(self, a=-2, b=-1):
    rank = len(self.shape)
    a, b = a % rank, b % rank
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return self.permute(perm)


def _squeeze(self, axis):
    shape = list(self.shape)
    if shape[axis] != 1:
        raise HarpError("squeeze: dim %d has size %d, not 1" % (axis, shape[axis]))
    del shape[axis]
    return self.reshape(shape)


def _unsqueeze(self, axis):
    shape = list(self.shape)
    shape.insert(axis % (len(shape) + 1), 1)
    return self.reshape(shape)


def _getitem(self, key):
    """Integers and slices (with steps; negative steps flip)."""
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) > len(self.shape):
        raise IndexError("too many indices for a tensor of rank %d" % len(self.shape))
    out, drop = self, []
    for dim, k in enumerate(key):
        size = self.shape[dim]
        if isinstance(k, int):
            if not -size <= k < size:
                raise IndexError("index %d is out of range for dim %d of size %d"
                                 % (k, dim, size))
            k %= size
            out = out.slice(dim, k, k + 1, 1)
            drop.append(dim)
        elif isinstance(k, slice):
            start, stop, step = k.indices(size)
            if step < 0:
                out = out.flip([dim])
                start, stop, step = size - 1 - start, size - 1 - stop, -step
            out = out.slice(dim, start, stop, step)
        else:
            raise TypeError("harp tensors take integer and slice indices")
    if drop:
        out = out.reshape([n for d, n in enumerate(out.shape) if d not in drop])
    return out


def _repr(self):
    return "harp.Tensor(%s, dtype=%s)" % (list(self.shape), self.dtype.name)


Tensor.transpose = _transpose
Tensor.T = property(lambda self: _transpose(self))
Tensor.squeeze = _squeeze
Tensor.unsqueeze = _unsqueeze
Tensor.flatten = lambda self: self.reshape([-1])
Tensor.__getitem__ = _getitem
Tensor.__repr__ = _repr
Tensor.__array__ = lambda self, dtype=None: self.numpy() if dtype is None \
    else self.numpy().astype(dtype)
Tensor.item = lambda self: self.numpy().item()
Tensor.cast = Tensor.astype
