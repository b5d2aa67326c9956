// The runtime core and the host backend through the public C ABI and the
// C++ wrapper: the same calls a user program makes. Behaviour every backend
// shares is in the conformance suite (tests/cts, run as cts.host.*); here is
// what only the ABI or the host backend does.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "host/host_memory.hpp"
#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"

TEST_CASE("C ABI reports errors with status codes and messages before lr_init") {
  uint32_t n = 0;
  CHECK(lr_device_count(&n) == LR_ERROR_NOT_INITIALIZED);
  CHECK(std::string(lr_last_error_message()).find("lr_init") != std::string::npos);
  CHECK(lr_shutdown() == LR_ERROR_NOT_INITIALIZED);
  CHECK(std::string(lr_status_string(LR_ERROR_KERNEL_FAULT)) == "LR_ERROR_KERNEL_FAULT");
}

TEST_CASE("C ABI: lr_set_wait_spin_us takes 0 to one minute and names the limit beyond") {
  CHECK(lr_set_wait_spin_us(0) == LR_SUCCESS);
  CHECK(lr_set_wait_spin_us(60'000'000) == LR_SUCCESS);
  CHECK(lr_set_wait_spin_us(60'000'001) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("60000000 us") != std::string::npos);
  CHECK(lr_set_wait_spin_us(2000) == LR_SUCCESS);
  CHECK(std::string(lr_last_error_message()).empty());
}

TEST_CASE("C ABI: a second lr_init fails while the runtime is up, and host is selectable by name") {
  lrrt::Runtime runtime;
  CHECK_THROWS_AS(lrrt::Runtime(), lrrt::Error);  // second lr_init
  auto device = lrrt::Device::select("host");
  CHECK(device.backend() == "host");
}

TEST_CASE("host backend: bad handles and inputs give status codes, not crashes") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lr_module_t* module = nullptr;
  const char garbage[] = "this is not a code object";
  CHECK(lr_module_load(device.get(), garbage, sizeof(garbage), &module) == LR_ERROR_INVALID_IMAGE);
  CHECK(std::string(lr_last_error_message()).find("not a code object") != std::string::npos);

  auto hsaco = std::vector<std::byte>(64);
  std::memcpy(hsaco.data(), "\x7f" "ELF\x02\x01\x01", 7);
  hsaco[18] = std::byte{224};  // EM_AMDGPU
  CHECK(lr_module_load(device.get(), hsaco.data(), hsaco.size(), &module) == LR_ERROR_INVALID_IMAGE);
  CHECK(std::string(lr_last_error_message()).find("AMDGPU") != std::string::npos);

  lr_device_t d{};
  CHECK(lr_device_open(999, &d) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_device_select("cuda-typo", 0, &d) == LR_ERROR_NOT_FOUND);
  CHECK(lr_device_select("host", 3, &d) == LR_ERROR_NOT_FOUND);
}

namespace {

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class EnvFor {
 public:
  EnvFor(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~EnvFor() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  EnvFor(const EnvFor&) = delete;
  EnvFor& operator=(const EnvFor&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("host backend: LRRT_HOST_THREADS takes a whole number from 1 to 1024, anything else names it") {
  std::mt19937 rng(std::random_device{}());
  // Before the fix "-1" asked for 4294967295 threads (an abort) and "abc" or
  // "0" were silently ignored.
  std::vector<std::string> bad = {"-1", "abc", "0", "1025", "4294967297", "2x", " 2", "+3", "1e3", "0x10"};
  bad.push_back(std::to_string(std::uniform_int_distribution<uint64_t>(1025, uint64_t(1) << 40)(rng)));
  for (const auto& value : bad) {
    CAPTURE(value);
    EnvFor env("LRRT_HOST_THREADS", value.c_str());
    // lr_init checks every LRRT_* variable first (lr_check_environment).
    REQUIRE(lr_init() == LR_ERROR_INVALID_ARGUMENT);
    const std::string message = lr_last_error_message();
    CHECK_MESSAGE(message.find("LRRT_HOST_THREADS='" + value + "'") != std::string::npos, message);
    CHECK_MESSAGE(message.find("from 1 to 1024") != std::string::npos, message);
  }
  // The check can fail: a good value is taken as the thread count.
  const unsigned threads = std::uniform_int_distribution<unsigned>(1, 6)(rng);
  for (const std::string value : {std::to_string(threads), "0" + std::to_string(threads)}) {
    EnvFor env("LRRT_HOST_THREADS", value.c_str());
    lrrt::Runtime runtime;
    auto device = lrrt::Device::select("host");
    CHECK(device.properties().compute_units == threads);
  }
}

namespace {

struct RecurseArgs {
  void* out;
  uint64_t depth;
};

// What recurse_deep returns for a depth that fits the stack.
uint64_t recursion_sum(uint64_t depth) {
  uint64_t sum = 0;
  for (uint64_t d = 0; d <= depth; ++d) sum += d & 0xff;
  return sum;
}

}  // namespace

TEST_CASE("host backend: a kernel that overflows its stack is a kernel fault, and the process goes on") {
  std::mt19937_64 rng(std::random_device{}());
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module module(device, lrrt::test::read_file(LRRT_TEST_ERROR_KERNELS));
  lrrt::Kernel recurse = module.kernel("recurse_deep");
  for (int round = 0; round < 3; ++round) {
    // Several workgroups, so the pool's workers overflow as well as the
    // queue's thread; without an alternate signal stack the fault handler
    // itself has no stack and the process dies (SIGSEGV).
    const uint32_t groups = std::uniform_int_distribution<uint32_t>(1, 8)(rng);
    CAPTURE(groups);
    lrrt::DeviceBuffer out(device, groups * sizeof(uint64_t));
    std::vector<uint64_t> poison(groups, 0xDEADBEEFDEADBEEFull);
    lrrt::copy_to_device(out, poison);
    const lr_launch_config_t config{{groups, 1, 1}, {1, 1, 1}, 0};
    lrrt::launch(recurse, config, RecurseArgs{out.data(), uint64_t(1) << 40});
    std::string message;
    CHECK(lrrt::test::status_of([&] { device.synchronize(); }, &message) == LR_ERROR_KERNEL_FAULT);
    CHECK_MESSAGE(message.find("'recurse_deep' faulted: stack overflow") != std::string::npos, message);
    CHECK_MESSAGE(message.find("Segmentation fault") != std::string::npos, message);
    // The device still runs kernels, on the same threads: a depth that fits
    // gives the right sums (the check that can fail: poisoned outputs).
    const uint64_t depth = std::uniform_int_distribution<uint64_t>(10, 1000)(rng);
    lrrt::copy_to_device(out, poison);
    lrrt::launch(recurse, config, RecurseArgs{out.data(), depth});
    device.synchronize();
    std::vector<uint64_t> got(groups);
    lrrt::copy_to_host(got, out);
    for (uint32_t g = 0; g < groups; ++g) CHECK(got[g] == recursion_sum(depth));
  }
}

namespace {

struct RecurseFramesArgs {
  void* out;
  uint64_t depth;
  uint64_t frame_bytes;
};

struct SignalArgs {
  int32_t signo;
  uint32_t pad;
  uint64_t address;
};

struct SignalBlockedArgs {
  void* out;
  int32_t signo;
};

}  // namespace

TEST_CASE("host backend: a kernel whose frames jump a guard page (64 KiB, 1 MiB, 8 MiB) is a stack overflow, and nothing else is harmed") {
  // Before kernel stacks, the 1 MiB and 8 MiB frames stepped over the
  // thread stack's one guard page into other mappings: the process died of
  // SIGSEGV (or wrote over another thread's stack).
  std::mt19937_64 rng(std::random_device{}());
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module module(device, lrrt::test::read_file(LRRT_TEST_ERROR_KERNELS));
  lrrt::Kernel recurse = module.kernel("recurse_frames");
  // A buffer the kernels never touch: it must come through unchanged.
  std::vector<uint64_t> bystander(4096);
  for (auto& v : bystander) v = rng();
  lrrt::DeviceBuffer kept(device, bystander.size() * sizeof(uint64_t));
  lrrt::copy_to_device(kept, bystander);
  for (const uint64_t frame : {uint64_t(64) << 10, uint64_t(1) << 20, uint64_t(8) << 20}) {
    CAPTURE(frame);
    const uint32_t groups = std::uniform_int_distribution<uint32_t>(1, 8)(rng);
    CAPTURE(groups);
    lrrt::DeviceBuffer out(device, groups * sizeof(uint64_t));
    const std::vector<uint64_t> poison(groups, 0xDEADBEEFDEADBEEFull);
    lrrt::copy_to_device(out, poison);
    const lr_launch_config_t config{{groups, 1, 1}, {1, 1, 1}, 0};
    lrrt::launch(recurse, config, RecurseFramesArgs{out.data(), uint64_t(1) << 40, frame});
    std::string message;
    CHECK(lrrt::test::status_of([&] { device.synchronize(); }, &message) == LR_ERROR_KERNEL_FAULT);
    CHECK_MESSAGE(message.find("kernel 'recurse_frames' faulted: stack overflow") != std::string::npos, message);
    CHECK_MESSAGE(message.find("8 MiB stack") != std::string::npos, message);
    // The same frames, as deep as fits in half the stack: right sums on
    // every workgroup (the check that can fail: poisoned outputs).
    const uint64_t fits = (uint64_t(4) << 20) / frame;
    if (fits >= 1) {
      const uint64_t depth = std::uniform_int_distribution<uint64_t>(0, fits - 1)(rng);
      CAPTURE(depth);
      lrrt::copy_to_device(out, poison);
      lrrt::launch(recurse, config, RecurseFramesArgs{out.data(), depth, frame});
      device.synchronize();
      std::vector<uint64_t> got(groups);
      lrrt::copy_to_host(got, out);
      for (uint32_t g = 0; g < groups; ++g) CHECK(got[g] == recursion_sum(depth));
    }
  }
  std::vector<uint64_t> after(bystander.size());
  lrrt::copy_to_host(after, kept);
  CHECK(after == bystander);
}

TEST_CASE("host backend: a kernel that blocks a signal and faults leaves the thread's signal mask as it was") {
  // Before the fix the jump back kept the mask of the moment of the fault
  // (sigsetjmp(jump, 0)): SIGUSR2 stayed blocked on the queue's thread.
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module module(device, lrrt::test::read_file(LRRT_TEST_ERROR_KERNELS));
  lrrt::Kernel block_and_fault = module.kernel("block_signal_then_fault");
  lrrt::Kernel blocked = module.kernel("signal_blocked");
  std::mt19937 rng(std::random_device{}());
  for (const uint32_t groups : {1u, std::uniform_int_distribution<uint32_t>(2, 64)(rng)}) {
    CAPTURE(groups);
    const lr_launch_config_t config{{groups, 1, 1}, {1, 1, 1}, 0};
    lrrt::launch(block_and_fault, config, SignalArgs{SIGUSR2, 0, 8});
    std::string message;
    CHECK(lrrt::test::status_of([&] { device.synchronize(); }, &message) == LR_ERROR_KERNEL_FAULT);
    CHECK_MESSAGE(message.find("'block_signal_then_fault' faulted") != std::string::npos, message);
    // Every thread that ran a workgroup of it runs these: none has SIGUSR2
    // blocked. The kernel can report it: a poisoned buffer shows it ran.
    lrrt::DeviceBuffer out(device, groups * sizeof(uint32_t));
    lrrt::copy_to_device(out, std::vector<uint32_t>(groups, 7));
    lrrt::launch(blocked, config, SignalBlockedArgs{out.data(), SIGUSR2});
    device.synchronize();
    std::vector<uint32_t> got(groups);
    lrrt::copy_to_host(got, out);
    for (uint32_t g = 0; g < groups; ++g) CHECK_MESSAGE(got[g] == 0, "workgroup ", g);
  }
  // The check can fail: a kernel that blocks SIGUSR2 and returns leaves it
  // blocked on its thread (one workgroup runs on the queue's thread), and
  // the reader sees it.
  lrrt::DeviceBuffer word(device, 64);
  const lr_launch_config_t one{{1, 1, 1}, {1, 1, 1}, 0};
  lrrt::launch(block_and_fault, one, SignalArgs{SIGUSR2, 0, reinterpret_cast<uint64_t>(word.data())});
  device.synchronize();
  lrrt::DeviceBuffer out(device, sizeof(uint32_t));
  lrrt::copy_to_device(out, std::vector<uint32_t>{7});
  lrrt::launch(blocked, one, SignalBlockedArgs{out.data(), SIGUSR2});
  device.synchronize();
  std::vector<uint32_t> got(1);
  lrrt::copy_to_host(got, out);
  CHECK(got[0] == 1);
}

TEST_CASE("host backend: device memory ends at a 64 MiB guard, with a canary in the slack before it") {
  std::mt19937_64 rng(std::random_device{}());
  lrrt::rt::host::GuardedMemory memory;
  const size_t page = memory.page_size();
  for (int round = 0; round < 40; ++round) {
    // Sizes around 256-byte and page multiples, and random ones.
    const size_t base = std::uniform_int_distribution<size_t>(1, 3 * page)(rng);
    const size_t size = round % 4 == 0 ? (base + 255) / 256 * 256 : round % 4 == 1 ? (base + page - 1) / page * page : base;
    CAPTURE(size);
    auto* p = static_cast<unsigned char*>(memory.allocate(size, "device allocation"));
    const size_t rounded = (size + 255) / 256 * 256;
    CHECK(reinterpret_cast<uintptr_t>(p) % 256 == 0);
    CHECK(reinterpret_cast<uintptr_t>(p + rounded) % page == 0);  // the guard page follows
    std::memset(p, 0x5a, size);  // the whole buffer is the caller's
    CHECK(memory.scan_and_repair().empty());
    // Every byte of the slack is watched: one changed byte is reported, once.
    if (rounded > size) {
      const size_t k = std::uniform_int_distribution<size_t>(0, rounded - size - 1)(rng);
      p[size + k] ^= 0xff;
      const std::string report = memory.scan_and_repair();
      CHECK_MESSAGE(report.find(fmt::format("the {}-byte device allocation at", size)) != std::string::npos, report);
      CHECK_MESSAGE(report.find(fmt::format("1 of the {} bytes after its end", rounded - size)) != std::string::npos, report);
      CHECK_MESSAGE(report.find(fmt::format("up to {} bytes past it", k + 1)) != std::string::npos, report);
      CHECK(memory.scan_and_repair().empty());  // repaired
    }
    const std::string where = memory.describe(p + rounded + 16);
    CHECK_MESSAGE(where.find(fmt::format("lies {} bytes after the end of the {}-byte device allocation", rounded - size + 16, size)) !=
                      std::string::npos,
                  where);
    // The guard is 64 MiB of address space nothing else can be mapped into:
    // addresses megabytes past the end are still named exactly.
    const size_t inside = page * std::uniform_int_distribution<size_t>(2, (size_t(64) << 20) / page - 1)(rng) + 40;
    const std::string guarded = memory.describe(p + rounded + inside);
    CHECK_MESSAGE(guarded.find(fmt::format("lies {} bytes after the end of the {}-byte device allocation", rounded - size + inside, size)) !=
                      std::string::npos,
                  guarded);
    CHECK_MESSAGE(guarded.find("nearest") == std::string::npos, guarded);
    // Pages past the whole guard (a write that skipped it): placed after the
    // nearest allocation below, saying it is a guess.
    const size_t far = (size_t(64) << 20) + page * std::uniform_int_distribution<size_t>(0, 64)(rng) + 40;
    const std::string beyond = memory.describe(p + rounded + far);
    CHECK_MESSAGE(beyond.find(fmt::format("lies {} bytes after the end of the {}-byte device allocation", rounded - size + far, size)) !=
                      std::string::npos,
                  beyond);
    CHECK_MESSAGE(beyond.find("the nearest allocation below it") != std::string::npos, beyond);
    CHECK(where.find("nearest") == std::string::npos);  // within the mapping it is no guess
    CHECK(memory.describe(reinterpret_cast<void*>(page)).empty());  // nothing of ours below
    memory.free(p);
    CHECK(memory.describe(p + rounded).empty());
  }
}

namespace {

struct AddI32Args {
  void* a;
  void* b;
  void* c;
  uint32_t n;
};

}  // namespace

TEST_CASE("host backend: a kernel writing past a buffer is a kernel fault naming the allocation, never a pass") {
  std::mt19937_64 rng(std::random_device{}());
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module module(device, lrrt::test::read_file(std::string(LRRT_TEST_KERNEL_DIR) + "/vector_add.host.so"));
  lrrt::Kernel add = module.kernel("vector_add_i32");
  for (int round = 0; round < 6; ++round) {
    // A count whose bytes are not a multiple of 256: 4 to 252 bytes of slack.
    uint32_t count = std::uniform_int_distribution<uint32_t>(100, 100000)(rng);
    if (count % 64 == 0) ++count;
    const uint32_t slack = (count + 63) / 64 * 64 - count;  // elements
    CAPTURE(count);
    std::vector<int32_t> a(count), b(count), poison(count, int32_t(0xDEADBEEF));
    for (auto& v : a) v = int32_t(rng());
    for (auto& v : b) v = int32_t(rng());
    lrrt::DeviceBuffer da(device, count * 4), db(device, count * 4), dc(device, count * 4);
    lrrt::copy_to_device(da, a);
    lrrt::copy_to_device(db, b);
    auto launch = [&](uint32_t n) {
      lrrt::copy_to_device(dc, poison);
      lrrt::launch(add, lrrt::launch_config({(n + 63) / 64, 1, 1}, {64, 1, 1}), AddI32Args{da.data(), db.data(), dc.data(), n});
      std::string message;
      const lr_status_t status = lrrt::test::status_of([&] { device.synchronize(); }, &message);
      return std::pair{status, message};
    };
    // Into the slack: no fault, the canary.
    const uint32_t small = count + std::uniform_int_distribution<uint32_t>(1, slack)(rng);
    auto [status, message] = launch(small);
    CHECK(status == LR_ERROR_KERNEL_FAULT);
    CHECK_MESSAGE(message.find("'vector_add_i32' wrote past the end of a buffer") != std::string::npos, message);
    CHECK_MESSAGE(message.find(fmt::format("the {}-byte device allocation at {}", count * 4, dc.data())) != std::string::npos,
                  message);
    // Past the slack, up to a page: the guard pages fault (every access past
    // an end lies in a slack or a guard page), the process goes on.
    const uint32_t big = count + std::uniform_int_distribution<uint32_t>(slack + 1, slack + 1024)(rng);
    std::tie(status, message) = launch(big);
    CHECK(status == LR_ERROR_KERNEL_FAULT);
    CHECK_MESSAGE(message.find("faulted: Segmentation fault") != std::string::npos, message);
    CHECK_MESSAGE(message.find(fmt::format("after the end of the {}-byte device allocation", count * 4)) != std::string::npos,
                  message);
    // Megabytes past the end: the pool's threads start their chunks of
    // workgroups far apart, so the first stray write of a later thread lands
    // deep past the end. Still the guard: a fault, and a and b (read only)
    // and the host's memory keep their contents.
    const uint32_t huge = count + (uint32_t(1) << 22);  // 16 MiB of int32 past the end
    std::tie(status, message) = launch(huge);
    CHECK(status == LR_ERROR_KERNEL_FAULT);
    CHECK_MESSAGE(message.find(fmt::format("after the end of the {}-byte device allocation", count * 4)) != std::string::npos,
                  message);
    CHECK_MESSAGE(message.find("nearest") == std::string::npos, message);
    {
      std::vector<int32_t> a2(count), b2(count);
      lrrt::copy_to_host(a2, da);
      lrrt::copy_to_host(b2, db);
      CHECK(a2 == a);
      CHECK(b2 == b);
    }
    // The check can fail: in bounds the sums are right and nothing is reported.
    std::tie(status, message) = launch(count);
    CHECK_MESSAGE(status == LR_SUCCESS, message);
    std::vector<int32_t> c(count);
    lrrt::copy_to_host(c, dc);
    for (uint32_t i = 0; i < count; ++i) REQUIRE(c[i] == int32_t(uint32_t(a[i]) + uint32_t(b[i])));
  }
}
