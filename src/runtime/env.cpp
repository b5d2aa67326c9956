#include "env.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "error.hpp"

namespace lrrt::rt::env {
namespace {

constexpr const Variable* kAll[] = {
    &kWaitTimeoutMs,      &kWaitSpinUs,          &kStaging,          &kStagingThreads,
    &kStagingChunk,       &kStagingSlots,        &kStagingMin,       &kStagingPollUs,
    &kStagingTrace,       &kStagingNt,           &kGraphMaxInFlight, &kHostThreads,
    &kHostDevices,        &kCudaSync,            &kCudaPdl,          &kCudaGraphCompletion,
    &kCudaGraphContext,   &kCudaGraphKernelParams, &kCudaLibrary,    &kHsaLibrary,
    &kTestDropEdge,       &kTestWorstOrder,      &kTestShareReplaySignals, &kKernelDir,
    &kHoldQueue,          &kBenchReplayCases,    &kBenchReplayWays,
    &kTestMemAvailable,
};

// The value as a message quotes it: printable ASCII kept, anything else as
// \xNN, at most 64 bytes.
std::string quoted(std::string_view value) {
  std::string out;
  for (size_t i = 0; i < value.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (value.size() > 64) out += "...";
  return out;
}

const char* value_of(const Variable& v) {
  const char* value = std::getenv(v.name);
  return value && *value ? value : nullptr;
}

// Digits only, without overflow: false for anything else.
bool parse_digits(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - d) / 10) return false;
    n = n * 10 + d;
  }
  out = n;
  return true;
}

bool parse_size(std::string_view s, uint64_t& out) {
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  const std::string_view unit = s.substr(digits);
  unsigned shift = 0;
  if (unit.empty()) shift = 0;
  else if (unit == "K" || unit == "k" || unit == "KiB") shift = 10;
  else if (unit == "M" || unit == "m" || unit == "MiB") shift = 20;
  else if (unit == "G" || unit == "g" || unit == "GiB") shift = 30;
  else return false;
  uint64_t n = 0;
  if (!parse_digits(s.substr(0, digits), n) || n > (UINT64_MAX >> shift)) return false;
  out = n << shift;
  return true;
}

bool is_choice(std::string_view value, std::string_view choices) {
  for (size_t start = 0;;) {
    const size_t bar = choices.find('|', start);
    if (choices.substr(start, bar - start) == value) return true;
    if (bar == std::string_view::npos) return false;
    start = bar + 1;
  }
}

std::string choice_list(std::string_view choices) {
  std::string out(choices);
  for (size_t p; (p = out.find('|')) != std::string::npos;) out.replace(p, 1, ", ");
  return out;
}

}  // namespace

std::span<const Variable* const> variables() { return kAll; }

const Variable* find(std::string_view name) {
  for (const Variable* v : kAll)
    if (name == v->name) return v;
  return nullptr;
}

std::optional<uint64_t> number(const Variable& v) {
  const char* value = value_of(v);
  if (!value) return std::nullopt;
  uint64_t n = 0;
  if (v.kind == Kind::Size) {
    if (!parse_size(value, n) || n < v.min || n > v.max)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                 "{}='{}' is not a size from {} to {} bytes (digits with an optional K, M or G, binary: 512K, 4M)",
                 v.name, quoted(value), v.min, v.max);
    return n;
  }
  if (!parse_digits(value, n) || n < v.min || n > v.max)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{}='{}' is not {} from {} to {}{}", v.name, quoted(value), v.what, v.min,
               v.max, v.hint);
  return n;
}

std::optional<std::string> text(const Variable& v) {
  const char* value = value_of(v);
  if (!value) return std::nullopt;
  if (v.kind == Kind::Choice && !is_choice(value, v.what))
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "{}='{}' is not one of {}{}", v.name, quoted(value), choice_list(v.what),
               v.hint);
  return std::string(value);
}

bool flag(const Variable& v, bool fallback) {
  const auto value = text(v);
  return value ? *value == "1" : fallback;
}

void check_all() {
  for (const Variable* v : kAll) {
    if (v->kind == Kind::Count || v->kind == Kind::Size) (void)number(*v);
    else (void)text(*v);
  }
}

}  // namespace lrrt::rt::env
