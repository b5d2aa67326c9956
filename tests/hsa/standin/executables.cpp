// Code-object readers and executables: the loader, as strict as ROCr's
// about the target and about symbols defined twice; kernels are found by
// symbol name.
#include <cstdio>

#include "lrrt/formats/elf.hpp"
#include "standin_internal.hpp"

namespace standin {

namespace {
struct SReader {
  std::vector<std::byte> bytes;
};
struct SExecutable {
  std::vector<std::unique_ptr<SKernel>> kernels;
  std::vector<std::string> symbols;  // non-local definitions of the code objects loaded
  bool frozen = false;
};
}  // namespace

}  // namespace standin

using namespace standin;

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void* co, size_t size,
                                                             hsa_code_object_reader_t* r) {
  if (!co || !size) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto* reader = new SReader;
  auto* b = static_cast<const std::byte*>(co);
  reader->bytes.assign(b, b + size);
  r->handle = reinterpret_cast<uint64_t>(reader);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t r) {
  delete reinterpret_cast<SReader*>(r.handle);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t, hsa_default_float_rounding_mode_t,
                                             const char*, hsa_executable_t* e) {
  e->handle = reinterpret_cast<uint64_t>(new SExecutable);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t e, hsa_agent_t agent,
                                                         hsa_code_object_reader_t r, const char*,
                                                         hsa_loaded_code_object_t*) {
  auto* exe = reinterpret_cast<SExecutable*>(e.handle);
  auto* reader = reinterpret_cast<SReader*>(r.handle);
  if (!exe || !reader || agent.handle != kGpuAgent) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (exe->frozen) return HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  try {
    auto co = lrrt::formats::amdgpu::parse_code_object(reader->bytes);
    auto agent_id = lrrt::formats::amdgpu::parse_target_id(state().isa);
    if (!lrrt::formats::amdgpu::target_compatible(co.target_id, agent_id))
      return HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS;
    // As ROCr's loader (ExecutableImpl::LoadDefinitionSymbol): a non-local
    // symbol (global or weak) defined by an earlier code object of the
    // executable cannot be defined again.
    lrrt::formats::elf::File elf(reader->bytes, "AMDGPU code object");
    std::vector<std::string> defined;
    for (const auto& section : elf.sections()) {
      if (section.header.sh_type != SHT_SYMTAB) continue;
      for (const auto& sym : elf.symbols(section)) {
        if (!sym.defined() || sym.binding() == STB_LOCAL || sym.name.empty()) continue;
        if (sym.type() != STT_OBJECT && sym.type() != STT_FUNC && sym.type() != STT_LOOS) continue;  // STT_LOOS: v2 kernels
        std::string name(sym.name);
        if (std::find(exe->symbols.begin(), exe->symbols.end(), name) != exe->symbols.end()) {
          count("symbols_already_defined");
          return HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED;
        }
        defined.push_back(std::move(name));
      }
    }
    exe->symbols.insert(exe->symbols.end(), defined.begin(), defined.end());
    for (auto& k : co.kernels) {
      auto sk = std::make_unique<SKernel>();
      sk->info = std::move(k);
      exe->kernels.push_back(std::move(sk));
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "hsa stand-in: %s\n", ex.what());
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  }
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t e, const char*) {
  reinterpret_cast<SExecutable*>(e.handle)->frozen = true;
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t e) {
  delete reinterpret_cast<SExecutable*>(e.handle);
  return HSA_STATUS_SUCCESS;
}
EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t e, const char* name,
                                                     const hsa_agent_t*, hsa_executable_symbol_t* s) {
  auto* exe = reinterpret_cast<SExecutable*>(e.handle);
  for (auto& k : exe->kernels)
    if (k->info.symbol == name) {
      s->handle = reinterpret_cast<uint64_t>(k.get());
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}
EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t s,
                                                  hsa_executable_symbol_info_t attr, void* value) {
  auto* k = reinterpret_cast<SKernel*>(s.handle);
  switch (attr) {
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: put<uint64_t>(value, s.handle); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: put<uint32_t>(value, k->info.kernarg_size); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT: put<uint32_t>(value, k->info.kernarg_align); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: put<uint32_t>(value, k->info.group_segment_size); break;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: put<uint32_t>(value, k->info.private_segment_size); break;
    default: return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  return HSA_STATUS_SUCCESS;
}
