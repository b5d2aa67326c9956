// OpenCL printf for hsa dispatches: a queue's printf buffer (1 MiB of pinned,
// fine-grained host memory the GPU may access), whose address goes into the
// hidden_printf_buffer argument of every dispatch of an OpenCL kernel that
// has one, and whose records are decoded with the kernel's format table
// (lrrt/formats/amdgpu_printf.hpp) and printed once those dispatches have
// finished: when the queue synchronizes (lr_queue_synchronize,
// lr_synchronize, lr_memcpy, destroying the queue), or before a dispatch
// whose records need another code object's table. The queue calls it under
// its lock.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hsa_device.hpp"
#include "lrrt/formats/amdgpu_printf.hpp"

namespace lrrt::rt::hsa {

using PrintfTable = formats::amdgpu::PrintfTable;

// Where printed records (and printf warnings) go: stderr, unless a sink is
// set (tests). Returns the previous sink; an empty one restores stderr.
using PrintfSink = std::function<void(std::string_view text)>;
PrintfSink set_printf_sink(PrintfSink sink);

constexpr size_t kPrintfBufferBytes = size_t(1) << 20;

class PrintfBuffer {
 public:
  explicit PrintfBuffer(HsaDevice& device) : device_(device) {}
  ~PrintfBuffer();
  PrintfBuffer(const PrintfBuffer&) = delete;
  PrintfBuffer& operator=(const PrintfBuffer&) = delete;

  // Records of another format table are in the buffer (another code object;
  // a second load of the same one is not another): the caller waits for
  // every dispatch that uses it, then drain()s, before attaching `table`.
  bool conflicts(const std::shared_ptr<const PrintfTable>& table) const {
    return pending_ && table_ != table && !(table_ && table && *table_ == *table);
  }
  // The buffer's address for a dispatch of `kernel` whose records decode
  // with `table` (allocated and initialised on first use).
  uint64_t attach(std::shared_ptr<const PrintfTable> table, std::string_view kernel);
  bool pending() const { return pending_; }
  // Prints the records and empties the buffer; only when no dispatch that
  // uses it is still running.
  void drain();

 private:
  HsaDevice& device_;
  std::byte* data_ = nullptr;
  std::shared_ptr<const PrintfTable> table_;
  std::vector<std::string> kernels_;  // of the pending records, for warnings
  bool pending_ = false;
};

}  // namespace lrrt::rt::hsa
