#include "lrrt/bundle/fill.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <random>

#include "lrrt/bundle/input_file.hpp"
#include "lrrt/bundle/npy.hpp"

namespace lrrt::bundle {

uint64_t fresh_seed() {
  std::random_device rd;
  uint64_t s = (uint64_t(rd()) << 32) ^ rd();
  s ^= static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  return s & ((uint64_t(1) << 53) - 1);  // stays exact as a JSON number everywhere
}

void fill_poison(DType type, std::byte* out, uint64_t count) {
  // A complex element is poisoned in both parts.
  count *= dtype_parts(type);
  type = dtype_part(type);
  if (dtype_is_float(type)) {
    for (uint64_t i = 0; i < count; ++i) store_element(type, out, i, std::numeric_limits<long double>::quiet_NaN());
  } else {
    std::memset(out, 0xAB, count * dtype_size(type));
  }
}

std::optional<uint64_t> fill_buffer(const BufferSpec& b, std::byte* out) {
  const BufferInit& init = b.init;
  const uint64_t n = b.count;
  switch (init.kind) {
    case BufferInit::Kind::Poison:
      fill_poison(b.type, out, n);
      return std::nullopt;
    case BufferInit::Kind::Zeros:
      std::memset(out, 0, b.bytes);
      return std::nullopt;
    case BufferInit::Kind::Fill:
      store_element(b.type, out, 0, init.fill);
      if (dtype_is_complex(b.type)) store_element(dtype_part(b.type), out, 1, init.fill_imag);
      for (uint64_t i = 1; i < n; ++i) std::memcpy(out + i * dtype_size(b.type), out, dtype_size(b.type));
      return std::nullopt;
    case BufferInit::Kind::Iota:
      for (uint64_t i = 0; i < n; ++i) {
        long double v = init.start + init.step * static_cast<long double>(i);
        if (!dtype_is_float(b.type) && !integer_fits(b.type, v)) {
          // Integers wrap like the kernel's own arithmetic would.
          v = std::fmod(v, 18446744073709551616.0L);
          if (v < 0) v += 18446744073709551616.0L;
          uint64_t bits = static_cast<uint64_t>(v);
          std::memcpy(out + i * dtype_size(b.type), &bits, dtype_size(b.type));
          continue;
        }
        store_element(b.type, out, i, v);
      }
      return std::nullopt;
    case BufferInit::Kind::Random: {
      const uint64_t seed = init.seed ? *init.seed : fresh_seed();
      std::mt19937_64 rng(seed);  // fully specified by the standard: same values everywhere
      if (dtype_is_float(b.type)) {
        // Complex: each part uniform in [min, max), real then imaginary.
        const long double span = init.max - init.min;
        const DType part = dtype_part(b.type);
        for (uint64_t i = 0; i < n * dtype_parts(b.type); ++i) {
          const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
          store_element(part, out, i, init.min + span * u);
        }
      } else {
        const unsigned __int128 range = static_cast<unsigned __int128>(init.max - init.min) + 1;
        // min converts through the buffer's own signedness only: a negative
        // min as uint64_t, or one above INT64_MAX as int64_t, is undefined.
        const uint64_t lo = dtype_is_signed(b.type) ? static_cast<uint64_t>(static_cast<int64_t>(init.min))
                                                    : static_cast<uint64_t>(init.min);
        for (uint64_t i = 0; i < n; ++i) {
          uint64_t r = rng();
          if (range <= std::numeric_limits<uint64_t>::max()) {
            const uint64_t rg = static_cast<uint64_t>(range);
            const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % rg;
            while (r >= limit) r = rng();  // no modulo bias
            r %= rg;
          }
          // Two's complement addition gives min + r for signed and unsigned.
          const uint64_t bits = lo + r;
          std::memcpy(out + i * dtype_size(b.type), &bits, dtype_size(b.type));
        }
      }
      return seed;
    }
    case BufferInit::Kind::Npy: {
      const std::string where = fmt::format("{}/init/npy: {}", b.pointer, init.file.string());
      NpyArray a;
      try {
        a = read_npy(init.file, {.count = n});
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}/init/npy (buffer \"{}\" of {} elements): {}", b.pointer, b.name, n, e.what()));
      }
      if (a.type == b.type) {
        std::memcpy(out, a.data.data(), b.bytes);
      } else if (b.type == DType::bf16 && a.type == DType::f32) {
        for (uint64_t i = 0; i < n; ++i) store_element(b.type, out, i, load_element(a.type, a.data.data(), i));
      } else {
        throw InputError(fmt::format("{}: dtype '{}' does not match buffer \"{}\" of type {}", where, a.descr, b.name,
                                     dtype_name(b.type)));
      }
      return std::nullopt;
    }
    case BufferInit::Kind::Raw: {
      InputFile file(init.file);  // size checked before a byte is read
      if (file.size() != b.bytes)
        throw InputError(fmt::format("{}/init/raw: {}: has {} bytes, buffer \"{}\" needs {} ({} x {})", b.pointer,
                                     init.file.string(), file.size(), b.name, b.bytes, b.count, dtype_name(b.type)));
      file.read_at(0, std::span<std::byte>(out, b.bytes));
      return std::nullopt;
    }
  }
  return std::nullopt;
}

InitialContents initial_contents(const Manifest& m) {
  InitialContents in{BufferContents(m.buffers.size()), std::vector<std::optional<uint64_t>>(m.buffers.size())};
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const auto& b = m.buffers[i];
    try {
      in.contents[i].resize(static_cast<size_t>(b.bytes));
    } catch (const std::bad_alloc&) {
      throw DeviceError(fmt::format("{}: cannot allocate {} bytes of host memory for buffer \"{}\"", b.pointer, b.bytes, b.name));
    }
    in.seeds[i] = fill_buffer(b, in.contents[i].data());
  }
  return in;
}

}  // namespace lrrt::bundle
