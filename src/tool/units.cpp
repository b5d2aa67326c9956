#include "tool/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "tool/bundle.hpp"

namespace lrrt::tool {

std::string format_time_ns(double ns) {
  if (std::isnan(ns)) return "-";
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (std::isnan(bytes) || bytes < 0) return "-";
  int unit = 0;
  double scaled = bytes;
  while (scaled >= 1024 && unit < 4) scaled /= 1024, ++unit;
  if (unit == 0 || scaled == std::floor(scaled)) return fmt::format("{:.0f} {}", scaled, kUnits[unit]);
  return fmt::format("{:.1f} {}", scaled, kUnits[unit]);
}

std::string format_gbps(double gbps) { return std::isnan(gbps) ? "-" : fmt::format("{:.2f} GB/s", gbps); }

std::string format_ratio(double ratio) { return std::isfinite(ratio) ? fmt::format("{:.2f}x", ratio) : "-"; }

std::string format_percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.0f}%", fraction * 100) : "-";
}

namespace {
// Bounds that keep a typo from becoming an endless list: no device has 1 PiB.
constexpr uint64_t kMaxSizeBytes = 1ull << 50;
constexpr size_t kMaxSizes = 256;
}  // namespace

uint64_t parse_size(const std::string& text) {
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  size_t pos = 0;
  while (pos < t.size() && std::isdigit(static_cast<unsigned char>(t[pos]))) ++pos;
  if (pos == 0) throw InputError(fmt::format("'{}' is not a size (examples: 4096, 4K, 64KiB, 1M, 1GiB)", text));
  if (pos > 12) throw InputError(fmt::format("'{}' is too large a size", text));
  uint64_t v = std::stoull(t.substr(0, pos));
  std::string suffix = t.substr(pos);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") mult = 1ull << 30;
  else throw InputError(fmt::format("'{}': unknown size suffix '{}' (use K, M or G)", text, t.substr(pos)));
  if (v == 0) throw InputError(fmt::format("'{}': a size must be positive", text));
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(v, mult, &bytes) || bytes > kMaxSizeBytes)
    throw InputError(fmt::format("'{}' is too large a size (at most 1 PiB)", text));
  return bytes;
}

std::vector<uint64_t> parse_sizes(const std::string& text) {
  std::vector<uint64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(parse_size(item));
      continue;
    }
    std::string hi_text = item.substr(dots + 2);
    uint64_t step = 4;
    if (auto colon = hi_text.find(':'); colon != std::string::npos) {
      const std::string factor = hi_text.substr(colon + 1);
      if (factor.empty() || factor.size() > 9 ||
          !std::all_of(factor.begin(), factor.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        throw InputError(fmt::format("'{}': the step factor after ':' must be a whole number", item));
      step = std::stoull(factor);
      hi_text = hi_text.substr(0, colon);
      if (step < 2) throw InputError(fmt::format("'{}': the step factor must be at least 2", item));
    }
    uint64_t lo = parse_size(item.substr(0, dots)), hi = parse_size(hi_text);
    if (lo > hi) throw InputError(fmt::format("'{}': the range is empty", item));
    // Overflow-safe: stop before v * step would pass hi (or wrap).
    for (uint64_t v = lo;; v *= step) {
      out.push_back(v);
      if (out.size() > kMaxSizes)
        throw InputError(fmt::format("'{}' lists more than {} sizes", text, kMaxSizes));
      if (v > hi / step) break;
    }
  }
  if (out.empty()) throw InputError(fmt::format("'{}' lists no sizes", text));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace lrrt::tool
