// Placeholder for `lrrt bench` until its implementation lands; replace this file.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "tool/errors.hpp"

namespace lrrt::cli {

void register_bench(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("bench", "(not implemented yet)");
  sub->allow_extras();
  sub->callback([] { throw tool::InputError("lrrt bench: not implemented yet"); });
}

}  // namespace lrrt::cli
