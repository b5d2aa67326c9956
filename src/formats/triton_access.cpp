// Access analysis of a Triton kernel's IR (include/lrrt/formats/triton_access.hpp,
// docs/access.md). The IR is MLIR's printed form: one operation per line, a
// region opened by a line ending in '{' and closed by a line starting with
// '}'. The analysis is a taint analysis over SSA values:
//   1. parse the kernel's body into operations (results, operand names,
//      regions, block arguments), checking that every name used is defined;
//   2. each pointer parameter taints itself; operations that only compute
//      addresses or move pointers (the "follow" rows of the table) pass the
//      taint of their operands to their results, structured control flow
//      passes it position by position (init -> block argument -> yield ->
//      result); iterate to a fixpoint (taints only grow);
//   3. accesses (loads, stores, atomics, descriptors) read the taint of their
//      pointer operand; every other use of a tainted value makes its
//      parameters read-write.
// Soundness does not depend on the parser knowing every operation: an
// operation it does not know is an escape for its operands, and a pointer it
// produces from nothing known has "unknown origin", which makes every
// pointer parameter read-write when it is accessed or escapes.
//
// Step 1, the parser, is in triton_access_parser.cpp; this file holds steps
// 2 and 3.
#include "lrrt/formats/triton_access.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "triton_access_parser.hpp"

namespace lrrt::formats {

AccessMode TritonParamAccess::mode() const {
  if (read && write) return AccessMode::ReadWrite;
  if (write) return AccessMode::Write;
  return AccessMode::Read;
}

namespace {

using triton_ir::Op;
using triton_ir::OpKind;
using triton_ir::Parsed;
using triton_ir::Unreadable;
using triton_ir::Value;

// The fixpoint: taint bits per value (one per parameter, then "unknown").
class Taint {
 public:
  Taint(size_t values, size_t bits) : words_((bits + 63) / 64), bits_(values * words_, 0), succ_(values) {}
  void set(size_t v, size_t bit) {
    uint64_t& w = bits_[v * words_ + bit / 64];
    const uint64_t m = uint64_t(1) << (bit % 64);
    if (!(w & m)) {
      w |= m;
      dirty_.push_back(v);
    }
  }
  bool test(size_t v, size_t bit) const { return bits_[v * words_ + bit / 64] >> (bit % 64) & 1; }
  bool empty(size_t v) const {
    for (size_t w = 0; w < words_; ++w)
      if (bits_[v * words_ + w]) return false;
    return true;
  }
  void flow(size_t from, size_t to) {
    succ_[from].push_back(to);
    dirty_.push_back(from);
  }
  void solve() {
    while (!dirty_.empty()) {
      const size_t v = dirty_.back();
      dirty_.pop_back();
      for (size_t to : succ_[v]) {
        bool grew = false;
        for (size_t w = 0; w < words_; ++w) {
          const uint64_t add = bits_[v * words_ + w] & ~bits_[to * words_ + w];
          if (add) {
            bits_[to * words_ + w] |= add;
            grew = true;
          }
        }
        if (grew) dirty_.push_back(to);
      }
    }
  }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
  std::vector<std::vector<size_t>> succ_;
  std::vector<size_t> dirty_;
};

class Analysis {
 public:
  explicit Analysis(Parsed p) : p_(std::move(p)), unknown_bit_(p_.param_names.size()), taint_(p_.values.size(), unknown_bit_ + 1) {
    result_.analysed = true;
    for (size_t i = 0; i < p_.param_names.size(); ++i) {
      TritonParamAccess a;
      a.name = p_.param_names[i];
      a.pointer = p_.param_pointer[i];
      result_.params.push_back(std::move(a));
    }
  }

  TritonAccess run() {
    for (size_t i = 0; i < p_.param_names.size(); ++i)
      if (p_.param_pointer[i]) taint_.set(i, i);  // parameters are the first values
    for (size_t v : p_.unknown_origin)
      if (p_.values[v].pointer_typed) taint_.set(v, unknown_bit_);
    for (size_t i = 0; i < p_.ops.size(); ++i) wire(i);
    taint_.solve();
    // A pointer computed by a "follow" op from no pointer (an integer cast
    // to one) has unknown origin.
    for (size_t v : needs_origin_)
      if (taint_.empty(v)) taint_.set(v, unknown_bit_);
    taint_.solve();
    for (const auto& e : effects_) apply(e);
    merged();
    return std::move(result_);
  }

 private:
  enum class Effect { Read, Write, ReadWrite, Escape };
  struct Use {
    size_t value;
    Effect effect;
    size_t op;
  };

  void escape_all(const Op& op, size_t index, size_t from = 0) {
    for (size_t u = from; u < op.uses.size(); ++u) effects_.push_back({op.uses[u], Effect::Escape, index});
  }

  void unknown_results(const Op& op) {
    for (size_t r : op.results) taint_.set(r, unknown_bit_);
  }

  // The last op of a region when it is `want`; nullptr when the region is
  // empty or ends otherwise (MLIR leaves out a yield without operands).
  const Op* terminator(const Op& owner, size_t region, OpKind want) const {
    if (region >= owner.terminators.size() || owner.terminators[region] < 0) return nullptr;
    const Op& t = p_.ops[size_t(owner.terminators[region])];
    return t.kind == want ? &t : nullptr;
  }

  void flows(const std::vector<size_t>& from, const std::vector<size_t>& to, const Op& owner) {
    if (from.size() != to.size())
      throw Unreadable{fmt::format("line {}: {} passes {} values to {}", owner.line, owner.name, from.size(), to.size())};
    for (size_t k = 0; k < from.size(); ++k) taint_.flow(from[k], to[k]);
  }

  // The yield's operands, or none when the region ends without one.
  const std::vector<size_t>& yielded(const Op* yield) const {
    static const std::vector<size_t> kNone;
    return yield ? yield->uses : kNone;
  }

  void wire(size_t index) {
    const Op& op = p_.ops[index];
    switch (op.kind) {
      case OpKind::Follow:
        for (size_t r : op.results) {
          for (size_t u : op.uses) taint_.flow(u, r);
          if (op.result_pointer) needs_origin_.push_back(r);
        }
        return;
      case OpKind::Load:
      case OpKind::Store:
      case OpKind::Atomic: {
        if (op.uses.empty()) throw Unreadable{fmt::format("line {}: {} without operands", op.line, op.name)};
        const Effect e = op.kind == OpKind::Load ? Effect::Read : op.kind == OpKind::Store ? Effect::Write : Effect::ReadWrite;
        effects_.push_back({op.uses.front(), e, index});
        escape_all(op, index, 1);
        if (op.loads_pointers) unknown_results(op);
        return;
      }
      case OpKind::For: {
        std::vector<size_t> args, inits;
        for (const auto& [a, i] : op.pairs) {
          args.push_back(a);
          inits.push_back(i);
        }
        if (!op.region_args.empty() && !op.region_args[0].empty())
          throw Unreadable{fmt::format("line {}: scf.for with a block label", op.line)};
        const auto& yield = yielded(terminator(op, 0, OpKind::Yield));
        flows(inits, args, op);
        flows(inits, op.results, op);
        flows(yield, args, op);
        flows(yield, op.results, op);
        escape_all(op, index);  // bounds and step
        return;
      }
      case OpKind::If: {
        for (const auto& args : op.region_args)
          if (!args.empty()) throw Unreadable{fmt::format("line {}: scf.if with block arguments", op.line)};
        if (!op.results.empty() && op.terminators.size() != 2)
          throw Unreadable{fmt::format("line {}: scf.if with results and without an else region", op.line)};
        for (size_t r = 0; r < op.terminators.size(); ++r) flows(yielded(terminator(op, r, OpKind::Yield)), op.results, op);
        escape_all(op, index);  // the condition
        return;
      }
      case OpKind::While: {
        std::vector<size_t> args, inits;
        for (const auto& [a, i] : op.pairs) {
          args.push_back(a);
          inits.push_back(i);
        }
        if (!op.region_args.empty() && !op.region_args[0].empty())
          throw Unreadable{fmt::format("line {}: scf.while with a block label on its first region", op.line)};
        const Op* cond = terminator(op, 0, OpKind::Condition);
        if (!cond || cond->uses.empty() || op.terminators.size() != 2)
          throw Unreadable{fmt::format("line {}: scf.while without scf.condition or its do region", op.line)};
        const std::vector<size_t> passed(cond->uses.begin() + 1, cond->uses.end());
        const std::vector<size_t> after = op.region_args.size() > 1 ? op.region_args[1] : std::vector<size_t>{};
        flows(inits, args, op);
        flows(yielded(terminator(op, 1, OpKind::Yield)), args, op);
        flows(passed, after, op);
        flows(passed, op.results, op);
        effects_.push_back({cond->uses.front(), Effect::Escape, index});
        escape_all(op, index);
        return;
      }
      case OpKind::Yield:
      case OpKind::Condition:
        if (op.parent >= 0) {
          const Op& owner = p_.ops[size_t(op.parent)];
          const bool last = size_t(op.region) < owner.terminators.size() && owner.terminators[size_t(op.region)] == int(index);
          const bool wired = (owner.kind == OpKind::For && op.region == 0 && op.kind == OpKind::Yield) ||
                             (owner.kind == OpKind::If && op.kind == OpKind::Yield) ||
                             (owner.kind == OpKind::While && op.region == 0 && op.kind == OpKind::Condition) ||
                             (owner.kind == OpKind::While && op.region == 1 && op.kind == OpKind::Yield);
          if (last && wired) return;  // the owner passes its operands on
        }
        escape_all(op, index);
        return;
      case OpKind::Other:
        escape_all(op, index);
        // tt.int_to_ptr and any pointer an unknown op makes: unknown origin.
        if (op.result_pointer || op.name == "tt.int_to_ptr") unknown_results(op);
        for (const auto& region : op.region_args)
          for (size_t a : region)
            if (p_.values[a].pointer_typed) taint_.set(a, unknown_bit_);
        return;
    }
  }

  void apply(const Use& u) {
    const Op& op = p_.ops[u.op];
    const bool unknown = taint_.test(u.value, unknown_bit_);
    for (size_t i = 0; i < result_.params.size(); ++i) {
      TritonParamAccess& a = result_.params[i];
      if (!a.pointer || !(unknown || taint_.test(u.value, i))) continue;
      if (unknown) {
        // It may be any parameter: all of them may be read and written.
        a.read = a.write = true;
        if (a.reason.empty()) a.reason = fmt::format("{} at line {} uses a pointer of unknown origin", op.name, op.line);
        continue;
      }
      switch (u.effect) {
        case Effect::Read: a.read = true; break;
        case Effect::Write: a.write = true; break;
        case Effect::ReadWrite: a.read = a.write = true; break;
        case Effect::Escape:
          a.read = a.write = true;
          if (a.reason.empty()) a.reason = fmt::format("operand of {} at line {}", op.name, op.line);
          break;
      }
    }
  }

  // A value that may be either of two parameters (arith.select, a block
  // argument merging them) makes both read-write.
  void merged() {
    for (size_t v = 0; v < p_.values.size(); ++v) {
      size_t count = 0;
      for (size_t i = 0; i < result_.params.size(); ++i) count += taint_.test(v, i);
      if (count < 2) continue;
      for (size_t i = 0; i < result_.params.size(); ++i) {
        if (!taint_.test(v, i)) continue;
        TritonParamAccess& a = result_.params[i];
        a.read = a.write = true;
        if (a.reason.empty())
          a.reason = fmt::format("a value at line {} may be either of several parameters", p_.values[v].line);
      }
    }
  }

  Parsed p_;
  size_t unknown_bit_;
  Taint taint_;
  std::vector<Use> effects_;
  std::vector<size_t> needs_origin_;
  TritonAccess result_;
};

}  // namespace

TritonAccess analyze_triton_access(std::string_view ir_text, std::string_view kernel) {
  try {
    return Analysis(triton_ir::parse_triton_ir(ir_text, kernel)).run();
  } catch (const Unreadable& u) {
    TritonAccess out;
    out.failure = u.why;
    return out;
  } catch (const std::bad_alloc&) {
    TritonAccess out;
    out.failure = "out of memory";
    return out;
  }
}

}  // namespace lrrt::formats
