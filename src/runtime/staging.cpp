#include "staging.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "env.hpp"
#include "error.hpp"
#include "runtime.hpp"
#include "wait.hpp"

namespace lrrt::rt {
namespace {

StagingMode mode_from_env() {
  const auto v = env::text(env::kStaging);
  if (!v) return StagingMode::Auto;
  if (*v == "off" || *v == "0" || *v == "no") return StagingMode::Off;
  if (*v == "force") return StagingMode::Force;
  return StagingMode::Auto;
}

std::atomic<int>& mode_storage() {
  static std::atomic<int> mode{static_cast<int>(mode_from_env())};
  return mode;
}

unsigned default_lanes() {
  // Half the cores, 2 to 8: one host thread moves 8-10 GB/s, PCIe Gen5 x16
  // about 55 GB/s, and the rest of the cores stay free for the application.
  unsigned cores = std::max(std::thread::hardware_concurrency(), 1u);
  return std::min(cores, std::clamp(cores / 2, 2u, 8u));
}

// Copies come in runs (a loop of lr_memcpy calls): the lanes' threads spin
// this long before sleeping, so the next copy starts without a wake-up.
constexpr std::chrono::microseconds kLaneSpin{200};

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

#if defined(__x86_64__)
// Both copy [src, src+n) to a 32-byte aligned dst; n is a multiple of 128.
__attribute__((target("avx2"))) void stream_avx2(std::byte* dst, const std::byte* src, size_t n) {
  for (size_t i = 0; i < n; i += 128) {
    auto s = reinterpret_cast<const __m256i*>(src + i);
    __m256i a = _mm256_loadu_si256(s), b = _mm256_loadu_si256(s + 1);
    __m256i c = _mm256_loadu_si256(s + 2), d = _mm256_loadu_si256(s + 3);
    auto o = reinterpret_cast<__m256i*>(dst + i);
    _mm256_stream_si256(o, a);
    _mm256_stream_si256(o + 1, b);
    _mm256_stream_si256(o + 2, c);
    _mm256_stream_si256(o + 3, d);
  }
}

void stream_sse2(std::byte* dst, const std::byte* src, size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    auto s = reinterpret_cast<const __m128i*>(src + i);
    __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
    __m128i c = _mm_loadu_si128(s + 2), d = _mm_loadu_si128(s + 3);
    auto o = reinterpret_cast<__m128i*>(dst + i);
    _mm_stream_si128(o, a);
    _mm_stream_si128(o + 1, b);
    _mm_stream_si128(o + 2, c);
    _mm_stream_si128(o + 3, d);
  }
}
#endif

}  // namespace

StagingConfig StagingConfig::from_env() {
  StagingConfig c;
  c.lanes = static_cast<unsigned>(env::number(env::kStagingThreads).value_or(0));
  c.chunk_bytes = static_cast<size_t>(env::number(env::kStagingChunk).value_or(c.chunk_bytes));
  c.min_chunk_bytes = std::min(c.min_chunk_bytes, c.chunk_bytes);
  c.slots = static_cast<unsigned>(env::number(env::kStagingSlots).value_or(c.slots));
  c.threshold = static_cast<size_t>(env::number(env::kStagingMin).value_or(c.threshold));
  if (const auto poll = env::number(env::kStagingPollUs)) c.poll_us = static_cast<unsigned>(*poll);
  c.trace = env::flag(env::kStagingTrace, c.trace);
  if (const auto nt = env::text(env::kStagingNt)) {
    c.nt_to_host = *nt == "d2h" || *nt == "both";
    c.nt_to_device = *nt == "h2d" || *nt == "both";
  }
  return c;
}

StagingMode staging_mode() { return static_cast<StagingMode>(mode_storage().load(std::memory_order_relaxed)); }
void set_staging_mode(StagingMode mode) { mode_storage().store(static_cast<int>(mode)); }

void copy_streaming(void* dst, const void* src, size_t size) {
  if (size == 0) return;  // an empty copy may come with null pointers; memcpy takes none
#if defined(__x86_64__)
  if (size >= 4096) {
    auto* d = static_cast<std::byte*>(dst);
    auto* s = static_cast<const std::byte*>(src);
    static const bool avx2 = __builtin_cpu_supports("avx2");
    const size_t head = (32 - reinterpret_cast<uintptr_t>(d) % 32) % 32;
    std::memcpy(d, s, head);
    const size_t body = (size - head) / 128 * 128;
    if (avx2) stream_avx2(d + head, s + head, body);
    else stream_sse2(d + head, s + head, body);
    // Streaming stores are weakly ordered: make them visible before the
    // caller reports the copy complete.
    _mm_sfence();
    std::memcpy(d + head + body, s + head + body, size - head - body);
    return;
  }
#endif
  std::memcpy(dst, src, size);
}

// ---- StagingPipeline ----------------------------------------------------------

StagingPipeline::StagingPipeline(Device& device, StagingConfig config)
    : device_(device), config_(config), pool_(config.lanes ? config.lanes : default_lanes(), kLaneSpin) {
  config_.lanes = pool_.threads();
  config_.slots = std::max(config_.slots, 1u);
  config_.chunk_bytes = round_up(std::max<size_t>(config_.chunk_bytes, 4096), 4096);
  config_.min_chunk_bytes = std::clamp<size_t>(config_.min_chunk_bytes, 4096, config_.chunk_bytes);
  lanes_.resize(config_.lanes);
  try {
    for (Lane& lane : lanes_) {
      lane.queue = device_.create_queue();
      for (unsigned i = 0; i < config_.slots; ++i) {
        lane.slots.push_back(static_cast<std::byte*>(device_.allocate_host(config_.chunk_bytes)));
        lane.slot_free.push_back(device_.create_event());
      }
    }
  } catch (...) {
    for (Lane& lane : lanes_)
      for (auto* s : lane.slots) device_.free_host(s);
    throw;
  }
}

StagingPipeline::~StagingPipeline() {
  if (config_.trace) {
    for (int d = 0; d < 2; ++d) {
      if (!copies_[d]) continue;
      LaneTimes sum;
      for (const Lane& lane : lanes_) {
        const LaneTimes& t = lane.times[d];
        sum.wait += t.wait, sum.host_copy += t.host_copy, sum.issue += t.issue, sum.total += t.total;
      }
      double n = double(lanes_.size());
      fmt::print(stderr,
                 "lrrt staging {}: {} copies, {:.1f} MiB, {:.2f} GB/s; {} lanes x {} slots x {} KiB, poll {} us; "
                 "per lane (mean of {:.1f} ms busy): wait {:.0f}%, host copy {:.0f}% ({:.2f} GB/s per thread), "
                 "DMA issue {:.0f}%\n",
                 d ? "D2H" : "H2D", copies_[d], double(bytes_[d]) / 1048576.0, double(bytes_[d]) / wall_ns_[d],
                 lanes_.size(), config_.slots, config_.chunk_bytes / 1024, config_.poll_us, sum.total / n / 1e6,
                 100 * sum.wait / sum.total, 100 * sum.host_copy / sum.total,
                 double(bytes_[d]) / sum.host_copy, 100 * sum.issue / sum.total);
    }
  }
  for (Lane& lane : lanes_) {
    try {
      if (lane.queue) lane.queue->synchronize();
    } catch (...) {
    }
    lane.slot_free.clear();
    lane.queue.reset();
    for (auto* s : lane.slots) {
      try {
        device_.free_host(s);
      } catch (...) {
      }
    }
  }
}

size_t StagingPipeline::piece_for(size_t size) const {
  // Four pieces per lane where the bounds allow: the copy's tail (the last
  // piece's DMA or host copy, which nothing overlaps) stays short.
  size_t p = round_up((size + 4 * config_.lanes - 1) / (4 * config_.lanes), 4096);
  return std::clamp(p, config_.min_chunk_bytes, config_.chunk_bytes);
}

void StagingPipeline::copy(void* dst, const void* src, size_t size, CopyKind kind) {
  if (size == 0) return;
  if (kind == CopyKind::DeviceToDevice)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the staging pipeline copies to or from host memory only");
  std::lock_guard lock(mutex_);
  const size_t piece = piece_for(size);
  const size_t pieces = (size + piece - 1) / piece;
  const unsigned lanes = static_cast<unsigned>(std::min<size_t>(config_.lanes, pieces));
  auto* d = static_cast<std::byte*>(dst);
  auto* s = static_cast<const std::byte*>(src);
  try {
    auto t0 = std::chrono::steady_clock::now();
    pool_.run(lanes, [&](unsigned i) { run_lane(lanes_[i], i, lanes, d, s, size, piece, kind); });
    int dir = kind == CopyKind::DeviceToHost;
    wall_ns_[dir] +=
        double(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    bytes_[dir] += size;
    ++copies_[dir];
  } catch (...) {
    // No DMA may still touch a slot when the next copy starts.
    for (Lane& lane : lanes_) {
      try {
        lane.queue->synchronize();
      } catch (...) {
      }
    }
    throw;
  }
}

// Lane `index` of `lanes` moves pieces index, index + lanes, ... through its
// slots; slot j % slots holds the lane's j-th piece.
namespace {

// LRRT_STAGING_POLL_US: a slot's event polled every `interval`, with no spin
// first, through the one wait (so the timeout holds here too).
class EventPoll final : public Waitable {
 public:
  EventPoll(Event& event, std::chrono::microseconds interval) : event_(event), interval_(interval) {}
  WaitStatus poll() override { return event_.query() ? WaitStatus::Complete : WaitStatus::Pending; }
  WaitStatus block(std::chrono::nanoseconds limit) override {
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(interval_, limit));
    return poll();
  }
  std::chrono::microseconds max_spin() const override { return std::chrono::microseconds(0); }
  std::string describe() const override { return "a staged copy's DMA"; }

 private:
  Event& event_;
  std::chrono::microseconds interval_;
};

}  // namespace

void StagingPipeline::wait_slot(Event& event) const {
  if (config_.poll_us == 0) return event.synchronize();
  EventPoll slot(event, std::chrono::microseconds(config_.poll_us));
  rt::wait(slot);  // a failed DMA is reported by the lane's queue
}

void StagingPipeline::run_lane(Lane& lane, unsigned index, unsigned lanes, std::byte* dst, const std::byte* src,
                               size_t size, size_t piece, CopyKind kind) {
  using clock = std::chrono::steady_clock;
  const bool trace = config_.trace;
  LaneTimes& times = lane.times[kind == CopyKind::DeviceToHost];
  auto mark = [&](double& into, clock::time_point& since) {
    if (!trace) return;
    auto now = clock::now();
    into += double(std::chrono::duration_cast<std::chrono::nanoseconds>(now - since).count());
    since = now;
  };
  clock::time_point t = trace ? clock::now() : clock::time_point{};
  const clock::time_point start = t;

  const size_t pieces = (size + piece - 1) / piece;
  const size_t mine = (pieces - index + lanes - 1) / lanes;
  const size_t k = lane.slots.size();
  auto offset_of = [&](size_t j) { return (index + j * lanes) * piece; };
  auto length_of = [&](size_t j) { return std::min(piece, size - offset_of(j)); };
  auto host_copy = [](bool streaming, void* to, const void* from, size_t n) {
    if (streaming) copy_streaming(to, from, n);
    else std::memcpy(to, from, n);
  };
  if (kind == CopyKind::HostToDevice) {
    for (size_t j = 0; j < mine; ++j) {
      const size_t slot = j % k;
      // The slot's previous DMA must have read it before it is refilled.
      if (j >= k) wait_slot(*lane.slot_free[slot]);
      mark(times.wait, t);
      host_copy(config_.nt_to_device, lane.slots[slot], src + offset_of(j), length_of(j));
      mark(times.host_copy, t);
      lane.queue->copy(dst + offset_of(j), lane.slots[slot], length_of(j), CopyKind::HostToDevice, {}, nullptr);
      lane.queue->record(*lane.slot_free[slot]);
      mark(times.issue, t);
    }
  } else {
    auto start_dma = [&](size_t j) {
      const size_t slot = j % k;
      lane.queue->copy(lane.slots[slot], src + offset_of(j), length_of(j), CopyKind::DeviceToHost, {}, nullptr);
      lane.queue->record(*lane.slot_free[slot]);
      mark(times.issue, t);
    };
    for (size_t j = 0; j < std::min(mine, k); ++j) start_dma(j);
    for (size_t j = 0; j < mine; ++j) {
      const size_t slot = j % k;
      wait_slot(*lane.slot_free[slot]);
      mark(times.wait, t);
      host_copy(config_.nt_to_host, dst + offset_of(j), lane.slots[slot], length_of(j));
      mark(times.host_copy, t);
      if (j + k < mine) start_dma(j + k);
    }
  }
  lane.queue->synchronize();
  mark(times.wait, t);
  if (trace) times.total += double(std::chrono::duration_cast<std::chrono::nanoseconds>(t - start).count());
}

// ---- lr_memcpy's hook ---------------------------------------------------------

bool staged_copy(DeviceState& state, void* dst, const void* src, size_t size, CopyKind kind) {
  const StagingMode mode = staging_mode();
  if (mode == StagingMode::Off || kind == CopyKind::DeviceToDevice || size == 0) return false;
  Device& device = *state.device;
  const void* host = kind == CopyKind::HostToDevice ? src : dst;
  if (mode != StagingMode::Force) {
    if (device.properties().host_memory_is_device_memory) return false;
    // Read once per process; a malformed variable fails every staged copy, naming it.
    static const size_t threshold = StagingConfig::from_env().threshold;
    if (size < threshold) return false;
    if (device.is_pinned(host, size)) return false;  // lr_host_malloc memory is copied directly
  }
  std::shared_ptr<StagingPipeline> pipeline;
  {
    std::lock_guard lock(state.mutex);
    if (!state.staging) state.staging = std::make_shared<StagingPipeline>(device, StagingConfig::from_env());
    pipeline = state.staging;
  }
  pipeline->copy(dst, src, size, kind);
  return true;
}

}  // namespace lrrt::rt
