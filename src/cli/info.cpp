// lrrt info: every backend (usable or why not) and every device's properties.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "tool/meta.hpp"

namespace lrrt::cli {
namespace {

void info_command(const CommonOptions& o) {
  lrrt::Runtime runtime;
  nlohmann::json backends = nlohmann::json::array();
  for (const auto& b : lrrt::Runtime::backends())
    backends.push_back({{"name", b.name}, {"usable", b.usable != 0}, {"device_count", b.device_count}, {"message", b.message}});
  nlohmann::json devices = nlohmann::json::array();
  std::optional<lrrt::Device> host;
  const uint32_t n = lrrt::Runtime::device_count();
  for (uint32_t i = 0; i < n; ++i) {
    lrrt::Device d = lrrt::Device::open(i);
    devices.push_back(tool::device_json(d));
    devices.back()["memory"] = tool::memory_json(d.memory_info());
    if (devices.back()["backend"] == "host") host = d;
  }
  // Peer access between the devices of each backend that has several.
  nlohmann::json peers = nlohmann::json::array();
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < n; ++j)
      if (i != j && devices[i]["backend"] == devices[j]["backend"]) {
        nlohmann::json pair{{"device", i}, {"peer", j},
                            {"can_access", lrrt::Device::open(i).can_access_peer(lrrt::Device::open(j))}};
        // The link, where the backend describes it (a device detail "link to <backend> device <ordinal>").
        const std::string key = fmt::format("link to {} device {}", devices[j]["backend"].get<std::string>(),
                                            devices[j]["backend_ordinal"].get<uint32_t>());
        if (const auto& d = devices[i]["details"]; d.is_object() && d.contains(key)) pair["link"] = d[key];
        peers.push_back(std::move(pair));
      }
  nlohmann::json doc{{"lrrt_results", 1},
                     {"kind", "info"},
                     {"meta", tool::make_meta("info", argv(), host ? &*host : nullptr)},
                     {"backends", backends},
                     {"devices", devices},
                     {"peer_access", peers}};
  emit_document(doc, o);
}

}  // namespace

void register_info(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  CLI::App* sub = app.add_subcommand("info", "List backends (usable, or why not) and every device's properties");
  add_common_options(*sub, *o, kOptFormat | kOptOutput | kOptQuiet);
  sub->footer(R"(Examples:
  lrrt info
  lrrt info --format json | jq '.devices[] | {backend, index, name, arch}')");
  sub->callback([o] { info_command(*o); });
}

}  // namespace lrrt::cli
