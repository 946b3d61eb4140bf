"""harp.export: a function compiled ahead of time into a C library."""

import os as _os

import numpy as _np

from . import _harp
from .autograd import no_grad as _no_grad


def export(fn, example_inputs, path, *, header=None, prefix=None, name=None,
           gradients=None, cpu=None, threads=None, vectorize=None,
           linker=None):
    """Compiles ``fn`` ahead of time into the library ``path``.

    ``fn`` (a function or an ``nn.Module``) is called once, under
    ``no_grad``, on new tensors holding copies of ``example_inputs`` (a
    tuple or list of harp tensors, NumPy arrays or anything ``numpy.asarray``
    takes; anything else is the one input). The tensors it
    returns (one, or a tuple or list of them) are the library function's
    results and the example inputs its arguments, with their shapes and
    dtypes; every other tensor it reads (a module's parameters and buffers) is
    a constant of the library, with the values it has now (random numbers
    too: their seed is a constant).

    ``gradients`` (indices of float example inputs) makes it a training
    step: the library function returns ``fn``'s results and then the
    gradient of the first (a 0-d loss) with respect to each of those inputs
    (pass the weights as inputs to train them from C).

    ``path`` ends in ``.so`` (a shared library, linked with ``linker``:
    default ``$CC``, else ``cc``), ``.a`` (a static archive), ``.o`` (an
    object file, to link with ``libharp_runtime.a``) or ``.mlir`` (the
    function's harp IR, for ``harp-compile`` or ``harp.ir``). The library needs only
    libc and libm (and libomp with ``threads=True``). ``header`` is where
    to write its C header; its entry point is ``<prefix>_<name>`` (``prefix``
    defaults to the file's name without ``lib`` and its extension, ``name``
    to the function's, ``forward`` for a module). ``cpu``, ``threads`` and
    ``vectorize`` are ``harp.set_options``'s, for this library's code.
    docs/Embedding.md describes the library and its header.
    """
    if not callable(fn):
        raise TypeError(
            f"export: fn must be callable, got {type(fn).__name__}")
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)  # one input (a tensor, an array)
    if name is None:
        name = getattr(fn, "__name__", None) or "forward"
        if name == "<lambda>":
            name = "main"
    if not isinstance(name, str) or not name:
        raise TypeError("export: name must be a non-empty string")
    inputs = []
    for i, x in enumerate(example_inputs):
        try:
            array = _np.array(x)
        except Exception as e:
            raise TypeError(f"export: example input #{i} is not an array "
                            f"({type(x).__name__}): {e}") from None
        inputs.append(_harp.from_numpy(_np.ascontiguousarray(array), "cpu"))
    if gradients is None:
        gradients = []
    elif isinstance(gradients, int):
        gradients = [gradients]
    if not all(isinstance(i, int) for i in gradients):
        raise TypeError("export: gradients must be indices of example inputs")
    gradients = [i + len(inputs) if i < 0 else i for i in gradients]
    # The gradient is harp.autodiff's, in the library: nothing is recorded
    # for backward() here either way.
    with _no_grad():
        result = fn(*inputs)
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    for i, out in enumerate(outputs):
        if not isinstance(out, _harp.Tensor):
            raise TypeError(f"export: fn must return harp tensors, but "
                            f"result #{i} is a {type(out).__name__}")
    _harp._export_library(
        outputs, inputs, _os.fspath(path), name,
        "" if header is None else _os.fspath(header),
        prefix or "", linker or "", threads, vectorize, cpu, gradients)
