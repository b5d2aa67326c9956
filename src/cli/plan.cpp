// lrrt plan: the graph the runtime derives for a sequence manifest (nodes,
// edges with their hazard kinds, lanes, every fence or barrier and why), from
// lr_graph_exec_get_plan, as a table, JSON or Graphviz DOT.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/meta.hpp"
#include "tool/printers/printer.hpp"
#include "tool/printers/views.hpp"
#include "tool/sequence_runner.hpp"

namespace lrrt::cli {
namespace {

struct PlanArgs {
  CommonOptions common;
  std::vector<std::string> manifests;
};

void plan_command(PlanArgs& a) {
  std::vector<tool::Manifest> manifests;
  for (const auto& path : a.manifests) {
    manifests.push_back(tool::load_manifest(path));
    if (!manifests.back().sequence)
      throw tool::InputError(fmt::format("{}: not a sequence manifest (it runs kernel \"{}\"); `lrrt plan` shows the graph "
                                         "of a manifest with \"sequence\" (docs/manifest.md, \"Sequences\")",
                                         path, manifests.back().kernel));
  }
  // DOT is this command's own format: -o FILE.dot (or .gv) picks it too.
  if (a.common.format.empty() && !a.common.output.empty()) {
    const std::string ext = std::filesystem::path(a.common.output).extension().string();
    if (ext == ".dot" || ext == ".gv") a.common.format = "dot";
  }

  lrrt::Runtime runtime;
  lrrt::Device device = open_device(a.common);
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& m : manifests) {
    try {
      plans.push_back(tool::plan_sequence(m, device, kernel_dir(a.common)));
    } catch (const bundle::Error& e) {
      throw bundle::Error(e.exit_code(), m.path.string() + ": " + e.what());
    }
  }
  const bool on_host = device.backend() == "host";
  nlohmann::json doc{{"lrrt_results", 1},
                     {"kind", "plan"},
                     {"meta", tool::make_meta("plan", argv(), on_host ? &device : nullptr)},
                     {"device", tool::device_json(device)},
                     {"plans", plans}};
  if (a.common.format != "dot") {
    emit_document(doc, a.common);
    return;
  }
  const std::string dot = tool::printers::plan_dot(doc);
  if (a.common.output.empty()) {
    std::cout << dot << std::flush;
    return;
  }
  tool::write_file_atomic(a.common.output, dot);
  if (!a.common.quiet) std::cerr << "wrote " << a.common.output << "\n";
}

}  // namespace

void register_plan(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Show the graph a sequence manifest replays as: steps, dependency edges (RAW/WAR/WAW/explicit), lanes, fences");
  sub->add_option("manifest", args->manifests, "Sequence manifest file(s) (JSON, see docs/manifest.md, \"Sequences\")")
      ->required()
      ->check(CLI::ExistingFile);
  // A plan needs a device but no GPU: host unless --backend says otherwise.
  args->common.backend = "host";
  add_common_options(*sub, args->common, kOptAll & ~kOptFormat);
  sub->get_option("--backend")->default_str("host");
  std::vector<std::string> formats = tool::printers::formats();
  formats.push_back("dot");
  sub->add_option("--format", args->common.format,
                  "Output format: table, json, csv, markdown or dot (Graphviz; default: from -o's extension, .dot/.gv = "
                  "dot, else table on a terminal, json otherwise)")
      ->check(CLI::IsMember(formats));
  sub->footer(R"(The plan is the runtime's, not the tool's: lrrt loads the manifest's kernels on the
device, allocates its buffers (uninitialised), records every step with its declared
accesses, instantiates the graph once and prints lr_graph_exec_get_plan. Nothing runs.
It needs a device for that; the default backend here is host (--backend hsa or cuda shows
that backend's lowering: AQL packets with barrier bits and fences, or a CUDA graph).

What it shows:
  nodes   one per step after "repeat" is expanded (saxpy[41] = the 42nd repetition), with
          its lane (queue) and its place in the submission order
  edges   only those the data flow needs (transitive reduction), each with its hazards:
          RAW read-after-write, WAR write-after-read, WAW write-after-write, explicit ("after")
  sync    every wait, fork, join, barrier or fence the lowering placed, with the reason

Examples:
  lrrt plan manifests/diamond.json                         table on the terminal
  lrrt plan --format json manifests/diamond.json | jq '.plans[0].plan.edges'
  lrrt plan -o diamond.dot manifests/diamond.json && dot -Tsvg diamond.dot > diamond.svg
  lrrt plan --backend hsa manifests/saxpy_chain.json       the AQL packets (on an AMD GPU)

Exit codes: 0 ok, 2 usage/input error (not a sequence, bad manifest), 3 runtime/device error.)");
  sub->callback([args] { plan_command(*args); });
}

}  // namespace lrrt::cli
