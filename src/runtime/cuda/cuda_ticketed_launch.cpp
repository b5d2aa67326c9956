#include "cuda_ticketed_launch.hpp"

#include "cuda_graph.hpp"
#include "cuda_symbols.hpp"

namespace lrrt::rt::cuda {
namespace {

// The write node: one 32-bit write with the default (full) memory barrier,
// the only flag the v2 memory-operation API accepts.
struct WriteParams {
  CUstreamBatchMemOpParams op{};
  CUDA_BATCH_MEM_OP_NODE_PARAMS node{};
  WriteParams(CUcontext context, CUdeviceptr word, uint32_t ticket) {
    op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op.writeValue.address = word;
    op.writeValue.value = ticket;
    op.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
    node.ctx = context;
    node.count = 1;
    node.paramArray = &op;  // the driver copies it during the call
    node.flags = 0;
  }
  WriteParams(const WriteParams&) = delete;
};

}  // namespace

TicketedLaunch::~TicketedLaunch() { release(); }

bool TicketedLaunch::supported() {
  const CudaGraphSymbols& g = cu_graph();
  return g.available && g.cuGraphAddBatchMemOpNode && g.cuGraphExecBatchMemOpNodeSetParams;
}

void TicketedLaunch::release() {
  // An exec destroyed with replays in flight is freed when they finish.
  if (exec_) cu_graph().cuGraphExecDestroy(exec_);
  if (graph_) cu_graph().cuGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
  kernel_ = write_ = nullptr;
}

CUresult TicketedLaunch::make(CUcontext context, CUfunction function, const LaunchConfig& config, void** extra,
                              CUdeviceptr word, uint32_t ticket, const char** failed_call) {
  const CudaGraphSymbols& g = cu_graph();
  const CUDA_KERNEL_NODE_PARAMS kernel = kernel_node_params(function, config, extra);
  const WriteParams write(context, word, ticket);
  CUresult r = g.cuGraphCreate(&graph_, 0);
  *failed_call = "cuGraphCreate";
  if (r == CUDA_SUCCESS) {
    r = g.cuGraphAddKernelNode(&kernel_, graph_, nullptr, 0, &kernel);
    *failed_call = "cuGraphAddKernelNode";
  }
  if (r == CUDA_SUCCESS) {
    r = g.cuGraphAddBatchMemOpNode(&write_, graph_, &kernel_, 1, &write.node);
    *failed_call = "cuGraphAddBatchMemOpNode";
  }
  if (r == CUDA_SUCCESS) {
    r = g.cuGraphInstantiateWithFlags(&exec_, graph_, 0);
    *failed_call = "cuGraphInstantiateWithFlags";
  }
  if (r != CUDA_SUCCESS) release();
  return r;
}

CUresult TicketedLaunch::launch(CUcontext context, CUstream stream, CUfunction function, const LaunchConfig& config,
                                void** extra, CUdeviceptr word, uint32_t ticket, const char** failed_call) {
  const CudaGraphSymbols& g = cu_graph();
  CUresult r;
  if (!exec_) {
    // Made with this launch's parameters: its first replay needs no update.
    r = make(context, function, config, extra, word, ticket, failed_call);
  } else {
    // The node keeps its previous kernel when an update fails; nothing is
    // replayed then, and the next launch sets both nodes again.
    const CUDA_KERNEL_NODE_PARAMS kernel = kernel_node_params(function, config, extra);
    r = g.cuGraphExecKernelNodeSetParams(exec_, kernel_, &kernel);
    *failed_call = "cuGraphExecKernelNodeSetParams";
    if (r == CUDA_SUCCESS) {
      const WriteParams write(context, word, ticket);
      r = g.cuGraphExecBatchMemOpNodeSetParams(exec_, write_, &write.node);
      *failed_call = "cuGraphExecBatchMemOpNodeSetParams";
    }
  }
  if (r != CUDA_SUCCESS) return r;
  r = g.cuGraphLaunch(exec_, stream);
  *failed_call = "cuGraphLaunch";
  return r;
}

}  // namespace lrrt::rt::cuda
