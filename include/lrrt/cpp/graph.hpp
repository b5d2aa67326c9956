// lrrt C++ wrapper: retained replay: access helpers, Graph, GraphExec.
// One concept of lrrt/lrrt.hpp, the header to include.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "lrrt/c/graph.h"
#include "lrrt/cpp/device.hpp"
#include "lrrt/cpp/error.hpp"
#include "lrrt/cpp/handle.hpp"
#include "lrrt/cpp/memory.hpp"
#include "lrrt/cpp/module.hpp"
#include "lrrt/cpp/queue.hpp"

namespace lrrt {

// ---- Retained replay ------------------------------------------------------
//
//   lrrt::Graph graph(device);
//   auto n = graph.add_kernel(saxpy, cfg, args, {lrrt::read_access(x), lrrt::read_write_access(y)});
//   lrrt::GraphExec exec = graph.instantiate();
//   for (...) exec.launch(queue);
//   exec.set_kernarg(n, 0, 2.0f);  // after exec.synchronize()
//
// Declares access to bytes [p + offset, p + offset + bytes); bytes = 0 reaches
// the end of the allocation.
inline lr_graph_access_t read_access(const void* p, uint64_t bytes = 0, uint64_t offset = 0) {
  return {p, offset, bytes, LR_ACCESS_READ};
}
inline lr_graph_access_t write_access(const void* p, uint64_t bytes = 0, uint64_t offset = 0) {
  return {p, offset, bytes, LR_ACCESS_WRITE};
}
inline lr_graph_access_t read_write_access(const void* p, uint64_t bytes = 0, uint64_t offset = 0) {
  return {p, offset, bytes, LR_ACCESS_READ_WRITE};
}
inline lr_graph_access_t read_access(const DeviceBuffer& b) { return read_access(b.data()); }
inline lr_graph_access_t write_access(const DeviceBuffer& b) { return write_access(b.data()); }
inline lr_graph_access_t read_write_access(const DeviceBuffer& b) { return read_write_access(b.data()); }

using GraphNode = lr_graph_node_t;

// An instantiated graph: replayed with launch(), arguments patched between
// replays with set_kernargs(). Destroying it waits for its replays.
class GraphExec {
 public:
  explicit GraphExec(lr_graph_exec_t* exec) : exec_(exec) {}
  lr_graph_exec_t* get() const { return exec_.get(); }
  // On the device's default queue, or on `queue`; `completion` completes
  // when the replay finished.
  void launch() const { check(lr_graph_exec_launch(get(), nullptr), "lr_graph_exec_launch"); }
  void launch(const Queue& queue) const { check(lr_graph_exec_launch(get(), queue.get()), "lr_graph_exec_launch"); }
  void launch(const Queue& queue, Event& completion) const {
    check(lr_graph_exec_launch_with_event(get(), queue.get(), completion.get()), "lr_graph_exec_launch_with_event");
  }
  void synchronize() const { check(lr_graph_exec_synchronize(get()), "lr_graph_exec_synchronize"); }
  // True when no replay is running.
  bool complete() const {
    uint32_t done = 0;
    check(lr_graph_exec_query(get(), &done), "lr_graph_exec_query");
    return done != 0;
  }
  // Throws lrrt::Error with LR_ERROR_BUSY while a replay runs (unless the
  // exec was instantiated with LR_GRAPH_PATCH_WAITS).
  void set_kernargs(GraphNode node, size_t offset, std::span<const std::byte> bytes) const {
    check(lr_graph_exec_set_kernargs(get(), node, offset, bytes.data(), bytes.size()), "lr_graph_exec_set_kernargs");
  }
  template <typename T>
  void set_kernarg(GraphNode node, size_t offset, const T& value) const {
    set_kernargs(node, offset, std::as_bytes(std::span<const T>(&value, 1)));
  }
  // Replays that may be in flight at once (lr_graph_exec_set_max_in_flight).
  void set_max_in_flight(uint32_t count) const {
    check(lr_graph_exec_set_max_in_flight(get(), count), "lr_graph_exec_set_max_in_flight");
  }
  lr_graph_exec_stats_t stats() const {
    lr_graph_exec_stats_t s{};
    check(lr_graph_exec_get_stats(get(), &s), "lr_graph_exec_get_stats");
    return s;
  }
  // The plan as JSON (lr_graph_exec_get_plan).
  std::string plan_json() const {
    size_t length = 0;
    check(lr_graph_exec_get_plan(get(), nullptr, 0, &length), "lr_graph_exec_get_plan");
    std::string out(length + 1, '\0');
    check(lr_graph_exec_get_plan(get(), out.data(), out.size(), &length), "lr_graph_exec_get_plan");
    out.resize(length);
    return out;
  }

 private:
  UniqueHandle<lr_graph_exec_t, lr_graph_exec_destroy> exec_;
};

// A recording of kernel dispatches, copies and fills.
class Graph {
 public:
  explicit Graph(Device device) {
    lr_graph_t* g = nullptr;
    check(lr_graph_create(device.get(), &g), "lr_graph_create");
    graph_ = Handle(g);
  }
  lr_graph_t* get() const { return graph_.get(); }

  GraphNode add_kernel(const Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                       std::span<const lr_graph_access_t> accesses, uint32_t flags = 0) {
    GraphNode node = 0;
    check(lr_graph_add_kernel_ex(get(), kernel.get(), &config, args.data(), args.size(), accesses.data(),
                                 accesses.size(), flags, &node),
          "lr_graph_add_kernel");
    return node;
  }
  // LR_GRAPH_KERNEL_DERIVE_ACCESS: the pointer arguments `accesses` does not
  // cover get the access the kernel proves (lr_kernel_get_arg_access).
  GraphNode add_kernel_derived(const Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                               std::span<const lr_graph_access_t> accesses = {}) {
    return add_kernel(kernel, config, args, accesses, LR_GRAPH_KERNEL_DERIVE_ACCESS);
  }
  GraphNode add_kernel(const Kernel& kernel, const LaunchConfig& config, std::span<const std::byte> args,
                       std::initializer_list<lr_graph_access_t> accesses) {
    return add_kernel(kernel, config, args, std::span<const lr_graph_access_t>(accesses.begin(), accesses.size()));
  }
  // With a trivially copyable struct holding the arguments.
  template <typename Args>
  GraphNode add_kernel(const Kernel& kernel, const LaunchConfig& config, const Args& args,
                       std::initializer_list<lr_graph_access_t> accesses) {
    return add_kernel(kernel, config, std::as_bytes(std::span<const Args>(&args, 1)), accesses);
  }
  GraphNode add_copy(void* dst, const void* src, size_t size, lr_memcpy_kind_t kind) {
    GraphNode node = 0;
    check(lr_graph_add_copy(get(), dst, src, size, kind, &node), "lr_graph_add_copy");
    return node;
  }
  // Fills count elements of T (1, 2 or 4 bytes) at dst with value.
  template <typename T>
  GraphNode add_fill(void* dst, size_t count, const T& value) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "fill patterns are 1, 2 or 4 bytes");
    GraphNode node = 0;
    check(lr_graph_add_fill(get(), dst, count * sizeof(T), &value, sizeof(T), &node), "lr_graph_add_fill");
    return node;
  }
  // `to` runs after `from`.
  void add_dependency(GraphNode from, GraphNode to) {
    check(lr_graph_add_dependency(get(), from, to), "lr_graph_add_dependency");
  }
  GraphExec instantiate(const lr_graph_instantiate_options_t* options = nullptr) const {
    lr_graph_exec_t* e = nullptr;
    check(lr_graph_instantiate(get(), options, &e), "lr_graph_instantiate");
    return GraphExec(e);
  }

 private:
  using Handle = UniqueHandle<lr_graph_t, lr_graph_destroy>;
  Handle graph_;
};

}  // namespace lrrt
