// The cuda backend through the C ABI on a real GPU, what only cuda does:
// device properties, cubin, PTX and fatbin modules (random inputs, poisoned
// outputs, every element checked), wrong-arch and bad-PTX messages. Behaviour
// every backend shares is in the conformance suite (tests/cts, run as
// cts.cuda.*). Exits 77 (skip) without a cuda device.
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

// Derived access on the GPU (docs/access.md): the committed Triton 3.6 sm_90
// add_kernel cubin, given its IR, records two dependent steps with no access
// declared; the plan derives x and y read, out write from the IR and the RAW
// edge between them, and the replay is exact.
TEST_CASE("derived access: a Triton cubin given its IR replays a dependent pair exactly") {
  lr_device_properties_t p;
  LR_OK(lr_device_get_properties(g_dev, &p));
  if (std::string(p.arch) < "sm_90") {
    MESSAGE("the committed Triton cubin is sm_90; device is ", p.arch);
    return;
  }
  const std::string entry = dir_from("LRRT_TEST_SOURCE_DIR", LRRT_TEST_SOURCE_DIR) + "/tests/triton/entries/sm_90/add_kernel/";
  const auto cubin = read_file(entry + "add_kernel.cubin");
  const auto ir_bytes = read_file(entry + "add_kernel.ttir");
  const std::string ir(reinterpret_cast<const char*>(ir_bytes.data()), ir_bytes.size());
  lr_module_t* m = load(cubin);
  lr_kernel_t* k = get(m, "add_kernel");
  LR_OK(lr_kernel_set_triton_ir(k, ir.c_str()));
  const uint32_t n = (1u << 20) + 37;
  auto x = random_values<float>(n), y = random_values<float>(n);
  float* dx = device_copy(x);
  float* dy = device_copy(y);
  void* dt = poisoned(n * sizeof(float));
  void* dout = poisoned(n * sizeof(float));
  // add_kernel(x, y, out, n) then Triton 3.6's global and profile scratch (null).
  auto args = [&](const void* a, const void* b, void* out) {
    Args r;
    r.add(a).add(b).add(out).add(int32_t(n)).add(static_cast<void*>(nullptr)).add(static_cast<void*>(nullptr));
    return r;
  };
  const Args first = args(dx, dy, dt), second = args(dt, dy, dout);
  const auto cfg = config1d((n + 255) / 256, 128);  // BLOCK 256, num_warps 4
  lr_graph_t* g = nullptr;
  LR_OK(lr_graph_create(g_dev, &g));
  LR_OK(lr_graph_add_kernel_ex(g, k, &cfg, first.bytes.data(), first.bytes.size(), nullptr, 0,
                               LR_GRAPH_KERNEL_DERIVE_ACCESS, nullptr));
  LR_OK(lr_graph_add_kernel_ex(g, k, &cfg, second.bytes.data(), second.bytes.size(), nullptr, 0,
                               LR_GRAPH_KERNEL_DERIVE_ACCESS, nullptr));
  lr_graph_exec_t* exec = nullptr;
  LR_OK(lr_graph_instantiate(g, nullptr, &exec));
  size_t length = 0;
  LR_OK(lr_graph_exec_get_plan(exec, nullptr, 0, &length));
  std::string plan(length + 1, '\0');
  LR_OK(lr_graph_exec_get_plan(exec, plan.data(), plan.size(), &length));
  CHECK(plan.find(R"("mode":"write","bytes")") != std::string::npos);
  CHECK(plan.find(R"("source":"ttir")") != std::string::npos);
  CHECK(plan.find(R"("source":"default")") == std::string::npos);
  CHECK(plan.find(R"("from":0,"to":1)") != std::string::npos);
  for (int replay = 0; replay < 3; ++replay) {
    LR_OK(lr_graph_exec_launch(exec, nullptr));
    LR_OK(lr_graph_exec_synchronize(exec));
    const auto out = download<float>(dout, n);
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) bad += out[i] != (x[i] + y[i]) + y[i];
    CHECK_MESSAGE(bad == 0, bad, " of ", n, " elements differ");
    std::vector<unsigned char> poison(n * sizeof(float), 0xFF);
    LR_OK(lr_memcpy(g_dev, dout, poison.data(), poison.size(), LR_MEMCPY_HOST_TO_DEVICE));
    LR_OK(lr_memcpy(g_dev, dt, poison.data(), poison.size(), LR_MEMCPY_HOST_TO_DEVICE));
  }
  LR_OK(lr_graph_exec_destroy(exec));
  LR_OK(lr_graph_destroy(g));
  LR_OK(lr_module_destroy(m));
  LR_OK(lr_free(g_dev, dx));
  LR_OK(lr_free(g_dev, dy));
  LR_OK(lr_free(g_dev, dt));
  LR_OK(lr_free(g_dev, dout));
}

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
  doctest::Context context(argc, argv);
  int rc = context.run();
  lr_shutdown();
  return rc;
}
