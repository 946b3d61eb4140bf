"""Weights in the safetensors format, with the functions of safetensors.torch.

    harp.safetensors.save_file(model.state_dict(), "model.safetensors")
    model.load_state_dict(harp.safetensors.load_file("model.safetensors"))

`harp.save(obj, path)` and `harp.load(path)` do the same when the path ends
in ".safetensors". The files are the format PyTorch, JAX and Hugging Face
share: an 8-byte little-endian header length, a JSON header naming each
tensor's dtype, shape and byte range plus optional string metadata, then
the tensors' bytes. harp reads and writes BOOL, U8..U64, I8..I64, F32 and
F64 tensors; F16, BF16 and the 8-bit floats have no harp dtype yet and
complex tensors no safetensors dtype, and name the tensor in the error.

A file is checked whole before anything is made of it (its length, the
header, every entry, that the tensors' bytes tile the data); a damaged file
raises HarpError naming the file and the problem and returns nothing. A
write goes to a temporary file renamed over the path at the end.
"""

import os
from collections import OrderedDict

import numpy as np

from . import _harp
from ._harp import HarpError, Tensor

__all__ = ["save_file", "load_file", "save", "load", "load_metadata"]


def _tensor(name, value):
    """A state dict's value (harp or torch tensor, NumPy array) as a harp
    tensor; HarpError names the entry otherwise."""
    if isinstance(value, Tensor):
        return value.detach()
    try:
        if hasattr(value, "detach") and hasattr(value, "cpu") \
                and not isinstance(value, np.ndarray):
            value = value.detach().cpu().numpy()  # a torch tensor
        if isinstance(value, (np.ndarray, np.generic)):
            return _harp.from_numpy(np.asarray(value, order="C"), None)
    except TypeError as error:  # a dtype NumPy or harp has not
        raise HarpError("safetensors: tensor '%s': %s" % (name, error))
    raise HarpError("safetensors: tensor '%s' is a %s, not a tensor or an "
                    "array" % (name, type(value).__name__))


def _pairs(tensors, op):
    """(name, harp tensor) pairs of a dict of tensors."""
    if not hasattr(tensors, "items"):
        raise HarpError("%s: tensors must be a dict from names to tensors, "
                        "got %s" % (op, type(tensors).__name__))
    pairs = []
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise HarpError("%s: tensor names must be strings, got %r" % (op, name))
        pairs.append((name, _tensor(name, value)))
    return pairs


def _metadata(metadata, op):
    if metadata is None:
        return {}
    if not hasattr(metadata, "items") or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise HarpError("%s: metadata must be a dict of strings to strings" % op)
    return dict(metadata)


def _placed(pairs, device):
    result = OrderedDict()
    for name, tensor in pairs:
        result[name] = tensor if device is None else tensor.to(str(device))
    return result


def save_file(tensors, filename, metadata=None):
    """Writes `tensors` (a dict from names to harp or torch tensors or NumPy
    arrays: a state dict) and `metadata` (strings to strings) to the
    safetensors file `filename`."""
    _harp._safetensors_save(os.fspath(filename), _pairs(tensors, "save_file"),
                            _metadata(metadata, "save_file"))


def save(tensors, metadata=None):
    """The bytes save_file would write."""
    return _harp._safetensors_serialize(_pairs(tensors, "save"),
                                        _metadata(metadata, "save"))


def load_file(filename, device=None):
    """The tensors of the safetensors file `filename`, as a dict from names
    to new harp tensors in the file's order (on `device` when given)."""
    pairs, _ = _harp._safetensors_load(os.fspath(filename))
    return _placed(pairs, device)


def load(data, device=None):
    """The tensors of a safetensors file's bytes (as save returns them)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise HarpError("load: data must be bytes, got %s" % type(data).__name__)
    pairs, _ = _harp._safetensors_parse(bytes(data), "<bytes>")
    return _placed(pairs, device)


def load_metadata(filename):
    """The "__metadata__" strings of the safetensors file `filename` (the
    whole file is checked, as load_file does)."""
    _, metadata = _harp._safetensors_load(os.fspath(filename))
    return metadata
