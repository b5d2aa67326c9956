// The C ABI's retained replay (lr_graph_*, lr_graph_exec_*): recording a
// graph, instantiating it and launching, waiting on and inspecting its execs.
// Shared helpers: c_api_support.hpp.
#include <vector>

#include "c_api_support.hpp"
#include "graph/handles.hpp"

using namespace lrrt::c_api;

extern "C" {

// ---- Retained replay -------------------------------------------------------

lr_status_t lr_graph_create(lr_device_t device, lr_graph_t** graph) {
  return create_on_device("lr_graph_create", device, graph, "graph", &Runtime::create_graph);
}

lr_status_t lr_graph_destroy(lr_graph_t* graph) {
  return guard("lr_graph_destroy", [&] { rt().destroy_graph(graph); });
}

lr_status_t lr_graph_add_kernel(lr_graph_t* graph, lr_kernel_t* kernel, const lr_launch_config_t* config,
                                const void* args, size_t args_size, const lr_graph_access_t* accesses,
                                size_t access_count, lr_graph_node_t* node) {
  return lr_graph_add_kernel_ex(graph, kernel, config, args, args_size, accesses, access_count, 0, node);
}

lr_status_t lr_graph_add_kernel_ex(lr_graph_t* graph, lr_kernel_t* kernel, const lr_launch_config_t* config,
                                   const void* args, size_t args_size, const lr_graph_access_t* accesses,
                                   size_t access_count, uint32_t flags, lr_graph_node_t* node) {
  return guard("lr_graph_add_kernel", [&] {
    if (flags & ~uint32_t(LR_GRAPH_KERNEL_DERIVE_ACCESS))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "unknown graph kernel flags {:#x} (LR_GRAPH_KERNEL_DERIVE_ACCESS is {:#x})",
                 flags, uint32_t(LR_GRAPH_KERNEL_DERIVE_ACCESS));
    Runtime& r = rt();
    r.check_graph(graph);
    r.check_kernel(kernel);
    if (kernel->module->device != graph->device)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel belongs to device {} but the graph to device {}",
                 kernel->module->device->index, graph->device->index);
    auto cfg = to_config(config);
    if (access_count && !accesses)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "accesses is null but access_count is {}", access_count);
    std::vector<lrrt::rt::graph::DeclaredAccess> declared(access_count);
    for (size_t i = 0; i < access_count; ++i)
      declared[i] = {reinterpret_cast<uintptr_t>(accesses[i].pointer), accesses[i].offset, accesses[i].bytes,
                     static_cast<lrrt::rt::graph::AccessMode>(accesses[i].mode), true};
    std::lock_guard lock(graph->mutex);
    uint32_t id = graph->graph.add_kernel(*kernel->kernel, cfg, arg_bytes(args, args_size), declared,
                                          (flags & LR_GRAPH_KERNEL_DERIVE_ACCESS) != 0);
    bool known = false;
    for (const auto& use : graph->modules) known |= use.module() == kernel->module;
    if (!known) graph->modules.emplace_back(kernel->module);
    if (node) *node = id;
  });
}

lr_status_t lr_graph_add_copy(lr_graph_t* graph, void* dst, const void* src, size_t size, lr_memcpy_kind_t kind,
                              lr_graph_node_t* node) {
  return guard("lr_graph_add_copy", [&] {
    rt().check_graph(graph);
    CopyKind k = lrrt::rt::to_copy_kind(kind);
    std::lock_guard lock(graph->mutex);
    uint32_t id = graph->graph.add_copy(dst, src, size, k);
    if (node) *node = id;
  });
}

lr_status_t lr_graph_add_fill(lr_graph_t* graph, void* dst, size_t size, const void* pattern, size_t pattern_size,
                              lr_graph_node_t* node) {
  return guard("lr_graph_add_fill", [&] {
    rt().check_graph(graph);
    require(pattern, "pattern");
    std::lock_guard lock(graph->mutex);
    uint32_t id = graph->graph.add_fill(dst, size, {static_cast<const std::byte*>(pattern), pattern_size});
    if (node) *node = id;
  });
}

lr_status_t lr_graph_add_dependency(lr_graph_t* graph, lr_graph_node_t from, lr_graph_node_t to) {
  return guard("lr_graph_add_dependency", [&] {
    rt().check_graph(graph);
    std::lock_guard lock(graph->mutex);
    graph->graph.add_dependency(from, to);
  });
}

lr_status_t lr_graph_instantiate(lr_graph_t* graph, const lr_graph_instantiate_options_t* options,
                                 lr_graph_exec_t** exec) {
  return guard("lr_graph_instantiate", [&] {
    require(exec, "exec");
    *exec = nullptr;
    *exec = rt().instantiate_graph(graph, options);
  });
}

lr_status_t lr_graph_exec_destroy(lr_graph_exec_t* exec) {
  return guard("lr_graph_exec_destroy", [&] { rt().destroy_graph_exec(exec); });
}

lr_status_t lr_graph_exec_launch(lr_graph_exec_t* exec, lr_queue_t* queue) {
  return guard("lr_graph_exec_launch", [&] { rt().launch_graph(exec, queue, nullptr); });
}

lr_status_t lr_graph_exec_launch_with_event(lr_graph_exec_t* exec, lr_queue_t* queue, lr_event_t* completion) {
  return guard("lr_graph_exec_launch_with_event", [&] { rt().launch_graph(exec, queue, completion); });
}

lr_status_t lr_graph_exec_synchronize(lr_graph_exec_t* exec) {
  return guard("lr_graph_exec_synchronize", [&] {
    rt().check_graph_exec(exec);
    std::lock_guard lock(exec->mutex);
    exec->exec->synchronize();
  });
}

lr_status_t lr_graph_exec_query(lr_graph_exec_t* exec, uint32_t* complete) {
  return guard("lr_graph_exec_query", [&] {
    require(complete, "complete");
    rt().check_graph_exec(exec);
    std::lock_guard lock(exec->mutex);
    *complete = exec->exec->running() ? 0 : 1;
  });
}

lr_status_t lr_graph_exec_set_kernargs(lr_graph_exec_t* exec, lr_graph_node_t node, size_t offset, const void* bytes,
                                       size_t size) {
  return guard("lr_graph_exec_set_kernargs", [&] {
    if (size && !bytes) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "bytes is null but size is {}", size);
    rt().set_graph_kernargs(exec, node, offset, {static_cast<const std::byte*>(bytes), size});
  });
}

lr_status_t lr_graph_exec_set_max_in_flight(lr_graph_exec_t* exec, uint32_t count) {
  return guard("lr_graph_exec_set_max_in_flight", [&] { rt().set_graph_max_in_flight(exec, count); });
}

lr_status_t lr_graph_exec_get_stats(lr_graph_exec_t* exec, lr_graph_exec_stats_t* stats) {
  return guard("lr_graph_exec_get_stats", [&] {
    require(stats, "stats");
    *stats = rt().graph_stats(exec);
  });
}

lr_status_t lr_graph_exec_get_plan(lr_graph_exec_t* exec, char* json, size_t capacity, size_t* length) {
  return guard("lr_graph_exec_get_plan", [&] {
    require(length, "length");
    if (capacity && !json) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "json is null but capacity is {}", capacity);
    const std::string plan = rt().graph_plan(exec);
    *length = plan.size();
    if (capacity == 0) return;
    if (plan.size() + 1 > capacity) {
      json[0] = '\0';
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the plan needs {} bytes, the buffer has {}", plan.size() + 1, capacity);
    }
    copy_string(json, capacity, plan);
  });
}

}  // extern "C"
