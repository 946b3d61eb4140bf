//===- Graph.h - the untyped lazy graph behind harp::Tensor -----*- C++ -*-===//
//
// Every Tensor is a handle to a Node of a DAG. Nothing runs until realize():
// the needed part of the DAG becomes a harp function, built with MLIR's
// builders in the shared JIT's context (never written as text), looked up by
// a key of its structure and, on a miss, compiled by a process-wide
// harp::Jit and run. backward() builds a harp.autodiff request over the same
// graph; no second autograd engine exists in C++.
//
// No MLIR header here: API users include only the standard library.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_GRAPH_H
#define HARP_API_GRAPH_H

#include "harp/Runtime/Array.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace harp {

struct ExportOptions; // harp/Runtime/Export.h

/// Misuse of the API: the message names the op, the shapes and the argument.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// An index outside the range of the dim it selects in (Python:
/// harp.HarpIndexError, both a HarpError and an IndexError).
class IndexError : public Error {
public:
  using Error::Error;
};

/// Where tensors are computed (the seed's backend::get): "cpu", the host
/// through harp-to-llvm, or "cuda", an NVIDIA GPU through harp-to-gpu and
/// harp's CUDA runtime. One instance per device, shared by its tensors.
class Backend {
public:
  explicit Backend(std::string name) : name_(std::move(name)) {}
  const std::string &name() const { return name_; }

private:
  std::string name_;
};
using BackendPtr = std::shared_ptr<const Backend>;

namespace backend {
/// The backend named `name` ("cpu" or "cuda", any case). Asking for "cuda"
/// where no GPU can be used throws harp::Error saying why.
BackendPtr get(const std::string &name);
} // namespace backend

/// How realize() and backward() compile: each field left empty takes the
/// process-wide setting (set_options), then the default.
struct CompileOptions {
  /// Run the outermost parallel loops on get_num_threads() OpenMP threads
  /// (default: on when get_num_threads() > 1).
  std::optional<bool> threads;
  /// Tile and vectorize kernels for the target (default on).
  std::optional<bool> vectorize;
  /// The CPU the "cpu" backend generates code for: "native" (the machine
  /// this runs on), "x86-64-v2" (SSE4.2), "x86-64-v3" (AVX2), "x86-64-v4"
  /// (AVX-512) or an LLVM CPU name; default $HARP_CPU, else native.
  std::optional<std::string> cpu;
  /// Time every kernel into the process-wide profile
  /// (harp/Runtime/Profile.h; default: whether $HARP_PROFILE is set).
  std::optional<bool> profile;
};

/// Sets the process-wide options: the fields `options` has replace the
/// current ones (an empty cpu string restores the default). An unknown CPU
/// throws harp::Error listing the profiles. Part of every kernel's cache key.
void set_options(const CompileOptions &options);
/// The process-wide options with every field filled in.
CompileOptions get_options();

/// set_options with only `cpu` ("" restores the default). Realizing a tensor
/// on a CPU this machine cannot execute throws.
void set_cpu(const std::string &name);
/// The CPU set_cpu or set_options last set, or the default.
std::string get_cpu();

/// The threads threaded code runs on (torch.set_num_threads): `count` >= 1,
/// else harp::Error. Realizations compile threaded code while it is above 1
/// (unless set_options chose `threads`). The default: the first number of
/// $OMP_NUM_THREADS, else the physical cores this process may run on.
void set_num_threads(int count);
int get_num_threads();

/// Gradient mode of the calling thread (torch.set_grad_enabled): while it is
/// off, the tensors built are constants to backward(), which stops at them
/// (their values are computed first). On by default.
void set_grad_enabled(bool enabled);
bool is_grad_enabled();
/// Turns gradient mode off for its scope and restores it after
/// (torch.no_grad).
class NoGradGuard {
public:
  NoGradGuard() : previous(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous); }
  NoGradGuard(const NoGradGuard &) = delete;
  NoGradGuard &operator=(const NoGradGuard &) = delete;

private:
  bool previous;
};

/// Element types of the Tensor API (harp/API/DTypes.def). Unsigned types are
/// carried here and lowered to signless integers with unsigned ops.
enum class DType {
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind) Enum,
#include "harp/API/DTypes.def"
};

std::string dtypeName(DType dtype);
/// The runtime element kind that holds a dtype (signless for unsigned).
ElementKind elementKindOf(DType dtype);

/// Real floating-point dtypes (complex ones are not: isComplex).
constexpr bool isFloat(DType d) { return d == DType::F32 || d == DType::F64; }
constexpr bool isComplex(DType d) {
  return d == DType::C64 || d == DType::C128;
}
/// The float dtype of a complex dtype's parts (`d` itself otherwise).
constexpr DType realOf(DType d) {
  return d == DType::C64 ? DType::F32 : d == DType::C128 ? DType::F64 : d;
}
/// The complex dtype whose parts are float dtype `d` (c64 for f32, c128 for
/// f64; `d` itself when already complex).
constexpr DType complexOf(DType d) {
  return d == DType::F64 || d == DType::C128 ? DType::C128 : DType::C64;
}
constexpr bool isUnsigned(DType d) {
  return d == DType::U8 || d == DType::U16 || d == DType::U32 ||
         d == DType::U64;
}
constexpr unsigned widthOf(DType d) {
  switch (d) {
  case DType::Bool:
    return 1;
  case DType::I8:
  case DType::U8:
    return 8;
  case DType::I16:
  case DType::U16:
    return 16;
  case DType::I32:
  case DType::U32:
  case DType::F32:
    return 32;
  case DType::C128:
    return 128;
  default:
    return 64;
  }
}

/// PyTorch's promotion of two dtypes (bool < integers < floats < complex; a
/// signed and an unsigned integer of one width go to the next wider signed
/// one; a complex and a float meet at the wider of the parts, so c64 and f64
/// give c128). constexpr: the typed API computes result types with it at
/// compile time.
constexpr DType promote(DType a, DType b) {
  if (a == b)
    return a;
  if (isComplex(a) || isComplex(b)) {
    // The parts' float types; an integer or bool side takes the other's.
    DType pa = isComplex(a) || isFloat(a) ? realOf(a) : realOf(b);
    DType pb = isComplex(b) || isFloat(b) ? realOf(b) : realOf(a);
    return complexOf(widthOf(pa) >= widthOf(pb) ? pa : pb);
  }
  if (isFloat(a) || isFloat(b)) {
    if (isFloat(a) && isFloat(b))
      return widthOf(a) >= widthOf(b) ? a : b;
    return isFloat(a) ? a : b;
  }
  if (a == DType::Bool)
    return b;
  if (b == DType::Bool)
    return a;
  if (isUnsigned(a) == isUnsigned(b))
    return widthOf(a) >= widthOf(b) ? a : b;
  DType s = isUnsigned(a) ? b : a, u = isUnsigned(a) ? a : b;
  if (widthOf(s) > widthOf(u))
    return s;
  unsigned w = widthOf(u) * 2 > 64 ? 64 : widthOf(u) * 2;
  return w <= 16 ? DType::I16 : w <= 32 ? DType::I32 : DType::I64;
}

/// Element-wise operations of two operands (NumPy broadcasting, PyTorch
/// promotion).
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,      // true division: integers give float32
  FloorDiv, // floor(a / b)
  Rem,      // C's remainder: the sign of the dividend (fmod)
  Pow,
  Maximum,
  Minimum,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  BitAnd,
  BitOr,
  BitXor,
  Shl,
  Shr,
  Mod,    // floor-mod: the sign of the divisor, as Python's % and
          // torch.remainder
  Complex // a + b i from two real operands (torch.complex)
};
/// Element-wise operations of one operand.
enum class UnaryOp {
  Neg,
  Recip,
  Sqrt,
  Log,
  Log2,
  Exp,
  Exp2,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Relu,
  Abs,
  Floor,
  Not,
  Erf,
  Log1p,
  Expm1,
  Rsqrt,
  Tan,
  Atan,
  Ceil,
  Round, // half to even, as torch.round
  Trunc,
  Sign,
  Square,
  Erfc,  // 1 - erf(x), accurate where erf(x) is near 1
  IsNan, // bool results
  IsInf,
  Real, // the parts of a complex number (real results; x itself for reals)
  Imag, // (complex tensors only)
  Conj, // the complex conjugate (x itself for reals)
  Angle // the argument, atan2(im, re) (pi for negative reals, else 0)
};
enum class ReduceOp { Sum, Prod, Max, Min, Mean };

/// The op's name in messages and in the Python API ("add", "exp", "sum").
const char *opName(BinaryOp op);
const char *opName(UnaryOp op);
const char *opName(ReduceOp op);
/// The op called `name`, or nothing.
std::optional<BinaryOp> binaryOpNamed(const std::string &name);
std::optional<UnaryOp> unaryOpNamed(const std::string &name);
std::optional<ReduceOp> reduceOpNamed(const std::string &name);

/// Where the user's code built a node: shown in compile errors and in the
/// IR's locations. `file` is null when unknown.
struct SourceLocation {
  const char *file = nullptr;
  unsigned line = 0;
  /// 0 when unknown (C++ callers); the graph DSL's front end sets it.
  unsigned column = 0;
#if defined(__clang__) || defined(__GNUC__)
  /// The caller's file and line, when used as a default argument.
  static SourceLocation current(const char *file = __builtin_FILE(),
                                unsigned line = __builtin_LINE()) {
    return {file, line, 0};
  }
#else
  static SourceLocation current() { return {}; }
#endif
};

/// Nodes built while a LocationScope lives on this thread carry its
/// location. The outermost scope wins: the typed Tensor API opens one per
/// call with its caller's line, and the API's own calls inside it keep the
/// user's. A scope without a file changes nothing.
class LocationScope {
public:
  explicit LocationScope(SourceLocation location);
  ~LocationScope();
  LocationScope(const LocationScope &) = delete;
  LocationScope &operator=(const LocationScope &) = delete;

private:
  SourceLocation saved;
};

/// A function that names the user's line when no LocationScope is open (the
/// Python bindings install one that finds the first frame outside the harp
/// package). It sets `where` (whose file must stay valid for the process)
/// and returns true, or returns false when it cannot tell.
using LocationHook = bool (*)(SourceLocation &where);
void setLocationHook(LocationHook hook);

namespace detail {

struct Node;
using NodePtr = std::shared_ptr<Node>;
struct IndexCheck;
using IndexCheckPtr = std::shared_ptr<IndexCheck>;

/// "[2, 3]": a shape as messages spell it.
std::string shapeStr(const std::vector<int64_t> &shape);

/// Shape and dtype of a node.
const std::vector<int64_t> &shapeOf(const NodePtr &node);
DType dtypeOf(const NodePtr &node);

// Sources.
/// A leaf holding `data`, on `backend`; without one the leaf (a constant,
/// a coerced scalar) takes the backend of the tensors it is combined with.
NodePtr fromData(DType dtype, std::vector<int64_t> shape, const void *data,
                 BackendPtr backend = nullptr);
/// A leaf adopting `array` (no copy; its element kind must hold `dtype`).
NodePtr fromArray(DType dtype, Array array, BackendPtr backend = nullptr);
/// A named placeholder leaf; realizing a graph that reads it before
/// setData() is an error naming it.
NodePtr input(DType dtype, std::vector<int64_t> shape, std::string name);
/// Whether the node is a leaf (holds data rather than computing it).
bool isLeaf(const NodePtr &node);
/// New values for a leaf (same dtype and shape), as for an input():
/// tensors computed from the leaf, before or after, use them (values
/// realized from the old ones are recomputed on their next realize()).
/// Deferred writes (deferOverwrite) are done first, from the old values.
void setData(const NodePtr &leaf, const void *data);
/// An in-place write of new values into a leaf (same dtype and shape), as
/// PyTorch's copy_ or an optimizer step: the leaf's storage is written (a
/// detach() sharing it sees the new values), while tensors built on the
/// leaf before keep the values they were built on (their graphs read a
/// snapshot of the old values); backward() through such a graph to a
/// leaf that requires a gradient is an error.
void overwrite(const NodePtr &leaf, const void *data);
/// overwrite() with the values of `value` (same dtype and shape), computed
/// later: the tensors built on the leaf before keep its old values at once,
/// and the write is done, with every other write deferred so, in one
/// compiled call, at the latest when the leaf is read again (realized, or
/// built on: a new tensor reading it first flushes the writes). backward()
/// computes the deferred writes with the loss, in the same forward: a
/// batch norm's running statistics cost no second pass over the layers
/// below it.
void deferOverwrite(const NodePtr &leaf, const NodePtr &value);
/// Performs every deferred write now (one compiled call for all of them).
void flushDeferredWrites();
/// Marks a leaf whose storage another library reads and writes (shared
/// through DLPack): deferOverwrite() into it is done at once, since the
/// other library reads the memory without asking harp first, and what is
/// computed from it is computed again at every realize(), since the other
/// library may have written it since.
void markExternal(const NodePtr &leaf);
/// A constant: part of the compiled code (a change compiles anew).
NodePtr full(DType dtype, std::vector<int64_t> shape, double value);
/// full() of `real` + `imag` i (a complex dtype unless `imag` is 0).
NodePtr fullComplex(DType dtype, std::vector<int64_t> shape, double real,
                    double imag);
/// A 0-d leaf holding one value of `dtype` read from `data`: an argument of
/// the compiled function, so a new value reuses the compiled kernel. It
/// follows the backend of the tensors it is combined with.
NodePtr scalar(DType dtype, const void *data);
/// scalar() from a double, converted to `dtype` (integers truncate).
NodePtr scalar(DType dtype, double value);
NodePtr arange(DType dtype, int64_t count, double start, double step);
NodePtr rand(DType dtype, std::vector<int64_t> shape, uint64_t seed);
/// rand() with the seed read at run time from `seed` (a 0-d integer
/// tensor, such as scalar(DType::I64, ...)): a new seed value reuses the
/// compiled code. The same seed gives the same numbers as the overload
/// above.
NodePtr rand(DType dtype, std::vector<int64_t> shape, NodePtr seed);

// Element-wise (NumPy broadcasting, PyTorch promotion).
NodePtr binary(BinaryOp op, NodePtr a, NodePtr b);
NodePtr unary(UnaryOp op, NodePtr a);
/// `a` where `condition` (bool) holds, else `b` (all broadcast; a and b
/// promoted): a select, so infinities and NaNs in the other branch do not
/// leak (torch.where).
NodePtr where(NodePtr condition, NodePtr a, NodePtr b);

// Activations and friends (torch.nn.functional names), composed from the
// ops above; numbers given here are arguments of the compiled code.
/// 0.5 x (1 + erf(x / sqrt 2)), or with `tanh` 0.5 x (1 + tanh(sqrt(2 / pi)
/// (x + 0.044715 x^3))).
NodePtr gelu(NodePtr x, bool tanh);
NodePtr silu(NodePtr x);
/// x where x > 0, else alpha (exp(x) - 1).
NodePtr elu(NodePtr x, double alpha);
/// x where x > 0, else slope x.
NodePtr leakyRelu(NodePtr x, double slope);
/// log(1 + exp(beta x)) / beta, and x where beta x > threshold.
NodePtr softplus(NodePtr x, double beta, double threshold);
/// x limited to [min, max] (either may be absent); the gradient is 1
/// inside and at the bounds, 0 outside, as torch.clamp's.
NodePtr clamp(NodePtr x, std::optional<double> min, std::optional<double> max);
NodePtr cast(NodePtr a, DType to);

// Reductions over `axes` (negative axes count from the end; empty means
// all).
NodePtr reduce(ReduceOp kind, NodePtr a, std::vector<int64_t> axes,
               bool keepdim);
NodePtr softmax(NodePtr a, int64_t axis);
/// Matrix product of the last two dims, batch dims broadcast.
NodePtr matmul(NodePtr a, NodePtr b);
/// log(sum(exp(x))) over `axes`, computed around the maximum (a row of
/// -inf gives -inf).
NodePtr logsumexp(NodePtr a, std::vector<int64_t> axes, bool keepdim);
/// x - logsumexp(x) along `axis`.
NodePtr logSoftmax(NodePtr a, int64_t axis);
/// The variance over `axes`, divided by n - correction (1: unbiased).
NodePtr var(NodePtr a, std::vector<int64_t> axes, int64_t correction,
            bool keepdim);
/// The index (i64) of the first maximum (argmax) or minimum along `axis`;
/// a NaN counts as the extreme, as in PyTorch.
NodePtr argExtreme(NodePtr a, int64_t axis, bool keepdim, bool max);

// Views (zero-copy harp.view).
NodePtr reshape(NodePtr a, std::vector<int64_t> shape);
NodePtr permute(NodePtr a, std::vector<int64_t> perm);
/// `a` broadcast to `shape` (NumPy's rules: new leading dims, size-1 dims
/// stretched; -1 keeps a dim). `op` names the caller in errors.
NodePtr expand(NodePtr a, std::vector<int64_t> shape,
               const std::string &op = "expand");
NodePtr slice(NodePtr a, int64_t dim, int64_t start, int64_t stop,
              int64_t step);
NodePtr flip(NodePtr a, std::vector<int64_t> dims);
NodePtr pad(NodePtr a, std::vector<int64_t> before, std::vector<int64_t> after,
            double value);
NodePtr concat(std::vector<NodePtr> inputs, int64_t dim);
/// Sliding windows over the trailing kernel.size() dims: shape
/// [lead..., out_1..out_k, kernel_1..kernel_k] (a zero-copy view).
NodePtr unfold(NodePtr a, std::vector<int64_t> kernel,
               std::vector<int64_t> stride, std::vector<int64_t> dilation);
/// The adjoint of unfold: sums windows [lead..., out..., kernel...] back
/// into [lead..., outputSize...] (overlaps add up).
NodePtr fold(NodePtr cols, std::vector<int64_t> outputSize,
             std::vector<int64_t> stride, std::vector<int64_t> dilation);
/// Nearest-neighbour resize of the trailing size.size() dims
/// (torch.nn.functional.interpolate, mode="nearest").
NodePtr interpolateNearest(NodePtr a, std::vector<int64_t> size);
/// Linear (1 dim), bilinear (2) or trilinear (3) resize of the trailing
/// size.size() dims (PyTorch's interpolate with align_corners=False), built
/// from arange, floor and gather, one dim at a time.
NodePtr interpolateLinear(NodePtr a, std::vector<int64_t> size);
/// N-d convolution (k = 1..3) of x [N, C, spatial...] with w [F, C,
/// kernel...]: pad, unfold and one multiply-and-sum map_reduce.
NodePtr conv(NodePtr x, NodePtr w, std::vector<int64_t> stride,
             std::vector<int64_t> padding, std::vector<int64_t> dilation);
/// torch.gather / Tensor.scatter_add (index: i32 or i64).
NodePtr gather(NodePtr input, NodePtr index, int64_t dim);
NodePtr scatterAdd(NodePtr dest, NodePtr index, NodePtr src, int64_t dim);
/// Checks that the entries of `index` (i32 or i64) lie in [0, size), or
/// [-size, size) with `wrapsNegative`; entries equal to `ignore` are not
/// indices (nll_loss's ignore_index). An index whose values are on the host
/// (a leaf, a realized tensor) is read now: out of range throws IndexError
/// naming `op`, the entry, its position and the range (`what` names it:
/// "dim 1 of size 5"; `noun` the entries: "index", "target"), and null is
/// returned. An index computed in the graph gets a check to attach to the
/// op's result (withCheck): computing the result computes the index's
/// bounds too and throws then (docs/Ops.md, "Indices out of range").
IndexCheckPtr checkIndexRange(const std::string &op, const NodePtr &index,
                              int64_t size, const std::string &what,
                              std::optional<int64_t> ignore = std::nullopt,
                              bool wrapsNegative = false,
                              const std::string &noun = "index");
/// "dim 1 of size 5": checkIndexRange's `what` for an index into a dim.
std::string dimRange(int64_t dim, int64_t size);
/// `node` (returned) carrying `check` (null: none): realize() and
/// backward() check the index whenever they compute `node`.
NodePtr withCheck(NodePtr node, const IndexCheckPtr &check);
/// gather() and scatterAdd() without the range check, for indices in range
/// by construction (or checked by the caller).
NodePtr gatherUnchecked(NodePtr input, NodePtr index, int64_t dim);
NodePtr scatterAddUnchecked(NodePtr dest, NodePtr index, NodePtr src,
                            int64_t dim);
NodePtr contiguous(NodePtr a);
/// The results of a call of function `callee` (outside the graph) on
/// `args`, one node per result of the given dtypes and shapes: emitted as
/// one func.call in the function that reads them. Only functions built
/// into one module with the callee (the graph DSL's importer) can hold
/// them; realize() of such a node fails, as no callee is there.
std::vector<NodePtr>
callFunction(const std::string &callee, std::vector<NodePtr> args,
             std::vector<std::pair<DType, std::vector<int64_t>>> results);

// Composites (PyTorch's names; built from views, concat, gather and maps,
// so each has a gradient through its parts).
/// The tensors (all of one shape) joined along a new dim `dim`.
NodePtr stack(std::vector<NodePtr> inputs, int64_t dim);
/// Views of consecutive pieces along `dim` of `size` each (the last one
/// shorter), or of the listed sizes, which must add up to the dim.
std::vector<NodePtr> split(NodePtr a, int64_t size, int64_t dim);
std::vector<NodePtr> splitSections(NodePtr a, std::vector<int64_t> sizes,
                                   int64_t dim);
/// split() into `chunks` pieces of ceil(n / chunks) (fewer if n is small).
std::vector<NodePtr> chunk(NodePtr a, int64_t chunks, int64_t dim);
/// The slices along `dim`, that dim removed.
std::vector<NodePtr> unbind(NodePtr a, int64_t dim);
/// The entries of `a` at the 1-D `index` (i32 or i64) along `dim`.
NodePtr indexSelect(NodePtr a, int64_t dim, NodePtr index);
/// gather with the other dims broadcast between `a` and `indices` (no dim:
/// both flattened).
NodePtr takeAlongDim(NodePtr a, NodePtr indices, std::optional<int64_t> dim);
/// Tensor.repeat: tiled sizes[i] times along dim i (extra leading sizes add
/// dims).
NodePtr repeat(NodePtr a, std::vector<int64_t> sizes);
/// Each element repeated `repeats` times (or repeats[i] times for element
/// i) along `dim` (no dim: the flattened tensor).
NodePtr repeatInterleave(NodePtr a, int64_t repeats,
                         std::optional<int64_t> dim);
NodePtr repeatInterleave(NodePtr a, std::vector<int64_t> repeats,
                         std::optional<int64_t> dim);
/// tril (lower) / triu of the last two dims: (i, j) kept where j - i <=
/// diagonal (tril) or >= diagonal (triu), zero elsewhere.
NodePtr triangle(NodePtr a, int64_t diagonal, bool lower);
/// Elements shifted cyclically by shifts[i] along dims[i] (dims empty: one
/// shift of the flattened tensor, shape kept).
NodePtr roll(NodePtr a, std::vector<int64_t> shifts, std::vector<int64_t> dims);
/// cumsum (Sum) / cumprod (Prod) along `dim`: a parallel scan of
/// ceil(log2 n) element-wise steps.
NodePtr scan(ReduceOp kind, NodePtr a, int64_t dim);
/// The vector p-norm over `axes` (empty: all): p = 2, 1, inf, -inf, 0 (the
/// count of non-zeros) or any other positive p. A zero norm has a zero
/// gradient (torch's subgradient), not NaN.
NodePtr norm(NodePtr x, double p, std::vector<int64_t> axes, bool keepdim);
/// sqrt(v) of a variance v >= 0, whose gradient is 0 where v is 0 (as
/// torch.std's), not 0 * infinity.
NodePtr sqrtOfVariance(NodePtr v);
/// x / max(norm_p(x) along dim, eps) (torch.nn.functional.normalize).
NodePtr normalize(NodePtr x, double p, int64_t dim, double eps);
/// The angle of the point (x, y) in (-pi, pi] (torch.atan2), from atan and
/// selects; integer operands are promoted to f32.
NodePtr atan2(NodePtr y, NodePtr x);
/// arcsin and arccos (NaN outside [-1, 1]), composed of atan2 and sqrt.
NodePtr asin(NodePtr x);
NodePtr acos(NodePtr x);
/// x - trunc(x): the fractional part, with x's sign (torch.frac).
NodePtr frac(NodePtr x);
/// Standard normal numbers: Box-Muller on two rand() draws of `seed`.
NodePtr randn(DType dtype, std::vector<int64_t> shape, uint64_t seed);
/// randn() with the seed read at run time (as rand()'s overload).
NodePtr randn(DType dtype, std::vector<int64_t> shape, NodePtr seed);
/// A 0-d i64 leaf holding `seed` (the run-time seed of rand/randn).
NodePtr seedLeaf(uint64_t seed);
/// The inner product of two 1-D tensors / their outer product [n, m].
NodePtr dot(NodePtr a, NodePtr b);
NodePtr outer(NodePtr a, NodePtr b);

// Execution and autograd.
/// The node's value, computed once and cached on the node. `options`
/// override the process-wide ones for this call.
const Array &realize(const NodePtr &node, const CompileOptions &options = {});
/// Computes every node of `nodes` in one compiled call per backend (the
/// graphs' shared parts once), as realize() would one by one; nodes that
/// hold their values already are skipped.
void realizeMany(const std::vector<NodePtr> &nodes,
                 const CompileOptions &options = {});
/// Whether realize() would return at once (the node holds a value computed
/// from its leaves' current values).
bool hasValue(const NodePtr &node);
void setRequiresGrad(const NodePtr &node, bool value);
bool requiresGrad(const NodePtr &node);
/// Accumulates d(loss)/d(leaf) into every leaf that requires a gradient,
/// or only into `inputs` (leaves that require a gradient) where given.
/// With `createGraph` nothing is computed: each leaf's gradient becomes a
/// computed tensor (torch's create_graph), which grad() returns and later
/// backward() calls differentiate through.
void backward(const NodePtr &loss, const CompileOptions &options = {},
              const std::vector<NodePtr> *inputs = nullptr,
              bool createGraph = false);
/// d(loss)/d(input) for each of `inputs` (leaves that require a gradient,
/// or tensors computed in the loss's graph), as new leaves; null for an
/// input the loss does not depend on. No leaf's accumulated gradient
/// changes (torch.autograd.grad). With `createGraph` the gradients are
/// computed tensors instead (a harp.autodiff of the loss's graph, computed
/// when read), which backward() and gradients() differentiate again.
std::vector<NodePtr> gradients(const NodePtr &loss,
                               const std::vector<NodePtr> &inputs,
                               const CompileOptions &options = {},
                               bool createGraph = false);
/// The accumulated gradient of a leaf, or null: a leaf sharing its storage
/// (torch's .grad), the same node at every call until backward() first
/// reaches the leaf again after zeroGrad() or setGradientArray(). Writing
/// into it (overwrite) writes the gradient; backward() accumulates into it
/// as overwrite() would, so graphs built on it keep the values they were
/// built on.
NodePtr grad(const NodePtr &leaf);
void zeroGrad(const NodePtr &leaf);
/// The accumulated gradient's storage (no copy), or null: for code that
/// reads gradients (harp::distributed averages them).
Array *gradientArray(const NodePtr &leaf);
/// Sets the leaf's gradient to `value` (its dtype and shape); a tensor
/// grad() handed out keeps the old one.
void setGradientArray(const NodePtr &leaf, Array value);
/// Writes `data` (the leaf's dtype, its element count) into the leaf's
/// gradient, creating it if there is none: through the tensor grad()
/// handed out, as overwrite() does, where there is one.
void setGradientValues(const NodePtr &leaf, const void *data);
/// Called at the end of every backward() with the leaves whose gradients it
/// accumulated into; returns an id for removeBackwardHook().
using BackwardHook = std::function<void(const std::vector<NodePtr> &)>;
uint64_t addBackwardHook(BackwardHook hook);
void removeBackwardHook(uint64_t id);
/// A new leaf holding the node's value, cut from the graph.
NodePtr detach(const NodePtr &node);
/// The backend the node is computed on (cpu for a node that has none).
BackendPtr backendOf(const NodePtr &node);
/// The node's value as a leaf on `backend` (the node itself if it is there
/// already): computed where the node is, then moved. Like detach(), the new
/// leaf is cut from the graph: gradients do not flow back through it.
NodePtr to(const NodePtr &node, const BackendPtr &backend);
/// The harp IR realize() would compile for this node, printed (with the
/// user's file:line locations when `debugInfo`).
std::string moduleText(const NodePtr &node, bool debugInfo = false);

/// Compiles the function from `inputs` (leaves, its arguments in order) to
/// `outputs` ahead of time into the library `path` (harp/Runtime/Export.h):
/// every other leaf the outputs read is a constant of the library (a
/// model's weights). `name` is the function's (its C entry point is
/// `<prefix>_<name>`); `options` pick the CPU code (cpu, threads,
/// vectorize). With `gradients` (indices of float inputs), the function is
/// a training step: it returns the outputs and then the gradient of the
/// first output (a 0-d float loss) with respect to each of those inputs,
/// computed by harp.autodiff. Throws harp::Error naming what is wrong.
void exportGraphLibrary(const std::vector<NodePtr> &outputs,
                        const std::vector<NodePtr> &inputs,
                        const std::string &path, const std::string &name,
                        const ExportOptions &export_,
                        const CompileOptions &options = {},
                        const std::vector<int64_t> &gradients = {});

/// How the API's realize() and backward() calls found their code since the
/// process started: compiled, found in memory (by the graph's structure, no
/// IR built), or loaded from the disk cache.
struct CompileCounts {
  unsigned compilations, memoryHits, diskHits;
};
CompileCounts compileCounts();
/// How many times harp IR text was parsed in this process (the API never
/// parses; tests hold it to that).
unsigned irParseCount();

} // namespace detail
} // namespace harp

#endif // HARP_API_GRAPH_H
