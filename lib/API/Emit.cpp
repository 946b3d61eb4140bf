//===- Emit.cpp - harp IR of a graph, built with MLIR's builders ----------===//
//
// planGraph orders the nodes a function needs and writes down their
// structure as a key, without touching MLIR: a realize() whose key was seen
// before builds no IR at all. buildFunction then builds the function with
// OpBuilder in the shared JIT context, each op at its user's location.
//
//===----------------------------------------------------------------------===//

#include "Node.h"

#include "harp/API/Function.h"

#include "harp/Dialect/Harp/IR/HarpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <complex>
#include <cstring>
#include <unordered_map>

using namespace harp;
using namespace harp::detail;
namespace mh = mlir::harp;

//===----------------------------------------------------------------------===//
// Plan and structural key
//===----------------------------------------------------------------------===//

namespace {
/// Appends the raw bytes of values to a key.
class KeyWriter {
public:
  explicit KeyWriter(std::string &key) : key(key) {}
  template <typename T>
  void put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    key.append(bytes, sizeof(T));
  }
  void append(const std::string &text) { key.append(text); }
  void put(const std::vector<int64_t> &values) {
    put<uint32_t>(values.size());
    for (int64_t v : values)
      put(v);
  }

private:
  std::string &key;
};
} // namespace

GraphPlan
harp::detail::planGraph(const NodePtr &root, bool cutAtValues,
                        const std::unordered_set<const Node *> *cuts) {
  return planGraph(llvm::ArrayRef<NodePtr>(root), cutAtValues, cuts);
}

GraphPlan
harp::detail::planGraph(llvm::ArrayRef<NodePtr> roots, bool cutAtValues,
                        const std::unordered_set<const Node *> *cuts) {
  GraphPlan plan;
  std::unordered_map<const Node *, uint32_t> index;
  std::map<const Node *, uint64_t> memo;
  KeyWriter key(plan.key);
  auto isArgument = [&](const Node *n) {
    return n->kind == Kind::Leaf || (cutAtValues && isFresh(n, memo)) ||
           (cuts && cuts->count(n));
  };
  // Iterative post-order: graphs of thousands of ops stay off the C stack.
  std::vector<std::pair<const NodePtr *, size_t>> stack;
  for (const NodePtr &root : llvm::reverse(roots))
    stack.push_back({&root, 0});
  while (!stack.empty()) {
    auto &[ptr, next] = stack.back();
    const Node *n = ptr->get();
    if (index.count(n)) {
      stack.pop_back();
      continue;
    }
    bool argument = isArgument(n);
    if (!argument && next < n->inputs.size()) {
      const NodePtr *input = &n->inputs[next++];
      if (!index.count(input->get()))
        stack.push_back({input, 0});
      continue;
    }
    index[n] = plan.nodes.size();
    plan.nodes.push_back(n);
    key.put(static_cast<uint8_t>(argument ? 0xff : uint8_t(n->kind)));
    key.put(static_cast<uint8_t>(n->dtype));
    key.put(n->shape);
    if (argument) {
      if (!n->hasValues)
        throw Error("input '" + n->name + "' " + shapeStr(n->shape) +
                    " has no values yet; give it some with set_data");
      plan.args.push_back(*ptr);
      stack.pop_back();
      continue;
    }
    key.put<uint32_t>(n->inputs.size());
    for (const NodePtr &in : n->inputs)
      key.put(index.at(in.get()));
    switch (n->kind) {
    case Kind::Map:
      key.put(static_cast<uint8_t>(n->mapKind));
      key.put(static_cast<uint8_t>(
          n->mapKind == MapKind::Binary ? int(n->binaryOp) : int(n->unaryOp)));
      break;
    case Kind::Reduce:
      key.put(static_cast<uint8_t>(n->reduceKind));
      key.put(n->dims);
      key.put(n->keepdim);
      break;
    case Kind::View:
      // Attributes are uniqued for the process: the pointer is the layout.
      key.put(n->layout.getAsOpaquePointer());
      break;
    case Kind::Full:
      key.put(n->value);
      key.put(n->imag);
      break;
    case Kind::Arange:
      key.put(n->value);
      key.put(n->step);
      break;
    case Kind::Rand:
      // A run-time seed is an input (an edge above), not part of the key.
      if (n->inputs.empty())
        key.put(n->seed);
      break;
    case Kind::Concat:
    case Kind::Gather:
    case Kind::ScatterAdd:
      key.put(n->dim);
      break;
    case Kind::Call:
      key.append(n->call->callee);
      key.put<uint8_t>(0);
      key.put(n->dim);
      break;
    case Kind::Grad:
      key.put<uint64_t>(n->grad->key.size());
      key.append(n->grad->key);
      key.put(n->grad->wrt);
      key.put(n->dim);
      break;
    case Kind::Leaf:
    case Kind::Contiguous:
      break;
    }
    stack.pop_back();
  }
  // Which nodes the function returns (a single root is the last node).
  if (roots.size() > 1)
    for (const NodePtr &root : roots)
      key.put(index.at(root.get()));
  return plan;
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

mlir::Type harp::detail::elementType(mlir::MLIRContext *ctx, DType d) {
  if (d == DType::F32)
    return mlir::Float32Type::get(ctx);
  if (d == DType::F64)
    return mlir::Float64Type::get(ctx);
  if (isComplex(d))
    return mlir::ComplexType::get(elementType(ctx, realOf(d)));
  return mlir::IntegerType::get(ctx, widthOf(d));
}

static mlir::RankedTensorType tensorType(mlir::MLIRContext *ctx,
                                         const Node &n) {
  return mlir::RankedTensorType::get(n.shape, elementType(ctx, n.dtype));
}

/// `v` as a scalar attribute of `d` (integers truncate toward zero).
static mlir::TypedAttr scalarAttr(mlir::MLIRContext *ctx, DType d, double v) {
  mlir::Type type = elementType(ctx, d);
  if (isFloat(d))
    return mlir::FloatAttr::get(type, v);
  if (d == DType::Bool)
    return mlir::IntegerAttr::get(type, v != 0 ? 1 : 0);
  if (isUnsigned(d) && v >= 9223372036854775808.0)
    return mlir::IntegerAttr::get(
        type, llvm::APInt(64, static_cast<uint64_t>(v), /*isSigned=*/false));
  return mlir::IntegerAttr::get(type, static_cast<int64_t>(v));
}

static mlir::Location locationOf(mlir::MLIRContext *ctx, const Node &n) {
  if (!n.file)
    return mlir::UnknownLoc::get(ctx);
  return mlir::FileLineColLoc::get(ctx, *n.file, n.line, n.column);
}

/// `leaf`'s values as a dense constant.
static mlir::Value buildLeafConstant(mlir::OpBuilder &b, mlir::Location loc,
                                     const Node &leaf) {
  mlir::RankedTensorType type = tensorType(b.getContext(), leaf);
  const Array &data = *leaf.data;
  mlir::DenseElementsAttr attr;
  if (leaf.dtype == DType::Bool) {
    const uint8_t *bytes = static_cast<const uint8_t *>(data.data());
    llvm::SmallVector<bool> values(bytes, bytes + data.numElements());
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  } else {
    size_t bytes = data.numElements() * (widthOf(leaf.dtype) / 8);
    attr = mlir::DenseElementsAttr::getFromRawBuffer(
        type,
        llvm::ArrayRef<char>(static_cast<const char *>(data.data()), bytes));
  }
  return mlir::arith::ConstantOp::create(b, loc, attr);
}

namespace {
/// The loss functions of the Grad nodes built into one module, by the
/// structural key of their graphs: gradients of graphs of one structure
/// (a Jacobian's rows, each with its own cotangent argument) call one
/// function, which harp-autodiff differentiates once.
struct ModuleGradients {
  mlir::Operation *module = nullptr;
  std::unordered_map<std::string, mlir::func::FuncOp> functions;
};
thread_local ModuleGradients *currentGradients = nullptr;

/// Makes a ModuleGradients current while a function of `module` is built
/// (the outermost build of a module; functions built inside it share it).
class GradientScope {
public:
  explicit GradientScope(mlir::Operation *module) : saved(currentGradients) {
    if (!currentGradients || currentGradients->module != module) {
      own.module = module;
      currentGradients = &own;
    }
  }
  ~GradientScope() { currentGradients = saved; }

private:
  ModuleGradients own;
  ModuleGradients *saved;
};
} // namespace

/// The harp.autodiff op of Grad node `n`'s site, called with `ins` (the
/// node's inputs' values): the loss's graph becomes a private function of
/// the module (its own Grad nodes, if any, nest further).
static mlir::Operation *buildGradients(mlir::OpBuilder &b, mlir::Location loc,
                                       const Node &n,
                                       llvm::ArrayRef<mlir::Value> ins) {
  const GradSite &site = *n.grad;
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<mlir::ModuleOp>();
  GradientScope scope(module);
  mlir::func::FuncOp &loss = currentGradients->functions[site.key];
  if (!loss) {
    GraphPlan plan = planGraph(site.loss, /*cutAtValues=*/false, &site.cuts);
    if (plan.args.size() != n.inputs.size() ||
        !std::equal(plan.args.begin(), plan.args.end(), n.inputs.begin()))
      throw Error("grad: the graph of a gradient built with create_graph "
                  "has changed since (an internal error)");
    std::string name = "grad_loss";
    for (unsigned i = 1; module.lookupSymbol(name); ++i)
      name = "grad_loss_" + std::to_string(i);
    mlir::OpBuilder moduleBuilder(b.getContext());
    moduleBuilder.setInsertionPointToStart(module.getBody());
    loss = buildFunction(moduleBuilder, plan, site.loss, name,
                         /*isPrivate=*/true);
  }
  llvm::SmallVector<mlir::Type> types = {loss.getFunctionType().getResult(0)};
  for (int64_t w : site.wrt)
    types.push_back(loss.getFunctionType().getInput(w));
  return mh::AutodiffOp::create(
      b, loc, types, mlir::FlatSymbolRefAttr::get(loss.getSymNameAttr()), ins,
      mlir::ValueRange(), b.getDenseI64ArrayAttr(site.wrt));
}

/// Builds the ops of `nodes` (operands first) at `b`'s insertion point;
/// `values` holds the arguments and receives every node's value.
static void buildNodes(mlir::OpBuilder &b, llvm::ArrayRef<const Node *> nodes,
                       std::unordered_map<const Node *, mlir::Value> &values) {
  mlir::MLIRContext *ctx = b.getContext();
  std::map<const CallSite *, mlir::Operation *> calls;
  std::map<const GradSite *, mlir::Operation *> grads;
  for (const Node *n : nodes) {
    if (values.count(n))
      continue;
    mlir::Location loc = locationOf(ctx, *n);
    mlir::RankedTensorType type = tensorType(ctx, *n);
    llvm::SmallVector<mlir::Value> ins;
    for (const NodePtr &in : n->inputs)
      ins.push_back(values.at(in.get()));
    mlir::Value value;
    switch (n->kind) {
    case Kind::Call: {
      mlir::Operation *&call = calls[n->call.get()];
      if (!call) {
        llvm::SmallVector<mlir::Type> types;
        for (const auto &[dtype, shape] : n->call->results)
          types.push_back(
              mlir::RankedTensorType::get(shape, elementType(ctx, dtype)));
        call = mlir::func::CallOp::create(b, loc, n->call->callee, types, ins);
      }
      value = call->getResult(n->dim);
      break;
    }
    case Kind::Grad: {
      mlir::Operation *&autodiff = grads[n->grad.get()];
      if (!autodiff)
        autodiff = buildGradients(b, loc, *n, ins);
      // The loss comes first.
      value = autodiff->getResult(1 + n->dim);
      break;
    }
    case Kind::Full: {
      mlir::DenseElementsAttr splat;
      if (n->dtype == DType::C64)
        splat = mlir::DenseElementsAttr::get(
            type, llvm::ArrayRef<std::complex<float>>(
                      std::complex<float>(n->value, n->imag)));
      else if (n->dtype == DType::C128)
        splat = mlir::DenseElementsAttr::get(
            type, llvm::ArrayRef<std::complex<double>>(
                      std::complex<double>(n->value, n->imag)));
      else
        splat = mlir::DenseElementsAttr::get(
            type, llvm::ArrayRef<mlir::Attribute>(
                      scalarAttr(ctx, n->dtype, n->value)));
      value = mlir::arith::ConstantOp::create(b, loc, splat);
      break;
    }
    case Kind::Arange:
      value = mh::ArangeOp::create(b, loc, type,
                                   scalarAttr(ctx, n->dtype, n->value),
                                   scalarAttr(ctx, n->dtype, n->step));
      break;
    case Kind::Rand:
      value = ins.empty() ? mh::RandOp::create(b, loc, type, int64_t(n->seed))
                          : mh::RandOp::create(b, loc, type, ins[0]);
      break;
    case Kind::View:
      value = mh::ViewOp::create(b, loc, type, ins[0], n->layout);
      break;
    case Kind::Contiguous:
      value = mh::ContiguousOp::create(b, loc, type, ins[0]);
      break;
    case Kind::Gather:
      value = mh::GatherOp::create(b, loc, type, ins[0], ins[1],
                                   b.getI64IntegerAttr(n->dim));
      break;
    case Kind::ScatterAdd:
      value = mh::ScatterAddOp::create(b, loc, type, ins[2], ins[0], ins[1],
                                       b.getI64IntegerAttr(n->dim));
      break;
    case Kind::Concat:
      value =
          mh::ConcatOp::create(b, loc, type, ins, b.getI64IntegerAttr(n->dim));
      break;
    case Kind::Map:
      value = mh::MapReduceOp::create(
          b, loc, type, ins,
          [&](mlir::OpBuilder &nb, mlir::Location nloc, mlir::ValueRange args) {
            return buildMapBody(nb, nloc, *n, args);
          });
      break;
    case Kind::Reduce:
      value = mh::MapReduceOp::create(
          b, loc, type, ins,
          [](mlir::OpBuilder &, mlir::Location, mlir::ValueRange args) {
            return args[0];
          },
          n->reduceKind, n->dims, n->keepdim);
      break;
    case Kind::Leaf:
      // A leaf that is not an argument (a scalar a composite made) is a
      // constant of the function.
      value = buildLeafConstant(b, loc, *n);
      break;
    }
    values[n] = value;
  }
}

/// Creates `func.func @name(args...) -> (results' types...)` at `b`'s
/// insertion point and moves `b` into its entry block, whose arguments go
/// into `values`. The caller guards `b`'s insertion point.
static mlir::func::FuncOp
startFunction(mlir::OpBuilder &b, const std::string &name, mlir::Location loc,
              llvm::ArrayRef<NodePtr> args,
              llvm::ArrayRef<const Node *> results, bool isPrivate,
              std::unordered_map<const Node *, mlir::Value> &values) {
  mlir::MLIRContext *ctx = b.getContext();
  llvm::SmallVector<mlir::Type> argTypes, resultTypes;
  llvm::SmallVector<mlir::Location> argLocs;
  for (const NodePtr &arg : args) {
    argTypes.push_back(tensorType(ctx, *arg));
    argLocs.push_back(locationOf(ctx, *arg));
  }
  for (const Node *result : results)
    resultTypes.push_back(tensorType(ctx, *result));
  auto func = mlir::func::FuncOp::create(
      b, loc, name, b.getFunctionType(argTypes, resultTypes));
  if (isPrivate)
    func.setPrivate();
  mlir::Block *entry = b.createBlock(&func.getBody(), {}, argTypes, argLocs);
  for (auto [i, arg] : llvm::enumerate(args))
    values[arg.get()] = entry->getArgument(i);
  return func;
}

mlir::func::FuncOp harp::detail::buildFunction(mlir::OpBuilder &b,
                                               const GraphPlan &plan,
                                               const NodePtr &root,
                                               const std::string &name,
                                               bool isPrivate) {
  return buildFunction(b, plan, llvm::ArrayRef<NodePtr>(root), name, isPrivate);
}

mlir::func::FuncOp harp::detail::buildFunction(mlir::OpBuilder &b,
                                               const GraphPlan &plan,
                                               llvm::ArrayRef<NodePtr> roots,
                                               const std::string &name,
                                               bool isPrivate) {
  mlir::Location funcLoc = locationOf(b.getContext(), *roots.front());
  mlir::OpBuilder::InsertionGuard guard(b);
  GradientScope scope(b.getInsertionBlock()->getParentOp());
  std::unordered_map<const Node *, mlir::Value> values;
  llvm::SmallVector<const Node *> results;
  for (const NodePtr &root : roots)
    results.push_back(root.get());
  mlir::func::FuncOp func =
      startFunction(b, name, funcLoc, plan.args, results, isPrivate, values);
  buildNodes(b, plan.nodes, values);
  llvm::SmallVector<mlir::Value> returned;
  for (const Node *result : results)
    returned.push_back(values.at(result));
  mlir::func::ReturnOp::create(b, funcLoc, returned);
  return func;
}

mlir::func::FuncOp harp::detail::buildGraphFunction(
    mlir::OpBuilder &b, const std::string &name, mlir::Location loc,
    const std::vector<NodePtr> &args, const std::vector<NodePtr> &results,
    bool isPrivate) {
  llvm::SmallVector<const Node *> resultNodes;
  for (const NodePtr &result : results)
    resultNodes.push_back(result.get());
  mlir::OpBuilder::InsertionGuard guard(b);
  GradientScope scope(b.getInsertionBlock()->getParentOp());
  std::unordered_map<const Node *, mlir::Value> values;
  mlir::func::FuncOp func =
      startFunction(b, name, loc, args, resultNodes, isPrivate, values);
  // Every node the results need, operands first (iteratively: deep graphs
  // stay off the C stack); the arguments end the walk.
  std::vector<const Node *> order;
  std::unordered_map<const Node *, bool> seen;
  for (const NodePtr &result : results) {
    std::vector<std::pair<const Node *, size_t>> stack = {{result.get(), 0}};
    while (!stack.empty()) {
      auto &[n, next] = stack.back();
      if (next == 0 && (seen.count(n) || values.count(n))) {
        stack.pop_back();
        continue;
      }
      if (n->kind != Kind::Leaf && next < n->inputs.size()) {
        const Node *input = n->inputs[next++].get();
        if (!seen.count(input) && !values.count(input))
          stack.push_back({input, 0});
        continue;
      }
      if (n->kind == Kind::Leaf && !n->hasValues)
        throw Error("input '" + n->name + "' " + shapeStr(n->shape) +
                    " is read by @" + name +
                    " but is not one of its arguments");
      seen[n] = true;
      order.push_back(n);
      stack.pop_back();
    }
  }
  buildNodes(b, order, values);
  llvm::SmallVector<mlir::Value> returned;
  for (const NodePtr &result : results)
    returned.push_back(values.at(result.get()));
  mlir::func::ReturnOp::create(b, loc, returned);
  return func;
}
