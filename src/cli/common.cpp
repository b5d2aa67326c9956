#include "cli/common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
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

void apply_default_timeout() {
  if (const char* env = std::getenv("LRRT_WAIT_TIMEOUT_MS"); env && *env) {
    (void)lr_set_wait_timeout_ms(std::strtoull(env, nullptr, 10));
    return;
  }
  (void)lr_set_wait_timeout_ms(static_cast<uint64_t>(kDefaultTimeoutSeconds * 1000));
}

void add_common_options(CLI::App& sub, CommonOptions& o, unsigned which) {
  if (which & kOptTimeout)
    sub.add_option_function<double>(
           "--timeout",
           [&o](double seconds) {
             o.timeout_s = seconds;
             (void)lr_set_wait_timeout_ms(static_cast<uint64_t>(seconds * 1000));
           },
           "Seconds any wait for the device may take before lrrt gives up with exit code 3 (a hung "
           "kernel); 0 waits forever (default: 300, or $LRRT_WAIT_TIMEOUT_MS in milliseconds)")
        ->check(CLI::NonNegativeNumber);
  if (which & kOptBackend)
    sub.add_option("--backend", o.backend,
                   "Backend to run on: auto (first GPU, else host), host, hsa or cuda")
        ->check(CLI::IsMember({"auto", "host", "hsa", "cuda"}))
        ->default_str("auto");
  if (which & kOptDevice)
    sub.add_option("--device", o.device, "Device ordinal within the chosen backend")->default_str("0");
  if (which & kOptFormat)
    sub.add_option("--format", o.format,
                   "Output format: table, json, csv or markdown (default: from -o's extension, else table on a "
                   "terminal, json otherwise)")
        ->check(CLI::IsMember(tool::printers::formats()));
  if (which & kOptOutput)
    sub.add_option("-o,--output", o.output,
                   "Write the results to FILE (atomically: a complete file or none) instead of stdout; the "
                   "extension picks the format (.json, .csv, .md, .txt)");
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
  if (!o.quiet) std::cerr << message << "\n";
}

}  // namespace lrrt::cli
