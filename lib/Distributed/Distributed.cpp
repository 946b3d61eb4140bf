//===- Distributed.cpp - data-parallel training over MPI ------------------===//
//
// The MPI library is opened with dlopen under mpirun (its symbols global,
// so the JIT's process symbol search finds them); every collective is a
// function of `mpi` dialect ops built here, compiled by the shared JIT
// (harp-to-llvm lowers the ops with harp-mpi-to-llvm, for the ABI of the
// library loaded) and cached per dtype, operation and size. Before each
// collective the processes exchange a description of what they pass
// (another all-reduce), so a disagreement is an error on every process
// rather than a hang or a wrong sum.
//
//===----------------------------------------------------------------------===//

#include "harp/API/Distributed.h"

#include "harp/Runtime/Jit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <set>

using namespace harp;
using harp::detail::NodePtr;

namespace {

//===----------------------------------------------------------------------===//
// The library and the world
//===----------------------------------------------------------------------===//

struct World {
  bool initialized = false;
  bool openMPI = false;
  std::string implementation = "none";
  int rank = 0;
  int size = 1;
  int (*finalized)(int *) = nullptr;
  int (*finalize)() = nullptr;
};

World &world() {
  static World w;
  return w;
}

std::mutex &worldMutex() {
  static std::mutex m;
  return m;
}

void finalizeAtExit() {
  World &w = world();
  int done = 0;
  if (w.finalized && w.finalized(&done) == 0 && !done)
    w.finalize();
}

/// Opens the MPI library with its symbols global; returns why not.
std::string openLibrary(World &w) {
  std::vector<std::string> names;
  if (const char *chosen = std::getenv("HARP_MPI_LIBRARY"))
    names.push_back(chosen);
  else
    names = {"libmpi.so.40", "libmpi.so.12", "libmpich.so.12", "libmpi.so"};
  std::string tried;
  void *handle = nullptr;
  for (const std::string &name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle)
      break;
    tried += "\n  " + std::string(dlerror());
  }
  if (!handle)
    return "this process was started by mpirun, but no MPI library could be "
           "loaded:" +
           tried +
           "\nInstall Open MPI (Debian: apt install openmpi-bin "
           "libopenmpi-dev) or name the library in HARP_MPI_LIBRARY";
  w.openMPI = dlsym(handle, "ompi_mpi_comm_world") != nullptr;
  w.implementation = w.openMPI ? "OpenMPI" : "MPICH";
  auto initialized =
      reinterpret_cast<int (*)(int *)>(dlsym(handle, "MPI_Initialized"));
  auto initialize =
      reinterpret_cast<int (*)(int *, char ***)>(dlsym(handle, "MPI_Init"));
  w.finalized =
      reinterpret_cast<int (*)(int *)>(dlsym(handle, "MPI_Finalized"));
  w.finalize = reinterpret_cast<int (*)()>(dlsym(handle, "MPI_Finalize"));
  if (!initialized || !initialize || !w.finalized || !w.finalize)
    return "the MPI library lacks MPI_Init / MPI_Initialized / "
           "MPI_Finalize";
  int flag = 0;
  initialized(&flag);
  if (!flag) {
    // Someone else (mpi4py) may have initialised it: then they finalize.
    if (initialize(nullptr, nullptr) != 0)
      return "MPI_Init failed";
    std::atexit(finalizeAtExit);
  }
  return "";
}

void requireInit(const char *op) {
  if (!world().initialized)
    throw Error(std::string(op) + ": call harp::distributed::init() (Python: "
                                  "harp.distributed.init()) first");
}

//===----------------------------------------------------------------------===//
// Collectives as harp IR
//===----------------------------------------------------------------------===//

/// Element kinds as MPI moves them: bool as bytes.
ElementKind wireKind(ElementKind kind) {
  return kind == ElementKind::I1 ? ElementKind::I8 : kind;
}

mlir::Type elementType(mlir::MLIRContext *ctx, ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return mlir::Float32Type::get(ctx);
  case ElementKind::F64:
    return mlir::Float64Type::get(ctx);
  case ElementKind::I1:
  case ElementKind::I8:
    return mlir::IntegerType::get(ctx, 8);
  case ElementKind::I16:
    return mlir::IntegerType::get(ctx, 16);
  case ElementKind::I32:
    return mlir::IntegerType::get(ctx, 32);
  case ElementKind::I64:
    return mlir::IntegerType::get(ctx, 64);
  default:
    throw Error("distributed: no MPI datatype for " + elementName(kind));
  }
}

/// A module whose DLTI names the loaded library's ABI.
mlir::OwningOpRef<mlir::ModuleOp> newModule(mlir::MLIRContext *ctx) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(ctx));
  auto entry = mlir::DataLayoutEntryAttr::get(
      mlir::StringAttr::get(ctx, "MPI:Implementation"),
      mlir::StringAttr::get(ctx, world().openMPI ? "OpenMPI" : "MPICH"));
  (*module)->setAttr("dlti.map", mlir::MapAttr::get(ctx, {entry}));
  return module;
}

using Body = std::function<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                       mlir::ValueRange)>;

/// `func @main(inputs) -> result` with the body `build` makes.
mlir::OwningOpRef<mlir::ModuleOp> buildFunction(mlir::MLIRContext *ctx,
                                                mlir::TypeRange inputs,
                                                mlir::Type result,
                                                const Body &build) {
  mlir::OwningOpRef<mlir::ModuleOp> module = newModule(ctx);
  mlir::OpBuilder b(module->getBodyRegion());
  mlir::Location loc =
      mlir::NameLoc::get(mlir::StringAttr::get(ctx, "harp::distributed"));
  auto func = mlir::func::FuncOp::create(b, loc, "main",
                                         b.getFunctionType(inputs, result));
  mlir::Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  mlir::Value value = build(b, loc, entry->getArguments());
  mlir::func::ReturnOp::create(b, loc, value);
  return module;
}

/// The compiled collective for `key`, built by `build` on first use.
std::shared_ptr<Executable> collective(
    const std::string &key,
    const std::function<mlir::OwningOpRef<mlir::ModuleOp>(mlir::MLIRContext *)>
        &build) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Executable>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
  }
  Jit &jit = Jit::shared(Device::CPU);
  llvm::Expected<std::shared_ptr<Executable>> exe = [&] {
    std::lock_guard<std::recursive_mutex> lock(Jit::sharedContextMutex());
    mlir::OwningOpRef<mlir::ModuleOp> module = build(&Jit::sharedContext());
    return jit.compile(*module);
  }();
  if (!exe)
    throw Error("distributed: harp could not compile the collective " + key +
                ": " + llvm::toString(exe.takeError()));
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, *exe);
  return *exe;
}

/// Runs the one function of `exe` on `inputs` into `results`.
void call(const Executable &exe, llvm::ArrayRef<Array> inputs,
          llvm::ArrayRef<Array> results) {
  if (llvm::Error err = exe.callInto("main", inputs, results))
    throw Error("distributed: " + llvm::toString(std::move(err)));
}

mlir::Value commWorld(mlir::OpBuilder &b, mlir::Location loc) {
  return mlir::mpi::CommWorldOp::create(
      b, loc, mlir::mpi::CommType::get(b.getContext()));
}

mlir::Value commRank(mlir::OpBuilder &b, mlir::Location loc, mlir::Value comm) {
  return mlir::mpi::CommRankOp::create(b, loc, mlir::TypeRange{b.getI32Type()},
                                       comm)
      .getRank();
}

mlir::Value commSize(mlir::OpBuilder &b, mlir::Location loc, mlir::Value comm) {
  return mlir::mpi::CommSizeOp::create(b, loc, mlir::TypeRange{b.getI32Type()},
                                       comm)
      .getSize();
}

using BufferBody = std::function<void(mlir::OpBuilder &, mlir::Location,
                                      mlir::Value buffer, mlir::Value comm)>;

/// `func @main() -> tensor<n x kind>` whose body `build` fills in on the
/// result's buffer. buffer-results-to-out-params makes that buffer the
/// caller's (test/Codegen/CPU/mpi-to-llvm.mlir checks it), so the
/// collective reads and writes the caller's array in place: MPI_IN_PLACE,
/// no copy and no allocation.
mlir::OwningOpRef<mlir::ModuleOp> inPlaceFunction(mlir::MLIRContext *ctx,
                                                  ElementKind kind, int64_t n,
                                                  const BufferBody &build) {
  mlir::Type element = elementType(ctx, kind);
  auto tensor = mlir::RankedTensorType::get({n}, element);
  auto memref = mlir::MemRefType::get({n}, element);
  return buildFunction(
      ctx, {}, tensor,
      [&](mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange) {
        mlir::Value buffer = mlir::memref::AllocOp::create(b, loc, memref);
        build(b, loc, buffer, commWorld(b, loc));
        return mlir::bufferization::ToTensorOp::create(
            b, loc, tensor, buffer, /*restrict=*/true, /*writable=*/true);
      });
}

/// rank and size of the world, through mpi.comm_rank / mpi.comm_size.
std::pair<int, int> queryWorld() {
  auto exe = collective("world", [](mlir::MLIRContext *ctx) {
    auto i32 = mlir::IntegerType::get(ctx, 32);
    auto result = mlir::RankedTensorType::get({2}, i32);
    return buildFunction(
        ctx, {}, result,
        [&](mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange) {
          mlir::Value comm = commWorld(b, loc);
          mlir::Value rank = commRank(b, loc, comm);
          mlir::Value size = commSize(b, loc, comm);
          return mlir::tensor::FromElementsOp::create(
              b, loc, result, mlir::ValueRange{rank, size});
        });
  });
  Array out = Array::allocate(TensorType{ElementKind::I32, {2}});
  call(*exe, {}, {out});
  return {out.as<int32_t>()[0], out.as<int32_t>()[1]};
}

mlir::mpi::MPI_ReductionOpEnum mpiOp(ReduceOp op, bool isBool) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Mean:
    return isBool ? mlir::mpi::MPI_ReductionOpEnum::MPI_MAX
                  : mlir::mpi::MPI_ReductionOpEnum::MPI_SUM;
  case ReduceOp::Prod:
    return isBool ? mlir::mpi::MPI_ReductionOpEnum::MPI_MIN
                  : mlir::mpi::MPI_ReductionOpEnum::MPI_PROD;
  case ReduceOp::Max:
    return mlir::mpi::MPI_ReductionOpEnum::MPI_MAX;
  case ReduceOp::Min:
    return mlir::mpi::MPI_ReductionOpEnum::MPI_MIN;
  }
  return mlir::mpi::MPI_ReductionOpEnum::MPI_SUM;
}

const char *reduceName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Prod:
    return "prod";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Mean:
    return "mean";
  }
  return "?";
}

/// The element-wise reduction over the world of the flat array `buffer`,
/// in place (mpi.allreduce with one buffer for both), divided by the
/// world's size for `mean`.
void reduceBufferInPlace(const Array &buffer, mlir::mpi::MPI_ReductionOpEnum op,
                         bool mean) {
  int64_t n = buffer.numElements();
  ElementKind kind = buffer.kind();
  std::string key =
      "all_reduce " + elementName(kind) + " " + std::to_string(n) + " " +
      mlir::mpi::stringifyMPI_ReductionOpEnum(op).str() + (mean ? " mean" : "");
  auto exe = collective(key, [&](mlir::MLIRContext *ctx) {
    return inPlaceFunction(
        ctx, kind, n,
        [&](mlir::OpBuilder &b, mlir::Location loc, mlir::Value buf,
            mlir::Value comm) {
          mlir::mpi::AllReduceOp::create(b, loc, mlir::TypeRange{}, buf, buf,
                                         op, comm);
          if (!mean)
            return;
          mlir::Type element = elementType(ctx, kind);
          mlir::Value divisor = mlir::arith::SIToFPOp::create(
              b, loc, element, commSize(b, loc, comm));
          mlir::Value zero = mlir::arith::ConstantIndexOp::create(b, loc, 0);
          mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
          mlir::Value count = mlir::arith::ConstantIndexOp::create(b, loc, n);
          mlir::scf::ForOp::create(
              b, loc, zero, count, one, mlir::ValueRange{},
              [&](mlir::OpBuilder &lb, mlir::Location l, mlir::Value i,
                  mlir::ValueRange) {
                mlir::Value v = mlir::memref::LoadOp::create(lb, l, buf, i);
                mlir::Value q = mlir::arith::DivFOp::create(lb, l, v, divisor);
                mlir::memref::StoreOp::create(lb, l, q, buf, i);
                mlir::scf::YieldOp::create(lb, l);
              });
        });
  });
  call(*exe, {}, {buffer});
}

/// The flat array `buffer` as process `root` holds it, in place: the root
/// sends it to every other process (mpi.send), which receives it
/// (mpi.recv).
void broadcastBufferInPlace(const Array &buffer, int root) {
  int64_t n = buffer.numElements();
  ElementKind kind = buffer.kind();
  std::string key = "broadcast " + elementName(kind) + " " + std::to_string(n) +
                    " from " + std::to_string(root);
  auto exe = collective(key, [&](mlir::MLIRContext *ctx) {
    return inPlaceFunction(
        ctx, kind, n,
        [&](mlir::OpBuilder &b, mlir::Location loc, mlir::Value buf,
            mlir::Value comm) {
          mlir::Type i32 = b.getI32Type();
          mlir::Value size = commSize(b, loc, comm);
          mlir::Value rootValue =
              mlir::arith::ConstantIntOp::create(b, loc, i32, root);
          mlir::Value tag = mlir::arith::ConstantIntOp::create(b, loc, i32, 0);
          mlir::Value isRoot = mlir::arith::CmpIOp::create(
              b, loc, mlir::arith::CmpIPredicate::eq, commRank(b, loc, comm),
              rootValue);
          mlir::scf::IfOp::create(
              b, loc, isRoot,
              [&](mlir::OpBuilder &tb, mlir::Location l) {
                mlir::Value zero =
                    mlir::arith::ConstantIndexOp::create(tb, l, 0);
                mlir::Value one =
                    mlir::arith::ConstantIndexOp::create(tb, l, 1);
                mlir::Value count = mlir::arith::IndexCastOp::create(
                    tb, l, tb.getIndexType(), size);
                mlir::scf::ForOp::create(
                    tb, l, zero, count, one, mlir::ValueRange{},
                    [&](mlir::OpBuilder &lb, mlir::Location ll, mlir::Value r,
                        mlir::ValueRange) {
                      mlir::Value dest =
                          mlir::arith::IndexCastOp::create(lb, ll, i32, r);
                      mlir::Value other = mlir::arith::CmpIOp::create(
                          lb, ll, mlir::arith::CmpIPredicate::ne, dest,
                          rootValue);
                      mlir::scf::IfOp::create(
                          lb, ll, other,
                          [&](mlir::OpBuilder &ib, mlir::Location il) {
                            mlir::mpi::SendOp::create(ib, il, mlir::TypeRange{},
                                                      buf, tag, dest, comm);
                            mlir::scf::YieldOp::create(ib, il);
                          });
                      mlir::scf::YieldOp::create(lb, ll);
                    });
                mlir::scf::YieldOp::create(tb, l);
              },
              [&](mlir::OpBuilder &eb, mlir::Location l) {
                mlir::mpi::RecvOp::create(eb, l, mlir::TypeRange{}, buf, tag,
                                          rootValue, comm);
                mlir::scf::YieldOp::create(eb, l);
              });
        });
  });
  call(*exe, {}, {buffer});
}

/// Every process's `mine` (all of one length), rank by rank: a sum of
/// buffers that are zero outside each process's own slot.
std::vector<int64_t> exchange(const std::vector<int64_t> &mine) {
  const World &w = world();
  size_t len = mine.size();
  Array all =
      Array::allocate(TensorType{ElementKind::I64, {int64_t(len) * w.size}});
  std::memcpy(all.as<int64_t>() + len * w.rank, mine.data(),
              len * sizeof(int64_t));
  reduceBufferInPlace(all, mlir::mpi::MPI_ReductionOpEnum::MPI_SUM,
                      /*mean=*/false);
  return std::vector<int64_t>(all.as<int64_t>(),
                              all.as<int64_t>() + all.numElements());
}

/// Collective kinds in a description.
enum Code : int64_t { AllReduceCode = 1, BroadcastCode = 2, SyncCode = 3 };

/// What a process passes to a collective: its kind, an argument (the
/// reduction or the root), the dtype and the shape (rank, first four dims,
/// and a hash of all).
std::vector<int64_t> describe(Code code, int64_t argument, DType dtype,
                              const std::vector<int64_t> &shape) {
  std::vector<int64_t> d = {code, argument, int64_t(dtype),
                            int64_t(shape.size())};
  uint64_t hash = 1469598103934665603ull;
  for (int64_t dim : shape)
    hash = (hash ^ uint64_t(dim)) * 1099511628211ull;
  for (size_t i = 0; i < 4; ++i)
    d.push_back(i < shape.size() ? shape[i] : -1);
  d.push_back(int64_t(hash >> 1));
  return d;
}

std::string describeText(const int64_t *d) {
  static const char *names[] = {"", "all_reduce", "broadcast"};
  std::string dims = "[";
  for (int64_t i = 0; i < d[3]; ++i) {
    if (i == 4) {
      dims += ", ...";
      break;
    }
    dims += (i ? ", " : "") + std::to_string(d[4 + i]);
  }
  dims += "]";
  std::string what = d[0] >= 1 && d[0] <= 2 ? names[d[0]] : "?";
  std::string arg = d[0] == AllReduceCode ? reduceName(ReduceOp(d[1]))
                                          : "root " + std::to_string(d[1]);
  return what + " of " + dtypeName(DType(d[2])) + " " + dims + " (" + arg + ")";
}

/// Throws on every process unless all passed what this one did.
void agree(const char *op, const std::vector<int64_t> &mine) {
  std::vector<int64_t> all = exchange(mine);
  size_t len = mine.size();
  bool same = true;
  for (int r = 0; r < world().size; ++r)
    same &= std::equal(mine.begin(), mine.end(), all.begin() + r * len);
  if (same)
    return;
  std::string message =
      std::string(op) + ": the processes disagree on what they pass:";
  for (int r = 0; r < world().size; ++r)
    message += "\n  rank " + std::to_string(r) + ": " +
               describeText(all.data() + r * len);
  throw Error(message);
}

/// `a` with each element's sign bit flipped: unsigned order as signed order,
/// so MPI's signed max and min serve unsigned dtypes.
void flipSignBits(const Array &a) {
  size_t width = elementSize(a.kind());
  auto *bytes = static_cast<uint8_t *>(a.data());
  for (int64_t i = 0; i < a.numElements(); ++i)
    bytes[i * width + width - 1] ^= 0x80;
}

/// A flat view of `a` as MPI moves it (bool as bytes).
Array flat(const Array &a) {
  return Array::borrow(TensorType{wireKind(a.kind()), {a.numElements()}},
                       a.data());
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void checkCount(const char *op, int64_t n) {
  if (n > INT_MAX)
    throw Error(std::string(op) + ": " + std::to_string(n) +
                " elements is more than one MPI message carries (" +
                std::to_string(INT_MAX) + ")");
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

bool distributed::launchedByMPI() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                           "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(name))
      return true;
  return false;
}

void distributed::init() {
  std::lock_guard<std::mutex> lock(worldMutex());
  World &w = world();
  if (w.initialized)
    return;
  if (!launchedByMPI()) {
    w.initialized = true;
    return;
  }
  if (std::string why = openLibrary(w); !why.empty())
    throw Error("distributed.init: " + why);
  std::tie(w.rank, w.size) = queryWorld();
  w.initialized = true;
}

bool distributed::isInitialized() { return world().initialized; }

int distributed::rank() {
  requireInit("rank");
  return world().rank;
}

int distributed::worldSize() {
  requireInit("world_size");
  return world().size;
}

std::string distributed::implementation() {
  requireInit("implementation");
  return world().implementation;
}

void distributed::barrier() {
  requireInit("barrier");
  if (world().size == 1)
    return;
  auto exe = collective("barrier", [](mlir::MLIRContext *ctx) {
    auto result =
        mlir::RankedTensorType::get({}, mlir::IntegerType::get(ctx, 32));
    return buildFunction(
        ctx, {}, result,
        [&](mlir::OpBuilder &b, mlir::Location loc, mlir::ValueRange) {
          mlir::mpi::Barrier::create(b, loc, mlir::TypeRange{},
                                     commWorld(b, loc));
          return mlir::arith::ConstantOp::create(
              b, loc, mlir::DenseElementsAttr::get(result, int32_t(0)));
        });
  });
  Array out = Array::allocate(TensorType{ElementKind::I32, {}});
  call(*exe, {}, {out});
}

/// Checks a collective's argument on every process (after they agreed on
/// it, so all of them throw together) and returns its value.
static const Array &collectiveValue(const char *op, const NodePtr &t,
                                    int64_t argument, Code code) {
  DType dtype = harp::detail::dtypeOf(t);
  const std::vector<int64_t> &shape = harp::detail::shapeOf(t);
  const Array &value = harp::detail::realize(t);
  // The processes agree first, so an error below is raised by all of them
  // (one raising alone would leave the others waiting).
  const World &w = world();
  if (w.size > 1)
    agree(op, describe(code, argument, dtype, shape));
  if (code == AllReduceCode && ReduceOp(argument) == ReduceOp::Mean &&
      !isFloat(dtype))
    throw Error("all_reduce: mean needs a float tensor, got " +
                dtypeName(dtype) + " " + shapeText(shape));
  if (code == BroadcastCode && (argument < 0 || argument >= w.size))
    throw Error("broadcast: root " + std::to_string(argument) +
                " is not a rank of a world of " + std::to_string(w.size));
  checkCount(op, value.numElements());
  return value;
}

/// all_reduce on `buffer` (holding a `dtype` tensor), in place.
static void allReduceArray(const Array &buffer, DType dtype, ReduceOp op) {
  if (world().size == 1 || buffer.numElements() == 0)
    return;
  // MPI's signed max and min order unsigned values whose sign bit is
  // flipped as the unsigned values are ordered.
  bool flip = isUnsigned(dtype) && (op == ReduceOp::Max || op == ReduceOp::Min);
  if (flip)
    flipSignBits(buffer);
  reduceBufferInPlace(flat(buffer), mpiOp(op, dtype == DType::Bool),
                      op == ReduceOp::Mean);
  if (flip)
    flipSignBits(buffer);
}

static void broadcastArray(const Array &buffer, int root) {
  if (world().size > 1 && buffer.numElements() > 0)
    broadcastBufferInPlace(flat(buffer), root);
}

/// A copy of `value` as a new leaf's array.
static Array copyOf(const Array &value) {
  Array copy = Array::allocate(value.type());
  std::memcpy(copy.data(), value.data(), value.byteSize());
  return copy;
}

NodePtr distributed::detail::allReduce(const NodePtr &t, ReduceOp op) {
  requireInit("all_reduce");
  Array out =
      copyOf(collectiveValue("all_reduce", t, int64_t(op), AllReduceCode));
  allReduceArray(out, harp::detail::dtypeOf(t), op);
  return harp::detail::fromArray(harp::detail::dtypeOf(t), out);
}

NodePtr distributed::detail::broadcast(const NodePtr &t, int root) {
  requireInit("broadcast");
  Array out = copyOf(collectiveValue("broadcast", t, root, BroadcastCode));
  broadcastArray(out, root);
  return harp::detail::fromArray(harp::detail::dtypeOf(t), out);
}

/// A leaf's own array, which a collective rewrites in place.
static const Array &leafValue(const char *op, const NodePtr &leaf) {
  if (!harp::detail::isLeaf(leaf))
    throw Error(std::string(op) +
                ": in place needs a leaf (a tensor holding data), got a "
                "computed tensor; use the returning form");
  return harp::detail::realize(leaf);
}

void distributed::detail::allReduceInPlace(const NodePtr &leaf, ReduceOp op) {
  requireInit("all_reduce");
  const Array &value = leafValue("all_reduce", leaf);
  collectiveValue("all_reduce", leaf, int64_t(op), AllReduceCode);
  allReduceArray(value, harp::detail::dtypeOf(leaf), op);
  // New values: what was computed from the old ones is recomputed.
  harp::detail::setData(leaf, value.data());
}

void distributed::detail::broadcastInPlace(const NodePtr &leaf, int root) {
  requireInit("broadcast");
  const Array &value = leafValue("broadcast", leaf);
  collectiveValue("broadcast", leaf, root, BroadcastCode);
  broadcastArray(value, root);
  harp::detail::setData(leaf, value.data());
}

void distributed::broadcastLeaves(const std::vector<NodePtr> &tensors,
                                  int root) {
  for (const NodePtr &t : tensors)
    detail::broadcastInPlace(t, root);
}

//===----------------------------------------------------------------------===//
// Gradient averaging
//===----------------------------------------------------------------------===//

struct distributed::GradientSync::Impl {
  std::vector<NodePtr> params;
  size_t bucketBytes;
  uint64_t hook = 0;
  size_t messages = 0;
  /// The buffer of each bucket (parameters [first, last)), kept between
  /// steps: packed, reduced in place, unpacked.
  std::map<std::pair<size_t, size_t>, Array> buckets;
};

distributed::GradientSync::GradientSync(std::vector<NodePtr> params,
                                        size_t bucketBytes)
    : impl(std::make_unique<Impl>()) {
  requireInit("DistributedDataParallel");
  for (const NodePtr &p : params)
    if (!isFloat(harp::detail::dtypeOf(p)))
      throw Error("DistributedDataParallel: parameters must be float "
                  "tensors, got " +
                  dtypeName(harp::detail::dtypeOf(p)));
  impl->params = std::move(params);
  impl->bucketBytes = std::max<size_t>(bucketBytes, 1);
  std::set<const harp::detail::Node *> mine;
  for (const NodePtr &p : impl->params)
    mine.insert(p.get());
  impl->hook = harp::detail::addBackwardHook(
      [this, mine](const std::vector<NodePtr> &reached) {
        for (const NodePtr &leaf : reached)
          if (mine.count(leaf.get())) {
            sync();
            return;
          }
      });
}

distributed::GradientSync::~GradientSync() {
  harp::detail::removeBackwardHook(impl->hook);
}

size_t distributed::GradientSync::lastMessageCount() const {
  return impl->messages;
}

void distributed::GradientSync::sync() {
  const World &w = world();
  std::vector<NodePtr> &params = impl->params;
  impl->messages = 0;
  if (w.size == 1)
    return;
  // Which parameters have a gradient on some process, and whether all hold
  // the same parameters.
  std::vector<int64_t> mine = {SyncCode, int64_t(params.size())};
  uint64_t hash = 1469598103934665603ull;
  for (const NodePtr &p : params) {
    hash = (hash ^ uint64_t(harp::detail::dtypeOf(p))) * 1099511628211ull;
    for (int64_t dim : harp::detail::shapeOf(p))
      hash = (hash ^ uint64_t(dim)) * 1099511628211ull;
  }
  mine.push_back(int64_t(hash >> 1));
  std::vector<int64_t> layout = mine;
  for (const NodePtr &p : params)
    mine.push_back(harp::detail::gradientArray(p) ? 1 : 0);
  std::vector<int64_t> all = exchange(mine);
  size_t len = mine.size();
  std::vector<bool> used(params.size(), false);
  for (int r = 0; r < w.size; ++r) {
    const int64_t *theirs = all.data() + r * len;
    if (!std::equal(layout.begin(), layout.end(), theirs)) {
      std::string message =
          "DistributedDataParallel: the processes hold different parameters:";
      for (int q = 0; q < w.size; ++q)
        message += "\n  rank " + std::to_string(q) + ": " +
                   std::to_string(all[q * len + 1]) + " tensors (layout hash " +
                   std::to_string(all[q * len + 2]) + ")";
      throw Error(message);
    }
    for (size_t i = 0; i < params.size(); ++i)
      used[i] = used[i] || theirs[layout.size() + i];
  }
  // Buckets: consecutive parameters of one dtype, up to bucketBytes.
  size_t i = 0;
  while (i < params.size()) {
    if (!used[i]) {
      ++i;
      continue;
    }
    DType dtype = harp::detail::dtypeOf(params[i]);
    size_t width = elementSize(elementKindOf(dtype));
    size_t end = i;
    int64_t count = 0;
    while (end < params.size() &&
           (!used[end] || harp::detail::dtypeOf(params[end]) == dtype)) {
      int64_t n =
          used[end] ? elementCount(harp::detail::shapeOf(params[end])) : 0;
      if (end > i && count > 0 && (count + n) * width > impl->bucketBytes)
        break;
      if (count + n > INT_MAX)
        break;
      count += n;
      ++end;
    }
    Array &bucket = impl->buckets[{i, end}];
    TensorType type{elementKindOf(dtype), {count}};
    if (!(bucket.type() == type))
      bucket = Array::allocate(type);
    auto *bytes = static_cast<uint8_t *>(bucket.data());
    for (size_t j = i; j < end; ++j) {
      if (!used[j])
        continue;
      size_t size = elementCount(harp::detail::shapeOf(params[j])) * width;
      if (Array *g = harp::detail::gradientArray(params[j]))
        std::memcpy(bytes, g->data(), size);
      else
        std::memset(bytes, 0, size);
      bytes += size;
    }
    if (count > 0) {
      reduceBufferInPlace(bucket, mlir::mpi::MPI_ReductionOpEnum::MPI_SUM,
                          /*mean=*/true);
      ++impl->messages;
    }
    bytes = static_cast<uint8_t *>(bucket.data());
    for (size_t j = i; j < end; ++j) {
      if (!used[j])
        continue;
      size_t size = elementCount(harp::detail::shapeOf(params[j])) * width;
      harp::detail::setGradientValues(params[j], bytes);
      bytes += size;
    }
    i = end;
  }
}

template <typename T>
distributed::DistributedDataParallel<T>::DistributedDataParallel(
    std::shared_ptr<nn::Module<T>> module, size_t bucketBytes,
    bool broadcastBuffers)
    : inner(std::move(module)), broadcastBuffers(broadcastBuffers) {
  requireInit("DistributedDataParallel");
  if (!inner)
    throw Error("DistributedDataParallel: the module is null");
  std::vector<NodePtr> state, params;
  for (auto &[name, t] : inner->state_dict())
    state.push_back(t.graphNode());
  for (auto &t : inner->parameters())
    params.push_back(t.graphNode());
  broadcastLeaves(state, 0);
  sync = std::make_unique<GradientSync>(std::move(params), bucketBytes);
}

template <typename T>
Tensor<T> distributed::DistributedDataParallel<T>::forward(const Tensor<T> &x) {
  if (broadcastBuffers && world().size > 1) {
    std::vector<NodePtr> buffers;
    for (auto &[name, t] : inner->named_buffers())
      buffers.push_back(t.graphNode());
    broadcastLeaves(buffers, 0);
  }
  return inner->forward(x);
}

template class harp::distributed::DistributedDataParallel<float>;
template class harp::distributed::DistributedDataParallel<double>;
