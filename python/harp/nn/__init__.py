"""harp.nn: neural-network functions with torch.nn's names (modules come
with the rest of the op catalogue)."""

from . import functional  # noqa: F401

__all__ = ["functional"]
