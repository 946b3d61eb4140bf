"""harp.nn.functional: activations, losses, convolution, pooling,
normalization, dropout, embedding and attention with torch.nn.functional's
names and arguments, composed from harp ops (so each has a gradient through
harp-autodiff). Numbers passed here (alpha, slopes, bounds) are arguments of
the compiled code, like any Python number."""

import math as _math
import numbers as _numbers

import numpy as _np

from .. import _harp
from .._einsum import select as _select

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm",
           "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "col2im", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
           "conv_transpose2d", "conv_transpose3d", "cross_entropy", "dropout",
           "elu", "embedding", "gelu", "group_norm", "hardtanh",
           "huber_loss", "im2col", "instance_norm", "interpolate", "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear",
           "log_softmax", "unfold", "fold", "max_pool1d", "max_pool2d", "max_pool3d", "mse_loss",
           "nll_loss", "normalize", "one_hot", "pad", "relu",
           "scaled_dot_product_attention", "sigmoid", "silu", "softmax",
           "smooth_l1_loss", "softplus", "tanh",
           "relu6", "hardsigmoid", "hardswish", "logsigmoid", "softsign", "tanhshrink",
           "threshold", "softshrink", "hardshrink", "celu", "selu", "mish", "glu", "prelu",
           "softmin", "cosine_similarity", "pairwise_distance", "pixel_shuffle",
           "pixel_unshuffle", "soft_margin_loss", "margin_ranking_loss",
           "hinge_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
           "cosine_embedding_loss", "triplet_margin_loss", "multilabel_soft_margin_loss",
           "dropout2d", "dropout3d", "pdist", "bilinear", "upsample_nearest",
           "upsample_bilinear", "local_response_norm", "multi_margin_loss",
           "multilabel_margin_loss", "triplet_margin_with_distance_loss", "max_unpool1d",
           "max_unpool2d", "max_unpool3d", "alpha_dropout", "feature_alpha_dropout",
           "dropout1d", "lp_pool1d", "lp_pool2d", "channel_shuffle"]


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
    """x limited to [min_val, max_val] (max_val where min_val > max_val, as
    torch's clamp)."""
    return input.clamp(min_val, max_val)


def softmax(input, dim=-1, _stacklevel=3, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along `dim`, in `dtype` if given
    (the input cast first)."""
    return input.softmax(dim, dtype)


def log_softmax(input, dim=-1, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along `dim`, in `dtype` if given (the input cast
    first)."""
    return input.log_softmax(dim, dtype)


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
    return _harp.nn.mse_loss(input, target, reduction)


def l1_loss(input, target, reduction="mean"):
    """|input - target|, reduced."""
    return _harp.nn.l1_loss(input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None,
                   reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input -
    target, reduced (beta = 0 is l1_loss)."""
    reduction = _legacy(size_average, reduce, reduction)
    return _harp.nn.smooth_l1_loss(input, target, float(beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), reduced."""
    return _harp.nn.huber_loss(input, target, float(delta), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    """target * (log target - input) for log-probabilities `input` (the
    target as probabilities, or as log-probabilities with log_target),
    reduced: "batchmean" divides the sum by the batch size (the
    mathematical KL divergence), "mean" by the number of elements, as
    torch's."""
    reduction = _legacy(size_average, reduce, reduction)
    if reduction not in ("mean", "batchmean", "sum", "none"):
        raise ValueError("kl_div: reduction must be 'mean', 'batchmean', 'sum' or "
                         "'none', got %r" % (reduction,))
    loss = _harp.nn.kl_div(input, target, bool(log_target))
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _legacy(size_average, reduce, reduction):
    """torch's deprecated size_average / reduce spelled as a reduction."""
    if size_average is None and reduce is None:
        return reduction
    from .modules import _legacy_reduction
    return _legacy_reduction(size_average, reduce)


def _class_weight(op, weight, input):
    """`weight` checked as a class-weight vector of input's classes (dim 1,
    or dim 0 of an unbatched [C] input), or None."""
    if weight is None:
        return None
    if not isinstance(weight, _harp.Tensor):
        raise TypeError("%s: weight must be a harp tensor, got %s" % (op, type(weight).__name__))
    classes = int(input.shape[1] if input.ndim > 1 else input.shape[0])
    if list(weight.shape) != [classes]:
        raise ValueError("%s: weight must be a 1-d tensor of the %d classes, got shape %s"
                         % (op, classes, list(weight.shape)))
    if weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    return weight


def _target_weights(weight, target, ignore_index):
    """weight[target] per target element, 0 where target is ignore_index."""
    from .. import where, zeros_like
    kept = target != ignore_index
    safe = where(kept, target, zeros_like(target))
    # The targets were checked by the loss: no second check here.
    picked = _harp.gather(weight, safe.reshape(-1), 0, check=False).reshape(
        [int(d) for d in target.shape])
    return where(kept, picked, zeros_like(picked))


def _per_class(values, weight, input):
    """values [N, C, ...] (or [C]) times weight along the class dim."""
    if input.ndim <= 1:
        return values * weight
    return values * weight.reshape(*([1, -1] + [1] * (input.ndim - 2)))


def _weighted_reduce(op, loss, weights, reduction):
    """"mean" divides by the weights' sum: NaN where it is 0 (every target
    ignored) with a gradient of 0, as torch's."""
    if reduction == "mean":
        from .. import tensor, where
        total = weights.sum()
        empty = total == 0
        one = tensor(1.0, dtype=total.dtype)
        nan = tensor(float("nan"), dtype=total.dtype)
        zero = tensor(0.0, dtype=total.dtype)
        return loss.sum() / where(empty, one, total) + where(empty, nan, zero)
    return _reduce(loss, reduction, op)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-weight[target[n]] input[n, target[n]] for log-probabilities `input`
    [N, C, ...] and integer class indices `target` [N, ...], as torch's:
    targets equal to ignore_index count for nothing, and "mean" divides by
    the sum of the weights of the targets counted (their number without
    `weight`)."""
    reduction = _legacy(size_average, reduce, reduction)
    weight = _class_weight("nll_loss", weight, input)
    if weight is None:
        return _harp.nn.nll_loss(input, target, int(ignore_index), reduction)
    picked = _harp.nn.nll_loss(input, target, int(ignore_index), "none")
    weights = _target_weights(weight, target, int(ignore_index))
    return _weighted_reduce("nll_loss", picked * weights, weights, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """log_softmax over dim 1 and nll_loss, for class indices (integers
    [N, ...]) or class probabilities (the input's shape); label_smoothing
    mixes the target with the uniform distribution, and class weights
    `weight` [C] weigh each class's terms, as torch's."""
    reduction = _legacy(size_average, reduce, reduction)
    weight = _class_weight("cross_entropy", weight, input)
    if weight is None:
        return _harp.nn.cross_entropy(input, target, int(ignore_index),
                                      float(label_smoothing), reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError("cross_entropy: reduction must be 'mean', 'sum' or 'none', got %r"
                         % (reduction,))
    smoothing = float(label_smoothing)
    class_dim = 1 if input.ndim > 1 else 0
    classes = int(input.shape[class_dim])
    log_p = log_softmax(input, class_dim)
    if target.dtype.name.startswith("float"):
        # Class probabilities: -sum_c w_c t_c log p_c per element; "mean"
        # divides by the number of elements, weights or not (torch's).
        if smoothing:
            target = target * (1 - smoothing) + smoothing / classes
        loss = -_per_class(log_p * target, weight, input).sum(class_dim)
        return _reduce(loss, reduction, "cross_entropy")
    picked = _harp.nn.nll_loss(log_p, target, int(ignore_index), "none")
    weights = _target_weights(weight, target, int(ignore_index))
    nll = picked * weights
    if smoothing:
        from .. import where, zeros_like
        smooth = -_per_class(log_p, weight, input).sum(class_dim)
        kept = target != int(ignore_index)
        smooth = where(kept, smooth, zeros_like(smooth))
        loss = nll * (1 - smoothing) + smooth * (smoothing / classes)
    else:
        loss = nll
    return _weighted_reduce("cross_entropy", loss, weights, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w (t log p + (1 - t) log(1 - p)) for probabilities p, with each log
    clamped at -100 as torch's; `weight` broadcasts against the input."""
    reduction = _legacy(size_average, reduce, reduction)
    if weight is None:
        return _harp.nn.binary_cross_entropy(input, target, reduction)
    loss = _harp.nn.binary_cross_entropy(input, target, "none") * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy of sigmoid(input), computed stably:
    max(x, 0) - x t + log(1 + exp(-|x|)); `pos_weight` weighs the positive
    term (broadcast along the last dim), `weight` every element, as
    torch's."""
    reduction = _legacy(size_average, reduce, reduction)
    if weight is None and pos_weight is None:
        return _harp.nn.binary_cross_entropy_with_logits(input, target, reduction)
    if pos_weight is None:
        loss = _harp.nn.binary_cross_entropy_with_logits(input, target, "none")
    else:
        # softplus(-x) = log(1 + exp(-x)) = -log sigmoid(x), stably.
        softplus = (-input).relu() + (-input.abs()).exp().log1p()
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(norm_p(input) along dim, eps)."""
    return _harp.normalize(input, float(p), int(dim), float(eps))


#===------------------------------------------------------------------------===#
# Linear layers, convolution and pooling
#===------------------------------------------------------------------------===#


def _ints(value, count, name, op):
    """`value` (an int, or 1 or `count` ints) as a list of `count` ints."""
    if isinstance(value, int):
        return [value] * count
    value = [int(v) for v in value]
    if len(value) == 1:
        return value * count
    if len(value) != count:
        raise ValueError("%s: %s needs 1 or %d values, got %d"
                         % (op, name, count, len(value)))
    return value


def _numpy_float(t):
    import numpy as np
    return np.float64 if t.dtype == _harp.DType.float64 else np.float32


def _spatial_names(k):
    return ["L"] if k == 1 else (["H", "W"] if k == 2 else ["D", "H", "W"])


def _batched(input, k, op, channels=None):
    """input [N, C, spatial...] (or unbatched [C, spatial...]) as a batched
    tensor and whether a batch dim was added."""
    rank = len(input.shape)
    if rank == k + 1:
        return input.unsqueeze(0), True
    if rank != k + 2:
        raise ValueError("%s: expected input [N, C, %s] or [C, %s], got %s"
                         % (op, ", ".join(_spatial_names(k)),
                            ", ".join(_spatial_names(k)), list(input.shape)))
    return input, False


def linear(input, weight, bias=None):
    """input @ weight.T + bias, for weight [out_features, in_features]; a
    1-d input [in_features] gives [out_features]."""
    if input.ndim == 1:
        return _harp.nn.linear(input.unsqueeze(0), weight, bias).squeeze(0)
    return _harp.nn.linear(input, weight, bias)


def _conv_padding(padding, stride, k, op):
    """(padding per spatial dim, same) for an int, a tuple, "valid" or
    "same" (which puts the odd element after, as torch)."""
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError("%s: padding must be an int, a tuple, 'valid' or "
                             "'same', got %r" % (op, padding))
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("%s: padding='same' needs stride 1, got %s"
                             % (op, stride))
        return [0] * k, padding == "same"
    return _ints(padding, k, "padding", op), False


def _conv(op, k, input, weight, bias, stride, padding, dilation, groups):
    input, unbatched = _batched(input, k, op)
    if len(weight.shape) != k + 2:
        raise ValueError("%s: weight must be [out_channels, in_channels/groups, "
                         "%s], got %s" % (op, ", ".join("k" + s for s in _spatial_names(k)),
                                          list(weight.shape)))
    stride = _ints(stride, k, "stride", op)
    padding, same = _conv_padding(padding, stride, k, op)
    out = _harp.nn.conv(op, input, weight, bias, stride, padding, same,
                        _ints(dilation, k, "dilation", op), int(groups))
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as torch) of [N, C, L] with
    weight [F, C/groups, k]; padding an int, a tuple, 'valid' or 'same'."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of [N, C, H, W] with weight [F, C/groups, kH, kW];
    groups=C with F a multiple of C is a depthwise convolution."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of [N, C, D, H, W] with weight [F, C/groups, kD, kH, kW]."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, k, input, weight, bias, stride, padding, output_padding,
                    groups, dilation):
    input, unbatched = _batched(input, k, op)
    if len(weight.shape) != k + 2:
        raise ValueError("%s: weight must be [in_channels, out_channels/groups, "
                         "kernel...], got %s" % (op, list(weight.shape)))
    out = _harp.nn.conv_transpose(
        op, input, weight, bias, _ints(stride, k, "stride", op),
        _ints(padding, k, "padding", op),
        _ints(output_padding, k, "output_padding", op),
        _ints(dilation, k, "dilation", op), int(groups))
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """The transpose (adjoint) of conv1d, weight [C, F/groups, k]: output
    length (L - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride,
                           padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """The transpose (adjoint) of conv2d, weight [C, F/groups, kH, kW]."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride,
                           padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0,
                     output_padding=0, groups=1, dilation=1):
    """The transpose (adjoint) of conv3d, weight [C, F/groups, kD, kH, kW]."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride,
                           padding, output_padding, groups, dilation)


def _pool_stride(stride, kernel, k, op):
    """The stride, the kernel size when not given (torch's default)."""
    if stride is None or stride == [] or stride == ():
        return _ints(kernel, k, "kernel_size", op)
    return _ints(stride, k, "stride", op)


def _max_pool(op, k, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    input, unbatched = _batched(input, k, op)
    args = (op, input, _ints(kernel_size, k, "kernel_size", op),
            _pool_stride(stride, kernel_size, k, op), _ints(padding, k, "padding", op),
            _ints(dilation, k, "dilation", op), bool(ceil_mode))
    out = _harp.nn.max_pool(*args)
    if not return_indices:
        return out.squeeze(0) if unbatched else out
    # The position of each window's maximum, row-major over the spatial dims.
    indices = _harp.nn.max_pool_indices(*args)
    return (out.squeeze(0), indices.squeeze(0)) if unbatched else (out, indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """The maximum of each window of [N, C, L] (padding counts as -inf)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """The maximum of each window of [N, C, H, W]; stride defaults to the
    kernel size."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode=False, return_indices=False):
    """The maximum of each window of [N, C, D, H, W]."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding,
                     dilation, ceil_mode, return_indices)


def _avg_pool(op, k, input, kernel_size, stride, padding, ceil_mode,
              count_include_pad, divisor_override):
    input, unbatched = _batched(input, k, op)
    out = _harp.nn.avg_pool(op, input, _ints(kernel_size, k, "kernel_size", op),
                            _pool_stride(stride, kernel_size, k, op),
                            _ints(padding, k, "padding", op), bool(ceil_mode),
                            bool(count_include_pad), int(divisor_override or 0))
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """The mean of each window of [N, C, L]."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean of each window of [N, C, H, W]; count_include_pad=False
    divides by the number of input elements in the window."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean of each window of [N, C, D, H, W]."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding,
                     ceil_mode, count_include_pad, divisor_override)


def im2col(input, kernel_size, stride=1, padding=0):
    """The sliding windows of [N, C, spatial...] (1-3 spatial dims) as
    columns [N, C * prod(kernel), windows], channel-major then kernel
    offsets: torch.nn.functional.unfold's layout (dilation 1), under the op
    catalogue's name."""
    k = len(input.shape) - 2
    if not 1 <= k <= 3:
        raise ValueError("im2col: expected input [N, C, spatial...] with 1 to 3 "
                         "spatial dims, got %s" % list(input.shape))
    return _harp.nn.im2col(input, _ints(kernel_size, k, "kernel_size", "im2col"),
                           _ints(stride, k, "stride", "im2col"),
                           _ints(padding, k, "padding", "im2col"))


def col2im(input, output_size, kernel_size, stride=1, padding=0):
    """The adjoint of im2col: columns [N, C * prod(kernel), windows] summed
    back into [N, C, output_size...] (torch.nn.functional.fold with
    dilation 1)."""
    size = [output_size] if isinstance(output_size, int) else list(output_size)
    k = len(size)
    return _harp.nn.col2im(input, size, _ints(kernel_size, k, "kernel_size", "col2im"),
                           _ints(stride, k, "stride", "col2im"),
                           _ints(padding, k, "padding", "col2im"))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold: the sliding windows of [N, C, H, W] (or
    unbatched [C, H, W]) as columns [N, C * kh * kw, windows], channel-major
    then kernel offsets; a zero-copy window view of the padded input,
    permuted (im2col is the op catalogue's form, without dilation)."""
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    if input.ndim != 4:
        raise ValueError("unfold: expected input [N, C, H, W] or [C, H, W], got %s"
                         % list(input.shape))
    kernel = _ints(kernel_size, 2, "kernel_size", "unfold")
    pads = _ints(padding, 2, "padding", "unfold")
    if any(pads):
        input = input.pad([0, 0] + pads, [0, 0] + pads, 0.0)
    windows = _harp.unfold(input, kernel, _ints(stride, 2, "stride", "unfold"),
                           _ints(dilation, 2, "dilation", "unfold"))
    n, c, oh, ow, kh, kw = windows.shape
    return windows.permute([0, 1, 4, 5, 2, 3]).reshape([n, c * kh * kw, oh * ow])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold, the adjoint of unfold: columns
    [N, C * kh * kw, windows] (or unbatched [C * kh * kw, windows]) summed
    back into [N, C, output_size...], overlaps adding up."""
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding,
                    stride).squeeze(0)
    if input.ndim != 3:
        raise ValueError("fold: expected input [N, C * kh * kw, L] or [C * kh * kw, L], "
                         "got %s" % list(input.shape))
    size = _ints(output_size, 2, "output_size", "fold")
    kernel = _ints(kernel_size, 2, "kernel_size", "fold")
    dil, pads = _ints(dilation, 2, "dilation", "fold"), _ints(padding, 2, "padding", "fold")
    step = _ints(stride, 2, "stride", "fold")
    padded = [size[i] + 2 * pads[i] for i in range(2)]
    out = [(padded[i] - dil[i] * (kernel[i] - 1) - 1) // step[i] + 1 for i in range(2)]
    n, ck, count = input.shape
    if ck % (kernel[0] * kernel[1]) or count != out[0] * out[1] or min(out) < 1:
        raise ValueError("fold: input %s does not hold the %d x %d windows of kernel %s "
                         "over output_size %s (padding %s, stride %s, dilation %s)"
                         % (list(input.shape), out[0], out[1], kernel, size, pads, step, dil))
    c = ck // (kernel[0] * kernel[1])
    windows = input.reshape([n, c, kernel[0], kernel[1], out[0], out[1]])
    result = _harp.fold(windows.permute([0, 1, 4, 5, 2, 3]), padded, step, dil)
    if any(pads):
        result = result[:, :, pads[0]:pads[0] + size[0], pads[1]:pads[1] + size[1]]
    return result


def _adaptive_sizes(op, k, input, output_size):
    sizes = [output_size] * k if isinstance(output_size, int) or output_size is None \
        else list(output_size)
    if len(sizes) == 1 and k > 1:
        sizes = sizes * k
    if len(sizes) != k:
        raise ValueError("%s: output_size needs 1 or %d values, got %s" % (op, k, sizes))
    sizes = [input.shape[2 + i] if s is None else int(s) for i, s in enumerate(sizes)]
    if any(s <= 0 for s in sizes):
        raise ValueError("%s: output_size must be positive, got %s" % (op, sizes))
    return sizes


def _adaptive_avg_pool(op, k, input, output_size):
    input, unbatched = _batched(input, k, op)
    out = _harp.nn.adaptive_avg_pool(op, input, _adaptive_sizes(op, k, input, output_size))
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool1d(input, output_size):
    """The mean over output_size windows of [N, C, L] that cover it evenly
    (window j spans [floor(j L / out), ceil((j + 1) L / out)))."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """adaptive_avg_pool1d over H and W; output_size (1, 1) is the global
    average pool (None keeps a dim)."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """adaptive_avg_pool1d over D, H and W."""
    return _adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_window_positions(spatial, sizes):
    """For each adaptive window (row-major over the output), the flat
    positions (row-major over the input's spatial dims) of its elements in
    the window's row-major order: [prod(sizes), prod(widths)], the widest
    window's extent along each dim. A narrower window repeats its last
    element along the dim, which moves neither its first maximum nor its
    last NaN."""
    positions = _np.zeros([1] * (2 * len(spatial)), _np.int64)
    place = 1
    for d in reversed(range(len(spatial))):
        size, out = spatial[d], sizes[d]
        j = _np.arange(out)
        start, end = j * size // out, -(-(j + 1) * size // out)
        width = int((end - start).max())
        along = _np.minimum(start[:, None] + _np.arange(width), end[:, None] - 1)
        shape = [1] * (2 * len(spatial))
        shape[d], shape[len(spatial) + d] = out, width
        positions = positions + along.reshape(shape) * place
        place *= size
    count = int(_np.prod(sizes))
    return positions.reshape(count, -1)


def _adaptive_max_pool_indices(input, sizes):
    """torch's indices of adaptive max pooling of input [N, C, spatial...]:
    each window's first maximum in its row-major order, or its last NaN
    (torch's `val > max || isnan(val)`), as a flat position into the
    input's spatial dims, int64 [N, C, prod(sizes)]."""
    from .. import amax, amin, arange, isnan, tensor, where
    n, c = int(input.shape[0]), int(input.shape[1])
    table = _adaptive_window_positions([int(d) for d in input.shape[2:]], sizes)
    count, width = table.shape
    # Window positions, in range by construction: unchecked gathers.
    values = _harp.gather(input.detach().reshape(n, c, -1),
                          tensor(table.reshape(1, 1, -1)).expand(n, c, count * width), 2,
                          check=False)
    values = values.reshape(n, c, count, width)
    position = arange(width)
    first = amin(where(values == amax(values, -1, keepdim=True), position, width), -1)
    last_nan = amax(where(isnan(values), position, -1), -1)
    place = where(last_nan >= 0, last_nan, first)
    return _harp.gather(tensor(table).expand(n, c, count, width), place.unsqueeze(-1), 3,
                        check=False).squeeze(-1)


def _adaptive_max_pool(op, k, input, output_size, return_indices):
    input, unbatched = _batched(input, k, op)
    sizes = _adaptive_sizes(op, k, input, output_size)
    if not return_indices:
        out = _harp.nn.adaptive_max_pool(op, input, sizes)
        return out.squeeze(0) if unbatched else out
    if not input.dtype.name.startswith("float"):
        raise _harp.HarpError("%s: input must be f32 or f64, got %s" % (op, input.dtype.name))
    # The values are the input at the indices: the gradient reaches each
    # window's chosen element only, as torch's.
    n, c = int(input.shape[0]), int(input.shape[1])
    indices = _adaptive_max_pool_indices(input, sizes)
    out = _harp.gather(input.reshape(n, c, -1), indices, 2, check=False).reshape(n, c, *sizes)
    indices = indices.reshape(n, c, *sizes)
    return (out.squeeze(0), indices.squeeze(0)) if unbatched else (out, indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum over adaptive windows of [N, C, L]; return_indices=True
    also gives torch's int64 indices (the position in L of each window's
    first maximum), and the gradient then reaches that element only, as
    torch's."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over adaptive windows of [N, C, H, W]; return_indices
    as adaptive_max_pool1d's, positions into H * W."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over adaptive windows of [N, C, D, H, W]; return_indices
    as adaptive_max_pool1d's, positions into D * H * W."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, return_indices)


#===------------------------------------------------------------------------===#
# Normalization, dropout, embedding, attention
#===------------------------------------------------------------------------===#


def batch_norm(input, running_mean, running_var, weight=None, bias=None,
               training=False, momentum=0.1, eps=1e-5):
    """Normalizes each channel (dim 1) of [N, C, ...]: with the batch's mean
    and (biased) variance when training, updating running_mean/running_var
    in place (torch's rule: the unbiased variance, weighted by momentum),
    or with the running statistics otherwise."""
    return _harp.nn.batch_norm(input, running_mean, running_var, weight, bias,
                               bool(training), float(momentum), float(eps))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalizes over the trailing dims `normalized_shape` (mean and biased
    variance), then scales by weight and shifts by bias of that shape."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _harp.nn.layer_norm(input, shape, weight, bias, float(eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalizes [N, C, ...] over each group of C / num_groups channels
    (with their spatial dims), then a per-channel weight and bias."""
    return _harp.nn.group_norm(input, int(num_groups), weight, bias, float(eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalizes each channel of each sample of [N, C, ...] over its
    spatial dims, then a per-channel weight and bias (torch's arguments).
    With use_input_stats the sample's own statistics, and running_mean /
    running_var (if given) updated in place with their mean over the batch
    (the unbiased variance, weighted by momentum); without, the running
    statistics normalize, as batch_norm's evaluation."""
    if input.ndim < 3:
        raise ValueError("instance_norm: expected input [N, C, spatial...], got %s"
                         % list(input.shape))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean "
                             "and running_var")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    out = group_norm(input, input.shape[1], weight, bias, eps)
    if running_mean is not None or running_var is not None:
        from .. import no_grad
        dims = list(range(2, input.ndim))
        x = input.detach()
        with no_grad():
            if running_mean is not None:
                mean = x.mean(dims).mean(0).to(running_mean.dtype)
                running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
            if running_var is not None:
                var = x.var(dims, True).mean(0).to(running_var.dtype)
                running_var.copy_(running_var * (1 - momentum) + var * momentum)
    return out


def _next_seed(generator=None, seed=None):
    from ..random import next_seed
    return next_seed(generator, seed)


def dropout(input, p=0.5, training=True, inplace=False, seed=None,
            generator=None):
    """Zeroes each element with probability p and scales the others by
    1 / (1 - p) when training; the identity otherwise. The mask comes from
    harp's counter-based generator with the next seed of `generator` (the
    default one, seeded by harp.manual_seed, unless given) or `seed`; the
    seed is a run-time argument, so no call compiles anew."""
    if not training or p == 0.0:
        if not 0.0 <= p <= 1.0:
            raise ValueError("dropout: p must be in [0, 1], got %r" % p)
        return input
    return _harp.nn.dropout(input, float(p), True,
                            _next_seed(generator, seed))


def _renorm_rows(input, weight, max_norm, norm_type, check=None):
    """torch's max_norm: the rows of `weight` that `input` picks and whose
    norm exceeds max_norm are scaled to max_norm / (norm + 1e-7) times
    themselves, in place and outside the graph."""
    from .. import no_grad, ones_like, where, zeros
    from .._tensor_methods import _in_place
    rows = int(weight.shape[0])
    with no_grad():
        flat = input.reshape(-1)
        # embedding() checked `input` (a computed one: `check`, raised
        # before any row is written).
        hit = _harp.scatter_add(zeros(rows, dtype=weight.dtype), flat,
                                ones_like(flat, dtype=weight.dtype), 0, check=False) > 0
        hit = _harp._with_check(hit, check)
        norms = weight.detach().norm(float(norm_type), 1, True)
        over = hit.reshape(rows, 1) & (norms > float(max_norm))
        scaled = weight.detach() * (float(max_norm) / (norms + 1e-7))
        _in_place(weight, "embedding", where(over, scaled, weight.detach()))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of weight [num_embeddings, dim] picked by the integer indices
    `input` (any shape): the result is input.shape + [dim]. The row
    padding_idx gets no gradient; with max_norm, the rows picked whose
    norm_type-norm exceeds it are renormalized in place first; with
    scale_grad_by_freq, each row's gradient is divided by how often the
    batch picks it; as torch's. `sparse` is accepted: harp's gradient is
    dense (the same values)."""
    if len(weight.shape) != 2:
        raise ValueError("embedding: weight must be [num_embeddings, dim], got %s"
                         % list(weight.shape))
    rows, dim = weight.shape
    check = _harp._check_index("embedding", input, int(rows), "a weight of %d rows" % rows)
    if max_norm is not None:
        if not isinstance(max_norm, (int, float)) or max_norm <= 0:
            raise ValueError("embedding: max_norm must be a positive number, got %r"
                             % (max_norm,))
        _renorm_rows(input, weight, max_norm, norm_type, check)
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += rows
        if not 0 <= padding_idx < rows:
            raise ValueError("embedding: padding_idx %d outside [0, %d)" % (padding_idx, rows))
        from .. import arange
        keep = arange(rows).ne(padding_idx).reshape(rows, 1)
        weight = _harp.where(keep, weight, weight.detach())
    flat = input.reshape(-1, 1).expand(-1, dim)
    picked = _harp.gather(weight, flat, 0, check=False).reshape(list(input.shape) + [dim])
    picked = _harp._with_check(picked, check)
    if not scale_grad_by_freq:
        return picked
    from .. import ones_like, zeros
    index = input.reshape(-1)
    counts = _harp.scatter_add(zeros(int(rows), dtype=weight.dtype), index,
                               ones_like(index, dtype=weight.dtype), 0, check=False)
    per = _harp.gather(counts, index, 0, check=False).reshape(list(input.shape) + [1])
    # The same values; the gradient through `picked` divided by the count.
    frozen = picked.detach()
    return frozen + (picked - frozen) / per


def one_hot(tensor, num_classes=-1):
    """int64 [..., num_classes] with a 1 at each index (num_classes=-1: the
    largest index + 1)."""
    from .. import arange, int64
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1
    check = _harp._check_index("one_hot", tensor, int(num_classes), "%d classes" % num_classes)
    hot = tensor.unsqueeze(-1).eq(arange(num_classes, dtype=tensor.dtype)).astype(int64)
    return _harp._with_check(hot, check)


def _pad_index(mode, size, before, after):
    """Where each position of a dim padded by (before, after) reads the
    input: replicate repeats the edge, reflect mirrors about it (not
    repeating it), circular wraps."""
    i = _np.arange(-before, size + after)
    if mode == "replicate":
        return _np.clip(i, 0, size - 1)
    if mode == "circular":
        # torch crops the negative amounts first and wraps what is left
        start = max(0, -before)
        kept = size - start - max(0, -after)
        return start + _np.arange(-max(before, 0), kept + max(after, 0)) % kept
    i = _np.abs(i)
    return _np.where(i > size - 1, 2 * (size - 1) - i, i)


def pad(input, pad, mode="constant", value=0.0):
    """torch.nn.functional.pad: `pad` lists (before, after) pairs from the
    last dim backwards. mode "constant", "reflect" (amounts below the dim's
    size), "replicate" or "circular" (amounts up to the dim's size);
    negative amounts crop, as torch's. The other modes read the input through a gather per
    padded dim, so their gradient sums where they repeat elements."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError("pad: mode %r is not one of 'constant', 'reflect', "
                         "'replicate', 'circular'" % (mode,))
    pad = list(pad)
    rank = len(input.shape)
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise ValueError("pad: needs pairs for at most %d dims, got %s" % (rank, pad))
    before, after = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        before[rank - 1 - i], after[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if mode != "constant":
        out = input
        for d in range(rank):
            if not before[d] and not after[d]:
                continue
            size = input.shape[d]
            kept = size - max(0, -before[d]) - max(0, -after[d])
            limit = size - 1 if mode == "reflect" else kept if mode == "circular" else size
            if kept < 1 or max(before[d], after[d]) > limit:
                raise ValueError(
                    "pad: %s padding of dim %d (size %d) by (%d, %d): the amounts "
                    "must be at most %d, and negative ones (crops) must leave an "
                    "element" % (mode, d, size, before[d], after[d], limit))
            out = _select(out, d, _pad_index(mode, size, before[d], after[d]))
        return out
    out = input
    for d in range(rank):
        if before[d] < 0 or after[d] < 0:
            start, stop = max(0, -before[d]), out.shape[d] - max(0, -after[d])
            if stop <= start:
                raise ValueError("pad: %s crops dim %d of %s to nothing"
                                 % (pad, d, list(input.shape)))
            out = out.slice(d, start, stop)
    if any(b > 0 for b in before) or any(a > 0 for a in after):
        out = out.pad([max(b, 0) for b in before], [max(a, 0) for a in after], value)
    return out


_INTERPOLATE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _cubic_weights(t):
    """The 4 taps' weights (at -1, 0, 1, 2) of cubic convolution, A = -0.75."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _resample(x, dim, size, out, mode, align_corners, scale):
    """x resized along `dim` from `size` to `out` elements, torch's
    coordinates: a gather (nearest) or a weighted sum of gathers."""
    dst = _np.arange(out, dtype=_np.float64)
    if mode in ("nearest", "nearest-exact"):
        ratio = 1.0 / scale if scale else size / out
        shift = 0.5 if mode == "nearest-exact" else 0.0
        index = _np.minimum(_np.floor((dst + shift) * ratio), size - 1)
        return _select(x, dim, index.astype(_np.int64))
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        ratio = 1.0 / scale if scale else size / out
        src = (dst + 0.5) * ratio - 0.5
        if mode != "bicubic":
            src = _np.maximum(src, 0.0)
    base = _np.floor(src)
    t = src - base
    base = base.astype(_np.int64)
    if mode == "bicubic":
        taps = [(base + k, w) for k, w in zip(range(-1, 3), _cubic_weights(t))]
    else:
        base = _np.minimum(base, size - 1)
        taps = [(base, 1.0 - t), (_np.minimum(base + 1, size - 1), t)]
    shape = [1] * x.ndim
    shape[dim] = out
    total = None
    np_dtype = _np.float64 if x.dtype == _harp.DType.float64 else _np.float32
    for index, weight in taps:
        w = _harp.from_numpy(_np.ascontiguousarray(
            weight.astype(np_dtype).reshape(shape)), x.device)
        term = _select(x, dim, _np.clip(index, 0, size - 1)) * w
        total = term if total is None else total + term
    return total


def interpolate(input, size=None, scale_factor=None, mode="nearest",
                align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch.nn.functional.interpolate over the dims after batch and
    channels: `size` (an int or one per dim) or `scale_factor` (a number or
    one per dim; the output is floor(size x factor), and the factor maps
    coordinates unless recompute_scale_factor); modes "nearest",
    "nearest-exact", "linear" / "bilinear" / "trilinear", "bicubic" (A =
    -0.75, edges clamped) with `align_corners`, and "area" (adaptive average
    pooling). Each dim is resampled on its own: a gather, or a weighted sum
    of gathers, so the gradient is exact."""
    if not isinstance(input, _harp.Tensor):
        raise TypeError("interpolate: input must be a harp.Tensor, got %s"
                        % type(input).__name__)
    spatial = input.ndim - 2
    if spatial < 1:
        raise ValueError("interpolate: needs a batch, channels and at least "
                         "one spatial dim, got shape %s" % list(input.shape))
    known = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic",
             "trilinear", "area")
    if mode not in known:
        raise ValueError("interpolate: mode %r is not one of %s" % (mode, known))
    if mode in _INTERPOLATE_DIMS and _INTERPOLATE_DIMS[mode] != spatial:
        raise ValueError("interpolate: mode %r needs %d spatial dims, got "
                         "shape %s" % (mode, _INTERPOLATE_DIMS[mode],
                                       list(input.shape)))
    if align_corners is not None and mode not in _INTERPOLATE_DIMS:
        raise ValueError("interpolate: align_corners only goes with the "
                         "linear and cubic modes, not %r" % mode)
    if antialias:
        raise ValueError("interpolate: antialias is not supported")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    sizes = list(input.shape[2:])

    def per_dim(value, what):
        values = [value] * spatial if isinstance(value, _numbers.Number) \
            else list(value)
        if len(values) != spatial:
            raise ValueError("interpolate: %s %s for %d spatial dims"
                             % (what, value, spatial))
        return values
    if size is not None:
        outs, scales = [int(v) for v in per_dim(size, "size")], [None] * spatial
    else:
        factors = [float(v) for v in per_dim(scale_factor, "scale_factor")]
        outs = [int(_math.floor(n * f)) for n, f in zip(sizes, factors)]
        scales = [None] * spatial if recompute_scale_factor else factors
    if any(o < 1 for o in outs):
        raise ValueError("interpolate: output size %s of input %s has an "
                         "empty dim" % (outs, list(input.shape)))
    if mode == "area":
        pool = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d,
                3: adaptive_avg_pool3d}[spatial]
        return pool(input, outs)
    out = input
    for i, (n, o, f) in enumerate(zip(sizes, outs, scales)):
        if n != o or f not in (None, 1.0):
            out = _resample(out, 2 + i, n, o, mode, bool(align_corners), f)
    return out


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None):
    """softmax(query key^T * scale + mask) value over [..., L, E] queries
    and [..., S, E] keys/values; scale defaults to 1/sqrt(E). attn_mask is
    bool (True keeps) or float (added); is_causal keeps key j <= query i.
    Masked scores are -inf (a select, so masked values never leak)."""
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: give attn_mask or "
                         "is_causal, not both")
    return _harp.nn.attention(query, key, value, attn_mask, bool(is_causal),
                              None if scale is None else float(scale),
                              float(dropout_p), _next_seed() if dropout_p > 0.0 else 0)


#===------------------------------------------------------------------------===#
# Activations, distances and losses composed from harp's ops (torch's names,
# arguments and reductions; each differentiable through its parts)
#===------------------------------------------------------------------------===#


def _where(cond, a, b):
    from .. import where
    return where(cond, a, b)


def relu6(input, inplace=False):
    """min(max(x, 0), 6)."""
    return input.clamp(0.0, 6.0)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return (input + 3.0).clamp(0.0, 6.0) / 6.0


def hardswish(input, inplace=False):
    """x hardsigmoid(x)."""
    return input * hardsigmoid(input)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-input)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1.0)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _where(input > threshold, input, value)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    return _where(input > lambd, input - lambd, _where(input < -lambd, input + lambd, 0.0))


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _where((input > lambd) | (input < -lambd), input, 0.0)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    negative = (input.minimum(_zero(input)) / alpha).expm1() * alpha
    return input.relu() + negative


def selu(input, inplace=False):
    """scale (max(0, x) + min(0, alpha (exp(x) - 1))), torch's constants."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return (input.relu() + input.minimum(_zero(input)).expm1() * alpha) * scale


def _zero(input):
    from .. import zeros_like
    return zeros_like(input)


def mish(input, inplace=False):
    """x tanh(softplus(x))."""
    return input * softplus(input).tanh()


def glu(input, dim=-1):
    """a sigmoid(b) for the two halves a, b of `dim`."""
    from .._tensor_methods import _normalized
    d = _normalized("glu", dim, input.ndim)
    n = input.shape[d]
    if n % 2:
        raise ValueError("glu: halving dim %d needs an even size, got %d" % (dim, n))
    return input.slice(d, 0, n // 2, 1) * input.slice(d, n // 2, n, 1).sigmoid()


def prelu(input, weight):
    """x where x >= 0, else weight x; weight one value or one per channel
    (dim 1)."""
    if weight.ndim == 0:
        weight = weight.reshape([1])
    if weight.ndim != 1:
        raise ValueError("prelu: weight must be 0-d or 1-d, got %s" % list(weight.shape))
    if weight.shape[0] != 1 and input.ndim >= 2:
        shape = [1] * input.ndim
        shape[1] = weight.shape[0]
        weight = weight.reshape(shape)
    elif weight.shape[0] != 1 and input.ndim == 1:
        pass
    else:
        weight = weight.reshape([1] * input.ndim) if input.ndim else weight.reshape([])
    return _where(input >= 0, input, input * weight)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along `dim`."""
    return softmax(-input, -1 if dim is None else dim, dtype=dtype)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 x2) / sqrt(max(sum(x1^2) sum(x2^2), eps^2)) along `dim`
    (broadcast first)."""
    from .._compose import broadcast_tensors
    x1, x2 = broadcast_tensors(x1, x2)
    w12 = (x1 * x2).sum(dim)
    n12 = ((x1 * x1).sum(dim) * (x2 * x2).sum(dim)).clamp(min=eps * eps).sqrt()
    return w12 / n12


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim."""
    return (x1 - x2 + eps).norm(p, -1 if max(x1.ndim, x2.ndim) else None, keepdim)


def pixel_shuffle(input, upscale_factor):
    """[*, C r^2, H, W] to [*, C, H r, W r]."""
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError("pixel_shuffle: channels %d are not divisible by %d^2" % (c, r))
    k = len(lead)
    x = input.reshape(lead + [c // (r * r), r, r, h, w])
    order = list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2]
    return x.permute(order).reshape(lead + [c // (r * r), h * r, w * r])


def pixel_unshuffle(input, downscale_factor):
    """[*, C, H r, W r] to [*, C r^2, H, W]."""
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError("pixel_unshuffle: spatial sizes %d, %d are not divisible by %d"
                         % (h, w, r))
    k = len(lead)
    x = input.reshape(lead + [c, h // r, r, w // r, r])
    order = list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3]
    return x.permute(order).reshape(lead + [c * r * r, h // r, w // r])


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)), reduced."""
    return _reduce(softplus(-target * input), reduction, "soft_margin_loss")


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin), reduced."""
    return _reduce((-target * (input1 - input2) + margin).relu(), reduction,
                   "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where y is 1, max(0, margin - x) where y is -1, reduced."""
    # torch's form: a target other than 1 and -1 counts on both sides
    loss = _where(target != 1, (margin - input).relu(), 0.0) + \
        _where(target != -1, input, 0.0)
    return _reduce(loss, reduction, "hinge_embedding_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(x) - y x (log_input) or x - y log(x + eps), plus Stirling's term
    y log y - y + log(2 pi y) / 2 where y > 1 with full, reduced."""
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = _where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + (safe * (2 * _math.pi)).log() * 0.5
        loss = loss + _where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log(max(var, eps)) + (x - y)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2
    with full), reduced; var of input's shape or one less dim (or last 1)."""
    if var.ndim == input.ndim - 1 or (var.ndim == input.ndim and var.shape[-1] == 1 and
                                      input.shape[-1] != 1):
        if var.ndim == input.ndim - 1:
            var = var.unsqueeze(-1)
    var = var.clamp(min=eps)
    loss = (var.log() + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + 0.5 * _math.log(2 * _math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where y is 1, max(0, cos(x1, x2) - margin) where y is
    -1, cos over the last dim (eps 1e-12 as torch's), reduced."""
    eps = 1e-12
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag = (((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)).sqrt()
    cos = prod / mag
    loss = _where(target == 1, 1 - cos, 0.0) + _where(target == -1, (cos - margin).relu(), 0.0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise p-distance
    (swap: d(a, n) as min(d(a, n), d(p, n))), reduced."""
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).relu(), reduction, "triplet_margin_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)), weighted, averaged over
    the classes (the last dim), reduced over the batch."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(input.ndim - 1), reduction, "multilabel_soft_margin_loss")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels (dim 1 of [N, C, H, W] or dim 0 of [C, H, W])
    with probability p, scaling the others by 1 / (1 - p)."""
    return _channel_dropout("dropout2d", input, p, training, 3)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of [N, C, D, H, W] (or [C, D, H, W])."""
    return _channel_dropout("dropout3d", input, p, training, 4)


def _channel_dropout(op, input, p, training, unbatched):
    if not 0.0 <= p <= 1.0:
        raise ValueError("%s: p must be in [0, 1], got %r" % (op, p))
    if not training or p == 0.0:
        return input
    from .. import ones
    shape = list(input.shape[:1 if input.ndim == unbatched else 2]) + \
        [1] * (unbatched - 1 if input.ndim == unbatched else input.ndim - 2)
    keep = dropout(ones(*shape, dtype=input.dtype), p, True)
    return input * keep


def pdist(input, p=2.0):
    """The p-norm distances between the rows of input [N, M], for each pair
    i < j in row order: N (N - 1) / 2 of them (torch's pdist)."""
    from .. import HarpError, Tensor
    if not isinstance(input, Tensor) or input.ndim != 2:
        raise HarpError("pdist: expected a 2-D tensor, got %s"
                        % (list(input.shape) if isinstance(input, Tensor) else type(input).__name__))
    n = input.shape[0]
    if n < 2:
        return input.sum(1)[:0]
    rows, cols = _np.triu_indices(n, 1)
    from .. import tensor
    x = input if input.dtype.name.startswith(("float", "complex")) else input.to(_harp.DType.float32)
    difference = x[tensor(rows.astype(_np.int64))] - x[tensor(cols.astype(_np.int64))]
    return difference.norm(float(p), -1)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum over i, j of input1[..., i] weight[o, i, j]
    input2[..., j] (+ bias[o]): one contraction per pair (torch's
    bilinear)."""
    from .. import HarpError
    from .._einsum import einsum
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or \
            input2.shape[-1] != weight.shape[2]:
        raise HarpError("bilinear: weight %s does not take inputs %s and %s"
                        % (list(weight.shape), list(input1.shape), list(input2.shape)))
    y = einsum("...i,oij,...j->...o", input1, weight, input2)
    return y if bias is None else y + bias


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(mode='nearest') (torch's deprecated upsample_nearest)."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True) (torch's deprecated
    upsample_bilinear)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta,
    the window centred as torch's (an average pool over channels)."""
    from .. import HarpError
    if input.ndim < 3:
        raise HarpError("local_response_norm: expected at least 3 dims [N, C, ...], got %d"
                        % input.ndim)
    if input.numel() == 0:
        return input
    div = (input * input).unsqueeze(1)
    if input.ndim == 3:
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = list(input.shape)
        div = div.reshape([sizes[0], 1, sizes[1], sizes[2], -1])
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    return input / (div * alpha + k) ** beta


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over classes j != y of max(0, margin - x[y] + x[j])^p / C (times
    weight[y]), per sample, reduced."""
    from .. import HarpError
    if p not in (1, 2):
        raise HarpError("multi_margin_loss: p must be 1 or 2, got %r" % (p,))
    x = input if input.ndim == 2 else input.reshape(1, -1)
    y = target.reshape(-1, 1)
    classes = x.shape[1]
    picked = x.gather(1, y)
    terms = (x - picked + margin).relu()
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.gather(0, y.reshape(-1)).reshape(-1, 1)
    from .. import arange
    others = arange(classes, dtype=_harp.DType.int64).reshape(1, -1) != y
    loss = (terms * others.to(terms.dtype)).sum(1) / classes
    if input.ndim < 2:
        loss = loss.reshape([])
    return _reduce(loss, reduction, "multi_margin_loss")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample, over its target classes (target's entries before the
    first -1) and every other class i: max(0, 1 - (x[target] - x[i])) / C,
    summed and reduced."""
    x = input if input.ndim == 2 else input.reshape(1, -1)
    y = target if target.ndim == 2 else target.reshape(1, -1)
    classes = x.shape[1]
    listed = (y != -1).to(_harp.DType.int64).cumprod(1) != 0  # before the first -1
    label = _harp_where(listed, y, 0)
    from .. import arange
    cls = arange(classes, dtype=_harp.DType.int64).reshape(1, 1, -1)
    is_target = ((label.unsqueeze(2) == cls) & listed.unsqueeze(2)).any(1)  # [N, C]
    picked = x.gather(1, label)  # [N, C]: x at each listed target
    hinge = (1 - (picked.unsqueeze(2) - x.unsqueeze(1))).relu()  # [N, k, i]
    mask = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = (hinge * mask.to(hinge.dtype)).sum([1, 2]) / classes
    if input.ndim < 2:
        loss = loss.reshape([])
    return _reduce(loss, reduction, "multilabel_margin_loss")


def _harp_where(cond, a, b):
    from .. import where
    return where(cond, a, b)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the given distance
    (pairwise_distance by default); with swap, d(a, n) is the smaller of it
    and d(p, n). Reduced."""
    distance = distance_function or pairwise_distance
    d_ap = distance(anchor, positive)
    d_an = distance(anchor, negative)
    if swap:
        d_an = d_an.minimum(distance(positive, negative))
    return _reduce((d_ap - d_an + margin).clamp(min=0), reduction,
                   "triplet_margin_with_distance_loss")


def _max_unpool(op, spatial, input, indices, kernel_size, stride, padding, output_size):
    from .. import HarpError, zeros
    def many(value):
        return [int(value)] * spatial if isinstance(value, _numbers.Integral) else \
            [int(v) for v in value]
    kernel = many(kernel_size)
    steps = kernel if stride is None else many(stride)
    pads = many(padding)
    if input.ndim not in (spatial + 1, spatial + 2):
        raise HarpError("%s: expected a %d-d or %d-d input, got %d dims"
                        % (op, spatial + 1, spatial + 2, input.ndim))
    if list(indices.shape) != list(input.shape):
        raise HarpError("%s: indices %s and input %s differ in shape"
                        % (op, list(indices.shape), list(input.shape)))
    lead = list(input.shape[:-spatial])
    inner = list(input.shape[-spatial:])
    if output_size is None:
        size = [(n - 1) * s - 2 * p + k for n, s, p, k in zip(inner, steps, pads, kernel)]
    else:
        size = [int(n) for n in list(output_size)[-spatial:]]
    total = 1
    for n in size:
        total *= n
    x = input.reshape(lead + [-1])
    where = indices.reshape(lead + [-1])
    base = zeros(*(lead + [total]), dtype=input.dtype)
    d = len(lead)
    out = base.scatter(d, where, x.detach())
    # The gradient is a gather at the indices, as torch's: every input
    # written to a position (overlapping windows repeat an index) gets its
    # gradient. scatter_add's gradient is that gather, and its two terms
    # cancel in the values.
    added = base.scatter_add(d, where, x)
    out = out + (added - added.detach())
    return out.reshape(lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool1d: each value written at its index of the
    output's length, zeros elsewhere (torch's max_unpool1d)."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: each value written at its flat index of the
    output's H x W plane, zeros elsewhere (torch's max_unpool2d)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d over D x H x W (torch's max_unpool3d)."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


# SELU's negative saturation, -scale * alpha: what alpha dropout drops to.
_ALPHA_PRIME = -1.7580993408473766


def _alpha_dropout(op, input, p, training, feature):
    if not 0.0 <= p <= 1.0:
        raise ValueError("%s: p must be in [0, 1], got %r" % (op, p))
    if not training or p == 0.0:
        return input
    from .. import bernoulli, full, zeros_like
    if p == 1.0:
        return zeros_like(input)
    shape = list(input.shape)
    if feature:
        shape = shape[:2] + [1] * (len(shape) - 2)
    keep = bernoulli(full(shape, 1.0 - p, dtype=input.dtype))
    a = ((1 - p) * (1 + p * _ALPHA_PRIME ** 2)) ** -0.5
    b = -a * _ALPHA_PRIME * p
    return (input * keep + (1 - keep) * _ALPHA_PRIME) * a + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's mean and variance: dropped elements go to
    SELU's saturation, then an affine map restores the moments."""
    return _alpha_dropout("alpha_dropout", input, p, training, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels (dim 1)."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, True)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of [N, C, L] (or [C, L]) with probability p,
    scaling the others by 1 / (1 - p)."""
    return _channel_dropout("dropout1d", input, p, training, 2)


def _lp_pool(op, spatial, input, norm_type, kernel_size, stride, ceil_mode):
    kernel = [int(kernel_size)] * spatial if isinstance(kernel_size, _numbers.Integral) else \
        [int(k) for k in kernel_size]
    pool = avg_pool1d if spatial == 1 else avg_pool2d
    window = 1
    for k in kernel:
        window *= k
    p = float(norm_type)
    mean = pool(input ** p, kernel if spatial > 1 else kernel[0], stride, 0, ceil_mode)
    # (sum x^p)^(1/p), the sum as the mean times the window; a window whose
    # sum is negative (odd p) keeps its sign, as torch's.
    total = mean * window
    return total.sign() * total.abs().relu() ** (1.0 / p)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x^p over each window)^(1/p) along the last dim (torch's lp_pool1d)."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x^p over each window)^(1/p) over the last two dims (torch's lp_pool2d)."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def channel_shuffle(input, groups):
    """[N, g * c, *] with its channels read group-interleaved: [N, c * g, *]
    (torch's channel_shuffle)."""
    from .. import HarpError
    shape = list(input.shape)
    if len(shape) < 3 or shape[1] % groups:
        raise HarpError("channel_shuffle: expected [N, C, ...] with C divisible by %d, got %s"
                        % (groups, shape))
    g = int(groups)
    x = input.reshape([shape[0], g, shape[1] // g] + shape[2:])
    return x.transpose(1, 2).reshape(shape)
