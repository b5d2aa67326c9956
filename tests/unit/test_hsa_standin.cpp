// The hsa backend end to end against the stand-in libhsa-runtime64
// (tests/hsa/standin), loaded through LRRT_HSA_LIBRARY like the real one:
// dispatch, kernarg bytes as the packet processor saw them, copies, events
// across queues, bundles, errors and fault injection. Behaviour every backend
// shares is in the conformance suite (tests/cts, run as cts.hsa.*).
#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

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
#endif
