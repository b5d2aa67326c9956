// lrrt: run GPU kernels from manifests on host, hsa (AMD) and cuda (NVIDIA)
// backends. One file per subcommand; each registers itself here.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "lrrt/lrrt.hpp"
#include "tool/bundle.hpp"
#include "tool/version.hpp"

namespace {

const char* kFooter = R"(Examples:
  lrrt info                                   backends and devices
  lrrt run manifests/saxpy.json               run, time and verify on the default device
  lrrt run --backend host -o out.json manifests/*.json
  lrrt run manifests/transpose.json --format csv --iterations 100
  lrrt plan --format dot -o diamond.dot manifests/diamond.json   a sequence's derived graph

Manifests are documented in docs/manifest.md (schema: docs/manifest.schema.json).

Exit codes:
  0  success
  1  verification failed (results are still written)
  2  usage or input error (bad option, manifest, code object, kernel, arguments)
  3  runtime or device error (no device, allocation failed, kernel fault)
On an error (2 or 3) no -o result file is written.)";

}  // namespace

// Messages quote names and values from input files: escaped (no raw ESC, NUL
// or bidi override reaches the terminal) and bounded.
constexpr size_t kMaxMessageBytes = 4000;

int main(int argc, char** argv) {
  lrrt::cli::set_argv(argc, argv);
  // A file-size limit (ulimit -f) makes write() fail with EFBIG, which lrrt
  // reports (exit 3, nothing half-written) instead of dying of SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"lrrt: a light GPU kernel runner for host, AMD (hsa) and NVIDIA (cuda) backends", "lrrt"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string(lrrt::tool::version()) + " (" + lrrt::tool::git_sha() + ")");
  app.require_subcommand(1);
  app.fallthrough(false);

  lrrt::cli::register_run(app);
  lrrt::cli::register_info(app);
  lrrt::cli::register_inspect(app);
  lrrt::cli::register_bench(app);
  lrrt::cli::register_compare(app);
  lrrt::cli::register_plan(app);
  lrrt::cli::register_init(app);

  try {
    lrrt::cli::check_environment();
    lrrt::cli::apply_default_timeout();  // before parsing: --timeout overrides it
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and usage
    return lrrt::tool::kExitInputError;
  } catch (const lrrt::bundle::Error& e) {
    std::fflush(stdout);
    std::cerr << "lrrt: error: " << lrrt::tool::printable(e.what(), kMaxMessageBytes) << "\n";
    return e.exit_code();
  } catch (const lrrt::Error& e) {
    std::fflush(stdout);
    std::cerr << "lrrt: error: " << lrrt::tool::printable(e.what(), kMaxMessageBytes) << "\n";
    const lr_status_t s = e.status();
    return (s == LR_ERROR_INVALID_ARGUMENT || s == LR_ERROR_INVALID_IMAGE || s == LR_ERROR_NOT_FOUND)
               ? lrrt::tool::kExitInputError
               : lrrt::tool::kExitRuntimeError;
  } catch (const std::bad_alloc&) {
    std::cerr << "lrrt: error: out of host memory\n";
    return lrrt::tool::kExitRuntimeError;
  } catch (const std::exception& e) {
    std::cerr << "lrrt: error: " << lrrt::tool::printable(e.what(), kMaxMessageBytes) << "\n";
    return lrrt::tool::kExitRuntimeError;
  }
  return lrrt::cli::exit_code();
}
