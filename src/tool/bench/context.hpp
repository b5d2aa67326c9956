// What a benchmark file works with: the device and its native baseline, the
// options, the kernels, and where measurements and summaries go (filed under
// the running benchmark's name, which only the registry spells).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lrrt/lrrt.hpp"
#include "lrrt/native_baseline.hpp"
#include "tool/bench/registry.hpp"
#include "tool/bench/sampler.hpp"
#include "tool/bench_result.hpp"

namespace lrrt::tool::bench {

inline constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

class Context {
 public:
  Context(const Benchmark& benchmark, lrrt::Device device, const BenchOptions& options, ResultSet& out);

  const std::string benchmark;  // the running benchmark's name
  lrrt::Device dev;
  const lr_device_properties_t props;
  const std::string backend;
  const BenchOptions& options;
  std::unique_ptr<lrrt::native::Baseline> native;  // null when the backend has none
  std::string native_api;                           // the baseline's API, in words

  // A kernel of the build loaded through lrrt; `image` is the code object,
  // for the native baseline's load_kernel.
  struct LoadedKernel {
    LoadedKernel(lrrt::Device device, std::vector<std::byte> code, const std::string& name)
        : image(std::move(code)), module(device, image), kernel(module.kernel(name)) {}
    std::vector<std::byte> image;
    lrrt::Module module;
    lrrt::Kernel kernel;
  };

  void progress(const std::string& what) const;
  // The build's code object of kernel source `source` (kernels/<source>.cpp)
  // for this device, found by the manifest's resolver ("@kernels/<source>.*").
  std::vector<std::byte> kernel_image(const std::string& source) const;
  // Kernel `name` of that code object (kernels name their entry after the file).
  LoadedKernel load_kernel(const std::string& source) const;

  // Records a measurement of this benchmark on this backend.
  void add(const std::string& metric, const std::string& impl, std::map<std::string, std::string> params,
           uint64_t size, uint64_t bytes, std::string api, std::vector<double> samples);
  // A headline number (bench_result.hpp, Summary). A value that was not
  // measured (NaN) adds nothing; a NaN baseline leaves it without one.
  void summary(const std::string& name, const std::string& label, double value, const std::string& unit,
               double baseline = NAN, const std::string& baseline_label = "", const std::string& note = "");
  // The median of a recorded measurement; NaN when there is none.
  double median(const std::string& metric, const std::string& impl, const std::map<std::string, std::string>& params = {},
                uint64_t size = 0) const;
  // Something the reader must know that is not a measurement (sizes
  // skipped): listed under the result's errors.
  void error(std::string message) { out_.errors.push_back(std::move(message)); }
  const ResultSet& results() const { return out_; }

 private:
  ResultSet& out_;
};

// Packed explicit arguments of kernels/saxpy.cpp: float a, const float* x,
// float* y, uint32_t n (natural alignment: 0, 8, 16, 24).
std::array<std::byte, 28> saxpy_args(float a, const void* x, void* y, uint32_t n);

inline void check(lr_status_t s, const char* what) { lrrt::check(s, what); }

// Largest copy size the machine can take for this device: device memory and
// available host memory both limit it.
uint64_t max_copy_size(lrrt::Device device);

}  // namespace lrrt::tool::bench
