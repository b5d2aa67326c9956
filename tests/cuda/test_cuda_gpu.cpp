// The cuda backend through the C ABI on a real GPU: random inputs, poisoned
// outputs, every element checked; cubin, PTX and fatbin modules; dynamic
// shared memory above 48 KiB; events and durations; cross-queue
// dependencies; async copies in all directions; error messages (wrong arch,
// bad PTX, wrong argument size). Exits 77 (skip) without a cuda device.
//
// `--fault` runs the faulting-kernel check instead (its own process: the
// CUDA context is unusable afterwards).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "lrrt/lrrt.h"

namespace {

lr_device_t g_dev;

#define LR_OK(call)                                                                    \
  do {                                                                                 \
    lr_status_t s_ = (call);                                                           \
    REQUIRE_MESSAGE(s_ == LR_SUCCESS, #call, " -> ", lr_status_string(s_), ": ",     \
                    lr_last_error_message());                                         \
  } while (0)

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing file ", path);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(c.size());
  std::memcpy(out.data(), c.data(), c.size());
  return out;
}

// Build folders, overridable when the build was carried to another machine.
std::string dir_from(const char* env, const char* built) {
  const char* v = std::getenv(env);
  return v && *v ? v : built;
}

std::vector<std::byte> kernel_file(const std::string& name) {
  return read_file(dir_from("LRRT_TEST_KERNEL_DIR", LRRT_TEST_KERNEL_DIR) + "/" + name);
}

lr_module_t* load(const std::vector<std::byte>& image) {
  lr_module_t* m = nullptr;
  LR_OK(lr_module_load(g_dev, image.data(), image.size(), &m));
  return m;
}

lr_kernel_t* get(lr_module_t* m, const char* name) {
  lr_kernel_t* k = nullptr;
  LR_OK(lr_kernel_get(m, name, &k));
  return k;
}

std::mt19937& rng() {
  static std::mt19937 gen(12345);
  return gen;
}

template <typename T>
std::vector<T> random_values(size_t n) {
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> d(-100, 100);
    for (auto& x : v) x = d(rng());
  } else {
    std::uniform_int_distribution<int64_t> d(INT32_MIN, INT32_MAX);
    for (auto& x : v) x = static_cast<T>(d(rng()));
  }
  return v;
}

template <typename T>
T* device_copy(const std::vector<T>& host) {
  void* p = nullptr;
  LR_OK(lr_malloc(g_dev, host.size() * sizeof(T), &p));
  LR_OK(lr_memcpy(g_dev, p, host.data(), host.size() * sizeof(T), LR_MEMCPY_HOST_TO_DEVICE));
  return static_cast<T*>(p);
}

// A device buffer of n elements plus guard elements, all poisoned with 0xFF.
void* poisoned(size_t bytes) {
  void* p = nullptr;
  LR_OK(lr_malloc(g_dev, bytes, &p));
  std::vector<unsigned char> poison(bytes, 0xFF);
  LR_OK(lr_memcpy(g_dev, p, poison.data(), bytes, LR_MEMCPY_HOST_TO_DEVICE));
  return p;
}

template <typename T>
std::vector<T> download(const void* p, size_t n) {
  std::vector<T> out(n);
  LR_OK(lr_memcpy(g_dev, out.data(), p, n * sizeof(T), LR_MEMCPY_DEVICE_TO_HOST));
  return out;
}

struct Args {
  std::vector<std::byte> bytes;
  template <typename T>
  Args& add(T v) {
    size_t align = alignof(T);
    size_t off = (bytes.size() + align - 1) / align * align;
    bytes.resize(off + sizeof(T));
    std::memcpy(bytes.data() + off, &v, sizeof(T));
    return *this;
  }
};

lr_launch_config_t config1d(uint32_t groups, uint32_t block, uint32_t shared = 0) {
  return lr_launch_config_t{{groups, 1, 1}, {block, 1, 1}, shared};
}

size_t count_poison(const unsigned char* p, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; ++i) c += p[i] == 0xFF;
  return c;
}

// vector_add_f32 from one image format; every element and the guard checked.
void check_vector_add(const std::vector<std::byte>& image) {
  const uint32_t n = (1u << 20) + 37, guard = 256;
  auto a = random_values<float>(n), b = random_values<float>(n);
  float* da = device_copy(a);
  float* db = device_copy(b);
  void* dc = poisoned((n + guard) * sizeof(float));
  lr_module_t* m = load(image);
  lr_kernel_t* k = get(m, "vector_add_f32");
  Args args;
  args.add(da).add(db).add(static_cast<float*>(dc)).add(n);
  auto cfg = config1d((n + 255) / 256, 256);
  LR_OK(lr_launch(k, &cfg, args.bytes.data(), args.bytes.size()));
  LR_OK(lr_synchronize(g_dev));
  auto c = download<float>(dc, n + guard);
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += c[i] != a[i] + b[i];
  CHECK_MESSAGE(bad == 0, bad, " of ", n, " elements differ");
  CHECK(count_poison(reinterpret_cast<unsigned char*>(c.data() + n), guard * sizeof(float)) ==
        guard * sizeof(float));
  LR_OK(lr_module_destroy(m));
  LR_OK(lr_free(g_dev, da));
  LR_OK(lr_free(g_dev, db));
  LR_OK(lr_free(g_dev, dc));
}

}  // namespace

TEST_CASE("device properties") {
  lr_device_properties_t p;
  LR_OK(lr_device_get_properties(g_dev, &p));
  CHECK(std::string(p.backend) == "cuda");
  CHECK(std::string(p.arch).rfind("sm_", 0) == 0);
  CHECK(p.compute_units > 0);
  CHECK(p.wave_size == 32);
  CHECK(p.max_workgroup_size >= 1024);
  CHECK(p.max_shared_memory_per_workgroup >= 48 * 1024);
  CHECK(p.memory_bytes > (1ull << 30));
  MESSAGE(p.name, " ", p.arch, ", ", p.compute_units, " SMs, ", p.memory_bytes >> 20, " MiB, shared/block ",
          p.max_shared_memory_per_workgroup);
}

TEST_CASE("vector_add from a cubin, PTX and a fatbin: every element") {
  SUBCASE("cubin") { check_vector_add(kernel_file("vector_add.sm_90.cubin")); }
  SUBCASE("ptx") { check_vector_add(kernel_file("vector_add.ptx")); }
  SUBCASE("fatbin") { check_vector_add(kernel_file("vector_add.fatbin")); }
}

TEST_CASE("vector_add_i32 wraps; saxpy within rounding; kernel properties") {
  lr_module_t* m = load(kernel_file("vector_add.sm_90.cubin"));
  const uint32_t n = 300001;
  auto a = random_values<int32_t>(n), b = random_values<int32_t>(n);
  int32_t* da = device_copy(a);
  int32_t* db = device_copy(b);
  void* dc = poisoned(n * sizeof(int32_t));
  Args args;
  args.add(da).add(db).add(static_cast<int32_t*>(dc)).add(n);
  auto cfg = config1d((n + 127) / 128, 128);
  LR_OK(lr_launch(get(m, "vector_add_i32"), &cfg, args.bytes.data(), args.bytes.size()));
  auto c = download<int32_t>(dc, n);
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i)
    bad += c[i] != static_cast<int32_t>(static_cast<uint32_t>(a[i]) + static_cast<uint32_t>(b[i]));
  CHECK(bad == 0);
  LR_OK(lr_module_destroy(m));

  lr_module_t* sm = load(kernel_file("saxpy.sm_90.cubin"));
  lr_kernel_t* k = get(sm, "saxpy");
  lr_kernel_properties_t kp;
  LR_OK(lr_kernel_get_properties(k, &kp));
  CHECK(kp.has_arg_layout == 1);
  CHECK(kp.explicit_arg_count == 4);
  CHECK(kp.explicit_kernarg_size == 28);
  lr_kernel_arg_t arg;
  LR_OK(lr_kernel_get_arg(k, 3, &arg));
  CHECK(arg.offset == 24);
  CHECK(arg.size == 4);

  auto x = random_values<float>(n), y = random_values<float>(n);
  float* dx = device_copy(x);
  float* dy = device_copy(y);
  float alpha = 1.75f;
  Args sa;
  sa.add(alpha).add(dx).add(dy).add(n);
  CHECK(sa.bytes.size() == 28);
  LR_OK(lr_launch(k, &cfg, sa.bytes.data(), sa.bytes.size()));
  auto out = download<float>(dy, n);
  bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    float fused = std::fma(alpha, x[i], y[i]), plain = alpha * x[i] + y[i];
    bad += out[i] != fused && out[i] != plain;
  }
  CHECK_MESSAGE(bad == 0, bad, " saxpy elements differ");

  // Wrong argument size: a clear INVALID_ARGUMENT, not a launch of garbage.
  CHECK(lr_launch(k, &cfg, sa.bytes.data(), 20) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("28 bytes") != std::string::npos);
  // Unknown kernel lists what the module holds.
  lr_kernel_t* none = nullptr;
  CHECK(lr_kernel_get(sm, "nope", &none) == LR_ERROR_NOT_FOUND);
  CHECK(std::string(lr_last_error_message()).find("saxpy") != std::string::npos);
  LR_OK(lr_module_destroy(sm));
  for (void* p : {(void*)da, (void*)db, dc, (void*)dx, (void*)dy}) LR_OK(lr_free(g_dev, p));
}

TEST_CASE("transpose with dynamic shared memory, also above 48 KiB") {
  lr_module_t* m = load(kernel_file("transpose.sm_90.cubin"));
  lr_kernel_t* k = get(m, "transpose_f32");
  const uint32_t rows = 1000, cols = 777, tile = 32;
  auto in = random_values<float>(size_t(rows) * cols);
  float* din = device_copy(in);
  for (uint32_t shared : {uint32_t(tile * (tile + 1) * 4), uint32_t(100 * 1024)}) {
    CAPTURE(shared);
    void* dout = poisoned(size_t(rows) * cols * 4);
    Args args;
    args.add(din).add(static_cast<float*>(dout)).add(rows).add(cols);
    lr_launch_config_t cfg{{(cols + tile - 1) / tile, (rows + tile - 1) / tile, 1}, {tile, tile, 1}, shared};
    LR_OK(lr_launch(k, &cfg, args.bytes.data(), args.bytes.size()));
    auto out = download<float>(dout, size_t(rows) * cols);
    size_t bad = 0;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c) bad += out[size_t(c) * rows + r] != in[size_t(r) * cols + c];
    CHECK(bad == 0);
    LR_OK(lr_free(g_dev, dout));
  }
  LR_OK(lr_free(g_dev, din));
  LR_OK(lr_module_destroy(m));
}

TEST_CASE("reduce: per-workgroup sums") {
  lr_module_t* m = load(kernel_file("reduce.sm_90.cubin"));
  const uint32_t n = 1u << 20, block = 512, groups = n / block;
  auto in = random_values<float>(n);
  float* din = device_copy(in);
  void* dp = poisoned(groups * 4);
  Args args;
  args.add(din).add(static_cast<float*>(dp)).add(n);
  auto cfg = config1d(groups, block);
  LR_OK(lr_launch(get(m, "reduce_sum_f32"), &cfg, args.bytes.data(), args.bytes.size()));
  auto partial = download<float>(dp, groups);
  size_t bad = 0;
  for (uint32_t g = 0; g < groups; ++g) {
    double ref = 0, mag = 0;
    for (uint32_t i = 0; i < block; ++i) ref += in[g * block + i], mag += std::fabs(in[g * block + i]);
    bad += std::fabs(partial[g] - ref) > 1e-5 * mag + 1e-5;
  }
  CHECK(bad == 0);
  LR_OK(lr_free(g_dev, din));
  LR_OK(lr_free(g_dev, dp));
  LR_OK(lr_module_destroy(m));
}

TEST_CASE("queues, events, cross-queue dependencies and async copies") {
  lr_module_t* m = load(kernel_file("vector_add.sm_90.cubin"));
  lr_kernel_t* add = get(m, "vector_add_f32");
  const uint32_t n = 1u << 24;  // 64 MiB per buffer: long enough to race without the dependency
  const size_t bytes = size_t(n) * 4;
  float *ha = nullptr, *hb = nullptr, *hc = nullptr;
  LR_OK(lr_host_malloc(g_dev, bytes, reinterpret_cast<void**>(&ha)));
  LR_OK(lr_host_malloc(g_dev, bytes, reinterpret_cast<void**>(&hb)));
  LR_OK(lr_host_malloc(g_dev, bytes, reinterpret_cast<void**>(&hc)));
  auto a = random_values<float>(n), b = random_values<float>(n);
  std::memcpy(ha, a.data(), bytes);
  std::memcpy(hb, b.data(), bytes);
  std::memset(hc, 0xFF, bytes);
  void *da, *db, *dc, *dd;
  for (void** p : {&da, &db, &dc, &dd}) LR_OK(lr_malloc(g_dev, bytes, p));

  lr_queue_t *q1, *q2;
  LR_OK(lr_queue_create(g_dev, &q1));
  LR_OK(lr_queue_create(g_dev, &q2));
  lr_event_t *e_copy, *e_add, *e_start, *e_end, *e_d2d;
  for (lr_event_t** e : {&e_copy, &e_add, &e_start, &e_end, &e_d2d}) LR_OK(lr_event_create(g_dev, e));

  // Async H2D of a (signal: timed) then b on the default queue.
  LR_OK(lr_memcpy_async(g_dev, da, ha, bytes, LR_MEMCPY_HOST_TO_DEVICE, nullptr));
  LR_OK(lr_memcpy_async(g_dev, db, hb, bytes, LR_MEMCPY_HOST_TO_DEVICE, e_copy));
  // q1: c = a + b after the copies.
  Args args;
  args.add(static_cast<float*>(da)).add(static_cast<float*>(db)).add(static_cast<float*>(dc)).add(n);
  auto cfg = config1d(n / 256, 256);
  LR_OK(lr_event_record_on_queue(e_start, q1));
  LR_OK(lr_launch_on_queue_with_dependencies(q1, add, &cfg, args.bytes.data(), args.bytes.size(), &e_copy, 1));
  LR_OK(lr_event_record_on_queue(e_add, q1));
  LR_OK(lr_event_record_on_queue(e_end, q1));
  // D2D c -> d on the copy path, after e_add only (no implicit dependency).
  LR_OK(lr_memcpy_async_with_dependencies(g_dev, dd, dc, bytes, LR_MEMCPY_DEVICE_TO_DEVICE, e_d2d, &e_add, 1));
  // q2: D2H of d after the D2D.
  (void)q2;
  LR_OK(lr_memcpy_async_with_dependencies(g_dev, hc, dd, bytes, LR_MEMCPY_DEVICE_TO_HOST, nullptr, &e_d2d, 1));
  LR_OK(lr_synchronize(g_dev));
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += hc[i] != a[i] + b[i];
  CHECK_MESSAGE(bad == 0, bad, " elements wrong after the async chain");

  uint64_t copy_ns = 0, d2d_ns = 0, elapsed = 0;
  LR_OK(lr_event_duration_ns(e_copy, &copy_ns));
  LR_OK(lr_event_duration_ns(e_d2d, &d2d_ns));
  LR_OK(lr_event_elapsed_time_ns(e_start, e_end, &elapsed));
  CHECK(copy_ns > 0);
  CHECK(d2d_ns > 0);
  CHECK(elapsed > 0);
  MESSAGE("64 MiB H2D pinned: ", copy_ns / 1000, " us (", double(bytes) / copy_ns, " GB/s); D2D: ",
          d2d_ns / 1000, " us (", double(bytes) / d2d_ns, " GB/s); vector_add: ", elapsed / 1000, " us");
  // An event that only marked a point has no duration.
  uint64_t none = 0;
  CHECK(lr_event_duration_ns(e_start, &none) == LR_ERROR_NOT_SUPPORTED);

  // Cross-queue: q2 launches c = d + d after q1's event; q1 first rewrites d.
  std::vector<float> ones(n, 1.0f);
  std::memcpy(ha, ones.data(), bytes);
  lr_event_t* e_q1 = nullptr;
  LR_OK(lr_event_create(g_dev, &e_q1));
  LR_OK(lr_memcpy_async(g_dev, dd, ha, bytes, LR_MEMCPY_HOST_TO_DEVICE, nullptr));
  LR_OK(lr_synchronize(g_dev));
  Args twice;  // d = d + d, four times on q1, then c = d + d on q2 after them
  twice.add(static_cast<float*>(dd)).add(static_cast<float*>(dd)).add(static_cast<float*>(dd)).add(n);
  for (int i = 0; i < 4; ++i) LR_OK(lr_launch_on_queue(q1, add, &cfg, twice.bytes.data(), twice.bytes.size()));
  LR_OK(lr_event_record_on_queue(e_q1, q1));
  Args to_c;
  to_c.add(static_cast<float*>(dd)).add(static_cast<float*>(dd)).add(static_cast<float*>(dc)).add(n);
  LR_OK(lr_launch_on_queue_with_dependencies(q2, add, &cfg, to_c.bytes.data(), to_c.bytes.size(), &e_q1, 1));
  LR_OK(lr_queue_synchronize(q2));
  auto c = download<float>(dc, n);
  bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += c[i] != 32.0f;
  CHECK_MESSAGE(bad == 0, bad, " elements wrong: q2 did not wait for q1");
  LR_OK(lr_queue_synchronize(q1));

  lr_memory_stats_t stats;
  LR_OK(lr_get_memory_stats(g_dev, &stats));
  CHECK(stats.pinned_host_live_bytes >= 3 * bytes);
  CHECK(stats.h2d_copy_bytes >= 3 * bytes);

  for (lr_event_t* e : {e_copy, e_add, e_start, e_end, e_d2d, e_q1}) LR_OK(lr_event_destroy(e));
  LR_OK(lr_queue_destroy(q1));
  LR_OK(lr_queue_destroy(q2));
  for (void* p : {da, db, dc, dd}) LR_OK(lr_free(g_dev, p));
  for (float* p : {ha, hb, hc}) LR_OK(lr_host_free(g_dev, p));
  LR_OK(lr_module_destroy(m));
}

TEST_CASE("waits that block at once (spin 0) or outlast a short spin still see all the work") {
  lr_module_t* m = load(kernel_file("vector_add.sm_90.cubin"));
  lr_kernel_t* add = get(m, "vector_add_i32");
  const uint32_t n = 1u << 24;
  const size_t bytes = size_t(n) * 4;
  auto a = random_values<int32_t>(n), b = random_values<int32_t>(n);
  int32_t* da = device_copy(a);
  int32_t* db = device_copy(b);
  int32_t* host = nullptr;
  LR_OK(lr_host_malloc(g_dev, bytes, reinterpret_cast<void**>(&host)));
  lr_event_t* done = nullptr;
  LR_OK(lr_event_create(g_dev, &done));
  const uint32_t chain = 40;  // c = a + b, then c += b: the result depends on every launch
  auto cfg = config1d(n / 256, 256);
  for (uint64_t spin : {uint64_t(0), uint64_t(20)}) {
    LR_OK(lr_set_wait_spin_us(spin));
    auto* dc = static_cast<int32_t*>(poisoned(bytes));
    Args first, next;
    first.add(da).add(db).add(dc).add(n);
    next.add(dc).add(db).add(dc).add(n);
    LR_OK(lr_launch(add, &cfg, first.bytes.data(), first.bytes.size()));
    for (uint32_t i = 1; i < chain; ++i) LR_OK(lr_launch(add, &cfg, next.bytes.data(), next.bytes.size()));
    LR_OK(lr_synchronize(g_dev));
    // No dependency on the launches: the copy sees all their results only
    // if lr_synchronize waited for every one.
    std::memset(host, 0xFF, bytes);
    LR_OK(lr_memcpy_async_with_dependencies(g_dev, host, dc, bytes, LR_MEMCPY_DEVICE_TO_HOST, done, nullptr, 0));
    LR_OK(lr_event_synchronize(done));
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i)
      bad += host[i] != static_cast<int32_t>(static_cast<uint32_t>(a[i]) + chain * static_cast<uint32_t>(b[i]));
    CHECK_MESSAGE(bad == 0, "spin ", spin, " us: ", bad, " elements wrong");
    LR_OK(lr_free(g_dev, dc));
  }
  LR_OK(lr_set_wait_spin_us(2000));
  LR_OK(lr_event_destroy(done));
  LR_OK(lr_host_free(g_dev, host));
  LR_OK(lr_free(g_dev, da));
  LR_OK(lr_free(g_dev, db));
  LR_OK(lr_module_destroy(m));
}

TEST_CASE("sync copies in all three directions, pageable memory") {
  const size_t n = (3u << 20) + 5;
  std::vector<unsigned char> src(n), back(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  void *d1, *d2;
  LR_OK(lr_malloc(g_dev, n, &d1));
  LR_OK(lr_malloc(g_dev, n, &d2));
  LR_OK(lr_memcpy(g_dev, d1, src.data(), n, LR_MEMCPY_HOST_TO_DEVICE));
  LR_OK(lr_memcpy(g_dev, d2, d1, n, LR_MEMCPY_DEVICE_TO_DEVICE));
  LR_OK(lr_memcpy(g_dev, back.data(), d2, n, LR_MEMCPY_DEVICE_TO_HOST));
  CHECK(back == src);
  LR_OK(lr_free(g_dev, d1));
  LR_OK(lr_free(g_dev, d2));
}

TEST_CASE("images the device cannot run: arch named, JIT log shown") {
  lr_device_properties_t p;
  LR_OK(lr_device_get_properties(g_dev, &p));
  auto cubin = kernel_file("saxpy.sm_90.cubin");
  // Rewrite the SM in e_flags (ELF ABI 8: bits 8..15) to sm_80.
  uint32_t flags;
  std::memcpy(&flags, cubin.data() + 48, 4);
  flags = (flags & ~0xff00u) | (80u << 8);
  std::memcpy(cubin.data() + 48, &flags, 4);
  lr_module_t* m = nullptr;
  CHECK(lr_module_load(g_dev, cubin.data(), cubin.size(), &m) == LR_ERROR_INVALID_IMAGE);
  std::string msg = lr_last_error_message();
  MESSAGE(msg);
  CHECK(msg.find("sm_80") != std::string::npos);
  CHECK(msg.find(p.arch) != std::string::npos);

  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                    ".visible .entry broken(.param .u64 p)\n{\n  this is not ptx;\n}\n";
  CHECK(lr_module_load(g_dev, ptx.data(), ptx.size(), &m) == LR_ERROR_INVALID_IMAGE);
  msg = lr_last_error_message();
  MESSAGE(msg);
  CHECK(msg.find("JIT log") != std::string::npos);

  auto host_so = kernel_file("saxpy.host.so");
  CHECK(lr_module_load(g_dev, host_so.data(), host_so.size(), &m) == LR_ERROR_INVALID_IMAGE);
}

namespace {

// The faulting kernel: KERNEL_FAULT naming it at the next sync; later calls
// fail too instead of hanging; shutdown returns.
int run_fault_check() {
  // No doctest assertions here: this runs outside a test case.
  std::ifstream in(dir_from("LRRT_TEST_FAULT_DIR", LRRT_TEST_FAULT_DIR) + "/fault_kernel.sm_90.cubin",
                   std::ios::binary);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (image.empty()) {
    std::printf("FAIL: fault_kernel.sm_90.cubin not found\n");
    return 1;
  }
  lr_module_t* m = nullptr;
  if (lr_module_load(g_dev, image.data(), image.size(), &m) != LR_SUCCESS) {
    std::printf("FAIL: load: %s\n", lr_last_error_message());
    return 1;
  }
  lr_kernel_t* k = nullptr;
  lr_kernel_get(m, "write_bad_pointer", &k);
  struct { uint64_t address; uint32_t value; } args{16, 7};
  auto cfg = config1d(4, 64);
  lr_status_t s = lr_launch(k, &cfg, &args, 12);
  std::printf("launch: %s %s\n", lr_status_string(s), lr_last_error_message());
  s = lr_synchronize(g_dev);
  std::string msg = lr_last_error_message();
  std::printf("synchronize: %s: %s\n", lr_status_string(s), msg.c_str());
  int rc = 0;
  if (s != LR_ERROR_KERNEL_FAULT) {
    std::printf("FAIL: expected LR_ERROR_KERNEL_FAULT\n");
    rc = 1;
  }
  if (msg.find("write_bad_pointer") == std::string::npos) {
    std::printf("FAIL: the message does not name the kernel\n");
    rc = 1;
  }
  void* p = nullptr;
  s = lr_malloc(g_dev, 1024, &p);
  std::printf("malloc after the fault: %s: %s\n", lr_status_string(s), lr_last_error_message());
  if (s == LR_SUCCESS) {
    s = lr_synchronize(g_dev);
    std::printf("synchronize after the fault: %s: %s\n", lr_status_string(s), lr_last_error_message());
    if (s == LR_SUCCESS) {
      std::printf("FAIL: the device still reports success after a fault\n");
      rc = 1;
    }
  }
  s = lr_shutdown();
  std::printf("shutdown: %s\n", lr_status_string(s));
  std::printf(rc == 0 ? "PASS\n" : "FAIL\n");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // output survives a crash
  alarm(280);  // a hang fails the test rather than stalling the suite
  if (lr_init() != LR_SUCCESS) {
    std::printf("SKIP: lr_init failed: %s\n", lr_last_error_message());
    return 77;
  }
  if (lr_device_select("cuda", 0, &g_dev) != LR_SUCCESS) {
    std::string why = lr_last_error_message();
    uint32_t count = 0;
    lr_backend_count(&count);
    for (uint32_t i = 0; i < count; ++i) {
      lr_backend_info_t info;
      if (lr_backend_get_info(i, &info) == LR_SUCCESS && std::string(info.name) == "cuda")
        why = info.message;
    }
    std::printf("SKIP: no usable cuda device: %s\n", why.c_str());
    lr_shutdown();
    return 77;
  }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--fault") return run_fault_check();
  doctest::Context context(argc, argv);
  int rc = context.run();
  lr_shutdown();
  return rc;
}
