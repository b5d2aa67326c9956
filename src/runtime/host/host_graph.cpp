#include "host_graph.hpp"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "env.hpp"
#include "error.hpp"
#include "host_device.hpp"
#include "host_dispatch.hpp"
#include "host_event.hpp"
#include "host_executable.hpp"
#include "host_queue.hpp"

namespace lrrt::rt::host {
namespace {

using graph::NodeKind;

bool worst_order_requested() { return env::flag(env::kTestWorstOrder, false); }

// The pattern (its low `pattern_size` bytes, in memory order) over
// [dst, dst + size): one copy, then doubling copies of what is written.
void fill_pattern(void* dst, size_t size, uint32_t pattern, uint32_t pattern_size) {
  auto* p = static_cast<std::byte*>(dst);
  if (pattern_size == 1) {
    std::memset(p, int(pattern & 0xff), size);
    return;
  }
  size_t filled = std::min<size_t>(size, pattern_size);
  std::memcpy(p, &pattern, filled);
  while (filled < size) {
    size_t n = std::min(filled, size - filled);
    std::memcpy(p + filled, p, n);
    filled += n;
  }
}

class HostGraphExec final : public graph::GraphExec {
 public:
  HostGraphExec(HostDevice& device, const graph::Lowering& lowering);
  ~HostGraphExec() override;

  void launch(Queue& queue, Event* completion) override;
  bool running() override;
  void synchronize() override;
  void drain() override {}  // the exec owns no queue: its replays run on the launch queue
  void set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) override;
  void describe(graph::Plan& plan) const override;

 private:
  struct Task {
    NodeKind kind = NodeKind::Kernel;
    std::unique_ptr<HostDispatch> dispatch;  // kernels
    graph::CopyStep copy;
    graph::FillStep fill;
    std::vector<uint32_t> succs;
    uint32_t pred_count = 0;
    uint64_t chunk = 1;  // workgroups per claim
    std::string name;    // "node 3 (kernel 'saxpy')"
  };
  // What one replay keeps per node.
  struct Progress {
    uint32_t waiting = 0;  // unfinished predecessors
    uint64_t next = 0;     // next workgroup to hand out
    uint64_t done = 0;     // workgroups finished
    uint32_t in_flight = 0;
    KernelFault fault;
  };
  // A piece of work a participant takes: a whole copy or fill, or a range of
  // a kernel's workgroups.
  struct Claim {
    uint32_t node;
    uint64_t begin = 0, end = 0;
  };

  void run_replay();
  void participate(unsigned participant);
  std::optional<Claim> next_claim();  // under mutex_
  std::exception_ptr execute(const Claim& claim, unsigned participant);
  void complete(const Claim& claim, std::exception_ptr failure);  // under mutex_
  void push_ready(uint32_t node);                                  // under mutex_
  std::string describe_wait();
  std::string kernel_names() const;  // "'saxpy', 'reduce'"

  HostDevice& device_;
  const bool worst_order_;
  const unsigned threads_;
  std::vector<Task> tasks_;  // by node id (recording order)
  std::vector<graph::PlanSync> sync_;

  // The running replay's scheduling state (one replay at a time).
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Progress> progress_;
  std::vector<uint32_t> ready_;  // a heap: earliest node on top, or latest in worst order
  std::deque<uint32_t> open_;    // kernels with workgroups left to hand out
  uint32_t finished_ = 0;
  bool replaying_ = false;
  std::exception_ptr error_;  // the replay's first failure; the rest is cancelled
  std::mutex fault_mutex_;    // HostDispatch::run records the first fault under it

  // Launch side (the core serialises launches, patches and waits).
  std::unique_ptr<HostEvent> done_;  // completed by the queue when a replay's operation ended
  bool launched_ = false;
  const Queue* last_queue_ = nullptr;
  uint64_t reported_ = 0;  // the replay (done_'s generation) whose error synchronize threw
};

HostGraphExec::HostGraphExec(HostDevice& device, const graph::Lowering& lowering)
    : device_(device),
      worst_order_(worst_order_requested()),
      threads_(worst_order_ ? 1 : device.pool().threads()),
      done_(std::make_unique<HostEvent>()) {
  install_fault_handlers();
  const auto& nodes = lowering.graph.nodes();
  const graph::Derived& d = lowering.derived;
  tasks_.resize(d.node_count);
  for (uint32_t v = 0; v < d.node_count; ++v) {
    Task& t = tasks_[v];
    t.kind = nodes[v].kind();
    t.name = graph::describe_node(nodes, v);
    switch (t.kind) {
      case NodeKind::Kernel: {
        const auto& k = std::get<graph::KernelStep>(nodes[v].step);
        std::span<const std::byte> args = k.args;
        // The explicit bytes only, as every lowering passes them.
        if (const KernelInfo& info = k.kernel->info(); info.has_arg_layout)
          args = args.first(std::min<size_t>(args.size(), info.explicit_kernarg_size()));
        try {
          t.dispatch = std::make_unique<HostDispatch>(static_cast<HostKernel&>(*k.kernel), k.config, args,
                                                      device.properties());
        } catch (const Error& e) {
          LRRT_THROW(e.status(), "{}: {}", t.name, e.what());
        }
        // About four claims per thread, as parallel_for deals a launch out.
        t.chunk = std::max<uint64_t>(1, t.dispatch->workgroups() / (uint64_t(threads_) * 4));
        break;
      }
      case NodeKind::Copy: t.copy = std::get<graph::CopyStep>(nodes[v].step); break;
      case NodeKind::Fill: t.fill = std::get<graph::FillStep>(nodes[v].step); break;
    }
    t.pred_count = uint32_t(d.preds[v].size());
    t.succs = d.succs[v];
    if (!d.preds[v].empty()) {
      std::string from;
      for (const graph::Edge& e : d.edges)
        if (e.to == v) from += fmt::format("{}{} ({})", from.empty() ? "" : ", ", e.from, graph::hazard_names(e.hazards));
      sync_.push_back({"wait", int64_t(v),
                       fmt::format("ready when its {} predecessor{} finished: node{} {}", d.preds[v].size(),
                                   d.preds[v].size() == 1 ? "" : "s", d.preds[v].size() == 1 ? "" : "s", from)});
    }
  }
  progress_.resize(tasks_.size());
  sync_.push_back({"completion", -1,
                   fmt::format("one operation of the launch queue: it starts after the queue's earlier work and "
                               "completes when all {} nodes finished; a replay launched on another queue than the "
                               "last one waits for that one",
                               tasks_.size())});
  if (worst_order_)
    sync_.push_back({"test", -1,
                     "LRRT_TEST_WORST_ORDER: one thread, always the ready node latest in recording order (test only)"});
}

HostGraphExec::~HostGraphExec() {
  // The queues' pending operations call into this exec: wait for the last
  // one, however long (lr_graph_exec_destroy reported any timeout already).
  if (launched_) (void)done_->wait(done_->armed_generation());
}

void HostGraphExec::push_ready(uint32_t node) {
  ready_.push_back(node);
  if (worst_order_) std::push_heap(ready_.begin(), ready_.end(), std::less<>{});
  else std::push_heap(ready_.begin(), ready_.end(), std::greater<>{});
}

std::optional<HostGraphExec::Claim> HostGraphExec::next_claim() {
  // Workgroups of a started kernel first: its workgroups spread over every
  // participant, as a queue launch spreads them over the pool.
  while (!open_.empty()) {
    uint32_t v = open_.front();
    Progress& p = progress_[v];
    const uint64_t groups = tasks_[v].dispatch->workgroups();
    if (p.next >= groups) {
      open_.pop_front();
      continue;
    }
    Claim c{v, p.next, std::min(groups, p.next + tasks_[v].chunk)};
    p.next = c.end;
    if (p.next >= groups) open_.pop_front();
    ++p.in_flight;
    return c;
  }
  if (ready_.empty()) return std::nullopt;
  if (worst_order_) std::pop_heap(ready_.begin(), ready_.end(), std::less<>{});
  else std::pop_heap(ready_.begin(), ready_.end(), std::greater<>{});
  const uint32_t v = ready_.back();
  ready_.pop_back();
  Progress& p = progress_[v];
  Claim c{v};
  if (tasks_[v].kind == NodeKind::Kernel) {
    const uint64_t groups = tasks_[v].dispatch->workgroups();
    c.end = std::min(groups, tasks_[v].chunk);
    p.next = c.end;
    if (p.next < groups) {
      open_.push_back(v);
      cv_.notify_all();  // idle participants take the other workgroups
    }
  }
  ++p.in_flight;
  return c;
}

std::exception_ptr HostGraphExec::execute(const Claim& c, unsigned participant) {
  const Task& t = tasks_[c.node];
  try {
    switch (t.kind) {
      case NodeKind::Kernel:
        if (!t.dispatch->run(c.begin, c.end, participant, progress_[c.node].fault, fault_mutex_)) {
          KernelFault fault;
          {
            std::lock_guard lock(fault_mutex_);
            fault = progress_[c.node].fault;
          }
          t.dispatch->throw_fault(fault, device_.memory());
        }
        break;
      case NodeKind::Copy: std::memcpy(t.copy.dst, t.copy.src, t.copy.size); break;
      case NodeKind::Fill: fill_pattern(t.fill.dst, t.fill.size, t.fill.pattern, t.fill.pattern_size); break;
    }
  } catch (const Error& e) {
    return std::make_exception_ptr(Error(e.status(), fmt::format("graph replay, {}: {}", t.name, e.what())));
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

void HostGraphExec::complete(const Claim& c, std::exception_ptr failure) {
  Progress& p = progress_[c.node];
  --p.in_flight;
  if (failure) {
    // The first error is the replay's; nothing more is handed out.
    if (!error_) error_ = failure;
    cv_.notify_all();
    return;
  }
  if (tasks_[c.node].kind == NodeKind::Kernel) {
    p.done += c.end - c.begin;
    if (p.done < tasks_[c.node].dispatch->workgroups()) return;
  }
  ++finished_;
  bool released = false;
  for (uint32_t s : tasks_[c.node].succs)
    if (--progress_[s].waiting == 0) {
      push_ready(s);
      released = true;
    }
  if (released || finished_ == tasks_.size()) cv_.notify_all();
}

void HostGraphExec::participate(unsigned participant) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (error_ || finished_ == tasks_.size()) return;
    std::optional<Claim> claim = next_claim();
    if (!claim) {
      cv_.wait(lock);
      continue;
    }
    lock.unlock();
    std::exception_ptr failure = execute(*claim, participant);
    lock.lock();
    complete(*claim, failure);
  }
}

void HostGraphExec::run_replay() {
  {
    std::lock_guard lock(mutex_);
    ready_.clear();
    open_.clear();
    finished_ = 0;
    error_ = nullptr;
    for (uint32_t v = 0; v < tasks_.size(); ++v) {
      progress_[v] = Progress{};
      progress_[v].waiting = tasks_[v].pred_count;
      if (tasks_[v].pred_count == 0) push_ready(v);
    }
    replaying_ = true;
  }
  if (worst_order_ || threads_ == 1) participate(0);
  else device_.pool().run(threads_, [this](unsigned participant) { participate(participant); });
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    replaying_ = false;
    error = std::exchange(error_, nullptr);
  }
  // A write past a buffer's end that did not fault changed its canary
  // (host_memory.hpp); checked once the replay's nodes are done.
  const std::string overrun = device_.memory().scan_and_repair();
  if (!error && !overrun.empty())
    LRRT_THROW(LR_ERROR_KERNEL_FAULT, "graph replay: a kernel wrote past the end of a buffer: {} (kernels of the graph: {})",
               overrun, kernel_names());
  if (error) std::rethrow_exception(error);
}

void HostGraphExec::launch(Queue& queue, Event* completion) {
  auto& host_queue = static_cast<HostQueue&>(queue);
  // Replays never overlap: on the queue of the last one the queue's order
  // keeps them apart, on another queue this one waits for that one.
  std::array<Event*, 1> after{done_.get()};
  EventList waits = launched_ && last_queue_ != &queue ? EventList(after) : EventList{};
  host_queue.submit([this] { run_replay(); }, waits, done_.get());
  if (completion) queue.record(*completion);
  launched_ = true;
  last_queue_ = &queue;
}

std::string HostGraphExec::kernel_names() const {
  std::string names;
  for (const Task& t : tasks_) {
    if (t.kind != NodeKind::Kernel) continue;
    const std::string quoted = fmt::format("'{}'", t.dispatch->kernel_name());
    if (names.find(quoted) == std::string::npos) names += (names.empty() ? "" : ", ") + quoted;
  }
  return names;
}

bool HostGraphExec::running() { return launched_ && !done_->query(); }

std::string HostGraphExec::describe_wait() {
  std::lock_guard lock(mutex_);
  if (!replaying_) return "a graph replay on the host (not started: earlier work on its queue has not finished)";
  std::string names;
  for (uint32_t v = 0; v < tasks_.size(); ++v)
    if (progress_[v].in_flight) names += (names.empty() ? "" : ", ") + tasks_[v].name;
  return fmt::format("a graph replay on the host ({} of {} nodes finished; running: {})", finished_, tasks_.size(),
                     names.empty() ? "none" : names);
}

void HostGraphExec::synchronize() {
  if (!launched_) return;
  // A replay's error is reported once (the queue it ran on reports it too).
  const uint64_t target = done_->armed_generation();
  if (target == reported_) return;
  try {
    done_->synchronize([this] { return describe_wait(); });
  } catch (const Error& e) {
    if (e.status() != LR_ERROR_TIMEOUT) reported_ = target;
    throw;
  } catch (...) {
    reported_ = target;
    throw;
  }
}

void HostGraphExec::set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) {
  tasks_[node].dispatch->patch_args(offset, bytes);
}

void HostGraphExec::describe(graph::Plan& plan) const {
  plan.lowering = worst_order_ ? "host task DAG on 1 thread, worst legal order (LRRT_TEST_WORST_ORDER)"
                               : fmt::format("host task DAG on {} thread{}", threads_, threads_ == 1 ? "" : "s");
  plan.test_worst_order = worst_order_;
  plan.sync = sync_;
}

}  // namespace

std::unique_ptr<graph::GraphExec> make_host_graph_exec(HostDevice& device, const graph::Lowering& lowering) {
  return std::make_unique<HostGraphExec>(device, lowering);
}

}  // namespace lrrt::rt::host
