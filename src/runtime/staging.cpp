#include "staging.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "error.hpp"
#include "runtime.hpp"

namespace lrrt::rt {
namespace {

constexpr size_t kMinPart = size_t(1) << 20;

StagingMode mode_from_env() {
  const char* v = std::getenv("LRRT_STAGING");
  if (!v) return StagingMode::Auto;
  std::string_view s(v);
  if (s == "off" || s == "0" || s == "no") return StagingMode::Off;
  if (s == "force") return StagingMode::Force;
  return StagingMode::Auto;
}

std::atomic<int>& mode_storage() {
  static std::atomic<int> mode{static_cast<int>(mode_from_env())};
  return mode;
}

unsigned default_threads() {
  if (const char* v = std::getenv("LRRT_STAGING_THREADS")) {
    unsigned n = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    if (n > 0) return std::min(n, 64u);
  }
  // Half the cores, 2 to 8: one host memcpy thread moves ~8 GB/s, and a
  // PCIe Gen5 link takes ~55 GB/s, so D2H needs more than four on big hosts.
  unsigned cores = std::max(std::thread::hardware_concurrency(), 1u);
  return std::min(cores, std::clamp(cores / 2, 2u, 8u));
}

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

}  // namespace

StagingMode staging_mode() { return static_cast<StagingMode>(mode_storage().load(std::memory_order_relaxed)); }
void set_staging_mode(StagingMode mode) { mode_storage().store(static_cast<int>(mode)); }

// ---- ParallelCopier ---------------------------------------------------------

ParallelCopier::ParallelCopier(unsigned threads) {
  threads = std::max(threads, 1u);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ParallelCopier::~ParallelCopier() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ParallelCopier::copy(void* dst, const void* src, size_t size) {
  unsigned parts = static_cast<unsigned>(std::min<size_t>(threads(), std::max<size_t>(1, size / kMinPart)));
  if (parts <= 1) {
    std::memcpy(dst, src, size);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    dst_ = static_cast<std::byte*>(dst);
    src_ = static_cast<const std::byte*>(src);
    size_ = size;
    parts_ = parts;
    remaining_ = parts - 1;
    ++generation_;
  }
  wake_.notify_all();
  // Part 0 on the calling thread.
  size_t per = round_up((size + parts - 1) / parts, 4096);
  std::memcpy(dst, src, std::min(per, size));
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return remaining_ == 0; });
}

void ParallelCopier::worker_main(unsigned id) {
  uint64_t seen = 0;
  for (;;) {
    std::byte* dst;
    const std::byte* src;
    size_t size;
    unsigned parts;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      dst = dst_;
      src = src_;
      size = size_;
      parts = parts_;
    }
    if (id < parts) {
      size_t per = round_up((size + parts - 1) / parts, 4096);
      size_t begin = std::min(size, per * id);
      size_t end = std::min(size, begin + per);
      if (end > begin) std::memcpy(dst + begin, src + begin, end - begin);
      std::lock_guard lock(mutex_);
      if (--remaining_ == 0) done_.notify_one();
    }
  }
}

// ---- StagingPipeline --------------------------------------------------------

StagingPipeline::StagingPipeline(Device& device, StagingConfig config)
    : device_(device),
      config_(config),
      copier_(config.threads ? config.threads : default_threads()) {
  config_.chunks = std::max(config_.chunks, 2u);
  config_.chunk_bytes = std::max<size_t>(config_.chunk_bytes, 4096);
  config_.min_chunk_bytes = std::clamp<size_t>(config_.min_chunk_bytes, 4096, config_.chunk_bytes);
  if (!config_.threads) config_.threads = copier_.threads();
  queue_ = device_.create_queue();
  try {
    for (unsigned i = 0; i < config_.chunks; ++i) {
      chunks_.push_back(static_cast<std::byte*>(device_.allocate_host(config_.chunk_bytes)));
      events_.push_back(device_.create_event());
    }
  } catch (...) {
    for (auto* c : chunks_) device_.free_host(c);
    throw;
  }
}

StagingPipeline::~StagingPipeline() {
  try {
    queue_->synchronize();
  } catch (...) {
  }
  events_.clear();
  queue_.reset();
  for (auto* c : chunks_) {
    try {
      device_.free_host(c);
    } catch (...) {
    }
  }
}

size_t StagingPipeline::chunk_for(size_t size) const {
  // At least four chunks per copy where the chunk size allows it.
  size_t c = round_up((size + 3) / 4, 4096);
  return std::clamp(c, config_.min_chunk_bytes, config_.chunk_bytes);
}

void StagingPipeline::copy(void* dst, const void* src, size_t size, CopyKind kind) {
  if (size == 0) return;
  if (kind == CopyKind::DeviceToDevice)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the staging pipeline copies to or from host memory only");
  std::lock_guard lock(mutex_);
  try {
    if (kind == CopyKind::HostToDevice)
      to_device(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), size);
    else
      to_host(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), size);
  } catch (...) {
    // No DMA may still touch a chunk when the next copy starts.
    try {
      queue_->synchronize();
    } catch (...) {
    }
    throw;
  }
}

void StagingPipeline::to_device(std::byte* dst, const std::byte* src, size_t size) {
  const size_t chunk = chunk_for(size);
  const size_t n = (size + chunk - 1) / chunk;
  const size_t k = chunks_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t slot = i % k;
    const size_t offset = i * chunk;
    const size_t len = std::min(chunk, size - offset);
    // The slot's previous DMA must have read the chunk before it is refilled.
    if (i >= k) events_[slot]->synchronize();
    copier_.copy(chunks_[slot], src + offset, len);
    Event* signal = events_[slot].get();
    queue_->copy(dst + offset, chunks_[slot], len, CopyKind::HostToDevice, {}, signal);
  }
  queue_->synchronize();
}

void StagingPipeline::to_host(std::byte* dst, const std::byte* src, size_t size) {
  const size_t chunk = chunk_for(size);
  const size_t n = (size + chunk - 1) / chunk;
  const size_t k = chunks_.size();
  auto start_dma = [&](size_t i) {
    const size_t slot = i % k;
    const size_t offset = i * chunk;
    const size_t len = std::min(chunk, size - offset);
    queue_->copy(chunks_[slot], src + offset, len, CopyKind::DeviceToHost, {}, events_[slot].get());
  };
  for (size_t i = 0; i < std::min(n, k); ++i) start_dma(i);
  for (size_t i = 0; i < n; ++i) {
    const size_t slot = i % k;
    const size_t offset = i * chunk;
    const size_t len = std::min(chunk, size - offset);
    events_[slot]->synchronize();
    copier_.copy(dst + offset, chunks_[slot], len);
    if (i + k < n) start_dma(i + k);
  }
  queue_->synchronize();
}

// ---- lr_memcpy's hook -------------------------------------------------------

bool staged_copy(DeviceState& state, void* dst, const void* src, size_t size, CopyKind kind) {
  const StagingMode mode = staging_mode();
  if (mode == StagingMode::Off || kind == CopyKind::DeviceToDevice || size == 0) return false;
  Device& device = *state.device;
  if (mode != StagingMode::Force) {
    if (device.properties().backend == "host") return false;  // host memory is device memory
    if (size < StagingConfig{}.threshold) return false;
  }
  const void* host = kind == CopyKind::HostToDevice ? src : dst;
  std::shared_ptr<StagingPipeline> pipeline;
  {
    std::lock_guard lock(state.mutex);
    // Pinned memory (lr_host_malloc, any part of a block) is copied directly.
    if (mode != StagingMode::Force) {
      auto p = reinterpret_cast<uintptr_t>(host);
      if (state.host_allocations.count(const_cast<void*>(host))) return false;
      for (const auto& [base, n] : state.host_allocations) {
        auto b = reinterpret_cast<uintptr_t>(base);
        if (p >= b && p < b + n) return false;
      }
    }
    if (!state.staging) state.staging = std::make_shared<StagingPipeline>(device);
    pipeline = state.staging;
  }
  pipeline->copy(dst, src, size, kind);
  return true;
}

}  // namespace lrrt::rt
