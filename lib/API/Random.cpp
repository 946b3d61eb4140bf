//===- Random.cpp - seed streams for harp's random ops --------------------===//

#include "harp/API/Random.h"

#include "harp/API/Modules.h"

#include <chrono>
#include <random>

using namespace harp;

namespace {
/// A 64-bit mixing function (SplitMix64's finaliser): consecutive inputs
/// give uncorrelated outputs.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
} // namespace

Generator &Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex);
  initial = seed;
  offset = 0;
  return *this;
}

uint64_t Generator::seed() {
  std::random_device device;
  uint64_t fresh =
      (static_cast<uint64_t>(device()) << 32) ^ device() ^
      static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count());
  manual_seed(fresh);
  return fresh;
}

uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lock(mutex);
  return initial;
}

uint64_t Generator::next_seed() {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t draw = offset++;
  return mix(initial + 0x9E3779B97F4A7C15ull * (draw + 1)) &
         0x7FFFFFFFFFFFFFFFull;
}

Generator::State Generator::get_state() const {
  std::lock_guard<std::mutex> lock(mutex);
  return {initial, offset};
}

void Generator::set_state(State state) {
  std::lock_guard<std::mutex> lock(mutex);
  initial = state.seed;
  offset = state.offset;
}

Generator &harp::default_generator() {
  static Generator generator;
  return generator;
}

void harp::manual_seed(uint64_t seed) { nn::manual_seed(seed); }
