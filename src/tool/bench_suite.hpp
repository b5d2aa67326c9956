// The benchmarks of `lrrt bench`. lrrt itself is measured through the public
// C ABI / lrrt.hpp, exactly as users call it; the native baseline of the same
// backend (src/runtime/native_bench.hpp) is measured in the same process,
// on the same buffers, right after.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "tool/bench_result.hpp"

namespace lrrt::tool::bench {

struct SamplingOptions {
  double min_time_s = 0.2;   // keep sampling until this much time passed ...
  size_t min_samples = 10;   // ... and at least this many samples
  size_t max_samples = 1000;
  double max_time_s = 3.0;   // stop after this (once 3 samples exist)
  size_t warmup = 2;
};

struct BenchOptions {
  SamplingOptions sampling;
  bool quick = false;
  std::vector<uint64_t> sizes;  // copy-bandwidth sweep (empty: default)
  std::filesystem::path kernel_dir;
  // Called with a short progress line ("copy-bandwidth cuda h2d pinned 64 MiB").
  std::function<void(const std::string&)> progress;
};

// Default sampling for normal and --quick runs.
SamplingOptions default_sampling(bool quick);
// Default copy sweep: 4 KiB..1 GiB in x4 steps; quick: 4 KiB, 64 KiB, 1 MiB, 16 MiB, 64 MiB.
std::vector<uint64_t> default_sizes(bool quick);

// Warm-up, then op() until min time and min samples (or the caps). op
// returns nanoseconds per operation of one sample.
std::vector<double> sample(const SamplingOptions& options, const std::function<double()>& op);
// The same for ops that time several things at once: op fills `count` values.
std::vector<std::vector<double>> sample_multi(const SamplingOptions& options, size_t count,
                                              const std::function<void(double*)>& op);

// Nanoseconds from a steady clock.
double now_ns();

struct BenchmarkInfo {
  std::string name;
  std::string description;
};
// launch-overhead, copy-bandwidth, async-copy-launch, double-buffer, saxpy-bandwidth.
const std::vector<BenchmarkInfo>& benchmarks();

// Runs one benchmark on an opened device; appends measurements and
// summaries. Throws on failure (the caller records it and goes on).
void run_benchmark(const std::string& name, lrrt::Device device, const BenchOptions& options, ResultSet& out);

// Largest copy size the machine can take for this device: device memory and
// available host memory both limit it.
uint64_t max_copy_size(lrrt::Device device);

}  // namespace lrrt::tool::bench
