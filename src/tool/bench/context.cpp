#include "tool/bench/context.hpp"

#include <unistd.h>

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "tool/bundle.hpp"

namespace lrrt::tool::bench {

Context::Context(const Benchmark& b, lrrt::Device device, const BenchOptions& o, ResultSet& out)
    : benchmark(b.name), dev(device), props(device.properties()), backend(props.backend), options(o), out_(out) {
  try {
    native = lrrt::native::make_baseline(device);
    native_api = native->description();
  } catch (const std::exception& e) {
    out_.errors.push_back(fmt::format("{} on {}: no native baseline: {}", benchmark, backend, e.what()));
  }
}

void Context::progress(const std::string& what) const {
  if (options.progress) options.progress(what);
}

std::vector<std::byte> Context::kernel_image(const std::string& source) const {
  return read_input_file(
      resolve_code_object_path("@kernels/" + source + ".*", backend, props.arch, options.kernel_dir, options.kernel_dir),
      kMaxCodeObjectBytes);
}

Context::LoadedKernel Context::load_kernel(const std::string& source) const {
  return LoadedKernel(dev, kernel_image(source), source);
}

void Context::add(const std::string& metric, const std::string& impl, std::map<std::string, std::string> params,
                  uint64_t size, uint64_t bytes, std::string api, std::vector<double> samples) {
  Measurement m;
  m.benchmark = benchmark;
  m.metric = metric;
  m.backend = backend;
  m.impl = impl;
  m.params = std::move(params);
  m.size = size;
  m.bytes = bytes;
  m.api = std::move(api);
  m.stats = compute_stats(samples);
  m.samples = std::move(samples);
  out_.measurements.push_back(std::move(m));
}

void Context::summary(const std::string& name, const std::string& label, double value, const std::string& unit,
                      double baseline, const std::string& baseline_label, const std::string& note) {
  if (std::isnan(value)) return;
  Summary s;
  s.benchmark = benchmark;
  s.backend = backend;
  s.name = name;
  s.label = label;
  s.value = value;
  s.unit = unit;
  if (!std::isnan(baseline)) {
    s.baseline = baseline;
    s.baseline_label = baseline_label;
  }
  s.note = note;
  out_.summaries.push_back(std::move(s));
}

double Context::median(const std::string& metric, const std::string& impl,
                       const std::map<std::string, std::string>& params, uint64_t size) const {
  const Measurement* m = out_.find(benchmark, metric, backend, impl, params, size);
  return m ? m->stats.median : NAN;
}

std::array<std::byte, 28> saxpy_args(float a, const void* x, void* y, uint32_t n) {
  std::array<std::byte, 28> b{};
  std::memcpy(b.data(), &a, 4);
  std::memcpy(b.data() + 8, &x, 8);
  std::memcpy(b.data() + 16, &y, 8);
  std::memcpy(b.data() + 24, &n, 4);
  return b;
}

uint64_t max_copy_size(lrrt::Device device) {
  auto p = device.properties();
  uint64_t host_available = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kb;
    std::string unit;
    while (in >> key >> kb >> unit)
      if (key == "MemAvailable:") host_available = kb * 1024;
  }
  if (!host_available) {
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    host_available = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : GiB;
  }
  // Host: a pageable and a pinned buffer (and, on the host backend, the two
  // "device" buffers too), with room to spare.
  uint64_t cap = host_available / (std::string(p.backend) == "host" ? 6 : 4);
  if (p.memory_bytes && std::string(p.backend) != "host") cap = std::min<uint64_t>(cap, p.memory_bytes / 4);
  uint64_t pow2 = 4 * KiB;
  while (pow2 * 2 <= cap) pow2 *= 2;
  return pow2;
}

}  // namespace lrrt::tool::bench
