"""harp.nn modules: torch.nn's layers, containers and losses over harp
tensors, with PyTorch's constructor arguments, attribute names, parameter
names and default initialisation.

    model = harp.nn.Sequential(harp.nn.Linear(4, 8), harp.nn.ReLU(),
                               harp.nn.Linear(8, 1))
    opt = harp.optim.SGD(model.parameters(), lr=0.1)
    loss = harp.nn.MSELoss()(model(x), y)
    loss.backward()
    opt.step()

A parameter is a harp leaf tensor that requires a gradient (`Parameter`
makes one): assigning one to a module attribute registers it, as assigning a
module registers a submodule; a tensor without a gradient is a plain
attribute, and `register_buffer` adds state without a gradient that is
saved (BatchNorm's running statistics; a computed buffer is loaded by
replacing it with the loaded values). Only leaves (`t.is_leaf`) require a
gradient, so only they are taken for parameters. Harp tensors are
values: `inplace=True` arguments are accepted and change nothing. `state_dict()` gives NumPy arrays
under torch's key names, so a torch model's `state_dict()` (its values
turned into NumPy) loads into the harp model of the same layout, and the
other way round. Each forward is composed from harp.nn.functional, so it is
lazy and differentiable like any harp expression.
"""

import copy
import math
import warnings
from collections import OrderedDict, namedtuple
from itertools import islice

import numpy as np

from .. import _harp
from . import functional as F
from . import init

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "BCELoss", "BCEWithLogitsLoss",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "Conv3d",
    "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "CrossEntropyLoss",
    "Dropout", "ELU", "Embedding", "Flatten", "GELU", "GroupNorm", "Hardtanh",
    "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax",
    "MSELoss", "MaxPool1d", "MaxPool2d", "MaxPool3d", "Module", "ModuleDict",
    "ModuleList", "MultiheadAttention", "NLLLoss", "Parameter", "ReLU", "ReLU6",
    "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus", "Tanh",
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderLayer", "Upsample",
    "UpsamplingBilinear2d", "UpsamplingNearest2d", "load",
]


#===------------------------------------------------------------------------===#
# Tensors
#===------------------------------------------------------------------------===#


def Parameter(data, requires_grad=True):
    """A new harp leaf tensor holding a copy of `data` (a harp tensor, a
    NumPy array or array-like; Python floats become float32) that requires
    a gradient: what a module registers as a parameter when assigned to one
    of its attributes."""
    device = "cpu"
    if isinstance(data, _harp.Tensor):
        device = data.device
        array = np.array(data.numpy())
    else:
        array = np.array(data)
        if array.dtype == np.float64 and not isinstance(data, np.ndarray):
            array = array.astype(np.float32)
    result = _harp.from_numpy(np.array(array, order="C"), device)
    if requires_grad:
        result.requires_grad = True
    return result


def _empty(*shape):
    """A float32 parameter of `shape`, zero until an initialiser fills it."""
    return Parameter(np.zeros(shape, np.float32))


def _as_tensor(value):
    """A harp tensor for `value` (a harp tensor is kept; NumPy arrays and
    array-likes, e.g. class indices or masks, become constants)."""
    if value is None or isinstance(value, _harp.Tensor):
        return value
    return _harp.from_numpy(np.array(value, order="C"), "cpu")


def _to_numpy(value):
    """A state_dict value (NumPy array, harp or torch tensor) as NumPy."""
    if hasattr(value, "detach") and not isinstance(value, np.ndarray):
        value = value.detach()
    if hasattr(value, "cpu") and not isinstance(value, (np.ndarray, _harp.Tensor)):
        value = value.cpu()  # a torch tensor
    return np.asarray(value)


def _is_float(tensor):
    return tensor.dtype.name in ("float32", "float64")


def _dims(shape):
    return "[%s]" % ", ".join(str(d) for d in shape)


def _tuple(value, n, name="value"):
    """`value` (an int or n ints) as an n-tuple (torch's _single/_pair/_triple)."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError("%s needs 1 or %d values, got %r" % (name, n, value))
        return tuple(int(v) for v in value)
    return (int(value),) * n


_SPATIAL = {1: ["L"], 2: ["H", "W"], 3: ["D", "H", "W"]}


def _check_spatial(module, input, channels, k):
    """Checks that `input` is [N, C, spatial...] or [C, spatial...] with k
    spatial dims (and C == channels unless channels is None); returns
    whether it has the batch dim. Raises ValueError naming the module, the
    expected layout and the shape."""
    shape = list(input.shape)
    c = "C" if channels is None else str(channels)
    batched, single = ["N", c] + _SPATIAL[k], [c] + _SPATIAL[k]
    if len(shape) == k + 2 and channels in (None, shape[1]):
        return True
    if len(shape) == k + 1 and channels in (None, shape[0]):
        return False
    if len(shape) == k + 2:
        expected = _dims(batched)
    elif len(shape) == k + 1:
        expected = _dims(single)
    else:
        expected = "%s or %s" % (_dims(batched), _dims(single))
    raise ValueError("%s: expected input %s, got %s"
                     % (type(module).__name__, expected, _dims(shape)))


def _batched(module, input, channels, k, fn):
    """fn(input) for [N, C, spatial...] input; a [C, spatial...] input is
    given a batch of one and loses it again, as torch's unbatched inputs."""
    if _check_spatial(module, input, channels, k):
        return fn(input)
    return fn(input.unsqueeze(0)).squeeze(0)


#===------------------------------------------------------------------------===#
# Module
#===------------------------------------------------------------------------===#


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """The base of every layer, as torch.nn.Module: subclasses call
    `super().__init__()`, assign parameters (harp leaf tensors that require
    a gradient), submodules and buffers as attributes, and define
    `forward`; calling the module runs `forward`."""

    training = True

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError("%s has no forward" % type(self).__name__)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # Registration ------------------------------------------------------------

    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign %s before Module.__init__() call" % what)

    def register_parameter(self, name, param):
        """Adds a parameter (a harp tensor, or None for an absent one such
        as a layer's bias without one)."""
        self._check_init("parameters")
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError("parameter name must be a non-empty string without '.', "
                           "got %r" % (name,))
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError("attribute %r already exists" % name)
        if param is not None and not isinstance(param, _harp.Tensor):
            raise TypeError("cannot assign %r as parameter %r (a harp tensor or None "
                            "expected)" % (type(param).__name__, name))
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a buffer: module state without a gradient (a harp tensor or
        None), part of state_dict() unless persistent is False."""
        self._check_init("buffers")
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError("buffer name must be a non-empty string without '.', "
                           "got %r" % (name,))
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError("attribute %r already exists" % name)
        tensor = _as_tensor(tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name, module):
        """Adds a submodule (or None)."""
        self._check_init("modules")
        if module is not None and not isinstance(module, Module):
            raise TypeError("%s is not a Module subclass" % type(module).__name__)
        if not isinstance(name, str) or "." in name or name == "":
            raise KeyError("module name must be a non-empty string without '.', "
                           "got %r" % (name,))
        if hasattr(self, name) and name not in self._modules:
            raise KeyError("attribute %r already exists" % name)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, _harp.Tensor) and value.requires_grad:
            self._check_init("parameters")
            self._discard(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None and not isinstance(value, _harp.Tensor):
                raise TypeError("cannot assign %r as parameter %r (a harp tensor or "
                                "None expected)" % (type(value).__name__, name))
            params[name] = value
        elif isinstance(value, Module):
            self._check_init("modules")
            self._discard(name)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError("cannot assign %r as child module %r (a Module or None "
                                "expected)" % (type(value).__name__, name))
            self._modules[name] = value
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, _harp.Tensor):
                raise TypeError("cannot assign %r as buffer %r (a harp tensor or None "
                                "expected)" % (type(value).__name__, name))
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name):
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name):
        # Only called when ordinary lookup fails.
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters)
                      | set(self._buffers) | set(self._modules))

    # Traversal ---------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every descendant, each
        once."""
        if memo is None:
            memo = set()
        if remove_duplicate and id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """This module and every descendant."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """(name, module) for the direct submodules."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, table, prefix, recurse):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, parameter) pairs, each parameter once, in
        registration order (torch's names: "0.weight", "layers.1.bias")."""
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        """The parameters (for an optimizer: harp.optim.SGD(m.parameters()))."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True):
        """(dotted name, buffer) pairs."""
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        """The buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target):
        """The submodule at a dotted path ("" is this module)."""
        module = self
        for item in target.split(".") if target else []:
            if item not in module._modules or module._modules[item] is None:
                raise AttributeError("%s has no submodule %r" % (module._get_name(), item))
            module = module._modules[item]
        return module

    def apply(self, fn):
        """Calls fn on every submodule, then on this module; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # State -------------------------------------------------------------------

    def _state_tensors(self, prefix=""):
        """OrderedDict of state_dict's names to the tensors behind them."""
        return OrderedDict((key, table[name]) for key, (table, name)
                           in self._state_slots(prefix).items())

    def _state_slots(self, prefix=""):
        """OrderedDict of state_dict's names to where each tensor is held:
        (the module's _parameters or _buffers table, the name in it)."""
        entries = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                entries[prefix + name] = (self._parameters, name)
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers:
                entries[prefix + name] = (self._buffers, name)
        for name, module in self._modules.items():
            if module is not None:
                entries.update(module._state_slots(prefix + name + "."))
        return entries

    def state_dict(self, prefix=""):
        """An OrderedDict of every parameter and persistent buffer as a
        NumPy array (a copy), under torch's names."""
        return OrderedDict((name, np.array(tensor.numpy()))
                           for name, tensor in self._state_tensors(prefix).items())

    def load_state_dict(self, state_dict, strict=True):
        """Writes the arrays of `state_dict` (NumPy arrays, harp or torch
        tensors, under state_dict()'s names) into the parameters and buffers
        in place, cast to their dtypes. A buffer that is a computed tensor
        (register_buffer of an expression) is replaced by a tensor holding
        the loaded values. Raises RuntimeError naming every key whose shape
        differs and, when strict, every missing or unexpected key; nothing
        is written then. Returns (missing_keys, unexpected_keys)."""
        slots = self._state_slots()
        own = OrderedDict((key, table[name]) for key, (table, name) in slots.items())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors, arrays = [], {}
        for key, tensor in own.items():
            if key not in state_dict:
                continue
            array = _to_numpy(state_dict[key])
            if tuple(array.shape) != tuple(tensor.shape):
                errors.append("size mismatch for %s: copying a param with shape %s from "
                              "checkpoint, the shape in current model is %s."
                              % (key, _dims(array.shape), _dims(tensor.shape)))
            arrays[key] = array
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: %s."
                              % ", ".join('"%s"' % k for k in unexpected))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: %s."
                              % ", ".join('"%s"' % k for k in missing))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for %s:\n\t%s"
                               % (self._get_name(), "\n\t".join(errors)))
        for key, array in arrays.items():
            tensor = own[key]
            values = np.array(array, dtype=np.dtype(tensor.dtype.name), order="C")
            if tensor.is_leaf:
                tensor.copy_(values)
            else:
                # A computed buffer has no storage to write: the module now
                # holds the loaded values instead.
                table, name = slots[key]
                table[name] = _harp.from_numpy(values, tensor.device)
        return _IncompatibleKeys(missing, unexpected)

    def save_npz(self, path):
        """Saves state_dict() with numpy.savez (one array per key)."""
        np.savez(path, **self.state_dict())

    def load_npz(self, path, strict=True):
        """Loads what save_npz (or numpy.savez of a state dict) wrote."""
        with np.load(path) as data:
            return self.load_state_dict({k: data[k] for k in data.files}, strict)

    # Modes and gradients -----------------------------------------------------

    def train(self, mode=True):
        """Sets training mode (Dropout drops, BatchNorm uses and updates
        batch statistics) here and in every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        """train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Sets requires_grad of every parameter; returns self."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Forgets every parameter's accumulated gradient."""
        for param in self.parameters():
            param.zero_grad()

    # Types and devices -------------------------------------------------------

    def _convert(self, fn):
        """Replaces every parameter and buffer t with fn(t) (a new leaf);
        tensors shared between modules stay shared."""
        done = {}
        for module in self.modules():
            for table in (module._parameters, module._buffers):
                for name, tensor in table.items():
                    if tensor is None:
                        continue
                    if id(tensor) not in done:
                        done[id(tensor)] = fn(tensor)
                    table[name] = done[id(tensor)]
        return self

    def to(self, *args, dtype=None, device=None):
        """The module with its floating-point parameters and buffers in
        `dtype` (harp.float32 / harp.float64) and everything on `device`
        ("cpu" / "cuda"): to(harp.float64), to("cpu"), to("cpu", harp.float64).
        Tensors that change become new leaves (an optimizer built before
        must be built again); the module itself is returned."""
        for arg in args:
            if isinstance(arg, str):
                device = arg
            elif isinstance(arg, _harp.DType):
                dtype = arg
            else:
                raise TypeError("to: expected a dtype or a device name, got %r" % (arg,))
        if dtype is not None and dtype.name not in ("float32", "float64"):
            raise TypeError("to: only floating-point dtypes are allowed, got %s" % dtype.name)

        def convert(tensor):
            new_dtype = dtype if dtype is not None and _is_float(tensor) else tensor.dtype
            new_device = device if device is not None else tensor.device
            if new_dtype == tensor.dtype and new_device == tensor.device:
                return tensor
            array = np.array(tensor.numpy(), dtype=np.dtype(new_dtype.name), order="C")
            result = _harp.from_numpy(array, new_device)
            if tensor.requires_grad:
                result.requires_grad = True
            return result

        return self._convert(convert)

    def double(self):
        """to(harp.float64)."""
        return self.to(_harp.DType.float64)

    def float(self):
        """to(harp.float32)."""
        return self.to(_harp.DType.float32)

    def cpu(self):
        """to("cpu")."""
        return self.to("cpu")

    def cuda(self):
        """to("cuda")."""
        return self.to("cuda")

    def __deepcopy__(self, memo):
        # Harp tensors do not copy themselves: each parameter and buffer is
        # first copied into a new leaf in `memo` (shared ones stay shared).
        for module in self.modules():
            for table in (module._parameters, module._buffers):
                for tensor in table.values():
                    if tensor is not None and id(tensor) not in memo:
                        result = _harp.from_numpy(np.array(tensor.numpy()), tensor.device)
                        if tensor.requires_grad:
                            result.requires_grad = True
                        memo[id(tensor)] = result
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            object.__setattr__(new, key, copy.deepcopy(value, memo))
        return new

    # Printing ----------------------------------------------------------------

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The module's own settings, printed inside its repr."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(%s): %s" % (key, _addindent(repr(module), 2))
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


def load(path, module):
    """Loads the arrays saved by module.save_npz(path) into `module` and
    returns it."""
    module.load_npz(path)
    return module


#===------------------------------------------------------------------------===#
# Containers
#===------------------------------------------------------------------------===#


class Sequential(Module):
    """Modules applied in order: Sequential(m0, m1, ...) or
    Sequential(OrderedDict(name=module, ...)); indexing, slicing (a new
    Sequential), len, iteration, append, insert, extend."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def _index(self, idx):
        size = len(self)
        idx = int(idx)
        if not -size <= idx < size:
            raise IndexError("index %d is out of range" % idx)
        return idx % size

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return next(islice(self._modules.values(), self._index(idx), None))

    def __setitem__(self, idx, module):
        key = list(self._modules)[self._index(idx)]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[self._index(idx)]]):
            del self._modules[key]
        # Index names are renumbered, as torch does.
        items = list(self._modules.items())
        self._modules.clear()
        for i, (key, module) in enumerate(items):
            self._modules[str(i) if key.isdigit() else key] = module

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Adds `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Puts `module` before position `index`; returns self."""
        modules = list(self._modules.values())
        n = len(modules)
        if not -n <= index <= n:
            raise IndexError("index %d is out of range" % index)
        modules.insert(index % (n + 1) if index < 0 else index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)
        return self

    def extend(self, modules):
        """Appends every module of `modules`; returns self."""
        for module in modules:
            self.append(module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of submodules (registered, so their parameters are the
    list's): indexing, slicing, len, iteration, append, extend, insert."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, idx):
        size = len(self)
        idx = int(idx)
        if not -size <= idx < size:
            raise IndexError("index %d is out of range" % idx)
        return idx % size

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(self._index(idx))]

    def __setitem__(self, idx, module):
        self.add_module(str(self._index(idx)), module)

    def __delitem__(self, idx):
        modules = list(self._modules.values())
        del modules[idx if isinstance(idx, slice) else self._index(idx)]
        self._modules.clear()
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return type(self)(list(self) + list(other))

    def append(self, module):
        """Adds `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Appends every module of `modules`; returns self."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        """Puts `module` before position `index`."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """An ordered dict of submodules: [key], len, iteration over keys, in,
    keys, values, items, update, pop, clear."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def clear(self):
        """Removes every item."""
        self._modules.clear()

    def pop(self, key):
        """Removes `key` and returns its module."""
        module = self._modules[key]
        del self._modules[key]
        return module

    def update(self, modules):
        """Adds the pairs of a mapping or an iterable of (key, module)."""
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module


#===------------------------------------------------------------------------===#
# Linear, Identity, Flatten, Dropout, Embedding
#===------------------------------------------------------------------------===#


class Identity(Module):
    """Returns its input (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b for x [..., in_features]: weight [out_features,
    in_features] and bias [out_features], both U(-1/sqrt(in_features),
    1/sqrt(in_features)) as torch's (kaiming_uniform_ with a = sqrt(5))."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = _empty(out_features, in_features)
        if bias:
            self.bias = _empty(out_features)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Draws the weight and the bias again."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        if len(input.shape) < 1 or input.shape[-1] != self.in_features:
            raise ValueError("%s: expected input [..., %d], got %s"
                             % (self._get_name(), self.in_features, _dims(input.shape)))
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%s, out_features=%s, bias=%s" % (
            self.in_features, self.out_features, self.bias is not None)


class NonDynamicallyQuantizableLinear(Linear):
    """Linear under the name torch gives MultiheadAttention.out_proj."""


class Flatten(Module):
    """input.flatten(start_dim, end_dim): by default every dim after the
    batch dim into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return "start_dim=%s, end_dim=%s" % (self.start_dim, self.end_dim)


class Upsample(Module):
    """F.interpolate(input, size, scale_factor, mode, align_corners) as a
    module (torch.nn.Upsample)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest",
                 align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.size = size
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode,
                             self.align_corners, self.recompute_scale_factor)

    def extra_repr(self):
        what = ("size=%s" % (self.size,) if self.size is not None
                else "scale_factor=%s" % (self.scale_factor,))
        return "%s, mode=%r" % (what, self.mode)


class UpsamplingNearest2d(Upsample):
    """Upsample with mode "nearest" (torch.nn.UpsamplingNearest2d)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode "bilinear" and align_corners=True
    (torch.nn.UpsamplingBilinear2d)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


class Dropout(Module):
    """In training, zeroes each element with probability p and scales the
    others by 1 / (1 - p); in eval mode, the identity."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError("dropout probability has to be between 0 and 1, but got %s" % p)
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        if not self.training or self.p == 0:
            return input
        return F.dropout(input, self.p, True)

    def extra_repr(self):
        return "p=%s, inplace=%s" % (self.p, self.inplace)


class Embedding(Module):
    """Rows of `weight` [num_embeddings, embedding_dim] (drawn from
    N(0, 1)) picked by integer indices; the padding_idx row starts at zero
    and gets no gradient."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("Embedding: padding_idx %d must be within num_embeddings "
                                 "(%d)" % (padding_idx, num_embeddings))
            if padding_idx < 0:
                padding_idx += num_embeddings
        if max_norm is not None and (not isinstance(max_norm, (int, float)) or max_norm <= 0):
            raise ValueError("Embedding: max_norm must be a positive number, got %r"
                             % (max_norm,))
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.register_parameter("weight", _empty(num_embeddings, embedding_dim))
            self.reset_parameters()
        else:
            weight = Parameter(_weight, requires_grad=not _freeze)
            if tuple(weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Embedding: _weight has shape %s, expected %s"
                                 % (_dims(weight.shape), _dims([num_embeddings, embedding_dim])))
            self.register_parameter("weight", weight)
        if _freeze:
            self.weight.requires_grad_(False)

    def reset_parameters(self):
        """Draws the weight again from N(0, 1), the padding row zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            values = np.array(self.weight.numpy())
            values[self.padding_idx] = 0
            self.weight.copy_(values)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding holding a copy of `embeddings` [num, dim]; frozen
        (no gradient) unless freeze is False."""
        rows, cols = tuple(np.shape(_to_numpy(embeddings)))
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                   sparse, _weight=_to_numpy(embeddings), _freeze=freeze)

    def forward(self, input):
        return F.embedding(_as_tensor(input), self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = "%s, %s" % (self.num_embeddings, self.embedding_dim)
        if self.padding_idx is not None:
            s += ", padding_idx=%s" % self.padding_idx
        if self.max_norm is not None:
            s += ", max_norm=%s" % self.max_norm
        if self.norm_type != 2:
            s += ", norm_type=%s" % self.norm_type
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        if self.sparse:
            s += ", sparse=True"
        return s


#===------------------------------------------------------------------------===#
# Convolutions
#===------------------------------------------------------------------------===#


class _ConvNd(Module):
    """Shared by ConvNd and ConvTransposeNd: the weight [out, in / groups,
    kernel...] ([in, out / groups, kernel...] transposed) and bias [out],
    drawn as torch's: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""

    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode):
        super().__init__()
        name, k = type(self).__name__, self._dims
        if groups <= 0:
            raise ValueError("%s: groups must be a positive integer" % name)
        if in_channels % groups != 0:
            raise ValueError("%s: in_channels must be divisible by groups" % name)
        if out_channels % groups != 0:
            raise ValueError("%s: out_channels must be divisible by groups" % name)
        if padding_mode != "zeros":
            raise ValueError("%s: padding_mode %r is not supported (only 'zeros')"
                             % (name, padding_mode))
        if isinstance(padding, str):
            if transposed:
                raise ValueError("%s: string padding is not supported" % name)
            if padding not in ("same", "valid"):
                raise ValueError("%s: invalid padding string %r, should be one of "
                                 "{'valid', 'same'}" % (name, padding))
            if padding == "same" and any(s != 1 for s in _tuple(stride, k)):
                raise ValueError("%s: padding='same' is not supported for strided "
                                 "convolutions" % name)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, k, "kernel_size")
        self.stride = _tuple(stride, k, "stride")
        self.padding = padding if isinstance(padding, str) else _tuple(padding, k, "padding")
        self.dilation = _tuple(dilation, k, "dilation")
        self.transposed = transposed
        self.output_padding = _tuple(output_padding, k, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        if transposed:
            self.weight = _empty(in_channels, out_channels // groups, *self.kernel_size)
        else:
            self.weight = _empty(out_channels, in_channels // groups, *self.kernel_size)
        if bias:
            self.bias = _empty(out_channels)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Draws the weight and the bias again."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "%s, %s, kernel_size=%s, stride=%s" % (
            self.in_channels, self.out_channels, self.kernel_size, self.stride)
        if self.padding != (0,) * len(self.padding):
            s += ", padding=%s" % (self.padding,)
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation=%s" % (self.dilation,)
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding=%s" % (self.output_padding,)
        if self.groups != 1:
            s += ", groups=%s" % self.groups
        if self.bias is None:
            s += ", bias=False"
        return s


class _Conv(_ConvNd):

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode)

    def forward(self, input):
        conv = getattr(F, "conv%dd" % self._dims)
        return _batched(self, input, self.in_channels, self._dims,
                        lambda x: conv(x, self.weight, self.bias, self.stride,
                                       self.padding, self.dilation, self.groups))


class Conv1d(_Conv):
    """1-D convolution over [N, C_in, L] (or [C_in, L]), torch.nn.Conv1d:
    stride, padding (ints or "same" / "valid"), dilation, groups."""
    _dims = 1


class Conv2d(_Conv):
    """2-D convolution over [N, C_in, H, W] (or [C_in, H, W]),
    torch.nn.Conv2d: stride, padding (ints or "same" / "valid"), dilation,
    groups."""
    _dims = 2


class Conv3d(_Conv):
    """3-D convolution over [N, C_in, D, H, W] (or [C_in, D, H, W]),
    torch.nn.Conv3d."""
    _dims = 3


class _ConvTranspose(_ConvNd):

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode)

    def _output_padding(self, input, output_size):
        """The output_padding that gives `output_size` (torch's rule),
        self.output_padding when it is None."""
        if output_size is None:
            return self.output_padding
        k = self._dims
        output_size = list(output_size)
        batch = len(input.shape) == k + 2
        if len(output_size) == k + (2 if batch else 1):
            output_size = output_size[-k:]
        if len(output_size) != k:
            raise ValueError("%s: output_size must have %d or %d elements, got %d"
                             % (self._get_name(), k, k + (2 if batch else 1), len(output_size)))
        result = []
        for d in range(k):
            smallest = ((input.shape[d - k] - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError("%s: requested an output size of %s, but valid sizes range "
                                 "from %s to %s (for an input of %s)"
                                 % (self._get_name(), output_size, smallest, largest,
                                    list(input.shape)[-k:]))
            result.append(output_size[d] - smallest)
        return tuple(result)

    def forward(self, input, output_size=None):
        conv = getattr(F, "conv_transpose%dd" % self._dims)
        _check_spatial(self, input, self.in_channels, self._dims)
        output_padding = self._output_padding(input, output_size)
        return _batched(self, input, self.in_channels, self._dims,
                        lambda x: conv(x, self.weight, self.bias, self.stride, self.padding,
                                       output_padding, self.groups, self.dilation))


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution (torch.nn.ConvTranspose1d): weight
    [C_in, C_out / groups, k]; forward(input, output_size=None)."""
    _dims = 1


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution (torch.nn.ConvTranspose2d): weight
    [C_in, C_out / groups, kH, kW]; forward(input, output_size=None)."""
    _dims = 2


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution (torch.nn.ConvTranspose3d)."""
    _dims = 3


#===------------------------------------------------------------------------===#
# Pooling
#===------------------------------------------------------------------------===#


class _MaxPool(Module):
    _dims = 0

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        pool = getattr(F, "max_pool%dd" % self._dims)
        if self.return_indices:
            # (values, positions); the functional form takes unbatched input.
            _check_spatial(self, input, None, self._dims)
            return pool(input, self.kernel_size, self.stride, self.padding,
                        self.dilation, self.ceil_mode, return_indices=True)
        return _batched(self, input, None, self._dims,
                        lambda x: pool(x, self.kernel_size, self.stride, self.padding,
                                       self.dilation, self.ceil_mode))

    def extra_repr(self):
        return ("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s"
                % (self.kernel_size, self.stride, self.padding, self.dilation,
                   self.ceil_mode))


class MaxPool1d(_MaxPool):
    """The maximum of each window over [N, C, L] (torch.nn.MaxPool1d);
    stride defaults to kernel_size."""
    _dims = 1


class MaxPool2d(_MaxPool):
    """The maximum of each window over [N, C, H, W] (torch.nn.MaxPool2d);
    stride defaults to kernel_size."""
    _dims = 2


class MaxPool3d(_MaxPool):
    """The maximum of each window over [N, C, D, H, W] (torch.nn.MaxPool3d)."""
    _dims = 3


class _AvgPool(Module):
    _dims = 0

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        pool = getattr(F, "avg_pool%dd" % self._dims)
        # avg_pool1d has no divisor_override (as torch's).
        extra = {} if self._dims == 1 else {"divisor_override": self.divisor_override}
        return _batched(self, input, None, self._dims,
                        lambda x: pool(x, self.kernel_size, self.stride, self.padding,
                                       self.ceil_mode, self.count_include_pad, **extra))

    def extra_repr(self):
        return "kernel_size=%s, stride=%s, padding=%s" % (
            self.kernel_size, self.stride, self.padding)


class AvgPool1d(_AvgPool):
    """The mean of each window over [N, C, L] (torch.nn.AvgPool1d; its
    sizes are kept as 1-tuples, as torch's)."""
    _dims = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(_tuple(kernel_size, 1),
                         _tuple(stride if stride is not None else kernel_size, 1),
                         _tuple(padding, 1), ceil_mode, count_include_pad)


class AvgPool2d(_AvgPool):
    """The mean of each window over [N, C, H, W] (torch.nn.AvgPool2d):
    count_include_pad, divisor_override, ceil_mode."""
    _dims = 2


class AvgPool3d(_AvgPool):
    """The mean of each window over [N, C, D, H, W] (torch.nn.AvgPool3d)."""
    _dims = 3


class _AdaptivePool(Module):
    _dims = 0
    _kind = ""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        if self._kind == "max":
            self.return_indices = return_indices

    def forward(self, input):
        pool = getattr(F, "adaptive_%s_pool%dd" % (self._kind, self._dims))
        if getattr(self, "return_indices", False):
            # (values, indices); the functional form takes unbatched input.
            _check_spatial(self, input, None, self._dims)
            return pool(input, self.output_size, return_indices=True)
        return _batched(self, input, None, self._dims,
                        lambda x: pool(x, self.output_size))

    def extra_repr(self):
        return "output_size=%s" % (self.output_size,)


class AdaptiveAvgPool1d(_AdaptivePool):
    """Means over windows chosen so that the output has `output_size`
    points (torch.nn.AdaptiveAvgPool1d)."""
    _dims, _kind = 1, "avg"

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Means over windows chosen so that the output is `output_size`
    (an int or (H, W); None keeps that dim), torch.nn.AdaptiveAvgPool2d."""
    _dims, _kind = 2, "avg"

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveAvgPool3d(_AdaptivePool):
    """torch.nn.AdaptiveAvgPool3d."""
    _dims, _kind = 3, "avg"

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """Maxima over adaptive windows (torch.nn.AdaptiveMaxPool1d);
    return_indices=True returns (values, indices into L) as torch's."""
    _dims, _kind = 1, "max"


class AdaptiveMaxPool2d(_AdaptivePool):
    """Maxima over adaptive windows (torch.nn.AdaptiveMaxPool2d);
    return_indices=True returns (values, indices into H * W) as torch's."""
    _dims, _kind = 2, "max"


class AdaptiveMaxPool3d(_AdaptivePool):
    """Maxima over adaptive windows (torch.nn.AdaptiveMaxPool3d);
    return_indices=True returns (values, indices into D * H * W) as torch's."""
    _dims, _kind = 3, "max"


#===------------------------------------------------------------------------===#
# Normalization
#===------------------------------------------------------------------------===#


def _affine_parameters(module, shape, enabled):
    """The weight (ones) and bias (zeros) of shape `shape` a normalization
    layer scales and shifts by, or None for both when not `enabled`."""
    if enabled:
        module.weight = Parameter(np.ones(shape, np.float32))
        module.bias = Parameter(np.zeros(shape, np.float32))
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module):
    """Weight 1, bias 0 (when the layer has them)."""
    if module.weight is not None:
        init.ones_(module.weight)
        init.zeros_(module.bias)


class _BatchNorm(Module):
    """Batch normalization over dim 1 (torch.nn.BatchNormNd): in training
    the batch's mean and biased variance normalize and the running
    statistics move by `momentum` (the unbiased variance; momentum=None
    gives their cumulative mean); in eval mode the running statistics
    normalize (unless track_running_stats is False)."""

    _ranks = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, num_features, affine)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, np.float32))
            self.register_buffer("running_var", np.ones(num_features, np.float32))
            self.register_buffer("num_batches_tracked", np.array(0, np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked.copy_(np.array(0, np.int64))

    def reset_parameters(self):
        """reset_running_stats(), weight 1 and bias 0."""
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input(self, input):
        shape = list(input.shape)
        if len(shape) not in self._ranks or shape[1] != self.num_features:
            layouts = {2: ["N", "C"], 3: ["N", "C", "L"], 4: ["N", "C", "H", "W"],
                       5: ["N", "C", "D", "H", "W"]}
            expected = " or ".join(
                _dims([str(self.num_features) if d == "C" else d for d in layouts[r]])
                for r in self._ranks)
            raise ValueError("%s: expected input %s, got %s"
                             % (self._get_name(), expected, _dims(shape)))

    def forward(self, input):
        self._check_input(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            tracked = int(self.num_batches_tracked.item()) + 1
            self.num_batches_tracked.copy_(np.array(tracked, np.int64))
            factor = 1.0 / tracked if self.momentum is None else self.momentum
        use_batch = self.training or self.running_mean is None
        if use_batch:
            values = int(np.prod(input.shape)) // input.shape[1]
            if values <= 1:
                raise ValueError("%s: expected more than 1 value per channel when "
                                 "training, got input %s" % (self._get_name(),
                                                             _dims(input.shape)))
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight,
                            self.bias, use_batch, factor, self.eps)

    def extra_repr(self):
        return ("%s, eps=%s, momentum=%s, affine=%s, track_running_stats=%s"
                % (self.num_features, self.eps, self.momentum, self.affine,
                   self.track_running_stats))


class BatchNorm1d(_BatchNorm):
    """Batch normalization of [N, C] or [N, C, L] (torch.nn.BatchNorm1d)."""
    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of [N, C, H, W] (torch.nn.BatchNorm2d)."""
    _ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of [N, C, D, H, W] (torch.nn.BatchNorm3d)."""
    _ranks = (5,)


class LayerNorm(Module):
    """Normalizes over the trailing dims `normalized_shape` (mean and
    biased variance), then scales by weight (1) and shifts by bias (0) of
    that shape (torch.nn.LayerNorm)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(d) for d in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine)

    def reset_parameters(self):
        """Weight 1, bias 0."""
        _reset_affine(self)

    def forward(self, input):
        k = len(self.normalized_shape)
        if len(input.shape) < k or tuple(input.shape[len(input.shape) - k:]) != \
                self.normalized_shape:
            raise ValueError("%s: expected input %s, got %s"
                             % (self._get_name(), _dims(["..."] + list(self.normalized_shape)),
                                _dims(input.shape)))
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "%s, eps=%s, elementwise_affine=%s" % (
            self.normalized_shape, self.eps, self.elementwise_affine)


class GroupNorm(Module):
    """Normalizes each of `num_groups` groups of channels of [N, C, *] over
    its channels and positions, then scales and shifts per channel
    (torch.nn.GroupNorm)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("GroupNorm: num_channels (%d) must be divisible by num_groups "
                             "(%d)" % (num_channels, num_groups))
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, num_channels, affine)

    def reset_parameters(self):
        """Weight 1, bias 0."""
        _reset_affine(self)

    def forward(self, input):
        shape = list(input.shape)
        if len(shape) < 2 or shape[1] != self.num_channels:
            raise ValueError("%s: expected input [N, %d, *], got %s"
                             % (self._get_name(), self.num_channels, _dims(shape)))
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "%s, %s, eps=%s, affine=%s" % (self.num_groups, self.num_channels,
                                             self.eps, self.affine)


#===------------------------------------------------------------------------===#
# Activations
#===------------------------------------------------------------------------===#


class ReLU(Module):
    """max(x, 0). `inplace` is accepted for torch's signature; harp
    tensors are values, so the result is always a new tensor."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Hardtanh(Module):
    """x limited to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError("Hardtanh: min_val %r is above max_val %r" % (min_val, max_val))
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self):
        return "min_val=%s, max_val=%s%s" % (self.min_val, self.max_val,
                                             ", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x Phi(x) (approximate="none") or its tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return "approximate=%r" % (self.approximate,)


class SiLU(Module):
    """x sigmoid(x)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """x where x > 0, else alpha (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha)

    def extra_repr(self):
        return "alpha=%s%s" % (self.alpha, ", inplace=True" if self.inplace else "")


class LeakyReLU(Module):
    """x where x > 0, else negative_slope x."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self):
        return "negative_slope=%s%s" % (self.negative_slope,
                                        ", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold."""

    def __init__(self, beta=1, threshold=20):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return "beta=%s, threshold=%s" % (self.beta, self.threshold)


class Tanh(Module):
    """The hyperbolic tangent."""

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, input):
        return F.sigmoid(input)


def _softmax_dim(name, ndim):
    # torch's legacy choice when no dim is given.
    warnings.warn("Implicit dimension choice for %s has been deprecated. Change the call "
                  "to include dim=X as an argument." % name, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """exp(x) / sum(exp(x)) along `dim` (None: torch's legacy choice, with
    a warning)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _softmax_dim("softmax", len(input.shape))
        return F.softmax(input, dim)

    def extra_repr(self):
        return "dim=%s" % (self.dim,)


class LogSoftmax(Module):
    """x - logsumexp(x) along `dim` (None: torch's legacy choice)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _softmax_dim("log_softmax",
                                                                 len(input.shape))
        return F.log_softmax(input, dim)

    def extra_repr(self):
        return "dim=%s" % (self.dim,)


#===------------------------------------------------------------------------===#
# Losses
#===------------------------------------------------------------------------===#


def _legacy_reduction(size_average, reduce):
    # torch's mapping of the deprecated size_average / reduce arguments.
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


class _Loss(Module):
    """A loss: forward(input, target) reduced by `reduction` ("mean",
    "sum" or "none"; size_average / reduce are torch's deprecated
    spellings)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        if reduction not in ("mean", "sum", "none"):
            raise ValueError("%s: reduction must be 'mean', 'sum' or 'none', got %r"
                             % (type(self).__name__, reduction))
        self.reduction = reduction


class _ClassLoss(_Loss):
    """A loss over classes with optional class weights [C], registered as
    torch's `weight` buffer."""

    def __init__(self, weight, size_average, reduce, reduction):
        super().__init__(size_average, reduce, reduction)
        if weight is not None:
            weight = _as_tensor(weight)
            if len(weight.shape) != 1:
                raise ValueError("%s: weight must be a 1-d tensor of class weights, got "
                                 "shape %s" % (type(self).__name__, list(weight.shape)))
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """(input - target)^2, reduced."""

    def forward(self, input, target):
        return F.mse_loss(input, _as_tensor(target), reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, reduced."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, _as_tensor(target), reduction=self.reduction,
                                beta=self.beta)


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), reduced."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, _as_tensor(target), reduction=self.reduction,
                            delta=self.delta)


class KLDivLoss(Module):
    """kl_div: target * (log target - input) for log-probabilities, reduced
    ("mean", "batchmean", "sum", "none")."""

    def __init__(self, size_average=None, reduce=None, reduction="mean",
                 log_target=False):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        if reduction not in ("mean", "batchmean", "sum", "none"):
            raise ValueError("KLDivLoss: reduction must be 'mean', 'batchmean', "
                             "'sum' or 'none', got %r" % (reduction,))
        self.reduction = reduction
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, _as_tensor(target), reduction=self.reduction,
                        log_target=self.log_target)


class L1Loss(_Loss):
    """|input - target|, reduced."""

    def forward(self, input, target):
        return F.l1_loss(input, _as_tensor(target), reduction=self.reduction)


class NLLLoss(_ClassLoss):
    """-input[n, target[n]] for log-probabilities [N, C, ...] and int64
    class indices [N, ...]; ignore_index targets count for nothing."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, _as_tensor(target), weight=self.weight,
                          ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_ClassLoss):
    """log_softmax over dim 1 then the negative log-likelihood, for class
    indices or class probabilities; ignore_index and label_smoothing as
    torch's."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, _as_tensor(target), weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_Loss):
    """-w (t log p + (1 - t) log(1 - p)) for probabilities p (each log
    clamped at -100); `weight` (a buffer) broadcasts against the target."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, _as_tensor(target), weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """BCELoss of sigmoid(input), computed stably; `pos_weight` (one per
    class, broadcast along the last dim) weighs the positive term:
    -w (pos_weight t log s(x) + (1 - t) log(1 - s(x)))."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, _as_tensor(target), weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


#===------------------------------------------------------------------------===#
# Attention and transformers
#===------------------------------------------------------------------------===#


def _additive_mask(mask, dtype):
    """A float mask to add to attention scores: a bool mask's True is
    -inf (not attended), a float mask is kept."""
    mask = _as_tensor(mask)
    if mask.dtype.name == "bool":
        zeros = _harp.full(dtype, list(mask.shape), 0.0)
        return zeros.masked_fill(mask, float("-inf"))
    return mask.astype(dtype) if mask.dtype != dtype else mask


class MultiheadAttention(Module):
    """Multi-head attention (torch.nn.MultiheadAttention): query, key and
    value are projected by in_proj_weight [3 E, E] / in_proj_bias [3 E]
    (q_proj_weight, k_proj_weight, v_proj_weight when kdim or vdim differ
    from embed_dim), split into num_heads heads, attended with
    softmax(q k^T / sqrt(head_dim) + masks) and projected by out_proj.
    Inputs are [L, N, E] ([N, L, E] with batch_first, [L, E] unbatched).
    add_bias_kv and add_zero_attn are not supported."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False):
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise ValueError("MultiheadAttention: add_bias_kv and add_zero_attn are not "
                             "supported")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError("MultiheadAttention: embed_dim (%d) must be divisible by "
                             "num_heads (%d)" % (embed_dim, num_heads))
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = _empty(embed_dim, embed_dim)
            self.k_proj_weight = _empty(embed_dim, self.kdim)
            self.v_proj_weight = _empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = _empty(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = _empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _projections(self):
        """The (weight, bias) pairs of the q, k and v projections."""
        E = self.embed_dim
        b = self.in_proj_bias
        biases = [None] * 3 if b is None else [b[0:E], b[E:2 * E], b[2 * E:3 * E]]
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = [w[0:E], w[E:2 * E], w[2 * E:3 * E]]
        else:
            weights = [self.q_proj_weight, self.k_proj_weight, self.v_proj_weight]
        return list(zip(weights, biases))

    def _check(self, what, tensor, dim, rank):
        if len(tensor.shape) != rank or tensor.shape[-1] != dim:
            layout = (["N", "L"] if self.batch_first else ["L", "N"]) if rank == 3 else ["L"]
            if what != "query":
                layout = [d.replace("L", "S") for d in layout]
            raise ValueError("%s: expected %s %s, got %s"
                             % (self._get_name(), what, _dims(layout + [dim]),
                                _dims(tensor.shape)))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """(attention output shaped like query, attention weights
        [N, L, S] averaged over heads ([N, num_heads, L, S] unless
        average_attn_weights; no N unbatched) or None unless need_weights).
        key_padding_mask [N, S] and attn_mask [L, S] or [N num_heads, L, S]:
        True (bool) masks a position out, floats are added to the scores;
        is_causal masks every key after its query when attn_mask is None."""
        batched = len(query.shape) == 3
        rank = 3 if batched else 2
        self._check("query", query, self.embed_dim, rank)
        self._check("key", key, self.kdim, rank)
        self._check("value", value, self.vdim, rank)
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = _as_tensor(key_padding_mask).unsqueeze(0)
        elif self.batch_first:
            # [N, L, E] -> [L, N, E], torch's internal layout.
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        L, N, E = query.shape
        S = key.shape[0]
        H, D = self.num_heads, self.head_dim
        (wq, bq), (wk, bk), (wv, bv) = self._projections()

        def heads(x, w, b, length):
            # [length, N, E] -> [N, H, length, D]
            return F.linear(x, w, b).reshape(length, N, H, D).permute(1, 2, 0, 3)

        q, k, v = heads(query, wq, bq, L), heads(key, wk, bk, S), heads(value, wv, bv, S)

        mask = None
        dtype = q.dtype
        if attn_mask is not None:
            attn_mask = _as_tensor(attn_mask)
            if len(attn_mask.shape) == 2:
                if tuple(attn_mask.shape) != (L, S):
                    raise ValueError("%s: attn_mask should be [%d, %d], got %s"
                                     % (self._get_name(), L, S, _dims(attn_mask.shape)))
                mask = _additive_mask(attn_mask, dtype).reshape(1, 1, L, S)
            elif len(attn_mask.shape) == 3:
                if tuple(attn_mask.shape) != (N * H, L, S):
                    raise ValueError("%s: attn_mask should be [%d, %d, %d], got %s"
                                     % (self._get_name(), N * H, L, S,
                                        _dims(attn_mask.shape)))
                mask = _additive_mask(attn_mask, dtype).reshape(N, H, L, S)
            else:
                raise ValueError("%s: attn_mask must be 2-D or 3-D, got %s"
                                 % (self._get_name(), _dims(attn_mask.shape)))
        elif is_causal:
            causal = np.triu(np.ones((L, S), bool), k=1)
            mask = _additive_mask(causal, dtype).reshape(1, 1, L, S)
        if key_padding_mask is not None:
            key_padding_mask = _as_tensor(key_padding_mask)
            if tuple(key_padding_mask.shape) != (N, S):
                raise ValueError("%s: key_padding_mask should be [%d, %d], got %s"
                                 % (self._get_name(), N, S, _dims(key_padding_mask.shape)))
            padding = _additive_mask(key_padding_mask, dtype).reshape(N, 1, 1, S)
            mask = padding if mask is None else mask + padding

        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q * (1.0 / math.sqrt(D))) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            attn = F.softmax(scores, -1)
            if dropout_p > 0:
                attn = F.dropout(attn, dropout_p, True)
            weights = attn  # after dropout, as torch returns them
            out = attn @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        # [N, H, L, D] -> [L, N, E]
        out = out.permute(2, 0, 1, 3).reshape(L, N, E)
        out = self.out_proj(out)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            out = out.squeeze(1)
            if weights is not None:
                weights = weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights


def _activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise ValueError("activation should be relu/gelu, not %r" % (activation,))


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual
    connection and layer norm (torch.nn.TransformerEncoderLayer; the
    same submodule names, so state dicts interchange): post-norm by
    default, pre-norm with norm_first."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """num_layers copies of encoder_layer (independent parameters, under
    "layers.0", "layers.1", ...), then `norm` if given
    (torch.nn.TransformerEncoder)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention to the encoder's output
    (`memory`) and a feed-forward block, each with a residual connection and
    layer norm (torch.nn.TransformerDecoderLayer; the same submodule names,
    so state dicts interchange): post-norm by default, pre-norm with
    norm_first."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=bool(is_causal))[0]
        return self.dropout1(x)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=bool(is_causal))[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """num_layers copies of decoder_layer (under "layers.0", ...), then
    `norm` if given (torch.nn.TransformerDecoder)."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=bool(tgt_is_causal),
                           memory_is_causal=bool(memory_is_causal))
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need"
    (torch.nn.Transformer): a TransformerEncoder and a TransformerDecoder,
    each ending in a LayerNorm, the weights of 2 or more dims drawn with
    xavier_uniform_ as torch's; forward(src, tgt, masks...) -> [T, N, E]
    ([N, T, E] with batch_first)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps))
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        for p in self.parameters():
            if len(p.shape) > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None):
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise ValueError("Transformer: the batch sizes of src and tgt differ: %d and %d"
                             % (src.shape[batch_dim], tgt.shape[batch_dim]))
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError("Transformer: the features of src and tgt must be d_model (%d), "
                             "got %d and %d" % (self.d_model, src.shape[-1], tgt.shape[-1]))
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A [sz, sz] float mask: -inf above the diagonal (future positions),
        0 elsewhere, as torch's."""
        from .. import float32, tensor
        mask = np.triu(np.full((sz, sz), -np.inf), 1)
        return tensor(mask, dtype=dtype or float32, device=device or "cpu")


#===------------------------------------------------------------------------===#
# Modules over one functional form
#===------------------------------------------------------------------------===#

# torch.nn's stateless modules that call one function of harp.nn.functional:
# name -> (function, constructor parameters in torch's order with their
# defaults, the number of tensors forward() takes, the doc). A parameter
# named like the function's keyword is passed by that keyword; `inplace` is
# accepted and ignored (harp's results are new tensors); the losses' legacy
# size_average / reduce fold into `reduction` as torch's.
_REQUIRED = object()  # a constructor argument without a default

_FUNCTIONAL_MODULES = {
    "CELU": ("celu", [("alpha", 1.0), ("inplace", False)], 1,
             "max(0, x) + min(0, alpha (exp(x / alpha) - 1))."),
    "GLU": ("glu", [("dim", -1)], 1, "The first half of `dim` times the sigmoid of the second."),
    "Hardshrink": ("hardshrink", [("lambd", 0.5)], 1, "x where |x| > lambd, else 0."),
    "Hardsigmoid": ("hardsigmoid", [("inplace", False)], 1, "clamp(x / 6 + 1 / 2, 0, 1)."),
    "Hardswish": ("hardswish", [("inplace", False)], 1, "x hardsigmoid(x)."),
    "LogSigmoid": ("logsigmoid", [], 1, "log(sigmoid(x)), stably."),
    "Mish": ("mish", [("inplace", False)], 1, "x tanh(softplus(x))."),
    "SELU": ("selu", [("inplace", False)], 1, "scale (max(0, x) + min(0, alpha (exp(x) - 1)))."),
    "Softmin": ("softmin", [("dim", None)], 1, "softmax(-x) along `dim`."),
    "Softshrink": ("softshrink", [("lambd", 0.5)], 1, "x - lambd, x + lambd or 0 by |x| > lambd."),
    "Softsign": ("softsign", [], 1, "x / (1 + |x|)."),
    "Tanhshrink": ("tanhshrink", [], 1, "x - tanh(x)."),
    "Threshold": ("threshold", [("threshold", _REQUIRED), ("value", _REQUIRED), ("inplace", False)], 1,
                  "x where x > threshold, else value."),
    "CosineSimilarity": ("cosine_similarity", [("dim", 1), ("eps", 1e-8)], 2,
                         "The cosine of the angle between x1 and x2 along `dim`."),
    "PairwiseDistance": ("pairwise_distance", [("p", 2.0), ("eps", 1e-6), ("keepdim", False)], 2,
                         "The p-norm of x1 - x2 + eps over the last dim."),
    "PixelShuffle": ("pixel_shuffle", [("upscale_factor", _REQUIRED)], 1,
                     "[*, C r^2, H, W] to [*, C, H r, W r]."),
    "PixelUnshuffle": ("pixel_unshuffle", [("downscale_factor", _REQUIRED)], 1,
                       "[*, C, H r, W r] to [*, C r^2, H, W]."),
    "Dropout2d": ("dropout2d", [("p", 0.5), ("inplace", False)], 1,
                  "Zeroes whole channels with probability p in training."),
    "Dropout3d": ("dropout3d", [("p", 0.5), ("inplace", False)], 1,
                  "Zeroes whole channels of 5-d inputs with probability p in training."),
    "LocalResponseNorm": ("local_response_norm", [("size", _REQUIRED), ("alpha", 1e-4),
                                                   ("beta", 0.75), ("k", 1.0)], 1,
                          "x over (k + alpha * the mean square of `size` neighbouring "
                          "channels)^beta."),
    "Fold": ("fold", [("output_size", _REQUIRED), ("kernel_size", _REQUIRED), ("dilation", 1),
                      ("padding", 0), ("stride", 1)], 1,
             "Sums sliding-window columns back into an image (col2im)."),
    "Unfold": ("unfold", [("kernel_size", _REQUIRED), ("dilation", 1), ("padding", 0),
                          ("stride", 1)], 1,
               "The sliding windows of an image as columns (im2col)."),
    "CosineEmbeddingLoss": ("cosine_embedding_loss", [("margin", 0.0), ("size_average", None),
                                                      ("reduce", None), ("reduction", "mean")], 3,
                            "1 - cos(x1, x2) for y = 1, max(0, cos(x1, x2) - margin) for y = -1, "
                            "reduced."),
    "GaussianNLLLoss": ("gaussian_nll_loss", [("full", False), ("eps", 1e-6),
                                              ("reduction", "mean")], 3,
                        "The negative log-likelihood of a Gaussian of mean input and variance "
                        "var, reduced."),
    "HingeEmbeddingLoss": ("hinge_embedding_loss", [("margin", 1.0), ("size_average", None),
                                                    ("reduce", None), ("reduction", "mean")], 2,
                           "x for y = 1, max(0, margin - x) for y = -1, reduced."),
    "MarginRankingLoss": ("margin_ranking_loss", [("margin", 0.0), ("size_average", None),
                                                  ("reduce", None), ("reduction", "mean")], 3,
                          "max(0, -y (x1 - x2) + margin), reduced."),
    "MultiLabelMarginLoss": ("multilabel_margin_loss", [("size_average", None), ("reduce", None),
                                                        ("reduction", "mean")], 2,
                             "The multi-class hinge loss over each sample's target classes, "
                             "reduced."),
    "MultiLabelSoftMarginLoss": ("multilabel_soft_margin_loss",
                                 [("weight", None), ("size_average", None), ("reduce", None),
                                  ("reduction", "mean")], 2,
                                 "The mean over classes of the binary cross-entropy with "
                                 "logits, reduced."),
    "MultiMarginLoss": ("multi_margin_loss", [("p", 1), ("margin", 1.0), ("weight", None),
                                              ("size_average", None), ("reduce", None),
                                              ("reduction", "mean")], 2,
                        "The multi-class hinge loss, reduced."),
    "PoissonNLLLoss": ("poisson_nll_loss", [("log_input", True), ("full", False),
                                            ("size_average", None), ("eps", 1e-8),
                                            ("reduce", None), ("reduction", "mean")], 2,
                       "The negative log-likelihood of a Poisson of rate input, reduced."),
    "SoftMarginLoss": ("soft_margin_loss", [("size_average", None), ("reduce", None),
                                            ("reduction", "mean")], 2,
                       "log(1 + exp(-y x)), reduced."),
    "TripletMarginLoss": ("triplet_margin_loss", [("margin", 1.0), ("p", 2.0), ("eps", 1e-6),
                                                  ("swap", False), ("size_average", None),
                                                  ("reduce", None), ("reduction", "mean")], 3,
                          "max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance, "
                          "reduced."),
    "TripletMarginWithDistanceLoss": ("triplet_margin_with_distance_loss",
                                      [("distance_function", None), ("margin", 1.0),
                                       ("swap", False), ("reduction", "mean")], 3,
                                      "max(d(a, p) - d(a, n) + margin, 0) with the given "
                                      "distance, reduced."),
    "Dropout1d": ("dropout1d", [("p", 0.5), ("inplace", False)], 1,
                  "Zeroes whole channels of [N, C, L] with probability p in training."),
    "AlphaDropout": ("alpha_dropout", [("p", 0.5), ("inplace", False)], 1,
                     "Dropout that keeps SELU's mean and variance, in training."),
    "FeatureAlphaDropout": ("feature_alpha_dropout", [("p", 0.5), ("inplace", False)], 1,
                            "alpha_dropout of whole channels, in training."),
    "MaxUnpool1d": ("max_unpool1d", [("kernel_size", _REQUIRED), ("stride", None),
                                     ("padding", 0)], 2,
                    "Each value written at its index of the output, zeros elsewhere."),
    "MaxUnpool2d": ("max_unpool2d", [("kernel_size", _REQUIRED), ("stride", None),
                                     ("padding", 0)], 2,
                    "Each value written at its index of the output plane, zeros elsewhere."),
    "MaxUnpool3d": ("max_unpool3d", [("kernel_size", _REQUIRED), ("stride", None),
                                     ("padding", 0)], 2,
                    "Each value written at its index of the output volume, zeros elsewhere."),
    "LPPool1d": ("lp_pool1d", [("norm_type", _REQUIRED), ("kernel_size", _REQUIRED),
                               ("stride", None), ("ceil_mode", False)], 1,
                 "(sum of x^p over each window)^(1/p)."),
    "LPPool2d": ("lp_pool2d", [("norm_type", _REQUIRED), ("kernel_size", _REQUIRED),
                               ("stride", None), ("ceil_mode", False)], 1,
                 "(sum of x^p over each window)^(1/p)."),
    "ChannelShuffle": ("channel_shuffle", [("groups", _REQUIRED)], 1,
                       "The channels read group-interleaved."),
}

# Keywords of the module that the function does not take.
_MODULE_ONLY = {"inplace", "size_average", "reduce"}


def _functional_module(name, function, params, arity, doc):
    fn = getattr(F, function)
    names = [p for p, _ in params]

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        if len(args) > len(names):
            raise TypeError("%s() takes at most %d arguments, got %d"
                            % (name, len(names), len(args)))
        values = dict(params)
        values.update(zip(names, args))
        for key, value in kwargs.items():
            if key not in values:
                raise TypeError("%s() got an unexpected keyword argument %r" % (name, key))
            values[key] = value
        missing = [p for p in names if values[p] is _REQUIRED]
        if missing:
            raise TypeError("%s() missing argument %s" % (name, ", ".join(map(repr, missing))))
        if "size_average" in values and (values["size_average"] is not None or
                                         values["reduce"] is not None):
            values["reduction"] = _legacy_reduction(values["size_average"], values["reduce"])
        for key, value in values.items():
            if key == "weight" and value is not None:
                self.register_buffer("weight", _as_tensor(value))
            else:
                setattr(self, key, value)

    def forward(self, *inputs):
        if len(inputs) != arity:
            raise TypeError("%s.forward takes %d tensors, got %d" % (name, arity, len(inputs)))
        kwargs = {p: getattr(self, p) for p in names if p not in _MODULE_ONLY}
        if "p" in kwargs and function == "pairwise_distance":
            kwargs["p"] = float(kwargs["p"])
        if "training" in fn.__code__.co_varnames:
            kwargs["training"] = self.training
        return fn(*inputs, **kwargs)

    def extra_repr(self):
        return ", ".join("%s=%r" % (p, getattr(self, p)) for p in names
                         if p not in _MODULE_ONLY and p != "weight")

    cls = type(name, (Module,), {"__init__": __init__, "forward": forward,
                                 "extra_repr": extra_repr,
                                 "__doc__": "%s (torch.nn.%s over F.%s)." % (
                                     doc.rstrip("."), name, function)})
    cls.__module__ = __name__
    return cls


for _name, (_function, _params, _arity, _doc) in _FUNCTIONAL_MODULES.items():
    globals()[_name] = _functional_module(_name, _function, _params, _arity, _doc)
__all__ += list(_FUNCTIONAL_MODULES)


class _Pad(Module):
    """F.pad with a fixed padding and mode (torch's padding modules)."""
    _mode, _dims = "constant", 1

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = (int(padding),) * (2 * self._dims) if isinstance(padding, int) \
            else tuple(int(p) for p in padding)
        if len(self.padding) != 2 * self._dims:
            raise ValueError("%s: padding must be an int or %d ints, got %r"
                             % (type(self).__name__, 2 * self._dims, padding))
        self.value = value

    def forward(self, input):
        return F.pad(input, list(self.padding), self._mode, self.value)

    def extra_repr(self):
        return "%s%s" % (self.padding, ", value=%s" % self.value
                         if self._mode == "constant" else "")


def _pad_module(name, mode, dims, constant):
    if constant:
        def __init__(self, padding, value):
            _Pad.__init__(self, padding, value)
    else:
        def __init__(self, padding):
            _Pad.__init__(self, padding)
    doc = "F.pad(input, padding, %r) over the last %d dim%s (torch.nn.%s)." % (
        mode, dims, "s" if dims > 1 else "", name)
    cls = type(name, (_Pad,), {"_mode": mode, "_dims": dims, "__doc__": doc,
                               "__init__": __init__})
    cls.__module__ = __name__
    return cls


_PAD_MODULES = {}
for _dims_ in (1, 2, 3):
    _PAD_MODULES["ConstantPad%dd" % _dims_] = ("constant", _dims_, True)
    _PAD_MODULES["ReflectionPad%dd" % _dims_] = ("reflect", _dims_, False)
    _PAD_MODULES["ReplicationPad%dd" % _dims_] = ("replicate", _dims_, False)
for _name, (_mode_, _dims_, _constant) in _PAD_MODULES.items():
    globals()[_name] = _pad_module(_name, _mode_, _dims_, _constant)


class ZeroPad2d(_Pad):
    """Zeros around the last two dims (torch.nn.ZeroPad2d)."""
    _mode, _dims = "constant", 2

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class Unflatten(Module):
    """Dim `dim` unflattened into `unflattened_size` (torch.nn.Unflatten)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        from .._compose import unflatten
        return unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self):
        return "dim=%s, unflattened_size=%s" % (self.dim, self.unflattened_size)


class Softmax2d(Module):
    """The softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W]
    (torch.nn.Softmax2d)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError("Softmax2d: expected a 3-d or 4-d input, got %d dims" % input.ndim)
        return F.softmax(input, -3)


class PReLU(Module):
    """x where x > 0, else weight x, with num_parameters learned slopes (one,
    or one per channel) starting at `init` (torch.nn.PReLU)."""

    def __init__(self, num_parameters=1, init=0.25):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(np.full([num_parameters], init, dtype=np.float32))

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return "num_parameters=%d" % self.num_parameters


class Bilinear(Module):
    """y = x1^T A x2 + b over the last dims: weight [out, in1, in2] and bias
    [out], uniform in +-1/sqrt(in1) (torch.nn.Bilinear)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in1_features)
        from .. import rand
        self.weight = Parameter(
            (rand(out_features, in1_features, in2_features) * 2 - 1) * bound)
        self.bias = Parameter((rand(out_features) * 2 - 1) * bound) if bias else None

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return "in1_features=%d, in2_features=%d, out_features=%d, bias=%s" % (
            self.in1_features, self.in2_features, self.out_features, self.bias is not None)


class _InstanceNorm(Module):
    """Instance normalization over the positions of each channel of each
    sample, optionally scaled and shifted per channel (torch's
    InstanceNormNd; running statistics are not kept: track_running_stats
    must be False, torch's default)."""
    _ranks = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False):
        super().__init__()
        if track_running_stats:
            raise ValueError("%s: track_running_stats=True is not supported: harp's "
                             "instance norm keeps no running statistics" % type(self).__name__)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine_parameters(self, num_features, affine)

    def forward(self, input):
        if input.ndim not in self._ranks:
            raise ValueError("%s: expected a %s-d input, got %d dims"
                             % (type(self).__name__, " or ".join(map(str, self._ranks)),
                                input.ndim))
        batched = input.ndim == self._ranks[-1]
        x = input if batched else input.unsqueeze(0)
        y = F.instance_norm(x, weight=self.weight, bias=self.bias, eps=self.eps)
        return y if batched else y.squeeze(0)

    def extra_repr(self):
        return "%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s" % (
            self.num_features, self.eps, self.momentum, self.affine, self.track_running_stats)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of [N, C, L] or [C, L] (torch.nn.InstanceNorm1d)."""
    _ranks = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of [N, C, H, W] or [C, H, W] (torch.nn.InstanceNorm2d)."""
    _ranks = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of [N, C, D, H, W] or [C, D, H, W] (torch.nn.InstanceNorm3d)."""
    _ranks = (4, 5)


__all__ += list(_PAD_MODULES) + ["ZeroPad2d", "Unflatten", "Softmax2d", "PReLU", "Bilinear",
                                 "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
