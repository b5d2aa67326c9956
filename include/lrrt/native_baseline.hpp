// Bench-only: the native API each backend wraps, called directly, so that
// `lrrt bench` reports lrrt beside it in the same process and run (ratios stay
// meaningful on noisy machines).
//
// Library lrrt_native_baselines (static, linked by the lrrt binary only): it is
// not part of liblrrt.so and is not installed. A user linking liblrrt.so gets
// the runtime, not benchmark code.
//
//   host  a direct call of the kernel entry, once per workgroup, on the
//         calling thread; plain memcpy for copies (and on N threads)
//   cuda  raw driver calls through the cuda backend's symbol table:
//         cuLaunchKernel (CU_LAUNCH_PARAM_BUFFER_POINTER) on a stream of its
//         own, cuStreamSynchronize, cuMemcpy* (sync for pageable memory,
//         *Async + stream sync for pinned and device memory)
//   hsa   a raw AQL dispatch packet written to a queue of its own, doorbell
//         store, and a wait on the completion signal; hsa_amd_memory_async_copy
//
// The native graph, the way users build it today (`lrrt bench replay`):
//   cuda  stream capture of the cuLaunchKernel calls (cuStreamBeginCapture /
//         cuStreamEndCapture; independent steps forked onto streams of their
//         own with events, as users capture a fork), cuGraphInstantiate once,
//         cuGraphLaunch per replay; patches with
//         cuGraphExecKernelNodeSetParams
//   hsa   the raw AQL loop: every packet and its kernargs built once, a
//         replay writes them all (barrier bit where a dependency lies in the
//         open run of unbarriered packets) and rings the doorbell once;
//         patches write the kernarg bytes in place
//   host  none (has_graph() is false)
//
// The baseline shares the backend's loaded library and context (no second
// dlopen); it owns its own stream/queue, modules and memory. Not thread-safe.
// Failures throw lrrt::Error.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/lrrt.hpp"

namespace lrrt::native {

// One kernel dispatch of a native graph: launch() of those arguments, after
// the earlier steps listed in `after` (indices into the step list).
struct GraphStep {
  int kernel = -1;
  lr_dim3_t grid{1, 1, 1}, block{1, 1, 1};
  std::vector<std::byte> args;
  std::vector<size_t> after;
};

class Baseline {
 public:
  virtual ~Baseline() = default;

  // "cuLaunchKernel + cuStreamSynchronize" etc., for result files.
  virtual std::string description() const = 0;

  // Loads a code object (the same bytes lr_module_load takes) and returns a
  // handle for launch(). Throws when the kernel is not in the image.
  virtual int load_kernel(std::span<const std::byte> image, std::string_view name) = 0;
  // Enqueues a dispatch (host: runs it to completion). args: the explicit
  // arguments packed as for lr_launch.
  virtual void launch(int kernel, lr_dim3_t grid, lr_dim3_t block, std::span<const std::byte> args) = 0;
  // Waits for everything launched or copied asynchronously.
  virtual void synchronize() = 0;
  // False when synchronize() has nothing native to wait on (host).
  virtual bool has_synchronize() const { return true; }
  // synchronize() is the API's default wait (cuda: cuStreamSynchronize, which
  // spins in a default context; hsa: an active signal wait). This is its
  // blocking wait, where the thread sleeps until the device signals (cuda: a
  // CU_EVENT_BLOCKING_SYNC event; hsa: HSA_WAIT_STATE_BLOCKED). Returns false
  // when the API has none (host).
  virtual bool synchronize_blocking() { return false; }
  // Waits by a word the stream itself writes into pinned host memory behind
  // the work (cuda: cuStreamWriteValue32), spinning on it: what a completion
  // flag can gain over synchronize(). Returns false when the API has no such
  // write.
  virtual bool synchronize_by_stream_flag() { return false; }
  // Launches so that the launch itself writes that word behind the kernel
  // (cuda: one replay of a two-node graph, the kernel then the write, both
  // re-pointed per launch), then spins on it: what LRRT_CUDA_SYNC=launch
  // does, in raw driver calls. Returns false when the API cannot.
  virtual bool launch_and_wait_by_graph_ticket(int kernel, lr_dim3_t grid, lr_dim3_t block,
                                               std::span<const std::byte> args) {
    (void)kernel, (void)grid, (void)block, (void)args;
    return false;
  }

  // async = false: the API's blocking copy (what a user calls for pageable
  // memory); async = true: the asynchronous copy on the baseline's stream
  // (the caller synchronizes). Returns false when the API cannot do this
  // copy (hsa: pageable memory).
  virtual bool copy(void* dst, const void* src, size_t size, lr_memcpy_kind_t kind, bool async) = 0;
  // A copy into this baseline's device from `src_baseline`'s device memory
  // (cuda: cuMemcpyPeerAsync on this baseline's stream, the caller
  // synchronizes; host: memcpy). False when the API cannot (other
  // backends, or the two baselines are of different backends).
  virtual bool copy_from_peer(Baseline& src_baseline, void* dst, const void* src, size_t size) {
    (void)src_baseline, (void)dst, (void)src, (void)size;
    return false;
  }
  // Host memory only: memcpy split over `threads` threads of a pool the
  // baseline keeps (the host's "every core" copy). Returns false elsewhere.
  virtual bool parallel_host_memcpy(void* dst, const void* src, size_t size, unsigned threads) {
    (void)dst, (void)src, (void)size, (void)threads;
    return false;
  }

  // The native graph (see the top of this file). False: the backend has
  // none, and the graph calls below throw LR_ERROR_NOT_SUPPORTED.
  virtual bool has_graph() const { return false; }
  // What build_graph/launch_graph call, in words, for result files.
  virtual std::string graph_description() const { return "none"; }
  // Records the steps once as a native graph; returns a handle for the calls
  // below. `after` must name earlier steps only.
  virtual int build_graph(std::span<const GraphStep> steps);
  // Enqueues one replay of the whole graph; synchronize() waits for it.
  virtual void launch_graph(int graph);
  // Overwrites bytes [offset, offset + size) of step `step`'s arguments for
  // later replays (the caller has synchronized the previous replay).
  virtual void patch_graph(int graph, size_t step, size_t offset, std::span<const std::byte> bytes);
  // Releases a graph (idle: the caller has synchronized).
  virtual void destroy_graph(int graph);

  virtual void* alloc_device(size_t size) = 0;
  virtual void free_device(void* ptr) = 0;
  virtual void* alloc_pinned(size_t size) = 0;
  virtual void free_pinned(void* ptr) = 0;
};

// The baseline for an opened device. Throws lrrt::Error(LR_ERROR_NOT_SUPPORTED)
// when its backend has none in this build.
std::unique_ptr<Baseline> make_baseline(lrrt::Device device);

}  // namespace lrrt::native
