// The layout as a markdown report (GitHub flavour), after a header that says
// where and how the result was made (the `meta` block, the same for every
// kind, and the devices).
#include <fmt/format.h>

#include "tool/printers/printer.hpp"
#include "tool/printers/views.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::printers {
namespace {

using nlohmann::json;

// Markdown is line-structured: a line break inside a name (a file called
// "a\n| b") would end a heading or list item and start a table row.
// Every line the markdown printer writes goes through here: one line, and
// nothing from an input (argv, device names) reaches the reader raw.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return bundle::terminal_safe(s);
}

std::string cell(std::string s) {
  for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
  return one_line(std::move(s));
}

// The title, then a list of what `meta` and the devices say; returns
// whether there was one.
bool print_header(const json& doc, const View& view, std::ostream& os) {
  const json& meta = member(doc, "meta");
  os << fmt::format("# lrrt {} results\n", view.kind);
  json devices = member(doc, "devices").is_array() ? member(doc, "devices") : json::array();
  if (member(doc, "device").is_object()) devices.push_back(doc["device"]);
  if (!meta.is_object() && devices.empty()) return false;
  os << "\n";
  if (meta.is_object()) {
    os << fmt::format("- lrrt {} (git {}{}), {}\n", text_of(meta, "version", "?"), text_of(meta, "git_sha", "?"),
                      member(meta, "git_dirty") == true ? ", dirty" : "", text_of(meta, "date", "?"));
    std::string machine = text_of(meta, "host", "?");
    if (meta.contains("cpu") && !meta["cpu"].is_null()) machine += ": " + text_of(meta, "cpu");
    if (meta.contains("cpu_cores")) machine += fmt::format(", {} cores", text_of(meta, "cpu_cores"));
    if (number_of(meta, "memory_bytes") > 0) machine += ", " + format_bytes(number_of(meta, "memory_bytes"));
    if (!text_of(meta, "kernel").empty()) machine += ", " + text_of(meta, "kernel");
    os << "- " << one_line(machine) << "\n";
    std::string argv;
    if (member(meta, "argv").is_array())
      for (const auto& a : meta["argv"]) argv += (argv.empty() ? "" : " ") + (a.is_string() ? a.get<std::string>() : a.dump());
    if (!argv.empty()) os << "- `" << one_line(argv) << "`\n";
  }
  for (const auto& d : devices)
    os << one_line(fmt::format("- device: {} `{}` ({})", text_of(d, "backend", "?"), text_of(d, "name", "?"),
                               text_of(d, "arch", "?")))
       << "\n";
  return true;
}

void print_table(const Table& t, std::ostream& os) {
  std::string head = "|", rule = "|";
  for (size_t i = 0; i < t.columns.size(); ++i) {
    head += " " + cell(t.columns[i]) + " |";
    rule += t.column_align(i) == Align::Right ? " ---: |" : " --- |";
  }
  os << head << "\n" << rule << "\n";
  for (const auto& row : t.rows) {
    std::string line = "|";
    for (size_t i = 0; i < t.columns.size(); ++i) line += " " + cell(i < row.size() ? row[i] : "") + " |";
    os << line << "\n";
  }
}

class MarkdownPrinter final : public Printer {
 public:
  void print(const json& doc, std::ostream& os) const override {
    const View* view = find_view(doc);
    if (!view) return make_json_printer()->print(doc, os);
    bool in_list = print_header(doc, *view, os);  // the header ends in a list
    int folded_depth = -1;  // depth of the open <details>, -1 when none
    auto close_fold = [&] {
      os << "\n</details>\n";
      folded_depth = -1;
    };
    const Layout layout = view->layout(doc);
    for (const Block& b : layout.blocks()) {
      const bool list = b.kind == Block::Kind::Fields || b.kind == Block::Kind::Items;
      if (!(list && in_list)) os << "\n";
      in_list = list;
      const std::string indent(2 * size_t(b.depth), ' ');
      switch (b.kind) {
        case Block::Kind::Heading:
          if (folded_depth >= 0 && b.depth <= folded_depth) close_fold(), os << "\n";
          if (b.folded) {
            os << "<details><summary>" << one_line(b.text) << "</summary>\n";
            folded_depth = b.depth;
          } else {
            os << std::string(size_t(b.depth) + 2, '#') << " " << one_line(b.text) << "\n";
          }
          break;
        case Block::Kind::Text:
          os << (b.strong ? "**" + one_line(b.text) + "**" : one_line(b.text)) << "\n";
          break;
        case Block::Kind::Fields:
          for (const auto& [k, v] : b.fields) os << indent << "- **" << one_line(k) << "**: " << one_line(v) << "\n";
          break;
        case Block::Kind::Items:
          for (const auto& item : b.items) os << indent << "- " << one_line(item) << "\n";
          break;
        case Block::Kind::Table:
          print_table(b.table, os);
          break;
      }
    }
    if (folded_depth >= 0) close_fold();
  }
};

}  // namespace

std::unique_ptr<Printer> make_markdown_printer() { return std::make_unique<MarkdownPrinter>(); }

}  // namespace lrrt::tool::printers
