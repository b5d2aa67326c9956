// The signature of a Triton kernel from its IR (parse_triton_signature in
// include/lrrt/formats/triton.hpp, docs/triton.md): the `tt.func public @name(...)`
// line split into parameters (name, pointer or value, element type,
// divisibility), their sizes and AOT types, and the names lrrt accepts
// (triton_name_problem, shared through triton_text.hpp).
#include "lrrt/formats/triton.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "triton_text.hpp"

namespace lrrt::formats {

using triton_detail::triton_printable;

namespace {

// Whether s is UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool triton_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n;
  }
  return true;
}

}  // namespace

namespace triton_detail {

// Why a name (the kernel's, a parameter's) cannot be used, or "" when it can:
// it becomes a JSON key, a file name (<name>.cubin) and text in messages.
std::string triton_name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > 1024) return fmt::format("is {} bytes long", name.size());
  if (!triton_valid_utf8(name)) return "is not valid UTF-8";
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "holds a control character";
    if (c == '/' || c == '\\' || c == '"') return fmt::format("holds '{}'", c);
  }
  if (name == "." || name == "..") return "is a folder's name";
  return "";
}

}  // namespace triton_detail

using triton_detail::triton_name_problem;

namespace {

// Splits at depth-0 commas; (), <>, {}, [] and quoted text nest.
std::vector<std::string_view> triton_split_params(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == '"') quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    else if (c == '(' || c == '<' || c == '{' || c == '[') ++depth;
    else if (c == ')' || c == '>' || c == '}' || c == ']') --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::string_view triton_trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool triton_known_scalar(std::string_view t) {
  for (std::string_view k : {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"})
    if (t == k) return true;
  return false;
}

TritonParam triton_parse_param(std::string_view text, size_t index, const std::string& kernel, const std::string& where) {
  text = triton_trim(text);
  TritonParam p;
  const std::string what = fmt::format("{}: parameter {} of @{}", where, index, kernel);
  if (text.empty() || text.front() != '%') throw FormatError(fmt::format("{}: cannot read \"{}\"", what, triton_printable(text)));
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) throw FormatError(fmt::format("{}: no type in \"{}\"", what, triton_printable(text)));
  p.name = std::string(triton_trim(text.substr(1, colon - 1)));
  std::string_view rest = triton_trim(text.substr(colon + 1));
  // The type runs to the first depth-0 space or '{' (attributes) or "loc(".
  size_t end = 0;
  int depth = 0;
  for (; end < rest.size(); ++end) {
    const char c = rest[end];
    if (c == '<' || c == '(') ++depth;
    else if (c == '>' || c == ')') --depth;
    else if (depth == 0 && (c == ' ' || c == '{')) break;
  }
  p.ir_type = std::string(rest.substr(0, end));
  std::string_view tail = rest.substr(end);
  if (const auto l = tail.find("loc(\""); l != std::string_view::npos) {
    const std::string_view v = tail.substr(l + 5);
    const size_t q = v.find('"');
    if (q != std::string_view::npos && q > 0) p.name = std::string(v.substr(0, q));
  }
  // The name becomes a JSON key (the manifest's "args") and message text.
  if (const std::string why = triton_name_problem(p.name); !why.empty())
    throw FormatError(fmt::format("{}: its name \"{}\" {}", what, triton_printable(p.name), why));
  const std::string shown_type = triton_printable(p.ir_type);
  if (p.ir_type.rfind("!tt.tensordesc<tensor<", 0) == 0) {
    // "!tt.tensordesc<tensor<32x64xf32>>" or "...xf32, #shared>>": the block and its element type.
    std::string_view inner = std::string_view(p.ir_type).substr(22);
    inner = inner.substr(0, inner.find_first_of(",>"));
    while (true) {
      const size_t x = inner.find('x');
      if (x == std::string_view::npos) break;
      uint64_t n = 0;
      const std::string_view digits = inner.substr(0, x);
      if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        break;
      for (char c : digits) n = n * 10 + uint64_t(c - '0');
      p.block_shape.push_back(n);
      inner.remove_prefix(x + 1);
    }
    p.type = std::string(inner);
    if (p.block_shape.empty() || p.block_shape.size() > 5 || !triton_known_scalar(p.type))
      throw FormatError(fmt::format("{} ({}): cannot read the tensor descriptor type {}", what, p.name, shown_type));
    p.tensordesc = true;
    return p;
  }
  if (p.ir_type.rfind("!tt.tensordesc", 0) == 0)
    throw FormatError(fmt::format("{} ({}) is a tensor descriptor of a type lrrt cannot read ({})", what, p.name, shown_type));
  if (p.ir_type.rfind("!tt.ptr<", 0) == 0) {
    p.pointer = true;
    std::string_view inner = std::string_view(p.ir_type).substr(8);
    if (!inner.empty() && inner.back() == '>') inner.remove_suffix(1);
    p.type = std::string(triton_trim(inner.substr(0, inner.find(','))));
    const bool scalar_name = !p.type.empty() && std::all_of(p.type.begin(), p.type.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    if (!scalar_name)
      throw FormatError(fmt::format("{} ({}): pointer type {} is not a pointer to scalars", what, p.name, shown_type));
  } else if (triton_known_scalar(p.ir_type)) {
    p.type = p.ir_type;
  } else {
    throw FormatError(fmt::format("{} ({}): type {} is not one lrrt passes (pointers, i1-i64, f16, bf16, f32, f64)", what,
                                  p.name, shown_type));
  }
  if (const size_t d = tail.find("tt.divisibility"); d != std::string_view::npos) {
    std::string_view v = tail.substr(d + 15);
    const size_t eq = v.find('=');
    if (eq != std::string_view::npos) {
      v = triton_trim(v.substr(eq + 1));
      uint64_t n = 0;
      size_t k = 0;
      for (; k < v.size() && std::isdigit(static_cast<unsigned char>(v[k])); ++k) {
        n = n * 10 + uint64_t(v[k] - '0');
        if (n > UINT32_MAX) throw FormatError(fmt::format("{} ({}): tt.divisibility is more than 4294967295", what, p.name));
      }
      if (k == 0) throw FormatError(fmt::format("{} ({}): unreadable tt.divisibility", what, p.name));
      p.divisibility = static_cast<uint32_t>(n);
    }
  }
  return p;
}

std::string triton_aot_type(std::string_view t) {
  if (t == "f16") return "fp16";
  if (t == "bf16") return "bf16";
  if (t == "f32") return "fp32";
  if (t == "f64") return "fp64";
  return std::string(t);
}

}  // namespace

uint32_t TritonParam::size() const {
  if (tensordesc) return 128;  // a CUtensorMap
  if (pointer) return 8;
  if (type == "i1" || type == "i8") return type == "i1" ? 1 : 1;
  if (type == "i16" || type == "f16" || type == "bf16") return 2;
  if (type == "i32" || type == "f32") return 4;
  return 8;
}

std::string TritonParam::aot() const {
  if (tensordesc) {
    std::string block;
    for (uint64_t b : block_shape) block += (block.empty() ? "" : ", ") + std::to_string(b);
    return fmt::format("tensordesc<{}[{}]>", triton_aot_type(type), block);
  }
  std::string s = (pointer ? "*" : "") + triton_aot_type(type);
  if (divisibility) s += fmt::format(":{}", divisibility);
  return s;
}

std::vector<TritonParam> parse_triton_signature(std::string_view ir, const std::string& kernel, const std::string& where) {
  const std::string head = "tt.func public @" + kernel + "(";
  size_t at = ir.find(head);
  if (at == std::string_view::npos) {
    const std::string quoted = "tt.func public @\"" + kernel + "\"(";
    at = ir.find(quoted);
    if (at == std::string_view::npos)
      throw FormatError(fmt::format("{}: no \"tt.func public @{}(...)\": not the IR of Triton kernel {}", where, kernel, kernel));
    at += quoted.size();
  } else {
    at += head.size();
  }
  int depth = 1;
  bool quoted = false;
  size_t i = at;
  for (; i < ir.size() && depth > 0; ++i) {
    const char c = ir[i];
    if (quoted) {
      if (c == '\\') ++i;
      else if (c == '"') quoted = false;
    } else if (c == '"') quoted = true;
    else if (c == '(') ++depth;
    else if (c == ')') --depth;
  }
  if (depth != 0) throw FormatError(fmt::format("{}: the signature of @{} is not closed", where, kernel));
  const std::string_view params = ir.substr(at, i - 1 - at);
  std::vector<TritonParam> out;
  if (triton_trim(params).empty()) return out;
  for (auto p : triton_split_params(params)) out.push_back(triton_parse_param(p, out.size(), kernel, where));
  // A descriptor's shape (i32) and stride (i64) parameters follow it under its name.
  for (size_t d = 0; d < out.size(); ++d) {
    if (!out[d].tensordesc) continue;
    const size_t rank = out[d].block_shape.size();
    for (size_t k = 0; k < 2 * rank; ++k) {
      const size_t i = d + 1 + k;
      const char* want = k < rank ? "i32" : "i64";
      if (i >= out.size() || out[i].name != out[d].name || out[i].pointer || out[i].type != want)
        throw FormatError(fmt::format("{}: tensor descriptor {} (parameter {} of @{}) is not followed by its {} shape (i32) and "
                                      "{} stride (i64) parameters, as Triton 3.6 writes them",
                                      where, out[d].name, d, kernel, rank, rank));
      out[i].desc_of = static_cast<int32_t>(d);
      out[i].name = fmt::format("{}.{}{}", out[d].name, k < rank ? "shape" : "stride", k % rank);
    }
  }
  // Arguments are bound by name (a manifest's "args" object): two parameters
  // of one name would both take the first one's value.
  std::unordered_map<std::string_view, size_t> first;  // a hostile IR may hold 10^6 parameters
  for (size_t i = 0; i < out.size(); ++i)
    if (const auto [at, added] = first.emplace(out[i].name, i); !added)
      throw FormatError(fmt::format("{}: parameters {} and {} of @{} are both named \"{}\": lrrt binds arguments by name", where,
                                    at->second, i, kernel, out[i].name));
  return out;
}

}  // namespace lrrt::formats
