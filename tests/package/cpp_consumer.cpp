// A C++ program that uses the installed lrrt.hpp (the header-only wrapper
// over liblrrt.so): saxpy on the host backend from fresh random inputs, every
// element checked, and a missing kernel reported as lrrt::Error.
//   cpp_consumer KERNEL_DIR
#include <lrrt/lrrt.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

int run(const std::string& kernel_dir) {
  lrrt::Runtime runtime;
  lrrt::Device device = lrrt::Device::select("host");
  lrrt::Module module(device, read_file(kernel_dir + "/saxpy.host.so"));

  try {
    (void)module.kernel("no_such_kernel");
    std::fprintf(stderr, "cpp_consumer: a missing kernel did not throw\n");
    return 1;
  } catch (const lrrt::Error& e) {
    if (e.status() != LR_ERROR_NOT_FOUND) {
      std::fprintf(stderr, "cpp_consumer: a missing kernel threw status %d: %s\n", e.status(), e.what());
      return 1;
    }
  }
  lrrt::Kernel saxpy = module.kernel("saxpy");

  const uint32_t n = 65537;
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-10.f, 10.f);
  std::vector<float> x(n), y(n), out(n, std::nanf(""));
  for (auto& v : x) v = dist(rng);
  for (auto& v : y) v = dist(rng);
  const float a = dist(rng);

  lrrt::DeviceBuffer dx(device, n * sizeof(float)), dy(device, n * sizeof(float));
  lrrt::copy_to_device(dx, x);
  lrrt::copy_to_device(dy, y);
  struct {
    float a;
    const void* x;
    void* y;
    uint32_t n;
  } args{a, dx.data(), dy.data(), n};
  lrrt::launch(saxpy, lrrt::launch_config({(n + 127) / 128, 1, 1}, {128, 1, 1}), args);
  lrrt::copy_to_host(out, dy);  // waits for the launch

  uint32_t wrong = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float want = a * x[i] + y[i];
    if (!(std::fabs(out[i] - want) <= 1e-5f * std::fabs(want) + 1e-5f) && wrong++ < 5)
      std::fprintf(stderr, "cpp_consumer: y[%u] = %g, expected %g (seed %llu)\n", i, out[i], want,
                   static_cast<unsigned long long>(seed));
  }
  if (wrong) {
    std::fprintf(stderr, "cpp_consumer: %u of %u elements wrong\n", wrong, n);
    return 1;
  }
  std::printf("cpp_consumer: saxpy on %u elements on %s: all correct\n", n, device.name().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cpp_consumer KERNEL_DIR\n");
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_consumer: %s\n", e.what());
    return 1;
  }
}
