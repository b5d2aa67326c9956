// The timed loop of `lrrt run` (single kernels and each way of a sequence):
// warm-up, then samples, each an event before and after one launch (or a
// batch of launches), until a fixed count or a stopping criterion on the
// samples' noise, as nvbench's: a robust noise (1.4826 x MAD / median,
// tool/robust_spread.hpp) at or below --max-noise, or a noise that has
// converged above it (the kernel's own variation).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"

namespace lrrt::tool {

struct TimingOptions {
  bool noise_stop = false;    // stop on noise (--max-noise ...) instead of a fixed count
  double max_noise = 0.005;   // robust noise (1.4826 x MAD / median) to reach (0.5%)
  uint32_t min_samples = 10;  // at least this many samples
  double min_time_s = 0.5;    // and at least this much summed sample time
  double max_time_s = 15;     // the timeout: wall time of one timed loop
  uint32_t batch = 1;         // launches between one pair of events; the sample is their time / batch
  bool cold = false;          // flush the last-level cache before each sample
  bool keep_samples = true;   // the samples in the result (sweeps leave them out)
  std::function<bool()> should_stop;  // Ctrl-C: the loop ends at its next round (may be empty)
};

// Most samples one loop takes in noise mode (memory bound; the stop says so).
inline constexpr size_t kMaxNoiseSamples = 1000000;

struct SampleRun {
  std::vector<uint64_t> samples;  // ns per launch
  uint64_t wall_ns = 0;           // the timed loop, flushes included
  bool criterion_met = true;
  bool converged = false;         // met by a stable noise above max_noise (the kernel's own variation)
  std::string stop;               // why the loop stopped, in words
};

// The last-level cache flush for cold samples: a device buffer of 4x the
// device's LLC; flush() copies its first half onto its second (2x the LLC
// written, 2x read) and waits for it, outside the events.
class CacheFlush {
 public:
  explicit CacheFlush(const lrrt::Device& device);
  void flush() const;
  nlohmann::json describe() const;  // {"bytes_written", "llc_bytes", "llc_method"}

 private:
  lrrt::Device device_;
  uint64_t half_ = 0;
  lr_device_memory_info_t info_{};
  lrrt::DeviceBuffer buffer_;
};

// nvbench's blocking kernel: while a round of samples is enqueued, the
// device's default queue is held by a kernel (spin.*'s hold_queue) that
// spins on a pinned host word, then let go, so the samples run back to back
// as the device reaches them. Without it a GPU runs each launch as soon as
// the host submits it, and a sample of a kernel shorter than one launch call
// times the host: saxpy over 1024 elements measured 4.6 us on the H200, with
// 22-160% noise. Not on the host backend (its device is the host), and not
// for work whose enqueue may wait on the device (the caller decides).
// Opt-in (LRRT_HOLD_QUEUE=1): on the H200 every held round was released by
// the kernel's poll limit, not by the host (cause not yet found).
class QueueHold {
 public:
  // Null, with the reason in `why_not`, on the host backend or without the
  // spin kernels in kernel_dir.
  static std::unique_ptr<QueueHold> make(const lrrt::Device& device, const std::filesystem::path& kernel_dir,
                                         std::string* why_not);
  void hold();      // the word to 0, then the holding kernel on the default queue
  void release();   // the word to 1
  void note_round() {  // after the round finished: did the kernel let go by itself?
    timed_out_ += std::atomic_ref<uint32_t>(words_.as<uint32_t>()[1]).load(std::memory_order_acquire) != 0;
  }
  uint32_t timed_out_rounds() const { return timed_out_; }
  nlohmann::json describe() const;

  QueueHold(lrrt::Module module, lrrt::Kernel kernel, lrrt::PinnedHostBuffer words)
      : module_(std::move(module)), kernel_(kernel), words_(std::move(words)) {}

 private:
  lrrt::Module module_;
  lrrt::Kernel kernel_;
  lrrt::PinnedHostBuffer words_;  // [0] the flag, [1] set when the kernel let go on its own
  uint32_t rounds_ = 0, timed_out_ = 0;
};

// Runs warmup enqueue()s, then samples: before(i) outside the events (a
// patch), flush (cold, may be null), start event, `batch` enqueue()s, end
// event. Fixed: `iterations` samples. Noise: until min_samples and min_time
// hold and the noise is at most max_noise or has converged (stable over the
// last 16 checks, about 0.3 s), or max_time passes (criterion not met).
// With `hold` (never with a flush, which waits), each round is enqueued
// behind a held queue.
SampleRun sample_launches(const lrrt::Device& device, const TimingOptions& t, uint32_t warmup, uint32_t iterations,
                          const std::function<void(uint64_t)>& before, const std::function<void()>& enqueue,
                          const CacheFlush* flush, QueueHold* hold = nullptr);

// timing_json of the samples plus wall time, noise and the criterion:
// {"samples"?, "min_ns", ..., "noise", "criterion": {...}, "batch", "cold"}.
nlohmann::json sample_json(const SampleRun& r, const TimingOptions& t, uint32_t iterations);

}  // namespace lrrt::tool
