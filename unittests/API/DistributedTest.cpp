//===- DistributedTest.cpp - harp::distributed from C++ -------------------===//
//
// Written for any world size: run alone (a world of one, as in the gtest
// suite) and under `mpirun -np 2` (test_distributed.py runs these tests
// that way). Each process's values depend on its rank, so each can compute
// what every process should get.
//
//===----------------------------------------------------------------------===//

#include "harp/API/Distributed.h"
#include "harp/API/Optim.h"

#include "TestUtil.h"

#include <cmath>

using namespace harp;
using namespace harp::test;

namespace {

struct Distributed : ::testing::Test {
  void SetUp() override { distributed::init(); }
  int rank() { return distributed::rank(); }
  int world() { return distributed::worldSize(); }
};

TEST_F(Distributed, AllReduceAndBroadcast) {
  for (int64_t n : {1, 7, 33}) {
    std::vector<float> mine(n);
    for (int64_t i = 0; i < n; ++i)
      mine[i] = float(i + 1) * float(rank() + 1);
    auto t = Tensor<float>::from_data(mine, {n});
    std::vector<float> sum = distributed::allReduce(t).data();
    std::vector<float> mean =
        distributed::allReduce(t * 2.0f, ReduceOp::Mean).data();
    std::vector<float> max = distributed::allReduce(t, ReduceOp::Max).data();
    std::vector<float> root = distributed::broadcast(t, world() - 1).data();
    float ranks = float(world() * (world() + 1)) / 2;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(sum[i], float(i + 1) * ranks);
      EXPECT_FLOAT_EQ(mean[i], 2 * float(i + 1) * ranks / float(world()));
      EXPECT_EQ(max[i], float(i + 1) * float(world()));
      EXPECT_EQ(root[i], float(i + 1) * float(world()));
    }
  }
  // In place: the leaf itself, and what was computed from it, see the sum.
  auto leaf = Tensor<double>::from_data({1.0 + rank(), 2.0}, {2});
  Tensor<double> twice = leaf * 2.0;
  EXPECT_EQ(twice.data(), (std::vector<double>{2.0 + 2 * rank(), 4.0}));
  distributed::allReduceInPlace(leaf);
  double ranks = double(world() * (world() + 1)) / 2;
  EXPECT_EQ(leaf.data(), (std::vector<double>{ranks, 2.0 * world()}));
  EXPECT_EQ(twice.data(), (std::vector<double>{2 * ranks, 4.0 * world()}));
  distributed::broadcastInPlace(leaf, 0);
  EXPECT_EQ(leaf.data(), (std::vector<double>{ranks, 2.0 * world()}));
  EXPECT_EQ(errorOf([&] { distributed::allReduceInPlace(twice); }),
            "all_reduce: in place needs a leaf (a tensor holding data), got "
            "a computed tensor; use the returning form");

  auto ints = Tensor<int32_t>::from_data({1, 2}, {2});
  EXPECT_EQ(errorOf([&] { distributed::allReduce(ints, ReduceOp::Mean); }),
            "all_reduce: mean needs a float tensor, got i32 [2]");
  EXPECT_EQ(errorOf([&] { distributed::broadcast(ints, world()); }),
            "broadcast: root " + std::to_string(world()) +
                " is not a rank of a world of " + std::to_string(world()));
  distributed::barrier();
}

/// The gradient a rank computes is (rank + 1) x; DDP gives every rank the
/// mean, and rank 0's initial weights.
TEST_F(Distributed, DataParallelAveragesGradients) {
  nn::manual_seed(10 + rank());
  auto model = std::make_shared<nn::Linear<double>>(3, 2);
  distributed::DistributedDataParallel<double> ddp(model);
  nn::manual_seed(10);
  nn::Linear<double> rankZero(3, 2);
  EXPECT_EQ(model->weight.data(), rankZero.weight.data());
  EXPECT_EQ(model->bias->data(), rankZero.bias->data());

  auto x = Tensor<double>::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  (ddp(x).sum() * double(rank() + 1)).backward();
  (rankZero(x).sum() * (double(world() + 1) / 2)).backward();
  expectNear(model->weight.grad().data(), rankZero.weight.grad().data(), 1e-12);
  expectNear(model->bias->grad().data(), rankZero.bias->grad().data(), 1e-12);
  EXPECT_EQ(ddp.gradientSync().lastMessageCount(), world() > 1 ? 1u : 0u);
}

/// Buffers follow rank 0 before every forward (running statistics that
/// drifted apart are made equal again).
TEST_F(Distributed, DataParallelBroadcastsBuffers) {
  auto norm = std::make_shared<nn::BatchNorm1d<double>>(3);
  distributed::DistributedDataParallel<double> ddp(norm);
  norm->running_mean.set_data({1.0 + rank(), 2.0, 3.0});
  norm->eval();
  auto x = Tensor<double>::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<double> y = ddp(x).data();
  EXPECT_EQ(norm->running_mean.data(), (std::vector<double>{1, 2, 3}));
  // eval: (x - mean) / sqrt(var + eps) with rank 0's mean and var 1.
  EXPECT_NEAR(y[0], 0.0, 1e-12);
  EXPECT_NEAR(y[3], 3.0 / std::sqrt(1 + 1e-5), 1e-12);
}

} // namespace
