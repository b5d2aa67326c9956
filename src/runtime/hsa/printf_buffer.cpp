#include "printf_buffer.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

namespace lrrt::rt::hsa {
namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
PrintfSink& sink() {
  static PrintfSink s;
  return s;
}

void emit(std::string_view text) {
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(text);
    return;
  }
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace

PrintfSink set_printf_sink(PrintfSink s) {
  std::lock_guard lock(sink_mutex());
  PrintfSink old = std::move(sink());
  sink() = std::move(s);
  return old;
}

PrintfBuffer::~PrintfBuffer() {
  if (data_) device_.free_host(data_);
}

uint64_t PrintfBuffer::attach(std::shared_ptr<const PrintfTable> table, std::string_view kernel) {
  if (!data_) {
    data_ = static_cast<std::byte*>(device_.allocate_host(kPrintfBufferBytes));
    formats::amdgpu::init_printf_buffer(std::span(data_, kPrintfBufferBytes));
  }
  table_ = std::move(table);
  if (std::find(kernels_.begin(), kernels_.end(), kernel) == kernels_.end()) kernels_.emplace_back(kernel);
  pending_ = true;
  return reinterpret_cast<uint64_t>(data_);
}

void PrintfBuffer::drain() {
  if (!pending_ || !data_) return;
  const auto bytes = std::span<std::byte>(data_, kPrintfBufferBytes);
  static const PrintfTable no_table;  // attach() always sets one; never copy it
  const auto decoded = formats::amdgpu::decode_printf_buffer(table_ ? *table_ : no_table, bytes);
  for (const auto& r : decoded.records) emit(r);
  const std::string who = fmt::format("kernel{} {}", kernels_.size() > 1 ? "s" : "", quoted_list(kernels_));
  if (!decoded.error.empty())
    emit(fmt::format("lrrt: warning: the printf output of {} ends early: {}\n", who, decoded.error));
  if (decoded.maybe_dropped)
    emit(fmt::format("lrrt: warning: the printf buffer of {} filled up ({} of {} bytes written): later printf "
                     "calls may have printed nothing; synchronize more often\n",
                     who, decoded.used_bytes, decoded.capacity));
  formats::amdgpu::init_printf_buffer(bytes);
  kernels_.clear();
  pending_ = false;
}

}  // namespace lrrt::rt::hsa
