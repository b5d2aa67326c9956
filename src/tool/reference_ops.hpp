// Built-in reference implementations of the bundled kernels, computed on the
// CPU with plain loops from the same initial inputs the device got, so a
// manifest can verify a kernel against something independent of every
// backend ("expected": {"reference": "saxpy"}).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lrrt/lrrt.h"
#include "tool/bundle.hpp"

namespace lrrt::tool {

struct ReferenceInputs {
  const Manifest* manifest = nullptr;
  // Initial contents of every buffer, indexed like manifest->buffers.
  const std::vector<std::vector<std::byte>>* initial = nullptr;
  lr_dim3_t grid{1, 1, 1};   // workgroups per dimension
  lr_dim3_t block{1, 1, 1};  // work-items per workgroup
};

bool has_reference_op(const std::string& name);
std::string reference_op_list();  // "saxpy, vector_add_f32, ..."

// Expected contents of manifest->buffers[buffer] after one launch, computed
// by the named op. Throws ManifestError (pointer = verify_pointer) when the
// manifest's arguments do not fit the op's signature.
std::vector<std::byte> compute_reference(const std::string& op, const ReferenceInputs& in, size_t buffer,
                                         const std::string& verify_pointer);

}  // namespace lrrt::tool
