// OpenCL printf on AMD GPUs: the format table a code object carries
// (`amdhsa.printf` in the metadata note) and the printf buffer the kernel
// writes records into (its address is the hidden_printf_buffer implicit
// argument). Pure functions over bytes: the hsa backend allocates the buffer,
// initialises it, and decodes it after the dispatches that wrote it finished;
// unit tests feed the decoder hand-made buffers.
//
// The ABI (LLVM's AMDGPUPrintfRuntimeBinding pass, ROCm's device-library
// __printf_alloc, and ROCclr, which decodes it on ROCm):
//  - a table entry is "ID:N:S1:...:SN:FORMAT": the format id the records
//    carry, the number of arguments, each argument's size in the record in
//    bytes, then the format string with \a \b \f \n \r \v and \72 (':')
//    written as escapes;
//  - the buffer starts with two 32-bit words: the bytes of records written so
//    far (the kernel reserves space by advancing it atomically) and the
//    buffer's capacity (the runtime writes it; a reservation that would pass
//    it fails, and that printf call prints nothing); records follow from byte
//    8, each the 32-bit format id, then the arguments back to back at the
//    sizes of the table entry (every size a multiple of 4: smaller integers
//    are widened to 32 bits, a float stays 4 bytes, a %s argument is the
//    string itself, 4-byte padded, without its NUL).
// Everything is little-endian, as on the GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/formats/error.hpp"

namespace lrrt::formats::amdgpu {

// Bytes of the buffer header: the bytes written so far, then the capacity.
constexpr size_t kPrintfHeaderBytes = 8;

struct PrintfFormat {
  uint32_t id = 0;
  std::vector<uint32_t> arg_sizes;  // bytes each argument takes in a record
  std::string format;               // escapes undone
  // Bytes of one record: the id and every argument.
  uint64_t record_bytes() const;
};

// Parses one `amdhsa.printf` entry; FormatError naming the entry otherwise.
PrintfFormat parse_printf_format(std::string_view entry);

// A code object's format table. An entry that does not parse is kept as an
// error for its id (when the id itself can be read): a record that uses it
// fails to decode, records that do not decode normally.
class PrintfTable {
 public:
  PrintfTable() = default;
  explicit PrintfTable(const std::vector<std::string>& entries);
  // Nullptr when the table has no entry for `id`; throws FormatError when the
  // entry for `id` did not parse.
  const PrintfFormat* find(uint32_t id) const;
  size_t size() const { return formats_.size(); }
  bool empty() const { return formats_.empty() && broken_.empty(); }
  // The largest record any entry describes (0 for an empty table).
  uint64_t max_record_bytes() const { return max_record_bytes_; }
  // The entries that did not parse, one sentence each.
  const std::vector<std::string>& errors() const { return errors_; }
  // Built from the same entries (two loads of one code object): records
  // written for one decode the same with the other.
  bool operator==(const PrintfTable& other) const { return entries_ == other.entries_; }

 private:
  std::vector<std::string> entries_;
  std::vector<PrintfFormat> formats_;  // sorted by id
  std::vector<std::pair<uint32_t, std::string>> broken_;
  std::vector<std::string> errors_;
  uint64_t max_record_bytes_ = 0;
};

// Writes the header of an empty buffer of buffer.size() bytes (at least 16):
// nothing written, capacity buffer.size() - 8. (ROCclr writes the same: the
// device-library check, header + written + record <= capacity, then never
// writes past the end whichever way a device reads the capacity.)
void init_printf_buffer(std::span<std::byte> buffer);

// Formats one record's arguments (the bytes after the format id, exactly
// format.record_bytes() - 4 of them) with its format string, as C's printf
// would: flags, width, precision, length modifiers, OpenCL vectors (%v4f,
// elements joined by ','), %c, %s, %p, %%. A conversion with no argument
// left is printed as written. FormatError on a conversion lrrt cannot print
// (%n, a '*' width, an unknown conversion, an argument whose size does not
// suit it) and on a width or precision over 4096.
std::string format_printf_record(const PrintfFormat& format, std::span<const std::byte> args);

struct PrintfDecoded {
  std::vector<std::string> records;  // each record's text, in buffer order
  uint64_t used_bytes = 0;           // record bytes the header says were written
  uint64_t capacity = 0;             // the capacity in the header
  // The space left could not hold the largest record the table describes:
  // the kernel may have dropped records (its printf returned -1).
  bool maybe_dropped = false;
  // Empty, or why decoding stopped early (a truncated record, an unknown
  // format id, a header that lies): the records before it are still there.
  std::string error;
};

// Decodes a whole buffer (header and records). Never reads outside `buffer`
// and never throws for what the buffer holds: problems go to `error`.
PrintfDecoded decode_printf_buffer(const PrintfTable& table, std::span<const std::byte> buffer);

}  // namespace lrrt::formats::amdgpu
