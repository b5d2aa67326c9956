// The conformance suite on the host backend: kernels are host shared
// objects; a fault is a real bad write, caught by the runtime's signal
// handler (docs/backends/host.md).
#include "../cts.hpp"

namespace lrrt::cts {
namespace {

class HostBackend final : public Backend {
 public:
  const char* name() const override { return "host"; }
  std::string kernel_file(std::string_view source) const override { return std::string(source) + ".host.so"; }
  Expectations expectations() const override {
    Expectations e;
    e.device_usable_after_fault = true;  // the error is reported once; the queue runs new work
    e.fault_message_words = {"Segmentation fault", "workgroup (0, 0, 0)"};
    // The host queue's timeout message says how long it waited but not which
    // kernel is still running (reported to the lead; cuda and hsa name it).
    e.timeout_names_kernel = false;
    // A host marker is a queue command with start and end times of its own.
    e.marker_has_duration = true;
    return e;
  }
  uint32_t long_work_elements() const override { return 1u << 18; }
  FaultingLaunch faulting_launch(const Session& session) const override { return write_to_unmapped_address(session); }
};

}  // namespace

const Backend& backend() {
  static const HostBackend instance;
  return instance;
}

}  // namespace lrrt::cts
