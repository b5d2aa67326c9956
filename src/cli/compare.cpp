// Placeholder for `lrrt compare` until its implementation lands; replace this file.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "tool/errors.hpp"

namespace lrrt::cli {

void register_compare(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("compare", "(not implemented yet)");
  sub->allow_extras();
  sub->callback([] { throw tool::InputError("lrrt compare: not implemented yet"); });
}

}  // namespace lrrt::cli
