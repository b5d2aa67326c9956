// Modules from cubin, PTX (JIT-compiled by the driver, its log in the error)
// and fatbin; kernels with their parameter layout from cuFuncGetParamInfo, or
// from the image itself (lrrt_formats' NVIDIA reader) on older drivers.
#include "cuda_executable.hpp"

#include <bit>
#include <cstring>

#include "cuda_device.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/nvidia.hpp"
#include "lrrt/formats/select.hpp"

namespace lrrt::rt::cuda {
namespace {

using formats::nvidia::describe_image_targets;
using formats::nvidia::image_kernel;
using formats::nvidia::image_kernel_names;
using formats::nvidia::ImageKernel;
using formats::nvidia::ImageParam;

std::string trim_log(const char* log) {
  std::string s(log);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace

// ---------------------------------------------------------------- loading

namespace {

CudaModule::Part load_part(CudaDevice& device, std::span<const std::byte> image) {
  // The driver reads PTX as a NUL-terminated string and wants binaries
  // 8-byte aligned: keep an owned, aligned, terminated copy.
  if (image.size() > (size_t(1) << 40))  // also tells GCC the size + 8 below does not wrap
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "a {}-byte image is not a CUDA module", image.size());
  std::vector<std::byte> owned(image.size() + 8);
  std::memcpy(owned.data(), image.data(), image.size());
  owned.resize(image.size() + 1);  // one NUL past the end for PTX
  owned.back() = std::byte{0};

  static constexpr size_t kLogSize = 16 * 1024;
  std::vector<char> error_log(kLogSize, 0), info_log(kLogSize, 0);
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(kLogSize), info_log.data(),
                    reinterpret_cast<void*>(kLogSize)};
  device.make_current();
  CUmodule module = nullptr;
  CUresult r = cu().cuModuleLoadDataEx(&module, owned.data(), 4, options, values);
  if (r != CUDA_SUCCESS) {
    if (cu_is_sticky_fault(r)) device.fail(r, "cuModuleLoadDataEx", "", __FILE__, __LINE__);
    std::string log = trim_log(error_log.data());
    lr_status_t status = cu_status(r);
    if (status == LR_ERROR_RUNTIME || status == LR_ERROR_INVALID_ARGUMENT)
      status = LR_ERROR_INVALID_IMAGE;
    LRRT_THROW_AT(status, "loading {} ({}) on {} failed: cuModuleLoadDataEx: {}{}{}",
                  formats::describe_format(image), describe_image_targets(image), device.description(),
                  cu_error_text(r), log.empty() ? "" : "; JIT log: ", log);
  }
  owned.resize(image.size());
  CudaModule::Part part;
  part.module = module;
  part.image = std::move(owned);
  return part;
}

}  // namespace

std::unique_ptr<Module> CudaDevice::load_module(std::span<const std::byte> full_image) {
  const formats::Format format = formats::detect_format(full_image);
  if (formats::format_backend(format) != "cuda" && format != formats::Format::HostSharedObject)
    LRRT_THROW(LR_ERROR_INVALID_IMAGE,
               "the cuda backend cannot load {}: it takes cubins, fatbins, PTX and host binaries with a "
               ".nv_fatbin section",
               formats::describe_format(full_image));
  // lrrt picks the entry (exact SASS, compatible SASS, then PTX) of every
  // fatbin that has kernels and loads only those, decoded: the driver never
  // sees a container, so the result can say which code ran, and compressed
  // entries need no driver support. A FormatError (nothing runs here, a
  // corrupt entry) reaches the C ABI as LR_ERROR_INVALID_IMAGE.
  std::vector<formats::Selection> selections;
  try {
    selections = formats::select_parts_for_cuda(full_image, sm_, description_);
  } catch (const formats::FormatError& e) {
    LRRT_THROW(LR_ERROR_INVALID_IMAGE, "{}", e.what());
  }
  std::vector<CudaModule::Part> parts;
  std::string source;
  try {
    for (auto& selection : selections) {
      parts.push_back(load_part(*this, selection.entry.bytes));
      parts.back().description = selection.description;
    }
  } catch (...) {
    make_current();
    for (auto& p : parts) cu().cuModuleUnload(p.module);
    throw;
  }
  source = formats::describe_parts(selections, "fatbins");
  auto loaded = std::make_unique<CudaModule>(*this, std::move(parts));
  loaded->set_source(std::move(source));
  return loaded;
}


// ---------------------------------------------------------------- modules

CudaModule::CudaModule(CudaDevice& device, std::vector<Part> parts) : device_(device), parts_(std::move(parts)) {}

CudaModule::~CudaModule() {
  kernels_.clear();
  device_.note_module_unload();
  device_.make_current();
  for (auto& p : parts_)
    if (p.module) cu().cuModuleUnload(p.module);
}

std::vector<std::string> CudaModule::kernel_names() const {
  std::vector<std::string> all;
  for (const auto& part : parts_) {
    std::vector<std::string> names = image_kernel_names(part.image);
    if (names.empty()) {
      // An image whose kernels the parser cannot name: ask the driver.
      const CudaSymbols& s = cu();
      if (s.cuModuleGetFunctionCount && s.cuModuleEnumerateFunctions && s.cuFuncGetName) {
        device_.make_current();
        unsigned int count = 0;
        if (s.cuModuleGetFunctionCount(&count, part.module) == CUDA_SUCCESS && count) {
          std::vector<CUfunction> functions(count);
          if (s.cuModuleEnumerateFunctions(functions.data(), count, part.module) == CUDA_SUCCESS)
            for (CUfunction f : functions) {
              const char* name = nullptr;
              if (s.cuFuncGetName(&name, f) == CUDA_SUCCESS && name) names.emplace_back(name);
            }
        }
      }
    }
    all.insert(all.end(), names.begin(), names.end());
  }
  return all;
}

Kernel& CudaModule::kernel(std::string_view name) {
  std::lock_guard lock(mutex_);
  std::string key(name);
  if (auto it = kernels_.find(key); it != kernels_.end()) return *it->second;
  device_.make_current();
  for (const auto& part : parts_) {
    CUfunction function = nullptr;
    CUresult r = cu().cuModuleGetFunction(&function, part.module, key.c_str());
    if (r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE) continue;
    if (r != CUDA_SUCCESS) device_.fail(r, fmt::format("cuModuleGetFunction('{}')", key), "", __FILE__, __LINE__);
    auto k = std::make_unique<CudaKernel>(device_, function, describe(function, key, part.image));
    Kernel& out = *k;
    kernels_.emplace(std::move(key), std::move(k));
    return out;
  }
  std::string list;
  for (const auto& n : kernel_names()) list += (list.empty() ? "" : ", ") + n;
  LRRT_THROW(LR_ERROR_NOT_FOUND, "no kernel '{}' in the module; it holds: {}", key, list.empty() ? "(none found)" : list);
}

KernelInfo CudaModule::describe(CUfunction function, const std::string& name, std::span<const std::byte> image) const {
  const CudaSymbols& s = cu();
  KernelInfo info;
  info.name = name;
  info.symbol = name;
  info.wavefront_size = 32;
  auto attr = [&](CUfunction_attribute a) {
    int v = 0;
    return s.cuFuncGetAttribute(&v, a, function) == CUDA_SUCCESS ? v : 0;
  };
  info.group_segment_size = static_cast<uint32_t>(attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
  info.private_segment_size = static_cast<uint32_t>(attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
  info.max_workgroup_size = static_cast<uint32_t>(attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));

  // The image's own record: PTX names and `.ptr` marks, cubin offsets.
  std::optional<ImageKernel> recorded = image_kernel(image, name);

  std::vector<KernelArgInfo> args;
  bool from_driver = false;
  if (s.cuFuncGetParamInfo) {
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      CUresult r = s.cuFuncGetParamInfo(function, i, &offset, &size);
      if (r != CUDA_SUCCESS) {
        from_driver = r == CUDA_ERROR_INVALID_VALUE || i > 0;
        break;
      }
      KernelArgInfo a;
      a.offset = static_cast<uint32_t>(offset);
      a.size = static_cast<uint32_t>(size);
      args.push_back(std::move(a));
    }
  }
  if (!from_driver) {
    args.clear();
    if (recorded)
      for (const auto& p : recorded->params) {
        KernelArgInfo a;
        a.offset = p.offset;
        a.size = p.size;
        args.push_back(std::move(a));
      }
  }
  info.has_arg_layout = from_driver || recorded.has_value();
  uint32_t align = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    KernelArgInfo& a = args[i];
    // The driver and cubins record offsets and sizes only: whether an
    // argument is a pointer is unknown (LR_ARG_OTHER) unless PTX says `.ptr`.
    a.kind = ArgKind::Other;
    a.value_kind = "unknown";
    if (recorded && i < recorded->params.size()) {
      const ImageParam& p = recorded->params[i];
      a.name = p.name;
      a.type_name = formats::nvidia::ptx_param_type_name(p);
      if (p.pointer) {
        a.kind = ArgKind::GlobalBuffer;
        a.value_kind = "global_buffer";
        a.address_space = "global";
      }
    }
    // Natural alignment of the size (the driver does not report it).
    uint32_t natural = a.size ? std::min<uint32_t>(16, uint32_t(1) << std::countr_zero(a.size)) : 1;
    align = std::max(align, natural);
  }
  info.args = std::move(args);
  info.kernarg_align = std::max<uint32_t>(align, info.args.empty() ? 8 : align);
  info.kernarg_size = info.explicit_kernarg_size();
  return info;
}

// ---------------------------------------------------------------- kernels

void CudaKernel::ensure_dynamic_shared(uint32_t bytes) {
  if (bytes <= dynamic_shared_limit_.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(mutex_);
  if (bytes <= dynamic_shared_limit_.load(std::memory_order_relaxed)) return;
  uint64_t limit = device_.properties().max_shared_memory_per_workgroup;
  if (uint64_t(bytes) + info_.group_segment_size > limit)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
               "kernel '{}' asks for {} bytes of dynamic shared memory; with its {} static bytes "
               "that exceeds the {} bytes a block can have on {}",
               info_.name, bytes, info_.group_segment_size, limit, device_.description());
  LRRT_CUDA_CHECK_DEVICE(device_, "", cuFuncSetAttribute(
      function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)));
  dynamic_shared_limit_.store(bytes, std::memory_order_relaxed);
}

}  // namespace lrrt::rt::cuda
