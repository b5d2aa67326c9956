// A kernel launch that carries its own completion word (LRRT_CUDA_SYNC=launch,
// issue 22 part 4): one replay of a two-node graph, the kernel and then the
// write of a ticket into a pinned host word, re-pointed before each replay at
// that launch's kernel, configuration, arguments and ticket
// (cuGraphExecKernelNodeSetParams, cuGraphExecBatchMemOpNodeSetParams). A
// wait right after it submits nothing: it spins on the word.
//
// Why a graph and not cuLaunchKernel + cuStreamWriteValue32: measured with raw
// driver calls on an H100 (driver 580, docs/results/h100-2026-12-05-c-probe.md),
// the graph's round trip is 0.72-0.75x of cuLaunchKernel + cuStreamSynchronize
// and its host cost 2.3 us against cuLaunchKernel's 2.9-3.2 us; the write as a
// second stream call costs 0.76-0.84 us more on the host, 0.95x.
//
// Not thread-safe: its owner serializes launches (a queue's submit lock).
#pragma once

#include <cuda.h>

#include "backend.hpp"

namespace lrrt::rt::cuda {

class TicketedLaunch {
 public:
  TicketedLaunch() = default;
  ~TicketedLaunch();
  TicketedLaunch(const TicketedLaunch&) = delete;
  TicketedLaunch& operator=(const TicketedLaunch&) = delete;

  // The driver has the graph and batch-memory-operation node entry points.
  static bool supported();
  // The graph was made (by a launch that succeeded or failed past it).
  bool ready() const { return exec_ != nullptr; }

  // Launches `function` (config, `extra`: the CU_LAUNCH_PARAM_* list or null)
  // on `stream`, followed by the write of `ticket` to `word` (a device
  // mapping of pinned host memory). The graph is made at the first call, in
  // `context`, the current context. On failure nothing was launched and
  // *failed_call names the driver call that failed.
  CUresult launch(CUcontext context, CUstream stream, CUfunction function, const LaunchConfig& config, void** extra,
                  CUdeviceptr word, uint32_t ticket, const char** failed_call);

 private:
  CUresult make(CUcontext context, CUfunction function, const LaunchConfig& config, void** extra, CUdeviceptr word,
                uint32_t ticket, const char** failed_call);
  void release();

  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  CUgraphNode kernel_ = nullptr;
  CUgraphNode write_ = nullptr;
};

}  // namespace lrrt::rt::cuda
