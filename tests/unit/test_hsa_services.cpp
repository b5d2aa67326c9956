// Runtime services AMDGPU kernels ask for through hidden arguments
// (src/runtime/hsa/services.*, printf_buffer.*): the refusal of each service
// lrrt does not provide, from metadata made here and from clang-built code
// objects (tests/kernels/services); OpenCL printf end to end on the stand-in
// libhsa (its build of the printf kernels writes the records the AMD code
// writes, into the buffer lrrt put in the hidden slot).
#if defined(LRRT_TEST_HSA)
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend.hpp"
#include "error.hpp"
#include "hsa/printf_buffer.hpp"
#include "hsa/services.hpp"
#include "lrrt/formats/amdgpu.hpp"
#include "lrrt/formats/amdgpu_printf.hpp"
#include "lrrt/lrrt.hpp"
#include "standin_hooks.h"
#include "wait.hpp"

namespace lrrt::rt {
std::unique_ptr<Backend> make_hsa_backend();
}

using namespace lrrt::rt;
using lrrt::rt::hsa::check_services;
using lrrt::rt::hsa::kernel_services;

namespace {

// A kernel with one explicit pointer and the given hidden arguments, laid out
// as code object v5 does.
KernelInfo kernel_with(const std::string& name, std::vector<std::string> hidden, std::string language = "") {
  KernelInfo k;
  k.name = name;
  k.language = std::move(language);
  k.args.push_back({0, 8, ArgKind::GlobalBuffer, "global_buffer", "out", "int*", "global"});
  uint32_t offset = 8;
  for (auto& vk : hidden) {
    k.args.push_back({offset, 8, ArgKind::Hidden, vk, "", "", ""});
    offset += 8;
  }
  k.kernarg_size = offset;
  return k;
}

std::string refusal_of(const KernelInfo& k) {
  const auto s = kernel_services(k);
  try {
    check_services(s);
  } catch (const lrrt::Error& e) {
    CHECK(e.status() == LR_ERROR_NOT_SUPPORTED);
    CHECK(std::string(e.what()) == s.refusal);
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("hsa services: each hidden kind lrrt does not provide refuses the kernel, naming it and the service") {
  struct Case {
    const char* kind;
    const char* service;
  };
  const Case cases[] = {
      {"hidden_hostcall_buffer", "a hostcall buffer (hidden_hostcall_buffer, used by HIP printf and hostcall)"},
      {"hidden_heap_v1", "a device heap (hidden_heap_v1, used by device-side malloc and free)"},
      {"hidden_multigrid_sync_arg", "multi-grid synchronisation (hidden_multigrid_sync_arg"},
      {"hidden_default_queue", "a default device queue (hidden_default_queue, used by OpenCL device-side enqueue)"},
      {"hidden_completion_action", "a completion action (hidden_completion_action"},
      {"hidden_queue_ptr", "the address of its AQL queue (hidden_queue_ptr"},
      {"hidden_private_base", "the private aperture base (hidden_private_base"},
      {"hidden_shared_base", "the shared aperture base (hidden_shared_base"},
      {"hidden_something_new", "an implicit argument lrrt does not know (hidden_something_new)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.kind);
    // Next to the arguments lrrt fills, which change nothing.
    const std::string name = std::string("k_") + c.kind;
    KernelInfo k = kernel_with(name, {"hidden_block_count_x", "hidden_group_size_x", c.kind, "hidden_grid_dims"});
    const std::string msg = refusal_of(k);
    CHECK(msg.rfind("kernel '" + name + "' needs ", 0) == 0);
    CHECK(msg.find(c.service) != std::string::npos);
    CHECK(msg.find("; lrrt does not provide it") != std::string::npos);
    CHECK_FALSE(kernel_services(k).printf_buffer);
  }
  // The example of the issue, word for word.
  CHECK(refusal_of(kernel_with("k", {"hidden_hostcall_buffer"})) ==
        "kernel 'k' needs a hostcall buffer (hidden_hostcall_buffer, used by HIP printf and hostcall); lrrt does "
        "not provide it");
  // A printf buffer outside OpenCL C is HIP's buffered printf: refused too.
  for (const char* language : {"", "HIP", "OpenCL C++"}) {
    CAPTURE(language);
    const std::string msg = refusal_of(kernel_with("hip_k", {"hidden_printf_buffer"}, language));
    CHECK(msg.find("kernel 'hip_k' needs a printf buffer in HIP's buffered format (hidden_printf_buffer") == 0);
  }
  // Several services: each named once, and the hint for kernels that list
  // them without using them.
  const std::string msg = refusal_of(kernel_with(
      "o0", {"hidden_hostcall_buffer", "hidden_multigrid_sync_arg", "hidden_heap_v1", "hidden_default_queue",
             "hidden_completion_action", "hidden_queue_ptr", "hidden_heap_v1"}));
  for (const char* kind : {"hidden_hostcall_buffer", "hidden_multigrid_sync_arg", "hidden_heap_v1",
                           "hidden_default_queue", "hidden_completion_action", "hidden_queue_ptr"}) {
    CAPTURE(kind);
    const size_t at = msg.find(std::string("(") + kind);
    CHECK(at != std::string::npos);
    CHECK(msg.find(std::string("(") + kind, at + 1) == std::string::npos);
  }
  CHECK(msg.rfind("kernel 'o0' needs ", 0) == 0);
  CHECK(msg.find("; lrrt does not provide them") != std::string::npos);
  CHECK(msg.find("-O1 or higher") != std::string::npos);
}

TEST_CASE("hsa services: the geometry kinds, hidden_none and OpenCL printf are provided") {
  KernelInfo plain = kernel_with(
      "plain", {"hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z", "hidden_group_size_x",
                "hidden_group_size_y", "hidden_group_size_z", "hidden_remainder_x", "hidden_remainder_y",
                "hidden_remainder_z", "hidden_global_offset_x", "hidden_global_offset_y", "hidden_global_offset_z",
                "hidden_grid_dims", "hidden_dynamic_lds_size", "hidden_none", "hidden_none"});
  auto s = kernel_services(plain);
  CHECK(s.refusal.empty());
  CHECK_FALSE(s.printf_buffer);
  CHECK_NOTHROW(check_services(s));
  // Near misses of the filled kinds are not taken for them.
  CHECK_FALSE(refusal_of(kernel_with("x", {"hidden_block_count_w"})).empty());
  CHECK_FALSE(refusal_of(kernel_with("x", {"hidden_group_size_"})).empty());
  // OpenCL printf: provided.
  auto p = kernel_services(kernel_with("cl", {"hidden_global_offset_x", "hidden_printf_buffer"}, "OpenCL C"));
  CHECK(p.printf_buffer);
  CHECK(p.refusal.empty());
  // ... but not the other services an OpenCL kernel may list.
  const std::string msg = refusal_of(kernel_with("cl", {"hidden_printf_buffer", "hidden_default_queue"}, "OpenCL C"));
  CHECK(msg == "kernel 'cl' needs a default device queue (hidden_default_queue, used by OpenCL device-side enqueue); "
               "lrrt does not provide it");
  // An explicit argument named like a hidden one is the caller's.
  KernelInfo odd = kernel_with("odd", {});
  odd.args[0].value_kind = "hidden_hostcall_buffer";
  odd.args[0].kind = ArgKind::GlobalBuffer;
  CHECK(kernel_services(odd).refusal.empty());
}

#if defined(LRRT_TEST_HSA_SERVICES_DIR)
namespace {

namespace amdgpu = lrrt::formats::amdgpu;

std::vector<std::byte> read_services(const std::string& name) {
  std::ifstream f(std::string(LRRT_TEST_HSA_SERVICES_DIR) + "/" + name, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), {});
  REQUIRE_MESSAGE(!c.empty(), "missing ", name);
  std::vector<std::byte> out(c.size());
  std::memcpy(out.data(), c.data(), c.size());
  return out;
}

const KernelInfo& kernel_named(const amdgpu::CodeObject& co, const std::string& name) {
  for (const auto& k : co.kernels)
    if (k.name == name) return k;
  FAIL("no kernel ", name);
  return co.kernels.front();
}

uint32_t offset_of(const KernelInfo& k, const std::string& vk) {
  for (const auto& a : k.args)
    if (a.value_kind == vk) return a.offset;
  FAIL(k.name, " has no ", vk);
  return 0;
}

// The line services_printf prints for n and f (printf.cl; "variant" in
// services_printf_variant).
std::string line_for(int32_t n, float f, const std::string& prefix = "services_printf") {
  return prefix + ": n=" + std::to_string(n) + " f=" + fmt::format("{:.3f}", f) +
         " hex=" + fmt::format("{:#x}", n) + " c=Q s=str:a:b wide=" + std::to_string(int64_t(n) * 1000000007LL) +
         " v=" + std::to_string(n) + "," + std::to_string(n + 1) + "," + std::to_string(-n) + ",7 100%\n";
}

// Captures what the hsa backend prints.
struct Printed {
  std::string text;
  hsa::PrintfSink old;
  Printed() {
    old = hsa::set_printf_sink([this](std::string_view t) { text += t; });
  }
  ~Printed() { hsa::set_printf_sink(std::move(old)); }
  std::string take() { return std::exchange(text, {}); }
};

struct Standin {
  void* lib = nullptr;
  lrrt_hsa_standin_dispatch_count_fn dispatch_count = nullptr;
  lrrt_hsa_standin_get_dispatch_fn get_dispatch = nullptr;
  Standin() {
    lib = dlopen(LRRT_TEST_HSA_STANDIN, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(lib, "the stand-in is not loaded");
    dispatch_count = reinterpret_cast<lrrt_hsa_standin_dispatch_count_fn>(dlsym(lib, "lrrt_hsa_standin_dispatch_count"));
    get_dispatch = reinterpret_cast<lrrt_hsa_standin_get_dispatch_fn>(dlsym(lib, "lrrt_hsa_standin_get_dispatch"));
    REQUIRE(bool(dispatch_count));
    REQUIRE(bool(get_dispatch));
  }
  ~Standin() { dlclose(lib); }
  lrrt_hsa_standin_dispatch_t last() {
    lrrt_hsa_standin_dispatch_t d{};
    const size_t n = dispatch_count();
    REQUIRE(n > 0);
    REQUIRE(get_dispatch(n - 1, &d) == 0);
    return d;
  }
};

// The backend on the stand-in, which finds the host builds of the services
// kernels next to them.
struct Fixture {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Device> device;
  std::chrono::milliseconds saved_timeout = wait_timeout();
  Fixture() {
    setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", LRRT_TEST_KERNEL_DIR ":" LRRT_TEST_HSA_SERVICES_DIR, 1);
    set_wait_timeout(std::chrono::milliseconds(20000));
    backend = make_hsa_backend();
    auto st = backend->initialize();
    REQUIRE_MESSAGE(st.usable, st.message);
    device = backend->open_device(0);
  }
  ~Fixture() {
    device.reset();
    backend.reset();
    set_wait_timeout(saved_timeout);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", LRRT_TEST_KERNEL_DIR, 1);
  }
  std::unique_ptr<Module> load(const std::string& name) {
    const auto bytes = read_services(name);
    return device->load_module(bytes);
  }
};

struct PrintfArgs {
  int32_t* out;
  int32_t n;
  float f;
};
struct EachArgs {
  uint32_t* out;
  uint32_t count;
};

LaunchConfig config_for(uint32_t items, uint32_t block) {
  LaunchConfig c;
  c.block = {block, 1, 1};
  c.grid = {(items + block - 1) / block, 1, 1};
  return c;
}

template <typename A>
std::span<const std::byte> bytes_of(const A& a) {
  return std::as_bytes(std::span(&a, 1));
}

std::string error_of(const std::function<void()>& f, lr_status_t* status = nullptr) {
  try {
    f();
  } catch (const lrrt::Error& e) {
    if (status) *status = e.status();
    return e.what();
  }
  FAIL("no lrrt::Error");
  return {};
}

}  // namespace

TEST_CASE("hsa services: clang-built OpenCL printf kernels carry the format table the stand-in build writes") {
  const auto co = amdgpu::parse_code_object(read_services("services_printf.gfx1100.hsaco"));
  // services_host.cpp writes format 2 for services_printf and 1 for
  // services_printf_each, at these sizes, and reads the buffer's address at 88.
  REQUIRE(co.printf_formats.size() == 2);
  CHECK(co.printf_formats[0] == "1:2:4:4:item %u of %u\\n");
  CHECK(co.printf_formats[1] ==
        "2:8:4:4:4:4:4:4:8:16:services_printf\\72 n=%d f=%.3f hex=%#x c=%c s=%s\\72%s wide=%ld v=%v4hld 100%%\\n");
  for (const char* name : {"services_printf", "services_printf_each"}) {
    CAPTURE(name);
    const KernelInfo& k = kernel_named(co, name);
    CHECK(k.language == "OpenCL C");
    CHECK(offset_of(k, "hidden_printf_buffer") == 88);
    const auto s = kernel_services(k);
    CHECK(s.printf_buffer);
    CHECK(s.refusal.empty());
  }
  // The table decodes records laid out as the stand-in build writes them.
  amdgpu::PrintfTable table(co.printf_formats);
  REQUIRE(table.errors().empty());
  const uint32_t line[13] = {2, 7, 0x40200000 /* 2.5f */, 7, 'Q', 0x00727473 /* "str" */, 0x00623a61 /* "a:b" */,
                             uint32_t(7000000049LL), uint32_t(7000000049LL >> 32), 7, 8, uint32_t(-7), 7};
  const uint32_t each[3] = {1, 3, 5};
  std::vector<std::byte> buf(8 + sizeof line + sizeof each);
  const uint32_t header[2] = {uint32_t(sizeof line + sizeof each), uint32_t(buf.size() - 8)};
  std::memcpy(buf.data(), header, 8);
  std::memcpy(buf.data() + 8, line, sizeof line);
  std::memcpy(buf.data() + 8 + sizeof line, each, sizeof each);
  CHECK(table.find(2)->record_bytes() == sizeof line);
  const auto d = amdgpu::decode_printf_buffer(table, buf);
  REQUIRE_MESSAGE(d.error.empty(), d.error);
  REQUIRE(d.records.size() == 2);
  CHECK(d.records[0] == line_for(7, 2.5f));
  CHECK(d.records[1] == "item 3 of 5\n");
}

TEST_CASE("hsa services: an OpenCL printf kernel on the stand-in gets a printf buffer and its lines are printed at synchronize") {
  Fixture fx;
  Standin standin;
  Printed printed;
  auto m = fx.load("services_printf.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  auto* out = static_cast<int32_t*>(fx.device->allocate(64 * 4));
  const int32_t n = int32_t(rand() % 2000) - 1000;
  const float f = float(rand() % 100000) / 64.0f;
  PrintfArgs a{out, n, f};
  q->launch(m->kernel("services_printf"), config_for(64, 32), bytes_of(a), {}, nullptr);
  // Nothing is printed before the queue synchronizes.
  CHECK(printed.text.empty());
  q->synchronize();
  CHECK(printed.take() == line_for(n, f));
  const auto d = standin.last();
  CHECK(std::string(d.kernel) == "services_printf");
  uint64_t slot = 0;
  std::memcpy(&slot, d.kernarg + 88, 8);
  REQUIRE(slot != 0);
  for (int i = 0; i < 64; ++i) CHECK(out[i] == n);
  // The buffer is emptied for the next dispatches: its header again.
  uint32_t header[2];
  std::memcpy(header, reinterpret_cast<const void*>(slot), 8);
  CHECK(header[0] == 0);
  CHECK(header[1] == hsa::kPrintfBufferBytes - 8);

  // Several dispatches before one synchronize share it, in order; each
  // prints one line per work-item.
  auto* items = static_cast<uint32_t*>(fx.device->allocate(300 * 4));
  EachArgs e{items, 300};
  q->launch(m->kernel("services_printf_each"), config_for(300, 64), bytes_of(e), {}, nullptr);
  PrintfArgs b{out, n + 1, f};
  q->launch(m->kernel("services_printf"), config_for(1, 1), bytes_of(b), {}, nullptr);
  q->synchronize();
  uint64_t slot2 = 0;
  std::memcpy(&slot2, standin.last().kernarg + 88, 8);
  CHECK(slot2 == slot);
  std::string expected;
  for (uint32_t i = 0; i < 300; ++i) expected += "item " + std::to_string(i) + " of 300\n";
  expected += line_for(n + 1, f);
  CHECK(printed.take() == expected);
  // A queue that destroys itself prints what is left.
  q->launch(m->kernel("services_printf"), config_for(1, 1), bytes_of(a), {}, nullptr);
  q.reset();
  CHECK(printed.take() == line_for(n, f));
  fx.device->free(out);
  fx.device->free(items);
}

TEST_CASE("hsa services: a full printf buffer prints what fitted and warns that later records may have been dropped") {
  Fixture fx;
  Printed printed;
  auto m = fx.load("services_printf.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  const uint32_t count = 100000;  // 12-byte records: more than 1 MiB
  auto* items = static_cast<uint32_t*>(fx.device->allocate(count * 4));
  EachArgs e{items, count};
  q->launch(m->kernel("services_printf_each"), config_for(count, 256), bytes_of(e), {}, nullptr);
  q->synchronize();
  // The device check: header (8) + written + record (12) <= capacity.
  const uint32_t fitted = uint32_t((hsa::kPrintfBufferBytes - 8 - 8) / 12);
  std::string expected;
  for (uint32_t i = 0; i < fitted; ++i) expected += "item " + std::to_string(i) + " of 100000\n";
  const std::string text = printed.take();
  REQUIRE(text.size() > expected.size());
  CHECK(text.substr(0, expected.size()) == expected);
  CHECK(text.substr(expected.size()) ==
        fmt::format("lrrt: warning: the printf buffer of kernel 'services_printf_each' filled up ({} of {} bytes "
                    "written): later printf calls may have printed nothing; synchronize more often\n",
                    fitted * 12, hsa::kPrintfBufferBytes - 8));
  for (uint32_t i = 0; i < count; i += 997) CHECK(items[i] == i);
  // The next dispatch has the whole buffer again.
  EachArgs small{items, 2};
  q->launch(m->kernel("services_printf_each"), config_for(2, 2), bytes_of(small), {}, nullptr);
  q->synchronize();
  CHECK(printed.take() == "item 0 of 2\nitem 1 of 2\n");
  fx.device->free(items);
}

TEST_CASE("hsa services: a printf buffer holding a record the table does not describe prints what came before and warns that the output ends early") {
  Fixture fx;
  Printed printed;
  auto& device = dynamic_cast<hsa::HsaDevice&>(*fx.device);
  auto table = std::make_shared<const amdgpu::PrintfTable>(std::vector<std::string>{"1:1:4:got %d\\n"});
  hsa::PrintfBuffer pb(device);
  CHECK_FALSE(pb.pending());
  auto* p = reinterpret_cast<std::byte*>(pb.attach(table, "writer"));
  REQUIRE(p);
  CHECK(pb.pending());
  uint32_t header[2];
  std::memcpy(header, p, 8);
  CHECK(header[0] == 0);
  CHECK(header[1] == hsa::kPrintfBufferBytes - 8);
  // As a kernel would: a good record, then one with an id the table lacks.
  const uint32_t records[4] = {1, 5, 9, 0};
  std::memcpy(p + 8, records, sizeof records);
  const uint32_t used = sizeof records;
  std::memcpy(p, &used, 4);
  pb.drain();
  CHECK(printed.take() ==
        "got 5\nlrrt: warning: the printf output of kernel 'writer' ends early: record 1 at byte 16: format id 9 is "
        "not in the code object's printf table (1 entries)\n");
  CHECK_FALSE(pb.pending());
  std::memcpy(header, p, 8);
  CHECK(header[0] == 0);
  // Another table conflicts only while records are pending.
  auto other = std::make_shared<const amdgpu::PrintfTable>(std::vector<std::string>{"1:0:other\\n"});
  CHECK_FALSE(pb.conflicts(other));
  CHECK(pb.attach(table, "writer") == reinterpret_cast<uint64_t>(p));
  CHECK(pb.conflicts(other));
  CHECK_FALSE(pb.conflicts(table));
  pb.drain();  // nothing written: nothing printed
  CHECK(printed.text.empty());
}

TEST_CASE("hsa services: printf kernels of two code objects on one queue print in order, each with its own table") {
  Fixture fx;
  Printed printed;
  auto m1 = fx.load("services_printf.gfx1100.hsaco");
  auto m2 = fx.load("services_printf_variant.gfx1100.hsaco");  // same ids and sizes, other texts
  auto copy = fx.load("services_printf.gfx1100.hsaco");
  auto q = fx.device->create_queue();
  auto* out = static_cast<int32_t*>(fx.device->allocate(4));
  PrintfArgs a{out, 11, 0.5f}, b{out, 22, 1.5f}, c{out, 33, 2.5f};
  q->launch(m1->kernel("services_printf"), config_for(1, 1), bytes_of(a), {}, nullptr);
  // A second load of the same code object shares the buffer: nothing printed yet.
  q->launch(copy->kernel("services_printf"), config_for(1, 1), bytes_of(c), {}, nullptr);
  CHECK(printed.text.empty());
  // The other code object's records need its own table: the first ones are
  // printed before it is launched.
  q->launch(m2->kernel("services_printf"), config_for(1, 1), bytes_of(b), {}, nullptr);
  REQUIRE(printed.take() == line_for(11, 0.5f) + line_for(33, 2.5f));
  // Those dispatches finished, so their modules may go while the variant's
  // records are pending.
  m1.reset();
  copy.reset();
  q->synchronize();
  CHECK(printed.take() == line_for(22, 1.5f, "variant"));
  fx.device->free(out);
}

TEST_CASE("hsa services: HIP hostcall, heap, buffered printf and -O0 kernels are refused at lookup by name, a plain kernel runs") {
  Fixture fx;
  Printed printed;
  lr_status_t st = LR_SUCCESS;
  auto hip = fx.load("services_hip.gfx1100.hsaco");
  CHECK(error_of([&] { hip->kernel("services_hostcall"); }, &st) ==
        "kernel 'services_hostcall' needs a hostcall buffer (hidden_hostcall_buffer, used by HIP printf and "
        "hostcall); lrrt does not provide it");
  CHECK(st == LR_ERROR_NOT_SUPPORTED);
  CHECK(error_of([&] { hip->kernel("services_heap"); }) ==
        "kernel 'services_heap' needs a device heap (hidden_heap_v1, used by device-side malloc and free); lrrt does "
        "not provide it");
  // The kernel that needs nothing runs from the same code object.
  auto q = fx.device->create_queue();
  auto* out = static_cast<int32_t*>(fx.device->allocate(32 * 4));
  struct {
    int32_t* out;
    int32_t n;
  } args{out, 1234};
  q->launch(hip->kernel("services_plain"), config_for(32, 32), bytes_of(args), {}, nullptr);
  q->synchronize();
  for (int i = 0; i < 32; ++i) CHECK(out[i] == 1234);
  CHECK(printed.text.empty());

  auto buffered = fx.load("services_hip_buffered.gfx1100.hsaco");
  const std::string b = error_of([&] { buffered->kernel("services_hostcall"); });
  CHECK(b.find("kernel 'services_hostcall' needs a printf buffer in HIP's buffered format (hidden_printf_buffer") == 0);
  // -O0: every kernel lists every service, the plain one too.
  auto o0 = fx.load("services_hip_o0.gfx1100.hsaco");
  const std::string msg = error_of([&] { o0->kernel("services_plain"); }, &st);
  CHECK(st == LR_ERROR_NOT_SUPPORTED);
  CHECK(msg.rfind("kernel 'services_plain' needs a hostcall buffer (hidden_hostcall_buffer", 0) == 0);
  for (const char* kind : {"hidden_multigrid_sync_arg", "hidden_heap_v1", "hidden_default_queue",
                           "hidden_completion_action", "hidden_queue_ptr"})
    CHECK(msg.find(kind) != std::string::npos);
  CHECK(msg.find("-O1 or higher") != std::string::npos);
  // The kernel list still names them all.
  CHECK(o0->kernel_names().size() == 3);
  fx.device->free(out);
}

TEST_CASE("hsa services: through the C ABI a refused kernel is LR_ERROR_NOT_SUPPORTED, and a graph's printing kernels print after each replay") {
  setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 1);
  setenv("LRRT_HSA_STANDIN_KERNEL_DIR", LRRT_TEST_KERNEL_DIR ":" LRRT_TEST_HSA_SERVICES_DIR, 1);
  Printed printed;
  {
    lrrt::Runtime runtime;
    auto device = lrrt::Device::select("hsa");
    const auto hip_bytes = read_services("services_hip.gfx1100.hsaco");
    lrrt::Module hip(device, hip_bytes);
    lr_kernel_t* k = nullptr;
    CHECK(lr_kernel_get(hip.get(), "services_hostcall", &k) == LR_ERROR_NOT_SUPPORTED);
    CHECK(std::string(lr_last_error_message()).find("needs a hostcall buffer (hidden_hostcall_buffer") !=
          std::string::npos);

    const auto cl_bytes = read_services("services_printf.gfx1100.hsaco");
    lrrt::Module cl(device, cl_bytes), cl_copy(device, cl_bytes);
    const auto variant_bytes = read_services("services_printf_variant.gfx1100.hsaco");
    lrrt::Module variant(device, variant_bytes);
    auto printing = cl.kernel("services_printf");
    auto each = cl.kernel("services_printf_each");
    lrrt::DeviceBuffer out(device, 16 * 4);
    PrintfArgs a{static_cast<int32_t*>(out.data()), 5, 0.25f}, b{static_cast<int32_t*>(out.data()), 6, 0.75f};
    EachArgs e{static_cast<uint32_t*>(out.data()), 3};
    lrrt::Graph g(device);
    auto first = g.add_kernel(printing, lrrt::launch_config({1, 1, 1}, {4, 1, 1}), a, {lrrt::write_access(out)});
    auto second = g.add_kernel(each, lrrt::launch_config({1, 1, 1}, {4, 1, 1}), e, {lrrt::write_access(out)});
    // From a second load of the code object: the same table.
    auto third = g.add_kernel(cl_copy.kernel("services_printf"), lrrt::launch_config({1, 1, 1}, {4, 1, 1}), b,
                              {lrrt::write_access(out)});
    g.add_dependency(first, second);
    g.add_dependency(second, third);
    auto exec = g.instantiate();
    const std::string expected = line_for(5, 0.25f) + "item 0 of 3\nitem 1 of 3\nitem 2 of 3\n" + line_for(6, 0.75f);
    for (int replay = 0; replay < 3; ++replay) {
      CAPTURE(replay);
      exec.launch();
      exec.synchronize();
      CHECK(printed.take() == expected);
    }
    // The next replay's launch prints the last one's records (it waits for it).
    exec.launch();
    exec.launch();
    CHECK(printed.take() == expected);
    exec.synchronize();
    CHECK(printed.take() == expected);

    // Printing kernels of two code objects cannot share a replay's buffer.
    lrrt::Graph mixed(device);
    mixed.add_kernel(printing, lrrt::launch_config({1, 1, 1}, {1, 1, 1}), a, {lrrt::write_access(out)});
    mixed.add_kernel(variant.kernel("services_printf"), lrrt::launch_config({1, 1, 1}, {1, 1, 1}), b,
                     {lrrt::write_access(out)});
    try {
      mixed.instantiate();
      FAIL("two code objects' printing kernels were replayed with one buffer");
    } catch (const lrrt::Error& err) {
      CHECK(err.status() == LR_ERROR_NOT_SUPPORTED);
      CHECK(std::string(err.what()).find("calls printf with another code object's format table") !=
            std::string::npos);
    }
  }
  CHECK(printed.text.empty());
  setenv("LRRT_HSA_STANDIN_KERNEL_DIR", LRRT_TEST_KERNEL_DIR, 1);
}
#endif  // LRRT_TEST_HSA_SERVICES_DIR

#endif  // LRRT_TEST_HSA
