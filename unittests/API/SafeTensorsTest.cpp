//===- SafeTensorsTest.cpp - safetensors files from C++ -------------------===//
//
// save_safetensors / load_safetensors<T> on a module's state dict, the
// bytes written against the format's layout, and the typed loader's error
// for a tensor of another dtype. The damaged-file and every-dtype cases
// against independently written files are Python's
// (test/python/test_safetensors.py), over the same reader.
//
//===----------------------------------------------------------------------===//

#include "harp/API/SafeTensors.h"
#include "harp/API/Modules.h"

#include "TestUtil.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

using namespace harp;

namespace {

std::string temporaryPath(const char *name) {
  llvm::SmallString<128> path;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, path);
  llvm::sys::path::append(path, std::string("harp-") +
                                    std::to_string(::getpid()) + "-" + name);
  return std::string(path);
}

std::string contentsOf(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SafeTensors, ModuleStateDictRoundTrip) {
  nn::Linear<float> model(5, 3), other(5, 3);
  std::string path = temporaryPath("linear.safetensors");
  save_safetensors(path, model.state_dict(), {{"format", "pt"}});
  SafetensorsMetadata metadata;
  auto loaded = load_safetensors<float>(path, &metadata);
  EXPECT_EQ(metadata, (SafetensorsMetadata{{"format", "pt"}}));
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0].first, "weight");
  EXPECT_EQ(loaded[1].first, "bias");
  other.load_state_dict(loaded);
  auto expected = model.state_dict(), got = other.state_dict();
  for (size_t i = 0; i < expected.size(); ++i) {
    std::vector<float> a = expected[i].second.data(), b = got[i].second.data();
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << expected[i].first;
  }

  // The layout: 8-byte header length, the JSON header padded to 8 bytes,
  // then weight's 15 floats and bias's 3, in that order.
  std::string bytes = contentsOf(path);
  uint64_t headerBytes;
  std::memcpy(&headerBytes, bytes.data(), 8);
  EXPECT_EQ((8 + headerBytes) % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + headerBytes + 18 * sizeof(float));
  std::string header = bytes.substr(8, headerBytes);
  EXPECT_NE(header.find("\"weight\":{\"dtype\":\"F32\",\"shape\":[3,5],"
                        "\"data_offsets\":[0,60]}"),
            std::string::npos)
      << header;
  std::vector<float> weight = model.state_dict()[0].second.data();
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + headerBytes, weight.data(), 60), 0);
  llvm::sys::fs::remove(path);
}

TEST(SafeTensors, TypedLoaderNamesATensorOfAnotherDtype) {
  std::string path = temporaryPath("mixed.safetensors");
  NamedNodes tensors = {
      {"x", Tensor<float>::from_data({1, 2}, {2}).graphNode()},
      {"n", Tensor<int64_t>::from_data({3}, {1}).graphNode()}};
  detail::saveSafetensors(path, tensors);
  try {
    load_safetensors<float>(path);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("tensor 'n' holds i64, not f32"),
              std::string::npos)
        << error.what();
  }
  auto ints = detail::loadSafetensors(path);
  ASSERT_EQ(ints.size(), 2u);
  EXPECT_EQ(Tensor<int64_t>(ints[1].second).data(), std::vector<int64_t>{3});
  llvm::sys::fs::remove(path);
}

TEST(SafeTensors, DamagedBytesThrowNamingTheSource) {
  std::string bytes = detail::serializeSafetensors(
      {{"x", Tensor<double>::from_data({1, 2, 3}, {3}).graphNode()}});
  for (size_t cut : {size_t(0), size_t(7), size_t(12), bytes.size() - 1}) {
    try {
      detail::parseSafetensors(std::string_view(bytes).substr(0, cut),
                               "cut.safetensors");
      FAIL() << "a file cut at " << cut << " loaded";
    } catch (const Error &error) {
      EXPECT_EQ(
          std::string(error.what()).rfind("safetensors: cut.safetensors: ", 0),
          0u)
          << error.what();
    }
  }
  EXPECT_EQ(detail::parseSafetensors(bytes, "whole").size(), 1u);
}

} // namespace
