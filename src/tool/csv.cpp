#include "tool/csv.hpp"

#include "lrrt/bundle/text.hpp"

namespace lrrt::tool {

std::string csv_field(const std::string& raw) {
  // Fields may quote inputs: no ESC, NUL or bidi control reaches a terminal
  // that shows the CSV (line breaks stay, quoted).
  // CR stays too: RFC 4180 fields may hold CRLF, and a quoted CR is inert.
  std::string field;
  for (size_t start = 0;;) {
    const size_t cr = raw.find('\r', start);
    field += bundle::terminal_safe(std::string_view(raw).substr(start, cr == std::string::npos ? cr : cr - start));
    if (cr == std::string::npos) break;
    field += '\r';
    start = cr + 1;
  }
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  return out + "\n";
}

}  // namespace lrrt::tool
