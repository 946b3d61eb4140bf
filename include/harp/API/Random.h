//===- Random.h - seed streams for harp's random ops ------------*- C++ -*-===//
//
// harp's random numbers come from a counter-based generator: element i of a
// draw depends only on the draw's seed and i. A Generator hands out one fresh
// seed per draw (torch.Generator's role); the seed reaches the compiled code
// as a run-time argument, so a new draw compiles nothing. The state is the
// initial seed and the number of draws so far, and the same state gives the
// same sequence of numbers on every machine.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_RANDOM_H
#define HARP_API_RANDOM_H

#include <cstdint>
#include <mutex>

namespace harp {

/// A stream of seeds, one per random draw. Thread-safe.
class Generator {
public:
  /// The seed a new generator and the default generator start from.
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

  explicit Generator(uint64_t seed = kDefaultSeed) : initial(seed) {}

  /// Restarts the stream from `seed` (torch.Generator.manual_seed).
  Generator &manual_seed(uint64_t seed);
  /// Restarts the stream from a seed of the clock and the OS's random
  /// device, and returns that seed (torch.Generator.seed).
  uint64_t seed();
  /// The seed the stream started from.
  uint64_t initial_seed() const;

  /// The seed of the next draw (non-negative: it is passed as an i64).
  uint64_t next_seed();

  /// The initial seed and the number of draws so far; set_state() resumes
  /// the stream exactly there.
  struct State {
    uint64_t seed = kDefaultSeed;
    uint64_t offset = 0;
  };
  State get_state() const;
  void set_state(State state);

private:
  mutable std::mutex mutex;
  uint64_t initial;
  uint64_t offset = 0;
};

/// The generator that the random ops draw from unless given another.
Generator &default_generator();

/// Seeds every random stream of harp (torch.manual_seed): the default
/// generator and the initialisers of harp::nn.
void manual_seed(uint64_t seed);

} // namespace harp

#endif // HARP_API_RANDOM_H
