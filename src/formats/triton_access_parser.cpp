// The line parser of the Triton access analysis (triton_access.cpp, whose
// header comment describes the IR's shape and the analysis): reads a kernel's
// body from MLIR's printed form into operations, values and parameters
// (triton_access_parser.hpp), resolving every SSA name in its region's scope;
// what it does not read throws Unreadable.
#include "triton_access_parser.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>

namespace lrrt::formats::triton_ir {
namespace {

[[noreturn]] void unreadable(size_t line, const std::string& what) {
  throw Unreadable{fmt::format("line {}: {}", line, what)};
}

bool ssa_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' || c == '-';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The text with every string literal's contents removed (the quotes stay):
// inline assembly, locations and names may hold '%', '{' or '}'.
std::string strip_strings(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == '"') {
        quoted = false;
        out += c;
      }
      continue;
    }
    if (c == '"') quoted = true;
    out += c;
  }
  return out;
}

// Every SSA name in the text, in order: "%x", "%x#1".
std::vector<std::string> ssa_names(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') continue;
    size_t j = i + 1;
    while (j < s.size() && ssa_char(s[j])) ++j;
    if (j == i + 1) continue;
    if (j + 1 < s.size() && s[j] == '#' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
      ++j;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    }
    out.emplace_back(s.substr(i, j - i));
    i = j - 1;
  }
  return out;
}

bool has_pointer_type(std::string_view s) {
  return s.find("!tt.ptr") != std::string_view::npos || s.find("tensordesc") != std::string_view::npos;
}

// Whether the result types of an op's text (after the last " -> ", else
// after the last " : ") hold a pointer: MLIR prints the types an op defines
// last. An op whose result type is inferred from its operands has a pointer
// result only from a pointer operand, which the analysis already tracks.
bool result_has_pointer(std::string_view s) {
  size_t at = s.rfind(" -> ");
  if (at == std::string_view::npos) at = s.rfind(" : ");
  return at != std::string_view::npos && has_pointer_type(s.substr(at));
}

// Whether some !tt.ptr<...> in the text points to pointers: what a load
// through it yields is then a pointer of unknown origin.
bool pointer_to_pointer(std::string_view s) {
  for (size_t at = s.find("!tt.ptr<"); at != std::string_view::npos; at = s.find("!tt.ptr<", at + 1)) {
    int depth = 0;
    size_t i = at + 7;
    for (; i < s.size(); ++i) {
      if (s[i] == '<') ++depth;
      else if (s[i] == '>' && --depth == 0) break;
    }
    if (has_pointer_type(s.substr(at + 8, i - at - 8))) return true;
  }
  return false;
}

int net_braces(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '{' ? 1 : c == '}' ? -1 : 0;
  return n;
}

// The text inside the parenthesis opening at s[open] (string-free text).
std::optional<std::string_view> paren_group(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')' && --depth == 0) return s.substr(open + 1, i - open - 1);
  }
  return std::nullopt;
}

std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '<' || c == '{' || c == '[') ++depth;
    else if (c == ')' || c == '>' || c == '}' || c == ']') --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!trim(s.substr(start)).empty()) out.push_back(trim(s.substr(start)));
  return out;
}

OpKind op_kind(std::string_view name) {
  static const std::string_view follow[] = {
      "tt.addptr",  "tt.splat",          "tt.broadcast",    "tt.expand_dims",          "tt.reshape",
      "tt.trans",   "tt.cat",            "tt.join",         "tt.split",                "tt.unsplat",
      "tt.advance", "tt.make_block_ptr", "tt.bitcast",      "tt.make_tensor_descriptor", "arith.select",
      "ttg.convert_layout"};
  for (auto f : follow)
    if (name == f) return OpKind::Follow;
  if (name == "tt.load" || name == "tt.descriptor_load" || name == "tt.descriptor_gather") return OpKind::Load;
  if (name == "tt.store" || name == "tt.descriptor_store" || name == "tt.descriptor_scatter") return OpKind::Store;
  // A descriptor reduction reads and writes (an atomic read-modify-write);
  // so does any descriptor atomic Triton may add (tt.descriptor_atomic_*).
  if (name == "tt.atomic_rmw" || name == "tt.atomic_cas" || name == "tt.descriptor_reduce" ||
      name.rfind("tt.descriptor_atomic", 0) == 0)
    return OpKind::Atomic;
  if (name == "scf.for") return OpKind::For;
  if (name == "scf.if") return OpKind::If;
  if (name == "scf.while") return OpKind::While;
  if (name == "scf.yield") return OpKind::Yield;
  if (name == "scf.condition") return OpKind::Condition;
  return OpKind::Other;
}

struct OpenRegion {
  int owner;  // op index, -1 for the kernel's body
  int index;  // which region of the owner
  int last_op = -1;
  bool has_label = false;
  std::vector<std::string> names;  // defined in this region: out of scope when it closes
};

// MLIR names values per region: a name is visible in the region that
// defines it and the regions nested in it, and sibling regions reuse names.
class Parser {
 public:
  Parser(std::string_view ir, std::string_view kernel) : ir_(ir), kernel_(kernel) {}

  Parsed run() {
    size_t at = find_header();
    open_.push_back({-1, 0, -1, false, {}});
    parse_header(at);
    parse_body();
    return std::move(out_);
  }

 private:
  size_t define(const std::string& name, bool pointer_typed) {
    if (visible_.count(name)) unreadable(line_, fmt::format("{} is defined twice", name));
    visible_.emplace(name, out_.values.size());
    open_.back().names.push_back(name);
    out_.values.push_back({line_, pointer_typed});
    return out_.values.size() - 1;
  }

  size_t resolve(const std::string& name) const {
    if (auto it = visible_.find(name); it != visible_.end()) return it->second;
    if (name.size() > 2 && name.compare(name.size() - 2, 2, "#0") == 0)
      if (auto it = visible_.find(name.substr(0, name.size() - 2)); it != visible_.end()) return it->second;
    unreadable(line_, fmt::format("{} is used where it is not defined", name));
  }

  std::vector<size_t> resolve_all(const std::vector<std::string>& names) const {
    std::vector<size_t> out;
    for (const auto& n : names) out.push_back(resolve(n));
    return out;
  }

  size_t find_header() {
    for (const std::string& head : {fmt::format("tt.func public @{}(", kernel_), fmt::format("tt.func public @\"{}\"(", kernel_)}) {
      const size_t at = ir_.find(head);
      if (at != std::string_view::npos) return at + head.size() - 1;
    }
    throw Unreadable{fmt::format("no \"tt.func public @{}(\"", kernel_)};
  }

  void parse_header(size_t open) {
    size_t eol = ir_.find('\n', open);
    if (eol == std::string_view::npos) eol = ir_.size();
    line_ = size_t(std::count(ir_.begin(), ir_.begin() + std::ptrdiff_t(open), '\n')) + 1;
    const std::string text = strip_strings(ir_.substr(open, eol - open));
    auto params = paren_group(text, 0);
    if (!params) unreadable(line_, "the signature does not close on its line");
    for (auto p : split_top(*params)) {
      const size_t colon = p.find(':');
      if (p.empty() || p.front() != '%' || colon == std::string_view::npos) unreadable(line_, "cannot read a parameter");
      const std::string name(trim(p.substr(0, colon)));
      // "%" alone: a parameter with no name, which nothing could refer to.
      if (name.size() < 2) unreadable(line_, "a parameter has no name");
      const bool pointer = has_pointer_type(p.substr(colon + 1, p.find_first_of(" {", colon + 2) - colon - 1));
      define(name, pointer);
      out_.param_names.push_back(name.substr(1));
      out_.param_pointer.push_back(pointer);
    }
    if (net_braces(std::string_view(text).substr(params->size() + 2)) != 1)
      unreadable(line_, "the kernel's body does not open on the signature's line");
    pos_ = eol;
  }

  void parse_body() {
    while (!open_.empty()) {
      if (pos_ >= ir_.size()) throw Unreadable{"the kernel's body does not close"};
      size_t eol = ir_.find('\n', pos_ + 1);
      if (eol == std::string_view::npos) eol = ir_.size();
      ++line_;
      const std::string_view raw = trim(ir_.substr(pos_ + 1, eol - pos_ - 1));
      pos_ = eol;
      if (raw.empty()) continue;
      if (raw.front() == '}') close_region(raw);
      else if (raw.front() == '^') block_label(raw);
      else operation(raw);
    }
  }

  void close_region(std::string_view raw) {
    OpenRegion done = std::move(open_.back());
    open_.pop_back();
    for (const auto& n : done.names) visible_.erase(n);
    if (done.owner >= 0) {
      Op& owner = out_.ops[size_t(done.owner)];
      if (owner.terminators.size() <= size_t(done.index)) owner.terminators.resize(size_t(done.index) + 1, -1);
      owner.terminators[size_t(done.index)] = done.last_op;
    }
    const std::string rest = strip_strings(raw.substr(1));
    if (!ssa_names(rest).empty()) unreadable(line_, "a value after a region's '}'");
    const int net = net_braces(rest);
    if (net == 0) {
      if (done.owner >= 0 && result_has_pointer(rest)) out_.ops[size_t(done.owner)].result_pointer = true;
      return;
    }
    if (net != 1 || done.owner < 0) unreadable(line_, "unbalanced braces");
    open_.push_back({done.owner, done.index + 1, -1, false, {}});
  }

  void block_label(std::string_view raw) {
    const std::string text = strip_strings(raw);
    OpenRegion& region = open_.back();
    const bool entry = region.last_op < 0 && !region.has_label && region.owner >= 0;
    region.has_label = true;
    std::vector<size_t> args;
    if (const size_t p = text.find('('); p != std::string::npos) {
      auto group = paren_group(text, p);
      if (!group) unreadable(line_, "a block label's arguments do not close");
      for (auto a : split_top(*group)) {
        const size_t colon = a.find(':');
        if (a.empty() || a.front() != '%' || colon == std::string_view::npos) unreadable(line_, "cannot read a block argument");
        const size_t id = define(std::string(trim(a.substr(0, colon))), has_pointer_type(a.substr(colon + 1)));
        args.push_back(id);
        // Arguments of a block that is not the entry of an op's region come
        // from branches (cf.br), which the analysis does not follow.
        if (!entry) out_.unknown_origin.push_back(id);
      }
    }
    if (entry) {
      Op& owner = out_.ops[size_t(region.owner)];
      if (owner.region_args.size() <= size_t(region.index)) owner.region_args.resize(size_t(region.index) + 1);
      owner.region_args[size_t(region.index)] = std::move(args);
    }
  }

  // Reads "%a, %b:2 = " at the start of the line into result names.
  std::vector<std::string> results(std::string_view& s) {
    std::vector<std::string> out;
    if (s.empty() || s.front() != '%') return out;
    size_t i = 0;
    while (true) {
      if (i >= s.size() || s[i] != '%') unreadable(line_, "cannot read the results");
      size_t j = i + 1;
      while (j < s.size() && ssa_char(s[j])) ++j;
      const std::string base(s.substr(i, j - i));
      size_t count = 1;
      if (j < s.size() && s[j] == ':') {
        size_t k = j + 1;
        count = 0;
        while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])) && count < 1000000)
          count = count * 10 + size_t(s[k++] - '0');
        if (k == j + 1 || count == 0 || count >= 1000000) unreadable(line_, "cannot read a result count");
        j = k;
      }
      if (count == 1) out.push_back(base);
      else
        for (size_t r = 0; r < count; ++r) out.push_back(fmt::format("{}#{}", base, r));
      while (j < s.size() && s[j] == ' ') ++j;
      if (j < s.size() && s[j] == ',') {
        i = j + 1;
        while (i < s.size() && s[i] == ' ') ++i;
        continue;
      }
      if (j + 1 < s.size() && s[j] == '=' && s[j + 1] == ' ') {
        s = trim(s.substr(j + 1));
        return out;
      }
      unreadable(line_, "cannot read the results");
    }
  }

  void operation(std::string_view raw) {
    Op op;
    op.line = line_;
    op.parent = open_.back().owner;
    op.region = open_.back().index;
    std::string_view s = raw;
    const std::vector<std::string> result_names = results(s);
    size_t n = 0;
    if (!s.empty() && s.front() == '"') {
      n = s.find('"', 1);
      if (n == std::string_view::npos) unreadable(line_, "an operation name does not close");
      op.name = std::string(s.substr(1, n - 1));
      ++n;
    } else {
      while (n < s.size() && (std::isalnum(static_cast<unsigned char>(s[n])) || s[n] == '_' || s[n] == '.' || s[n] == '$')) ++n;
      op.name = std::string(s.substr(0, n));
    }
    if (op.name.empty()) unreadable(line_, "cannot read the operation's name");
    op.kind = op_kind(op.name);
    const std::string rest = strip_strings(s.substr(n));
    op.result_pointer = result_has_pointer(rest);
    op.loads_pointers = pointer_to_pointer(rest);
    // Names the op defines inside its first region (scf.for's induction
    // variable and iter_args, scf.while's arguments).
    std::vector<std::string> region_defs;
    std::vector<std::string> inits;
    switch (op.kind) {
      case OpKind::For: read_for(rest, op, region_defs, inits); break;
      case OpKind::While: read_while(rest, op, region_defs, inits); break;
      default: op.uses = resolve_all(ssa_names(rest)); break;
    }
    const std::vector<size_t> init_ids = resolve_all(inits);
    const int net = net_braces(rest);
    if (net < 0 || net > 1) unreadable(line_, "unbalanced braces");
    const bool opens = net == 1;
    if (!opens && (op.kind == OpKind::For || op.kind == OpKind::If || op.kind == OpKind::While))
      unreadable(line_, op.name + " without a region on its line");
    for (const auto& r : result_names) op.results.push_back(define(r, op.result_pointer));
    const size_t index = out_.ops.size();
    open_.back().last_op = int(index);
    if (opens) open_.push_back({int(index), 0, -1, false, {}});
    // The induction variable (an integer) comes first for scf.for.
    const size_t first_pair = region_defs.size() - init_ids.size();
    for (size_t d = 0; d < region_defs.size(); ++d) {
      const size_t id = define(region_defs[d], d >= first_pair && op.result_pointer);
      if (d >= first_pair) op.pairs.emplace_back(id, init_ids[d - first_pair]);
    }
    out_.ops.push_back(std::move(op));
  }

  // scf.for %iv = %lb to %ub step %s [iter_args(%a = %init, ...)] ...
  void read_for(const std::string& rest, Op& op, std::vector<std::string>& defs, std::vector<std::string>& inits) {
    const size_t ia = rest.find("iter_args(");
    std::vector<std::string> before = ssa_names(rest.substr(0, ia));
    if (before.empty()) unreadable(line_, "scf.for without an induction variable");
    defs.push_back(before.front());
    op.uses = resolve_all(std::vector<std::string>(before.begin() + 1, before.end()));  // bounds and step
    if (ia == std::string::npos) return;
    auto group = paren_group(rest, ia + 9);
    if (!group) unreadable(line_, "scf.for iter_args do not close");
    read_pairs(*group, defs, inits);
    for (size_t u : resolve_all(ssa_names(rest.substr(ia + 9 + group->size() + 2)))) op.uses.push_back(u);
  }

  // scf.while (%a = %init, ...) : ...
  void read_while(const std::string& rest, Op& op, std::vector<std::string>& defs, std::vector<std::string>& inits) {
    const size_t p = rest.find('(');
    if (p == std::string::npos) unreadable(line_, "scf.while without arguments");
    auto group = paren_group(rest, p);
    if (!group) unreadable(line_, "scf.while arguments do not close");
    read_pairs(*group, defs, inits);
    op.uses = resolve_all(ssa_names(rest.substr(p + group->size() + 2)));
  }

  void read_pairs(std::string_view group, std::vector<std::string>& defs, std::vector<std::string>& inits) {
    for (auto item : split_top(group)) {
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos) unreadable(line_, "cannot read \"%arg = %init\"");
      auto arg = ssa_names(item.substr(0, eq));
      auto init = ssa_names(item.substr(eq + 1));
      if (arg.size() != 1 || init.size() != 1) unreadable(line_, "cannot read \"%arg = %init\"");
      defs.push_back(arg.front());
      inits.push_back(init.front());
    }
  }

  std::string_view ir_;
  std::string_view kernel_;
  size_t pos_ = 0;
  size_t line_ = 0;
  std::vector<OpenRegion> open_;
  std::unordered_map<std::string, size_t> visible_;
  Parsed out_;
};

}  // namespace

Parsed parse_triton_ir(std::string_view ir, std::string_view kernel) { return Parser(ir, kernel).run(); }

}  // namespace lrrt::formats::triton_ir
