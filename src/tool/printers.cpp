#include "tool/printers.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <mutex>
#include <sstream>

#include "tool/errors.hpp"
#include "tool/version.hpp"

namespace lrrt::tool {

using nlohmann::json;

namespace {

std::string str(const json& j, const char* key, const std::string& def = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

double num(const json& j, const char* key, double def = 0) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return def;
  return it->get<double>();
}

std::string dims(const json& a) {
  std::string out;
  for (const auto& v : a) out += (out.empty() ? "" : " x ") + v.dump();
  return out;
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

class JsonPrinter : public Printer {
 public:
  void print(const json& doc, std::ostream& os) const override { os << doc.dump(2) << "\n"; }
};

class CsvPrinter : public Printer {
 public:
  void print(const json& doc, std::ostream& os) const override {
    const std::string kind = str(doc, "kind");
    if (kind == "run") {
      os << "manifest,name,kernel,backend,device,device_name,work_items,iterations,min_ns,median_ns,mean_ns,stddev_ns,max_ns,"
            "bandwidth_gbps,verification,mismatches\n";
      const json& dev = doc.value("device", json::object());
      for (const auto& r : doc.value("runs", json::array())) {
        const json& t = r.value("timing", json());
        auto tv = [&](const char* k) { return t.is_object() && t.contains(k) ? value_text(t[k]) : std::string(); };
        uint64_t mism = 0;
        for (const auto& c : r["verification"].value("checks", json::array())) mism += c.value("mismatches", uint64_t(0));
        os << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(str(r, "manifest")), csv_field(str(r, "name")),
                          csv_field(str(r, "kernel")), csv_field(str(r, "backend")), str(r, "device_index"),
                          csv_field(str(dev, "name")), r["launch"].value("work_items", uint64_t(0)), str(r, "iterations"),
                          tv("min_ns"), tv("median_ns"), tv("mean_ns"), tv("stddev_ns"), tv("max_ns"), tv("bandwidth_gbps"),
                          str(r["verification"], "status"), mism);
      }
    } else if (kind == "info") {
      os << "index,backend,backend_ordinal,name,arch,compute_units,wave_size,max_workgroup_size,max_shared_memory_per_workgroup,"
            "memory_bytes\n";
      for (const auto& d : doc.value("devices", json::array()))
        os << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", str(d, "index"), csv_field(str(d, "backend")), str(d, "backend_ordinal"),
                          csv_field(str(d, "name")), csv_field(str(d, "arch")), str(d, "compute_units"), str(d, "wave_size"),
                          str(d, "max_workgroup_size"), str(d, "max_shared_memory_per_workgroup"), str(d, "memory_bytes"));
    } else {
      JsonPrinter().print(doc, os);
    }
  }
};

class TablePrinter : public Printer {
 public:
  void print(const json& doc, std::ostream& os) const override {
    const std::string kind = str(doc, "kind");
    if (kind == "run") print_run(doc, os);
    else if (kind == "info") print_info(doc, os);
    else JsonPrinter().print(doc, os);
  }

 private:
  static void print_run(const json& doc, std::ostream& os) {
    const json& dev = doc.value("device", json::object());
    bool first = true;
    for (const auto& r : doc.value("runs", json::array())) {
      if (!first) os << "\n";
      first = false;
      os << fmt::format("{}: kernel {} on {} device {} ({}, {})\n", str(r, "name"), str(r, "kernel"), str(r, "backend"),
                        str(r, "device_index"), str(dev, "name"), str(dev, "arch"));
      const json& L = r["launch"];
      os << fmt::format("  {:<13}{} workgroups of {} ({} work-items), {} dynamic shared\n", "launch",
                        dims(L["workgroup_count"]), dims(L["workgroup_size"]), str(L, "work_items"),
                        format_bytes(num(L, "dynamic_shared_bytes")));
      const json& t = r.value("timing", json());
      if (t.is_object()) {
        os << fmt::format("  {:<13}median {}  min {}  mean {} ± {}  max {}  ({} iterations, {} warm-up)\n", "timing",
                          format_ns(num(t, "median_ns")), format_ns(num(t, "min_ns")), format_ns(num(t, "mean_ns")),
                          format_ns(num(t, "stddev_ns")), format_ns(num(t, "max_ns")), str(r, "iterations"), str(r, "warmup"));
        if (t.contains("bandwidth_gbps"))
          os << fmt::format("  {:<13}{:.2f} GB/s ({} per iteration)\n", "bandwidth", num(t, "bandwidth_gbps"),
                            format_bytes(num(t, "bytes_per_iteration")));
      } else {
        os << fmt::format("  {:<13}none (0 iterations)\n", "timing");
      }
      const json& v = r["verification"];
      os << fmt::format("  {:<13}{}{}\n", "verification", str(v, "status"),
                        v.contains("reason") ? " (" + str(v, "reason") + ")" : "");
      for (const auto& c : v.value("checks", json::array())) {
        if (str(c, "status") == "skipped") {
          os << fmt::format("    {:<11}skipped: {}\n", str(c, "buffer"), str(c, "reason"));
          continue;
        }
        os << fmt::format("    {:<11}{}: {} of {} mismatch(es), max abs err {:.3g}, max rel err {:.3g}  [{}, rtol {:g}, atol {:g}]\n",
                          str(c, "buffer"), str(c, "status"), str(c, "mismatches"), str(c, "compared"), num(c, "max_abs_error"),
                          num(c, "max_rel_error"), str(c, "method"), num(c, "rtol"), num(c, "atol"));
        for (const auto& mm : c.value("first_mismatches", json::array())) {
          std::string where = mm.contains("coords") ? mm["coords"].dump() : "[" + str(mm, "index") + "]";
          os << fmt::format("      {} got {} expected {}\n", where, value_text(mm["got"]), value_text(mm["expected"]));
        }
      }
      for (const auto& s : r.value("saved", json::array()))
        os << fmt::format("  {:<13}{} -> {}\n", "saved", str(s, "buffer"), str(s, "npy"));
    }
  }

  static void print_info(const json& doc, std::ostream& os) {
    os << "Backends\n";
    for (const auto& b : doc.value("backends", json::array()))
      os << fmt::format("  {:<6} {:<9} {} device(s){}\n", str(b, "name"), b.value("usable", false) ? "usable" : "unusable",
                        str(b, "device_count", "0"), str(b, "message").empty() ? "" : "  " + str(b, "message"));
    const auto& devices = doc.value("devices", json::array());
    os << "\nDevices\n";
    if (devices.empty()) {
      os << "  none\n";
      return;
    }
    os << fmt::format("  {:<3} {:<7} {:<32} {:<10} {:>5} {:>5} {:>7} {:>10} {:>11}\n", "#", "backend", "name", "arch", "CUs",
                      "wave", "max wg", "shared/wg", "memory");
    for (const auto& d : devices) {
      std::string name = str(d, "name");
      if (name.size() > 32) name = name.substr(0, 31) + "…";
      os << fmt::format("  {:<3} {:<7} {:<32} {:<10} {:>5} {:>5} {:>7} {:>10} {:>11}\n", str(d, "index"), str(d, "backend"), name,
                        str(d, "arch"), str(d, "compute_units"), str(d, "wave_size"), str(d, "max_workgroup_size"),
                        format_bytes(num(d, "max_shared_memory_per_workgroup")), format_bytes(num(d, "memory_bytes")));
    }
    for (const auto& d : devices) {
      const auto details = d.value("details", json::object());
      if (details.empty()) continue;
      os << fmt::format("\nDevice {} ({} {})\n", str(d, "index"), str(d, "backend"), str(d, "name"));
      for (const auto& [k, v] : details.items()) os << fmt::format("  {:<28} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, PrinterFactory>& registry() {
  static std::map<std::string, PrinterFactory> r = {
      {"json", [] { return std::make_unique<JsonPrinter>(); }},
      {"csv", [] { return std::make_unique<CsvPrinter>(); }},
      {"table", [] { return std::make_unique<TablePrinter>(); }},
  };
  return r;
}

}  // namespace

void register_printer(const std::string& format, PrinterFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[format] = std::move(factory);
}

std::vector<std::string> printer_formats() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> out;
  for (const auto& [k, _] : registry()) out.push_back(k);
  return out;
}

std::unique_ptr<Printer> make_printer(const std::string& format) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(format);
    if (it != registry().end()) return it->second();
  }
  std::string known;
  for (const auto& f : printer_formats()) known += (known.empty() ? "" : ", ") + f;
  throw InputError(fmt::format("unknown format \"{}\" (expected one of: {})", format, known));
}

std::string render(const json& doc, const std::string& format) {
  std::ostringstream os;
  make_printer(format)->print(doc, os);
  return os.str();
}

json make_meta(const std::vector<std::string>& argv) {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return {{"lrrt_version", version()}, {"git_sha", git_sha()}, {"argv", argv}, {"date_utc", date}, {"host", host}};
}

std::string format_ns(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.3f} s", ns / 1e9);
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace lrrt::tool
