#include "tool/sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "tool/runner.hpp"
#include "tool/stats.hpp"

namespace lrrt::tool {

using nlohmann::json;

namespace {

// Without a reported LLC, flush this much (more than any L2 shipping today).
constexpr uint64_t kFallbackLlcBytes = uint64_t(256) << 20;

// Relative standard deviation of the samples (0 for fewer than two).
double relative_noise(const std::vector<uint64_t>& s) {
  if (s.size() < 2) return 0;
  double sum = 0;
  for (uint64_t v : s) sum += double(v);
  const double mean = sum / double(s.size());
  double sq = 0;
  for (uint64_t v : s) sq += (double(v) - mean) * (double(v) - mean);
  const double sd = std::sqrt(sq / double(s.size() - 1));
  return mean > 0 ? sd / mean : 0;
}

}  // namespace

CacheFlush::CacheFlush(const lrrt::Device& device) : device_(device), info_(device.memory_info()) {
  const uint64_t llc = info_.last_level_cache_bytes ? info_.last_level_cache_bytes : kFallbackLlcBytes;
  half_ = 2 * llc;
  buffer_ = lrrt::DeviceBuffer(device, 2 * half_);
}

void CacheFlush::flush() const {
  auto* base = static_cast<std::byte*>(buffer_.data());
  lrrt::check(lr_memcpy_async(device_.get(), base + half_, base, half_, LR_MEMCPY_DEVICE_TO_DEVICE, nullptr),
              "lr_memcpy_async (cache flush)");
  device_.synchronize();
}

json CacheFlush::describe() const {
  return {{"bytes_written", half_},
          {"llc_bytes", info_.last_level_cache_bytes},
          {"llc_method", info_.last_level_cache_bytes ? std::string(info_.last_level_cache_method)
                                                      : fmt::format("unknown: {} MiB assumed", kFallbackLlcBytes >> 20)}};
}

SampleRun sample_launches(const lrrt::Device& device, const TimingOptions& t, uint32_t warmup, uint32_t iterations,
                          const std::function<void(uint64_t)>& before, const std::function<void()>& enqueue,
                          const CacheFlush* flush) {
  SampleRun r;
  const uint32_t batch = std::max<uint32_t>(1, t.batch);
  for (uint32_t i = 0; i < warmup; ++i) {
    before(i);
    enqueue();
  }
  device.synchronize();
  constexpr uint32_t kRound = 256;
  std::vector<lrrt::Event> starts, ends;
  const uint32_t slots = t.noise_stop ? kRound : std::min(iterations, kRound);
  for (uint32_t i = 0; i < slots; ++i) {
    starts.emplace_back(device);
    ends.emplace_back(device);
  }
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto wall = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  uint64_t done = 0, sum_ns = 0;
  uint32_t round = t.noise_stop ? std::max<uint32_t>(1, std::min<uint32_t>(kRound, t.min_samples)) : kRound;
  while (true) {
    const uint32_t n = t.noise_stop ? round : static_cast<uint32_t>(std::min<uint64_t>(kRound, iterations - done));
    if (n == 0) break;
    for (uint32_t k = 0; k < n; ++k) {
      if (flush) flush->flush();
      before(warmup + done + k);
      starts[k].record();
      for (uint32_t b = 0; b < batch; ++b) enqueue();
      ends[k].record();
    }
    ends[n - 1].synchronize();
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t ns = ends[k].elapsed_ns_since(starts[k]);
      const uint64_t per = (ns + batch / 2) / batch;
      r.samples.push_back(per);
      sum_ns += per;
    }
    done += n;
    if (t.should_stop && t.should_stop()) {
      r.criterion_met = false;
      r.stop = "interrupted";
      break;
    }
    if (!t.noise_stop) {
      if (done >= iterations) break;
      continue;
    }
    const double noise = relative_noise(r.samples);
    const double summed = double(sum_ns) * 1e-9;
    if (r.samples.size() >= t.min_samples && summed >= t.min_time_s && noise <= t.max_noise) {
      r.stop = fmt::format("noise {:.3g}% <= {:.3g}% after {} samples ({:.3g} s of samples)", noise * 100, t.max_noise * 100,
                           r.samples.size(), summed);
      break;
    }
    const double elapsed = wall();
    if (elapsed >= t.max_time_s || r.samples.size() >= kMaxNoiseSamples) {
      r.criterion_met = false;
      const bool timeout = elapsed >= t.max_time_s;
      r.stop = fmt::format("{}: noise {:.3g}% (max {:.3g}%) after {} samples ({:.3g} s of samples, {:.3g} s wall){}",
                           timeout ? "timeout" : "sample limit", noise * 100, t.max_noise * 100, r.samples.size(), summed,
                           elapsed,
                           summed < t.min_time_s ? fmt::format(", below --min-time {:g} s", t.min_time_s)
                           : r.samples.size() < t.min_samples ? fmt::format(", below --min-samples {}", t.min_samples)
                                                              : "");
      break;
    }
    // About 20 ms of work per round: few host waits, a prompt timeout.
    const double per_sample = elapsed / double(done);
    round = static_cast<uint32_t>(std::clamp(per_sample > 0 ? 0.02 / per_sample : double(kRound), 1.0, double(kRound)));
  }
  device.synchronize();
  r.wall_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count());
  if (!t.noise_stop && r.stop.empty()) r.stop = fmt::format("{} iterations", iterations);
  return r;
}

json sample_json(const SampleRun& r, const TimingOptions& t, uint32_t iterations) {
  json timing = timing_json(r.samples);
  if (timing.is_null()) return timing;
  if (!t.keep_samples) timing.erase("samples");
  timing["sample_count"] = r.samples.size();
  timing["wall_ns"] = r.wall_ns;
  timing["wall_per_iteration_ns"] = double(r.wall_ns) / double(r.samples.size());
  timing["noise"] = relative_noise(r.samples);
  json c{{"kind", t.noise_stop ? "noise" : "iterations"}, {"met", r.criterion_met}, {"stop", r.stop}};
  if (t.noise_stop) {
    c["max_noise"] = t.max_noise;
    c["min_samples"] = t.min_samples;
    c["min_time_s"] = t.min_time_s;
    c["max_time_s"] = t.max_time_s;
  } else {
    c["iterations"] = iterations;
  }
  timing["criterion"] = c;
  timing["batch"] = std::max<uint32_t>(1, t.batch);
  timing["cold"] = t.cold;
  return timing;
}

}  // namespace lrrt::tool
