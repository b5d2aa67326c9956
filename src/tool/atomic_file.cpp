#include "tool/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tool/bundle.hpp"

namespace lrrt::tool {
namespace {

namespace fs = std::filesystem;

enum class Target { Create, Replace, WriteThrough, Descriptor };

struct Resolved {
  fs::path path;  // the final target: symbolic links followed
  Target how = Target::Create;
  int fd = -1;    // Descriptor: write to this open descriptor
};

// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name descriptors
// lrrt already has open; writing to the descriptor is what the user means
// (reopening a redirected file would truncate or overwrite what is there).
int named_descriptor(const fs::path& path) {
  const std::string p = path.lexically_normal().string();
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string pre = prefix;
    if (p.size() > pre.size() && p.size() <= pre.size() + 6 && p.compare(0, pre.size(), pre) == 0 &&
        p.find_first_not_of("0123456789", pre.size()) == std::string::npos)
      return std::atoi(p.c_str() + pre.size());
  }
  return -1;
}

std::string describe(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Resolved resolve_special(const fs::path& path) {
  if (::access(path.c_str(), W_OK) != 0)
    throw InputError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
  return {path, Target::WriteThrough};
}

// Where and how a path is written; throws InputError for what is refused.
Resolved resolve(const fs::path& path, int depth = 0) {
  if (path.empty()) throw InputError("an output path is empty");
  if (const int fd = named_descriptor(path); fd >= 0) {
    if (::fcntl(fd, F_GETFL) < 0 || (::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY)
      throw InputError(fmt::format("{}: descriptor {} is not open for writing", path.string(), fd));
    return {path, Target::Descriptor, fd};
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw InputError(fmt::format("{}: cannot write here: {}", path.string(), std::strerror(errno)));
    Resolved r{path, Target::Create};
    fs::path dir = path.parent_path();
    if (dir.empty()) dir = ".";
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) != 0)
      throw InputError(fmt::format("{}: cannot create file: folder {}: {}", path.string(), dir.string(),
                                   std::strerror(errno)));
    if (!S_ISDIR(ds.st_mode))
      throw InputError(fmt::format("{}: cannot create file: {} is not a folder", path.string(), dir.string()));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      throw InputError(fmt::format("{}: cannot create file in {}: {}", path.string(), dir.string(), std::strerror(errno)));
    return r;
  }
  if (S_ISLNK(st.st_mode)) {
    struct stat target {};
    if (::stat(path.c_str(), &target) != 0)
      throw InputError(fmt::format("{}: a symbolic link whose target cannot be reached ({}); write to its target "
                                   "or remove the link",
                                   path.string(), std::strerror(errno)));
    // A link to a pipe or device is written through as it stands.
    if (S_ISFIFO(target.st_mode) || S_ISCHR(target.st_mode)) return resolve_special(path);
    // realpath follows every link: the real file is replaced, the link stays.
    std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
    if (!real || depth > 0)
      throw InputError(fmt::format("{}: a symbolic link lrrt cannot follow to a file", path.string()));
    return resolve(fs::path(real.get()), depth + 1);
  }
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return resolve_special(path);
  if (!S_ISREG(st.st_mode))
    throw InputError(fmt::format("{}: is {}; lrrt writes results to regular files, FIFOs and character devices only",
                                 path.string(), describe(st.st_mode)));
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  // Replacing needs the folder (rename); the file's own mode does not matter
  // to rename, but a read-only file is a clear sign it must stay.
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{}: cannot replace the file in {}: {}", path.string(), dir.string(), std::strerror(errno)));
  if (::access(path.c_str(), W_OK) != 0)
    throw InputError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
  return {path, Target::Replace};
}

// write(2) until done; false with errno set on failure.
bool write_all(int fd, std::string_view content) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

void write_through(const fs::path& shown, const fs::path& path, std::string_view content) {
  // O_NONBLOCK: opening a FIFO without a reader fails (ENXIO) instead of
  // blocking for ever; writes are blocking again afterwards.
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENXIO) throw InputError(fmt::format("{}: a FIFO with no reader", shown.string()));
    throw InputError(fmt::format("{}: cannot write: {}", shown.string(), std::strerror(errno)));
  }
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const bool ok = write_all(fd, content);
  const int err = errno;
  ::close(fd);
  if (!ok) throw OutputError(fmt::format("{}: write failed: {}", shown.string(), std::strerror(err)));
}

}  // namespace

void check_output_path(const fs::path& path) { (void)resolve(path); }

void write_file_atomic(const fs::path& shown, std::string_view content) {
  const Resolved target = resolve(shown);
  if (target.how == Target::WriteThrough) return write_through(shown, target.path, content);
  if (target.how == Target::Descriptor) {
    std::cout.flush();  // what lrrt printed before comes first
    std::fflush(stdout);
    if (!write_all(target.fd, content))
      throw OutputError(fmt::format("{}: write failed: {}", shown.string(), std::strerror(errno)));
    return;
  }

  const fs::path& path = target.path;
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    // The folder was writable a moment ago: out of inodes, quota, I/O.
    throw OutputError(fmt::format("{}: cannot create file: {}", shown.string(), std::strerror(errno)));
  }
  auto fail = [&](const char* what, int err) {
    ::unlink(name.data());
    throw OutputError(fmt::format("{}: {}: {}", shown.string(), what, std::strerror(err)));
  };
  if (!write_all(fd, content)) {
    int err = errno;
    ::close(fd);
    fail("write failed", err);
  }
  // mkstemp creates 0600; results are ordinary files. A replaced file keeps
  // its mode.
  mode_t mode = 0;
  struct stat old {};
  if (target.how == Target::Replace && ::stat(path.c_str(), &old) == 0) {
    mode = old.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  (void)::fchmod(fd, mode);
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    fail("fsync failed", err);
  }
  if (::close(fd) != 0) fail("close failed", errno);
  if (::rename(name.data(), path.c_str()) != 0) fail("cannot write", errno);
}

void PendingFiles::check(const fs::path& path) {
  const fs::path key = fs::absolute(path).lexically_normal();
  for (const auto& p : checked_)
    if (p == key) throw InputError(fmt::format("{}: written twice by one command", path.string()));
  check_output_path(path);
  checked_.push_back(key);
}

void PendingFiles::add(fs::path path, std::string content) { files_.push_back({std::move(path), std::move(content)}); }

void PendingFiles::commit() {
  for (const auto& f : files_) write_file_atomic(f.path, f.content);
  files_.clear();
}

}  // namespace lrrt::tool
