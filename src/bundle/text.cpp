#include "lrrt/bundle/text.hpp"

#include <fmt/format.h>

#include <limits>

namespace lrrt::bundle {
namespace {

// Length of the valid UTF-8 sequence at s[i] and its code point; 0 if invalid.
size_t utf8_sequence(std::string_view s, size_t i, char32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n;
  char32_t v;
  if (b0 < 0x80) return *cp = b0, 1;
  if ((b0 & 0xe0) == 0xc0) n = 2, v = b0 & 0x1f;
  else if ((b0 & 0xf0) == 0xe0) n = 3, v = b0 & 0x0f;
  else if ((b0 & 0xf8) == 0xf0) n = 4, v = b0 & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3f);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;  // overlong, surrogate
  *cp = v;
  return n;
}

bool unsafe_code_point(char32_t c) {
  return c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) ||  // C0, DEL, C1 controls
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) ||  // bidi embeddings, isolates
         c == 0x200e || c == 0x200f || c == 0x061c ||                      // direction marks
         c == 0xfeff;                                                      // BOM / zero-width no-break
}

}  // namespace

namespace {

std::string escape(std::string_view text, size_t max_bytes, bool keep_whitespace) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    char32_t cp = 0;
    size_t n = utf8_sequence(text, i, &cp);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      i += 1;
    } else if ((cp == '\t' || cp == '\n') && keep_whitespace) {
      out += static_cast<char>(cp);
      i += n;
    } else if (cp == '\t') {
      out += "\\t";
      i += n;
    } else if (cp == '\n') {
      out += "\\n";
      i += n;
    } else if (unsafe_code_point(cp)) {
      out += cp < 0x100 ? fmt::format("\\x{:02x}", unsigned(cp)) : fmt::format("\\u{{{:04x}}}", unsigned(cp));
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  if (i < text.size()) out += fmt::format("... ({} more bytes)", text.size() - i);
  return out;
}

}  // namespace

std::string printable(std::string_view text, size_t max_bytes) { return escape(text, max_bytes, false); }

std::string terminal_safe(std::string_view text) {
  return escape(text, std::numeric_limits<size_t>::max(), true);
}

bool is_valid_utf8(std::string_view text) {
  char32_t cp = 0;
  for (size_t i = 0, n = 0; i < text.size(); i += n)
    if ((n = utf8_sequence(text, i, &cp)) == 0) return false;
  return true;
}

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    if (const size_t n = utf8_sequence(text, i, &cp)) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      i += 1;
    }
  }
  return out;
}

}  // namespace lrrt::bundle
