"""harp.nn: torch.nn's modules (harp.nn.Linear, Conv2d, BatchNorm2d,
Sequential, MultiheadAttention, losses, ...), functions (harp.nn.functional),
initialisers (harp.nn.init) and utilities (harp.nn.utils: gradient
clipping) over harp tensors."""

from . import functional, init  # noqa: F401
from .modules import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from . import parallel  # noqa: F401,E402
from . import utils  # noqa: F401,E402
from .modules import __all__ as _modules_all
from .rnn import __all__ as _rnn_all

__all__ = ["functional", "init", "parallel", "utils"] + list(_modules_all) + list(_rnn_all)
