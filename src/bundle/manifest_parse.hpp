// The manifest parser's shared parts (private to src/bundle): the JSON field
// helpers every section parser uses, and the section parsers that
// parse_manifest (manifest.cpp) calls. One file per concern:
//   manifest_fields.cpp    JSON field helpers (strings, numbers, sizes, buffer names)
//   manifest_buffers.cpp   buffers, their init, verify and save
//   manifest_args.cpp      kernel arguments and the launch
//   manifest_struct_args.cpp  struct and raw-bytes arguments (C layout, pointer fields)
//   manifest_sequence.cpp  sequences and patches
//   manifest_triton.cpp    a Triton cache entry desugared to a plain manifest
//   manifest.cpp           the top level: parse, load, resolve the code object
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lrrt/bundle/manifest.hpp"

namespace lrrt::bundle::manifest_parse {

using nlohmann::json;
namespace fs = std::filesystem;

// A JSON value in a message: its type, or a short excerpt of a string or number.
std::string describe(const json& v);

// A JSON object whose every key must be known: finish() names the first
// unknown one (with a suggestion when it looks like a typo).
class Obj {
 public:
  Obj(const json& j, std::string ptr, std::vector<std::string> known)
      : j_(j), ptr_(std::move(ptr)), known_(std::move(known)) {
    if (!j_.is_object()) throw ManifestError(ptr_, "expected an object, got " + describe(j_));
  }
  const std::string& ptr() const { return ptr_; }
  std::string ptr(const std::string& key) const { return ptr_ + "/" + pointer_token(key); }
  bool has(const std::string& key) const { return j_.contains(key); }
  const json* opt(const std::string& key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const json& req(const std::string& key, const std::string& hint = "") const {
    auto it = j_.find(key);
    if (it == j_.end())
      throw ManifestError(ptr_, fmt::format("missing required field \"{}\"{}", key, hint.empty() ? "" : " (" + hint + ")"));
    return *it;
  }
  // Throws naming the first unknown key (with a suggestion for a likely typo).
  void finish() const;

 private:
  const json& j_;
  std::string ptr_;
  std::vector<std::string> known_;
};

// ---- Field helpers (manifest_fields.cpp) ----------------------------------

std::string get_string(const json& v, const std::string& ptr, bool allow_empty = false);
uint64_t get_uint(const json& v, const std::string& ptr, uint64_t min = 0,
                  uint64_t max = std::numeric_limits<uint64_t>::max());
double get_double(const json& v, const std::string& ptr);
bool get_bool(const json& v, const std::string& ptr);
long double get_number(const json& v, const std::string& ptr);
void check_value_fits(DType t, long double v, const std::string& ptr);
// A complex value of type t (c64, c128): [re, im], or a real number (im = 0);
// each part must fit t's part type.
std::pair<long double, long double> get_complex(const json& v, const std::string& ptr, DType t);
DType get_dtype(const json& v, const std::string& ptr);
fs::path resolve_input_file(const Manifest& m, const json& v, const std::string& ptr);
size_t find_buffer_index(const Manifest& m, const json& v, const std::string& ptr);
std::optional<uint64_t> size_reference(const Manifest& m, const json& v, const std::string& ptr);

// ---- Buffers, verify, save (manifest_buffers.cpp) -------------------------

void parse_buffers(Manifest& m, const json& v, const std::string& ptr);
void parse_verify(Manifest& m, const json& v, const std::string& ptr);
void parse_save(Manifest& m, const json& v, const std::string& ptr);

// ---- Arguments and launch (manifest_args.cpp) -----------------------------

// "read", "write" or "read_write": a buffer's declared access or a step argument's.
Access parse_access(const json& v, const std::string& ptr);
void parse_range(const BufferSpec& b, const json& v, const std::string& ptr, uint64_t& offset, uint64_t& bytes);
void parse_args(const Manifest& m, const json& v, const std::string& ptr, std::vector<ArgSpec>& out,
                const std::string* step = nullptr);
void parse_launch(const Manifest& m, const json& v, const std::string& ptr, LaunchSpec& L);
// A scalar's type, value and bounds into `a` (a scalar argument or a struct's field).
void parse_scalar(const Manifest& m, const Obj& o, ArgSpec& a, const std::string& what);

// ---- Struct and bytes arguments (manifest_struct_args.cpp) ----------------

// Deepest nesting of structs in an argument.
inline constexpr size_t kMaxStructDepth = 16;
// {"struct": [...]} (C layout), {"bytes": "hex"} or {"bytes_file": path}
// into `a` (Kind::Bytes); `label` is "args[N]" for messages; `step`: a
// sequence step (pointer fields may declare access and range).
void parse_aggregate_arg(const Manifest& m, const Obj& o, ArgSpec& a, const std::string& label, bool step);

// ---- Tensor maps (manifest_tensor_map.cpp) --------------------------------

// {"tensor_map": {...}, "name": ...}: args[i] when it is one.
bool is_tensor_map_arg(const json& v);
ArgSpec parse_tensor_map_arg(const Manifest& m, const json& v, const std::string& ptr, const std::string* step);

// ---- Sequences (manifest_sequence.cpp) ------------------------------------

// `o` is the top-level object (it holds "kernels", "sequence", "patch").
void parse_sequence(Manifest& m, const Obj& o);
void check_patch_verifiable(const Manifest& m);

// ---- Triton (manifest_triton.cpp) -----------------------------------------

// The Triton cache entry `code_object` names (its folder or <name>.json, as
// lr_triton_describe describes it), or null for any other code object;
// `ptr` is where code_object is written.
json triton_entry_for(const std::map<std::string, std::string>& code_object, const fs::path& base_dir,
                      const std::string& ptr);
// For arguments written by parameter name ({"x_ptr": ...}), which only a
// Triton cache entry takes, when code_object is not one: why not, naming the
// path (a folder that does not exist is the usual case: a typo in the path).
std::string not_a_triton_entry(const std::map<std::string, std::string>& code_object, const fs::path& base_dir);
// A single-launch manifest on a Triton entry: kernel, code_object, buffers,
// args and launch from the entry and `o`.
void parse_triton_kernel(Manifest& m, const Obj& o, const json& entry);
// One call of a Triton kernel: the arguments by parameter name (or in
// order), Triton's {"grid": [...]}, where they are written, and, for a
// sequence step, its name (its buffer arguments may declare access; its
// messages name it). Hidden scratch buffers are named scratch_prefix + the
// pointer's name.
struct TritonCall {
  const json* args = nullptr;
  std::string args_ptr;
  const json* launch = nullptr;
  std::string launch_ptr;
  const std::string* step = nullptr;
  std::string scratch_prefix;
};
// Desugars the call into plain arguments (the parameters in order, then the
// hidden scratch pointers; scratch buffers added to m.buffers) and a launch
// (blocks of warp_size x num_warps, the entry's shared bytes). `desugared`,
// when given, gets the arguments as a plain "args" array (without the hidden
// pointers).
void parse_triton_call(Manifest& m, const json& entry, const TritonCall& c, std::vector<ArgSpec>& out_args,
                       LaunchSpec& out_launch, json* desugared);

// ---- Top level (manifest.cpp) ---------------------------------------------

void parse_code_object(std::map<std::string, std::string>& code_object, const json& v, const std::string& ptr);

}  // namespace lrrt::bundle::manifest_parse
