// PTX text: the .target, each .entry and its .param list (sizes, alignment,
// offsets as the driver lays them out). Cubins, fatbins and the device
// checks are in nvidia.cpp.
#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

#include "lrrt/formats/error.hpp"
#include "lrrt/formats/nvidia.hpp"

namespace lrrt::formats::nvidia {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

uint32_t ptx_type_size(std::string_view type) {
  // "u32", "f64", "b8" (no dot)
  if (type.size() < 2) return 0;
  std::string_view bits = type.substr(1);
  if (bits == "8") return 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  return 0;
}

// Strips // and /* */ comments so the scanner sees directives only.
std::string strip_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      out.push_back('\n');
    } else if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 1;
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

uint64_t parse_count(std::string_view digits) {
  uint64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') break;
    n = n * 10 + uint64_t(c - '0');
    if (n > UINT32_MAX) throw FormatError(fmt::format("invalid PTX: the number {} is too large", digits));
  }
  return n;
}

// Text from the file for a message: printable ASCII as is, any other byte
// as \xNN, cut to max_bytes.
std::string printable(std::string_view s, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) out += char(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max_bytes) out += "...";
  return out;
}

// A PTX number written whole: digits only, at most UINT32_MAX (`what` and
// `decl` name it in the error). parse_count stops at the first non-digit,
// which would read ".align 8x" as 8 and ".align .b8" as 0.
uint64_t parse_ptx_number(std::string_view digits, const char* what, std::string_view decl) {
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw FormatError(fmt::format("invalid PTX: parameter declaration \"{}\": {} \"{}\" is not a number", printable(decl, 120), what,
                                  printable(digits, 40)));
  return parse_count(digits);
}

// One ".param ..." declaration: ".param .u64 .ptr.global.align 1 name",
// ".param .u64 .ptr .global .align 1 name" or
// ".param .align 8 .b8 name[16]" (or name[2][8]: 16 elements). A
// declaration lrrt would have to guess at (no type, no name, two names, an
// .align without a power-of-two number, a malformed or zero array size) is
// a FormatError: a misread size or alignment would move every later
// parameter.
ImageParam parse_ptx_param(std::string_view decl) {
  ImageParam p;
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < decl.size()) {
    while (i < decl.size() && std::isspace(static_cast<unsigned char>(decl[i]))) ++i;
    size_t j = i;
    while (j < decl.size() && !std::isspace(static_cast<unsigned char>(decl[j]))) ++j;
    if (j > i) words.push_back(decl.substr(i, j - i));
    i = j;
  }
  auto bad = [&](const std::string& why) {
    return FormatError(fmt::format("invalid PTX: parameter declaration \"{}\": {}", printable(decl, 120), why));
  };
  auto alignment = [&](size_t w) {
    if (w + 1 >= words.size()) throw bad(".align without a number");
    const uint64_t a = parse_ptx_number(words[w + 1], ".align", decl);
    if (a == 0 || (a & (a - 1)) != 0) throw bad(fmt::format(".align {} is not a power of two", a));
    return static_cast<uint32_t>(a);
  };
  uint32_t elem = 0;
  for (size_t w = 0; w < words.size(); ++w) {
    std::string_view word = words[w];
    if (word == ".param") continue;
    if (word == ".align") {
      // After .ptr, .align is the pointee's alignment (".ptr .global .align
      // 1", as Triton writes), not the parameter's.
      const uint32_t a = alignment(w);
      if (!p.pointer) {
        p.align = a;
        p.align_written = true;
      }
      ++w;
    } else if (word.starts_with(".ptr")) {
      p.pointer = true;
      if (word.find(".align") != std::string_view::npos) {
        (void)alignment(w);
        ++w;
      }
    } else if (word.starts_with(".") && ptx_type_size(word.substr(1)) && elem == 0) {
      elem = ptx_type_size(word.substr(1));
      p.type = std::string(word);
    } else if (!word.starts_with(".")) {
      if (!p.name.empty()) throw bad(fmt::format("two names, \"{}\" and \"{}\"", printable(p.name, 40), printable(word, 40)));
      p.name = std::string(word);
    }
  }
  if (!elem) throw bad("no type (.u32, .b8, ...)");
  if (p.name.empty() || p.name[0] == '[') throw bad("no name");
  p.size = elem;
  if (auto open = p.name.find('['); open != std::string::npos) {
    // [N] or [N][M]...: the product of the sizes, each 1 or more.
    uint64_t count = 1;
    std::string_view rest = std::string_view(p.name).substr(open);
    while (!rest.empty()) {
      const size_t close = rest.find(']');
      if (rest[0] != '[' || close == std::string_view::npos) throw bad("an array size is not written [N]");
      const uint64_t n = parse_ptx_number(rest.substr(1, close - 1), "the array size", decl);
      if (n == 0) throw bad("an array of 0 elements");
      count *= n;
      if (uint64_t(elem) * count > UINT32_MAX)
        throw FormatError(fmt::format("invalid PTX: parameter {} has {} elements", p.name, count));
      rest.remove_prefix(close + 1);
    }
    p.type += fmt::format("[{}]", count);
    p.size = static_cast<uint32_t>(elem * count);
    p.name.resize(open);
  } else if (p.name.find(']') != std::string::npos) {
    throw bad("an array size is not written [N]");
  }
  if (p.align == 0) p.align = elem;
  return p;
}

}  // namespace

std::string ptx_param_type_name(const ImageParam& p) {
  if (p.align_written && !p.pointer && p.type.find('[') != std::string::npos) return fmt::format(".align {} {}", p.align, p.type);
  return p.type;
}

PtxInfo parse_ptx(std::string_view raw) {
  std::string text = strip_comments(raw);
  std::string_view t(text);
  PtxInfo info;
  auto directive_value = [&](std::string_view directive) -> std::string_view {
    size_t pos = t.find(directive);
    while (pos != std::string_view::npos) {
      bool starts_line = pos == 0 || std::isspace(static_cast<unsigned char>(t[pos - 1]));
      size_t after = pos + directive.size();
      if (starts_line && after < t.size() && std::isspace(static_cast<unsigned char>(t[after]))) {
        size_t eol = t.find('\n', after);
        return trim(t.substr(after, eol == std::string_view::npos ? t.npos : eol - after));
      }
      pos = t.find(directive, pos + 1);
    }
    return {};
  };
  info.version = std::string(directive_value(".version"));
  info.target = std::string(directive_value(".target"));
  if (info.version.empty() || info.target.empty())
    throw FormatError("not PTX: no .version and .target directives");
  if (size_t sm = info.target.find("sm_"); sm != std::string::npos)
  {
    std::string_view digits = std::string_view(info.target).substr(sm + 3);
    info.sm = static_cast<uint32_t>(parse_count(digits));
    size_t end = 0;
    while (end < digits.size() && std::isdigit(static_cast<unsigned char>(digits[end]))) ++end;
    if (end < digits.size() && (digits[end] == 'a' || digits[end] == 'f')) info.variant = digits[end];
  }

  size_t pos = 0;
  while ((pos = t.find(".entry", pos)) != std::string_view::npos) {
    size_t after = pos + 6;
    pos = after;
    if (after >= t.size() || !std::isspace(static_cast<unsigned char>(t[after]))) continue;
    size_t name_begin = t.find_first_not_of(" \t\r\n", after);
    if (name_begin == std::string_view::npos) break;
    size_t name_end = t.find_first_of(" \t\r\n(", name_begin);
    if (name_end == std::string_view::npos) break;
    ImageKernel k;
    k.name = std::string(t.substr(name_begin, name_end - name_begin));
    size_t open = t.find_first_not_of(" \t\r\n", name_end);
    if (open != std::string_view::npos && t[open] == '(') {
      size_t close = t.find(')', open);
      if (close == std::string_view::npos) break;
      std::string_view list = t.substr(open + 1, close - open - 1);
      uint64_t offset = 0;
      uint32_t ordinal = 0;
      size_t start = 0;
      while (start < list.size()) {
        size_t comma = list.find(',', start);
        std::string_view decl =
            trim(list.substr(start, comma == list.npos ? list.npos : comma - start));
        start = comma == list.npos ? list.size() : comma + 1;
        if (decl.empty()) continue;
        ImageParam p = parse_ptx_param(decl);
        p.ordinal = ordinal++;
        offset = (offset + p.align - 1) / p.align * p.align;
        if (offset + p.size > UINT32_MAX)
          throw FormatError(fmt::format("invalid PTX: the parameters of {} exceed 4 GiB", k.name));
        p.offset = static_cast<uint32_t>(offset);
        offset += p.size;
        k.params.push_back(std::move(p));
      }
      k.param_bytes = static_cast<uint32_t>(offset);
      k.has_params = true;
      pos = close;
    }
    info.kernels.push_back(std::move(k));
  }
  return info;
}

}  // namespace lrrt::formats::nvidia
