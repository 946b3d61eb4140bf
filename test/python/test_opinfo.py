"""Every op the Python API names, checked against PyTorch on PyTorch's own
sample inputs (the OpInfo database shipped in Debian's python3-torch):
forward values in f32 and f64, and the gradients of sum(op(...) * w) w.r.t.
every float input in f64 (and f32 at f32 tolerances).

Each op of OPS maps an OpInfo name to an adapter that calls harp's API on a
sample (tensors already converted); an adapter raises Unsupported for a
sample whose arguments harp does not take (a keyword it lacks, a dtype
argument, an out= tensor). An op whose samples are all unsupported fails:
the table must say so in SKIPPED instead, with the reason. docs/OpInfo.md is
the table of both, written from this file."""

import sys
import types
import unittest
import zlib

import numpy as np
import pytest
import torch

import harp

# torch.testing._internal imports `expecttest`, which Debian does not ship;
# nothing here uses it beyond the import.
if "expecttest" not in sys.modules:
    _stand_in = types.ModuleType("expecttest")
    _stand_in.TestCase = unittest.TestCase
    _stand_in.ACCEPT = False
    sys.modules["expecttest"] = _stand_in
import warnings  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402


class Unsupported(Exception):
    """harp's API does not take this sample's arguments."""


def _no_kwargs(kwargs, allowed=()):
    extra = set(kwargs) - set(allowed)
    if extra:
        raise Unsupported("keywords %s" % sorted(extra))


def _dims(dim, rank):
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % max(rank, 1) for d in dims]


def _binary(fn):
    def call(x, *args, **kwargs):
        _no_kwargs(kwargs)
        if len(args) != 1:
            raise Unsupported("arguments %r" % (args,))
        return fn(x, args[0])
    return call


def _unary(method):
    def call(x, *args, **kwargs):
        _no_kwargs(kwargs)
        if args:
            raise Unsupported("arguments %r" % (args,))
        return getattr(x, method)()
    return call


def _reduction(kind):
    def call(x, *args, **kwargs):
        _no_kwargs(kwargs, ("dim", "keepdim"))
        dim = kwargs.get("dim", args[0] if args else None)
        if len(args) > 1:
            raise Unsupported("arguments %r" % (args,))
        if isinstance(dim, (list, tuple)) and len(dim) == 0:
            dim = None  # torch: dim=() reduces everything
        rank = len(x.shape)
        axes = _dims(dim, rank)
        if rank == 0:
            axes = None
        return getattr(x, kind)(axes, kwargs.get("keepdim", False))
    return call


def _amax_amin(kind):
    def call(x, *args, **kwargs):
        _no_kwargs(kwargs, ("dim", "keepdim"))
        dim = kwargs.get("dim", args[0] if args else ())
        keepdim = kwargs.get("keepdim", args[1] if len(args) > 1 else False)
        if isinstance(dim, (list, tuple)) and len(dim) == 0:
            dim = None
        rank = len(x.shape)
        return getattr(x, kind)(axis=None if rank == 0 else _dims(dim, rank),
                                keepdim=keepdim)
    return call


def _softmax(x, *args, **kwargs):
    _no_kwargs(kwargs, ("dim",))
    dim = kwargs.get("dim", args[0] if args else None)
    if len(args) > 1 or dim is None:
        raise Unsupported("arguments %r" % (args,))
    if len(x.shape) == 0:
        raise Unsupported("softmax of a 0-d tensor")
    return x.softmax(dim % len(x.shape))


def _cat(tensors, *args, **kwargs):
    _no_kwargs(kwargs, ("dim",))
    dim = kwargs.get("dim", args[0] if args else 0)
    tensors = list(tensors)
    rank = max(len(t.shape) for t in tensors)
    if any(len(t.shape) != rank for t in tensors):
        raise Unsupported("legacy empty 1-d operands of cat")
    return harp.concat(tensors, dim % rank)


def _transpose(x, *args, **kwargs):
    _no_kwargs(kwargs)
    if len(args) != 2:
        raise Unsupported("arguments %r" % (args,))
    if len(x.shape) == 0:
        return x
    return x.transpose(*args)


def _permute(x, *args, **kwargs):
    _no_kwargs(kwargs)
    perm = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    rank = len(x.shape)
    return x.permute([p % rank for p in perm]) if rank else x


def _reshape(x, *args, **kwargs):
    _no_kwargs(kwargs)
    shape = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    return x.reshape(list(shape))


def _flip(x, *args, **kwargs):
    _no_kwargs(kwargs, ("dims",))
    dims = kwargs.get("dims", args[0] if len(args) == 1 else args)
    rank = len(x.shape)
    if rank == 0:
        return x
    return x.flip([d % rank for d in dims])


def _squeeze(x, *args, **kwargs):
    _no_kwargs(kwargs)
    if len(args) != 1 or not isinstance(args[0], int):
        raise Unsupported("squeeze without a dim")
    rank = len(x.shape)
    if rank == 0:
        return x
    dim = args[0] % rank
    if x.shape[dim] != 1:
        return x  # torch: squeezing a dim that is not 1 is a no-op
    return x.squeeze(dim)


def _unsqueeze(x, *args, **kwargs):
    _no_kwargs(kwargs)
    return x.unsqueeze(args[0])


def _flatten(x, *args, **kwargs):
    _no_kwargs(kwargs)
    if args:
        raise Unsupported("start_dim/end_dim")
    return x.flatten()


def _matmul(x, *args, **kwargs):
    _no_kwargs(kwargs)
    other = args[0]
    if len(x.shape) < 2 or len(other.shape) < 2:
        raise Unsupported("1-D operands of matmul")
    if len(x.shape) != len(other.shape) or x.shape[:-2] != other.shape[:-2]:
        raise Unsupported("broadcast batch dims of matmul")
    return x @ other


def _gather(x, *args, **kwargs):
    _no_kwargs(kwargs)
    dim, index = args[0], args[1]
    if len(x.shape) == 0:
        raise Unsupported("gather on a 0-d tensor")
    if index.dtype not in (harp.int32, harp.int64):
        raise Unsupported("a %s index (harp takes i32 and i64)" % index.dtype.name)
    return harp.gather(x, index, dim % len(x.shape))


def _scatter_add(x, *args, **kwargs):
    _no_kwargs(kwargs)
    dim, index, src = args
    if len(x.shape) == 0:
        raise Unsupported("scatter_add on a 0-d tensor")
    return harp.scatter_add(x, index, src, dim % len(x.shape))


def _pair(v):
    return list(v) if isinstance(v, (list, tuple)) else [v, v]


def _conv2d(x, *args, **kwargs):
    _no_kwargs(kwargs, ("stride", "padding", "dilation", "groups", "bias"))
    names = ["weight", "bias", "stride", "padding", "dilation", "groups"]
    values = dict(zip(names, args))
    values.update(kwargs)
    if values.get("bias") is not None or values.get("groups", 1) != 1:
        raise Unsupported("bias or groups")
    padding = values.get("padding", 0)
    if isinstance(padding, str):
        raise Unsupported("padding=%r" % padding)
    if len(x.shape) != 4:
        raise Unsupported("unbatched input")
    return harp.conv(x, values["weight"], _pair(values.get("stride", 1)),
                     _pair(padding), _pair(values.get("dilation", 1)))


def _unfold(x, *args, **kwargs):
    # torch's im2col layout, (N, C*kh*kw, L), from harp's zero-copy window
    # view [N, C, oh, ow, kh, kw] of the padded input.
    _no_kwargs(kwargs, ("kernel_size", "dilation", "padding", "stride"))
    names = ["kernel_size", "dilation", "padding", "stride"]
    values = dict(zip(names, args))
    values.update(kwargs)
    if len(x.shape) != 4:
        raise Unsupported("unbatched input")
    kernel, padding = _pair(values["kernel_size"]), _pair(values.get("padding", 0))
    if any(padding):
        x = x.pad([0, 0] + padding, [0, 0] + padding, 0.0)
    windows = harp.unfold(x, kernel, _pair(values.get("stride", 1)),
                          _pair(values.get("dilation", 1)))
    n, c, oh, ow, kh, kw = windows.shape
    return windows.permute([0, 1, 4, 5, 2, 3]).reshape([n, c * kh * kw, oh * ow])


def _pow(x, *args, **kwargs):
    _no_kwargs(kwargs)
    other = args[0]
    if not isinstance(other, harp.Tensor):
        raise Unsupported("a Python number as the exponent")
    return x ** other


# OpInfo name -> (adapter, whether gradients are checked).
OPS = {
    "add": (_binary(lambda a, b: a + b), True),
    "sub": (_binary(lambda a, b: a - b), True),
    "mul": (_binary(lambda a, b: a * b), True),
    "div": (_binary(lambda a, b: a / b), True),
    "true_divide": (_binary(lambda a, b: a / b), True),
    "maximum": (_binary(lambda a, b: a.maximum(b)), True),
    "minimum": (_binary(lambda a, b: a.minimum(b)), True),
    "pow": (_pow, True),
    "neg": (_unary("__neg__"), True),
    "exp": (_unary("exp"), True),
    "exp2": (_unary("exp2"), True),
    "log": (_unary("log"), True),
    "log2": (_unary("log2"), True),
    "sqrt": (_unary("sqrt"), True),
    "sin": (_unary("sin"), True),
    "cos": (_unary("cos"), True),
    "tanh": (_unary("tanh"), True),
    "sigmoid": (_unary("sigmoid"), True),
    "nn.functional.relu": (_unary("relu"), True),
    "abs": (_unary("abs"), True),
    "floor": (_unary("floor"), True),
    "reciprocal": (_unary("recip"), True),
    "sum": (_reduction("sum"), True),
    "prod": (_reduction("prod"), True),
    "mean": (_reduction("mean"), True),
    "amax": (_amax_amin("max"), True),
    "amin": (_amax_amin("min"), True),
    "matmul": (_matmul, True),
    "softmax": (_softmax, True),
    "cat": (_cat, True),
    "transpose": (_transpose, True),
    "permute": (_permute, True),
    "reshape": (_reshape, True),
    "flip": (_flip, True),
    "squeeze": (_squeeze, True),
    "unsqueeze": (_unsqueeze, True),
    "flatten": (_flatten, True),
    "gather": (_gather, True),
    "scatter_add": (_scatter_add, True),
    "nn.functional.conv2d": (_conv2d, True),
    "nn.functional.unfold": (_unfold, True),
    "lt": (_binary(lambda a, b: a < b), False),
    "le": (_binary(lambda a, b: a <= b), False),
    "gt": (_binary(lambda a, b: a > b), False),
    "ge": (_binary(lambda a, b: a >= b), False),
    "eq": (_binary(lambda a, b: a.eq(b)), False),
    "ne": (_binary(lambda a, b: a.ne(b)), False),
}

# Ops the Python API names that are not checked here, and why.
SKIPPED = {
    "nn.functional.fold": "no OpInfo entry in torch 1.13",
    "nn.functional.interpolate": "harp names nearest and bilinear only, with an "
                                 "output size; checked in test_harp.py",
    "expand": "checked through broadcasting in every binary op's samples",
    "contiguous": "identity on values",
    "max": "its reductions are amax's samples, checked as amax (the indices of "
           "max(dim) in test_losses_reductions.py)",
    "min": "its reductions are amin's samples, checked as amin (the indices of "
           "min(dim) in test_losses_reductions.py)",
}

_BY_NAME = {}
for _op in op_db:
    _BY_NAME.setdefault(_op.name, _op)

DTYPES = {torch.float32: (np.float32, harp.float32), torch.float64: (np.float64, harp.float64)}
# Forward: torch.testing.assert_close's float tolerances, widened for f32
# where harp sums in another order (reductions, matmul, conv).
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-7, 1e-7)}
GRAD_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-7, 1e-7)}
# An f32 result may also differ from torch's by this many times torch's own
# largest error against the same op in f64 on the sample: a sum whose terms
# cancel is as far from the exact value in harp's order as in torch's, and
# no fixed tolerance bounds that.
F32_SLACK = 4.0


def _to_harp(value, hdtype):
    if isinstance(value, torch.Tensor):
        array = value.detach().numpy()
        if array.dtype.kind == "f":
            return harp.tensor(array, hdtype)
        return harp.tensor(array)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_harp(v, hdtype) for v in value)
    return value


def _leaves(value, out):
    """The float torch tensors in a sample's arguments, in order."""
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point and value.requires_grad:
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, out)


def _harp_leaves(value, out):
    if isinstance(value, harp.Tensor):
        if value.dtype in (harp.float32, harp.float64):
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _harp_leaves(v, out)


def _f64(value):
    """A sample's arguments with float tensors as f64 copies (a copy of a
    tensor that requires grad requires grad)."""
    if isinstance(value, torch.Tensor):
        if not value.dtype.is_floating_point:
            return value
        return value.detach().double().requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(_f64(v) for v in value)
    if isinstance(value, dict):
        return {k: _f64(v) for k, v in value.items()}
    return value


def _torch_error(expected, reference):
    """torch's largest error on the sample against the f64 reference, over
    the entries where both are finite."""
    if reference is None:
        return 0.0
    expected = np.asarray(expected, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    finite = np.isfinite(expected) & np.isfinite(reference)
    if not finite.any():
        return 0.0
    return float(np.max(np.abs(expected[finite] - reference[finite])))


def _close(actual, expected, tol, what, reference=None):
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if expected.dtype == np.bool_:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    rtol, atol = tol
    atol += F32_SLACK * _torch_error(expected, reference)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=what)


def _run_sample(name, adapter, grads, sample, tdtype):
    np_dtype, hdtype = DTYPES[tdtype]
    inputs = [sample.input] + list(sample.args)
    harp_input = _to_harp(sample.input, hdtype)
    harp_args = [_to_harp(a, hdtype) for a in sample.args]
    harp_kwargs = {k: _to_harp(v, hdtype) for k, v in sample.kwargs.items()}
    out = adapter(harp_input, *harp_args, **harp_kwargs)
    op = _BY_NAME[name]
    with torch.no_grad():
        expected = op(sample.input, *sample.args, **sample.kwargs)
    if isinstance(expected, (tuple, list)):
        raise Unsupported("several results")
    reference = None
    if tdtype == torch.float32 and expected.dtype.is_floating_point:
        inputs64 = _f64(inputs)
        with torch.no_grad():
            reference = op(*inputs64, **_f64(sample.kwargs)).numpy()
    _close(out.numpy(), expected.detach().numpy(), TOL[tdtype], "%s forward" % name, reference)
    if not grads or not expected.dtype.is_floating_point:
        return
    t_leaves, h_leaves = [], []
    _leaves(inputs, t_leaves)
    _harp_leaves([harp_input] + harp_args, h_leaves)
    if not t_leaves or len(t_leaves) != len(h_leaves):
        return
    if len({id(t) for t in t_leaves}) != len(t_leaves):
        raise Unsupported("one tensor passed twice")
    for h in h_leaves:
        h.requires_grad = True
    weight = np.random.default_rng(7).uniform(0.5, 1.5, size=tuple(expected.shape))
    out = adapter(harp_input, *harp_args, **harp_kwargs)
    (out * harp.tensor(weight.astype(np_dtype))).sum().backward()
    t_result = op(sample.input, *sample.args, **sample.kwargs)
    (t_result * torch.tensor(weight, dtype=tdtype)).sum().backward()
    references = [None] * len(t_leaves)
    if reference is not None:
        leaves64 = []
        _leaves(inputs64, leaves64)
        (op(*inputs64, **_f64(sample.kwargs)) * torch.tensor(weight)).sum().backward()
        references = [t.grad.numpy() if t.grad is not None else np.zeros(tuple(t.shape))
                      for t in leaves64]
    for i, (t, h) in enumerate(zip(t_leaves, h_leaves)):
        want = t.grad if t.grad is not None else torch.zeros_like(t)
        _close(h.grad.numpy(), want.numpy(), GRAD_TOL[tdtype], "%s gradient %d" % (name, i),
               references[i])


@pytest.mark.parametrize("tdtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_opinfo_samples(name, tdtype):
    adapter, grads = OPS[name]
    assert name in _BY_NAME, "%s has no OpInfo entry" % name
    op = _BY_NAME[name]
    if tdtype not in op.supported_dtypes("cpu"):
        pytest.skip("torch has no %s %s" % (name, tdtype))
    requires_grad = grads and op.supports_autograd
    # The samples are random: seed them per test, so a failure repeats.
    torch.manual_seed(zlib.crc32(("%s-%s" % (name, tdtype)).encode()))
    ran, unsupported = 0, []
    for sample in op.sample_inputs("cpu", tdtype, requires_grad=requires_grad):
        try:
            _run_sample(name, adapter, requires_grad, sample, tdtype)
            ran += 1
        except Unsupported as why:
            unsupported.append(str(why))
    assert ran > 0, "no sample of %s runs (%s); list it in SKIPPED" % (name, unsupported)


def test_skipped_ops_are_named():
    # Every skip names an op and a reason; none is also checked.
    for name, why in SKIPPED.items():
        assert why and name not in OPS
