#include "lrrt/bundle/json_input.hpp"

#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "lrrt/bundle/errors.hpp"
#include "lrrt/bundle/input_file.hpp"
#include "lrrt/bundle/text.hpp"

namespace lrrt::bundle {

using nlohmann::json;

json parse_json_strict(std::string_view text, const std::string& what) {
  std::vector<std::unordered_set<std::string>> keys;  // one set per open object
  std::vector<std::string> path;                      // keys of the open objects, for messages
  auto where = [&] {  // the object holding the key: every open level but the innermost
    std::string p;
    for (size_t i = 0; i + 1 < path.size(); ++i) p += "/" + printable(path[i], 40);
    return p.empty() ? std::string("the top-level object") : "object " + p;
  };
  json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw InputError(fmt::format("{}: nested more than {} levels deep", what, kMaxJsonDepth));
        if (event == json::parse_event_t::object_start) {
          keys.emplace_back();
          path.emplace_back();
        }
        break;
      case json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys.back().insert(key).second)
          throw InputError(fmt::format("{}: key \"{}\" appears twice in {} (JSON would keep only the last one)", what,
                                       printable(key, 60), where()));
        path.back() = key;
        break;
      }
      case json::parse_event_t::object_end:
        keys.pop_back();
        path.pop_back();
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    throw InputError(fmt::format("{}: malformed JSON: {}", what, printable(msg, 300)));
  } catch (const json::out_of_range& e) {
    // A number beyond a double (7e777777): the parser's other exception.
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    throw InputError(fmt::format("{}: malformed JSON: {}", what, printable(msg, 300)));
  }
}

json read_json_file(const std::filesystem::path& path, uint64_t max_bytes) {
  auto bytes = read_input_file(path, max_bytes);
  return parse_json_strict(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path.string());
}

std::string json_excerpt(const json& value, size_t max_bytes) {
  // ensure_ascii escapes every non-ASCII and control character; replace
  // stands in for invalid UTF-8 instead of throwing.
  std::string text = value.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
  if (text.size() > max_bytes) text = text.substr(0, max_bytes) + fmt::format("... ({} more bytes)", text.size() - max_bytes);
  return text;
}

}  // namespace lrrt::bundle
