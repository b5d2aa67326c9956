#include "lrrt/formats/compression.hpp"

#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include <bit>
#include <climits>
#include <cstring>

#include <fmt/format.h>

namespace lrrt::formats {
namespace {

[[noreturn]] void fail(std::string_view what, const std::string& message) {
  throw FormatError(fmt::format("{}: {}", what, message));
}

void check_size(Codec codec, std::span<const std::byte> compressed, uint64_t size, std::string_view what) {
  if (size > kMaxDecompressedBytes)
    fail(what, fmt::format("the header says the {} data expands to {} bytes, more than any code object ({} at most)",
                           codec_name(codec), size, kMaxDecompressedBytes));
  if (size / kMaxCompressionRatio > compressed.size() + 4096)
    fail(what, fmt::format("the header says {} bytes of {} data expand to {} bytes, a ratio no compressor reaches on code",
                           compressed.size(), codec_name(codec), size));
}

std::vector<std::byte> inflate_zlib(std::span<const std::byte> in, uint64_t size, std::string_view what) {
  std::vector<std::byte> out(size);
  z_stream z{};
  if (inflateInit(&z) != Z_OK) fail(what, "zlib could not start");
  // zlib counts in uInt: feed and drain in pieces no larger than it takes.
  const std::byte* next_in = in.data();
  uint64_t left_in = in.size(), produced = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const uInt in_now = uInt(std::min<uint64_t>(left_in, UINT_MAX));
    const uInt out_now = uInt(std::min<uint64_t>(size - produced, UINT_MAX));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(next_in));
    z.avail_in = in_now;
    // One spare byte of room would hide output past `size`: give none, and
    // a stream that wants more room ends in Z_BUF_ERROR below.
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = out_now;
    rc = inflate(&z, Z_NO_FLUSH);
    next_in += in_now - z.avail_in;
    left_in -= in_now - z.avail_in;
    produced += out_now - z.avail_out;
    if (rc == Z_OK && in_now == z.avail_in && out_now == z.avail_out) rc = Z_BUF_ERROR;  // no progress
  }
  const std::string message = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    if (rc == Z_BUF_ERROR && produced == size && left_in)
      fail(what, fmt::format("the zlib stream expands to more than the {} bytes its header says", size));
    fail(what, fmt::format("corrupt or truncated zlib stream ({}after {} of {} bytes)",
                           message.empty() ? "" : message + ", ", produced, size));
  }
  if (produced != size)
    fail(what, fmt::format("the zlib stream expands to {} bytes, but its header says {}", produced, size));
  if (left_in) fail(what, fmt::format("{} bytes follow the end of the zlib stream", left_in));
  return out;
}

std::vector<std::byte> decompress_zstd(std::span<const std::byte> in, uint64_t size, std::string_view what) {
  const unsigned long long content = ZSTD_getFrameContentSize(in.data(), in.size());
  if (content == ZSTD_CONTENTSIZE_ERROR) fail(what, "not a zstd frame (bad magic or header)");
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != size)
    fail(what, fmt::format("the zstd frame holds {} bytes, but the header says {}", content, size));
  const size_t frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
  if (ZSTD_isError(frame)) fail(what, fmt::format("truncated or corrupt zstd frame ({})", ZSTD_getErrorName(frame)));
  std::vector<std::byte> out(size);
  const size_t got = ZSTD_decompress(out.data(), out.size(), in.data(), frame);
  if (ZSTD_isError(got)) fail(what, fmt::format("corrupt zstd data ({})", ZSTD_getErrorName(got)));
  if (got != size) fail(what, fmt::format("the zstd frame expands to {} bytes, but the header says {}", got, size));
  // Padding to the container's alignment may follow, nothing else.
  for (size_t i = frame; i < in.size(); ++i)
    if (in[i] != std::byte{0}) fail(what, fmt::format("{} bytes that are not padding follow the zstd frame", in.size() - frame));
  return out;
}

std::vector<std::byte> decompress_lz4(std::span<const std::byte> in, uint64_t size, std::string_view what) {
  if (in.size() > uint64_t(LZ4_MAX_INPUT_SIZE) || size > uint64_t(INT_MAX))
    fail(what, fmt::format("{} bytes of LZ4 data expanding to {} are more than an LZ4 block holds", in.size(), size));
  std::vector<std::byte> out(size);
  const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data()),
                                      int(in.size()), int(size));
  if (got < 0) fail(what, "corrupt or truncated LZ4 block");
  if (uint64_t(got) != size) fail(what, fmt::format("the LZ4 block expands to {} bytes, but the header says {}", got, size));
  return out;
}

}  // namespace

std::string_view codec_name(Codec codec) {
  switch (codec) {
    case Codec::Zlib: return "zlib";
    case Codec::Zstd: return "zstd";
    case Codec::Lz4Block: return "lz4";
  }
  return "unknown";
}

std::vector<std::byte> decompress(Codec codec, std::span<const std::byte> compressed, uint64_t size,
                                  std::string_view what) {
  check_size(codec, compressed, size, what);
  switch (codec) {
    case Codec::Zlib: return inflate_zlib(compressed, size, what);
    case Codec::Zstd: return decompress_zstd(compressed, size, what);
    case Codec::Lz4Block: return decompress_lz4(compressed, size, what);
  }
  fail(what, "unknown compression");
}

uint64_t compressed_frame_size(Codec codec, std::span<const std::byte> bytes, std::string_view what) {
  if (codec == Codec::Zstd) {
    const size_t frame = ZSTD_findFrameCompressedSize(bytes.data(), bytes.size());
    if (ZSTD_isError(frame)) fail(what, fmt::format("no whole zstd frame ({})", ZSTD_getErrorName(frame)));
    return frame;
  }
  if (codec == Codec::Zlib) {
    // Inflate into a scratch window to find where the stream ends.
    z_stream z{};
    if (inflateInit(&z) != Z_OK) fail(what, "zlib could not start");
    std::vector<Bytef> scratch(64 * 1024);
    const uInt in_now = uInt(std::min<uint64_t>(bytes.size(), UINT_MAX));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(bytes.data()));
    z.avail_in = in_now;
    int rc = Z_OK;
    uint64_t produced = 0;
    while (rc == Z_OK) {
      z.next_out = scratch.data();
      z.avail_out = uInt(scratch.size());
      rc = inflate(&z, Z_NO_FLUSH);
      produced += scratch.size() - z.avail_out;
      if (produced > kMaxDecompressedBytes) rc = Z_DATA_ERROR;
    }
    const uint64_t used = in_now - z.avail_in;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) fail(what, "no whole zlib stream");
    return used;
  }
  fail(what, "an LZ4 block does not record its own size");
}

// ---------------------------------------------------------------- MD5
// RFC 1321. Written here rather than taken from a crypto library: clang's
// bundle hash is the only use, and no digest library is on every machine
// the one lrrt binary runs on (the GPU machine has none of ours).

namespace {

constexpr std::array<uint32_t, 64> kMd5Sine = [] {
  // floor(abs(sin(i + 1)) * 2^32), as the RFC tabulates.
  return std::array<uint32_t, 64>{
      0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
      0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
      0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
      0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
      0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
      0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
      0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
      0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
}();
constexpr uint8_t kMd5Shift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                   5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                   4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                   6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

void md5_block(std::array<uint32_t, 4>& state, const uint8_t* block) {
  uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = uint32_t(block[4 * i]) | uint32_t(block[4 * i + 1]) << 8 | uint32_t(block[4 * i + 2]) << 16 |
           uint32_t(block[4 * i + 3]) << 24;
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  for (int i = 0; i < 64; ++i) {
    uint32_t f;
    int g;
    if (i < 16) f = (b & c) | (~b & d), g = i;
    else if (i < 32) f = (d & b) | (~d & c), g = (5 * i + 1) % 16;
    else if (i < 48) f = b ^ c ^ d, g = (3 * i + 5) % 16;
    else f = c ^ (b | ~d), g = (7 * i) % 16;
    const uint32_t rotated = std::rotl(a + f + kMd5Sine[i] + m[g], kMd5Shift[i]);
    a = d;
    d = c;
    c = b;
    b = b + rotated;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
}

}  // namespace

std::array<uint8_t, 16> md5(std::span<const std::byte> bytes) {
  std::array<uint32_t, 4> state{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint64_t n = bytes.size();
  uint64_t whole = n / 64 * 64;
  for (uint64_t i = 0; i < whole; i += 64) md5_block(state, p + i);
  uint8_t tail[128] = {};
  const uint64_t rest = n - whole;
  if (rest) std::memcpy(tail, p + whole, rest);  // p is null for an empty span
  tail[rest] = 0x80;
  const uint64_t tail_size = rest < 56 ? 64 : 128;
  const uint64_t bits = n * 8;
  for (int i = 0; i < 8; ++i) tail[tail_size - 8 + i] = uint8_t(bits >> (8 * i));
  md5_block(state, tail);
  if (tail_size == 128) md5_block(state, tail + 64);
  std::array<uint8_t, 16> digest{};
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 4; ++k) digest[4 * i + k] = uint8_t(state[i] >> (8 * k));
  return digest;
}

}  // namespace lrrt::formats
