//===- Export.cpp - compiled harp code as a library of its own -----------===//
//
// A library's object is the JIT's object of the module (Jit.cpp, compiled
// position-independent) plus, per public function, a constant description
// of its arguments and a typed C entry point that hands the caller's tensors
// to the library runtime (Library/LibraryRuntime.cpp), which checks them and
// calls the function's packed entry. exportLibrary links that object with
// the runtime into a shared library or an archive and writes the C header.
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Export.h"
#include "JitInternal.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace harp;
using harp::jit::makeError;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static const unsigned char kLibraryRuntime[] = {
#include "LibraryRuntimeArchive.inc"
};

StringRef harp::libraryRuntimeArchive() {
  return StringRef(reinterpret_cast<const char *>(kLibraryRuntime),
                   sizeof(kLibraryRuntime));
}

std::string harp::cIdentifier(StringRef name) {
  std::string id;
  if (name.empty() || llvm::isDigit(name.front()))
    id += '_';
  for (char c : name)
    id += llvm::isAlnum(c) || c == '_' ? c : '_';
  return id;
}

/// How the header and the messages name an element type.
static std::string dtypeName(ElementKind kind) {
  switch (kind) {
  case ElementKind::C64:
    return "c64";
  case ElementKind::C128:
    return "c128";
  default:
    return elementName(kind);
  }
}

/// The C type of one element (complex numbers: of their parts, which
/// alternate in memory).
static const char *cElementType(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16:
    return "uint16_t";
  case ElementKind::F32:
  case ElementKind::C64:
    return "float";
  case ElementKind::F64:
  case ElementKind::C128:
    return "double";
  case ElementKind::I1:
    return "uint8_t";
  case ElementKind::I8:
    return "int8_t";
  case ElementKind::I16:
    return "int16_t";
  case ElementKind::I32:
    return "int32_t";
  case ElementKind::I64:
    return "int64_t";
  }
  return "void";
}

/// The names of a function's arguments: input0..., result0...
static std::string argumentName(const FunctionSignature &sig, size_t i) {
  return i < sig.inputs.size()
             ? "input" + std::to_string(i)
             : "result" + std::to_string(i - sig.inputs.size());
}

static std::vector<TensorType> argumentsOf(const FunctionSignature &sig) {
  std::vector<TensorType> all = sig.inputs;
  all.insert(all.end(), sig.results.begin(), sig.results.end());
  return all;
}

/// The C name of `sig`'s entry point.
static std::string entryName(StringRef prefix, const FunctionSignature &sig) {
  return (prefix + "_" + cIdentifier(sig.name)).str();
}

/// The entry point names of `functions`, or an error where two functions or
/// one and `<prefix>_last_error` would share a C name.
static Expected<std::vector<std::string>>
entryNames(llvm::ArrayRef<FunctionSignature> functions, StringRef prefix) {
  std::vector<std::string> names;
  llvm::StringMap<std::string> seen;
  seen[(prefix + "_last_error").str()] = "the library's error function";
  for (const FunctionSignature &sig : functions) {
    std::string name = entryName(prefix, sig);
    auto [it, fresh] = seen.try_emplace(name, "@" + sig.name);
    if (!fresh)
      return makeError("@" + sig.name + " and " + it->second +
                       " would both be the C function " + name);
    names.push_back(name);
  }
  return names;
}

Error harp::jit::addLibraryEntries(llvm::Module &module,
                                   llvm::ArrayRef<FunctionSignature> functions,
                                   StringRef prefix) {
  if (prefix != cIdentifier(prefix))
    return makeError("the library prefix '" + prefix +
                     "' is not a C identifier");
  auto names = entryNames(functions, prefix);
  if (!names)
    return names.takeError();
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  // HarpLibArgument and HarpLibFunction (Library/LibraryAbi.h).
  auto *argumentType = llvm::StructType::get(ctx, {ptr, ptr, ptr, i64, i64});
  auto *functionType = llvm::StructType::get(ctx, {ptr, ptr, ptr, i64, i64});
  auto constant = [&](llvm::Constant *init, StringRef name) {
    auto *var = new llvm::GlobalVariable(
        module, init->getType(),
        /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage, init, name);
    var->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return var;
  };
  auto string = [&](StringRef text) {
    return constant(llvm::ConstantDataArray::getString(ctx, text),
                    "harp_lib_string");
  };
  llvm::FunctionCallee call = module.getOrInsertFunction(
      "harp_lib_call", llvm::FunctionType::get(i32, {ptr, ptr}, false));
  llvm::StringSet<> entries;
  for (auto [sig, entryName] : llvm::zip(functions, *names)) {
    llvm::Function *packed = module.getFunction("_harp_packed_" + sig.name);
    if (!packed)
      return makeError("@" + sig.name + " has no packed entry after lowering");
    std::vector<TensorType> types = argumentsOf(sig);
    std::vector<llvm::Constant *> arguments;
    for (auto [i, type] : llvm::enumerate(types)) {
      llvm::Constant *shape =
          type.shape.empty()
              ? static_cast<llvm::Constant *>(
                    llvm::ConstantPointerNull::get(ptr))
              : constant(llvm::ConstantDataArray::get(
                             ctx, llvm::ArrayRef<uint64_t>(
                                      reinterpret_cast<const uint64_t *>(
                                          type.shape.data()),
                                      type.shape.size())),
                         "harp_lib_shape");
      arguments.push_back(llvm::ConstantStruct::get(
          argumentType,
          {shape, string(argumentName(sig, i)), string(dtypeName(type.kind)),
           llvm::ConstantInt::get(i64, type.shape.size()),
           llvm::ConstantInt::get(i64, elementSize(type.kind))}));
    }
    llvm::Constant *argumentArray =
        arguments.empty()
            ? static_cast<llvm::Constant *>(llvm::ConstantPointerNull::get(ptr))
            : constant(llvm::ConstantArray::get(
                           llvm::ArrayType::get(argumentType, arguments.size()),
                           arguments),
                       "harp_lib_arguments");
    llvm::GlobalVariable *description = constant(
        llvm::ConstantStruct::get(
            functionType, {string(entryName), packed, argumentArray,
                           llvm::ConstantInt::get(i64, sig.inputs.size()),
                           llvm::ConstantInt::get(i64, sig.results.size())}),
        "harp_lib_function");

    // i32 <entry>(ptr %input0, ..., ptr %result0, ...): the tensors in an
    // array, handed to harp_lib_call.
    auto *entry = llvm::Function::Create(
        llvm::FunctionType::get(
            i32, std::vector<llvm::Type *>(types.size(), ptr), false),
        llvm::GlobalValue::ExternalLinkage, entryName, module);
    entries.insert(entryName);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
    llvm::Value *tensors = llvm::ConstantPointerNull::get(ptr);
    if (!types.empty()) {
      auto *arrayType = llvm::ArrayType::get(ptr, types.size());
      tensors = b.CreateAlloca(arrayType);
      for (size_t i = 0; i < types.size(); ++i) {
        entry->getArg(i)->setName(argumentName(sig, i));
        b.CreateStore(entry->getArg(i),
                      b.CreateConstInBoundsGEP2_64(arrayType, tensors, 0, i));
      }
    }
    b.CreateRet(b.CreateCall(call, {description, tensors}));
  }

  // const char *<prefix>_last_error(void).
  std::string lastErrorName = (prefix + "_last_error").str();
  llvm::FunctionCallee lastError = module.getOrInsertFunction(
      "harp_lib_last_error", llvm::FunctionType::get(ptr, {}, false));
  auto *lastErrorEntry = llvm::Function::Create(
      llvm::FunctionType::get(ptr, {}, false),
      llvm::GlobalValue::ExternalLinkage, lastErrorName, module);
  entries.insert(lastErrorName);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", lastErrorEntry));
  b.CreateRet(b.CreateCall(lastError));

  // Only the entry points are the library's: the packed entries, kernels
  // and tables are internal (and can be optimized as such).
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && !entries.contains(f.getName()))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &var : module.globals())
    if (!var.isDeclaration() && !var.getName().starts_with("llvm.") &&
        !var.hasLocalLinkage())
      var.setLinkage(llvm::GlobalValue::InternalLinkage);
  return Error::success();
}

std::string harp::libraryHeader(llvm::ArrayRef<FunctionSignature> functions,
                                StringRef prefix, StringRef sourceName) {
  std::string guard = llvm::StringRef(cIdentifier(prefix)).upper() + "_H";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* The C interface of a library harp compiled from " << sourceName
     << ".\n"
     << "   Each entry point checks its tensors against the function's types "
        "and\n"
     << "   writes the results into the caller's buffers; it returns HARP_OK "
        "or an\n"
     << "   error code, and " << prefix
     << "_last_error() says why (docs/Embedding.md). */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  // The types every harp library header shares, defined once.
  os << "#ifndef HARP_LIBRARY_TYPES\n#define HARP_LIBRARY_TYPES\n"
     << "/* A dense, row-major tensor the caller owns: its data, rank and "
        "sizes\n"
     << "   (shape may be NULL at rank 0). Complex tensors alternate real and\n"
     << "   imaginary parts; bool is a byte, f16 and bf16 their 16 bits. */\n";
  for (ElementKind kind :
       {ElementKind::F16, ElementKind::BF16, ElementKind::F32, ElementKind::F64,
        ElementKind::I1, ElementKind::I8, ElementKind::I16, ElementKind::I32,
        ElementKind::I64, ElementKind::C64, ElementKind::C128}) {
    std::string name = "harp_" + dtypeName(kind) + "_tensor";
    os << "typedef struct " << name << " {\n  " << cElementType(kind)
       << " *data;\n  int64_t rank;\n  const int64_t *shape;\n} " << name
       << ";\n";
  }
  os << "/* What an entry point returns. */\n"
     << "enum {\n"
     << "  HARP_OK = 0,            /* the results are written */\n"
     << "  HARP_ERROR_NULL = 1,    /* a null tensor, shape or data pointer "
        "*/\n"
     << "  HARP_ERROR_RANK = 2,    /* a tensor of another rank */\n"
     << "  HARP_ERROR_SHAPE = 3,   /* a tensor of another shape */\n"
     << "  HARP_ERROR_OVERLAP = 4  /* a result overlapping another tensor */\n"
     << "};\n#endif /* HARP_LIBRARY_TYPES */\n";

  auto typeText = [](const TensorType &type) {
    std::string t = dtypeName(type.kind) + "[";
    for (auto [i, size] : llvm::enumerate(type.shape))
      t += (i ? ", " : "") + std::to_string(size);
    return t + "]";
  };
  auto shapeInit = [](const TensorType &type) {
    std::string t = "{";
    for (auto [i, size] : llvm::enumerate(type.shape))
      t += (i ? ", " : "") + std::to_string(size);
    return t + "}";
  };
  for (const FunctionSignature &sig : functions) {
    std::string entry = entryName(prefix, sig);
    std::vector<TensorType> types = argumentsOf(sig);
    os << "\n/* @" << sig.name << "(";
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      os << (i ? ", " : "") << argumentName(sig, i) << ": "
         << typeText(types[i]);
    os << ") -> (";
    for (size_t i = sig.inputs.size(); i < types.size(); ++i)
      os << (i > sig.inputs.size() ? ", " : "") << argumentName(sig, i) << ": "
         << typeText(types[i]);
    os << ") */\n";
    std::string macro = StringRef(entry).upper();
    for (size_t i = 0; i < types.size(); ++i) {
      std::string arg = StringRef(argumentName(sig, i)).upper();
      os << "#define " << macro << "_" << arg << "_RANK "
         << types[i].shape.size() << "\n";
      if (!types[i].shape.empty())
        os << "#define " << macro << "_" << arg << "_SHAPE "
           << shapeInit(types[i]) << "\n";
    }
    os << "int " << entry << "(";
    for (size_t i = 0; i < types.size(); ++i)
      os << (i ? ", " : "") << (i < sig.inputs.size() ? "const " : "")
         << "harp_" << dtypeName(types[i].kind) << "_tensor *"
         << argumentName(sig, i);
    if (types.empty())
      os << "void";
    os << ");\n";
  }
  os << "\n/* The message of this thread's last failed call, or \"\". */\n"
     << "const char *" << prefix << "_last_error(void);\n\n"
     << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return text;
}

/// Writes `bytes` to `path`.
static Error writeFile(StringRef path, StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError("cannot write " + path + ": " + ec.message());
  os << bytes;
  os.close();
  if (os.has_error())
    return makeError("cannot write " + path + ": " + os.error().message());
  return Error::success();
}

/// Links `object` and the library runtime into the shared library `path`
/// with the C compiler driver.
static Error linkShared(StringRef object, StringRef path, bool threads,
                        const ExportOptions &options) {
  std::string driver = options.linker;
  if (driver.empty())
    if (const char *cc = std::getenv("CC"); cc && *cc)
      driver = cc;
  if (driver.empty())
    driver = "cc";
  Expected<std::string> program =
      llvm::sys::path::has_parent_path(driver)
          ? Expected<std::string>(driver)
          : llvm::errorOrToExpected(llvm::sys::findProgramByName(driver));
  if (!program)
    return makeError("cannot link " + path + ": no C compiler '" + driver +
                     "' to link with (set CC or the linker option): " +
                     llvm::toString(program.takeError()));
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("harp-export", dir))
    return makeError("cannot make a temporary directory: " + ec.message());
  llvm::SmallString<128> objectPath(dir), runtimePath(dir), logPath(dir);
  llvm::sys::path::append(objectPath, "library.o");
  llvm::sys::path::append(runtimePath, "libharp_runtime.a");
  llvm::sys::path::append(logPath, "link.log");
  auto cleanup = [&] {
    for (StringRef file : {objectPath.str(), runtimePath.str(), logPath.str()})
      llvm::sys::fs::remove(file);
    llvm::sys::fs::remove(dir);
  };
  if (Error err = writeFile(objectPath, object)) {
    cleanup();
    return err;
  }
  if (Error err = writeFile(runtimePath, libraryRuntimeArchive())) {
    cleanup();
    return err;
  }
  std::vector<std::string> args = {*program,
                                   "-shared",
                                   "-o",
                                   path.str(),
                                   objectPath.str().str(),
                                   runtimePath.str().str(),
                                   "-lm",
                                   "-Wl,--no-undefined",
                                   "-Wl,-z,noexecstack"};
  // The OpenMP runtime harp's threads run on (Jit.cpp loads the same).
  if (threads)
    args.push_back("-l:libomp.so.5");
  std::vector<StringRef> argRefs(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                          logPath.str()};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt, redirects,
                                     0, 0, &message);
  std::string log;
  if (auto buffer = llvm::MemoryBuffer::getFile(logPath))
    log = (*buffer)->getBuffer().trim().str();
  cleanup();
  if (rc != 0)
    return makeError("linking " + path + " with " + *program + " failed" +
                     (message.empty() ? "" : ": " + message) +
                     (log.empty() ? "" : ":\n" + log));
  return Error::success();
}

/// Writes the archive `path` of `object` and the library runtime's members.
static Error writeStatic(StringRef object, StringRef path, StringRef stem) {
  std::vector<llvm::NewArchiveMember> members;
  std::string objectName = (stem + ".o").str();
  members.emplace_back(llvm::MemoryBufferRef(object, objectName));
  Error err = Error::success();
  auto runtime = llvm::object::Archive::create(
      llvm::MemoryBufferRef(libraryRuntimeArchive(), "libharp_runtime.a"));
  if (!runtime) {
    llvm::consumeError(std::move(err));
    return runtime.takeError();
  }
  for (const llvm::object::Archive::Child &child : (*runtime)->children(err)) {
    auto member =
        llvm::NewArchiveMember::getOldMember(child, /*Deterministic=*/true);
    if (!member) {
      llvm::consumeError(std::move(err));
      return member.takeError();
    }
    members.push_back(std::move(*member));
  }
  if (err)
    return err;
  return llvm::writeArchive(path, members,
                            llvm::SymtabWritingMode::NormalSymtab,
                            llvm::object::Archive::K_GNU,
                            /*Deterministic=*/true, /*Thin=*/false);
}

/// The prefix `options` give, or the one `path` implies.
static std::string prefixFor(StringRef path, const ExportOptions &options) {
  if (!options.prefix.empty())
    return options.prefix;
  StringRef stem = llvm::sys::path::stem(path);
  if (stem.size() > 3)
    stem.consume_front("lib");
  return cIdentifier(stem);
}

static Error writeLibrary(Jit &jit, Expected<LibraryObject> compiled,
                          StringRef path, StringRef prefix,
                          StringRef sourceName, const ExportOptions &options) {
  if (!compiled)
    return compiled.takeError();
  StringRef extension = llvm::sys::path::extension(path);
  if (extension == ".o") {
    if (Error err = writeFile(path, compiled->object))
      return err;
  } else if (extension == ".a") {
    if (Error err =
            writeStatic(compiled->object, path, llvm::sys::path::stem(path)))
      return err;
  } else if (extension == ".so") {
    if (Error err =
            linkShared(compiled->object, path, jit.options().threads, options))
      return err;
  }
  if (!options.headerPath.empty())
    if (Error err =
            writeFile(options.headerPath,
                      libraryHeader(compiled->functions, prefix, sourceName)))
      return err;
  return Error::success();
}

/// Checks what exportLibrary is asked before it compiles anything.
static Error checkRequest(StringRef path, StringRef prefix, bool fromText) {
  StringRef extension = llvm::sys::path::extension(path);
  if (fromText && extension == ".mlir")
    return makeError("the input is harp IR already; a library is a .so, .a "
                     "or .o file (harp-translate --import-graph writes a "
                     "graph program's IR)");
  if (extension != ".so" && extension != ".a" && extension != ".o" &&
      extension != ".mlir")
    return makeError("cannot tell what to write from the name " + path +
                     " (expected a .so, .a, .o or .mlir file)");
  if (prefix.empty() || prefix != cIdentifier(prefix))
    return makeError("the library prefix '" + prefix +
                     "' is not a C identifier");
  return Error::success();
}

Error harp::exportLibrary(Jit &jit, mlir::ModuleOp module, StringRef path,
                          const ExportOptions &options) {
  std::string prefix = prefixFor(path, options);
  if (Error err = checkRequest(path, prefix, /*fromText=*/false))
    return err;
  if (llvm::sys::path::extension(path) == ".mlir") {
    // The program itself, to inspect or to compile later.
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return writeFile(path, text);
  }
  std::string sourceName = "a module";
  if (auto name = module.getSymName())
    sourceName = ("@" + *name).str();
  return writeLibrary(jit, jit.compileLibraryObject(module, prefix), path,
                      prefix, sourceName, options);
}

Error harp::exportLibrary(Jit &jit, StringRef source, StringRef sourceName,
                          StringRef path, const ExportOptions &options) {
  std::string prefix = prefixFor(path, options);
  if (Error err = checkRequest(path, prefix, /*fromText=*/true))
    return err;
  return writeLibrary(jit, jit.compileLibraryObject(source, sourceName, prefix),
                      path, prefix, sourceName, options);
}
