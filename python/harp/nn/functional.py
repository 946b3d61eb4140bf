"""harp.nn.functional: activations, losses, convolution, pooling,
normalization, dropout, embedding and attention with torch.nn.functional's
names and arguments, composed from harp ops (so each has a gradient through
harp-autodiff). Numbers passed here (alpha, slopes, bounds) are arguments of
the compiled code, like any Python number."""

from .. import _harp

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm",
           "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "conv1d", "conv2d", "conv3d", "conv_transpose1d",
           "conv_transpose2d", "conv_transpose3d", "cross_entropy", "dropout",
           "elu", "embedding", "gelu", "group_norm", "hardtanh",
           "instance_norm", "l1_loss", "layer_norm", "leaky_relu", "linear",
           "log_softmax", "max_pool1d", "max_pool2d", "max_pool3d", "mse_loss",
           "nll_loss", "normalize", "one_hot", "pad", "relu",
           "scaled_dot_product_attention", "sigmoid", "silu", "softmax",
           "softplus", "tanh"]


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
    """input @ weight.T + bias, for weight [out_features, in_features]."""
    if len(weight.shape) != 2 or input.shape[-1] != weight.shape[1]:
        raise ValueError("linear: input %s and weight %s do not match (weight "
                         "[out_features, %d] expected)"
                         % (list(input.shape), list(weight.shape), input.shape[-1]))
    out = input.matmul(weight.T)
    return out if bias is None else out + bias


def _conv_padding(padding, kernel, stride, dilation, k, op):
    """(before, after) per spatial dim for an int, a tuple, "valid" or
    "same" (which puts the odd element after, as torch)."""
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * k, [0] * k
        if padding != "same":
            raise ValueError("%s: padding must be an int, a tuple, 'valid' or "
                             "'same', got %r" % (op, padding))
        if any(s != 1 for s in stride):
            raise ValueError("%s: padding='same' needs stride 1, got %s"
                             % (op, stride))
        total = [d * (n - 1) for d, n in zip(dilation, kernel)]
        return [t // 2 for t in total], [t - t // 2 for t in total]
    p = _ints(padding, k, "padding", op)
    if any(v < 0 for v in p):
        raise ValueError("%s: negative padding %s" % (op, p))
    return p, list(p)


def _conv(op, k, input, weight, bias, stride, padding, dilation, groups):
    input, unbatched = _batched(input, k, op)
    if len(weight.shape) != k + 2:
        raise ValueError("%s: weight must be [out_channels, in_channels/groups, "
                         "%s], got %s" % (op, ", ".join("k" + s for s in _spatial_names(k)),
                                          list(weight.shape)))
    n, c = input.shape[0], input.shape[1]
    f = weight.shape[0]
    if groups < 1 or c % groups or f % groups:
        raise ValueError("%s: groups=%d must divide the input channels (%d) and the "
                         "output channels (%d)" % (op, groups, c, f))
    if weight.shape[1] * groups != c:
        raise ValueError("%s: input %s has %d channels but weight %s with groups=%d "
                         "expects %d" % (op, list(input.shape), c, list(weight.shape),
                                         groups, weight.shape[1] * groups))
    kernel = list(weight.shape[2:])
    stride = _ints(stride, k, "stride", op)
    dilation = _ints(dilation, k, "dilation", op)
    before, after = _conv_padding(padding, kernel, stride, dilation, k, op)
    for i in range(k):
        span = dilation[i] * (kernel[i] - 1) + 1
        if input.shape[2 + i] + before[i] + after[i] < span:
            raise ValueError("%s: kernel %s (dilation %s) is larger than the padded "
                             "input %s" % (op, kernel, dilation, list(input.shape)))
    if groups == 1 and before == after:
        out = _harp.conv(input, weight, stride, before, dilation)
    else:
        if any(before) or any(after):
            input = input.pad([0, 0] + before, [0, 0] + after)
        if groups == 1:
            out = _harp.conv(input, weight, stride, [0] * k, dilation)
        else:
            # Per group g: out[n, g, f, o...] = sum over c, kernel of
            # windows[n, g, c, o..., k...] * weight[g, f, c, k...].
            windows = _harp.unfold(input, kernel, stride, dilation)
            outs = list(windows.shape[2:2 + k])
            cg, fg = c // groups, f // groups
            windows = windows.reshape([n, groups, 1, cg] + outs + kernel)
            w = weight.reshape([1, groups, fg, cg] + [1] * k + kernel)
            dims = [3] + list(range(4 + k, 4 + 2 * k))
            out = (windows * w).sum(dims).reshape([n, f] + outs)
    if bias is not None:
        out = out + bias.reshape([1, -1] + [1] * k)
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
    n, c = input.shape[0], input.shape[1]
    if groups < 1 or c % groups:
        raise ValueError("%s: groups=%d must divide the input channels (%d)"
                         % (op, groups, c))
    if weight.shape[0] != c:
        raise ValueError("%s: input %s has %d channels but weight %s expects %d"
                         % (op, list(input.shape), c, list(weight.shape), weight.shape[0]))
    kernel = list(weight.shape[2:])
    stride = _ints(stride, k, "stride", op)
    padding = _ints(padding, k, "padding", op)
    output_padding = _ints(output_padding, k, "output_padding", op)
    dilation = _ints(dilation, k, "dilation", op)
    for i in range(k):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise ValueError("%s: output_padding %s must be smaller than the stride %s "
                             "or the dilation %s" % (op, output_padding, stride, dilation))
    fg = weight.shape[1]
    cg, f = c // groups, fg * groups
    sizes = list(input.shape[2:])
    # cols[n, g, f, i..., k...] = sum over c of x[n, g, c, i...] w[g, c, f, k...],
    # then every window added back at its place (fold, the adjoint of the
    # sliding windows of the convolution this one transposes).
    x = input.reshape([n, groups, cg, 1] + sizes + [1] * k)
    w = weight.reshape([1, groups, cg, fg] + [1] * k + kernel)
    cols = (x * w).sum(2).reshape([n, f] + sizes + kernel)
    full = [(sizes[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 for i in range(k)]
    out = _harp.fold(cols, full, stride, dilation)
    if any(output_padding):
        out = out.pad([0, 0] + [0] * k, [0, 0] + output_padding)
    for i in range(k):
        size = full[i] + output_padding[i] - 2 * padding[i]
        if size <= 0:
            raise ValueError("%s: padding %s leaves no output for input %s"
                             % (op, padding, list(input.shape)))
        if padding[i]:
            out = out.slice(2 + i, padding[i], padding[i] + size)
    if bias is not None:
        out = out + bias.reshape([1, -1] + [1] * k)
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


def _pool_geometry(op, k, input, kernel_size, stride, padding, dilation, ceil_mode):
    """kernel, stride, dilation, padding before/after and output sizes of a
    pooling, with torch's rules (ceil_mode windows must start inside the
    input or its left padding)."""
    kernel = _ints(kernel_size, k, "kernel_size", op)
    stride = kernel if stride is None or stride == [] or stride == () \
        else _ints(stride, k, "stride", op)
    padding = _ints(padding, k, "padding", op)
    dilation = _ints(dilation, k, "dilation", op)
    if any(v <= 0 for v in kernel + stride + dilation):
        raise ValueError("%s: kernel_size, stride and dilation must be positive, got "
                         "%s, %s, %s" % (op, kernel, stride, dilation))
    if any(2 * p > n for p, n in zip(padding, kernel)) or min(padding) < 0:
        raise ValueError("%s: padding %s must be between 0 and half the kernel %s"
                         % (op, padding, kernel))
    outs, after = [], []
    for i in range(k):
        size = input.shape[2 + i]
        span = dilation[i] * (kernel[i] - 1) + 1
        room = size + 2 * padding[i] - span
        if room < 0:
            raise ValueError("%s: input %s is smaller than the window %s (dilation %s, "
                             "padding %s)" % (op, list(input.shape), kernel, dilation, padding))
        out = (room + (stride[i] - 1 if ceil_mode else 0)) // stride[i] + 1
        if ceil_mode and (out - 1) * stride[i] >= size + padding[i]:
            out -= 1
        outs.append(out)
        after.append(max(padding[i], (out - 1) * stride[i] + span - size - padding[i]))
    return kernel, stride, dilation, padding, after, outs


def _max_pool(op, k, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    if return_indices:
        raise ValueError("%s: return_indices=True is not supported; use argmax over "
                         "unfold windows" % op)
    input, unbatched = _batched(input, k, op)
    kernel, stride, dilation, before, after, _ = _pool_geometry(
        op, k, input, kernel_size, stride, padding, dilation, ceil_mode)
    if any(before) or any(after):
        input = input.pad([0, 0] + before, [0, 0] + after, float("-inf"))
    windows = _harp.unfold(input, kernel, stride, dilation)
    out = windows.max(list(range(2 + k, 2 + 2 * k)))
    return out.squeeze(0) if unbatched else out


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
    import numpy as np
    from .. import tensor
    input, unbatched = _batched(input, k, op)
    kernel, stride, _, before, after, outs = _pool_geometry(
        op, k, input, kernel_size, stride, padding, 1, ceil_mode)
    if any(before) or any(after):
        input = input.pad([0, 0] + before, [0, 0] + after)
    windows = _harp.unfold(input, kernel, stride, [1] * k)
    total = windows.sum(list(range(2 + k, 2 + 2 * k)))
    if divisor_override:
        out = total * (1.0 / divisor_override)
    else:
        # Each window's element count, as torch: windows are clipped to the
        # padded input (ceil_mode), and to the input itself unless
        # count_include_pad; the count of a box is the product per dim.
        counts = np.ones([1] * 0)
        for i in range(k):
            size = input.shape[2 + i] - before[i] - after[i]
            start = np.arange(outs[i]) * stride[i] - before[i]
            end = np.minimum(start + kernel[i], size + before[i])
            if not count_include_pad:
                end = np.minimum(end, size)
                start = np.maximum(start, 0)
            counts = np.multiply.outer(counts, end - start)
        if (counts == counts.flat[0]).all():
            out = total * (1.0 / float(counts.flat[0]))
        else:
            scale = (1.0 / counts).astype(_numpy_float(total))
            out = total * tensor(scale)
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


def _adaptive_bounds(size, out):
    """torch's adaptive windows: [floor(j size / out), ceil((j + 1) size / out))."""
    return [((j * size) // out, -((-(j + 1) * size) // out)) for j in range(out)]


def _adaptive_avg_pool(op, k, input, output_size):
    import numpy as np
    from .. import tensor
    input, unbatched = _batched(input, k, op)
    sizes = _adaptive_sizes(op, k, input, output_size)
    rank = len(input.shape)
    np_type = _numpy_float(input)
    out = input
    for i in range(k):
        dim, size, o = 2 + i, input.shape[2 + i], sizes[i]
        if o == size:
            continue
        if o == 1:
            out = out.mean(dim, keepdim=True)
            continue
        # A separable average: the dim times an [size, o] matrix of 1/count.
        weights = np.zeros((size, o), np_type)
        for j, (start, end) in enumerate(_adaptive_bounds(size, o)):
            weights[start:end, j] = 1.0 / (end - start)
        moved = out.transpose(dim, rank - 1) if dim != rank - 1 else out
        moved = moved.matmul(tensor(weights))
        out = moved.transpose(dim, rank - 1) if dim != rank - 1 else moved
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


def _adaptive_max_pool(op, k, input, output_size, return_indices):
    from .. import concat
    if return_indices:
        raise ValueError("%s: return_indices=True is not supported" % op)
    input, unbatched = _batched(input, k, op)
    sizes = _adaptive_sizes(op, k, input, output_size)
    out = input
    for i in range(k):
        dim, size, o = 2 + i, input.shape[2 + i], sizes[i]
        if o == size:
            continue
        # The maximum is separable too: per dim, the max of each window.
        parts = [out.slice(dim, start, end).max(dim, keepdim=True)
                 for start, end in _adaptive_bounds(size, o)]
        out = parts[0] if o == 1 else concat(parts, dim)
    return out.squeeze(0) if unbatched else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum over adaptive windows of [N, C, L]."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over adaptive windows of [N, C, H, W]."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over adaptive windows of [N, C, D, H, W]."""
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
    rank = len(input.shape)
    if rank < 2:
        raise ValueError("batch_norm: expected input [N, C, ...], got %s" % list(input.shape))
    c = input.shape[1]
    shape = [1, c] + [1] * (rank - 2)
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != [c]:
            raise ValueError("batch_norm: %s must have shape [%d] for input %s, got %s"
                             % (name, c, list(input.shape), list(t.shape)))
    if training:
        count = input.numel() // c
        if count <= 1:
            raise ValueError("batch_norm: expected more than 1 value per channel when "
                             "training, got input %s" % list(input.shape))
        dims = [0] + list(range(2, rank))
        mean = input.mean(dims, keepdim=True)
        var = (input - mean).square().mean(dims, keepdim=True)
        if running_mean is not None:
            # Detached: the statistics carry no gradient.
            m = float(momentum)
            batch_mean = mean.reshape(c).detach()
            batch_var = var.reshape(c).detach()
            running_mean.copy_(running_mean * (1 - m) + batch_mean * m)
            running_var.copy_(running_var * (1 - m) + batch_var * (m * count / (count - 1)))
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: evaluation needs running_mean and running_var")
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalizes over the trailing dims `normalized_shape` (mean and biased
    variance), then scales by weight and shifts by bias of that shape."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    k = len(shape)
    if k == 0 or list(input.shape[len(input.shape) - k:]) != shape:
        raise ValueError("layer_norm: normalized_shape %s does not end input %s"
                         % (shape, list(input.shape)))
    dims = list(range(len(input.shape) - k, len(input.shape)))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    out = centered * (centered.square().mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalizes [N, C, ...] over each group of C / num_groups channels
    (with their spatial dims), then a per-channel weight and bias."""
    rank = len(input.shape)
    if rank < 2 or num_groups <= 0 or input.shape[1] % num_groups:
        raise ValueError("group_norm: num_groups=%d must divide the channels of input %s"
                         % (num_groups, list(input.shape)))
    n, c = input.shape[0], input.shape[1]
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(2, keepdim=True)
    centered = grouped - mean
    out = (centered * (centered.square().mean(2, keepdim=True) + eps).rsqrt())
    out = out.reshape(list(input.shape))
    shape = [1, c] + [1] * (rank - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def instance_norm(input, weight=None, bias=None, eps=1e-5):
    """Normalizes each channel of each sample over its spatial dims."""
    return group_norm(input, input.shape[1], weight, bias, eps)


_seed = [0x5EED]


def manual_seed(seed):
    """Restarts the sequence of seeds that dropout draws (one per call)."""
    _seed[0] = int(seed) & 0x7FFFFFFFFFFFFFFF


def _next_seed():
    _seed[0] = (_seed[0] * 6364136223846793005 + 1442695040888963407) & 0x7FFFFFFFFFFFFFFF
    return _seed[0]


def dropout(input, p=0.5, training=True, inplace=False, seed=None):
    """Zeroes each element with probability p and scales the others by
    1 / (1 - p) when training; the identity otherwise. The mask comes from
    harp's counter-based generator with a new seed per call (or `seed`);
    the seed is a run-time argument, so no call compiles anew."""
    if not 0.0 <= p <= 1.0:
        raise ValueError("dropout: p must be in [0, 1], got %r" % p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    draw = _harp.rand_seeded(input.dtype, list(input.shape),
                             _next_seed() if seed is None else int(seed))
    return _harp.where(draw >= p, input * (1.0 / (1.0 - p)), 0.0)


def embedding(input, weight, padding_idx=None):
    """Rows of weight [num_embeddings, dim] picked by the integer indices
    `input` (any shape): the result is input.shape + [dim]. The row
    padding_idx gets no gradient, as torch's."""
    if len(weight.shape) != 2:
        raise ValueError("embedding: weight must be [num_embeddings, dim], got %s"
                         % list(weight.shape))
    rows, dim = weight.shape
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += rows
        if not 0 <= padding_idx < rows:
            raise ValueError("embedding: padding_idx %d outside [0, %d)" % (padding_idx, rows))
        from .. import arange
        keep = arange(rows).ne(padding_idx).reshape(rows, 1)
        weight = _harp.where(keep, weight, weight.detach())
    flat = input.reshape(-1, 1).expand(-1, dim)
    return _harp.gather(weight, flat, 0).reshape(list(input.shape) + [dim])


def one_hot(tensor, num_classes=-1):
    """int64 [..., num_classes] with a 1 at each index (num_classes=-1: the
    largest index + 1)."""
    from .. import arange, int64
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1
    return tensor.unsqueeze(-1).eq(arange(num_classes, dtype=tensor.dtype)).astype(int64)


def pad(input, pad, mode="constant", value=0.0):
    """torch.nn.functional.pad: `pad` lists (before, after) pairs from the
    last dim backwards; negative amounts crop. mode "constant" only."""
    if mode != "constant":
        raise ValueError("pad: mode %r is not supported (only 'constant')" % mode)
    pad = list(pad)
    rank = len(input.shape)
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise ValueError("pad: needs pairs for at most %d dims, got %s" % (rank, pad))
    before, after = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        before[rank - 1 - i], after[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
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


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None):
    """softmax(query key^T * scale + mask) value over [..., L, E] queries
    and [..., S, E] keys/values; scale defaults to 1/sqrt(E). attn_mask is
    bool (True keeps) or float (added); is_causal keeps key j <= query i.
    Masked scores are -inf (a select, so masked values never leak)."""
    import math
    import numpy as np
    from .. import bool_, tensor
    if len(query.shape) < 2 or query.shape[-1] != key.shape[-1] \
            or key.shape[-2] != value.shape[-2]:
        raise ValueError("scaled_dot_product_attention: query %s, key %s and value %s "
                         "do not match ([..., L, E], [..., S, E], [..., S, Ev])"
                         % (list(query.shape), list(key.shape), list(value.shape)))
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = query.matmul(key.transpose(-2, -1)) * factor
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: give attn_mask or "
                             "is_causal, not both")
        attn_mask = tensor(np.tril(np.ones((length, source), bool)))
    if attn_mask is not None:
        if attn_mask.dtype == bool_:
            scores = _harp.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights.matmul(value)
