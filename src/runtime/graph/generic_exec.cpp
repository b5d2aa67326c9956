// The generic replay over the Queue interface (exec.hpp). Also defines
// Device::instantiate_graph's default, so backends that do not lower graphs
// themselves replay this way.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "error.hpp"
#include "graph/exec.hpp"

namespace lrrt::rt {

std::unique_ptr<graph::GraphExec> Device::instantiate_graph(const graph::Lowering& lowering) {
  return graph::make_generic_exec(*this, lowering);
}

namespace graph {
namespace {

// Largest pinned block a fill copies from; bigger fills copy it repeatedly.
constexpr size_t kFillBlockBytes = size_t(1) << 20;
constexpr int32_t kNoEvent = -1;

// A pinned host block, released through the device that allocated it.
struct PinnedBlock {
  Device* device = nullptr;
  void* data = nullptr;
  size_t size = 0;
  PinnedBlock(Device& d, size_t bytes) : device(&d), data(d.allocate_host(bytes)), size(bytes) {}
  PinnedBlock(PinnedBlock&& o) noexcept
      : device(o.device), data(std::exchange(o.data, nullptr)), size(std::exchange(o.size, 0)) {}
  PinnedBlock(const PinnedBlock&) = delete;
  PinnedBlock& operator=(const PinnedBlock&) = delete;
  PinnedBlock& operator=(PinnedBlock&&) = delete;
  ~PinnedBlock() {
    if (data) {
      try { device->free_host(data); } catch (...) {}
    }
  }
};

class GenericExec final : public GraphExec {
 public:
  GenericExec(Device& device, const Lowering& lowering);
  ~GenericExec() override;

  void launch(Queue& queue, Event* completion) override;
  bool running() override;
  void synchronize() override;
  void drain() override;
  void set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) override;
  void describe(Plan& plan) const override;

 private:
  struct Step {
    uint32_t node = 0;
    uint32_t lane = 0;
    NodeKind kind = NodeKind::Kernel;
    Kernel* kernel = nullptr;
    LaunchConfig config;
    std::vector<std::byte> args;
    CopyStep copy;
    FillStep fill;
    int32_t fill_block = -1;
    std::vector<uint32_t> waits;  // indices into events_
    int32_t signal = kNoEvent;    // index into events_
    bool first_on_lane = false;
    bool last = false;            // signals done_
    std::string name;             // for messages
  };
  void submit(const Step& step, Queue& queue, std::span<Event* const> waits, Event* signal);

  Device& device_;
  uint32_t lane_count_ = 1;
  std::vector<Step> steps_;             // submission order
  std::vector<uint32_t> step_of_node_;  // node -> index in steps_
  std::vector<PinnedBlock> fill_blocks_;
  std::vector<PlanSync> sync_;
  // Events before queues: a queue's pending work may still name an event.
  std::vector<std::unique_ptr<Event>> events_;
  std::unique_ptr<Event> fork_;  // recorded on the launch queue; lanes 1.. start after it
  std::unique_ptr<Event> done_;  // completed by the replay's last step
  std::vector<std::unique_ptr<Queue>> lanes_;  // [0] unused: lane 0 is the launch queue
  std::vector<uint8_t> lane_used_;
  std::mutex mutex_;
  bool launched_ = false;
  const Queue* last_queue_ = nullptr;
  std::vector<Event*> waits_scratch_;
};

GenericExec::GenericExec(Device& device, const Lowering& lowering) : device_(device) {
  const auto& nodes = lowering.graph.nodes();
  const Derived& d = lowering.derived;
  const Lanes& lanes = lowering.lanes;
  const uint32_t n = d.node_count;
  lane_count_ = std::max<uint32_t>(1, lanes.count);

  // What each lane knows finished before its next operation starts: every
  // earlier operation of the lane and their ancestors (queues are in order),
  // and what it already waited for. A cross-lane edge whose producer is
  // known finished needs no event.
  Reachability known;
  known.reset(lane_count_, std::max<uint32_t>(n, 1));
  auto learn = [&](uint32_t lane, uint32_t v) {
    if (!d.ancestors.empty()) known.merge_bits(lane, d.ancestors.row(v));
    known.set(lane, v);
  };

  std::vector<int32_t> event_of(n, kNoEvent);
  auto event_for = [&](uint32_t v) {
    if (event_of[v] == kNoEvent) {
      event_of[v] = int32_t(events_.size());
      events_.push_back(device_.create_event());
    }
    return uint32_t(event_of[v]);
  };
  std::vector<bool> lane_seen(lane_count_, false);
  std::vector<uint32_t> tail(lane_count_, UINT32_MAX);
  step_of_node_.assign(n, 0);
  for (uint32_t v : d.order) {
    Step s;
    s.node = v;
    s.lane = lanes.of[v];
    s.kind = nodes[v].kind();
    s.name = describe_node(nodes, v);
    switch (s.kind) {
      case NodeKind::Kernel: {
        const auto& k = std::get<KernelStep>(nodes[v].step);
        s.kernel = k.kernel;
        s.config = k.config;
        s.args = k.args;
        // Trailing padding is not passed: each backend takes exactly the
        // explicit bytes, not each the same padding.
        if (const KernelInfo& info = k.kernel->info(); info.has_arg_layout)
          s.args.resize(std::min<size_t>(s.args.size(), info.explicit_kernarg_size()));
        break;
      }
      case NodeKind::Copy: s.copy = std::get<CopyStep>(nodes[v].step); break;
      case NodeKind::Fill: {
        s.fill = std::get<FillStep>(nodes[v].step);
        size_t bytes = std::min(kFillBlockBytes, s.fill.size);
        PinnedBlock block(device_, bytes);
        auto* p = static_cast<std::byte*>(block.data);
        for (size_t off = 0; off < bytes; off += s.fill.pattern_size)
          std::memcpy(p + off, &s.fill.pattern, s.fill.pattern_size);
        s.fill_block = int32_t(fill_blocks_.size());
        fill_blocks_.push_back(std::move(block));
        break;
      }
    }
    s.first_on_lane = !lane_seen[s.lane];
    lane_seen[s.lane] = true;
    std::vector<uint32_t> preds = d.preds[v];
    std::sort(preds.begin(), preds.end(), [&](uint32_t a, uint32_t b) { return d.position[a] < d.position[b]; });
    for (uint32_t p : preds) {
      if (lanes.of[p] == s.lane || known.test(s.lane, p)) continue;
      s.waits.push_back(event_for(p));
      sync_.push_back({"wait", int64_t(v),
                       fmt::format("lane {} waits for node {} on lane {}: {} edge", s.lane, p, lanes.of[p],
                                   hazard_names(std::find_if(d.edges.begin(), d.edges.end(), [&](const Edge& e) {
                                                  return e.from == p && e.to == v;
                                                })->hazards))});
      learn(s.lane, p);
    }
    learn(s.lane, v);
    tail[s.lane] = v;
    step_of_node_[v] = uint32_t(steps_.size());
    steps_.push_back(std::move(s));
  }
  // The last step (on lane 0) joins the other lanes and completes the replay.
  if (!steps_.empty()) {
    Step& last = steps_.back();
    last.last = true;
    for (uint32_t l = 1; l < lane_count_; ++l) {
      if (tail[l] == UINT32_MAX || known.test(0, tail[l])) continue;
      last.waits.push_back(event_for(tail[l]));
      sync_.push_back({"join", int64_t(last.node),
                       fmt::format("the replay's last node waits for lane {} (its last node {})", l, tail[l])});
    }
    sync_.push_back({"completion", int64_t(last.node), "its completion is the replay's"});
  } else {
    sync_.push_back({"completion", -1, "an empty graph: a marker on the launch queue"});
  }
  for (uint32_t v = 0; v < n; ++v)
    if (event_of[v] != kNoEvent) steps_[step_of_node_[v]].signal = event_of[v];
  if (lane_count_ > 1) {
    fork_ = device_.create_event();
    sync_.insert(sync_.begin(), {"fork", -1,
                                 fmt::format("a marker on the launch queue; the first node of lanes 1..{} waits "
                                             "for it (the replay follows earlier work on the queue)",
                                             lane_count_ - 1)});
  }
  done_ = device_.create_event();
  lanes_.resize(lane_count_);
  lane_used_.assign(lane_count_, 0);
  for (uint32_t l = 1; l < lane_count_; ++l) lanes_[l] = device_.create_queue();
}

GenericExec::~GenericExec() {
  try {
    synchronize();
  } catch (...) {
    // Reported by lr_graph_exec_destroy, which synchronizes first.
  }
  for (uint32_t l = 1; l < lanes_.size(); ++l) {
    try {
      if (lanes_[l]) lanes_[l]->synchronize();
    } catch (...) {
    }
  }
  lanes_.clear();
}

void GenericExec::submit(const Step& s, Queue& q, std::span<Event* const> waits, Event* signal) {
  switch (s.kind) {
    case NodeKind::Kernel: q.launch(*s.kernel, s.config, s.args, waits, signal); break;
    case NodeKind::Copy: q.copy(s.copy.dst, s.copy.src, s.copy.size, s.copy.kind, waits, signal); break;
    case NodeKind::Fill: {
      const PinnedBlock& block = fill_blocks_[size_t(s.fill_block)];
      for (size_t off = 0; off < s.fill.size; off += block.size) {
        size_t bytes = std::min(block.size, s.fill.size - off);
        bool first = off == 0, last = off + bytes == s.fill.size;
        q.copy(static_cast<std::byte*>(s.fill.dst) + off, block.data, bytes, CopyKind::HostToDevice,
               first ? waits : std::span<Event* const>{}, last ? signal : nullptr);
      }
      break;
    }
  }
}

void GenericExec::launch(Queue& queue, Event* completion) {
  std::lock_guard lock(mutex_);
  // A replay launched on another queue than the last one follows that one
  // explicitly; on the same queue the order comes free.
  const bool queue_changed = launched_ && last_queue_ != &queue;
  if (fork_) queue.record(*fork_);
  std::vector<bool> started(lane_count_, false);
  for (const Step& s : steps_) {
    Queue& q = s.lane == 0 ? queue : *lanes_[s.lane];
    auto& waits = waits_scratch_;
    waits.clear();
    for (uint32_t e : s.waits) waits.push_back(events_[e].get());
    if (s.first_on_lane) {
      if (s.lane != 0 && fork_) waits.push_back(fork_.get());
      if (queue_changed) waits.push_back(done_.get());
    }
    Event* signal = s.last ? done_.get() : s.signal != kNoEvent ? events_[size_t(s.signal)].get() : nullptr;
    if (s.lane != 0) lane_used_[s.lane] = 1;
    try {
      submit(s, q, waits, signal);
    } catch (const Error& e) {
      LRRT_THROW(e.status(), "{}: {} (the replay was only partly submitted)", s.name, e.what());
    }
  }
  if (steps_.empty()) {
    if (queue_changed) {
      // Nothing to order after the last replay except the marker itself:
      // wait for it here, an empty replay has no operation to carry the wait.
      done_->synchronize();
    }
    queue.record(*done_);
  }
  if (completion) queue.record(*completion);
  launched_ = true;
  last_queue_ = &queue;
}

bool GenericExec::running() {
  std::lock_guard lock(mutex_);
  return launched_ && !done_->query();
}

void GenericExec::synchronize() {
  std::lock_guard lock(mutex_);
  if (!launched_) return;
  done_->synchronize();
  for (uint32_t l = 1; l < lane_count_; ++l) {
    if (!lane_used_[l]) continue;
    lane_used_[l] = 0;
    lanes_[l]->synchronize();
  }
}

void GenericExec::drain() {
  std::lock_guard lock(mutex_);
  for (uint32_t l = 1; l < lane_count_; ++l) {
    if (!lane_used_[l]) continue;
    lane_used_[l] = 0;
    lanes_[l]->synchronize();
  }
}

void GenericExec::set_kernargs(uint32_t node, size_t offset, std::span<const std::byte> bytes) {
  std::lock_guard lock(mutex_);
  Step& s = steps_[step_of_node_[node]];
  if (offset >= s.args.size()) return;  // padding, never passed
  std::memcpy(s.args.data() + offset, bytes.data(), std::min(bytes.size(), s.args.size() - offset));
}

void GenericExec::describe(Plan& plan) const {
  plan.lowering = "generic";
  plan.sync = sync_;
}

}  // namespace

std::unique_ptr<GraphExec> make_generic_exec(Device& device, const Lowering& lowering) {
  return std::make_unique<GenericExec>(device, lowering);
}

}  // namespace graph
}  // namespace lrrt::rt
