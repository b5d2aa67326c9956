#include "tool/sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstddef>
#include <cstring>

#include "lrrt/bundle/input_file.hpp"
#include "lrrt/bundle/manifest.hpp"
#include "tool/runner.hpp"
#include "tool/robust_spread.hpp"
#include "tool/stats.hpp"

namespace lrrt::tool {

using nlohmann::json;

namespace {

// Without a reported LLC, flush this much (more than any L2 shipping today).
constexpr uint64_t kFallbackLlcBytes = uint64_t(256) << 20;

// Relative standard deviation of the samples (0 for fewer than two): reported
// beside the robust noise, never a stopping criterion (one preemption among a
// million samples moves it by tens of percent).
double relative_stddev(const std::vector<uint64_t>& s) {
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

// Polls of the host word before the holding kernel lets go by itself: a few
// seconds on a GPU (a poll of host memory takes about a microsecond).
constexpr uint32_t kHoldPollLimit = uint32_t(1) << 23;
// Operations (events and launches) one held round enqueues at most. On the
// H200 a round of 10 samples (31 operations behind the holding kernel) was
// released by the host, rounds of 30 and 85 (91, 256) by the kernel's poll
// limit: most likely a submission blocks once that many blocking-sync event
// records wait behind a running kernel (nvbench holds one sample at a time).
// Not verified on the H200 since: the hold stays opt-in.
constexpr uint32_t kHeldRoundOps = 31;

std::unique_ptr<QueueHold> QueueHold::make(const lrrt::Device& device, const std::filesystem::path& kernel_dir,
                                           std::string* why_not) {
  const lr_device_properties_t props = device.properties();
  // Opt-in until it works on cuda: on the H200 (2026-12-04) every held round
  // was released by the kernel's own poll limit, not by the host's word (the
  // cause is not found yet), so each round waited seconds.
  if (const char* on = std::getenv("LRRT_HOLD_QUEUE"); !on || std::string(on) != "1") {
    *why_not = "off (LRRT_HOLD_QUEUE=1 turns it on; experimental: on cuda each round was released by its timeout)";
    return nullptr;
  }
  if (std::string(props.backend) == "host") {
    *why_not = "the host backend: its queue runs on the host, no submission gap to hide";
    return nullptr;
  }
  try {
    const auto path = bundle::resolve_code_object_path("@kernels/spin.*", props.backend, props.arch, kernel_dir,
                                                       kernel_dir);
    lrrt::Module module(device, bundle::read_input_file(path, bundle::kMaxCodeObjectBytes));
    lrrt::Kernel kernel = module.kernel("hold_queue");
    lrrt::PinnedHostBuffer words(device, 64);
    std::memset(words.data(), 0, 64);
    return std::make_unique<QueueHold>(std::move(module), kernel, std::move(words));
  } catch (const std::exception& e) {
    *why_not = fmt::format("no holding kernel (spin.* in the kernel folder): {}", e.what());
    return nullptr;
  }
}

void QueueHold::hold() {
  auto* w = words_.as<uint32_t>();
  std::atomic_ref<uint32_t>(w[1]).store(0, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(w[0]).store(0, std::memory_order_release);
  struct {
    void* flag;
    uint32_t limit;
  } args{words_.data(), kHoldPollLimit};
  const std::byte* bytes = reinterpret_cast<const std::byte*>(&args);
  lrrt::launch(kernel_, lr_launch_config_t{{1, 1, 1}, {1, 1, 1}, 0}, std::span(bytes, offsetof(decltype(args), limit) + 4));
  ++rounds_;
}

void QueueHold::release() {
  auto* w = words_.as<uint32_t>();
  std::atomic_ref<uint32_t>(w[0]).store(1, std::memory_order_release);
}

json QueueHold::describe() const {
  return {{"held", true},
          {"rounds", rounds_},
          {"rounds_released_by_timeout", timed_out_},
          {"method", "each round of samples enqueued behind a kernel spinning on a pinned host word, then released"}};
}

SampleRun sample_launches(const lrrt::Device& device, const TimingOptions& t, uint32_t warmup, uint32_t iterations,
                          const std::function<void(uint64_t)>& before, const std::function<void()>& enqueue,
                          const CacheFlush* flush, QueueHold* hold) {
  if (flush) hold = nullptr;  // a flush waits for the device: never behind a held queue
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
  std::vector<Spread> history;  // the noise at each check (noise mode)
  std::vector<uint64_t> scratch;
  uint32_t round = t.noise_stop ? std::max<uint32_t>(1, std::min<uint32_t>(kRound, t.min_samples)) : kRound;
  while (true) {
    uint32_t n = t.noise_stop ? round : static_cast<uint32_t>(std::min<uint64_t>(kRound, iterations - done));
    if (n == 0) break;
    if (hold) n = std::clamp<uint32_t>(kHeldRoundOps / (batch + 2), 1, n);
    if (hold) hold->hold();
    for (uint32_t k = 0; k < n; ++k) {
      if (flush) flush->flush();
      before(warmup + done + k);
      starts[k].record();
      for (uint32_t b = 0; b < batch; ++b) enqueue();
      ends[k].record();
    }
    if (hold) hold->release();
    ends[n - 1].synchronize();
    if (hold) hold->note_round();
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
    const Spread spread = robust_spread(r.samples, scratch);
    history.push_back(spread);
    const double noise = spread.noise;
    const double summed = double(sum_ns) * 1e-9;
    const bool enough = r.samples.size() >= t.min_samples && summed >= t.min_time_s;
    if (enough && noise <= t.max_noise) {
      r.stop = fmt::format("noise {:.3g}% <= {:.3g}% after {} samples ({:.3g} s of samples)", noise * 100, t.max_noise * 100,
                           r.samples.size(), summed);
      break;
    }
    if (enough && noise_converged(history)) {
      r.converged = true;
      r.stop = fmt::format("converged: noise {:.3g}% (above --max-noise {:.3g}%) stable over the last {} checks, "
                           "median within it; the kernel's own variation, after {} samples ({:.3g} s of samples)",
                           noise * 100, t.max_noise * 100, kConvergenceWindow, r.samples.size(), summed);
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
                                                              : ", still moving (not converged)");
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
  std::vector<uint64_t> scratch;
  const Spread spread = robust_spread(r.samples, scratch);
  timing["noise"] = spread.noise;
  timing["noise_measure"] = "1.4826 * MAD / median";
  timing["relative_stddev"] = relative_stddev(r.samples);
  timing["outliers"] = {{"count", spread.outliers},
                        {"fraction", r.samples.empty() ? 0.0 : double(spread.outliers) / double(r.samples.size())},
                        {"rule", "farther than 5 robust standard deviations from the median"},
                        {"slowest_ns", spread.slowest}};
  json c{{"kind", t.noise_stop ? "noise" : "iterations"}, {"met", r.criterion_met}, {"stop", r.stop}};
  if (t.noise_stop) c["converged"] = r.converged;
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
