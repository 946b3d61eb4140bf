//===- Realize.cpp - compiling and running graphs, autograd ---------------===//
//
// realize() and backward() look the graph's structural key up in the API's
// cache of executables; only on a miss is IR built (Emit.cpp) and handed,
// as a module, to the process-wide JIT of the selected options. Scalars are
// leaves, hence arguments, so a changed number reuses the code.
//
//===----------------------------------------------------------------------===//

#include "Node.h"

#include "harp/Dialect/Harp/IR/HarpBuilders.h"
#include "harp/Runtime/Export.h"
#include "harp/Runtime/Jit.h"
#include "harp/Target/CPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

using namespace harp;
using namespace harp::detail;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

static std::mutex optionsMutex;
static CompileOptions processOptions;

void harp::set_options(const CompileOptions &options) {
  if (options.cpu && !options.cpu->empty())
    if (llvm::Expected<CpuTarget> target = resolveCpuTarget(*options.cpu);
        !target)
      throw Error("set_options: cpu: " + llvm::toString(target.takeError()));
  std::lock_guard<std::mutex> lock(optionsMutex);
  if (options.threads)
    processOptions.threads = options.threads;
  if (options.vectorize)
    processOptions.vectorize = options.vectorize;
  if (options.profile)
    processOptions.profile = options.profile;
  if (options.cpu)
    processOptions.cpu = options.cpu->empty()
                             ? std::optional<std::string>()
                             : std::optional<std::string>(*options.cpu);
}

/// `override` over the process-wide options over the defaults.
static CompileOptions effectiveOptions(const CompileOptions &override = {}) {
  CompileOptions result;
  {
    std::lock_guard<std::mutex> lock(optionsMutex);
    result = processOptions;
  }
  if (override.threads)
    result.threads = override.threads;
  if (override.vectorize)
    result.vectorize = override.vectorize;
  if (override.cpu && !override.cpu->empty())
    result.cpu = override.cpu;
  if (!result.threads)
    result.threads = threadCount() > 1;
  if (!result.vectorize)
    result.vectorize = true;
  if (!result.cpu)
    result.cpu = defaultCpuName();
  if (!result.profile)
    result.profile = profilingRequested();
  return result;
}

CompileOptions harp::get_options() { return effectiveOptions(); }

void harp::set_num_threads(int count) {
  if (count < 1)
    throw Error("set_num_threads: the count must be a positive integer, got " +
                std::to_string(count));
  setThreadCount(static_cast<unsigned>(count));
}

int harp::get_num_threads() { return static_cast<int>(threadCount()); }

void harp::set_cpu(const std::string &name) {
  CompileOptions options;
  options.cpu = name;
  set_options(options);
}

std::string harp::get_cpu() { return *effectiveOptions().cpu; }

static Jit &jitFor(const BackendPtr &backend, const CompileOptions &override) {
  CompileOptions options = effectiveOptions(override);
  if (override.cpu && !override.cpu->empty())
    if (llvm::Expected<CpuTarget> target = resolveCpuTarget(*override.cpu);
        !target)
      throw Error("cpu: " + llvm::toString(target.takeError()));
  JitOptions jit;
  jit.device =
      backend && backend->name() == "cuda" ? Device::CUDA : Device::CPU;
  jit.cpu = *options.cpu;
  jit.threads = *options.threads;
  jit.vectorize = *options.vectorize;
  jit.profile = *options.profile;
  return Jit::shared(jit);
}

//===----------------------------------------------------------------------===//
// The cache of executables by structure
//===----------------------------------------------------------------------===//

static std::atomic<unsigned> compilations{0}, memoryHits{0}, diskHits{0};

CompileCounts harp::detail::compileCounts() {
  return {compilations.load(), memoryHits.load(), diskHits.load()};
}

unsigned harp::detail::irParseCount() { return Jit::parseCount(); }

/// "f32 [2, 3], i64 [4]" or "none".
static std::string describe(const std::vector<NodePtr> &args) {
  std::string inputs;
  for (const NodePtr &a : args)
    inputs += (inputs.empty() ? "" : ", ") + dtypeName(a->dtype) + " " +
              shapeStr(a->shape);
  return inputs.empty() ? "none" : inputs;
}

/// The executable for `key` on `jit`: from the cache, or built by `build`
/// (called with ContextLock held) and compiled. `what` names the request in
/// errors.
template <typename BuildFn>
static std::shared_ptr<Executable>
executableFor(Jit &jit, const std::string &key, BuildFn build,
              const std::string &what, const std::vector<NodePtr> &args) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<Executable>> cache;
  std::string fullKey(reinterpret_cast<const char *>(&jit), sizeof(&jit));
  fullKey += key;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(fullKey); it != cache.end()) {
      ++memoryHits;
      return it->second;
    }
  }
  llvm::Expected<std::shared_ptr<Executable>> exe = [&] {
    ContextLock lock;
    mlir::OwningOpRef<mlir::ModuleOp> module = build();
    JitStats before = jit.stats();
    llvm::Expected<std::shared_ptr<Executable>> compiled = jit.compile(*module);
    const JitStats &after = jit.stats();
    if (after.compilations > before.compilations)
      ++compilations;
    else if (after.diskHits > before.diskHits)
      ++diskHits;
    else if (after.memoryHits > before.memoryHits)
      ++memoryHits;
    return compiled;
  }();
  if (!exe)
    throw Error("harp could not compile the graph " + what + " (inputs: " +
                describe(args) + "): " + llvm::toString(exe.takeError()));
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(std::move(fullKey), *exe);
  return *exe;
}

static std::vector<Array> run(const Executable &exe,
                              const std::vector<NodePtr> &args) {
  std::vector<Array> inputs;
  inputs.reserve(args.size());
  for (const NodePtr &a : args)
    inputs.push_back(*a->data);
  llvm::Expected<std::vector<Array>> out = exe.call("main", inputs);
  if (!out)
    throw Error("harp could not run the graph: " +
                llvm::toString(out.takeError()));
  return std::move(*out);
}

static mlir::OwningOpRef<mlir::ModuleOp> newModule() {
  return mlir::ModuleOp::create(mlir::UnknownLoc::get(context()));
}

/// executableFor of a module whose public @main computes `roots` from
/// `plan`'s arguments.
static std::shared_ptr<Executable> mainExecutable(Jit &jit,
                                                  const GraphPlan &plan,
                                                  llvm::ArrayRef<NodePtr> roots,
                                                  const std::string &what) {
  return executableFor(
      jit, plan.key,
      [&] {
        mlir::OwningOpRef<mlir::ModuleOp> module = newModule();
        mlir::OpBuilder b(module->getBodyRegion());
        buildFunction(b, plan, roots, "main", /*isPrivate=*/false);
        return module;
      },
      what, plan.args);
}

//===----------------------------------------------------------------------===//
// Realization
//===----------------------------------------------------------------------===//

std::string harp::detail::moduleText(const NodePtr &node, bool debugInfo) {
  GraphPlan plan = planGraph(node, /*cutAtValues=*/true);
  ContextLock lock;
  mlir::OwningOpRef<mlir::ModuleOp> module = newModule();
  mlir::OpBuilder b(module->getBodyRegion());
  buildFunction(b, plan, node, "main", /*isPrivate=*/false);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo(debugInfo));
  return text;
}

void harp::detail::exportGraphLibrary(const std::vector<NodePtr> &outputs,
                                      const std::vector<NodePtr> &inputs,
                                      const std::string &path,
                                      const std::string &name,
                                      const ExportOptions &export_,
                                      const CompileOptions &options,
                                      const std::vector<int64_t> &gradients) {
  if (outputs.empty())
    throw Error("export: the function returns no tensor");
  if (!gradients.empty() &&
      (!outputs.front()->shape.empty() || !isFloat(outputs.front()->dtype)))
    throw Error("export: gradients are of the first result, which must be a "
                "0-d float loss, but it is " +
                dtypeName(outputs.front()->dtype) + " " +
                shapeStr(outputs.front()->shape));
  std::unordered_set<int64_t> differentiated;
  for (int64_t i : gradients) {
    if (i < 0 || i >= static_cast<int64_t>(inputs.size()))
      throw Error("export: gradients names input #" + std::to_string(i) +
                  ", but the function has " + std::to_string(inputs.size()) +
                  " inputs");
    if (!isFloat(inputs[i]->dtype))
      throw Error("export: input #" + std::to_string(i) + " is " +
                  dtypeName(inputs[i]->dtype) +
                  ", which has no gradient (it needs a float tensor)");
    if (!differentiated.insert(i).second)
      throw Error("export: gradients names input #" + std::to_string(i) +
                  " twice");
  }
  std::unordered_set<const Node *> seen;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (input->kind != Kind::Leaf)
      throw Error("export: input #" + std::to_string(i) + " (" +
                  dtypeName(input->dtype) + " " + shapeStr(input->shape) +
                  ") is computed, not a leaf tensor");
    if (!seen.insert(input.get()).second)
      throw Error("export: input #" + std::to_string(i) +
                  " is the same tensor as an earlier input");
  }
  for (const NodePtr &output : outputs)
    if (output->backend && output->backend->name() != "cpu")
      throw Error("export: libraries run on the cpu, but an output is on " +
                  output->backend->name());
  for (const NodePtr &output : outputs)
    if (readsDeferredWrite(*output)) {
      flushDeferredWrites();
      break;
    }
  // Every leaf is planned as an argument; the inputs are the function's,
  // the others constants of it (buildNodes builds a leaf that is not an
  // argument from its values).
  GraphPlan plan = planGraph(outputs, /*cutAtValues=*/false);
  plan.args = inputs;
  Jit &jit = jitFor(outputs.front()->backend, options);
  ContextLock lock;
  mlir::OwningOpRef<mlir::ModuleOp> module = newModule();
  mlir::OpBuilder b(module->getBodyRegion());
  if (gradients.empty()) {
    buildFunction(b, plan, outputs, name, /*isPrivate=*/false);
  } else {
    // The outputs' function, private, and the step returning them and the
    // loss's gradients (as backward() builds its module).
    mlir::func::FuncOp forward = buildFunction(b, plan, outputs, name + "_loss",
                                               /*isPrivate=*/true);
    mlir::harp::buildGradientFunction(b, forward.getLoc(), name, forward,
                                      gradients, /*seeded=*/false);
  }
  if (llvm::Error err = harp::exportLibrary(jit, *module, path, export_))
    throw Error("export: " + llvm::toString(std::move(err)));
}

bool harp::detail::hasValue(const NodePtr &node) {
  std::map<const Node *, uint64_t> memo;
  return node->hasValues &&
         !(node->kind == Kind::Leaf && hasDeferredWrite(*node)) &&
         isFresh(node.get(), memo);
}

/// The range checks of the computed indices (Node::checks) that a function
/// of `plan` computes.
static std::vector<IndexCheckPtr> checksOf(const GraphPlan &plan) {
  std::vector<IndexCheckPtr> checks;
  std::unordered_set<const IndexCheck *> seen;
  // A gradient's function (a Grad node's loss graph) computes indices too.
  std::unordered_set<const GradSite *> sites;
  std::vector<GraphPlan> gradientPlans;
  auto visit = [&](const GraphPlan &p) {
    std::unordered_set<const Node *> args;
    for (const NodePtr &arg : p.args)
      args.insert(arg.get());
    for (const Node *n : p.nodes) {
      if (args.count(n))
        continue;
      for (const IndexCheckPtr &check : n->checks)
        if (seen.insert(check.get()).second)
          checks.push_back(check);
      if (n->kind == Kind::Grad && sites.insert(n->grad.get()).second)
        gradientPlans.push_back(
            planGraph(n->grad->loss, /*cutAtValues=*/false, &n->grad->cuts));
    }
  };
  visit(plan);
  while (!gradientPlans.empty()) {
    GraphPlan next = std::move(gradientPlans.back());
    gradientPlans.pop_back();
    visit(next);
  }
  return checks;
}

/// `roots` and the bounds of `checks`, in order.
static std::vector<NodePtr>
withBounds(std::vector<NodePtr> roots,
           const std::vector<IndexCheckPtr> &checks) {
  for (const IndexCheckPtr &check : checks)
    roots.push_back(check->bounds);
  return roots;
}

/// Throws for the first of `checks` its bounds (the last results) fail.
static void verifyChecks(const std::vector<IndexCheckPtr> &checks,
                         const std::vector<Array> &results) {
  size_t first = results.size() - checks.size();
  for (size_t i = 0; i < checks.size(); ++i)
    verifyIndexCheck(*checks[i], results[first + i]);
}

/// Computes `values` (of one backend) in one compiled call, cutting at the
/// values their graphs already hold. The range checks of the indices
/// computed on the way are verified (their bounds are extra results).
static std::vector<Array> realizeAll(std::vector<NodePtr> values,
                                     const CompileOptions &options,
                                     const std::string &what) {
  size_t count = values.size();
  std::vector<IndexCheckPtr> checks =
      checksOf(planGraph(values, /*cutAtValues=*/true));
  values = withBounds(std::move(values), checks);
  GraphPlan plan = planGraph(values, /*cutAtValues=*/true);
  Jit &jit = jitFor(values.front()->backend, options);
  std::shared_ptr<Executable> exe = mainExecutable(jit, plan, values, what);
  std::vector<Array> results = run(*exe, plan.args);
  verifyChecks(checks, results);
  results.resize(count);
  return results;
}

void harp::detail::flushDeferredWrites() {
  std::vector<std::pair<NodePtr, NodePtr>> writes = takeDeferredWrites();
  if (writes.empty())
    return;
  try {
    // One call per backend: a GPU tensor's writes run on its GPU.
    std::vector<bool> done(writes.size(), false);
    for (size_t first = 0; first < writes.size(); ++first) {
      if (done[first])
        continue;
      std::vector<size_t> group;
      std::vector<NodePtr> values;
      for (size_t i = first; i < writes.size(); ++i)
        if (!done[i] &&
            writes[i].second->backend == writes[first].second->backend) {
          group.push_back(i);
          values.push_back(writes[i].second);
        }
      std::vector<Array> results = realizeAll(
          values, {},
          "of " + std::to_string(values.size()) + " deferred in-place writes");
      // The values are computed: dropped before the writes, their graphs
      // need no snapshot of the leaves they read (writeDeferred).
      values.clear();
      for (size_t i : group) {
        writes[i].second = nullptr;
        done[i] = true;
      }
      for (auto [i, result] : llvm::zip(group, results))
        writeDeferred(writes[i].first, std::move(result));
    }
  } catch (...) {
    llvm::erase_if(writes, [](const auto &write) { return !write.second; });
    restoreDeferredWrites(std::move(writes));
    throw;
  }
}

const Array &harp::detail::realize(const NodePtr &node,
                                   const CompileOptions &options) {
  // Deferred writes first where the node may read a leaf they write (or
  // share its storage). Reading another leaf (a batch norm's count of
  // batches, in the middle of a forward) leaves them deferred.
  if (readsDeferredWrite(*node))
    flushDeferredWrites();
  std::map<const Node *, uint64_t> memo;
  if (isFresh(node.get(), memo)) {
    if (!node->hasValues)
      throw Error("input '" + node->name + "' " + shapeStr(node->shape) +
                  " has no values yet; give it some with set_data");
    return *node->data;
  }
  GraphPlan plan = planGraph(node, /*cutAtValues=*/true);
  // The bounds of the computed indices to check come back as extra results.
  std::vector<IndexCheckPtr> checks = checksOf(plan);
  std::vector<NodePtr> roots = withBounds({node}, checks);
  if (!checks.empty())
    plan = planGraph(roots, /*cutAtValues=*/true);
  Jit &jit = jitFor(node->backend, options);
  std::shared_ptr<Executable> exe =
      mainExecutable(jit, plan, roots,
                     "for realizing a " + dtypeName(node->dtype) + " " +
                         shapeStr(node->shape) + " tensor");
  std::vector<Array> results = run(*exe, plan.args);
  verifyChecks(checks, results);
  node->data = results.front();
  node->epoch = nextEpoch();
  return *node->data;
}

void harp::detail::realizeMany(const std::vector<NodePtr> &nodes,
                               const CompileOptions &options) {
  for (const NodePtr &node : nodes)
    if (readsDeferredWrite(*node)) {
      flushDeferredWrites();
      break;
    }
  // The nodes to compute, each once, grouped by backend in first-seen order.
  std::map<const Node *, uint64_t> memo;
  std::unordered_set<const Node *> seen;
  std::vector<std::vector<NodePtr>> groups;
  for (const NodePtr &node : nodes) {
    if (!seen.insert(node.get()).second)
      continue;
    if (isFresh(node.get(), memo)) {
      if (!node->hasValues)
        throw Error("input '" + node->name + "' " + shapeStr(node->shape) +
                    " has no values yet; give it some with set_data");
      continue;
    }
    auto group = llvm::find_if(groups, [&](const std::vector<NodePtr> &g) {
      return g.front()->backend == node->backend;
    });
    if (group == groups.end())
      groups.push_back({node});
    else
      group->push_back(node);
  }
  for (const std::vector<NodePtr> &group : groups) {
    std::vector<Array> results = realizeAll(
        group, options,
        "for realizing " + std::to_string(group.size()) + " tensors together");
    uint64_t epoch = nextEpoch();
    for (auto [node, result] : llvm::zip(group, results)) {
      node->data = std::move(result);
      node->epoch = epoch;
    }
  }
}

//===----------------------------------------------------------------------===//
// Autograd through harp-autodiff
//===----------------------------------------------------------------------===//

void harp::detail::setRequiresGrad(const NodePtr &node, bool value) {
  if (node->kind != Kind::Leaf)
    throw Error("set_requires_grad: only leaf tensors (from_data, input, "
                "detach) hold gradients");
  if (value && !isFloat(node->dtype) && !isComplex(node->dtype))
    throw Error("set_requires_grad: needs a float or complex tensor, got " +
                dtypeName(node->dtype));
  node->requiresGrad = value;
}

bool harp::detail::requiresGrad(const NodePtr &node) {
  return node->requiresGrad;
}

/// into += add, part by part for complex numbers.
static void accumulate(Array &into, const Array &add) {
  ElementKind kind = into.kind();
  int64_t n = into.numElements() *
              (kind == ElementKind::C64 || kind == ElementKind::C128 ? 2 : 1);
  if (kind == ElementKind::F32 || kind == ElementKind::C64) {
    for (int64_t i = 0; i < n; ++i)
      static_cast<float *>(into.data())[i] +=
          static_cast<const float *>(add.data())[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      static_cast<double *>(into.data())[i] +=
          static_cast<const double *>(add.data())[i];
  }
}

static void runBackwardHooks(const std::vector<NodePtr> &reached);

/// The nodes built under no_grad that backward() from `roots` must treat as
/// constants: the outermost ones with a leaf that requires a gradient under
/// them (the others differentiate to nothing anyway). Each is given its
/// values here.
static std::unordered_set<const Node *>
gradientCuts(const std::vector<NodePtr> &roots) {
  if (!anyNoGradNodes())
    return {};
  // Whether a leaf that requires a gradient is under each node, post-order
  // and iterative (graphs of thousands of ops stay off the C stack).
  std::unordered_map<const Node *, bool> reaches;
  bool anyNoGrad = false;
  std::vector<std::pair<const Node *, size_t>> stack;
  for (const NodePtr &root : roots)
    stack.push_back({root.get(), 0});
  while (!stack.empty()) {
    auto &[n, next] = stack.back();
    if (reaches.count(n)) {
      stack.pop_back();
      continue;
    }
    if (n->kind == Kind::Leaf) {
      reaches[n] = n->requiresGrad;
      stack.pop_back();
      continue;
    }
    if (next < n->inputs.size()) {
      const Node *input = n->inputs[next++].get();
      if (!reaches.count(input))
        stack.push_back({input, 0});
      continue;
    }
    bool any = false;
    for (const NodePtr &in : n->inputs)
      any = any || reaches.at(in.get());
    reaches[n] = any;
    anyNoGrad = anyNoGrad || n->noGrad;
    stack.pop_back();
  }
  std::unordered_set<const Node *> cuts;
  if (!anyNoGrad)
    return cuts;
  // The outermost such nodes, from the roots down.
  std::unordered_set<const Node *> seen;
  std::vector<NodePtr> pending(roots.begin(), roots.end()), found;
  while (!pending.empty()) {
    NodePtr n = std::move(pending.back());
    pending.pop_back();
    if (n->kind == Kind::Leaf || !reaches.at(n.get()) ||
        !seen.insert(n.get()).second)
      continue;
    if (n->noGrad) {
      found.push_back(n);
      continue;
    }
    for (const NodePtr &in : n->inputs)
      pending.push_back(in);
  }
  for (const NodePtr &n : found) {
    realize(n);
    cuts.insert(n.get());
  }
  return cuts;
}

/// The most intermediates backward() computes beside the loss.
static constexpr size_t maxHeldIntermediates = 128;

/// The computed float tensors of `loss`'s graph (below it, above `cuts`,
/// without a fresh value) that something besides the graph of `roots` (the
/// loss and the deferred writes' values) holds: a user's tensor (a model's
/// output, an OpInfo sample's result). backward()
/// computes them with the loss, as auxiliary results of its forward, so
/// that reading them afterwards runs nothing; PyTorch's eager forward had
/// computed them already, and realizing one after backward() would compute
/// its whole forward again. A node's holders are counted from its
/// reference count: what the graph's own nodes hold of it is subtracted.
/// Views and constants (`full`, `arange`, `rand`) are left alone: computing
/// them again is a copy or cheaper, and a view of a weight kept by a module
/// would otherwise be copied at every step.
static std::vector<NodePtr>
heldIntermediates(const std::vector<NodePtr> &roots,
                  const std::unordered_set<const Node *> &cuts) {
  const NodePtr &loss = roots.front();
  std::unordered_map<const Node *, long> internal;
  std::vector<NodePtr> nodes(roots.begin(), roots.end());
  std::unordered_set<const Node *> seen;
  for (const NodePtr &root : roots)
    seen.insert(root.get());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node *n = nodes[i].get();
    if (n->kind == Kind::Leaf || (i >= roots.size() && cuts.count(n)))
      continue;
    for (const NodePtr &in : n->inputs) {
      ++internal[in.get()];
      if (seen.insert(in.get()).second)
        nodes.push_back(in);
    }
  }
  // Only what the loss reads: the writes' own nodes are the writes'.
  std::unordered_set<const Node *> underLoss = {loss.get()};
  std::vector<const Node *> stack = {loss.get()};
  while (!stack.empty()) {
    const Node *n = stack.back();
    stack.pop_back();
    if (n->kind == Kind::Leaf || (n != loss.get() && cuts.count(n)))
      continue;
    for (const NodePtr &in : n->inputs)
      if (underLoss.insert(in.get()).second)
        stack.push_back(in.get());
  }
  std::vector<NodePtr> held;
  std::map<const Node *, uint64_t> memo;
  for (size_t i = roots.size();
       i < nodes.size() && held.size() < maxHeldIntermediates; ++i) {
    const NodePtr &n = nodes[i];
    switch (n->kind) {
    case Kind::Leaf:
    case Kind::View:
    case Kind::Full:
    case Kind::Arange:
    case Kind::Rand:
      continue;
    default:
      break;
    }
    // One reference is `nodes`'s own.
    if (!underLoss.count(n.get()) || !isFloat(n->dtype) ||
        cuts.count(n.get()) || n->backend != loss->backend ||
        n.use_count() - 1 <= internal[n.get()] ||
        (n->data && isFresh(n.get(), memo)))
      continue;
    held.push_back(n);
  }
  return held;
}

/// Checks the tensors gradients are asked for (backward's `inputs`,
/// gradients()'s): each requires a gradient (a leaf) or is computed; none
/// twice. Returns the computed ones, which differentiate() cuts the graph
/// at.
static std::vector<NodePtr> checkGradientInputs(const char *what,
                                                const std::vector<NodePtr> &in,
                                                bool leavesOnly) {
  std::unordered_set<const Node *> seen;
  std::vector<NodePtr> computed;
  for (size_t i = 0; i < in.size(); ++i) {
    const NodePtr &n = in[i];
    std::string name = std::string(what) + ": input " + std::to_string(i) +
                       " (" + dtypeName(n->dtype) + " " + shapeStr(n->shape) +
                       ")";
    if (!seen.insert(n.get()).second)
      throw Error(name + " is given twice");
    if (!isFloat(n->dtype))
      throw Error(name + " is not a float tensor: it has no gradient");
    if (n->kind == Kind::Leaf) {
      if (!n->requiresGrad)
        throw Error(name + " does not require a gradient "
                           "(requires_grad_() it before building the graph)");
      continue;
    }
    if (leavesOnly)
      throw Error(name + " is computed, not a leaf: only leaves accumulate "
                         "a gradient (harp.autograd.grad differentiates "
                         "with respect to computed tensors)");
    computed.push_back(n);
  }
  // A computed input becomes an argument of the differentiated function:
  // an input under it would be reached through it no more.
  for (const NodePtr &top : computed) {
    std::unordered_set<const Node *> visited = {top.get()};
    std::vector<const Node *> stack = {top.get()};
    while (!stack.empty()) {
      const Node *n = stack.back();
      stack.pop_back();
      for (const NodePtr &input : n->inputs) {
        if (seen.count(input.get()))
          throw Error(std::string(what) +
                      ": an input is computed from another input; "
                      "differentiating with respect to both at once is not "
                      "supported (ask for them in two calls)");
        if (visited.insert(input.get()).second)
          stack.push_back(input.get());
      }
    }
  }
  return computed;
}

/// Throws unless `loss` is a 0-d float tensor (what backward() and grad()
/// differentiate).
static void checkLoss(const char *what, const NodePtr &loss) {
  if (!loss->shape.empty() || !isFloat(loss->dtype))
    throw Error(std::string(what) +
                ": the loss must be a 0-d float tensor, got " +
                dtypeName(loss->dtype) + " " + shapeStr(loss->shape));
}

/// The error for a leaf written in place after the graph being
/// differentiated was built on it: its gradient would belong to values it
/// no longer holds.
static Error writtenInPlace(const char *what, const Node &leaf) {
  return Error(std::string(what) + ": a " + dtypeName(leaf.dtype) + " " +
               shapeStr(leaf.shape) +
               " tensor that requires a gradient was written in place "
               "(copy_, an optimizer step) after this graph was built on "
               "it; build the graph again from its new values");
}

/// What differentiate() computed: the gradient of each argument it
/// differentiated with respect to.
using Gradients = std::vector<std::pair<NodePtr, Array>>;

/// The shared work of backward() and gradients(): computes `loss` (a 0-d
/// float tensor), the deferred writes and the intermediates users hold, and
/// the gradients of the loss with respect to `only` (every leaf that
/// requires a gradient where null; computed tensors in it are made
/// arguments: `cutAt`).
static Gradients differentiate(const char *what, const NodePtr &loss,
                               const CompileOptions &options,
                               const std::vector<NodePtr> *only,
                               const std::vector<NodePtr> &cutAt) {
  checkLoss(what, loss);
  // The deferred writes (a batch norm's running statistics) are computed
  // with the loss, as auxiliary results of the same forward. Gradients go
  // to the leaves the loss reads, not to those only the writes read.
  std::vector<std::pair<NodePtr, NodePtr>> writes = takeDeferredWrites();
  // Until they are done, a failure (a graph that cannot be planned or
  // compiled, a run that fails) gives them back.
  struct GiveBack {
    std::vector<std::pair<NodePtr, NodePtr>> *writes;
    ~GiveBack() {
      if (writes)
        restoreDeferredWrites(std::move(*writes));
    }
  } giveBack{&writes};
  std::vector<NodePtr> roots = {loss};
  for (const auto &write : writes)
    if (write.second->backend == loss->backend)
      roots.push_back(write.second);
  std::unordered_set<const Node *> cuts = gradientCuts(roots);
  // The computed tensors asked for hold their values (computed on their
  // own first, where they do not) and are arguments.
  for (const NodePtr &n : cutAt) {
    if (n->backend != loss->backend)
      continue;
    realize(n);
    cuts.insert(n.get());
  }
  std::unordered_set<const Node *> wanted;
  if (only)
    for (const NodePtr &n : *only)
      wanted.insert(n.get());
  std::vector<NodePtr> held = heldIntermediates(roots, cuts);
  roots.insert(roots.end(), held.begin(), held.end());
  std::unordered_set<const Node *> lossArgs;
  if (roots.size() > 1)
    for (const NodePtr &arg :
         planGraph(loss, /*cutAtValues=*/false, &cuts).args)
      lossArgs.insert(arg.get());
  GraphPlan plan = planGraph(roots, /*cutAtValues=*/false, &cuts);
  // The range checks of the indices the forward computes, first, on their
  // own (an integer result beside the loss would be one more result for
  // autodiff to pass through): only graphs with computed indices pay.
  if (std::vector<IndexCheckPtr> checks = checksOf(plan); !checks.empty()) {
    std::vector<NodePtr> bounds = withBounds({}, checks);
    GraphPlan boundsPlan = planGraph(bounds, /*cutAtValues=*/true);
    std::shared_ptr<Executable> exe =
        mainExecutable(jitFor(loss->backend, options), boundsPlan, bounds,
                       std::string("of ") + what + "()'s index checks");
    verifyChecks(checks, run(*exe, boundsPlan.args));
  }
  std::vector<int64_t> wrt;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const NodePtr &arg = plan.args[i];
    if (only ? !wanted.count(arg.get()) : !arg->requiresGrad)
      continue;
    if (roots.size() > 1 && !lossArgs.count(arg.get()))
      continue;
    // Its gradient would belong to values the leaf no longer holds (or
    // will not once its deferred write is done: the graph was built before
    // it, since building on a leaf does its writes first).
    if (arg->snapshot || llvm::any_of(writes, [&](const auto &write) {
          return write.first == arg;
        }))
      throw writtenInPlace(what, *arg);
    wrt.push_back(i);
  }
  if (wrt.empty() && !only)
    throw Error(std::string(what) +
                ": no tensor in the graph requires a gradient" +
                (cuts.empty() ? ""
                              : " (what was built under no_grad is a "
                                "constant to backward)"));
  std::string key = plan.key + "\x01grad";
  key.append(reinterpret_cast<const char *>(wrt.data()),
             wrt.size() * sizeof(int64_t));
  Jit &jit = jitFor(loss->backend, options);
  std::shared_ptr<Executable> exe;
  std::vector<Array> results;
  if (wrt.empty()) {
    // Nothing asked for is under the loss: the loss and the writes alone.
    exe = mainExecutable(jit, plan, roots,
                         std::string("of ") + what +
                             "() (a loss nothing asked for is under)");
    results = run(*exe, plan.args);
  } else {
    exe = executableFor(
        jit, key,
        [&] {
          mlir::OwningOpRef<mlir::ModuleOp> module = newModule();
          mlir::OpBuilder b(module->getBodyRegion());
          mlir::func::FuncOp lossFunc =
              buildFunction(b, plan, roots, "loss", /*isPrivate=*/true);
          // The loss value comes back too and is kept on the node, so
          // reading it after backward() runs nothing.
          mlir::harp::buildGradientFunction(b, lossFunc.getLoc(), "main",
                                            lossFunc, wrt, /*seeded=*/false);
          return module;
        },
        std::string("of ") + what + "() (the gradients of a " +
            dtypeName(loss->dtype) + " loss)",
        plan.args);
    results = run(*exe, plan.args);
  }
  giveBack.writes = nullptr;
  if (loss->kind != Kind::Leaf) {
    loss->data = results[0];
    loss->epoch = nextEpoch();
  }
  // The intermediates users hold follow the loss and the writes of its
  // backend.
  size_t heldFirst = roots.size() - held.size();
  for (size_t i = 0; i < held.size(); ++i) {
    held[i]->data = results[heldFirst + i];
    held[i]->epoch = nextEpoch();
  }
  // The writes: those of the loss's backend from the results, the others
  // (another device's) realized on their own. The values computed here are
  // dropped first: their graphs need no snapshot of the leaves they read
  // (writeDeferred).
  std::vector<std::pair<NodePtr, NodePtr>> elsewhere, here;
  for (auto &write : writes)
    (write.second->backend == loss->backend ? here : elsewhere)
        .push_back(std::move(write));
  writes.clear();
  size_t resultsBeforeGradients = roots.size();
  roots.clear();
  for (auto &write : here)
    write.second = nullptr;
  size_t next = 1;
  for (const auto &write : here)
    writeDeferred(write.first, std::move(results[next++]));
  if (!elsewhere.empty()) {
    restoreDeferredWrites(std::move(elsewhere));
    flushDeferredWrites();
  }
  Gradients gradients;
  for (size_t j = 0; j < wrt.size(); ++j)
    gradients.emplace_back(plan.args[wrt[j]],
                           std::move(results[resultsBeforeGradients + j]));
  return gradients;
}

/// Computes a gradient backward(createGraph) left as a computed tensor into
/// the leaf's `gradient`.
static void settleGradientGraph(const NodePtr &leaf,
                                const CompileOptions &options = {}) {
  if (!leaf->gradientGraph)
    return;
  const Array &value = realize(leaf->gradientGraph, options);
  Array copy = Array::uninitialized(value.type());
  std::memcpy(copy.data(), value.data(), value.byteSize());
  leaf->gradientGraph.reset();
  leaf->gradientNode.reset();
  leaf->gradient = std::move(copy);
}

/// backward() with createGraph: each leaf's gradient becomes a computed
/// tensor (its old gradient plus this one), differentiable again.
static void backwardGraph(const NodePtr &loss,
                          const std::vector<NodePtr> *inputs) {
  std::vector<NodePtr> leaves;
  if (inputs) {
    leaves = *inputs;
  } else {
    for (const NodePtr &arg :
         planGraph(loss, /*cutAtValues=*/false, nullptr).args)
      if (arg->kind == Kind::Leaf && arg->requiresGrad && isFloat(arg->dtype))
        leaves.push_back(arg);
    if (leaves.empty())
      throw Error("backward: no tensor in the graph requires a gradient");
  }
  std::vector<NodePtr> found = gradients(loss, leaves, {}, true);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!found[i])
      continue;
    const NodePtr &leaf = leaves[i];
    NodePtr before = grad(leaf);
    leaf->gradientGraph =
        before ? binary(BinaryOp::Add, before, found[i]) : found[i];
    leaf->gradient.reset();
    leaf->gradientNode.reset();
  }
}

void harp::detail::backward(const NodePtr &loss, const CompileOptions &options,
                            const std::vector<NodePtr> *inputs,
                            bool createGraph) {
  if (inputs)
    checkGradientInputs("backward", *inputs, /*leavesOnly=*/true);
  if (createGraph)
    return backwardGraph(loss, inputs);
  Gradients gradients = differentiate("backward", loss, options, inputs, {});
  std::vector<NodePtr> reached;
  for (auto &[leaf, gradient] : gradients) {
    settleGradientGraph(leaf, options);
    if (!leaf->gradient) {
      leaf->gradient = std::move(gradient);
    } else if (!leaf->gradientNode) {
      accumulate(*leaf->gradient, gradient);
    } else {
      // Summed apart (addition commutes), then written through the tensor
      // grad() handed out, which snapshots what graphs built on it read.
      accumulate(gradient, *leaf->gradient);
      setGradientValues(leaf, gradient.data());
    }
    reached.push_back(leaf);
  }
  runBackwardHooks(reached);
}

/// gradients() with create_graph: Grad nodes, computed when read (and
/// differentiable again).
static std::vector<NodePtr>
gradientNodes(const NodePtr &loss, const std::vector<NodePtr> &inputs,
              const std::vector<NodePtr> &computed) {
  checkLoss("grad", loss);
  // The writes deferred into leaves are done first: done later, they would
  // move the loss's graph onto snapshots of the leaves the nodes read.
  if (readsDeferredWrite(*loss))
    flushDeferredWrites();
  auto site = std::make_shared<GradSite>();
  site->loss = loss;
  site->cuts = gradientCuts({loss});
  // A computed input is an argument of the loss's function: it needs no
  // value until the gradient is computed.
  for (const NodePtr &n : computed)
    site->cuts.insert(n.get());
  GraphPlan plan = planGraph(loss, /*cutAtValues=*/false, &site->cuts);
  site->key = plan.key;
  std::unordered_map<const Node *, size_t> position;
  for (size_t i = 0; i < inputs.size(); ++i)
    position[inputs[i].get()] = i;
  std::vector<std::pair<size_t, size_t>> asked; // (input, wrt index)
  for (size_t i = 0; i < plan.args.size(); ++i) {
    auto it = position.find(plan.args[i].get());
    if (it == position.end())
      continue;
    if (plan.args[i]->snapshot)
      throw writtenInPlace("grad", *plan.args[i]);
    asked.push_back({it->second, site->wrt.size()});
    site->wrt.push_back(static_cast<int64_t>(i));
  }
  std::vector<NodePtr> result(inputs.size());
  for (auto [input, index] : asked) {
    const NodePtr &arg = inputs[input];
    NodePtr n = make(Kind::Grad, arg->shape, arg->dtype, plan.args);
    n->grad = site;
    n->dim = static_cast<int64_t>(index);
    n->backend = loss->backend;
    result[input] = std::move(n);
  }
  return result;
}

std::vector<NodePtr> harp::detail::gradients(const NodePtr &loss,
                                             const std::vector<NodePtr> &inputs,
                                             const CompileOptions &options,
                                             bool createGraph) {
  std::vector<NodePtr> computed =
      checkGradientInputs("grad", inputs, /*leavesOnly=*/false);
  if (createGraph)
    return gradientNodes(loss, inputs, computed);
  Gradients found = differentiate("grad", loss, options, &inputs, computed);
  std::vector<NodePtr> result(inputs.size());
  for (auto &[arg, gradient] : found)
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == arg) {
        DType dtype = arg->dtype;
        result[i] = fromArray(dtype, std::move(gradient), arg->backend);
        break;
      }
  return result;
}

static std::mutex hooksMutex;
static std::map<uint64_t, BackwardHook> &backwardHooks() {
  static std::map<uint64_t, BackwardHook> hooks;
  return hooks;
}

uint64_t harp::detail::addBackwardHook(BackwardHook hook) {
  static uint64_t next = 0;
  std::lock_guard<std::mutex> lock(hooksMutex);
  backwardHooks().emplace(++next, std::move(hook));
  return next;
}

void harp::detail::removeBackwardHook(uint64_t id) {
  std::lock_guard<std::mutex> lock(hooksMutex);
  backwardHooks().erase(id);
}

static void runBackwardHooks(const std::vector<NodePtr> &reached) {
  std::vector<BackwardHook> hooks;
  {
    std::lock_guard<std::mutex> lock(hooksMutex);
    for (auto &[id, hook] : backwardHooks())
      hooks.push_back(hook);
  }
  for (const BackwardHook &hook : hooks)
    hook(reached);
}

Array *harp::detail::gradientArray(const NodePtr &leaf) {
  settleGradientGraph(leaf);
  return leaf->gradient ? &*leaf->gradient : nullptr;
}

void harp::detail::setGradientArray(const NodePtr &leaf, Array value) {
  if (value.shape() != leaf->shape ||
      value.kind() != elementKindOf(leaf->dtype))
    throw Error("gradient: a " + dtypeName(leaf->dtype) + " " +
                shapeStr(leaf->shape) + " leaf cannot take a gradient of " +
                value.type().str());
  leaf->gradient = std::move(value);
  leaf->gradientNode.reset();
  leaf->gradientGraph.reset();
}

void harp::detail::setGradientValues(const NodePtr &leaf, const void *data) {
  settleGradientGraph(leaf);
  if (!leaf->gradient) {
    leaf->gradient = Array::uninitialized(
        TensorType{elementKindOf(leaf->dtype), leaf->shape});
    std::memcpy(leaf->gradient->data(), data, leaf->gradient->byteSize());
  } else if (leaf->gradientNode) {
    overwrite(leaf->gradientNode, data);
  } else if (data != leaf->gradient->data()) {
    std::memcpy(leaf->gradient->data(), data, leaf->gradient->byteSize());
  }
}

NodePtr harp::detail::grad(const NodePtr &leaf) {
  if (leaf->gradientGraph)
    return leaf->gradientGraph;
  if (!leaf->gradient)
    return nullptr;
  // The gradient itself, not a copy (torch's .grad): a large one took as
  // long to copy as an optimizer's update of it.
  if (!leaf->gradientNode)
    leaf->gradientNode = fromArray(leaf->dtype, *leaf->gradient, leaf->backend);
  return leaf->gradientNode;
}

void harp::detail::zeroGrad(const NodePtr &leaf) {
  leaf->gradient.reset();
  leaf->gradientNode.reset();
  leaf->gradientGraph.reset();
}
