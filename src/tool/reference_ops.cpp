#include "tool/reference_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

namespace lrrt::tool {
namespace {

// Checks a manifest's arguments against an op's signature and gives typed
// access to them.
class Signature {
 public:
  Signature(const std::string& op, const ReferenceInputs& in, const std::string& ptr, std::string sig)
      : op_(op), in_(in), ptr_(ptr), sig_(std::move(sig)) {}

  const ArgSpec& arg(size_t i, ArgSpec::Kind kind) const {
    const auto& args = in_.manifest->args;
    if (i >= args.size() || args[i].kind != kind) fail();
    return args[i];
  }
  const BufferSpec& buffer_arg(size_t i, DType type) const {
    const BufferSpec& b = in_.manifest->buffers[arg(i, ArgSpec::Kind::Buffer).buffer];
    if (b.type != type) fail();
    return b;
  }
  const std::byte* initial(size_t i) const {
    return (*in_.initial)[arg(i, ArgSpec::Kind::Buffer).buffer].data();
  }
  size_t buffer_index(size_t i) const { return arg(i, ArgSpec::Kind::Buffer).buffer; }
  // A by-value struct of `size` bytes (the kernel's C layout).
  const ArgSpec& struct_arg(size_t i, size_t size) const {
    const ArgSpec& a = arg(i, ArgSpec::Kind::Bytes);
    if (a.blob.size() != size) fail();
    return a;
  }
  // The buffer behind the pointer field at `offset` of struct argument i.
  const BufferSpec& field_buffer(size_t i, uint32_t offset, DType type) const {
    for (const auto& f : arg(i, ArgSpec::Kind::Bytes).pointer_fields)
      if (f.offset == offset) {
        if (f.range_offset) fail("a pointer field with a range");
        const BufferSpec& b = in_.manifest->buffers[f.buffer];
        if (b.type != type) fail();
        return b;
      }
    fail();
  }
  // A struct field's value as the kernel reads it: the argument's bytes.
  template <typename T>
  T field(size_t i, uint32_t offset) const {
    T v;
    std::memcpy(&v, arg(i, ArgSpec::Kind::Bytes).blob.data() + offset, sizeof(T));
    return v;
  }
  // A complex scalar argument's parts, from its bytes.
  std::pair<double, double> complex_scalar(size_t i, DType type) const {
    const ArgSpec& a = arg(i, ArgSpec::Kind::Scalar);
    if (a.type != type) fail();
    return {static_cast<double>(load_element(dtype_part(type), a.bytes.data(), 0)),
            static_cast<double>(load_element(dtype_part(type), a.bytes.data(), 1))};
  }
  bool poisoned_buffer(size_t buffer, uint64_t e) const { return in_.is_poisoned(buffer, e); }
  const std::byte* initial_buffer(size_t buffer) const { return (*in_.initial)[buffer].data(); }
  size_t index_of(const BufferSpec& b) const { return static_cast<size_t>(&b - in_.manifest->buffers.data()); }
  // The scalar as the kernel receives it: the argument's bytes, not the
  // manifest's number (1e-44 is the f32 subnormal 9.8e-45; a patch is bytes).
  long double scalar(size_t i) const {
    const ArgSpec& a = arg(i, ArgSpec::Kind::Scalar);
    return load_element(a.type, a.bytes.data(), 0);
  }
  // Whether element e of buffer argument i holds poison.
  bool poisoned(size_t i, uint64_t e) const { return in_.is_poisoned(buffer_index(i), e); }
  void expect_count(size_t n) const {
    if (in_.manifest->args.size() != n) fail();
  }
  [[noreturn]] void fail() const {
    throw ManifestError(ptr_ + "/expected/reference",
                        fmt::format("the manifest's arguments do not match reference \"{}\", which expects {}", op_, sig_));
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw ManifestError(ptr_ + "/expected/reference", fmt::format("reference \"{}\": {}", op_, why));
  }
  void require_output(size_t target, size_t i) const {
    if (buffer_index(i) != target)
      fail(fmt::format("can only check buffer \"{}\" (argument {})", in_.manifest->buffers[buffer_index(i)].name, i));
  }
  // Starts from the buffer's initial contents: elements the kernel does not
  // write keep them (Untouched).
  ReferenceOutput start(size_t target) const {
    ReferenceOutput out{(*in_.initial)[target], {}};
    out.origin.assign(in_.manifest->buffers[target].count, Origin::Untouched);
    return out;
  }

 private:
  std::string op_;
  const ReferenceInputs& in_;
  std::string ptr_;
  std::string sig_;
};

float f32_at(const std::byte* p, uint64_t i) {
  float v;
  std::memcpy(&v, p + i * 4, 4);
  return v;
}
void set_f32(ReferenceOutput& out, uint64_t i, double v, bool from_poison) {
  float f = static_cast<float>(v);
  std::memcpy(out.values.data() + i * 4, &f, 4);
  out.origin[i] = from_poison ? Origin::FromPoison : Origin::Computed;
}

using Op = std::function<ReferenceOutput(const ReferenceInputs&, size_t, const Signature&)>;

// A pointer field of a struct argument: (argument index, offset in it).
struct FieldRef {
  size_t arg;
  uint32_t offset;
};

struct OpEntry {
  const char* signature;
  std::vector<size_t> reads, writes;  // argument indices
  Op fn;
  std::vector<FieldRef> field_reads = {}, field_writes = {};
};

// An axpy of complex numbers: y[i] = a*x[i] + y[i], parts in double.
template <typename T>
ReferenceOutput complex_axpy(size_t target, const Signature& s, DType type) {
  s.expect_count(4);
  const auto [ar, ai] = s.complex_scalar(0, type);
  const auto& x = s.buffer_arg(1, type);
  const auto& y = s.buffer_arg(2, type);
  s.require_output(target, 2);
  const uint64_t n = static_cast<uint64_t>(s.scalar(3));
  if (n > x.count || n > y.count) s.fail("n is larger than x or y");
  auto out = s.start(target);
  T xv[2], yv[2];
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(xv, s.initial(1) + i * sizeof(xv), sizeof(xv));
    std::memcpy(yv, s.initial(2) + i * sizeof(yv), sizeof(yv));
    const T r[2] = {static_cast<T>(ar * xv[0] - ai * xv[1] + yv[0]), static_cast<T>(ar * xv[1] + ai * xv[0] + yv[1])};
    std::memcpy(out.values.data() + i * sizeof(r), r, sizeof(r));
    out.origin[i] = s.poisoned(1, i) || s.poisoned(2, i) ? Origin::FromPoison : Origin::Computed;
  }
  return out;
}

const std::map<std::string, OpEntry>& ops() {
  static const std::map<std::string, OpEntry> table = {
      {"saxpy",
       {"(f32 a, f32 buffer x, f32 buffer y, u32 n): y[i] = a*x[i] + y[i] for i < n",
        {1, 2},
        {2},
        [](const ReferenceInputs&, size_t target, const Signature& s) {
          s.expect_count(4);
          const double a = static_cast<double>(s.scalar(0));
          const auto& x = s.buffer_arg(1, DType::f32);
          const auto& y = s.buffer_arg(2, DType::f32);
          s.require_output(target, 2);
          const uint64_t n = static_cast<uint64_t>(s.scalar(3));
          if (n > x.count || n > y.count) s.fail("n is larger than x or y");
          auto out = s.start(target);
          for (uint64_t i = 0; i < n; ++i)
            set_f32(out, i, a * f32_at(s.initial(1), i) + f32_at(s.initial(2), i), s.poisoned(1, i) || s.poisoned(2, i));
          return out;
        }}},
      {"vector_add_f32",
       {"(f32 buffer a, f32 buffer b, f32 buffer c, u32 n): c[i] = a[i] + b[i] for i < n",
        {0, 1},
        {2},
        [](const ReferenceInputs&, size_t target, const Signature& s) {
          s.expect_count(4);
          const auto& a = s.buffer_arg(0, DType::f32);
          const auto& b = s.buffer_arg(1, DType::f32);
          const auto& c = s.buffer_arg(2, DType::f32);
          s.require_output(target, 2);
          const uint64_t n = static_cast<uint64_t>(s.scalar(3));
          if (n > a.count || n > b.count || n > c.count) s.fail("n is larger than a, b or c");
          auto out = s.start(target);
          for (uint64_t i = 0; i < n; ++i)
            set_f32(out, i, double(f32_at(s.initial(0), i)) + double(f32_at(s.initial(1), i)), s.poisoned(0, i) || s.poisoned(1, i));
          return out;
        }}},
      {"vector_add_i32",
       {"(i32 buffer a, i32 buffer b, i32 buffer c, u32 n): c[i] = a[i] + b[i] (wrapping) for i < n",
        {0, 1},
        {2},
        [](const ReferenceInputs&, size_t target, const Signature& s) {
          s.expect_count(4);
          const auto& a = s.buffer_arg(0, DType::i32);
          const auto& b = s.buffer_arg(1, DType::i32);
          const auto& c = s.buffer_arg(2, DType::i32);
          s.require_output(target, 2);
          const uint64_t n = static_cast<uint64_t>(s.scalar(3));
          if (n > a.count || n > b.count || n > c.count) s.fail("n is larger than a, b or c");
          auto out = s.start(target);
          for (uint64_t i = 0; i < n; ++i) {
            uint32_t x, y;
            std::memcpy(&x, s.initial(0) + i * 4, 4);
            std::memcpy(&y, s.initial(1) + i * 4, 4);
            uint32_t z = x + y;
            std::memcpy(out.values.data() + i * 4, &z, 4);
            out.origin[i] = s.poisoned(0, i) || s.poisoned(1, i) ? Origin::FromPoison : Origin::Computed;
          }
          return out;
        }}},
      {"transpose_f32",
       {"(f32 buffer in, f32 buffer out, u32 rows, u32 cols): out[c*rows + r] = in[r*cols + c]",
        {0},
        {1},
        [](const ReferenceInputs&, size_t target, const Signature& s) {
          s.expect_count(4);
          const auto& in = s.buffer_arg(0, DType::f32);
          const auto& o = s.buffer_arg(1, DType::f32);
          s.require_output(target, 1);
          const uint64_t rows = static_cast<uint64_t>(s.scalar(2)), cols = static_cast<uint64_t>(s.scalar(3));
          if (rows * cols > in.count || rows * cols > o.count) s.fail("rows*cols is larger than in or out");
          auto out = s.start(target);
          for (uint64_t r = 0; r < rows; ++r)
            for (uint64_t c = 0; c < cols; ++c)
              set_f32(out, c * rows + r, f32_at(s.initial(0), r * cols + c), s.poisoned(0, r * cols + c));
          return out;
        }}},
      {"reduce_sum_f32",
       {"(f32 buffer in, f32 buffer partial, u32 n): partial[g] = sum of in[g*B, g*B+B) below n, for each of the "
        "launch's workgroups g, B = workgroup_size x (summed in double)",
        {0},
        {1},
        [](const ReferenceInputs& in, size_t target, const Signature& s) {
          s.expect_count(3);
          const auto& src = s.buffer_arg(0, DType::f32);
          const auto& partial = s.buffer_arg(1, DType::f32);
          s.require_output(target, 1);
          const uint64_t n = static_cast<uint64_t>(s.scalar(2));
          if (n > src.count) s.fail("n is larger than in");
          const uint64_t groups = in.grid.x, B = in.block.x;
          if (groups > partial.count)
            s.fail(fmt::format("buffer \"{}\" has {} elements but the launch has {} workgroups", partial.name,
                               partial.count, groups));
          auto out = s.start(target);
          for (uint64_t g = 0; g < groups; ++g) {
            double sum = 0;
            bool from_poison = false;
            for (uint64_t i = g * B; i < std::min(n, g * B + B); ++i) {
              sum += f32_at(s.initial(0), i);
              from_poison |= s.poisoned(0, i);
            }
            set_f32(out, g, sum, from_poison);
          }
          return out;
        }}},
      {"axpy_c64",
       {"(c64 a, c64 buffer x, c64 buffer y, u32 n): y[i] = a*x[i] + y[i] for i < n",
        {1, 2},
        {2},
        [](const ReferenceInputs&, size_t target, const Signature& s) { return complex_axpy<float>(target, s, DType::c64); }}},
      {"axpy_c128",
       {"(c128 a, c128 buffer x, c128 buffer y, u32 n): y[i] = a*x[i] + y[i] for i < n",
        {1, 2},
        {2},
        [](const ReferenceInputs&, size_t target, const Signature& s) { return complex_axpy<double>(target, s, DType::c128); }}},
      {"struct_args",
       {"(struct {f32 buffer x @0, f32 buffer y @8, f32 bias @16, struct {f64 scale @24, u32 n @32}} p, 40 bytes): "
        "y[i] = f32(x[i] * scale) + bias for i < n",
        {},
        {},
        [](const ReferenceInputs&, size_t target, const Signature& s) {
          s.expect_count(1);
          s.struct_arg(0, 40);
          const auto& x = s.field_buffer(0, 0, DType::f32);
          const auto& y = s.field_buffer(0, 8, DType::f32);
          if (s.index_of(y) != target) s.fail(fmt::format("can only check buffer \"{}\" (field y)", y.name));
          const float bias = s.field<float>(0, 16);
          const double scale = s.field<double>(0, 24);
          const uint64_t n = s.field<uint32_t>(0, 32);
          if (n > x.count || n > y.count) s.fail("inner.n is larger than x or y");
          auto out = s.start(target);
          const size_t xi = s.index_of(x);
          for (uint64_t i = 0; i < n; ++i)
            set_f32(out, i, static_cast<double>(static_cast<float>(f32_at(s.initial_buffer(xi), i) * scale) + bias),
                    s.poisoned_buffer(xi, i));
          return out;
        },
        {{0, 0}},
        {{0, 8}}}},
  };
  return table;
}

}  // namespace

bool ReferenceInputs::is_poisoned(size_t buffer, uint64_t i) const {
  if (poisoned) return (*poisoned)[buffer][i] != 0;
  return manifest->buffers[buffer].init.kind == BufferInit::Kind::Poison;
}

bool has_reference_op(const std::string& name) { return ops().count(name) != 0; }

const std::vector<size_t>& reference_op_reads(const std::string& name) {
  static const std::vector<size_t> none;
  auto it = ops().find(name);
  return it == ops().end() ? none : it->second.reads;
}

const std::vector<size_t>& reference_op_writes(const std::string& name) {
  static const std::vector<size_t> none;
  auto it = ops().find(name);
  return it == ops().end() ? none : it->second.writes;
}

std::vector<size_t> reference_op_buffers(const std::string& name, const std::vector<ArgSpec>& args, bool writes) {
  std::vector<size_t> out;
  auto it = ops().find(name);
  if (it == ops().end()) return out;
  for (size_t i : writes ? it->second.writes : it->second.reads)
    if (i < args.size() && args[i].kind == ArgSpec::Kind::Buffer) out.push_back(args[i].buffer);
  for (const FieldRef& f : writes ? it->second.field_writes : it->second.field_reads)
    if (f.arg < args.size())
      for (const auto& p : args[f.arg].pointer_fields)
        if (p.offset == f.offset) out.push_back(p.buffer);
  return out;
}

std::string reference_op_list() {
  std::string out;
  for (const auto& [name, _] : ops()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

ReferenceOutput compute_reference(const std::string& op, const ReferenceInputs& in, size_t buffer,
                                  const std::string& verify_pointer) {
  auto it = ops().find(op);
  if (it == ops().end())
    throw ManifestError(verify_pointer + "/expected/reference",
                        fmt::format("no built-in reference \"{}\" (available: {})", op, reference_op_list()));
  Signature sig(op, in, verify_pointer, it->second.signature);
  return it->second.fn(in, buffer, sig);
}

}  // namespace lrrt::tool
