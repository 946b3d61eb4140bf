//===- DistributedBindings.cpp - harp::distributed for harp.distributed ---===//
//
// _harp.distributed: the C++ collectives and gradient averaging.
// harp/distributed.py gives them torch.distributed's names and argument
// forms.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "harp/API/Distributed.h"

namespace harp::python {

namespace {

ReduceOp reduceOpOf(const std::string &name) {
  if (name == "sum")
    return ReduceOp::Sum;
  if (name == "mean" || name == "avg")
    return ReduceOp::Mean;
  if (name == "max")
    return ReduceOp::Max;
  if (name == "min")
    return ReduceOp::Min;
  if (name == "prod" || name == "product")
    return ReduceOp::Prod;
  throw Error("all_reduce: op must be 'sum', 'mean', 'max', 'min' or 'prod', "
              "got '" +
              name + "'");
}

} // namespace

void bindDistributed(py::module_ &parent) {
  py::module_ m = parent.def_submodule(
      "distributed", "harp::distributed: collectives over MPI (native)");
  namespace dist = harp::distributed;
  m.def("init", &dist::init);
  m.def("is_initialized", &dist::isInitialized);
  m.def("launched_by_mpi", &dist::launchedByMPI);
  m.def("rank", &dist::rank);
  m.def("world_size", &dist::worldSize);
  m.def("implementation", &dist::implementation);
  m.def("barrier", &dist::barrier, py::call_guard<py::gil_scoped_release>());
  m.def(
      "all_reduce",
      [](const NodePtr &t, const std::string &op) {
        // torch.distributed's in-place contract where harp can keep it: a
        // leaf is reduced in place (MPI_IN_PLACE, no copy); a computed
        // tensor's result is a new leaf. (The GIL stays held: a new leaf
        // records the Python caller.)
        ReduceOp kind = reduceOpOf(op);
        if (!detail::isLeaf(t))
          return dist::detail::allReduce(t, kind);
        dist::detail::allReduceInPlace(t, kind);
        return t;
      },
      py::arg("tensor"), py::arg("op") = "sum");
  m.def(
      "broadcast",
      [](const NodePtr &t, int root) {
        if (!detail::isLeaf(t))
          return dist::detail::broadcast(t, root);
        dist::detail::broadcastInPlace(t, root);
        return t;
      },
      py::arg("tensor"), py::arg("src") = 0);
  m.def("broadcast_leaves", &dist::broadcastLeaves, py::arg("tensors"),
        py::arg("src") = 0);
  py::class_<dist::GradientSync>(m, "GradientSync")
      .def(py::init<std::vector<NodePtr>, size_t>(), py::arg("params"),
           py::arg("bucket_bytes") = size_t(25) << 20)
      .def("sync", &dist::GradientSync::sync,
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("last_message_count",
                             &dist::GradientSync::lastMessageCount);
}

} // namespace harp::python
