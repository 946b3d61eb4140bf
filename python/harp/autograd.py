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
"""

import functools

from . import _harp

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "no_grad",
           "set_grad_enabled"]

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
