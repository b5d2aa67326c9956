// A kernel that fails inside a graph replay spread over several lanes: every
// wait that covers the replay reports the kernel fault at once, whichever
// lane the kernel ran on (issue 38: on hsa a lane 1.. fault used to leave
// lr_synchronize waiting for the replay's completion, forever by default).
// The waits run under a finite timeout, so a regression fails
// (LR_ERROR_TIMEOUT) instead of hanging.
#include <string>
#include <vector>

#include "cts.hpp"

namespace lrrt::cts {
namespace {

constexpr uint32_t kLanes = 3;

// The lane the plan put `node` on (lr_graph_exec_get_plan's "nodes").
uint32_t lane_of(const lrrt::GraphExec& exec, lr_graph_node_t node) {
  const std::string plan = exec.plan_json();
  const std::string key = "{\"id\":" + std::to_string(node) + ",";
  const size_t at = plan.find(key);
  REQUIRE_MESSAGE(at != std::string::npos, "node ", node, " is not in the plan: ", plan);
  const size_t lane = plan.find("\"lane\":", at);
  REQUIRE(lane != std::string::npos);
  return uint32_t(std::stoul(plan.substr(lane + 7)));
}

enum class WaitKind { Device, Queue, Event, Exec };
const char* wait_name(WaitKind w) {
  switch (w) {
    case WaitKind::Device: return "lr_synchronize";
    case WaitKind::Queue: return "lr_queue_synchronize";
    case WaitKind::Event: return "lr_event_synchronize (the replay's completion event)";
    case WaitKind::Exec: return "lr_graph_exec_synchronize";
  }
  return "?";
}

}  // namespace

TEST_SUITE("faults") {

TEST_CASE("a kernel fault on any lane of a replay is reported at once by every wait that covers it" *
          doctest::skip(!backend().expectations().device_usable_after_fault)) {
  Session s;
  CTS_RANDOM(rng);
  const auto expect = backend().expectations();
  VectorAddI32 add(s);
  const uint32_t n = 4096 + 33;
  const auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  std::vector<lrrt::DeviceBuffer> outs;
  for (uint32_t i = 0; i < kLanes; ++i) outs.push_back(poisoned(s.device(), n * 4));
  std::vector<bool> lane_seen(kLanes, false);

  for (uint32_t faulting = 0; faulting < kLanes; ++faulting) {
    for (WaitKind wait : {WaitKind::Device, WaitKind::Queue, WaitKind::Event, WaitKind::Exec}) {
      CAPTURE(faulting);
      INFO("first wait: ", wait_name(wait));
      // kLanes independent steps, so the replay uses kLanes lanes; step
      // `faulting` fails on the device.
      auto fault = backend().faulting_launch(s);
      lrrt::Graph graph(s.device());
      lr_graph_node_t fault_node = 0;
      std::vector<Args> args;
      for (uint32_t i = 0; i < kLanes; ++i) {
        if (i == faulting) {
          CTS_OK(lr_graph_add_kernel(graph.get(), fault.kernel.get(), &fault.config, fault.args.data(),
                                     fault.args.size(), nullptr, 0, &fault_node));
          continue;
        }
        args.push_back(VectorAddI32::args(da.data(), db.data(), outs[i].data(), n));
        const lr_graph_access_t accesses[] = {lrrt::read_access(da), lrrt::read_access(db),
                                              lrrt::write_access(outs[i])};
        const lr_launch_config_t cfg = config_1d(n, 64);
        CTS_OK(lr_graph_add_kernel(graph.get(), add.kernel.get(), &cfg, args.back().data(), args.back().size(),
                                   accesses, 3, nullptr));
      }
      const lr_graph_instantiate_options_t options{kLanes, 0};
      lrrt::GraphExec exec = graph.instantiate(&options);
      const uint32_t lane = lane_of(exec, fault_node);
      REQUIRE(lane < kLanes);
      lane_seen[lane] = true;
      CAPTURE(lane);

      lrrt::Queue queue(s.device());
      lrrt::Event done(s.device());
      {
        // A regression waits for the whole limit and fails with a timeout.
        WaitTimeout limit(3000);
        if (wait == WaitKind::Device)
          CTS_OK(lr_graph_exec_launch(exec.get(), nullptr));
        else
          CTS_OK(lr_graph_exec_launch_with_event(exec.get(), queue.get(), done.get()));
        lr_status_t status = LR_SUCCESS;
        switch (wait) {
          case WaitKind::Device: status = lr_synchronize(s.get()); break;
          case WaitKind::Queue: status = lr_queue_synchronize(queue.get()); break;
          case WaitKind::Event: status = lr_event_synchronize(done.get()); break;
          case WaitKind::Exec: status = lr_graph_exec_synchronize(exec.get()); break;
        }
        const std::string message = text(lr_last_error_message());
        CHECK_MESSAGE(status == LR_ERROR_KERNEL_FAULT, text(lr_status_string(status)), ": ", message);
        // An event stands for the whole replay: it need not know which kernel
        // failed (the queue's and the exec's waits name it).
        if (wait != WaitKind::Event)
          CHECK_MESSAGE(message.find("'" + fault.kernel_name + "'") != std::string::npos,
                        "the message does not name '", fault.kernel_name, "': ", message);
        for (const auto& word : expect.fault_message_words)
          CHECK_MESSAGE(message.find(word) != std::string::npos, "the message does not mention '", word,
                        "': ", message);
        // The other waits return too (each reports the failure or nothing):
        // none hangs or times out.
        for (lr_status_t other : {lr_graph_exec_synchronize(exec.get()), lr_queue_synchronize(queue.get()),
                                  lr_synchronize(s.get())})
          CHECK_MESSAGE(other != LR_ERROR_TIMEOUT, text(lr_last_error_message()));
      }
      if (fault.undo) fault.undo();
      // Reported: the device runs new work (checked on every element).
      lrrt::DeviceBuffer after = poisoned(s.device(), n * 4);
      auto plain = VectorAddI32::args(da.data(), db.data(), after.data(), n);
      lrrt::launch(queue, add.kernel, config_1d(n, 64), plain.bytes());
      queue.synchronize();
      const auto got = download<int32_t>(after, n);
      check_every<int32_t>(got, [&](size_t i) { return add_i32(a[i], b[i]); }, "vector_add after the fault");
    }
  }
  for (uint32_t l = 0; l < kLanes; ++l) CHECK_MESSAGE(lane_seen[l], "no step of the test ran on lane ", l);
}

}  // TEST_SUITE

}  // namespace lrrt::cts
