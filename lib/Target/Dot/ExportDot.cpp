//===- ExportDot.cpp - harp functions as Graphviz DOT graphs --------------===//

#include "harp/Target/Dot.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
/// `text` as the inside of a DOT string.
std::string escape(StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

template <typename T>
std::string str(T thing) {
  std::string text;
  llvm::raw_string_ostream os(text);
  thing.print(os);
  return text;
}

/// At most `limit` characters of `text`.
std::string clip(std::string text, size_t limit = 72) {
  if (text.size() > limit)
    text = text.substr(0, limit - 3) + "...";
  return text;
}

class DotWriter {
public:
  DotWriter(raw_ostream &os, const harp::DotOptions &options)
      : os(os), options(options) {}

  void function(func::FuncOp func) {
    os << "  subgraph cluster_" << clusters++ << " {\n    label=\"@"
       << escape(func.getSymName()) << "\";\n    style=rounded;\n";
    Block &entry = func.getBody().front();
    for (BlockArgument arg : entry.getArguments()) {
      std::string id = newNode();
      values[arg] = id;
      os << "    " << id << " [shape=ellipse, label=\"arg "
         << arg.getArgNumber() << "\\n"
         << escape(str(arg.getType())) << "\"];\n";
    }
    for (Operation &op : entry.getOperations())
      operation(op, "    ");
    os << "  }\n";
  }

private:
  std::string newNode() { return "n" + std::to_string(nodes++); }

  /// A short description of an op's attributes (harp ops, constants).
  static std::string attributes(Operation &op) {
    std::string text;
    for (NamedAttribute attr : op.getAttrs()) {
      StringRef name = attr.getName().getValue();
      if (name == "sym_name" || name == "function_type" ||
          name == "operandSegmentSizes")
        continue;
      std::string value;
      {
        // Large constants print elided: a label shows their type.
        llvm::raw_string_ostream os(value);
        AsmState state(op.getContext(),
                       OpPrintingFlags().elideLargeElementsAttrs(8));
        attr.getValue().print(os, state);
      }
      if (name == "fastmath" && value == "#arith.fastmath<none>")
        continue; // the default, on every float op

      text += "\\n" + escape(clip(name.str() + " = " + value));
    }
    return text;
  }

  void edgesInto(Operation &op, const std::string &id,
                 const std::string &indent) {
    for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
      auto it = values.find(operand);
      if (it == values.end())
        continue; // defined above the region drawn (a body reading outside)
      os << indent << it->second << " -> " << id << " [label=\""
         << escape(str(operand.getType()));
      if (op.getNumOperands() > 1)
        os << " (" << i << ")";
      os << "\"];\n";
    }
  }

  void operation(Operation &op, const std::string &indent) {
    std::string id = newNode();
    std::string label = op.getName().getStringRef().str();
    if (auto call = dyn_cast<func::CallOp>(op))
      label += " @" + call.getCallee().str();
    bool isReturn = op.hasTrait<OpTrait::IsTerminator>();
    if (op.getNumRegions() == 0 || !options.bodies) {
      os << indent << id << " [label=\"" << escape(label)
         << (isReturn ? "" : attributes(op)) << "\""
         << (isReturn ? ", shape=ellipse" : "") << "];\n";
    } else {
      // A kernel: a cluster with the op's own node and its body.
      unsigned kernel = kernels++;
      os << indent << "subgraph cluster_" << clusters++ << " {\n"
         << indent << "  label=\"kernel " << kernel << "\";\n"
         << indent << "  style=filled;\n"
         << indent << "  fillcolor=\"#eef3fb\";\n"
         << indent << "  " << id << " [label=\"" << escape(label)
         << attributes(op) << "\", style=\"filled,bold\", fillcolor=white];\n";
      for (Region &region : op.getRegions())
        for (Block &block : region) {
          for (BlockArgument arg : block.getArguments()) {
            std::string argId = newNode();
            values[arg] = argId;
            os << indent << "  " << argId << " [shape=plaintext, label=\"in "
               << arg.getArgNumber() << ": " << escape(str(arg.getType()))
               << "\"];\n";
          }
          for (Operation &inner : block.getOperations())
            operation(inner, indent + "  ");
        }
      os << indent << "}\n";
    }
    edgesInto(op, id, indent);
    for (Value result : op.getResults())
      values[result] = id;
  }

  raw_ostream &os;
  const harp::DotOptions &options;
  llvm::DenseMap<Value, std::string> values;
  unsigned nodes = 0, clusters = 0, kernels = 0;
};
} // namespace

LogicalResult harp::exportDot(Operation *module, raw_ostream &os,
                              const DotOptions &options) {
  SmallVector<func::FuncOp> functions;
  module->walk([&](func::FuncOp f) {
    if (!f.isExternal() &&
        (options.function.empty() || f.getSymName() == options.function))
      functions.push_back(f);
  });
  if (functions.empty()) {
    if (options.function.empty())
      return module->emitError("export-dot: the module has no function with "
                               "a body to draw");
    return module->emitError("export-dot: no function @")
           << options.function << " in the module";
  }
  os << "digraph harp {\n  compound=true;\n  rankdir=TB;\n"
        "  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
        "  edge [fontname=\"monospace\", fontsize=9];\n";
  DotWriter writer(os, options);
  for (func::FuncOp f : functions)
    writer.function(f);
  os << "}\n";
  return success();
}
