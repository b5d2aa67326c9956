// The hsa backend end to end against the stand-in libhsa-runtime64
// (tests/hsa/standin), loaded through LRRT_HSA_LIBRARY like the real one:
// dispatch, kernarg bytes as the packet processor saw them, copies, events
// across queues, bundles, errors and fault injection. Behaviour every backend
// shares is in the conformance suite (tests/cts, run as cts.hsa.*).
#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <fcntl.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "backend.hpp"
#include "error.hpp"
#include "wait.hpp"
#include "standin_hooks.h"

namespace lrrt::rt {
std::unique_ptr<Backend> make_hsa_backend();
}

using namespace lrrt::rt;
using lrrt::Error;

namespace {

struct Hooks {
  void* lib = nullptr;
  lrrt_hsa_standin_set_fault_fn set_fault = nullptr;
  lrrt_hsa_standin_dispatch_count_fn dispatch_count = nullptr;
  lrrt_hsa_standin_get_dispatch_fn get_dispatch = nullptr;
  lrrt_hsa_standin_reset_fn reset = nullptr;
  lrrt_hsa_standin_counter_fn counter = nullptr;
  lrrt_hsa_standin_hold_copies_fn hold_copies = nullptr;
  Hooks() {
    lib = dlopen(LRRT_TEST_HSA_STANDIN, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(lib, "the stand-in is not loaded");
    set_fault = reinterpret_cast<lrrt_hsa_standin_set_fault_fn>(dlsym(lib, "lrrt_hsa_standin_set_fault"));
    dispatch_count = reinterpret_cast<lrrt_hsa_standin_dispatch_count_fn>(dlsym(lib, "lrrt_hsa_standin_dispatch_count"));
    get_dispatch = reinterpret_cast<lrrt_hsa_standin_get_dispatch_fn>(dlsym(lib, "lrrt_hsa_standin_get_dispatch"));
    reset = reinterpret_cast<lrrt_hsa_standin_reset_fn>(dlsym(lib, "lrrt_hsa_standin_reset"));
    counter = reinterpret_cast<lrrt_hsa_standin_counter_fn>(dlsym(lib, "lrrt_hsa_standin_counter"));
    hold_copies = reinterpret_cast<lrrt_hsa_standin_hold_copies_fn>(dlsym(lib, "lrrt_hsa_standin_hold_copies"));
    REQUIRE(bool(set_fault));
    REQUIRE(bool(hold_copies));
    REQUIRE(bool(get_dispatch));
    REQUIRE(bool(counter));
    reset();
    set_fault("");
  }
  lrrt_hsa_standin_dispatch_t last() {
    lrrt_hsa_standin_dispatch_t d{};
    size_t n = dispatch_count();
    REQUIRE(n > 0);
    REQUIRE(get_dispatch(n - 1, &d) == 0);
    return d;
  }
};

struct Fixture {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Device> device;
  std::chrono::milliseconds saved_timeout = wait_timeout();
  explicit Fixture(int timeout_ms = 20000) {
    setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", LRRT_TEST_KERNEL_DIR, 1);
    set_wait_timeout(std::chrono::milliseconds(timeout_ms));
    backend = make_hsa_backend();
    auto st = backend->initialize();
    REQUIRE_MESSAGE(st.usable, st.message);
    REQUIRE(backend->device_count() == 1);
    device = backend->open_device(0);
  }
  ~Fixture() {
    device.reset();
    backend.reset();
    set_wait_timeout(saved_timeout);
  }
  std::unique_ptr<Module> load(const std::string& name) {
    std::ifstream f(std::string(LRRT_TEST_KERNEL_DIR) + "/" + name, std::ios::binary);
    std::vector<char> c((std::istreambuf_iterator<char>(f)), {});
    REQUIRE(!c.empty());
    return device->load_module(std::as_bytes(std::span(c)));
  }
};

struct SaxpyArgs {
  float a;
  uint32_t pad;
  const float* x;
  float* y;
  uint32_t n;
};

std::span<const std::byte> bytes28(const SaxpyArgs& a) {
  return std::as_bytes(std::span(&a, 1)).first(28);
}

// Runs saxpy through device memory and checks y = a*x + y.
void run_saxpy(Fixture& fx, Module& m, Queue& q, uint32_t n, uint32_t block) {
  std::vector<float> x(n), y(n), out(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i), y[i] = 1.0f;
  auto* dx = static_cast<float*>(fx.device->allocate(n * 4));
  auto* dy = static_cast<float*>(fx.device->allocate(n * 4));
  q.copy(dx, x.data(), n * 4, CopyKind::HostToDevice, {}, nullptr);
  q.copy(dy, y.data(), n * 4, CopyKind::HostToDevice, {}, nullptr);
  SaxpyArgs a{2.0f, 0, dx, dy, n};
  LaunchConfig c;
  c.block = {block, 1, 1};
  c.grid = {(n + block - 1) / block, 1, 1};
  q.launch(m.kernel("saxpy"), c, bytes28(a), {}, nullptr);
  q.copy(out.data(), dy, n * 4, CopyKind::DeviceToHost, {}, nullptr);
  q.synchronize();
  for (uint32_t i = 0; i < n; ++i) REQUIRE(out[i] == 2.0f * float(i) + 1.0f);
  fx.device->free(dx);
  fx.device->free(dy);
}

}  // namespace

TEST_CASE("hsa stand-in: backend status when the library is missing or fails") {
  setenv("LRRT_HSA_LIBRARY", "/nonexistent/libhsa-runtime64.so.1", 1);
  auto b = make_hsa_backend();
  auto st = b->initialize();
  CHECK_FALSE(st.usable);
  CHECK(st.message.find("cannot load /nonexistent/libhsa-runtime64.so.1") != std::string::npos);
  CHECK(b->device_count() == 0);

  setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 1);
  setenv("LRRT_HSA_STANDIN_FAULT", "init_fail", 1);
  st = make_hsa_backend()->initialize();
  CHECK_FALSE(st.usable);
  CHECK(st.message.find("hsa_init") != std::string::npos);
  CHECK(st.message.find("4104") != std::string::npos);
  setenv("LRRT_HSA_STANDIN_FAULT", "no_gpu", 1);
  st = make_hsa_backend()->initialize();
  CHECK_FALSE(st.usable);
  CHECK(st.message.find("no GPU agent") != std::string::npos);
  unsetenv("LRRT_HSA_STANDIN_FAULT");
  Hooks h;  // clears the faults the env installed
}

TEST_CASE("hsa stand-in: device properties") {
  Fixture fx;
  const auto& p = fx.device->properties();
  CHECK(p.backend == "hsa");
  CHECK(p.arch == "gfx1100");
  REQUIRE(p.isas.size() == 1);
  CHECK(p.isas[0] == "amdgcn-amd-amdhsa--gfx1100");
  CHECK(p.wave_size == 32);
  CHECK(p.max_workgroup_size == 1024);
  CHECK(p.compute_units == 4);
  CHECK(p.memory_bytes == (uint64_t(16) << 30));
  CHECK(p.max_shared_memory_per_workgroup == 65536);
  bool has_queue_max = false;
  for (auto& [k, v] : p.extra) has_queue_max |= k == "queue max size" && v == "4096";
  CHECK(has_queue_max);
}

TEST_CASE("hsa stand-in: saxpy dispatch, kernarg bytes and hidden arguments") {
  Fixture fx;
  Hooks h;
  auto m = fx.load("saxpy.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  run_saxpy(fx, *m, *q, 1000, 256);
  auto d = h.last();
  CHECK(std::string(d.kernel) == "saxpy");
  CHECK(d.header == 0x1502);  // dispatch, barrier, system acquire/release
  CHECK(d.setup == 1);
  CHECK(d.workgroup_size[0] == 256);
  CHECK(d.grid_size[0] == 1024);
  CHECK(d.explicit_size == 28);
  CHECK(d.used_hidden_args == 1);
  CHECK(d.hidden_mismatch == 0);
  float a;
  uint32_t n, count_x, count_y;
  uint16_t size_x, dims;
  std::memcpy(&a, d.kernarg + 0, 4);
  std::memcpy(&n, d.kernarg + 24, 4);
  std::memcpy(&count_x, d.kernarg + 32, 4);
  std::memcpy(&count_y, d.kernarg + 36, 4);
  std::memcpy(&size_x, d.kernarg + 44, 2);
  std::memcpy(&dims, d.kernarg + 96, 2);
  CHECK(a == 2.0f);
  CHECK(n == 1000);
  CHECK(count_x == 4);
  CHECK(count_y == 1);
  CHECK(size_x == 256);
  CHECK(dims == 1);
}

TEST_CASE("hsa stand-in: code object v4 and v6, bundle, wrong target") {
  Fixture fx;
  auto q = fx.device->create_queue();
  auto v4 = fx.load("saxpy.gfx1100.v4.hsaco");
  run_saxpy(fx, *v4, *q, 300, 64);
  auto v6 = fx.load("saxpy.gfx1100.v6.hsaco");
  run_saxpy(fx, *v6, *q, 300, 64);
#if defined(LRRT_TEST_AMD_BUNDLES)
  auto bundle = fx.load("saxpy.bundle.hsaco");
  run_saxpy(fx, *bundle, *q, 300, 128);
#endif
  try {
    fx.load("saxpy.gfx90a.hsaco");
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_INVALID_IMAGE);
    std::string msg = e.what();
    CHECK(msg.find("gfx90a") != std::string::npos);
    CHECK(msg.find("gfx1100") != std::string::npos);
  }
  try {
    fx.load("saxpy.host.so");
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_INVALID_IMAGE);
  }
  try {
    v4->kernel("nope");
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_NOT_FOUND);
    CHECK(std::string(e.what()).find("saxpy") != std::string::npos);
  }
}

TEST_CASE("hsa stand-in: many dispatches wrap the ring and recycle kernarg buffers") {
  Fixture fx;
  Hooks h;
  auto m = fx.load("empty.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  LaunchConfig c;
  c.block = {32, 1, 1};
  for (uint32_t i = 0; i < 5000; ++i) {
    uint32_t arg = i;
    q->launch(m->kernel("empty"), c, std::as_bytes(std::span(&arg, 1)), {}, nullptr);
  }
  q->synchronize();
  CHECK(h.counter("packets_dispatch") == 5000);
  CHECK(h.dispatch_count() == 5000);
  // Each dispatch saw its own argument: no buffer reused too early.
  for (size_t i = 0; i < 5000; i += 499) {
    lrrt_hsa_standin_dispatch_t d{};
    REQUIRE(h.get_dispatch(i, &d) == 0);
    uint32_t v;
    std::memcpy(&v, d.kernarg, 4);
    CHECK(v == i);
  }
}

TEST_CASE("hsa stand-in: events order work across queues and time it") {
  Fixture fx;
  Hooks h;
  auto m = fx.load("vector_add.gfx1100.hsaco");
  auto q1 = fx.device->create_queue();
  auto q2 = fx.device->create_queue();
  const uint32_t n = 1 << 16;
  auto* a = static_cast<int32_t*>(fx.device->allocate_host(n * 4));
  auto* b = static_cast<int32_t*>(fx.device->allocate(n * 4));
  auto* c = static_cast<int32_t*>(fx.device->allocate(n * 4));
  auto* out = static_cast<int32_t*>(fx.device->allocate_host(n * 4));
  for (uint32_t i = 0; i < n; ++i) a[i] = int32_t(i);
  auto start = fx.device->create_event();
  auto copied = fx.device->create_event();
  auto ran = fx.device->create_event();
  auto end = fx.device->create_event();
  for (uint32_t i = 0; i < n; ++i) out[i] = -1;  // poison
  // The copy engine starts nothing until every operation is enqueued: the
  // launch then always finds the copy pending, so the barrier-AND packets
  // lrrt emits do not depend on how fast the copy engine is.
  h.hold_copies(1);
  q1->record(*start);
  q1->copy(b, a, n * 4, CopyKind::HostToDevice, {}, copied.get());
  // q2 waits for q1's copy, then c = a + b, then q1 copies c back after q2.
  struct {
    const int32_t *a, *b;
    int32_t* c;
    uint32_t n;
  } args{a, b, c, n};
  LaunchConfig cfg;
  cfg.block = {256, 1, 1};
  cfg.grid = {n / 256, 1, 1};
  Event* w1[] = {copied.get()};
  q2->launch(m->kernel("vector_add_i32"), cfg, std::as_bytes(std::span(&args, 1)).first(28), w1, ran.get());
  Event* w2[] = {ran.get()};
  q1->copy(out, c, n * 4, CopyKind::DeviceToHost, w2, nullptr);
  q1->record(*end);
  CHECK_FALSE(ran->query());  // the launch waits for the held copy
  h.hold_copies(0);
  end->synchronize();
  // The stand-in counts packets as it processes them. One barrier-AND for the
  // start marker, one before the launch (the copy it waits for was pending),
  // one for the end marker (after q1's two copies).
  CHECK(h.counter("packets_barrier_and") == 3);
  CHECK(end->query());
  CHECK(ran->query());
  CHECK(copied->query());
  for (uint32_t i = 0; i < n; ++i) REQUIRE(out[i] == int32_t(2 * i));
  CHECK(ran->duration_ns() > 0);
  CHECK(copied->duration_ns() > 0);
  CHECK(end->elapsed_ns_since(*start) >= ran->duration_ns());
  CHECK_THROWS_AS(start->duration_ns(), Error);  // a marker has no duration
  q1->synchronize();
  q2->synchronize();
  fx.device->free_host(a);
  fx.device->free(b);
  fx.device->free(c);
  fx.device->free_host(out);
}

TEST_CASE("hsa stand-in: a lost completion signal times out with the kernel's name") {
  Fixture fx(300);
  Hooks h;
  auto m = fx.load("empty.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  h.set_fault("lost_signal:empty");
  uint32_t arg = 0;
  LaunchConfig c;
  q->launch(m->kernel("empty"), c, std::as_bytes(std::span(&arg, 1)), {}, nullptr);
  try {
    q->synchronize();
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_TIMEOUT);
    CHECK(std::string(e.what()).find("'empty'") != std::string::npos);
  }
  h.set_fault("");
}

TEST_CASE("hsa stand-in: allocation failure names the size") {
  Fixture fx;
  Hooks h;
  h.set_fault("alloc_fail:1048576");
  try {
    fx.device->allocate(4 << 20);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_OUT_OF_MEMORY);
    CHECK(std::string(e.what()).find("4194304") != std::string::npos);
  }
  void* small = fx.device->allocate(4096);
  CHECK(small);
  fx.device->free(small);
  h.set_fault("");
}
namespace {

// The test-only kernels (tests/kernels/error_kernels.cpp) beside the host
// build the stand-in runs.
std::string test_kernel_dir() {
  std::string p = LRRT_TEST_ERROR_KERNELS;
  return p.substr(0, p.rfind('/'));
}
std::unique_ptr<Module> load_error_kernels(Fixture& fx) {
  setenv("LRRT_HSA_STANDIN_KERNEL_DIR", (std::string(LRRT_TEST_KERNEL_DIR) + ":" + test_kernel_dir()).c_str(), 1);
  std::ifstream f(test_kernel_dir() + "/error_kernels.gfx1100.hsaco", std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), {});
  REQUIRE(!c.empty());
  return fx.device->load_module(std::as_bytes(std::span(c)));
}

std::mt19937& test_rng() {
  static std::mt19937 r(std::random_device{}());
  return r;
}

}  // namespace

// Issue 24, defect 2: ROCr returns HSA_STATUS_SUCCESS for a zero-byte
// hsa_amd_memory_async_copy without ever completing its signal, and refuses
// null pointers even then (the stand-in does both): lrrt never hands it one.
TEST_CASE("hsa stand-in: a zero-byte copy completes its event in order, without the copy engine") {
  Fixture fx(5000);
  Hooks h;
  auto m = fx.load("saxpy.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  auto other = fx.device->create_queue();
  auto ev = fx.device->create_event();
  auto held = fx.device->create_event();
  void* d = fx.device->allocate(256);
  std::vector<char> host(256, 1);
  const uint64_t zero_before = h.counter("zero_byte_copies");
  for (bool null_pointers : {true, false}) {
    CAPTURE(null_pointers);
    q->copy(null_pointers ? nullptr : d, null_pointers ? nullptr : host.data(), 0, CopyKind::HostToDevice, {},
            ev.get());
    ev->synchronize();
    CHECK(ev->query());
    q->copy(null_pointers ? nullptr : host.data(), null_pointers ? nullptr : d, 0, CopyKind::DeviceToHost, {},
            nullptr);
    q->synchronize();
  }
  // One that waits for a copy still held on another queue completes after it.
  h.hold_copies(1);
  other->copy(d, host.data(), 256, CopyKind::HostToDevice, {}, held.get());
  Event* waits[] = {held.get()};
  q->copy(nullptr, nullptr, 0, CopyKind::HostToDevice, waits, ev.get());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(ev->query());
  h.hold_copies(0);
  ev->synchronize();
  CHECK(held->query());
  CHECK(h.counter("zero_byte_copies") == zero_before);
  run_saxpy(fx, *m, *q, 1000, 128);  // the queue carries on
  fx.device->free(d);
}

// Issue 24, defect 3: a kernel with a dynamic stack (recursion) needs more
// private segment than its fixed frames; the stand-in faults a dispatch
// that gives it no more (its stack would overrun the scratch slot).
TEST_CASE("hsa stand-in: a recursive kernel gets a stack beyond its fixed frames and computes every element") {
  Fixture fx;
  Hooks h;
  auto m = load_error_kernels(fx);
  Kernel& k = m->kernel("recurse_sum");
  REQUIRE(k.info().uses_dynamic_stack);
  const uint32_t fixed = k.info().private_segment_size;
  const uint32_t n = 1000 + test_rng()() % 100, depth = 20 + test_rng()() % 40;
  auto* out = static_cast<uint32_t*>(fx.device->allocate(n * 4));
  auto q = fx.device->create_queue();
  std::vector<uint32_t> got(n, 0xdeadbeef);
  q->copy(out, got.data(), n * 4, CopyKind::HostToDevice, {}, nullptr);
  struct {
    uint32_t* out;
    uint32_t depth, n;
  } args{out, depth, n};
  LaunchConfig c;
  c.block = {64, 1, 1};
  c.grid = {(n + 63) / 64, 1, 1};
  q->launch(k, c, std::as_bytes(std::span(&args, 1)).first(16), {}, nullptr);
  q->copy(got.data(), out, n * 4, CopyKind::DeviceToHost, {}, nullptr);
  q->synchronize();
  CHECK(h.last().private_segment_size == fixed + 1024);
  CHECK(h.counter("scratch_overruns") == 0);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t d = depth + i % 3;
    REQUIRE_MESSAGE(got[i] == d * (d + 1) / 2, "element ", i);
  }
  fx.device->free(out);
}

// Issue 24, defect 4: ROCr aborts the process on a GPU memory fault unless a
// system event handler handles it. lrrt registers one: the fault is the
// device's error (LR_ERROR_KERNEL_FAULT naming the kernel and address), and
// later work is refused (ROCr stops the device's queues and reports no
// second fault).
TEST_CASE("hsa stand-in: a GPU memory fault is the kernel's error, not the end of the process") {
  Fixture fx(5000);
  Hooks h;
  auto m = load_error_kernels(fx);
  auto q = fx.device->create_queue();
  h.set_fault("vm_fault:write_to_address");
  const uint64_t address = 0xdead0000ull + (test_rng()() % 4096) * 16;
  LaunchConfig c;
  q->launch(m->kernel("write_to_address"), c, std::as_bytes(std::span(&address, 1)), {}, nullptr);
  try {
    q->synchronize();
    FAIL("no fault reported");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(e.status() == LR_ERROR_KERNEL_FAULT);
    CHECK_MESSAGE(msg.find("'write_to_address'") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(fmt::format("{:#x}", address)) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("memory fault") != std::string::npos, msg);
  }
  h.set_fault("");
  CHECK(h.counter("vm_faults") == 1);
  try {
    q->launch(m->kernel("write_to_address"), c, std::as_bytes(std::span(&address, 1)), {}, nullptr);
    q->synchronize();
    FAIL("the device still runs work after a memory fault");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_DEVICE_LOST);
    CHECK_MESSAGE(std::string(e.what()).find("had a GPU memory fault at address") != std::string::npos, e.what());
  }
}

// The stand-in itself: without a handler that returns HSA_STATUS_SUCCESS a
// memory fault aborts the process, with one the handler gets the event.
TEST_CASE("hsa stand-in: a memory fault aborts the process unless a system event handler handles it") {
  void* lib = dlopen(LRRT_TEST_HSA_STANDIN, RTLD_NOW);
  REQUIRE(lib);
  using init_fn = hsa_status_t (*)();
  using register_fn = hsa_status_t (*)(hsa_amd_system_event_callback_t, void*);
  auto init = reinterpret_cast<init_fn>(dlsym(lib, "hsa_init"));
  auto shut_down = reinterpret_cast<init_fn>(dlsym(lib, "hsa_shut_down"));
  auto register_handler = reinterpret_cast<register_fn>(dlsym(lib, "hsa_amd_register_system_event_handler"));
  auto raise = reinterpret_cast<lrrt_hsa_standin_raise_vm_fault_fn>(dlsym(lib, "lrrt_hsa_standin_raise_vm_fault"));
  REQUIRE((init && shut_down && register_handler && raise));
  // 0: no handler; 1: one that declines; 2: one that handles it.
  for (int mode : {0, 1, 2}) {
    CAPTURE(mode);
    fflush(nullptr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int fd = open("/dev/null", O_WRONLY);
      if (fd >= 0) dup2(fd, 2);  // the fault message
      static uint64_t seen = 0;
      if (init() != HSA_STATUS_SUCCESS) _exit(10);
      auto handler = +[](const hsa_amd_event_t* e, void* data) {
        seen = e->memory_fault.virtual_address;
        return *static_cast<int*>(data) == 2 ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR;
      };
      if (mode > 0 && register_handler(handler, &mode) != HSA_STATUS_SUCCESS) _exit(11);
      raise(0x1234000);
      _exit(seen == 0x1234000 ? 0 : 12);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (mode == 2) {
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    } else {
      CHECK(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == SIGABRT);
    }
  }
  dlclose(lib);
}

// Issue 24, suspected defect 7: a packet slot reserved and then abandoned
// (its wait for ring space timed out) keeps an INVALID header, at which the
// packet processor stops for good. lrrt waits for space before it moves the
// write index.
TEST_CASE("hsa stand-in: a full ring that times out leaves no hole: the queue carries on afterwards") {
  Fixture fx(20000);
  Hooks h;
  auto m = fx.load("saxpy.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  auto ev = fx.device->create_event();
  void* d = fx.device->allocate(64);
  std::vector<char> host(64, 3);
  h.hold_copies(1);
  q->copy(d, host.data(), 64, CopyKind::HostToDevice, {}, nullptr);
  // Each marker waits for the held copy: the first blocks the processor, the
  // ring fills.
  const uint32_t ring = 4096;  // the stand-in's HSA_AGENT_INFO_QUEUE_MAX_SIZE, lrrt's cap
  for (uint32_t i = 0; i < ring; ++i) q->record(*ev);
  set_wait_timeout(std::chrono::milliseconds(200));
  try {
    q->record(*ev);
    FAIL("the full ring did not time out");
  } catch (const Error& e) {
    CHECK(e.status() == LR_ERROR_TIMEOUT);
  }
  set_wait_timeout(std::chrono::milliseconds(5000));
  h.hold_copies(0);
  q->synchronize();
  run_saxpy(fx, *m, *q, 2000, 256);  // the packets after the timeout run
  fx.device->free(d);
}

#endif
