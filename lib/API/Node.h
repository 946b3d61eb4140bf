//===- Node.h - the graph node and helpers shared by the API's files -*- C++
//-*-===//
//
// Private to lib/API. A Node records one operation of the lazy graph with
// its parameters as data (enums, numbers, #harp.view attributes uniqued in
// the shared JIT context): enough both to build its harp op with MLIR's
// builders and to key the compiled code by the graph's structure.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_API_NODE_H
#define HARP_LIB_API_NODE_H

#include "harp/API/Graph.h"
#include "harp/Dialect/Harp/IR/HarpAttrs.h"

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Location.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace mlir {
class OpBuilder;
class Type;
class Value;
class ValueRange;
class MLIRContext;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace harp::detail {

/// What a Map node's body computes.
enum class MapKind : uint8_t { Binary, Unary, Cast, Select };

/// A call of a function outside the graph (callFunction).
struct CallSite {
  std::string callee;
  std::vector<std::pair<DType, std::vector<int64_t>>> results;
};

/// The gradients a Grad node is one of (gradients() with create_graph):
/// the gradient function of `loss`'s graph (cut at `cuts`), called with
/// the nodes' inputs (that graph's arguments, in order) through one
/// harp.autodiff op, differentiated with respect to the inputs at `wrt`.
struct GradSite {
  NodePtr loss;
  std::unordered_set<const Node *> cuts;
  std::vector<int64_t> wrt;
  /// The structural key of the loss's graph (planGraph).
  std::string key;
};

/// The range check of an index computed in the graph (checkIndexRange):
/// `bounds` ([2] i64) is the smallest and largest of its entries that are
/// indices.
struct IndexCheck {
  NodePtr bounds;
  int64_t size = 0;
  bool wrapsNegative = false;
  std::string op, what, noun;
};

/// Throws IndexError for `check` when `bounds` (its bounds node's value)
/// leave the range.
void verifyIndexCheck(const IndexCheck &check, const Array &bounds);

struct Node {
  enum class Kind : uint8_t {
    Leaf,
    Full,
    Arange,
    Rand,
    Map,
    Reduce,
    View,
    Concat,
    Contiguous,
    Gather,
    ScatterAdd,
    Call,
    Grad
  };
  Kind kind;
  std::vector<NodePtr> inputs;
  std::vector<int64_t> shape;
  DType dtype;
  // Map: the scalar op of the body, over operands of inputs[0]'s dtype.
  MapKind mapKind = MapKind::Binary;
  BinaryOp binaryOp = BinaryOp::Add;
  UnaryOp unaryOp = UnaryOp::Neg;
  // Reduce.
  mlir::harp::ReductionKind reduceKind = mlir::harp::ReductionKind::Sum;
  std::vector<int64_t> dims;
  bool keepdim = false;
  mlir::harp::ViewAttr layout; // View
  double value = 0, step = 0;  // Full (value), Arange (start, step)
  double imag = 0;             // Full of a complex dtype: the imaginary part
  uint64_t seed = 0;           // Rand
  int64_t dim = 0;             // Concat, Gather, ScatterAdd
  /// Where the user built it (file interned for the process; null: unknown).
  const std::string *file = nullptr;
  unsigned line = 0, column = 0;
  /// Call: the call site, shared by the nodes of its results; `dim` is the
  /// result's index.
  std::shared_ptr<const CallSite> call;
  /// Grad: the gradients it is one of; `dim` is its index in `wrt`.
  std::shared_ptr<const GradSite> grad;

  std::optional<Array> data; // a leaf's data, or the realized value
  /// When `data` was set: a leaf's values, or a realization. A realized
  /// value is fresh while no leaf below it has newer values.
  uint64_t epoch = 0;
  bool hasValues = true; // false for an input() before setData()
  std::string name;      // an input's name
  bool requiresGrad = false;
  /// Built while gradient mode was off (no_grad): backward() treats it as a
  /// constant, computed first, when a leaf that requires a gradient is
  /// under it.
  bool noGrad = false;
  std::optional<Array> gradient;
  /// The tensor grad() handed out for `gradient`: a leaf sharing its
  /// storage, the same one at every call until the gradient is replaced,
  /// so that writes through it (copy_) are the gradient's and graphs
  /// built on it keep their values when backward() accumulates.
  NodePtr gradientNode;
  /// The gradient as a computed tensor (backward with createGraph), which
  /// grad() returns while it is set; computed into `gradient` when the
  /// values are needed (the next backward() accumulating into it,
  /// gradientArray()).
  NodePtr gradientGraph;
  /// A leaf's direct users (the nodes built on it), so that overwrite()
  /// can move them onto a snapshot of the values they were built on;
  /// expired entries are pruned as the list grows (usersPruned: its size
  /// after the last pruning). Guarded by a mutex of Graph.cpp.
  std::vector<std::weak_ptr<Node>> users;
  size_t usersPruned = 0;
  /// A snapshot overwrite() made: the values a leaf had before an in-place
  /// write, for the graphs built on it before.
  bool snapshot = false;
  /// A leaf with a write deferOverwrite() has not done yet. Guarded by the
  /// deferred writes' mutex (Graph.cpp).
  bool writePending = false;
  /// A leaf whose storage another library shares (markExternal): its
  /// deferred writes are done at once.
  bool external = false;
  /// Where the node is computed; null for a node that follows its users
  /// (constants, scalars).
  BackendPtr backend;
  /// Range checks of computed indices the op read (withCheck): whoever
  /// computes the node checks them.
  std::vector<IndexCheckPtr> checks;
};

using Kind = Node::Kind;

//===--- Graph.cpp --------------------------------------------------------===//

int64_t numElements(const std::vector<int64_t> &shape);
/// A new node computed on the backend its inputs share, carrying the
/// caller's location.
NodePtr make(Kind kind, std::vector<int64_t> shape, DType dtype,
             std::vector<NodePtr> inputs = {});
/// The backend shared by `inputs` (null if none has one); `op` names the
/// operation in the error when they are on different devices.
BackendPtr commonBackend(const std::string &op,
                         const std::vector<NodePtr> &inputs);
/// Orders data changes and realizations.
uint64_t nextEpoch();
/// Whether `n` holds a value computed from its leaves' current values.
bool isFresh(const Node *n, std::map<const Node *, uint64_t> &memo);
int64_t normalizeAxis(const std::string &op, int64_t axis, size_t rank);
/// Whether a node was ever built with gradient mode off (Node::noGrad).
bool anyNoGradNodes();
/// Whether `axis` is the one dim PyTorch lends a 0-d tensor (0 or -1):
/// false for a tensor of rank > 0, an error naming `op` for any other
/// axis of a 0-d tensor.
bool isScalarAxis(const std::string &op, int64_t axis, size_t rank);
/// `fn` of the 0-d `a` seen as [1], its [1] (or [] ) result seen as 0-d.
NodePtr onScalarAsVector(const NodePtr &a,
                         const std::function<NodePtr(NodePtr)> &fn);
/// NumPy broadcasting of `shapes`, or an error naming `op`.
std::vector<int64_t>
broadcastShape(const std::string &op,
               const std::vector<std::vector<int64_t>> &shapes);

/// The shared JIT context (Jit::sharedContext), for attributes; hold
/// ContextLock while creating any.
mlir::MLIRContext *context();
class ContextLock {
public:
  ContextLock();
  ~ContextLock();
};

//===--- Views.cpp --------------------------------------------------------===//

/// A harp.view of `a` with `layout`, of `shape`.
NodePtr view(NodePtr a, std::vector<int64_t> shape,
             mlir::harp::ViewAttr layout);
/// `a` as `shape` under NumPy broadcasting (itself if it has that shape).
NodePtr broadcastTo(NodePtr a, const std::vector<int64_t> &shape);
/// dN of the shared context.
mlir::AffineExpr dimExpr(unsigned n);

//===--- Elementwise.cpp --------------------------------------------------===//

/// A map over `inputs` (same shape) computing `op`.
NodePtr mapBinary(BinaryOp op, NodePtr a, NodePtr b, DType out);
/// The body of Map node `n` on its operands' scalars.
mlir::Value buildMapBody(mlir::OpBuilder &b, mlir::Location loc, const Node &n,
                         mlir::ValueRange args);

//===--- Emit.cpp ---------------------------------------------------------===//

/// The part of a graph one function computes, in an order its ops can be
/// built in, and the key of its structure.
struct GraphPlan {
  /// Every node the function reads or computes, operands first.
  std::vector<const Node *> nodes;
  /// The function's arguments, in order: leaves, and with cutAtValues the
  /// nodes that already hold a fresh value.
  std::vector<NodePtr> args;
  /// The graph's structure (ops, attributes, types, how nodes connect; not
  /// data, not locations): equal keys build equal functions.
  std::string key;
};

/// Plans the function computing `root`. With `cutAtValues`, nodes that hold
/// a fresh value are arguments (realize); otherwise only leaves are
/// (autodiff must see the whole graph). Throws for a placeholder without
/// values when `cutAtValues`.
GraphPlan planGraph(const NodePtr &root, bool cutAtValues,
                    const std::unordered_set<const Node *> *cuts = nullptr);
/// planGraph of one function computing every node of `roots`; the nodes of
/// `cuts` (which hold values) are arguments too.
GraphPlan planGraph(llvm::ArrayRef<NodePtr> roots, bool cutAtValues,
                    const std::unordered_set<const Node *> *cuts = nullptr);

/// The MLIR element type of `d` (signless for unsigned dtypes).
mlir::Type elementType(mlir::MLIRContext *ctx, DType d);

/// Builds `func.func @name` computing `root` from `plan`'s arguments at
/// `b`'s insertion point (hold ContextLock).
mlir::func::FuncOp buildFunction(mlir::OpBuilder &b, const GraphPlan &plan,
                                 const NodePtr &root, const std::string &name,
                                 bool isPrivate);
/// buildFunction returning every node of `roots`, in order.
mlir::func::FuncOp buildFunction(mlir::OpBuilder &b, const GraphPlan &plan,
                                 llvm::ArrayRef<NodePtr> roots,
                                 const std::string &name, bool isPrivate);

//===--- Graph.cpp --------------------------------------------------------===//

/// Takes the deferred writes out of the queue, in the order they were made
/// (leaf, value); the caller does them (or gives them back).
std::vector<std::pair<NodePtr, NodePtr>> takeDeferredWrites();
/// Does a deferred write (the value computed): the tensors still built on
/// the leaf's old values move onto a snapshot of them, then the leaf takes
/// `values` (their storage where nothing else shares either, else a copy).
void writeDeferred(const NodePtr &leaf, Array values);
/// Puts writes takeDeferredWrites() returned back (a call that failed).
void restoreDeferredWrites(std::vector<std::pair<NodePtr, NodePtr>> writes);
/// Whether `leaf` has a deferred write not done yet.
bool hasDeferredWrite(const Node &leaf);
/// Whether realizing `node` may read what a deferred write writes: a leaf
/// written (or sharing a written leaf's storage), or any computed node
/// while writes are deferred.
bool readsDeferredWrite(const Node &node);

} // namespace harp::detail

#endif // HARP_LIB_API_NODE_H
