// The ideal of `lrrt bench double-buffer` (docs/benchmarks.md, "double-buffer"):
// what a pipeline of three stages (prepare, copy, kernel) could reach at best,
// from what each stage was seen to cost. Pure arithmetic, unit-tested
// (tests/unit/test_double_buffer_model.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>

namespace lrrt::tool::bench {

// One stage's cost per iteration: the least it was seen to cost in any of the
// loops that timed it (alone, in the pipeline's own conditions; inside the
// sequential loop, where the time around the stage's call includes its
// submission and its wait, so it is never below what the stage costs there).
// A stage the pipeline can run at a cost below every one of these is one the
// ideal never saw: an ideal made of the stage alone only was beaten by 4% on
// the H100 (docs/results/h100-2026-12-06-b). Values <= 0 (not timed) are
// passed over; none timed: 0, the stage is absent.
inline double double_buffer_stage_cost(std::initializer_list<double> seen) {
  double best = 0;
  for (double v : seen)
    if (v > 0 && (best == 0 || v < best)) best = v;
  return best;
}

struct DoubleBufferIdeal {
  double per_iteration = 0;  // the ideal time per iteration
  double balance = 0;        // second slowest stage over the slowest (1: overlap gains the most)
};

// The slowest stage per iteration, plus the pipeline's fill and drain (each
// other stage once, spread over the iterations). Never above the sum of the
// stages, so never above a sequential loop whose stages were timed inside it.
inline DoubleBufferIdeal double_buffer_ideal(std::array<double, 3> stages, size_t iterations) {
  std::sort(stages.begin(), stages.end());
  DoubleBufferIdeal r;
  r.per_iteration = stages[2] + (stages[0] + stages[1]) / double(std::max<size_t>(1, iterations));
  r.balance = stages[2] > 0 ? stages[1] / stages[2] : 0;
  return r;
}

}  // namespace lrrt::tool::bench
