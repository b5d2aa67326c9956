// The manifest: what `lrrt run` runs (docs/manifest.md, schema in
// docs/manifest.schema.json). parse_manifest validates everything that can be
// checked without a device and names the offending field with a JSON pointer
// ("/buffers/2/init/random/seed: unknown field"). Which built-in references
// exist ("expected": {"reference": NAME}) is left to the verifier.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lrrt/bundle/dtype.hpp"
#include "lrrt/bundle/errors.hpp"
#include "lrrt/bundle/tensor_map.hpp"

namespace lrrt::bundle {

inline constexpr int kManifestVersion = 1;

// A manifest error: "<pointer>: <what>"; exit code 2.
class ManifestError : public InputError {
 public:
  ManifestError(std::string pointer, const std::string& what)
      : InputError((pointer.empty() ? std::string("/") : pointer) + ": " + what),
        pointer_(std::move(pointer)) {}
  const std::string& pointer() const { return pointer_; }

 private:
  std::string pointer_;
};

struct BufferInit {
  enum class Kind { Poison, Zeros, Fill, Iota, Random, Npy, Raw };
  Kind kind = Kind::Poison;
  long double fill = 0;              // Fill
  long double fill_imag = 0;         // Fill of a complex buffer: {"fill": [re, im]}
  long double start = 0, step = 1;   // Iota
  std::optional<uint64_t> seed;      // Random (nullopt: draw a fresh one)
  long double min = 0, max = 1;      // Random: [min, max) for floats, [min, max] for integers
  std::filesystem::path file;        // Npy, Raw (resolved against the manifest's folder)
  nlohmann::json to_json() const;    // as written, for results
};

enum class Access { None, Read, Write, ReadWrite };

struct BufferSpec {
  std::string name;
  DType type = DType::f32;
  std::vector<uint64_t> shape;  // [count] when given as "count"
  uint64_t count = 0;
  uint64_t bytes = 0;
  BufferInit init;
  Access access = Access::None;
  std::string pointer;  // "/buffers/N"
};

// A scalar's bytes: large enough for every scalar type (c128 is 16).
using ScalarBytes = std::array<std::byte, 16>;

// A buffer pointer inside a struct argument ({"name": "x", "buffer": "x"}):
// a buffer use like a buffer argument (access, fences, declared ranges).
struct ArgPointerField {
  uint32_t offset = 0;               // in the argument's bytes
  size_t buffer = 0;                 // index into Manifest::buffers
  Access access = Access::None;      // sequence steps: declared access
  uint64_t range_offset = 0;         // sequence steps: "range"
  uint64_t range_bytes = 0;
  std::string path;                  // dotted name ("p.inner.x"), or the field's label when unnamed
  std::string pointer;               // "/args/1/struct/0"
};

// A named scalar inside a struct argument, for patch ("p.bias").
struct ArgScalarField {
  uint32_t offset = 0;
  DType type = DType::u32;
  long double value = 0;
  std::string path;                  // dotted name: "p.bias"
  std::string pointer;
};

struct ArgSpec {
  // Bytes: a struct ({"struct": [...]}) or raw bytes ({"bytes": hex},
  // {"bytes_file": path}) passed by value, laid out by the manifest.
  // TensorMap: a 128-byte descriptor over `buffer` (tensor_map.hpp), passed
  // by value; `access` is how the kernel uses the buffer through it.
  enum class Kind { Buffer, Scalar, Bytes, TensorMap };
  Kind kind = Kind::Scalar;
  size_t buffer = 0;                 // Buffer: index into Manifest::buffers
  DType type = DType::u32;           // Scalar
  long double value = 0;             // Scalar, resolved (count_of/shape_of applied); complex: real part
  long double value_imag = 0;        // Scalar of a complex type: imaginary part
  ScalarBytes bytes{};               // Scalar, encoded in `type`
  std::vector<std::byte> blob;       // Bytes: the argument's bytes (pointer fields filled when packed)
  uint32_t blob_align = 1;           // Bytes: its alignment in the kernarg segment
  bool is_struct = false;            // Bytes: given as a struct (else raw bytes)
  std::vector<ArgPointerField> pointer_fields;  // Bytes: buffer pointers in it
  std::vector<ArgScalarField> scalar_fields;    // Bytes: named scalars in it (patchable)
  std::optional<uint32_t> offset;    // explicit kernarg offset
  std::string name;                  // optional, informative
  std::string pointer;               // "/args/N"
  // A pointer argument passed as null (a Triton scratch pointer of size 0):
  // a u64 scalar 0 in the pointer's slot.
  bool null_pointer = false;
  // Sequence steps only: how the step touches the buffer, and the part of
  // it ("range": the kernel gets the address of byte range_offset).
  Access access = Access::None;
  uint64_t range_offset = 0;
  uint64_t range_bytes = 0;          // 0: to the end of the buffer
  std::optional<TensorMapSpec> tensor_map;  // TensorMap
  uint32_t size() const {
    if (kind == Kind::TensorMap) return LR_TENSOR_MAP_BYTES;
    if (kind == Kind::Bytes) return static_cast<uint32_t>(blob.size());
    return kind == Kind::Buffer || null_pointer ? 8u : static_cast<uint32_t>(dtype_size(type));
  }
  uint32_t align() const {
    if (kind == Kind::TensorMap) return LR_TENSOR_MAP_ALIGN;
    if (kind == Kind::Bytes) return blob_align;
    return kind == Kind::Buffer || null_pointer ? 8u : static_cast<uint32_t>(dtype_align(type));
  }
};

// Every buffer an argument list uses: buffer arguments and the pointer
// fields of struct arguments, in argument order. Whatever derives accesses,
// fences or "is this buffer written" goes through this, so a pointer in a
// struct is never missed.
struct BufferUse {
  size_t arg = 0;                    // index into the argument list
  size_t buffer = 0;
  Access access = Access::None;
  uint64_t range_offset = 0;
  uint64_t range_bytes = 0;
  uint32_t offset_in_arg = 0;        // 0 for a buffer argument
  bool field = false;                // a struct's pointer field
  std::string path;                  // the field's dotted name (fields only)
  std::string label;                 // "argument 1" or "argument 0 field p.x"
};
std::vector<BufferUse> buffer_uses(const std::vector<ArgSpec>& args);

// What a launch promises to touch, checked against buffer sizes.
struct Coverage {
  size_t buffer = 0;
  bool per_workgroup = false;  // one element per workgroup instead of per work-item
  std::string pointer;
};

struct LaunchSpec {
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};
  std::array<uint32_t, 3> workgroup_count{1, 1, 1};
  std::array<uint64_t, 3> requested{1, 1, 1};  // work-items asked for (global_size, or count*size)
  bool from_global_size = false;
  uint32_t dims = 1;
  uint32_t dynamic_shared_bytes = 0;
  std::vector<Coverage> covers;
  uint64_t total_workitems() const;
  uint64_t total_workgroups() const;
};

struct VerifySpec {
  enum class Kind { Npy, Raw, Values, ReferenceBackend, Reference };
  size_t buffer = 0;
  Kind kind = Kind::Npy;
  std::filesystem::path file;   // Npy, Raw
  nlohmann::json values;        // Values: inline array
  std::string backend;          // ReferenceBackend
  std::string reference;        // Reference: builtin op name
  double rtol = 1e-5;
  double atol = 1e-8;
  bool equal_nan = false;
  std::string pointer;  // "/verify/N"
  std::string method() const;   // "npy", "raw", "values", "reference_backend:host", "reference:saxpy"
};

struct SaveSpec {
  size_t buffer = 0;
  std::filesystem::path file;  // relative paths resolve against the working directory
  std::string pointer;
};

// A kernel a sequence names ("kernels": {"alias": {"code_object", "kernel"}}).
struct SequenceKernel {
  std::string alias;
  std::map<std::string, std::string> code_object;  // as Manifest::code_object
  std::string kernel;                              // symbol
  std::string pointer;                             // "/kernels/<alias>"
  bool waits_for_producer = false;                 // LR_KERNEL_WAITS_FOR_PRODUCER
  // Set when code_object names a Triton cache entry, as Manifest::triton:
  // code_object is then the entry's binary for its backend, and each step
  // gives the entry's parameters (docs/manifest.md, "Sequences").
  nlohmann::json triton;
};

// One step of a sequence after `repeat` is expanded. Steps written once in
// the manifest ("written" steps) may stand for many expanded ones.
struct SequenceStep {
  enum class Kind { Kernel, Copy, Fill };
  Kind kind = Kind::Kernel;
  size_t written = 0;        // index of the written step (the same for every repetition)
  std::string name;          // the written step's name
  uint64_t repetition = 0;   // 0-based, within the innermost enclosing repeat; 0 outside one
  std::string label;         // name, or name[k] for a repeated step
  std::string pointer;       // "/sequence/3/steps/0"
  // Kernel
  size_t kernel = 0;         // index into Sequence::kernels
  std::vector<ArgSpec> args;
  LaunchSpec launch;
  // Copy (from -> to) and Fill (buffer = to)
  size_t from = 0, to = 0;
  uint64_t from_offset = 0, to_offset = 0, bytes = 0;
  std::array<std::byte, 4> pattern{};  // Fill: the element's bytes, repeated
  uint32_t pattern_size = 0;
  // Explicit edges: expanded indices of earlier steps this one follows.
  std::vector<size_t> after;
};

// "patch": a scalar argument of one written kernel step (every repetition
// of it) set to each value in turn between replays.
struct SequencePatch {
  size_t written = 0;  // the written step
  size_t arg = 0;      // index into its args
  // A scalar field of a struct argument ("arg": "p.bias"): its offset in the
  // argument and its type; a scalar argument: 0 and the argument's type.
  uint32_t field_offset = 0;
  DType type = DType::u32;
  std::string field;   // the dotted name, "" for a whole scalar argument
  std::vector<long double> values;
  std::vector<ScalarBytes> encoded;  // values in `type`
  // Sets value k in a copy of the argument (its bytes, or the struct's field).
  void apply(ArgSpec& a, size_t k) const;
  std::string pointer = "/patch";
};

struct Sequence {
  std::vector<SequenceKernel> kernels;
  std::vector<SequenceStep> steps;  // expanded, in program order
  size_t written_steps = 0;
  std::optional<SequencePatch> patch;
  uint64_t dispatches() const;      // kernel steps among `steps`
};

struct Manifest {
  int version = kManifestVersion;
  std::filesystem::path path;      // the manifest file ("" when parsed from a string)
  std::filesystem::path base_dir;  // relative paths resolve here
  std::string name;
  std::string description;
  // Backend → path as written; key "*" when code_object is a plain string.
  std::map<std::string, std::string> code_object;
  std::string kernel;
  std::vector<BufferSpec> buffers;
  std::vector<ArgSpec> args;
  LaunchSpec launch;
  uint32_t warmup = 3;
  uint32_t iterations = 20;
  std::vector<VerifySpec> verify;
  std::string verify_skip_reason;  // "verify": {"skip": "..."}
  std::vector<SaveSpec> save;
  std::optional<uint64_t> bytes_per_iteration;
  // "waits_for_producer": the kernel waits for its producer before touching
  // memory (lr_kernel_set_flags LR_KERNEL_WAITS_FOR_PRODUCER); also set by a
  // Triton entry whose metadata says launch_pdl.
  bool waits_for_producer = false;
  std::optional<uint64_t> elements_per_iteration;  // elements one launch processes, for elements/s
  // Set for a sequence manifest (docs/manifest.md, "Sequences"); code_object,
  // kernel, args and launch are then empty.
  std::optional<Sequence> sequence;
  // Set when code_object names a Triton cache entry (docs/triton.md): the
  // entry as lr_triton_describe writes it. code_object is then the entry's
  // binary for its backend, kernel its name, args the parameters in order
  // and the hidden scratch pointers after them, launch the grid in programs
  // with blocks of warp_size x num_warps and the entry's shared bytes.
  nlohmann::json triton;

  const BufferSpec* find_buffer(const std::string& name) const;
  // Bytes moved per launch: bytes_per_iteration, else the sum over buffers
  // with "access" (read_write counts twice); nullopt when nothing declares it.
  std::optional<uint64_t> traffic_bytes() const;
};

// Parses a manifest document. base_dir anchors relative file paths.
Manifest parse_manifest(const nlohmann::json& doc, const std::filesystem::path& base_dir);
// Reads and parses a manifest file; malformed JSON names the line and column.
Manifest load_manifest(const std::filesystem::path& path);

// Picks the code object path for a backend and resolves it
// (resolve_code_object_path). Throws ManifestError naming /code_object.
std::filesystem::path resolve_code_object(const Manifest& m, const std::string& backend,
                                          const std::string& arch,
                                          const std::filesystem::path& kernel_dir);

// Resolves one code object path as a manifest writes it: "{arch}" → arch,
// "@kernels/" → kernel_dir, other relative paths against base_dir; a file
// name "NAME.*" is the build's file of kernel source NAME for the backend
// (build_file_names: the first that exists). The one place that knows how
// the build names kernel files; `lrrt bench` finds its kernels here too.
// Throws InputError naming what it looked for.
std::filesystem::path resolve_code_object_path(const std::string& written, const std::string& backend,
                                               const std::string& arch, const std::filesystem::path& kernel_dir,
                                               const std::filesystem::path& base_dir);

// What the build writes for kernel source NAME, best first
// (docs/architecture.md, "Compiled kernels"): host NAME.host.so; hsa
// NAME.<arch>.hsaco, NAME.bundle.hsaco; cuda NAME.<arch>.cubin,
// NAME.fatbin, NAME.ptx.
std::vector<std::string> build_file_names(const std::string& name, const std::string& backend,
                                          const std::string& arch);

// A sequence's kernel step as a single-kernel manifest (its kernel's code
// object and symbol, its arguments and launch, the sequence's buffers), for
// LoadedKernel and the built-in references. Pointers stay the step's.
Manifest kernel_step_manifest(const Manifest& m, const SequenceStep& step);

// Most expanded steps a sequence may have.
inline constexpr uint64_t kMaxSequenceSteps = 1000000;

// Escapes one JSON-pointer token ("a/b" → "a~1b").
std::string pointer_token(const std::string& key);

// Manifests are small: a larger file is a mistake, not a manifest.
inline constexpr uint64_t kMaxManifestBytes = uint64_t(16) << 20;

}  // namespace lrrt::bundle
