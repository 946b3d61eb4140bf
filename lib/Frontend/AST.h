//===- AST.h - the graph language's syntax tree -----------------*- C++ -*-===//
//
// Private to lib/Frontend: what the parser produces and the evaluator
// walks. Every node keeps the place it was written.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_FRONTEND_AST_H
#define HARP_LIB_FRONTEND_AST_H

#include "harp/Frontend/GraphDSL.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harp::graph {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class BinOp {
  Or,
  And,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  MatMul,
  Pow
};
enum class UnOp { Neg, Not };

/// The operator as written ("+", "@").
const char *spelling(BinOp op);

struct Expr {
  enum class Kind {
    Int,
    Float,
    Imag, // floatValue times i
    Bool,
    String,
    Name,
    Call,
    Binary,
    Unary,
    List
  };
  Kind kind;
  SourceLoc loc;
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string text; // String's value, Name's and Call's name
  BinOp binOp = BinOp::Add;
  UnOp unOp = UnOp::Neg;
  /// Binary: lhs, rhs; Unary: operand; Call: positional arguments; List:
  /// items.
  std::vector<ExprPtr> operands;
  /// Call: keyword arguments, in order.
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<SourceLoc> keywordLocs;
  /// How deep the operators below (and including) this one nest.
  unsigned depth = 0;
};

struct Stmt;
using Block = std::vector<Stmt>;

struct Stmt {
  /// `let a = e`, `let (a, b) = e`, `a = e` (an output), `if c {} else {}`.
  enum class Kind { Let, LetTuple, Assign, If };
  Kind kind;
  SourceLoc loc;
  std::vector<std::pair<std::string, SourceLoc>> names;
  ExprPtr value; // the assigned value, or the if's condition
  Block thenBlock, elseBlock;
};

struct GraphDef {
  GraphSignature signature;
  Block body;
};

struct ProgramImpl {
  std::vector<GraphDef> graphs;
  const std::string *file = nullptr; // the program's name, interned
  const GraphDef *find(const std::string &name) const {
    for (const GraphDef &g : graphs)
      if (g.signature.name == name)
        return &g;
    return nullptr;
  }
};

/// The dtype spelled `name` (`f32`, or NumPy's `float32`), if any: in types
/// and as a value (`cast(x, f64)`).
std::optional<DType> dtypeNamed(const std::string &name);

/// The file name, interned for the process (SourceLoc::file).
const std::string *internFile(const std::string &name);

} // namespace harp::graph

#endif // HARP_LIB_FRONTEND_AST_H
