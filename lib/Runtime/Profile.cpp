//===- Profile.cpp - time per kernel of JIT-compiled code -----------------===//

#include "harp/Runtime/Profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

using namespace harp;

namespace {
struct Totals {
  uint64_t calls = 0;
  int64_t nanoseconds = 0;
};

/// The table, by kernel name. Names are looked up by address first: each
/// loaded object's names are constants, so the string is compared once per
/// address (an address a later object reuses names that object's kernel,
/// hence the check of its text).
struct Table {
  std::mutex mutex;
  std::map<std::string, Totals> byName;
  std::unordered_map<const char *, std::pair<std::string, Totals *>> byAddress;

  Totals &find(const char *kernel) {
    auto it = byAddress.find(kernel);
    if (it != byAddress.end() && it->second.first == kernel)
      return *it->second.second;
    Totals *totals = &byName[kernel];
    byAddress[kernel] = {kernel, totals};
    return *totals;
  }
};

Table &table() {
  static Table *t = [] {
    auto *created = new Table;
    if (profilingRequested())
      std::atexit([] {
        std::string text = formatProfile(profileReport());
        std::fputs(text.c_str(), stderr);
      });
    return created;
  }();
  return *t;
}
} // namespace

bool harp::profilingRequested() {
  const char *value = std::getenv("HARP_PROFILE");
  return value && *value && std::strcmp(value, "0") != 0;
}

std::vector<KernelProfile> harp::profileReport() {
  Table &t = table();
  std::vector<KernelProfile> report;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    for (const auto &[name, totals] : t.byName)
      if (totals.calls)
        report.push_back({name, totals.calls, totals.nanoseconds * 1e-9});
  }
  std::stable_sort(report.begin(), report.end(),
                   [](const KernelProfile &a, const KernelProfile &b) {
                     return a.seconds > b.seconds;
                   });
  return report;
}

void harp::resetProfile() {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (auto &[name, totals] : t.byName)
    totals = Totals();
}

std::string harp::formatProfile(const std::vector<KernelProfile> &report) {
  // Shares are of the time of the whole calls (kernels of called functions
  // are inside their callers' whole calls).
  double whole = 0;
  for (const KernelProfile &k : report)
    if (k.kernel.find(" (whole call)") != std::string::npos)
      whole += k.seconds;
  std::string text =
      "harp profile: " + std::to_string(report.size()) + " kernels\n";
  char line[64];
  std::snprintf(line, sizeof(line), "%12s %7s %9s  %s\n", "ms", "%", "calls",
                "kernel");
  text += line;
  for (const KernelProfile &k : report) {
    std::snprintf(line, sizeof(line), "%12.3f %6.1f%% %9llu  ", k.seconds * 1e3,
                  whole > 0 ? 100 * k.seconds / whole : 0.0,
                  static_cast<unsigned long long>(k.calls));
    text += line + k.kernel + "\n";
  }
  return text;
}

int64_t harp_profile_clock() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void harp_profile_record(const char *kernel, int64_t start) {
  int64_t elapsed = harp_profile_clock() - start;
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  Totals &totals = t.find(kernel);
  ++totals.calls;
  totals.nanoseconds += elapsed;
}
