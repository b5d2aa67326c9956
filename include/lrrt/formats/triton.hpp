// Triton cache entries as code objects (docs/triton.md): the folder Triton
// writes per compiled kernel (<name>.json, <name>.cubin or .hsaco, the IRs).
// The metadata gives the launch (num_warps, warp size, shared, scratch), the
// IR signature (`tt.func public @k(%x: !tt.ptr<f32> {tt.divisibility = 16 :
// i32} loc("x"), ...)`) gives the parameters; lrrt appends the hidden
// scratch parameters Triton's launcher appends, per the entry's version.
// Anything lrrt cannot launch faithfully is a FormatError naming the field
// and the file, never a guess.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/formats/error.hpp"
#include "lrrt/formats/triton_access.hpp"

namespace lrrt::formats {

struct TritonParam {
  std::string name;         // loc("x_ptr"), else the SSA name without '%'
  std::string ir_type;      // as the IR writes it: "!tt.ptr<f32>", "i32", "f16"
  bool pointer = false;
  std::string type;         // element type of a pointer, else the value's: "f32", "i32", "f16", "bf16", "f64", "i1"...
  uint32_t divisibility = 0;  // tt.divisibility, 0 when absent
  // A tensor descriptor (`!tt.tensordesc<tensor<32x64xf32>>`, Triton 3.6):
  // Triton's launcher passes a CUtensorMap (128 bytes) it encodes from the
  // entry's tensordesc_meta, then the tensor's shape (i32 each) and strides
  // (i64 each, in elements), which the IR lists right after it under the
  // same name; lrrt renames those "<name>.shape<k>" / "<name>.stride<k>" and
  // sets their desc_of to the descriptor's index.
  bool tensordesc = false;
  std::vector<uint64_t> block_shape;  // the IR type's block, outermost first
  int32_t desc_of = -1;
  // tensordesc_meta: swizzle (CUtensorMapSwizzle), the element's size, its
  // CUtensorMapDataType (host numbering) and the box, outermost first.
  uint32_t tma_swizzle = 0, tma_elem_size = 0, tma_elem_type = 0;
  std::vector<uint32_t> tma_box;
  uint32_t size() const;      // bytes in the kernel's arguments: 8 for a pointer
  // Triton's AOT notation: "*fp32:16", "i32", "fp16".
  std::string aot() const;
};

// A hidden parameter lrrt appends (Triton's launcher does, the user never).
struct TritonScratch {
  std::string name;    // "global_scratch", "profile_scratch"
  uint64_t size = 0;   // bytes per program (per CTA); 0: the pointer is null
  uint64_t align = 1;
};

struct TritonEntry {
  std::filesystem::path metadata_path;  // <name>.json
  std::filesystem::path binary_path;    // <name>.cubin / <name>.hsaco
  std::filesystem::path ir_path;        // .ttir or .source the signature came from
  std::string name;
  std::string triton_version;  // "3.6.0"
  uint32_t version_minor = 0;  // 3.x
  std::string backend;         // Triton's word: "cuda", "hip"
  std::string lrrt_backend;    // "cuda", "hsa"
  std::string arch;            // "sm_90", "gfx942"
  uint32_t warp_size = 32;
  uint32_t num_warps = 4;
  uint32_t num_ctas = 1;
  std::array<uint32_t, 3> cluster_dims{1, 1, 1};
  uint32_t shared = 0;  // dynamic shared bytes
  bool launch_pdl = false;
  bool launch_cooperative_grid = false;
  std::vector<TritonParam> params;     // the user's, in order
  std::vector<TritonScratch> hidden;   // appended after params, in order
  TritonAccess access;                 // params' accesses from the IR (triton_access.hpp)
  uint32_t block() const { return warp_size * num_warps; }
  // Bytes of a hidden scratch allocation for a grid of `programs` programs:
  // programs × num_ctas × size (3.3: programs × size); 0 when size is 0;
  // FormatError when that does not fit 64 bits.
  uint64_t scratch_bytes(const TritonScratch& s, uint64_t programs) const;
  // The signature as Triton's launcher is called: "*fp32:16, *fp32:16, i32".
  std::string signature() const;
};

// Whether `path` names a Triton cache entry: a folder holding a <name>.json
// with Triton metadata, or such a .json file (checked from its content).
bool is_triton_entry(const std::filesystem::path& path);

// Reads an entry from its folder or its <name>.json. FormatError naming the
// file and field: no metadata, malformed or deeply nested JSON, a key twice,
// a wrong-typed field, a launch number out of range (every one is checked
// before it is narrowed), an unknown metadata version, a missing binary, no
// IR signature, a parameter name that is not UTF-8 text or appears twice,
// tensor-descriptor (TMA) arguments, cooperative or multi-CTA (cluster)
// launches.
TritonEntry read_triton_entry(const std::filesystem::path& path);

// The same from the texts (the metadata JSON and the IR), as an in-process
// compiled kernel holds them; `where` names them in messages. binary_path
// stays empty.
TritonEntry parse_triton_entry(std::string_view metadata_json, std::string_view ir_text, const std::string& where);

// The IR's public function signature: FormatError when there is none.
std::vector<TritonParam> parse_triton_signature(std::string_view ir_text, const std::string& kernel,
                                                const std::string& where);

// The entry as JSON text (the C ABI's lr_triton_describe): name, backend,
// arch, warp_size, num_warps, num_ctas, shared, version, binary, signature,
// params [{name, type, pointer, divisibility, size, and for pointers access
// ("read", "write", "read_write") and access_source ("ttir", or "default"
// when the IR could not be analysed: access_failure says why)}], hidden
// [{name, size, align}].
std::string triton_entry_json(const TritonEntry& entry);

}  // namespace lrrt::formats
