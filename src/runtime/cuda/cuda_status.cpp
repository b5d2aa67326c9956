#include "cuda_status.hpp"

#include <fmt/format.h>

namespace lrrt::rt::cuda {

std::string cu_error_text(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu().cuGetErrorName) cu().cuGetErrorName(result, &name);
  if (cu().cuGetErrorString) cu().cuGetErrorString(result, &text);
  if (!name) return fmt::format("CUDA error {}", static_cast<int>(result));
  return text ? fmt::format("{} ({})", name, text) : std::string(name);
}

bool cu_is_sticky_fault(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

lr_status_t cu_status(CUresult r, lr_status_t fallback) {
  switch (r) {
    case CUDA_SUCCESS: return LR_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: return LR_ERROR_OUT_OF_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_DEVICE: return LR_ERROR_INVALID_ARGUMENT;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED: return LR_ERROR_NOT_INITIALIZED;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
    case CUDA_ERROR_DEVICE_UNAVAILABLE: return LR_ERROR_UNAVAILABLE;
    case CUDA_ERROR_NOT_SUPPORTED: return LR_ERROR_NOT_SUPPORTED;
    case CUDA_ERROR_NOT_FOUND: return LR_ERROR_NOT_FOUND;
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_INVALID_SOURCE: return LR_ERROR_INVALID_IMAGE;
    // Sticky faults: the kernel's, except these three.
    case CUDA_ERROR_LAUNCH_TIMEOUT: return LR_ERROR_TIMEOUT;
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return LR_ERROR_DEVICE_LOST;
    default: return cu_is_sticky_fault(r) ? LR_ERROR_KERNEL_FAULT : fallback;
  }
}

void throw_cu_error(CUresult result, lr_status_t status, std::string_view what, const char* file, int line) {
  throw Error(cu_status(result, status),
              fmt::format("{} failed: {} [at {}:{}]", what, cu_error_text(result), file_basename(file), line));
}

}  // namespace lrrt::rt::cuda
