//===- KernelUnits.cpp - kernel functions as modules of their own ---------===//
//
// The JIT compiles kernels, not graphs: every kernel function of a module
// (harp-outline-kernels' internal, `noinline` functions) that stands alone
// moves into an LLVM module of its own, named by its text, so that a kernel
// met again, in this module's graph or in another one, is compiled once
// (docs/Runtime.md, "The kernel cache").
//
//===----------------------------------------------------------------------===//

#include "JitInternal.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/IPO/DeadArgumentElimination.h"
#include "llvm/Transforms/IPO/SCCP.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;

namespace {

/// Adds to `out` the globals `value` names, through constant expressions
/// and aggregates (`seen` keeps each constant visited once).
void collectGlobals(const Value *value, SmallPtrSetImpl<const Constant *> &seen,
                    SetVector<GlobalValue *> &out) {
  if (auto *global = dyn_cast<GlobalValue>(value)) {
    out.insert(const_cast<GlobalValue *>(global));
    return;
  }
  auto *constant = dyn_cast<Constant>(value);
  if (!constant || !seen.insert(constant).second)
    return;
  for (const Use &operand : constant->operands())
    collectGlobals(operand.get(), seen, out);
}

/// The globals a function's body or a variable's initializer names.
SetVector<GlobalValue *> referencedGlobals(GlobalValue *global) {
  SetVector<GlobalValue *> out;
  SmallPtrSet<const Constant *, 32> seen;
  if (auto *var = dyn_cast<GlobalVariable>(global)) {
    if (var->hasInitializer())
      collectGlobals(var->getInitializer(), seen, out);
    return out;
  }
  for (const Instruction &inst : instructions(*cast<Function>(global)))
    for (const Use &operand : inst.operands())
      collectGlobals(operand.get(), seen, out);
  return out;
}

/// Whether `f` is a function harp-outline-kernels made: internal and never
/// inlined, with a plain body.
bool isKernelFunction(const Function &f) {
  return !f.isDeclaration() && f.hasLocalLinkage() &&
         f.hasFnAttribute(Attribute::NoInline) && !f.hasPersonalityFn() &&
         !f.hasPrefixData() && !f.hasPrologueData() && !f.hasComdat();
}

/// What a kernel's unit holds: the kernel first, then the local functions
/// it calls and the local constants it reads, transitively, and the
/// external symbols they name.
struct Closure {
  SetVector<GlobalValue *> definitions;
  SetVector<GlobalValue *> declarations;
};

/// `kernel`'s closure; nothing when it reads or writes a variable of the
/// module, or names an exported definition of it (those must stay one
/// object with the module) or a kernel moved out already.
std::optional<Closure> closureOf(Function *kernel) {
  Closure closure;
  closure.definitions.insert(kernel);
  for (size_t i = 0; i < closure.definitions.size(); ++i) {
    for (GlobalValue *global : referencedGlobals(closure.definitions[i])) {
      if (closure.definitions.contains(global))
        continue;
      if (global->isDeclaration()) {
        // A kernel moved out already (harp's kernels call none).
        if (!isa<Function, GlobalVariable>(global) ||
            global->getName().starts_with("_harp_k_"))
          return std::nullopt;
        closure.declarations.insert(global);
        continue;
      }
      if (!global->hasLocalLinkage() || global->hasComdat())
        return std::nullopt;
      if (auto *var = dyn_cast<GlobalVariable>(global)) {
        if (!var->isConstant() || var->isThreadLocal())
          return std::nullopt;
      } else if (auto *f = dyn_cast<Function>(global)) {
        if (f->hasPersonalityFn() || f->hasPrefixData() || f->hasPrologueData())
          return std::nullopt;
      } else {
        return std::nullopt; // aliases, ifuncs
      }
      closure.definitions.insert(global);
    }
  }
  return closure;
}

/// A module of `closure` alone: the kernel as `_harp_kernel` with external
/// linkage, the other definitions as `_harp_kernel.<n>` in the order they
/// were found, the declarations under their own names. The names depend on
/// nothing but the kernel's code, so equal kernels print equal modules.
std::unique_ptr<Module> extract(const Closure &closure, Module &source) {
  auto unit = std::make_unique<Module>("harp-kernel", source.getContext());
  unit->setDataLayout(source.getDataLayout());
  unit->setTargetTriple(source.getTargetTriple());
  // The module's flags (the version of its debug info, where it has some).
  SmallVector<Module::ModuleFlagEntry> flags;
  source.getModuleFlagsMetadata(flags);
  for (const Module::ModuleFlagEntry &flag : flags)
    unit->addModuleFlag(flag.Behavior, flag.Key->getString(), flag.Val);
  ValueToValueMapTy map;
  auto declare = [&](GlobalValue *global, const Twine &name,
                     GlobalValue::LinkageTypes linkage) {
    GlobalValue *copy;
    if (auto *f = dyn_cast<Function>(global)) {
      Function *g = Function::Create(f->getFunctionType(), linkage,
                                     f->getAddressSpace(), name, unit.get());
      g->copyAttributesFrom(f);
      copy = g;
    } else {
      auto *var = cast<GlobalVariable>(global);
      auto *g = new GlobalVariable(
          *unit, var->getValueType(), var->isConstant(), linkage, nullptr, name,
          nullptr, var->getThreadLocalMode(), var->getAddressSpace());
      g->copyAttributesFrom(var);
      copy = g;
    }
    copy->setLinkage(linkage);
    map[global] = copy;
  };
  for (GlobalValue *global : closure.declarations)
    declare(global, global->getName(), global->getLinkage());
  unsigned index = 0;
  for (GlobalValue *global : closure.definitions) {
    bool isKernel = index == 0;
    declare(global,
            isKernel ? Twine("_harp_kernel") : "_harp_kernel." + Twine(index),
            isKernel ? GlobalValue::ExternalLinkage : global->getLinkage());
    ++index;
  }
  for (GlobalValue *global : closure.definitions) {
    if (auto *var = dyn_cast<GlobalVariable>(global)) {
      cast<GlobalVariable>(map[var])->setInitializer(
          MapValue(var->getInitializer(), map));
      continue;
    }
    auto *f = cast<Function>(global);
    auto *copy = cast<Function>(map[f]);
    for (auto [from, to] : llvm::zip(f->args(), copy->args())) {
      to.setName(from.getName());
      map[&from] = &to;
    }
    SmallVector<ReturnInst *> returns;
    CloneFunctionInto(copy, f, map, CloneFunctionChangeType::DifferentModule,
                      returns);
  }
  return unit;
}

} // namespace

/// What LLVM's optimizer did across a kernel's calls while the kernel was
/// internal, done before it leaves the module: arguments every call passes
/// the same constant are folded into the kernel (interprocedural SCCP,
/// without specializing), and arguments the kernel never reads are dropped
/// (a memref's allocated pointer, sizes and strides, which static shapes
/// never read). Without it each call would pass every memref descriptor
/// whole to an external function, and instruction selection of the
/// calling function grew with their hundreds of arguments.
static void foldKernelArguments(Module &module) {
  LoopAnalysisManager loops;
  FunctionAnalysisManager functions;
  CGSCCAnalysisManager sccs;
  ModuleAnalysisManager modules;
  PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  ModulePassManager passes;
  passes.addPass(IPSCCPPass(IPSCCPOptions(/*AllowFuncSpec=*/false)));
  passes.addPass(DeadArgumentEliminationPass());
  passes.run(module, modules);
}

std::vector<harp::jit::KernelUnit>
harp::jit::splitKernels(Module &module,
                        function_ref<std::string(StringRef)> keyOf) {
  foldKernelArguments(module);
  std::vector<Function *> kernels;
  for (Function &f : module)
    if (isKernelFunction(f))
      kernels.push_back(&f);
  std::vector<KernelUnit> units;
  for (Function *kernel : kernels) {
    std::optional<Closure> closure = closureOf(kernel);
    if (!closure)
      continue;
    std::unique_ptr<Module> unit = extract(*closure, module);
    std::string text;
    {
      raw_string_ostream os(text);
      unit->print(os, nullptr);
    }
    std::string key = keyOf(text);
    std::string symbol = "_harp_k_" + key.substr(0, 32);
    // The kernel becomes a declaration of the unit's symbol; a kernel equal
    // to one met before in this module calls that one.
    if (Function *earlier = module.getFunction(symbol)) {
      kernel->replaceAllUsesWith(earlier);
      kernel->eraseFromParent();
      continue;
    }
    kernel->deleteBody();
    kernel->setName(symbol);
    kernel->setLinkage(GlobalValue::ExternalLinkage);
    // Defined by another object, wherever the loader puts it.
    kernel->setDSOLocal(false);
    unit->getFunction("_harp_kernel")->setName(symbol);
    units.push_back({std::move(key), std::move(symbol), std::move(unit)});
  }
  return units;
}
