// `lrrt info`: {"kind": "info", "meta", "backends": [...], "devices": [...]}.
#include <fmt/format.h>

#include "tool/printers/views.hpp"
#include "tool/units.hpp"

namespace lrrt::tool::printers {

using nlohmann::json;

Table info_records(const json& doc) {
  Table t;
  t.columns = {"index", "backend", "backend_ordinal", "name", "arch", "compute_units", "wave_size",
               "max_workgroup_size", "max_shared_memory_per_workgroup", "memory_bytes"};
  const size_t device_fields = t.columns.size();
  for (const char* c : {"last_level_cache_bytes", "peak_bandwidth_gbps", "peak_bandwidth_source"}) t.columns.push_back(c);
  const json& devices = member(doc, "devices");
  if (devices.is_array())
    for (const auto& d : devices) {
      std::vector<std::string> row;
      for (size_t c = 0; c < device_fields; ++c) row.push_back(text_of(d, t.columns[c].c_str()));
      const json& mem = member(d, "memory");
      for (const char* c : {"last_level_cache_bytes", "peak_bandwidth_gbps", "peak_bandwidth_source"}) row.push_back(text_of(mem, c));
      t.rows.push_back(std::move(row));
    }
  return t;
}

Layout info_layout(const json& doc) {
  Layout out;
  out.heading("Backends");
  Table backends;
  backends.columns = {"backend", "usable", "devices", "message"};
  backends.align = {Align::Left, Align::Left, Align::Right, Align::Left};
  const json& bs = member(doc, "backends");
  if (bs.is_array())
    for (const auto& b : bs)
      backends.rows.push_back({text_of(b, "name"), b.value("usable", false) ? "usable" : "unusable",
                               text_of(b, "device_count", "0"), text_of(b, "message")});
  out.table(std::move(backends));

  out.heading("Devices");
  const json& devices = member(doc, "devices");
  if (!devices.is_array() || devices.empty()) {
    out.text("none");
    return out;
  }
  Table t;
  t.columns = {"#", "backend", "name", "arch", "CUs", "wave", "max wg", "shared/wg", "memory", "LLC", "peak bandwidth"};
  t.align = {Align::Right, Align::Left,  Align::Left,  Align::Left, Align::Right, Align::Right,
             Align::Right, Align::Right, Align::Right, Align::Right, Align::Right};
  for (const auto& d : devices) {
    const json& mem = member(d, "memory");
    const double peak = number_of(mem, "peak_bandwidth_gbps");
    const std::string source = text_of(mem, "peak_bandwidth_source");
    t.rows.push_back({text_of(d, "index"), text_of(d, "backend"), text_of(d, "name"), text_of(d, "arch"),
                      text_of(d, "compute_units"), text_of(d, "wave_size"), text_of(d, "max_workgroup_size"),
                      format_bytes(number_of(d, "max_shared_memory_per_workgroup")),
                      format_bytes(number_of(d, "memory_bytes")),
                      number_of(mem, "last_level_cache_bytes") > 0 ? format_bytes(number_of(mem, "last_level_cache_bytes")) : "?",
                      peak > 0 ? format_gbps(peak) + (source == "measured" ? " (measured)" : "") : "?"});
  }
  out.table(std::move(t));
  // Peer access (lr_device_can_access_peer): one row per device with a peer.
  const json& peers = member(doc, "peer_access");
  if (peers.is_array() && !peers.empty()) {
    out.heading("Peer access (can the row's device reach the column's memory)");
    std::vector<std::string> ids;
    for (const auto& d : devices) ids.push_back(text_of(d, "index"));
    Table m;
    m.columns = {"device"};
    for (const auto& id : ids) m.columns.push_back(id);
    m.align.assign(m.columns.size(), Align::Right);
    for (const auto& row : ids) {
      std::vector<std::string> cells{row};
      bool any = false;
      for (const auto& col : ids) {
        std::string cell = row == col ? "-" : "";
        for (const auto& p : peers)
          if (text_of(p, "device") == row && text_of(p, "peer") == col) {
            cell = p.value("can_access", false) ? "yes" : "no";
            any = true;
          }
        cells.push_back(cell);
      }
      if (any) m.rows.push_back(std::move(cells));
    }
    out.table(std::move(m));
  }
  for (const auto& d : devices) {
    const json& details = member(d, "details");
    if (!details.is_object() || details.empty()) continue;
    out.heading(fmt::format("Device {} ({} {})", text_of(d, "index"), text_of(d, "backend"), text_of(d, "name")));
    std::vector<std::pair<std::string, std::string>> fields;
    for (const auto& [k, v] : details.items()) fields.push_back({k, v.is_string() ? v.get<std::string>() : v.dump()});
    const json& mem = member(d, "memory");
    if (!text_of(mem, "last_level_cache_method").empty()) fields.push_back({"last-level cache", text_of(mem, "last_level_cache_method")});
    if (!text_of(mem, "peak_bandwidth_method").empty()) fields.push_back({"peak bandwidth", text_of(mem, "peak_bandwidth_method")});
    out.fields(std::move(fields));
  }
  return out;
}

}  // namespace lrrt::tool::printers
