"""torch's einsum, tensordot, tile and diagonal over harp tensors.

Each is a composition of views and lazy element-wise and reduction ops, so
it has harp's gradients and fuses as harp fuses: a pair of operands is
multiplied with each broadcast to the pair's subscripts and summed over the
subscripts no later operand or the output keeps, which harp-fuse makes one
map_reduce summing products (a contraction: matmul register tiles and
packing where its dims allow). More than two operands are contracted left
to right, a pair at a time, so that no product spans every subscript.
"""

import numbers

import numpy as np

from . import _harp
from ._harp import HarpError, Tensor


def _check(name, input, what="input"):
    if not isinstance(input, Tensor):
        raise TypeError("harp.%s: %s must be a harp.Tensor, got %s"
                        % (name, what, input.__class__.__name__))
    return input


def select(input, dim, index):
    """input's elements at the NumPy int `index` along `dim` (an
    index_select; the index lives where `input` does)."""
    return _harp.index_select(input, dim, _harp.from_numpy(
        np.ascontiguousarray(index, dtype=np.int64), input.device))


def _dim(op, dim, rank):
    if not -rank <= dim < rank:
        raise HarpError("%s: dim %d is out of range for a tensor of %d dims"
                        % (op, dim, rank))
    return dim + rank if dim < 0 else dim


#===------------------------------------------------------------------------===#
# diagonal and tile
#===------------------------------------------------------------------------===#

def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of `input` over `dim1` and `dim2`, `offset` above the
    main one (below where negative): those two dims removed, the diagonal
    appended as the last dim (torch.diagonal)."""
    _check("diagonal", input)
    rank = input.ndim
    if rank < 2:
        raise HarpError("diagonal: needs a tensor of at least 2 dims, got "
                        "shape %s" % (tuple(input.shape),))
    d1, d2 = _dim("diagonal", dim1, rank), _dim("diagonal", dim2, rank)
    if d1 == d2:
        raise HarpError("diagonal: dim1 and dim2 are both %d" % d1)
    n1, n2 = input.shape[d1], input.shape[d2]
    row, col = max(-offset, 0), max(offset, 0)
    length = min(n1 - row, n2 - col)
    if length <= 0:
        raise HarpError("diagonal: offset %d leaves no element of a %d x %d "
                        "matrix" % (offset, n1, n2))
    moved = input.movedim((d1, d2), (-2, -1))
    flat = moved.reshape(*moved.shape[:-2], n1 * n2)
    steps = np.arange(length, dtype=np.int64)
    index = (steps + row) * n2 + steps + col
    return select(flat, flat.ndim - 1, index)


def tile(input, dims):
    """`input` repeated `dims[i]` times along dim i (torch.tile): a shorter
    `dims` is padded with ones in front, a longer one adds leading dims."""
    _check("tile", input)
    if isinstance(dims, numbers.Integral):
        dims = (dims,)
    dims = tuple(int(d) for d in dims)
    if any(d < 0 for d in dims):
        raise HarpError("tile: repeats must be >= 0, got %s" % (dims,))
    dims = (1,) * (input.ndim - len(dims)) + dims
    x = input
    while x.ndim < len(dims):
        x = x.unsqueeze(0)
    return x.repeat(*dims)


#===------------------------------------------------------------------------===#
# einsum
#===------------------------------------------------------------------------===#

def _contract(a, la, b, lb, keep):
    """a (subscripts la) times b (lb), summed over the subscripts not in
    `keep`: (tensor, its subscripts)."""
    letters = list(dict.fromkeys(la + lb))
    kept = [c for c in letters if c in keep]
    summed = [c for c in letters if c not in keep]
    order = kept + summed
    product = None
    for x, lx in ((a, la), (b, lb)):
        if x is None:
            continue
        # x's dims in `order`, with size-1 dims for the subscripts it lacks.
        present = [c for c in order if c in lx]
        x = x.permute(*[lx.index(c) for c in present]) if present != list(
            lx) else x
        shape = [x.shape[present.index(c)] if c in present else 1
                 for c in order]
        if tuple(shape) != tuple(x.shape):
            x = x.reshape(*shape)
        product = x if product is None else product * x
    if summed:
        product = product.sum(dim=tuple(range(len(kept), len(order))))
    return product, kept


def _diagonals(name, x, term):
    """x with each repeated subscript of `term` reduced to its diagonal."""
    term = list(term)
    while True:
        repeated = next((c for c in dict.fromkeys(term) if term.count(c) > 1),
                        None)
        if repeated is None:
            return x, term
        i = term.index(repeated)
        j = term.index(repeated, i + 1)
        if x.shape[i] != x.shape[j]:
            raise HarpError("%s: subscript '%s' repeated over dims of sizes "
                            "%d and %d" % (name, repeated, x.shape[i],
                                           x.shape[j]))
        x = diagonal(x, 0, i, j)
        term = [c for k, c in enumerate(term) if k not in (i, j)] + [repeated]


def einsum(equation, *operands):
    """torch.einsum: the sum of products of `operands` over the subscripts
    of `equation` ("ij,jk->ik", "bhqd,bhkd->bhqk", "ii", "...ij->...ji");
    without "->" the output is the ellipsis dims and the subscripts used
    once, in alphabetical order. Size-1 dims broadcast."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError("harp.einsum: the equation must be a str, got %s"
                        % equation.__class__.__name__)
    if not operands:
        raise HarpError("einsum: needs at least one operand")
    for i, x in enumerate(operands):
        _check("einsum", x, "operand %d" % i)
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise HarpError("einsum: '%s' has %d operand(s), got %d tensor(s)"
                        % (equation, len(terms), len(operands)))
    # The ellipsis: private subscripts for the broadcast dims, right-aligned.
    spans = []
    for i, (term, x) in enumerate(zip(terms, operands)):
        letters = term.replace("...", "")
        if any(not c.isalpha() for c in letters) or term.count("...") > 1:
            raise HarpError("einsum: operand %d's subscripts '%s' must be "
                            "letters and at most one '...'" % (i, term))
        span = x.ndim - len(letters) if "..." in term else 0
        if span < 0 or (span == 0 and "..." not in term and
                        len(letters) != x.ndim):
            raise HarpError("einsum: operand %d has %d dims, its subscripts "
                            "'%s' name %d" % (i, x.ndim, term, len(letters)))
        spans.append(span)
    width = max(spans)
    ellipsis = [chr(0x3b1 + k) for k in range(width)]  # Greek: never letters
    expanded = []
    for term, span in zip(terms, spans):
        head, _, tail = term.partition("...")
        middle = ellipsis[width - span:] if "..." in term else []
        expanded.append(list(head) + middle + list(tail))
    if arrow:
        if out.count("...") > 1 or any(not c.isalpha()
                                       for c in out.replace("...", "")):
            raise HarpError("einsum: output subscripts '%s' must be letters "
                            "and at most one '...'" % out)
        head, _, tail = out.partition("...")
        output = list(head) + (ellipsis if "..." in out else []) + list(tail)
        seen = set(c for t in expanded for c in t)
        for c in output:
            if c not in seen:
                raise HarpError("einsum: output subscript '%s' is in no "
                                "operand of '%s'" % (c, equation))
        if len(set(output)) != len(output):
            raise HarpError("einsum: output subscripts of '%s' repeat"
                            % equation)
    else:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        output = ellipsis + sorted(c for c in counts
                                   if counts[c] == 1 and c not in ellipsis)
    # Sizes agree (or are 1) across operands.
    sizes = {}
    for i, (t, x) in enumerate(zip(expanded, operands)):
        for c, n in zip(t, x.shape):
            m, j = sizes.get(c, (1, i))
            if n != 1 and m != 1 and n != m:
                name = "..." if c in ellipsis else c
                raise HarpError("einsum: subscript '%s' has size %d in "
                                "operand %d and %d in operand %d"
                                % (name, n, i, m, j))
            if n != 1:
                sizes[c] = (n, i)
    result, letters = None, []
    for i, (x, t) in enumerate(zip(operands, expanded)):
        x, t = _diagonals("einsum", x, t)
        later = set(output)
        for u in expanded[i + 1:]:
            later.update(u)
        result, letters = _contract(result, letters, x, t, later)
    # The output's order, and its dims that every operand had as size 1.
    if letters != output:
        result = result.permute(*[letters.index(c) for c in output])
    return result


def tensordot(a, b, dims=2):
    """torch.tensordot: the sum of products over the last `dims` dims of `a`
    and the first `dims` of `b`, or over the dims of the pair of lists
    `dims` = ([a's], [b's])."""
    _check("tensordot", a, "a")
    _check("tensordot", b, "b")
    if isinstance(dims, numbers.Integral):
        if not 0 <= dims <= min(a.ndim, b.ndim):
            raise HarpError("tensordot: dims %d for tensors of %d and %d dims"
                            % (dims, a.ndim, b.ndim))
        da = list(range(a.ndim - dims, a.ndim))
        db = list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, numbers.Integral) else list(da)
        db = [db] if isinstance(db, numbers.Integral) else list(db)
        if len(da) != len(db):
            raise HarpError("tensordot: %d dims of a against %d of b"
                            % (len(da), len(db)))
        da = [_dim("tensordot", d, a.ndim) for d in da]
        db = [_dim("tensordot", d, b.ndim) for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise HarpError("tensordot: a's dim %d (%d) against b's dim %d "
                            "(%d)" % (i, a.shape[i], j, b.shape[j]))
    la = [chr(ord("a") + i) for i in range(a.ndim)]
    lb = [chr(ord("A") + j) for j in range(b.ndim)]
    for i, j in zip(da, db):
        lb[j] = la[i]
    output = ([c for k, c in enumerate(la) if k not in da] +
              [c for k, c in enumerate(lb) if k not in db])
    return einsum("%s,%s->%s" % ("".join(la), "".join(lb), "".join(output)),
                  a, b)
