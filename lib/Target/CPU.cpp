//===- CPU.cpp - the CPU harp generates code for -------------------------===//

#include "harp/Target/CPU.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCSchedule.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <fstream>
#include <memory>
#include <unistd.h>
#include <vector>

using namespace harp;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// "48K" -> 49152; 0 when malformed.
static uint64_t parseCacheSize(StringRef text) {
  text = text.trim();
  uint64_t scale = 1;
  if (text.consume_back("K"))
    scale = 1024;
  else if (text.consume_back("M"))
    scale = 1024 * 1024;
  uint64_t value = 0;
  return text.getAsInteger(10, value) ? 0 : value * scale;
}

static std::string readLine(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

static void readCaches(CpuTarget &target);

/// Fills the caches of `target` from sysfs, else sysconf, else assumes
/// (read once per process).
static void describeCaches(CpuTarget &target) {
  static const CpuTarget caches = [] {
    CpuTarget found;
    readCaches(found);
    return found;
  }();
  target.l1Bytes = caches.l1Bytes;
  target.l2Bytes = caches.l2Bytes;
  target.l3Bytes = caches.l3Bytes;
  target.cacheSource = caches.cacheSource;
}

static void readCaches(CpuTarget &target) {
  uint64_t sizes[4] = {0, 0, 0, 0};
  for (int index = 0; index < 16; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::string type = readLine(dir + "/type");
    if (type.empty())
      break;
    unsigned level = 0;
    if (type == "Instruction" ||
        StringRef(readLine(dir + "/level")).trim().getAsInteger(10, level) ||
        level < 1 || level > 3)
      continue;
    sizes[level] = parseCacheSize(readLine(dir + "/size"));
  }
  if (sizes[1] && sizes[2]) {
    target.cacheSource = "sysfs";
  } else {
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE),
         l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l1 > 0 && l2 > 0) {
      sizes[1] = l1;
      sizes[2] = l2;
      sizes[3] = l3 > 0 ? l3 : 0;
      target.cacheSource = "sysconf";
    }
#endif
  }
  if (!sizes[1] || !sizes[2]) {
    sizes[1] = 32 * 1024;
    sizes[2] = 256 * 1024;
    sizes[3] = 0;
    target.cacheSource = "assumed";
  }
  target.l1Bytes = sizes[1];
  target.l2Bytes = sizes[2];
  target.l3Bytes = sizes[3];
}

/// Fills the FMA latency and rate of `target` from LLVM's scheduling model
/// of `info`'s CPU: the instruction a register tile's k loop is made of.
static void describeFma(const llvm::Target &llvmTarget,
                        const llvm::MCSubtargetInfo &info, CpuTarget &target) {
  const llvm::MCSchedModel &model = info.getSchedModel();
  if (!model.hasInstrSchedModel())
    return;
  // Opcodes and scheduling classes are the same for every CPU of the
  // target: the four candidates are looked up once per process.
  static const llvm::StringMap<unsigned> classes = [&] {
    llvm::StringMap<unsigned> found;
    std::unique_ptr<llvm::MCInstrInfo> instrs(llvmTarget.createMCInstrInfo());
    for (unsigned opcode = 0, e = instrs ? instrs->getNumOpcodes() : 0;
         opcode < e; ++opcode) {
      StringRef name = instrs->getName(opcode);
      if (llvm::is_contained({StringRef("ADDPSrr"), StringRef("VFMADD231PSr"),
                              StringRef("VFMADD231PSYr"),
                              StringRef("VFMADD231PSZr")},
                             name))
        found[name] = instrs->get(opcode).getSchedClass();
    }
    return found;
  }();
  StringRef name = !target.fma                ? "ADDPSrr"
                   : target.vectorBits == 512 ? "VFMADD231PSZr"
                   : target.vectorBits == 256 ? "VFMADD231PSYr"
                                              : "VFMADD231PSr";
  auto it = classes.find(name);
  if (it == classes.end())
    return;
  const llvm::MCSchedClassDesc *desc = model.getSchedClassDesc(it->second);
  if (!desc || !desc->isValid() || desc->isVariant())
    return;
  int latency = llvm::MCSchedModel::computeInstrLatency(info, *desc);
  double reciprocal = llvm::MCSchedModel::getReciprocalThroughput(info, *desc);
  if (latency > 0 && reciprocal > 0) {
    target.fmaLatency = unsigned(latency);
    target.fmaPerCycle = 1 / reciprocal;
  }
}

/// $HARP_CACHES over the caches found: "L1,L2" or "L1,L2,L3", each a size
/// in bytes with an optional K or M suffix, so code generation can be
/// tiled for another machine's caches (the tests run the blocks of a
/// 256 KiB and of a 2 MiB L2 on any machine). An error when malformed.
static llvm::Error cachesFromEnvironment(CpuTarget &target) {
  std::optional<std::string> env = llvm::sys::Process::GetEnv("HARP_CACHES");
  if (!env || env->empty())
    return llvm::Error::success();
  llvm::SmallVector<StringRef> parts;
  StringRef(*env).split(parts, ',');
  uint64_t sizes[3] = {0, 0, 0};
  bool valid = parts.size() == 2 || parts.size() == 3;
  for (size_t i = 0; valid && i < parts.size(); ++i)
    valid = (sizes[i] = parseCacheSize(parts[i])) > 0;
  if (!valid || sizes[0] < 1024 || sizes[1] < sizes[0] ||
      (sizes[2] && sizes[2] < sizes[1]))
    return makeError("HARP_CACHES must be L1,L2 or L1,L2,L3 in bytes, each "
                     "with an optional K or M suffix, at least 1K and each "
                     "no smaller than the one before (like 32K,1M,32M), "
                     "got '" +
                     *env + "'");
  target.l1Bytes = sizes[0];
  target.l2Bytes = sizes[1];
  target.l3Bytes = sizes[2];
  target.cacheSource = "HARP_CACHES";
  return llvm::Error::success();
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
  describeFma(*llvmTarget, *info, target);
  describeCaches(target);
  if (llvm::Error error = cachesFromEnvironment(target))
    return std::move(error);

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
