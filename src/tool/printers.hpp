// Result printers behind one interface. A document is the JSON the tool
// produces ("kind": "run" with "runs", "kind": "info" with "backends" and
// "devices", or anything else a subcommand builds); every printer takes any
// document and falls back to JSON for kinds it does not know.
//
// Built-in formats: json, csv (one row per run / device), table (for a
// terminal). Others (e.g. markdown for bench) register with register_printer.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lrrt::tool {

class Printer {
 public:
  virtual ~Printer() = default;
  virtual void print(const nlohmann::json& doc, std::ostream& os) const = 0;
};

using PrinterFactory = std::function<std::unique_ptr<Printer>()>;

// Adds or replaces a format.
void register_printer(const std::string& format, PrinterFactory factory);
// Throws InputError naming the known formats.
std::unique_ptr<Printer> make_printer(const std::string& format);
std::vector<std::string> printer_formats();

// Renders a document to a string in a format.
std::string render(const nlohmann::json& doc, const std::string& format);

// {"lrrt_version", "git_sha", "argv", "date_utc", "host"}
nlohmann::json make_meta(const std::vector<std::string>& argv);

// Helpers shared by printers: "1.23 us", "12.3 GB/s", "1.5 GiB".
std::string format_ns(double ns);
std::string format_bytes(double bytes);
// CSV field quoting (RFC 4180).
std::string csv_field(const std::string& s);

}  // namespace lrrt::tool
