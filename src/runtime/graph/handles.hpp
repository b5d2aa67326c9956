// The C ABI's graph handles (lr_graph_t, lr_graph_exec_t), owned by the
// runtime singleton like queues and events.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "graph/exec.hpp"
#include "graph/graph.hpp"
#include "graph/plan.hpp"
#include "runtime.hpp"

namespace lrrt::rt::graph {

// Marks a module as used by a graph or exec for as long as it lives:
// lr_module_destroy refuses while any use remains.
class ModuleUse {
 public:
  explicit ModuleUse(lr_module_t* module) : module_(module) { module_->graph_users.fetch_add(1); }
  ModuleUse(ModuleUse&& o) noexcept : module_(std::exchange(o.module_, nullptr)) {}
  ModuleUse(const ModuleUse&) = delete;
  ModuleUse& operator=(const ModuleUse&) = delete;
  ModuleUse& operator=(ModuleUse&&) = delete;
  ~ModuleUse() {
    if (module_) module_->graph_users.fetch_sub(1);
  }
  lr_module_t* module() const { return module_; }

 private:
  lr_module_t* module_;
};

}  // namespace lrrt::rt::graph

struct lr_graph_t {
  lrrt::rt::DeviceState* device = nullptr;
  std::mutex mutex;  // recording from several threads
  lrrt::rt::graph::Graph graph;
  std::vector<lrrt::rt::graph::ModuleUse> modules;  // one per distinct module
};

struct lr_graph_exec_t {
  lrrt::rt::DeviceState* device = nullptr;
  // First, so released last: the modules outlive the exec's replays.
  std::vector<lrrt::rt::graph::ModuleUse> modules;
  std::mutex mutex;  // launches, patches and waits on one exec in turn
  std::unique_ptr<lrrt::rt::graph::GraphExec> exec;
  // The core's copy of the steps and their resolved ranges: patches are
  // checked against it, and the buffers re-checked after an lr_free.
  std::vector<lrrt::rt::graph::Node> nodes;
  std::vector<std::vector<lrrt::rt::graph::ResolvedAccess>> accesses;
  uint64_t checked_free_epoch = 0;
  bool patch_waits = false;
  std::atomic<uint64_t> replays{0};
  // The lowering-independent plan, kept so the plan can be described again
  // when the bound on replays in flight changes; plan_json under `mutex`.
  lrrt::rt::graph::Plan base_plan;
  std::string plan_json;
};
