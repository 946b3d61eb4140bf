"""harp.nn.functional: activations with torch.nn.functional's names and
arguments, composed from harp ops (so each has a gradient through
harp-autodiff). Numbers passed here (alpha, slopes, bounds) are arguments of
the compiled code, like any Python number."""

from .. import _harp

__all__ = ["elu", "gelu", "hardtanh", "leaky_relu", "relu", "sigmoid", "silu",
           "softmax", "softplus", "tanh"]


def relu(input):
    """max(x, 0)."""
    return input.relu()


def sigmoid(input):
    """1 / (1 + exp(-x))."""
    return input.sigmoid()


def tanh(input):
    """The hyperbolic tangent."""
    return input.tanh()


def gelu(input, approximate="none"):
    """x Phi(x), Phi the normal CDF: 0.5 x (1 + erf(x / sqrt 2)), or with
    approximate="tanh" 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    if approximate not in ("none", "tanh"):
        raise ValueError("gelu: approximate must be 'none' or 'tanh', got %r"
                         % (approximate,))
    return _harp.gelu(input, approximate == "tanh")


def silu(input):
    """x sigmoid(x) (swish)."""
    return _harp.silu(input)


def elu(input, alpha=1.0):
    """x where x > 0, else alpha (exp(x) - 1)."""
    return _harp.elu(input, float(alpha))


def leaky_relu(input, negative_slope=0.01):
    """x where x > 0, else negative_slope x."""
    return _harp.leaky_relu(input, float(negative_slope))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold."""
    return _harp.softplus(input, float(beta), float(threshold))


def hardtanh(input, min_val=-1.0, max_val=1.0):
    """x limited to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError("hardtanh: min_val %r is above max_val %r" % (min_val, max_val))
    return input.clamp(min_val, max_val)


def softmax(input, dim=-1):
    """exp(x - max) / sum(exp(x - max)) along `dim`."""
    return input.softmax(dim)
