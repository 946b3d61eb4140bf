//===- ExportTest.cpp - Tensor API graphs as libraries ahead of time ------===//
//
// harp::exportLibrary from the Tensor API writes an object file and a header
// whose entry point takes the inputs, with the weights as constants; misuse
// throws naming the problem. The library's calls are tested from C
// (test/Runtime/library.test) and Python (test/python/test_export.py).
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Export.h"
#include "harp/API/Tensor.h"

#include "TestUtil.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace harp;
using harp::test::errorOf;

namespace {
using F2 = Tensor<float, Dim<2>>;

std::string readFile(const llvm::Twine &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}
} // namespace

TEST(Export, ObjectAndHeaderOfAGraph) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("harp-export-test", dir));
  F2 x = F2::from_data({1, 2, 3, 4, 5, 6}, {2, 3});
  F2 w = F2::from_data({1, 0, 0, 1, 1, 1}, {3, 2}); // a constant
  F2 y = x.matmul(w).relu();
  ExportOptions options;
  options.headerPath = (dir + "/tiny.h").str();
  exportLibrary(graphNodes(y), graphNodes(x), (dir + "/tiny.o").str(),
                "forward", options);
  uint64_t size = 0;
  ASSERT_FALSE(llvm::sys::fs::file_size(dir + "/tiny.o", size));
  EXPECT_GT(size, 0u);
  std::string header = readFile(dir + "/tiny.h");
  EXPECT_NE(header.find("/* @forward(input0: f32[2, 3]) -> (result0: "
                        "f32[2, 2]) */"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("int tiny_forward(const harp_f32_tensor *input0, "
                        "harp_f32_tensor *result0);"),
            std::string::npos);
  // The graph still runs in-process afterwards.
  test::expectNear(y.data(), {4, 5, 10, 11});
  llvm::sys::fs::remove_directories(dir);
}

TEST(Export, MisuseThrows) {
  F2 x = F2::from_data({1, 2, 3, 4}, {2, 2});
  F2 y = x * 2.0f;
  ExportOptions options;
  EXPECT_NE(errorOf([&] {
              exportLibrary(graphNodes(y + 1.0f), graphNodes(y), "/tmp/x.o",
                            "f", options);
            }).find("export: input #0 (f32 [2, 2]) is computed, not a leaf"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              exportLibrary(graphNodes(y), graphNodes(x, x), "/tmp/x.o", "f",
                            options);
            }).find("input #1 is the same tensor as an earlier input"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              exportLibrary(graphNodes(y), graphNodes(x), "/tmp/x.txt", "f",
                            options);
            }).find("cannot tell what to write from the name /tmp/x.txt"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              exportLibrary({}, graphNodes(x), "/tmp/x.o", "f", options);
            }).find("export: the function returns no tensor"),
            std::string::npos);
}
