#include "tool/printers/printer.hpp"

#include <fmt/format.h>

#include <sstream>

#include "lrrt/bundle/text.hpp"
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

namespace {

// A copy with every string and key made valid UTF-8.
nlohmann::json with_valid_utf8(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      return bundle::is_valid_utf8(s) ? j : nlohmann::json(bundle::escape_invalid_utf8(s));
    }
    case nlohmann::json::value_t::array: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& v : j) out.push_back(with_valid_utf8(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [k, v] : j.items()) out[bundle::escape_invalid_utf8(k)] = with_valid_utf8(v);
      return out;
    }
    default:
      return j;
  }
}

}  // namespace

std::string json_text(const nlohmann::json& doc, int indent) {
  try {
    return doc.dump(indent);
  } catch (const nlohmann::json::type_error& e) {
    if (e.id != 316) throw;  // 316: invalid UTF-8
  }
  return with_valid_utf8(doc).dump(indent);
}

std::string render(const nlohmann::json& doc, const std::string& format) {
  std::ostringstream os;
  make_printer(format)->print(doc, os);
  return os.str();
}

}  // namespace lrrt::tool::printers
