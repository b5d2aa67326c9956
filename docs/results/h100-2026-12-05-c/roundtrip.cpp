// Round-trip probe (issue 22 part 4): what a launch plus a wait for it costs
// with each completion mechanism the driver API offers, interleaved in one run.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(x)                                                                       \
  do {                                                                              \
    CUresult r_ = (x);                                                              \
    if (r_ != CUDA_SUCCESS) {                                                       \
      const char* s_ = nullptr;                                                     \
      cuGetErrorName(r_, &s_);                                                      \
      std::fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?"); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

static const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry empty(.param .u64 p, .param .u32 v) { ret; }
.visible .entry write_flag(.param .u64 p, .param .u32 v) {
  .reg .b64 %rd<2>; .reg .b32 %r<2>; .reg .pred %q;
  mov.u32 %r0, %tid.x; setp.ne.u32 %q, %r0, 0; @%q bra DONE;
  ld.param.u64 %rd0, [p]; ld.param.u32 %r1, [v];
  membar.sys; st.volatile.global.u32 [%rd0], %r1;
DONE: ret;
}
.visible .entry spin(.param .u64 p, .param .u32 v) {
  .reg .b64 %t<3>; .reg .b32 %r<2>; .reg .pred %q;
  ld.param.u32 %r1, [v]; cvt.u64.u32 %t2, %r1;
  mov.u64 %t0, %globaltimer;
LOOP: mov.u64 %t1, %globaltimer; sub.u64 %t1, %t1, %t0; setp.lt.u64 %q, %t1, %t2; @%q bra LOOP;
  ret;
}
)";

static double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static inline void spin_until(volatile uint32_t* word, uint32_t ticket) {
  while (static_cast<int32_t>(__atomic_load_n(word, __ATOMIC_ACQUIRE) - ticket) < 0) __builtin_ia32_pause();
}

struct Variant {
  std::string name;
  std::function<void()> once;
  std::vector<double> samples;
};

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  const int per_round = 50;
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  char name[256];
  CK(cuDeviceGetName(name, sizeof name, dev));
  int drv = 0;
  CK(cuDriverGetVersion(&drv));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CK(cuModuleLoadData(&mod, kPtx));
  CUfunction empty, writer, spinner;
  CK(cuModuleGetFunction(&empty, mod, "empty"));
  CK(cuModuleGetFunction(&writer, mod, "write_flag"));
  CK(cuModuleGetFunction(&spinner, mod, "spin"));
  CUstream st;
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));

  void* host = nullptr;
  CK(cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  std::memset(host, 0, 4096);
  auto* word = static_cast<volatile uint32_t*>(host);
  CUdeviceptr dword;
  CK(cuMemHostGetDevicePointer(&dword, host, 0));
  uint32_t ticket = 0;

  CUdeviceptr arg_p = dword;
  uint32_t arg_v = 0;
  void* params[] = {&arg_p, &arg_v};

  CUevent ev, pev;
  CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  CK(cuEventCreate(&pev, CU_EVENT_DISABLE_TIMING));

  // Graph: empty kernel -> batch memop writing the ticket.
  CUgraph g;
  CK(cuGraphCreate(&g, 0));
  CUDA_KERNEL_NODE_PARAMS kp{};
  kp.func = empty;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = 64;
  kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = params;
  CUgraphNode kn, mn;
  CK(cuGraphAddKernelNode(&kn, g, nullptr, 0, &kp));
  CUstreamBatchMemOpParams op{};
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = dword;
  op.writeValue.value = 0;
  op.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  CUDA_BATCH_MEM_OP_NODE_PARAMS mp{};
  mp.ctx = ctx;
  mp.count = 1;
  mp.paramArray = &op;
  mp.flags = 0;
  CK(cuGraphAddBatchMemOpNode(&mn, g, &kn, 1, &mp));
  CUgraphExec ge;
  CK(cuGraphInstantiate(&ge, g, 0));

  auto launch = [&] { CK(cuLaunchKernel(empty, 1, 1, 1, 64, 1, 1, 0, st, params, nullptr)); };

  std::vector<Variant> vs;
  vs.push_back({"launch + cuStreamSynchronize", [&] {
                  launch();
                  CK(cuStreamSynchronize(st));
                }, {}});
  vs.push_back({"launch + cuStreamWriteValue32 + spin", [&] {
                  launch();
                  const uint32_t t = ++ticket;
                  CK(cuStreamWriteValue32(st, dword, t, CU_STREAM_WRITE_VALUE_DEFAULT));
                  spin_until(word, t);
                }, {}});
  vs.push_back({"launch + cuEventRecord + cuEventQuery spin", [&] {
                  launch();
                  CK(cuEventRecord(ev, st));
                  CUresult r;
                  while ((r = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY) __builtin_ia32_pause();
                  CK(r);
                }, {}});
  vs.push_back({"launch + cuStreamQuery spin", [&] {
                  launch();
                  CUresult r;
                  while ((r = cuStreamQuery(st)) == CUDA_ERROR_NOT_READY) __builtin_ia32_pause();
                  CK(r);
                }, {}});
  vs.push_back({"cuLaunchKernelEx(PROGRAMMATIC_EVENT) + cuEventQuery spin", [&] {
                  CUlaunchAttribute a{};
                  a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
                  a.value.programmaticEvent.event = pev;
                  a.value.programmaticEvent.flags = 0;
                  a.value.programmaticEvent.triggerAtBlockStart = 0;
                  CUlaunchConfig lc{};
                  lc.gridDimX = lc.gridDimY = lc.gridDimZ = 1;
                  lc.blockDimX = 64;
                  lc.blockDimY = lc.blockDimZ = 1;
                  lc.hStream = st;
                  lc.attrs = &a;
                  lc.numAttrs = 1;
                  CK(cuLaunchKernelEx(&lc, empty, params, nullptr));
                  CUresult r;
                  while ((r = cuEventQuery(pev)) == CUDA_ERROR_NOT_READY) __builtin_ia32_pause();
                  CK(r);
                }, {}});
  vs.push_back({"graph(kernel->write), set both nodes' params + cuGraphLaunch + spin", [&] {
                  const uint32_t t = ++ticket;
                  CK(cuGraphExecKernelNodeSetParams(ge, kn, &kp));
                  op.writeValue.value = t;
                  CK(cuGraphExecBatchMemOpNodeSetParams(ge, mn, &mp));
                  CK(cuGraphLaunch(ge, st));
                  spin_until(word, t);
                }, {}});
  vs.push_back({"graph(kernel->write), set write only + cuGraphLaunch + spin", [&] {
                  const uint32_t t = ++ticket;
                  op.writeValue.value = t;
                  CK(cuGraphExecBatchMemOpNodeSetParams(ge, mn, &mp));
                  CK(cuGraphLaunch(ge, st));
                  spin_until(word, t);
                }, {}});
  vs.push_back({"kernel writes the word + spin (not available to lrrt)", [&] {
                  const uint32_t t = ++ticket;
                  arg_v = t;
                  CK(cuLaunchKernel(writer, 1, 1, 1, 64, 1, 1, 0, st, params, nullptr));
                  spin_until(word, t);
                }, {}});

  // Host cost of each call alone (the stream drained after each batch).
  auto host_cost = [&](const char* what, const std::function<void()>& call) {
    std::vector<double> per;
    for (int b = 0; b < 30; ++b) {
      double t0 = now_ns();
      for (int i = 0; i < 32; ++i) call();
      per.push_back((now_ns() - t0) / 32);
      CK(cuStreamSynchronize(st));
    }
    std::sort(per.begin(), per.end());
    std::printf("host cost | %s | %.0f ns\n", what, per[per.size() / 2]);
  };

  for (auto& v : vs)
    for (int i = 0; i < 200; ++i) v.once();  // warm up
  CK(cuStreamSynchronize(st));
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < vs.size(); ++k) {
      auto& v = vs[(k + r) % vs.size()];  // rotate order each round
      for (int i = 0; i < per_round; ++i) {
        double t0 = now_ns();
        v.once();
        v.samples.push_back(now_ns() - t0);
      }
    }

  std::printf("device | %s | driver %d\n", name, drv);
  const double base = [&] {
    auto s = vs[0].samples;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }();
  for (auto& v : vs) {
    auto s = v.samples;
    std::sort(s.begin(), s.end());
    std::printf("round trip | %s | median %.0f ns | p10 %.0f | p90 %.0f | %.3fx\n", v.name.c_str(),
                s[s.size() / 2], s[s.size() / 10], s[s.size() * 9 / 10], s[s.size() / 2] / base);
  }
  host_cost("cuLaunchKernel", launch);
  host_cost("cuStreamWriteValue32", [&] { CK(cuStreamWriteValue32(st, dword, ++ticket, 0)); });
  host_cost("cuLaunchKernel + cuStreamWriteValue32", [&] {
    launch();
    CK(cuStreamWriteValue32(st, dword, ++ticket, 0));
  });
  host_cost("cuEventRecord", [&] { CK(cuEventRecord(ev, st)); });
  host_cost("cuGraphLaunch (kernel->write)", [&] { CK(cuGraphLaunch(ge, st)); });
  host_cost("set write params + cuGraphLaunch", [&] {
    op.writeValue.value = ++ticket;
    CK(cuGraphExecBatchMemOpNodeSetParams(ge, mn, &mp));
    CK(cuGraphLaunch(ge, st));
  });
  host_cost("set both params + cuGraphLaunch", [&] {
    CK(cuGraphExecKernelNodeSetParams(ge, kn, &kp));
    op.writeValue.value = ++ticket;
    CK(cuGraphExecBatchMemOpNodeSetParams(ge, mn, &mp));
    CK(cuGraphLaunch(ge, st));
  });
  host_cost("cuCtxGetCurrent", [&] {
    CUcontext c;
    CK(cuCtxGetCurrent(&c));
  });
  // The extra-buffer form (lrrt's) and switching functions between launches.
  struct {
    CUdeviceptr p;
    uint32_t v;
    uint32_t pad;
  } buf{dword, 0, 0};
  size_t buf_size = 12;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &buf_size, CU_LAUNCH_PARAM_END};
  CUDA_KERNEL_NODE_PARAMS kx = kp;
  kx.kernelParams = nullptr;
  kx.extra = extra;
  int flip = 0;
  auto graph_launch_x = [&](CUfunction f, uint32_t value) {
    kx.func = f;
    buf.v = value;
    CK(cuGraphExecKernelNodeSetParams(ge, kn, &kx));
    op.writeValue.value = ++ticket;
    CK(cuGraphExecBatchMemOpNodeSetParams(ge, mn, &mp));
    CK(cuGraphLaunch(ge, st));
  };
  host_cost("extra buffer: set both + cuGraphLaunch (same function)", [&] { graph_launch_x(empty, 0); });
  host_cost("extra buffer: set both + cuGraphLaunch (alternating functions)", [&] {
    graph_launch_x((flip ^= 1) ? empty : spinner, 0);
  });
  host_cost("cuLaunchKernel, extra buffer", [&] { CK(cuLaunchKernel(empty, 1, 1, 1, 64, 1, 1, 0, st, nullptr, extra)); });
  // Correctness of the extra form through the graph: the kernel writes buf.v.
  {
    int bad = 0;
    buf.p = dword + 64;
    for (uint32_t i = 1; i <= 2000; ++i) {
      kx.func = writer;
      buf.v = 0x40000000u + i;
      CK(cuGraphExecKernelNodeSetParams(ge, kn, &kx));
      buf.v = 0;  // the driver copied the bytes during the call
      op.writeValue.value = 0x40000000u + i;  // the memop then writes the same
      CK(cuGraphExecBatchMemOpNodeSetParams(ge, mn, &mp));
      CK(cuGraphLaunch(ge, st));
    }
    CK(cuStreamSynchronize(st));
    if (word[16] != 0x40000000u + 2000) ++bad;
    std::printf("extra-buffer graph correctness: word %x, %s\n", word[16], bad ? "WRONG" : "ok");
    buf.p = dword;
  }
  // GPU-bound streams: does a ticket write after every kernel slow a stream of kernels?
  for (uint32_t ns : {0u, 2000u, 10000u}) {
    const int n = 512;
    auto run_plain = [&] {
      buf.v = ns;
      double t0 = now_ns();
      for (int i = 0; i < n; ++i) CK(cuLaunchKernel(spinner, 1, 1, 1, 64, 1, 1, 0, st, nullptr, extra));
      CK(cuStreamSynchronize(st));
      return (now_ns() - t0) / n;
    };
    auto run_graph = [&] {
      double t0 = now_ns();
      for (int i = 0; i < n; ++i) graph_launch_x(spinner, ns);
      CK(cuStreamSynchronize(st));
      return (now_ns() - t0) / n;
    };
    auto run_write = [&] {
      buf.v = ns;
      double t0 = now_ns();
      for (int i = 0; i < n; ++i) {
        CK(cuLaunchKernel(spinner, 1, 1, 1, 64, 1, 1, 0, st, nullptr, extra));
        CK(cuStreamWriteValue32(st, dword, ++ticket, 0));
      }
      CK(cuStreamSynchronize(st));
      return (now_ns() - t0) / n;
    };
    std::vector<double> a, b, c;
    for (int r = 0; r < 9; ++r) {
      a.push_back(run_plain());
      b.push_back(run_graph());
      c.push_back(run_write());
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::sort(c.begin(), c.end());
    std::printf("stream of %d kernels of %u ns | cuLaunchKernel %.0f ns/kernel | graph(kernel->write) %.0f (%.3fx) | "
                "cuLaunchKernel+cuStreamWriteValue32 %.0f (%.3fx)\n",
                n, ns, a[4], b[4], b[4] / a[4], c[4], c[4] / a[4]);
  }
  CK(cuStreamSynchronize(st));
  std::printf("idle cuStreamSynchronize: ");
  {
    std::vector<double> s;
    for (int i = 0; i < 1000; ++i) {
      double t0 = now_ns();
      CK(cuStreamSynchronize(st));
      s.push_back(now_ns() - t0);
    }
    std::sort(s.begin(), s.end());
    std::printf("%.0f ns\n", s[s.size() / 2]);
  }
  return 0;
}
