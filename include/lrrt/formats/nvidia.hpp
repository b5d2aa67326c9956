// NVIDIA code objects read from their bytes alone (no driver, no cuda.h):
// cubins (ELF, e_machine EM_CUDA), fatbin containers and PTX text. Used by the
// cuda backend (arch checks before loading, kernel names, parameter layout
// when the driver has no cuFuncGetParamInfo) and by `lrrt inspect`.
//
// Formats, as read from nvcc 13.0 output:
//  - cubin: ELF64; EI_ABIVERSION >= 8 keeps the SM number in e_flags bits
//    8..15 (0x06005a04 = sm_90), older ABIs in bits 0..7. Kernels are FUNC
//    symbols with STO_CUDA_ENTRY (0x10) in st_other. Section
//    `.nv.info.<kernel>` holds attributes (1-byte format, 1-byte attribute,
//    then a 16-bit value, or a 16-bit size and that many bytes);
//    EIATTR_KPARAM_INFO (0x17) gives each parameter's ordinal, offset and
//    size (bits 18..31 of its last word); EIATTR_CBANK_PARAM_SIZE (0x19) the
//    parameter bytes. `.nv.info` holds EIATTR_REGCOUNT (0x2f) and
//    EIATTR_FRAME_SIZE (0x11) per function symbol.
//  - fatbin: header {u32 magic 0xBA55ED50, u16 version, u16 header size,
//    u64 payload bytes}, then entries {u16 kind (1 PTX, 2 ELF), u16 version,
//    u32 header size, u64 payload size, u32 compressed size @16,
//    u32 SM @28, u64 flags @40 (0x2000 LZ4 block, 0x8000 zstd frame;
//    0x100000 arch-specific "a", 0x200000 family-specific "f"), u64
//    uncompressed size @56}; nvcc -Xfatbin -compress-all writes zstd by
//    default and LZ4 with --compress-mode=speed. Compressed entries store
//    the compressed length @16, padded to 8 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/formats/error.hpp"

namespace lrrt::formats::nvidia {

struct ImageParam {
  uint32_t ordinal = 0;
  uint32_t offset = 0;
  uint32_t size = 0;
  uint32_t align = 0;    // PTX .align, or 0 when not recorded
  bool align_written = false;  // the PTX wrote `.align A` for the parameter itself (not a pointee's)
  bool pointer = false;  // PTX `.ptr` parameters (Triton writes them)
  std::string type;      // PTX type (.u64, .b8[16]); empty for cubins
  std::string name;      // PTX parameter name; empty for cubins
};

// The type name lr_kernel_arg_t reports for a PTX parameter: its type
// (".u32", ".b8[16]"), and for a by-value aggregate with a written alignment
// that alignment in front (".align 8 .b8[16]"): lr_kernel_arg_t has no field
// for it, and lrrt::bundle compares it with a manifest struct's.
std::string ptx_param_type_name(const ImageParam& p);

struct ImageKernel {
  std::string name;
  bool has_params = false;           // the image recorded the parameter layout
  std::vector<ImageParam> params;    // by ordinal
  uint32_t param_bytes = 0;          // EIATTR_CBANK_PARAM_SIZE or end of last param
  int32_t registers = -1;            // cubin: EIATTR_REGCOUNT
  int32_t frame_bytes = -1;          // cubin: EIATTR_FRAME_SIZE
  int64_t static_shared_bytes = -1;  // cubin: size of .nv.shared.<kernel>
};

struct CubinInfo {
  uint32_t sm = 0;  // 90 for sm_90
  char variant = 0;  // 'a' (sm_90a, arch-specific), 'f' (sm_100f, family-specific) or 0
  uint32_t elf_abi_version = 0;
  uint32_t e_flags = 0;
  std::vector<ImageKernel> kernels;
};

struct PtxInfo {
  std::string version;  // "9.0"
  uint32_t sm = 0;      // .target sm_90 -> 90
  char variant = 0;     // .target sm_90a -> 'a', sm_100f -> 'f'
  std::string target;   // the whole .target line's value
  std::vector<ImageKernel> kernels;
};

struct FatbinEntry {
  enum class Kind { Ptx, Cubin, Other };
  Kind kind = Kind::Other;
  uint16_t raw_kind = 0;  // the header's kind field
  uint32_t sm = 0;
  char variant = 0;     // flags 0x100000 'a', 0x200000 'f'
  uint64_t offset = 0;  // payload offset in the fatbin
  uint64_t size = 0;    // stored payload bytes
  uint64_t uncompressed_size = 0;
  uint64_t flags = 0;
  std::string compression;           // "", "lz4", "zstd"
  std::span<const std::byte> bytes;  // the stored payload (compressed when compression is set)
  // "sm_90 cubin", "compute_90 PTX", "sm_90 kind 4".
  std::string describe() const;
};

struct FatbinInfo {
  uint32_t version = 0;
  std::vector<FatbinEntry> entries;
};

// Each throws FormatError with a sentence when the bytes are not what the
// name says.
CubinInfo parse_cubin(std::span<const std::byte> image);
FatbinInfo parse_fatbin(std::span<const std::byte> image);
PtxInfo parse_ptx(std::string_view text);

// The SM number in a cubin's ELF header (90), or 0 when it is no cubin.
uint32_t cubin_sm(std::span<const std::byte> image);

// Whether code built for `image_sm` runs on a device of `device_sm`: a cubin
// needs the same major version and a minor version no higher than the
// device's; PTX needs a target no higher than the device.
bool cubin_runs_on(uint32_t image_sm, uint32_t device_sm);
bool ptx_runs_on(uint32_t ptx_sm, uint32_t device_sm);
// The same with the target's variant: arch-specific code ('a': sm_90a,
// compute_90a) runs only on that exact SM; family-specific code ('f':
// sm_100f) on the same major version with a minor version no lower.
bool sass_runs_on(uint32_t sm, char variant, uint32_t device_sm);
bool ptx_runs_on(uint32_t sm, char variant, uint32_t device_sm);
// "sm_90a", "compute_100f", "sm_90".
std::string arch_name(uint32_t sm, char variant, bool ptx);
// " (arch-specific: it runs only on sm_90)", or "" for plain targets.
std::string variant_note(uint32_t sm, char variant);

// "sm_90 cubin, compute_90 PTX": the targets an image holds, for messages.
std::string describe_image_targets(std::span<const std::byte> image);

// Empty when some code in the image can run on the device; otherwise the
// sentence that explains why not, naming both targets:
// "the cubin is built for sm_80 but device 0 (NVIDIA H200) is sm_90; ...".
std::string check_image_for_device(std::span<const std::byte> image, uint32_t device_sm,
                                   std::string_view device_description);

// Kernel names in the image (cubin symbols, fatbin cubins/PTX, PTX .entry).
std::vector<std::string> image_kernel_names(std::span<const std::byte> image);
// The layout of one kernel's parameters if the image records it.
std::optional<ImageKernel> image_kernel(std::span<const std::byte> image, std::string_view name);

}  // namespace lrrt::formats::nvidia
