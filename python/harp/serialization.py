"""harp.save and harp.load: PyTorch's checkpoint functions, over pickle.

A harp tensor pickles as its values (a NumPy array, realized if it was
computed), its device and whether it requires a gradient, and unpickles as a
new leaf tensor holding them; its gradient and the graph that computed it
are not kept, as torch keeps neither. So `pickle`, `copy.deepcopy` and
`harp.save` / `harp.load` work on tensors and on everything made of them:
state dicts, whole modules, optimizer state dicts, lists and dicts of
tensors.

    harp.save(model.state_dict(), "model.pt")
    model.load_state_dict(harp.load("model.pt"))

The files are pickle streams (not torch's zip archives: torch cannot read
them, nor harp torch's), except where the path ends in ".safetensors": a
dict of tensors (a state dict) is then written in the safetensors format,
which torch, JAX and Hugging Face read, and read back as a dict of tensors
(harp.safetensors). `harp.load(..., weights_only=True)` unpickles only
tensors, NumPy arrays, numbers, strings and the built-in containers, and
raises HarpError naming anything else, as torch's `weights_only` does: the
way to read a file from elsewhere, since unpickling can run arbitrary code.
"""

import collections
import copyreg
import io
import os
import pickle

import numpy as np

from . import _harp
from ._harp import HarpError, Tensor

__all__ = ["save", "load"]

# The map_location of the harp.load running on this thread of control, if
# any: _rebuild_tensor reads it (pickle gives reconstructors no arguments of
# their own).
_map_location = None


def _target_device(device):
    """Where a tensor saved on `device` is loaded, under the current
    map_location (None, a device name or harp.device, a dict from saved
    device names to new ones, or a callable taking (tensor, device name))."""
    where = _map_location
    if where is None or callable(where) and not isinstance(where, (str, dict)):
        return device
    if isinstance(where, dict):
        return str(where.get(device, device))
    return str(where)


def _rebuild_tensor(array, device, requires_grad):
    """A new leaf tensor holding `array` on `device` (as mapped by the
    running load's map_location)."""
    result = _harp.from_numpy(np.array(array, order="C"), _target_device(device))
    where = _map_location
    if callable(where) and not isinstance(where, (str, dict)):
        result = where(result, device)
        if not isinstance(result, Tensor):
            raise HarpError("load: map_location returned %s, not a harp tensor"
                            % type(result).__name__)
    if requires_grad:
        result.requires_grad = True
    return result


def _reduce_tensor(tensor):
    """Tensor.__reduce__: its values, device and requires_grad."""
    return (_rebuild_tensor,
            (np.array(tensor.detach().numpy()), str(tensor.device),
             bool(tensor.requires_grad)))


def _deepcopy_tensor(tensor, memo):
    """Tensor.__deepcopy__: a new leaf with the same values, device and
    requires_grad, as pickling it and back gives."""
    function, args = _reduce_tensor(tensor)
    result = function(*args)
    memo[id(tensor)] = result
    return result


def install():
    """Makes harp tensors picklable and deep-copyable (called once by
    harp/__init__.py)."""
    copyreg.pickle(Tensor, _reduce_tensor)
    if "__deepcopy__" not in vars(Tensor):
        Tensor.__deepcopy__ = _deepcopy_tensor
    if "__reduce__" not in vars(Tensor):
        Tensor.__reduce__ = _reduce_tensor


def _opened(f, mode, op):
    """(file object, whether we opened it) for a path or a file object."""
    if isinstance(f, (str, bytes, os.PathLike)):
        try:
            return open(f, mode), True
        except OSError as error:
            raise HarpError("%s: cannot open %r: %s" % (op, os.fsdecode(f), error.strerror))
    needed = "write" if "w" in mode else "read"
    if not hasattr(f, needed):
        raise HarpError("%s: f must be a path or a file object with %s(), got %s"
                        % (op, needed, type(f).__name__))
    return f, False


def _is_safetensors(f):
    return isinstance(f, (str, os.PathLike)) and \
        os.fspath(f).endswith(".safetensors")


def save(obj, f, pickle_module=pickle, pickle_protocol=2):
    """Writes `obj` (a tensor, a state dict, a module, an optimizer's
    state dict, any picklable object holding tensors) to `f`, a path or a
    binary file object, as torch.save. Tensors are stored by value
    (computed ones realized first); see harp.load. A path ending in
    ".safetensors" takes a dict from names to tensors or arrays (a state
    dict) and is written in that format (harp.safetensors.save_file)."""
    if _is_safetensors(f):
        if not isinstance(obj, dict):
            raise HarpError("save: a .safetensors file holds a dict from names "
                            "to tensors (a state dict), got %s" % type(obj).__name__)
        from . import safetensors
        safetensors.save_file(obj, f)
        return
    stream, owned = _opened(f, "wb", "save")
    try:
        pickle_module.dump(obj, stream, protocol=pickle_protocol)
    finally:
        if owned:
            stream.close()


# What weights_only admits besides harp's tensors: NumPy arrays and scalars
# and the built-in containers a state dict is made of.
_SAFE_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "complex"): complex,
    ("builtins", "slice"): slice,
    ("_codecs", "encode"): __import__("codecs").encode,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): np.core.multiarray._reconstruct,
    ("numpy.core.multiarray", "scalar"): np.core.multiarray.scalar,
    ("harp.serialization", "_rebuild_tensor"): _rebuild_tensor,
}


class _WeightsUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        found = _SAFE_GLOBALS.get((module, name))
        if found is None:
            raise HarpError(
                "load: weights_only=True refuses %s.%s (only tensors, NumPy "
                "arrays, numbers, strings and built-in containers load this "
                "way; pass weights_only=False for a file you trust)" % (module, name))
        return found


def load(f, map_location=None, pickle_module=pickle, weights_only=False,
         **pickle_load_args):
    """Reads what harp.save wrote to `f` (a path or a binary file object),
    as torch.load. `map_location` moves tensors: a device ("cpu", "cuda",
    harp.device), a dict from saved device names to new ones, or a callable
    taking (tensor, saved device name) and returning a tensor.
    `weights_only=True` unpickles only tensors, NumPy arrays, numbers,
    strings and built-in containers (HarpError names anything else)."""
    global _map_location
    if map_location is not None and not (
            isinstance(map_location, (str, dict)) or callable(map_location)
            or hasattr(map_location, "type")):
        raise HarpError("load: map_location must be a device, a dict or a "
                        "callable, got %s" % type(map_location).__name__)
    if map_location is not None and not isinstance(map_location, (str, dict)) \
            and not callable(map_location):
        map_location = str(map_location)
    if _is_safetensors(f):
        from . import safetensors
        tensors = safetensors.load_file(f)
        if map_location is None:
            return tensors
        previous = _map_location
        _map_location = map_location
        try:
            for name, tensor in tensors.items():
                tensors[name] = _rebuild_tensor(tensor.numpy(), "cpu", False)
        finally:
            _map_location = previous
        return tensors
    stream, owned = _opened(f, "rb", "load")
    previous = _map_location
    _map_location = map_location
    try:
        if weights_only:
            return _WeightsUnpickler(stream, **pickle_load_args).load()
        return pickle_module.load(stream, **pickle_load_args)
    except (pickle.UnpicklingError, EOFError) as error:
        raise HarpError("load: not a file harp.save wrote (%s)" % error)
    finally:
        _map_location = previous
        if owned:
            stream.close()
