// lrrt run: runs manifests (docs/manifest.md), times them and verifies their
// outputs.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/meta.hpp"
#include "tool/runner.hpp"
#include "tool/verify.hpp"

namespace lrrt::cli {
namespace {

struct RunArgs {
  CommonOptions common;
  std::vector<std::string> manifests;
  int iterations = -1;
  int warmup = -1;
  bool no_verify = false;
  bool explain = false;
};

void run_command(const RunArgs& a) {
  // Parse every manifest before touching a device: input errors come first.
  std::vector<tool::Manifest> manifests;
  for (const auto& path : a.manifests) {
    manifests.push_back(tool::load_manifest(path));
    try {
      tool::check_references(manifests.back());
      tool::check_saves(manifests.back());
    } catch (const tool::ManifestError& e) {
      throw tool::InputError(path + ": " + e.what());
    }
  }

  // Every file this command will write is checked now, not after the work:
  // -o, then each save (relative to its manifest's folder), none twice.
  tool::PendingFiles saves;
  if (!a.common.output.empty()) saves.check(a.common.output);
  for (const auto& m : manifests)
    for (const auto& s : m.save) {
      try {
        saves.check(s.file);
      } catch (const tool::InputError& e) {
        throw tool::InputError(fmt::format("{}: {}: {}", m.path.string(), s.pointer, e.what()));
      }
    }
  // Nor is any of them a file the command reads.
  tool::check_command_writes(manifests, a.common.output);

  lrrt::Runtime runtime;
  lrrt::Device device = open_device(a.common);

  tool::RunOptions opt;
  opt.kernel_dir = kernel_dir(a.common);
  if (a.iterations >= 0) opt.iterations = static_cast<uint32_t>(a.iterations);
  if (a.warmup >= 0) opt.warmup = static_cast<uint32_t>(a.warmup);
  opt.verify = !a.no_verify;
  opt.explain = a.explain;
  opt.note = [&](const std::string& s) { note(a.common, s); };
  opt.deferred_saves = &saves;  // written only when every manifest has run

  nlohmann::json runs = nlohmann::json::array();
  bool failed = false;
  for (const auto& m : manifests) {
    nlohmann::json r;
    try {
      r = tool::run_manifest(m, device, opt);
    } catch (const bundle::Error& e) {
      throw bundle::Error(e.exit_code(), m.path.string() + ": " + e.what());
    }
    const std::string status = r["verification"]["status"];
    if (status == "failed") failed = true;
    note(a.common, fmt::format("{}: verification {}", m.name, status));
    runs.push_back(std::move(r));
  }
  const bool on_host = device.backend() == "host";
  nlohmann::json doc{{"lrrt_results", 1},
                     {"kind", "run"},
                     {"meta", tool::make_meta("run", argv(), on_host ? &device : nullptr)},
                     {"device", tool::device_json(device)},
                     {"runs", runs}};
  saves.commit();
  emit_document(doc, a.common);
  set_exit_code(failed ? tool::kExitVerificationFailed : tool::kExitOk);
}

}  // namespace

void register_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Run manifests: load the kernel, initialise buffers, launch, time and verify");
  sub->add_option("manifest", args->manifests, "Manifest file(s) (JSON, see docs/manifest.md)")->required()->check(CLI::ExistingFile);
  add_common_options(*sub, args->common);
  sub->add_option("--iterations", args->iterations, "Timed launches per manifest (overrides the manifest)")
      ->check(CLI::Range(0, 10000000));
  sub->add_option("--warmup", args->warmup, "Untimed launches before timing (overrides the manifest)")
      ->check(CLI::Range(0, 1000000));
  sub->add_flag("--no-verify", args->no_verify, "Skip verification (reported as skipped)");
  sub->add_flag("--explain", args->explain,
                "Sequences: add the replay's plan (the derived graph, lanes and fences, as `lrrt plan` shows it) to the results");
  sub->footer(R"(The verified outputs come from one launch on freshly uploaded inputs; the timed
launches run afterwards on re-uploaded inputs, so kernels that update buffers in
place (saxpy) are checked against exactly one application.

A sequence manifest ("sequence": steps) runs three ways, each verified from fresh
inputs: eagerly (one launch per step), as a replay (recorded once, lr_graph_exec_launch),
and, with "patch", as replays with a scalar argument changed between them. The
results give the time per replay and per dispatch of each way and the eager/replay
ratio; --explain adds the plan (see `lrrt plan --help`).

Examples:
  lrrt run manifests/saxpy.json
  lrrt run --backend host --iterations 100 -o results.json manifests/*.json
  lrrt run --format csv manifests/reduce.json > reduce.csv
  lrrt run --backend host --explain manifests/diamond.json

Exit codes: 0 ok, 1 verification failed, 2 usage/input error, 3 runtime/device error.)");
  sub->callback([args] { run_command(*args); });
}

}  // namespace lrrt::cli
