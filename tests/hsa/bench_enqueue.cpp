// Host-side cost of enqueuing one dispatch on the hsa backend (kernarg
// packing, packet write, header release store, doorbell), measured against
// the stand-in libhsa-runtime64 (LRRT_HSA_LIBRARY, default: the built one).
//
//   hsa_bench_enqueue [dispatches]   prints ns/dispatch for several batch sizes
//
// Reference points (light-rocm-runtime): 8.7 us per launch through ROCr,
// 0.49 us on its direct-KFD path. The stand-in's packet processor runs the
// (empty) host kernel on another thread, so "enqueue" excludes execution but
// the ring may fill: batches stay below the queue size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "backend.hpp"

namespace lrrt::rt {
std::unique_ptr<Backend> make_hsa_backend();
}

int main(int argc, char** argv) {
  using namespace lrrt::rt;
  using Clock = std::chrono::steady_clock;
  int total = argc > 1 ? std::atoi(argv[1]) : 20000;
  setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 0);
  setenv("LRRT_KERNEL_DIR", LRRT_TEST_KERNEL_DIR, 0);
  auto backend = make_hsa_backend();
  auto st = backend->initialize();
  if (!st.usable) {
    std::fprintf(stderr, "hsa backend unusable: %s\n", st.message.c_str());
    return 1;
  }
  auto device = backend->open_device(0);
  std::ifstream f(std::string(LRRT_TEST_KERNEL_DIR) + "/empty.gfx1100.hsaco", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  if (bytes.empty()) {
    std::fprintf(stderr, "empty.gfx1100.hsaco not found in %s\n", LRRT_TEST_KERNEL_DIR);
    return 1;
  }
  auto module = device->load_module(std::as_bytes(std::span(bytes)));
  Kernel& k = module->kernel("empty");
  auto queue = device->create_queue();
  LaunchConfig c;
  c.grid = {1, 1, 1};
  c.block = {64, 1, 1};
  uint32_t arg = 0;
  auto args = std::as_bytes(std::span(&arg, 1));

  for (int i = 0; i < 200; ++i) queue->launch(k, c, args, {}, nullptr);  // warm-up
  queue->synchronize();

  std::printf("hsa enqueue cost on the stand-in (%s)\n", st.message.c_str());
  for (int batch : {1, 16, 48}) {
    std::vector<double> per;
    int done = 0;
    while (done < total) {
      auto t0 = Clock::now();
      for (int i = 0; i < batch; ++i) queue->launch(k, c, args, {}, nullptr);
      auto t1 = Clock::now();
      queue->synchronize();
      per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / batch);
      done += batch;
    }
    std::sort(per.begin(), per.end());
    std::printf("  batch %2d: median %.0f ns/dispatch, p10 %.0f, p90 %.0f (%zu batches)\n", batch,
                per[per.size() / 2], per[per.size() / 10], per[per.size() * 9 / 10], per.size());
  }
  std::printf("  reference: light-rocm-runtime 8700 ns (ROCr), 490 ns (direct KFD)\n");
  return 0;
}
