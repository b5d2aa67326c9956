// One row per record of the kind, under a header row (RFC 4180).
#include "tool/csv.hpp"
#include "tool/printers/printer.hpp"
#include "tool/printers/views.hpp"

namespace lrrt::tool::printers {
namespace {

class CsvPrinter final : public Printer {
 public:
  void print(const nlohmann::json& doc, std::ostream& os) const override {
    const View* view = find_view(doc);
    if (!view) return make_json_printer()->print(doc, os);
    const Table t = view->records(doc);
    os << csv_row(t.columns);
    for (const auto& row : t.rows) os << csv_row(row);
  }
};

}  // namespace

std::unique_ptr<Printer> make_csv_printer() { return std::make_unique<CsvPrinter>(); }

}  // namespace lrrt::tool::printers
