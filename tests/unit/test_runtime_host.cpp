// The runtime core and the host backend through the public C ABI and the
// C++ wrapper: the same calls a user program makes.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lrrt/lrrt.hpp"

namespace {

std::vector<std::byte> read_kernel(const std::string& file) {
  std::ifstream in(std::string(LRRT_TEST_KERNEL_DIR) + "/" + file, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing kernel file ", file);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

std::mt19937& rng() {
  static std::mt19937 gen(std::random_device{}());
  return gen;
}

std::vector<float> random_floats(size_t n) {
  std::uniform_real_distribution<float> d(-10.f, 10.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

struct SaxpyArgs {
  float a;
  const void* x;
  void* y;
  uint32_t n;
};

lr_launch_config_t config_for(uint32_t n, uint32_t block) {
  return {{(n + block - 1) / block, 1, 1}, {block, 1, 1}, 0};
}

const float kPoison = std::numeric_limits<float>::quiet_NaN();

}  // namespace

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

TEST_CASE("host backend: saxpy on random inputs verifies every element") {
  lrrt::Runtime runtime;
  CHECK_THROWS_AS(lrrt::Runtime(), lrrt::Error);  // second lr_init
  auto device = lrrt::Device::select("host");
  CHECK(device.backend() == "host");
  lrrt::Module module(device, read_kernel("saxpy.host.so"));
  auto kernel = module.kernel("saxpy");

  for (uint32_t n : {1u, 255u, 4096u, 100003u}) {
    auto x = random_floats(n), y = random_floats(n);
    float a = std::uniform_real_distribution<float>(-3, 3)(rng());
    lrrt::DeviceBuffer dx(device, n * 4), dy(device, n * 4);
    lrrt::copy_to_device(dx, x);
    lrrt::copy_to_device(dy, y);
    lrrt::launch(kernel, config_for(n, 256), SaxpyArgs{a, dx.data(), dy.data(), n});
    std::vector<float> out(n, kPoison);
    lrrt::copy_to_host(out, dy);  // lr_memcpy drains the launch first
    for (uint32_t i = 0; i < n; ++i) REQUIRE(out[i] == a * x[i] + y[i]);
  }
}

TEST_CASE("host backend: kernel properties describe the argument layout") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module module(device, read_kernel("saxpy.host.so"));
  auto props = module.kernel("saxpy").properties();
  CHECK(props.has_arg_layout == 1);
  CHECK(props.arg_count == 4);
  CHECK(props.explicit_kernarg_size == 28);
  auto args = module.kernel("saxpy").args();
  CHECK(args[0].offset == 0);
  CHECK(args[0].kind == LR_ARG_BY_VALUE);
  CHECK(args[1].offset == 8);
  CHECK(args[1].kind == LR_ARG_GLOBAL_BUFFER);
  CHECK(args[3].offset == 24);
  CHECK(std::string(args[3].name) == "n");
  CHECK(module.kernel_names() == std::vector<std::string>{"saxpy"});
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

  lrrt::Module good(device, read_kernel("vector_add.host.so"));
  lr_kernel_t* k = nullptr;
  CHECK(lr_kernel_get(good.get(), "nope", &k) == LR_ERROR_NOT_FOUND);
  std::string msg = lr_last_error_message();
  CHECK(msg.find("vector_add_f32") != std::string::npos);
  CHECK(msg.find("vector_add_i32") != std::string::npos);

  auto kernel = good.kernel("vector_add_f32");
  lr_launch_config_t cfg = config_for(16, 16);
  char small[8] = {};
  CHECK(lr_launch(kernel.get(), &cfg, small, sizeof(small)) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("28") != std::string::npos);
  lr_launch_config_t zero = {{0, 1, 1}, {1, 1, 1}, 0};
  CHECK(lr_launch(kernel.get(), &zero, small, sizeof(small)) == LR_ERROR_INVALID_ARGUMENT);

  void* p = nullptr;
  CHECK(lr_malloc(device.get(), size_t(1) << 62, &p) == LR_ERROR_OUT_OF_MEMORY);
  CHECK(std::string(lr_last_error_message()).find("bytes of memory") != std::string::npos);
  int local = 0;
  CHECK(lr_free(device.get(), &local) == LR_ERROR_INVALID_ARGUMENT);
  lr_device_t d{};
  CHECK(lr_device_open(999, &d) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_device_select("cuda-typo", 0, &d) == LR_ERROR_NOT_FOUND);
  CHECK(lr_device_select("host", 3, &d) == LR_ERROR_NOT_FOUND);
}

TEST_CASE("host backend: a faulting kernel is reported at the next synchronize and the runtime stays usable") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module module(device, read_kernel("saxpy.host.so"));
  auto kernel = module.kernel("saxpy");
  uint32_t n = 1024;
  // x points at unmapped memory: the kernel faults.
  SaxpyArgs bad{1.f, reinterpret_cast<const void*>(uintptr_t(16)), reinterpret_cast<void*>(uintptr_t(64)), n};
  CHECK(lr_launch(kernel.get(), nullptr, &bad, sizeof(bad)) == LR_ERROR_INVALID_ARGUMENT);
  auto cfg = config_for(n, 64);
  REQUIRE(lr_launch(kernel.get(), &cfg, &bad, 28) == LR_SUCCESS);  // asynchronous: no error yet
  CHECK(lr_synchronize(device.get()) == LR_ERROR_KERNEL_FAULT);
  std::string msg = lr_last_error_message();
  CHECK(msg.find("saxpy") != std::string::npos);
  CHECK(msg.find("SIG") == std::string::npos);  // strsignal wording, not the macro
  CHECK(msg.find("workgroup") != std::string::npos);
  // Reported once; the device keeps working.
  CHECK(lr_synchronize(device.get()) == LR_SUCCESS);
  auto x = random_floats(n), y = random_floats(n);
  lrrt::DeviceBuffer dx(device, n * 4), dy(device, n * 4);
  lrrt::copy_to_device(dx, x);
  lrrt::copy_to_device(dy, y);
  lrrt::launch(kernel, cfg, SaxpyArgs{2.f, dx.data(), dy.data(), n});
  std::vector<float> out(n, kPoison);
  lrrt::copy_to_host(out, dy);
  for (uint32_t i = 0; i < n; ++i) REQUIRE(out[i] == 2.f * x[i] + y[i]);
}

TEST_CASE("host backend: queues, events and async copies order work and time it") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module module(device, read_kernel("vector_add.host.so"));
  auto add = module.kernel("vector_add_i32");
  const uint32_t n = 1 << 16;
  std::uniform_int_distribution<int32_t> d;
  std::vector<int32_t> a(n), b(n);
  for (auto& v : a) v = d(rng());
  for (auto& v : b) v = d(rng());

  lrrt::PinnedHostBuffer ha(device, n * 4), hb(device, n * 4), hc(device, n * 4);
  std::memcpy(ha.data(), a.data(), n * 4);
  std::memcpy(hb.data(), b.data(), n * 4);
  std::memset(hc.data(), 0xAB, n * 4);
  lrrt::DeviceBuffer da(device, n * 4), db(device, n * 4), dc(device, n * 4), dd(device, n * 4);

  // Copies on the copy path, kernel on queue 1 after both copies, a second
  // kernel on queue 2 after the first one, copy back after that.
  lrrt::Event copied_a(device), copied_b(device), first(device), second(device), start(device);
  lrrt::Queue q1(device), q2(device);
  start.record(q1);
  REQUIRE(lr_memcpy_async_with_dependencies(device.get(), da.data(), ha.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE,
                                            copied_a.get(), nullptr, 0) == LR_SUCCESS);
  REQUIRE(lr_memcpy_async_with_dependencies(device.get(), db.data(), hb.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE,
                                            copied_b.get(), nullptr, 0) == LR_SUCCESS);
  struct Args { const void* a; const void* b; void* c; uint32_t n; };
  lr_event_t* deps[] = {copied_a.get(), copied_b.get()};
  Args args1{da.data(), db.data(), dc.data(), n};
  auto cfg = config_for(n, 256);
  REQUIRE(lr_launch_on_queue_with_dependencies(q1.get(), add.get(), &cfg, &args1, 28, deps, 2) == LR_SUCCESS);
  first.record(q1);
  Args args2{dc.data(), db.data(), dd.data(), n};  // d = a + 2b
  lr_event_t* dep2[] = {first.get()};
  REQUIRE(lr_launch_on_queue_with_dependencies(q2.get(), add.get(), &cfg, &args2, 28, dep2, 1) == LR_SUCCESS);
  second.record(q2);
  lr_event_t* dep3[] = {second.get()};
  lrrt::Event back(device);
  REQUIRE(lr_memcpy_async_with_dependencies(device.get(), hc.data(), dd.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST,
                                            back.get(), dep3, 1) == LR_SUCCESS);
  back.synchronize();
  auto* c = hc.as<int32_t>();
  for (uint32_t i = 0; i < n; ++i)
    REQUIRE(c[i] == int32_t(uint32_t(a[i]) + uint32_t(b[i]) + uint32_t(b[i])));
  CHECK(second.elapsed_ns_since(start) > 0);
  CHECK(back.duration_ns() > 0);

  auto stats = device.memory_stats();
  CHECK(stats.live_bytes == 4ull * n * 4);
  CHECK(stats.pinned_host_live_bytes == 3ull * n * 4);
  CHECK(stats.h2d_copy_bytes == 2ull * n * 4);
  CHECK(stats.d2h_copy_bytes == 1ull * n * 4);
  CHECK(stats.memcpy_count == 3);
  device.reset_memory_stats();
  stats = device.memory_stats();
  CHECK(stats.live_bytes == 4ull * n * 4);
  CHECK(stats.peak_live_bytes == stats.live_bytes);
  CHECK(stats.memcpy_count == 0);
  CHECK(stats.allocation_count == 0);
}

TEST_CASE("host backend: 2-D transpose with dynamic shared memory and a reduction") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lrrt::Module tmod(device, read_kernel("transpose.host.so"));
  auto transpose = tmod.kernel("transpose_f32");
  const uint32_t rows = 67, cols = 130, tile = 16;
  auto in = random_floats(rows * cols);
  lrrt::DeviceBuffer din(device, in.size() * 4), dout(device, in.size() * 4);
  lrrt::copy_to_device(din, in);
  std::vector<float> poison(in.size(), kPoison);
  lrrt::copy_to_device(dout, poison);
  struct { const void* in; void* out; uint32_t rows, cols; } targs{din.data(), dout.data(), rows, cols};
  lr_launch_config_t cfg{{(cols + tile - 1) / tile, (rows + tile - 1) / tile, 1}, {tile, tile, 1},
                         tile * (tile + 1) * 4};
  lrrt::launch(transpose, cfg, targs);
  std::vector<float> out(in.size(), kPoison);
  lrrt::copy_to_host(out, dout);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) REQUIRE(out[size_t(c) * rows + r] == in[size_t(r) * cols + c]);

  lrrt::Module rmod(device, read_kernel("reduce.host.so"));
  auto reduce = rmod.kernel("reduce_sum_f32");
  const uint32_t n = 10000, block = 256, groups = (n + block - 1) / block;
  auto v = random_floats(n);
  lrrt::DeviceBuffer dv(device, n * 4), dp(device, groups * 4);
  lrrt::copy_to_device(dv, v);
  struct { const void* in; void* partial; uint32_t n; } rargs{dv.data(), dp.data(), n};
  lrrt::launch(reduce, lr_launch_config_t{{groups, 1, 1}, {block, 1, 1}, 0}, rargs);
  std::vector<float> partial(groups, kPoison);
  lrrt::copy_to_host(partial, dp);
  for (uint32_t g = 0; g < groups; ++g) {
    double expect = 0;
    for (uint32_t i = g * block; i < std::min(n, (g + 1) * block); ++i) expect += v[i];
    REQUIRE(std::abs(partial[g] - expect) <= 1e-3 * (1 + std::abs(expect)));
  }
}

TEST_CASE("host backend: PinnedHostDoubleBuffer overlaps preparation and copies") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  const uint32_t n = 4096, rounds = 6;
  lrrt::PinnedHostDoubleBuffer db(device, n * 4);
  lrrt::DeviceBuffer dst(device, size_t(n) * 4 * rounds);
  std::vector<float> expected;
  for (uint32_t r = 0; r < rounds; ++r) {
    auto& slot = db.acquire();
    auto v = random_floats(n);
    std::memcpy(slot.host.data(), v.data(), n * 4);
    db.copy_to_device_async(slot, static_cast<char*>(dst.data()) + size_t(r) * n * 4, n * 4);
    db.mark_work_submitted(slot);
    expected.insert(expected.end(), v.begin(), v.end());
  }
  db.finish();
  std::vector<float> out(expected.size(), kPoison);
  lrrt::copy_to_host(out, dst);
  for (size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == expected[i]);
}
