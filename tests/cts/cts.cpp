// The suite's shared parts (sessions, inputs, checks, the gate) and main:
// skips (exit 77, ctest's SKIP_RETURN_CODE) with the reason when the backend
// under test has no usable device, else runs the doctest cases.
#define DOCTEST_CONFIG_IMPLEMENT
// The host backend turns faults inside kernels into status codes with its own
// SIGSEGV/SIGBUS handler; doctest's crash handler would replace it.
#define DOCTEST_CONFIG_NO_POSIX_SIGNALS
#include "cts.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace lrrt::cts {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

std::string kernel_dir() { return env_or("LRRT_TEST_KERNEL_DIR", LRRT_CTS_KERNEL_DIR); }
std::string test_kernel_dir() { return env_or("LRRT_CTS_TEST_KERNEL_DIR", LRRT_CTS_TEST_KERNEL_DIR); }

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing file ", path, " (build it, or set LRRT_TEST_KERNEL_DIR / LRRT_CTS_TEST_KERNEL_DIR)");
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

Session::Session() : device_(lrrt::Device::select(backend().name())) {}

lrrt::Module Session::load(std::string_view source) const {
  return lrrt::Module(device_, read_file(kernel_dir() + "/" + backend().kernel_file(source)));
}

lrrt::Module Session::load_test_kernels(std::string_view source) const {
  return lrrt::Module(device_, read_file(test_kernel_dir() + "/" + backend().kernel_file(source)));
}

Random::Random() {
  const char* fixed = std::getenv("LRRT_CTS_SEED");
  seed_ = fixed && *fixed ? std::strtoull(fixed, nullptr, 10)
                          : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  engine_.seed(seed_);
}

std::vector<float> Random::floats(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(engine_);
  return v;
}

std::vector<int32_t> Random::ints(size_t n) {
  std::vector<int32_t> v(n);
  for (auto& x : v) x = static_cast<int32_t>(static_cast<uint32_t>(engine_()));
  return v;
}

std::vector<uint32_t> Random::words(size_t n) {
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = static_cast<uint32_t>(engine_());
  return v;
}

std::vector<uint8_t> Random::bytes(size_t n) {
  std::vector<uint8_t> v(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = engine_();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(engine_());
  return v;
}

float Random::uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(engine_); }

void check_fails(lr_status_t got, lr_status_t want, const std::vector<std::string>& words, const char* call) {
  std::string message = lr_last_error_message();
  CHECK_MESSAGE(got == want, text(call), " -> ", text(lr_status_string(got)), " (want ",
                text(lr_status_string(want)), "): ", message);
  for (const auto& word : words)
    CHECK_MESSAGE(message.find(word) != std::string::npos, text(call), ": the message does not mention '", word,
                  "': ", message);
}

FaultingLaunch write_to_unmapped_address(const Session& session) {
  FaultingLaunch f{session.load_test_kernels("error_kernels"), {}, {}, config_1d(1, 1), "write_to_address", {}};
  f.kernel = f.module.kernel("write_to_address");
  Args args;
  args.add(uint64_t{8});  // never mapped
  f.args.assign(args.bytes().begin(), args.bytes().end());
  return f;
}

lrrt::DeviceBuffer poisoned(lrrt::Device device, size_t bytes) {
  lrrt::DeviceBuffer buffer(device, bytes);
  std::vector<std::byte> poison(bytes, kPoison);
  lrrt::copy_to_device(buffer, poison);
  return buffer;
}

lrrt::PinnedHostBuffer poisoned_pinned(lrrt::Device device, size_t bytes) {
  lrrt::PinnedHostBuffer buffer(device, bytes);
  std::memset(buffer.data(), 0xFF, bytes);
  return buffer;
}

std::vector<uint32_t> snapshot(const void* host, size_t words) {
  auto* p = static_cast<const volatile uint32_t*>(host);
  std::vector<uint32_t> out(words);
  for (size_t i = 0; i < words; ++i) out[i] = p[i];
  return out;
}

void check_untouched(const void* host, size_t words, const char* what) {
  auto now = snapshot(host, words);
  check_every(std::span<const uint32_t>(now), [](size_t) { return kPoisonWord; }, what);
}

// ---- Gate -------------------------------------------------------------------

Gate::Gate(const Session& session)
    : module_(session.load_test_kernels("error_kernels")),
      spin_(module_.kernel("spin_forever")),
      flag_(session.device(), 64) {
  std::memset(flag_.data(), 0, 64);
}

Gate::~Gate() { open(); }

void Gate::close_on(const lrrt::Queue& queue) {
  Args args;
  args.add(flag_.data());
  lrrt::launch(queue, spin_, config_1d(1, 1), args.bytes());
}

void Gate::close_on_default_queue() {
  Args args;
  args.add(flag_.data());
  lrrt::launch(spin_, config_1d(1, 1), args.bytes());
}

void Gate::open() { std::atomic_ref<uint32_t>(*flag_.as<uint32_t>()).store(1, std::memory_order_release); }

// ---- wait settings ----------------------------------------------------------

WaitTimeout::WaitTimeout(uint64_t milliseconds) {
  CTS_OK(lr_get_wait_timeout_ms(&saved_));
  CTS_OK(lr_set_wait_timeout_ms(milliseconds));
}
WaitTimeout::~WaitTimeout() { (void)lr_set_wait_timeout_ms(saved_); }

WaitSpin::WaitSpin(uint64_t microseconds) {
  CTS_OK(lr_get_wait_spin_us(&saved_));
  CTS_OK(lr_set_wait_spin_us(microseconds));
}
WaitSpin::~WaitSpin() { (void)lr_set_wait_spin_us(saved_); }

namespace {

// Why the backend under test cannot run here, or "" when it can.
std::string unusable_reason() {
  if (lr_init() != LR_SUCCESS) return std::string("lr_init failed: ") + lr_last_error_message();
  std::string why = std::string("this lrrt was built without the ") + backend().name() + " backend";
  uint32_t count = 0;
  (void)lr_backend_count(&count);
  for (uint32_t i = 0; i < count; ++i) {
    lr_backend_info_t info{};
    if (lr_backend_get_info(i, &info) != LR_SUCCESS || std::string(info.name) != backend().name()) continue;
    why = info.usable && info.device_count > 0 ? "" : std::string("no usable ") + info.name + " device: " + info.message;
  }
  (void)lr_shutdown();
  return why;
}

// Counts the test cases that ran and those skipped for this backend (an
// Expectations flag in a doctest::skip decorator), so that a ctest entry whose
// every case was skipped reports "skipped" (exit 77), not "passed".
struct RunCounter : doctest::IReporter {
  static inline int ran = 0;
  static inline int skipped_here = 0;
  explicit RunCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++ran; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData& test) override {
    if (test.m_skip) ++skipped_here;
  }
};
REGISTER_LISTENER("cts_run_counter", 1, RunCounter);

bool only_lists(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    for (std::string_view flag : {"-h", "--help", "-?", "-v", "--version", "-c", "--count", "-ltc", "--list-test-cases",
                                  "-lts", "--list-test-suites", "-lr", "--list-reporters"})
      if (a == flag || a.starts_with(std::string(flag) + "=")) return true;
  }
  return false;
}

}  // namespace
}  // namespace lrrt::cts

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // output survives a crash
  doctest::Context context(argc, argv);
  const bool listing = lrrt::cts::only_lists(argc, argv);
  if (!listing) {
    lrrt::cts::backend().prepare_environment();
    std::string why = lrrt::cts::unusable_reason();
    if (!why.empty()) {
      std::printf("SKIP: %s\n", why.c_str());
      return 77;
    }
    std::printf("conformance suite on backend %s\n", lrrt::cts::backend().name());
  }
  const int failed = context.run();
  if (!listing && failed == 0 && lrrt::cts::RunCounter::ran == 0 && lrrt::cts::RunCounter::skipped_here > 0) {
    std::printf("SKIP: every selected test case is skipped on backend %s (see its Expectations in "
                "tests/cts/backends/%s.cpp)\n",
                lrrt::cts::backend().name(), lrrt::cts::backend().name());
    return 77;
  }
  return failed;
}
