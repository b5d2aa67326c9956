// The noise of timing samples as a robust spread: the median absolute
// deviation scaled to a standard deviation (1.4826 x MAD, exact for normal
// samples), relative to the median. Rare outliers (a preemption, a clock
// change) barely move it, where they dominate a standard deviation: a 4.6 us
// kernel on the H100 read 63-93% "noisy" by standard deviation. Outliers are
// counted apart, so they are reported rather than hidden.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lrrt::tool {

struct Spread {
  double median = 0;
  double noise = 0;      // 1.4826 x MAD / median; 0 for fewer than two samples
  uint64_t outliers = 0;  // samples farther than kOutlierSigmas robust standard deviations from the median
  uint64_t slowest = 0;   // the largest sample
};

inline constexpr double kOutlierSigmas = 5;

// `scratch` is reused between calls (a loop checks the noise every round).
Spread robust_spread(const std::vector<uint64_t>& samples, std::vector<uint64_t>& scratch);

// How many checks of the noise a converged loop keeps stable, and how stable:
// as in nvbench's stdrel criterion, a noise that no longer moves (its spread
// over the window within 5% of its value) is the kernel's own variation, and
// more samples will not lower it.
inline constexpr size_t kConvergenceWindow = 16;
inline constexpr double kConvergedSpread = 0.05;

// Whether the last kConvergenceWindow checks (oldest first) agree with the
// newest one's noise within kConvergedSpread, and the median moved no more
// than that noise over them.
bool noise_converged(const std::vector<Spread>& history);

}  // namespace lrrt::tool
