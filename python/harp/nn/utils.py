"""harp.nn.utils: torch.nn.utils's gradient clipping and the conversions
between parameters and one vector.

Gradients are the tensors `p.grad` gives (each read shares the gradient's
storage); the clipping functions write the clipped values into them with
`copy_`, as an optimizer writes parameters, so the next `opt.step()` reads
them and nothing runs until then but what `error_if_nonfinite` needs.
"""

import math

from .. import _harp
from .._harp import HarpError, Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]


def _tensors(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the gradients of `parameters` (a tensor or an iterable of
    them) so that their joint norm (of all of them as one vector; norm_type
    a number, inf or "inf") is at most max_norm: each is multiplied by
    min(1, max_norm / (norm + 1e-6)). Returns the norm before clipping, a
    0-d tensor (torch.nn.utils.clip_grad_norm_). With error_if_nonfinite
    a NaN or infinite norm raises RuntimeError, and nothing is written."""
    from .._ops import stack
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return _harp.full(_harp.DType.float32, [], 0.0)
    if norm_type == math.inf:
        norms = [g.abs().max() for g in grads]
    else:
        norms = [g.norm(norm_type) for g in grads]
    dtype = norms[0].dtype
    for n in norms[1:]:
        dtype = _harp.promote(dtype, n.dtype)
    norms = stack([n.to(dtype) for n in norms])
    total = norms.max() if norm_type == math.inf else norms.norm(norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError("clip_grad_norm_: the total norm of order %r for gradients "
                           "from `parameters` is non-finite, so it cannot be clipped. To "
                           "disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`" % norm_type)
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.copy_(g * coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value):
    """Clamps the gradients of `parameters` (a tensor or an iterable of
    them) to [-clip_value, clip_value] (torch.nn.utils.clip_grad_value_)."""
    clip_value = float(clip_value)
    for p in _tensors(parameters):
        g = p.grad
        if g is not None:
            g.copy_(g.clamp(-clip_value, clip_value))


def _same_device(op, tensors):
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise TypeError("%s: found parameters on different devices (%s), which is not "
                        "supported" % (op, ", ".join(sorted(devices))))


def parameters_to_vector(parameters):
    """The parameters flattened and joined into one 1-D tensor (a
    differentiable concat) (torch.nn.utils.parameters_to_vector)."""
    from .. import concat
    tensors = _tensors(parameters)
    _same_device("parameters_to_vector", tensors)
    return concat([p.reshape(-1) for p in tensors])


def vector_to_parameters(vec, parameters):
    """Writes consecutive pieces of the 1-D `vec` into the parameters, each
    reshaped to its parameter's shape and cast to its dtype, in place
    (copy_) (torch.nn.utils.vector_to_parameters)."""
    if not isinstance(vec, Tensor):
        raise TypeError("vector_to_parameters: expected a harp.Tensor, but got: %s"
                        % type(vec).__name__)
    if vec.ndim != 1:
        raise HarpError("vector_to_parameters: vec must be 1-D, got shape %s"
                        % list(vec.shape))
    tensors = _tensors(parameters)
    _same_device("vector_to_parameters", tensors)
    needed = sum(p.numel() for p in tensors)
    if needed != vec.shape[0]:
        raise HarpError("vector_to_parameters: the parameters have %d elements, vec %d"
                        % (needed, vec.shape[0]))
    start = 0
    for p in tensors:
        n = p.numel()
        p.copy_(vec.slice(0, start, start + n, 1).reshape(list(p.shape)))
        start += n
