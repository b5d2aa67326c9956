#include "tool/bench/registry.hpp"

#include <fmt/format.h>

#include "tool/bench/context.hpp"
#include "tool/bundle.hpp"

namespace lrrt::tool::bench {

// The benchmarks: one file each in this folder (<name>.cpp), one entry here.
void launch_overhead(Context& c);
void copy_bandwidth(Context& c);
void async_copy_launch(Context& c);
void double_buffer(Context& c);
void saxpy_bandwidth(Context& c);
void replay(Context& c);
void p2p(Context& c);

const std::vector<Benchmark>& benchmarks() {
  static const std::vector<Benchmark> list = {
      {"launch-overhead",
       "empty kernel: host enqueue per launch, throughput (N launches + one synchronize), launch + synchronize "
       "round trip (also with blocking waits: lrrt without its spin, the native blocking wait), idle synchronize; "
       "GPUs: a ~20 ms wait's wall and CPU time",
       launch_overhead, EveryDevice::InTurn},
      {"copy-bandwidth", "H2D, D2H (pageable and pinned) and D2D lr_memcpy over a size sweep", copy_bandwidth},
      {"async-copy-launch",
       "copy -> saxpy -> copy with host waits between steps vs device-side dependencies: submission and "
       "end-to-end time",
       async_copy_launch},
      {"double-buffer",
       "CPU preparation + H2D copy + kernel per iteration, sequential vs PinnedHostDoubleBuffer, with each "
       "stage alone (the ideal)",
       double_buffer},
      {"saxpy-bandwidth", "saxpy memory traffic in GB/s as a fraction of memcpy bandwidth on the same device",
       saxpy_bandwidth},
      {"replay",
       "retained replay (lr_graph_exec_launch) per kernel beside lrrt per-launch, the native graph and native "
       "per-launch: chains of 1-1024 empty kernels, a diamond, a fan-out of 8 spin kernels (overlap), a 1000-step "
       "saxpy chain, a replay with a scalar patched before each",
       replay},
      {"p2p",
       "copies between the devices of one backend: unidirectional bandwidth and 4-byte latency per ordered pair, "
       "both directions at once per pair, every device's H2D at once; needs two or more devices (host: "
       "LRRT_HOST_DEVICES=N)",
       p2p, EveryDevice::Once},
  };
  return list;
}

const Benchmark& find_benchmark(const std::string& name) {
  std::string names;
  for (const auto& b : benchmarks()) {
    if (b.name == name) return b;
    names += ", " + b.name;
  }
  throw InputError(fmt::format("unknown benchmark '{}': choose all{}", name, names));
}

void run_benchmark(const Benchmark& benchmark, lrrt::Device device, const BenchOptions& options, ResultSet& out) {
  Context context(benchmark, device, options, out);
  benchmark.run(context);
}

}  // namespace lrrt::tool::bench
