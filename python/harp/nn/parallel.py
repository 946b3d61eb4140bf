"""harp.nn.parallel: torch.nn.parallel's DistributedDataParallel (defined in
harp.distributed)."""

from ..distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
