"""harp.func: function transforms with torch.func's names (functorch in
torch 1.13): grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian.

    def loss(params, x, y):
        return ((x @ params["w"] + params["b"] - y) ** 2).mean()

    g = harp.func.grad(loss)(params, x, y)          # {"w": ..., "b": ...}
    value, vjp_fn = harp.func.vjp(torch_like_fn, x)
    out, tangent = harp.func.jvp(f, (x,), (v,))     # J v
    H = harp.func.hessian(f)(x)

Each transform calls `func` once on its arguments, where the ones it
differentiates with respect to (`argnums`, tensors or tuples, lists and
dicts of them) are leaves that require a gradient (a leaf that requires one
is used as it is, others are detached copies; a computed tensor is
differentiated at). The results are computed tensors built with
harp.autograd.grad(create_graph=True), so transforms compose: grad(grad(f)),
jacfwd(jacrev(f)). An input the function does not read gets zeros, as in
torch.func.

jvp (and so jacfwd) is computed in reverse mode, as the gradient with
respect to a cotangent `u` of <vjp(u), tangent>: J v costs two reverse
passes instead of one forward-mode pass (the MLIR forward mode of issue 49
is not written yet). jacrev and jacfwd compute one row or column per output
or input element; the rows share one gradient function in the compiled
module, which is called once per row, so they suit Jacobians of up to some
hundreds of elements.
"""

import numbers

import numpy as np

from ._harp import HarpError, Tensor
from . import autograd as _autograd

__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "vjp"]


# Trees of tensors --------------------------------------------------------


def _flatten(op, what, tree):
    """(leaves, spec) of a tensor or a tuple, list or dict of them."""
    if isinstance(tree, Tensor):
        return [tree], None
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for i, item in enumerate(tree):
            sub, spec = _flatten(op, "%s[%d]" % (what, i), item)
            leaves += sub
            specs.append((len(sub), spec))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for key, item in tree.items():
            sub, spec = _flatten(op, "%s[%r]" % (what, key), item)
            leaves += sub
            specs.append((key, len(sub), spec))
        return leaves, (dict, specs)
    raise TypeError("%s: %s must be a harp.Tensor or a tuple, list or dict of "
                    "them, got %s" % (op, what, type(tree).__name__))


def _unflatten(spec, leaves):
    if spec is None:
        return leaves[0]
    kind, specs = spec
    if kind is dict:
        out, at = {}, 0
        for key, count, sub in specs:
            out[key] = _unflatten(sub, leaves[at:at + count])
            at += count
        return out
    items, at = [], 0
    for count, sub in specs:
        items.append(_unflatten(sub, leaves[at:at + count]))
        at += count
    return kind(items)


def _argnums(op, argnums, count):
    nums = (argnums,) if isinstance(argnums, numbers.Integral) else argnums
    if not isinstance(nums, tuple) or not nums:
        raise TypeError("%s: argnums must be an int or a non-empty tuple of "
                        "ints, got %r" % (op, argnums))
    out = []
    for n in nums:
        if not isinstance(n, numbers.Integral) or isinstance(n, bool):
            raise TypeError("%s: argnums must be ints, got %r" % (op, n))
        if not -count <= n < count:
            raise ValueError("%s: argnums %d is out of range for %d positional "
                             "arguments" % (op, n, count))
        out.append(n % count)
    if len(set(out)) != len(out):
        raise ValueError("%s: argnums %r repeats an argument" % (op, argnums))
    return out


def _prepared(op, what, tensor, seen):
    """The leaf `func` gets for a differentiated tensor."""
    if not tensor.is_floating_point() or tensor.is_complex():
        raise HarpError("%s: %s is a %s tensor: only real float tensors are "
                        "differentiated" % (op, what, tensor.dtype.name))
    if id(tensor) in seen:
        raise ValueError("%s: %s is the same tensor as another differentiated "
                         "input; pass a copy (clone())" % (op, what))
    seen.add(id(tensor))
    if not tensor.is_leaf or tensor.requires_grad:
        return tensor
    return tensor.detach().requires_grad_()


def _prepare_args(op, args, nums):
    """args with the differentiated ones replaced by leaves; the flat list
    of those leaves and, per argnum, (spec, count)."""
    args = list(args)
    flat, layout, seen = [], [], set()
    for n in nums:
        leaves, spec = _flatten(op, "argument %d" % n, args[n])
        leaves = [_prepared(op, "argument %d" % n, t, seen) for t in leaves]
        args[n] = _unflatten(spec, leaves)
        flat += leaves
        layout.append((spec, len(leaves)))
    return args, flat, layout


def _split(layout, values):
    out, at = [], 0
    for spec, count in layout:
        out.append(_unflatten(spec, values[at:at + count]))
        at += count
    return out


def _zeros_for_unused(grads, inputs):
    from . import zeros_like
    return [zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _split_aux(op, out, has_aux):
    if not has_aux:
        return out, None
    if not isinstance(out, tuple) or len(out) != 2:
        raise HarpError("%s: with has_aux=True the function must return a "
                        "tuple (output, aux), got %s" % (op, type(out).__name__))
    return out


# Transforms --------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: a function returning (gradient, value),
    or (gradient, (value, aux)) with has_aux; `func` returns a 0-d float
    tensor. The gradient has the structure of the argument (a tuple of them
    for a tuple argnums)."""
    return _grad_and_value("grad_and_value", func, argnums, has_aux)


def _grad_and_value(op, func, argnums, has_aux):
    def wrapper(*args, **kwargs):
        nums = _argnums(op, argnums, len(args))
        args, inputs, layout = _prepare_args(op, args, nums)
        out, aux = _split_aux(op, func(*args, **kwargs), has_aux)
        if not isinstance(out, Tensor) or out.dim() != 0:
            raise HarpError(
                "%s: the function must return a 0-d float tensor, got %s"
                % (op, "shape %s" % list(out.shape) if isinstance(out, Tensor)
                   else type(out).__name__))
        grads = _autograd.grad(out, inputs, create_graph=True,
                               allow_unused=True)
        parts = _split(layout, _zeros_for_unused(grads, inputs))
        result = parts[0] if isinstance(argnums, numbers.Integral) else tuple(parts)
        return (result, (out, aux)) if has_aux else (result, out)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: a function returning the gradient of `func` (a 0-d
    float tensor) with respect to its `argnums` arguments, with `aux` after
    it where has_aux."""
    inner = _grad_and_value("grad", func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        result, value = inner(*args, **kwargs)
        return (result, value[1]) if has_aux else result

    return wrapper


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (output, vjp_fn) or (output, vjp_fn, aux); vjp_fn(
    cotangents), with cotangents shaped as the output, returns a tuple with
    the vector-Jacobian product for each primal."""
    op = "vjp"
    args, inputs, layout = _prepare_args(op, primals, range(len(primals)))
    out, aux = _split_aux(op, func(*args), has_aux)
    outputs, out_spec = _flatten(op, "the output", out)

    def vjp_fn(cotangents):
        given, spec = _flatten("vjp_fn", "cotangents", cotangents)
        if spec != out_spec or any(list(g.shape) != list(o.shape)
                                   for g, o in zip(given, outputs)):
            raise HarpError("vjp_fn: the cotangents must have the output's "
                            "structure and shapes (%s), got %s"
                            % ([list(o.shape) for o in outputs],
                               [list(g.shape) for g in given]))
        grads = _autograd.grad(outputs, inputs, grad_outputs=given,
                               create_graph=True, allow_unused=True)
        return tuple(_split(layout, _zeros_for_unused(grads, inputs)))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _jvp_flat(outputs, inputs, tangents):
    """J v for the flat outputs with respect to the flat inputs, in reverse
    mode: d/du <vjp(u), tangents>."""
    from . import zeros_like
    # Leaves (the gradients are taken with respect to them); their values
    # do not matter: the products are linear in them.
    us = [_tensor(_zeros_array(o)).requires_grad_() for o in outputs]
    grads = _autograd.grad(outputs, inputs, grad_outputs=us,
                           create_graph=True, allow_unused=True)
    total = None
    for g, t in zip(grads, tangents):
        if g is not None:
            term = (g * t).sum()
            total = term if total is None else total + term
    if total is None:  # the outputs read none of the inputs
        return [zeros_like(o) for o in outputs]
    found = _autograd.grad(total, us, create_graph=True, allow_unused=True)
    return _zeros_for_unused(found, outputs)


def jvp(func, primals, tangents, has_aux=False):
    """torch.func.jvp: (output, J tangents) or with aux (output, jvp, aux);
    `primals` and `tangents` are tuples of the same structure."""
    op = "jvp"
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError("jvp: primals and tangents must be tuples, got %s and "
                        "%s" % (type(primals).__name__, type(tangents).__name__))
    args, inputs, layout = _prepare_args(op, primals, range(len(primals)))
    given, _ = _flatten(op, "tangents", tangents)
    if len(given) != len(inputs) or any(list(t.shape) != list(x.shape)
                                        for t, x in zip(given, inputs)):
        raise HarpError("jvp: the tangents must have the primals' structure and "
                        "shapes (%s), got %s" % ([list(x.shape) for x in inputs],
                                                 [list(t.shape) for t in given]))
    out, aux = _split_aux(op, func(*args), has_aux)
    outputs, spec = _flatten(op, "the output", out)
    found = _jvp_flat(outputs, inputs, [t.detach() for t in given])
    result = _unflatten(spec, found)
    return (out, result, aux) if has_aux else (out, result)


def _tensor(array):
    from . import tensor
    return tensor(array)


def _jacobian(op, func, argnums, has_aux, compute):
    """The wrapper of jacrev and jacfwd: `compute(out, inputs)` gives the
    Jacobian of the output with respect to each flat input."""

    def wrapper(*args, **kwargs):
        nums = _argnums(op, argnums, len(args))
        args, inputs, layout = _prepare_args(op, args, nums)
        out, aux = _split_aux(op, func(*args, **kwargs), has_aux)
        if not isinstance(out, Tensor):
            raise HarpError("%s: the function must return a tensor, got %s"
                            % (op, type(out).__name__))
        parts = _split(layout, compute(out, inputs))
        result = parts[0] if isinstance(argnums, numbers.Integral) else tuple(parts)
        return (result, aux) if has_aux else result

    return wrapper


def _zeros_array(like):
    return np.zeros(list(like.shape), dtype=np.dtype(like.dtype.name))


def _one_hot_array(like, index):
    array = _zeros_array(like)
    array.flat[index] = 1
    return array


def jacrev(func, argnums=0, has_aux=False):
    """torch.func.jacrev: a function returning the Jacobian of `func`'s
    output (a tensor) with respect to its `argnums` arguments, shaped
    output.shape + argument.shape, one reverse pass per output element."""

    def compute(out, inputs):
        from . import stack
        rows = []
        for i in range(out.numel()):
            grads = _autograd.grad(out, inputs,
                                   grad_outputs=[_tensor(_one_hot_array(out, i))],
                                   create_graph=True, allow_unused=True)
            rows.append(_zeros_for_unused(grads, inputs))
        return [stack([row[k] for row in rows]).reshape(
            list(out.shape) + list(x.shape)) for k, x in enumerate(inputs)]

    return _jacobian("jacrev", func, argnums, has_aux, compute)


def jacfwd(func, argnums=0, has_aux=False):
    """torch.func.jacfwd: the Jacobian (output.shape + argument.shape), one
    Jacobian-vector product per input element (computed in reverse mode:
    see the module's documentation)."""

    def compute(out, inputs):
        from . import stack
        jac = []
        for k, x in enumerate(inputs):
            columns = []
            for j in range(x.numel()):
                tangents = [_tensor(_one_hot_array(x, j) if m == k else
                                    _zeros_array(y))
                            for m, y in enumerate(inputs)]
                columns.append(_jvp_flat([out], inputs, tangents)[0])
            jac.append(stack(columns, dim=-1).reshape(list(out.shape)
                                                       + list(x.shape)))
        return jac

    return _jacobian("jacfwd", func, argnums, has_aux, compute)


def hessian(func, argnums=0):
    """torch.func.hessian: jacfwd(jacrev(func, argnums), argnums)."""
    return jacfwd(jacrev(func, argnums), argnums)
