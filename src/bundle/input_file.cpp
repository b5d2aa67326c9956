#include "lrrt/bundle/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "lrrt/bundle/errors.hpp"

namespace lrrt::bundle {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30) && bytes % (uint64_t(1) << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

InputFile::InputFile(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check
  // below refuses it anyway.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    throw InputError(fmt::format("{}: cannot stat: {}", path.string(), std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw InputError(fmt::format("{}: is {}; lrrt reads only regular files", path.string(), file_kind(st.st_mode)));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("{}: read failed: {}", path_.string(), std::strerror(errno)));
    if (n == 0)
      throw InputError(fmt::format("{}: ends at byte {}, {} bytes were expected (did it change while lrrt read it?)",
                                   path_.string(), offset + done, offset + out.size()));
    done += static_cast<size_t>(n);
  }
}

std::vector<std::byte> InputFile::read_all(uint64_t max_bytes) const {
  if (size_ > max_bytes)
    throw InputError(fmt::format("{}: is {} bytes, more than the {} lrrt reads", path_.string(), size_, size_text(max_bytes)));
  std::vector<std::byte> out(static_cast<size_t>(size_));
  read_at(0, out);
  return out;
}

std::vector<std::byte> read_input_file(const std::filesystem::path& path, uint64_t max_bytes) {
  return InputFile(path).read_all(max_bytes);
}

std::vector<std::byte> read_code_object_file(
    const std::filesystem::path& path, const std::function<std::string(std::span<const std::byte>)>& looks_like) {
  InputFile file(path);
  std::vector<std::byte> head(std::min<uint64_t>(file.size(), kCodeObjectHeadBytes));
  file.read_at(0, head);
  if (const std::string why = looks_like(head); !why.empty())
    throw InputError(fmt::format("{}: {} ({} bytes; not read further)", path.string(), why, file.size()));
  return file.read_all(kMaxCodeObjectBytes);
}

}  // namespace lrrt::bundle
