// The conformance suite on the hsa backend, run against the stand-in
// libhsa-runtime64 (tests/hsa/standin) loaded through LRRT_HSA_LIBRARY like
// ROCr. The stand-in runs each dispatch with the host build of the same
// kernel, found by name in its kernel folders (the build's and the test-only
// ones). A GPU fault is the stand-in's injected queue error (a memory
// aperture violation), see docs/backends/hsa.md.
#include <dlfcn.h>

#include <cstdlib>

#include "../cts.hpp"
#include "standin_hooks.h"

namespace lrrt::cts {
namespace {

std::string library_path() {
  const char* v = std::getenv("LRRT_HSA_LIBRARY");
  return v && *v ? v : LRRT_CTS_HSA_STANDIN;
}

// The stand-in's fault injection, found in the library lrrt loaded.
lrrt_hsa_standin_set_fault_fn standin_set_fault() {
  void* lib = dlopen(library_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(lib, "faults on hsa are injected by the stand-in, but ", library_path(),
                  " is not loaded (LRRT_HSA_LIBRARY names another library?)");
  auto set_fault = reinterpret_cast<lrrt_hsa_standin_set_fault_fn>(dlsym(lib, "lrrt_hsa_standin_set_fault"));
  dlclose(lib);  // drops the reference NOLOAD took; lrrt keeps its own
  REQUIRE_MESSAGE(bool(set_fault), library_path(), " has no lrrt_hsa_standin_set_fault: not the stand-in");
  return set_fault;
}

class HsaBackend final : public Backend {
 public:
  const char* name() const override { return "hsa"; }
  std::string kernel_file(std::string_view source) const override { return std::string(source) + ".gfx1100.hsaco"; }
  void prepare_environment() const override {
    // Kept when already set, so the same executable can run elsewhere.
    setenv("LRRT_HSA_LIBRARY", LRRT_CTS_HSA_STANDIN, 0);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", (kernel_dir() + ":" + test_kernel_dir()).c_str(), 0);
  }
  Expectations expectations() const override {
    Expectations e;
    e.device_usable_after_fault = true;  // the dead HSA queue is replaced
    e.fault_message_words = {"HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION"};
    e.timeout_names_kernel = true;
    e.args_have_names = false;  // clang-19 writes no .name for these kernels' arguments
    e.marker_has_duration = false;
    return e;
  }
  uint32_t long_work_elements() const override { return 1u << 18; }
  FaultingLaunch faulting_launch(const Session& session) const override {
    auto set_fault = standin_set_fault();
    FaultingLaunch f{session.load("empty"), {}, {}, config_1d(64, 64), "empty", [set_fault] { set_fault(""); }};
    f.kernel = f.module.kernel("empty");
    Args args;
    args.add(uint32_t{0});
    f.args.assign(args.bytes().begin(), args.bytes().end());
    set_fault("queue_error:empty");
    return f;
  }
};

}  // namespace

const Backend& backend() {
  static const HsaBackend instance;
  return instance;
}

}  // namespace lrrt::cts
