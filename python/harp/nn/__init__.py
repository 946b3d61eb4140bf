"""harp.nn: torch.nn's modules (harp.nn.Linear, Conv2d, BatchNorm2d,
Sequential, MultiheadAttention, losses, ...), functions (harp.nn.functional)
and initialisers (harp.nn.init) over harp tensors."""

from . import functional, init  # noqa: F401
from .modules import *  # noqa: F401,F403
from . import parallel  # noqa: F401,E402
from .modules import __all__ as _modules_all

__all__ = ["functional", "init", "parallel"] + list(_modules_all)
