// Shared by the replay tests that run graphs on devices (test_graph_replay*,
// test_graph_order, test_hsa_graph*): kernel files, the hsa stand-in, random
// whole-number inputs with a seed that can be repeated, argument structs.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lrrt/lrrt.hpp"

namespace lrrt::test {

// The build's folders, as every GPU test finds them (tests/cts/cts.cpp,
// tests/cuda, scripts/gpu-check): $LRRT_TEST_KERNEL_DIR for kernels/ and
// $LRRT_CTS_TEST_KERNEL_DIR for tests/kernels/ when set, else where this
// build put them. A build configured in one folder and run from another
// (the GPU machine) finds its files through the variables.
inline std::string dir_from_env(const char* variable, const std::string& built) {
  const char* v = std::getenv(variable);
  return v && *v ? v : built;
}
inline std::string kernel_dir() { return dir_from_env("LRRT_TEST_KERNEL_DIR", LRRT_TEST_KERNEL_DIR); }
inline std::string test_kernel_dir() {
  const std::string built = LRRT_TEST_ERROR_KERNELS;  // <dir>/error_kernels.host.so
  return dir_from_env("LRRT_CTS_TEST_KERNEL_DIR", built.substr(0, built.rfind('/')));
}

// The build's kernel file of `source` for a backend.
inline std::string kernel_file(const std::string& backend, const std::string& source) {
  const char* suffix = backend == "hsa" ? ".gfx1100.hsaco" : backend == "cuda" ? ".ptx" : ".host.so";
  return kernel_dir() + "/" + source + suffix;
}

// The test kernels (tests/kernels/error_kernels.cpp) for a backend: the host
// library, or the PTX nvcc built next to it.
inline std::string error_kernels_file(const std::string& backend = "host") {
  return test_kernel_dir() + (backend == "cuda" ? "/error_kernels.ptx" : "/error_kernels.host.so");
}

#if defined(LRRT_TEST_HSA)
// The stand-in library: $LRRT_TEST_HSA_STANDIN when set (a pack on the GPU
// machine, scripts/gpu-pack), else where this build put it.
inline std::string hsa_standin() { return dir_from_env("LRRT_TEST_HSA_STANDIN", LRRT_TEST_HSA_STANDIN); }
#endif

// Before lr_init: the hsa backend loads the stand-in and its kernels.
inline void point_hsa_at_standin() {
#if defined(LRRT_TEST_HSA)
  setenv("LRRT_HSA_LIBRARY", hsa_standin().c_str(), 1);
  setenv("LRRT_HSA_STANDIN_KERNEL_DIR", kernel_dir().c_str(), 1);
  setenv("LRRT_HSA_TIMEOUT_MS", "20000", 1);
#endif
}

inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing kernel file ", path);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

// One generator per test process, seeded freshly unless LRRT_TEST_SEED names
// a seed; the seed is printed so that a failure can be repeated.
inline std::mt19937& rng() {
  static std::mt19937 gen([] {
    const char* fixed = std::getenv("LRRT_TEST_SEED");
    const unsigned seed = fixed ? unsigned(std::strtoul(fixed, nullptr, 10)) : std::random_device{}();
    std::fprintf(stderr, "replay tests: random seed %u (LRRT_TEST_SEED=%u repeats it)\n", seed, seed);
    return seed;
  }());
  return gen;
}

// Whole numbers as floats: every sum the tests make stays exact (< 2^24), so
// results compare for equality whatever the order or contraction of the math.
inline void fill_whole(std::span<float> v, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  for (auto& x : v) x = float(d(rng()));
}
inline std::vector<float> random_whole(size_t n, int lo, int hi) {
  std::vector<float> v(n);
  fill_whole(v, lo, hi);
  return v;
}

inline const float kPoison = std::numeric_limits<float>::quiet_NaN();

// The explicit arguments of kernels/saxpy, vector_add and reduce, packed.
struct SaxpyArgs {
  float a;
  const void* x;
  void* y;
  uint32_t n;
};
struct AddArgs {
  const void* a;
  const void* b;
  void* c;
  uint32_t n;
};
struct ReduceArgs {
  const void* in;
  void* partial;
  uint32_t n;
};

inline lr_launch_config_t config_for(uint32_t n, uint32_t block) {
  return {{(n + block - 1) / block, 1, 1}, {block, 1, 1}, 0};
}

// The status an lrrt call threw (LR_SUCCESS when none), and its message.
inline lr_status_t status_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const lrrt::Error& e) {
    if (message) *message = e.what();
    return e.status();
  }
  return LR_SUCCESS;
}

}  // namespace lrrt::test
