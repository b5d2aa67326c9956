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
// The one way lrrt writes JSON (the json printer, lrrt inspect's stream):
// indented like the json printer. A string or key that is not valid UTF-8
// (a kernel name from a code object, a file name from the OS; JSON strings
// must be UTF-8) has each invalid byte written as the text \xNN, as tables,
// CSV and messages show it (bundle::escape_invalid_utf8).
std::string json_text(const nlohmann::json& doc, int indent = 2);

}  // namespace lrrt::tool::printers

namespace lrrt::tool::printers {

// The printers, one file each (<format>_printer.cpp).
std::unique_ptr<Printer> make_json_printer();
std::unique_ptr<Printer> make_csv_printer();
std::unique_ptr<Printer> make_markdown_printer();
std::unique_ptr<Printer> make_table_printer();

}  // namespace lrrt::tool::printers
