// The document itself, indented.
#include "tool/printers/printer.hpp"

namespace lrrt::tool::printers {
namespace {

class JsonPrinter final : public Printer {
 public:
  void print(const nlohmann::json& doc, std::ostream& os) const override { os << json_text(doc) << "\n"; }
};

}  // namespace

std::unique_ptr<Printer> make_json_printer() { return std::make_unique<JsonPrinter>(); }

}  // namespace lrrt::tool::printers
