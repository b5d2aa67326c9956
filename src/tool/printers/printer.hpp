// Result printers behind one interface, one per format, for every result
// kind (run, info, inspect, bench, compare):
//   json      the document itself
//   csv       one row per record of the kind (run, device, kernel argument,
//             measurement, compared row), RFC 4180 quoting
//   markdown  the kind's layout as a report, after a header from `meta`
//   table     the kind's layout for a terminal
// A document is the JSON a subcommand builds: "kind" names it (bench files
// without one are known by "schema": "lrrt-bench/1"). A kind no view knows
// prints as JSON in every format.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lrrt::tool::printers {

class Printer {
 public:
  virtual ~Printer() = default;
  virtual void print(const nlohmann::json& doc, std::ostream& os) const = 0;
};

// "table", "json", "csv", "markdown".
const std::vector<std::string>& formats();
// Throws InputError naming the known formats.
std::unique_ptr<Printer> make_printer(const std::string& format);
// The document in a format, as text.
std::string render(const nlohmann::json& doc, const std::string& format);

}  // namespace lrrt::tool::printers

namespace lrrt::tool::printers {

// The printers, one file each (<format>_printer.cpp).
std::unique_ptr<Printer> make_json_printer();
std::unique_ptr<Printer> make_csv_printer();
std::unique_ptr<Printer> make_markdown_printer();
std::unique_ptr<Printer> make_table_printer();

}  // namespace lrrt::tool::printers
