#include "tool/printers/views.hpp"

#include "tool/bench_result.hpp"

namespace lrrt::tool::printers {

const View* find_view(const nlohmann::json& doc) {
  static const View kViews[] = {
      {"run", "runs", run_records, run_layout},
      {"info", "devices", info_records, info_layout},
      {"bench", "measurements", bench_records, bench_layout},
      {"compare", "rows", compare_records, compare_layout},
      {"inspect", "objects", inspect_records, inspect_layout},
      {"plan", "plans", plan_records, plan_layout},
  };
  if (!doc.is_object()) return nullptr;
  std::string kind = text_of(doc, "kind");
  if (kind.empty() && text_of(doc, "schema") == bench::kSchema) kind = "bench";
  for (const auto& v : kViews)
    if (kind == v.kind) return doc.contains(v.list) ? &v : nullptr;
  return nullptr;
}

const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string text_of(const nlohmann::json& j, const char* key, const std::string& missing) {
  if (!j.is_object()) return missing;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return missing;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

double number_of(const nlohmann::json& j, const char* key, double missing) {
  if (!j.is_object()) return missing;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return missing;
  return it->get<double>();
}

}  // namespace lrrt::tool::printers
