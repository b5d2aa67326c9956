// The LRRT_* environment variables lrrt reads (the library's and the lrrt
// tool's), and the one strict parser for all of them (docs/environment.md).
//
// An unset or empty variable is "not set". A set one must be well formed:
// counts are digits only (no sign, no spaces, no suffix), range-checked;
// sizes are digits with an optional binary K, M or G; choices are one of a
// fixed list. Anything else throws Error(LR_ERROR_INVALID_ARGUMENT) naming
// the variable and its value (escaped, bounded). lr_init checks every one
// (check_all) before anything is made, so a bad value fails there, not in
// the middle of a run; lr_check_environment exposes the same check to the
// CLI and Python, lr_get_environment_u64 the same reading.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace lrrt::rt::env {

enum class Kind {
  Count,   // digits: a whole number from min to max
  Size,    // digits with an optional K, M or G (KiB, MiB, GiB): bytes from min to max
  Choice,  // one of `choices` ("a|b|c")
  Text,    // any text (a path, a list); listed for the docs, never refused
};

struct Variable {
  const char* name;
  Kind kind;
  uint64_t min = 0;
  uint64_t max = 0;
  // Count: what the number is ("a whole number of threads"); Choice: the
  // choices, separated by '|'.
  const char* what = "";
  // Added to the message of a bad value ("; unset it for one thread per core").
  const char* hint = "";
};

// The library's variables.
inline constexpr Variable kWaitTimeoutMs{"LRRT_WAIT_TIMEOUT_MS", Kind::Count, 0, 1'000'000'000'000,
                                         "a whole number of milliseconds", " (0 waits forever)"};
inline constexpr Variable kWaitSpinUs{"LRRT_WAIT_SPIN_US", Kind::Count, 0, 60'000'000,
                                      "a whole number of microseconds", " (0 blocks at once)"};
inline constexpr Variable kStaging{"LRRT_STAGING", Kind::Choice, 0, 0, "auto|off|force|0|no"};
inline constexpr Variable kStagingThreads{"LRRT_STAGING_THREADS", Kind::Count, 1, 64, "a whole number of threads"};
inline constexpr Variable kStagingChunk{"LRRT_STAGING_CHUNK", Kind::Size, 4096, uint64_t(1) << 30};
inline constexpr Variable kStagingSlots{"LRRT_STAGING_SLOTS", Kind::Count, 1, 64, "a whole number of slots"};
inline constexpr Variable kStagingMin{"LRRT_STAGING_MIN", Kind::Size, 1, UINT64_MAX};
inline constexpr Variable kStagingPollUs{"LRRT_STAGING_POLL_US", Kind::Count, 0, 100'000,
                                         "a whole number of microseconds"};
inline constexpr Variable kStagingTrace{"LRRT_STAGING_TRACE", Kind::Choice, 0, 0, "0|1"};
inline constexpr Variable kStagingNt{"LRRT_STAGING_NT", Kind::Choice, 0, 0, "d2h|h2d|both|none"};
inline constexpr Variable kGraphMaxInFlight{"LRRT_GRAPH_MAX_IN_FLIGHT", Kind::Count, 1, 64, "a count of replays"};
inline constexpr Variable kHostThreads{"LRRT_HOST_THREADS", Kind::Count, 1, 1024, "a whole number of threads",
                                       "; unset it for one thread per core"};
inline constexpr Variable kHostDevices{"LRRT_HOST_DEVICES", Kind::Count, 1, 64, "a whole number of devices",
                                       "; unset it for one host device"};
inline constexpr Variable kCudaSync{"LRRT_CUDA_SYNC", Kind::Choice, 0, 0, "query|flag|launch"};
inline constexpr Variable kCudaPdl{"LRRT_CUDA_PDL", Kind::Choice, 0, 0, "0|1"};
inline constexpr Variable kCudaGraphCompletion{"LRRT_CUDA_GRAPH_COMPLETION", Kind::Choice, 0, 0,
                                               "deferred|node|node-spin|record|record-spin"};
inline constexpr Variable kCudaGraphContext{"LRRT_CUDA_GRAPH_CONTEXT", Kind::Choice, 0, 0, "0|1"};
inline constexpr Variable kCudaGraphKernelParams{"LRRT_CUDA_GRAPH_KERNEL_PARAMS", Kind::Choice, 0, 0, "0|1"};
inline constexpr Variable kCudaLibrary{"LRRT_CUDA_LIBRARY", Kind::Text};
inline constexpr Variable kHsaLibrary{"LRRT_HSA_LIBRARY", Kind::Text};
// Test-only switches of the library (docs/testing.md).
inline constexpr Variable kTestDropEdge{"LRRT_TEST_DROP_EDGE", Kind::Count, 0, UINT32_MAX, "an edge index"};
inline constexpr Variable kTestWorstOrder{"LRRT_TEST_WORST_ORDER", Kind::Choice, 0, 0, "0|1"};
inline constexpr Variable kTestShareReplaySignals{"LRRT_TEST_SHARE_REPLAY_SIGNALS", Kind::Choice, 0, 0, "0|1"};
// The lrrt tool's (read through lr_get_environment_u64 or after
// lr_check_environment).
inline constexpr Variable kKernelDir{"LRRT_KERNEL_DIR", Kind::Text};
inline constexpr Variable kHoldQueue{"LRRT_HOLD_QUEUE", Kind::Choice, 0, 0, "0|1"};
inline constexpr Variable kBenchReplayCases{"LRRT_BENCH_REPLAY_CASES", Kind::Text};
inline constexpr Variable kBenchReplayWays{"LRRT_BENCH_REPLAY_WAYS", Kind::Choice, 0, 0, "all|lrrt"};
inline constexpr Variable kTestMemAvailable{"LRRT_TEST_MEMAVAILABLE_BYTES", Kind::Count, 0, UINT64_MAX,
                                            "a whole number of bytes"};

// Every variable above, in the order docs/environment.md lists them.
std::span<const Variable* const> variables();
// The variable of that name, or nullptr.
const Variable* find(std::string_view name);

// A Count or Size variable: nullopt when not set.
std::optional<uint64_t> number(const Variable& v);
// A Choice or Text variable, as set: nullopt when not set.
std::optional<std::string> text(const Variable& v);
// A "0|1" Choice: fallback when not set.
bool flag(const Variable& v, bool fallback);

// Reads every variable; the first bad one throws.
void check_all();

}  // namespace lrrt::rt::env
