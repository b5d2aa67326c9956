// The benchmarks of `lrrt bench`, one file each in this folder, listed once
// in registry.cpp: {name, description, function}. The list feeds `--list`,
// `--help` and dispatch. lrrt itself is measured through the public C ABI /
// lrrt.hpp, exactly as users call it; the native baseline of the same backend
// (include/lrrt/native_baseline.hpp) in the same process, on the same
// buffers, right after.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "tool/bench/sampler.hpp"
#include "tool/bench_result.hpp"

namespace lrrt::tool::bench {

struct BenchOptions {
  SamplingOptions sampling;
  bool quick = false;
  std::vector<uint64_t> sizes;  // copy-bandwidth sweep (empty: its default)
  std::filesystem::path kernel_dir;
  // Called with a short progress line ("copy-bandwidth cuda h2d pinned 64 MiB").
  std::function<void(const std::string&)> progress;
};

class Context;

// How a benchmark runs under `lrrt bench --device all`.
enum class EveryDevice {
  AtOnce,   // on every device at the same time, one thread each (the default)
  InTurn,   // one device after another: it changes process-wide settings
            // (launch-overhead's blocking waits set the wait spin)
  Once,     // once per backend, on device 0: it measures every device itself (p2p)
};

struct Benchmark {
  std::string name;         // launch-overhead, ...
  std::string description;  // what it measures, for --list and --help
  void (*run)(Context&);    // measures on the context's device; throws on failure
  EveryDevice every_device = EveryDevice::AtOnce;
};

// Every benchmark, in the order `all` runs them.
const std::vector<Benchmark>& benchmarks();
// Throws InputError naming every benchmark when there is none of that name.
const Benchmark& find_benchmark(const std::string& name);

// Runs one benchmark on an opened device; appends its measurements and
// summaries to `out`. Throws on failure (the caller records it and goes on).
void run_benchmark(const Benchmark& benchmark, lrrt::Device device, const BenchOptions& options, ResultSet& out);

}  // namespace lrrt::tool::bench
