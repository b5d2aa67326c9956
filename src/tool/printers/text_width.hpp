// Display width of UTF-8 text in a fixed-width font, for aligning columns
// ("±" and "…" are one column, not two bytes).
#pragma once

#include <string>

namespace lrrt::tool::printers {

inline size_t text_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count everything but continuation bytes
  return n;
}

inline std::string pad(const std::string& s, size_t width, bool right) {
  const size_t w = text_width(s);
  if (w >= width) return s;
  return right ? std::string(width - w, ' ') + s : s + std::string(width - w, ' ');
}

}  // namespace lrrt::tool::printers
