//===- Parser.cpp - lexer and recursive-descent parser of graphs ----------===//
//
// The grammar is docs/GraphDSL.md's. Statements end at a newline, a `;` or
// the closing `}`; inside parentheses and brackets, and after a binary
// operator, newlines are spaces. Comments run from `//` to the end of the
// line.
//
//===----------------------------------------------------------------------===//

#include "AST.h"
#include "Builtins.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <set>
#include <unordered_set>

using namespace harp;
using namespace harp::graph;

const std::string *harp::graph::internFile(const std::string &name) {
  static std::mutex mutex;
  static std::unordered_set<std::string> files;
  std::lock_guard<std::mutex> lock(mutex);
  return &*files.insert(name).first;
}

SourceLoc SourceLoc::at(const std::string &file, unsigned line,
                        unsigned column) {
  return {internFile(file), line, column};
}

std::optional<DType> harp::graph::dtypeNamed(const std::string &name) {
#define HARP_DTYPE(Enum, CType, Name, PyName, Kind)                            \
  if (name == Name || name == #PyName)                                         \
    return DType::Enum;
#include "harp/API/DTypes.def"
  if (name == "complex") // the spec's Complex: (re, im) pairs of f32
    return DType::C64;
  return std::nullopt;
}

std::string SourceLoc::str() const {
  return (file ? *file : std::string("<graph>")) + ":" + std::to_string(line) +
         ":" + std::to_string(column);
}

static std::string formatError(const SourceLoc &loc, const std::string &message,
                               const std::vector<GraphError::Note> &notes) {
  std::string text = loc.str() + ": " + message;
  for (const GraphError::Note &note : notes)
    text += "\n" + note.loc.str() + ": note: " + note.message;
  return text;
}

GraphError::GraphError(SourceLoc loc, std::string message,
                       std::vector<Note> notes)
    : Error(formatError(loc, message, notes)), loc_(loc),
      message_(std::move(message)), notes_(std::move(notes)) {}

std::string ParamSpec::typeStr() const {
  std::string s = dtypeName(dtype) + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + dims[i].str();
  return s + "]";
}

const char *harp::graph::spelling(BinOp op) {
  switch (op) {
  case BinOp::Or:
    return "||";
  case BinOp::And:
    return "&&";
  case BinOp::Eq:
    return "==";
  case BinOp::Ne:
    return "!=";
  case BinOp::Lt:
    return "<";
  case BinOp::Le:
    return "<=";
  case BinOp::Gt:
    return ">";
  case BinOp::Ge:
    return ">=";
  case BinOp::Add:
    return "+";
  case BinOp::Sub:
    return "-";
  case BinOp::Mul:
    return "*";
  case BinOp::Div:
    return "/";
  case BinOp::Mod:
    return "%";
  case BinOp::MatMul:
    return "@";
  case BinOp::Pow:
    return "**";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

namespace {
enum class Tok {
  Eof,
  Newline,
  Ident,
  Int,
  Float,
  Imag, // 2j, 0.5j: an imaginary number
  String,
  Punct // text holds the punctuation
};

struct Token {
  Tok kind;
  std::string text;
  SourceLoc loc;
  int64_t intValue = 0;
  double floatValue = 0;
};

class Lexer {
public:
  Lexer(const std::string &text, const std::string *file)
      : text(text), file(file) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    int depth = 0;
    while (true) {
      skipSpaceAndComments(tokens, depth);
      SourceLoc loc = here();
      if (pos >= text.size()) {
        tokens.push_back({Tok::Eof, "end of input", loc});
        return tokens;
      }
      char c = text[pos];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = pos;
        while (pos < text.size() &&
               (std::isalnum(static_cast<unsigned char>(text[pos])) ||
                text[pos] == '_'))
          advance();
        tokens.push_back({Tok::Ident, text.substr(start, pos - start), loc});
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && pos + 1 < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[pos + 1])))) {
        tokens.push_back(number(loc));
        continue;
      }
      if (c == '"') {
        tokens.push_back(string(loc));
        continue;
      }
      static const char *const twoChar[] = {
          "->", "**", "==", "!=", "<=", ">=", "&&", "||"};
      std::string punct;
      for (const char *p : twoChar)
        if (text.compare(pos, 2, p) == 0)
          punct = p;
      if (punct.empty()) {
        if (std::string("()[]{},:=+-*/%@<>!;").find(c) == std::string::npos)
          throw GraphError(loc,
                           std::string("unexpected character '") + c + "'");
        punct = std::string(1, c);
      }
      for (size_t i = 0; i < punct.size(); ++i)
        advance();
      if (punct == "(" || punct == "[")
        ++depth;
      else if ((punct == ")" || punct == "]") && depth > 0)
        --depth;
      else if (punct == "{" || punct == "}")
        depth = 0; // a block: statements end at newlines again
      tokens.push_back({Tok::Punct, punct, loc});
    }
  }

private:
  SourceLoc here() const { return {file, line, column}; }
  void advance() {
    if (text[pos] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    ++pos;
  }

  void skipSpaceAndComments(std::vector<Token> &tokens, int depth) {
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '\n') {
        // One newline token for a run of them, and none inside brackets.
        if (depth == 0 && !tokens.empty() && tokens.back().kind != Tok::Newline)
          tokens.push_back({Tok::Newline, "newline", here()});
        advance();
      } else if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == '/' && pos + 1 < text.size() && text[pos + 1] == '/') {
        while (pos < text.size() && text[pos] != '\n')
          advance();
      } else {
        return;
      }
    }
  }

  Token number(SourceLoc loc) {
    size_t start = pos;
    bool isFloat = false;
    while (pos < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[pos])))
      advance();
    if (pos < text.size() && text[pos] == '.') {
      isFloat = true;
      advance();
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos])))
        advance();
    }
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      size_t save = pos;
      unsigned saveColumn = column;
      advance();
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        advance();
      if (pos < text.size() &&
          std::isdigit(static_cast<unsigned char>(text[pos]))) {
        isFloat = true;
        while (pos < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[pos])))
          advance();
      } else {
        pos = save; // `2e` is 2 then a name
        column = saveColumn;
      }
    }
    std::string spelled = text.substr(start, pos - start);
    // A `j` right after the number makes it imaginary, as in Python.
    bool imag = pos < text.size() && text[pos] == 'j' &&
                (pos + 1 == text.size() ||
                 !(std::isalnum(static_cast<unsigned char>(text[pos + 1])) ||
                   text[pos + 1] == '_'));
    if (imag)
      advance();
    Token t{imag ? Tok::Imag : isFloat ? Tok::Float : Tok::Int, spelled, loc};
    errno = 0;
    if (isFloat || imag) {
      t.floatValue = std::strtod(spelled.c_str(), nullptr);
    } else {
      char *end = nullptr;
      long long v = std::strtoll(spelled.c_str(), &end, 10);
      if (errno == ERANGE)
        throw GraphError(loc,
                         "integer " + spelled + " does not fit in 64 bits");
      t.intValue = v;
    }
    return t;
  }

  Token string(SourceLoc loc) {
    advance(); // "
    std::string value;
    while (true) {
      if (pos >= text.size() || text[pos] == '\n')
        throw GraphError(loc, "unterminated string");
      char c = text[pos];
      advance();
      if (c == '"')
        break;
      if (c == '\\' && pos < text.size()) {
        char e = text[pos];
        advance();
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        continue;
      }
      value += c;
    }
    Token t{Tok::String, value, loc};
    return t;
  }

  const std::string &text;
  const std::string *file;
  size_t pos = 0;
  unsigned line = 1, column = 1;
};

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class Parser {
public:
  explicit Parser(std::vector<Token> tokens) : tokens(std::move(tokens)) {}

  std::shared_ptr<ProgramImpl> program() {
    auto impl = std::make_shared<ProgramImpl>();
    skipNewlines();
    while (peek().kind != Tok::Eof) {
      if (!isIdent("graph"))
        fail("expected 'graph' to start a graph definition");
      GraphDef def = graph();
      if (const GraphDef *previous = impl->find(def.signature.name))
        throw GraphError(def.signature.loc,
                         "graph '" + def.signature.name + "' is defined twice",
                         {{previous->signature.loc, "first defined here"}});
      impl->graphs.push_back(std::move(def));
      skipNewlines();
    }
    return impl;
  }

private:
  const Token &peek(size_t ahead = 0) const {
    return tokens[std::min(index + ahead, tokens.size() - 1)];
  }
  Token next() {
    Token t = peek();
    if (index < tokens.size() - 1)
      ++index;
    return t;
  }
  bool isPunct(const char *p, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Punct && peek(ahead).text == p;
  }
  bool isIdent(const char *name) const {
    return peek().kind == Tok::Ident && peek().text == name;
  }
  static std::string describe(const Token &t) {
    switch (t.kind) {
    case Tok::Eof:
    case Tok::Newline:
      return t.text;
    case Tok::String:
      return "string \"" + t.text + "\"";
    default:
      return "'" + t.text + "'";
    }
  }
  [[noreturn]] void fail(const std::string &what) const {
    throw GraphError(peek().loc, what + ", found " + describe(peek()));
  }
  Token expectPunct(const char *p, const std::string &context) {
    if (!isPunct(p))
      fail(std::string("expected '") + p + "' " + context);
    return next();
  }
  Token expectIdent(const char *what) {
    if (peek().kind != Tok::Ident)
      fail(std::string("expected ") + what);
    if (isKeyword(peek().text))
      fail(std::string("expected ") + what + " (a keyword cannot be one)");
    return next();
  }
  static bool isKeyword(const std::string &s) {
    return s == "graph" || s == "let" || s == "if" || s == "else" ||
           s == "true" || s == "false";
  }
  /// Consumes a `,` if one is next.
  bool takeComma() {
    if (!isPunct(","))
      return false;
    next();
    return true;
  }
  void skipNewlines() {
    while (peek().kind == Tok::Newline)
      next();
  }

  GraphDef graph() {
    GraphDef def;
    def.signature.loc = next().loc; // graph
    Token name = expectIdent("a graph name after 'graph'");
    def.signature.name = name.text;
    def.signature.loc = name.loc;
    expectPunct("(", "after the graph's name");
    if (!isPunct(")")) {
      do {
        def.signature.inputs.push_back(param());
      } while (takeComma());
    }
    expectPunct(")", "to close the inputs");
    skipNewlines(); // a long signature may break before -> and {
    expectPunct("->", "before the graph's outputs");
    if (isPunct("(")) {
      next();
      do {
        def.signature.outputs.push_back(param());
      } while (takeComma());
      expectPunct(")", "to close the outputs");
    } else {
      def.signature.outputs.push_back(param());
    }
    checkSignature(def.signature);
    skipNewlines();
    def.body = block();
    return def;
  }

  ParamSpec param() {
    ParamSpec p;
    Token name = expectIdent("an input or output name");
    p.name = name.text;
    p.loc = name.loc;
    expectPunct(":", "after '" + name.text + "' (name: dtype[dims])");
    Token type = expectIdent("a dtype (f32, f64, i32, bool, ...)");
    std::optional<DType> dtype = dtypeNamed(type.text);
    if (!dtype)
      throw GraphError(type.loc,
                       "unknown dtype '" + type.text +
                           "'; expected bool, i8, i16, i32, i64, u8, u16, "
                           "u32, u64, f32, f64, c64 (complex) or c128");
    p.dtype = *dtype;
    if (isPunct("[")) {
      next();
      if (!isPunct("]")) {
        do {
          const Token &t = peek();
          DimSpec d;
          if (t.kind == Tok::Int) {
            d.size = t.intValue; // the lexer reads no sign: never negative
          } else if (t.kind == Tok::Ident && !isKeyword(t.text)) {
            d.symbol = t.text;
          } else {
            fail("expected a dim (a size or a symbol such as N)");
          }
          next();
          p.dims.push_back(d);
        } while (takeComma());
      }
      expectPunct("]", "to close the dims");
    }
    return p;
  }

  /// Names are unique; output dims are bound by inputs.
  static void checkSignature(const GraphSignature &sig) {
    std::map<std::string, SourceLoc> names;
    std::set<std::string> inputSymbols;
    for (const ParamSpec &p : sig.inputs)
      for (const DimSpec &d : p.dims)
        if (!d.symbol.empty())
          inputSymbols.insert(d.symbol);
    for (const auto *list : {&sig.inputs, &sig.outputs})
      for (const ParamSpec &p : *list) {
        auto [it, fresh] = names.insert({p.name, p.loc});
        if (!fresh)
          throw GraphError(p.loc,
                           "'" + p.name + "' is declared twice in graph '" +
                               sig.name + "'",
                           {{it->second, "first declared here"}});
        if (inputSymbols.count(p.name))
          throw GraphError(p.loc,
                           "'" + p.name +
                               "' names both a tensor and a dim of graph '" +
                               sig.name + "'");
      }
    for (const ParamSpec &p : sig.outputs)
      for (const DimSpec &d : p.dims)
        if (!d.symbol.empty() && !inputSymbols.count(d.symbol))
          throw GraphError(p.loc, "dim '" + d.symbol + "' of output '" +
                                      p.name +
                                      "' is not a dim of any input of graph '" +
                                      sig.name + "', so nothing binds it");
  }

  Block block() {
    SourceLoc open = expectPunct("{", "to open a block").loc;
    Block stmts;
    while (true) {
      skipNewlinesAndSemicolons();
      if (isPunct("}")) {
        next();
        return stmts;
      }
      if (peek().kind == Tok::Eof)
        throw GraphError(open, "the block opened here is not closed before "
                               "the end of the input");
      stmts.push_back(statement());
      if (isPunct("["))
        fail("expected the end of the statement: indexing is not part of "
             "the language (use slice, index_select or gather)");
      if (!isPunct("}") && peek().kind != Tok::Newline && !isPunct(";"))
        fail("expected the end of the statement (a newline or ';')");
    }
  }
  void skipNewlinesAndSemicolons() {
    while (peek().kind == Tok::Newline || isPunct(";"))
      next();
  }

  Stmt statement() {
    Stmt s;
    s.loc = peek().loc;
    if (isIdent("let")) {
      next();
      if (isPunct("(")) {
        next();
        s.kind = Stmt::Kind::LetTuple;
        do {
          Token n = expectIdent("a name to bind");
          s.names.push_back({n.text, n.loc});
        } while (takeComma());
        expectPunct(")", "to close the names");
      } else {
        s.kind = Stmt::Kind::Let;
        Token n = expectIdent("a name after 'let'");
        s.names.push_back({n.text, n.loc});
      }
      expectPunct("=", "after the name(s) of 'let'");
      s.value = expr();
      return s;
    }
    if (isIdent("if")) {
      next();
      s.kind = Stmt::Kind::If;
      s.value = expr();
      s.thenBlock = block();
      // `else` may start the next line.
      size_t afterThen = index;
      skipNewlines();
      if (!isIdent("else"))
        index = afterThen;
      if (isIdent("else")) {
        next();
        if (isIdent("if"))
          s.elseBlock.push_back(statement());
        else
          s.elseBlock = block();
      }
      return s;
    }
    if (peek().kind == Tok::Ident && isPunct("=", 1)) {
      s.kind = Stmt::Kind::Assign;
      Token n = expectIdent("an output name");
      s.names.push_back({n.text, n.loc});
      next(); // =
      s.value = expr();
      return s;
    }
    fail("expected a statement: 'let name = ...', 'output = ...' or 'if'");
  }

  ExprPtr make(Expr::Kind kind, SourceLoc loc) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->loc = loc;
    return e;
  }
  ExprPtr binary(BinOp op, SourceLoc loc, ExprPtr lhs, ExprPtr rhs) {
    ExprPtr e = make(Expr::Kind::Binary, loc);
    e->depth = std::max(lhs->depth, rhs->depth) + 1;
    if (e->depth > kMaxChain)
      throw GraphError(loc, "expression has more than " +
                                std::to_string(kMaxChain) +
                                " operators in a chain; split it with let");
    e->binOp = op;
    e->operands.push_back(std::move(lhs));
    e->operands.push_back(std::move(rhs));
    return e;
  }
  /// After a binary operator an expression may go on on the next line.
  Token takeOperator() {
    Token t = next();
    skipNewlines();
    return t;
  }

  /// Nesting of expressions being parsed (parentheses, unary operators,
  /// arguments): bounded, so that no input exhausts the stack.
  struct Nesting {
    Parser &parser;
    explicit Nesting(Parser &parser) : parser(parser) {
      if (++parser.nesting > kMaxNesting)
        throw GraphError(parser.peek().loc, "expression nests deeper than " +
                                                std::to_string(kMaxNesting) +
                                                " levels");
    }
    ~Nesting() { --parser.nesting; }
  };
  static constexpr unsigned kMaxNesting = 256;
  /// The longest chain of binary operators in one expression (a chain is
  /// evaluated recursively).
  static constexpr unsigned kMaxChain = 4096;

  ExprPtr expr() {
    Nesting guard(*this);
    return orExpr();
  }
  ExprPtr orExpr() {
    ExprPtr e = andExpr();
    while (isPunct("||")) {
      Token op = takeOperator();
      e = binary(BinOp::Or, op.loc, std::move(e), andExpr());
    }
    return e;
  }
  ExprPtr andExpr() {
    ExprPtr e = compare();
    while (isPunct("&&")) {
      Token op = takeOperator();
      e = binary(BinOp::And, op.loc, std::move(e), compare());
    }
    return e;
  }
  std::optional<BinOp> comparison() const {
    static const std::pair<const char *, BinOp> ops[] = {
        {"==", BinOp::Eq}, {"!=", BinOp::Ne}, {"<", BinOp::Lt},
        {"<=", BinOp::Le}, {">", BinOp::Gt},  {">=", BinOp::Ge}};
    for (auto [p, op] : ops)
      if (isPunct(p))
        return op;
    return std::nullopt;
  }
  ExprPtr compare() {
    ExprPtr e = additive();
    if (std::optional<BinOp> op = comparison()) {
      Token t = takeOperator();
      e = binary(*op, t.loc, std::move(e), additive());
      if (comparison())
        fail("comparisons do not chain; use && to combine them");
    }
    return e;
  }
  ExprPtr additive() {
    ExprPtr e = multiplicative();
    while (isPunct("+") || isPunct("-")) {
      Token op = takeOperator();
      e = binary(op.text == "+" ? BinOp::Add : BinOp::Sub, op.loc, std::move(e),
                 multiplicative());
    }
    return e;
  }
  ExprPtr multiplicative() {
    ExprPtr e = unary();
    while (isPunct("*") || isPunct("/") || isPunct("%") || isPunct("@")) {
      Token op = takeOperator();
      BinOp kind = op.text == "*"   ? BinOp::Mul
                   : op.text == "/" ? BinOp::Div
                   : op.text == "%" ? BinOp::Mod
                                    : BinOp::MatMul;
      e = binary(kind, op.loc, std::move(e), unary());
    }
    return e;
  }
  ExprPtr unary() {
    if (isPunct("-") || isPunct("!")) {
      Nesting guard(*this);
      Token op = next();
      ExprPtr e = make(Expr::Kind::Unary, op.loc);
      e->unOp = op.text == "-" ? UnOp::Neg : UnOp::Not;
      e->operands.push_back(unary());
      e->depth = e->operands[0]->depth + 1;
      return e;
    }
    return power();
  }
  ExprPtr power() {
    ExprPtr e = primary();
    if (isPunct("**")) {
      Token op = takeOperator();
      e = binary(BinOp::Pow, op.loc, std::move(e), unary());
    }
    return e;
  }

  ExprPtr primary() {
    const Token &t = peek();
    switch (t.kind) {
    case Tok::Int: {
      ExprPtr e = make(Expr::Kind::Int, t.loc);
      e->intValue = next().intValue;
      return e;
    }
    case Tok::Float: {
      ExprPtr e = make(Expr::Kind::Float, t.loc);
      e->floatValue = next().floatValue;
      return e;
    }
    case Tok::Imag: {
      ExprPtr e = make(Expr::Kind::Imag, t.loc);
      e->floatValue = next().floatValue;
      return e;
    }
    case Tok::String: {
      ExprPtr e = make(Expr::Kind::String, t.loc);
      e->text = next().text;
      return e;
    }
    case Tok::Ident: {
      if (t.text == "true" || t.text == "false") {
        ExprPtr e = make(Expr::Kind::Bool, t.loc);
        e->boolValue = next().text == "true";
        return e;
      }
      if (isKeyword(t.text))
        fail("expected an expression");
      Token name = next();
      if (!isPunct("(")) {
        ExprPtr e = make(Expr::Kind::Name, name.loc);
        e->text = name.text;
        return e;
      }
      ExprPtr e = make(Expr::Kind::Call, name.loc);
      e->text = name.text;
      next(); // (
      while (!isPunct(")")) {
        if (peek().kind == Tok::Ident && isPunct("=", 1)) {
          Token key = next();
          next(); // =
          for (const auto &[k, v] : e->keywords)
            if (k == key.text)
              throw GraphError(key.loc, "keyword argument '" + key.text +
                                            "' given twice");
          e->keywords.push_back({key.text, expr()});
          e->keywordLocs.push_back(key.loc);
        } else {
          if (!e->keywords.empty())
            fail("expected a keyword argument (name=value): positional "
                 "arguments come first");
          e->operands.push_back(expr());
        }
        if (!isPunct(","))
          break;
        next();
      }
      expectPunct(")", "to close the arguments");
      return e;
    }
    case Tok::Punct:
      if (t.text == "(") {
        next();
        ExprPtr e = expr();
        expectPunct(")", "to close the parenthesis");
        return e;
      }
      if (t.text == "[") {
        ExprPtr e = make(Expr::Kind::List, next().loc);
        while (!isPunct("]")) {
          e->operands.push_back(expr());
          if (!isPunct(","))
            break;
          next();
        }
        expectPunct("]", "to close the list");
        return e;
      }
      break;
    default:
      break;
    }
    fail("expected an expression");
  }

  std::vector<Token> tokens;
  size_t index = 0;
  unsigned nesting = 0;
};

/// Every called name is a graph or a built-in, in every branch.
void checkCalls(const ProgramImpl &program, const Expr &e) {
  if (e.kind == Expr::Kind::Call && !program.find(e.text) && !isBuiltin(e.text))
    throw GraphError(e.loc, "unknown function '" + e.text +
                                "': not a graph of this program nor a "
                                "built-in (docs/GraphDSL.md lists them)");
  for (const ExprPtr &operand : e.operands)
    checkCalls(program, *operand);
  for (const auto &[key, value] : e.keywords)
    checkCalls(program, *value);
}
void checkCalls(const ProgramImpl &program, const Block &block) {
  for (const Stmt &s : block) {
    if (s.value)
      checkCalls(program, *s.value);
    checkCalls(program, s.thenBlock);
    checkCalls(program, s.elseBlock);
  }
}
} // namespace

Program Program::parse(const std::string &text, const std::string &filename) {
  const std::string *file = internFile(filename);
  std::vector<Token> tokens = Lexer(text, file).run();
  std::shared_ptr<ProgramImpl> impl = Parser(std::move(tokens)).program();
  impl->file = file;
  for (const GraphDef &g : impl->graphs)
    checkCalls(*impl, g.body);
  Program program;
  program.impl_ = std::move(impl);
  return program;
}

std::vector<std::string> Program::graphNames() const {
  std::vector<std::string> names;
  for (const GraphDef &g : impl_->graphs)
    names.push_back(g.signature.name);
  return names;
}

bool Program::hasGraph(const std::string &name) const {
  return impl_->find(name) != nullptr;
}

const GraphSignature &Program::signature(const std::string &graph) const {
  if (const GraphDef *g = impl_->find(graph))
    return g->signature;
  std::string names;
  for (const GraphDef &g : impl_->graphs)
    names += (names.empty() ? "" : ", ") + g.signature.name;
  throw Error("no graph '" + graph + "' in the program; it has " +
              (names.empty() ? std::string("none") : names));
}
