// The conformance suite (CTS): what every backend must do, written once
// against the C ABI (lrrt.h) and the C++ wrapper (lrrt.hpp), in the manner of
// IREE's hal/cts. Each backend gets one executable: the same cases
// (tests/cts/*_test.cpp) linked with one backends/<backend>.cpp, which
// describes the backend under test (its device, its kernel files, how it
// makes a kernel fault, and where it documentedly differs). Cases never test
// the backend's name: they read its Expectations.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/lrrt.hpp"

namespace lrrt::cts {

// Where backends genuinely differ, as documented in docs/backends/<b>.md.
struct Expectations {
  // After LR_ERROR_KERNEL_FAULT the device runs new work (host, hsa), or every
  // later call on it fails (cuda: the CUDA context is lost for the process).
  bool device_usable_after_fault = true;
  // Text a fault message holds besides the kernel's name.
  std::vector<std::string> fault_message_words;
  // A wait that timed out names the kernel that did not finish.
  bool timeout_names_kernel = true;
  // lr_kernel_get_arg reports argument kinds (by value, global buffer); a
  // cubin records only offsets and sizes (kinds LR_ARG_OTHER).
  bool args_have_kinds = true;
  // ... and argument names (the host kernel ABI records them; clang's AMDGPU
  // metadata for these kernels and a cubin do not).
  bool args_have_names = true;
  // lr_event_duration_ns of an event that only marked a point (no copy or
  // launch signalled it): LR_ERROR_NOT_SUPPORTED, or the marker's own (tiny)
  // duration on host.
  bool marker_has_duration = false;
  // lr_tensor_map_encode works (cuda, on sm_90 and later devices); elsewhere
  // it is LR_ERROR_NOT_SUPPORTED.
  bool tensor_maps_from_sm90 = false;
};

class Session;

// A launch that fails on the device, the backend's own way (a real bad
// write, or an injected queue error on the hsa stand-in).
struct FaultingLaunch {
  lrrt::Module module;
  lrrt::Kernel kernel;
  std::vector<std::byte> args;
  lr_launch_config_t config{};
  std::string kernel_name;
  std::function<void()> undo;  // clears an injected fault; may be empty
};

class Backend {
 public:
  virtual ~Backend() = default;
  // lr_device_select's backend name: "host", "hsa", "cuda".
  virtual const char* name() const = 0;
  // The file a kernel source builds to for this backend: "saxpy" ->
  // "saxpy.host.so", "saxpy.gfx1100.hsaco", "saxpy.sm_90.cubin".
  virtual std::string kernel_file(std::string_view source) const = 0;
  // Runs before the first lr_init (the hsa stand-in's environment).
  virtual void prepare_environment() const {}
  virtual Expectations expectations() const = 0;
  // Elements of a vector_add that takes the device a while (tens of
  // microseconds at least), so work that ignored a dependency would show.
  virtual uint32_t long_work_elements() const = 0;
  virtual FaultingLaunch faulting_launch(const Session& session) const = 0;
};

// Defined by the backends/<backend>.cpp linked into this executable.
const Backend& backend();

// A real fault: error_kernels' write_to_address writing to address 8, never
// mapped on a GPU or in a host process (host's and cuda's faulting_launch).
FaultingLaunch write_to_unmapped_address(const Session& session);

// Folders of the build's kernels (kernels/*.cpp) and of the test-only
// kernels (tests/kernels/*.cpp); $LRRT_TEST_KERNEL_DIR and
// $LRRT_CTS_TEST_KERNEL_DIR override them on a machine the build was carried to.
std::string kernel_dir();
std::string test_kernel_dir();
std::vector<std::byte> read_file(const std::string& path);

// One lr_init .. lr_shutdown and the device under test, per test case, so
// cases never see each other's memory, statistics or failures.
class Session {
 public:
  Session();
  lrrt::Device device() const { return device_; }
  lr_device_t get() const { return device_.get(); }
  lrrt::Module load(std::string_view source) const;               // kernels/<source>.cpp
  lrrt::Module load_test_kernels(std::string_view source) const;  // tests/kernels/<source>.cpp

 private:
  lrrt::Runtime runtime_;
  lrrt::Device device_;
};

// Seeded random inputs; CTS_RANDOM prints the seed with any failure, and
// LRRT_CTS_SEED=<seed> repeats a run.
class Random {
 public:
  Random();
  uint64_t seed() const { return seed_; }
  std::mt19937_64& engine() { return engine_; }
  std::vector<float> floats(size_t n, float lo = -10.f, float hi = 10.f);
  std::vector<int32_t> ints(size_t n);
  std::vector<uint32_t> words(size_t n);
  std::vector<uint8_t> bytes(size_t n);
  float uniform(float lo, float hi);

 private:
  uint64_t seed_;
  std::mt19937_64 engine_;
};
#define CTS_RANDOM(name)     \
  ::lrrt::cts::Random name; \
  INFO("random seed ", name.seed(), " (repeat with LRRT_CTS_SEED=", name.seed(), ")")

// doctest prints a const char* as a pointer: messages go through this.
inline std::string text(const char* s) { return s ? s : "(null)"; }

// Fails the test case with the status and lr_last_error_message() when a C
// call does not succeed.
#define CTS_OK(call)                                                                       \
  do {                                                                                     \
    lr_status_t cts_status_ = (call);                                                      \
    REQUIRE_MESSAGE(cts_status_ == LR_SUCCESS, #call, " -> ",                              \
                    ::lrrt::cts::text(lr_status_string(cts_status_)), ": ",                \
                    ::lrrt::cts::text(lr_last_error_message()));                           \
  } while (0)

// Checks that a C call fails with `status` and a message holding every word.
void check_fails(lr_status_t got, lr_status_t want, const std::vector<std::string>& words, const char* call);
#define CTS_FAILS(call, status, ...) ::lrrt::cts::check_fails((call), (status), {__VA_ARGS__}, #call)

inline constexpr std::byte kPoison{0xFF};
inline constexpr uint32_t kPoisonWord = 0xFFFFFFFFu;

// Kernel arguments packed as the kernels expect them: natural alignment, no
// trailing padding (the explicit kernarg bytes).
class Args {
 public:
  template <typename T>
  Args& add(T value) {
    size_t offset = (bytes_.size() + alignof(T) - 1) / alignof(T) * alignof(T);
    bytes_.resize(offset + sizeof(T));
    std::memcpy(bytes_.data() + offset, &value, sizeof(T));
    return *this;
  }
  std::span<const std::byte> bytes() const { return bytes_; }
  const void* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<std::byte> bytes_;
};

inline lr_launch_config_t config_1d(uint32_t elements, uint32_t block, uint32_t shared_bytes = 0) {
  return {{(elements + block - 1) / block, 1, 1}, {block, 1, 1}, shared_bytes};
}

// Device memory holding `values`, and device memory filled with kPoison bytes.
template <typename T>
lrrt::DeviceBuffer upload(lrrt::Device device, const std::vector<T>& values) {
  lrrt::DeviceBuffer buffer(device, values.size() * sizeof(T));
  lrrt::copy_to_device(buffer, values);
  return buffer;
}
lrrt::DeviceBuffer poisoned(lrrt::Device device, size_t bytes);
// A buffer's first `count` elements, read into poisoned host memory.
template <typename T>
std::vector<T> download(const lrrt::DeviceBuffer& buffer, size_t count) {
  std::vector<T> out(count);
  std::memset(out.data(), 0xFF, count * sizeof(T));
  lrrt::copy_to_host(out, buffer);
  return out;
}
// Pinned host memory filled with kPoison bytes.
lrrt::PinnedHostBuffer poisoned_pinned(lrrt::Device device, size_t bytes);

// Every element checked, one assertion per buffer: the number of wrong
// elements and the first one.
template <typename T, typename Expected>
void check_every(std::span<const T> got, Expected&& expected, const char* what) {
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected(i)) continue;
    if (wrong++ == 0) first = i;
  }
  if (wrong == 0) {
    CHECK(true);
    return;
  }
  CHECK_MESSAGE(wrong == 0, text(what), ": ", wrong, " of ", got.size(), " elements wrong; first at ", first, ": got ",
                got[first], ", want ", expected(first));
}
// Elements of host memory a kernel may be writing concurrently, read as volatile.
std::vector<uint32_t> snapshot(const void* host, size_t words);
// Every element still kPoisonWord: nothing wrote it yet.
void check_untouched(const void* host, size_t words, const char* what);

// Wrapping 32-bit integer addition, as vector_add_i32 does it.
inline int32_t add_i32(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// A kernel that spins on a queue until opened: work queued behind it, or
// waiting for an event recorded behind it, cannot have run while it is
// closed, so ordering is checked without timing. The destructor opens it, so
// a failed check never leaves a queue spinning. Declare it after everything
// the gated work uses.
class Gate {
 public:
  explicit Gate(const Session& session);
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void close_on(const lrrt::Queue& queue);
  void close_on_default_queue();
  void open();

 private:
  lrrt::Module module_;
  lrrt::Kernel spin_;
  lrrt::PinnedHostBuffer flag_;
};

// Process-wide wait settings for one scope, restored after it.
class WaitTimeout {
 public:
  explicit WaitTimeout(uint64_t milliseconds);
  ~WaitTimeout();

 private:
  uint64_t saved_ = 0;
};
class WaitSpin {
 public:
  explicit WaitSpin(uint64_t microseconds);
  ~WaitSpin();

 private:
  uint64_t saved_ = 0;
};

// vector_add_i32 (kernels/vector_add.cpp), the kernel most cases order and
// check: c[i] = a[i] + b[i] for i < n.
struct VectorAddI32 {
  lrrt::Module module;
  lrrt::Kernel kernel;
  explicit VectorAddI32(const Session& s) : module(s.load("vector_add")), kernel(module.kernel("vector_add_i32")) {}
  static Args args(const void* a, const void* b, void* c, uint32_t n) {
    Args args;
    args.add(a).add(b).add(c).add(n);
    return args;
  }
};

}  // namespace lrrt::cts
