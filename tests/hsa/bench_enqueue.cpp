// Host-side cost of enqueuing one dispatch on the hsa backend (kernarg
// packing, packet write, header release store, doorbell), measured against
// the stand-in libhsa-runtime64 (LRRT_HSA_LIBRARY, default: the built one).
// Three ways: lrrt's per-launch path (HsaQueue::launch), the raw AQL loop
// (a prebuilt packet written per dispatch: write-index add, body, header,
// doorbell) and the retained replay of a chain of empty kernels (the hsa
// lowering: one block per replay), host time of the launch call divided by
// the packets it writes. Issue 10's target for the replay: <= 30 ns/packet.
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
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "backend.hpp"
#include "lrrt/lrrt.hpp"
#include "graph/exec.hpp"
#include "graph/graph.hpp"
#include "hsa/aql.hpp"
#include "hsa/hsa_device.hpp"
#include "hsa/hsa_executable.hpp"
#include "hsa/kernargs.hpp"

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

  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto percentile = [](std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[size_t(double(v.size() - 1) * p)];
  };

  // The raw AQL loop: a dispatch packet built once, written per dispatch.
  {
    auto& dev = dynamic_cast<hsa::HsaDevice&>(*device);
    auto& hk = dynamic_cast<hsa::HsaKernel&>(k);
    const auto& api = dev.api();
    hsa_queue_t* q = nullptr;
    if (api.hsa_queue_create(dev.agent(), dev.queue_size(), HSA_QUEUE_TYPE_SINGLE, nullptr, nullptr, UINT32_MAX,
                             UINT32_MAX, &q) != HSA_STATUS_SUCCESS) {
      std::fprintf(stderr, "hsa_queue_create failed\n");
      return 1;
    }
    auto* kernarg = static_cast<std::byte*>(dev.allocate_kernarg(std::max<size_t>(hk.kernarg_size, 64)));
    hsa::pack_kernargs(hk.info(), c, args, std::span<std::byte>(kernarg, std::max<size_t>(hk.kernarg_size, 64)));
    hsa_signal_t done{};
    api.hsa_signal_create(1, 0, nullptr, &done);
    alignas(64) hsa_kernel_dispatch_packet_t image{};
    hsa::encode_dispatch(&image, c, hk.kernel_object, kernarg, hk.group_segment_size, hk.private_segment_size,
                         hsa_signal_t{0});
    const uint16_t header = hsa::kDispatchHeader, setup = hsa::dispatch_setup(1);
    const uint32_t batch = 1024;
    std::vector<double> per;
    for (int rep = 0; rep < std::max(4, total / int(batch)); ++rep) {
      auto t0 = Clock::now();
      for (uint32_t i = 0; i < batch; ++i) {
        uint64_t idx = api.hsa_queue_add_write_index_relaxed(q, 1);
        while (idx - api.hsa_queue_load_read_index_scacquire(q) >= q->size) {
        }
        auto* slot = static_cast<std::byte*>(q->base_address) + (idx & (q->size - 1)) * hsa::kAqlPacketBytes;
        std::memcpy(slot + 4, reinterpret_cast<const std::byte*>(&image) + 4, hsa::kAqlPacketBytes - 4);
        hsa::publish_packet(slot, header, setup);
        api.hsa_signal_store_screlease(q->doorbell_signal, hsa_signal_value_t(idx));
      }
      auto t1 = Clock::now();
      // A marker at the end: the ring drains before the next batch.
      api.hsa_signal_store_relaxed(done, 1);
      uint64_t idx = api.hsa_queue_add_write_index_relaxed(q, 1);
      auto* slot = static_cast<std::byte*>(q->base_address) + (idx & (q->size - 1)) * hsa::kAqlPacketBytes;
      hsa::encode_barrier_and(reinterpret_cast<hsa_barrier_and_packet_t*>(slot), {}, done);
      hsa::publish_packet(slot, hsa::kBarrierAndHeader, 0);
      api.hsa_signal_store_screlease(q->doorbell_signal, hsa_signal_value_t(idx));
      while (api.hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) > 0) {
      }
      if (rep > 0) per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / batch);
    }
    std::printf("  raw AQL loop (one add, header store and doorbell per packet, batches of %u): median %.1f ns/packet, "
                "p10 %.1f, p90 %.1f\n",
                batch, median(per), percentile(per, 0.1), percentile(per, 0.9));
    api.hsa_queue_destroy(q);
    api.hsa_signal_destroy(done);
    dev.free_kernarg(kernarg);
  }

  // Retained replay: a chain of N empty kernels (explicit edges, so every
  // packet after the first has the barrier bit), one lane.
  for (uint32_t n : {16u, 256u, 1024u}) {
    graph::Graph g;
    for (uint32_t i = 0; i < n; ++i) {
      g.add_kernel(k, c, args, {});
      if (i) g.add_dependency(i - 1, i);
    }
    graph::AllocationTable none;
    none.finish();
    graph::Derived derived = graph::derive(g, none);
    graph::Lanes lanes = graph::assign_lanes(derived, 1);
    auto exec = device->instantiate_graph(graph::Lowering{g, derived, lanes});
    graph::Plan plan = graph::make_plan(g, derived, lanes, 1);
    exec->describe(plan);
    const size_t packets = plan.aql ? plan.aql->packet_count() : 0;
    std::vector<double> per;
    const int replays = std::max(20, total / int(n));
    for (int r = 0; r < replays; ++r) {
      exec->synchronize();  // the launch would wait for it: not the host's submission cost
      auto t0 = Clock::now();
      exec->launch(*queue, nullptr);
      auto t1 = Clock::now();
      if (r > 1) per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(packets));
    }
    exec->synchronize();
    std::printf("  replay (%s) of a %u-kernel chain, %zu packets: median %.1f ns/packet, p10 %.1f, p90 %.1f "
                "(%zu replays; the launch call's host time / packets)\n",
                plan.lowering.c_str(), n, packets, median(per), percentile(per, 0.1), percentile(per, 0.9), per.size());
  }

  // The same 1024-kernel chain through the C ABI: lr_graph_exec_launch's
  // host time (handle checks, the exec's lock, the lowering) / packets.
  {
    lrrt::Runtime runtime;
    lrrt::Device dev = lrrt::Device::select("hsa");
    lrrt::Module m(dev, std::as_bytes(std::span(bytes)));
    lrrt::Kernel empty = m.kernel("empty");
    lrrt::Graph g(dev);
    const uint32_t n = 1024;
    const lr_launch_config_t cfg{{1, 1, 1}, {64, 1, 1}, 0};
    for (uint32_t i = 0; i < n; ++i) {
      g.add_kernel(empty, cfg, args, std::span<const lr_graph_access_t>{});
      if (i) g.add_dependency(i - 1, i);
    }
    lr_graph_instantiate_options_t one{1, 0};
    lrrt::GraphExec exec = g.instantiate(&one);
    const size_t packets = n + 1;  // the chain and the terminal barrier-AND
    std::vector<double> per;
    for (int r = 0; r < std::max(20, total / int(n)); ++r) {
      exec.synchronize();
      auto t0 = Clock::now();
      lr_status_t launched = lr_graph_exec_launch(exec.get(), nullptr);
      auto t1 = Clock::now();
      if (launched != LR_SUCCESS) {
        std::fprintf(stderr, "lr_graph_exec_launch: %s\n", lr_last_error_message());
        return 1;
      }
      if (r > 1) per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(packets));
    }
    exec.synchronize();
    std::printf("  lr_graph_exec_launch of a %u-kernel chain, %zu packets: median %.1f ns/packet, p10 %.1f, p90 %.1f "
                "(%zu replays)\n",
                n, packets, median(per), percentile(per, 0.1), percentile(per, 0.9), per.size());
  }
  std::printf("  target (issue 10): replay <= 30 ns/packet of host work on the stand-in\n");
  return 0;
}
