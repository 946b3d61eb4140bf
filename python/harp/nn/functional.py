"""harp.nn.functional: activations with torch.nn.functional's names and
arguments, composed from harp ops (so each has a gradient through
harp-autodiff). Numbers passed here (alpha, slopes, bounds) are arguments of
the compiled code, like any Python number."""

from .. import _harp

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits",
           "cross_entropy", "elu", "gelu", "hardtanh", "l1_loss", "leaky_relu",
           "log_softmax", "mse_loss", "nll_loss", "normalize", "relu", "sigmoid", "silu",
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


def log_softmax(input, dim=-1):
    """x - logsumexp(x) along `dim`."""
    return input.log_softmax(dim)


#===------------------------------------------------------------------------===#
# Losses (torch.nn.functional's names, arguments and reductions)
#===------------------------------------------------------------------------===#


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError("%s: reduction must be 'mean', 'sum' or 'none', got %r"
                     % (op, reduction))


def mse_loss(input, target, reduction="mean"):
    """(input - target)^2, reduced."""
    return _reduce((input - target).square(), reduction, "mse_loss")


def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced."""
    return _reduce((input - target).abs(), reduction, "l1_loss")


def _one_hot(target, classes, dtype):
    """[N, ...] class indices as [N, classes, ...] floats of `dtype`."""
    import numpy as np
    from .. import tensor
    shape = [1] * len(target.shape)
    shape.insert(1, classes)
    labels = target.unsqueeze(1)
    return (labels.eq(tensor(np.arange(classes).reshape(shape)))).astype(dtype)


def nll_loss(input, target, ignore_index=-100, reduction="mean"):
    """-input[n, target[n]] for log-probabilities `input` [N, C, ...] and
    int64 class indices `target` [N, ...]; targets equal to ignore_index
    count for nothing (and not in the mean)."""
    classes = input.shape[1]
    picked = (input * _one_hot(target, classes, input.dtype)).sum(dim=1)
    keep = target.ne(ignore_index).astype(input.dtype)
    loss = -picked * keep
    if reduction == "mean":
        return loss.sum() / keep.sum()
    return _reduce(loss, reduction, "nll_loss")


def cross_entropy(input, target, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over dim 1 and nll_loss, for class indices (int64
    [N, ...]) or class probabilities (the input's shape); label_smoothing
    mixes the target with the uniform distribution, as torch's."""
    from .. import int32, int64
    logp = input.log_softmax(dim=1)
    classes = input.shape[1]
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError("cross_entropy: label_smoothing must be in [0, 1], got %r" % eps)
    if target.dtype in (int32, int64):
        keep = target.ne(ignore_index).astype(input.dtype)
        picked = (logp * _one_hot(target, classes, input.dtype)).sum(dim=1)
        loss = -picked * (1 - eps) - logp.sum(dim=1) * (eps / classes)
        loss = loss * keep
        if reduction == "mean":
            return loss.sum() / keep.sum()
        return _reduce(loss, reduction, "cross_entropy")
    if target.shape != input.shape:
        raise ValueError("cross_entropy: probabilities %s must have the input's "
                         "shape %s" % (list(target.shape), list(input.shape)))
    smoothed = target * (1 - eps) + eps / classes
    loss = -(logp * smoothed).sum(dim=1)
    return _reduce(loss, reduction, "cross_entropy")


def binary_cross_entropy(input, target, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p, with each log
    clamped at -100 as torch's."""
    log_p = input.log().clamp(min=-100.0)
    log_q = (1 - input).log().clamp(min=-100.0)
    return _reduce(-(target * log_p + (1 - target) * log_q), reduction,
                   "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, reduction="mean"):
    """binary_cross_entropy of sigmoid(input), computed stably:
    max(x, 0) - x t + log(1 + exp(-|x|))."""
    loss = input.relu() - input * target + (-input.abs()).exp().log1p()
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(norm_p(input) along dim, eps)."""
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)
