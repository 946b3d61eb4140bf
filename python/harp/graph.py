"""The graph language (docs/GraphDSL.md) from Python.

    import harp, numpy as np
    prog = harp.graph.parse('''
    graph relu(x: f32[B, N]) -> (y: f32[B, N]) {
        y = max(x, 0.0)
    }
    graph main(x: f32[B, N], w: f32[N, M]) -> (y: f32[B, M]) {
        y = relu(x) @ w
    }
    ''')
    y = prog.main(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    y.numpy()                         # a harp.Tensor: lazy, differentiable
    print(prog.mlir(bind={"B": 2, "N": 3, "M": 4}))   # the harp IR

A graph called from Python evaluates its subgraph calls inline, so its
results are ordinary harp tensors (``backward()`` works through them).
``Program.mlir`` gives what ``harp-translate --import-graph`` prints: one
function per graph instance and ``func.call`` between them.
Errors raise :class:`GraphError` (a :class:`harp.HarpError`) with the
program's ``filename``, ``lineno`` and ``colno``.
"""

import numpy as _np

from . import _harp

_g = _harp.graph
GraphError = _g.GraphError

__all__ = ["GraphError", "Graph", "Program", "builtins", "load", "parse",
           "to_dot"]


_MISSING = object()


class Graph:
    """One graph of a program, callable on tensors, NumPy arrays or numbers.

    Returns a :class:`harp.Tensor` for a graph with one output, else a tuple.
    """

    def __init__(self, program, name):
        self._program = program
        self.name = name
        sig = program._impl.signature(name)
        self.inputs = [tuple(p) for p in sig["inputs"]]
        self.outputs = [tuple(p) for p in sig["outputs"]]

    def __call__(self, *args, max_depth=None, **kwargs):
        from . import _NUMPY, Tensor, tensor
        names = [p[0] for p in self.inputs]
        if len(args) > len(names):
            raise TypeError("graph %s takes %d inputs, got %d"
                            % (self.name, len(names), len(args)))
        values = list(args) + [_MISSING] * (len(names) - len(args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError("graph %s has no input %r" % (self.name, key))
            if values[names.index(key)] is not _MISSING:
                raise TypeError("graph %s: input %r given twice"
                                % (self.name, key))
            values[names.index(key)] = value
        converted = []
        for (name, dtype, dims, type_str), v in zip(self.inputs, values):
            if v is _MISSING:
                raise TypeError("graph %s: missing input %r" % (self.name, name))
            if isinstance(v, (bool, int, float)) and not dims:
                # A number stands for a 0-d input of a dtype that holds its
                # kind, as in the language: never rounded or narrowed.
                fits = (dtype in (_harp.DType.float32, _harp.DType.float64)
                        or (isinstance(v, bool) == (dtype == _harp.DType.bool)
                            and not isinstance(v, float)))
                if not fits:
                    raise TypeError("graph %s: input %r is %s, got %r"
                                    % (self.name, name, type_str, v))
                v = _np.asarray(v, dtype=_NUMPY[dtype])
            if not isinstance(v, Tensor):
                # An array keeps its dtype: another one is reported.
                v = tensor(_np.asarray(v))
            converted.append(v)
        depth = self._program.max_depth if max_depth is None else max_depth
        results = self._program._impl.call(self.name, converted, depth)
        return results[0] if len(results) == 1 else tuple(results)

    def __repr__(self):
        return "graph %s(%s) -> (%s)" % (
            self.name,
            ", ".join("%s: %s" % (p[0], p[3]) for p in self.inputs),
            ", ".join("%s: %s" % (p[0], p[3]) for p in self.outputs))


class Program:
    """A parsed graph program: ``prog.main``, ``prog["relu"]``, ``prog.graphs``.
    """

    def __init__(self, impl, max_depth=10):
        self._impl = impl
        self.max_depth = max_depth

    @property
    def graphs(self):
        """The names of the program's graphs, in the order written."""
        return list(self._impl.graphs)

    def __getitem__(self, name):
        if not self._impl.has_graph(name):
            raise KeyError("no graph %r in the program; it has %s"
                           % (name, ", ".join(self.graphs) or "none"))
        return Graph(self, name)

    def __getattr__(self, name):
        if name.startswith("_") or not self._impl.has_graph(name):
            raise AttributeError("no graph %r in the program; it has %s"
                                 % (name, ", ".join(self.graphs) or "none"))
        return Graph(self, name)

    def __contains__(self, name):
        return self._impl.has_graph(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.graphs))

    def __repr__(self):
        return "<harp.graph.Program: %s>" % ", ".join(self.graphs)

    def mlir(self, bind=None, inputs=None, max_depth=None):
        """The program as harp IR text (``harp-translate --import-graph``).

        ``bind`` maps main's symbolic dims to sizes; ``inputs`` (arrays or
        tensors, or their shapes as tuples) bind them as a call would.
        """
        shapes = None
        if inputs is not None:
            shapes = [list(x) if isinstance(x, (tuple, list))
                      else list(_np.shape(x) if not hasattr(x, "shape")
                                else x.shape) for x in inputs]
        depth = self.max_depth if max_depth is None else max_depth
        return self._impl.to_mlir(dict(bind or {}), shapes, depth)


def parse(text, filename="<string>", max_depth=10):
    """Parses a graph program; raises GraphError at the first error."""
    return Program(_g.Program.parse(text, filename), max_depth)


def load(path, max_depth=10):
    """Parses the graph program in file ``path``."""
    with open(path) as f:
        return parse(f.read(), str(path), max_depth)


def builtins():
    """The names of the language's built-in functions."""
    return list(_g.builtins())


def to_dot(module_text, function="", bodies=True):
    """A harp module (text) as a Graphviz DOT graph (``--export-dot``;
    :func:`harp.ir.to_dot`)."""
    return _harp.ir.to_dot(module_text, function, bodies)
