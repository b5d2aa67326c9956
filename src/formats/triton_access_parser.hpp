// Private to the Triton access analysis (triton_access.cpp): the kernel body
// as triton_access_parser.cpp parses it from the IR's lines (operations with
// their results, operands and regions; values; the parameters), the error a
// shape the parser does not read throws (Unreadable), and the parser's entry
// point, parse_triton_ir.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lrrt::formats::triton_ir {

// Thrown inside the analysis only: the IR has a shape it does not read.
struct Unreadable {
  std::string why;
};

enum class OpKind {
  Follow,      // results derive from the operands (address arithmetic, shapes, select)
  Load,        // reads through operand 0
  Store,       // writes through operand 0
  Atomic,      // reads and writes through operand 0
  For,
  If,
  While,
  Yield,       // scf.yield
  Condition,   // scf.condition
  Other,       // anything else: its operands escape
};

struct Op {
  size_t line = 0;
  std::string name;
  OpKind kind = OpKind::Other;
  std::vector<size_t> results;
  std::vector<size_t> uses;                       // operands, in order (not the pairs)
  std::vector<std::pair<size_t, size_t>> pairs;   // scf.for iter_args / scf.while: (block arg, init)
  int parent = -1;  // the op whose region holds this one; -1: the kernel's body
  int region = 0;
  bool result_pointer = false;  // a pointer type among its result types (its line or closing line)
  bool loads_pointers = false;  // accesses memory holding pointers (!tt.ptr<!tt.ptr<...>>)
  std::vector<std::vector<size_t>> region_args;  // entry-block arguments per region
  std::vector<int> terminators;                  // per region: its last op
};

struct Value {
  size_t line = 0;
  bool pointer_typed = false;
};

struct Parsed {
  std::vector<std::string> param_names;
  std::vector<bool> param_pointer;
  std::vector<Op> ops;
  std::vector<Value> values;           // parameters first, in order
  std::vector<size_t> unknown_origin;  // values defined with no known origin
};

// Parses the body of `kernel` in the IR text; throws Unreadable.
Parsed parse_triton_ir(std::string_view ir, std::string_view kernel);

}  // namespace lrrt::formats::triton_ir
