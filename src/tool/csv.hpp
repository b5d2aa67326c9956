// CSV as RFC 4180 writes it: a field with a comma, quote, CR or LF is quoted
// and its quotes doubled; rows end in "\n". The one CSV writer of the tool.
#pragma once

#include <string>
#include <vector>

namespace lrrt::tool {

std::string csv_field(const std::string& field);
// The fields quoted as needed, joined with commas, ending in "\n".
std::string csv_row(const std::vector<std::string>& fields);

}  // namespace lrrt::tool
