"""harp.graph: graph programs (docs/GraphDSL.md) parsed and called from
Python, against PyTorch: every built-in on odd shapes, gradients through
subgraph calls against torch.autograd and finite differences (f64), the IR
and DOT outputs, and the errors."""

import os
import re

import numpy as np
import pytest
import torch

import harp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SPEC = open(os.path.join(ROOT, "examples", "graph", "spec.graph")).read()


def test_spec_program():
    prog = harp.graph.parse(SPEC, "spec.graph")
    assert prog.graphs == ["relu", "multi_output", "main"]
    assert repr(prog.main) == \
        "graph main(input: f32[10]) -> (out1: f32[10], out2: f32[10])"
    assert repr(prog["relu"]) == "graph relu(x: f32[B, N]) -> (y: f32[B, N])"
    x = np.linspace(-3, 3, 10).astype(np.float32)
    out1, out2 = prog.main(x)
    np.testing.assert_array_equal(out1.numpy(), np.maximum(x + 1, 0))
    np.testing.assert_array_equal(out2.numpy(), x * 2)
    # A subgraph alone, on its own shapes (B and N bound from the argument).
    y = prog.relu(harp.tensor(np.array([[-1.0, 2.0, -3.0]], np.float32)))
    np.testing.assert_array_equal(y.numpy(), [[0, 2, 0]])
    a, b = prog.multi_output(input := np.zeros(3, np.float32))
    np.testing.assert_array_equal(a.numpy(), input + 1)


# name: (DSL expression over x [and y], torch reference, input shapes)
# x, y: f64 tensors of odd shapes; i: an int64 index tensor.
CASES = {
    "neg": ("neg(x)", lambda x: -x),
    "exp": ("exp(x)", torch.exp),
    "log": ("log(abs(x) + 1.0)", lambda x: torch.log(x.abs() + 1)),
    "sqrt": ("sqrt(abs(x))", lambda x: x.abs().sqrt()),
    "tanh": ("tanh(x)", torch.tanh),
    "sigmoid": ("sigmoid(x)", torch.sigmoid),
    "relu": ("relu(x)", torch.relu),
    "erf": ("erf(x)", torch.erf),
    "erfc": ("erfc(x)", torch.erfc),
    "sin": ("sin(x) + cos(x)", lambda x: x.sin() + x.cos()),
    "square": ("square(x)", torch.square),
    "floor": ("floor(x) + ceil(x) + round(x) + trunc(x)",
              lambda x: x.floor() + x.ceil() + x.round() + x.trunc()),
    "sign": ("sign(x)", torch.sign),
    "log1p": ("log1p(abs(x)) + expm1(x)",
              lambda x: torch.log1p(x.abs()) + torch.expm1(x)),
    "rsqrt": ("rsqrt(abs(x) + 1.0)", lambda x: (x.abs() + 1).rsqrt()),
    "atan": ("atan(x)", torch.atan),
    "add": ("add(x, y) - sub(x, y) * mul(x, 2.0)",
            lambda x, y: (x + y) - (x - y) * (x * 2)),
    "div": ("div(x, abs(y) + 1.0)", lambda x, y: x / (y.abs() + 1)),
    "pow": ("pow(abs(x), 1.5) + abs(y) ** 2.0",
            lambda x, y: x.abs() ** 1.5 + y.abs() ** 2),
    "maximum": ("maximum(x, y) - minimum(x, y)",
                lambda x, y: torch.maximum(x, y) - torch.minimum(x, y)),
    "max": ("max(x, y) + min(x, 0.5)",
            lambda x, y: torch.maximum(x, y) + torch.clamp(x, max=0.5)),
    "mod": ("x % 0.75", lambda x: torch.remainder(x, 0.75)),
    "operators": ("-x * 2.0 + y / 4.0 - 1.0", lambda x, y: -x * 2 + y / 4 - 1),
    "where": ("where(x > y, x, 0.0)", lambda x, y: torch.where(x > y, x, 0.0)),
    "compare": ("cast(x <= y, f64) + cast(x == x, f64) + cast(!(x != y), f64)",
                lambda x, y: (x <= y).double() + 1 + (x == y).double()),
    "logical": ("cast(x > 0.0 && y > 0.0 || x < -1.0, f64)",
                lambda x, y: ((x > 0) & (y > 0) | (x < -1)).double()),
    "gelu": ("gelu(x) + gelu(y, approximate=\"tanh\")",
             lambda x, y: torch.nn.functional.gelu(x)
             + torch.nn.functional.gelu(y, approximate="tanh")),
    "silu": ("silu(x)", lambda x: torch.nn.functional.silu(x)),
    "elu": ("elu(x, alpha=0.5)", lambda x: torch.nn.functional.elu(x, 0.5)),
    "leaky_relu": ("leaky_relu(x, 0.2)",
                   lambda x: torch.nn.functional.leaky_relu(x, 0.2)),
    "softplus": ("softplus(x, beta=2.0)",
                 lambda x: torch.nn.functional.softplus(x, beta=2.0)),
    "clamp": ("clamp(x, min=-0.5, max=0.5)",
              lambda x: torch.clamp(x, -0.5, 0.5)),
    "sum": ("sum(x, dim=1) + mean(x, [1]) + prod(x, dim=[1])",
            lambda x: x.sum(1) + x.mean(1) + x.prod(1)),
    "sum_all": ("sum(x)", lambda x: x.sum()),
    "sum_keepdim": ("sum(x, dim=0, keepdim=true)",
                    lambda x: x.sum(0, keepdim=True)),
    "max_reduce": ("max(x, dim=1) + min(x, dim=1) + amax(x, [1]) + amin(x, [1])",
                   lambda x: x.amax(1) * 2 + x.amin(1) * 2),
    "var": ("var(x, dim=1, correction=0)",
            lambda x: torch.var(x, 1, correction=0)),
    "logsumexp": ("logsumexp(x, [1])", lambda x: torch.logsumexp(x, 1)),
    "softmax": ("softmax(x, dim=0) + log_softmax(x)",
                lambda x: torch.softmax(x, 0) + torch.log_softmax(x, -1)),
    "argmax": ("cast(argmax(x, dim=1) * 10 + argmin(slice(x, 1, 0, 3), 0), f64)",
               lambda x: (x.argmax(1) * 10 + x[:, :3].argmin(0)).double()),
    "argmax_keepdim": ("cast(argmax(x, 0, keepdim=true), f64)",
                       lambda x: x.argmax(0, keepdim=True).double()),
    "norm": ("norm(x, p=3.0, dim=1)", lambda x: torch.linalg.vector_norm(x, 3, 1)),
    "cumsum": ("cumsum(x, 1) + cumprod(x, dim=0)",
               lambda x: torch.cumsum(x, 1) + torch.cumprod(x, 0)),
    "matmul": ("matmul(x, transpose(y)) + x @ permute(y, [1, 0])",
               lambda x, y: 2 * (x @ y.T)),
    "dot": ("dot(reshape(x, [-1]), reshape(y, [-1]))",
            lambda x, y: torch.dot(x.flatten(), y.flatten())),
    "outer": ("outer(sum(x, dim=1), sum(y, dim=0))",
              lambda x, y: torch.outer(x.sum(1), y.sum(0))),
    "reshape": ("reshape(x, [1, -1])", lambda x: x.reshape(1, -1)),
    "expand": ("expand(reshape(sum(x, dim=1), [3, 1]), [3, 5]) + "
               "broadcast_to(sum(y, dim=0), [3, 5])",
               lambda x, y: x.sum(1, keepdim=True).expand(3, 5)
               + y.sum(0).expand(3, 5)),
    "slice": ("slice(x, 1, 1, 5, step=2)", lambda x: x[:, 1:5:2]),
    "slice_default": ("slice(x, dim=0, start=1)", lambda x: x[1:]),
    "flip": ("flip(x, [0, 1])", lambda x: torch.flip(x, [0, 1])),
    "pad": ("pad(x, [1, 0], [0, 2], value=-1.0)",
            lambda x: torch.nn.functional.pad(x, (0, 2, 1, 0), value=-1.0)),
    "concat": ("concat([x, y], dim=0) + cat([y, x])",
               lambda x, y: torch.cat([x, y]) + torch.cat([y, x])),
    "stack": ("stack([x, y], dim=1)", lambda x, y: torch.stack([x, y], 1)),
    "squeeze": ("squeeze(unsqueeze(x, 1), 1) + flatten(unsqueeze(y, 0), 0, 1)",
                lambda x, y: x + y),
    "flatten": ("flatten(x)", lambda x: x.flatten()),
    "contiguous": ("contiguous(transpose(x, 0, 1))", lambda x: x.T),
    "tril": ("tril(x) + triu(y, diagonal=1)",
             lambda x, y: torch.tril(x) + torch.triu(y, 1)),
    "roll": ("roll(x, [2], [1])", lambda x: torch.roll(x, 2, 1)),
    "repeat": ("repeat(x, [2, 1])", lambda x: x.repeat(2, 1)),
    "gather": ("gather(x, 1, i)", lambda x, i: torch.gather(x, 1, i)),
    "scatter_add": ("scatter_add(x, 1, i, y)",
                    lambda x, i, y: x.scatter_add(1, i, y)),
    "index_select": ("index_select(x, 0, slice(reshape(i, [-1]), 0, 0, 2))",
                     lambda x, i: x.index_select(0, i.flatten()[:2])),
    "unfold": ("sum(unfold(x, [2], stride=[1]), dim=2)",
               lambda x: x.unfold(1, 2, 1).sum(2)),
    "fold": ("fold(unfold(x, [2]), [5])",
             lambda x: x.unfold(1, 2, 1).sum(2).new_tensor(
                 np.array([[r[0], r[1] * 2, r[2] * 2, r[3] * 2, r[4]]
                           for r in x.numpy()]))),
    "linear": ("linear(x, y, bias=sum(y, dim=1))",
               lambda x, y: torch.nn.functional.linear(x, y, y.sum(1))),
    "layer_norm": ("layer_norm(x, [5], eps=0.001)",
                   lambda x: torch.nn.functional.layer_norm(x, [5], eps=1e-3)),
    "mse_loss": ("mse_loss(x, y) + l1_loss(x, y, reduction=\"sum\")",
                 lambda x, y: torch.nn.functional.mse_loss(x, y)
                 + torch.nn.functional.l1_loss(x, y, reduction="sum")),
    "cross_entropy": ("cross_entropy(x, slice(reshape(i, [-1]), 0, 0, 3))",
                      lambda x, i: torch.nn.functional.cross_entropy(
                          x, i.flatten()[:3])),
    "sources": ("x + zeros([3, 5], f64) + ones([3, 5], dtype=f64) + "
                "full([3, 5], 2.5, f64) + expand(cast(arange(5), f64), [3, 5]) + "
                "expand(arange(0.0, 1.0, 0.2, f64), [3, 5])",
                lambda x: x + 1 + 2.5 + torch.arange(5).double()
                + torch.arange(0.0, 1.0, 0.2, dtype=torch.float64)),
    "integers": ("cast(x > 0.0, i64) * 3 + 1 - cast(floordiv(i, 2), i64)",
                 None),
    "complex": ("real(complex(x, y) * complex(y, x)) + imag(complex(x, y) ** 2.0)",
                lambda x, y: (torch.complex(x, y) * torch.complex(y, x)).real
                + (torch.complex(x, y) ** 2).imag),
    "conj": ("conj(complex(x, y)) * (1 - 2j) + real(x)",
             lambda x, y: torch.complex(x, y).conj() * (1 - 2j) + x),
    "full_complex": ("real(full([3, 5], 2 - 1j) * complex(x, y))",
                     lambda x, y: (torch.full((3, 5), 2 - 1j)
                                   * torch.complex(x, y)).real),
    "angle": ("angle(complex(x, y)) + abs(polar(abs(x), y) * 2j) + angle(x)",
              lambda x, y: torch.complex(x, y).angle()
              + (torch.polar(x.abs(), y) * 2j).abs() + x.angle()),
}

# Built-ins checked elsewhere in this file (or by their own test).
ELSEWHERE = {"conv", "conv_transpose", "max_pool", "avg_pool",
             "adaptive_avg_pool", "global_avg_pool", "group_norm",
             "embedding", "one_hot", "rand", "randn", "recip", "log2",
             "exp2", "tan", "isnan", "isinf", "not", "abs", "cos", "ceil",
             "round", "trunc", "expm1", "idiv", "rem", "lt", "le", "gt",
             "ge", "eq", "ne", "bitand", "bitor", "bitxor", "shl", "shr",
             "sub", "mul", "minimum", "min", "mean", "prod", "amax", "amin",
             "argmin", "log_softmax", "cumprod", "transpose", "permute",
             "broadcast_to", "cat", "unsqueeze", "triu", "l1_loss", "zeros",
             "ones", "full", "arange", "cast", "floordiv", "where"}


def test_every_builtin_is_tested():
    names = set(harp.graph.builtins())
    covered = set(CASES) | ELSEWHERE
    for expr, _ in CASES.values():
        covered |= set(re.findall(r"([a-z_0-9]+)\(", expr))
    assert names - covered == set()


def run_case(expr, ref, name):
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((3, 5))
    y = rng.standard_normal((3, 5))
    i = rng.integers(0, 3, (3, 5))
    params = ["x: f64[3, 5]", "y: f64[3, 5]", "i: i64[3, 5]"]
    inputs = {"x": x, "y": y, "i": i}
    if ref is not None:
        names = ref.__code__.co_varnames[:ref.__code__.co_argcount] \
            if hasattr(ref, "__code__") else ("x",)
    else:
        names = ("x", "i")
    used = [n for n in ("x", "y", "i") if n in names]
    text = "graph f(%s) -> (out: OUT) {\n    out = %s\n}\n" % (
        ", ".join(p for p in params if p[0] in used), expr)
    # The output type is what the expression gives: evaluate once to learn
    # it with a permissive first pass through Program.call's error.
    try:
        harp.graph.parse(text.replace("OUT", "f64[]"), name).f(
            *[inputs[n] for n in used])
        out_type = "f64[]"
    except harp.graph.GraphError as e:
        m = re.search(r"is assigned (\w+\[[0-9, ]*\])", str(e))
        assert m, str(e)
        out_type = m.group(1)
    prog = harp.graph.parse(text.replace("OUT", out_type), name)
    return prog.f(*[inputs[n] for n in used]), {n: inputs[n] for n in used}


@pytest.mark.parametrize("name", sorted(CASES))
def test_builtin(name):
    expr, ref = CASES[name]
    result, args = run_case(expr, ref, name)
    if ref is None:
        x, i = args["x"], args["i"]
        expected = (x > 0).astype(np.int64) * 3 + 1 - i // 2
        np.testing.assert_array_equal(result.numpy(), expected)
        return
    expected = ref(**{n: torch.tensor(a) for n, a in args.items()})
    if expected is None:
        return
    np.testing.assert_allclose(result.numpy(), expected.numpy(), rtol=1e-10,
                               atol=1e-12)


LAYERS = """
graph block(x: f64[N, C, S, S], w: f64[F, C, 3, 3], b: f64[F]) -> (y: f64[N, F, T, T], p: f64[N, F, U, U]) {
    y = conv(x, w, b, stride=2, padding=1)
    p = avg_pool(max_pool(y, 2, stride=1), 2)
}
graph main(x: f64[2, 3, 9, 9], w: f64[4, 3, 3, 3], b: f64[4]) -> (y: f64[2, 4, 5, 5], p: f64[2, 4, 2, 2]) {
    let (c, q) = block(x, w, b)
    y = c
    p = q
}
"""


def test_layers():
    # T and U appear in outputs only: an error names them.
    with pytest.raises(harp.graph.GraphError,
                       match="dim 'T' of output 'y' is not a dim of any input"):
        harp.graph.parse(LAYERS)
    text = LAYERS.replace("T, T", "5, 5").replace("U, U", "2, 2")
    prog = harp.graph.parse(text)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s) for s in [(2, 3, 9, 9), (4, 3, 3, 3), (4,)])
    y, p = prog.main(x, w, b)
    F = torch.nn.functional
    ty = F.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), 2, 1)
    tp = F.avg_pool2d(F.max_pool2d(ty, 2, 1), 2)
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-10)
    np.testing.assert_allclose(p.numpy(), tp.numpy(), rtol=1e-10)


GRADIENT = """
graph layer(x: f64[B, I], w: f64[I, O], b: f64[O]) -> (y: f64[B, O]) {
    y = tanh(x @ w + expand(b, [B, O]))
}
graph main(x: f64[B, I], w1: f64[I, H], b1: f64[H], w2: f64[H, 1], b2: f64[1]) -> (loss: f64[]) {
    let h = layer(x, w1, b1)
    loss = mean(square(layer(h, w2, b2)))
}
"""


def test_gradients_through_subgraphs():
    prog = harp.graph.parse(GRADIENT)
    rng = np.random.default_rng(1)
    shapes = [(5, 3), (3, 7), (7,), (7, 1), (1,)]
    arrays = [rng.standard_normal(s) for s in shapes]
    params = [harp.tensor(a, requires_grad=True) for a in arrays[1:]]
    loss = prog.main(arrays[0], *params)
    loss.backward()
    # torch.autograd on the same function.
    tp = [torch.tensor(a, requires_grad=True) for a in arrays[1:]]
    tx = torch.tensor(arrays[0])
    h = torch.tanh(tx @ tp[0] + tp[1])
    tl = (torch.tanh(h @ tp[2] + tp[3]) ** 2).mean()
    tl.backward()
    np.testing.assert_allclose(loss.numpy(), tl.detach().numpy(), rtol=1e-12)
    for p, t in zip(params, tp):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-10,
                                   atol=1e-14)
    # Central differences on w1 (f64).
    eps = 1e-6
    w1 = arrays[1]
    for idx in [(0, 0), (2, 6), (1, 3)]:
        plus, minus = w1.copy(), w1.copy()
        plus[idx] += eps
        minus[idx] -= eps
        f = [float(prog.main(arrays[0], w, *arrays[2:]).numpy())
             for w in (plus, minus)]
        assert abs((f[0] - f[1]) / (2 * eps) - params[0].grad.numpy()[idx]) \
            < 1e-7


def test_numbers_for_scalar_inputs_and_keywords():
    prog = harp.graph.parse("""
graph scale(x: f32[N], by: f32[]) -> (y: f32[N]) { y = x * by }
graph main(x: f32[N]) -> (y: f32[N]) { y = scale(by=3.0, x=x) }
""")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(prog.scale(x, 2.0).numpy(), x * 2)
    np.testing.assert_array_equal(prog.scale(x=x, by=0.5).numpy(), x / 2)
    np.testing.assert_array_equal(prog.main(x).numpy(), x * 3)
    with pytest.raises(TypeError, match="missing input 'by'"):
        prog.scale(x)
    with pytest.raises(TypeError, match="has no input 'z'"):
        prog.scale(x, z=1.0)
    with pytest.raises(TypeError, match="input 'x' given twice"):
        prog.scale(x, 2.0, x=x)
    ints = harp.graph.parse("graph f(n: i32) -> (y: i32) { y = n * 2 }")
    assert int(ints.f(3).numpy()) == 6
    with pytest.raises(TypeError, match="input 'n' is i32\\[\\], got 2.5"):
        ints.f(2.5)
    with pytest.raises(TypeError, match="input 'n' is i32\\[\\], got True"):
        ints.f(True)


def test_mlir_and_dot():
    prog = harp.graph.parse(SPEC, "spec.graph")
    text = prog.mlir()
    assert "func.func private @multi_output_N10(" in text
    assert "call @relu_B1_N10" in text
    assert "func.func @main(%arg0: tensor<10xf32>)" in text
    # The IR runs: harp.ir compiles the module the importer built.
    x = np.linspace(-1, 1, 10).astype(np.float32)
    out1, out2 = harp.ir.call(text, "main", [x])
    np.testing.assert_allclose(out1, np.maximum(x + 1, 0))
    mlp = harp.graph.load(os.path.join(ROOT, "examples", "graph", "mlp.graph"))
    text = mlp.mlir(bind={"B": 2, "D": 3, "H": 4, "K": 5})
    assert "func.func private @dense_B2_I3_O4(" in text
    assert "func.func private @dense_B2_I4_O5(" in text
    assert mlp.mlir(inputs=[(2, 3), (3, 4), (4,), (4, 5), (5,)]) == text
    with pytest.raises(harp.HarpError, match="dim 'B' of graph 'main' is not bound"):
        mlp.mlir()
    dot = harp.graph.to_dot(text)
    assert dot.startswith("digraph harp {")
    assert 'label="@main"' in dot and 'label="kernel 0"' in dot
    assert "func.call @dense_B2_I3_O4" in dot


def test_errors_carry_locations():
    with pytest.raises(harp.graph.GraphError) as info:
        harp.graph.parse("graph main(x: f32[2]) -> (y: f32[2]) {\n"
                         "    y = x +\n}\n", "bad.graph")
    e = info.value
    assert isinstance(e, harp.HarpError)
    assert (e.filename, e.lineno, e.colno) == ("bad.graph", 3, 1)
    assert e.message == "expected an expression, found '}'"
    assert str(e).startswith("bad.graph:3:1: expected an expression")
    prog = harp.graph.parse(SPEC)
    with pytest.raises(harp.graph.GraphError,
                       match="input 'input' is declared f32\\[10\\] but the "
                             "argument is f32\\[3\\]"):
        prog.main(np.zeros(3, np.float32))
    with pytest.raises(AttributeError, match="no graph 'mian'"):
        prog.mian
    with pytest.raises(KeyError):
        prog["mian"]
    with pytest.raises(harp.graph.GraphError, match="matmul"):
        harp.graph.parse("graph f(x: f32[2, 3]) -> (y: f32[2, 2]) "
                         "{ y = x @ x }").f(np.zeros((2, 3), np.float32))


def test_recursion_depth_option():
    halfsum = """
graph h(x: f64[N]) -> (s: f64[]) {
    if N == 1 { s = reshape(x, []) }
    else { s = h(slice(x, 0, 0, N / 2)) + h(slice(x, 0, N / 2, N)) }
}
"""
    x = np.arange(16.0)
    prog = harp.graph.parse(halfsum)
    assert float(prog.h(x).numpy()) == x.sum()
    with pytest.raises(harp.graph.GraphError, match="limit of 3: h\\(N=16\\) "
                       "-> h\\(N=8\\) -> h\\(N=4\\) -> h\\(N=2\\)"):
        harp.graph.parse(halfsum, max_depth=3).h(x)
    assert float(prog.h(x, max_depth=4).numpy()) == x.sum()


def test_builtins_documented():
    doc = open(os.path.join(ROOT, "docs", "GraphDSL.md")).read()
    missing = [n for n in harp.graph.builtins()
               if not re.search(r"`%s[`(]" % n, doc)]
    assert missing == []
