//===- Distributed.h - data-parallel training over MPI ----------*- C++ -*-===//
//
// harp::distributed runs a program in several processes started by
// `mpirun` (Open MPI or MPICH), on one machine or several. Collectives are
// harp IR: functions of the `mpi` dialect's ops, which harp-to-llvm lowers
// to calls into the MPI library; the JIT loads the library (libmpi) at the
// first init() under mpirun. A program started without mpirun is one
// process of a world of one: every collective returns its input, and the
// library is never loaded.
//
//   harp::distributed::init();
//   auto model = std::make_shared<nn::Linear<double>>(4, 2);
//   harp::distributed::DistributedDataParallel<double> ddp(model);
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
//   auto loss = ...(ddp(x_shard));   // this rank's part of the batch
//   loss.backward();                 // gradients averaged over the ranks
//   opt.step();
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_DISTRIBUTED_H
#define HARP_API_DISTRIBUTED_H

#include "harp/API/Modules.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace harp {
namespace distributed {

/// Joins the processes `mpirun` started (MPI_Init when nobody has yet, and
/// MPI_Finalize at exit); without mpirun, a world of one. Idempotent. An
/// error names the MPI library that could not be loaded and how to get it.
void init();
/// Whether init() ran.
bool isInitialized();
/// Whether this process was started by mpirun (or srun, hydra): a launcher
/// environment variable is set.
bool launchedByMPI();
/// This process's rank and the number of processes (init() first).
int rank();
int worldSize();
/// "OpenMPI", "MPICH" or "none" (a world of one).
std::string implementation();
/// Waits until every process has called barrier().
void barrier();

namespace detail {
using harp::detail::NodePtr;
NodePtr allReduce(const NodePtr &t, ReduceOp op);
NodePtr broadcast(const NodePtr &t, int root);
void allReduceInPlace(const NodePtr &leaf, ReduceOp op);
void broadcastInPlace(const NodePtr &leaf, int root);
} // namespace detail

/// The element-wise reduction of `t` over every process (each must pass
/// the same dtype and shape, or all of them throw naming what each passed),
/// as a new leaf. Mean needs a float tensor. Bool tensors: Sum and Max are
/// logical or, Prod and Min logical and.
template <typename T, typename D>
Tensor<T, D> allReduce(const Tensor<T, D> &t, ReduceOp op = ReduceOp::Sum) {
  return Tensor<T, D>(detail::allReduce(t.graphNode(), op));
}
/// `t` as process `root` holds it, on every process (a new leaf).
template <typename T, typename D>
Tensor<T, D> broadcast(const Tensor<T, D> &t, int root = 0) {
  return Tensor<T, D>(detail::broadcast(t.graphNode(), root));
}

/// Averages the gradients of `params` (leaves) over the processes at the
/// end of every backward() that reaches one of them: gradients of one
/// dtype are packed into buckets of at most `bucketBytes` and each bucket
/// is all-reduced in one message. A parameter no process computed a
/// gradient for keeps none. Every process must hold the same parameters.
class GradientSync {
public:
  explicit GradientSync(std::vector<harp::detail::NodePtr> params,
                        size_t bucketBytes = 25u << 20);
  ~GradientSync();
  GradientSync(const GradientSync &) = delete;
  GradientSync &operator=(const GradientSync &) = delete;
  /// Averages the gradients now (backward() calls it).
  void sync();
  /// How many all-reduce messages the last sync() sent.
  size_t lastMessageCount() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// allReduce() into the leaf `t` itself (torch.distributed's in-place
/// form): MPI reduces its array in place (MPI_IN_PLACE), with no copy, and
/// what was computed from its old values is recomputed. A computed tensor
/// is an error.
template <typename T, typename D>
void allReduceInPlace(const Tensor<T, D> &t, ReduceOp op = ReduceOp::Sum) {
  detail::allReduceInPlace(t.graphNode(), op);
}
/// broadcast() into the leaf `t` itself.
template <typename T, typename D>
void broadcastInPlace(const Tensor<T, D> &t, int root = 0) {
  detail::broadcastInPlace(t.graphNode(), root);
}

/// Sets every leaf of `tensors` to its value on process `root`.
void broadcastLeaves(const std::vector<harp::detail::NodePtr> &tensors,
                     int root = 0);

/// torch.nn.parallel.DistributedDataParallel: gives the module rank 0's
/// parameters and buffers (the buffers again before each forward, with
/// `broadcastBuffers`), then averages gradients after every backward()
/// (GradientSync), so each process trains the same model on its part of
/// the batch.
template <typename T>
class DistributedDataParallel {
public:
  explicit DistributedDataParallel(std::shared_ptr<nn::Module<T>> module,
                                   size_t bucketBytes = 25u << 20,
                                   bool broadcastBuffers = true);
  Tensor<T> forward(const Tensor<T> &x);
  Tensor<T> operator()(const Tensor<T> &x) { return forward(x); }
  nn::Module<T> &module() { return *inner; }
  GradientSync &gradientSync() { return *sync; }

private:
  std::shared_ptr<nn::Module<T>> inner;
  std::unique_ptr<GradientSync> sync;
  bool broadcastBuffers;
};

} // namespace distributed
} // namespace harp

#endif // HARP_API_DISTRIBUTED_H
