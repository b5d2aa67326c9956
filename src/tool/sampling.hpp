// The timed loop of `lrrt run` (single kernels and each way of a sequence):
// warm-up, then samples, each an event before and after one launch (or a
// batch of launches), until a fixed count or a stopping criterion on the
// samples' noise (relative standard deviation), as nvbench does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"

namespace lrrt::tool {

struct TimingOptions {
  bool noise_stop = false;    // stop on noise (--max-noise ...) instead of a fixed count
  double max_noise = 0.005;   // relative standard deviation to reach (0.5%)
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

// Runs warmup enqueue()s, then samples: before(i) outside the events (a
// patch), flush (cold, may be null), start event, `batch` enqueue()s, end
// event. Fixed: `iterations` samples. Noise: until min_samples, min_time and
// max_noise hold, or max_time passes (criterion not met).
SampleRun sample_launches(const lrrt::Device& device, const TimingOptions& t, uint32_t warmup, uint32_t iterations,
                          const std::function<void(uint64_t)>& before, const std::function<void()>& enqueue,
                          const CacheFlush* flush);

// timing_json of the samples plus wall time, noise and the criterion:
// {"samples"?, "min_ns", ..., "noise", "criterion": {...}, "batch", "cold"}.
nlohmann::json sample_json(const SampleRun& r, const TimingOptions& t, uint32_t iterations);

}  // namespace lrrt::tool
