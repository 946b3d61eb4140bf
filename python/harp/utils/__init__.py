"""harp.utils: torch.utils's data loading, as harp.utils.data (datasets,
samplers, DataLoader)."""

from . import data  # noqa: F401

__all__ = ["data"]
