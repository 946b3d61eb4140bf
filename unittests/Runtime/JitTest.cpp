//===- JitTest.cpp - harp::Jit calls into caller buffers ------------------===//

#include "harp/Runtime/Jit.h"
#include "harp/Runtime/Cuda.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

using namespace harp;

namespace {

const char *kAddOne = R"(
func.func @main(%x: tensor<40xf32>) -> tensor<40xf32> {
  %y = harp.map_reduce ins(%x : tensor<40xf32>) {
  ^bb0(%a: f32):
    %one = arith.constant 1.0 : f32
    %s = arith.addf %a, %one : f32
    harp.yield %s : f32
  } : tensor<40xf32>
  return %y : tensor<40xf32>
}
)";

std::string errorOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}

class JitCallInto : public ::testing::Test {
protected:
  void SetUp() override {
    auto compiled = jit.compile(kAddOne);
    ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    exe = *compiled;
    x = Array::allocate(TensorType{ElementKind::F32, {40}});
    for (int i = 0; i < 40; ++i)
      x.as<float>()[i] = float(i);
  }

  Jit jit{JitOptions{3, "", /*diskCache=*/false}};
  std::shared_ptr<Executable> exe;
  Array x;
};

TEST_F(JitCallInto, WritesTheCallersBuffer) {
  Array y = Array::allocate(TensorType{ElementKind::F32, {40}});
  float *before = y.as<float>();
  for (int round = 0; round < 2; ++round) {
    x.as<float>()[0] = float(round * 10);
    ASSERT_EQ(errorOf(exe->callInto("main", {x}, {y})), "");
    EXPECT_EQ(y.as<float>(), before); // the same buffer, no new one
    EXPECT_EQ(y.as<float>()[0], float(round * 10 + 1));
    // 40 = 2 full 16-lane vectors and a remainder of 8.
    for (int i = 1; i < 40; ++i)
      EXPECT_EQ(y.as<float>()[i], float(i + 1)) << i;
  }
  // call() allocates and agrees.
  auto fresh = exe->call("main", {x});
  ASSERT_TRUE(bool(fresh)) << llvm::toString(fresh.takeError());
  EXPECT_NE(fresh->front().as<float>(), y.as<float>());
  EXPECT_EQ(fresh->front().as<float>()[39], 40.0f);
}

TEST_F(JitCallInto, RejectsBadResultBuffers) {
  Array wrongShape = Array::allocate(TensorType{ElementKind::F32, {41}});
  EXPECT_EQ(errorOf(exe->callInto("main", {x}, {wrongShape})),
            "result #0 of @main has type tensor<40xf32> but the buffer given "
            "is tensor<41xf32>");
  EXPECT_EQ(errorOf(exe->callInto("main", {x}, {})),
            "@main has 1 results but 0 buffers were given");
  EXPECT_EQ(errorOf(exe->callInto("main", {x}, {x})),
            "result buffer #0 of @main overlaps an input");
  // A buffer that starts inside the input overlaps it too.
  Array storage = Array::allocate(TensorType{ElementKind::F32, {80}});
  Array input = Array::borrow(x.type(), storage.as<float>());
  Array shifted = Array::borrow(x.type(), storage.as<float>() + 20);
  EXPECT_EQ(errorOf(exe->callInto("main", {input}, {shifted})),
            "result buffer #0 of @main overlaps an input");
  // Adjacent is fine.
  Array next = Array::borrow(x.type(), storage.as<float>() + 40);
  EXPECT_EQ(errorOf(exe->callInto("main", {input}, {next})), "");
  EXPECT_EQ(errorOf(exe->callInto("nope", {x}, {next})),
            "no public function @nope in the module");
  Array empty = Array::borrow(TensorType{ElementKind::F32, {40}}, nullptr);
  EXPECT_EQ(errorOf(exe->callInto("main", {x}, {empty})),
            "result buffer #0 of @main has no data");
}

} // namespace

// callDevice is for CUDA executables: a CPU one says so.
TEST_F(JitCallInto, CallDeviceNeedsACudaExecutable) {
  void *buffer = nullptr;
  EXPECT_EQ(errorOf(exe->callDevice("main", {buffer}, {buffer})),
            "callDevice(@main): not a cuda executable (compile with "
            "JitOptions::device = Device::CUDA)");
}

// Kernels' large temporaries (here the packed right operand of a matmul,
// 64 KiB and more) are reused from call to call: every call must still see
// its own inputs, whatever the reused block held.
TEST(JitTemporaries, ReusedBlocksGiveFreshResults) {
  const char *matmul = R"(
func.func @main(%a: tensor<8x64xf32>, %b: tensor<64x1024xf32>) -> tensor<8x1024xf32> {
  %ab = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<8x64xf32> -> tensor<8x1024x64xf32>
  %bb = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<64x1024xf32> -> tensor<8x1024x64xf32>
  %c = harp.map_reduce ins(%ab, %bb : tensor<8x1024x64xf32>, tensor<8x1024x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<8x1024xf32>
  return %c : tensor<8x1024xf32>
}
)";
  Jit jit{JitOptions{3, "", /*diskCache=*/false}};
  auto exe = jit.compile(matmul);
  ASSERT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  Array a = Array::allocate(TensorType{ElementKind::F32, {8, 64}});
  Array b = Array::allocate(TensorType{ElementKind::F32, {64, 1024}});
  for (int call = 0; call < 3; ++call) {
    // a = call on the diagonal-ish pattern, b[k][j] = (k + j + call) % 5.
    for (int i = 0; i < 8 * 64; ++i)
      a.as<float>()[i] = float((i + call) % 3);
    for (int i = 0; i < 64 * 1024; ++i)
      b.as<float>()[i] = float((i / 1024 + i % 1024 + call) % 5);
    auto c = (*exe)->call("main", {a, b});
    ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 1024; j += 37) {
        float expected = 0;
        for (int k = 0; k < 64; ++k)
          expected += a.as<float>()[i * 64 + k] * b.as<float>()[k * 1024 + j];
        ASSERT_EQ(c->front().as<float>()[i * 1024 + j], expected)
            << "call " << call << " at " << i << ", " << j;
      }
  }
}

// callDevice on a CUDA executable checks the buffer counts against the
// signature. Needs a driver: a GPU, or the stand-in of
// test/Runtime/fake-cuda.test, which runs this test.
TEST(JitCuda, CallDeviceChecksBufferCounts) {
  if (llvm::Error err = cuda::initialize()) {
    llvm::consumeError(std::move(err));
    GTEST_SKIP() << "no CUDA driver";
  }
  JitOptions options{3, "", /*diskCache=*/false};
  options.device = Device::CUDA;
  Jit jit{options};
  auto exe = jit.compile(kAddOne);
  ASSERT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  auto in = cuda::allocate(40 * sizeof(float));
  ASSERT_TRUE(bool(in)) << llvm::toString(in.takeError());
  EXPECT_EQ(errorOf((*exe)->callDevice("main", {*in}, {})),
            "@main takes 1 inputs and 1 results but 1 and 0 buffers were "
            "given");
  EXPECT_EQ(errorOf((*exe)->callDevice("nope", {*in}, {*in})),
            "no public function @nope in the module");
  cuda::release(*in);
}
