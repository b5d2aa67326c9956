// Result files: written so that readers see either the old file, no file, or
// the whole new content (a temporary in the same folder, fsync, rename), and
// checked before any work so that a bad -o or save path fails at once.
//
// What a path may be:
//   missing or a regular file    replaced atomically (rename over it)
//   a symbolic link              its final target gets the same treatment,
//                                so the link stays a link
//   a FIFO or character device   written through, in place (/dev/null,
//                                /dev/stdout, a pipe with a reader); there is
//                                no atomicity to be had there
//   anything else                refused (directory, block device, socket,
//                                dangling link)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace lrrt::tool {

// Throws InputError (exit 2) naming the path when it could not be written:
// a missing or non-writable folder, a refused kind of file. Creates nothing.
void check_output_path(const std::filesystem::path& path);

// Writes the content as described above. Throws InputError when the path is
// refused (as check_output_path), OutputError (exit 3) when writing fails
// midway (disk full, I/O error); either way no temporary is left behind and
// the old file, if any, is unchanged.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Files a command writes only once all its work has succeeded (lrrt run's
// `save` outputs): collected, their paths checked when added, then written
// together. A failure before commit() writes nothing.
class PendingFiles {
 public:
  // Throws InputError when the path is refused or already pending.
  void check(const std::filesystem::path& path);
  void add(std::filesystem::path path, std::string content);
  // Writes them all, in the order added.
  void commit();
  bool empty() const { return files_.empty(); }

 private:
  struct File {
    std::filesystem::path path;
    std::string content;
  };
  std::vector<std::filesystem::path> checked_;
  std::vector<File> files_;
};

}  // namespace lrrt::tool
