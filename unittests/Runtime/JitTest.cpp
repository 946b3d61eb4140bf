//===- JitTest.cpp - harp::Jit calls into caller buffers ------------------===//

#include "harp/Runtime/Jit.h"
#include "harp/Runtime/Cuda.h"
#include "harp/Target/CPU.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

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
TEST(ArrayCopy, HoldsTheValuesInStorageOfItsOwn) {
  Array a = Array::allocate(TensorType{ElementKind::F64, {3, 5}});
  for (int i = 0; i < 15; ++i)
    a.as<double>()[i] = i * 0.5;
  Array b = Array::copyOf(a);
  EXPECT_EQ(b.type(), a.type());
  EXPECT_NE(b.data(), a.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  a.as<double>()[4] = -1;
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(b.as<double>()[i], i * 0.5);
  Array empty =
      Array::copyOf(Array::allocate(TensorType{ElementKind::I8, {0}}));
  EXPECT_NE(empty.data(), nullptr);
}

// Large array storage (64 KiB and more) comes from the runtime's block
// cache: 64-byte aligned, handed out again for the same size once the last
// array holding it is gone, never while one is, and zeroed by allocate()
// even when the block held other values.
TEST(ArrayStorage, LargeBlocksAreReusedAlignedAndZeroedByAllocate) {
  TensorType type{ElementKind::F32, {257, 300}}; // 308,400 bytes
  void *first;
  {
    Array a = Array::uninitialized(type);
    first = a.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    std::fill_n(a.as<float>(), a.numElements(), 7.0f);
    Array held = a; // a copy shares the storage
    a = Array();
    Array b = Array::uninitialized(type);
    EXPECT_NE(b.data(), first); // still held
  }
  Array again = Array::allocate(type);
  EXPECT_EQ(again.data(), first);
  EXPECT_TRUE(std::all_of(again.as<float>(),
                          again.as<float>() + again.numElements(),
                          [](float v) { return v == 0.0f; }));
  Array copy = Array::copyOf(again);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % 64, 0u);
  EXPECT_NE(copy.data(), again.data());
}

// The calls of generated code to malloc (lib/Runtime/JitSupport.cpp).
namespace harp::jit {
uint64_t generatedMallocs();
} // namespace harp::jit

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

// Generated code's malloc is harp's (the block cache, and the poison of
// HARP_DEBUG_POISON), which the JIT binds before the process's wherever the
// code is linked: an executable's own JIT, or the kernel store's libraries
// (a library's default order would find libc's first). A row softmax keeps
// its rows' partial sums in a scratch buffer allocated once per call.
TEST(JitTemporaries, GeneratedCodeAllocatesThroughTheRuntime) {
  const char *softmax = R"(
func.func @main(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %m = harp.map_reduce ins(%x : tensor<64x1024xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1], keepdim) : tensor<64x1xf32>
  %mb = harp.view %m <(d0, d1) -> (d0, 0)> : tensor<64x1xf32> -> tensor<64x1024xf32>
  %e = harp.map_reduce ins(%x, %mb : tensor<64x1024xf32>, tensor<64x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    harp.yield %ex : f32
  } : tensor<64x1024xf32>
  %s = harp.map_reduce ins(%e : tensor<64x1024xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1], keepdim) : tensor<64x1xf32>
  %sb = harp.view %s <(d0, d1) -> (d0, 0)> : tensor<64x1xf32> -> tensor<64x1024xf32>
  %y = harp.map_reduce ins(%e, %sb : tensor<64x1024xf32>, tensor<64x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %a, %b : f32
    harp.yield %q : f32
  } : tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}
)";
  Jit jit{JitOptions{3, "", /*diskCache=*/false}};
  auto exe = jit.compile(softmax);
  ASSERT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  Array x = Array::allocate(TensorType{ElementKind::F32, {64, 1024}});
  for (int i = 0; i < 64 * 1024; ++i)
    x.as<float>()[i] = float(i % 7) * 0.25f;
  uint64_t before = jit::generatedMallocs();
  for (int call = 0; call < 3; ++call) {
    auto y = (*exe)->call("main", {x});
    ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
    double row = 0;
    for (int j = 0; j < 1024; ++j)
      row += y->front().as<float>()[5 * 1024 + j];
    EXPECT_NEAR(row, 1.0, 1e-4);
  }
  EXPECT_GE(jit::generatedMallocs(), before + 3);
}

// The in-memory cache is keyed by the exact text: the same text is a hit
// (the same executable), any other text (one constant apart) a miss.
TEST(JitCache, HitsOnTheSameTextOnly) {
  auto scale = [](const char *factor) {
    return std::string(R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %k = arith.constant )") +
           factor + R"( : f32
    %m = arith.mulf %a, %k : f32
    harp.yield %m : f32
  } : tensor<4xf32>
  return %y : tensor<4xf32>
}
)";
  };
  Jit jit{JitOptions{3, "", /*diskCache=*/false}};
  auto two = jit.compile(scale("2.0"));
  ASSERT_TRUE(bool(two)) << llvm::toString(two.takeError());
  auto three = jit.compile(scale("3.0"));
  ASSERT_TRUE(bool(three)) << llvm::toString(three.takeError());
  EXPECT_EQ(jit.stats().memoryHits, 0u);
  EXPECT_NE(two->get(), three->get());
  auto again = jit.compile(scale("2.0"));
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(jit.stats().memoryHits, 1u);
  EXPECT_EQ(two->get(), again->get());

  Array x = Array::allocate(TensorType{ElementKind::F32, {4}});
  for (int i = 0; i < 4; ++i)
    x.as<float>()[i] = float(i + 1);
  auto y2 = (*again)->call("main", {x});
  ASSERT_TRUE(bool(y2)) << llvm::toString(y2.takeError());
  auto y3 = (*three)->call("main", {x});
  ASSERT_TRUE(bool(y3)) << llvm::toString(y3.takeError());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(y2->front().as<float>()[i], 2.0f * float(i + 1));
    EXPECT_EQ(y3->front().as<float>()[i], 3.0f * float(i + 1));
  }
}

// The runtime's strided copy, which memref.copy between non-contiguous
// buffers lowers to: rows contiguous in both are copied whole (a padded
// copy), anything else element by element (a transposed source).
extern "C" void harpMemrefCopy(int64_t elementSize, void *src, void *dst);

namespace {
/// A rank-R memref descriptor and the unranked memref pointing to it.
template <int R>
struct Descriptor {
  float *allocated, *aligned;
  int64_t offset, sizes[R], strides[R];
};
struct Unranked {
  int64_t rank;
  void *descriptor;
};
} // namespace

TEST(JitRuntime, StridedCopies) {
  // 2x3x5 into the interior of a 2x5x7 buffer (offset 1 row + 1 column).
  std::vector<float> src(30), dst(70, -1.0f);
  for (int i = 0; i < 30; ++i)
    src[i] = float(i);
  Descriptor<3> s{src.data(), src.data(), 0, {2, 3, 5}, {15, 5, 1}};
  Descriptor<3> d{dst.data(), dst.data(), 8, {2, 3, 5}, {35, 7, 1}};
  Unranked us{3, &s}, ud{3, &d};
  harpMemrefCopy(sizeof(float), &us, &ud);
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 7; ++x) {
        bool inside = y >= 1 && y <= 3 && x >= 1 && x <= 5;
        float expected = inside ? float(n * 15 + (y - 1) * 5 + (x - 1)) : -1;
        ASSERT_EQ(dst[n * 35 + y * 7 + x], expected)
            << n << "," << y << "," << x;
      }

  // A 4x6 view of a 6x4 buffer (transposed: inner stride 4) into a
  // contiguous 4x6.
  std::vector<float> t(24), out(24, -1.0f);
  for (int i = 0; i < 24; ++i)
    t[i] = float(i);
  Descriptor<2> ts{t.data(), t.data(), 0, {4, 6}, {1, 4}};
  Descriptor<2> to{out.data(), out.data(), 0, {4, 6}, {6, 1}};
  Unranked ut{2, &ts}, uo{2, &to};
  harpMemrefCopy(sizeof(float), &ut, &uo);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j)
      ASSERT_EQ(out[i * 6 + j], t[j * 4 + i]) << i << "," << j;

  // Rank 0: one element, at the offsets.
  float one[3] = {1, 2, 3}, into[3] = {0, 0, 0};
  Descriptor<1> z0{one, one, 2, {0}, {0}}, z1{into, into, 1, {0}, {0}};
  Unranked u0{0, &z0}, u1{0, &z1};
  harpMemrefCopy(sizeof(float), &u0, &u1);
  EXPECT_EQ(into[1], 3.0f);
  EXPECT_EQ(into[0] + into[2], 0.0f);

  // An empty copy writes nothing.
  Descriptor<2> e0{t.data(), t.data(), 0, {3, 0}, {4, 1}};
  Descriptor<2> e1{out.data(), out.data(), 0, {3, 0}, {6, 1}};
  std::vector<float> before = out;
  Unranked ue0{2, &e0}, ue1{2, &e1};
  harpMemrefCopy(sizeof(float), &ue0, &ue1);
  EXPECT_EQ(out, before);
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

// The ISA profiles resolve to their vector widths and register counts,
// whatever machine the test runs on; unknown names are errors that list
// the profiles.
TEST(JitTarget, ProfilesResolve) {
  struct Expected {
    const char *name;
    unsigned bits, registers;
    bool fma;
  } profiles[] = {{"x86-64-v2", 128, 16, false},
                  {"x86-64-v3", 256, 16, true},
                  {"x86-64-v4", 512, 32, true}};
  for (const Expected &p : profiles) {
    llvm::Expected<CpuTarget> target = resolveCpuTarget(p.name);
    ASSERT_TRUE(bool(target)) << llvm::toString(target.takeError());
    EXPECT_EQ(target->cpu, p.name);
    EXPECT_EQ(target->vectorBits, p.bits) << p.name;
    EXPECT_EQ(target->vectorRegisters, p.registers) << p.name;
    EXPECT_EQ(target->fma, p.fma) << p.name;
  }
  llvm::Expected<CpuTarget> v4 = resolveCpuTarget("x86-64-v4");
  ASSERT_TRUE(bool(v4));
  EXPECT_EQ(v4->runsHere(), bool(__builtin_cpu_supports("avx512f")))
      << v4->missingFeatures;
  llvm::Expected<CpuTarget> native = resolveCpuTarget("native");
  ASSERT_TRUE(bool(native));
  EXPECT_TRUE(native->runsHere()) << native->missingFeatures;
  EXPECT_EQ(native->vectorBits, __builtin_cpu_supports("avx512f") ? 512u
                                : __builtin_cpu_supports("avx")   ? 256u
                                                                  : 128u);
  llvm::Expected<CpuTarget> bogus = resolveCpuTarget("pentium-9000");
  ASSERT_FALSE(bool(bogus));
  EXPECT_NE(llvm::toString(bogus.takeError()).find("x86-64-v3"),
            std::string::npos);
}

// Caches are this machine's whatever the profile, and the C library's
// (cpuid) when sysfs gives none; the key names them.
TEST(JitTarget, CachesOfThisMachine) {
  llvm::Expected<CpuTarget> v2 = resolveCpuTarget("x86-64-v2");
  llvm::Expected<CpuTarget> native = resolveCpuTarget("native");
  ASSERT_TRUE(bool(v2) && bool(native));
  EXPECT_GE(native->l1Bytes, 16u * 1024);
  EXPECT_GT(native->l2Bytes, native->l1Bytes);
  EXPECT_EQ(v2->l1Bytes, native->l1Bytes);
  EXPECT_EQ(v2->l2Bytes, native->l2Bytes);
  EXPECT_NE(native->cacheSource, "");
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (native->cacheSource == "sysconf") {
    EXPECT_EQ(native->l1Bytes, uint64_t(l1));
  }
  EXPECT_NE(native->key().find(std::to_string(native->l2Bytes)),
            std::string::npos);
}

// The target is part of the cache key, and code for a CPU this machine
// cannot execute compiles but does not load.
TEST(JitTarget, KeyedAndCheckedBeforeLoading) {
  JitOptions v2{3, "", /*diskCache=*/false};
  v2.cpu = "x86-64-v2";
  JitOptions v4 = v2;
  v4.cpu = "x86-64-v4";
  Jit jitV2(v2), jitV4(v4);
  EXPECT_EQ(jitV2.vectorBits(), 128u);
  EXPECT_EQ(jitV4.vectorBits(), 512u);
  auto object2 = jitV2.compileObject(kAddOne);
  auto object4 = jitV4.compileObject(kAddOne);
  ASSERT_TRUE(bool(object2)) << llvm::toString(object2.takeError());
  ASSERT_TRUE(bool(object4)) << llvm::toString(object4.takeError());
  EXPECT_NE(*object2, *object4); // 128- and 512-bit code
  auto exe = jitV4.compile(kAddOne);
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  } else {
    ASSERT_FALSE(bool(exe));
    EXPECT_NE(llvm::toString(exe.takeError()).find("lacks avx512"),
              std::string::npos);
  }
  JitOptions bad = v2;
  bad.cpu = "pentium-9000";
  Jit jitBad(bad);
  auto failed = jitBad.compile(kAddOne);
  ASSERT_FALSE(bool(failed));
  EXPECT_NE(llvm::toString(failed.takeError()).find("unknown CPU"),
            std::string::npos);
}

// f32 and f64 to bf16 on a CPU without AVX512-BF16 call __truncsfbf2 and
// __truncdfbf2, which the JIT provides: nearest, ties to even, rounded
// once from f64.
// A Jit builds its lowering pipeline once and runs it for every module:
// no pass may carry state from one module into the next, so a module
// compiles to the same object after others as in a fresh Jit.
TEST(JitLowering, ReusedPipelineCompilesEachModuleAfresh) {
  const char *rowSum = R"(
func.func @row_sum(%x: tensor<19x37xf32>) -> tensor<19xf32> {
  %s = harp.map_reduce ins(%x : tensor<19x37xf32>) {
  ^bb0(%a: f32):
    %sq = arith.mulf %a, %a : f32
    harp.yield %sq : f32
  } reduce(sum, dims = [1]) : tensor<19xf32>
  return %s : tensor<19xf32>
}
)";
  JitOptions options{3, "", /*diskCache=*/false};
  options.cpu = "x86-64-v3";
  Jit reused(options);
  auto first = reused.compileObject(kAddOne);
  auto other = reused.compileObject(rowSum);
  auto again = reused.compileObject(kAddOne);
  Jit fresh(options);
  auto alone = fresh.compileObject(rowSum);
  for (auto *object : {&first, &other, &again, &alone})
    ASSERT_TRUE(bool(*object)) << llvm::toString(object->takeError());
  EXPECT_EQ(*first, *again);
  EXPECT_EQ(*other, *alone);
  EXPECT_NE(*first, *other);
}

TEST(JitFloat, BF16ConversionsWithoutAVX512BF16) {
  const char *convert = R"(
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf64>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = harp.map_reduce ins(%x : tensor<8xf32>) {
  ^bb0(%v: f32):
    %t = arith.truncf %v : f32 to bf16
    %e = arith.extf %t : bf16 to f32
    harp.yield %e : f32
  } : tensor<8xf32>
  %b = harp.map_reduce ins(%y : tensor<8xf64>) {
  ^bb0(%v: f64):
    %t = arith.truncf %v : f64 to bf16
    %e = arith.extf %t : bf16 to f32
    harp.yield %e : f32
  } : tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}
)";
  if (!__builtin_cpu_supports("avx2"))
    GTEST_SKIP() << "x86-64-v3 code does not run here";
  JitOptions options{3, "", /*diskCache=*/false};
  options.cpu = "x86-64-v3";
  Jit jit(options);
  auto exe = jit.compile(convert);
  ASSERT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  const float inf = std::numeric_limits<float>::infinity();
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: even is 1;
  // 1 + 3 * 2^-8 rounds up to the even 1 + 2^-6; FLT_MAX overflows.
  std::vector<float> x = {
      1.0f, 1.00390625f, 1.01171875f, -2.5f, std::numeric_limits<float>::max(),
      -inf, 1e-40f,      0.0f};
  // 1e-40 is a subnormal: the nearest bf16 is the smallest one, 2^-133
  // (an instruction that flushes subnormals, as AVX512-BF16's does, gives
  // 0: this checks that x86-64-v3 code calls harp's conversion).
  std::vector<float> xExpected = {
      1.0f, 1.0f, 1.015625f, -2.5f, inf, -inf, std::ldexp(1.0f, -133), 0.0f};
  // 1 + 2^-8 + 2^-30 is above halfway: 1 + 2^-7 (rounding through f32's
  // nearest, 1 + 2^-8, would tie to 1).
  std::vector<double> y = {1.0 + 0x1p-8 + 0x1p-30,
                           1.0 + 0x1p-8,
                           1e300,
                           -1e300,
                           0.1,
                           -0.0,
                           65504.0,
                           3.140625};
  std::vector<float> yExpected = {1.0078125f,     1.0f,  inf,      -inf,
                                  0.10009765625f, -0.0f, 65536.0f, 3.140625f};
  Array xa = Array::allocate(TensorType{ElementKind::F32, {8}});
  Array ya = Array::allocate(TensorType{ElementKind::F64, {8}});
  std::copy(x.begin(), x.end(), xa.as<float>());
  std::copy(y.begin(), y.end(), ya.as<double>());
  auto out = (*exe)->call("main", {xa, ya});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ((*out)[0].as<float>()[i], xExpected[i]) << "f32 " << x[i];
    EXPECT_EQ((*out)[1].as<float>()[i], yExpected[i]) << "f64 " << y[i];
  }
  // NaN stays NaN.
  xa.as<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  ya.as<double>()[0] = std::numeric_limits<double>::quiet_NaN();
  out = (*exe)->call("main", {xa, ya});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  EXPECT_TRUE(std::isnan((*out)[0].as<float>()[0]));
  EXPECT_TRUE(std::isnan((*out)[1].as<float>()[0]));
}
