// The ideal of `lrrt bench double-buffer` (src/tool/bench/double_buffer_model.hpp):
// issue 41 wants no state above 103% of its ideal. The H100 run at 19d0d02
// (docs/results/h100-2026-12-06-b) beat an ideal made of the copy and the
// kernel alone by 4%: each stage measured 1-3% slower alone than inside the
// sequential loop. These are that state's medians, per iteration, in ns.
#include <doctest/doctest.h>

#include "tool/bench/double_buffer_model.hpp"

using lrrt::tool::bench::double_buffer_ideal;
using lrrt::tool::bench::double_buffer_stage_cost;

TEST_CASE("double-buffer model: a stage costs the least it was seen to cost, untimed values are passed over") {
  CHECK(double_buffer_stage_cost({314539, 309000}) == 309000);
  CHECK(double_buffer_stage_cost({331951, 0, 322000}) == 322000);
  CHECK(double_buffer_stage_cost({0, -1}) == 0);  // absent stage (cpu_work none)
  CHECK(double_buffer_stage_cost({}) == 0);
}

TEST_CASE("double-buffer model: the slowest stage plus fill and drain over the iterations, and the balance") {
  const auto m = double_buffer_ideal({0, 300, 100}, 10);
  CHECK(m.per_iteration == doctest::Approx(300 + 100.0 / 10));
  CHECK(m.balance == doctest::Approx(100.0 / 300));
  CHECK(double_buffer_ideal({0, 0, 0}, 16).balance == 0);
  CHECK(double_buffer_ideal({50, 50, 50}, 0).per_iteration == doctest::Approx(150));  // no iterations: one fill
}

TEST_CASE("double-buffer model: the ideal is never slower than a sequential loop whose stages were timed inside it") {
  // Sequential per iteration >= the sum of its timed stages (disjoint parts of
  // it), and the ideal <= that sum for any iteration count >= 1: the ideal
  // speedup is never below 1.
  const double seq_stage[3] = {20, 314000, 320000};
  const double seq = seq_stage[0] + seq_stage[1] + seq_stage[2] + 500;  // + the loop's own overhead
  for (size_t n : {1, 2, 16, 64}) {
    const auto m = double_buffer_ideal({double_buffer_stage_cost({seq_stage[0], 40}),
                                        double_buffer_stage_cost({316000, seq_stage[1]}),
                                        double_buffer_stage_cost({331951, seq_stage[2]})},
                                       n);
    CHECK(m.per_iteration <= seq_stage[0] + seq_stage[1] + seq_stage[2]);
    CHECK(seq / m.per_iteration >= 1.0);
  }
}

TEST_CASE("double-buffer model: the H100 state that beat its ideal (16 MiB, cpu_work none, gpu_work 2048)") {
  // Medians from docs/results/h100-2026-12-06-b/double-buffer.json: 16
  // iterations; sequential 635359 ns, double-buffered 339032 ns; copy alone
  // 314539 (default queue, the sequential loop's buffer), kernel alone 331951
  // (after the copy loop's idle SMs). The sequential loop itself was shorter
  // than copy alone + kernel alone (635359 < 646490): inside it, one of them
  // cost less than alone.
  const size_t n = 16;
  const double seq = 635359, dbl = 339032, copy_alone = 314539, kernel_alone = 331951;
  const auto old_model = double_buffer_ideal({0, copy_alone, kernel_alone}, n);
  CHECK(old_model.per_iteration / dbl > 1.03);  // what issue 41 saw: 104% of the ideal
  // Whatever the sequential loop's own split of its time between the copy
  // and the kernel (each with its wait), an ideal that may take either stage
  // from inside that loop is at most the loop's stages' sum, and the state
  // is within 103% of it once the stages cost there what they cost in the
  // pipeline: here, the kernel 320.8 us (635359 - the copy alone).
  const double kernel_in_seq = seq - copy_alone;
  const auto new_model =
      double_buffer_ideal({0, double_buffer_stage_cost({copy_alone, copy_alone + 200}),
                           double_buffer_stage_cost({kernel_alone, kernel_in_seq})},
                          n);
  CHECK(new_model.per_iteration < old_model.per_iteration);
  CHECK(new_model.per_iteration / dbl <= 1.03);
  CHECK(new_model.per_iteration <= seq);
}
