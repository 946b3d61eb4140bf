"""PyTorch's OpInfo samples through harp: every op of PyTorch's OpInfo
database (Debian's python3-torch) that harp names, called as a PyTorch user
calls it, on torch's own sample inputs. Forward values, result shapes and
dtypes in f32, f64 and int64 against torch's, and the gradients of
sum(op(...) * w) w.r.t. every input that requires grad.

Nothing here adapts a sample to harp. An op is called the way OpInfo calls
it: `harp.<name>` (`harp.nn.functional.<name>`, ...) when harp names the
function, the method `Tensor.<name>` otherwise; an OpInfo op written as a
lambda over `torch` (`torch.where(condition, self, other)`,
`x.new_zeros(...)`) runs with `torch` bound to `harp`. A sample that harp
does not take must raise an exception, and the op's entry in NOT_TAKEN must
name that exception's message with the reason; any other exception, and any
wrong value, shape or dtype, fails. NOT_NAMED lists the ops harp does not
name; docs/OpInfo.md is the table of all of it (utils/opinfo-table.py).

Under a CPU profile (HARP_CPU) a third of each op's samples run, a different
third per profile (at most PROFILE_SAMPLES of it, spread over it), so every
sample's code runs natively, and under one vector width more unless its op
has over 3 x PROFILE_SAMPLES samples, without tripling the time. Samples are
computed GROUP at a time (one backward(), which computes their results too,
then one harp.realize for what it left), each compared on its own
(docs/Testing.md)."""

import os
import re
import sys
import types
import unittest
import warnings
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

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402


def key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


OPINFOS = {}
for _op in op_db:
    OPINFOS.setdefault(key(_op), _op)

# Ops whose results are random or uninitialized: their shapes and dtypes are
# compared, not their values (test_random.py checks the distributions).
RANDOM = {"bernoulli", "multinomial", "normal", "normal.number_mean", "rand_like", "randint_like",
          "randn", "randn_like", "uniform", "nn.functional.dropout", "new_empty", "empty_like",
          "empty", "nn.functional.rrelu", "nn.functional.feature_alpha_dropout.with_train",
          "nn.functional.dropout2d", "nn.functional.dropout3d",
          "nn.functional.feature_alpha_dropout.without_train"}

# Ops with a result of indices into ties: integer samples tie, and torch
# picks among equal entries in an order it does not define, so their index
# results are compared on float samples only (whose entries are distinct).
TIE_INDICES = {"topk", "sort", "argsort", "msort", "kthvalue", "mode", "median", "nanmedian",
               "max.reduction_with_dim", "min.reduction_with_dim", "argmax", "argmin",
               "cummax", "cummin"}

# Ops whose torch implementation drops the gradient of some tensor
# arguments: only the sample's input is differentiated. (`Tensor.__rpow__`
# copies a tensor base with torch.tensor(), which detaches it.)
INPUT_GRAD_ONLY = {"__rpow__"}

# Ops whose torch gradient is wrong, and the torch function whose gradient
# is the reference instead: torch 1.13's sgn backward returns uninitialized
# memory for real tensors, where sgn is sign.
GRAD_REFERENCE = {"sgn": torch.sign}

# Samples harp does not take: op -> [(regex on the exception's message, why)].
# A sample of the op that raises a matching exception counts as not taken;
# every other exception fails.
_FLOAT_ONLY = [(r"input must be f32 or f64, got i64",
                "integer convolution, pooling and linear layers (harp computes them in floats)")]
NOT_TAKEN = {
    "nn.functional.conv1d": _FLOAT_ONLY, "nn.functional.conv2d": _FLOAT_ONLY,
    "nn.functional.conv_transpose1d": _FLOAT_ONLY, "nn.functional.conv_transpose2d": _FLOAT_ONLY,
    "nn.functional.conv_transpose3d": _FLOAT_ONLY, "nn.functional.avg_pool1d": _FLOAT_ONLY,
    "nn.functional.avg_pool2d": _FLOAT_ONLY, "nn.functional.avg_pool3d": _FLOAT_ONLY,
    "nn.functional.linear": [(r"linear: input must be f32 or f64, got i64",
                              "integer linear layers (harp computes them in floats)")],
    "nn.functional.batch_norm": [(r"batch_norm: expected input \[N, C, \.\.\.\], got \[0\]",
                                  "a 1-d empty input (harp needs [N, C, ...])")],
    "linspace": [(r"linspace: dtype must be a float type",
                  "integer dtypes (torch's integer linspace rounds as its kernel does)")],
    "logspace": [(r"logspace: dtype must be a float type",
                  "integer dtypes (torch's integer logspace rounds as its kernel does)")],
    "norm.nuc": [(r"p must be a number or 'fro', got 'nuc'",
                  "the nuclear norm (a singular value decomposition; harp has none)")],
}
_SVD = [(r"needs singular values",
         "the nuclear and spectral norms (ord 'nuc', 2, -2: singular values; harp has no SVD)")]
NOT_TAKEN["nn.functional.local_response_norm"] = _FLOAT_ONLY
NOT_TAKEN["fill"] = [(r"backward: no tensor in the graph requires a gradient",
                      "OpInfo's fill is `fill_` under no_grad on a product that requires grad: "
                      "torch differentiates the product's old graph, in harp what no_grad "
                      "writes is a constant (harp.fill itself differentiates: test_numeric.py)")]
NOT_TAKEN.update({"linalg.matrix_norm": _SVD, "linalg.norm": _SVD,
                  "linalg.norm.subgradients_at_zero": _SVD})

_HARP_DTYPES = {torch.float32: harp.float32, torch.float64: harp.float64,
                torch.int64: harp.int64, torch.int32: harp.int32, torch.bool: harp.bool}
for _name in ("int8", "int16", "uint8"):
    if hasattr(harp, _name):
        _HARP_DTYPES[getattr(torch, _name)] = getattr(harp, _name)
_HARP_DTYPES[torch.complex64] = harp.complex64
_HARP_DTYPES[torch.complex128] = harp.complex128
_NUMPY_DTYPES = {harp.float32: np.float32, harp.float64: np.float64, harp.int64: np.int64,
                 harp.int32: np.int32, harp.bool: np.bool_, harp.complex64: np.complex64,
                 harp.complex128: np.complex128}

# Tolerances by the result's dtype.
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-7, 1e-7),
       torch.complex64: (1e-5, 1e-5), torch.complex128: (1e-7, 1e-7)}
GRAD_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-7, 1e-7)}
# An f32 result may also differ from torch's by this many times torch's own
# largest error against the same op in f64 on the sample: a sum whose terms
# cancel is as far from the exact value in harp's order as in torch's, and
# no fixed tolerance bounds that.
F32_SLACK = 4.0

_TESTING_MODULES = ("torch.testing", "torch.testing._internal.common_methods_invocations")


class NotConvertible(Exception):
    """A sample argument with no harp counterpart (a torch memory format, a
    dtype harp lacks)."""


def harp_callable(op):
    """How a PyTorch user's call of `op` reads with harp: None when harp does
    not name it."""
    if type(op.op).__name__ in ("OpOverload", "OpOverloadPacket"):
        return None  # an aten operator (torch.ops.aten.slice), not torch's API
    target = harp
    for part in op.name.split("."):
        target = getattr(target, part, None)
        if target is None:
            break
    method = "." not in op.name and hasattr(harp.Tensor, op.name)
    if target is None and not method:
        return None
    fn = op.op
    if getattr(fn, "__name__", "") == "<lambda>" or getattr(fn, "__module__", "") in _TESTING_MODULES:
        scope = dict(fn.__globals__)
        scope["torch"] = harp
        scope["wrapper_set_seed"] = lambda f, *args, **kwargs: f(*args, **kwargs)
        return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    if callable(target) and not isinstance(target, harp.DType):
        return target
    return lambda x, *args, **kwargs: getattr(x, op.name)(*args, **kwargs)


NAMED = {k: op for k, op in OPINFOS.items() if harp_callable(op) is not None}
NOT_NAMED = sorted(k for k in OPINFOS if k not in NAMED)


def _dtypes(op):
    supported = op.supported_dtypes("cpu")
    return [d for d in (torch.float32, torch.float64, torch.int64) if d in supported]


class _Converter:
    """Sample arguments as harp values; remembers which harp tensor stands for
    which torch tensor that requires grad."""

    def __init__(self):
        self.leaves = []

    def __call__(self, value):
        if isinstance(value, torch.Tensor):
            if value.dtype not in _HARP_DTYPES:
                raise NotConvertible("a %s tensor" % value.dtype)
            result = harp.tensor(value.detach().numpy(), _HARP_DTYPES[value.dtype])
            if value.requires_grad and value.dtype.is_floating_point:
                result.requires_grad = True
                self.leaves.append((value, result))
            return result
        if isinstance(value, torch.dtype):
            if value not in _HARP_DTYPES:
                raise NotConvertible("dtype %s" % value)
            return _HARP_DTYPES[value]
        if isinstance(value, torch.device):
            return harp.device(value.type)
        if isinstance(value, torch.memory_format):
            return getattr(harp, str(value).replace("torch.", ""))
        if isinstance(value, torch.layout):
            raise NotConvertible("torch's %s" % value)
        if isinstance(value, torch.Size):
            return tuple(value)
        if isinstance(value, torch.nn.Module):
            return _module(value)
        if isinstance(value, (list, tuple)):
            return type(value)(self(v) for v in value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value


def _module(module):
    """harp.nn's module of a parameterless torch module, with its settings
    (PairwiseDistance keeps p as `norm`)."""
    from harp.nn.modules import _FUNCTIONAL_MODULES
    name = type(module).__name__
    if name not in _FUNCTIONAL_MODULES or list(module.parameters()):
        raise NotConvertible("torch's %s module" % name)
    settings = {}
    for p, _ in _FUNCTIONAL_MODULES[name][1]:
        attribute = p if hasattr(module, p) else {"p": "norm"}.get(p)
        if attribute is not None and hasattr(module, attribute):
            settings[p] = getattr(module, attribute)
    return getattr(harp.nn, name)(**settings)


def _flat(value, out):
    if isinstance(value, (list, tuple)):
        for v in value:
            _flat(v, out)
    else:
        out.append(value)
    return out


def _f64(value):
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
    """torch's largest error on the sample against its f64 result, over the
    entries where both are finite."""
    if reference is None:
        return 0.0
    expected = np.asarray(expected, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if expected.shape != reference.shape:
        return 0.0
    finite = np.isfinite(expected) & np.isfinite(reference)
    if not finite.any():
        return 0.0
    return float(np.max(np.abs(expected[finite] - reference[finite])))


def _as_array(value):
    if isinstance(value, harp.Tensor):
        return value.numpy()
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return np.asarray(value)


def _compare(actual, expected, tol, what, reference=None, values=True):
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, harp.Tensor), "%s: a %s, not a tensor" % (what, type(actual))
        assert tuple(actual.shape) == tuple(expected.shape), \
            "%s: shape %s, torch's %s" % (what, tuple(actual.shape), tuple(expected.shape))
        want = _HARP_DTYPES.get(expected.dtype)
        assert want is None or actual.dtype == want, \
            "%s: dtype %s, torch's %s" % (what, actual.dtype.name, expected.dtype)
    elif isinstance(expected, (bool, int, float)) and isinstance(actual, harp.Tensor):
        actual = actual.item()
    if not values:
        return
    got, want = _as_array(actual), _as_array(expected)
    if want.dtype == np.bool_ or want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    rtol, atol = tol
    atol += F32_SLACK * _torch_error(want, reference)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


class _Sample:
    """One sample on its way through harp and torch: harp's results built
    (lazily), torch's computed; compared once harp's are realized."""

    def __init__(self, index, sample):
        self.index, self.sample = index, sample
        self.loss = None
        self.done = False  # backward() ran (_backward_first)


def _own(value, memo):
    """`value` with tensors of its own (the same tensor twice stays one):
    an op that writes into an argument (batch_norm's running statistics,
    shared by several samples) changes no other sample's."""
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            copy = value.detach().clone()
            memo[id(value)] = copy.requires_grad_(value.requires_grad)
        return memo[id(value)]
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return type(value)(_own(v, memo) for v in value)
    if isinstance(value, dict):
        return {k: _own(v, memo) for k, v in value.items()}
    return value


def prepare_sample(op, fn, state, tdtype):
    """Builds harp's results of the sample (not computed yet) and torch's."""
    memo = {}
    state.input, state.args, state.kwargs = (
        _own(state.sample.input, memo), _own(tuple(state.sample.args), memo),
        _own(dict(state.sample.kwargs), memo))
    convert = state.convert = _Converter()
    h_input = convert(state.input)
    h_args = convert(state.args)
    h_kwargs = convert(state.kwargs)
    if key(op) in INPUT_GRAD_ONLY:
        convert.leaves = [(t, h) for t, h in convert.leaves if t is state.input]
    state.values = key(op) not in RANDOM
    with torch.no_grad():
        state.expected = op(state.input, *state.args, **state.kwargs)
    state.reference = None
    if state.values and tdtype == torch.float32:
        with torch.no_grad():
            state.reference = op(_f64(state.input), *_f64(state.args), **_f64(state.kwargs))
    state.actual = fn(h_input, *h_args, **h_kwargs)


def computed(state):
    """The harp tensors whose values check_forward reads."""
    if not state.values:
        return []
    return [t for t in _flat(state.actual, []) if isinstance(t, harp.Tensor)]


def check_forward(op, state, tdtype):
    """Compares the sample's results with torch's; raises on a mismatch."""
    want, got = _flat(state.expected, []), _flat(state.actual, [])
    assert len(got) == len(want), "%d results, torch's %d" % (len(got), len(want))
    reference = state.reference
    refs = _flat(reference, []) if reference is not None else [None] * len(want)
    for i, (a, e) in enumerate(zip(got, want)):
        r = refs[i] if len(refs) == len(want) else None
        if (key(op) in TIE_INDICES and not tdtype.is_floating_point and
                isinstance(e, torch.Tensor) and e.dtype == torch.int64):
            continue
        tol = TOL.get(e.dtype if isinstance(e, torch.Tensor) else tdtype, (1e-7, 1e-7))
        _compare(a, e, tol, "forward result %d" % i,
                 _as_array(r) if isinstance(r, torch.Tensor) else None, state.values)


def gradient_loss(op, state):
    """harp's sum(op(...) * w) over the sample's float results that torch
    differentiates, or None where the sample has no gradient to check."""
    convert = state.convert
    if not state.values or not convert.leaves:
        return None
    results = [(a, e) for a, e in zip(_flat(state.actual, []),
                                      _flat(op(state.input, *state.args, **state.kwargs), []))
               if isinstance(e, torch.Tensor) and e.requires_grad and e.dtype.is_floating_point]
    if not results:
        return None
    if len({id(t) for t, _ in convert.leaves}) != len(convert.leaves):
        return None  # one tensor passed twice: torch sums its gradients, harp has two leaves
    rng = np.random.default_rng(7)
    state.weights = [rng.uniform(0.5, 1.5, size=tuple(e.shape)) for _, e in results]
    loss = 0
    for (a, e), w in zip(results, state.weights):
        loss = loss + (a * harp.tensor(w.astype(_NUMPY_DTYPES[a.dtype]))).sum()
    return loss


def check_gradients(op, state, tdtype):
    """Compares the gradients backward() accumulated into the sample's
    leaves with torch's; raises on a mismatch."""
    convert, weights = state.convert, state.weights
    leaves = [t for t, _ in convert.leaves]
    op = GRAD_REFERENCE.get(key(op), op)
    want = _torch_grads(op, state.input, state.args, state.kwargs, leaves, weights)
    references = [None] * len(leaves)
    # An f32 leaf (the f32 weights of an f64 sample too) is held to the f32
    # tolerance and torch's own f32 error.
    if tdtype == torch.float32 or any(t.dtype == torch.float32 for t in leaves):
        inputs = _f64([state.input, list(state.args), dict(state.kwargs)])
        leaves64 = []
        _grad_leaves(inputs, leaves64)
        if len(leaves64) == len(leaves):
            references = _torch_grads(op, inputs[0], inputs[1], inputs[2], leaves64, weights)
    for i, (t, h) in enumerate(convert.leaves):
        got = h.grad.numpy() if h.grad is not None else np.zeros(tuple(t.shape))
        tol = GRAD_TOL[torch.float32 if t.dtype == torch.float32 else tdtype]
        _compare(got, want[i], tol, "gradient %d" % i, references[i])


def _grad_leaves(value, out):
    if isinstance(value, torch.Tensor):
        if value.requires_grad and value.dtype.is_floating_point:
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _grad_leaves(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _grad_leaves(v, out)
    return out


def _torch_grads(op, input, args, kwargs, leaves, weights):
    """torch's gradients of sum(op(...) * w) w.r.t. `leaves` (arrays)."""
    results = [e for e in _flat(op(input, *args, **kwargs), [])
               if isinstance(e, torch.Tensor) and e.requires_grad and e.dtype.is_floating_point]
    loss = sum((e * torch.tensor(w, dtype=e.dtype)).sum() for e, w in zip(results, weights))
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return [np.zeros(tuple(t.shape)) if g is None else g.detach().numpy()
            for t, g in zip(leaves, grads)]


def _describe(sample):
    def one(v):
        if isinstance(v, torch.Tensor):
            return "%s%s" % (str(v.dtype).replace("torch.", ""), list(v.shape))
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(one(x) for x in v) + "]"
        return repr(v)
    parts = [one(sample.input)] + [one(a) for a in sample.args]
    parts += ["%s=%s" % (k, one(v)) for k, v in sample.kwargs.items()]
    return ", ".join(parts)


def _not_taken(name, error):
    message = "%s: %s" % (type(error).__name__, error)
    for pattern, why in NOT_TAKEN.get(name, ()):
        if re.search(pattern, message):
            return why
    return None


def _share():
    """(share, shares): the samples this run takes, by index mod `shares`."""
    profiles = ["x86-64-v2", "x86-64-v3", "x86-64-v4"]
    cpu = os.environ.get("HARP_CPU", "")
    if cpu in profiles:
        return profiles.index(cpu), len(profiles)
    return 0, 1


# Under a profile an op runs at most this many samples of its share, spread
# evenly over it (the first, the last and every k-th between). The native
# run takes every sample. Without the cap the six max-pool entries (576 to
# 1,440 samples a dtype: every combination of kernel, stride, padding,
# dilation, ceil_mode and return_indices) were a third of each profile
# pass; their window code per vector width is also what test_nn_functional
# (test_pool_f32_vector_widths, test_max_pool2d) and test_regressions
# (test_strided_window_gradients_per_phase) check under every profile.
PROFILE_SAMPLES = 64


def _spread(items, most):
    """`most` of `items` spread evenly over them, first and last included."""
    if len(items) <= most:
        return items
    last = len(items) - 1
    return [items[round(j * last / (most - 1))] for j in range(most)]


# Samples computed together (harp.realize, one backward() of their summed
# losses): one compiled module per group instead of one per sample. A group
# whose call fails is redone sample by sample, so every error is the
# sample's own.
GROUP = 16


def _together(states, compute, alone):
    """compute(group) for each group of `states`; where it raises, the
    group's states are reset with alone(state) for their own calls."""
    for i in range(0, len(states), GROUP):
        group = states[i:i + GROUP]
        try:
            compute(group)
        except Exception:  # noqa: BLE001: each sample meets its error alone
            for state in group:
                alone(state)


def _realize(group):
    harp.realize(*[t for state in group for t in computed(state)])


def _backward(group):
    total = 0
    for state in group:
        total = total + state.loss
    total.backward()


def _forget_grads(state):
    for _, h in state.convert.leaves:
        h.grad = None


def _backward_first(op, group):
    """The losses of `group` and one backward() of their sum, before the
    forward results are checked; raises where any sample's does."""
    for state in group:
        state.loss = gradient_loss(op, state)
    if any(s.loss is not None for s in group):
        _backward([s for s in group if s.loss is not None])
    for state in group:
        state.done = True


def _not_first(state):
    """Undoes _backward_first for a sample of a group that raised."""
    _forget_grads(state)
    state.loss, state.done = None, False


def run_op(name, tdtype):
    """Runs every sample of `name` in `tdtype`: (passed, {why: count}, failures)."""
    op = NAMED[name]
    fn = harp_callable(op)
    grads = op.supports_autograd and tdtype.is_floating_point
    torch.manual_seed(zlib.crc32(("%s-%s" % (name, tdtype)).encode()))
    share, shares = _share()
    passed, not_taken, failures = 0, {}, []

    def attempt(state, step):
        """step(); False with the sample counted as not taken or failed
        where it raises."""
        try:
            step()
            return True
        except NotConvertible as why:
            not_taken[str(why)] = not_taken.get(str(why), 0) + 1
        except AssertionError as error:
            failures.append("sample %d (%s): %s" % (state.index, _describe(state.sample),
                                                    str(error).strip()[:300]))
        except Exception as error:  # noqa: BLE001: a sample harp does not take
            why = _not_taken(name, error)
            if why is None:
                failures.append("sample %d: %s: %s" % (state.index, type(error).__name__,
                                                        str(error).splitlines()[0] if str(error) else ""))
            else:
                not_taken[why] = not_taken.get(why, 0) + 1
        return False

    mine = [(index, sample) for index, sample in
            enumerate(op.sample_inputs("cpu", tdtype, requires_grad=grads))
            if (index + zlib.crc32(name.encode())) % shares == share]
    if shares > 1:
        mine = _spread(mine, PROFILE_SAMPLES)
    states = []
    for index, sample in mine:
        state = _Sample(index, sample)
        if attempt(state, lambda: prepare_sample(op, fn, state, tdtype)):
            states.append(state)
    if grads:
        # backward() first, a group at a time: it computes the results the
        # samples hold beside the loss (a user's tensors in the graph:
        # docs/TensorAPI.md), so realizing them next compiles nothing for them. A
        # group whose losses or backward() raise is left to the steps below,
        # which give each error to its sample.
        _together(states, lambda group: _backward_first(op, group), _not_first)
    _together(states, _realize, lambda state: None)
    states = [s for s in states if attempt(s, lambda: check_forward(op, s, tdtype))]
    if not grads:
        return passed + len(states), not_taken, failures
    pending = []
    done = [s for s in states if s.done]
    for state in done:
        if state.loss is None:
            passed += 1
    for state in states:
        if state.done:
            continue
        if attempt(state, lambda: setattr(state, "loss", gradient_loss(op, state))):
            if state.loss is None:
                passed += 1
            else:
                pending.append(state)
    unfinished = set()

    def alone(state):
        _forget_grads(state)
        if not attempt(state, state.loss.backward):
            unfinished.add(state.index)

    _together(pending, _backward, alone)
    for state in [s for s in done if s.loss is not None] + pending:
        if state.index not in unfinished and attempt(state, lambda: check_gradients(op, state, tdtype)):
            passed += 1
    return passed, not_taken, failures


# The cases with the most samples (the max-pool entries: up to 1,440 a
# dtype, 40-90 s each) are marked `heavy` and run first (test/conftest.py):
# collected next to each other, they once ran one after the other on one
# pytest worker while the other had nothing left to do. Split into cases
# of fewer samples they cost more (the pieces compile kernels their
# neighbours would have reused: 261 s instead of 211 s under x86-64-v4).
# The count is torch's own (under a second for every entry).
HEAVY = 192


def _heavy(name, tdtype):
    op = NAMED[name]
    grads = op.supports_autograd and tdtype.is_floating_point
    with torch.random.fork_rng(devices=[]):  # collection leaves torch's RNG alone
        return sum(1 for _ in op.sample_inputs("cpu", tdtype, requires_grad=grads)) > HEAVY


def _cases():
    cases = []
    for name in sorted(NAMED):
        for d in _dtypes(NAMED[name]):
            marks = [pytest.mark.heavy] if _heavy(name, d) else []
            cases.append(pytest.param(name, d, marks=marks,
                                      id="%s-%s" % (name, str(d).replace("torch.", ""))))
    return cases


_CASES = _cases()


@pytest.mark.parametrize("name,tdtype", _CASES)
def test_opinfo_samples(name, tdtype):
    passed, not_taken, failures = run_op(name, tdtype)
    assert not failures, "%s %s: %d failed, %d passed:\n%s" % (
        name, tdtype, len(failures), passed, "\n".join(failures[:8]))


def test_not_taken_entries_name_ops():
    for name, entries in NOT_TAKEN.items():
        assert name in NAMED, "%s: not an op harp names" % name
        for pattern, why in entries:
            re.compile(pattern)
            assert why


def test_profile_share_is_spread_over_the_samples():
    """A profile's cap keeps the first and last of its share and spreads the
    rest evenly; a share within the cap runs whole."""
    share = list(range(1, 480 * 3, 3))  # max_pool2d's share under one profile
    kept = _spread(share, PROFILE_SAMPLES)
    assert len(kept) == PROFILE_SAMPLES == len(set(kept))
    assert kept[0] == share[0] and kept[-1] == share[-1] and kept == sorted(kept)
    gaps = [b - a for a, b in zip(kept, kept[1:])]
    assert max(gaps) - min(gaps) <= 3  # one sample of the share apart at most
    assert _spread(share[:PROFILE_SAMPLES], PROFILE_SAMPLES) == share[:PROFILE_SAMPLES]
    assert _spread(share[:5], PROFILE_SAMPLES) == share[:5]
