#include "lrrt/bundle/kernel.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <utility>

#include "lrrt/bundle/input_file.hpp"

namespace lrrt::bundle {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTestMemAvailable = "LRRT_TEST_MEMAVAILABLE_BYTES";

std::string available_memory_source() {
  const char* env = std::getenv(kTestMemAvailable);
  return env && *env ? fmt::format("{}", kTestMemAvailable) : "MemAvailable in /proc/meminfo";
}

// Statuses that mean the manifest or its code object is wrong, not the device.
bool is_input_status(lr_status_t s) {
  return s == LR_ERROR_INVALID_ARGUMENT || s == LR_ERROR_INVALID_IMAGE || s == LR_ERROR_NOT_FOUND ||
         s == LR_ERROR_NOT_SUPPORTED;
}

uint64_t workgroup_items(const LaunchSpec& L) {
  return uint64_t(L.workgroup_size[0]) * L.workgroup_size[1] * L.workgroup_size[2];
}

void check_launch_against_device(const Manifest& m, const lr_device_properties_t& p) {
  const auto& L = m.launch;
  const uint64_t items = workgroup_items(L);
  if (p.max_workgroup_size && items > p.max_workgroup_size)
    throw ManifestError("/launch/workgroup_size", fmt::format("workgroup of {} work-items exceeds the device's maximum of {} ({})",
                                                              items, p.max_workgroup_size, p.name));
  const uint32_t maxd[3] = {p.max_workgroup_dims.x, p.max_workgroup_dims.y, p.max_workgroup_dims.z};
  for (int d = 0; d < 3; ++d)
    if (maxd[d] && L.workgroup_size[d] > maxd[d])
      throw ManifestError(fmt::format("/launch/workgroup_size/{}", d),
                          fmt::format("{} exceeds the device's maximum of {} in dimension {}", L.workgroup_size[d], maxd[d], "xyz"[d]));
  if (p.max_shared_memory_per_workgroup && L.dynamic_shared_bytes > p.max_shared_memory_per_workgroup)
    throw ManifestError("/launch/dynamic_shared_bytes", fmt::format("{} bytes exceed the device's {} bytes of shared memory per workgroup",
                                                                    L.dynamic_shared_bytes, p.max_shared_memory_per_workgroup));
}

// The host backend's device memory is host memory (src/runtime/host).
bool memory_is_host_memory(const lr_device_properties_t& p) { return std::string_view(p.backend) == "host"; }

// The device's memory, and for the host device the host memory available
// now when that is less; 0 when unknown.
std::pair<uint64_t, std::string> device_memory_limit(const lr_device_properties_t& p) {
  uint64_t limit = p.memory_bytes;
  std::string what = fmt::format("the device's {} bytes of memory ({})", p.memory_bytes, p.name);
  if (memory_is_host_memory(p))
    if (const uint64_t available = available_host_memory(); available && (!limit || available < limit)) {
      limit = available;
      what = fmt::format("the {} bytes of host memory available ({}; the host device's memory is host memory)", available,
                         available_memory_source());
    }
  return {limit, what};
}

void check_memory(const Manifest& m, const lr_device_properties_t& p) {
  const auto [limit, what] = device_memory_limit(p);
  if (!limit) return;
  uint64_t total = 0;
  for (const auto& b : m.buffers) {
    if (b.bytes > limit)
      throw DeviceError(fmt::format("{}: buffer \"{}\" needs {} bytes ({} x {}), more than {}", b.pointer, b.name, b.bytes,
                                    b.count, dtype_name(b.type), what));
    total += b.bytes;
  }
  if (total > limit)
    throw DeviceError(fmt::format("/buffers: the buffers need {} bytes together, more than {}", total, what));
}

// The code object for the device, after the checks that need no code object.
fs::path resolve_for_device(const Manifest& m, const lr_device_properties_t& p, const fs::path& kernel_dir) {
  fs::path path = resolve_code_object(m, p.backend, p.arch, kernel_dir);
  check_launch_against_device(m, p);
  return path;
}

// Every format lrrt loads starts with a magic number, or is PTX text
// (formats::detect_format names them; the bundle layer cannot include it).
// Anything else is refused from its first bytes, before the whole file is
// read; the runtime's loader checks the rest.
std::string code_object_head_check(std::span<const std::byte> head) {
  if (head.empty()) return "an empty file, not a code object";
  const std::string_view text(reinterpret_cast<const char*>(head.data()), head.size());
  for (std::string_view magic : {std::string_view("\x7f" "ELF"), std::string_view("__CLANG_OFFLOAD_BUNDLE__"),
                                 std::string_view("CCOB"), std::string_view("\x50\xed\x55\xba", 4)})
    if (text.substr(0, magic.size()) == magic) return "";
  if (text.find(".version") != std::string_view::npos && text.find(".target") != std::string_view::npos) return "";
  return "not a code object lrrt recognises";
}

lrrt::Module load_module(const lrrt::Device& device, const fs::path& path, const lr_device_properties_t& p) {
  std::vector<std::byte> image;
  try {
    image = read_code_object_file(path, code_object_head_check);
  } catch (const InputError& e) {
    throw InputError(std::string("/code_object: ") + e.what());
  }
  try {
    return lrrt::Module(device, std::span<const std::byte>(image));
  } catch (const lrrt::Error& e) {
    const std::string msg = fmt::format("cannot load code object {} on {} ({}): {}", path.string(), p.backend, p.arch, e.what());
    if (is_input_status(e.status())) throw InputError("/code_object: " + msg);
    throw DeviceError("/code_object: " + msg);
  }
}

lrrt::Kernel find_kernel(const lrrt::Module& module, const Manifest& m, const fs::path& path) {
  try {
    return module.kernel(m.kernel);
  } catch (const lrrt::Error& e) {
    if (e.status() != LR_ERROR_NOT_FOUND && !is_input_status(e.status())) throw DeviceError(e.what());
    // There, but the runtime will not run it (hsa: a service it does not
    // provide): the runtime's message says why.
    if (e.status() != LR_ERROR_NOT_FOUND) throw ManifestError("/kernel", e.what());
    std::string names;
    try {
      for (const auto& n : module.kernel_names()) names += (names.empty() ? "" : ", ") + n;
    } catch (const lrrt::Error&) {
    }
    throw ManifestError("/kernel", fmt::format("no kernel \"{}\" in {} (it has: {})", m.kernel, path.string(),
                                               names.empty() ? "none listed" : names));
  }
}

}  // namespace

uint64_t available_host_memory() {
  uint64_t bytes = 0;
  int is_set = 0;
  if (lr_get_environment_u64(kTestMemAvailable, &bytes, &is_set) != LR_SUCCESS) throw InputError(lr_last_error_message());
  if (is_set) return bytes;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    // "MemAvailable:   123456 kB"
    const uint64_t kib = std::strtoull(line.c_str() + 13, nullptr, 10);
    return kib > UINT64_MAX / 1024 ? UINT64_MAX : kib * 1024;
  }
  return 0;
}

uint64_t MemoryDemand::host_bytes() const {
  uint64_t total = 0;
  for (const auto& [what, bytes] : host_parts) total = bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes;
  return total;
}

void check_memory_demand(const Manifest& m, const MemoryDemand& demand, const lr_device_properties_t& p) {
  check_memory(m, p);  // the most specific message first: the buffer that does not fit
  const uint64_t host = demand.host_bytes();
  std::string parts;
  for (const auto& [what, bytes] : demand.host_parts)
    if (bytes) parts += fmt::format(", {} {}", what, bytes);
  const uint64_t available = available_host_memory();
  if (memory_is_host_memory(p)) {
    const auto [limit, what] = device_memory_limit(p);
    const uint64_t total = host > UINT64_MAX - demand.device_bytes ? UINT64_MAX : demand.device_bytes + host;
    if (limit && total > limit)
      throw DeviceError(fmt::format("/buffers: the run holds {} bytes of host memory (device buffers {}{}), more than {}",
                                    total, demand.device_bytes, parts, what));
    return;
  }
  if (p.memory_bytes && demand.device_bytes > p.memory_bytes)
    throw DeviceError(fmt::format("/buffers: the buffers need {} bytes together, more than the device's {} bytes of memory ({})",
                                  demand.device_bytes, p.memory_bytes, p.name));
  if (available && host > available)
    throw DeviceError(fmt::format("/buffers: the run holds {} bytes of host memory next to the {} bytes of device buffers "
                                  "(host copies:{}), more than the {} bytes of host memory available ({})",
                                  host, demand.device_bytes, parts.empty() ? std::string() : parts.substr(1), available,
                                  available_memory_source()));
}

// Tensor map arguments need a device that encodes them: refused before the
// code object is looked for, naming the argument.
static const lr_device_properties_t& check_tensor_maps(const Manifest& m, const lr_device_properties_t& p) {
  for (size_t i = 0; i < m.args.size(); ++i) {
    const ArgSpec& a = m.args[i];
    if (a.kind != ArgSpec::Kind::TensorMap) continue;
    if (const std::string why = tensor_map_unsupported_reason(p); !why.empty())
      throw ManifestError(a.pointer, fmt::format("args[{}]{}: {}", i, a.name.empty() ? "" : " '" + a.name + "'", why));
  }
  return p;
}

lrrt::LaunchConfig to_launch_config(const LaunchSpec& L) {
  return lrrt::launch_config({L.workgroup_count[0], L.workgroup_count[1], L.workgroup_count[2]},
                             {L.workgroup_size[0], L.workgroup_size[1], L.workgroup_size[2]}, L.dynamic_shared_bytes);
}

LoadedKernel::LoadedKernel(const Manifest& m, const lrrt::Device& device, const fs::path& kernel_dir)
    : device_(device),
      properties_(check_tensor_maps(m, device.properties())),
      code_object_(resolve_for_device(m, properties_, kernel_dir)),
      module_(load_module(device, code_object_, properties_)),
      kernel_(find_kernel(module_, m, code_object_)),
      kernel_name_(m.kernel),
      args_(m.args),
      layout_(layout_kernargs(m.args)),
      config_(to_launch_config(m.launch)) {
  if (m.waits_for_producer) kernel_.set_flags(kernel_.flags() | LR_KERNEL_WAITS_FOR_PRODUCER);
  if (m.triton.is_object() && m.triton.contains("params")) triton_params_ = m.triton["params"];
  const lr_kernel_properties_t kp = kernel_.properties();
  if (kp.has_arg_layout) {
    std::vector<KernelArg> declared;
    for (const auto& a : kernel_.args()) {
      if (a.kind == LR_ARG_HIDDEN) continue;
      declared.push_back(
          KernelArg{a.offset, a.size, a.kind == LR_ARG_GLOBAL_BUFFER, a.name, a.kind != LR_ARG_OTHER, a.type_name});
    }
    args_ = at_kernel_offsets(m.args, declared);
    layout_ = layout_kernargs(args_);
    check_kernargs(args_, layout_, declared, m.kernel);
    layout_checked_ = true;
    kernarg_min_size_ = kp.explicit_kernarg_size;
  }
  if (kp.max_workgroup_size && workgroup_items(m.launch) > kp.max_workgroup_size)
    throw ManifestError("/launch/workgroup_size", fmt::format("workgroup of {} work-items exceeds kernel \"{}\"'s maximum of {}",
                                                              workgroup_items(m.launch), m.kernel, kp.max_workgroup_size));
}

namespace {
const char* access_source_word(lr_access_source_t s) {
  switch (s) {
    case LR_ACCESS_SOURCE_DECLARED: return "declared";
    case LR_ACCESS_SOURCE_ACTUAL_ACCESS: return "actual_access";
    case LR_ACCESS_SOURCE_ACCESS: return "access";
    case LR_ACCESS_SOURCE_TTIR: return "ttir";
    case LR_ACCESS_SOURCE_DEFAULT: break;
  }
  return "default";
}
}  // namespace

LoadedKernel::DerivedAccess LoadedKernel::derived_access(size_t arg) const {
  DerivedAccess out;
  if (arg >= args_.size() || args_[arg].kind != ArgSpec::Kind::Buffer) return out;
  if (triton_params_.is_array()) {
    // A Triton entry: its params are the manifest's first arguments, in order.
    if (arg < triton_params_.size() && triton_params_[arg].value("access_source", "") == "ttir") {
      const std::string mode = triton_params_[arg].value("access", "read_write");
      out.mode = mode == "read" ? LR_ACCESS_READ : mode == "write" ? LR_ACCESS_WRITE : LR_ACCESS_READ_WRITE;
      out.source = "ttir";
    }
    return out;
  }
  // The kernel's explicit argument at this argument's offset.
  const uint32_t offset = layout_.slots[arg].offset;
  const lr_kernel_properties_t kp = kernel_.properties();
  for (uint32_t i = 0; i < kp.arg_count; ++i) {
    lr_kernel_arg_t a{};
    lrrt::check(lr_kernel_get_arg(kernel_.get(), i, &a), "lr_kernel_get_arg");
    if (a.kind == LR_ARG_HIDDEN || a.offset != offset) continue;
    const auto [mode, source] = kernel_.arg_access(i);
    out.mode = mode;
    out.source = access_source_word(source);
    break;
  }
  return out;
}

std::vector<std::byte> LoadedKernel::pack_args(std::span<const uint64_t> buffer_addresses) const {
  std::vector<std::byte> out = pack_kernargs(
      args_, layout_, std::vector<uint64_t>(buffer_addresses.begin(), buffer_addresses.end()), kernarg_min_size_);
  for (size_t i = 0; i < args_.size(); ++i) {
    if (args_[i].kind != ArgSpec::Kind::TensorMap) continue;
    try {
      encode_tensor_map(device_.get(), *args_[i].tensor_map, buffer_addresses[args_[i].buffer], out.data() + layout_.slots[i].offset);
    } catch (const lrrt::Error& e) {
      const std::string msg = fmt::format("{}: cannot encode the tensor map on {}: {}", args_[i].pointer, properties_.name, e.what());
      if (is_input_status(e.status())) throw InputError(msg);
      throw DeviceError(msg);
    }
  }
  return out;
}

std::vector<std::byte> LoadedKernel::pack_args(const std::vector<lrrt::DeviceBuffer>& buffers) const {
  std::vector<uint64_t> addresses;
  addresses.reserve(buffers.size());
  for (const auto& b : buffers) addresses.push_back(reinterpret_cast<uint64_t>(b.data()));
  return pack_args(addresses);
}

void LoadedKernel::launch(std::span<const std::byte> args) const {
  try {
    lrrt::launch(kernel_, config_, args);
  } catch (const lrrt::Error& e) {
    if (e.status() == LR_ERROR_INVALID_ARGUMENT)
      throw InputError(fmt::format("/launch: kernel \"{}\" cannot be launched with this configuration: {}", kernel_name_, e.what()));
    throw;
  }
}

std::vector<lrrt::DeviceBuffer> allocate_buffers(const Manifest& m, const lrrt::Device& device) {
  const lr_device_properties_t p = device.properties();
  check_memory(m, p);
  std::vector<lrrt::DeviceBuffer> buffers;
  buffers.reserve(m.buffers.size());
  for (const auto& b : m.buffers) {
    try {
      buffers.emplace_back(device, static_cast<size_t>(b.bytes));
    } catch (const lrrt::Error& e) {
      throw DeviceError(fmt::format("{}: cannot allocate {} bytes for buffer \"{}\" on {}: {}", b.pointer, b.bytes, b.name,
                                    p.name, e.what()));
    }
  }
  return buffers;
}

void upload_buffers(const std::vector<lrrt::DeviceBuffer>& buffers, const BufferContents& contents) {
  for (size_t i = 0; i < buffers.size(); ++i) lrrt::copy_to_device(buffers[i], contents.at(i).data(), contents[i].size());
}

}  // namespace lrrt::bundle
