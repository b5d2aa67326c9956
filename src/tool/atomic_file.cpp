#include "tool/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tool/bundle.hpp"

namespace lrrt::tool {

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  namespace fs = std::filesystem;
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) throw InputError(fmt::format("{}: cannot create file: {}", path.string(), std::strerror(errno)));
  auto fail = [&](const char* what) {
    int err = errno;
    ::close(fd);
    ::unlink(name.data());
    throw InputError(fmt::format("{}: {}: {}", path.string(), what, std::strerror(err)));
  };
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; results are ordinary files.
  mode_t mask = ::umask(0);
  ::umask(mask);
  (void)::fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0) fail("fsync failed");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(name.data());
    throw InputError(fmt::format("{}: close failed: {}", path.string(), std::strerror(err)));
  }
  if (::rename(name.data(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(name.data());
    throw InputError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(err)));
  }
}

}  // namespace lrrt::tool
