// JSON documents lrrt reads (manifests, result files for compare), parsed
// strictly: one document and nothing after it, valid UTF-8, no key twice in
// one object (JSON libraries keep only the last, silently), and nesting
// bounded so that nothing later recurses 100,000 levels deep.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lrrt::bundle {

inline constexpr int kMaxJsonDepth = 64;
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t(256) << 20;

// Throws InputError starting with `what` (usually the file name).
nlohmann::json parse_json_strict(std::string_view text, const std::string& what);
// A regular file of at most max_bytes, parsed strictly.
nlohmann::json read_json_file(const std::filesystem::path& path, uint64_t max_bytes = kMaxJsonFileBytes);

// A JSON value for an error message: compact, ASCII, cut to max_bytes.
std::string json_excerpt(const nlohmann::json& value, size_t max_bytes = 60);

}  // namespace lrrt::bundle
