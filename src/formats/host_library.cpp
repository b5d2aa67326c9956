#include "lrrt/formats/host_library.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lrrt/formats/elf.hpp"
#include "lrrt/formats/error.hpp"
#include "lrrt/formats/format.hpp"

namespace lrrt::formats::host {
namespace {

constexpr std::string_view kQuery = LRRT_HOST_LIBRARY_QUERY_SYMBOL;
constexpr std::string_view kRecordPrefix = LRRT_HOST_KERNEL_RECORD_PREFIX;

// The host ABI knows two kinds: pointers (buffers) and values.
KernelArgInfo host_arg(uint32_t offset, uint32_t size, uint32_t kind, std::string name,
                       std::string type_name) {
  KernelArgInfo arg;
  arg.offset = offset;
  arg.size = size;
  bool pointer = kind == LRRT_HOST_ARG_POINTER;
  arg.kind = pointer ? ArgKind::GlobalBuffer : ArgKind::ByValue;
  arg.value_kind = pointer ? "global_buffer" : "by_value";
  arg.name = std::move(name);
  arg.type_name = std::move(type_name);
  return arg;
}

// Reads one kernel record; every offset in it is checked against the record.
KernelInfo read_record(std::span<const std::byte> bytes, std::string_view symbol) {
  const std::string where = fmt::format("kernel record {}", symbol);
  auto header = checked_read<lrrt_host_kernel_record_t>(bytes, 0, "record header", where);
  if (header.magic != LRRT_HOST_KERNEL_RECORD_MAGIC)
    throw FormatError(fmt::format("{}: magic {:#x} is not {:#x}", where, header.magic,
                                  LRRT_HOST_KERNEL_RECORD_MAGIC));
  if (header.version != LRRT_HOST_KERNEL_RECORD_VERSION)
    throw FormatError(fmt::format("{}: record version {}, this lrrt reads version {}", where,
                                  header.version, LRRT_HOST_KERNEL_RECORD_VERSION));
  if (header.size < sizeof(header) || header.size > bytes.size())
    throw FormatError(fmt::format("{}: claims {} bytes, but the symbol has {} (and the header {})",
                                  where, header.size, bytes.size(), sizeof(header)));
  bytes = bytes.first(header.size);
  if (header.arg_count > (bytes.size() - sizeof(header)) / sizeof(lrrt_host_arg_record_t))
    throw FormatError(fmt::format("{}: {} arguments do not fit in its {} bytes", where,
                                  header.arg_count, bytes.size()));
  KernelInfo k;
  k.name = std::string(checked_string(bytes, header.name, where));
  std::string expected = std::string(kRecordPrefix) + k.name;
  if (symbol != expected)
    throw FormatError(fmt::format("{} describes kernel '{}' (expected symbol {})", where, k.name,
                                  expected));
  k.symbol = k.name;
  k.has_arg_layout = true;
  k.kernarg_size = header.kernarg_size;
  k.kernarg_align = header.kernarg_align;
  k.group_segment_size = header.static_shared_bytes;
  for (uint32_t i = 0; i < header.arg_count; ++i) {
    auto a = checked_read<lrrt_host_arg_record_t>(
        bytes, sizeof(header) + uint64_t(i) * sizeof(lrrt_host_arg_record_t), "argument record",
        where);
    KernelArgInfo arg = host_arg(a.offset, a.size, a.kind, std::string(checked_string(bytes, a.name, where)),
                                 std::string(checked_string(bytes, a.type_name, where)));
    if (a.offset > k.kernarg_size || a.size > k.kernarg_size - a.offset)
      throw FormatError(fmt::format("{}: argument {} ({} bytes at offset {}) exceeds the {}-byte "
                                    "argument struct",
                                    where, arg.name, a.size, a.offset, k.kernarg_size));
    k.args.push_back(std::move(arg));
  }
  return k;
}

}  // namespace

HostLibrary read_host_library(std::span<const std::byte> image) {
  elf::File file(image, "host kernel library");
  HostLibrary lib;
  lib.machine = elf::machine_name(file.machine());
  if (detect_format(image) != Format::HostSharedObject)
    file.fail(fmt::format("it is built for {}, this host is {}", lib.machine, host_machine()));
  const elf::Section* dynsym = nullptr;
  for (const auto& s : file.sections())
    if (s.header.sh_type == SHT_DYNSYM) dynsym = &s;
  if (!dynsym)
    file.fail("it has no dynamic symbol table (.dynsym); a host kernel library is a shared object "
              "that exports " + std::string(kQuery));
  for (const auto& sym : file.symbols(*dynsym)) {
    if (!sym.defined()) continue;
    if (sym.name == kQuery && sym.type() == STT_FUNC) lib.has_query = true;
    if (!sym.name.starts_with(kRecordPrefix) || sym.type() != STT_OBJECT) continue;
    auto record = file.symbol_data(sym);
    try {
      lib.kernels.push_back(read_record(record, sym.name));
    } catch (const FormatError& e) {
      file.fail(e.what());
    }
  }
  if (!lib.has_query)
    file.fail(fmt::format("it exports no {}: not an lrrt host kernel library (see "
                          "include/lrrt/host_kernel_abi.h)",
                          kQuery));
  lib.has_records = !lib.kernels.empty();
  std::sort(lib.kernels.begin(), lib.kernels.end(),
            [](const KernelInfo& a, const KernelInfo& b) { return a.name < b.name; });
  return lib;
}

KernelInfo kernel_info(const lrrt_host_kernel_t& desc) {
  KernelInfo info;
  info.name = desc.name ? desc.name : "";
  info.symbol = info.name;
  info.has_arg_layout = true;
  info.kernarg_size = desc.kernarg_size;
  info.kernarg_align = desc.kernarg_align;
  info.group_segment_size = desc.static_shared_bytes;
  info.max_workgroup_size = 0;
  for (uint32_t i = 0; i < desc.arg_count; ++i) {
    const auto& a = desc.args[i];
    info.args.push_back(
        host_arg(a.offset, a.size, a.kind, a.name ? a.name : "", a.type_name ? a.type_name : ""));
  }
  return info;
}

}  // namespace lrrt::formats::host
