// The kernel a manifest describes, loaded on an opened device without the
// CLI: the code object for the device's backend and arch, its module and
// kernel, the manifest's arguments checked against the layout the code
// object declares, the launch checked against the device and the kernel,
// and the launch configuration. What a compiler integration needs to run a
// kernel it compiled, next to a manifest that says how:
//
//   auto m = lrrt::bundle::load_manifest("saxpy.json");
//   lrrt::bundle::LoadedKernel kernel(m, device, kernel_dir);
//   auto buffers = lrrt::bundle::allocate_buffers(m, device);
//   lrrt::bundle::upload_buffers(buffers, lrrt::bundle::initial_contents(m).contents);
//   kernel.launch(kernel.pack_args(buffers));
//
// Errors: ManifestError/InputError for what the manifest or its files get
// wrong (exit code 2), DeviceError for what the device cannot do (3); a
// runtime failure elsewhere passes through as lrrt::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lrrt/bundle/fill.hpp"
#include "lrrt/bundle/kernargs.hpp"
#include "lrrt/bundle/manifest.hpp"
#include "lrrt/lrrt.hpp"

namespace lrrt::bundle {

// The manifest's "launch" as the runtime takes it: grid = workgroups per
// dimension, block = work-items per workgroup.
lrrt::LaunchConfig to_launch_config(const LaunchSpec& launch);

class LoadedKernel {
 public:
  // Resolves the manifest's code object for the device (kernel_dir is what
  // "@kernels/" means), checks the launch and the buffers against the
  // device, loads the module, finds the kernel and checks the manifest's
  // arguments against the kernel's declared layout (when the code object has
  // one) and the workgroup against the kernel's maximum.
  LoadedKernel(const Manifest& m, const lrrt::Device& device, const std::filesystem::path& kernel_dir);

  const lrrt::Device& device() const { return device_; }
  const lr_device_properties_t& device_properties() const { return properties_; }
  const std::filesystem::path& code_object() const { return code_object_; }
  // Which code object of the file was loaded and why (lr_module_source).
  std::string code_object_entry() const { return module_.source(); }
  const lrrt::Kernel& kernel() const { return kernel_; }
  const std::string& kernel_name() const { return kernel_name_; }
  const KernargLayout& layout() const { return layout_; }
  // True when the code object declared its argument layout and the
  // manifest's arguments matched it.
  bool layout_checked() const { return layout_checked_; }
  const lrrt::LaunchConfig& launch_config() const { return config_; }

  // The argument bytes: the manifest's scalars, and buffer_addresses[i] for
  // an argument naming manifest buffer i. Padded to what the kernel expects.
  std::vector<std::byte> pack_args(std::span<const uint64_t> buffer_addresses) const;
  std::vector<std::byte> pack_args(const std::vector<lrrt::DeviceBuffer>& buffers) const;

  // lrrt::launch with the manifest's configuration on the device's default
  // queue; a configuration the device rejects is an InputError naming /launch.
  void launch(std::span<const std::byte> args) const;

  // How buffer argument `arg` (an index into the manifest's args) is touched
  // when the manifest does not say (docs/access.md): the Triton entry's IR
  // analysis ("ttir"), else the code object's .actual_access or .access
  // (lr_kernel_get_arg_access), else read-write ("default").
  struct DerivedAccess {
    lr_access_mode_t mode = LR_ACCESS_READ_WRITE;
    std::string source = "default";
  };
  DerivedAccess derived_access(size_t arg) const;

 private:
  lrrt::Device device_;
  lr_device_properties_t properties_{};
  std::filesystem::path code_object_;
  lrrt::Module module_;
  lrrt::Kernel kernel_;
  std::string kernel_name_;
  std::vector<ArgSpec> args_;
  KernargLayout layout_;
  uint32_t kernarg_min_size_ = 0;  // the kernel's explicit argument bytes, when declared
  bool layout_checked_ = false;
  nlohmann::json triton_params_;  // a Triton entry's params (lr_triton_describe), with their access
  lrrt::LaunchConfig config_{};
};

// One device buffer per manifest buffer, checked against the device's memory
// first (for a device whose memory is host memory, the host backend's: also
// against available_host_memory()). DeviceError naming /buffers/N (or
// /buffers for the total).
std::vector<lrrt::DeviceBuffer> allocate_buffers(const Manifest& m, const lrrt::Device& device);

// Host memory the system can give this process now: MemAvailable of
// /proc/meminfo (free memory plus what the kernel can reclaim without
// swapping), or LRRT_TEST_MEMAVAILABLE_BYTES when set (tests put a limit
// between what the buffers need and what a run holds; InputError when it is
// not a whole number of bytes). 0 when unknown: nothing is checked then.
uint64_t available_host_memory();

// What a run holds at its peak: the device buffers, and the host-side copies
// made for them (initial contents, read-back outputs, expected values,
// reference runs), each part named for messages. Sums saturate at
// UINT64_MAX.
struct MemoryDemand {
  uint64_t device_bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> host_parts;  // {"initial contents", bytes}, ...
  uint64_t host_bytes() const;
};

// DeviceError (exit 3) when the run does not fit: first allocate_buffers'
// checks (a buffer, then the buffers together, against the device's
// memory: naming /buffers/N), then the demand, naming the total, its parts
// and the limit: on a device whose memory is host memory everything against
// available_host_memory(); otherwise the buffers against the device's
// memory and the host copies against available_host_memory().
void check_memory_demand(const Manifest& m, const MemoryDemand& demand, const lr_device_properties_t& p);

// Copies contents[i] into buffers[i] for every buffer (sizes must match).
void upload_buffers(const std::vector<lrrt::DeviceBuffer>& buffers, const BufferContents& contents);

}  // namespace lrrt::bundle
