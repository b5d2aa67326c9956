// Options shared by the subcommands (--backend, --device, --format, -o,
// --quiet, --kernel-dir) and what they mean, in one place.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/lrrt.hpp"

namespace CLI {
class App;
class Validator;
}

namespace lrrt::cli {

struct CommonOptions {
  std::string backend = "auto";  // auto|host|hsa|cuda
  unsigned device = 0;           // ordinal among the backend's devices
  bool all_devices = false;      // --device all (commands with kOptDeviceAll)
  std::string format;            // table|json|csv|markdown ("" = from -o, else table on a terminal, else json)
  std::string output;            // -o FILE ("" = stdout)
  bool quiet = false;
  std::string kernel_dir;        // --kernel-dir ("" = $LRRT_KERNEL_DIR, <exe dir>/kernels or <prefix>/share/lrrt/kernels)
  double timeout_s = 0;          // --timeout (applied through lr_set_wait_timeout_ms)
};

enum CommonOption : unsigned {
  kOptBackend = 1u << 0,
  kOptDevice = 1u << 1,
  kOptFormat = 1u << 2,
  kOptOutput = 1u << 3,
  kOptQuiet = 1u << 4,
  kOptKernelDir = 1u << 5,
  kOptTimeout = 1u << 6,
  kOptAll = 0x7f,
  kOptDeviceAll = 1u << 7,  // --device also takes "all" (not in kOptAll)
};

// The wait limit the CLI applies unless --timeout or $LRRT_WAIT_TIMEOUT_MS
// says otherwise: a hung kernel becomes exit code 3 instead of a hung shell.
constexpr double kDefaultTimeoutSeconds = 300;
void apply_default_timeout();
// InputError (exit 2) naming the first LRRT_* variable set to a value lrrt
// does not take (lr_check_environment, docs/environment.md).
void check_environment();

// Validators for numeric options, applied to the text before CLI11 converts
// it: the whole text must be a finite number within [lo, hi] (whole digits
// only for counts), so "nan", "-1" for a count or "5x" are usage errors
// (exit 2) instead of a silent default or a wrapped value.
CLI::Validator finite_number(double lo, double hi, const std::string& unit);
CLI::Validator whole_number(uint64_t lo, uint64_t hi, const std::string& unit);


// Adds the selected common options to a subcommand, with help text.
void add_common_options(CLI::App& sub, CommonOptions& options, unsigned which = kOptAll);

// The format to write, chosen here for every subcommand: --format if given;
// else from -o's extension (.csv, .md/.markdown, .txt → table, anything else
// json); else table when stdout is a terminal, json otherwise.
std::string effective_format(const CommonOptions& options);

// Writes the document to -o FILE atomically in the effective format (no-op
// without -o). `lrrt bench` calls it after every benchmark.
void write_output_file(const nlohmann::json& doc, const CommonOptions& options);

// The end of every subcommand: the document in the effective format on
// stdout; or, with -o, the file (atomically), then, unless --quiet, a table
// on stdout and "wrote FILE" on stderr. `file_doc` (bench's
// --benchmark-format google) replaces what goes to the file and to stdout in
// the chosen format; the table always shows `doc`.
void emit_document(const nlohmann::json& doc, const CommonOptions& options);
void emit_document(const nlohmann::json& doc, const nlohmann::json& file_doc, const CommonOptions& options);

// Opens the device --backend/--device select; failures exit 3.
lrrt::Device open_device(const CommonOptions& options);

// --kernel-dir, else $LRRT_KERNEL_DIR, else the kernels/ folder next to the
// lrrt binary (the build tree), else <prefix>/share/lrrt/kernels for an
// installed lrrt.
std::filesystem::path kernel_dir(const CommonOptions& options);

// The process's argv, recorded for result metadata.
void set_argv(int argc, char** argv);
const std::vector<std::string>& argv();

// Progress notes on stderr, silenced by --quiet.
void note(const CommonOptions& options, const std::string& message);

bool stdout_is_terminal();


// Seconds a command has, after the first stop signal, to reach its next
// boundary (a measurement, a sweep's state) before it is ended at once.
inline constexpr unsigned kStopGraceSeconds = 5;

// Ctrl-C (or SIGTERM) during `lrrt bench` or a sweep: the first one stops at
// the next measurement or state, the command writes what finished marked
// interrupted and exits 128 + the signal. A second one kills as usual, and so
// does, in a sweep, the first one's grace period (kStopGraceSeconds) when the
// current state does not end within it (a kernel running minutes): then the
// process dies of the signal (128 + the signal too) and only what -o already
// held remains. Other commands (a plain `lrrt run`) install nothing:
// the signal ends them at once. Installs the handlers for one command and
// restores the previous ones; a signal ignored at start stays ignored.
class StopSignals {
 public:
  // grace_seconds: 0 waits for the boundary however long it takes (lrrt
  // bench: its measurements are bounded, and a slow one is still whole).
  explicit StopSignals(unsigned grace_seconds = kStopGraceSeconds);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static bool requested();
  static int signal();
  // The command reached its boundary and writes what finished: the grace
  // period no longer runs.
  static void stopping();

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
  void (*old_alarm_)(int);
};

bool stderr_is_terminal();

}  // namespace lrrt::cli
