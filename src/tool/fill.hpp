// Initial buffer contents from a manifest's "init": zeros, fill, iota,
// uniform random (seeded; a fresh seed is drawn when none is given), .npy or
// raw file, or poison (NaN for floats, 0xAB bytes for integers) for buffers
// the kernel is expected to overwrite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tool/manifest.hpp"

namespace lrrt::tool {

// A seed from std::random_device and the clock.
uint64_t fresh_seed();

// Fills `out` (b.bytes long). For random init returns the seed used.
std::optional<uint64_t> fill_buffer(const BufferSpec& b, std::byte* out);

// Poison pattern: quiet NaN for float types, 0xAB in every byte otherwise.
void fill_poison(DType type, std::byte* out, uint64_t count);

}  // namespace lrrt::tool
