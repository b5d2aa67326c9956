#include "tool/printers/printer.hpp"

#include <fmt/format.h>

#include <sstream>

#include "tool/bundle.hpp"

namespace lrrt::tool::printers {

const std::vector<std::string>& formats() {
  static const std::vector<std::string> kFormats = {"table", "json", "csv", "markdown"};
  return kFormats;
}

std::unique_ptr<Printer> make_printer(const std::string& format) {
  if (format == "json") return make_json_printer();
  if (format == "csv") return make_csv_printer();
  if (format == "markdown") return make_markdown_printer();
  if (format == "table") return make_table_printer();
  std::string known;
  for (const auto& f : formats()) known += (known.empty() ? "" : ", ") + f;
  throw InputError(fmt::format("unknown format \"{}\" (expected one of: {})", format, known));
}

std::string render(const nlohmann::json& doc, const std::string& format) {
  std::ostringstream os;
  make_printer(format)->print(doc, os);
  return os.str();
}

}  // namespace lrrt::tool::printers
