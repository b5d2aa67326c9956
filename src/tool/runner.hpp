// Runs a manifest on a device: load, allocate, initialise, one verified
// launch from the initial inputs, then warm-up and timed launches, then
// verification and saving. The result is one JSON object per run (see
// docs/manifest.md, "Results").
//
// Why the verified launch is separate: timed iterations run back to back on
// the same buffers, so a kernel that updates a buffer in place (saxpy:
// y += a*x) would have applied itself warmup+iterations times. The verified
// outputs therefore come from exactly one launch on freshly uploaded initial
// data; the timed launches run afterwards on re-uploaded initial data, and
// their outputs are never checked.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"
#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/sampling.hpp"

namespace lrrt::tool {

struct RunOptions {
  std::filesystem::path kernel_dir;
  std::optional<uint32_t> warmup;      // overrides the manifest
  std::optional<uint32_t> iterations;  // overrides the manifest
  bool verify = true;                  // false: verification "skipped" (--no-verify)
  bool explain = false;                // sequences: add the replay's plan to the result (--explain)
  std::function<void(const std::string&)> note;  // progress messages, may be empty
  // Where `save` outputs go: null writes them at once; `lrrt run` collects
  // them and writes them only when every manifest has succeeded.
  PendingFiles* deferred_saves = nullptr;
  // How the timed loop samples and stops (sampling.hpp).
  TimingOptions timing;
  // The device's LLC and peak bandwidth: with it, throughput reports the
  // percentage of the peak (null: GB/s and elements/s only).
  const lr_device_memory_info_t* memory = nullptr;
  // Sweeps: an error before the first launch (the launch beyond the device's
  // limits, the run too big for its memory, an allocation failure) is thrown
  // as Unrunnable, so the sweep reports the state skipped and goes on.
  bool unrunnable_as_skip = false;
};

// A state that cannot run on this device (RunOptions::unrunnable_as_skip);
// the exit code of the error it stands for.
class Unrunnable : public bundle::Error {
 public:
  Unrunnable(int exit_code, const std::string& reason) : bundle::Error(exit_code, reason) {}
};

// The throughput of a timed launch: {"bytes_per_iteration", "bandwidth_gbps",
// "elements_per_iteration", "elements_per_second", "peak_bandwidth_gbps",
// "percent_of_peak", "peak_source"}, the fields the manifest declares what
// for; null when it declares neither bytes nor elements.
// Whether an error preparing a run says the state cannot run on this device
// (see RunOptions::unrunnable_as_skip).
bool cannot_run_here(const bundle::Error& e);

nlohmann::json throughput_json(const Manifest& m, double median_ns, const lr_device_memory_info_t* memory);

// The run's result object. Verification failure is reported in it
// (verification.status == "failed"), not thrown. Input problems throw
// InputError/ManifestError (exit 2), device problems DeviceError (exit 3).
nlohmann::json run_manifest(const Manifest& m, const lrrt::Device& device, const RunOptions& options);

// The result's "buffers": every buffer with its init (the seed drawn, for
// random fills) and access.
// `access_sources[i]` (when given and not empty): where buffer i's access
// came from ("declared", "actual_access", "access", "ttir"; docs/access.md).
nlohmann::json buffers_json(const Manifest& m, const std::vector<std::optional<uint64_t>>& seeds,
                            const std::vector<std::string>* access_sources = nullptr);
// The buffers to read back after the verified run: the checked and the saved.
std::vector<bool> buffers_read_back(const Manifest& m);
// What running m (one kernel or a sequence) on a `backend` device holds at
// its peak, as the runners make their copies: every buffer on the device;
// on the host its initial contents, the read-back outputs (of the eager and
// replayed runs, and the patched replay's, for a sequence), the largest
// expected-values array (one check at a time), the sequence reference, and
// each reference_backend run's outputs (and its buffers, on host). With
// `verify` false no expected values or reference runs.
MemoryDemand memory_demand(const Manifest& m, std::string_view backend, bool verify);
// Refuses a save of m onto a file its run reads (an init or expected npy or
// raw file), which would change the next run's inputs or replace the expected
// values with the outputs they check: ManifestError naming /save/N/npy and
// the field that reads the file. Paths are compared as files (one inode
// after following links), so "./a.npy", "sub/../a.npy" and links are caught.
void check_saves(const Manifest& m);
// The same across a command: refuses -o (`output`, may be empty) or a save
// of one manifest onto a manifest of the command or onto another manifest's
// init or expected file. InputError naming both.
void check_command_writes(const std::vector<Manifest>& manifests, const std::filesystem::path& output);
// Writes (or, with `deferred`, collects) the "save" outputs as .npy files;
// the result's "saved".
nlohmann::json save_outputs(const Manifest& m, const BufferContents& outputs, PendingFiles* deferred = nullptr);

// Timing statistics over samples in nanoseconds: {"samples", "min_ns",
// "median_ns", "mean_ns", "stddev_ns", "max_ns"}; null without samples.
nlohmann::json timing_json(const std::vector<uint64_t>& samples_ns);

}  // namespace lrrt::tool
