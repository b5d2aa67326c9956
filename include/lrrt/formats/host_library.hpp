// Host kernel libraries (ELF shared objects for this host, the host
// backend's code objects) read from the file alone: nothing is loaded, no
// constructor runs. The kernels come from the kernel records each kernel
// exports (include/lrrt/host_kernel_abi.h). The runtime still loads the
// library to run it and takes the kernel table from lrrt_host_library_query.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lrrt/formats/error.hpp"
#include "lrrt/formats/kernel.hpp"
#include "lrrt/host_kernel_abi.h"

namespace lrrt::formats::host {

struct HostLibrary {
  std::string machine;     // "x86_64"
  bool has_query = false;  // exports lrrt_host_library_query
  // False for libraries without kernel records (built before records
  // existed, or hand-written): their kernels are known only once loaded.
  bool has_records = false;
  std::vector<KernelInfo> kernels;  // from the records, by name
};

// FormatError("invalid host kernel library: ...") when the ELF or a record
// is malformed, or when the file exports no lrrt_host_library_query.
HostLibrary read_host_library(std::span<const std::byte> image);

// What the dynamic loader trusts, checked before a host library is loaded
// (dlopen maps the segments and reads the dynamic section in memory without
// checking them: a corrupt program header makes it fault, SIGSEGV or
// SIGBUS, inside lrrt's process). FormatError("invalid host kernel library:
// ...") naming the field when:
//  - the file is not a 64-bit little-endian ET_DYN shared object for this
//    host's machine;
//  - the program header table (e_phoff, e_phnum, e_phentsize) does not lie
//    in the file, or has no PT_LOAD or more than kMaxHostSegments entries;
//  - a PT_LOAD's file bytes (p_offset + p_filesz, overflow-checked) leave
//    the file, p_memsz < p_filesz, p_align is not 0, 1 or a power of two,
//    p_offset and p_vaddr differ modulo the page size or p_align, the loads
//    are not in p_vaddr order or overlap, or they span more than 1 TiB;
//  - a segment the loader reads in memory (PT_DYNAMIC, PT_PHDR, PT_TLS's
//    image, PT_NOTE, PT_GNU_PROPERTY, PT_GNU_EH_FRAME, PT_GNU_RELRO) is not
//    inside one PT_LOAD, in memory and in the file alike;
//  - the dynamic section has no DT_NULL, or an address it holds (DT_STRTAB,
//    DT_SYMTAB, DT_RELA, DT_INIT_ARRAY, ...) with its size lies outside the
//    loads;
//  - a load lacks the permission the loader needs: read for the dynamic
//    section and its tables, write for every relocation's target (unless
//    DT_TEXTREL), execute for DT_INIT, DT_FINI and the constructors the
//    init and fini arrays point at;
//  - there is no section header table or it does not lie in the file, or an
//    allocated section is not inside one load that maps it from its own
//    file bytes with its permissions (SHF_EXECINSTR: PF_X, SHF_WRITE:
//    PF_W), or PT_GNU_RELRO covers .data, .bss or a lazily bound .got.plt.
// A library that passes can still fail to load (dlopen then says why).
inline constexpr uint64_t kMaxHostSegments = 256;
void check_loadable(std::span<const std::byte> image);

// One entry of the ABI's kernel table as a KernelInfo (the host backend).
KernelInfo kernel_info(const lrrt_host_kernel_t& kernel);

}  // namespace lrrt::formats::host
