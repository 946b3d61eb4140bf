"""harp.autograd: gradient mode, with torch.autograd's names.

    with harp.no_grad():
        target = model(next_x)          # a constant to backward()
    loss = F.mse_loss(model(x), target)
    loss.backward()                     # no gradient flows into `target`

While gradient mode is off, every tensor built is a constant to
`backward()`: differentiation stops there (its values are computed first,
once, when a leaf that requires a gradient is under it). The mode belongs to
the calling thread, as torch's. `no_grad`, `enable_grad`, `set_grad_enabled`
and `inference_mode` are context managers and function decorators.

Gradients, as torch.autograd computes them:

    loss.backward()                       # into .grad of every leaf
    y.backward(v)                         # y not 0-d: the product v^T J
    loss.backward(inputs=[w])             # into w.grad only
    gw, gb = harp.autograd.grad(loss, [w, b])   # returned, .grad untouched
    (gh,) = harp.autograd.grad(loss, [hidden])  # a computed tensor too

    g, = harp.autograd.grad(loss, [w], create_graph=True)
    (g * v).sum().backward()              # w.grad: the Hessian times v

    loss.backward(create_graph=True)      # w.grad: a computed tensor
    w.grad.pow(2).sum().backward()        # differentiated through it

harp keeps every graph (it is lazy), so `retain_graph` is accepted and has
no effect. With `create_graph=True` the gradients are computed tensors, a
nested `harp.autodiff` in the IR (docs/Autodiff.md), computed when read:
grad() returns them, backward() makes them each leaf's .grad (its old
gradient plus the new one). A later backward() without it computes such a
.grad first and accumulates into the values.
"""

import functools
import numbers

import numpy as np

from . import _harp
from ._harp import HarpError, Tensor

__all__ = ["backward", "enable_grad", "grad", "inference_mode",
           "is_grad_enabled", "no_grad", "set_grad_enabled"]

is_grad_enabled = _harp.is_grad_enabled


class _GradMode:
    """A context manager and decorator setting gradient mode to `_mode`
    inside, and restoring the previous mode after."""

    _mode = True

    def __enter__(self):
        self._previous = _harp.is_grad_enabled()
        _harp._set_grad_enabled(self._mode)
        return None

    def __exit__(self, *exc):
        _harp._set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        if not callable(fn):
            raise TypeError("%s: decorates a function, got %s"
                            % (type(self).__name__, type(fn).__name__))

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapped

    def clone(self):
        return type(self)()


class no_grad(_GradMode):
    """Gradient mode off inside (torch.no_grad): for evaluation, for updates
    written by hand (`p -= lr * p.grad`), and for targets that must not be
    differentiated."""

    _mode = False


class enable_grad(_GradMode):
    """Gradient mode on inside, also within no_grad (torch.enable_grad)."""

    _mode = True


class inference_mode(_GradMode):
    """torch.inference_mode(mode=True): no_grad when `mode` is true."""

    def __init__(self, mode=True):
        self._mode = not bool(mode)

    def clone(self):
        return inference_mode(not self._mode)


class set_grad_enabled(_GradMode):
    """Sets gradient mode to `mode` at once (torch.set_grad_enabled(False)
    as a statement), or for a `with` block, restoring the previous mode at
    its end."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError("set_grad_enabled: mode must be a bool, got %s"
                            % type(mode).__name__)
        self._previous = _harp.is_grad_enabled()
        self._mode = mode
        _harp._set_grad_enabled(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _harp._set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        # As a decorator the mode applies inside each call only: the mode
        # set when the decorator was built is undone.
        _harp._set_grad_enabled(self._previous)
        return _Scoped(self._mode)(fn)


class _Scoped(_GradMode):
    def __init__(self, mode):
        self._mode = mode

    def clone(self):
        return _Scoped(self._mode)


# Gradients ---------------------------------------------------------------


def _tensors(op, what, value):
    """`value` (a Tensor or a sequence of them) as a list."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if not isinstance(item, Tensor):
                raise TypeError("%s: %s[%d] must be a harp.Tensor, got %s"
                                % (op, what, i, type(item).__name__))
        if not value:
            raise ValueError("%s: %s must not be empty" % (op, what))
        return list(value)
    raise TypeError("%s: %s must be a harp.Tensor or a sequence of them, got %s"
                    % (op, what, type(value).__name__))


def _grad_output(op, i, output, given, create_graph=False):
    """The cotangent of outputs[i]: `given` as a constant of the output's
    dtype and shape (with `create_graph`, a tensor that requires a gradient
    stays in the graph: the gradients are linear in it), or None for a 0-d
    output without one (its gradient is 1)."""
    if given is None:
        if output.dim() != 0:
            raise HarpError(
                "%s: outputs[%d] has shape %s: a gradient can be implicitly "
                "created only for a 0-d output; pass the gradient of this "
                "output (grad_outputs / gradient) of the same shape"
                % (op, i, list(output.shape)))
        return None
    if isinstance(given, Tensor):
        value = given if create_graph else given.detach()
    elif isinstance(given, (numbers.Number, np.ndarray, list, tuple)):
        from . import tensor
        array = np.asarray(given)
        if isinstance(given, numbers.Number):
            array = np.full(list(output.shape), given)
        value = tensor(array, dtype=output.dtype)
    else:
        raise TypeError("%s: the gradient of outputs[%d] must be a harp.Tensor, "
                        "got %s" % (op, i, type(given).__name__))
    if list(value.shape) != list(output.shape):
        raise HarpError("%s: the gradient of outputs[%d] has shape %s, the "
                        "output %s" % (op, i, list(value.shape),
                                       list(output.shape)))
    if value.dtype != output.dtype:
        value = value.to(output.dtype)
    return value


def _scalar_loss(op, outputs, grad_outputs, create_graph=False):
    """The 0-d loss whose gradients are the vector-Jacobian products asked
    for: sum over i of <outputs[i], grad_outputs[i]>."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor) or not isinstance(
            grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise ValueError("%s: %d gradients given for %d outputs"
                         % (op, len(grad_outputs), len(outputs)))
    loss = None
    # Built with gradient mode on: under no_grad the terms would be
    # constants to differentiation.
    with enable_grad():
        for i, (output, given) in enumerate(zip(outputs, grad_outputs)):
            if not output.is_floating_point() or output.is_complex():
                raise HarpError("%s: outputs[%d] is a %s tensor: only real "
                                "float outputs are differentiated"
                                % (op, i, output.dtype.name))
            cotangent = _grad_output(op, i, output, given, create_graph)
            term = output if cotangent is None else (output * cotangent).sum()
            loss = term if loss is None else loss + term
    return loss


def _options(threads, vectorize, cpu):
    return dict(threads=threads, vectorize=vectorize, cpu=cpu)


def backward(tensors, grad_tensors=None, retain_graph=None,
             create_graph=False, grad_variables=None, inputs=None, *,
             threads=None, vectorize=None, cpu=None):
    """torch.autograd.backward: accumulates the gradient of the sum of
    <tensors[i], grad_tensors[i]> into .grad of every leaf that requires a
    gradient (of `inputs` only, where given). `grad_tensors[i]` may be None
    for a 0-d tensor (its gradient is 1). With `create_graph=True` each
    .grad becomes a computed tensor, differentiable again (nothing runs
    until it is read; the hooks of harp.distributed do not see it).
    `threads`, `vectorize` and `cpu` override harp.set_options for this
    call."""
    op = "backward"
    if grad_variables is not None:
        if grad_tensors is not None:
            raise TypeError("backward: grad_tensors and grad_variables (its "
                            "old name) both given")
        grad_tensors = grad_variables
    outputs = _tensors(op, "tensors", tensors)
    leaves = None if inputs is None else _tensors(op, "inputs", inputs)
    loss = _scalar_loss(op, outputs, grad_tensors, bool(create_graph))
    _harp._backward(loss, leaves, bool(create_graph),
                    **_options(threads, vectorize, cpu))


def _tensor_backward(self, gradient=None, retain_graph=None,
                     create_graph=False, inputs=None, *, threads=None,
                     vectorize=None, cpu=None):
    """Tensor.backward (torch's): accumulates d(self)/d(leaf) into .grad of
    every leaf that requires a gradient, or of `inputs` only. A tensor that
    is not 0-d needs `gradient` (its shape): the leaves then receive the
    product of it with the Jacobian. `retain_graph` is accepted (harp keeps
    every graph); with `create_graph=True` .grad is a computed tensor that
    can be differentiated again.
    `threads`, `vectorize` and `cpu` override harp.set_options for this
    call."""
    backward([self], None if gradient is None else [gradient], retain_graph,
             create_graph, inputs=inputs, threads=threads,
             vectorize=vectorize, cpu=cpu)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None,
         create_graph=False, only_inputs=True, allow_unused=False,
         is_grads_batched=False, *, threads=None, vectorize=None, cpu=None):
    """torch.autograd.grad: the gradients of the sum of <outputs[i],
    grad_outputs[i]> with respect to each of `inputs` (leaves that require a
    gradient, or tensors computed in the outputs' graph), as a tuple; no
    .grad changes. An input the outputs do not depend on raises, or gives
    None with allow_unused=True. With `create_graph=True` the gradients are
    computed tensors (a harp.autodiff of the outputs' graph, computed when
    read) that backward() and grad() differentiate again: Hessian-vector
    products, gradient penalties. `is_grads_batched=True` raises
    NotImplementedError."""
    op = "grad"
    if is_grads_batched:
        raise NotImplementedError("grad: is_grads_batched=True (a batch of "
                                  "grad_outputs) is not supported yet")
    outs = _tensors(op, "outputs", outputs)
    wrt = _tensors(op, "inputs", inputs)
    loss = _scalar_loss(op, outs, grad_outputs, bool(create_graph))
    found = _harp._gradients(loss, wrt, bool(create_graph),
                             **_options(threads, vectorize, cpu))
    if not allow_unused:
        for i, g in enumerate(found):
            if g is None:
                raise HarpError(
                    "grad: inputs[%d] (%s %s) was not used to compute the "
                    "outputs; pass allow_unused=True to get None for it"
                    % (i, wrt[i].dtype.name, list(wrt[i].shape)))
    return tuple(found)
