// lrrt inspect FILE...: what code objects hold, for every format lrrt loads,
// in one document shape (docs/code-objects.md "What lrrt inspect prints"):
// per file its format, per target (one for a plain code object, one per
// container entry) the target's facts and its kernels with their argument
// layout. Everything is read by lrrt_formats from the bytes alone: no device,
// no GPU library, and no host library is loaded.
#include <CLI/CLI.hpp>
#include <memory>
#include <functional>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "lrrt/formats/container.hpp"
#include "lrrt/formats/error.hpp"
#include "lrrt/formats/format.hpp"
#include "lrrt/formats/inspect.hpp"
#include "lrrt/formats/triton.hpp"
#include "tool/atomic_file.hpp"
#include "tool/bundle.hpp"
#include "tool/inspect_doc.hpp"
#include "tool/meta.hpp"
#include "tool/printers/printer.hpp"

namespace lrrt::cli {
namespace {

using json = nlohmann::json;
namespace formats = lrrt::formats;

struct InspectRequest {
  std::vector<std::string> files;
  std::string target;   // --target
  std::string runs_on;  // --runs-on
  std::string kernel;  // --kernel REGEX
};

formats::InspectFilter make_filter(const InspectRequest& r) {
  formats::InspectFilter filter;
  filter.target = r.target;
  if (!r.runs_on.empty()) {
    try {
      filter.runs_on = formats::parse_device_target(r.runs_on);
    } catch (const formats::FormatError& e) {
      throw tool::InputError(fmt::format("--runs-on: {}", e.what()));
    }
  }
  if (!r.kernel.empty()) {
    std::shared_ptr<const std::regex> re;
    try {
      re = std::make_shared<const std::regex>(r.kernel, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw tool::InputError(fmt::format("--kernel: \"{}\" is not a regular expression ({})", r.kernel, e.what()));
    }
    // Searched, not matched whole: --kernel gemm finds every *gemm* kernel.
    // In the name as read, and as printed: a name with bytes that are not
    // UTF-8 (shown "s\xffxpy") is found by the regex s\xff (the byte) and
    // s\\xff (the text shown) alike.
    filter.kernel = [re](std::string_view name) {
      if (std::regex_search(name.begin(), name.end(), *re)) return true;
      const std::string shown = bundle::terminal_safe(name);
      return shown != name && std::regex_search(shown, *re);
    };
  }
  return filter;
}

std::vector<std::byte> read_input(const std::string& path) {
  // The format from the first bytes; the rest is read only for a code object.
  return tool::read_code_object_file(path, [](std::span<const std::byte> head) {
    return formats::detect_format(head) == formats::Format::Unknown ? formats::describe_format(head) : std::string();
  });
}

// Streams to standard output: each target is printed as soon as it is read,
// so a library of 10^4 entries shows its first kernels at once and lrrt
// holds one entry at a time. JSON comes out as the document the collected
// form writes; CSV has one header row; the table prints a heading per file,
// a block per target and a count at the end of each file.
class InspectStream {
 public:
  InspectStream(std::string format, json meta) : format_(std::move(format)), meta_(std::move(meta)) {}

  static bool streams(const std::string& format) { return format == "json" || format == "csv" || format == "table"; }

  void begin_file(json header) {
    header_ = std::move(header);
    file_open_ = false;
    targets_ = 0;
  }

  void target(json&& target) {
    ++targets_;
    if (format_ == "json") {
      open_document();
      if (!file_open_) {
        json h = header_;
        std::string head = tool::printers::json_text(h);
        head.pop_back();  // the closing brace: "targets" follows
        while (!head.empty() && (head.back() == '\n' || head.back() == ' ')) head.pop_back();
        std::cout << (files_ ? ",\n    " : "\n    ") << indent(head, 4) << ",\n      \"targets\": [";
      }
      std::cout << (file_open_ ? ",\n" : "\n") << "        " << indent(tool::printers::json_text(target), 8) << std::flush;
      file_open_ = true;
      return;
    }
    json object = header_;
    object["targets"] = json::array({std::move(target)});
    if (file_open_) object["continued"] = true;
    object["streamed"] = true;
    json doc{{"kind", "inspect"}, {"lrrt_results", 1}, {"objects", json::array({std::move(object)})}};
    std::string text = tool::printers::render(doc, format_);
    if (format_ == "csv" && rows_started_) text.erase(0, text.find('\n') + 1);  // one header row
    rows_started_ = true;
    file_open_ = true;
    std::cout << text << std::flush;
  }

  void end_file() {
    if (format_ == "json") {
      open_document();
      if (file_open_) {
        std::cout << "\n      ]\n    }";
      } else {
        json h = header_;
        h["targets"] = json::array();
        std::cout << (files_ ? ",\n    " : "\n    ") << indent(tool::printers::json_text(h), 4);
      }
      ++files_;
      return;
    }
    if (format_ == "table")
      std::cout << fmt::format("{}: {} target(s){}\n\n", bundle::terminal_safe(header_["file"].get<std::string>()),
                               targets_, targets_ ? "" : " match the filters")
                << std::flush;
    ++files_;
  }

  void finish() {
    if (format_ != "json") return;
    open_document();
    std::cout << "\n  ]\n}\n" << std::flush;
  }

 private:
  void open_document() {
    if (document_open_) return;
    std::cout << "{\n  \"kind\": \"inspect\",\n  \"lrrt_results\": 1,\n  \"meta\": " << indent(tool::printers::json_text(meta_), 2)
              << ",\n  \"objects\": [";
    document_open_ = true;
  }
  static std::string indent(const std::string& text, size_t by) {
    std::string out;
    for (char c : text) {
      out += c;
      if (c == '\n') out.append(by, ' ');
    }
    return out;
  }
  std::string format_;
  json meta_;
  json header_;
  bool document_open_ = false, file_open_ = false, rows_started_ = false;
  size_t files_ = 0, targets_ = 0;
};

// Reads one file: its targets go to `stream` as they are read, or are
// collected into the returned object (stream null).
// A Triton cache entry's facts, first in each of its binary's targets: the
// signature as Triton's launcher is called (AOT notation) and the launch.
std::vector<formats::Fact> inspect_triton_facts(const formats::TritonEntry& e) {
  std::string call;
  for (const auto& p : e.params) call += (call.empty() ? "" : ", ") + p.name;
  std::string hidden;
  for (const auto& h : e.hidden)
    hidden += fmt::format("{}{} ({})", hidden.empty() ? "" : ", ", h.name,
                          h.size ? fmt::format("{} bytes per program", h.size) : std::string("null"));
  // Each pointer parameter's access from the IR (docs/access.md).
  std::string access;
  for (size_t i = 0; i < e.params.size(); ++i) {
    if (!e.params[i].pointer) continue;
    const bool known = e.access.analysed && i < e.access.params.size();
    access += fmt::format("{}{} {}", access.empty() ? "" : ", ", e.params[i].name,
                          formats::access_mode_name(known ? e.access.params[i].mode() : formats::AccessMode::ReadWrite));
  }
  access += e.access.analysed ? " (ttir)" : fmt::format(" (default: the IR was not analysed: {})", e.access.failure);
  return {{"triton_version", e.triton_version},
          {"triton_signature", e.signature()},
          {"triton_call", fmt::format("{}[grid]({})", e.name, call)},
          {"triton_access", access},
          {"triton_hidden", hidden},
          {"num_warps", uint64_t(e.num_warps)},
          {"warp_size", uint64_t(e.warp_size)},
          {"block", uint64_t(e.block())},
          {"shared", uint64_t(e.shared)}};
}

json inspect_file(const std::string& path, const formats::InspectFilter& filter, InspectStream* stream) {
  std::optional<formats::TritonEntry> triton;
  if (formats::is_triton_entry(path)) {
    try {
      triton = formats::read_triton_entry(path);
    } catch (const formats::FormatError& e) {
      throw tool::InputError(e.what());
    }
  }
  std::vector<std::byte> bytes = read_input(triton ? triton->binary_path.string() : path);
  json header{{"file", path}, {"format", formats::format_name(formats::file_format(bytes))}, {"size", bytes.size()}};
  std::vector<formats::Fact> triton_facts;
  if (triton) {
    header["format"] = fmt::format("triton-{}", header["format"].get<std::string>());
    header["binary"] = triton->binary_path.string();
    header["triton"] = json::parse(formats::triton_entry_json(*triton));
    triton_facts = inspect_triton_facts(*triton);
  }
  auto with_triton = [&](formats::InspectedTarget& t) -> formats::InspectedTarget& {
    t.facts.insert(t.facts.begin(), triton_facts.begin(), triton_facts.end());
    return t;
  };
  formats::Inspection inspection;
  try {
    if (stream) {
      stream->begin_file(header);
      inspection = formats::inspect_code_object(bytes, filter, [&](formats::InspectedTarget&& t) { stream->target(tool::inspect_target_json(with_triton(t))); });
      stream->end_file();
    } else {
      inspection = formats::inspect_code_object(bytes, filter);
    }
  } catch (const formats::FormatError& e) {
    throw tool::InputError(fmt::format("{}: {}", path, e.what()));
  }
  json targets = json::array();
  for (auto& t : inspection.targets) targets.push_back(tool::inspect_target_json(with_triton(t)));
  header["targets"] = std::move(targets);
  return header;
}

void inspect_command(const InspectRequest& request, const CommonOptions& o) {
  const formats::InspectFilter filter = make_filter(request);
  const std::string format = effective_format(o);
  if (o.output.empty() && InspectStream::streams(format)) {
    InspectStream stream(format, tool::make_meta("inspect", argv()));
    for (const auto& file : request.files) inspect_file(file, filter, &stream);
    stream.finish();
    return;
  }
  json objects = json::array();
  for (const auto& file : request.files) objects.push_back(inspect_file(file, filter, nullptr));
  json doc{{"kind", "inspect"}, {"lrrt_results", 1}, {"objects", std::move(objects)}};
  doc["meta"] = tool::make_meta("inspect", argv());
  emit_document(doc, o);  // the printers render inspect documents in every format
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto request = std::make_shared<InspectRequest>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "Show what code objects hold: targets, kernels, argument layout (reads files only)");
  sub->add_option("files", request->files,
                  "HSACO, clang offload bundle (compressed or not), cubin, fatbin, PTX, host kernel library (.so), "
                  "an executable or library carrying GPU code (.hip_fatbin, .nv_fatbin), or a Triton cache entry (its folder "
                  "or <name>.json); several allowed")
      ->required();
  sub->add_option("--target", request->target,
                  "List only entries built for exactly this target: sm_90 lists sm_90 code, not sm_90a nor "
                  "compute_90 (each is its own target); gfx90a lists every gfx90a:... feature variant, "
                  "gfx90a:xnack+ only itself. What runs on a device: --runs-on");
  sub->add_option("--runs-on", request->runs_on,
                  "List only entries lrrt's entry choice could load on this device (the rules of lrrt run): "
                  "sm_90 lists sm_90a and sm_90 SASS, SASS of the same major version and a lower minor, and PTX "
                  "up to compute_90 (JIT); gfx90a:xnack- lists the gfx90a entries whose xnack is - or left open "
                  "(a feature TARGET leaves out matches either)");
  sub->add_option("--kernel", request->kernel,
                  "List only kernels whose name contains a match of this regular expression (ECMAScript), and "
                  "only targets that have one. Matched against the name as read and as shown: bytes that are not "
                  "UTF-8 are shown as \\xNN, and both --kernel '\\xff' (the byte) and '\\\\xff' (the text) find them");
  add_common_options(*sub, *o, kOptFormat | kOptOutput | kOptQuiet);
  sub->footer(R"(Nothing is loaded and no code in the file runs: an executable or library is read
as an ELF file. Output streams to the terminal (table, json, csv) target by
target; -o FILE is written whole, once every file has been read.

Examples:
  lrrt inspect build/kernels/saxpy.gfx1100.hsaco
  lrrt inspect build/kernels/saxpy.bundle.hsaco --format json | jq '.objects[].targets[].target'
  lrrt inspect build/kernels/saxpy.sm_90.cubin build/kernels/saxpy.host.so
  lrrt inspect ~/.triton/cache/<hash>/add_kernel.json      (Triton: signature as the launcher calls it)
  lrrt inspect /usr/lib/x86_64-linux-gnu/librocrand.so.1 --target gfx90a --kernel 'xorwow'
  lrrt inspect /usr/local/cuda/lib64/libcublas.so.13 --target sm_90 --kernel gemm --format csv
  lrrt inspect libtorch_cuda.so --runs-on sm_90          # sm_90a and sm_90 cubins, PTX for the JIT)");
  sub->callback([o, request] { inspect_command(*request, *o); });
}

}  // namespace lrrt::cli
