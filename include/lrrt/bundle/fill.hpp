// Initial buffer contents from a manifest's "init": zeros, fill, iota,
// uniform random (seeded; a fresh seed is drawn when none is given), .npy or
// raw file, or poison (NaN for floats, 0xAB bytes for integers) for buffers
// the kernel is expected to overwrite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "lrrt/bundle/manifest.hpp"

namespace lrrt::bundle {

// A seed from std::random_device and the clock.
uint64_t fresh_seed();

// Fills `out` (b.bytes long). For random init returns the seed used.
std::optional<uint64_t> fill_buffer(const BufferSpec& b, std::byte* out);

// Poison pattern: quiet NaN for float types, 0xAB in every byte otherwise.
void fill_poison(DType type, std::byte* out, uint64_t count);

// Every buffer's contents, indexed like Manifest::buffers.
using BufferContents = std::vector<std::vector<std::byte>>;

// Every buffer's initial contents and the seed each random fill drew.
struct InitialContents {
  BufferContents contents;
  std::vector<std::optional<uint64_t>> seeds;
};

// Fills every buffer as its "init" says. DeviceError naming /buffers/N when
// the host memory for it cannot be allocated; InputError for a bad file.
InitialContents initial_contents(const Manifest& m);

}  // namespace lrrt::bundle
