// The layout for a terminal: sections at the left margin, their content
// indented, tables with aligned columns.
#include <algorithm>

#include "tool/printers/printer.hpp"
#include "tool/printers/text_width.hpp"
#include "tool/printers/views.hpp"

namespace lrrt::tool::printers {
namespace {

constexpr size_t kIndent = 2;

void print_table(const Table& t, const std::string& indent, std::ostream& os) {
  std::vector<size_t> width(t.columns.size());
  for (size_t i = 0; i < t.columns.size(); ++i) width[i] = text_width(t.columns[i]);
  for (const auto& row : t.rows)
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], text_width(row[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = indent;
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      const bool last = i + 1 == width.size();
      const bool right = t.column_align(i) == Align::Right;
      out += last && !right ? cell : pad(cell, width[i], right);
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    os << out << "\n";
  };
  line(t.columns);
  for (const auto& row : t.rows) line(row);
}

class TablePrinter final : public Printer {
 public:
  void print(const nlohmann::json& doc, std::ostream& os) const override {
    const View* view = find_view(doc);
    if (!view) return make_json_printer()->print(doc, os);
    bool first = true;
    const Layout layout = view->layout(doc);
    for (const Block& b : layout.blocks()) {
      const std::string indent((b.kind == Block::Kind::Heading ? 0 : kIndent) + kIndent * size_t(b.depth), ' ');
      switch (b.kind) {
        case Block::Kind::Heading:
          if (!first && b.depth == 0) os << "\n";
          os << indent << b.text << "\n";
          break;
        case Block::Kind::Text:
          os << indent << b.text << "\n";
          break;
        case Block::Kind::Fields: {
          size_t key_width = 12;
          for (const auto& [k, v] : b.fields) key_width = std::max(key_width, text_width(k));
          for (const auto& [k, v] : b.fields) os << indent << pad(k, key_width + 1, false) << v << "\n";
          break;
        }
        case Block::Kind::Items:
          for (const auto& item : b.items) os << indent << item << "\n";
          break;
        case Block::Kind::Table:
          print_table(b.table, indent, os);
          break;
      }
      first = false;
    }
  }
};

}  // namespace

std::unique_ptr<Printer> make_table_printer() { return std::make_unique<TablePrinter>(); }

}  // namespace lrrt::tool::printers
