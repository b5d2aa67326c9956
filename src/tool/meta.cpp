#include "tool/meta.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <thread>

#include <fmt/format.h>

#include "tool/version.hpp"

namespace lrrt::tool {
namespace {

// A command's first line of output, trimmed; "" when it fails.
std::string command_output(const char* command) {
  std::string out;
  FILE* p = ::popen(command, "r");
  if (!p) return out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  if (::pclose(p) != 0) return {};
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return date;
}

}  // namespace

nlohmann::json make_meta(std::string_view command, const std::vector<std::string>& argv, const lrrt::Device* host) {
  nlohmann::json meta;
  meta["tool"] = fmt::format("lrrt {}", command);
  meta["version"] = version();
  // git_sha is the commit the binary was built from. The tree it runs in
  // says whether that commit had local changes only when it is the same
  // commit; a different checkout (or a stale copy of one) is recorded apart.
  const std::string built = git_sha();
  const std::string cwd_sha = command_output("git rev-parse --short=12 HEAD 2>/dev/null");
  meta["git_sha"] = built;
  meta["build_git_sha"] = built;
  meta["git_dirty"] = nullptr;
  meta["cwd_git_sha"] = nullptr;
  if (!cwd_sha.empty() && cwd_sha == built)
    meta["git_dirty"] = !command_output("git status --porcelain --untracked-files=no 2>/dev/null").empty();
  else if (!cwd_sha.empty())
    meta["cwd_git_sha"] = cwd_sha;
  meta["argv"] = argv;
  meta["date"] = utc_now();
  char hostname[256] = {};
  if (::gethostname(hostname, sizeof(hostname) - 1) != 0) hostname[0] = '\0';
  meta["host"] = hostname;
  meta["cpu"] = nullptr;
  meta["memory_bytes"] = nullptr;
  if (host) {
    const lr_device_properties_t p = host->properties();
    meta["cpu"] = p.name;
    meta["memory_bytes"] = p.memory_bytes;
  }
  meta["cpu_cores"] = std::thread::hardware_concurrency();
  struct utsname u {};
  meta["kernel"] = uname(&u) == 0 ? nlohmann::json(fmt::format("{} {} {}", u.sysname, u.release, u.machine))
                                  : nlohmann::json(nullptr);
  meta["options"] = nlohmann::json::object();
  return meta;
}

nlohmann::json device_json(const lrrt::Device& device) {
  const lr_device_properties_t p = device.properties();
  nlohmann::json details = nlohmann::json::object();
  for (const auto& [k, v] : device.details()) details[k] = v;
  return {{"backend", p.backend},
          {"index", device.index()},
          {"backend_ordinal", p.backend_ordinal},
          {"name", p.name},
          {"arch", p.arch},
          {"compute_units", p.compute_units},
          {"wave_size", p.wave_size},
          {"max_workgroup_size", p.max_workgroup_size},
          {"max_workgroup_dims", {p.max_workgroup_dims.x, p.max_workgroup_dims.y, p.max_workgroup_dims.z}},
          {"max_shared_memory_per_workgroup", p.max_shared_memory_per_workgroup},
          {"memory_bytes", p.memory_bytes},
          {"details", std::move(details)}};
}


nlohmann::json memory_json(const lr_device_memory_info_t& m) {
  const char* source = m.peak_bandwidth_source == LR_PEAK_BANDWIDTH_REPORTED   ? "reported"
                       : m.peak_bandwidth_source == LR_PEAK_BANDWIDTH_MEASURED ? "measured"
                                                                               : "unknown";
  return {{"last_level_cache_bytes", m.last_level_cache_bytes},
          {"last_level_cache_method", m.last_level_cache_method},
          {"peak_bandwidth_gbps", m.peak_bandwidth_bytes_per_second / 1e9},
          {"peak_bandwidth_source", source},
          {"peak_bandwidth_method", m.peak_bandwidth_method}};
}

}  // namespace lrrt::tool
