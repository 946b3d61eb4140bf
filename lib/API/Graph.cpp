//===- Graph.cpp - nodes, sources and devices of the lazy graph -----------===//
//
// The node store behind harp::Tensor: dtypes and op names, where nodes were
// built (locations), leaves and other sources, backends. The operations
// live in Elementwise.cpp, Reductions.cpp and Views.cpp; building the IR in
// Emit.cpp; compiling and running it in Realize.cpp.
//
//===----------------------------------------------------------------------===//

#include "Node.h"

#include "harp/Runtime/Cuda.h"
#include "harp/Runtime/Jit.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <unordered_set>

using namespace harp;
using namespace harp::detail;

//===----------------------------------------------------------------------===//
// DTypes and op names
//===----------------------------------------------------------------------===//

std::string harp::dtypeName(DType d) {
  switch (d) {
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  case DType::Enum:                                                            \
    return Name;
#include "harp/API/DTypes.def"
  }
  return "?";
}

ElementKind harp::elementKindOf(DType d) {
  switch (d) {
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  case DType::Enum:                                                            \
    return ElementKind::Kind;
#include "harp/API/DTypes.def"
  }
  return ElementKind::F32;
}

static const char *const binaryNames[] = {
    "add",     "sub",    "mul", "div", "idiv", "rem",    "pow", "maximum",
    "minimum", "lt",     "le",  "gt",  "ge",   "eq",     "ne",  "bitand",
    "bitor",   "bitxor", "shl", "shr", "mod",  "complex"};
static const char *const unaryNames[] = {
    "neg",   "recip", "sqrt",  "log",     "log2",   "exp",  "exp2",
    "sin",   "cos",   "tanh",  "sigmoid", "relu",   "abs",  "floor",
    "not",   "erf",   "log1p", "expm1",   "rsqrt",  "tan",  "atan",
    "ceil",  "round", "trunc", "sign",    "square", "erfc", "isnan",
    "isinf", "real",  "imag",  "conj",    "angle"};
static const char *const reduceNames[] = {"sum", "prod", "max", "min", "mean"};

const char *harp::opName(BinaryOp op) {
  return binaryNames[static_cast<int>(op)];
}
const char *harp::opName(UnaryOp op) {
  return unaryNames[static_cast<int>(op)];
}
const char *harp::opName(ReduceOp op) {
  return reduceNames[static_cast<int>(op)];
}

template <typename Op, size_t N>
static std::optional<Op> named(const char *const (&names)[N],
                               const std::string &name) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i])
      return static_cast<Op>(i);
  return std::nullopt;
}

std::optional<BinaryOp> harp::binaryOpNamed(const std::string &name) {
  return named<BinaryOp>(binaryNames, name);
}
std::optional<UnaryOp> harp::unaryOpNamed(const std::string &name) {
  return named<UnaryOp>(unaryNames, name);
}
std::optional<ReduceOp> harp::reduceOpNamed(const std::string &name) {
  return named<ReduceOp>(reduceNames, name);
}

std::string harp::detail::shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t harp::detail::numElements(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

//===----------------------------------------------------------------------===//
// Locations
//===----------------------------------------------------------------------===//

static thread_local SourceLocation scopedLocation;
static std::atomic<LocationHook> locationHook{nullptr};

LocationScope::LocationScope(SourceLocation location) : saved(scopedLocation) {
  if (!scopedLocation.file)
    scopedLocation = location;
}
LocationScope::~LocationScope() { scopedLocation = saved; }

void harp::setLocationHook(LocationHook hook) { locationHook = hook; }

/// One string per file name for the process: nodes point at it.
static const std::string *intern(const char *file) {
  static std::mutex mutex;
  static std::unordered_set<std::string> files;
  // The typed API passes __builtin_FILE() literals: remember the last one.
  static thread_local const char *lastPointer = nullptr;
  static thread_local const std::string *lastInterned = nullptr;
  if (file == lastPointer)
    return lastInterned;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string *interned = &*files.insert(file).first;
  lastPointer = file;
  lastInterned = interned;
  return interned;
}

static void locate(Node &n) {
  if (scopedLocation.file) {
    n.file = intern(scopedLocation.file);
    n.line = scopedLocation.line;
    n.column = scopedLocation.column;
    return;
  }
  if (LocationHook hook = locationHook.load()) {
    SourceLocation where;
    if (hook(where) && where.file) {
      n.file = intern(where.file);
      n.line = where.line;
      n.column = where.column;
    }
  }
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

uint64_t harp::detail::nextEpoch() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

/// The newest leaf values `n` depends on. Another library may have written
/// an external leaf's memory at any time: its values are always newer than
/// what was computed from them.
static uint64_t newestLeaf(const Node *n,
                           std::map<const Node *, uint64_t> &memo) {
  if (n->kind == Kind::Leaf)
    return n->external ? std::numeric_limits<uint64_t>::max() : n->epoch;
  if (auto it = memo.find(n); it != memo.end())
    return it->second;
  uint64_t newest = 0;
  for (const NodePtr &in : n->inputs)
    newest = std::max(newest, newestLeaf(in.get(), memo));
  return memo[n] = newest;
}

bool harp::detail::isFresh(const Node *n,
                           std::map<const Node *, uint64_t> &memo) {
  if (!n->data)
    return false;
  return n->kind == Kind::Leaf || n->epoch >= newestLeaf(n, memo);
}

BackendPtr harp::detail::commonBackend(const std::string &op,
                                       const std::vector<NodePtr> &inputs) {
  BackendPtr common;
  for (const NodePtr &in : inputs) {
    if (!in->backend || in->backend == common)
      continue;
    if (common)
      throw Error(op + ": operands are on different devices (" +
                  common->name() + " and " + in->backend->name() +
                  "); move one with to()");
    common = in->backend;
  }
  return common;
}

/// Guards every leaf's list of users (graphs may be built on shared
/// parameters from several threads).
static std::mutex usersMutex;

/// Records that `user` was built on the leaf `leaf`.
static void addUser(Node &leaf, const NodePtr &user) {
  std::lock_guard<std::mutex> lock(usersMutex);
  if (!leaf.users.empty() && leaf.users.back().lock() == user)
    return; // the same leaf twice among one node's inputs
  leaf.users.push_back(user);
  if (leaf.users.size() >= 2 * std::max<size_t>(leaf.usersPruned, 16)) {
    llvm::erase_if(leaf.users,
                   [](const std::weak_ptr<Node> &u) { return u.expired(); });
    leaf.usersPruned = leaf.users.size();
  }
}

//===----------------------------------------------------------------------===//
// Deferred writes
//===----------------------------------------------------------------------===//

/// The writes deferOverwrite() queued, in order, and the mutex guarding
/// them and every leaf's writePending.
static std::mutex deferredMutex;
static std::vector<std::pair<NodePtr, NodePtr>> &deferredWrites() {
  static std::vector<std::pair<NodePtr, NodePtr>> writes;
  return writes;
}

bool harp::detail::hasDeferredWrite(const Node &leaf) {
  std::lock_guard<std::mutex> lock(deferredMutex);
  return leaf.writePending;
}

bool harp::detail::readsDeferredWrite(const Node &node) {
  std::lock_guard<std::mutex> lock(deferredMutex);
  const auto &queue = deferredWrites();
  if (queue.empty())
    return false;
  if (node.kind != Kind::Leaf)
    return true;
  if (node.writePending)
    return true;
  // A detach() of a written leaf shares its storage.
  return node.data && llvm::any_of(queue, [&](const auto &write) {
           return write.first->data &&
                  write.first->data->data() == node.data->data();
         });
}

std::vector<std::pair<NodePtr, NodePtr>> harp::detail::takeDeferredWrites() {
  std::lock_guard<std::mutex> lock(deferredMutex);
  std::vector<std::pair<NodePtr, NodePtr>> writes;
  writes.swap(deferredWrites());
  for (auto &[leaf, value] : writes)
    leaf->writePending = false;
  return writes;
}

void harp::detail::restoreDeferredWrites(
    std::vector<std::pair<NodePtr, NodePtr>> writes) {
  std::lock_guard<std::mutex> lock(deferredMutex);
  auto &queue = deferredWrites();
  for (auto &write : writes) {
    if (write.first->writePending)
      continue; // written again since: the newer write stands
    write.first->writePending = true;
    queue.push_back(std::move(write));
  }
}

/// Whether any write is deferred.
static bool deferredWritesQueued() {
  std::lock_guard<std::mutex> lock(deferredMutex);
  return !deferredWrites().empty();
}

/// Drops the deferred write of `leaf`, which a new write replaces.
static void cancelDeferredWrite(Node &leaf) {
  std::lock_guard<std::mutex> lock(deferredMutex);
  if (!leaf.writePending)
    return;
  leaf.writePending = false;
  llvm::erase_if(deferredWrites(),
                 [&](const auto &write) { return write.first.get() == &leaf; });
}

static thread_local bool gradEnabled = true;
/// Whether any node was ever built with gradient mode off: until then
/// backward() has no constants to look for.
static std::atomic<bool> noGradBuilt{false};

void harp::set_grad_enabled(bool enabled) { gradEnabled = enabled; }
bool harp::is_grad_enabled() { return gradEnabled; }
bool harp::detail::anyNoGradNodes() {
  return noGradBuilt.load(std::memory_order_relaxed);
}

NodePtr harp::detail::make(Kind kind, std::vector<int64_t> shape, DType dtype,
                           std::vector<NodePtr> inputs) {
  // A tensor built on a leaf reads its current values: the writes
  // deferred into it are done first.
  for (const NodePtr &in : inputs)
    if (in->kind == Kind::Leaf && hasDeferredWrite(*in)) {
      flushDeferredWrites();
      break;
    }
  auto n = std::make_shared<Node>();
  n->kind = kind;
  n->shape = std::move(shape);
  n->dtype = dtype;
  n->backend = commonBackend("harp", inputs);
  n->inputs = std::move(inputs);
  n->noGrad = kind != Kind::Leaf && !is_grad_enabled();
  if (n->noGrad)
    noGradBuilt.store(true, std::memory_order_relaxed);
  locate(*n);
  for (const NodePtr &in : n->inputs)
    if (in->kind == Kind::Leaf)
      addUser(*in, n);
  return n;
}

mlir::MLIRContext *harp::detail::context() { return &Jit::sharedContext(); }
ContextLock::ContextLock() { Jit::sharedContextMutex().lock(); }
ContextLock::~ContextLock() { Jit::sharedContextMutex().unlock(); }

const std::vector<int64_t> &harp::detail::shapeOf(const NodePtr &n) {
  return n->shape;
}
DType harp::detail::dtypeOf(const NodePtr &n) { return n->dtype; }

int64_t harp::detail::normalizeAxis(const std::string &op, int64_t axis,
                                    size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    throw Error(op + ": axis " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

bool harp::detail::isScalarAxis(const std::string &op, int64_t axis,
                                size_t rank) {
  if (rank != 0)
    return false;
  if (axis != 0 && axis != -1)
    throw Error(op + ": dim " + std::to_string(axis) +
                " is out of range for a 0-d tensor (0 or -1)");
  return true;
}

NodePtr
harp::detail::onScalarAsVector(const NodePtr &a,
                               const std::function<NodePtr(NodePtr)> &fn) {
  return reshape(fn(reshape(a, {1})), {});
}

std::vector<int64_t>
harp::detail::broadcastShape(const std::string &op,
                             const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[rank - s.size() + i];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o != 1) {
        std::string all;
        for (const auto &t : shapes)
          all += (all.empty() ? "" : " and ") + shapeStr(t);
        throw Error(op + ": shapes " + all + " cannot be broadcast together");
      }
      o = s[i];
    }
  return out;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

static void checkShape(const std::string &op,
                       const std::vector<int64_t> &shape) {
  for (int64_t n : shape)
    if (n < 0)
      throw Error(op + ": negative size in shape " + shapeStr(shape));
}

NodePtr harp::detail::fromData(DType dtype, std::vector<int64_t> shape,
                               const void *data, BackendPtr backend) {
  checkShape("from_data", shape);
  auto n = make(Kind::Leaf, shape, dtype);
  n->backend = std::move(backend);
  TensorType type{elementKindOf(dtype), shape};
  n->data = data ? Array::copyOf(Array::borrow(type, const_cast<void *>(data)))
                 : Array::allocate(type);
  n->epoch = nextEpoch();
  return n;
}

NodePtr harp::detail::fromArray(DType dtype, Array array, BackendPtr backend) {
  if (array.kind() != elementKindOf(dtype))
    throw Error("from_array: a " + elementName(array.kind()) +
                " array cannot hold " + dtypeName(dtype));
  auto n = make(Kind::Leaf, array.shape(), dtype);
  n->backend = std::move(backend);
  n->data = std::move(array);
  n->epoch = nextEpoch();
  return n;
}

NodePtr harp::detail::input(DType dtype, std::vector<int64_t> shape,
                            std::string name) {
  checkShape("input", shape);
  // No storage until set_data: a placeholder only building IR (the graph
  // importer's) may have any size.
  auto n = make(Kind::Leaf, std::move(shape), dtype);
  n->hasValues = false;
  n->name = std::move(name);
  return n;
}

bool harp::detail::isLeaf(const NodePtr &node) {
  return node->kind == Kind::Leaf;
}

/// Writes `data` into the leaf's storage (a write that replaces its
/// deferred one).
static void writeData(const NodePtr &leaf, const void *data) {
  cancelDeferredWrite(*leaf);
  if (!leaf->data)
    leaf->data = Array::uninitialized(
        TensorType{elementKindOf(leaf->dtype), leaf->shape});
  if (data != leaf->data->data())
    std::memcpy(leaf->data->data(), data, leaf->data->byteSize());
  leaf->hasValues = true;
  leaf->epoch = nextEpoch();
}

void harp::detail::setData(const NodePtr &leaf, const void *data) {
  if (leaf->kind != Kind::Leaf)
    throw Error("set_data: only leaves (from_data, input) take new values");
  // The deferred writes may read the values the leaf has now, and set_data
  // (unlike an in-place write, which snapshots them) gives the tensors built
  // before the new ones: they are done first.
  if (deferredWritesQueued())
    flushDeferredWrites();
  writeData(leaf, data);
}

/// Moves the tensors built on `leaf` onto a snapshot of its values, before
/// an in-place write. With `takeStorage` the snapshot takes the leaf's
/// storage itself (the caller gives the leaf new storage) instead of a copy.
static void snapshotUsers(const NodePtr &leaf, bool takeStorage = false) {
  std::vector<NodePtr> live;
  {
    std::lock_guard<std::mutex> lock(usersMutex);
    for (const std::weak_ptr<Node> &user : leaf->users)
      if (NodePtr u = user.lock())
        live.push_back(std::move(u));
    leaf->users.clear();
    leaf->usersPruned = 0;
  }
  if (!live.empty() && leaf->data && leaf->hasValues) {
    // The graphs built on the leaf keep its old values: they read a
    // snapshot, and the leaf's own storage takes the new ones.
    auto old = make(Kind::Leaf, leaf->shape, leaf->dtype);
    old->data = takeStorage ? *leaf->data : Array::copyOf(*leaf->data);
    old->epoch = leaf->epoch;
    old->backend = leaf->backend;
    old->requiresGrad = leaf->requiresGrad;
    old->snapshot = true;
    old->file = leaf->file;
    old->line = leaf->line;
    old->column = leaf->column;
    for (const NodePtr &user : live) {
      for (NodePtr &in : user->inputs)
        if (in == leaf)
          in = old;
      addUser(*old, user);
    }
  }
}

void harp::detail::overwrite(const NodePtr &leaf, const void *data) {
  if (leaf->kind != Kind::Leaf)
    throw Error("copy_: only leaves (from_data, input, detach) are written "
                "in place");
  snapshotUsers(leaf);
  writeData(leaf, data);
}

void harp::detail::writeDeferred(const NodePtr &leaf, Array values) {
  // Storage that nothing else sees (no detach() sharing it, no NumPy view,
  // not borrowed) changes hands: the leaf adopts the computed values, and a
  // snapshot, if any tensor still reads the old values, takes the old
  // storage. Otherwise the values are copied into the leaf's storage.
  if (leaf->data && leaf->data->unshared() && values.unshared() &&
      values.type() == leaf->data->type()) {
    snapshotUsers(leaf, /*takeStorage=*/true);
    cancelDeferredWrite(*leaf);
    leaf->data = std::move(values);
    leaf->hasValues = true;
    leaf->epoch = nextEpoch();
    return;
  }
  snapshotUsers(leaf);
  writeData(leaf, values.data());
}

void harp::detail::deferOverwrite(const NodePtr &leaf, const NodePtr &value) {
  if (leaf->kind != Kind::Leaf)
    throw Error("copy_: only leaves (from_data, input, detach) are written "
                "in place");
  if (value->shape != leaf->shape || value->dtype != leaf->dtype)
    throw Error("copy_: a " + dtypeName(value->dtype) + " " +
                shapeStr(value->shape) + " value cannot be written into a " +
                dtypeName(leaf->dtype) + " " + shapeStr(leaf->shape) +
                " tensor");
  if (!leaf->hasValues)
    throw Error("copy_: input '" + leaf->name + "' " + shapeStr(leaf->shape) +
                " has no values yet; give it some with set_data");
  // The tensors built on the leaf so far (the value's graph among them)
  // keep its old values: the leaf keeps them until the write is done, and
  // nothing is built on it before (make() flushes first). Those still
  // alive then are moved onto a snapshot of them (writeDeferred); the
  // values written, computed by then, and the graphs dropped since (an
  // optimizer's update expressions, the last step's loss) cost no copy.
  {
    std::lock_guard<std::mutex> lock(deferredMutex);
    auto &queue = deferredWrites();
    if (leaf->writePending)
      llvm::erase_if(queue, [&](const auto &w) { return w.first == leaf; });
    leaf->writePending = true;
    queue.emplace_back(leaf, value);
  }
  if (leaf->external)
    flushDeferredWrites();
}

void harp::detail::markExternal(const NodePtr &leaf) {
  if (leaf->kind == Kind::Leaf)
    leaf->external = true;
}

NodePtr harp::detail::full(DType dtype, std::vector<int64_t> shape,
                           double value) {
  checkShape("full", shape);
  auto n = make(Kind::Full, std::move(shape), dtype);
  n->value = value;
  return n;
}

NodePtr harp::detail::fullComplex(DType dtype, std::vector<int64_t> shape,
                                  double real, double imag) {
  if (!isComplex(dtype) && imag != 0)
    throw Error("full: a value with an imaginary part needs a complex "
                "dtype, got " +
                dtypeName(dtype));
  NodePtr n = full(dtype, std::move(shape), real);
  n->imag = imag;
  return n;
}

NodePtr harp::detail::scalar(DType dtype, const void *data) {
  return fromData(dtype, {}, data);
}

NodePtr harp::detail::scalar(DType dtype, double value) {
  auto put = [&](auto v) { return fromData(dtype, {}, &v); };
  switch (dtype) {
  case DType::Bool:
    return put(static_cast<bool>(value != 0));
  case DType::I8:
    return put(static_cast<int8_t>(value));
  case DType::I16:
    return put(static_cast<int16_t>(value));
  case DType::I32:
    return put(static_cast<int32_t>(value));
  case DType::I64:
    return put(static_cast<int64_t>(value));
  case DType::U8:
    return put(static_cast<uint8_t>(value));
  case DType::U16:
    return put(static_cast<uint16_t>(value));
  case DType::U32:
    return put(static_cast<uint32_t>(value));
  case DType::U64:
    return put(static_cast<uint64_t>(value));
  case DType::F32:
    return put(static_cast<float>(value));
  case DType::F64:
    return put(value);
  case DType::C64:
    return put(std::complex<float>(static_cast<float>(value), 0.0f));
  case DType::C128:
    return put(std::complex<double>(value, 0.0));
  }
  return put(value);
}

NodePtr harp::detail::arange(DType dtype, int64_t count, double start,
                             double step) {
  if (count < 0)
    throw Error("arange: negative count " + std::to_string(count));
  if (dtype == DType::Bool || isComplex(dtype))
    throw Error("arange: needs a real numeric dtype, got " + dtypeName(dtype));
  if (step == 0)
    throw Error("arange: step must be non-zero");
  auto n = make(Kind::Arange, {count}, dtype);
  n->value = start;
  n->step = step;
  return n;
}

NodePtr harp::detail::rand(DType dtype, std::vector<int64_t> shape,
                           uint64_t seed) {
  checkShape("rand", shape);
  if (!isFloat(dtype))
    throw Error("rand: needs a float dtype, got " + dtypeName(dtype));
  auto n = make(Kind::Rand, std::move(shape), dtype);
  n->seed = seed;
  return n;
}

NodePtr harp::detail::rand(DType dtype, std::vector<int64_t> shape,
                           NodePtr seed) {
  checkShape("rand", shape);
  if (!isFloat(dtype))
    throw Error("rand: needs a float dtype, got " + dtypeName(dtype));
  if (!seed->shape.empty() || isFloat(seed->dtype) ||
      seed->dtype == DType::Bool)
    throw Error("rand: the seed must be a 0-d integer tensor, got " +
                dtypeName(seed->dtype) + " " + shapeStr(seed->shape));
  auto n = make(Kind::Rand, std::move(shape), dtype, {cast(seed, DType::I64)});
  return n;
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

BackendPtr harp::backend::get(const std::string &name) {
  llvm::Expected<Device> device = parseDevice(name);
  if (!device)
    throw Error("backend::get: " + llvm::toString(device.takeError()));
  static const BackendPtr cpu = std::make_shared<Backend>("cpu");
  static const BackendPtr cuda = std::make_shared<Backend>("cuda");
  if (*device == Device::CPU)
    return cpu;
  if (llvm::Error err = cuda::initialize())
    throw Error("backend::get: cuda: " + llvm::toString(std::move(err)));
  return cuda;
}

BackendPtr harp::detail::backendOf(const NodePtr &node) {
  return node->backend ? node->backend : backend::get("cpu");
}

NodePtr harp::detail::to(const NodePtr &node, const BackendPtr &backend) {
  if (!backend)
    throw Error("to: no backend given");
  if (node->backend == backend)
    return node;
  const Array &value = realize(node);
  NodePtr leaf = fromData(node->dtype, node->shape, value.data(), backend);
  return leaf;
}

NodePtr harp::detail::detach(const NodePtr &node) {
  auto leaf = make(Kind::Leaf, node->shape, node->dtype);
  leaf->data = realize(node);
  leaf->backend = node->backend;
  // The storage of a leaf another library shares is shared still.
  leaf->external = node->kind == Kind::Leaf && node->external;
  return leaf;
}
