// Writes a file so that readers see either the old file, no file, or the
// whole new content: a temporary file in the same folder, fsync, rename. On
// any failure the temporary is removed and nothing is left behind.
#pragma once

#include <filesystem>
#include <string_view>

namespace lrrt::tool {

// Throws InputError naming the path when the file cannot be written.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

}  // namespace lrrt::tool
