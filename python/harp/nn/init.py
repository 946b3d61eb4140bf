"""harp.nn.init: torch.nn.init's initialisers for harp tensors.

    w = harp.tensor(np.empty((64, 32), np.float32), requires_grad=True)
    harp.nn.init.kaiming_uniform_(w, a=math.sqrt(5))

Each function draws its values with NumPy, writes them into the tensor in
place with `copy_` (a leaf keeps its identity, so an optimizer holding it
sees the new values) and returns the tensor. Values come from one
module-level `numpy.random.Generator`, seeded with 0 at import so that runs
are reproducible (as torch's fixed default seed makes them) and reseeded by
`manual_seed`; every function also takes its own `generator`. The same seed
does not give torch's values: the generators differ.
"""

import math

import numpy as np

__all__ = ["calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_",
           "manual_seed", "normal_", "ones_", "trunc_normal_", "uniform_",
           "xavier_normal_", "xavier_uniform_", "zeros_"]

_generator = np.random.default_rng(0)


def manual_seed(seed):
    """Reseeds the generator every initialiser (and so every module's
    default initialisation) draws from; returns it."""
    global _generator
    _generator = np.random.default_rng(int(seed))
    return _generator


def _rng(generator):
    return _generator if generator is None else generator


def _write(tensor, values):
    """Writes `values` (NumPy, broadcast to the tensor's shape) into
    `tensor` in its own dtype; returns the tensor."""
    values = np.broadcast_to(np.asarray(values), tuple(tensor.shape))
    tensor.copy_(np.array(values, dtype=np.dtype(tensor.dtype.name), order="C"))
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch.nn.init.calculate_gain):
    1 for linear, conv and sigmoid, 5/3 for tanh, sqrt(2) for relu,
    sqrt(2 / (1 + slope^2)) for leaky_relu (slope `param`, default 0.01),
    3/4 for selu."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError("calculate_gain: negative_slope %r is not a number" % (param,))
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError("calculate_gain: unsupported nonlinearity %r" % (nonlinearity,))


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight [out, in, kernel...] as torch counts
    them: in (out) times the kernel's size."""
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ValueError("fan in and fan out can not be computed for a tensor with "
                         "fewer than 2 dimensions, got shape %s" % (list(shape),))
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError("mode must be 'fan_in' or 'fan_out', got %r" % (mode,))
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills `tensor` with values drawn uniformly from [a, b)."""
    return _write(tensor, _rng(generator).uniform(a, b, tuple(tensor.shape)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills `tensor` with values drawn from N(mean, std^2)."""
    return _write(tensor, _rng(generator).normal(mean, std, tuple(tensor.shape)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills `tensor` with values drawn from N(mean, std^2) restricted to
    [a, b] (drawn again until they fall inside)."""
    rng = _rng(generator)
    values = rng.normal(mean, std, tuple(tensor.shape))
    outside = (values < a) | (values > b)
    while outside.any():
        values[outside] = rng.normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    return _write(tensor, values)


def constant_(tensor, val):
    """Fills `tensor` with `val`."""
    return _write(tensor, np.full(tuple(tensor.shape), val))


def zeros_(tensor):
    """Fills `tensor` with 0."""
    return constant_(tensor, 0.0)


def ones_(tensor):
    """Fills `tensor` with 1."""
    return constant_(tensor, 1.0)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                     generator=None):
    """He initialisation: U(-bound, bound) with bound = gain sqrt(3 / fan),
    gain = calculate_gain(nonlinearity, a), fan the fan_in or fan_out of
    `mode`."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                    generator=None):
    """He initialisation: N(0, std^2) with std = gain / sqrt(fan)."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot initialisation: U(-a, a) with
    a = gain sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot initialisation: N(0, std^2) with
    std = gain sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)
