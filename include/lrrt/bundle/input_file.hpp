// Files lrrt reads that other programs wrote (code objects, .npy and raw
// buffers, result files): opened once, checked before they are read.
//
// Only regular files are accepted: /dev/zero, a FIFO or a directory would
// otherwise be read until memory runs out or block forever. The size is known
// from fstat before any byte is read, so a caller checks a header or an
// expected size first and never reads 3 GiB only to reject them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <functional>
#include <string>
#include <vector>

namespace lrrt::bundle {

class InputFile {
 public:
  // Throws InputError naming the file: missing, unreadable, or not a regular
  // file (device, FIFO, socket, directory).
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return size_; }

  // Reads exactly out.size() bytes at offset; InputError if the file ends
  // first (it may have changed since it was opened).
  void read_at(uint64_t offset, std::span<std::byte> out) const;
  // The whole file; InputError naming `max_bytes` when it is larger.
  std::vector<std::byte> read_all(uint64_t max_bytes) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole of a regular file of at most max_bytes (InputError otherwise).
std::vector<std::byte> read_input_file(const std::filesystem::path& path, uint64_t max_bytes);

// Largest code object lrrt reads (a fat library's GPU code is tens of MB).
inline constexpr uint64_t kMaxCodeObjectBytes = uint64_t(4) << 30;

// How much of a file tells what it is: magic numbers, and PTX's ".version"
// and ".target", which sit near its start.
inline constexpr uint64_t kCodeObjectHeadBytes = 8192;

// A code object file, read whole only when its first bytes look like one:
// `looks_like` gets the first min(size, kCodeObjectHeadBytes) bytes and
// returns "" to go on, or why not (InputError naming the file, before a
// 4 GiB file of zeros is read).
std::vector<std::byte> read_code_object_file(
    const std::filesystem::path& path, const std::function<std::string(std::span<const std::byte>)>& looks_like);

}  // namespace lrrt::bundle
