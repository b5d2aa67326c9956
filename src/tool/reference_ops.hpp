// Built-in reference implementations of the bundled kernels, computed on the
// CPU with plain loops from the same initial inputs the device got, so a
// manifest can verify a kernel against something independent of every
// backend ("expected": {"reference": "saxpy"}).
//
// A reference reads its scalar arguments from the bytes the kernel receives
// (the manifest's value encoded in the argument's type), and says of every
// element of its output whether it wrote it and whether the value it wrote
// came from poison (an element nothing initialised), so that verification can
// compare untouched elements bit for bit and refuse expected values that a
// kernel writing nothing would match (docs/manifest.md, "What a check can
// tell").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lrrt/lrrt.h"
#include "tool/bundle.hpp"

namespace lrrt::tool {

// What a reference says of one element of its output.
enum class Origin : uint8_t {
  Untouched,   // not written: the buffer's contents before the launch
  Computed,    // written from initialised inputs
  FromPoison,  // written from at least one poisoned input element
};

struct ReferenceInputs {
  const Manifest* manifest = nullptr;
  // Initial contents of every buffer, indexed like manifest->buffers.
  const std::vector<std::vector<std::byte>>* initial = nullptr;
  lr_dim3_t grid{1, 1, 1};   // workgroups per dimension
  lr_dim3_t block{1, 1, 1};  // work-items per workgroup
  // Per buffer and element, whether it holds poison (nothing initialised
  // it); null: every element of a buffer whose init is poison does.
  const std::vector<std::vector<uint8_t>>* poisoned = nullptr;
  bool is_poisoned(size_t buffer, uint64_t i) const;
};

struct ReferenceOutput {
  std::vector<std::byte> values;
  std::vector<Origin> origin;  // one per element
};

bool has_reference_op(const std::string& name);
std::string reference_op_list();  // "saxpy, vector_add_f32, ..."
// The argument indices the op reads and writes, from its signature (not from
// the manifest's access declarations); empty for an unknown op.
const std::vector<size_t>& reference_op_reads(const std::string& name);
const std::vector<size_t>& reference_op_writes(const std::string& name);
// The buffers the op reads (writes) given a step's arguments: its buffer
// arguments and the pointer fields of its struct arguments.
std::vector<size_t> reference_op_buffers(const std::string& name, const std::vector<ArgSpec>& args, bool writes);

// Expected contents of manifest->buffers[buffer] after one launch, computed
// by the named op. Throws ManifestError (pointer = verify_pointer) when the
// manifest's arguments do not fit the op's signature.
ReferenceOutput compute_reference(const std::string& op, const ReferenceInputs& in, size_t buffer,
                                  const std::string& verify_pointer);

// A sequence's final buffers computed on the CPU (sequence_reference), with
// every element's origin: Untouched when no step wrote it.
struct SequenceReference {
  BufferContents state;
  std::vector<std::vector<Origin>> origin;  // per buffer, per element
};

}  // namespace lrrt::tool
