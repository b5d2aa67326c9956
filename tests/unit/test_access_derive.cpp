// Derived access in the C ABI (docs/access.md): lr_kernel_get_arg_access,
// lr_kernel_set_triton_ir and graph kernel steps recorded with
// LR_GRAPH_KERNEL_DERIVE_ACCESS. On the hsa stand-in with clang-19 code
// objects (tests/kernels/access_kernels.cpp, access_qual.ll): a diamond whose
// accesses come from .actual_access derives the same edges, lanes and packets
// as when declared, and replays exactly in the stand-in's worst order; the
// Triton negative controls (tests/triton/access), whose accesses come from
// their IR, replay exactly in worst order, where the same graph with the
// written buffer declared read (narrower) is wrong.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lrrt/bundle/manifest.hpp"
#include "lrrt/lrrt.hpp"
#include "replay_test_support.hpp"
#include "tool/sequence_runner.hpp"

using namespace lrrt::test;

namespace {

std::string text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string triton_ir(const std::string& target, const std::string& kernel) {
  return text_file(std::string(LRRT_TEST_SOURCE_DIR) + "/tests/triton/access/" + target + "/" + kernel + ".ttir");
}

std::pair<lr_access_mode_t, lr_access_source_t> access_of(const lrrt::Kernel& k, uint32_t index) {
  return k.arg_access(index);
}

}  // namespace

TEST_CASE("derived access: a host kernel's Triton IR gives its pointer parameters their access") {
  lrrt::Runtime runtime;
  lrrt::Device device = lrrt::Device::select("host");
  lrrt::Module module(device, read_file(test_kernel_dir() + "/access_kernels.host.so"));
  lrrt::Kernel k = module.kernel("neg_select");
  // Nothing known yet: read-write by default, for every argument.
  for (uint32_t i = 0; i < 7; ++i) CHECK(access_of(k, i) == std::make_pair(LR_ACCESS_READ_WRITE, LR_ACCESS_SOURCE_DEFAULT));
  k.set_triton_ir(triton_ir("gfx942", "neg_select"));
  // a and b may both be written (selected), out only read; scalars and the
  // scratch pointers Triton appends stay default.
  CHECK(access_of(k, 0) == std::make_pair(LR_ACCESS_READ_WRITE, LR_ACCESS_SOURCE_TTIR));
  CHECK(access_of(k, 1) == std::make_pair(LR_ACCESS_READ_WRITE, LR_ACCESS_SOURCE_TTIR));
  CHECK(access_of(k, 2) == std::make_pair(LR_ACCESS_READ, LR_ACCESS_SOURCE_TTIR));
  for (uint32_t i = 3; i < 7; ++i) CHECK(access_of(k, i).second == LR_ACCESS_SOURCE_DEFAULT);

  lrrt::Kernel loop = module.kernel("neg_loop_carried");
  loop.set_triton_ir(triton_ir("sm_90", "neg_loop_carried"));
  CHECK(access_of(loop, 0) == std::make_pair(LR_ACCESS_WRITE, LR_ACCESS_SOURCE_TTIR));
  CHECK(access_of(loop, 1) == std::make_pair(LR_ACCESS_READ, LR_ACCESS_SOURCE_TTIR));

  // Errors name what is wrong and change nothing.
  std::string message;
  CHECK(status_of([&] { k.set_triton_ir("not an IR"); }, &message) == LR_ERROR_INVALID_IMAGE);
  CHECK(message.find("neg_select") != std::string::npos);
  CHECK(status_of([&] { k.set_triton_ir(triton_ir("gfx942", "neg_loop_carried")); }, &message) == LR_ERROR_INVALID_IMAGE);
  CHECK(access_of(k, 1) == std::make_pair(LR_ACCESS_READ_WRITE, LR_ACCESS_SOURCE_TTIR));
  // The IR of another kernel with the name of this one, whose pointer lands
  // on a scalar: refused.
  std::string other = triton_ir("gfx942", "neg_loop_carried");
  for (size_t at = other.find("neg_loop_carried"); at != std::string::npos; at = other.find("neg_loop_carried", at))
    other.replace(at, 16, "acc_scale");
  lrrt::Kernel scale = module.kernel("acc_scale");
  CHECK(status_of([&] { scale.set_triton_ir(other); }, &message) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(message.find("has no 8-byte argument") != std::string::npos);
  CHECK(lr_kernel_set_triton_ir(k.get(), nullptr) == LR_ERROR_INVALID_ARGUMENT);
  lr_access_mode_t mode{};
  lr_access_source_t source{};
  CHECK(lr_kernel_get_arg_access(k.get(), 99, &mode, &source) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_kernel_get_arg_access(k.get(), 0, nullptr, &source) == LR_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("derived access: graph steps recorded with LR_GRAPH_KERNEL_DERIVE_ACCESS on host") {
  lrrt::Runtime runtime;
  lrrt::Device device = lrrt::Device::select("host");
  lrrt::Module module(device, read_file(test_kernel_dir() + "/access_kernels.host.so"));
  lrrt::Kernel loop = module.kernel("neg_loop_carried");
  lrrt::Kernel add = module.kernel("acc_add");
  loop.set_triton_ir(triton_ir("sm_90", "neg_loop_carried"));
  const uint32_t n = 4096;
  auto src = random_whole(n, -100, 100), x0 = random_whole(n, -100, 100);
  lrrt::DeviceBuffer d_src(device, n * 4), d_x(device, n * 4), d_zero(device, n * 4), d_out(device, n * 4);
  std::vector<float> zero(n, 0.0f), out(n, kPoison);
  lr_memcpy(device.get(), d_src.data(), src.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  lr_memcpy(device.get(), d_zero.data(), zero.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);

  struct LoopArgs {
    void* x;
    void* src;
    int32_t n;
    int32_t steps;
    void* scratch0;
    void* scratch1;
  } loop_args{d_x.data(), d_src.data(), int32_t(n), int32_t(n / 256), nullptr, nullptr};
  lrrt::Graph g(device);
  const auto cfg = config_for(n, 256);
  g.add_kernel_derived(loop, cfg, std::as_bytes(std::span<const LoopArgs>(&loop_args, 1)));
  // The reader declares its output itself and derives the rest.
  const AddArgs add_args{d_x.data(), d_zero.data(), d_out.data(), n};
  const lr_graph_access_t out_access = lrrt::write_access(d_out);
  g.add_kernel_derived(add, cfg, std::as_bytes(std::span<const AddArgs>(&add_args, 1)), {&out_access, 1});
  lrrt::GraphExec exec = g.instantiate();
  const auto plan = nlohmann::json::parse(exec.plan_json());
  REQUIRE(plan["nodes"].size() == 2);
  const auto& first = plan["nodes"][0]["accesses"];
  REQUIRE(first.size() == 2);
  CHECK(first[0]["mode"] == "write");  // x, through the loop-carried pointer
  CHECK(first[0]["source"] == "ttir");
  CHECK(first[1]["mode"] == "read");
  CHECK(first[1]["source"] == "ttir");
  const auto& second = plan["nodes"][1]["accesses"];
  REQUIRE(second.size() == 3);
  CHECK(second[0]["source"] == "declared");
  CHECK(second[0]["mode"] == "write");
  CHECK(second[1]["source"] == "default");  // acc_add on host: its code object records no access
  bool raw = false;
  for (const auto& e : plan["edges"]) raw |= e["from"] == 0 && e["to"] == 1;
  CHECK(raw);
  exec.launch();
  exec.synchronize();
  lr_memcpy(device.get(), out.data(), d_out.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
  for (uint32_t i = 0; i < n; ++i) REQUIRE(out[i] == src[i] + 1.0f);

  // Unknown flag bits are refused.
  CHECK(lr_graph_add_kernel_ex(g.get(), add.get(), &cfg, &add_args, sizeof add_args, nullptr, 0, 2, nullptr) ==
        LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("unknown graph kernel flags") != std::string::npos);
}

#if defined(LRRT_TEST_HSA) && defined(LRRT_TEST_AMD_KERNELS)
#include <dlfcn.h>

#include "standin_hooks.h"

namespace {

struct StandinOrder {
  void* lib = nullptr;
  lrrt_hsa_standin_set_worst_order_fn set = nullptr;
  StandinOrder() {
    lib = dlopen(LRRT_TEST_HSA_STANDIN, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(lib, "the stand-in is not loaded");
    set = reinterpret_cast<lrrt_hsa_standin_set_worst_order_fn>(dlsym(lib, "lrrt_hsa_standin_set_worst_order"));
    REQUIRE(bool(set));
  }
  ~StandinOrder() {
    set(0);
    dlclose(lib);
  }
};

struct HsaSetup {
  lrrt::Runtime runtime;
  lrrt::Device device;
  lrrt::Module access_module, qual_module;
  static lrrt::Runtime start() {
    setenv("LRRT_HSA_LIBRARY", LRRT_TEST_HSA_STANDIN, 1);
    setenv("LRRT_HSA_STANDIN_KERNEL_DIR", (test_kernel_dir() + ":" + kernel_dir()).c_str(), 1);
    setenv("LRRT_WAIT_TIMEOUT_MS", "20000", 1);
    return lrrt::Runtime();
  }
  HsaSetup()
      : runtime(start()),
        device(lrrt::Device::select("hsa")),
        access_module(device, read_file(test_kernel_dir() + "/access_kernels.gfx1100.hsaco")),
        qual_module(device, read_file(test_kernel_dir() + "/access_qual.gfx1100.hsaco")) {}
};

struct ScaleArgs {
  float s;
  const void* x;
  void* y;
  uint32_t n;
};

nlohmann::json plan_of(const lrrt::GraphExec& e) { return nlohmann::json::parse(e.plan_json()); }

}  // namespace

TEST_CASE("derived access (hsa stand-in): clang's .actual_access and .access read from the code objects") {
  HsaSetup s;
  lrrt::Kernel add = s.access_module.kernel("acc_add");
  CHECK(access_of(add, 0) == std::make_pair(LR_ACCESS_READ, LR_ACCESS_SOURCE_ACTUAL_ACCESS));
  CHECK(access_of(add, 1) == std::make_pair(LR_ACCESS_READ, LR_ACCESS_SOURCE_ACTUAL_ACCESS));
  CHECK(access_of(add, 2) == std::make_pair(LR_ACCESS_WRITE, LR_ACCESS_SOURCE_ACTUAL_ACCESS));
  CHECK(access_of(add, 3) == std::make_pair(LR_ACCESS_READ_WRITE, LR_ACCESS_SOURCE_DEFAULT));  // n
  lrrt::Kernel plain = s.access_module.kernel("acc_add_plain");
  for (uint32_t i = 0; i < 3; ++i) CHECK(access_of(plain, i) == std::make_pair(LR_ACCESS_READ_WRITE, LR_ACCESS_SOURCE_DEFAULT));
  lrrt::Kernel qual = s.qual_module.kernel("acc_copy_qual");
  CHECK(access_of(qual, 0) == std::make_pair(LR_ACCESS_READ, LR_ACCESS_SOURCE_ACCESS));
  CHECK(access_of(qual, 1) == std::make_pair(LR_ACCESS_WRITE, LR_ACCESS_SOURCE_ACCESS));
}

TEST_CASE("derived access (hsa stand-in): a diamond derived from .actual_access plans and replays as when declared") {
  HsaSetup s;
  StandinOrder order;
  lrrt::Kernel scale = s.access_module.kernel("acc_scale");
  lrrt::Kernel add = s.access_module.kernel("acc_add");
  const uint32_t n = 5000;
  auto in = random_whole(n, -100, 100), u = random_whole(n, -100, 100);
  lrrt::PinnedHostBuffer h_in(s.device, n * 4), h_u(s.device, n * 4), out(s.device, n * 4);
  std::memcpy(h_in.data(), in.data(), n * 4);
  std::memcpy(h_u.data(), u.data(), n * 4);
  lrrt::DeviceBuffer d_in(s.device, n * 4), d_b(s.device, n * 4), d_u(s.device, n * 4), d_c1(s.device, n * 4),
      d_c2(s.device, n * 4), d_out(s.device, n * 4);
  const auto cfg = config_for(n, 128);
  auto record = [&](bool derive) {
    lrrt::Graph g(s.device);
    g.add_copy(d_in.data(), h_in.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
    g.add_copy(d_u.data(), h_u.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
    const ScaleArgs p{2.0f, d_in.data(), d_b.data(), n};
    const AddArgs c1{d_b.data(), d_u.data(), d_c1.data(), n}, c2{d_b.data(), d_b.data(), d_c2.data(), n},
        j{d_c1.data(), d_c2.data(), d_out.data(), n};
    auto bytes = [](const auto& a) { return std::as_bytes(std::span(&a, 1)); };
    if (derive) {
      g.add_kernel_derived(scale, cfg, bytes(p));
      g.add_kernel_derived(add, cfg, bytes(c1));
      g.add_kernel_derived(add, cfg, bytes(c2));
      g.add_kernel_derived(add, cfg, bytes(j));
    } else {
      g.add_kernel(scale, cfg, bytes(p), {lrrt::read_access(d_in), lrrt::write_access(d_b)});
      g.add_kernel(add, cfg, bytes(c1), {lrrt::read_access(d_b), lrrt::read_access(d_u), lrrt::write_access(d_c1)});
      g.add_kernel(add, cfg, bytes(c2), {lrrt::read_access(d_b), lrrt::write_access(d_c2)});
      g.add_kernel(add, cfg, bytes(j), {lrrt::read_access(d_c1), lrrt::read_access(d_c2), lrrt::write_access(d_out)});
    }
    g.add_copy(out.data(), d_out.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
    return g;
  };
  lrrt::Graph declared = record(false), derived = record(true);
  for (uint32_t lanes : {1u, 2u}) {
    CAPTURE(lanes);
    const lr_graph_instantiate_options_t options{lanes, 0};
    lrrt::GraphExec d_exec = declared.instantiate(&options), x_exec = derived.instantiate(&options);
    const auto want = plan_of(d_exec), got = plan_of(x_exec);
    CHECK(got["edges"] == want["edges"]);
    CHECK(got["aql"] == want["aql"]);
    for (size_t v = 0; v < want["nodes"].size(); ++v) CHECK(got["nodes"][v]["lane"] == want["nodes"][v]["lane"]);
    for (size_t v = 2; v < 6; ++v)
      for (const auto& a : got["nodes"][v]["accesses"]) CHECK(a["source"] == "actual_access");
    for (int worst : {0, 1}) {
      order.set(worst);
      for (uint32_t i = 0; i < n; ++i) out.as<float>()[i] = kPoison;
      x_exec.launch();
      x_exec.synchronize();
      for (uint32_t i = 0; i < n; ++i) {
        const float b = 2.0f * in[i];
        REQUIRE(out.as<float>()[i] == (b + u[i]) + (b + b));
      }
    }
    order.set(0);
  }
}

TEST_CASE("derived access (hsa stand-in): .access lets two readers of one buffer run unordered, defaults serialise") {
  HsaSetup s;
  lrrt::Kernel qual = s.qual_module.kernel("acc_copy_qual");
  lrrt::Kernel plain = s.access_module.kernel("acc_add_plain");
  const uint32_t n = 64;
  lrrt::DeviceBuffer d_in(s.device, n * 4), d_y0(s.device, n * 4), d_y1(s.device, n * 4);
  struct QualArgs {
    void* x;
    void* y;
    int32_t n;
  } a0{d_in.data(), d_y0.data(), int32_t(n)}, a1{d_in.data(), d_y1.data(), int32_t(n)};
  const auto cfg = config_for(n, 64);
  lrrt::Graph g(s.device);
  g.add_kernel_derived(qual, cfg, std::as_bytes(std::span(&a0, 1)));
  g.add_kernel_derived(qual, cfg, std::as_bytes(std::span(&a1, 1)));
  auto plan = plan_of(g.instantiate());
  CHECK(plan["edges"].empty());
  CHECK(plan["nodes"][0]["accesses"][0]["source"] == "access");
  // Without any recorded access, the two readers of `in` are ordered (read-write by default).
  lrrt::Graph h(s.device);
  const AddArgs p0{d_in.data(), d_in.data(), d_y0.data(), n}, p1{d_in.data(), d_in.data(), d_y1.data(), n};
  h.add_kernel_derived(plain, cfg, std::as_bytes(std::span(&p0, 1)));
  h.add_kernel_derived(plain, cfg, std::as_bytes(std::span(&p1, 1)));
  plan = plan_of(h.instantiate());
  REQUIRE(plan["edges"].size() == 1);
  CHECK(plan["nodes"][0]["accesses"][0]["source"] == "default");
}

TEST_CASE("derived access (hsa stand-in): sequence steps without access plan as when declared, naming each source") {
  HsaSetup s;
  // b = 2 in; c1 = b + u; c2 = b + b; out = c1 + c2, on access_kernels.
  nlohmann::json j = nlohmann::json::parse(R"({
    "lrrt_manifest": 1, "name": "access_diamond",
    "kernels": {"scale": {"code_object": "", "kernel": "acc_scale"}, "add": {"code_object": "", "kernel": "acc_add"}},
    "buffers": [{"name": "in", "type": "f32", "count": 1024, "init": {"random": {"min": -1, "max": 1}}},
                {"name": "u", "type": "f32", "count": 1024, "init": {"random": {"min": -1, "max": 1}}},
                {"name": "b", "type": "f32", "count": 1024}, {"name": "c1", "type": "f32", "count": 1024},
                {"name": "c2", "type": "f32", "count": 1024}, {"name": "out", "type": "f32", "count": 1024}],
    "sequence": [
      {"name": "produce", "kernel": "scale", "args": [{"type": "f32", "value": 2}, {"buffer": "in", "access": "read"},
       {"buffer": "b", "access": "write"}, {"type": "u32", "value": 1024}],
       "launch": {"workgroup_size": [64], "global_size": [1024]}},
      {"name": "left", "kernel": "add", "args": [{"buffer": "b", "access": "read"}, {"buffer": "u", "access": "read"},
       {"buffer": "c1", "access": "write"}, {"type": "u32", "value": 1024}],
       "launch": {"workgroup_size": [64], "global_size": [1024]}},
      {"name": "right", "kernel": "add", "args": [{"buffer": "b", "access": "read"}, {"buffer": "b", "access": "read"},
       {"buffer": "c2", "access": "write"}, {"type": "u32", "value": 1024}],
       "launch": {"workgroup_size": [64], "global_size": [1024]}},
      {"name": "join", "kernel": "add", "args": [{"buffer": "c1", "access": "read"}, {"buffer": "c2", "access": "read"},
       {"buffer": "out", "access": "write"}, {"type": "u32", "value": 1024}],
       "launch": {"workgroup_size": [64], "global_size": [1024]}}
    ]
  })");
  const std::string co = test_kernel_dir() + "/access_kernels.*";
  j["kernels"]["scale"]["code_object"] = co;
  j["kernels"]["add"]["code_object"] = co;
  const lrrt::bundle::Manifest declared = lrrt::bundle::parse_manifest(j, ".");
  // The same steps with no access on any argument (what a manifest may omit).
  lrrt::bundle::Manifest derived = declared;
  for (auto& step : derived.sequence->steps)
    for (auto& a : step.args) a.access = lrrt::bundle::Access::None;
  const auto want = lrrt::tool::plan_sequence(declared, s.device, lrrt::test::kernel_dir());
  const auto got = lrrt::tool::plan_sequence(derived, s.device, lrrt::test::kernel_dir());
  auto edges = [](const nlohmann::json& p) {
    std::set<std::pair<int, int>> out;
    for (const auto& e : p["plan"]["edges"]) out.insert({e["from"].get<int>(), e["to"].get<int>()});
    return out;
  };
  CHECK(edges(got) == std::set<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  CHECK(edges(got) == edges(want));
  CHECK(got["plan"]["aql"] == want["plan"]["aql"]);
  for (size_t step = 0; step < 4; ++step) {
    CAPTURE(step);
    REQUIRE(got["steps"][step]["accesses"].size() == want["steps"][step]["accesses"].size());
    for (size_t a = 0; a < got["steps"][step]["accesses"].size(); ++a) {
      CHECK(got["steps"][step]["accesses"][a]["source"] == "actual_access");
      CHECK(want["steps"][step]["accesses"][a]["source"] == "declared");
      CHECK(got["steps"][step]["accesses"][a]["access"] == want["steps"][step]["accesses"][a]["access"]);
    }
  }
}

TEST_CASE("derived access (hsa stand-in): Triton negative controls replay exactly from their IR, narrower is wrong") {
  HsaSetup s;
  StandinOrder order;
  lrrt::Kernel reader = s.access_module.kernel("acc_add");
  const uint32_t n = 4096;
  auto src = random_whole(n, -100, 100), before = random_whole(n, -100, 100);
  std::vector<float> zero(n, 0.0f);
  lrrt::DeviceBuffer d_a(s.device, n * 4), d_b(s.device, n * 4), d_src(s.device, n * 4), d_zero(s.device, n * 4),
      d_out(s.device, n * 4);
  lrrt::PinnedHostBuffer h_before(s.device, n * 4), h_src(s.device, n * 4), h_out(s.device, n * 4);
  std::memcpy(h_before.data(), before.data(), n * 4);
  std::memcpy(h_src.data(), src.data(), n * 4);
  lr_memcpy(s.device.get(), d_zero.data(), zero.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
  struct Args7 {  // neg_select / neg_if_merge: (a, b, src, flag, n, scratch, scratch)
    void* a;
    void* b;
    void* src;
    int32_t flag;
    int32_t n;
    void* s0;
    void* s1;
  };
  struct Args5 {  // neg_ptr_to_int / neg_inline_asm: (x, src, n, scratch, scratch)
    void* x;
    void* src;
    int32_t n;
    void* s0;
    void* s1;
  };
  struct Args6 {  // neg_loop_carried: (x, src, n, steps, scratch, scratch)
    void* x;
    void* src;
    int32_t n;
    int32_t steps;
    void* s0;
    void* s1;
  };
  struct Control {
    std::string kernel;
    std::vector<std::byte> args;
    void* written;                                // the buffer written through the hidden path
    std::function<float(uint32_t)> expected;      // what the reader then sees
  };
  auto pack = [](const auto& a) {
    auto b = std::as_bytes(std::span(&a, 1));
    return std::vector<std::byte>(b.begin(), b.end());
  };
  // flag 0: the select and the if choose b.
  const std::vector<Control> controls = {
      {"neg_select", pack(Args7{d_a.data(), d_b.data(), d_src.data(), 0, int32_t(n), nullptr, nullptr}), d_b.data(),
       [&](uint32_t i) { return src[i] + 1.0f; }},
      {"neg_if_merge", pack(Args7{d_a.data(), d_b.data(), d_src.data(), 0, int32_t(n), nullptr, nullptr}), d_b.data(),
       [&](uint32_t i) { return src[i] * 2.0f; }},
      {"neg_ptr_to_int", pack(Args5{d_b.data(), d_src.data(), int32_t(n), nullptr, nullptr}), d_b.data(),
       [&](uint32_t i) { return src[i] + 3.0f; }},
      {"neg_loop_carried", pack(Args6{d_b.data(), d_src.data(), int32_t(n), int32_t(n / 256), nullptr, nullptr}),
       d_b.data(), [&](uint32_t i) { return src[i] + 1.0f; }},
      {"neg_inline_asm", pack(Args5{d_b.data(), d_src.data(), int32_t(n), nullptr, nullptr}), d_b.data(),
       [](uint32_t) { return 1.0f; }},
  };
  const auto cfg = config_for(n, 256);
  for (const auto& c : controls) {
    CAPTURE(c.kernel);
    lrrt::Kernel k = s.access_module.kernel(c.kernel);
    k.set_triton_ir(triton_ir("gfx942", c.kernel));
    const AddArgs read_back{c.written, d_zero.data(), d_out.data(), n};
    // b starts as `before`; the control writes it; the reader copies it out.
    auto record = [&](bool narrower) {
      lrrt::Graph g(s.device);
      g.add_copy(d_b.data(), h_before.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      g.add_copy(d_src.data(), h_src.data(), n * 4, LR_MEMCPY_HOST_TO_DEVICE);
      if (narrower) {
        // Every pointer declared read: what an analysis that missed the write would say.
        std::vector<lr_graph_access_t> reads = {lrrt::read_access(d_b), lrrt::read_access(d_src), lrrt::read_access(d_a)};
        g.add_kernel(k, cfg, c.args, reads);
      } else {
        g.add_kernel_derived(k, cfg, c.args);
      }
      g.add_kernel_derived(reader, cfg, std::as_bytes(std::span(&read_back, 1)));
      g.add_copy(h_out.data(), d_out.data(), n * 4, LR_MEMCPY_DEVICE_TO_HOST);
      return g;
    };
    const lr_graph_instantiate_options_t one{1, 0};
    lrrt::GraphExec right = record(false).instantiate(&one), narrow = record(true).instantiate(&one);
    auto wrong_after = [&](lrrt::GraphExec& e) {
      for (uint32_t i = 0; i < n; ++i) h_out.as<float>()[i] = kPoison;
      e.launch();
      e.synchronize();
      uint32_t wrong = 0;
      for (uint32_t i = 0; i < n; ++i) wrong += h_out.as<float>()[i] != c.expected(i);
      return wrong;
    };
    order.set(1);
    CHECK(wrong_after(right) == 0);
    CHECK(wrong_after(narrow) > 0);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(h_out.as<float>()[i] == before[i]);  // the reader ran first
    order.set(0);
    CHECK(wrong_after(right) == 0);
  }
}
#endif
