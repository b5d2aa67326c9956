#include "cli/common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/printers/printer.hpp"

namespace lrrt::cli {

namespace {
std::vector<std::string>& argv_store() {
  static std::vector<std::string> v;
  return v;
}
int& exit_code_store() {
  static int code = 0;
  return code;
}
}  // namespace

void set_exit_code(int code) { exit_code_store() = code; }
int exit_code() { return exit_code_store(); }

void set_argv(int argc, char** argv) {
  argv_store().assign(argv, argv + argc);
}
const std::vector<std::string>& argv() { return argv_store(); }

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

namespace {

// Longest limit accepted (about 31 years): beyond it the milliseconds would
// not fit the runtime's counter, and nobody means it; 0 waits forever.
constexpr double kMaxTimeoutSeconds = 1e9;

// Seconds as lr_set_wait_timeout_ms takes them. 0 means "wait forever", so a
// positive limit below a millisecond is rounded up to 1 ms, never down to 0.
uint64_t timeout_ms(double seconds) {
  if (seconds <= 0) return 0;
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(seconds * 1000)));
}

}  // namespace

void check_environment() {
  // The library's one parser (lr_check_environment): every LRRT_* variable,
  // before any work, so a bad one is an input error (exit 2) naming it.
  if (lr_check_environment() != LR_SUCCESS) throw bundle::InputError(lr_last_error_message());
}

void apply_default_timeout() {
  uint64_t ms = 0;
  int is_set = 0;
  if (lr_get_environment_u64("LRRT_WAIT_TIMEOUT_MS", &ms, &is_set) != LR_SUCCESS)
    throw bundle::InputError(lr_last_error_message());
  // lr_init reads the variable; without it, the CLI's default.
  if (!is_set) (void)lr_set_wait_timeout_ms(timeout_ms(kDefaultTimeoutSeconds));
}

CLI::Validator finite_number(double lo, double hi, const std::string& unit) {
  return CLI::Validator(
      [lo, hi, unit](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
          return fmt::format("expected a finite number of {} from {:g} to {:g}, got '{}'", unit, lo, hi,
                             tool::printable(text, 40));
        return std::string();
      },
      unit);
}

CLI::Validator whole_number(uint64_t lo, uint64_t hi, const std::string& unit) {
  return CLI::Validator(
      [lo, hi, unit](std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.size() <= 19 && text.find_first_not_of("0123456789") == std::string::npos;
        const uint64_t v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (!digits || v < lo || v > hi)
          return fmt::format("expected a whole number of {} from {} to {}, got '{}'", unit, lo, hi,
                             tool::printable(text, 40));
        return std::string();
      },
      unit);
}

void add_common_options(CLI::App& sub, CommonOptions& o, unsigned which) {
  if (which & kOptTimeout)
    sub.add_option_function<double>(
           "--timeout",
           [&o](double seconds) {
             o.timeout_s = seconds;
             (void)lr_set_wait_timeout_ms(timeout_ms(seconds));
           },
           "Seconds any wait for the device may take before lrrt gives up with exit code 3 (a hung "
           "kernel); 0 waits forever, a limit below 1 ms is 1 ms (default: 300, or $LRRT_WAIT_TIMEOUT_MS "
           "in milliseconds)")
        ->check(finite_number(0, kMaxTimeoutSeconds, "SECONDS"));
  if (which & kOptBackend)
    sub.add_option("--backend", o.backend,
                   "Backend to run on: auto (first GPU, else host), host, hsa or cuda")
        ->check(CLI::IsMember({"auto", "host", "hsa", "cuda"}))
        ->default_str("auto");
  if ((which & kOptDevice) && (which & kOptDeviceAll))
    sub.add_option_function<std::string>(
           "--device",
           [&o](const std::string& v) {
             if (v == "all") {
               o.all_devices = true;
               return;
             }
             o.device = static_cast<unsigned>(std::stoul(v));
           },
           "Device ordinal within the chosen backend, or all: every device of the backend at once, one thread each")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
              const bool digits = !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos;
              return v == "all" || digits ? std::string() : "expected a device ordinal (0, 1, ...) or all, not '" + v + "'";
            },
            "N|all"))
        ->default_str("0");
  else if (which & kOptDevice)
    sub.add_option("--device", o.device, "Device ordinal within the chosen backend")->default_str("0");
  if (which & kOptFormat)
    sub.add_option("--format", o.format,
                   "Output format: table, json, csv or markdown (default: from -o's extension, else table on a "
                   "terminal, json otherwise)")
        ->check(CLI::IsMember(tool::printers::formats()));
  if (which & kOptOutput)
    sub.add_option("-o,--output", o.output,
                   "Write the results to FILE (atomically: a complete file or none) instead of stdout; the "
                   "extension picks the format (.json, .csv, .md, .txt); checked before any work")
        // Checked while parsing, before any work: a bad -o fails in a
        // moment, not after an hour of benchmarks.
        ->check(CLI::Validator(
            [](std::string& path) -> std::string {
              try {
                tool::check_output_path(path);
              } catch (const tool::InputError& e) {
                return tool::printable(e.what(), 400);
              }
              return std::string();
            },
            "FILE"));
  if (which & kOptQuiet)
    sub.add_flag("-q,--quiet", o.quiet, "No progress notes on stderr and, with -o, no table on stdout");
  if (which & kOptKernelDir)
    sub.add_option("--kernel-dir", o.kernel_dir,
                   "Folder that @kernels/ in manifests refers to (default: $LRRT_KERNEL_DIR, else kernels/ next to the lrrt binary, else an installed lrrt's share/lrrt/kernels)");
}

std::string effective_format(const CommonOptions& o) {
  if (!o.format.empty()) return o.format;
  if (!o.output.empty()) {
    const std::string ext = std::filesystem::path(o.output).extension().string();
    if (ext == ".csv") return "csv";
    if (ext == ".md" || ext == ".markdown") return "markdown";
    if (ext == ".txt") return "table";
    return "json";
  }
  return stdout_is_terminal() ? "table" : "json";
}

void write_output_file(const nlohmann::json& doc, const CommonOptions& o) {
  if (!o.output.empty()) tool::write_file_atomic(o.output, tool::printers::render(doc, effective_format(o)));
}

void emit_document(const nlohmann::json& doc, const CommonOptions& o) { emit_document(doc, doc, o); }

void emit_document(const nlohmann::json& doc, const nlohmann::json& file_doc, const CommonOptions& o) {
  if (o.output.empty()) {
    std::cout << tool::printers::render(file_doc, effective_format(o)) << std::flush;
    return;
  }
  write_output_file(file_doc, o);
  if (o.quiet) return;
  std::cout << tool::printers::render(doc, "table") << std::flush;
  std::cerr << "wrote " << o.output << "\n";
}

lrrt::Device open_device(const CommonOptions& o) {
  try {
    return lrrt::Device::select(o.backend, o.device);
  } catch (const lrrt::Error& e) {
    throw tool::DeviceError(fmt::format("--backend {} --device {}: no such usable device: {} (see `lrrt info`)", o.backend,
                                        o.device, e.what()));
  }
}

std::filesystem::path kernel_dir(const CommonOptions& o) {
  if (!o.kernel_dir.empty()) return o.kernel_dir;
  if (const char* env = std::getenv("LRRT_KERNEL_DIR"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "kernels";
  // The build tree has kernels/ next to lrrt; an installed lrrt has them in
  // <prefix>/share/lrrt/kernels (cmake/install.cmake).
  const auto beside = exe.parent_path() / "kernels";
#ifdef LRRT_INSTALLED_KERNEL_DIR
  if (!std::filesystem::is_directory(beside, ec)) {
    const auto installed = exe.parent_path() / LRRT_INSTALLED_KERNEL_DIR;
    if (std::filesystem::is_directory(installed, ec)) return installed.lexically_normal();
  }
#endif
  return beside;
}

void note(const CommonOptions& o, const std::string& message) {
  if (!o.quiet) std::cerr << tool::terminal_safe(message) << "\n";
}


namespace {
// The only state the signal handlers touch (sig_atomic_t).
volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_grace_seconds = 0;

// The first SIGINT/SIGTERM: asks the command to stop at its next boundary,
// makes the next one kill as usual, and arms the grace period. Only
// async-signal-safe calls.
extern "C" void lrrt_cli_on_stop_signal(int sig) {
  g_stop_signal = sig;
  std::signal(sig, SIG_DFL);
  if (g_grace_seconds) ::alarm(static_cast<unsigned>(g_grace_seconds));
}

// The grace period passed and the command is still running (one long kernel,
// a long upload): it ends now, killed by the signal it was sent (exit status
// 128 + the signal), saying so.
// An alarm lrrt did not set (one inherited across exec, a watchdog) ends
// the process as SIGALRM would have.
extern "C" void lrrt_cli_on_stop_grace(int) {
  static const char kMessage[] = "lrrt: still running 5 s after the stop signal (a long kernel or copy): stopping now\n";
  static_assert(kStopGraceSeconds == 5, "the message names the grace period");
  const int sig = g_stop_signal ? g_stop_signal : SIGALRM;
  if (g_stop_signal) (void)!::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A signal ignored when lrrt started (nohup, a background job) stays ignored.
void (*install(int sig, void (*handler)(int)))(int) {
  void (*old)(int) = std::signal(sig, handler);
  if (old == SIG_IGN) std::signal(sig, SIG_IGN);
  return old;
}
}  // namespace

StopSignals::StopSignals(unsigned grace_seconds) {
  g_stop_signal = 0;
  g_grace_seconds = static_cast<std::sig_atomic_t>(grace_seconds);
  old_alarm_ = std::signal(SIGALRM, lrrt_cli_on_stop_grace);
  old_int_ = install(SIGINT, lrrt_cli_on_stop_signal);
  old_term_ = install(SIGTERM, lrrt_cli_on_stop_signal);
}
StopSignals::~StopSignals() {
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
  ::alarm(0);
  std::signal(SIGALRM, old_alarm_);
}
void StopSignals::stopping() { ::alarm(0); }
bool StopSignals::requested() { return g_stop_signal != 0; }
int StopSignals::signal() { return g_stop_signal; }

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace lrrt::cli
