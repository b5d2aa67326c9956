// The conformance suite on the cuda backend (ctest label `gpu`; skips with
// exit 77 where no cuda device is usable). A fault is a real write through a
// bad pointer: CUDA_ERROR_ILLEGAL_ADDRESS, after which the CUDA context, and
// so the device, is lost for the process (docs/backends/cuda.md).
#include "../cts.hpp"

#define LRRT_CTS_STR_(x) #x
#define LRRT_CTS_STR(x) LRRT_CTS_STR_(x)

namespace lrrt::cts {
namespace {

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  std::string kernel_file(std::string_view source) const override {
    return std::string(source) + ".sm_" LRRT_CTS_STR(LRRT_CTS_CUDA_ARCH) ".cubin";
  }
  Expectations expectations() const override {
    Expectations e;
    e.device_usable_after_fault = false;
    e.fault_message_words = {"CUDA_ERROR_ILLEGAL_ADDRESS"};
    e.timeout_names_kernel = true;
    e.args_have_kinds = false;  // cuFuncGetParamInfo / the cubin: offsets and sizes only
    e.args_have_names = false;
    e.marker_has_duration = false;
    e.tensor_maps_from_sm90 = true;
    return e;
  }
  uint32_t long_work_elements() const override { return 1u << 24; }
  FaultingLaunch faulting_launch(const Session& session) const override { return write_to_unmapped_address(session); }
};

}  // namespace

const Backend& backend() {
  static const CudaBackend instance;
  return instance;
}

}  // namespace lrrt::cts
