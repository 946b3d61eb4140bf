"""harp.special: torch.special's functions harp computes, composed from its
element-wise ops (differentiable through them), and torch.special's names
of harp's own functions."""

import math

from ._harp import Tensor
from ._compose import _check, _float, _where, sinc, xlogy
from ._numeric import erfc, logit
from . import _functions

__all__ = ["entr", "ndtr", "log_ndtr", "xlog1py", "erf", "erfc", "expit", "logit", "exp2",
           "expm1", "log1p", "xlogy", "sinc", "round", "softmax", "log_softmax", "logsumexp"]


def entr(input):
    """-x log(x): 0 at 0, -inf below 0 (torch.special.entr)."""
    x = _float("special.entr", input)
    positive = x > 0
    safe = _where(positive, x, 1.0)
    return _where(positive, -safe * safe.log(), _where(x == 0, 0.0, _where(x < 0, -math.inf, x)))


def ndtr(input):
    """The standard normal CDF, erfc(-x / sqrt(2)) / 2 (accurate in the lower
    tail; torch.special.ndtr)."""
    x = _float("special.ndtr", input)
    return (x * -math.sqrt(0.5)).erfc() * 0.5


# Below this the CDF's log comes from its asymptotic series: erfc underflows
# (f32 near -13, f64 near -37).
_LOG_NDTR_SERIES = -10.0


def log_ndtr(input):
    """log of the standard normal CDF, accurate far into the lower tail
    (torch.special.log_ndtr): log(erfc(-x / sqrt(2)) / 2) above -10, the
    asymptotic series -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 -
    15/x^6 + 105/x^8 - 945/x^10) below."""
    x = _float("special.log_ndtr", input)
    tail = x < _LOG_NDTR_SERIES
    near = _where(tail, 0.0, x)
    direct = ((near * -math.sqrt(0.5)).erfc() * 0.5).log()
    far = _where(tail, x, _LOG_NDTR_SERIES)
    r = 1.0 / (far * far)
    series = 1 + r * (-1 + r * (3 + r * (-15 + r * (105 + r * -945))))
    asymptotic = far * far * -0.5 - (-far).log() - 0.5 * math.log(2 * math.pi) + series.log()
    return _where(tail, asymptotic, direct)


def xlog1py(input, other):
    """x log1p(y), 0 where x is 0 (unless y is NaN) (torch.special.xlog1py)."""
    from . import full_like
    if not isinstance(input, Tensor):
        input = full_like(_float("special.xlog1py", other), input)
    if not isinstance(other, Tensor):
        other = full_like(_float("special.xlog1py", input), other)
    x, y = _float("special.xlog1py", input), _float("special.xlog1py", other)
    return _where((x == 0) & ~y.isnan(), 0.0, x * y.log1p())


# torch.special's names of harp's own functions (integers promoted to
# float32 by them, as torch's).
erf, exp2, expm1, log1p = _functions.erf, _functions.exp2, _functions.expm1, _functions.log1p
expit = _functions.sigmoid


def round(input, decimals=0):
    """x rounded half to even (to `decimals` places) (torch.special.round)."""
    return _functions.round(input, decimals=decimals)


def softmax(input, dim, *, dtype=None):
    """The softmax along `dim` (torch.special.softmax)."""
    _check("special.softmax", input)
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """The log of the softmax along `dim` (torch.special.log_softmax)."""
    _check("special.log_softmax", input)
    return input.log_softmax(dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over `dim`, stably (torch.special.logsumexp)."""
    _check("special.logsumexp", input)
    return input.logsumexp(dim, keepdim)
