//===- CPU.cpp - the CPU harp generates code for
//---------------------------===//

#include "harp/Target/CPU.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>
#include <vector>

using namespace harp;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string harp::defaultCpuName() {
  if (std::optional<std::string> env = llvm::sys::Process::GetEnv("HARP_CPU"))
    if (!env->empty())
      return *env;
  return "native";
}

llvm::Expected<CpuTarget> harp::resolveCpuTarget(StringRef name) {
  CpuTarget target;
  target.name = name.empty() ? defaultCpuName() : name.str();
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return makeError("no LLVM target for " + triple.str() + ": " + error);

  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  bool native = StringRef(target.name).equals_insensitive("native");
  if (native) {
    target.cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> list;
    for (auto &feature : host)
      list.push_back((feature.second ? "+" : "-") + feature.first().str());
    llvm::sort(list);
    target.features = llvm::join(list, ",");
  } else {
    target.cpu = target.name;
    // Asked first of a generic subtarget: describing an unknown CPU would
    // print LLVM's own warning.
    std::unique_ptr<llvm::MCSubtargetInfo> generic(
        llvmTarget->createMCSubtargetInfo(triple, "", ""));
    if (!generic || !generic->isCPUStringValid(target.cpu))
      return makeError("unknown CPU '" + target.name +
                       "' (expected native, x86-64-v2, x86-64-v3, x86-64-v4 "
                       "or a CPU name LLVM knows, such as znver3)");
  }
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      llvmTarget->createMCSubtargetInfo(triple, target.cpu, target.features));
  if (!info)
    return makeError("cannot describe CPU '" + target.name + "'");

  auto has = [&](StringRef feature) {
    return info->checkFeatures(("+" + feature).str());
  };
  target.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
  target.vectorRegisters = has("avx512f") ? 32 : 16;
  target.fma = has("fma");

  // A feature this machine reports absent but the target enables would
  // fault at run time (SIGILL): list them, so loading refuses clearly.
  std::vector<std::string> missing;
  for (const llvm::SubtargetFeatureKV &feature :
       info->getAllProcessorFeatures()) {
    auto it = host.find(feature.Key);
    if (it != host.end() && !it->second && has(feature.Key))
      missing.push_back(feature.Key);
  }
  llvm::sort(missing);
  target.missingFeatures = llvm::join(missing, ",");
  return target;
}
