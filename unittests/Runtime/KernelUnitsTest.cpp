//===- KernelUnitsTest.cpp - kernels moved into modules of their own ------===//
//
// splitKernels (lib/Runtime/KernelUnits.cpp) on LLVM IR written here: which
// kernels leave their module, what their units hold, and that equal kernels
// give one unit whatever their names.
//
//===----------------------------------------------------------------------===//

#include "JitInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <gtest/gtest.h>

#include <map>

using namespace llvm;

namespace {

// Four kernels (internal, noinline): two equal up to their names that read
// a private constant table, one that counts its calls in a variable of the
// module, one whose second argument is the same constant at its one call.
constexpr const char *kModule = R"(
@table = private unnamed_addr constant [4 x float] [float 1.0, float 2.0, float 3.0, float 4.0]
@calls = internal global i64 0

define internal void @main_kernel0(ptr %out, ptr %unused, i64 %i) #0 {
  %p = getelementptr float, ptr @table, i64 %i
  %v = load float, ptr %p
  store float %v, ptr %out
  ret void
}

define internal void @other_kernel0(ptr %out, ptr %unused, i64 %i) #0 {
  %p = getelementptr float, ptr @table, i64 %i
  %v = load float, ptr %p
  store float %v, ptr %out
  ret void
}

define internal void @main_kernel1(ptr %out) #0 {
  %n = load i64, ptr @calls
  %m = add i64 %n, 1
  store i64 %m, ptr @calls
  ret void
}

define internal void @main_kernel2(ptr %out, i64 %k) #0 {
  %p = getelementptr float, ptr %out, i64 %k
  store float 0.0, ptr %p
  ret void
}

define void @main(ptr %a, ptr %b, i64 %i, i64 %j) {
  call void @main_kernel0(ptr %a, ptr %b, i64 %i)
  call void @other_kernel0(ptr %b, ptr %a, i64 %j)
  call void @main_kernel1(ptr %a)
  call void @main_kernel2(ptr %a, i64 7)
  ret void
}

attributes #0 = { noinline }
)";

struct Split {
  LLVMContext context;
  std::unique_ptr<Module> module;
  std::vector<harp::jit::KernelUnit> units;
  /// Each unit's text as splitKernels hashed it, by key.
  std::map<std::string, std::string> texts;
  unsigned hashed = 0;

  Split() {
    SMDiagnostic error;
    module = parseAssemblyString(kModule, error, context);
    if (!module) {
      error.print("KernelUnitsTest", errs());
      return;
    }
    units = harp::jit::splitKernels(*module, [&](StringRef text) {
      ++hashed;
      std::string key = utohexstr(xxh3_64bits(text), /*LowerCase=*/true);
      texts[key] = text.str();
      return key;
    });
  }
};

/// The functions `caller` calls, in order.
std::vector<Function *> callees(Function &caller) {
  std::vector<Function *> out;
  for (BasicBlock &block : caller)
    for (Instruction &inst : block)
      if (auto *call = dyn_cast<CallInst>(&inst))
        out.push_back(call->getCalledFunction());
  return out;
}

TEST(KernelUnits, EqualKernelsShareOneUnit) {
  Split split;
  ASSERT_TRUE(split.module);
  // kernel0 and other_kernel0 hash to one text; kernel2 to another;
  // kernel1 is never hashed (it writes @calls).
  EXPECT_EQ(split.hashed, 3u);
  ASSERT_EQ(split.units.size(), 2u);
  EXPECT_FALSE(verifyModule(*split.module, &errs()));
  std::vector<Function *> calls = callees(*split.module->getFunction("main"));
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0], calls[1]);
  EXPECT_EQ(calls[0]->getName(), split.units[0].symbol);
  EXPECT_TRUE(calls[0]->isDeclaration());
  EXPECT_FALSE(calls[0]->isDSOLocal());
  EXPECT_EQ(calls[3]->getName(), split.units[1].symbol);
  EXPECT_TRUE(StringRef(split.units[0].symbol).starts_with("_harp_k_"));
  EXPECT_EQ(split.module->getFunction("other_kernel0"), nullptr);
}

TEST(KernelUnits, KernelUsingAVariableStays) {
  Split split;
  ASSERT_TRUE(split.module);
  Function *counter = split.module->getFunction("main_kernel1");
  ASSERT_NE(counter, nullptr);
  EXPECT_FALSE(counter->isDeclaration());
  EXPECT_TRUE(counter->hasLocalLinkage());
  for (const harp::jit::KernelUnit &unit : split.units)
    EXPECT_EQ(unit.module->getNamedGlobal("calls"), nullptr);
}

TEST(KernelUnits, UnitHoldsTheKernelAndItsConstants) {
  Split split;
  ASSERT_EQ(split.units.size(), 2u);
  Module &unit = *split.units[0].module;
  EXPECT_FALSE(verifyModule(unit, &errs()));
  Function *kernel = unit.getFunction(split.units[0].symbol);
  ASSERT_NE(kernel, nullptr);
  EXPECT_FALSE(kernel->isDeclaration());
  EXPECT_EQ(kernel->getLinkage(), GlobalValue::ExternalLinkage);
  // The unread argument is gone; the table came along under a name that
  // depends on nothing but the kernel.
  EXPECT_EQ(kernel->arg_size(), 2u);
  GlobalVariable *table = unit.getNamedGlobal("_harp_kernel.1");
  ASSERT_NE(table, nullptr);
  EXPECT_TRUE(table->isConstant() && table->hasInitializer());
  EXPECT_TRUE(table->hasLocalLinkage());
  // The hashed text named the kernel `_harp_kernel`, not its symbol.
  const std::string &text = split.texts.at(split.units[0].key);
  EXPECT_NE(text.find("@_harp_kernel("), std::string::npos) << text;
  EXPECT_EQ(text.find("main_kernel0"), std::string::npos) << text;
}

TEST(KernelUnits, ConstantArgumentsAreFolded) {
  Split split;
  ASSERT_EQ(split.units.size(), 2u);
  Function *kernel = split.units[1].module->getFunction(split.units[1].symbol);
  ASSERT_NE(kernel, nullptr);
  // `%k` was 7 at the one call: the kernel takes the buffer alone and
  // indexes it with the constant.
  ASSERT_EQ(kernel->arg_size(), 1u);
  const std::string &text = split.texts.at(split.units[1].key);
  EXPECT_NE(text.find("i64 7"), std::string::npos) << text;
  std::vector<Function *> calls = callees(*split.module->getFunction("main"));
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[3]->arg_size(), 1u);
}

} // namespace
