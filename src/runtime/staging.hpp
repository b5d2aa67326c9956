// The pageable-copy staging pipeline behind lr_memcpy on GPU backends.
//
// A copy between pageable host memory and the device cannot be a DMA: the
// driver copies through pinned buffers of its own, usually one chunk at a
// time on one thread (5-13 GB/s on the H200 against 55 GB/s pinned). lrrt
// stages it itself instead: a ring of pinned chunks; for each chunk several
// threads copy the pageable bytes into (or out of) the chunk while the DMA of
// the neighbouring chunks runs on a queue of the pipeline's own.
//
//   H2D: memcpy(chunk i)  | DMA(chunk i-1) | DMA(chunk i-2) ...
//   D2H: DMA(chunk i+1..) | memcpy(chunk i)
//
// lr_memcpy uses it for host-to-device and device-to-host copies of at least
// `threshold` bytes whose host side is not an lr_host_malloc allocation, on
// every backend except host (where host memory is device memory).
// LRRT_STAGING=off disables it; LRRT_STAGING=force uses it for every size and
// backend (tests). LRRT_STAGING_THREADS sets the copy threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backend.hpp"

namespace lrrt::rt {

struct DeviceState;

struct StagingConfig {
  size_t chunk_bytes = size_t(16) << 20;  // largest chunk
  size_t min_chunk_bytes = size_t(256) << 10;
  unsigned chunks = 3;                    // ring depth
  unsigned threads = 0;                   // host copy threads; 0 = half the cores, 2 to 8
  // Smallest copy lr_memcpy stages. On the H200 (2026-11-29) staging lost to
  // the driver's own pageable path at 1-4 MiB and won from 16 MiB up.
  size_t threshold = size_t(16) << 20;
};

enum class StagingMode { Auto, Off, Force };
// Starts as LRRT_STAGING says (auto|off|force; auto when unset).
StagingMode staging_mode();
void set_staging_mode(StagingMode mode);

// Copies [src, src+n) to dst with up to `threads` threads (the caller is one
// of them). Parts are at least 1 MiB.
class ParallelCopier {
 public:
  explicit ParallelCopier(unsigned threads);
  ~ParallelCopier();
  ParallelCopier(const ParallelCopier&) = delete;
  ParallelCopier& operator=(const ParallelCopier&) = delete;
  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  void copy(void* dst, const void* src, size_t size);

 private:
  void worker_main(unsigned id);
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  unsigned remaining_ = 0;
  bool stopping_ = false;
  std::byte* dst_ = nullptr;
  const std::byte* src_ = nullptr;
  size_t size_ = 0;
  unsigned parts_ = 0;
};

class StagingPipeline {
 public:
  explicit StagingPipeline(Device& device, StagingConfig config = {});
  ~StagingPipeline();
  StagingPipeline(const StagingPipeline&) = delete;
  StagingPipeline& operator=(const StagingPipeline&) = delete;

  // Blocking copy of `size` bytes, HostToDevice or DeviceToHost; the host
  // side may be any memory. Thread-safe (copies are serialised).
  void copy(void* dst, const void* src, size_t size, CopyKind kind);

  const StagingConfig& config() const { return config_; }
  // Chunk size used for a copy of `size` bytes: small copies get smaller
  // chunks so they still overlap.
  size_t chunk_for(size_t size) const;

 private:
  void to_device(std::byte* dst, const std::byte* src, size_t size);
  void to_host(std::byte* dst, const std::byte* src, size_t size);

  Device& device_;
  StagingConfig config_;
  std::mutex mutex_;
  std::unique_ptr<Queue> queue_;
  std::vector<std::byte*> chunks_;
  std::vector<std::unique_ptr<Event>> events_;
  ParallelCopier copier_;
};

// lr_memcpy's hook: performs the copy through the device's pipeline (made on
// first use) and returns true when the copy qualifies; false otherwise (the
// caller copies as before).
bool staged_copy(DeviceState& state, void* dst, const void* src, size_t size, CopyKind kind);

}  // namespace lrrt::rt
